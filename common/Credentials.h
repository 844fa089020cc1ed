#pragma once

// The credentials-file line of groupcoordd and its slow salted hash, shared
// by groupcoordd (server/Auth.h: loading the file, checking secrets) and
// `groupctl auth hash` (making a line). No I/O, no server, no ZooKeeper.
//
// A line holds one user, in one of two schemes:
//
//   USER:ROLE:scram-sha-256:ITERATIONS:SALT_HEX:STORED_KEY_HEX:SERVER_KEY_HEX
//   USER:ROLE:pbkdf2-sha256:ITERATIONS:SALT_HEX:HASH_HEX
//
// USER is 1..128 of [A-Za-z0-9._@-]; ROLE is `member` or `admin`. Both start
// from SaltedPassword = PBKDF2-HMAC-SHA256 of the secret with that salt
// (16..64 bytes) and iteration count (10000..10000000), 32 bytes. The first
// (what `groupctl auth hash` writes) keeps only SCRAM's StoredKey and
// ServerKey (RFC 5802, 3), from which the secret cannot be used even by
// whoever reads the file; the second, older, keeps SaltedPassword itself.
// Both serve Authenticate version 0 (the secret, checked against them) and
// version 1 (SCRAM-SHA-256).

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
inline constexpr std::string_view kScheme = "scram-sha-256";
inline constexpr std::string_view kOlderScheme = "pbkdf2-sha256";

struct Credential {
  std::string user;
  Role role = Role::Member;
  uint32_t iterations = kDefaultIterations;
  std::vector<uint8_t> salt;
  // SCRAM's keys: read from a scram-sha-256 line, derived from the hash of
  // a pbkdf2-sha256 line.
  std::vector<uint8_t> storedKey;
  std::vector<uint8_t> serverKey;
};

// SCRAM's StoredKey of a SaltedPassword: SHA-256(HMAC(salted, "Client Key")).
std::vector<uint8_t> storedKeyOf(const std::vector<uint8_t>& saltedPassword);
std::vector<uint8_t> serverKeyOf(const std::vector<uint8_t>& saltedPassword);

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
