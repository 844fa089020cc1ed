#include "common/Scram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <charconv>


namespace groupcoord::scram {

namespace {

// The most iterations a client computes for a server (as many as a
// credentials file may hold).
constexpr uint32_t kMaxIterations = 10000000;

constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64Value(char c) {
  const size_t i = kAlphabet.find(c);
  return i == std::string_view::npos ? -1 : static_cast<int>(i);
}

// "a=value" attributes separated by ','; the value of `name`, which must be
// the attribute at `index`.
std::optional<std::string_view> attribute(const std::vector<std::string_view>& attrs, size_t index, char name) {
  if (index >= attrs.size()) return std::nullopt;
  std::string_view a = attrs[index];
  if (a.size() < 2 || a[0] != name || a[1] != '=') return std::nullopt;
  return a.substr(2);
}

std::vector<std::string_view> split(std::string_view text) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t comma = text.find(',');
    out.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

// A nonce is printable ASCII without ',' (RFC 5802, 7).
bool isValidNonce(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n) {
    if (c < 0x21 || c > 0x7e || c == ',') return false;
  }
  return true;
}

// saslname: '=' only as =2C or =3D.
std::optional<std::string> unescapeName(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ',') return std::nullopt;
    if (s[i] != '=') {
      out += s[i];
      continue;
    }
    if (s.substr(i, 3) == "=2C") {
      out += ',';
    } else if (s.substr(i, 3) == "=3D") {
      out += '=';
    } else {
      return std::nullopt;
    }
    i += 2;
  }
  return out;
}

std::string escapeName(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ',') {
      out += "=2C";
    } else if (c == '=') {
      out += "=3D";
    } else {
      out += c;
    }
  }
  return out;
}

Bytes xorBytes(const Bytes& a, const Bytes& b) {
  Bytes out(a.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) out[i] = a[i] ^ b[i];
  return out;
}

bool sameBytes(const Bytes& a, const Bytes& b) {
  return a.size() == b.size() && !a.empty() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::string base64(const Bytes& bytes) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = bytes[i] << 16 | bytes[i + 1] << 8 | bytes[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[v >> s & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = bytes[i] << 16;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = bytes[i] << 16 | bytes[i + 1] << 8;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += '=';
  }
  return out;
}

std::optional<Bytes> fromBase64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  Bytes out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[k] = base64Value(c);
      if (v[k] < 0) return std::nullopt;
    }
    const uint32_t n = v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3];
    // Canonical only: the bits past the last byte are zero.
    if ((pad == 2 && (n & 0xffff) != 0) || (pad == 1 && (n & 0xff) != 0)) return std::nullopt;
    out.push_back(static_cast<uint8_t>(n >> 16));
    if (pad < 2) out.push_back(static_cast<uint8_t>(n >> 8 & 0xff));
    if (pad < 1) out.push_back(static_cast<uint8_t>(n & 0xff));
  }
  return out;
}

Bytes sha256(const Bytes& data) {
  Bytes out(SHA256_DIGEST_LENGTH);
  SHA256(data.data(), data.size(), out.data());
  return out;
}

Bytes hmacSha256(const Bytes& key, std::string_view data) {
  Bytes out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const uint8_t*>(data.data()),
           data.size(), out.data(), &len) == nullptr) {
    return {};
  }
  out.resize(len);
  return out;
}

std::string randomNonce(size_t n) {
  Bytes b(n);
  if (RAND_bytes(b.data(), static_cast<int>(b.size())) != 1) return "";
  return base64(b);
}

ServerKeys keysFromSaltedPassword(const Bytes& saltedPassword) {
  return ServerKeys{sha256(hmacSha256(saltedPassword, "Client Key")), hmacSha256(saltedPassword, "Server Key")};
}

// ---- The client -------------------------------------------------------------

ClientExchange::ClientExchange(std::string user, std::string secret, std::string nonce)
    : user_(std::move(user)), secret_(std::move(secret)), nonce_(nonce.empty() ? randomNonce() : std::move(nonce)) {}

