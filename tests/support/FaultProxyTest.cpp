// The fault proxy against an echo server of the test's own on 127.0.0.1.
// Timing is only ever bounded from below, or from above by many seconds: the
// machine that runs this may be busy with a build.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/FaultProxy.h"
#include "support/Timing.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A connected socket, closed when it goes.
class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Socket& operator=(Socket&&) = delete;
  int fd() const { return fd_; }
  uint16_t localPort() const {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    return ntohs(addr.sin_port);
  }

 private:
  int fd_;
};

sockaddr_in loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

Socket connectTo(uint16_t port) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const sockaddr_in addr = loopback(port);
  EXPECT_EQ(::connect(s.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  int one = 1;
  ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

// False when the peer is gone (a refused or reset connection).
bool sendAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

struct ReadResult {
  std::string data;
  bool eof = false;    // orderly end of stream
  bool reset = false;  // any error, ECONNRESET in practice
  bool closed() const { return eof || reset; }
};

// Reads until `want` bytes came, the stream ended, or `timeout` passed.
ReadResult readFor(int fd, size_t want, std::chrono::milliseconds timeout) {
  ReadResult r;
  const auto deadline = Clock::now() + timeout;
  std::vector<char> buf(64 * 1024);
  while (r.data.size() < want) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    const ssize_t n = ::recv(fd, buf.data(), std::min(buf.size(), want - r.data.size()), 0);
    if (n > 0) {
      r.data.append(buf.data(), static_cast<size_t>(n));
    } else if (n == 0) {
      r.eof = true;
      break;
    } else if (errno != EINTR && errno != EAGAIN) {
      r.reset = true;
      break;
    }
  }
  return r;
}

// Sends and expects the same bytes back within a generous time.
void expectEcho(int fd, const std::string& bytes) {
  ASSERT_TRUE(sendAll(fd, bytes));
  const ReadResult r = readFor(fd, bytes.size(), 20s);
  EXPECT_EQ(r.data, bytes);
  EXPECT_FALSE(r.closed());
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 20s) {
  const auto deadline = Clock::now() + limit;
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// Echoes every connection back to itself, a thread per connection; at EOF it
// closes its sending side too, so a half-close comes back as a half-close.
class EchoServer {
 public:
  EchoServer() {
    listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = loopback(0);
    socklen_t len = sizeof addr;
    if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listenFd_, 64) != 0 ||
        ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      ADD_FAILURE() << "echo server cannot listen: " << std::strerror(errno);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }

  ~EchoServer() {
    // shutdown() wakes the threads blocked in accept() and recv(); the
    // descriptors are closed only after the joins, so none is reused under them.
    ::shutdown(listenFd_, SHUT_RDWR);
    acceptor_.join();
    std::vector<std::thread> workers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
      workers = std::move(workers_);
    }
    for (auto& t : workers) t.join();
    for (int fd : fds_) ::close(fd);
    ::close(listenFd_);
  }

  uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }
  // Bytes received over every connection so far.
  size_t received() const { return received_.load(); }

 private:
  void acceptLoop() {
    for (;;) {
      const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      ++accepted_;
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(fd);
      workers_.emplace_back([this, fd] {
        std::vector<char> buf(64 * 1024);
        for (;;) {
          const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) break;
          received_ += static_cast<size_t>(n);
          if (!sendAll(fd, std::string(buf.data(), static_cast<size_t>(n)))) return;
        }
        ::shutdown(fd, SHUT_WR);
      });
    }
  }

  int listenFd_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> accepted_{0};
  std::atomic<size_t> received_{0};
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> workers_;
  std::thread acceptor_;
};

// A port nothing listens on: bound once, then closed.
uint16_t deadPort() {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr = loopback(0);
  ::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  return s.localPort();
}

// True when the proxy refused the connection: it closes with RST before
// forwarding anything, so the echo never comes.
bool refusedOnce(FaultProxy& proxy) {
  Socket c = connectTo(proxy.port());
  sendAll(c.fd(), "?");
  const ReadResult r = readFor(c.fd(), 1, 20s);
  EXPECT_TRUE(r.closed() || r.data == "?") << "neither an echo nor a close within 20 s";
  return r.closed();
}

