// One controlled group driven alone on the in-memory ZooKeeper, with a
// hand-built GroupContext and a hand-driven clock: loading, registration,
// heartbeats, eviction, drop, and a group deleted behind its back.
//
// Every call into the controller from the test thread is made while the
// fake's completion thread is held (CompletionGate): the answers to what the
// call issues are then delivered after it returns, as with a real ensemble's
// latency. (AListingAnsweredBeforeReleaseDoesNotDeadlockDeleteGroup below
// covers the other order: answers that come before the call returns.)

#include <algorithm>

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "adapter/GroupController.h"
#include "tests/adapter/FakeZkTestSupport.h"

namespace groupcoord::adapter {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;
using testsupport::Answer;
using testsupport::CompletionGate;

constexpr const char* kRoot = "/gc";
constexpr const char* kGroup = "g";

struct Vanished {
  std::string group;
  ErrorCode answer;
  std::string why;
};

class GroupControllerTest : public ::testing::Test {
 protected:
  GroupControllerTest()
      : admin_(ensemble_),
        zk_(std::make_unique<zk::FakeClient>(ensemble_, zk::FakeClientOptions{10000ms, true, "controller"})),
        topics_(*zk_, "/brokers/topics", epoch_, [](const std::string&) {}),
        offsets_(*zk_, layout_),
        ctx_{1, *zk_,
             layout_,
             GroupConfig{Millis(0), 1000},
             time_,
             epoch_,
             connected_,
             topics_,
             offsets_,
             [this](const std::string& g, ErrorCode answer, const char* why) {
               std::lock_guard<std::mutex> lock(mu_);
               vanished_.push_back({g, answer, why});
             },
             [this](const std::optional<std::string>&) { return "member-" + std::to_string(++nextMember_); }} {
    testsupport::quietLogs();
    EXPECT_EQ(admin_.ensurePathSync(layout_.groupsPath()), zk::Error::Ok);
  }

  ~GroupControllerTest() override {
    // The session goes first: its last answers still reach the controller.
    zk_->close();
    settle();
    controller_.reset();
  }

  // The group's znodes as CreateGroup writes them, and the controller znode
  // as the claim writes it (in the controller's session).
  // A Kafka-layout topic under /brokers/topics, as a broker writes it.
  void createTopic(const std::string& topic, int32_t partitions) {
    ASSERT_EQ(admin_.ensurePathSync("/brokers/topics"), zk::Error::Ok);
    ASSERT_EQ(admin_.createSync("/brokers/topics/" + topic, layout::encodeTopic(partitions), zk::CreateMode::Persistent)
                  .error,
              zk::Error::Ok);
  }

  void createGroup(int64_t sessionTimeoutMs = 2000, std::vector<std::string> topics = {},
                   protocol::AssignmentMode mode = protocol::AssignmentMode::SERVER) {
    layout::GroupSettings s;
    s.sessionTimeoutMs = sessionTimeoutMs;
    s.topics = std::move(topics);
    s.mode = mode;
    auto r = admin_.multiSync({zk::makeCreate(layout_.groupPath(kGroup), layout::encodeSettings(s)),
                               zk::makeCreate(layout_.membersPath(kGroup), ""),
                               zk::makeCreate(layout_.offsetsPath(kGroup), "")});
    ASSERT_EQ(r.error, zk::Error::Ok);
    ASSERT_EQ(zk_->createSync(layout_.controllerPath(kGroup), "1", zk::CreateMode::Ephemeral).error, zk::Error::Ok);
    controller_ = std::make_shared<GroupController>(ctx_, kGroup);
  }
  // Deletes the group's subtree with another session.
  void deleteBehindItsBack() {
    for (auto& m : ensemble_.children(layout_.membersPath(kGroup)))
      ASSERT_EQ(admin_.removeSync(layout_.memberPath(kGroup, m)), zk::Error::Ok);
    ASSERT_EQ(admin_.removeSync(layout_.membersPath(kGroup)), zk::Error::Ok);
    ASSERT_EQ(admin_.removeSync(layout_.offsetsPath(kGroup)), zk::Error::Ok);
    ASSERT_EQ(admin_.removeSync(layout_.controllerPath(kGroup)), zk::Error::Ok);
    const zk::Error history = admin_.removeSync(layout_.historyPath(kGroup));  // there once a write was made
    ASSERT_TRUE(history == zk::Error::Ok || history == zk::Error::NoNode);
    ASSERT_EQ(admin_.removeSync(layout_.groupPath(kGroup)), zk::Error::Ok);
  }

  void settle() { testsupport::settle(ensemble_); }

  // Runs f with the completion thread held, then lets everything run out.
  template <class F>
  void drive(F f) {
    {
      CompletionGate hold(*zk_);
      f();
    }
    settle();
  }
  void load() {
    drive([&] { controller_->load(); });
  }
  void tickAfter(std::chrono::milliseconds d) {
    time_.advance(d);
    drive([&] { controller_->tick(time_.now()); });
  }
  protocol::RegisterConsumerResponse join(const std::string& id = "") {
    Answer<protocol::Response> a;
    drive([&] { controller_->registerMember(header(), protocol::RegisterConsumerRequest{kGroup, id, {}}, a.callback()); });
    EXPECT_TRUE(a.ready()) << "no answer to the registration of '" << id << "'";
    if (!a.ready()) return {};
    return std::get<protocol::RegisterConsumerResponse>(a.get());
  }
  ErrorCode rejoin(const std::string& id) {
    Answer<protocol::Response> a;
    drive([&] { controller_->registerMember(header(), protocol::RegisterConsumerRequest{kGroup, id, {}}, a.callback()); });
    if (!a.ready()) return ErrorCode::UNKNOWN_SERVER_ERROR;
    return std::get<protocol::RegisterConsumerResponse>(a.get()).error;
  }
  protocol::HeartbeatResponse heartbeat(const std::string& id, int64_t generation) {
    return controller_->heartbeat(protocol::HeartbeatRequest{kGroup, id, generation});
  }
  protocol::RegisterConsumerResponse joinFrom(const protocol::Caller& caller, const std::string& id = "") {
    Answer<protocol::Response> a;
    drive([&] {
      controller_->registerMember(header(), protocol::RegisterConsumerRequest{kGroup, id, {}}, a.callback(), caller);
    });
    EXPECT_TRUE(a.ready());
    return a.ready() ? std::get<protocol::RegisterConsumerResponse>(a.get()) : protocol::RegisterConsumerResponse{};
  }
  protocol::DescribeGroupResponse describe() { return controller_->describe(protocol::Broker{1, "127.0.0.1", 7400}); }
  static std::vector<protocol::RebalanceReason> reasons(const std::vector<protocol::RebalanceEvent>& h) {
    std::vector<protocol::RebalanceReason> out;
    for (auto& e : h) out.push_back(e.reason);
    return out;
  }
  // A version-1 registration with metadata.
  protocol::RegisterConsumerResponse joinV1(const std::string& id, const std::string& metadata,
                                            const std::string& rack = "") {
    Answer<protocol::Response> a;
    auto h = header();
    h.version = 1;
    drive([&] {
      controller_->registerMember(h, protocol::RegisterConsumerRequest{kGroup, id, {}, metadata, rack}, a.callback());
    });
    EXPECT_TRUE(a.ready());
    return a.ready() ? std::get<protocol::RegisterConsumerResponse>(a.get()) : protocol::RegisterConsumerResponse{};
  }
  static protocol::RequestHeader header() {
    protocol::RequestHeader h;
    h.apiKey = protocol::ApiKey::RegisterConsumer;
    h.clientId = "svc";
    return h;
  }
  int32_t zkVersion() {
    auto s = ensemble_.stat(layout_.groupPath(kGroup));
    return s ? s->version : -100;
  }
  std::vector<Vanished> vanished() {
    std::lock_guard<std::mutex> lock(mu_);
    return vanished_;
  }

