// The coordinator on the in-memory ZooKeeper, with a hand-driven clock:
// membership, generations, eviction, controllers and ZooKeeper trouble,
// without sockets and without sleeping.

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <set>

#include <spdlog/spdlog.h>

#include "tests/adapter/CoordinatorFixture.h"

namespace groupcoord::adapter {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;

using testsupport::kRoot;
using testsupport::Node;

class CoordinatorTest : public testsupport::CoordinatorFixture {};

TEST_F(CoordinatorTest, RegistersItselfAsAnEphemeralServerZnode) {
  auto& n = addServer(4);
  auto s = ensemble_.stat("/gc/servers/4");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->ephemeralOwner, n.zk->sessionId());
  EXPECT_NE(ensemble_.data("/gc/servers/4")->find("\"port\":7404"), std::string::npos);
}

TEST_F(CoordinatorTest, CreateGroupAnswersWithItsController) {
  auto& n = addServer(1);
  auto r = create(*n.coordinator, "orders", 2000, false, {"clicks"});
  EXPECT_EQ(r.error, ErrorCode::NONE);
  EXPECT_EQ(r.controller, (protocol::Broker{1, "127.0.0.1", 7401}));
  EXPECT_TRUE(ensemble_.exists("/gc/groups/orders/members"));
  EXPECT_TRUE(ensemble_.exists("/gc/groups/orders/offsets"));
  EXPECT_EQ(zkVersion("orders"), 0);
  EXPECT_EQ(ensemble_.stat("/gc/groups/orders/controller")->ephemeralOwner, n.zk->sessionId());
}

TEST_F(CoordinatorTest, CreateGroupIsIdempotentAndRefusesOtherSettings) {
  auto& n = addServer(1);
  EXPECT_EQ(create(*n.coordinator, "g", 2000, false, {"a", "b"}).error, ErrorCode::NONE);
  EXPECT_EQ(create(*n.coordinator, "g", 2000, false, {"b", "a"}).error, ErrorCode::NONE);
  EXPECT_EQ(create(*n.coordinator, "g", 3000, false, {"a", "b"}).error, ErrorCode::GROUP_ALREADY_EXISTS);
  EXPECT_EQ(create(*n.coordinator, "g", 2000, true, {"a", "b"}).error, ErrorCode::GROUP_ALREADY_EXISTS);
}

TEST_F(CoordinatorTest, SessionTimeoutOutsideTheBoundsIsRefused) {
  auto& n = addServer(1);
  EXPECT_EQ(create(*n.coordinator, "g", 999).error, ErrorCode::INVALID_SESSION_TIMEOUT);
  EXPECT_EQ(create(*n.coordinator, "g", 300001).error, ErrorCode::INVALID_SESSION_TIMEOUT);
  EXPECT_FALSE(ensemble_.exists("/gc/groups/g"));
}

TEST_F(CoordinatorTest, JoinsMoveTheGenerationAndListMembersSorted) {
  auto& n = addServer(1);
  create(*n.coordinator, "g");
  auto a = join(*n.coordinator, "g");
  ASSERT_EQ(a.error, ErrorCode::NONE);
  EXPECT_EQ(a.generation, 1);
  EXPECT_EQ(a.consumerId.rfind("svc-", 0), 0u) << a.consumerId;
  EXPECT_TRUE(protocol::isValidName(a.consumerId));
  auto b = join(*n.coordinator, "g", "b-member");
  EXPECT_EQ(b.generation, 2);
  EXPECT_EQ(b.members.size(), 2u);
  EXPECT_TRUE(std::is_sorted(b.members.begin(), b.members.end()));
  EXPECT_EQ(zkVersion("g"), 2);
  EXPECT_EQ(ensemble_.stat("/gc/groups/g/members/b-member")->ephemeralOwner, n.zk->sessionId());
}

TEST_F(CoordinatorTest, AJoinStormIsBatchedIntoFewTransactions) {
  auto& n = addServer(1, 10ms);
  create(*n.coordinator, "g");
  n.zk->resetCounters();
  // 200 registrations arrive before any transaction completes.
  std::vector<std::future<protocol::Response>> answers;
  for (int i = 0; i < 200; ++i) {
    auto p = std::make_shared<std::promise<protocol::Response>>();
    answers.push_back(p->get_future());
    protocol::RequestHeader h;
    h.apiKey = protocol::ApiKey::RegisterConsumer;
    n.coordinator->handle(h, protocol::RegisterConsumerRequest{"g", "m" + std::to_string(i), {}},
                          [p](protocol::Response r) { p->set_value(std::move(r)); });
  }
  settle();
  advance(10ms);
  int64_t last = 0;
  for (auto& f : answers) {
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
    auto r = std::get<protocol::RegisterConsumerResponse>(f.get());
    ASSERT_EQ(r.error, ErrorCode::NONE);
    last = std::max(last, r.generation);
  }
  auto c = n.zk->counters();
  EXPECT_LE(c.multis, 2u) << "200 joins should need one transaction, two if the first left alone";
  EXPECT_EQ(zkVersion("g"), last);
  EXPECT_EQ(ensemble_.children("/gc/groups/g/members").size(), 200u);
}

