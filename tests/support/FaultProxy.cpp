#include "support/FaultProxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <list>
#include <random>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

namespace groupcoord::testing {

namespace {

using Clock = std::chrono::steady_clock;

// A side is no longer read while more than this waits to go the other way, so
// a long delay or a peer that stops reading cannot grow the proxy without
// bound; TCP flow control then pushes back on the sender.
constexpr size_t kMaxQueued = 1 << 20;
constexpr size_t kReadSize = 64 * 1024;
// Reads per side and accepts per wakeup: enough to keep up with a bulk
// transfer, few enough that one busy peer cannot starve the others.
constexpr int kReadBurst = 16;
constexpr int kAcceptBurst = 64;
// accept() can fail for want of descriptors while the connection stays in the
// backlog; the listener is then left alone this long instead of spinning on it.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);

[[noreturn]] void throwErrno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), "FaultProxy: " + what);
}

uint32_t parseIpv4(const std::string& text, const char* what) {
  in_addr addr{};
  if (::inet_pton(AF_INET, text.c_str(), &addr) != 1)
    throw std::invalid_argument(std::string("FaultProxy: the ") + what + " is not a numeric IPv4 address: " + text);
  return addr.s_addr;
}

void closeWithReset(int fd) {
  if (fd < 0) return;
  linger lin{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, sizeof lin);
  ::close(fd);
}

// Small writes (a heartbeat, a ZooKeeper ping) must not wait for Nagle on top
// of the delay a test asked for.
void setNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

struct Chunk {
  Clock::time_point due;
  std::string bytes;
  size_t sent = 0;
};

// One direction of a pair: what was read from its source and waits for its
// destination.
struct Flow {
  std::deque<Chunk> queue;
  size_t queued = 0;     // bytes in queue not yet written
  bool eof = false;      // the source sent FIN
  bool shut = false;     // the FIN was passed on: shutdown(destination, SHUT_WR)
  bool blocked = false;  // the last write met a full send buffer: wait for POLLOUT
  bool wantRead() const { return !eof && queued < kMaxQueued; }
};

enum class PairState { Hanging, Connecting, Open };

struct Pair {
  int client = -1;
  int target = -1;
  uint16_t clientPort = 0;
  PairState state = PairState::Hanging;
  Flow up;    // client -> target
  Flow down;  // target -> client
  bool dead = false;
  int clientSlot = -1;  // index in this round's pollfd array, -1 when not polled
  int targetSlot = -1;
};

}  // namespace

struct FaultProxy::Engine {
  explicit Engine(FaultProxy& p) : proxy(p), buffer(kReadSize) {}

  void run();

  bool sync();
  void acceptNew(Clock::time_point now);
  void startConnect(Pair& p);
  void handleEvents(Pair& p, const std::vector<pollfd>& fds);
  void advance(Pair& p);
  void readFlow(Pair& p, Flow& f, int from, std::chrono::milliseconds delay, std::atomic<uint64_t>& kept);
  void flush(Pair& p, Flow& f, int to);
  int pollTimeout(Clock::time_point now) const;

  Cut cutOf(const Pair& p) const {
    Cut c = settings.cut;
    auto it = settings.clientCuts.find(p.clientPort);
    if (it != settings.clientCuts.end()) {
      c.up = c.up || it->second.up;
      c.down = c.down || it->second.down;
    }
    return c;
  }

  // Both sides with RST: the peers must not mistake it for an orderly close.
  static void resetPair(Pair& p) {
    closeWithReset(p.client);
    closeWithReset(p.target);
    p.client = p.target = -1;
    p.dead = true;
  }

  FaultProxy& proxy;
  Settings settings;  // the thread's copy of proxy.settings_
  uint64_t seenVersion = 0;
  uint64_t seenRefuseEpoch = 0;
  std::mt19937_64 refuseRng;
  std::list<Pair> pairs;  // every connection held, in accept order
  std::vector<char> buffer;
  Clock::time_point acceptResume{};
};

