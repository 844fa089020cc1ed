#include "client/Connection.h"

#include "common/Scram.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace groupcoord::client {

namespace {

using Clock = std::chrono::steady_clock;

// Small to start with (a process may hold many idle connections); grows by
// doubling for large responses.
constexpr size_t kInitialBuffer = 4096;
constexpr size_t kMinReadRoom = 1024;
constexpr int32_t kMinResponseBody = 10;  // ResponseHeader: Version int16 + CorrelationId int64

int remainingMs(Clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms <= 0 ? 0 : static_cast<int>(ms);
}

// Waits for `events` on fd until the deadline: >0 ready, 0 timed out, <0 error.
int waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, remainingMs(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n;
    return 1;
  }
}

std::string tlsErrorText() {
  std::string text;
  unsigned long code = 0;
  while ((code = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    text = buf;
  }
  return text;
}

// OpenSSL writes to the socket with write(), which raises SIGPIPE when the
// server has gone; a library must not change the process's disposition, so
// the signal is blocked on this thread for the call and a pending one taken.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    wasPending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    if (!wasPending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool wasPending_ = false;
};

}  // namespace

std::string_view ioStatusName(IoStatus status) {
  switch (status) {
    case IoStatus::Ok: return "ok";
    case IoStatus::Timeout: return "timeout";
    case IoStatus::Closed: return "closed";
    case IoStatus::Error: return "error";
  }
  return "unknown";
}

Connection::~Connection() {
  close();
  if (tlsContext_ != nullptr) SSL_CTX_free(tlsContext_);
}

void Connection::setSecurity(SecurityOptions security) {
  security_ = std::move(security);
  if (tlsContext_ != nullptr) SSL_CTX_free(tlsContext_);
  tlsContext_ = nullptr;  // made again from the new files on the next connect
}

Connection::Connection(Connection&& other) noexcept { *this = std::move(other); }

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    nextCorrelationId_ = other.nextCorrelationId_;
    clientId_ = std::move(other.clientId_);
    sendTimeout_ = other.sendTimeout_;
    maxFrameBytes_ = other.maxFrameBytes_;
    in_ = std::move(other.in_);
    inBegin_ = std::exchange(other.inBegin_, 0);
    inEnd_ = std::exchange(other.inEnd_, 0);
    out_ = std::move(other.out_);
    lastStatus_ = other.lastStatus_;
    lastError_ = std::move(other.lastError_);
    security_ = std::move(other.security_);
    authRefused_ = other.authRefused_;
    unreachable_ = other.unreachable_;
    if (tlsContext_ != nullptr) SSL_CTX_free(tlsContext_);
    tlsContext_ = std::exchange(other.tlsContext_, nullptr);
    ssl_ = std::exchange(other.ssl_, nullptr);
  }
  return *this;
}

void Connection::close() {
  if (ssl_ != nullptr) {
    if (fd_ >= 0) {
      SigpipeGuard guard;
      SSL_shutdown(ssl_);  // close_notify, best effort
    }
    SSL_free(ssl_);
    ssl_ = nullptr;
    ERR_clear_error();
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  inBegin_ = inEnd_ = 0;
}

IoStatus Connection::fail(IoStatus status, std::string why) {
  lastStatus_ = status;
  lastError_ = std::move(why);
  if (status == IoStatus::Closed || status == IoStatus::Error) close();
  return status;
}

bool Connection::connect(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
                         const ConnectOptions& options) {
  authRefused_ = false;
  const bool connected = open(host, port, timeout, options);
  unreachable_ = !connected && !authRefused_;
  return connected;
}

bool Connection::open(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
                      const ConnectOptions& options) {
  close();
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    fail(IoStatus::Error, "cannot resolve '" + host + "': " + ::gai_strerror(rc));
    return false;
  }
  std::string why = "no address for '" + host + "'";
  IoStatus status = IoStatus::Error;
  for (addrinfo* ai = found; ai != nullptr && fd_ < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      why = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    if (options.receiveBufferBytes > 0) {
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &options.receiveBufferBytes, sizeof(options.receiveBufferBytes));
    }
    if (options.sendBufferBytes > 0) {
      ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &options.sendBufferBytes, sizeof(options.sendBufferBytes));
    }
    if (options.noDelay) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      const int ready = waitFor(fd, POLLOUT, deadline);
      if (ready == 0) {
        ::close(fd);
        why = "connect to " + host + ":" + service + " timed out";
        status = IoStatus::Timeout;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      why = "connect to " + host + ":" + service + ": " + std::strerror(errno);
      ::close(fd);
      continue;
    }
    fd_ = fd;
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) {
    fail(status, why);
    return false;
  }
  lastStatus_ = IoStatus::Ok;
  lastError_.clear();
  authRefused_ = false;
  if (security_.tls() && !startTls(host, deadline)) return false;
  if (!security_.user.empty() &&
      !authenticate(std::max<std::chrono::milliseconds>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()), std::chrono::milliseconds(1000)))) {
    return false;
  }
  return true;
}

