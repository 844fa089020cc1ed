#pragma once

// SCRAM-SHA-256 (RFC 5802 with RFC 7677's hash), as Authenticate version 1
// speaks it (docs/protocol.md, "9 Authenticate"): both ends of the
// exchange as pure state machines over the message texts, shared by
// groupcoordd (server/AuthGate.cpp), the C++ client and the tests. No I/O.
//
// The exchange, on one connection:
//
//   client-first   n,,n=USER,r=CLIENT_NONCE
//   server-first   r=CLIENT_NONCE SERVER_NONCE,s=SALT_BASE64,i=ITERATIONS
//   client-final   c=biws,r=CLIENT_NONCE SERVER_NONCE,p=CLIENT_PROOF_BASE64
//   server-final   v=SERVER_SIGNATURE_BASE64   (or e=invalid-proof)
//
// No channel binding ("n,," or "y,,"), no authzid, no extensions. The secret
// never crosses the wire, and a captured exchange cannot be replayed: the
// proof covers the server's fresh nonce.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace groupcoord::scram {

using Bytes = std::vector<uint8_t>;

inline constexpr std::string_view kMechanism = "SCRAM-SHA-256";
// The longest client message a server reads (a user name is at most 128
// bytes; nonces and proofs are short).
inline constexpr size_t kMaxMessageBytes = 1024;

std::string base64(const Bytes& bytes);
std::optional<Bytes> fromBase64(std::string_view text);
Bytes sha256(const Bytes& data);
Bytes hmacSha256(const Bytes& key, std::string_view data);
// `n` random bytes, base64: a nonce. Empty when no random bytes could be had.
std::string randomNonce(size_t n = 18);

// What a server keeps of a secret (RFC 5802, 3): from SaltedPassword =
// PBKDF2-HMAC-SHA256(secret, salt, iterations).
struct ServerKeys {
  Bytes storedKey;  // H(HMAC(SaltedPassword, "Client Key"))
  Bytes serverKey;  // HMAC(SaltedPassword, "Server Key")
};
ServerKeys keysFromSaltedPassword(const Bytes& saltedPassword);

// The client's half. Call first(), then final() with the server's first
// message, then verifyServer() with its last.
class ClientExchange {
 public:
  // nonce: empty for a fresh random one (tests give RFC 7677's).
  ClientExchange(std::string user, std::string secret, std::string nonce = "");
  std::string first() const;
  // The client-final message; nullopt with *error when the server's message
  // is malformed, does not extend our nonce, or asks for fewer than
  // `minIterations` iterations.
  std::optional<std::string> final(std::string_view serverFirst, std::string* error, uint32_t minIterations = 4096);
  // True when the server proved it knows the keys (v=), false with *error
  // otherwise (e=..., malformed, or a wrong signature).
  bool verifyServer(std::string_view serverFinal, std::string* error) const;

 private:
  std::string user_;
  std::string secret_;
  std::string nonce_;
  std::string authMessage_;
  Bytes serverKey_;
};

// The server's half, for one exchange on one connection.
class ServerExchange {
 public:
  // What the server knows of a user: set by the caller after start() named
  // the user. Unknown users get a decoy (salt and iterations that look
  // real) and always fail at the end, so the exchange does not tell which
  // users exist.
  struct User {
    Bytes salt;
    uint32_t iterations = 0;
    ServerKeys keys;
    bool known = false;
  };

  // Reads the client-first message; the user it names, or nullopt with
  // *error when malformed.
  std::optional<std::string> start(std::string_view clientFirst, std::string* error);
  // The server-first message for `user` (from the caller's credentials).
  // nonce: empty for a fresh random one.
  std::string challenge(User user, std::string nonce = "");
  // Reads the client-final message: true when the proof is right. Either
  // way *serverFinal is the message to send back (v=... or e=...).
  bool finish(std::string_view clientFinal, std::string* serverFinal, std::string* error);

 private:
  std::string clientFirstBare_;
  std::string gs2Header_;
  std::string clientNonce_;
  std::string nonce_;
  std::string serverFirst_;
  User user_;
};

}  // namespace groupcoord::scram