  zk::FakeEnsemble ensemble_;
  zk::FakeClient admin_;
  std::unique_ptr<zk::FakeClient> zk_;
  layout::Layout layout_{kRoot};
  ManualTimeSource time_;
  SessionEpoch epoch_;
  std::atomic<bool> connected_{true};
  TopicWatcher topics_;
  OffsetStore offsets_;
  std::mutex mu_;
  std::vector<Vanished> vanished_;
  std::atomic<int> nextMember_{0};
  GroupContext ctx_;
  std::shared_ptr<GroupController> controller_;
};

TEST_F(GroupControllerTest, LoadGoesFromClaimedToIdle) {
  createGroup();
  EXPECT_EQ(controller_->phase(), GroupPhase::Claimed);
  EXPECT_EQ(heartbeat("x", 0).error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  {
    CompletionGate hold(*zk_);
    controller_->load();
    EXPECT_EQ(controller_->phase(), GroupPhase::Loading);
    EXPECT_EQ(heartbeat("x", 0).error, ErrorCode::CONTROLLER_NOT_AVAILABLE) << "not served while loading";
  }
  settle();
  EXPECT_EQ(controller_->phase(), GroupPhase::Idle);
  EXPECT_EQ(controller_->generation(), 0);
  EXPECT_EQ(controller_->memberCount(), 0u);
  EXPECT_TRUE(vanished().empty());
}

TEST_F(GroupControllerTest, LoadFindsTheMembersAndGenerationInZooKeeper) {
  createGroup();
  ASSERT_EQ(admin_.createSync(layout_.memberPath(kGroup, "b"), layout::encodeMember("c"), zk::CreateMode::Persistent)
                .error,
            zk::Error::Ok);
  ASSERT_EQ(admin_.createSync(layout_.memberPath(kGroup, "a"), layout::encodeMember("c"), zk::CreateMode::Persistent)
                .error,
            zk::Error::Ok);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(admin_.setSync(layout_.groupPath(kGroup), "{\"session_timeout_ms\":2000}").error, zk::Error::Ok);
  load();
  EXPECT_EQ(controller_->phase(), GroupPhase::Idle);
  EXPECT_EQ(controller_->generation(), 3);
  EXPECT_EQ(controller_->memberIds(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(GroupControllerTest, RegisterMemberAnswersGenerationOneAndTheMember) {
  createGroup();
  load();
  auto r = join();
  EXPECT_EQ(r.error, ErrorCode::NONE);
  EXPECT_EQ(r.group, kGroup);
  EXPECT_EQ(r.consumerId, "member-1");
  EXPECT_EQ(r.generation, 1);
  EXPECT_EQ(r.members, (std::vector<std::string>{"member-1"}));
  EXPECT_EQ(controller_->generation(), 1);
  EXPECT_EQ(controller_->phase(), GroupPhase::Idle);
  EXPECT_EQ(zkVersion(), 1);
  auto stat = ensemble_.stat(layout_.memberPath(kGroup, "member-1"));
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->ephemeralOwner, zk_->sessionId());
}

TEST_F(GroupControllerTest, ASecondMemberMovesTheGenerationAndRegisteringAgainDoesNot) {
  createGroup();
  load();
  auto a = join("a");
  auto b = join("b");
  EXPECT_EQ(a.generation, 1);
  EXPECT_EQ(b.generation, 2);
  EXPECT_EQ(b.members, (std::vector<std::string>{"a", "b"}));
  zk_->resetCounters();
  auto again = join("a");
  EXPECT_EQ(again.error, ErrorCode::NONE);
  EXPECT_EQ(again.generation, 2);
  EXPECT_EQ(zk_->counters().writes, 0u) << "a member registering again needs no write";
}

TEST_F(GroupControllerTest, HeartbeatAtTheGenerationAnswersNone) {
  createGroup();
  load();
  auto r = join("a");
  ASSERT_EQ(r.generation, 1);
  zk_->resetCounters();
  auto hb = heartbeat("a", 1);
  EXPECT_EQ(hb.error, ErrorCode::NONE);
  EXPECT_EQ(hb.generation, 1);
  EXPECT_EQ(heartbeat("a", 0).error, ErrorCode::REBALANCE_NEEDED);
  EXPECT_EQ(heartbeat("stranger", 1).error, ErrorCode::UNKNOWN_CONSUMER);
  settle();
  EXPECT_EQ(zk_->counters().calls, 0u) << "heartbeats never reach ZooKeeper";
}

// An in-sync heartbeat skips its ownership checks until ownership changes
// (docs/design.md, "Heartbeats"): b, answered NONE while a still holds b's
// partition, must be told to register again as soon as a releases it.
TEST_F(GroupControllerTest, AnInSyncMemberLearnsOfAPartitionFreedAfterItsLastHeartbeat) {
  ASSERT_NO_FATAL_FAILURE(createTopic("t", 2));
  createGroup(2000, {"t"});
  load();
  settle();
  ASSERT_EQ(join("a").partitions.size(), 2u);
  EXPECT_EQ(heartbeat("a", 1).error, ErrorCode::NONE);
  auto b = join("b");
  ASSERT_EQ(b.generation, 2);
  EXPECT_TRUE(b.partitions.empty()) << "a still holds b's partition";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(heartbeat("b", 2).error, ErrorCode::NONE) << "nothing b can take yet";
  EXPECT_EQ(heartbeat("a", 2).error, ErrorCode::NONE) << "a releases it";
  EXPECT_EQ(heartbeat("b", 2).error, ErrorCode::REBALANCE_NEEDED) << "b's partition is free now";
  EXPECT_EQ(heartbeat("b", 2).error, ErrorCode::REBALANCE_NEEDED) << "and stays due until b takes it";
  auto again = join("b");
  EXPECT_EQ(again.partitions.size(), 1u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(heartbeat("a", 2).error, ErrorCode::NONE);
    EXPECT_EQ(heartbeat("b", 2).error, ErrorCode::NONE);
  }
}

// Held heartbeats (docs/design.md, "Held heartbeats"): a heartbeat with a
// wait is answered the moment its answer changes (a partition of the
// member's target freed, the generation moved, the group dropped), when its
// wait runs out, or when another request comes on its connection; at once
// when its answer is news.
TEST_F(GroupControllerTest, AHeldHeartbeatIsAnsweredTheMomentItsPartitionIsFreedAndNotBefore) {
  ASSERT_NO_FATAL_FAILURE(createTopic("t", 2));
  createGroup(3000, {"t"});
  load();
  settle();
  ASSERT_EQ(join("a").partitions.size(), 2u);
  auto b = join("b");
  ASSERT_EQ(b.generation, 2);
  ASSERT_TRUE(b.partitions.empty());
  protocol::Caller onB{"10.0.0.2", 5000, ""};
  onB.connection = 7;
  auto held = [&](const std::string& id, int64_t generation, const protocol::Caller& caller, Millis wait) {
    auto a = std::make_shared<Answer<protocol::Response>>();
    drive([&] {
      controller_->heartbeatHeld(protocol::HeartbeatView{1, 0, kGroup, id, generation, 0}, caller, time_.now(), wait,
                                 a->callback());
    });
    return a;
  };
  auto errorOf = [](const std::shared_ptr<Answer<protocol::Response>>& a) {
    return std::get<protocol::HeartbeatResponse>(a->get()).error;
  };
  // b has nothing to take: held.
  auto hb = held("b", 2, onB, Millis(900));
  EXPECT_FALSE(hb->ready()) << "nothing changed for b: held";
  EXPECT_EQ(controller_->heldCount(), 1u);
  // a heartbeats, which releases b's partition: b is answered at once.
  EXPECT_EQ(heartbeat("a", 2).error, ErrorCode::NONE);
  settle();
  ASSERT_TRUE(hb->ready()) << "a released b's partition: b's held heartbeat is answered";
  EXPECT_EQ(errorOf(hb), ErrorCode::REBALANCE_NEEDED);
  EXPECT_EQ(controller_->heldCount(), 0u);
  // News is never held.
  auto news = held("b", 2, onB, Millis(900));
  ASSERT_TRUE(news->ready()) << "its answer is news: at once";
  EXPECT_EQ(errorOf(news), ErrorCode::REBALANCE_NEEDED);
  ASSERT_EQ(join("b").partitions.size(), 1u);

  // In step, both held; the wait runs out on the tick after it.
  protocol::Caller onA{"10.0.0.1", 5001, ""};
  onA.connection = 8;
  auto ha = held("a", 2, onA, Millis(900));
  hb = held("b", 2, onB, Millis(10'000));
  EXPECT_FALSE(ha->ready());
  EXPECT_FALSE(hb->ready());
  tickAfter(Millis(899));
  EXPECT_FALSE(ha->ready()) << "its wait has not run out";
  tickAfter(Millis(1));
  ASSERT_TRUE(ha->ready()) << "its wait ran out";
  EXPECT_EQ(errorOf(ha), ErrorCode::NONE);
  // b's wait was capped at a third of the session (1000 ms): due by now.
  tickAfter(Millis(100));
  ASSERT_TRUE(hb->ready()) << "held at most a third of the session timeout";
  EXPECT_EQ(errorOf(hb), ErrorCode::NONE);

  // Another request on its connection answers it first.
  hb = held("b", 2, onB, Millis(900));
  EXPECT_FALSE(hb->ready());
  drive([&] { controller_->releaseHeld(onA.connection); });
  EXPECT_FALSE(hb->ready()) << "a request on another connection";
  drive([&] { controller_->releaseHeld(onB.connection); });
  ASSERT_TRUE(hb->ready());
  EXPECT_EQ(errorOf(hb), ErrorCode::NONE);

  // A generation move answers every held heartbeat: a leaves.
  hb = held("b", 2, onB, Millis(900));
  ASSERT_FALSE(hb->ready());
  Answer<protocol::Response> left;
  drive([&] { controller_->leave(protocol::LeaveGroupRequest{kGroup, "a"}, left.callback()); });
  ASSERT_TRUE(left.ready());
  ASSERT_TRUE(hb->ready()) << "the generation moved: b must register again";
  const auto moved = std::get<protocol::HeartbeatResponse>(hb->get());
  EXPECT_EQ(moved.error, ErrorCode::REBALANCE_NEEDED);
  EXPECT_EQ(moved.generation, 3);

  // Shutting down: every held heartbeat answered at once.
  EXPECT_EQ(join("b").generation, 3);
  hb = held("b", 3, onB, Millis(900));
  ASSERT_FALSE(hb->ready());
  drive([&] { controller_->releaseAllHeld(); });
  ASSERT_TRUE(hb->ready());
  EXPECT_EQ(errorOf(hb), ErrorCode::NONE);
  // The group dropped: a held heartbeat goes with it, with the answer a
  // heartbeat arriving then gets, so its member looks for the next
  // controller at once.
  hb = held("b", 3, onB, Millis(900));
  ASSERT_FALSE(hb->ready());
  drive([&] { controller_->drop(ErrorCode::NOT_CONTROLLER, "test"); });
  ASSERT_TRUE(hb->ready());
  EXPECT_EQ(errorOf(hb), ErrorCode::NOT_CONTROLLER);
}

// A version-2 heartbeat whose member a move leaves as it was (docs/protocol.md
// §21): held through the move, or kept on arrival after it, and answered NONE
// at the new generation; version 1 is answered at the move.
TEST_F(GroupControllerTest, AHeldVersion2HeartbeatStaysHeldThroughAMoveThatLeavesItsMemberAsItWas) {
  ASSERT_NO_FATAL_FAILURE(createTopic("one", 1));
  createGroup(3000, {"one"});
  load();
  settle();
  ASSERT_EQ(join("a").partitions.size(), 1u);
  protocol::Caller onA{"10.0.0.1", 5001, ""};
  onA.connection = 8;
  auto held = [&](int16_t version, int64_t generation) {
    auto h = std::make_shared<Answer<protocol::Response>>();
    drive([&] {
      controller_->heartbeatHeld(protocol::HeartbeatView{version, 0, kGroup, "a", generation, 0}, onA, time_.now(),
                                 Millis(900), h->callback());
    });
    return h;
  };
  auto v2 = held(2, 1);
  EXPECT_FALSE(v2->ready());
  // b joins: the one partition stays a's, so the move asks nothing of a.
  const auto b = join("b");
  ASSERT_EQ(b.generation, 2);
  ASSERT_TRUE(b.partitions.empty());
  EXPECT_FALSE(v2->ready()) << "the move left a as it was: still held";
  tickAfter(Millis(900));
  ASSERT_TRUE(v2->ready()) << "its wait ran out";
  const auto answer = std::get<protocol::HeartbeatResponse>(v2->get());
  EXPECT_EQ(answer.error, ErrorCode::NONE);
  EXPECT_EQ(answer.generation, 2) << "a takes the new generation from the answer, without registering";

  // Version 1 is answered at the move, as before: its member registers again.
  auto v1 = held(1, 2);
  EXPECT_FALSE(v1->ready());
  ASSERT_EQ(join("c").generation, 3);
  ASSERT_TRUE(v1->ready()) << "the generation moved";
  EXPECT_EQ(std::get<protocol::HeartbeatResponse>(v1->get()).error, ErrorCode::REBALANCE_NEEDED);
  ASSERT_EQ(join("a").generation, 3);

  // Arriving after a move that left a as it was: kept on arrival, held as
  // of the new generation, and answered NONE at it when its wait runs out.
  ASSERT_EQ(join("d").generation, 4);
  auto late = held(2, 3);
  EXPECT_FALSE(late->ready()) << "kept at generation 4 on arrival: held";
  tickAfter(Millis(900));
  ASSERT_TRUE(late->ready());
  const auto kept = std::get<protocol::HeartbeatResponse>(late->get());
  EXPECT_EQ(kept.error, ErrorCode::NONE);
  EXPECT_EQ(kept.generation, 4);
  // And from a generation it did not register at (it was kept at 4, not
  // registered at 2): it registers, as a member found in ZooKeeper would.
  ASSERT_EQ(join("e").generation, 5);
  auto wrong = held(2, 2);
  ASSERT_TRUE(wrong->ready());
  EXPECT_EQ(std::get<protocol::HeartbeatResponse>(wrong->get()).error, ErrorCode::REBALANCE_NEEDED);
}

// A held heartbeat keeps the member alive from its arrival only: answered
// later, it does not stretch the member's session.
TEST_F(GroupControllerTest, AHeldHeartbeatCountsFromItsArrivalNotItsAnswer) {
  createGroup(3000);
  load();
  ASSERT_EQ(join("a").generation, 1);
  ASSERT_EQ(join("b").generation, 2);
  protocol::Caller c{"10.0.0.1", 5000, ""};
  c.connection = 9;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(heartbeat("a", 2).error, ErrorCode::NONE);
    auto a = std::make_shared<Answer<protocol::Response>>();
    drive([&] {
      controller_->heartbeatHeld(protocol::HeartbeatView{1, 0, kGroup, "b", 2, 0}, c, time_.now(), Millis(1000),
                                 a->callback());
    });
    ASSERT_FALSE(a->ready());
    tickAfter(Millis(1000));
    ASSERT_TRUE(a->ready());
    tickAfter(Millis(10));
  }
  // b last arrived 1010 ms ago; silent from now, it is evicted one session
  // timeout after that arrival, not after its answer.
  tickAfter(Millis(3000 - 1010 - 10));
  EXPECT_EQ(controller_->memberCount(), 2u) << "not yet: 2990 ms since its arrival";
  EXPECT_EQ(heartbeat("a", 2).error, ErrorCode::NONE);
  tickAfter(Millis(20));
  settle();
  EXPECT_EQ(controller_->memberCount(), 1u) << "3010 ms after its last arrival";
}

// A big group's assignment is computed while its transaction is in flight,
// without the lock (docs/design.md, "Assignment"): the answers are the same
// as if it were computed under it, for joins and for a leave.
TEST_F(GroupControllerTest, ABigGroupsAssignmentComputedAheadIsBalancedAndSticky) {
  ASSERT_NO_FATAL_FAILURE(createTopic("t", 5000));
  createGroup(2000, {"t"});
  load();
  settle();
  EXPECT_EQ(join("a").partitions.size(), 5000u);
  EXPECT_EQ(heartbeat("a", 1).error, ErrorCode::NONE);
  auto b = join("b");
  ASSERT_EQ(b.generation, 2);
  EXPECT_TRUE(b.partitions.empty()) << "a still holds all of them";
  EXPECT_EQ(heartbeat("a", 2).error, ErrorCode::NONE);  // releases b's half
  EXPECT_EQ(join("b").partitions.size(), 2500u);
  EXPECT_EQ(join("a").partitions.size(), 2500u) << "a kept its half: nothing else moved";
  auto c = join("c");
  ASSERT_EQ(c.generation, 3);
  EXPECT_EQ(heartbeat("a", 3).error, ErrorCode::NONE);
  EXPECT_EQ(heartbeat("b", 3).error, ErrorCode::NONE);
  auto c2 = join("c");
  const auto a3 = join("a").partitions, b3 = join("b").partitions;
  for (size_t n : {a3.size(), b3.size(), c2.partitions.size()}) {
    EXPECT_TRUE(n == 1666u || n == 1667u) << n;
  }
  EXPECT_EQ(a3.size() + b3.size() + c2.partitions.size(), 5000u);
  // b leaves: its partitions go to a and c; a and c keep theirs.
  Answer<protocol::Response> left;
  drive([&] { controller_->leave(protocol::LeaveGroupRequest{kGroup, "b"}, left.callback()); });
  ASSERT_TRUE(left.ready());
  EXPECT_EQ(controller_->generation(), 4);
  const auto a4 = join("a").partitions, c4 = join("c").partitions;
  EXPECT_EQ(a4.size() + c4.size(), 5000u);
  EXPECT_LE(std::max(a4.size(), c4.size()) - std::min(a4.size(), c4.size()), 1u);
  auto keys = [](const std::vector<protocol::PartitionOffset>& v) {
    std::vector<protocol::TopicPartition> out;
    for (auto& p : v) out.push_back({p.topic, p.partition});
    std::sort(out.begin(), out.end());
    return out;
  };
  const auto a3k = keys(a3), a4k = keys(a4), c2k = keys(c2.partitions), c4k = keys(c4);
  EXPECT_TRUE(std::includes(a4k.begin(), a4k.end(), a3k.begin(), a3k.end())) << "a kept everything it had";
  EXPECT_TRUE(std::includes(c4k.begin(), c4k.end(), c2k.begin(), c2k.end())) << "c too";
}

TEST_F(GroupControllerTest, ASilentMemberIsEvictedByTheTickAfterTheSessionTimeout) {
  createGroup(2000);
  load();
  ASSERT_EQ(join("a").generation, 1);
  tickAfter(1000ms);
  EXPECT_EQ(controller_->memberIds(), (std::vector<std::string>{"a"}));
  tickAfter(1000ms);
  EXPECT_EQ(controller_->memberIds(), (std::vector<std::string>{"a"})) << "exactly the timeout is not past it";
  tickAfter(1ms);
  EXPECT_TRUE(controller_->memberIds().empty());
  EXPECT_EQ(controller_->generation(), 2);
  EXPECT_EQ(zkVersion(), 2);
  EXPECT_FALSE(ensemble_.exists(layout_.memberPath(kGroup, "a")));
  EXPECT_EQ(heartbeat("a", 1).error, ErrorCode::UNKNOWN_CONSUMER);
  EXPECT_EQ(controller_->phase(), GroupPhase::Idle);
}

TEST_F(GroupControllerTest, HeartbeatsKeepAMemberWhileTheSilentOneIsEvicted) {
  createGroup(2000);
  load();
  join("a");
  auto b = join("b");
  ASSERT_EQ(b.generation, 2);
  for (int i = 0; i < 5; ++i) {
    tickAfter(500ms);
    EXPECT_NE(heartbeat("a", controller_->generation()).error, ErrorCode::UNKNOWN_CONSUMER);
  }
  EXPECT_EQ(controller_->memberIds(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(controller_->generation(), 3);
  EXPECT_EQ(heartbeat("a", 2).error, ErrorCode::REBALANCE_NEEDED) << "the generation moved";
  EXPECT_EQ(heartbeat("a", 3).error, ErrorCode::NONE);
}

TEST_F(GroupControllerTest, LeaveRemovesTheMemberAndMovesTheGeneration) {
  createGroup();
  load();
  join("a");
  join("b");
  Answer<protocol::Response> left;
  drive([&] { controller_->leave(protocol::LeaveGroupRequest{kGroup, "a"}, left.callback()); });
  ASSERT_TRUE(left.ready());
  EXPECT_EQ(std::get<protocol::LeaveGroupResponse>(left.get()).error, ErrorCode::NONE);
  EXPECT_EQ(controller_->memberIds(), (std::vector<std::string>{"b"}));
  EXPECT_EQ(controller_->generation(), 3);
  EXPECT_FALSE(ensemble_.exists(layout_.memberPath(kGroup, "a")));
}

TEST_F(GroupControllerTest, DropAnswersAWaitingRequestAndLaterAnswersDoNothing) {
  createGroup();
  load();
  int answers = 0;
  ErrorCode error = ErrorCode::NONE;
  {
    CompletionGate hold(*zk_);
    controller_->registerMember(header(), protocol::RegisterConsumerRequest{kGroup, "m", {}},
                                [&](protocol::Response r) {
                                  ++answers;
                                  error = std::get<protocol::RegisterConsumerResponse>(r).error;
                                });
    EXPECT_EQ(answers, 0) << "waiting for ZooKeeper";
    controller_->drop(ErrorCode::NOT_CONTROLLER, "test");
    EXPECT_EQ(answers, 1);
    EXPECT_EQ(error, ErrorCode::NOT_CONTROLLER);
    EXPECT_EQ(controller_->phase(), GroupPhase::Dropped);
    zk_->resetCounters();
  }
  settle();
  tickAfter(10s);
  EXPECT_EQ(answers, 1) << "answered exactly once";
  EXPECT_EQ(controller_->phase(), GroupPhase::Dropped);
  EXPECT_EQ(zk_->counters().writes, 0u) << "no transaction after the drop";
  EXPECT_FALSE(ensemble_.exists(layout_.memberPath(kGroup, "m")));
  EXPECT_TRUE(controller_->memberIds().empty());
  EXPECT_EQ(heartbeat("m", 0).error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_TRUE(vanished().empty());
  controller_->drop(ErrorCode::NOT_CONTROLLER, "again");  // harmless
  EXPECT_EQ(answers, 1);
}

TEST_F(GroupControllerTest, ATransactionAnsweredAfterTheDropChangesNothing) {
  createGroup();
  load();
  join("a");  // offsets are loaded: the next registration goes straight out
  int answers = 0;
  ErrorCode error = ErrorCode::NONE;
  {
    CompletionGate hold(*zk_);
    controller_->registerMember(header(), protocol::RegisterConsumerRequest{kGroup, "b", {}},
                                [&](protocol::Response r) {
                                  ++answers;
                                  error = std::get<protocol::RegisterConsumerResponse>(r).error;
                                });
    ASSERT_EQ(controller_->phase(), GroupPhase::Writing);
    controller_->drop(ErrorCode::NOT_CONTROLLER, "test");
  }
  settle();
  EXPECT_EQ(answers, 1);
  EXPECT_EQ(error, ErrorCode::NOT_CONTROLLER);
  EXPECT_EQ(controller_->phase(), GroupPhase::Dropped);
  EXPECT_EQ(controller_->generation(), 1) << "the transaction's answer was ignored";
  EXPECT_TRUE(controller_->memberIds().empty());
}

TEST_F(GroupControllerTest, AnswersOfAnEndedSessionDoNothing) {
  createGroup();
  load();
  int answers = 0;
  {
    CompletionGate hold(*zk_);
    controller_->registerMember(header(), protocol::RegisterConsumerRequest{kGroup, "m", {}},
                                [&](protocol::Response) { ++answers; });
    epoch_.advance();
  }
  settle();
  EXPECT_EQ(answers, 0) << "left waiting for whoever handles the session's end";
  EXPECT_EQ(controller_->phase(), GroupPhase::ReadingOffsets);
  controller_->drop(ErrorCode::CONTROLLER_NOT_AVAILABLE, "session ended");
  EXPECT_EQ(answers, 1);
}

TEST_F(GroupControllerTest, AGroupDeletedBehindItsBackCallsVanishedOnItsNextWrite) {
  createGroup(2000, {"t"});
  load();
  join("a");
  // Topic t appears: the member's assignment changes.
  ASSERT_NO_FATAL_FAILURE(createTopic("t", 2));
  settle();
  deleteBehindItsBack();
  settle();
  drive([&] { controller_->topicChanged("t"); });  // moves the generation: a write
  auto v = vanished();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].group, kGroup);
  EXPECT_EQ(v[0].answer, ErrorCode::UNKNOWN_GROUP);
}

TEST_F(GroupControllerTest, AGroupDeletedBehindItsBackCallsVanishedWhenReReadAfterARefusedWrite) {
  createGroup(2000);
  load();
  join("a");
  deleteBehindItsBack();
  settle();
  tickAfter(2001ms);  // evicts a: the transaction is refused, the group re-read
  auto v = vanished();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].group, kGroup);
  EXPECT_EQ(v[0].answer, ErrorCode::UNKNOWN_GROUP);
}

TEST_F(GroupControllerTest, AGroupGoneBeforeItsLoadCallsVanished) {
  createGroup();
  deleteBehindItsBack();
  load();
  ASSERT_EQ(vanished().size(), 1u);
  EXPECT_EQ(vanished()[0].answer, ErrorCode::UNKNOWN_GROUP);
}

TEST_F(GroupControllerTest, DeleteGroupOfAnEmptyGroupRemovesItsSubtree) {
  createGroup();
  load();
  ASSERT_EQ(admin_.createSync("/gc/groups/g/offsets/t", "", zk::CreateMode::Persistent).error, zk::Error::Ok);
  ASSERT_EQ(admin_.createSync("/gc/groups/g/offsets/t/0", "5", zk::CreateMode::Persistent).error, zk::Error::Ok);
  Answer<protocol::Response> deleted;
  drive([&] { controller_->deleteGroup(protocol::DeleteGroupRequest{kGroup}, deleted.callback()); });
  ASSERT_TRUE(deleted.ready());
  EXPECT_EQ(std::get<protocol::DeleteGroupResponse>(deleted.get()).error, ErrorCode::NONE);
  EXPECT_FALSE(ensemble_.exists(layout_.groupPath(kGroup)));
  ASSERT_EQ(vanished().size(), 1u) << "the coordinator is told to forget it";
}

TEST_F(GroupControllerTest, DeleteGroupWithMembersIsRefused) {
  createGroup();
  load();
  join("a");
  Answer<protocol::Response> refused;
  drive([&] { controller_->deleteGroup(protocol::DeleteGroupRequest{kGroup}, refused.callback()); });
  ASSERT_TRUE(refused.ready());
  EXPECT_EQ(std::get<protocol::DeleteGroupResponse>(refused.get()).error, ErrorCode::GROUP_NOT_EMPTY);
  EXPECT_TRUE(ensemble_.exists(layout_.groupPath(kGroup)));
}

TEST_F(GroupControllerTest, AFailedOffsetsReadIsRetriedAfterABackoffNotAtOnce) {
  createGroup();
  load();
  // The offsets znode is gone (removed by hand): reading what is committed
  // fails with NoNode until it is back.
  ASSERT_EQ(admin_.removeSync(layout_.offsetsPath(kGroup)), zk::Error::Ok);
  Answer<protocol::Response> joined;
  drive([&] { controller_->registerMember(header(), protocol::RegisterConsumerRequest{kGroup, "", {}}, joined.callback()); });
  EXPECT_FALSE(joined.ready()) << "a registration carries committed offsets: it waits for them";
  const uint64_t readsAfterFailure = zk_->counters().reads;
  for (int i = 0; i < 5; ++i) drive([&] { controller_->tick(time_.now()); });
  EXPECT_EQ(zk_->counters().reads, readsAfterFailure) << "no new read before the backoff has passed";
  tickAfter(100ms);
  const uint64_t readsAfterRetry = zk_->counters().reads;
  EXPECT_GT(readsAfterRetry, readsAfterFailure) << "retried once the backoff passed";
  tickAfter(100ms);
  EXPECT_EQ(zk_->counters().reads, readsAfterRetry) << "the second backoff is longer (200 ms)";
  EXPECT_FALSE(joined.ready());
  ASSERT_EQ(admin_.createSync(layout_.offsetsPath(kGroup), "", zk::CreateMode::Persistent).error, zk::Error::Ok);
  tickAfter(100ms);
  tickAfter(10ms);
  ASSERT_TRUE(joined.ready());
  EXPECT_EQ(std::get<protocol::RegisterConsumerResponse>(joined.get()).error, ErrorCode::NONE);
}

// ---- Handing the group over ----

struct HandoverOutcome {
  std::shared_ptr<std::vector<GroupController::HandoverResult>> results =
      std::make_shared<std::vector<GroupController::HandoverResult>>();
  GroupController::HandoverDone fn() {
    return [r = results](GroupController::HandoverResult x) { r->push_back(std::move(x)); };
  }
};

TEST_F(GroupControllerTest, WhileHandingOverNothingRenewsALeaseAndWritesWait) {
  createGroup();
  load();
  auto a = join();
  ASSERT_EQ(a.error, ErrorCode::NONE);
  HandoverOutcome outcome;
  {
    CompletionGate hold(*zk_);
    ASSERT_TRUE(controller_->handOver(1, 2, outcome.fn()));
    EXPECT_FALSE(controller_->handOver(1, 3, outcome.fn())) << "one handover at a time";
    EXPECT_EQ(controller_->phase(), GroupPhase::HandingOver);
    // The next controller may serve the group before this one hears the
    // answer, counting its members' sessions from then: no renewal now
    // (docs/design.md, "The session lease"). The member keeps what it holds
    // until its own session timeout.
    EXPECT_EQ(heartbeat(a.consumerId, a.generation).error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
    Answer<protocol::Response> joined, committed, left;
    controller_->registerMember(header(), protocol::RegisterConsumerRequest{kGroup, "", {}}, joined.callback());
    controller_->commit(protocol::CommitOffsetsRequest{kGroup, a.consumerId, a.generation, {}}, committed.callback());
    controller_->leave(protocol::LeaveGroupRequest{kGroup, a.consumerId}, left.callback());
    ASSERT_TRUE(joined.ready() && committed.ready() && left.ready());
    EXPECT_EQ(std::get<protocol::RegisterConsumerResponse>(joined.get()).error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
    EXPECT_EQ(std::get<protocol::CommitOffsetsResponse>(committed.get()).error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
    EXPECT_EQ(std::get<protocol::LeaveGroupResponse>(left.get()).error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  }
  settle();
  ASSERT_EQ(outcome.results->size(), 1u);
  EXPECT_TRUE(outcome.results->at(0).ok);
  EXPECT_EQ(outcome.results->at(0).to, 2);
  auto v = vanished();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].answer, ErrorCode::NOT_CONTROLLER) << "its members are sent to the next controller";
  // One transaction: the record, the member znodes moved out of this
  // session, the controller znode removed.
  EXPECT_FALSE(ensemble_.exists(layout_.controllerPath(kGroup)));
  EXPECT_FALSE(ensemble_.exists(layout_.memberPath(kGroup, a.consumerId)));
  auto record = layout::decodeHandover(ensemble_.data(layout_.membersPath(kGroup)).value_or(""));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->from, 1);
  EXPECT_EQ(record->to, 2);
  EXPECT_EQ(record->generation, a.generation);
  EXPECT_TRUE(record->movedMembers);
  ASSERT_EQ(record->members.count(a.consumerId), 1u);
  EXPECT_EQ(record->cversion, ensemble_.stat(layout_.groupPath(kGroup))->cversion);
}

TEST_F(GroupControllerTest, AHandoverWhoseAnswerWasLostButAppliedIsConfirmedByAReRead) {
  createGroup();
  load();
  auto a = join();
  HandoverOutcome outcome;
  zk_->failNext(zk::Error::ConnectionLoss, 1, /*applied=*/true);
  drive([&] { ASSERT_TRUE(controller_->handOver(1, 2, outcome.fn())); });
  EXPECT_TRUE(outcome.results->empty()) << "not known yet";
  EXPECT_EQ(controller_->phase(), GroupPhase::Stale);
  EXPECT_EQ(rejoin(a.consumerId), ErrorCode::CONTROLLER_NOT_AVAILABLE) << "nothing is granted until the re-read";
  tickAfter(10ms);
  ASSERT_EQ(outcome.results->size(), 1u);
  EXPECT_TRUE(outcome.results->at(0).ok);
  ASSERT_EQ(vanished().size(), 1u);
  EXPECT_EQ(vanished()[0].answer, ErrorCode::NOT_CONTROLLER);
}

TEST_F(GroupControllerTest, AHandoverWhoseAnswerWasLostAndNotAppliedLeavesTheGroupHere) {
  createGroup();
  load();
  auto a = join();
  HandoverOutcome outcome;
  zk_->failNext(zk::Error::ConnectionLoss, 1, /*applied=*/false);
  drive([&] { ASSERT_TRUE(controller_->handOver(1, 2, outcome.fn())); });
  EXPECT_EQ(rejoin(a.consumerId), ErrorCode::CONTROLLER_NOT_AVAILABLE) << "nothing is granted until the re-read";
  tickAfter(10ms);
  ASSERT_EQ(outcome.results->size(), 1u);
  EXPECT_FALSE(outcome.results->at(0).ok);
  EXPECT_TRUE(vanished().empty());
  EXPECT_EQ(controller_->phase(), GroupPhase::Idle);
  EXPECT_TRUE(ensemble_.exists(layout_.controllerPath(kGroup)));
  EXPECT_EQ(rejoin(a.consumerId), ErrorCode::NONE) << "still controlled here, serving again";
}

// ---- Answers that come before the call returns ----

// A zk::Client whose answers to reads come before the call returns (still on
// the completion thread, as the Client contract requires): what a real
// ensemble does when the caller's thread is descheduled right after sending.
class AnswersBeforeReturning final : public zk::Client {
 public:
  explicit AnswersBeforeReturning(zk::FakeClient& inner) : inner_(inner) {}
  // Off: a plain pass-through.
  std::atomic<bool> eager{false};
  void create(const std::string& p, std::string d, zk::CreateMode m, zk::Callback<zk::CreateResult> cb) override {
    inner_.create(p, std::move(d), m, std::move(cb));
  }
  void remove(const std::string& p, int32_t v, zk::Callback<zk::Error> cb) override { inner_.remove(p, v, std::move(cb)); }
  void get(const std::string& p, zk::Callback<zk::GetResult> cb, zk::WatchCallback w) override {
    inner_.get(p, delivered(std::move(cb)), std::move(w));
    wait();
  }
  void set(const std::string& p, std::string d, int32_t v, zk::Callback<zk::SetResult> cb) override {
    inner_.set(p, std::move(d), v, std::move(cb));
  }
  void exists(const std::string& p, zk::Callback<zk::ExistsResult> cb, zk::WatchCallback w) override {
    inner_.exists(p, std::move(cb), std::move(w));
  }
  void getChildren(const std::string& p, zk::Callback<zk::ChildrenResult> cb, zk::WatchCallback w) override {
    inner_.getChildren(p, delivered(std::move(cb)), std::move(w));
    wait();
  }
  void multi(std::vector<zk::Op> ops, zk::Callback<zk::MultiResult> cb) override { inner_.multi(std::move(ops), std::move(cb)); }
  zk::SessionState state() const override { return inner_.state(); }
  int64_t sessionId() const override { return inner_.sessionId(); }
  std::chrono::milliseconds sessionTimeout() const override { return inner_.sessionTimeout(); }
  void setListener(zk::SessionListener* l) override { inner_.setListener(l); }
  void renew() override { inner_.renew(); }
  void post(std::function<void()> task) override { inner_.post(std::move(task)); }

 private:
  template <class R>
  zk::Callback<R> delivered(zk::Callback<R> cb) {
    auto p = std::make_shared<std::promise<void>>();
    done_ = p->get_future();
    return [cb = std::move(cb), p](R r) {
      cb(std::move(r));
      p->set_value();
    };
  }
  void wait() {
    if (eager) done_.wait();
  }

  zk::FakeClient& inner_;
  std::future<void> done_;
};

// GroupController::removeSubtree() (under the group's lock) calls
// OffsetStore::list(); when the listing is answered before the starter's
// release(), the continuation (which takes the group's lock) must still not
// run on the starter's thread.
TEST_F(GroupControllerTest, AListingAnsweredBeforeReleaseDoesNotDeadlockDeleteGroup) {
  createGroup();
  AnswersBeforeReturning client(*zk_);
  OffsetStore eagerOffsets(client, layout_);
  GroupContext eagerCtx{1, client,     layout_, ctx_.config,  time_,         epoch_,
                        connected_, topics_, eagerOffsets, ctx_.vanished, ctx_.newMemberId};
  auto g = std::make_shared<GroupController>(eagerCtx, kGroup);
  drive([&] { g->load(); });
  ASSERT_EQ(g->phase(), GroupPhase::Idle);
  client.eager = true;
  Answer<protocol::Response> deleted;
  g->deleteGroup(protocol::DeleteGroupRequest{kGroup}, deleted.callback());
  settle();
  EXPECT_TRUE(deleted.ready());
}

// ---- DescribeGroup and the rebalance history ------------------------------------

using protocol::RebalanceReason;

TEST_F(GroupControllerTest, DescribeSaysWhoHoldsWhatWhereFromAndWhyEachGenerationMoved) {
  ASSERT_NO_FATAL_FAILURE(createTopic("t", 2));
  createGroup(2000, {"t"});
  load();
  settle();
  EXPECT_EQ(describe().state, protocol::GroupState::STABLE);

  // a joins from 10.0.0.1:5001 and gets both partitions.
  auto a = joinFrom({"10.0.0.1", 5001, ""}, "a");
  ASSERT_EQ(a.generation, 1);
  auto d = describe();
  ASSERT_EQ(d.error, ErrorCode::NONE);
  EXPECT_EQ(d.generation, 1);
  EXPECT_EQ(d.controller, (protocol::Broker{1, "127.0.0.1", 7400}));
  EXPECT_EQ(d.sessionTimeoutMs, 2000);
  EXPECT_EQ(d.topics, (std::vector<protocol::TopicState>{{"t", 2}}));
  ASSERT_EQ(d.members.size(), 1u);
  EXPECT_EQ(d.members[0].consumerId, "a");
  EXPECT_EQ(d.members[0].clientId, "svc");
  EXPECT_EQ(d.members[0].host, "10.0.0.1");
  EXPECT_EQ(d.members[0].port, 5001);
  EXPECT_EQ(d.members[0].joinedAtMs, time_.wallMs());
  EXPECT_EQ(d.members[0].held, (std::vector<protocol::TopicPartition>{{"t", 0}, {"t", 1}}));
  EXPECT_EQ(d.state, protocol::GroupState::STABLE);
  ASSERT_EQ(d.history.size(), 1u);
  EXPECT_EQ(d.history[0].reason, RebalanceReason::MEMBER_JOINED);
  EXPECT_EQ(d.history[0].generation, 1);
  EXPECT_EQ(d.history[0].consumerId, "a");
  EXPECT_EQ(d.history[0].host, "10.0.0.1");

  // b joins: one partition is b's in generation 2 but a still holds it.
  time_.advance(100ms);
  auto b = joinFrom({"10.0.0.2", 5002, ""}, "b");
  ASSERT_EQ(b.generation, 2);
  EXPECT_TRUE(b.partitions.empty()) << "a has not released it yet";
  d = describe();
  EXPECT_EQ(d.state, protocol::GroupState::REBALANCING);
  ASSERT_EQ(d.members.size(), 2u);
  EXPECT_EQ(d.members[1].consumerId, "b");
  ASSERT_EQ(d.members[1].waiting.size(), 1u);
  const protocol::TopicPartition moving = d.members[1].waiting[0];
  EXPECT_EQ(d.members[0].held.size(), 2u);
  EXPECT_EQ(d.members[0].lastHeardMs, time_.wallMs() - 100) << "a was last heard 100 ms ago";
  // a heartbeats at 2 (releasing it), b registers again and takes it.
  EXPECT_EQ(heartbeat("a", 2).error, ErrorCode::NONE);
  EXPECT_EQ(rejoin("b"), ErrorCode::NONE);
  d = describe();
  EXPECT_EQ(d.state, protocol::GroupState::STABLE);
  EXPECT_EQ(d.members[1].held, std::vector<protocol::TopicPartition>{moving});
  EXPECT_TRUE(d.members[1].waiting.empty());

  // The topic grows to 4 partitions: generation 3.
  ASSERT_EQ(admin_.setSync("/brokers/topics/t", layout::encodeTopic(4)).error, zk::Error::Ok);
  settle();
  drive([&] { controller_->topicChanged("t"); });
  EXPECT_EQ(controller_->generation(), 3);
  // b leaves: generation 4.
  Answer<protocol::Response> left;
  drive([&] { controller_->leave(protocol::LeaveGroupRequest{kGroup, "b"}, left.callback()); });
  ASSERT_TRUE(left.ready());
  EXPECT_EQ(controller_->generation(), 4);
  // A rewind by user ops: generation 5.
  Answer<protocol::Response> rewound;
  drive([&] {
    controller_->rewind(protocol::RewindConsumerRequest{kGroup, {{"t", 0, 5}}}, rewound.callback(),
                        protocol::Caller{"10.0.0.9", 6000, "ops"});
  });
  ASSERT_TRUE(rewound.ready());
  EXPECT_EQ(controller_->generation(), 5);
  // a falls silent: evicted, generation 6.
  tickAfter(2001ms);
  EXPECT_EQ(controller_->generation(), 6);

  d = describe();
  EXPECT_EQ(reasons(d.history),
            (std::vector<RebalanceReason>{RebalanceReason::MEMBER_JOINED, RebalanceReason::MEMBER_JOINED,
                                          RebalanceReason::TOPIC_RESIZED, RebalanceReason::MEMBER_LEFT,
                                          RebalanceReason::REWIND, RebalanceReason::MEMBER_EVICTED}));
  std::vector<int64_t> generations;
  for (auto& e : d.history) generations.push_back(e.generation);
  EXPECT_EQ(generations, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(d.history[2].subject, "t");
  EXPECT_EQ(d.history[2].value, 4);
  EXPECT_NE(d.history[2].detail.find("from 2 to 4"), std::string::npos) << d.history[2].detail;
  EXPECT_EQ(d.history[3].consumerId, "b");
  EXPECT_EQ(d.history[3].host, "10.0.0.2");
  EXPECT_EQ(d.history[4].subject, "ops");
  EXPECT_EQ(d.history[4].value, 1);
  EXPECT_EQ(d.history[5].consumerId, "a");
  EXPECT_GE(d.history[5].value, 2000) << "how long a was silent";
  EXPECT_TRUE(d.members.empty());
  EXPECT_EQ(d.offsets, (std::vector<protocol::PartitionOffset>{{"t", 0, 5}}));

  // Written with each transaction: the history znode has them too, and
  // names this server as its writer.
  auto data = ensemble_.data(layout_.historyPath(kGroup));
  ASSERT_TRUE(data);
  auto record = layout::decodeHistory(*data);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->controller, 1);
  EXPECT_EQ(record->events, d.history);
}

TEST_F(GroupControllerTest, ManyJoinsInOneTransactionAreOneEntryWithACount) {
  createGroup();
  load();
  std::vector<Answer<protocol::Response>> answers(6);
  drive([&] {
    // All six wait for the committed offsets and go out in one transaction.
    for (size_t i = 0; i < answers.size(); ++i) {
      controller_->registerMember(header(), protocol::RegisterConsumerRequest{kGroup, "m" + std::to_string(5 - i), {}},
                                  answers[i].callback(), protocol::Caller{"10.0.0.1", static_cast<uint16_t>(100 + i), ""});
    }
  });
  EXPECT_EQ(controller_->generation(), 1);
  auto h = controller_->history();
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].reason, RebalanceReason::MEMBER_JOINED);
  EXPECT_EQ(h[0].generation, 1);
  EXPECT_EQ(h[0].count, 6);
  EXPECT_EQ(h[0].consumerId, "m0") << "the first of them by id";
  EXPECT_EQ(h[0].host, "10.0.0.1");
  EXPECT_NE(h[0].detail.find("6 members joined"), std::string::npos) << h[0].detail;
}

TEST_F(GroupControllerTest, ARegistrationWithoutAnIdFromARemovedMembersConnectionIsAReplacement) {
  createGroup(2000);
  load();
  const protocol::Caller from{"10.0.0.5", 4242, ""};
  auto first = joinFrom(from);
  ASSERT_EQ(first.error, ErrorCode::NONE);
  tickAfter(2001ms);  // evicted
  ASSERT_EQ(controller_->memberCount(), 0u);
  auto again = joinFrom(from);
  ASSERT_EQ(again.error, ErrorCode::NONE);
  ASSERT_NE(again.consumerId, first.consumerId);
  // From another connection, a new member is only a join.
  auto other = joinFrom({"10.0.0.6", 4242, ""});
  auto h = controller_->history();
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[1].reason, RebalanceReason::MEMBER_EVICTED);
  EXPECT_EQ(h[2].reason, RebalanceReason::MEMBER_REPLACED);
  EXPECT_EQ(h[2].consumerId, again.consumerId);
  EXPECT_EQ(h[2].subject, first.consumerId);
  EXPECT_EQ(h[3].reason, RebalanceReason::MEMBER_JOINED);
  EXPECT_EQ(h[3].consumerId, other.consumerId);
}

TEST_F(GroupControllerTest, ATakeoverKeepsTheWrittenHistoryAndSaysFromWhichServer) {
  createGroup(2000);
  load();
  joinFrom({"10.0.0.1", 1, ""}, "a");
  joinFrom({"10.0.0.2", 2, ""}, "b");
  ASSERT_EQ(controller_->history().size(), 2u);
  // Server 1's session ends: its member and controller znodes go with it.
  zk_->close();
  settle();
  controller_->drop(ErrorCode::NOT_CONTROLLER, "session closed");
  // Server 2 claims the group and loads it.
  zk::FakeClient second(ensemble_, zk::FakeClientOptions{10000ms, true, "second"});
  // (the TopicWatcher and OffsetStore of the fixture are on the closed
  // session; this group has no topics and reads no offsets)
  GroupContext secondCtx{2,          second,       layout_,     ctx_.config, time_,         epoch_,
                         connected_, topics_,      offsets_,    ctx_.vanished, ctx_.newMemberId};
  ASSERT_EQ(second.createSync(layout_.controllerPath(kGroup), "2", zk::CreateMode::Ephemeral).error, zk::Error::Ok);
  auto taken = std::make_shared<GroupController>(secondCtx, kGroup);
  {
    CompletionGate hold(second);
    taken->load();
  }
  settle();
  auto h = taken->history();
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].reason, RebalanceReason::MEMBER_JOINED);
  EXPECT_EQ(h[1].reason, RebalanceReason::MEMBER_JOINED);
  EXPECT_EQ(h[2].reason, RebalanceReason::CONTROLLER_TAKEOVER);
  EXPECT_EQ(h[2].subject, "1");
  EXPECT_EQ(h[2].value, 2);
  EXPECT_EQ(h[2].generation, 2) << "a takeover does not move the generation";
  second.close();
  settle();
  taken.reset();
}

