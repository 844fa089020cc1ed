// Groups, members, generations and controllers, end to end: groupcoordd
// processes against the live ensemble, spoken to over TCP, and ZooKeeper
// looked at independently.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "WireMember.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;
using Clock = std::chrono::steady_clock;

int64_t msSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

int64_t msOf(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// The servers' ZooKeeper session timeout (T), unless a test gives another.
constexpr int64_t kZkSessionTimeoutMs = 4000;

class MembershipIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("it");
    zk::SessionConfig c;
    c.connect = zkConnect();
    // Long enough to ride out the node kills of the failure tests.
    c.sessionTimeout = 10000ms;
    zk_ = std::make_unique<zk::Session>(c);
    ASSERT_EQ(zk_->start(), zk::Error::Ok);
    ASSERT_EQ(zk_->waitConnected(designBound(c.sessionTimeout)), zk::Error::Ok);
  }

  void TearDown() override {
    // A test that fails half-way may leave nodes paused or down.
    ensemble("resume all");
    for (int n = 1; n <= 3; ++n) ensemble("restart " + std::to_string(n));
    for (auto& s : servers_) {
      if (HasFailure()) std::cerr << "---- log of groupcoordd pid " << s->pid() << "\n" << s->log() << std::endl;
      s->terminate();
    }
  }

  ServerProcess& startServer(int id, int64_t zkSessionTimeoutMs = kZkSessionTimeoutMs,
                             int64_t handoverSettleMs = 10000) {
    auto s = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=" + std::to_string(id), "--zk-root=" + root_,
        "--zk-session-timeout-ms=" + std::to_string(zkSessionTimeoutMs),
        "--handover-settle-ms=" + std::to_string(handoverSettleMs)});
    EXPECT_TRUE(s->start());
    servers_.push_back(std::move(s));
    return *servers_.back();
  }

  // Waits until `count` servers are registered under the root.
  void waitRegistered(size_t count) {
    auto deadline = Clock::now() + 20s;
    while (Clock::now() < deadline) {
      auto c = zk_->getChildrenSync(root_ + "/servers");
      if (c.error == zk::Error::Ok && c.children.size() == count) return;
      std::this_thread::sleep_for(50ms);
    }
    FAIL() << count << " servers did not register under " << root_;
  }

  std::string root_;
  std::unique_ptr<zk::Session> zk_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
};

