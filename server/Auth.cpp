#include "server/Auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

namespace groupcoord::server {

namespace {

constexpr size_t kMaxUserBytes = 128;
constexpr size_t kMaxSaltBytes = 64;
constexpr std::string_view kScheme = "pbkdf2-sha256";

std::string toHex(const std::vector<uint8_t>& bytes) {
  static const char* const kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0xf];
  }
  return out;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool fromHex(std::string_view text, std::vector<uint8_t>& out) {
  if (text.size() % 2 != 0) return false;
  out.clear();
  out.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    const int hi = hexValue(text[i]);
    const int lo = hexValue(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> splitColons(std::string_view line) {
  std::vector<std::string_view> parts;
  for (;;) {
    const size_t colon = line.find(':');
    parts.push_back(line.substr(0, colon));
    if (colon == std::string_view::npos) break;
    line.remove_prefix(colon + 1);
  }
  return parts;
}

// "" or why `fields` is not a credential; fills c.
std::string parseLine(std::string_view line, Credential& c) {
  const auto f = splitColons(line);
  if (f.size() != 6) {
    return "expected USER:ROLE:pbkdf2-sha256:ITERATIONS:SALT_HEX:HASH_HEX (6 fields separated by ':'), found " +
           std::to_string(f.size()) + " field(s)";
  }
  if (!isValidUserName(f[0])) {
    return "user name '" + std::string(f[0].substr(0, kMaxUserBytes)) + "' is not 1 to 128 of [A-Za-z0-9._@-]";
  }
  c.user = std::string(f[0]);
  const auto role = roleFromName(f[1]);
  if (!role) return "role '" + std::string(f[1]) + "' is neither 'member' nor 'admin'";
  c.role = *role;
  if (f[2] != kScheme) return "hash scheme '" + std::string(f[2]) + "' is not '" + std::string(kScheme) + "'";
  uint64_t iterations = 0;
  const auto [end, ec] = std::from_chars(f[3].data(), f[3].data() + f[3].size(), iterations);
  if (ec != std::errc() || end != f[3].data() + f[3].size() || iterations < kMinIterations ||
      iterations > kMaxIterations) {
    return "iteration count '" + std::string(f[3]) + "' is not a number in " + std::to_string(kMinIterations) + ".." +
           std::to_string(kMaxIterations);
  }
  c.iterations = static_cast<uint32_t>(iterations);
  if (!fromHex(f[4], c.salt) || c.salt.size() < kSaltBytes || c.salt.size() > kMaxSaltBytes) {
    return "salt is not " + std::to_string(kSaltBytes) + " to " + std::to_string(kMaxSaltBytes) + " bytes in hex";
  }
  if (!fromHex(f[5], c.hash) || c.hash.size() != kHashBytes) {
    return "hash is not " + std::to_string(kHashBytes) + " bytes in hex";
  }
  return "";
}

}  // namespace

std::string_view roleName(Role role) { return role == Role::Admin ? "admin" : "member"; }

std::optional<Role> roleFromName(std::string_view name) {
  if (name == "member") return Role::Member;
  if (name == "admin") return Role::Admin;
  return std::nullopt;
}

bool roleAllows(Role role, protocol::ApiKey api) {
  using protocol::ApiKey;
  switch (api) {
    case ApiKey::DeleteGroup:
    case ApiKey::RewindConsumer:
      return role == Role::Admin;
    case ApiKey::Heartbeat:
    case ApiKey::CreateGroup:
    case ApiKey::RegisterConsumer:
    case ApiKey::ListGroups:
    case ApiKey::LeaveGroup:
    case ApiKey::CommitOffsets:
    case ApiKey::FetchOffsets:
    case ApiKey::Authenticate:
      return true;
  }
  return false;
}

bool isValidUserName(std::string_view user) {
  if (user.empty() || user.size() > kMaxUserBytes) return false;
  for (char ch : user) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                    ch == '_' || ch == '-' || ch == '@';
    if (!ok) return false;
  }
  return true;
}

std::vector<uint8_t> hashSecret(std::string_view secret, const std::vector<uint8_t>& salt, uint32_t iterations) {
  std::vector<uint8_t> out(kHashBytes);
  const int ok = PKCS5_PBKDF2_HMAC(secret.data(), static_cast<int>(secret.size()), salt.data(),
                                   static_cast<int>(salt.size()), static_cast<int>(iterations), EVP_sha256(),
                                   static_cast<int>(out.size()), out.data());
  if (ok != 1) out.clear();  // equal to nothing (constantTimeEquals refuses empty input)
  return out;
}

bool constantTimeEquals(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size() || a.empty()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string makeCredentialLine(const std::string& user, Role role, std::string_view secret, uint32_t iterations,
                               std::string* error) {
  if (!isValidUserName(user)) {
    *error = "user name '" + user + "' is not 1 to 128 of [A-Za-z0-9._@-]";
    return "";
  }
  if (iterations < kMinIterations || iterations > kMaxIterations) {
    *error = "iteration count " + std::to_string(iterations) + " is not in " + std::to_string(kMinIterations) + ".." +
             std::to_string(kMaxIterations);
    return "";
  }
  if (secret.empty()) {
    *error = "the secret is empty";
    return "";
  }
  std::vector<uint8_t> salt(kSaltBytes);
  if (RAND_bytes(salt.data(), static_cast<int>(salt.size())) != 1) {
    *error = "no random bytes for the salt";
    return "";
  }
  return user + ":" + std::string(roleName(role)) + ":" + std::string(kScheme) + ":" + std::to_string(iterations) +
         ":" + toHex(salt) + ":" + toHex(hashSecret(secret, salt, iterations));
}

CredentialStore::CredentialStore() : digestKey_(32) {
  if (RAND_bytes(digestKey_.data(), static_cast<int>(digestKey_.size())) != 1) digestKey_.clear();
  decoy_.user = "";
  decoy_.iterations = kDefaultIterations;
  decoy_.salt.assign(kSaltBytes, 0x5a);
  decoy_.hash.assign(kHashBytes, 0);
}

std::shared_ptr<CredentialStore> CredentialStore::parse(std::string_view text, const std::string& source,
                                                        std::string* error) {
  std::shared_ptr<CredentialStore> store(new CredentialStore());
  if (store->digestKey_.empty()) {
    *error = "no random bytes for the verification cache key";
    return nullptr;
  }
  int lineNo = 0;
  uint32_t maxIterations = kMinIterations;
  while (!text.empty()) {
    ++lineNo;
    const size_t nl = text.find('\n');
    const std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    Credential c;
    if (auto why = parseLine(line, c); !why.empty()) {
      *error = source + " line " + std::to_string(lineNo) + ": " + why;
      return nullptr;
    }
    if (store->users_.count(c.user)) {
      *error = source + " line " + std::to_string(lineNo) + ": user '" + c.user + "' appears a second time";
      return nullptr;
    }
    maxIterations = std::max(maxIterations, c.iterations);
    store->users_.emplace(c.user, std::move(c));
  }
  if (store->users_.empty()) {
    *error = source + " holds no user: nobody could authenticate";
    return nullptr;
  }
  // An unknown user costs what the dearest real one does.
  store->decoy_.iterations = maxIterations;
  return store;
}

std::shared_ptr<CredentialStore> CredentialStore::load(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read the credentials file '" + path + "'";
    return nullptr;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), "credentials file '" + path + "'", error);
}