FaultProxy::FaultProxy(std::string listenAddress, uint16_t listenPort, std::string targetHost, uint16_t targetPort)
    : targetAddr_(parseIpv4(targetHost, "target host")), targetPort_(targetPort) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = parseIpv4(listenAddress, "listen address");
  addr.sin_port = htons(listenPort);

  listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listenFd_ < 0) throwErrno("socket");
  int one = 1;
  ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  socklen_t len = sizeof addr;
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listenFd_, 128) != 0 ||
      ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(listenFd_);
    errno = err;
    throwErrno("cannot listen on " + listenAddress + ":" + std::to_string(listenPort));
  }
  port_ = ntohs(addr.sin_port);

  wakeFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd_ < 0) {
    const int err = errno;
    ::close(listenFd_);
    errno = err;
    throwErrno("eventfd");
  }

  engine_ = std::make_unique<Engine>(*this);
  thread_ = std::thread([this] { engine_->run(); });
}

FaultProxy::~FaultProxy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake();
  thread_.join();
  ::close(listenFd_);
  ::close(wakeFd_);
}

void FaultProxy::wake() {
  const uint64_t one = 1;
  // Only fails when the counter is about to overflow, and then the thread is awake anyway.
  [[maybe_unused]] ssize_t n = ::write(wakeFd_, &one, sizeof one);
}

void FaultProxy::publish(std::unique_lock<std::mutex>& lock) {
  const uint64_t version = ++version_;
  wake();
  applied_.wait(lock, [&] { return appliedVersion_ >= version || exited_; });
}

void FaultProxy::setDelay(std::chrono::milliseconds upstream, std::chrono::milliseconds downstream) {
  std::unique_lock<std::mutex> lock(mu_);
  settings_.delayUp = std::max(upstream, std::chrono::milliseconds(0));
  settings_.delayDown = std::max(downstream, std::chrono::milliseconds(0));
  publish(lock);
}

void FaultProxy::setCut(bool upstream, bool downstream) {
  std::unique_lock<std::mutex> lock(mu_);
  settings_.cut = Cut{upstream, downstream};
  publish(lock);
}

void FaultProxy::cutClient(uint16_t clientPort, bool upstream, bool downstream) {
  std::unique_lock<std::mutex> lock(mu_);
  if (upstream || downstream)
    settings_.clientCuts[clientPort] = Cut{upstream, downstream};
  else
    settings_.clientCuts.erase(clientPort);
  publish(lock);
}

void FaultProxy::setRefuse(double probability, uint64_t seed) {
  std::unique_lock<std::mutex> lock(mu_);
  settings_.refuseProbability = probability;
  settings_.refuseSeed = seed;
  ++settings_.refuseEpoch;
  publish(lock);
}

void FaultProxy::resetAll() {
  std::unique_lock<std::mutex> lock(mu_);
  resetPending_ = true;
  publish(lock);
}

FaultProxy::Stats FaultProxy::stats() const {
  Stats s;
  s.accepted = counters_.accepted.load();
  s.refused = counters_.refused.load();
  s.open = counters_.open.load();
  s.bytesUp = counters_.bytesUp.load();
  s.bytesDown = counters_.bytesDown.load();
  return s;
}

// ---- The thread ------------------------------------------------------------

void FaultProxy::Engine::run() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({proxy.wakeFd_, POLLIN, 0});
    const bool listening = Clock::now() >= acceptResume;
    fds.push_back({listening ? proxy.listenFd_ : -1, POLLIN, 0});
    for (Pair& p : pairs) {
      short clientEvents = 0, targetEvents = 0;
      // A cut direction is not read: its bytes wait in the kernel's buffers
      // (and then the sender's), as unacknowledged segments wait across a
      // partition, and arrive once it heals. A hanging pair reads nothing.
      const Cut cut = cutOf(p);
      if (p.state == PairState::Connecting) targetEvents = POLLOUT;
      if (p.state == PairState::Open) {
        clientEvents = (p.up.wantRead() && !cut.up ? POLLIN : 0) | (p.down.blocked ? POLLOUT : 0);
        targetEvents = (p.down.wantRead() && !cut.down ? POLLIN : 0) | (p.up.blocked ? POLLOUT : 0);
      }
      // A socket is only polled for what the pair wants from it: POLLHUP is
      // reported whether asked for or not, and on a socket nobody reads it
      // would wake the loop again and again.
      p.clientSlot = p.targetSlot = -1;
      if (clientEvents != 0) {
        p.clientSlot = static_cast<int>(fds.size());
        fds.push_back({p.client, clientEvents, 0});
      }
      if (targetEvents != 0) {
        p.targetSlot = static_cast<int>(fds.size());
        fds.push_back({p.target, targetEvents, 0});
      }
    }

    int timeout = pollTimeout(Clock::now());
    if (!listening) {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(acceptResume - Clock::now()).count();
      timeout = timeout < 0 ? static_cast<int>(wait) : std::min(timeout, static_cast<int>(wait));
    }
    if (::poll(fds.data(), fds.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      std::perror("FaultProxy: poll");
      break;
    }
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      [[maybe_unused]] ssize_t n = ::read(proxy.wakeFd_, &count, sizeof count);
    }
    // Settings are taken after poll returns, not before: what a test sends
    // after a setter returned is read under the new setting.
    if (!sync()) break;
    if (fds[1].revents & POLLIN) acceptNew(Clock::now());
    for (Pair& p : pairs) {
      handleEvents(p, fds);
      if (!p.dead) advance(p);
    }
    pairs.remove_if([](const Pair& p) { return p.dead; });
    proxy.counters_.open = pairs.size();
  }

  for (Pair& p : pairs) resetPair(p);
  pairs.clear();
  proxy.counters_.open = 0;
  std::lock_guard<std::mutex> lock(proxy.mu_);
  proxy.exited_ = true;
  proxy.applied_.notify_all();
}