TEST_F(CoordinatorTest, HeartbeatsAreAnsweredFromMemoryWithoutZooKeeper) {
  auto& n = addServer(1);
  create(*n.coordinator, "g");
  auto a = join(*n.coordinator, "g");
  n.zk->resetCounters();
  for (int i = 0; i < 500; ++i) {
    auto hb = heartbeat(*n.coordinator, "g", a.consumerId, a.generation);
    ASSERT_EQ(hb.error, ErrorCode::NONE);
    ASSERT_EQ(hb.generation, a.generation);
  }
  EXPECT_EQ(n.zk->counters().calls, 0u);
}

TEST_F(CoordinatorTest, HeartbeatAnswersTellWhatToDo) {
  auto& n = addServer(1);
  create(*n.coordinator, "g");
  auto a = join(*n.coordinator, "g");
  EXPECT_EQ(heartbeat(*n.coordinator, "g", a.consumerId, a.generation - 1).error, ErrorCode::REBALANCE_NEEDED);
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "stranger", a.generation).error, ErrorCode::UNKNOWN_CONSUMER);
  EXPECT_EQ(heartbeat(*n.coordinator, "nope", a.consumerId, a.generation).error, ErrorCode::UNKNOWN_GROUP);
}

// The server's fast path keeps the group and member it found in the
// connection's slot: what it answers through one slot follows every join,
// leave, group that goes and group that comes back under the same name.
TEST_F(CoordinatorTest, HeartbeatsThroughOneConnectionsSlotFollowEveryChange) {
  auto& n = addServer(1);
  Coordinator& c = *n.coordinator;
  protocol::ConnectionSlot slot;
  auto now = [&](const std::string& group, const std::string& id, int64_t gen,
                 std::chrono::steady_clock::time_point readAt = {}) {
    protocol::HeartbeatResponse out;
    EXPECT_TRUE(c.heartbeatNow(protocol::Caller{"127.0.0.1", 4000, ""}, slot,
                               protocol::HeartbeatView{0, 1, group, id, gen}, out, readAt, nullptr));
    return out;
  };
  create(c, "g", 2000, true);
  auto a = join(c, "g", "a");
  auto b = join(c, "g", "b");
  EXPECT_EQ(now("g", "a", b.generation).error, ErrorCode::NONE);
  EXPECT_EQ(now("g", "a", b.generation).error, ErrorCode::NONE);
  EXPECT_EQ(now("g", "b", b.generation).error, ErrorCode::NONE) << "another member through the same slot";
  EXPECT_EQ(now("g", "stranger", b.generation).error, ErrorCode::UNKNOWN_CONSUMER);
  ASSERT_EQ(leave(c, "g", "a"), ErrorCode::NONE);
  EXPECT_EQ(now("g", "a", b.generation).error, ErrorCode::UNKNOWN_CONSUMER) << "left: not found where it was";
  EXPECT_EQ(now("g", "b", b.generation).error, ErrorCode::REBALANCE_NEEDED);
  {
    // A sampled heartbeat is told where its group stands: "a" left and "b"
    // has not registered at the new generation, so "g" is moving. A group
    // this coordinator does not serve leaves it unsaid.
    using Motion = protocol::Handler::GroupMotion;
    protocol::HeartbeatResponse out;
    std::optional<Motion> motion;
    EXPECT_TRUE(c.heartbeatNow(protocol::Caller{"127.0.0.1", 4000, ""}, slot,
                               protocol::HeartbeatView{0, 1, "g", "b", b.generation}, out, {}, &motion));
    EXPECT_EQ(motion, std::optional<Motion>(Motion::Moving));
    motion.reset();
    EXPECT_TRUE(c.heartbeatNow(protocol::Caller{"127.0.0.1", 4000, ""}, slot,
                               protocol::HeartbeatView{0, 1, "nowhere", "b", 1}, out, {}, &motion));
    EXPECT_EQ(out.error, ErrorCode::UNKNOWN_GROUP);
    EXPECT_FALSE(motion.has_value());
  }
  auto b2 = join(c, "g", "b");
  auto d = join(c, "g", "d");
  EXPECT_EQ(now("g", "d", d.generation).error, ErrorCode::NONE);
  // Another group through the same slot, then back.
  create(c, "h");
  auto h = join(c, "h", "x");
  EXPECT_EQ(now("h", "x", h.generation).error, ErrorCode::NONE);
  EXPECT_EQ(now("h", "d", h.generation).error, ErrorCode::UNKNOWN_CONSUMER) << "d is g's, not h's";
  EXPECT_EQ(now("g", "d", d.generation).error, ErrorCode::NONE);
  // The ephemeral group goes with its last members...
  ASSERT_EQ(leave(c, "g", "b"), ErrorCode::NONE);
  ASSERT_EQ(leave(c, "g", "d"), ErrorCode::NONE);
  settle();
  EXPECT_EQ(now("g", "d", d.generation).error, ErrorCode::UNKNOWN_GROUP);
  // ... and comes back under the same name, a new group with a new member.
  create(c, "g", 2000, true);
  auto e = join(c, "g", "d");
  EXPECT_EQ(now("g", "d", e.generation).error, ErrorCode::NONE);
  // The coordinator's clock is not the steady clock here: the server's
  // reading is not its time. Were it taken, "d" would be seen an hour ahead
  // and outlive its session.
  now("g", "d", e.generation, std::chrono::steady_clock::now() + std::chrono::hours(1));
  advance(2100ms);
  EXPECT_EQ(now("g", "d", e.generation).error, ErrorCode::UNKNOWN_GROUP) << "evicted on the coordinator's clock";
  (void)a;
  (void)b2;
}