bool Connection::startTls(const std::string& host, Clock::time_point deadline) {
  ERR_clear_error();
  if (tlsContext_ == nullptr) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == nullptr) {
      fail(IoStatus::Error, "cannot make a TLS context: " + tlsErrorText());
      return false;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (SSL_CTX_load_verify_locations(ctx, security_.tlsCaFile.c_str(), nullptr) != 1) {
      SSL_CTX_free(ctx);
      fail(IoStatus::Error, "cannot load the TLS CA file '" + security_.tlsCaFile + "': " + tlsErrorText());
      return false;
    }
    if (!security_.tlsCertificateFile.empty()) {
      if (SSL_CTX_use_certificate_chain_file(ctx, security_.tlsCertificateFile.c_str()) != 1 ||
          SSL_CTX_use_PrivateKey_file(ctx, security_.tlsKeyFile.c_str(), SSL_FILETYPE_PEM) != 1 ||
          SSL_CTX_check_private_key(ctx) != 1) {
        SSL_CTX_free(ctx);
        fail(IoStatus::Error, "cannot load the TLS client certificate '" + security_.tlsCertificateFile +
                                  "' or its key: " + tlsErrorText());
        return false;
      }
    }
    tlsContext_ = ctx;
  }
  ssl_ = SSL_new(tlsContext_);
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
    fail(IoStatus::Error, "cannot start TLS: " + tlsErrorText());
    return false;
  }
  const std::string name = security_.tlsServerName.empty() ? host : security_.tlsServerName;
  in6_addr addr{};
  const bool isIp = ::inet_pton(AF_INET, name.c_str(), &addr) == 1 || ::inet_pton(AF_INET6, name.c_str(), &addr) == 1;
  if (!isIp) SSL_set_tlsext_host_name(ssl_, name.c_str());
  if (security_.tlsVerifyHostname) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    const int ok = isIp ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) : SSL_set1_host(ssl_, name.c_str());
    if (ok != 1) {
      fail(IoStatus::Error, "cannot set the TLS name to verify '" + name + "'");
      return false;
    }
  }
  SSL_set_connect_state(ssl_);
  for (;;) {
    ERR_clear_error();
    int rc = 0;
    {
      SigpipeGuard guard;
      rc = SSL_do_handshake(ssl_);
    }
    if (rc == 1) return true;
    const int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      const int ready = waitFor(fd_, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
      if (ready == 0) {
        fail(IoStatus::Timeout, "TLS handshake with " + host + " timed out");
        return false;
      }
      if (ready < 0) {
        fail(IoStatus::Error, std::string("poll: ") + std::strerror(errno));
        return false;
      }
      continue;
    }
    std::string why = tlsErrorText();
    const long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) why = std::string("server certificate refused: ") + X509_verify_cert_error_string(verify);
    if (why.empty()) why = "the server closed the connection";
    fail(IoStatus::Error, "TLS handshake with " + host + " failed: " + why);
    return false;
  }
}