// ---- Client mode (docs/protocol.md §14) ---------------------------------------------

using protocol::AssignmentMode;
using protocol::MemberMetadata;

TEST_F(GroupControllerTest, ClientModeAnswersTheMemberListAndHoldsTheBarrier) {
  createGroup(2000, {}, AssignmentMode::CLIENT);
  load();
  auto b = joinV1("b", "weight=2", "r2");
  ASSERT_EQ(b.error, ErrorCode::NONE);
  EXPECT_EQ(b.mode, AssignmentMode::CLIENT);
  EXPECT_EQ(b.generation, 1);
  EXPECT_EQ(b.memberData, (std::vector<MemberMetadata>{{"b", "weight=2", "r2"}}));
  EXPECT_EQ(heartbeat("b", 1).error, ErrorCode::NONE) << "alone and registered: it may start";

  // a joins: generation 2. a is registered at 2 by its own answer; b is not yet.
  auto a = joinV1("a", std::string("\0bin", 4));
  ASSERT_EQ(a.generation, 2);
  EXPECT_EQ(a.members, (std::vector<std::string>{"a", "b"})) << "one order for everybody: by id";
  EXPECT_EQ(a.memberData,
            (std::vector<MemberMetadata>{{"a", std::string("\0bin", 4), ""}, {"b", "weight=2", "r2"}}));
  EXPECT_TRUE(a.partitions.empty()) << "the server assigns nothing";
  EXPECT_EQ(heartbeat("a", 2).error, ErrorCode::REBALANCE_IN_PROGRESS) << "b has not registered at 2";
  EXPECT_EQ(heartbeat("b", 1).error, ErrorCode::REBALANCE_NEEDED);
  EXPECT_EQ(describe().state, protocol::GroupState::REBALANCING);
  // b stops using generation 1 and registers at 2: the same list.
  auto b2 = joinV1("b", "weight=2", "r2");
  ASSERT_EQ(b2.generation, 2);
  EXPECT_EQ(b2.memberData, a.memberData);
  EXPECT_EQ(heartbeat("a", 2).error, ErrorCode::NONE);
  EXPECT_EQ(heartbeat("b", 2).error, ErrorCode::NONE);
  auto d = describe();
  EXPECT_EQ(d.state, protocol::GroupState::STABLE);
  EXPECT_EQ(d.mode, AssignmentMode::CLIENT);
  ASSERT_EQ(d.members.size(), 2u);
  EXPECT_EQ(d.members[1].metadata, "weight=2");
  EXPECT_EQ(d.members[1].rack, "r2");
}

