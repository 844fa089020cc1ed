#include "bench/Loop.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <span>
#include <stdexcept>

#include "protocol/Codec.h"

namespace groupcoord::bench {

uint64_t nowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::vector<uint8_t> encodeFrame(const protocol::Request& request, int64_t correlationId, int16_t version) {
  protocol::RequestHeader header;
  header.apiKey = protocol::apiKeyOf(request);
  header.version = version;
  header.correlationId = correlationId;
  header.clientId = "bench";
  std::vector<uint8_t> out;
  protocol::encodeRequest(header, request, out);
  return out;
}

Loop::Loop() {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
}

Loop::~Loop() {
  for (auto& c : conns_) {
    if (c && c->fd >= 0) ::close(c->fd);
  }
  ::close(epfd_);
}

namespace {
struct Credentials {
  std::string user;
  std::string secret;
  bool set = false;
  uint64_t failures = 0;  // the generator's thread only
};
Credentials& credentials() {
  static Credentials c;
  return c;
}
}  // namespace

void Loop::authenticateAs(std::string user, std::string secret) {
  credentials() = Credentials{std::move(user), std::move(secret), true, 0};
}

uint64_t Loop::authFailures() { return credentials().failures; }

int Loop::openSocket(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ++failedConnects_;
    return -1;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Blocking connect: on loopback it completes (or is refused) at once.
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    ++failedConnects_;
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  auto c = std::make_unique<Conn>();
  c->fd = fd;
  c->port = port;
  const int id = static_cast<int>(conns_.size());
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = static_cast<uint32_t>(id);
  ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
  conns_.push_back(std::move(c));
  return id;
}

int Loop::connectStream(uint16_t port, StreamFn reader) {
  const int id = openSocket(port);
  if (id >= 0) conns_[id]->stream = std::move(reader);
  return id;
}

void Loop::write(int conn, std::span<const uint8_t> bytes) {
  if (!isOpen(conn)) return;
  Conn& c = *conns_[conn];
  if (c.out.empty()) dirty_.push_back(conn);
  c.out.insert(c.out.end(), bytes.begin(), bytes.end());
}

int Loop::connect(uint16_t port) {
  const int id = openSocket(port);
  if (id < 0) return id;
  if (credentials().set) {
    send(id, protocol::AuthenticateRequest{credentials().user, credentials().secret, "", ""},
         [](const protocol::Response* r, uint64_t) {
           if (r == nullptr || protocol::responseError(*r) != protocol::ErrorCode::NONE) ++credentials().failures;
         });
  }
  return id;
}

bool Loop::isOpen(int conn) const {
  return conn >= 0 && conn < static_cast<int>(conns_.size()) && conns_[conn]->fd >= 0;
}

uint16_t Loop::portOf(int conn) const { return conns_.at(conn)->port; }

size_t Loop::pendingOn(int conn) const { return conns_.at(conn)->pending.size(); }

void Loop::close(int conn) {
  if (isOpen(conn)) fail(conn, /*lost=*/false);
}

void Loop::send(int conn, const protocol::Request& request, ResponseFn done, int16_t version) {
  std::vector<uint8_t> frame = encodeFrame(request, ++correlation_, version);
  queue(conn, frame.data(), frame.size(), protocol::apiKeyOf(request), std::move(done));
}

void Loop::sendFrame(int conn, const std::vector<uint8_t>& frame, protocol::ApiKey api, ResponseFn done) {
  queue(conn, frame.data(), frame.size(), api, std::move(done));
}

void Loop::sendRaw(int conn, const std::vector<uint8_t>& frame, FrameFn done) {
  queue(conn, frame.data(), frame.size(), protocol::ApiKey::Heartbeat, {}, std::move(done));
}

void Loop::queue(int conn, const uint8_t* data, size_t size, protocol::ApiKey api, ResponseFn done, FrameFn raw) {
  if (!isOpen(conn)) {
    // Failed asynchronously, like a request on a connection that drops.
    Pending p{api, 0, std::move(done), std::move(raw)};
    after(0, [p = std::move(p)] { failPending(p); });
    return;
  }
  Conn& c = *conns_[conn];
  if (c.out.empty()) dirty_.push_back(conn);
  c.out.insert(c.out.end(), data, data + size);
  c.pending.push_back(Pending{api, nowNs(), std::move(done), std::move(raw)});
}

void Loop::failPending(const Pending& p) {
  if (p.raw) {
    p.raw(false, {}, 0);
  } else {
    p.done(nullptr, 0);
  }
}

void Loop::flush(int conn) {
  if (!isOpen(conn)) return;
  Conn& c = *conns_[conn];
  while (c.outOff < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + c.outOff, c.out.size() - c.outOff, MSG_NOSIGNAL);
    if (n > 0) {
      c.outOff += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 && errno == EINTR) continue;
    fail(conn);
    return;
  }
  if (c.outOff == c.out.size()) {
    c.out.clear();
    c.outOff = 0;
  }
  const bool want = !c.out.empty();
  if (want != c.wantWrite) {
    c.wantWrite = want;
    epoll_event ev{};
    ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
    ev.data.u32 = static_cast<uint32_t>(conn);
    ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
  }
}