TEST_F(CoordinatorTest, ASilentMemberIsEvictedAndTheOthersRebalance) {
  auto& n = addServer(1);
  create(*n.coordinator, "g", 2000);
  auto a = join(*n.coordinator, "g", "a");
  auto b = join(*n.coordinator, "g", "b");
  auto c = join(*n.coordinator, "g", "c");
  ASSERT_EQ(c.generation, 3);
  // a and b heartbeat every 500 ms; c is silent.
  for (int i = 0; i < 4; ++i) {
    advance(500ms);
    heartbeat(*n.coordinator, "g", "a", c.generation);
    heartbeat(*n.coordinator, "g", "b", c.generation);
  }
  EXPECT_EQ(n.coordinator->generationOf("g"), 3) << "2000 ms of silence is not yet past the timeout";
  advance(20ms);
  EXPECT_FALSE(ensemble_.exists("/gc/groups/g/members/c"));
  EXPECT_EQ(zkVersion("g"), 4);
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "a", 3).error, ErrorCode::REBALANCE_NEEDED);
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "c", 3).error, ErrorCode::UNKNOWN_CONSUMER);
  auto again = join(*n.coordinator, "g", "a");
  EXPECT_EQ(again.generation, 4);
  EXPECT_EQ(again.members, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "a", 4).error, ErrorCode::NONE);
  (void)a;
  (void)b;
}

TEST_F(CoordinatorTest, RegisteringAgainUnderTheSameIdKeepsTheGeneration) {
  auto& n = addServer(1);
  create(*n.coordinator, "g");
  auto a = join(*n.coordinator, "g", "a");
  join(*n.coordinator, "g", "b");
  n.zk->resetCounters();
  auto again = join(*n.coordinator, "g", "a");
  EXPECT_EQ(again.error, ErrorCode::NONE);
  EXPECT_EQ(again.generation, 2);
  EXPECT_EQ(n.zk->counters().writes, 0u);
  (void)a;
}

TEST_F(CoordinatorTest, LeaveReleasesAtOnce) {
  auto& n = addServer(1);
  create(*n.coordinator, "g");
  join(*n.coordinator, "g", "a");
  join(*n.coordinator, "g", "b");
  EXPECT_EQ(leave(*n.coordinator, "g", "a"), ErrorCode::NONE);
  EXPECT_FALSE(ensemble_.exists("/gc/groups/g/members/a"));
  EXPECT_EQ(zkVersion("g"), 3);
  EXPECT_EQ(leave(*n.coordinator, "g", "a"), ErrorCode::UNKNOWN_CONSUMER);
}

TEST_F(CoordinatorTest, AnEphemeralGroupVanishesWithItsLastMember) {
  auto& n = addServer(1);
  create(*n.coordinator, "e", 2000, true);
  join(*n.coordinator, "e", "a");
  join(*n.coordinator, "e", "b");
  EXPECT_EQ(leave(*n.coordinator, "e", "a"), ErrorCode::NONE);
  EXPECT_TRUE(ensemble_.exists("/gc/groups/e"));
  EXPECT_EQ(leave(*n.coordinator, "e", "b"), ErrorCode::NONE);
  advance(0ms);
  settle();
  EXPECT_FALSE(ensemble_.exists("/gc/groups/e"));
  EXPECT_EQ(describe(*n.coordinator, "e").error, ErrorCode::UNKNOWN_GROUP);
}

TEST_F(CoordinatorTest, AnEphemeralGroupNobodyJoinsVanishesAfterItsTimeout) {
  auto& n = addServer(1);
  create(*n.coordinator, "e", 2000, true);
  advance(1900ms);
  EXPECT_TRUE(ensemble_.exists("/gc/groups/e"));
  advance(200ms);
  EXPECT_FALSE(ensemble_.exists("/gc/groups/e"));
}

TEST_F(CoordinatorTest, AnEphemeralGroupGoesWhenItsLastMemberIsEvicted) {
  auto& n = addServer(1);
  create(*n.coordinator, "e", 1000, true);
  join(*n.coordinator, "e", "a");
  advance(1100ms);
  advance(20ms);
  EXPECT_FALSE(ensemble_.exists("/gc/groups/e"));
}

