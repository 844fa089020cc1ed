#pragma once

// Per-group permissions of groupcoordd (docs/design.md, "Permissions"): the
// rules of the permissions file, what they allow, and the file's line, shared
// by groupcoordd (server/AuthGate.h: deciding each call) and `groupctl acl`
// (listing and editing the file). No I/O but reading the file, no server.
//
// A rule is one line:
//
//   EFFECT PRINCIPAL OPERATIONS RESOURCE
//
//   EFFECT      allow | deny
//   PRINCIPAL   user:NAME | role:member | role:admin | *     (* is any user)
//   OPERATIONS  a comma-separated list of join, commit, fetch, describe,
//               create, delete, rewind; or all
//   RESOURCE    group:NAME (that group) | prefix:TEXT (every group whose
//               name starts with TEXT) | group:* (every group)
//
// Blank lines and lines starting with '#' are ignored. A user may perform
// an operation on a group when a rule matching the user (by name, by its
// role, or *) and the group allows it and no matching rule denies it: deny
// wins over allow, and what no rule allows is refused.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/Credentials.h"
#include "protocol/Messages.h"

namespace groupcoord::permissions {

enum class Operation : uint8_t { Join, Commit, Fetch, Describe, Create, Delete, Rewind };
inline constexpr int kOperationCount = 7;
using OperationSet = uint8_t;  // bit (1 << Operation)
inline constexpr OperationSet kAllOperations = (1u << kOperationCount) - 1;

inline constexpr OperationSet bit(Operation op) { return static_cast<OperationSet>(1u << static_cast<int>(op)); }
std::string_view operationName(Operation op);
std::optional<Operation> operationFromName(std::string_view name);
// "join,commit", or "all" when every operation is in the set.
std::string operationsText(OperationSet ops);

// The operation a call performs on the group it names; nullopt for calls
// that name no group (Authenticate, DrainServer, DescribeServers).
// ListGroups is Describe, of each group it lists.
std::optional<Operation> operationOf(protocol::ApiKey api);

struct Rule {
  enum class Principal : uint8_t { User, Role, Anyone };
  enum class Resource : uint8_t { Group, Prefix, AnyGroup };
  bool allow = true;
  Principal principal = Principal::Anyone;
  std::string who;  // the user name, or "member" / "admin"
  OperationSet operations = 0;
  Resource resource = Resource::AnyGroup;
  std::string pattern;  // the group name or prefix

  bool operator==(const Rule&) const = default;
  bool matchesUser(std::string_view user, credentials::Role role) const;
  bool matchesGroup(std::string_view group) const;
};

// The rule's line, in the form parseRule reads.
std::string formatRule(const Rule& rule);
// Parses one line (trimmed, not a comment) into *out: "" when it is a rule,
// else why not (without the line number).
std::string parseRule(std::string_view line, Rule* out);

inline constexpr size_t kMaxRules = 100000;
inline constexpr size_t kMaxLineBytes = 1024;

class Policy {
 public:
  // Parses the text of a permissions file; `source` names it in errors
  // ("permissions file '/etc/x' line 3: ..."). nullptr with *error set on
  // the first bad line. An empty file is valid: it allows nothing.
  static std::shared_ptr<const Policy> parse(std::string_view text, const std::string& source, std::string* error);
  // Reads and parses the file.
  static std::shared_ptr<const Policy> load(const std::string& path, std::string* error);

  // The operations `user` (of `role`) may perform on `group`.
  OperationSet allowed(std::string_view user, credentials::Role role, std::string_view group) const;
  bool allows(std::string_view user, credentials::Role role, std::string_view group, Operation op) const {
    return (allowed(user, role, group) & bit(op)) != 0;
  }

  const std::vector<Rule>& rules() const { return rules_; }

 private:
  Policy() = default;
  std::vector<Rule> rules_;
  // Rules naming one group, by that group; the others (prefix, every group)
  // are looked at for every question.
  std::unordered_map<std::string, std::vector<size_t>> byGroup_;
  std::vector<size_t> general_;
};

}  // namespace groupcoord::permissions
