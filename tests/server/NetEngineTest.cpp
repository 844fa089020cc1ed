// server/net/: the reactor every port runs on (events to their source, a
// wake from another thread, the wait bounded by the owner's deadline) and
// accepting under a port's limits, over real sockets on 127.0.0.1.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "server/net/Listener.h"
#include "server/net/Reactor.h"

namespace groupcoord::server::net {
namespace {

using namespace std::chrono_literals;

struct Counting final : EventSource {
  void onEvent(uint32_t events) override {
    ++calls;
    last = events;
  }
  int calls = 0;
  uint32_t last = 0;
};

// Turns that end after `turnsLeft` turns, or once `stop` is set.
struct Limited final : Turns {
  Clock::time_point nextWake() override { return until; }
  void turnBegins(Clock::time_point) override { ++turns; }
  bool turnEnds() override { return --turnsLeft > 0 && !stop.load(); }
  Clock::time_point until = Clock::time_point::max();
  int turnsLeft = 1;
  int turns = 0;
  std::atomic<bool> stop{false};
};

TEST(NetEngineTest, AReadyDescriptorsEventsGoToItsSource) {
  Reactor reactor;
  std::string error;
  ASSERT_TRUE(reactor.open(&error)) << error;
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
  UniqueFd a(fds[0]), b(fds[1]);
  Counting source;
  ASSERT_TRUE(reactor.add(a.get(), EPOLLIN, &source));
  ASSERT_EQ(::write(b.get(), "x", 1), 1);
  Limited turns;
  ASSERT_TRUE(reactor.run(turns, &error)) << error;
  EXPECT_EQ(source.calls, 1);
  EXPECT_TRUE(source.last & EPOLLIN);
  reactor.remove(a.get());
}

TEST(NetEngineTest, AWakeFromAnotherThreadEndsTheWait) {
  Reactor reactor;
  std::string error;
  ASSERT_TRUE(reactor.open(&error)) << error;
  Limited turns;
  turns.turnsLeft = 1000;
  std::thread waker([&] {
    std::this_thread::sleep_for(20ms);
    turns.stop = true;
    reactor.wake();
  });
  const auto start = Clock::now();
  ASSERT_TRUE(reactor.run(turns, &error)) << error;
  waker.join();
  // No deadline: only the wake ended the wait, in one turn (or two, if a
  // spurious return came first).
  EXPECT_LE(turns.turns, 2);
  EXPECT_GE(Clock::now() - start, 20ms);
}

TEST(NetEngineTest, TheWaitEndsAtTheOwnersDeadline) {
  Reactor reactor;
  std::string error;
  ASSERT_TRUE(reactor.open(&error)) << error;
  Limited turns;
  const auto start = Clock::now();
  turns.until = start + 30ms;
  ASSERT_TRUE(reactor.run(turns, &error)) << error;
  EXPECT_GE(Clock::now() - start, 30ms);
  turns.until = Clock::time_point::min();  // at once
  turns.turnsLeft = 1;
  ASSERT_TRUE(reactor.run(turns, &error)) << error;
}

// A port with a cap of two connections overall and one per source, that
// makes room only when told to.
struct Port final : AcceptPolicy {
  uint64_t openConnections() override { return open.size(); }
  int openFrom(const std::string& source) override {
    int n = 0;
    for (const auto& s : sources) n += s == source ? 1 : 0;
    return n;
  }
  bool makeRoom(const std::string& source, bool perSource) override {
    asked.push_back(perSource ? "source " + source : "overall");
    if (!roomOnRequest || open.empty()) return false;
    open.erase(open.begin());
    sources.erase(sources.begin());
    return true;
  }
  void refused(const std::string& source) override { ++refusals; }
  void admitted(UniqueFd fd, const std::string& source) override {
    open.push_back(std::move(fd));
    sources.push_back(source);
  }
  bool acceptFailed(int, int) override { return false; }

  bool roomOnRequest = false;
  std::vector<UniqueFd> open;
  std::vector<std::string> sources;
  std::vector<std::string> asked;
  int refusals = 0;
};

UniqueFd connectTo(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  return fd;
}

TEST(NetEngineTest, AcceptingAsksThePortForRoomPerSourceThenOverall) {
  UniqueFd listener;
  uint16_t port = 0;
  std::string error;
  ASSERT_TRUE(listenOn("127.0.0.1", 0, &listener, &port, &error)) << error;
  ASSERT_NE(port, 0);

  AcceptLimits limits;
  limits.maxConnections = 2;
  limits.maxPerSource = 1;
  Port refusing;
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 2; ++i) clients.push_back(connectTo(port));
  std::this_thread::sleep_for(20ms);  // both in the backlog
  acceptAll(listener.get(), limits, refusing);
  // The first is taken; the second, from the same address, is past the
  // per-source cap and the port makes no room: refused.
  EXPECT_EQ(refusing.open.size(), 1u);
  EXPECT_EQ(refusing.sources.front(), "127.0.0.1");
  EXPECT_EQ(refusing.refusals, 1);
  EXPECT_EQ(refusing.asked, std::vector<std::string>{"source 127.0.0.1"});

  // A port that makes room: the newcomer takes the place of the oldest.
  Port making;
  making.roomOnRequest = true;
  limits.maxPerSource.reset();
  limits.maxConnections = 1;
  for (int i = 0; i < 2; ++i) clients.push_back(connectTo(port));
  std::this_thread::sleep_for(20ms);
  acceptAll(listener.get(), limits, making);
  EXPECT_EQ(making.open.size(), 1u);
  EXPECT_EQ(making.refusals, 0);
  EXPECT_EQ(making.asked, std::vector<std::string>{"overall"});
}

TEST(NetEngineTest, ASecondListenerOnABusyPortFails) {
  UniqueFd first, second;
  uint16_t port = 0, again = 0;
  std::string error;
  ASSERT_TRUE(listenOn("127.0.0.1", 0, &first, &port, &error)) << error;
  EXPECT_FALSE(listenOn("127.0.0.1", port, &second, &again, &error));
  EXPECT_NE(error.find("bind"), std::string::npos) << error;
}

}  // namespace
}  // namespace groupcoord::server::net