TEST_F(MembershipIntegration, TheLifeOfAGroup) {
  constexpr int64_t kSessionTimeoutMs = 2000;  // the group's
  auto& s = startServer(1);
  const uint16_t port = s.port();
  auto created = createGroup(port, "life", kSessionTimeoutMs);
  ASSERT_EQ(created.error, ErrorCode::NONE);
  EXPECT_EQ(created.controller.brokerId, 1);
  EXPECT_EQ(created.controller.port, port);

  WireMember a("life", {port}, "a"), b("life", {port}, "b"), c("life", {port}, "c");
  EXPECT_EQ(a.join().generation, 1);
  EXPECT_EQ(b.join().generation, 2);
  auto cj = c.join();
  ASSERT_EQ(cj.error, ErrorCode::NONE);
  EXPECT_EQ(cj.generation, 3);
  EXPECT_EQ(cj.members.size(), 3u);
  ASSERT_TRUE(a.settle());
  ASSERT_TRUE(b.settle());

  // Watch c's member znode independently, to time its eviction.
  std::string cPath = root_ + "/groups/life/members/" + c.id();
  std::atomic<int64_t> deletedAt{0};
  auto exists = std::make_shared<std::promise<zk::ExistsResult>>();
  zk_->exists(
      cPath, [exists](zk::ExistsResult r) { exists->set_value(r); },
      [&deletedAt](const zk::WatchEvent& ev) {
        if (ev.type == zk::WatchEvent::Type::Deleted)
          deletedAt = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
      });
  ASSERT_EQ(exists->get_future().get().error, zk::Error::Ok);

  // Everyone heartbeats for a second, then c falls silent. The server heard
  // c's last heartbeat between its send and its answer.
  Clock::time_point cSent, cAnswered;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(a.heartbeat().error, ErrorCode::NONE);
    ASSERT_EQ(b.heartbeat().error, ErrorCode::NONE);
    cSent = Clock::now();
    ASSERT_EQ(c.heartbeat().error, ErrorCode::NONE);
    cAnswered = Clock::now();
    std::this_thread::sleep_for(200ms);
  }
  // a and b go on heartbeating (every 100 ms against the 2 s timeout: a
  // margin of 1.9 s for this thread's scheduling) until c is evicted, one
  // session timeout after its last heartbeat, and a has heard of it.
  bool rebalanced = false;
  const auto until = cAnswered + designBound(std::chrono::milliseconds(kSessionTimeoutMs));
  while (Clock::now() < until && !(rebalanced && deletedAt != 0)) {
    auto ha = a.heartbeat();
    auto hb = b.heartbeat();
    ASSERT_NE(ha.error, ErrorCode::UNKNOWN_CONSUMER);
    ASSERT_NE(hb.error, ErrorCode::UNKNOWN_CONSUMER);
    if (ha.error == ErrorCode::REBALANCE_NEEDED) {
      EXPECT_EQ(ha.generation, 4);
      rebalanced = true;
    }
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(rebalanced) << "a never learned that the group moved on";
  ASSERT_NE(deletedAt, 0) << "c's member znode was never deleted";
  // The watch reports the deletion after it happened, so both times below
  // are at least the real ones.
  const int64_t afterSent = deletedAt - msOf(cSent);
  const int64_t afterAnswered = deletedAt - msOf(cAnswered);
  figure("eviction delay beyond the " + std::to_string(kSessionTimeoutMs) +
         " ms session timeout: " + std::to_string(afterAnswered - kSessionTimeoutMs) + " ms");
  // The rule: never before the session timeout, counted from when the
  // server heard c last (no earlier than the send).
  EXPECT_GE(afterSent, kSessionTimeoutMs) << "evicted before its session timeout";
  // The design's bound: evicted by the liveness scan once the session
  // timeout has passed (the answer came after the server heard it).
  EXPECT_LE(afterAnswered, designBoundMs(kSessionTimeoutMs))
      << "evicted " << afterAnswered - kSessionTimeoutMs << " ms after its session timeout";

  EXPECT_EQ(c.heartbeat().error, ErrorCode::UNKNOWN_CONSUMER);
  auto ra = a.join();
  EXPECT_EQ(ra.generation, 4);
  EXPECT_EQ(ra.members, (std::vector<std::string>{a.id(), b.id()}));
  EXPECT_EQ(a.heartbeat().error, ErrorCode::NONE);
  EXPECT_EQ(b.heartbeat().error, ErrorCode::REBALANCE_NEEDED);
  b.join();
  EXPECT_EQ(b.heartbeat().error, ErrorCode::NONE);

  auto del = callOnce<protocol::DeleteGroupResponse>(port, protocol::DeleteGroupRequest{"life"});
  ASSERT_TRUE(del);
  EXPECT_EQ(del->error, ErrorCode::GROUP_NOT_EMPTY);
  EXPECT_EQ(a.leave(), ErrorCode::NONE);
  EXPECT_EQ(b.leave(), ErrorCode::NONE);
  del = callOnce<protocol::DeleteGroupResponse>(port, protocol::DeleteGroupRequest{"life"});
  ASSERT_TRUE(del);
  EXPECT_EQ(del->error, ErrorCode::NONE);
  EXPECT_EQ(describeGroup(port, "life").error, ErrorCode::UNKNOWN_GROUP);
  EXPECT_EQ(zk_->existsSync(root_ + "/groups/life").error, zk::Error::NoNode);
}