std::string ClientExchange::first() const { return "n,,n=" + escapeName(user_) + ",r=" + nonce_; }

std::optional<std::string> ClientExchange::final(std::string_view serverFirst, std::string* error,
                                                 uint32_t minIterations) {
  const auto attrs = split(serverFirst);
  if (attrs.size() < 3) {
    *error = "the server's first SCRAM message is not r=...,s=...,i=...";
    return std::nullopt;
  }
  const auto nonce = attribute(attrs, 0, 'r');
  const auto salt64 = attribute(attrs, 1, 's');
  const auto iter = attribute(attrs, 2, 'i');
  if (!nonce || !salt64 || !iter) {
    *error = "the server's first SCRAM message is not r=...,s=...,i=...";
    return std::nullopt;
  }
  if (nonce->size() <= nonce_.size() || nonce->substr(0, nonce_.size()) != nonce_ || !isValidNonce(*nonce)) {
    *error = "the server's SCRAM nonce does not extend the client's";
    return std::nullopt;
  }
  const auto salt = fromBase64(*salt64);
  uint32_t iterations = 0;
  const auto [end, ec] = std::from_chars(iter->data(), iter->data() + iter->size(), iterations);
  if (!salt || salt->empty() || ec != std::errc() || end != iter->data() + iter->size()) {
    *error = "the server's SCRAM salt or iteration count is malformed";
    return std::nullopt;
  }
  if (iterations < minIterations || iterations > kMaxIterations) {
    *error = "the server asks for " + std::to_string(iterations) + " SCRAM iterations, outside " +
             std::to_string(minIterations) + ".." + std::to_string(kMaxIterations);
    return std::nullopt;
  }
  Bytes salted(32);
  if (PKCS5_PBKDF2_HMAC(secret_.data(), static_cast<int>(secret_.size()), salt->data(),
                        static_cast<int>(salt->size()), static_cast<int>(iterations), EVP_sha256(),
                        static_cast<int>(salted.size()), salted.data()) != 1) {
    *error = "the salted secret could not be computed";
    return std::nullopt;
  }
  const Bytes clientKey = hmacSha256(salted, "Client Key");
  const Bytes storedKey = sha256(clientKey);
  const std::string withoutProof = "c=biws,r=" + std::string(*nonce);
  const std::string bare = first().substr(3);  // without "n,,"
  authMessage_ = bare + "," + std::string(serverFirst) + "," + withoutProof;
  const Bytes proof = xorBytes(clientKey, hmacSha256(storedKey, authMessage_));
  serverKey_ = hmacSha256(salted, "Server Key");
  return withoutProof + ",p=" + base64(proof);
}

bool ClientExchange::verifyServer(std::string_view serverFinal, std::string* error) const {
  if (serverFinal.substr(0, 2) == "e=") {
    *error = "the server refused the SCRAM proof (" + std::string(serverFinal.substr(2, 64)) + ")";
    return false;
  }
  const auto attrs = split(serverFinal);
  const auto v = attribute(attrs, 0, 'v');
  const auto signature = v ? fromBase64(*v) : std::nullopt;
  if (!signature || authMessage_.empty()) {
    *error = "the server's last SCRAM message is not v=...";
    return false;
  }
  if (!sameBytes(*signature, hmacSha256(serverKey_, authMessage_))) {
    *error = "the server's SCRAM signature is wrong: it does not know this user's keys";
    return false;
  }
  return true;
}

// ---- The server -------------------------------------------------------------