TEST_F(CoordinatorTest, DeleteGroupRefusesWhileMembersRemainThenRemovesOffsetsToo) {
  auto& n = addServer(1);
  create(*n.coordinator, "g");
  join(*n.coordinator, "g", "a");
  auto del = [&] {
    return std::get<protocol::DeleteGroupResponse>(call(*n.coordinator, protocol::DeleteGroupRequest{"g"})).error;
  };
  EXPECT_EQ(del(), ErrorCode::GROUP_NOT_EMPTY);
  // Committed offsets as the partitions issue will write them.
  zk::FakeClient writer(ensemble_);
  ASSERT_EQ(writer.createSync("/gc/groups/g/offsets/clicks", "", zk::CreateMode::Persistent).error, zk::Error::Ok);
  ASSERT_EQ(writer.createSync("/gc/groups/g/offsets/clicks/0", "12", zk::CreateMode::Persistent).error, zk::Error::Ok);
  EXPECT_EQ(leave(*n.coordinator, "g", "a"), ErrorCode::NONE);
  EXPECT_EQ(del(), ErrorCode::NONE);
  EXPECT_FALSE(ensemble_.exists("/gc/groups/g"));
  EXPECT_EQ(del(), ErrorCode::UNKNOWN_GROUP);
}

TEST_F(CoordinatorTest, HostileNamesNeverReachZooKeeper) {
  auto& n = addServer(1);
  n.zk->resetCounters();
  std::vector<std::string> hostile{"../x", "a/b", std::string("a\0b", 3), "", ".", "..", std::string(250, 'a')};
  for (const std::string& bad : hostile) {
    EXPECT_EQ(create(*n.coordinator, bad).error, ErrorCode::INVALID_GROUP_NAME) << bad;
    auto r = std::get<protocol::RegisterConsumerResponse>(
        call(*n.coordinator, protocol::RegisterConsumerRequest{"g", bad.empty() ? "x/y" : bad, {}}));
    EXPECT_EQ(r.error, ErrorCode::INVALID_CONSUMER_ID) << bad;
  }
  auto topics = create(*n.coordinator, "g", 2000, false, {"ok", "no/pe"});
  EXPECT_EQ(topics.error, ErrorCode::INVALID_GROUP_NAME);
  EXPECT_EQ(n.zk->counters().calls, 0u);
}

TEST_F(CoordinatorTest, ListGroupsNamesTheControllerFromAnyServer) {
  auto& a = addServer(1);
  auto& b = addServer(2);
  auto r = create(*a.coordinator, "g");
  ASSERT_FALSE(r.controller.isNone());
  auto& controller = r.controller.brokerId == 1 ? a : b;
  auto& other = r.controller.brokerId == 1 ? b : a;
  join(*controller.coordinator, "g", "m");
  for (auto* n : {&a, &b}) {
    auto info = describe(*n->coordinator, "g");
    EXPECT_EQ(info.error, ErrorCode::NONE);
    EXPECT_EQ(info.controller, r.controller);
    EXPECT_EQ(info.members, (std::vector<std::string>{"m"}));
    EXPECT_EQ(info.generation, 1);
    EXPECT_EQ(info.sessionTimeoutMs, 2000);
  }
  EXPECT_EQ(heartbeat(*other.coordinator, "g", "m", 1).error, ErrorCode::NOT_CONTROLLER);
  auto reg = join(*other.coordinator, "g", "m");
  EXPECT_EQ(reg.error, ErrorCode::NOT_CONTROLLER);
  auto all = std::get<protocol::ListGroupsResponse>(call(*b.coordinator, protocol::ListGroupsRequest{}));
  ASSERT_EQ(all.groups.size(), 1u);
  auto missing = describe(*b.coordinator, "absent");
  EXPECT_EQ(missing.error, ErrorCode::UNKNOWN_GROUP);
  EXPECT_TRUE(missing.controller.isNone());
}

TEST_F(CoordinatorTest, GroupsSpreadOverServersWithExactlyOneControllerEach) {
  addServer(1);
  addServer(2);
  addServer(3);
  for (int i = 0; i < 300; ++i) create(*nodes_[i % 3]->coordinator, "g" + std::to_string(i));
  settle();
  std::set<std::string> seen;
  for (auto& n : nodes_) {
    auto mine = n->coordinator->controlledGroups();
    EXPECT_LE(mine.size(), 150u);
    EXPECT_GE(mine.size(), 50u);
    for (auto& g : mine) EXPECT_TRUE(seen.insert(g).second) << g << " has two controllers";
  }
  EXPECT_EQ(seen.size(), 300u);
}

