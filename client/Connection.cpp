#include "client/Connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

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

Connection::~Connection() { close(); }

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
  }
  return *this;
}

void Connection::close() {
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
  return true;
}

IoStatus Connection::writeAll(const uint8_t* data, size_t size) {
  if (fd_ < 0) return fail(IoStatus::Closed, "not connected");
  const auto deadline = Clock::now() + sendTimeout_;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::send(fd_, data + done, size - done, MSG_NOSIGNAL);
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

int64_t Connection::send(const protocol::Request& request) {
  protocol::RequestHeader header;
  header.apiKey = protocol::apiKeyOf(request);
  header.version = protocol::kProtocolVersion;
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
    const ssize_t n = ::recv(fd_, in_.data() + inEnd_, in_.size() - inEnd_, 0);
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

protocol::DecodedResponse Connection::call(const protocol::Request& request, std::chrono::milliseconds timeout) {
  const int64_t id = send(request);
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