TEST_F(MembershipIntegration, EphemeralGroupGoesWithItsLastMemberAndARestartCostsNoRebalance) {
  auto& s = startServer(1);
  const uint16_t port = s.port();
  ASSERT_EQ(createGroup(port, "eph", 3000, true).error, ErrorCode::NONE);
  WireMember a("eph", {port}, "a"), b("eph", {port}, "b");
  a.join();
  EXPECT_EQ(b.join().generation, 2);

  // a restarts: a new connection, the same member id, within the timeout.
  a.dropConnection();
  auto again = a.join();
  ASSERT_EQ(again.error, ErrorCode::NONE);
  EXPECT_EQ(again.generation, 2);
  EXPECT_EQ(a.heartbeat().error, ErrorCode::NONE);
  EXPECT_EQ(b.heartbeat().error, ErrorCode::NONE);
  EXPECT_EQ(describeGroup(port, "eph").generation, 2);

  EXPECT_EQ(a.leave(), ErrorCode::NONE);
  EXPECT_EQ(describeGroup(port, "eph").error, ErrorCode::NONE);
  EXPECT_EQ(b.leave(), ErrorCode::NONE);
  // The controller removes the group znode with one ZooKeeper write, answered
  // within the server's session timeout.
  eventuallyWithin(designBound(std::chrono::milliseconds(kZkSessionTimeoutMs)),
                   [&] { return zk_->existsSync(root_ + "/groups/eph").error != zk::Error::Ok; });
  EXPECT_EQ(zk_->existsSync(root_ + "/groups/eph").error, zk::Error::NoNode);
  EXPECT_EQ(describeGroup(port, "eph").error, ErrorCode::UNKNOWN_GROUP);
}

TEST_F(MembershipIntegration, TwoServersSpreadGroupsAndASurvivorTakesOverAfterSigkill) {
  // No settle delay: both servers take groups as soon as they are live.
  auto& s1 = startServer(1, kZkSessionTimeoutMs, 0);
  auto& s2 = startServer(2, kZkSessionTimeoutMs, 0);
  waitRegistered(2);
  const std::vector<uint16_t> ports{s1.port(), s2.port()};
  std::map<int32_t, std::vector<std::string>> byController;
  for (int i = 0; i < 20; ++i) {
    std::string g = "spread-" + std::to_string(i);
    auto r = createGroup(ports[i % 2], g, 3000);
    ASSERT_EQ(r.error, ErrorCode::NONE) << g;
    ASSERT_FALSE(r.controller.isNone()) << g;
    byController[r.controller.brokerId].push_back(g);
  }
  ASSERT_EQ(byController.size(), 2u) << "all 20 groups went to one server";
  std::cout << "[figure] groups per server: 1 -> " << byController[1].size() << ", 2 -> " << byController[2].size()
            << std::endl;

  std::vector<std::unique_ptr<WireMember>> members;
  std::map<std::string, int32_t> controllerOf;
  for (auto& [id, groups] : byController)
    for (auto& g : groups) {
      members.push_back(std::make_unique<WireMember>(g, ports, "m-" + g));
      ASSERT_EQ(members.back()->join().error, ErrorCode::NONE);
      controllerOf[g] = id;
    }
  for (auto& m : members) ASSERT_TRUE(m->settle());

  // The design's bound for a takeover after a SIGKILL: the dead server's
  // session expires (T), its groups are claimed (at once by their target,
  // by anyone after the claim fallback) and each member joins the survivor
  // (its join waits at most the join window's cap).
  const std::chrono::milliseconds takeoverBound =
      std::chrono::milliseconds(kZkSessionTimeoutMs) + kClaimFallback + kJoinWindowCap;
  // Server 2 dies without a word.
  auto killedAt = Clock::now();
  s2.kill9();
  // When does the survivor control every group?
  int64_t claimedAfter = -1;
  while (claimedAfter < 0 && msSince(killedAt) < designBound(takeoverBound).count()) {
    bool all = true;
    for (auto& [g, id] : controllerOf) {
      if (describeGroup(s1.port(), g).controller.brokerId != 1) {
        all = false;
        break;
      }
    }
    if (all) claimedAfter = msSince(killedAt);
    else std::this_thread::sleep_for(20ms);
  }
  std::cout << "[figure] takeover after SIGKILL: the survivor controls every group " << claimedAfter
            << " ms after the kill (ZooKeeper session timeout " << kZkSessionTimeoutMs << " ms)" << std::endl;
  ASSERT_GE(claimedAfter, 0) << "the survivor never claimed every group";
  std::vector<int64_t> settledAfter;
  for (auto& m : members) {
    ASSERT_TRUE(m->settle(designBound(takeoverBound)))
        << "member " << m->id() << " never settled after the takeover";
    settledAfter.push_back(msSince(killedAt));
    EXPECT_EQ(m->controllerPort(), s1.port());
  }
  int64_t takeover = *std::max_element(settledAfter.begin(), settledAfter.end());
  std::cout << "[figure] takeover after SIGKILL: every member in sync with the survivor " << takeover
            << " ms after the kill (ZooKeeper session timeout " << kZkSessionTimeoutMs << " ms)" << std::endl;
  // The members are settled one after the other here, a few hundred ms
  // each: the allowance covers that too.
  EXPECT_LE(takeover, designBoundMs(takeoverBound.count())) << "beyond the design's bound for a takeover";
  for (auto& [g, id] : controllerOf) EXPECT_EQ(describeGroup(s1.port(), g).controller.brokerId, 1) << g;
}