void Loop::onReadable(int conn) {
  Conn& c = *conns_[conn];
  uint8_t buf[64 * 1024];
  for (;;) {
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      c.in.insert(c.in.end(), buf, buf + n);
      if (static_cast<size_t>(n) < sizeof buf) break;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 && errno == EINTR) continue;
    fail(conn);
    return;
  }
  if (c.stream) {
    // The reader may write on this connection, or close it.
    const StreamFn reader = c.stream;
    const size_t used = reader(true, std::span<const uint8_t>(c.in.data(), c.in.size()));
    if (!isOpen(conn)) return;
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(std::min(used, c.in.size())));
    return;
  }
  size_t off = 0;
  const uint64_t now = nowNs();
  while (c.in.size() - off >= 4) {
    int32_t size = 0;
    auto status = protocol::peekFrame(std::span<const uint8_t>(c.in.data() + off, c.in.size() - off), 64 << 20, 0,
                                      &size);
    if (status == protocol::FrameStatus::NeedMore) break;
    if (status != protocol::FrameStatus::Ready || c.pending.empty()) {
      fail(conn);
      return;
    }
    Pending p = std::move(c.pending.front());
    c.pending.pop_front();
    if (p.raw) {
      const std::span<const uint8_t> body(c.in.data() + off + 4, static_cast<size_t>(size));
      off += 4 + static_cast<size_t>(size);
      p.raw(true, body, now - p.sentNs);
      if (!isOpen(conn)) return;
      continue;
    }
    auto decoded = protocol::decodeResponse(p.api, std::span<const uint8_t>(c.in.data() + off + 4, size));
    const auto api = static_cast<size_t>(p.api);
    if (api < bytesIn_.size()) bytesIn_[api] += 4 + static_cast<uint64_t>(size);
    off += 4 + static_cast<size_t>(size);
    // The callback may send on this connection (appending to c.out), which
    // is fine; it must not close it while we hold `c.in`.
    p.done(decoded.ok ? &decoded.response : nullptr, now - p.sentNs);
    if (!isOpen(conn)) return;
  }
  if (off > 0) c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(off));
}

void Loop::fail(int conn, bool lost) {
  Conn& c = *conns_[conn];
  if (c.fd < 0) return;
  if (lost) ++connectionsLost_;
  ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  c.fd = -1;
  std::deque<Pending> pending;
  pending.swap(c.pending);
  c.in.clear();
  c.out.clear();
  c.outOff = 0;
  // Deferred, so that a callback reconnecting or resending does not run
  // inside the code that is closing.
  for (auto& p : pending) {
    after(0, [p = std::move(p)] { failPending(p); });
  }
  if (c.stream) {
    StreamFn reader = std::move(c.stream);
    c.stream = nullptr;
    if (lost) after(0, [reader = std::move(reader)] { reader(false, {}); });
  }
}