TEST(FaultProxy, ForwardsBytesUnchanged) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
  ASSERT_NE(proxy.port(), 0);
  ASSERT_NE(proxy.port(), echo.port());

  Socket c = connectTo(proxy.port());
  expectEcho(c.fd(), "hello");

  // More than the proxy buffers per direction: flow control must work through it.
  std::string payload(2 << 20, '\0');
  std::mt19937 gen(7);
  for (char& ch : payload) ch = static_cast<char>(gen());
  std::thread writer([&] { EXPECT_TRUE(sendAll(c.fd(), payload)); });
  const ReadResult r = readFor(c.fd(), payload.size(), 60s);
  writer.join();
  EXPECT_EQ(r.data.size(), payload.size());
  EXPECT_TRUE(r.data == payload);

  const FaultProxy::Stats s = proxy.stats();
  EXPECT_EQ(s.accepted, 1u);
  EXPECT_EQ(s.refused, 0u);
  EXPECT_EQ(s.open, 1u);
  EXPECT_EQ(s.bytesUp, payload.size() + 5);
  EXPECT_EQ(s.bytesDown, payload.size() + 5);
}

TEST(FaultProxy, HalfCloseIsPassedOnBothWays) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
  Socket c = connectTo(proxy.port());
  ASSERT_TRUE(sendAll(c.fd(), "bye"));
  ::shutdown(c.fd(), SHUT_WR);
  // The echo server sees the FIN only through the proxy, and answers with its own.
  const ReadResult r = readFor(c.fd(), 4, 20s);
  EXPECT_EQ(r.data, "bye");
  EXPECT_TRUE(r.eof);
  EXPECT_TRUE(eventually([&] { return proxy.stats().open == 0; }));
}

TEST(FaultProxy, DelayHoldsEachDirection) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
  Socket c = connectTo(proxy.port());
  expectEcho(c.fd(), "warm");

  proxy.setDelay(200ms, 200ms);
  const auto start = Clock::now();
  expectEcho(c.fd(), "x");
  EXPECT_GE(Clock::now() - start, 400ms);

  // Separate writes under a delay arrive in order.
  for (const char* part : {"a", "b", "c"}) {
    ASSERT_TRUE(sendAll(c.fd(), part));
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(readFor(c.fd(), 3, 20s).data, "abc");

  proxy.setDelay(0ms, 0ms);
  expectEcho(c.fd(), "quick again");
}

TEST(FaultProxy, CutDirectionHoldsBytesUntilHealedAndKeepsTheConnection) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
  Socket c = connectTo(proxy.port());
  expectEcho(c.fd(), "before");

  proxy.setCut(true, false);
  ASSERT_TRUE(sendAll(c.fd(), "held"));
  ReadResult r = readFor(c.fd(), 1, 500ms);
  EXPECT_EQ(r.data, "");
  EXPECT_FALSE(r.closed());
  EXPECT_EQ(proxy.stats().bytesUp, 6u) << "bytes were read through an upstream cut";

  // Healed: what was sent across the cut arrives, in order, then the rest.
  proxy.setCut(false, false);
  EXPECT_EQ(readFor(c.fd(), 4, 20s).data, "held");
  expectEcho(c.fd(), "found");

  // Downstream: the echo server answers, the answer waits.
  proxy.setCut(false, true);
  ASSERT_TRUE(sendAll(c.fd(), "echoed"));
  EXPECT_TRUE(eventually([&] { return echo.received() >= 6u + 4 + 5 + 6; }));
  r = readFor(c.fd(), 1, 500ms);
  EXPECT_EQ(r.data, "");
  EXPECT_FALSE(r.closed());
  proxy.setCut(false, false);
  EXPECT_EQ(readFor(c.fd(), 6, 20s).data, "echoed");
  expectEcho(c.fd(), "healed");

  const FaultProxy::Stats s = proxy.stats();
  EXPECT_EQ(s.bytesUp, 6u + 4 + 5 + 6 + 6);    // before, held, found, echoed, healed
  EXPECT_EQ(s.bytesDown, 6u + 4 + 5 + 6 + 6);  // the same, echoed
}