TEST_F(MembershipIntegration, ZooKeeperNodeFailuresNeitherStopHeartbeatsNorEvictAnyone) {
  // The server answers from memory while its session lease holds: at least
  // T - T/5 - T/10 after ZooKeeper last answered (docs/design.md, "What it
  // costs"), 7 s at the longest session the ensemble grants (20 ticks of
  // 500 ms). A killed leader leaves the others without one while they elect
  // a new one and sync with it (the sync bounded by initLimit, 10 ticks: 5 s).
  constexpr int64_t kLongZkSessionTimeoutMs = 10000;
  constexpr int64_t kSessionTimeoutMs = 3000;  // the group's
  constexpr auto kPause = 200ms;               // between rounds of heartbeats
  auto& s = startServer(1, kLongZkSessionTimeoutMs);
  const uint16_t port = s.port();
  ASSERT_EQ(createGroup(port, "steady", kSessionTimeoutMs).error, ErrorCode::NONE);
  WireMember a("steady", {port}, "a"), b("steady", {port}, "b");
  a.join();
  auto bj = b.join();
  ASSERT_TRUE(a.settle());
  const int64_t generation = bj.generation;

  // Rounds of one heartbeat each, kPause apart (against the group's session
  // timeout: a margin of 2.8 s for this thread's scheduling).
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0}, answered{0}, wrong{0};
  std::mutex wrongMu;
  std::string wrongAnswers;
  std::thread beat([&] {
    while (!stop) {
      for (auto* m : {&a, &b}) {
        auto r = m->heartbeat();
        if (r.error == ErrorCode::NONE && r.generation == generation) {
          ++answered;
        } else {
          ++wrong;
          std::lock_guard lock(wrongMu);
          wrongAnswers += " " + std::string(protocol::errorName(r.error)) + "@" + std::to_string(r.generation);
        }
      }
      ++rounds;
      std::this_thread::sleep_for(kPause);
    }
  });
  struct StopOnExit {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~StopOnExit() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } stopOnExit{stop, beat};
  // True once a whole round of heartbeats was sent and answered after the
  // call (the round under way may have begun before): at most two rounds,
  // each heartbeat answered or given up within its call timeout.
  auto aRoundPasses = [&] {
    const int from = rounds.load();
    return eventuallyWithin(2 * (2 * heartbeatCallTimeout() + kPause), [&] { return rounds.load() >= from + 2; });
  };
  // Each node stays down for the scenario's time, and at least until a
  // round of heartbeats went through meanwhile.
  int leader = awaitEnsembleLeader();
  ASSERT_GT(leader, 0);
  int follower = leader % 3 + 1;
  ASSERT_EQ(ensemble("kill " + std::to_string(follower)), 0);
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(aRoundPasses()) << "no heartbeats while ZooKeeper node " << follower << " was down";
  ASSERT_EQ(ensemble("restart " + std::to_string(follower)), 0);
  std::this_thread::sleep_for(1s);
  leader = awaitEnsembleLeader();
  ASSERT_GT(leader, 0);
  ASSERT_EQ(ensemble("kill " + std::to_string(leader)), 0);
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(aRoundPasses()) << "no heartbeats while the leader, ZooKeeper node " << leader << ", was down";
  ASSERT_EQ(ensemble("restart " + std::to_string(leader)), 0);
  std::this_thread::sleep_for(1s);
  stop = true;
  beat.join();
  // How many rounds fit in the scenario is a measure of speed: reported.
  figure("heartbeats answered NONE during the node failures: " + std::to_string(answered) + " in " +
         std::to_string(rounds) + " rounds, other answers: " + std::to_string(wrong));
  EXPECT_EQ(wrong, 0) << "answers other than NONE at generation " << generation << ":" << wrongAnswers;
  auto info = describeGroup(port, "steady");
  EXPECT_EQ(info.generation, generation) << "a member was evicted";
  EXPECT_EQ(info.members.size(), 2u);
}

