// One Kafka group under the consumer protocol (adapter/kafka/ConsumerGroup.h),
// driven by hand: heartbeats as librdkafka sends them, the clock passed in.

#include <gtest/gtest.h>

#include "adapter/kafka/ClassicGroup.h"
#include "adapter/kafka/ConsumerGroup.h"

namespace groupcoord::adapter::kafka {
namespace {

using std::chrono::milliseconds;
using E = cwire::ErrorCode;
using Req = cwire::ConsumerGroupHeartbeatRequest;
using Resp = cwire::ConsumerGroupHeartbeatResponse;

constexpr int kPartitions = 12;

protocol::Uuid idOf(uint8_t b) {
  protocol::Uuid u;
  u.bytes.fill(b);
  return u;
}

class ConsumerGroupTest : public ::testing::Test {
 protected:
  ConsumerGroupTest() {
    rules.sessionTimeout = milliseconds(6000);
    rules.heartbeatInterval = milliseconds(1000);
    topics["t"] = TopicInfo{idOf(7), kPartitions, {}};
  }

  // Epoch 0, as librdkafka joins: the full request, owning nothing.
  Resp join(const std::string& id, std::optional<std::string> instance = std::nullopt) {
    HeartbeatArgs a;
    a.version = 1;
    a.clientId = "client-" + id;
    a.clientHost = "/127.0.0.1";
    a.request.groupId = "g";
    a.request.memberId = id;
    a.request.memberEpoch = 0;
    a.request.instanceId = instance;
    a.request.rebalanceTimeoutMs = 3000;
    a.request.subscribedTopicNames = std::vector<std::string>{"t"};
    a.request.subscribedTopicRegex = "";
    a.request.topicPartitions = std::vector<Req::TopicPartitions>{};
    auto r = g.heartbeat(a, topics, now, fx);
    if (r.error == E::NONE) record(id, r);
    return r;
  }

  // A steady heartbeat: its epoch and what it owns now (the acknowledgement).
  Resp beat(const std::string& id) {
    HeartbeatArgs a;
    a.version = 1;
    a.request.groupId = "g";
    a.request.memberId = id;
    a.request.memberEpoch = epochs[id];
    std::vector<int32_t> ps(owned[id].begin(), owned[id].end());
    a.request.topicPartitions = std::vector<Req::TopicPartitions>{{idOf(7), ps}};
    auto r = g.heartbeat(a, topics, now, fx);
    if (r.error == E::NONE) record(id, r);
    return r;
  }

  Resp leave(const std::string& id, int32_t epoch) {
    HeartbeatArgs a;
    a.version = 1;
    a.request.groupId = "g";
    a.request.memberId = id;
    a.request.memberEpoch = epoch;
    auto r = g.heartbeat(a, topics, now, fx);
    owned.erase(id);
    return r;
  }

  // The client's side: it takes the answer's assignment as what it owns
  // (revoking first, then assigning), and checks nobody else owns it.
  void record(const std::string& id, const Resp& r) {
    epochs[id] = r.memberEpoch;
    if (!r.assignment) return;
    std::set<int32_t> told;
    for (const auto& tp : r.assignment->topicPartitions) told.insert(tp.partitions.begin(), tp.partitions.end());
    for (int32_t p : owned[id]) {
      if (!told.count(p)) ++revoked[id];
    }
    for (int32_t p : told) {
      if (!owned[id].count(p)) ++assigned[id];
    }
    owned[id] = told;
    std::map<int32_t, int> holders;
    for (const auto& [m, ps] : owned) {
      for (int32_t p : ps) EXPECT_EQ(++holders[p], 1) << "partition " << p << " owned twice";
    }
  }

  // Every member beats until nothing changes.
  void settle(const std::vector<std::string>& ids) {
    for (int round = 0; round < 6; ++round) {
      for (const auto& id : ids) ASSERT_EQ(beat(id).error, E::NONE) << id;
    }
  }

