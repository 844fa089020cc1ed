#include "common/Credentials.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/rand.h>

#include <charconv>

namespace groupcoord::credentials {

namespace {

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

}  // namespace

namespace {

// HMAC-SHA256(key, label); empty when it cannot be computed.
std::vector<uint8_t> hmacOf(const std::vector<uint8_t>& key, std::string_view label) {
  std::vector<uint8_t> out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  if (key.empty() || HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                          reinterpret_cast<const uint8_t*>(label.data()), label.size(), out.data(), &len) == nullptr) {
    return {};
  }
  out.resize(len);
  return out;
}

}  // namespace

std::vector<uint8_t> storedKeyOf(const std::vector<uint8_t>& saltedPassword) {
  const std::vector<uint8_t> clientKey = hmacOf(saltedPassword, "Client Key");
  if (clientKey.empty()) return {};
  std::vector<uint8_t> out(SHA256_DIGEST_LENGTH);
  SHA256(clientKey.data(), clientKey.size(), out.data());
  return out;
}

std::vector<uint8_t> serverKeyOf(const std::vector<uint8_t>& saltedPassword) {
  return hmacOf(saltedPassword, "Server Key");
}

std::string_view roleName(Role role) { return role == Role::Admin ? "admin" : "member"; }

std::optional<Role> roleFromName(std::string_view name) {
  if (name == "member") return Role::Member;
  if (name == "admin") return Role::Admin;
  return std::nullopt;
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
  const std::vector<uint8_t> salted = hashSecret(secret, salt, iterations);
  if (salted.empty()) {
    *error = "the salted secret could not be computed";
    return "";
  }
  return user + ":" + std::string(roleName(role)) + ":" + std::string(kScheme) + ":" + std::to_string(iterations) +
         ":" + toHex(salt) + ":" + toHex(storedKeyOf(salted)) + ":" + toHex(serverKeyOf(salted));
}

std::string parseCredentialLine(std::string_view line, Credential* out) {
  Credential& c = *out;
  const auto f = splitColons(line);
  const bool scram = f.size() >= 3 && f[2] == kScheme;
  const size_t fields = scram ? 7 : 6;
  if (f.size() != fields) {
    return scram ? "expected USER:ROLE:scram-sha-256:ITERATIONS:SALT_HEX:STORED_KEY_HEX:SERVER_KEY_HEX (7 fields "
                   "separated by ':'), found " + std::to_string(f.size()) + " field(s)"
                 : "expected USER:ROLE:scram-sha-256:ITERATIONS:SALT_HEX:STORED_KEY_HEX:SERVER_KEY_HEX (7 fields) or "
                   "USER:ROLE:pbkdf2-sha256:ITERATIONS:SALT_HEX:HASH_HEX (6 fields separated by ':'), found " +
                       std::to_string(f.size()) + " field(s)";
  }
  if (!isValidUserName(f[0])) {
    return "user name '" + std::string(f[0].substr(0, kMaxUserBytes)) + "' is not 1 to 128 of [A-Za-z0-9._@-]";
  }
  c.user = std::string(f[0]);
  const auto role = roleFromName(f[1]);
  if (!role) return "role '" + std::string(f[1]) + "' is neither 'member' nor 'admin'";
  c.role = *role;
  if (!scram && f[2] != kOlderScheme) {
    return "hash scheme '" + std::string(f[2]) + "' is neither '" + std::string(kScheme) + "' nor '" +
           std::string(kOlderScheme) + "'";
  }
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
  if (scram) {
    if (!fromHex(f[5], c.storedKey) || c.storedKey.size() != kHashBytes) {
      return "stored key is not " + std::to_string(kHashBytes) + " bytes in hex";
    }
    if (!fromHex(f[6], c.serverKey) || c.serverKey.size() != kHashBytes) {
      return "server key is not " + std::to_string(kHashBytes) + " bytes in hex";
    }
    return "";
  }
  std::vector<uint8_t> hash;
  if (!fromHex(f[5], hash) || hash.size() != kHashBytes) {
    return "hash is not " + std::to_string(kHashBytes) + " bytes in hex";
  }
  c.storedKey = storedKeyOf(hash);
  c.serverKey = serverKeyOf(hash);
  if (c.storedKey.empty() || c.serverKey.empty()) return "the keys of the hash could not be computed";
  return "";
}

}  // namespace groupcoord::credentials