TEST_F(GroupControllerTest, ClientModeRefusesVersionZeroAndOversizedMetadata) {
  createGroup(2000, {}, AssignmentMode::CLIENT);
  load();
  auto old = join("a");
  EXPECT_EQ(old.error, ErrorCode::UNSUPPORTED_VERSION);
  EXPECT_EQ(controller_->memberCount(), 0u);
  EXPECT_EQ(joinV1("a", std::string(4097, 'x')).error, ErrorCode::INVALID_REQUEST);
  EXPECT_EQ(joinV1("a", "", "bad/rack").error, ErrorCode::INVALID_REQUEST);
  EXPECT_EQ(joinV1("a", std::string(4096, 'x')).error, ErrorCode::NONE) << "4096 bytes is the default bound";
}

TEST_F(GroupControllerTest, ClientModeEvictsAMemberThatHeartbeatsButDoesNotRegister) {
  createGroup(2000, {}, AssignmentMode::CLIENT);
  load();
  ASSERT_EQ(joinV1("a", "").generation, 1);
  ASSERT_EQ(joinV1("b", "").generation, 2);
  // a keeps heartbeating at 1 (it is told to register again) but never does.
  for (int i = 0; i < 4; ++i) {
    time_.advance(600ms);
    EXPECT_EQ(heartbeat("a", 1).error, ErrorCode::REBALANCE_NEEDED);
    EXPECT_EQ(heartbeat("b", 2).error, ErrorCode::REBALANCE_IN_PROGRESS);
    drive([&] { controller_->tick(time_.now()); });
  }
  // 2.4 s after the move to 2, more than the 2 s session timeout: a is gone.
  EXPECT_EQ(controller_->memberIds(), std::vector<std::string>{"b"});
  EXPECT_EQ(controller_->generation(), 3);
  auto h = controller_->history();
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h.back().reason, protocol::RebalanceReason::MEMBER_EVICTED);
  EXPECT_NE(h.back().detail.find("did not register at generation 2"), std::string::npos) << h.back().detail;
}

