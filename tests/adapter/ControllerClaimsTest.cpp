// Controller claims on the in-memory ZooKeeper: who claims an uncontrolled
// group and when, what a server that does not control a group answers, and
// the CreateGroup calls waiting for their group's controller.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "adapter/ControllerClaims.h"
#include "tests/adapter/FakeZkTestSupport.h"

namespace groupcoord::adapter {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;

constexpr const char* kRoot = "/gc";

struct Server {
  SessionEpoch epoch;
  std::unique_ptr<zk::FakeClient> zk;
  std::unique_ptr<ServerRegistry> registry;
  std::unique_ptr<ControllerClaims> claims;
  std::atomic<bool> mayClaim{true};

  std::mutex mu;
  std::vector<std::string> claimed;
  std::vector<std::pair<std::string, ErrorCode>> lost;

  std::vector<std::string> claimedGroups() {
    std::lock_guard<std::mutex> lock(mu);
    return claimed;
  }
  size_t lostCount(const std::string& g) {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (auto& [name, _] : lost) n += name == g;
    return n;
  }

  ~Server() {
    if (zk) zk->close();
    zk.reset();
    claims.reset();
    registry.reset();
  }
};

class ControllerClaimsTest : public ::testing::Test {
 protected:
  ControllerClaimsTest() : admin_(ensemble_) {
    testsupport::quietLogs();
    EXPECT_EQ(admin_.ensurePathSync(layout_.serversPath()), zk::Error::Ok);
    EXPECT_EQ(admin_.ensurePathSync(layout_.groupsPath()), zk::Error::Ok);
  }
  ~ControllerClaimsTest() override { servers_.clear(); }

  // A server wired as the Coordinator wires these parts: a change of the
  // fleet, or this server's registration, makes the claims reconsider.
  Server& addServer(int32_t id, bool watchGroups = true) {
    auto s = std::make_unique<Server>();
    Server* raw = s.get();
    zk::FakeClientOptions o;
    o.name = "server-" + std::to_string(id);
    s->zk = std::make_unique<zk::FakeClient>(ensemble_, o);
    s->registry = std::make_unique<ServerRegistry>(
        *s->zk, layout_, time_, s->epoch,
        ServerRegistry::Events{[raw] { raw->claims->reconsider(); }, [raw] { raw->claims->reconsider(); }});
    s->registry->setIdentity(ServerIdentity{id, "host-" + std::to_string(id), static_cast<uint16_t>(9000 + id)});
    s->claims = std::make_unique<ControllerClaims>(
        *s->zk, layout_, time_, s->epoch, *s->registry, ClaimsConfig{3000ms, 5000ms},
        ControllerClaims::Events{[raw](const std::string& g) {
                                   std::lock_guard<std::mutex> lock(raw->mu);
                                   raw->claimed.push_back(g);
                                 },
                                 [raw](const std::string& g, ErrorCode e, const char*) {
                                   std::lock_guard<std::mutex> lock(raw->mu);
                                   raw->lost.emplace_back(g, e);
                                 },
                                 [raw] { return raw->mayClaim.load() && raw->registry->registered(); }});
    s->registry->registerSelf();
    s->registry->watch();
    if (watchGroups) s->claims->watchGroups();
    settle();
    servers_[id] = std::move(s);
    return *servers_[id];
  }

  void settle() { testsupport::settle(ensemble_); }
  void createGroup(const std::string& g) {
    ASSERT_EQ(admin_.createSync(layout_.groupPath(g), "", zk::CreateMode::Persistent).error, zk::Error::Ok);
    settle();
  }
  // Advances the clock and ticks every server's claims.
  void advance(std::chrono::milliseconds d) {
    time_.advance(d);
    for (auto& [_, s] : servers_) s->claims->tick(time_.now());
    settle();
  }
  // Group names whose preferred server (as `by` sees the fleet) is `id`.
  std::vector<std::string> groupsPreferring(Server& by, int32_t id, size_t n) {
    std::vector<std::string> out;
    for (int i = 0; out.size() < n; ++i) {
      std::string g = "g" + std::to_string(i);
      if (by.registry->preferredServer(g) == id) out.push_back(g);
    }
    return out;
  }
  std::string groupPreferring(Server& by, int32_t id) { return groupsPreferring(by, id, 1)[0]; }
  std::optional<std::string> controllerOf(const std::string& g) { return ensemble_.data(layout_.controllerPath(g)); }

