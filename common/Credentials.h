#pragma once

// The credentials-file line of groupcoordd and its slow salted hash, shared
// by groupcoordd (server/Auth.h: loading the file, checking secrets) and
// `groupctl auth hash` (making a line). No I/O, no server, no ZooKeeper.
//
// A line holds one user:
//
//   USER:ROLE:pbkdf2-sha256:ITERATIONS:SALT_HEX:HASH_HEX
//
// USER is 1..128 of [A-Za-z0-9._@-]; ROLE is `member` or `admin`; the hash is
// PBKDF2-HMAC-SHA256 of the secret with that salt (16..64 bytes) and
// iteration count (10000..10000000), 32 bytes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace groupcoord::credentials {

enum class Role : uint8_t { Member, Admin };
std::string_view roleName(Role role);
std::optional<Role> roleFromName(std::string_view name);

inline constexpr uint32_t kMinIterations = 10000;
inline constexpr uint32_t kMaxIterations = 10000000;
inline constexpr uint32_t kDefaultIterations = 200000;
inline constexpr size_t kSaltBytes = 16;
inline constexpr size_t kMaxSaltBytes = 64;
inline constexpr size_t kHashBytes = 32;
inline constexpr size_t kMaxUserBytes = 128;
inline constexpr std::string_view kScheme = "pbkdf2-sha256";

struct Credential {
  std::string user;
  Role role = Role::Member;
  uint32_t iterations = kDefaultIterations;
  std::vector<uint8_t> salt;
  std::vector<uint8_t> hash;
};

// True for a user name the credentials file may hold.
bool isValidUserName(std::string_view user);

// PBKDF2-HMAC-SHA256(secret, salt, iterations), kHashBytes long (empty if
// the hash could not be computed).
std::vector<uint8_t> hashSecret(std::string_view secret, const std::vector<uint8_t>& salt, uint32_t iterations);

// Constant-time equality of two byte strings of the same length (false when
// the lengths differ or both are empty).
bool constantTimeEquals(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

// A credentials-file line for `user` with a fresh random salt. Empty with
// *error set when the user name or the iteration count is not acceptable,
// the secret is empty, or no random bytes could be had.
std::string makeCredentialLine(const std::string& user, Role role, std::string_view secret, uint32_t iterations,
                               std::string* error);

// Parses one line (without its line end, trimmed, not a comment) into *out.
// "" when it is a credential, else why not (without the line number).
std::string parseCredentialLine(std::string_view line, Credential* out);

}  // namespace groupcoord::credentials
