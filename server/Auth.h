#pragma once

// Client credentials of groupcoordd: the credentials file, its parser, the
// slow salted hash and the check of a secret against it.
//
// The file (option auth.credentials.file) has one user per line:
//
//   USER:ROLE:pbkdf2-sha256:ITERATIONS:SALT_HEX:HASH_HEX
//
// USER is 1..128 of [A-Za-z0-9._@-]; ROLE is `member` or `admin`; the hash is
// PBKDF2-HMAC-SHA256 of the secret with that salt (16..64 bytes) and
// iteration count (10000..10000000), 32 bytes. Blank lines and lines starting
// with '#' are ignored. `groupctl auth hash` makes such a line.
//
// Loading is start-up code and reports the first bad line by its number.
// verify() may be called from any thread.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/Messages.h"

namespace groupcoord::server {

enum class Role : uint8_t { Member, Admin };
std::string_view roleName(Role role);
std::optional<Role> roleFromName(std::string_view name);

// Which calls a role may make (docs/protocol.md, "9 Authenticate").
// Authenticate itself is allowed to everyone.
bool roleAllows(Role role, protocol::ApiKey api);

inline constexpr uint32_t kMinIterations = 10000;
inline constexpr uint32_t kMaxIterations = 10000000;
inline constexpr uint32_t kDefaultIterations = 200000;
inline constexpr size_t kSaltBytes = 16;
inline constexpr size_t kHashBytes = 32;

struct Credential {
  std::string user;
  Role role = Role::Member;
  uint32_t iterations = kDefaultIterations;
  std::vector<uint8_t> salt;
  std::vector<uint8_t> hash;
};

// True for a user name the credentials file may hold.
bool isValidUserName(std::string_view user);

// PBKDF2-HMAC-SHA256(secret, salt, iterations), kHashBytes long.
std::vector<uint8_t> hashSecret(std::string_view secret, const std::vector<uint8_t>& salt, uint32_t iterations);

// A credentials-file line for `user` with a fresh random salt. Empty with
// *error set when the user name or the iteration count is not acceptable,
// or no random bytes could be had.
std::string makeCredentialLine(const std::string& user, Role role, std::string_view secret, uint32_t iterations,
                               std::string* error);

class CredentialStore {
 public:
  // Parses the text of a credentials file; `source` names it in errors
  // ("credentials file '/etc/x' line 3: ..."). false with *error set on the
  // first bad line; an empty file is an error too (nobody could log in).
  static std::shared_ptr<CredentialStore> parse(std::string_view text, const std::string& source, std::string* error);
  // Reads and parses the file.
  static std::shared_ptr<CredentialStore> load(const std::string& path, std::string* error);

  size_t size() const { return users_.size(); }
  const Credential* find(std::string_view user) const;

  // The user's role when `secret` is theirs. Compares in constant time, and
  // spends the slow hash also on an unknown user, so that the time taken
  // does not tell which users exist. A success is remembered (as a keyed
  // fast digest, never the secret) so that a reconnecting client with the
  // same secret costs one SHA-256, while a wrong secret always costs the
  // full iteration count.
  std::optional<Role> verify(std::string_view user, std::string_view secret) const;

 private:
  CredentialStore();
  std::vector<uint8_t> quickDigest(const Credential& c, std::string_view secret) const;

  std::map<std::string, Credential, std::less<>> users_;
  Credential decoy_;                  // hashed against when the user is unknown
  std::vector<uint8_t> digestKey_;    // random, per process
  mutable std::mutex cacheMutex_;
  mutable std::map<std::string, std::vector<uint8_t>, std::less<>> verified_;  // user -> quickDigest of the secret
};

// Constant-time equality of two byte strings of the same length (false when
// the lengths differ).
bool constantTimeEquals(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

}  // namespace groupcoord::server