TEST_F(CoordinatorTest, ASurvivorClaimsTheGroupsOfAServerWhoseSessionEnded) {
  auto& a = addServer(1);
  auto& b = addServer(2);
  for (int i = 0; i < 40; ++i) create(*a.coordinator, "g" + std::to_string(i));
  settle();
  auto ofB = b.coordinator->controlledGroups();
  ASSERT_FALSE(ofB.empty());
  join(*b.coordinator, ofB[0], "m");
  int64_t before = zkVersion(ofB[0]);
  b.coordinator->stop();
  b.zk->expire();  // as if the server died: its ephemerals go
  settle();
  advance(20ms);
  EXPECT_EQ(a.coordinator->controlledGroups().size(), 40u);
  // Within the takeover grace the new controller tells a member it does not
  // know yet to register again (it may hold partitions), not that it is
  // unknown; it registers and the group moves on.
  EXPECT_EQ(heartbeat(*a.coordinator, ofB[0], "m", before).error, ErrorCode::REBALANCE_NEEDED);
  auto again = join(*a.coordinator, ofB[0], "m");
  EXPECT_EQ(again.error, ErrorCode::NONE);
  EXPECT_EQ(again.generation, before + 1);
  // Once the grace (one session timeout, 2000 ms) is over, a member it has
  // never seen is unknown.
  for (int i = 0; i < 5; ++i) {
    advance(500ms);
    EXPECT_EQ(heartbeat(*a.coordinator, ofB[0], "m", again.generation).error, ErrorCode::NONE);
  }
  EXPECT_EQ(heartbeat(*a.coordinator, ofB[0], "ghost", again.generation).error, ErrorCode::UNKNOWN_CONSUMER);
}