  zk::FakeEnsemble ensemble_;
  zk::FakeClient admin_;
  ManualTimeSource time_;
  layout::Layout layout_{kRoot};
  std::map<int32_t, std::unique_ptr<Server>> servers_;
};

TEST_F(ControllerClaimsTest, APreferredServerClaimsAnUncontrolledGroupAtOnce) {
  auto& s = addServer(1);
  createGroup("orders");
  EXPECT_EQ(s.claimedGroups(), (std::vector<std::string>{"orders"}));
  EXPECT_EQ(controllerOf("orders"), "1");
  EXPECT_EQ(ensemble_.stat(layout_.controllerPath("orders"))->ephemeralOwner, s.zk->sessionId());
  for (int i = 0; i < 5; ++i) advance(1000ms);
  EXPECT_EQ(s.claimedGroups(), (std::vector<std::string>{"orders"})) << "claimed exactly once";
}

TEST_F(ControllerClaimsTest, GroupsThatExistBeforeTheWatchAreClaimedToo) {
  createGroup("a");
  createGroup("b");
  auto& s = addServer(1);
  auto claimed = s.claimedGroups();
  std::sort(claimed.begin(), claimed.end());
  EXPECT_EQ(claimed, (std::vector<std::string>{"a", "b"}));
}

TEST_F(ControllerClaimsTest, ANonPreferredServerClaimsOnlyAfterTheFallback) {
  auto& a = addServer(1);
  addServer(2, /*watchGroups=*/false);  // live, preferred, but never claims
  const std::string g = groupPreferring(a, 2);
  createGroup(g);
  EXPECT_TRUE(a.claimedGroups().empty());
  EXPECT_FALSE(controllerOf(g).has_value());
  advance(2999ms);
  EXPECT_TRUE(a.claimedGroups().empty()) << "the fallback (3000 ms) has not passed";
  advance(1ms);
  EXPECT_EQ(a.claimedGroups(), (std::vector<std::string>{g}));
  EXPECT_EQ(controllerOf(g), "1");
}

TEST_F(ControllerClaimsTest, OnlyThePreferredOfTwoServersClaims) {
  auto& a = addServer(1);
  auto& b = addServer(2);
  const std::string toB = groupPreferring(a, 2);
  const std::string toA = groupPreferring(a, 1);
  createGroup(toB);
  createGroup(toA);
  advance(5000ms);
  EXPECT_EQ(a.claimedGroups(), (std::vector<std::string>{toA}));
  EXPECT_EQ(b.claimedGroups(), (std::vector<std::string>{toB}));
  EXPECT_EQ(controllerOf(toA), "1");
  EXPECT_EQ(controllerOf(toB), "2");
}

TEST_F(ControllerClaimsTest, NoClaimWhileNotAllowedThenAtOnceOnReconsider) {
  auto& s = addServer(1);
  s.mayClaim = false;
  createGroup("g");
  advance(5000ms);
  EXPECT_TRUE(s.claimedGroups().empty());
  EXPECT_FALSE(controllerOf("g").has_value());
  s.mayClaim = true;
  s.claims->reconsider();
  settle();
  EXPECT_EQ(s.claimedGroups(), (std::vector<std::string>{"g"}));
}

TEST_F(ControllerClaimsTest, WhenTheControllerGoesTheSurvivorTakesOver) {
  auto& a = addServer(1);
  auto& b = addServer(2);
  const std::string g = groupPreferring(a, 2);
  createGroup(g);
  ASSERT_EQ(controllerOf(g), "2");
  b.zk->close();  // its server dies: its controller znode goes
  settle();
  advance(10ms);
  EXPECT_EQ(a.claimedGroups(), (std::vector<std::string>{g}));
  EXPECT_EQ(controllerOf(g), "1");
}

TEST_F(ControllerClaimsTest, LostFiresWhenTheGroupZnodeIsDeleted) {
  auto& s = addServer(1);
  createGroup("g");
  ASSERT_EQ(s.claimedGroups(), (std::vector<std::string>{"g"}));
  // At once: a controller znode removed alone would be claimed again.
  ASSERT_EQ(admin_.multiSync({zk::makeRemove(layout_.controllerPath("g")), zk::makeRemove(layout_.groupPath("g"))})
                .error,
            zk::Error::Ok);
  settle();
  std::lock_guard<std::mutex> lock(s.mu);
  bool unknownGroup = false;
  for (auto& [name, e] : s.lost) unknownGroup |= name == "g" && e == ErrorCode::UNKNOWN_GROUP;
  EXPECT_TRUE(unknownGroup);
}

TEST_F(ControllerClaimsTest, NotHereAnswersAsDocumented) {
  auto& a = addServer(1);
  auto& b = addServer(2);
  // Unknown group: UNKNOWN_GROUP, or CONTROLLER_NOT_AVAILABLE while ZooKeeper is away.
  EXPECT_EQ(a.claims->notHere("nope", true), ErrorCode::UNKNOWN_GROUP);
  EXPECT_EQ(a.claims->notHere("nope", false), ErrorCode::CONTROLLER_NOT_AVAILABLE);
  // Controlled by another server: NOT_CONTROLLER (connected or not).
  const auto toB = groupsPreferring(a, 2, 2);
  const std::string& other = toB[0];
  const std::string& orphan = toB[1];
  createGroup(other);
  ASSERT_EQ(controllerOf(other), "2");
  EXPECT_EQ(a.claims->notHere(other, true), ErrorCode::NOT_CONTROLLER);
  EXPECT_EQ(a.claims->notHere(other, false), ErrorCode::NOT_CONTROLLER);
  // Known, without a controller yet: CONTROLLER_NOT_AVAILABLE.
  b.mayClaim = false;
  createGroup(orphan);
  ASSERT_FALSE(controllerOf(orphan).has_value());
  EXPECT_EQ(a.claims->notHere(orphan, true), ErrorCode::CONTROLLER_NOT_AVAILABLE);
}

// A server that has just started, connected but with the groups not yet
// listed, cannot tell an unknown group from one it has not read: it must not
// tell a client that an existing group does not exist.
TEST_F(ControllerClaimsTest, BeforeTheGroupsAreListedAnUnreadGroupIsNotAvailableRatherThanUnknown) {
  createGroup("exists");
  auto& a = addServer(1, /*watchGroups=*/false);
  EXPECT_EQ(a.claims->notHere("exists", true), ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_EQ(a.claims->notHere("nope", true), ErrorCode::CONTROLLER_NOT_AVAILABLE);
  a.claims->watchGroups();
  settle();
  EXPECT_EQ(a.claims->notHere("nope", true), ErrorCode::UNKNOWN_GROUP);
  EXPECT_NE(a.claims->notHere("exists", true), ErrorCode::UNKNOWN_GROUP);
}

TEST_F(ControllerClaimsTest, AwaitControllerAnswersWhenTheControllerZnodeAppears) {
  auto& a = addServer(1, /*watchGroups=*/false);
  addServer(2, /*watchGroups=*/false);
  createGroup("g");
  int calls = 0;
  protocol::Response answer;
  a.claims->awaitController("g", [&](protocol::Response r) {
    ++calls;
    answer = std::move(r);
  });
  settle();
  EXPECT_EQ(calls, 0) << "no controller yet";
  ASSERT_EQ(admin_.createSync(layout_.controllerPath("g"), "2", zk::CreateMode::Persistent).error, zk::Error::Ok);
  settle();
  ASSERT_EQ(calls, 1);
  auto& resp = std::get<protocol::CreateGroupResponse>(answer);
  EXPECT_EQ(resp.group, "g");
  EXPECT_EQ(resp.error, ErrorCode::NONE);
  EXPECT_EQ(resp.controller, (protocol::Broker{2, "host-2", 9002}));
  // Its wait ending later answers nothing more.
  time_.advance(10s);
  a.claims->expireWaiters(time_.now());
  settle();
  EXPECT_EQ(calls, 1);
}

TEST_F(ControllerClaimsTest, AwaitControllerOfAControlledGroupAnswersAtOnce) {
  auto& a = addServer(1);
  createGroup("g");
  ASSERT_EQ(controllerOf("g"), "1");
  int calls = 0;
  protocol::Broker controller;
  a.claims->awaitController("g", [&](protocol::Response r) {
    ++calls;
    controller = std::get<protocol::CreateGroupResponse>(r).controller;
  });
  settle();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(controller, (protocol::Broker{1, "host-1", 9001}));
}

TEST_F(ControllerClaimsTest, AwaitControllerAnswersWithoutOneWhenTheWaitEnds) {
  auto& a = addServer(1, /*watchGroups=*/false);
  createGroup("g");
  int calls = 0;
  protocol::Response answer;
  a.claims->awaitController("g", [&](protocol::Response r) {
    ++calls;
    answer = std::move(r);
  });
  settle();
  time_.advance(4999ms);
  a.claims->expireWaiters(time_.now());
  EXPECT_EQ(calls, 0) << "createWaitForController is 5000 ms";
  time_.advance(1ms);
  a.claims->expireWaiters(time_.now());
  ASSERT_EQ(calls, 1);
  auto& resp = std::get<protocol::CreateGroupResponse>(answer);
  EXPECT_EQ(resp.group, "g");
  EXPECT_EQ(resp.error, ErrorCode::NONE);
  EXPECT_TRUE(resp.controller.isNone());
  EXPECT_EQ(resp.controller, protocol::Broker{});
  // A controller appearing afterwards does not answer twice.
  ASSERT_EQ(admin_.createSync(layout_.controllerPath("g"), "1", zk::CreateMode::Persistent).error, zk::Error::Ok);
  settle();
  a.claims->expireWaiters(time_.now());
  EXPECT_EQ(calls, 1);
}

// The exists() that sets a waiter's watch failed (ZooKeeper stalled): the
// tick sets it again once connected, and the controller appearing later
// still answers the CreateGroup.
TEST_F(ControllerClaimsTest, AWaiterWhoseWatchFailedIsWatchedAgainByTheTick) {
  auto& a = addServer(1, /*watchGroups=*/false);
  createGroup("g");
  int calls = 0;
  protocol::Broker controller;
  a.zk->failNext(zk::Error::ConnectionLoss);
  a.claims->awaitController("g", [&](protocol::Response r) {
    ++calls;
    controller = std::get<protocol::CreateGroupResponse>(r).controller;
  });
  settle();
  ASSERT_EQ(admin_.createSync(layout_.controllerPath("g"), "1", zk::CreateMode::Persistent).error, zk::Error::Ok);
  settle();
  EXPECT_EQ(calls, 0) << "no watch was set";
  time_.advance(10ms);
  a.claims->expireWaiters(time_.now(), /*connected=*/false);
  settle();
  EXPECT_EQ(calls, 0) << "not while disconnected";
  a.claims->expireWaiters(time_.now(), /*connected=*/true);
  settle();
  ASSERT_EQ(calls, 1);
  EXPECT_EQ(controller, (protocol::Broker{1, "host-1", 9001}));
}

TEST_F(ControllerClaimsTest, StoppingAnswersEveryWaiterWithoutAController) {
  auto& a = addServer(1, /*watchGroups=*/false);
  createGroup("g");
  int calls = 0;
  for (int i = 0; i < 3; ++i) {
    a.claims->awaitController("g", [&](protocol::Response r) {
      ++calls;
      EXPECT_TRUE(std::get<protocol::CreateGroupResponse>(r).controller.isNone());
    });
  }
  settle();
  {
    Outbox out;
    a.claims->answerWaiters(out);
    EXPECT_EQ(calls, 0) << "answered from the outbox";
  }
  EXPECT_EQ(calls, 3);
  time_.advance(10s);
  a.claims->expireWaiters(time_.now());
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace groupcoord::adapter