std::optional<std::string> ServerExchange::start(std::string_view clientFirst, std::string* error) {
  if (clientFirst.size() > kMaxMessageBytes) {
    *error = "the client's first SCRAM message is longer than " + std::to_string(kMaxMessageBytes) + " bytes";
    return std::nullopt;
  }
  const auto attrs = split(clientFirst);
  // gs2-header: "n,," or "y,,"; channel binding (p=) and authzid (a=) are
  // not spoken.
  if (attrs.size() < 4 || (attrs[0] != "n" && attrs[0] != "y") || !attrs[1].empty()) {
    *error = "the client's first SCRAM message does not begin with n,, (no channel binding, no authzid)";
    return std::nullopt;
  }
  if (attrs.size() != 4) {
    *error = "the client's first SCRAM message has extensions, which are not spoken";
    return std::nullopt;
  }
  const auto name = attribute(attrs, 2, 'n');
  const auto nonce = attribute(attrs, 3, 'r');
  if (!name || !nonce || !isValidNonce(*nonce)) {
    *error = "the client's first SCRAM message is not n,,n=USER,r=NONCE";
    return std::nullopt;
  }
  auto user = unescapeName(*name);
  if (!user) {
    *error = "the SCRAM user name is not escaped as RFC 5802 says";
    return std::nullopt;
  }
  gs2Header_ = std::string(attrs[0]) + ",,";
  clientFirstBare_ = std::string(clientFirst.substr(gs2Header_.size()));
  clientNonce_ = std::string(*nonce);
  return user;
}

std::string ServerExchange::challenge(User user, std::string nonce) {
  user_ = std::move(user);
  nonce_ = clientNonce_ + (nonce.empty() ? randomNonce() : nonce);
  serverFirst_ = "r=" + nonce_ + ",s=" + base64(user_.salt) + ",i=" + std::to_string(user_.iterations);
  return serverFirst_;
}

bool ServerExchange::finish(std::string_view clientFinal, std::string* serverFinal, std::string* error) {
  *serverFinal = "e=invalid-proof";
  if (serverFirst_.empty()) {
    *error = "a SCRAM final message before the first";
    return false;
  }
  if (clientFinal.size() > kMaxMessageBytes) {
    *error = "the client's final SCRAM message is longer than " + std::to_string(kMaxMessageBytes) + " bytes";
    return false;
  }
  const auto attrs = split(clientFinal);
  const auto binding = attribute(attrs, 0, 'c');
  const auto nonce = attribute(attrs, 1, 'r');
  const auto proof64 = attrs.size() == 3 ? attribute(attrs, 2, 'p') : std::nullopt;
  if (!binding || !nonce || !proof64) {
    *error = "the client's final SCRAM message is not c=...,r=...,p=...";
    return false;
  }
  const auto header = fromBase64(*binding);
  if (!header || std::string(header->begin(), header->end()) != gs2Header_) {
    *error = "the SCRAM channel binding does not repeat the first message's header";
    return false;
  }
  // librdkafka 2.0.2 sends the client's nonce once more in front of the
  // exchange's (r=CLIENT CLIENT SERVER), and Kafka's brokers take it; so is
  // it taken here. Either way the proof covers the message as sent, with the
  // server's fresh nonce in it (docs/protocol.md, "Security on the Kafka port").
  if (*nonce != nonce_ && *nonce != clientNonce_ + nonce_) {
    *error = "the SCRAM nonce is not this exchange's";
    return false;
  }
  const auto proof = fromBase64(*proof64);
  const std::string withoutProof(clientFinal.substr(0, clientFinal.size() - proof64->size() - 3));
  const std::string authMessage = clientFirstBare_ + "," + serverFirst_ + "," + withoutProof;
  if (!proof || proof->size() != user_.keys.storedKey.size()) {
    *error = "the SCRAM proof is malformed";
    return false;
  }
  const Bytes clientKey = xorBytes(*proof, hmacSha256(user_.keys.storedKey, authMessage));
  if (!user_.known || !sameBytes(sha256(clientKey), user_.keys.storedKey)) {
    *error = "unknown user or wrong secret";
    return false;
  }
  *serverFinal = "v=" + base64(hmacSha256(user_.keys.serverKey, authMessage));
  return true;
}

}  // namespace groupcoord::scram