TEST_F(CoordinatorTest, WhileZooKeeperIsAwayHeartbeatsGoOnAndEvictionsWait) {
  auto& n = addServer(1);
  create(*n.coordinator, "g", 1000);
  auto a = join(*n.coordinator, "g", "a");
  join(*n.coordinator, "g", "silent");
  auto gen = join(*n.coordinator, "g", "a").generation;
  n.zk->disconnect();
  settle();
  for (int i = 0; i < 6; ++i) {
    advance(500ms);
    EXPECT_EQ(heartbeat(*n.coordinator, "g", "a", gen).error, ErrorCode::NONE);
  }
  EXPECT_EQ(n.coordinator->membersOf("g").size(), 2u) << "no eviction while disconnected";
  EXPECT_EQ(join(*n.coordinator, "g", "newcomer").error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_EQ(join(*n.coordinator, "g", "a").error, ErrorCode::NONE) << "a member re-registering needs no write";
  n.zk->reconnect();
  settle();
  advance(20ms);
  advance(20ms);
  EXPECT_EQ(n.coordinator->membersOf("g"), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(ensemble_.exists("/gc/groups/g/members/silent"));
  (void)a;
}

// DescribeServers (docs/protocol.md, "12 DescribeServers"): any server
// answers with the placement it computes and where clients reach each live
// server; without ZooKeeper it answers CONTROLLER_NOT_AVAILABLE.
TEST_F(CoordinatorTest, DescribeServersAnswersThePlacementFromAnyServer) {
  auto& a = addServer(1);
  auto& b = addServer(2);
  for (int i = 0; i < 6; ++i) create(*a.coordinator, "g" + std::to_string(i));
  settle();
  advance(20ms);
  for (auto* n : {&a, &b}) {
    auto r = std::get<protocol::DescribeServersResponse>(call(*n->coordinator, protocol::DescribeServersRequest{}));
    ASSERT_EQ(r.error, ErrorCode::NONE);
    EXPECT_EQ(r.server, n == &a ? 1 : 2);
    EXPECT_EQ(r.weighting, "members");
    EXPECT_GE(r.epsilonPermille, 0);
    EXPECT_GE(r.marginPermille, 0);
    ASSERT_EQ(r.servers.size(), 2u);
    int32_t groups = 0;
    int64_t load = 0;
    for (size_t i = 0; i < r.servers.size(); ++i) {
      const auto& s = r.servers[i];
      EXPECT_EQ(s.id, static_cast<int32_t>(i + 1));
      EXPECT_EQ(s.host, "127.0.0.1");
      EXPECT_EQ(s.port, 7400 + s.id);
      EXPECT_FALSE(s.drained);
      groups += s.groups;
      load += s.load;
    }
    EXPECT_EQ(groups, 6);
    EXPECT_EQ(load, r.total);
    EXPECT_GT(r.total, 0);
    EXPECT_GE(r.bound, (r.total + 1) / 2);
  }
  b.zk->disconnect();
  settle();
  auto refused = std::get<protocol::DescribeServersResponse>(call(*b.coordinator, protocol::DescribeServersRequest{}));
  EXPECT_EQ(refused.error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_TRUE(refused.servers.empty());
  b.zk->reconnect();
  settle();
}

// The session lease (docs/design.md): cut off from ZooKeeper, a controller
// stops answering from memory before the ensemble could expire its session
// (one session timeout after it last heard from the server), so before any
// other server could claim its groups. The fake's session is 10 s: the
// margin is 2 s and a probe goes every second.
TEST_F(CoordinatorTest, CutOffFromZooKeeperHeartbeatsStopBeforeTheSessionCouldExpire) {
  auto& n = addServer(1);
  create(*n.coordinator, "g", 3000);
  auto a = join(*n.coordinator, "g", "a");
  // Steady: ticks every 100 ms. Every ZooKeeper call happens at a tick (the
  // hand-driven clock stands still meanwhile), so the last tick that made
  // one is the latest moment the ensemble heard from this server.
  TimePoint lastHeard = time_.now();
  for (int i = 0; i < 30; ++i) {
    const uint64_t before = n.zk->counters().calls;
    advance(100ms);
    if (n.zk->counters().calls != before) lastHeard = time_.now();
    ASSERT_EQ(heartbeat(*n.coordinator, "g", "a", a.generation).error, ErrorCode::NONE);
  }
  n.zk->disconnect();
  settle();
  const TimePoint couldExpire = lastHeard + 10000ms;
  TimePoint lastNone{}, lastRegistered{};
  int none = 0, refused = 0;
  for (int i = 0; i < 150; ++i) {  // 15 s cut off
    advance(100ms);
    auto hb = heartbeat(*n.coordinator, "g", "a", a.generation);
    if (hb.error == ErrorCode::NONE) {
      lastNone = time_.now();
      ++none;
    } else {
      EXPECT_EQ(hb.error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
      EXPECT_LT(lastNone, time_.now()) << "once stopped, it does not answer NONE again while cut off";
      ++refused;
    }
    if (join(*n.coordinator, "g", "a").error == ErrorCode::NONE) lastRegistered = time_.now();
  }
  ASSERT_GT(none, 0);
  ASSERT_GT(refused, 0);
  EXPECT_LT(lastNone, couldExpire) << "a NONE after the ensemble could have expired the session";
  EXPECT_LT(lastNone, couldExpire - 2000ms) << "the margin (2 s) holds";
  EXPECT_LT(lastRegistered, couldExpire - 2000ms) << "a registration from memory is a grant: the same rule";
  // The lease ran from the last probe, at most a probe interval (1 s)
  // before the last call: a cut shorter than that changed nothing.
  EXPECT_GE(lastNone, lastHeard + 6800ms) << "answered NONE for too short a time after the cut";
  EXPECT_EQ(n.coordinator->membersOf("g"), (std::vector<std::string>{"a"})) << "nothing was evicted meanwhile";
  // Back within the session: the probe renews the lease. The member, silent
  // for longer than its 3 s session as far as the group knows, is evicted
  // (it has fenced itself meanwhile) and registers again.
  n.zk->reconnect();
  settle();
  advance(10ms);
  EXPECT_TRUE(n.coordinator->answersFromMemory(time_.now()));
  auto again = join(*n.coordinator, "g", "a");
  ASSERT_EQ(again.error, ErrorCode::NONE);
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "a", again.generation).error, ErrorCode::NONE);
}

// Heard, not answered (docs/design.md): while the lease is out, heartbeats
// are refused, but the members sending them are alive. When ZooKeeper
// answers again in the same session, a member that kept heartbeating is
// not evicted for a silence that was the server's; one that fell silent is.
TEST_F(CoordinatorTest, AMemberHeardWhileTheLeaseWasOutIsNotEvictedWhenZooKeeperAnswersAgain) {
  auto& n = addServer(1);
  create(*n.coordinator, "g", 3000);
  auto a = join(*n.coordinator, "g", "a");
  auto b = join(*n.coordinator, "g", "b");
  ASSERT_EQ(b.error, ErrorCode::NONE);
  a = join(*n.coordinator, "g", "a");
  for (int i = 0; i < 10; ++i) {
    advance(100ms);
    ASSERT_EQ(heartbeat(*n.coordinator, "g", "a", a.generation).error, ErrorCode::NONE);
    ASSERT_EQ(heartbeat(*n.coordinator, "g", "b", b.generation).error, ErrorCode::NONE);
  }
  n.zk->disconnect();
  settle();
  int refused = 0;
  for (int i = 0; i < 90; ++i) {  // 9 s cut off: past the lease, and three times the members' session
    advance(100ms);
    if (heartbeat(*n.coordinator, "g", "a", a.generation).error == ErrorCode::CONTROLLER_NOT_AVAILABLE) ++refused;
  }
  ASSERT_GT(refused, 0) << "the lease ran out while cut off";
  n.zk->reconnect();
  settle();
  for (int i = 0; i < 10; ++i) {
    advance(100ms);
    heartbeat(*n.coordinator, "g", "a", a.generation);
  }
  EXPECT_TRUE(n.coordinator->answersFromMemory(time_.now()));
  EXPECT_EQ(n.coordinator->membersOf("g"), (std::vector<std::string>{"a"}))
      << "a, heard all along, stays; b, silent, is evicted";
  EXPECT_FALSE(ensemble_.exists("/gc/groups/g/members/b"));
  EXPECT_TRUE(ensemble_.exists("/gc/groups/g/members/a"));
}

TEST_F(CoordinatorTest, AfterItsSessionExpiresTheServerStartsOverAndMembersRejoin) {
  auto& n = addServer(1);
  create(*n.coordinator, "g");
  auto a = join(*n.coordinator, "g", "a");
  n.zk->expire();
  settle();
  EXPECT_TRUE(n.coordinator->controlledGroups().empty());
  EXPECT_NE(heartbeat(*n.coordinator, "g", "a", a.generation).error, ErrorCode::NONE);
  advance(20ms);  // the tick renews the session
  advance(20ms);
  EXPECT_TRUE(n.coordinator->registered());
  EXPECT_EQ(n.coordinator->controlledGroups(), (std::vector<std::string>{"g"}));
  // Its members' znodes went with the old session; within the grace a
  // member is told to register again.
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "a", a.generation).error, ErrorCode::REBALANCE_NEEDED);
  auto again = join(*n.coordinator, "g", "a");
  EXPECT_EQ(again.error, ErrorCode::NONE);
  EXPECT_EQ(again.generation, a.generation + 1);
  EXPECT_EQ(ensemble_.stat("/gc/groups/g/members/a")->ephemeralOwner, n.zk->sessionId());
}

