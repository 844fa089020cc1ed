#pragma once

// A small blocking connection to groupcoordd: connect, send requests, read
// responses one frame at a time, every wait bounded by a timeout. Used by the
// tests and by the client library. One thread at a time per Connection.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <sys/types.h>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/Codec.h"
#include "protocol/Messages.h"

struct ssl_ctx_st;
struct ssl_st;

namespace groupcoord::client {

enum class IoStatus {
  Ok,
  Timeout,  // nothing (or not enough) arrived in time; the connection stays usable
  Closed,   // the server closed the connection (EOF or reset)
  Error,    // any other failure, including a frame that cannot be trusted; the connection is closed
};
std::string_view ioStatusName(IoStatus status);

// Who the connection authenticates as, and whether it speaks TLS. Applied by
// every connect(), so a client that reconnects authenticates again.
struct SecurityOptions {
  std::string user;    // set: Authenticate as this user right after connecting
  std::string secret;  // the user's secret; never logged, never sent (SCRAM-SHA-256) unless plainAuth
  // Authenticate with version 0, which sends the secret as it is: only for
  // servers older than SCRAM, and only over TLS or a trusted network.
  bool plainAuth = false;
  std::string tlsCaFile;          // set: speak TLS and trust servers whose certificate chains to these CAs (PEM)
  bool tlsVerifyHostname = true;  // the server's certificate must name the host connected to (or tlsServerName)
  std::string tlsServerName;      // the name checked and sent as SNI; empty: the host given to connect()
  std::string tlsCertificateFile;  // a client certificate (PEM), for servers that ask for one
  std::string tlsKeyFile;          // its key (PEM)
  bool tls() const { return !tlsCaFile.empty(); }
};

struct ConnectOptions {
  int receiveBufferBytes = 0;  // SO_RCVBUF, set before connecting; 0: the system's default
  int sendBufferBytes = 0;     // SO_SNDBUF; 0: the system's default
  bool noDelay = true;         // TCP_NODELAY
};

class Connection {
 public:
  Connection() = default;
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Closes any previous connection first. With SecurityOptions set, also
  // makes the TLS handshake and authenticates. false when any of it fails;
  // lastError() says why, and authRefused() tells a refused Authenticate.
  bool connect(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
               const ConnectOptions& options = {});
  bool isOpen() const { return fd_ >= 0; }
  void close();
  int nativeHandle() const { return fd_; }

  // Sent in every header built by send(request). Default: "groupcoord-client".
  void setClientId(std::optional<std::string> clientId) { clientId_ = std::move(clientId); }
  // How long a send may wait for room in the socket buffer. Default 10 s.
  void setSendTimeout(std::chrono::milliseconds timeout) { sendTimeout_ = timeout; }
  // Largest response frame accepted. Default 64 MiB.
  void setMaxFrameBytes(int32_t bytes) { maxFrameBytes_ = bytes; }
  // Used by the next connect() and every one after it.
  void setSecurity(SecurityOptions security);
  const SecurityOptions& security() const { return security_; }
  // The last connect() failed because the server refused the credentials
  // (NOT_AUTHORIZED), not because it could not be reached.
  bool authRefused() const { return authRefused_; }
  // The last connect() failed for any other reason: no usable connection to
  // the server came of it (name resolution, TCP connect, TLS set-up or
  // handshake, or Authenticate not answered as expected). lastError() says
  // which. False after a successful connect().
  bool unreachable() const { return unreachable_; }
  bool isTls() const { return ssl_ != nullptr; }

  // Builds the header (the request's API, `version`, the next correlation
  // id, the client id) and sends. Returns the correlation id, or -1 on failure.
  int64_t send(const protocol::Request& request, int16_t version = protocol::kProtocolVersion);
  // Sends with the caller's header, as given.
  IoStatus send(const protocol::RequestHeader& header, const protocol::Request& request);
  // Sends bytes as they are (for malformed frames in tests).
  // A send that finds the connection closed by the server returns Closed
  // but leaves the socket open, so that responses already sent can still be
  // received; any other send failure closes it.
  IoStatus sendRaw(std::span<const uint8_t> bytes);

  // Reads one whole frame; `body` gets it without its 4-byte size.
  IoStatus receiveFrame(std::vector<uint8_t>& body, std::chrono::milliseconds timeout);
  // Reads one frame and decodes it as the response to a request of API
  // `expected`. ok == false on any failure; lastStatus() then tells a
  // timeout or a close from a frame that did not decode.
  protocol::DecodedResponse receive(protocol::ApiKey expected, std::chrono::milliseconds timeout);
  // send(request) then receive(); a response with another correlation id is a failure.
  protocol::DecodedResponse call(const protocol::Request& request, std::chrono::milliseconds timeout,
                                 int16_t version = protocol::kProtocolVersion);

  IoStatus lastStatus() const { return lastStatus_; }
  const std::string& lastError() const { return lastError_; }
  // The id the next send(request) will use.
  int64_t nextCorrelationId() const { return nextCorrelationId_; }

 private:
  bool open(const std::string& host, uint16_t port, std::chrono::milliseconds timeout, const ConnectOptions& options);
  IoStatus fail(IoStatus status, std::string why);
  IoStatus writeAll(const uint8_t* data, size_t size);
  bool startTls(const std::string& host, std::chrono::steady_clock::time_point deadline);
  bool authenticate(std::chrono::milliseconds timeout);
  // One read into the buffer: >0 bytes, 0 end of stream, -1 with errno set
  // (EAGAIN: wait for readability).
  ssize_t readSome(uint8_t* data, size_t size);

  int fd_ = -1;
  int64_t nextCorrelationId_ = 1;
  std::optional<std::string> clientId_ = std::string("groupcoord-client");
  std::chrono::milliseconds sendTimeout_{10000};
  int32_t maxFrameBytes_ = 64 << 20;
  std::vector<uint8_t> in_;  // received bytes not yet returned are [inBegin_, inEnd_)
  size_t inBegin_ = 0;
  size_t inEnd_ = 0;
  std::vector<uint8_t> out_;
  IoStatus lastStatus_ = IoStatus::Ok;
  std::string lastError_;
  SecurityOptions security_;
  bool authRefused_ = false;
  bool unreachable_ = false;
  ssl_ctx_st* tlsContext_ = nullptr;  // made on the first TLS connect, kept for reconnects
  ssl_st* ssl_ = nullptr;
};

}  // namespace groupcoord::client