TEST_F(MembershipIntegration, AServerWhoseSessionExpiredRecoversAndMembersRegisterAgain) {
  constexpr int64_t kShortZkSessionTimeoutMs = 2000;
  auto& s = startServer(1, kShortZkSessionTimeoutMs);
  const uint16_t port = s.port();
  ASSERT_EQ(createGroup(port, "expiry", 20000).error, ErrorCode::NONE);
  WireMember a("expiry", {port}, "a");
  ASSERT_EQ(a.join().error, ErrorCode::NONE);
  ASSERT_TRUE(a.settle());
  auto before = zk_->getSync(root_ + "/servers/1");
  ASSERT_EQ(before.error, zk::Error::Ok);

  // The server frozen while the ensemble runs, until ZooKeeper has expired
  // its session (its ephemeral registration is gone): the server learns of
  // it when it resumes. The ensemble expires a silent session one session
  // timeout after its last touch (rounded up to a tick).
  s.pause();
  const bool expired = eventuallyWithin(designBound(std::chrono::milliseconds(kShortZkSessionTimeoutMs)), [&] {
    return zk_->existsSync(root_ + "/servers/1").error == zk::Error::NoNode;
  });
  s.resume();
  ASSERT_TRUE(expired) << "ZooKeeper did not expire the frozen server's session";

  auto deadline = Clock::now() + 30s;
  bool renewed = false;
  while (Clock::now() < deadline && !renewed) {
    auto now = zk_->getSync(root_ + "/servers/1");
    renewed = now.error == zk::Error::Ok && now.stat.ephemeralOwner != before.stat.ephemeralOwner;
    if (!renewed) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(renewed) << "the server did not register again with a new session";
  ASSERT_TRUE(a.settle(20s)) << "the member did not get back in sync";
  // Its member znode, owned by the new session: the heartbeat that settles
  // it is answered from memory, and the znode comes with the membership
  // transaction that follows, within the join window's cap and a ZooKeeper
  // answer; polled up to that and the allowance.
  auto server = zk_->getSync(root_ + "/servers/1");
  ASSERT_EQ(server.error, zk::Error::Ok);
  zk::GetResult member;
  eventuallyWithin(designBound(std::chrono::milliseconds(kShortZkSessionTimeoutMs) + kJoinWindowCap), [&] {
    member = zk_->getSync(root_ + "/groups/expiry/members/" + a.id());
    return member.error == zk::Error::Ok && member.stat.ephemeralOwner == server.stat.ephemeralOwner;
  }, 100ms);
  ASSERT_EQ(member.error, zk::Error::Ok) << "no member znode for " << a.id();
  EXPECT_EQ(member.stat.ephemeralOwner, server.stat.ephemeralOwner);
  EXPECT_NE(s.log().find("expired"), std::string::npos) << "the log does not say the session expired";
}

TEST_F(MembershipIntegration, ZooKeeperHoldsTheDesignedLayoutAndTheGenerationClientsSee) {
  auto& s = startServer(3);
  const uint16_t port = s.port();
  ASSERT_EQ(createGroup(port, "layout", 5000, false, {"clicks"}).error, ErrorCode::NONE);
  WireMember a("layout", {port}, "a"), b("layout", {port}, "b");
  a.join();
  auto bj = b.join();
  ASSERT_EQ(bj.error, ErrorCode::NONE);

  auto server = zk_->getSync(root_ + "/servers/3");
  ASSERT_EQ(server.error, zk::Error::Ok);
  EXPECT_NE(server.stat.ephemeralOwner, 0);
  EXPECT_NE(server.data.find("\"port\":" + std::to_string(port)), std::string::npos) << server.data;

  auto group = zk_->getSync(root_ + "/groups/layout");
  ASSERT_EQ(group.error, zk::Error::Ok);
  EXPECT_EQ(group.stat.ephemeralOwner, 0) << "the group znode must be persistent";
  EXPECT_EQ(group.stat.version, bj.generation) << "the generation is the group znode's version";
  EXPECT_NE(group.data.find("\"session_timeout_ms\":5000"), std::string::npos) << group.data;

  auto controller = zk_->getSync(root_ + "/groups/layout/controller");
  ASSERT_EQ(controller.error, zk::Error::Ok);
  EXPECT_EQ(controller.data, "3");
  EXPECT_EQ(controller.stat.ephemeralOwner, server.stat.ephemeralOwner);

  for (auto dir : {"members", "offsets"}) {
    auto d = zk_->getSync(root_ + "/groups/layout/" + dir);
    ASSERT_EQ(d.error, zk::Error::Ok) << dir;
    EXPECT_EQ(d.stat.ephemeralOwner, 0) << dir;
  }
  auto members = zk_->getChildrenSync(root_ + "/groups/layout/members");
  ASSERT_EQ(members.error, zk::Error::Ok);
  std::set<std::string> ids(members.children.begin(), members.children.end());
  EXPECT_EQ(ids, (std::set<std::string>{a.id(), b.id()}));
  for (auto& id : ids) {
    auto m = zk_->getSync(root_ + "/groups/layout/members/" + id);
    EXPECT_EQ(m.stat.ephemeralOwner, server.stat.ephemeralOwner) << id;
  }
  EXPECT_EQ(describeGroup(port, "layout").generation, group.stat.version);

  // A graceful stop closes the session: the server's ephemerals go at once,
  // not when the session expires. The session was touched at least every
  // third of its timeout until the process exited, so no expiry can remove
  // them within two thirds of it after the exit: seen gone by then, they
  // went with the close. (This session's own server may apply the close a
  // moment after the server's did: looked at until then.)
  EXPECT_EQ(s.terminate(), 0);
  const auto beforeAnyExpiry = std::chrono::milliseconds(2 * kZkSessionTimeoutMs / 3);
  EXPECT_TRUE(eventuallyWithin(beforeAnyExpiry, [&] {
    return zk_->existsSync(root_ + "/servers/3").error == zk::Error::NoNode &&
           zk_->existsSync(root_ + "/groups/layout/controller").error == zk::Error::NoNode &&
           zk_->getChildrenSync(root_ + "/groups/layout/members").children.empty();
  })) << "the server's ephemerals were still there " << beforeAnyExpiry.count() << " ms after it exited";
  EXPECT_EQ(zk_->existsSync(root_ + "/servers/3").error, zk::Error::NoNode);
  EXPECT_EQ(zk_->existsSync(root_ + "/groups/layout/controller").error, zk::Error::NoNode);
  EXPECT_TRUE(zk_->getChildrenSync(root_ + "/groups/layout/members").children.empty());
}

}  // namespace
}  // namespace groupcoord::testing