TEST_F(CoordinatorTest, ALostTransactionReplyIsReconciledFromZooKeeper) {
  auto& n = addServer(1);
  create(*n.coordinator, "g");
  join(*n.coordinator, "g", "a");
  // The join's transaction commits but its answer is lost.
  n.zk->failNext(zk::Error::ConnectionLoss, 1, /*applied=*/true);
  EXPECT_EQ(join(*n.coordinator, "g", "b").error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  advance(20ms);
  EXPECT_EQ(n.coordinator->membersOf("g"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(n.coordinator->generationOf("g"), zkVersion("g"));
  auto again = join(*n.coordinator, "g", "b");
  EXPECT_EQ(again.error, ErrorCode::NONE);
  EXPECT_EQ(again.generation, zkVersion("g")) << "b is already a member: no new generation";
}

// ---- Partitions ----

class PartitionsTest : public testsupport::CoordinatorFixture {};

TEST_F(PartitionsTest, ANewPartitionGoesToItsNewOwnerOnlyAfterTheOldOneReleasedIt) {
  makeTopic("t", 4);
  auto& n = addServer(1);
  create(*n.coordinator, "g", 2000, false, {"t"});
  auto a = join(*n.coordinator, "g", "a");
  ASSERT_EQ(a.partitions.size(), 4u);
  for (auto& p : a.partitions) EXPECT_EQ(p.offset, -1);

  auto b = join(*n.coordinator, "g", "b");
  EXPECT_TRUE(b.partitions.empty()) << "a still holds every partition";
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "b", b.generation).error, ErrorCode::NONE);
  // a learns of the new generation and registers again, still holding all four.
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "a", a.generation).error, ErrorCode::REBALANCE_NEEDED);
  auto a2 = joinOwning(*n.coordinator, "g", "a", parts(a));
  ASSERT_EQ(a2.partitions.size(), 2u);
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "b", b.generation).error, ErrorCode::NONE) << "nothing released yet";
  // a heartbeats at the new generation: it has let go of the other two.
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "a", a2.generation).error, ErrorCode::NONE);
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "b", b.generation).error, ErrorCode::REBALANCE_NEEDED);
  auto b2 = joinOwning(*n.coordinator, "g", "b", {});
  ASSERT_EQ(b2.partitions.size(), 2u);
  std::set<protocol::TopicPartition> all;
  for (auto& p : parts(a2)) all.insert(p);
  for (auto& p : parts(b2)) EXPECT_TRUE(all.insert(p).second) << "granted twice";
  EXPECT_EQ(all.size(), 4u);
}

