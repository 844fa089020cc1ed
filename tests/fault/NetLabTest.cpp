// The partition lab itself (support/NetLab.h, support/LabEnsemble.h): nodes
// reach each other and the test, a cut separates exactly what it names and
// a heal joins it again, a ZooKeeper ensemble inside the lab elects a new
// leader when its leader is isolated, and nothing of a lab is left once it
// is gone, including what a lab of a killed process left.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "support/LabEnsemble.h"
#include "support/NetLab.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;

// Runs `fn` on a thread of its own that has entered `netnsPath` (empty: the
// test's namespace); the network namespace is per thread.
template <typename F>
auto inNetns(const std::string& netnsPath, F fn) {
  decltype(fn()) result{};
  std::thread t([&] {
    if (!netnsPath.empty()) {
      int fd = ::open(netnsPath.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) return;
      ::close(fd);
    }
    result = fn();
  });
  t.join();
  return result;
}

int listenOn(const std::string& address, uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether a TCP connection to address:port completes within `wait`.
bool connects(const std::string& address, uint16_t port, std::chrono::milliseconds wait) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    ok = true;
  } else if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok = ::poll(&p, 1, static_cast<int>(wait.count())) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
         err == 0;
  }
  ::close(fd);
  return ok;
}

// A listener in node `to`; whether node `from` (-1: the test's namespace)
// connects to it.
bool reaches(NetLab& lab, int from, int to, std::chrono::milliseconds wait = 1500ms) {
  const uint16_t port = 9100;
  int l = inNetns(lab.netnsPath(to), [&] { return listenOn(lab.address(to), port); });
  if (l < 0) return false;
  const bool ok = inNetns(from < 0 ? std::string() : lab.netnsPath(from),
                          [&] { return connects(lab.address(to), port, wait); });
  ::close(l);
  return ok;
}

TEST(NetLab, NodesReachEachOtherAndTheTestUntilCutAndAgainWhenHealed) {
  std::string leftBefore;
  {
    NetLab lab;
    ASSERT_TRUE(lab.error().empty()) << lab.error();
    const int a = lab.addNode("a"), b = lab.addNode("b"), c = lab.addNode("c");
    ASSERT_GE(c, 0) << lab.error();
    EXPECT_NE(lab.address(a), lab.address(b));
    EXPECT_TRUE(reaches(lab, a, b));
    EXPECT_TRUE(reaches(lab, b, a));
    EXPECT_TRUE(reaches(lab, -1, c)) << "the test cannot reach a node";

    ASSERT_TRUE(lab.cut(a, b)) << lab.error();
    EXPECT_EQ(lab.describeCuts(), "a->b b->a");
    EXPECT_FALSE(reaches(lab, a, b, 800ms)) << "a reaches b through a cut";
    EXPECT_FALSE(reaches(lab, b, a, 800ms)) << "b reaches a through a cut";
    EXPECT_TRUE(reaches(lab, a, c)) << "a cut between a and b separated a and c";
    EXPECT_TRUE(reaches(lab, c, b));
    EXPECT_TRUE(reaches(lab, -1, a)) << "a cut between nodes separated the test from one";

    // One way: only b drops what a sends.
    ASSERT_TRUE(lab.heal(a, b));
    ASSERT_TRUE(lab.cut(a, b, false));
    std::string rulesA, rulesB;
    lab.runIn(a, "nft list table inet gclab", &rulesA);
    lab.runIn(b, "nft list table inet gclab", &rulesB);
    EXPECT_NE(rulesB.find(lab.address(a)), std::string::npos) << rulesB;
    EXPECT_EQ(rulesA.find(lab.address(b)), std::string::npos) << rulesA;
    EXPECT_FALSE(reaches(lab, a, b, 800ms));

    ASSERT_TRUE(lab.healAll());
    EXPECT_EQ(lab.describeCuts(), "(none)");
    EXPECT_TRUE(reaches(lab, a, b));
    EXPECT_TRUE(reaches(lab, b, a));
    EXPECT_FALSE(NetLab::leftovers().empty()) << "a lab in use shows nothing of itself";
  }
  auto left = NetLab::leftovers();
  std::string text;
  for (auto& l : left) text += l + "\n";
  EXPECT_TRUE(left.empty()) << "left behind by a lab that is gone:\n" << text;
}