const Credential* CredentialStore::find(std::string_view user) const {
  auto it = users_.find(user);
  return it == users_.end() ? nullptr : &it->second;
}

std::vector<uint8_t> CredentialStore::quickDigest(const Credential& c, std::string_view secret) const {
  std::vector<uint8_t> message(c.salt);
  message.insert(message.end(), secret.begin(), secret.end());
  std::vector<uint8_t> out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), digestKey_.data(), static_cast<int>(digestKey_.size()), message.data(), message.size(),
           out.data(), &len) == nullptr) {
    return {};
  }
  out.resize(len);
  return out;
}

std::optional<Role> CredentialStore::verify(std::string_view user, std::string_view secret) const {
  const Credential* c = find(user);
  if (c == nullptr) {
    (void)constantTimeEquals(hashSecret(secret, decoy_.salt, decoy_.iterations), decoy_.hash);
    return std::nullopt;
  }
  const std::vector<uint8_t> quick = quickDigest(*c, secret);
  {
    std::lock_guard lock(cacheMutex_);
    auto it = verified_.find(user);
    if (it != verified_.end() && constantTimeEquals(it->second, quick)) return c->role;
  }
  if (!constantTimeEquals(hashSecret(secret, c->salt, c->iterations), c->hash)) return std::nullopt;
  if (!quick.empty()) {
    std::lock_guard lock(cacheMutex_);
    verified_[c->user] = quick;
  }
  return c->role;
}

}  // namespace groupcoord::server