TEST(FaultProxy, CutHoldsBackAFinUntilHealed) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
  Socket c = connectTo(proxy.port());
  expectEcho(c.fd(), "hi");

  proxy.setCut(true, false);
  ::shutdown(c.fd(), SHUT_WR);
  // No FIN reaches the echo server, so none comes back.
  ReadResult r = readFor(c.fd(), 1, 500ms);
  EXPECT_FALSE(r.closed());
  proxy.setCut(false, false);
  r = readFor(c.fd(), 1, 20s);
  EXPECT_TRUE(r.eof);
}

TEST(FaultProxy, NewConnectionsHangWhileCut) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
  proxy.setCut(true, true);

  Socket c = connectTo(proxy.port());
  ASSERT_TRUE(sendAll(c.fd(), "anyone?"));
  const ReadResult r = readFor(c.fd(), 1, 500ms);
  EXPECT_EQ(r.data, "");
  EXPECT_FALSE(r.closed());
  EXPECT_EQ(echo.accepted(), 0);  // the proxy did not reach the target
  EXPECT_EQ(proxy.stats().open, 1u);

  // Healed: the proxy connects, as a retried SYN would get through, and
  // what the client sent meanwhile arrives.
  proxy.setCut(false, false);
  EXPECT_EQ(readFor(c.fd(), 7, 20s).data, "anyone?");
  expectEcho(c.fd(), "again");
  EXPECT_EQ(echo.accepted(), 1);

  // A client that gave up while it hung never reaches the target: its
  // request does not arrive after the heal.
  proxy.setCut(true, true);
  {
    Socket gaveUp = connectTo(proxy.port());
    ASSERT_TRUE(sendAll(gaveUp.fd(), "stale"));
    EXPECT_TRUE(eventually([&] { return proxy.stats().open == 2; }));
  }
  const size_t received = echo.received();
  proxy.setCut(false, false);
  EXPECT_TRUE(eventually([&] { return proxy.stats().open == 1; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(echo.accepted(), 1) << "the proxy connected for a client that had gone";
  EXPECT_EQ(echo.received(), received);
  expectEcho(c.fd(), "still here");
}

TEST(FaultProxy, CutClientBlocksOnlyThatClient) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
  Socket a = connectTo(proxy.port());
  Socket b = connectTo(proxy.port());
  expectEcho(a.fd(), "a1");
  expectEcho(b.fd(), "b1");

  proxy.cutClient(a.localPort(), true, true);
  ASSERT_TRUE(sendAll(a.fd(), "a2"));
  expectEcho(b.fd(), "b2");
  const ReadResult r = readFor(a.fd(), 1, 500ms);
  EXPECT_EQ(r.data, "");
  EXPECT_FALSE(r.closed());

  proxy.cutClient(a.localPort(), false, false);
  EXPECT_EQ(readFor(a.fd(), 2, 20s).data, "a2");
  expectEcho(a.fd(), "a3");
  expectEcho(b.fd(), "b3");
}

TEST(FaultProxy, RefuseClosesNewConnectionsWithReset) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
  Socket open = connectTo(proxy.port());
  expectEcho(open.fd(), "already here");

  proxy.setRefuse(1.0, 1);
  EXPECT_TRUE(refusedOnce(proxy));
  EXPECT_TRUE(refusedOnce(proxy));
  EXPECT_EQ(proxy.stats().refused, 2u);
  expectEcho(open.fd(), "still here");  // refusing new connections leaves the old ones

  proxy.setRefuse(0.0, 1);
  EXPECT_FALSE(refusedOnce(proxy));
  const FaultProxy::Stats s = proxy.stats();
  EXPECT_EQ(s.accepted, 4u);
  EXPECT_EQ(s.refused, 2u);
  EXPECT_EQ(echo.accepted(), 2);
}