TEST(NetLab, WhatALabOfAProcessNoLongerRunningLeftIsRemovedByTheNext) {
  // A pid that no longer runs.
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string ns = "gcn" + std::to_string(dead) + "-x";
  const std::string bridge = "gcb" + std::to_string(dead);
  ASSERT_EQ(runCommand("ip netns add " + ns + " && ip link add " + bridge + " type bridge"), 0);
  auto has = [&](const std::string& what) {
    for (auto& l : NetLab::leftovers(true))
      if (l == what) return true;
    return false;
  };
  ASSERT_TRUE(has("netns " + ns));
  ASSERT_TRUE(has("link " + bridge));
  {
    NetLab lab;
    ASSERT_TRUE(lab.error().empty()) << lab.error();
    EXPECT_FALSE(has("netns " + ns)) << "the stale namespace is still there";
    EXPECT_FALSE(has("link " + bridge)) << "the stale bridge is still there";
  }
  runCommand("ip netns delete " + ns + " 2>/dev/null; ip link delete " + bridge + " 2>/dev/null");
}

TEST(NetLab, AnEnsembleInTheLabElectsANewLeaderWhenItsLeaderIsIsolated) {
  NetLab lab;
  ASSERT_TRUE(lab.error().empty()) << lab.error();
  std::vector<int> nodes;
  for (auto n : {"zk1", "zk2", "zk3"}) nodes.push_back(lab.addNode(n));
  ASSERT_GE(nodes.back(), 0) << lab.error();
  LabEnsemble zk(lab, nodes);
  std::string why;
  ASSERT_TRUE(zk.start(90s, &why)) << why;
  const int leader = zk.leader();
  ASSERT_GE(leader, 0);

  // The test's namespace reaches it as a client.
  zk::SessionConfig zc;
  zc.connect = zk.connectString();
  zc.sessionTimeout = 6000ms;
  zk::Session s(zc);
  ASSERT_EQ(s.start(), zk::Error::Ok);
  ASSERT_EQ(s.waitConnected(20s), zk::Error::Ok);
  ASSERT_EQ(s.createSync("/lab", "", zk::CreateMode::Persistent).error, zk::Error::Ok);

  std::vector<int> others;
  for (int i = 0; i < 3; ++i)
    if (i != leader) others.push_back(zk.labNode(i));
  ASSERT_TRUE(lab.isolate(zk.labNode(leader), others)) << lab.error();
  int newLeader = -1;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 3; ++i)
      if (i != leader && zk.mode(i) == "leader") newLeader = i;
    if (newLeader >= 0) break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_GE(newLeader, 0) << "the two followers elected no leader without the old one:\n"
                          << zk.logTail(others.empty() ? 0 : (leader + 1) % 3);
  // The isolated leader steps down once it has heard from no quorum for
  // syncLimit ticks, which may be after the others have elected a new one.
  const std::chrono::milliseconds stepDown(LabEnsemble::kSyncLimitTicks * zk.tickMs());
  std::string oldMode;
  EXPECT_TRUE(eventuallyWithin(designBound(stepDown), [&] {
    oldMode = zk.mode(leader);
    return oldMode != "leader";
  }, 200ms)) << "the isolated node still says it leads";
  // A write through the majority side. The session may still be on the
  // isolated node: the write then fails with ConnectionLoss until the
  // client has moved to a node of the majority, within its session timeout.
  zk::Error wrote = zk::Error::ConnectionLoss;
  EXPECT_TRUE(eventuallyWithin(designBound(zc.sessionTimeout), [&] {
    if (s.waitConnected(1s) != zk::Error::Ok) return false;
    wrote = s.setSync("/lab", "after", -1).error;
    return wrote == zk::Error::Ok;
  }, 200ms)) << "the last write failed with " << static_cast<int>(wrote);

  ASSERT_TRUE(lab.healAll());
  const auto rejoin = std::chrono::steady_clock::now() + 60s;
  std::string back;
  while (std::chrono::steady_clock::now() < rejoin) {
    back = zk.mode(leader);
    if (back == "follower") break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(back, "follower") << "the old leader did not rejoin as a follower";
  s.close();
}

}  // namespace
}  // namespace groupcoord::testing
