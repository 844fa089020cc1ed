#pragma once

// What carries a connection's bytes: the socket itself, or TLS over it. Both
// ports drive their connections through this one interface, so the TLS
// handshake, read, write and close_notify are written once
// (docs/design.md, "Connections").
//
// Every call is non-blocking and says how it went in an IoResult: bytes
// moved, or what to wait for, or how the connection ended. Loop thread only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "server/Handles.h"

namespace groupcoord::server {

enum class IoStatus : uint8_t {
  Progress,   // bytes moved (read, write), or the handshake is done
  WantRead,   // nothing now: call again once the socket is readable
  WantWrite,  // nothing now: call again once the socket is writable
  Eof,        // the peer closed its side in order (FIN; for TLS, close_notify)
  Reset,      // the peer went away abruptly (ECONNRESET, EPIPE, or TLS without close_notify)
  Failed,     // anything else; error() says what
};

struct IoResult {
  IoStatus status = IoStatus::Progress;
  size_t bytes = 0;  // with Progress from read() and write()
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Until it answers Progress once, read() and write() must not be called.
  // The plain transport is ready at once.
  virtual IoResult handshake() = 0;
  // Up to `size` bytes into `buf`; Progress with bytes > 0, never 0 bytes.
  virtual IoResult read(void* buf, size_t size) = 0;
  // Up to `size` bytes of `data`; Progress with the count written (> 0).
  virtual IoResult write(const void* data, size_t size) = 0;
  // An orderly end of this side: TLS sends close_notify (best effort, not
  // waited for). The socket stays open; its owner closes it.
  virtual void closeNotify() = 0;
  virtual bool secure() const = 0;
  // Why the last call answered Failed, or Reset when there is a reason.
  const std::string& error() const { return error_; }

 protected:
  std::string error_;
};

// The socket `fd` itself (not owned: it must outlive the transport).
std::unique_ptr<Transport> plainTransport(int fd);

// TLS by `ssl` (a server-side SSL object on its socket, from
// TlsServerContext::accept); the SSL object is freed with the transport,
// which must go before its socket.
std::unique_ptr<Transport> tlsTransport(SslPtr ssl);

}  // namespace groupcoord::server