bool Connection::authenticate(std::chrono::milliseconds timeout) {
  // One Authenticate call; false (and the connection closed) unless it was
  // answered NONE. *answer gets the server's message.
  auto step = [&](const protocol::AuthenticateRequest& request, int16_t version, std::string* answer) {
    protocol::DecodedResponse r = call(request, timeout, version);
    if (!r.ok) {
      fail(lastStatus_ == IoStatus::Ok ? IoStatus::Error : lastStatus_,
           "no answer to Authenticate as '" + security_.user + "': " + r.detail);
      close();
      return false;
    }
    const protocol::ErrorCode code = protocol::responseError(r.response);
    if (code != protocol::ErrorCode::NONE) {
      authRefused_ = code == protocol::ErrorCode::NOT_AUTHORIZED || code == protocol::ErrorCode::UNSUPPORTED_VERSION ||
                     code == protocol::ErrorCode::INVALID_REQUEST;
      lastStatus_ = IoStatus::Error;
      lastError_ = "the server refused Authenticate as '" + security_.user + "': " +
                   std::string(protocol::errorName(code)) + " (" + std::string(protocol::errorMessage(code)) + ")";
      if (code == protocol::ErrorCode::UNSUPPORTED_VERSION) {
        lastError_ += "; it does not speak SCRAM-SHA-256 (Authenticate version 1): only plainAuth, which sends the "
                      "secret as it is, would work with it";
      }
      close();
      return false;
    }
    if (auto* a = std::get_if<protocol::AuthenticateResponse>(&r.response)) *answer = a->message;
    return true;
  };
  std::string answer;
  if (security_.plainAuth) return step(protocol::AuthenticateRequest{security_.user, security_.secret, {}, {}}, 0, &answer);

  scram::ClientExchange exchange(security_.user, security_.secret);
  const std::string mechanism(scram::kMechanism);
  if (!step(protocol::AuthenticateRequest{{}, {}, mechanism, exchange.first()}, 1, &answer)) return false;
  // NONE with no challenge: authentication is off on that server.
  if (answer.empty()) return true;
  std::string why;
  auto final = exchange.final(answer, &why, 10000);
  if (!final) {
    // Not a server to retry: it asks for what a client must not do.
    authRefused_ = true;
    fail(IoStatus::Error, "Authenticate as '" + security_.user + "': " + why);
    close();
    return false;
  }
  if (!step(protocol::AuthenticateRequest{{}, {}, mechanism, *final}, 1, &answer)) return false;
  if (!exchange.verifyServer(answer, &why)) {
    // The server let us in without proving it holds the user's keys: not
    // the server the credentials were made for, and retrying will not help.
    authRefused_ = true;
    fail(IoStatus::Error, "Authenticate as '" + security_.user + "': " + why);
    close();
    return false;
  }
  return true;
}

ssize_t Connection::readSome(uint8_t* data, size_t size) {
  if (ssl_ == nullptr) return ::recv(fd_, data, size, 0);
  ERR_clear_error();
  int n = 0;
  {
    SigpipeGuard guard;
    n = SSL_read(ssl_, data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
  }
  if (n > 0) return n;
  const int err = SSL_get_error(ssl_, n);
  if (err == SSL_ERROR_ZERO_RETURN) return 0;
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
    return -1;
  }
  if (err == SSL_ERROR_SYSCALL && errno != 0) return -1;
  const std::string why = tlsErrorText();
  errno = why.empty() ? ECONNRESET : EPROTO;
  return -1;
}

IoStatus Connection::writeAll(const uint8_t* data, size_t size) {
  if (fd_ < 0) return fail(IoStatus::Closed, "not connected");
  const auto deadline = Clock::now() + sendTimeout_;
  size_t done = 0;
  while (done < size) {
    ssize_t n = 0;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      int w = 0;
      {
        SigpipeGuard guard;
        w = SSL_write(ssl_, data + done, static_cast<int>(std::min<size_t>(size - done, 1 << 30)));
      }
      if (w <= 0) {
        const int err = SSL_get_error(ssl_, w);
        if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
          errno = EAGAIN;
        } else if (!(err == SSL_ERROR_SYSCALL && errno != 0)) {
          const std::string why = tlsErrorText();
          return fail(IoStatus::Error, "TLS write failed: " + (why.empty() ? std::string("connection closed") : why));
        }
        n = -1;
      } else {
        n = w;
      }
    } else {
      n = ::send(fd_, data + done, size - done, MSG_NOSIGNAL);
    }
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const int ready = waitFor(fd_, POLLOUT, deadline);
      if (ready == 0) {
        // Part of a frame may be out: the stream cannot be trusted any more.
        return fail(IoStatus::Error, "send timed out with " + std::to_string(size - done) + " bytes unsent");
      }
      if (ready < 0) return fail(IoStatus::Error, std::string("poll: ") + std::strerror(errno));
      continue;
    }
    if (errno == EPIPE || errno == ECONNRESET) {
      // The socket stays open: what the server sent before it closed can
      // still be read, and receive() reports Closed after it.
      lastStatus_ = IoStatus::Closed;
      lastError_ = std::string("send: ") + std::strerror(errno);
      return IoStatus::Closed;
    }
    return fail(IoStatus::Error, std::string("send: ") + std::strerror(errno));
  }
  lastStatus_ = IoStatus::Ok;
  return IoStatus::Ok;
}

