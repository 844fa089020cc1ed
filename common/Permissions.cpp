#include "common/Permissions.h"

#include <array>
#include <cctype>
#include <fstream>
#include <sstream>

#include "protocol/Codec.h"

namespace groupcoord::permissions {

namespace {

constexpr std::array<std::string_view, kOperationCount> kNames = {"join",     "commit", "fetch", "describe",
                                                                   "create",   "delete", "rewind"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// At most 60 characters of client or file text, printable, for an error.
std::string shown(std::string_view text) {
  std::string out;
  for (char ch : text.substr(0, 60)) out += (ch > 0x20 && ch < 0x7f) ? ch : '?';
  if (text.size() > 60) out += "...";
  return out;
}

// A prefix may be any start of a valid group name.
bool isValidPrefix(std::string_view prefix) {
  return !prefix.empty() && protocol::isValidName(prefix);
}

}  // namespace

std::string_view operationName(Operation op) { return kNames[static_cast<size_t>(op)]; }

std::optional<Operation> operationFromName(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Operation>(i);
  }
  return std::nullopt;
}

std::string operationsText(OperationSet ops) {
  if ((ops & kAllOperations) == kAllOperations) return "all";
  std::string out;
  for (int i = 0; i < kOperationCount; ++i) {
    if (!(ops & (1u << i))) continue;
    if (!out.empty()) out += ',';
    out += kNames[static_cast<size_t>(i)];
  }
  return out;
}

std::optional<Operation> operationOf(protocol::ApiKey api) {
  using protocol::ApiKey;
  switch (api) {
    case ApiKey::RegisterConsumer:
    case ApiKey::Heartbeat:
    case ApiKey::LeaveGroup:
      return Operation::Join;
    case ApiKey::CommitOffsets:
      return Operation::Commit;
    case ApiKey::FetchOffsets:
      return Operation::Fetch;
    case ApiKey::ListGroups:
    case ApiKey::DescribeGroup:
      return Operation::Describe;
    case ApiKey::CreateGroup:
      return Operation::Create;
    case ApiKey::DeleteGroup:
      return Operation::Delete;
    case ApiKey::RewindConsumer:
      return Operation::Rewind;
    case ApiKey::Authenticate:
    case ApiKey::DrainServer:
    case ApiKey::DescribeServers:
      return std::nullopt;
  }
  return std::nullopt;
}

bool Rule::matchesUser(std::string_view user, credentials::Role role) const {
  switch (principal) {
    case Principal::Anyone: return true;
    case Principal::User: return who == user;
    case Principal::Role: return who == credentials::roleName(role);
  }
  return false;
}

bool Rule::matchesGroup(std::string_view group) const {
  switch (resource) {
    case Resource::AnyGroup: return true;
    case Resource::Group: return pattern == group;
    case Resource::Prefix: return group.substr(0, pattern.size()) == pattern;
  }
  return false;
}

std::string formatRule(const Rule& r) {
  std::string out = r.allow ? "allow " : "deny ";
  switch (r.principal) {
    case Rule::Principal::Anyone: out += "*"; break;
    case Rule::Principal::User: out += "user:" + r.who; break;
    case Rule::Principal::Role: out += "role:" + r.who; break;
  }
  out += " " + operationsText(r.operations) + " ";
  switch (r.resource) {
    case Rule::Resource::AnyGroup: out += "group:*"; break;
    case Rule::Resource::Group: out += "group:" + r.pattern; break;
    case Rule::Resource::Prefix: out += "prefix:" + r.pattern; break;
  }
  return out;
}

std::string parseRule(std::string_view line, Rule* out) {
  Rule r;
  if (line.size() > kMaxLineBytes) return "longer than " + std::to_string(kMaxLineBytes) + " bytes";
  const auto f = fields(line);
  if (f.size() != 4) {
    return "expected EFFECT PRINCIPAL OPERATIONS RESOURCE (4 fields separated by spaces), found " +
           std::to_string(f.size()) + " field(s)";
  }
  if (f[0] == "allow") {
    r.allow = true;
  } else if (f[0] == "deny") {
    r.allow = false;
  } else {
    return "effect '" + shown(f[0]) + "' is neither 'allow' nor 'deny'";
  }

  if (f[1] == "*") {
    r.principal = Rule::Principal::Anyone;
  } else if (f[1].substr(0, 5) == "user:") {
    r.principal = Rule::Principal::User;
    r.who = std::string(f[1].substr(5));
    if (!credentials::isValidUserName(r.who)) {
      return "user name '" + shown(r.who) + "' is not 1 to 128 of [A-Za-z0-9._@-]";
    }
  } else if (f[1].substr(0, 5) == "role:") {
    r.principal = Rule::Principal::Role;
    r.who = std::string(f[1].substr(5));
    if (!credentials::roleFromName(r.who)) return "role '" + shown(r.who) + "' is neither 'member' nor 'admin'";
  } else {
    return "principal '" + shown(f[1]) + "' is not user:NAME, role:member, role:admin or *";
  }

  if (f[2] == "all") {
    r.operations = kAllOperations;
  } else {
    std::string_view ops = f[2];
    while (!ops.empty()) {
      const size_t comma = ops.find(',');
      const std::string_view name = ops.substr(0, comma);
      const auto op = operationFromName(name);
      if (!op) {
        return "operation '" + shown(name) +
               "' is not one of join, commit, fetch, describe, create, delete, rewind (or all)";
      }
      r.operations |= bit(*op);
      if (comma == std::string_view::npos) break;
      ops.remove_prefix(comma + 1);
      if (ops.empty()) return "the operation list ends with ','";
    }
  }

  if (f[3] == "group:*") {
    r.resource = Rule::Resource::AnyGroup;
  } else if (f[3].substr(0, 6) == "group:") {
    r.resource = Rule::Resource::Group;
    r.pattern = std::string(f[3].substr(6));
    if (!protocol::isValidName(r.pattern)) return "group name '" + shown(r.pattern) + "' is not a valid group name";
  } else if (f[3].substr(0, 7) == "prefix:") {
    r.resource = Rule::Resource::Prefix;
    r.pattern = std::string(f[3].substr(7));
    if (!isValidPrefix(r.pattern)) return "prefix '" + shown(r.pattern) + "' is not the start of a valid group name";
  } else {
    return "resource '" + shown(f[3]) + "' is not group:NAME, prefix:TEXT or group:*";
  }
  *out = std::move(r);
  return "";
}

std::shared_ptr<const Policy> Policy::parse(std::string_view text, const std::string& source, std::string* error) {
  std::shared_ptr<Policy> policy(new Policy());
  size_t lineNo = 0;
  while (!text.empty()) {
    ++lineNo;
    const size_t end = text.find('\n');
    std::string_view line = trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line.empty() || line.front() == '#') continue;
    Rule rule;
    std::string why = parseRule(line, &rule);
    if (!why.empty()) {
      *error = source + " line " + std::to_string(lineNo) + ": " + why;
      return nullptr;
    }
    if (policy->rules_.size() >= kMaxRules) {
      *error = source + " line " + std::to_string(lineNo) + ": more than " + std::to_string(kMaxRules) + " rules";
      return nullptr;
    }
    const size_t index = policy->rules_.size();
    if (rule.resource == Rule::Resource::Group) {
      policy->byGroup_[rule.pattern].push_back(index);
    } else {
      policy->general_.push_back(index);
    }
    policy->rules_.push_back(std::move(rule));
  }
  return policy;
}

std::shared_ptr<const Policy> Policy::load(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "permissions file '" + path + "' cannot be read";
    return nullptr;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    *error = "permissions file '" + path + "' cannot be read";
    return nullptr;
  }
  return parse(text.str(), "permissions file '" + path + "'", error);
}

OperationSet Policy::allowed(std::string_view user, credentials::Role role, std::string_view group) const {
  OperationSet allow = 0;
  OperationSet deny = 0;
  auto consider = [&](const Rule& r) {
    if (!r.matchesUser(user, role) || !r.matchesGroup(group)) return;
    (r.allow ? allow : deny) |= r.operations;
  };
  if (!byGroup_.empty()) {
    auto it = byGroup_.find(std::string(group));
    if (it != byGroup_.end()) {
      for (size_t i : it->second) consider(rules_[i]);
    }
  }
  for (size_t i : general_) consider(rules_[i]);
  return static_cast<OperationSet>(allow & ~deny);
}

}  // namespace groupcoord::permissions