  size_t ownedTotal() const {
    size_t n = 0;
    for (const auto& [m, ps] : owned) n += ps.size();
    return n;
  }

  ConsumerRules rules;
  TopicTable topics;
  ConsumerGroup g{"g", ConsumerRules{milliseconds(6000), milliseconds(1000), 10000}, 0};
  ConsumerTime now{};
  ConsumerEffects fx;
  std::map<std::string, int32_t> epochs;
  std::map<std::string, std::set<int32_t>> owned;
  std::map<std::string, int> revoked, assigned;
};

TEST_F(ConsumerGroupTest, ThreeMembersFormAndSplitTheTopic) {
  for (const char* id : {"a", "b", "c"}) ASSERT_EQ(join(id).error, E::NONE);
  EXPECT_TRUE(fx.membership);
  EXPECT_TRUE(fx.durable);
  settle({"a", "b", "c"});
  EXPECT_EQ(ownedTotal(), static_cast<size_t>(kPartitions));
  for (const char* id : {"a", "b", "c"}) {
    EXPECT_EQ(owned[id].size(), 4u) << id;
    EXPECT_EQ(epochs[id], g.groupEpoch()) << id;
  }
  EXPECT_EQ(g.state(), "Stable");
  const auto r = beat("a");
  EXPECT_EQ(r.heartbeatIntervalMs, 1000);
  EXPECT_FALSE(r.assignment.has_value()) << "a steady answer carries no assignment";
}

// A member waiting for partitions others still hold is told the short
// waiting interval, so it asks again soon after they are let go; once it
// holds its target, the group's interval again.
TEST_F(ConsumerGroupTest, AMemberWaitingForPartitionsHeartbeatsSoonerUntilItHoldsThem) {
  for (const char* id : {"a", "b", "c"}) join(id);
  settle({"a", "b", "c"});
  const auto d = join("d");
  ASSERT_EQ(d.error, E::NONE);
  EXPECT_EQ(d.heartbeatIntervalMs, 100) << "d waits for partitions a, b and c still hold";
  EXPECT_EQ(beat("a").heartbeatIntervalMs, 1000) << "a gives one up: nothing to wait for";
  settle({"a", "b", "c", "d"});
  EXPECT_EQ(owned["d"].size(), 3u);
  EXPECT_EQ(beat("d").heartbeatIntervalMs, 1000) << "d holds its target";
}

TEST_F(ConsumerGroupTest, AFourthMemberTakesOnlyWhatMustMoveAndOnlyOnceItIsGivenUp) {
  for (const char* id : {"a", "b", "c"}) join(id);
  settle({"a", "b", "c"});
  revoked.clear();
  assigned.clear();
  const int32_t before = g.groupEpoch();
  ASSERT_EQ(join("d").error, E::NONE);
  EXPECT_GT(g.groupEpoch(), before);
  // Nothing is free yet: d gets nothing until the others give up theirs.
  EXPECT_TRUE(owned["d"].empty());
  EXPECT_EQ(g.state(), "Reconciling");
  // a is told to give one up, and stays at its epoch until it has.
  const auto ra = beat("a");
  EXPECT_EQ(ra.memberEpoch, before);
  EXPECT_EQ(owned["a"].size(), 3u);
  settle({"a", "b", "c", "d"});
  EXPECT_EQ(g.state(), "Stable");
  for (const char* id : {"a", "b", "c", "d"}) EXPECT_EQ(owned[id].size(), 3u) << id;
  EXPECT_EQ(revoked["a"] + revoked["b"] + revoked["c"], 3);
  EXPECT_EQ(assigned["a"] + assigned["b"] + assigned["c"], 0);
  EXPECT_EQ(assigned["d"], 3);
}

TEST_F(ConsumerGroupTest, ASilentMemberIsRemovedAfterTheSessionTimeoutAndOthersTakeItsPartitions) {
  for (const char* id : {"a", "b", "c"}) join(id);
  settle({"a", "b", "c"});
  now += milliseconds(5000);
  beat("a");
  beat("b");
  fx = {};
  g.tick(now, topics, fx);
  EXPECT_TRUE(fx.removed.empty());
  EXPECT_EQ(g.nextDeadline(), ConsumerTime{} + milliseconds(6000));
  now += milliseconds(1000);
  g.tick(now, topics, fx);
  ASSERT_EQ(fx.removed.size(), 1u);
  EXPECT_EQ(fx.removed[0].first, "c");
  owned.erase("c");
  settle({"a", "b"});
  EXPECT_EQ(owned["a"].size() + owned["b"].size(), static_cast<size_t>(kPartitions));
  EXPECT_EQ(owned["a"].size(), 6u);
}

TEST_F(ConsumerGroupTest, APartitionKeptPastTheRebalanceTimeoutRemovesItsMember) {
  for (const char* id : {"a", "b"}) join(id);
  settle({"a", "b"});
  join("c");
  beat("a");  // told to give two up; it never acknowledges
  HeartbeatArgs keep;
  keep.version = 1;
  keep.request.groupId = "g";
  keep.request.memberId = "a";
  keep.request.memberEpoch = epochs["a"];
  std::vector<int32_t> all(owned["a"].begin(), owned["a"].end());
  // It still lists what it had before the revocation.
  for (int32_t p = 0; p < kPartitions; ++p) {
    if (!owned["b"].count(p) && !owned["a"].count(p)) all.push_back(p);
  }
  keep.request.topicPartitions = std::vector<Req::TopicPartitions>{{idOf(7), all}};
  now += milliseconds(1000);
  ASSERT_EQ(g.heartbeat(keep, topics, now, fx).error, E::NONE);
  now += milliseconds(2000);
  fx = {};
  beat("b");
  beat("c");
  g.tick(now, topics, fx);
  ASSERT_EQ(fx.removed.size(), 1u);
  EXPECT_EQ(fx.removed[0].first, "a");
  EXPECT_NE(fx.removed[0].second.find("rebalance timeout"), std::string::npos) << fx.removed[0].second;
  EXPECT_EQ(beat("a").error, E::UNKNOWN_MEMBER_ID);
}

TEST_F(ConsumerGroupTest, EpochsFenceStaleMembersButAcceptTheEpochOfALostAnswer) {
  join("a");
  settle({"a"});
  const int32_t e = epochs["a"];
  join("b");
  settle({"a", "b"});
  EXPECT_GT(epochs["a"], e);
  epochs["a"] = e;  // the answer that moved it was lost
  EXPECT_EQ(beat("a").error, E::NONE);
  epochs["a"] = g.groupEpoch() + 100;
  EXPECT_EQ(beat("a").error, E::FENCED_MEMBER_EPOCH);
  epochs["x"] = 3;
  EXPECT_EQ(beat("x").error, E::UNKNOWN_MEMBER_ID);
  // Fenced, it joins again with epoch 0 and holds nothing meanwhile.
  owned["a"].clear();
  ASSERT_EQ(join("a").error, E::NONE);
  settle({"a", "b"});
  EXPECT_EQ(ownedTotal(), static_cast<size_t>(kPartitions));
}

TEST_F(ConsumerGroupTest, LeavingFreesItsPartitionsAtOnce) {
  for (const char* id : {"a", "b"}) join(id);
  settle({"a", "b"});
  const auto r = leave("b", -1);
  EXPECT_EQ(r.error, E::NONE);
  EXPECT_EQ(r.memberEpoch, -1);
  EXPECT_EQ(g.size(), 1u);
  beat("a");
  EXPECT_EQ(owned["a"].size(), static_cast<size_t>(kPartitions));
}

TEST_F(ConsumerGroupTest, AStaticMemberComesBackUnderANewIdWithItsPartitionsAndNobodyMoves) {
  join("a", "inst-a");
  join("b", "inst-b");
  settle({"a", "b"});
  const auto held = owned["a"];
  const int32_t epoch = g.groupEpoch();
  revoked.clear();
  assigned.clear();
  // Still in: another process with its instance id is refused.
  EXPECT_EQ(join("a2", "inst-a").error, E::UNRELEASED_INSTANCE_ID);
  leave("a", -2);
  EXPECT_EQ(g.size(), 2u) << "a static member that left is kept";
  beat("b");
  EXPECT_EQ(owned["b"].size(), 6u) << "its partitions are not given away";
  ASSERT_EQ(join("a2", "inst-a").error, E::NONE);
  EXPECT_EQ(owned["a2"], held);
  EXPECT_EQ(g.groupEpoch(), epoch);
  EXPECT_EQ(revoked["b"], 0);
  EXPECT_EQ(g.members().count("a"), 0u);
  // Away past its session: it is removed and the others take its share.
  leave("a2", -2);
  now += milliseconds(6000);
  beat("b");
  g.tick(now, topics, fx);
  settle({"b"});
  EXPECT_EQ(owned["b"].size(), static_cast<size_t>(kPartitions));
}

TEST_F(ConsumerGroupTest, AGrowingTopicGivesTheNewPartitionsWithoutRevokingAny) {
  for (const char* id : {"a", "b"}) join(id);
  settle({"a", "b"});
  revoked.clear();
  topics["t"].partitions = 100;
  fx = {};
  g.topicsChanged(topics, fx);
  EXPECT_TRUE(fx.membership);
  beat("a");
  beat("b");
  EXPECT_EQ(owned["a"].size() + owned["b"].size(), 100u);
  EXPECT_EQ(revoked["a"] + revoked["b"], 0);
  // The same metadata again moves nothing.
  const int32_t e = g.groupEpoch();
  fx = {};
  g.topicsChanged(topics, fx);
  EXPECT_EQ(g.groupEpoch(), e);
  EXPECT_FALSE(fx.membership);
}

TEST_F(ConsumerGroupTest, RequestsItCannotServeAreRefusedWithAReason) {
  HeartbeatArgs a;
  a.version = 1;
  a.request.groupId = "g";
  a.request.memberEpoch = 0;
  a.request.rebalanceTimeoutMs = 1000;
  a.request.subscribedTopicNames = std::vector<std::string>{"t"};
  EXPECT_EQ(g.heartbeat(a, topics, now, fx).error, E::INVALID_REQUEST) << "version 1 needs a member id";
  a.request.memberId = "m";
  a.request.serverAssignor = "range";
  auto r = g.heartbeat(a, topics, now, fx);
  EXPECT_EQ(r.error, E::UNSUPPORTED_ASSIGNOR);
  EXPECT_NE(r.errorMessage->find("uniform"), std::string::npos);
  a.request.serverAssignor = "uniform";
  a.request.subscribedTopicRegex = "t.*";
  EXPECT_EQ(g.heartbeat(a, topics, now, fx).error, E::INVALID_REQUEST);
  a.request.subscribedTopicRegex.reset();
  a.request.subscribedTopicNames.reset();
  EXPECT_EQ(g.heartbeat(a, topics, now, fx).error, E::INVALID_REQUEST) << "a join needs its subscription";
  EXPECT_TRUE(g.empty());
  // Version 0: the server makes the id.
  a.version = 0;
  a.request.memberId.clear();
  a.request.subscribedTopicNames = std::vector<std::string>{"t"};
  a.freshMemberId = "made-here";
  r = g.heartbeat(a, topics, now, fx);
  EXPECT_EQ(r.error, E::NONE);
  EXPECT_EQ(r.memberId, "made-here");
}

TEST_F(ConsumerGroupTest, CommitsAreFencedByTheMemberEpoch) {
  EXPECT_EQ(g.commitCheck("", -1), E::NONE) << "a standalone commit while the group is empty";
  join("a");
  settle({"a"});
  EXPECT_EQ(g.commitCheck("", -1), E::UNKNOWN_MEMBER_ID);
  EXPECT_EQ(g.commitCheck("a", epochs["a"]), E::NONE);
  EXPECT_EQ(g.commitCheck("a", epochs["a"] + 5), E::STALE_MEMBER_EPOCH);
  EXPECT_EQ(g.commitCheck("zz", 1), E::UNKNOWN_MEMBER_ID);
}

TEST_F(ConsumerGroupTest, DifferentSubscriptionsAreEachBalancedAmongTheirSubscribers) {
  topics["u"] = TopicInfo{idOf(9), 4, {}};
  join("a");
  HeartbeatArgs b;
  b.version = 1;
  b.request.groupId = "g";
  b.request.memberId = "b";
  b.request.memberEpoch = 0;
  b.request.rebalanceTimeoutMs = 1000;
  b.request.subscribedTopicNames = std::vector<std::string>{"t", "u"};
  ASSERT_EQ(g.heartbeat(b, topics, now, fx).error, E::NONE);
  const auto& ms = g.members();
  EXPECT_EQ(ms.at("a").target.at("t").size(), 6u);
  EXPECT_EQ(ms.at("b").target.at("t").size(), 6u);
  EXPECT_EQ(ms.at("b").target.at("u").size(), 4u);
  EXPECT_EQ(ms.at("a").target.count("u"), 0u);
}

TEST_F(ConsumerGroupTest, MembersAreGivenPartitionsWhoseReplicasShareTheirRack) {
  // Partitions 0-5 have their replicas in rack r1, 6-11 in rack r2.
  auto& racks = topics["t"].replicaRacks;
  for (int p = 0; p < kPartitions; ++p) racks.push_back({p < 6 ? "r1" : "r2"});
  for (const auto& [id, rack] : std::vector<std::pair<std::string, std::string>>{{"a", "r2"}, {"b", "r1"}}) {
    HeartbeatArgs j;
    j.version = 1;
    j.request.groupId = "g";
    j.request.memberId = id;
    j.request.memberEpoch = 0;
    j.request.rackId = rack;
    j.request.rebalanceTimeoutMs = 3000;
    j.request.subscribedTopicNames = std::vector<std::string>{"t"};
    j.request.topicPartitions = std::vector<Req::TopicPartitions>{};
    ASSERT_EQ(g.heartbeat(j, topics, now, fx).error, E::NONE);
  }
  EXPECT_EQ(g.members().at("a").target.at("t"), (std::set<int32_t>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(g.members().at("b").target.at("t"), (std::set<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(g.members().at("a").rackId, "r2");
}

TEST_F(ConsumerGroupTest, ASnapshotResumesEpochsHoldingsAndTargetsAndNothingElseReadsAsOne) {
  for (const char* id : {"a", "b", "c"}) join(id, std::string("i-") + id);
  settle({"a", "b", "c"});
  join("d");
  beat("a");  // mid-reconciliation
  const ConsumerSnapshot s = g.snapshot();
  const std::string bytes = encodeConsumerSnapshot(s);
  auto back = decodeConsumerSnapshot(bytes);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, s);
  EXPECT_FALSE(decodeSnapshot(bytes).has_value()) << "the classic reader refuses it";
  EXPECT_FALSE(decodeConsumerSnapshot(encodeSnapshot(Snapshot{})).has_value());
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    EXPECT_FALSE(decodeConsumerSnapshot(bytes.substr(0, cut)).has_value()) << cut;
  }
  EXPECT_FALSE(decodeConsumerSnapshot(bytes + "x").has_value());

  ConsumerGroup resumed = ConsumerGroup::resume("g", rules, *back, now + milliseconds(100));
  EXPECT_EQ(resumed.groupEpoch(), g.groupEpoch());
  EXPECT_EQ(resumed.holders(), g.holders());
  for (const auto& [id, m] : g.members()) {
    EXPECT_EQ(resumed.members().at(id).target, m.target) << id;
    EXPECT_EQ(resumed.members().at(id).epoch, m.epoch) << id;
  }
}

}  // namespace
}  // namespace groupcoord::adapter::kafka