TEST(FaultProxy, RefusePatternFollowsTheSeed) {
  EchoServer echo;
  auto pattern = [&](uint64_t seed) {
    FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
    proxy.setRefuse(0.5, seed);
    std::vector<bool> refused;
    for (int i = 0; i < 20; ++i) refused.push_back(refusedOnce(proxy));
    size_t count = 0;
    for (bool r : refused) count += r ? 1 : 0;
    EXPECT_EQ(proxy.stats().refused, count);
    return refused;
  };
  const std::vector<bool> first = pattern(42);
  EXPECT_EQ(pattern(42), first);
  // p = 0.5 over 20 connections: both outcomes occur (for this seed, and
  // almost surely for any).
  EXPECT_NE(std::count(first.begin(), first.end(), true), 0);
  EXPECT_NE(std::count(first.begin(), first.end(), false), 0);
}

TEST(FaultProxy, UnreachableTargetResetsTheClient) {
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", deadPort());
  Socket c = connectTo(proxy.port());
  const ReadResult r = readFor(c.fd(), 1, 20s);
  EXPECT_TRUE(r.closed());
  EXPECT_EQ(r.data, "");
}

TEST(FaultProxy, ResetAllResetsOpenConnections) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
  Socket a = connectTo(proxy.port());
  Socket b = connectTo(proxy.port());
  expectEcho(a.fd(), "a");
  expectEcho(b.fd(), "b");
  EXPECT_EQ(proxy.stats().open, 2u);

  proxy.resetAll();
  EXPECT_EQ(proxy.stats().open, 0u);  // done by the time it returns
  for (int fd : {a.fd(), b.fd()}) {
    const ReadResult r = readFor(fd, 1, 20s);
    EXPECT_TRUE(r.closed());
    EXPECT_EQ(r.data, "");
  }

  Socket c = connectTo(proxy.port());
  expectEcho(c.fd(), "new");
  EXPECT_EQ(proxy.stats().accepted, 3u);
}

TEST(FaultProxy, OpenCountFollowsClosedConnections) {
  EchoServer echo;
  FaultProxy proxy("127.0.0.1", 0, "127.0.0.1", echo.port());
  auto a = std::make_unique<Socket>(connectTo(proxy.port()));
  Socket b = connectTo(proxy.port());
  expectEcho(a->fd(), "a");
  expectEcho(b.fd(), "b");
  EXPECT_EQ(proxy.stats().open, 2u);
  a.reset();
  EXPECT_TRUE(eventually([&] { return proxy.stats().open == 1; }));
  expectEcho(b.fd(), "b still");
}

TEST(FaultProxy, DestructorWithOpenConnectionsReturnsPromptly) {
  EchoServer echo;
  auto proxy = std::make_unique<FaultProxy>("127.0.0.1", 0, "127.0.0.1", echo.port());
  Socket a = connectTo(proxy->port());
  expectEcho(a.fd(), "open");
  // The delay outlasts the scheduling allowance: a destructor that returns
  // before it ran out did not wait it out, however busy the machine.
  const auto delay = designBound(10s);
  proxy->setDelay(delay, delay);
  ASSERT_TRUE(sendAll(a.fd(), "waiting out a delay"));
  proxy->setCut(true, true);
  Socket hanging = connectTo(proxy->port());
  EXPECT_TRUE(eventually([&] { return proxy->stats().open == 2; }));

  const auto start = Clock::now();
  proxy.reset();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  // How promptly is a measure of speed: reported.
  figure("fault proxy destructor with a delayed and a hanging connection open: " + std::to_string(took.count()) +
         " ms");
  EXPECT_LT(took, delay) << "the destructor waited out the delay";
  EXPECT_TRUE(readFor(a.fd(), 1, 20s).closed());
  EXPECT_TRUE(readFor(hanging.fd(), 1, 20s).closed());
}

}  // namespace
}  // namespace groupcoord::testing