TEST_F(PartitionsTest, CommitsAreAcceptedOnlyFromTheOwnerAndFetchedFromAnyServer) {
  makeTopic("t", 2);
  auto& a = addServer(1);
  auto& b = addServer(2);
  auto created = create(*a.coordinator, "g", 2000, false, {"t"});
  auto& ctl = created.controller.brokerId == 1 ? a : b;
  auto& other = created.controller.brokerId == 1 ? b : a;
  auto m = join(*ctl.coordinator, "g", "m");
  ASSERT_EQ(m.partitions.size(), 2u);
  auto r = commit(*ctl.coordinator, "g", "m", m.generation,
                  {{"t", 0, 10}, {"t", 1, -5}, {"t", 7, 1}, {"nope", 0, 1}});
  ASSERT_EQ(r.error, ErrorCode::NONE);
  ASSERT_EQ(r.results.size(), 4u);
  EXPECT_EQ(r.results[0].error, ErrorCode::NONE);
  EXPECT_EQ(r.results[1].error, ErrorCode::INVALID_OFFSET);
  EXPECT_EQ(r.results[2].error, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
  EXPECT_EQ(r.results[3].error, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/t/0"), "10");

  auto n2 = join(*ctl.coordinator, "g", "n");
  auto fenced = commit(*ctl.coordinator, "g", "n", n2.generation, {{"t", 0, 99}});
  EXPECT_EQ(fenced.results.at(0).error, ErrorCode::NOT_OWNER);
  EXPECT_EQ(commit(*other.coordinator, "g", "m", m.generation, {{"t", 0, 11}}).error, ErrorCode::NOT_CONTROLLER);

  auto f = std::get<protocol::FetchOffsetsResponse>(call(*other.coordinator, protocol::FetchOffsetsRequest{"g", {}}));
  EXPECT_EQ(f.error, ErrorCode::NONE);
  EXPECT_EQ(f.offsets, (std::vector<protocol::PartitionOffset>{{"t", 0, 10}}));
  auto missing = std::get<protocol::FetchOffsetsResponse>(call(*other.coordinator, protocol::FetchOffsetsRequest{"x", {}}));
  EXPECT_EQ(missing.error, ErrorCode::UNKNOWN_GROUP);
  // The committed offset comes with the partition on the next registration.
  auto again = join(*ctl.coordinator, "g", "m");
  for (auto& p : again.partitions) {
    if (p.topic == "t" && p.partition == 0) {
      EXPECT_EQ(p.offset, 10);
    }
  }
}

TEST_F(PartitionsTest, RewindMovesTheGenerationAndFencesOlderCommits) {
  makeTopic("t", 1);
  auto& n = addServer(1);
  create(*n.coordinator, "g", 2000, false, {"t"});
  auto m = join(*n.coordinator, "g", "m");
  ASSERT_EQ(commit(*n.coordinator, "g", "m", m.generation, {{"t", 0, 500}}).results.at(0).error, ErrorCode::NONE);
  auto rw = std::get<protocol::RewindConsumerResponse>(
      call(*n.coordinator, protocol::RewindConsumerRequest{"g", {{"t", 0, 100}, {"t", 3, 1}}}));
  ASSERT_EQ(rw.error, ErrorCode::NONE);
  EXPECT_EQ(rw.results.at(0).error, ErrorCode::NONE);
  EXPECT_EQ(rw.results.at(1).error, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/t/0"), "100");
  EXPECT_EQ(zkVersion("g"), m.generation + 1);
  EXPECT_EQ(commit(*n.coordinator, "g", "m", m.generation, {{"t", 0, 501}}).error, ErrorCode::REBALANCE_NEEDED);
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "m", m.generation).error, ErrorCode::REBALANCE_NEEDED);
  auto again = joinOwning(*n.coordinator, "g", "m", parts(m));
  ASSERT_EQ(again.partitions.size(), 1u);
  EXPECT_EQ(again.partitions[0].offset, 100);
}

TEST_F(PartitionsTest, ATopicThatAppearsOrGrowsRebalancesItsGroups) {
  auto& n = addServer(1);
  create(*n.coordinator, "g", 2000, false, {"late"});
  auto m = join(*n.coordinator, "g", "m");
  EXPECT_TRUE(m.partitions.empty());
  makeTopic("late", 2);
  EXPECT_EQ(zkVersion("g"), m.generation + 1);
  EXPECT_EQ(heartbeat(*n.coordinator, "g", "m", m.generation).error, ErrorCode::REBALANCE_NEEDED);
  auto m2 = join(*n.coordinator, "g", "m");
  EXPECT_EQ(m2.partitions.size(), 2u);
  makeTopic("late", 3);
  auto m3 = join(*n.coordinator, "g", "m");
  EXPECT_EQ(m3.generation, m2.generation + 1);
  EXPECT_EQ(m3.partitions.size(), 3u);
}

TEST_F(PartitionsTest, ANewControllerWaitsASessionTimeoutForPartitionsNobodyReported) {
  makeTopic("t", 2);
  auto& a = addServer(1);
  auto& b = addServer(2);
  auto created = create(*a.coordinator, "g", 2000, false, {"t"});
  auto& first = created.controller.brokerId == 1 ? a : b;
  auto& second = created.controller.brokerId == 1 ? b : a;
  auto x = join(*first.coordinator, "g", "x");
  auto y = join(*first.coordinator, "g", "y");
  auto x2 = joinOwning(*first.coordinator, "g", "x", parts(x));
  heartbeat(*first.coordinator, "g", "x", x2.generation);
  auto y2 = joinOwning(*first.coordinator, "g", "y", {});
  ASSERT_EQ(x2.partitions.size(), 1u);
  ASSERT_EQ(y2.partitions.size(), 1u);
  // The controller dies; x comes to the survivor first, reporting what it holds.
  first.coordinator->stop();
  first.zk->expire();
  settle();
  advance(10ms);
  ASSERT_EQ(second.coordinator->controlledGroups(), (std::vector<std::string>{"g"}));
  auto x3 = joinOwning(*second.coordinator, "g", "x", parts(x2));
  ASSERT_EQ(x3.error, ErrorCode::NONE);
  // Alone in the group its target is both partitions, but y's was reported
  // by nobody: it is not granted before one session timeout.
  EXPECT_EQ(parts(x3), parts(x2));
  advance(1000ms);
  EXPECT_EQ(heartbeat(*second.coordinator, "g", "x", x3.generation).error, ErrorCode::NONE);
  advance(1100ms);
  EXPECT_EQ(heartbeat(*second.coordinator, "g", "x", x3.generation).error, ErrorCode::REBALANCE_NEEDED);
  auto x4 = joinOwning(*second.coordinator, "g", "x", parts(x3));
  EXPECT_EQ(x4.partitions.size(), 2u);
}

}  // namespace
}  // namespace groupcoord::adapter