namespace groupcoord::testing {
namespace {

// A join storm into a new group (docs/design.md, "Coalesced joins"): 2,000
// registrations sent at once over 50 connections form the group in one
// generation move, written in slices of 1,000 member znodes.
TEST_F(MembershipIntegration, AStormOfTwoThousandJoinsFormsTheGroupInOneGenerationMove) {
  auto& s = startServer(4);
  const uint16_t port = s.port();
  ASSERT_EQ(createGroup(port, "storm", 30000, false, {}).error, ErrorCode::NONE);
  constexpr int kConnections = 50;
  constexpr int kPerConnection = 40;
  std::vector<client::Connection> conns(kConnections);
  for (auto& c : conns) ASSERT_TRUE(c.connect("127.0.0.1", port, 5s));
  // Until the controller has read the group (ZooKeeper answers within the
  // server's session timeout): then every registration is taken, none
  // answered CONTROLLER_NOT_AVAILABLE.
  const auto loadDeadline = Clock::now() + designBound(std::chrono::milliseconds(kZkSessionTimeoutMs));
  for (;; std::this_thread::sleep_for(50ms)) {
    auto d = conns[0].call(protocol::DescribeGroupRequest{"storm"}, requestCallTimeout());
    ASSERT_TRUE(d.ok) << conns[0].lastError();
    const auto& resp = std::get<protocol::DescribeGroupResponse>(d.response);
    if (resp.error == ErrorCode::NONE && resp.state != protocol::GroupState::LOADING) break;
    ASSERT_LT(Clock::now(), loadDeadline) << "the group was not served in time";
  }
  const auto start = Clock::now();
  for (auto& c : conns) {
    for (int i = 0; i < kPerConnection; ++i) ASSERT_GE(c.send(protocol::RegisterConsumerRequest{"storm", "", {}}), 0);
  }
  std::set<int64_t> generations;
  std::set<std::string> ids;
  size_t members = 0;
  for (auto& c : conns) {
    for (int i = 0; i < kPerConnection; ++i) {
      auto d = c.receive(protocol::ApiKey::RegisterConsumer, 30s);
      ASSERT_TRUE(d.ok) << c.lastError();
      const auto& r = std::get<protocol::RegisterConsumerResponse>(d.response);
      ASSERT_EQ(r.error, ErrorCode::NONE);
      generations.insert(r.generation);
      ids.insert(r.consumerId);
      members = std::max(members, r.members.size());
    }
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  std::cout << "[figure] 2,000 joins sent at once: all answered in " << took << " ms, generations "
            << generations.size() << std::endl;
  EXPECT_EQ(generations, std::set<int64_t>{1}) << "one generation move for the whole storm";
  EXPECT_EQ(ids.size(), size_t{kConnections * kPerConnection});
  EXPECT_EQ(members, size_t{kConnections * kPerConnection});
  auto group = zk_->getSync(root_ + "/groups/storm");
  ASSERT_EQ(group.error, zk::Error::Ok);
  EXPECT_EQ(group.stat.version, 1);
  auto znodes = zk_->getChildrenSync(root_ + "/groups/storm/members");
  ASSERT_EQ(znodes.error, zk::Error::Ok);
  EXPECT_EQ(znodes.children.size(), size_t{kConnections * kPerConnection});
}

}  // namespace
}  // namespace groupcoord::testing
