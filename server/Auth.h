#pragma once

// Client credentials of groupcoordd: the credentials file and the check of
// a secret against it. The line format, the roles and the slow salted hash
// are common/Credentials.h (shared with `groupctl auth hash`, which makes
// such lines); their names are repeated here in groupcoord::server.
//
// The file (option auth.credentials.file) has one user per line:
//
//   USER:ROLE:scram-sha-256:ITERATIONS:SALT_HEX:STORED_KEY_HEX:SERVER_KEY_HEX
//   USER:ROLE:pbkdf2-sha256:ITERATIONS:SALT_HEX:HASH_HEX   (older)
//
// Blank lines and lines starting with '#' are ignored.
//
// Loading is start-up code and reports the first bad line by its number.
// verify() may be called from any thread.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/Credentials.h"
#include "common/Sync.h"
#include "protocol/Messages.h"

namespace groupcoord::server {

using credentials::Credential;
using credentials::Role;
using credentials::roleFromName;
using credentials::roleName;

// Which calls a role may make (docs/protocol.md, "9 Authenticate").
// Authenticate itself is allowed to everyone.
bool roleAllows(Role role, protocol::ApiKey api);

using credentials::kDefaultIterations;
using credentials::kHashBytes;
using credentials::kMaxIterations;
using credentials::kMinIterations;
using credentials::kSaltBytes;

using credentials::constantTimeEquals;
using credentials::hashSecret;
using credentials::isValidUserName;
using credentials::makeCredentialLine;

class CredentialStore {
 public:
  // Parses the text of a credentials file; `source` names it in errors
  // ("credentials file '/etc/x' line 3: ..."). false with *error set on the
  // first bad line; an empty file is an error too (nobody could log in).
  static std::shared_ptr<CredentialStore> parse(std::string_view text, const std::string& source, std::string* error);
  // Reads and parses the file.
  static std::shared_ptr<CredentialStore> load(const std::string& path, std::string* error);

  size_t size() const { return users_.size(); }
  // The largest iteration count of the file: what a decoy uses.
  uint32_t decoyIterations() const { return decoy_.iterations; }
  const Credential* find(std::string_view user) const;

  // The user's role when `secret` is theirs. Compares in constant time, and
  // spends the slow hash also on an unknown user, so that the time taken
  // does not tell which users exist. A success is remembered (as a keyed
  // fast digest, never the secret) so that a reconnecting client with the
  // same secret costs one SHA-256, while a wrong secret always costs the
  // full iteration count.
  std::optional<Role> verify(std::string_view user, std::string_view secret) const EXCLUDES(cacheMutex_);

 private:
  CredentialStore();
  std::vector<uint8_t> quickDigest(const Credential& c, std::string_view secret) const;

  std::map<std::string, Credential, std::less<>> users_;
  Credential decoy_;                  // hashed against when the user is unknown
  std::vector<uint8_t> digestKey_;    // random, per process
  mutable Mutex cacheMutex_;
  // user -> quickDigest of the secret
  mutable std::map<std::string, std::vector<uint8_t>, std::less<>> verified_ GUARDED_BY(cacheMutex_);
};

}  // namespace groupcoord::server