TEST_F(GroupControllerTest, ClientModeCommitsOnlyFromTheAgreedGeneration) {
  ASSERT_NO_FATAL_FAILURE(createTopic("t", 2));
  createGroup(2000, {"t"}, AssignmentMode::CLIENT);
  load();
  settle();
  joinV1("a", "");
  joinV1("b", "");  // generation 2; a not registered at 2 yet
  auto commit = [&](const std::string& id, int64_t generation) {
    Answer<protocol::Response> done;
    drive([&] {
      controller_->commit(protocol::CommitOffsetsRequest{kGroup, id, generation, {{"t", 1, 7}}}, done.callback());
    });
    EXPECT_TRUE(done.ready());
    return done.ready() ? std::get<protocol::CommitOffsetsResponse>(done.get()) : protocol::CommitOffsetsResponse{};
  };
  EXPECT_EQ(commit("a", 1).error, ErrorCode::REBALANCE_NEEDED) << "an older generation";
  EXPECT_EQ(commit("b", 2).error, ErrorCode::REBALANCE_IN_PROGRESS) << "not agreed yet";
  joinV1("a", "");
  auto ok = commit("b", 2);
  EXPECT_EQ(ok.error, ErrorCode::NONE);
  ASSERT_EQ(ok.results.size(), 1u);
  EXPECT_EQ(ok.results[0].error, ErrorCode::NONE) << "any partition of the group's topics: no owner to check";
}

}  // namespace
}  // namespace groupcoord::adapter