void Loop::after(uint64_t delayNs, std::function<void()> fn) {
  timers_.push(Timer{nowNs() + delayNs, ++timerSeq_, std::move(fn)});
}

void Loop::runTimers() {
  const uint64_t now = nowNs();
  while (!timers_.empty() && timers_.top().at <= now) {
    auto fn = std::move(const_cast<Timer&>(timers_.top()).fn);
    timers_.pop();
    fn();
  }
}

bool Loop::runUntil(const std::function<bool()>& done, uint64_t timeoutNs) {
  const uint64_t deadline = nowNs() + timeoutNs;
  epoll_event events[512];
  for (;;) {
    runTimers();
    // Writes queued by callbacks and timers go out in one send per
    // connection per turn.
    std::vector<int> dirty;
    dirty.swap(dirty_);
    for (int conn : dirty) flush(conn);
    if (done()) return true;
    const uint64_t now = nowNs();
    if (now >= deadline) return false;
    uint64_t wait = deadline - now;
    if (!timers_.empty()) wait = std::min(wait, timers_.top().at > now ? timers_.top().at - now : 0);
    if (!dirty_.empty()) wait = 0;
    // Finer than epoll_wait's milliseconds, which sent a beat due in 0.1 ms
    // up to a millisecond late; but not to the nanosecond either: waking for
    // every beat (tens of thousands a second at 100,000 members) costs the
    // generator more than the server spends, so a wait is at least a
    // quarter of a millisecond and the beats due within it go together.
    // At most 100 ms.
    if (wait > 0) wait = std::max<uint64_t>(wait, 250'000);
    wait = std::min<uint64_t>(wait, 100'000'000);
    const timespec timeout{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
    int n = pwait2_ ? ::epoll_pwait2(epfd_, events, 512, &timeout, nullptr) : -1;
    if (n < 0 && errno == ENOSYS) pwait2_ = false;  // a kernel before 5.11
    if (!pwait2_) n = ::epoll_wait(epfd_, events, 512, static_cast<int>((wait + 999'999) / 1'000'000));
    for (int i = 0; i < n; ++i) {
      const int conn = static_cast<int>(events[i].data.u32);
      if (!isOpen(conn)) continue;
      if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) onReadable(conn);
      if (isOpen(conn) && (events[i].events & EPOLLOUT)) flush(conn);
    }
  }
}

void Loop::runFor(uint64_t durationNs) {
  runUntil([] { return false; }, durationNs);
}

bool Loop::runUntilEvery(uint64_t everyNs, const std::function<bool()>& done, uint64_t timeoutNs) {
  uint64_t lastCheck = 0;
  return runUntil(
      [&] {
        const uint64_t now = nowNs();
        if (now - lastCheck < everyNs) return false;
        lastCheck = now;
        return done();
      },
      timeoutNs);
}

bool Loop::pipelined(size_t count, int depth, const std::function<void(const std::function<void()>&)>& send,
                     uint64_t timeoutNs) {
  size_t sent = 0, answered = 0;
  std::function<void()> one;
  const std::function<void()> onAnswer = [&] {
    ++answered;
    if (sent < count) one();
  };
  one = [&] {
    ++sent;
    send(onAnswer);
  };
  for (int d = 0; d < depth && sent < count; ++d) one();
  return runUntil([&] { return answered == count; }, timeoutNs);
}

double Histogram::quantileMs(double q) const {
  if (samples_.empty()) return 0;
  std::vector<uint64_t> s = samples_;
  size_t idx = static_cast<size_t>(q * static_cast<double>(s.size() - 1) + 0.5);
  idx = std::min(idx, s.size() - 1);
  std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(idx), s.end());
  return static_cast<double>(s[idx]) / 1e6;
}

}  // namespace groupcoord::bench