int64_t Connection::send(const protocol::Request& request, int16_t version) {
  protocol::RequestHeader header;
  header.apiKey = protocol::apiKeyOf(request);
  header.version = version;
  header.correlationId = nextCorrelationId_;
  header.clientId = clientId_;
  if (send(header, request) != IoStatus::Ok) return -1;
  ++nextCorrelationId_;
  return header.correlationId;
}

IoStatus Connection::send(const protocol::RequestHeader& header, const protocol::Request& request) {
  out_.clear();
  protocol::encodeRequest(header, request, out_);
  return writeAll(out_.data(), out_.size());
}

IoStatus Connection::sendRaw(std::span<const uint8_t> bytes) { return writeAll(bytes.data(), bytes.size()); }

IoStatus Connection::receiveFrame(std::vector<uint8_t>& body, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const std::span<const uint8_t> buffered(in_.data() + inBegin_, inEnd_ - inBegin_);
    int32_t size = 0;
    const auto status = protocol::peekFrame(buffered, maxFrameBytes_, kMinResponseBody, &size);
    if (status == protocol::FrameStatus::Ready) {
      body.assign(buffered.begin() + 4, buffered.begin() + 4 + size);
      inBegin_ += 4 + static_cast<size_t>(size);
      if (inBegin_ == inEnd_) inBegin_ = inEnd_ = 0;
      lastStatus_ = IoStatus::Ok;
      return IoStatus::Ok;
    }
    if (status == protocol::FrameStatus::TooSmall || status == protocol::FrameStatus::TooLarge) {
      return fail(IoStatus::Error, "response frame size " + std::to_string(size) + " cannot be trusted");
    }
    if (fd_ < 0) return fail(IoStatus::Closed, "not connected");
    // Room for one more read: move the partial frame to the front, grow
    // only when that is not enough (growing zero-fills; reads do not).
    if (inBegin_ > 0) {
      std::memmove(in_.data(), in_.data() + inBegin_, inEnd_ - inBegin_);
      inEnd_ -= inBegin_;
      inBegin_ = 0;
    }
    if (in_.size() - inEnd_ < kMinReadRoom) in_.resize(std::max(in_.size() * 2, inEnd_ + kInitialBuffer));
    const ssize_t n = readSome(in_.data() + inEnd_, in_.size() - inEnd_);
    if (n > 0) {
      inEnd_ += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return fail(IoStatus::Closed, "the server closed the connection");
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) return fail(IoStatus::Closed, "the server reset the connection");
    if (errno != EAGAIN && errno != EWOULDBLOCK) return fail(IoStatus::Error, std::string("recv: ") + std::strerror(errno));
    const int ready = waitFor(fd_, POLLIN, deadline);
    if (ready == 0) {
      lastStatus_ = IoStatus::Timeout;
      lastError_ = "no whole response within " + std::to_string(timeout.count()) + " ms";
      return IoStatus::Timeout;
    }
    if (ready < 0) return fail(IoStatus::Error, std::string("poll: ") + std::strerror(errno));
  }
}

protocol::DecodedResponse Connection::receive(protocol::ApiKey expected, std::chrono::milliseconds timeout) {
  std::vector<uint8_t> body;
  if (receiveFrame(body, timeout) != IoStatus::Ok) {
    protocol::DecodedResponse failed;
    failed.ok = false;
    failed.detail = lastError_;
    return failed;
  }
  protocol::DecodedResponse decoded = protocol::decodeResponse(expected, body);
  if (!decoded.ok) {
    lastStatus_ = IoStatus::Error;
    lastError_ = "undecodable " + std::string(protocol::apiName(expected)) + " response: " + decoded.detail;
  }
  return decoded;
}

protocol::DecodedResponse Connection::call(const protocol::Request& request, std::chrono::milliseconds timeout,
                                           int16_t version) {
  const int64_t id = send(request, version);
  if (id < 0) {
    protocol::DecodedResponse failed;
    failed.detail = lastError_;
    return failed;
  }
  protocol::DecodedResponse decoded = receive(protocol::apiKeyOf(request), timeout);
  if (decoded.ok && decoded.header.correlationId != id) {
    decoded.ok = false;
    decoded.detail = "response correlation id " + std::to_string(decoded.header.correlationId) + ", expected " +
                     std::to_string(id);
    lastStatus_ = IoStatus::Error;
    lastError_ = decoded.detail;
  }
  return decoded;
}

}  // namespace groupcoord::client