// Takes changed settings and a pending reset; false once the proxy stops.
bool FaultProxy::Engine::sync() {
  bool reset = false;
  uint64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(proxy.mu_);
    if (proxy.stopping_) return false;
    if (proxy.version_ == seenVersion) return true;
    version = seenVersion = proxy.version_;
    settings = proxy.settings_;
    reset = std::exchange(proxy.resetPending_, false);
  }
  if (settings.refuseEpoch != seenRefuseEpoch) {
    seenRefuseEpoch = settings.refuseEpoch;
    refuseRng.seed(settings.refuseSeed);
  }
  if (reset) {
    for (Pair& p : pairs) resetPair(p);
    pairs.clear();
    proxy.counters_.open = 0;
  }
  std::lock_guard<std::mutex> lock(proxy.mu_);
  proxy.appliedVersion_ = version;
  proxy.applied_.notify_all();
  return true;
}

void FaultProxy::Engine::acceptNew(Clock::time_point now) {
  for (int i = 0; i < kAcceptBurst; ++i) {
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    const int fd = ::accept4(proxy.listenFd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (!wouldBlock(errno)) acceptResume = now + kAcceptBackoff;
      return;
    }
    ++proxy.counters_.accepted;
    // 53 random bits as a double in [0, 1): the same on every standard library.
    const double draw = static_cast<double>(refuseRng() >> 11) * 0x1.0p-53;

    Pair p;
    p.client = fd;
    p.clientPort = ntohs(peer.sin_port);
    setNoDelay(fd);
    const Cut cut = cutOf(p);
    if (cut.up || cut.down) {
      pairs.push_back(std::move(p));  // hanging until the cut is lifted (FaultProxy.h)
      continue;
    }
    if (draw < settings.refuseProbability) {
      ++proxy.counters_.refused;
      closeWithReset(fd);
      continue;
    }
    startConnect(p);
    if (!p.dead) pairs.push_back(std::move(p));
  }
}

