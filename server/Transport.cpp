#include "server/Transport.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "server/Tls.h"

namespace groupcoord::server {

namespace {

// The socket's errno after a failed recv() or send().
IoResult socketError(std::string& error) {
  if (errno == EAGAIN || errno == EWOULDBLOCK) return {IoStatus::WantRead, 0};
  if (errno == ECONNRESET || errno == EPIPE) return {IoStatus::Reset, 0};
  error = std::strerror(errno);
  return {IoStatus::Failed, 0};
}

class PlainTransport final : public Transport {
 public:
  explicit PlainTransport(int fd) : fd_(fd) {}

  IoResult handshake() override { return {IoStatus::Progress, 0}; }

  IoResult read(void* buf, size_t size) override {
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, size, 0);
      if (n > 0) return {IoStatus::Progress, static_cast<size_t>(n)};
      if (n == 0) return {IoStatus::Eof, 0};
      if (errno == EINTR) continue;
      return socketError(error_);
    }
  }

  IoResult write(const void* data, size_t size) override {
    for (;;) {
      const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
      if (n >= 0) return {IoStatus::Progress, static_cast<size_t>(n)};
      if (errno == EINTR) continue;
      IoResult r = socketError(error_);
      if (r.status == IoStatus::WantRead) r.status = IoStatus::WantWrite;
      return r;
    }
  }

  void closeNotify() override {}
  bool secure() const override { return false; }

 private:
  const int fd_;
};

// OpenSSL reads no more than one record ahead (read-ahead is off), so a
// record it has not handed over never waits without the socket being
// readable: level-triggered epoll keeps driving the connection.
class TlsTransport final : public Transport {
 public:
  explicit TlsTransport(SslPtr ssl) : ssl_(std::move(ssl)) {}
  ~TlsTransport() override {
    ssl_.reset();
    ERR_clear_error();
  }

  IoResult handshake() override {
    ERR_clear_error();
    const int rc = SSL_do_handshake(ssl_.get());
    if (rc == 1) {
      ready_ = true;
      return {IoStatus::Progress, 0};
    }
    return failure(rc, "the peer went away");
  }

  IoResult read(void* buf, size_t size) override {
    ERR_clear_error();
    const int n = SSL_read(ssl_.get(), buf, static_cast<int>(std::min<size_t>(size, INT_MAX)));
    if (n > 0) return {IoStatus::Progress, static_cast<size_t>(n)};
    return failure(n, "");
  }

  IoResult write(const void* data, size_t size) override {
    ERR_clear_error();
    const int n = SSL_write(ssl_.get(), data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) return {IoStatus::Progress, static_cast<size_t>(n)};
    return failure(n, "");
  }

  void closeNotify() override {
    if (!ready_) return;
    ERR_clear_error();
    SSL_shutdown(ssl_.get());
    ERR_clear_error();
  }

  bool secure() const override { return true; }

 private:
  // What SSL_get_error says of a call that returned `rc`; `gone`: what to
  // say when the socket failed without a reason of OpenSSL's or errno's.
  IoResult failure(int rc, const char* gone) {
    const int err = SSL_get_error(ssl_.get(), rc);
    if (err == SSL_ERROR_WANT_READ) return {IoStatus::WantRead, 0};
    if (err == SSL_ERROR_WANT_WRITE) return {IoStatus::WantWrite, 0};
    if (err == SSL_ERROR_ZERO_RETURN) return {IoStatus::Eof, 0};
    const int savedErrno = errno;
    error_ = takeTlsError();
    if (err == SSL_ERROR_SYSCALL && error_.empty()) {
      if (savedErrno == ECONNRESET || savedErrno == EPIPE || savedErrno == 0) {
        error_ = *gone != '\0' ? gone : (savedErrno == 0 ? "" : std::strerror(savedErrno));
        return {IoStatus::Reset, 0};
      }
      error_ = std::strerror(savedErrno);
    }
    if (error_.empty()) error_ = "TLS error " + std::to_string(err);
    return {IoStatus::Failed, 0};
  }

  SslPtr ssl_;
  bool ready_ = false;
};

}  // namespace

std::unique_ptr<Transport> plainTransport(int fd) { return std::make_unique<PlainTransport>(fd); }

std::unique_ptr<Transport> tlsTransport(SslPtr ssl) { return std::make_unique<TlsTransport>(std::move(ssl)); }

}  // namespace groupcoord::server