// A target that cannot be reached is passed on the way a refusing listener
// would answer: the client gets RST.
void FaultProxy::Engine::startConnect(Pair& p) {
  p.target = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (p.target < 0) {
    resetPair(p);
    return;
  }
  setNoDelay(p.target);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = proxy.targetAddr_;
  addr.sin_port = htons(proxy.targetPort_);
  if (::connect(p.target, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
    p.state = PairState::Open;
  else if (errno == EINPROGRESS)
    p.state = PairState::Connecting;
  else
    resetPair(p);
}

void FaultProxy::Engine::handleEvents(Pair& p, const std::vector<pollfd>& fds) {
  const short clientEvents = p.clientSlot >= 0 ? fds[p.clientSlot].revents : 0;
  const short targetEvents = p.targetSlot >= 0 ? fds[p.targetSlot].revents : 0;
  const short readable = POLLIN | POLLHUP | POLLERR;
  const Cut cut = cutOf(p);

  switch (p.state) {
    case PairState::Hanging:
      // Not polled: what the client sends waits for the heal.
      return;
    case PairState::Connecting:
      if (targetEvents != 0) {
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(p.target, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        if (err == 0)
          p.state = PairState::Open;
        else if (err != EINPROGRESS)
          resetPair(p);
      }
      return;
    case PairState::Open:
      if (clientEvents & POLLOUT) p.down.blocked = false;
      if (targetEvents & POLLOUT) p.up.blocked = false;
      if ((clientEvents & readable) && p.up.wantRead() && !cut.up)
        readFlow(p, p.up, p.client, settings.delayUp, proxy.counters_.bytesUp);
      if (!p.dead && (targetEvents & readable) && p.down.wantRead() && !cut.down)
        readFlow(p, p.down, p.target, settings.delayDown, proxy.counters_.bytesDown);
      return;
  }
}

void FaultProxy::Engine::readFlow(Pair& p, Flow& f, int from, std::chrono::milliseconds delay,
                                  std::atomic<uint64_t>& kept) {
  for (int i = 0; i < kReadBurst && f.wantRead(); ++i) {
    const ssize_t n = ::recv(from, buffer.data(), buffer.size(), 0);
    if (n > 0) {
      f.queue.push_back(Chunk{Clock::now() + delay, std::string(buffer.data(), static_cast<size_t>(n))});
      f.queued += static_cast<size_t>(n);
      kept += static_cast<uint64_t>(n);
    } else if (n == 0) {
      f.eof = true;
    } else if (errno == EINTR) {
      continue;
    } else {
      if (!wouldBlock(errno)) resetPair(p);  // the peer reset: the other side gets a reset too
      return;
    }
  }
}

// Writes what is due, connects a hanging pair whose cut was lifted, passes on
// FINs and closes a pair whose both directions are finished.
void FaultProxy::Engine::advance(Pair& p) {
  const Cut cut = cutOf(p);
  if (p.state == PairState::Hanging) {
    if (cut.up || cut.down) return;
    // A client that gave up while its connection hung (closed it, or reset
    // it) is gone: across a real partition its SYN was never answered and
    // nothing of it reaches the target, so nothing of it does here.
    pollfd gone{p.client, POLLRDHUP, 0};
    if (::poll(&gone, 1, 0) == 1 && (gone.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      resetPair(p);
      return;
    }
    startConnect(p);
    return;
  }
  if (p.state != PairState::Open) return;
  flush(p, p.up, p.target);
  if (!p.dead) flush(p, p.down, p.client);
  if (p.dead) return;

  // A FIN waits behind the bytes read before it, and behind a cut.
  if (p.up.eof && p.up.queue.empty() && !p.up.shut && !cut.up) {
    ::shutdown(p.target, SHUT_WR);
    p.up.shut = true;
  }
  if (p.down.eof && p.down.queue.empty() && !p.down.shut && !cut.down) {
    ::shutdown(p.client, SHUT_WR);
    p.down.shut = true;
  }
  if (p.up.shut && p.down.shut) {
    ::close(p.client);
    ::close(p.target);
    p.client = p.target = -1;
    p.dead = true;
  }
}

void FaultProxy::Engine::flush(Pair& p, Flow& f, int to) {
  const auto now = Clock::now();
  while (!f.queue.empty() && f.queue.front().due <= now) {
    Chunk& c = f.queue.front();
    const ssize_t n = ::send(to, c.bytes.data() + c.sent, c.bytes.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (wouldBlock(errno)) {
        f.blocked = true;
      } else {
        resetPair(p);
      }
      return;
    }
    c.sent += static_cast<size_t>(n);
    f.queued -= static_cast<size_t>(n);
    if (c.sent == c.bytes.size()) f.queue.pop_front();
  }
  f.blocked = false;
}

// Until the next chunk falls due, -1 when none waits. Rounded up: a timeout
// rounded down would wake the loop early, find nothing due and poll with 0.
int FaultProxy::Engine::pollTimeout(Clock::time_point now) const {
  int timeout = -1;
  for (const Pair& p : pairs) {
    if (p.state != PairState::Open) continue;
    for (const Flow* f : {&p.up, &p.down}) {
      if (f->queue.empty() || f->blocked) continue;
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(f->queue.front().due - now).count();
      const int ms = static_cast<int>(std::clamp<decltype(wait)>(wait, 0, 24 * 3600 * 1000));
      timeout = timeout < 0 ? ms : std::min(timeout, ms);
    }
  }
  return timeout;
}

}  // namespace groupcoord::testing
