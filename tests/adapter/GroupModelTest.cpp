// The group model driven directly: no ZooKeeper, no lock, no clock. Each
// operation (load, register, heartbeat, leave, liveness, commit, rewind,
// topic change, describe, the batch and its outcomes, the handover record)
// and each member state transition.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "adapter/GroupModel.h"
#include "common/Layout.h"
#include "metrics/Coordination.h"

namespace groupcoord::adapter {
namespace {

using protocol::ErrorCode;
using protocol::RebalanceReason;
using P = protocol::TopicPartition;

// Topics as the model reads them: partition counts set by the test.
class FakeTopics final : public PartitionSource {
 public:
  std::map<std::string, int32_t> counts;

  std::map<std::string, int32_t> partitionCounts(const layout::GroupSettings& s) const override {
    std::map<std::string, int32_t> out;
    for (auto& t : s.topics) {
      auto it = counts.find(t);
      out[t] = it == counts.end() ? 0 : it->second;
    }
    return out;
  }
  bool partitionExists(const layout::GroupSettings& s, const P& p) const override {
    auto c = partitionCounts(s);
    auto it = c.find(p.topic);
    return it != c.end() && p.partition >= 0 && p.partition < it->second;
  }
  ReplicaRacks replicaRacks(const layout::GroupSettings&) const override { return {}; }
};

// Answers as they come out of an Outbox.
struct Answers {
  std::vector<protocol::Response> got;
  protocol::ResponseCallback callback() {
    return [this](protocol::Response r) { got.push_back(std::move(r)); };
  }
  template <class T>
  const T& last() const {
    EXPECT_FALSE(got.empty());
    return std::get<T>(got.back());
  }
};

const TimePoint kT0 = TimePoint(std::chrono::hours(1));
constexpr int64_t kTimeoutMs = 1000;

class GroupModelTest : public ::testing::Test {
 protected:
  GroupModelTest() { topics_.counts["t"] = 4; }

  Instant at() const { return Instant{now_, 1'700'000'000'000 + millisBetween(kT0, now_)}; }
  void advance(int64_t ms) { now_ += Millis(ms); }

  // The first read of the group, as a claim makes it.
  GroupModel::Loaded load(int32_t version = 0, std::vector<std::string> members = {},
                          protocol::AssignmentMode mode = protocol::AssignmentMode::SERVER, bool ephemeral = false,
                          std::optional<std::string> handover = std::nullopt, int32_t cversion = 2) {
    layout::GroupSettings s;
    s.sessionTimeoutMs = kTimeoutMs;
    s.topics = {"t"};
    s.mode = mode;
    s.ephemeral = ephemeral;
    GroupModel::Read r;
    r.settingsData = layout::encodeSettings(s);
    r.version = version;
    r.cversion = cversion;
    r.members = std::move(members);
    r.handover = std::move(handover);
    Outbox out;
    auto loaded = model_.applyRead(std::move(r), /*first=*/true, at(), out);
    model_.offsetsLoaded(OffsetsRead{});
    return loaded;
  }

  protocol::RequestHeader header(int16_t version = 1) {
    protocol::RequestHeader h;
    h.version = version;
    h.clientId = "client";
    return h;
  }
  GroupModel::Registration registerAs(const std::string& id, Answers& a, Serving s = {},
                                      std::vector<P> owned = {}, int16_t version = 1, int64_t known = -1,
                                      std::string metadata = "", uint64_t connection = 0) {
    protocol::RegisterConsumerRequest r{"g", id, std::move(owned), std::move(metadata)};
    r.knownGeneration = known;
    auto done = a.callback();
    Outbox out;
    protocol::Caller caller{"10.0.0.1", 4000, ""};
    caller.connection = connection;
    return model_.registerMember(header(version), r, id, caller, at(), s, done, out);
  }
  // The same, on the server's connection number `connection`.
  GroupModel::Registration registerOn(uint64_t connection, const std::string& id, Answers& a) {
    return registerAs(id, a, {}, {}, 1, -1, "", connection);
  }
  // A LeaveGroup of `id`; true when a removal was queued.
  bool leave(const std::string& id, Answers& a, bool connected = true) {
    auto done = a.callback();
    Outbox out;
    return model_.leave(protocol::LeaveGroupRequest{"g", id}, connected, done, out);
  }
  // Writes what waits, as a transaction applied at the next generation.
  GroupModel::Launched write() {
    GroupModel::Launched l = model_.launchBatch(1000, at());
    Outbox out;
    model_.applyBatch(model_.generation() + 1, at(), std::nullopt, out);
    return l;
  }
  // A new member registered and written.
  protocol::RegisterConsumerResponse join(const std::string& id) {
    Answers a;
    EXPECT_EQ(registerAs(id, a), GroupModel::Registration::Joining);
    write();
    return a.last<protocol::RegisterConsumerResponse>();
  }
  protocol::HeartbeatResponse beat(const std::string& id, int64_t generation, bool* moved = nullptr) {
    return model_.heartbeat(protocol::HeartbeatView{0, 0, "g", id, generation}, protocol::Caller{}, now_, nullptr,
                            moved);
  }
  protocol::HeartbeatResponse beatAt(int16_t version, const std::string& id, int64_t generation) {
    return model_.heartbeat(protocol::HeartbeatView{version, 0, "g", id, generation}, protocol::Caller{}, now_,
                            nullptr, nullptr);
  }
  // Each member registers again with what it holds, then heartbeats (which
  // releases what it was not granted), until every partition is placed.
  void settleAll(const std::vector<std::string>& ids) {
    for (int round = 0; round < 3 && !model_.settled(); ++round) {
      for (const auto& id : ids) {
        Answers a;
        registerAs(id, a, {}, model_.ownership().heldBy(id));
        beat(id, model_.generation());
      }
    }
  }
  MemberState stateOf(const std::string& id) const {
    const auto* m = model_.member(id);
    EXPECT_NE(m, nullptr) << id;
    return m ? m->state : MemberState::Unregistered;
  }
  bool historyHas(RebalanceReason reason) const {
    for (auto& e : model_.history().all()) {
      if (e.reason == reason) return true;
    }
    return false;
  }

  FakeTopics topics_;
  TimePoint now_ = kT0;
  GroupModel model_{"g", 1, topics_, kT0};
};

// ---- Loading ----

TEST_F(GroupModelTest, AFirstReadGivesSettingsGenerationAndMembersNotRegisteredYet) {
  auto loaded = load(3, {"m-1", "m-2"});
  ASSERT_TRUE(loaded.ok);
  EXPECT_EQ(loaded.topics, std::vector<std::string>{"t"});
  EXPECT_EQ(model_.generation(), 3);
  EXPECT_EQ(model_.settings().sessionTimeoutMs, kTimeoutMs);
  EXPECT_EQ(model_.members().size(), 2u);
  EXPECT_EQ(stateOf("m-1"), MemberState::Unregistered);
  // Taken over without a record: what nobody reports waits one session timeout.
  EXPECT_TRUE(model_.ownership().inGrace(now_));
  EXPECT_TRUE(historyHas(RebalanceReason::CONTROLLER_TAKEOVER));
}

TEST_F(GroupModelTest, SettingsItCannotReadAreNotServed) {
  GroupModel::Read r;
  r.settingsData = "not settings";
  r.version = 4;
  Outbox out;
  EXPECT_FALSE(model_.applyRead(std::move(r), true, at(), out).ok);
  EXPECT_EQ(model_.generation(), -1);
}

TEST_F(GroupModelTest, AReReadDropsMembersGoneFromZooKeeperAndAnswersTheirRemoval) {
  load(0);
  join("a");
  join("b");
  EXPECT_EQ(beat("a", 2).error, ErrorCode::NONE);
  Answers took;
  registerAs("b", took);
  ASSERT_EQ(took.last<protocol::RegisterConsumerResponse>().partitions.size(), 2u);
  Answers left;
  ASSERT_TRUE(leave("b", left));
  EXPECT_EQ(stateOf("b"), MemberState::Leaving);
  // The leave's transaction was applied, its answer lost: the re-read tells.
  GroupModel::Read r;
  r.settingsData = model_.settingsData();
  r.version = model_.generation() + 1;
  r.members = {"a"};
  {
    Outbox out;
    ASSERT_TRUE(model_.applyRead(std::move(r), false, at(), out).ok);
  }
  EXPECT_EQ(model_.member("b"), nullptr);
  EXPECT_EQ(left.last<protocol::LeaveGroupResponse>().error, ErrorCode::NONE);
  EXPECT_EQ(stateOf("a"), MemberState::Unregistered) << "the generation moved under it";
  EXPECT_EQ(model_.ownership().heldCount(), 2u) << "what b held is free, as when the leave is applied";
  for (int32_t p = 0; p < 4; ++p) EXPECT_FALSE(model_.ownership().owns("b", P{"t", p}));
}

// ---- Registration and the batch ----

TEST_F(GroupModelTest, ANewMemberIsAnsweredOnceItsTransactionIsApplied) {
  load(0);
  Answers a;
  ASSERT_EQ(registerAs("a", a), GroupModel::Registration::Joining);
  EXPECT_TRUE(a.got.empty()) << "nothing is durable yet";
  EXPECT_TRUE(model_.batch().joins.hasPending());
  EXPECT_FALSE(model_.quiet());

  GroupModel::Launched l = model_.launchBatch(1000, at());
  ASSERT_EQ(l.joined.size(), 1u);
  EXPECT_EQ(l.joined[0], (std::pair<std::string, std::string>{"a", "client"}));
  EXPECT_EQ(l.changes, 1u);
  EXPECT_TRUE(l.createsHistory);
  ASSERT_FALSE(l.history.events.empty());
  EXPECT_EQ(l.history.events.back().reason, RebalanceReason::MEMBER_JOINED);
  EXPECT_EQ(l.history.events.back().generation, 1);
  {
    Outbox out;
    auto applied = model_.applyBatch(1, at(), std::nullopt, out);
    EXPECT_EQ(applied.from, 0);
    EXPECT_EQ(applied.joined, 1u);
  }
  const auto& r = a.last<protocol::RegisterConsumerResponse>();
  EXPECT_EQ(r.error, ErrorCode::NONE);
  EXPECT_EQ(r.generation, 1);
  EXPECT_EQ(r.members, std::vector<std::string>{"a"});
  EXPECT_EQ(r.partitions.size(), 4u) << "alone, it gets every partition";
  EXPECT_EQ(stateOf("a"), MemberState::Registered);
  EXPECT_TRUE(model_.settled());
  EXPECT_TRUE(model_.historyExists());
  EXPECT_TRUE(model_.quiet());
}

TEST_F(GroupModelTest, WhileMembershipMovesJoinsCoalesceForTheWindowAfterTheLatestUpToTheCap) {
  load(0);
  model_.coalesceJoins(Millis(100), Millis(300));
  Answers a;
  ASSERT_EQ(registerAs("first", a), GroupModel::Registration::Joining);
  EXPECT_EQ(model_.joinsDueAt(), now_ + Millis(100)) << "the group forms: its first join waits for others";
  write();
  const TimePoint moved = now_;
  ASSERT_EQ(registerAs("a", a), GroupModel::Registration::Joining);
  EXPECT_EQ(model_.joinsDueAt(), now_ + Millis(100)) << "the membership just moved: the join waits for others";
  advance(60);
  ASSERT_EQ(registerAs("b", a), GroupModel::Registration::Joining);
  EXPECT_EQ(model_.joinsDueAt(), now_ + Millis(100)) << "each join restarts the window";
  for (int i = 0; i < 5; ++i) {
    advance(60);
    registerAs("c" + std::to_string(i), a);
  }
  EXPECT_EQ(model_.joinsDueAt(), moved + Millis(300)) << "capped at 300 ms after the first";
  const GroupModel::Launched l = write();
  EXPECT_EQ(l.joined.size(), 7u) << "one transaction, one generation move, for all of them";
  EXPECT_EQ(model_.generation(), 2);
  EXPECT_LE(model_.joinsDueAt(), now_) << "nothing waits";

  advance(301);
  ASSERT_EQ(registerAs("late", a), GroupModel::Registration::Joining);
  EXPECT_LE(model_.joinsDueAt(), now_) << "at rest again: a lone join into it does not wait";
}

TEST_F(GroupModelTest, AMemberAlreadyInIsAnsweredAtOnceWhenNothingWaitsAndAfterTheWriteOtherwise) {
  load(0);
  join("a");
  Answers now;
  EXPECT_EQ(registerAs("a", now), GroupModel::Registration::Answered);
  EXPECT_EQ(now.last<protocol::RegisterConsumerResponse>().generation, 1);

  Answers later;
  EXPECT_EQ(registerAs("a", later, Serving{/*idle=*/false, true}), GroupModel::Registration::Rejoined);
  EXPECT_TRUE(later.got.empty());
  {
    Outbox out;
    model_.answerRejoins(now_, out);
  }
  EXPECT_EQ(later.last<protocol::RegisterConsumerResponse>().generation, 1);
}

TEST_F(GroupModelTest, AJoinWaitingOutItsWindowHoldsNoReRegistrationBackButOneDueDoes) {
  load(0);
  const auto first = join("a");
  join("b");
  model_.coalesceJoins(Millis(100), Millis(300));
  // b leaves, and the membership has just moved: a join now waits its
  // window for others.
  Answers left;
  ASSERT_TRUE(leave("b", left));
  write();
  const int32_t afterLeave = model_.generation();
  Answers c;
  ASSERT_EQ(registerAs("c", c), GroupModel::Registration::Joining);
  ASSERT_GT(model_.joinsDueAt(), now_);

  // a registers again meanwhile (told of the leave's move): answered at
  // once, at the leave's generation, not when the join is written.
  std::vector<P> held;
  for (const auto& p : first.partitions) held.push_back(P{p.topic, p.partition});
  Answers a;
  ASSERT_EQ(registerAs("a", a, {}, held), GroupModel::Registration::Answered);
  EXPECT_EQ(a.last<protocol::RegisterConsumerResponse>().generation, afterLeave);
  EXPECT_EQ(a.last<protocol::RegisterConsumerResponse>().partitions.size(), 4u) << "b left: a alone holds all four";

  // Once the window has closed the join is due: a re-registration waits for
  // the write that moves the generation, and is answered at the new one.
  advance(150);
  ASSERT_LE(model_.joinsDueAt(), now_);
  Answers again;
  EXPECT_EQ(registerAs("a", again, {}, held), GroupModel::Registration::Rejoined);
  EXPECT_TRUE(again.got.empty());
  write();
  {
    Outbox out;
    model_.answerRejoins(now_, out);
  }
  EXPECT_EQ(again.last<protocol::RegisterConsumerResponse>().generation, afterLeave + 1);
}

TEST_F(GroupModelTest, AVersion2HeartbeatTakesTheNewGenerationWhenTheMoveLeftItsMemberAsItWas) {
  load(0);
  join("a");
  join("b");
  settleAll({"a", "b"});
  ASSERT_TRUE(model_.settled());
  const int32_t before = model_.generation();
  // c joins: it takes one partition from a or from b; the other keeps its
  // two (the target moves as little as it can).
  join("c");
  ASSERT_EQ(model_.generation(), before + 1);
  std::string kept, gives;
  for (const std::string id : {"a", "b"}) (model_.ownership().holdsExactlyItsTarget(id) ? kept : gives) = id;
  ASSERT_FALSE(kept.empty());
  ASSERT_FALSE(gives.empty());

  EXPECT_EQ(beatAt(1, kept, before).error, ErrorCode::REBALANCE_NEEDED) << "version 1 registers again, as before";
  EXPECT_EQ(beatAt(2, gives, before).error, ErrorCode::REBALANCE_NEEDED) << "it has a partition to give up";
  const auto r = beatAt(2, kept, before);
  EXPECT_EQ(r.error, ErrorCode::NONE) << "the move left it as it was: no registration";
  EXPECT_EQ(r.generation, before + 1);
  EXPECT_EQ(stateOf(kept), MemberState::Registered) << "counted as registered at the new generation";
  EXPECT_EQ(beatAt(2, kept, before + 1).error, ErrorCode::NONE) << "and heartbeats at it from then on";

  // The one that gives a partition up registers, releases it, and c takes it.
  settleAll({"a", "b", "c"});
  ASSERT_TRUE(model_.settled());
  const int32_t settledAt = model_.generation();

  // A rewind moves the generation and the offsets under every member: each
  // must register again to read them, whatever it holds.
  Answers rewound;
  auto done = rewound.callback();
  Outbox out;
  ASSERT_TRUE(model_.rewind(protocol::RewindConsumerRequest{"g", {{"t", 0, 7}}}, ErrorCode::NONE, "alice", done, out));
  write();
  ASSERT_EQ(model_.generation(), settledAt + 1);
  EXPECT_TRUE(model_.ownership().holdsExactlyItsTarget(kept));
  EXPECT_EQ(beatAt(2, kept, settledAt).error, ErrorCode::REBALANCE_NEEDED) << "its offsets may have moved";

  // A generation found by a re-read (a transaction whose answer was lost):
  // what moved it is not known, so nobody is kept from before it.
  settleAll({"a", "b", "c"});
  const int32_t beforeRead = model_.generation();
  GroupModel::Read reread;
  reread.settingsData = model_.settingsData();
  reread.version = beforeRead + 1;
  reread.members = {"a", "b", "c"};
  {
    Outbox readOut;
    ASSERT_TRUE(model_.applyRead(std::move(reread), false, at(), readOut).ok);
  }
  ASSERT_FALSE(model_.ownership().inGrace(now_));
  ASSERT_TRUE(model_.ownership().holdsExactlyItsTarget(kept));
  EXPECT_EQ(beatAt(2, kept, beforeRead).error, ErrorCode::REBALANCE_NEEDED) << "the read moved the generation";
  EXPECT_EQ(beatAt(2, kept, -1).error, ErrorCode::REBALANCE_NEEDED) << "no generation: never kept";
}

// A member registering with partitions outside its target is answered
// without them (its client drops them) but recorded as holding them until
// its heartbeat at that generation releases them. A move before that
// heartbeat may put them back in its target (stickiness follows the
// record): the member must register again, not be kept, or they sit idle
// with the controller sure it holds them (partition_lab_test found it).
TEST_F(GroupModelTest, AVersion2MemberIsNotKeptWhileItsRecordHoldsWhatItsAnswerLeftOut) {
  load(0);
  const auto first = join("a");
  ASSERT_EQ(first.partitions.size(), 4u);
  beat("a", model_.generation());
  join("b");  // the target gives b two of a's four
  const int32_t withB = model_.generation();
  Answers again;
  registerAs("a", again, {}, model_.ownership().heldBy("a"));
  ASSERT_EQ(again.last<protocol::RegisterConsumerResponse>().partitions.size(), 2u) << "a is answered with its two";
  ASSERT_EQ(model_.ownership().heldBy("a").size(), 4u) << "the other two are a's until its heartbeat releases them";
  // b leaves before a heartbeats at withB: the target gives a all four again.
  Answers left;
  ASSERT_TRUE(leave("b", left));
  write();
  ASSERT_EQ(model_.generation(), withB + 1);
  ASSERT_TRUE(model_.ownership().holdsExactlyItsTarget("a")) << "by the record";
  EXPECT_EQ(beatAt(2, "a", withB).error, ErrorCode::REBALANCE_NEEDED)
      << "its client holds two: it registers, and the other two are released and granted again";
  Answers back;
  registerAs("a", back, {}, {P{"t", first.partitions[0].partition}, P{"t", first.partitions[1].partition}});
  const auto& r = back.last<protocol::RegisterConsumerResponse>();
  // Whatever two its client reported, it is answered with all four: the two
  // it did not report were free (released by that registration) and granted.
  EXPECT_EQ(r.partitions.size(), 4u);
  EXPECT_EQ(beatAt(2, "a", r.generation).error, ErrorCode::NONE);
  EXPECT_TRUE(model_.settled());

  // Registered with nothing outside its target: kept through the next move.
  join("c");
  settleAll({"a", "c"});
  ASSERT_TRUE(model_.settled());
  const int32_t settledAt = model_.generation();
  Answers d;
  registerAs("d", d);  // a join that leaves a as it is or not; find which
  write();
  if (model_.ownership().holdsExactlyItsTarget("a")) {
    EXPECT_EQ(beatAt(2, "a", settledAt).error, ErrorCode::NONE) << "a clean record is kept";
  } else {
    EXPECT_TRUE(model_.ownership().holdsExactlyItsTarget("c"));
    EXPECT_EQ(beatAt(2, "c", settledAt).error, ErrorCode::NONE) << "a clean record is kept";
  }
}

TEST_F(GroupModelTest, RegistrationsTheModelRefuse) {
  protocol::RegisterConsumerRequest big{"g", "a", {}};
  big.metadata.assign(5000, 'x');
  EXPECT_EQ(model_.checkRegistration(big, 4096), ErrorCode::INVALID_REQUEST);
  protocol::RegisterConsumerRequest rack{"g", "a", {}};
  rack.rack = "bad rack\n";
  EXPECT_EQ(model_.checkRegistration(rack, 4096), ErrorCode::INVALID_REQUEST);
  rack.rack = "rack-1";
  EXPECT_EQ(model_.checkRegistration(rack, 4096), ErrorCode::NONE);

  load(0);
  Answers a;
  EXPECT_EQ(registerAs("a", a, Serving{true, /*connected=*/false}), GroupModel::Registration::Refused);
  EXPECT_EQ(a.last<protocol::RegisterConsumerResponse>().error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
}

TEST_F(GroupModelTest, ABatchThatFailsAnswersItsWaitersAndOneRequeuedGoesOutAgain) {
  load(0);
  Answers a, b;
  registerAs("a", a);
  model_.launchBatch(1000, at());
  EXPECT_TRUE(model_.batch().hasInFlight());
  model_.requeueBatch();
  EXPECT_FALSE(model_.batch().hasInFlight());
  EXPECT_TRUE(model_.batch().joins.hasPending()) << "it waits for the next transaction";
  EXPECT_TRUE(a.got.empty());

  registerAs("b", b);
  GroupModel::Launched l = model_.launchBatch(1000, at());
  EXPECT_EQ(l.joined.size(), 2u) << "the requeued join goes with the new one";
  {
    Outbox out;
    model_.failBatch(ErrorCode::CONTROLLER_NOT_AVAILABLE, out, /*retryMove=*/true);
  }
  EXPECT_EQ(a.last<protocol::RegisterConsumerResponse>().error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_EQ(b.last<protocol::RegisterConsumerResponse>().error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_FALSE(model_.batch().hasInFlight());
  EXPECT_TRUE(model_.members().empty());
  EXPECT_EQ(model_.generation(), 0);
}

TEST_F(GroupModelTest, TheBatchCarriesAtMostItsBudgetOfChanges) {
  load(0);
  Answers a;
  for (int i = 0; i < 5; ++i) registerAs("m-" + std::to_string(i), a);
  GroupModel::Launched l = model_.launchBatch(3, at());
  EXPECT_EQ(l.changes, 3u);
  EXPECT_EQ(model_.batch().joins.pending().size(), 2u);
}

TEST_F(GroupModelTest, JoinsTooManyForOneTransactionGoInSlicesAndMoveTheGenerationOnce) {
  load(0);
  Answers a;
  // Version 2: answers of the member's share (a version-1 answer lists all
  // 2,500 members, 2,500 times).
  for (int i = 0; i < 2500; ++i) registerAs("m-" + std::to_string(10000 + i), a, {}, {}, /*version=*/2);
  size_t created = 0;
  for (int slice = 0; slice < 2; ++slice) {
    GroupModel::Launched l = model_.launchBatch(1000, at());
    EXPECT_FALSE(l.moves) << "slice " << slice;
    EXPECT_EQ(l.joined.size(), 1000u);
    EXPECT_TRUE(l.removed.empty());
    created += l.joined.size();
    model_.sliceWritten();
    EXPECT_EQ(model_.generation(), 0) << "a slice moves nothing";
    EXPECT_TRUE(a.got.empty()) << "nobody is answered before the move";
    EXPECT_FALSE(model_.quiet());
  }
  GroupModel::Launched last = model_.launchBatch(1000, at());
  EXPECT_TRUE(last.moves);
  EXPECT_EQ(last.joined.size(), 500u) << "the slices' members are not created again";
  created += last.joined.size();
  EXPECT_EQ(created, 2500u);
  GroupModel::Applied applied;
  {
    Outbox out;
    applied = model_.applyBatch(1, at(), std::nullopt, out);
  }
  EXPECT_EQ(applied.joined, 2500u);
  EXPECT_EQ(model_.generation(), 1);
  EXPECT_EQ(model_.members().size(), 2500u);
  ASSERT_EQ(a.got.size(), 2500u);
  for (auto& r : a.got) {
    EXPECT_EQ(std::get<protocol::RegisterConsumerResponse>(r).generation, 1);
    EXPECT_EQ(std::get<protocol::RegisterConsumerResponse>(r).memberCount, 2500);
  }
  EXPECT_TRUE(model_.quiet());
}

TEST_F(GroupModelTest, ASliceWhoseOutcomeIsUnknownAnswersEveryJoinItAndEarlierSlicesCarried) {
  load(0);
  Answers a;
  for (int i = 0; i < 2500; ++i) registerAs("m-" + std::to_string(10000 + i), a);
  model_.launchBatch(1000, at());
  model_.sliceWritten();
  model_.launchBatch(1000, at());
  {
    Outbox out;
    model_.failBatch(ErrorCode::CONTROLLER_NOT_AVAILABLE, out, /*retryMove=*/true);
  }
  ASSERT_EQ(a.got.size(), 2000u) << "the two slices' members are told to register again";
  for (auto& r : a.got) {
    EXPECT_EQ(std::get<protocol::RegisterConsumerResponse>(r).error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  }
  EXPECT_EQ(model_.batch().joins.pending().size(), 500u) << "the rest still waits";
  EXPECT_TRUE(model_.batch().written.empty());
}

TEST_F(GroupModelTest, ARefusedSliceRequeuesItsJoinsAndTheEarlierSlicesForTheReRead) {
  load(0);
  Answers a;
  for (int i = 0; i < 2500; ++i) registerAs("m-" + std::to_string(10000 + i), a);
  model_.launchBatch(1000, at());
  model_.sliceWritten();
  model_.launchBatch(1000, at());
  model_.requeueBatch();
  EXPECT_TRUE(a.got.empty());
  EXPECT_EQ(model_.batch().joins.pending().size(), 2500u);
  EXPECT_TRUE(model_.batch().written.empty());
  EXPECT_FALSE(model_.batch().sliceInFlight);
}

// ---- Heartbeats ----

TEST_F(GroupModelTest, HeartbeatAnswers) {
  load(0);
  join("a");
  EXPECT_EQ(beat("a", 1).error, ErrorCode::NONE);
  EXPECT_EQ(beat("a", 1).generation, 1);
  EXPECT_EQ(beat("a", 0).error, ErrorCode::REBALANCE_NEEDED);
  EXPECT_EQ(beat("nobody", 1).error, ErrorCode::UNKNOWN_CONSUMER);
}

TEST_F(GroupModelTest, AfterATakeoverAnUnknownMemberIsToldToRegisterAgain) {
  load(5, {"a"});
  EXPECT_EQ(beat("b", 5).error, ErrorCode::REBALANCE_NEEDED) << "it may hold partitions of the old controller";
  advance(kTimeoutMs + 1);
  EXPECT_EQ(beat("b", 5).error, ErrorCode::UNKNOWN_CONSUMER);
}

TEST_F(GroupModelTest, APartitionMovesWhenItsHolderHeartbeatsAndTheGroupSettles) {
  load(0);
  join("a");
  Answers b;
  registerAs("b", b);
  write();
  EXPECT_EQ(b.last<protocol::RegisterConsumerResponse>().partitions.size(), 0u) << "a still holds them";
  EXPECT_FALSE(model_.settled());
  EXPECT_EQ(stateOf("b"), MemberState::Registered);

  bool moved = false;
  EXPECT_EQ(beat("a", 2, &moved).error, ErrorCode::NONE);
  EXPECT_TRUE(moved) << "a released what generation 2 gives b";
  EXPECT_FALSE(model_.settled()) << "released, not granted yet";
  EXPECT_EQ(beat("b", 2).error, ErrorCode::REBALANCE_NEEDED) << "b's partitions are free: register again";

  Answers again;
  EXPECT_EQ(registerAs("b", again), GroupModel::Registration::Answered);
  EXPECT_EQ(again.last<protocol::RegisterConsumerResponse>().partitions.size(), 2u);
  EXPECT_TRUE(model_.settled());
  moved = false;
  EXPECT_EQ(beat("a", 2, &moved).error, ErrorCode::NONE);
  EXPECT_FALSE(moved);
}

TEST_F(GroupModelTest, AGroupIsInStepOnceEveryMemberWasHeardAtItsGenerationAndHoldsItsShare) {
  load(0);
  join("a");
  EXPECT_TRUE(model_.inStep());
  Answers b;
  registerAs("b", b);
  EXPECT_FALSE(model_.inStep()) << "a join waits";
  write();
  EXPECT_FALSE(model_.inStep()) << "a has not been heard at generation 2";
  EXPECT_EQ(beat("a", 1).error, ErrorCode::REBALANCE_NEEDED);
  EXPECT_FALSE(model_.inStep()) << "a heartbeat at an older generation is not heard at this one";
  EXPECT_EQ(beat("a", 2).error, ErrorCode::NONE);
  EXPECT_FALSE(model_.inStep()) << "heard, but b does not hold its partitions yet";
  Answers again;
  registerAs("b", again);
  EXPECT_TRUE(model_.inStep());
  Answers left;
  leave("b", left);
  EXPECT_FALSE(model_.inStep()) << "a removal waits";
  write();
  EXPECT_FALSE(model_.inStep()) << "a has not been heard at generation 3";
  EXPECT_EQ(beat("a", 3).error, ErrorCode::REBALANCE_NEEDED) << "b's partitions are a's now";
  Answers a3;
  registerAs("a", a3);
  EXPECT_TRUE(model_.inStep());
}

// A registration held up in the network until its client had given up on
// its connection and registered on a new one: answering it would grant
// partitions in an answer nobody reads, and the controller would count them
// as held by a member that never got them, for good (its heartbeats at the
// generation find it in sync).
TEST_F(GroupModelTest, ARegistrationOnAnOlderConnectionThanTheMembersLastIsRefusedAndGrantsNothing) {
  load(0);
  join("a");
  Answers b;
  registerOn(10, "b", b);
  write();
  EXPECT_EQ(b.last<protocol::RegisterConsumerResponse>().partitions.size(), 0u) << "a still holds them";
  EXPECT_EQ(beat("a", 2).error, ErrorCode::NONE);
  EXPECT_EQ(beat("b", 2).error, ErrorCode::REBALANCE_NEEDED) << "b's partitions are free";

  // b's registration sent on connection 7, before it moved to 10.
  Answers stale;
  EXPECT_EQ(registerOn(7, "b", stale), GroupModel::Registration::Refused);
  EXPECT_EQ(stale.last<protocol::RegisterConsumerResponse>().error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_TRUE(stale.last<protocol::RegisterConsumerResponse>().partitions.empty());
  EXPECT_EQ(model_.staleRegistrations(), 1u);
  EXPECT_FALSE(model_.settled()) << "granted on a stale registration";
  EXPECT_EQ(beat("b", 2).error, ErrorCode::REBALANCE_NEEDED) << "b is still told to come for its partitions";

  // On its own connection it gets them; a newer connection is taken too.
  Answers again;
  EXPECT_EQ(registerOn(10, "b", again), GroupModel::Registration::Answered);
  EXPECT_EQ(again.last<protocol::RegisterConsumerResponse>().partitions.size(), 2u);
  EXPECT_TRUE(model_.settled());
  Answers newer;
  EXPECT_EQ(registerOn(12, "b", newer), GroupModel::Registration::Answered);
  EXPECT_EQ(newer.last<protocol::RegisterConsumerResponse>().error, ErrorCode::NONE);
  Answers older;
  EXPECT_EQ(registerOn(10, "b", older), GroupModel::Registration::Refused) << "12 is its connection now";
  // Calls made inside the server (no connection) are never stale.
  Answers inside;
  EXPECT_EQ(registerOn(0, "b", inside), GroupModel::Registration::Answered);
}

// A registration that never became a member (refused while ZooKeeper was
// away, here) reported a partition: it is that client's until the client
// must have fenced, one session timeout after it was last heard, and then
// free, or the partition would wait for it for good.
TEST_F(GroupModelTest, WhatARegistrationThatNeverBecameAMemberReportedIsFreedAfterItsSessionTimeout) {
  load(0);
  Answers refused;
  EXPECT_EQ(registerAs("x", refused, Serving{true, /*connected=*/false}, {P{"t", 0}}),
            GroupModel::Registration::Refused);
  EXPECT_TRUE(model_.ownership().owns("x", P{"t", 0}));
  EXPECT_EQ(join("a").partitions.size(), 3u) << "t-0 is x's";

  advance(kTimeoutMs / 2);
  EXPECT_EQ(beat("a", 1).error, ErrorCode::NONE);
  model_.scanLiveness(now_);
  EXPECT_TRUE(model_.ownership().owns("x", P{"t", 0})) << "freed before x must have fenced";
  advance(kTimeoutMs / 2 + 1);
  EXPECT_EQ(beat("a", 1).error, ErrorCode::NONE);
  EXPECT_EQ(model_.scanLiveness(now_), 0u) << "a is heard: nobody to evict";
  EXPECT_FALSE(model_.ownership().owns("x", P{"t", 0}));
  EXPECT_EQ(beat("a", 1).error, ErrorCode::REBALANCE_NEEDED) << "t-0 is free: a comes for it";
  Answers again;
  EXPECT_EQ(registerAs("a", again), GroupModel::Registration::Answered);
  EXPECT_EQ(again.last<protocol::RegisterConsumerResponse>().partitions.size(), 4u);
  EXPECT_TRUE(model_.settled());
}

// ---- Leaving and liveness ----

TEST_F(GroupModelTest, LeaveOfAMemberQueuesItsRemovalAndItIsUnknownFromThen) {
  load(0);
  join("a");
  Answers left;
  EXPECT_TRUE(leave("a", left));
  EXPECT_EQ(stateOf("a"), MemberState::Leaving);
  EXPECT_EQ(beat("a", 1).error, ErrorCode::UNKNOWN_CONSUMER);
  GroupModel::Launched l = write();
  EXPECT_EQ(l.removed, std::vector<std::string>{"a"});
  EXPECT_EQ(left.last<protocol::LeaveGroupResponse>().error, ErrorCode::NONE);
  EXPECT_EQ(model_.member("a"), nullptr);
  EXPECT_EQ(model_.generation(), 2);
  EXPECT_TRUE(historyHas(RebalanceReason::MEMBER_LEFT));
  EXPECT_EQ(model_.ownership().heldCount(), 0u);
}

TEST_F(GroupModelTest, LeavesThatNeedNoWrite) {
  load(0);
  Answers joining, left, unknown, away;
  registerAs("a", joining);
  EXPECT_FALSE(leave("a", left));
  EXPECT_EQ(left.last<protocol::LeaveGroupResponse>().error, ErrorCode::NONE);
  EXPECT_EQ(joining.last<protocol::RegisterConsumerResponse>().error, ErrorCode::UNKNOWN_CONSUMER);
  EXPECT_FALSE(leave("x", unknown));
  EXPECT_EQ(unknown.last<protocol::LeaveGroupResponse>().error, ErrorCode::UNKNOWN_CONSUMER);
  join("b");
  EXPECT_FALSE(leave("b", away, /*connected=*/false));
  EXPECT_EQ(away.last<protocol::LeaveGroupResponse>().error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
}

TEST_F(GroupModelTest, ASilentMemberIsEvictedAndOneThatRegistersAgainInTimeStays) {
  load(0);
  join("a");
  join("b");
  EXPECT_EQ(model_.scanLiveness(now_), 0u);
  advance(kTimeoutMs / 2);
  beat("b", 2);
  advance(kTimeoutMs / 2 + 1);
  EXPECT_EQ(model_.scanLiveness(now_), 1u);
  EXPECT_EQ(stateOf("a"), MemberState::Leaving);
  EXPECT_EQ(stateOf("b"), MemberState::Registered);
  EXPECT_EQ(model_.nextLivenessScan(), now_) << "while a removal waits, every tick looks";

  // a comes back before its eviction is written: it stays.
  Answers back;
  registerAs("a", back, Serving{false, true});
  EXPECT_NE(stateOf("a"), MemberState::Leaving);
  EXPECT_FALSE(model_.batch().removals.hasPending());

  advance(kTimeoutMs + 1);
  beat("a", 2);
  EXPECT_EQ(model_.scanLiveness(now_), 1u) << "b fell silent";
  write();
  EXPECT_EQ(model_.member("b"), nullptr);
  EXPECT_TRUE(historyHas(RebalanceReason::MEMBER_EVICTED));
}

TEST_F(GroupModelTest, AnEphemeralGroupIsAbandonedWhenItsLastMemberGoesOrNobodyCame) {
  load(0, {}, protocol::AssignmentMode::SERVER, /*ephemeral=*/true);
  EXPECT_FALSE(model_.abandoned(now_));
  advance(kTimeoutMs);
  EXPECT_TRUE(model_.abandoned(now_)) << "nobody joined within a session timeout";
  join("a");
  EXPECT_FALSE(model_.abandoned(now_));
  Answers left;
  leave("a", left);
  write();
  EXPECT_TRUE(model_.emptiedOut());
  EXPECT_TRUE(model_.abandoned(now_));
}

// ---- Client mode ----

TEST_F(GroupModelTest, ClientModeStartsOnlyOnceEveryMemberRegisteredAtTheGeneration) {
  load(0, {}, protocol::AssignmentMode::CLIENT);
  Answers v0;
  EXPECT_EQ(registerAs("a", v0, {}, {}, /*version=*/0), GroupModel::Registration::Refused);
  EXPECT_EQ(v0.last<protocol::RegisterConsumerResponse>().error, ErrorCode::UNSUPPORTED_VERSION);

  join("a");
  EXPECT_TRUE(model_.settled());
  Answers b;
  registerAs("b", b);
  write();  // generation 2: b registered at it, a not yet
  EXPECT_EQ(b.last<protocol::RegisterConsumerResponse>().memberData.size(), 2u);
  EXPECT_FALSE(model_.settled());
  EXPECT_EQ(stateOf("a"), MemberState::Unregistered);
  EXPECT_EQ(beat("a", 2).error, ErrorCode::REBALANCE_NEEDED);
  EXPECT_EQ(beat("b", 2).error, ErrorCode::REBALANCE_IN_PROGRESS);
  Answers a;
  registerAs("a", a);
  EXPECT_TRUE(model_.settled());
  EXPECT_EQ(beat("b", 2).error, ErrorCode::NONE);
}

// Version 2 (docs/protocol.md §16): answers sized by the member's share.
TEST_F(GroupModelTest, AVersionTwoAnswerInServerModeCarriesTheShareAndTheCountNotTheMembers) {
  load();
  join("a");
  join("b");
  Answers v2, v1;
  EXPECT_EQ(registerAs("a", v2, {}, {}, /*version=*/2), GroupModel::Registration::Answered);
  EXPECT_EQ(registerAs("b", v1, {}, {}, /*version=*/1), GroupModel::Registration::Answered);
  const auto& r2 = v2.last<protocol::RegisterConsumerResponse>();
  EXPECT_TRUE(r2.members.empty());
  EXPECT_TRUE(r2.memberData.empty());
  EXPECT_EQ(r2.memberCount, 2);
  EXPECT_EQ(r2.listBase, -1);
  EXPECT_EQ(r2.partitions.size(), 2u);  // half of t's 4
  const auto& r1 = v1.last<protocol::RegisterConsumerResponse>();
  EXPECT_EQ(r1.members, (std::vector<std::string>{"a", "b"}));
}

TEST_F(GroupModelTest, AVersionTwoAnswerInClientModeCarriesOnlyTheChangeSinceTheGenerationTheMemberHolds) {
  load(0, {}, protocol::AssignmentMode::CLIENT);
  Answers a, b, c;
  registerAs("a", a, {}, {}, 2, -1, "wa");
  registerAs("b", b, {}, {}, 2, -1, "wb");
  write();  // generation 1: a and b, each given the whole list
  const auto& first = a.last<protocol::RegisterConsumerResponse>();
  EXPECT_EQ(first.generation, 1);
  EXPECT_EQ(first.listBase, -1);
  EXPECT_EQ(first.memberData,
            (std::vector<protocol::MemberMetadata>{{"a", "wa", ""}, {"b", "wb", ""}}));
  EXPECT_EQ(first.memberCount, 2);
  EXPECT_EQ(b.last<protocol::RegisterConsumerResponse>().memberData, first.memberData);

  registerAs("c", c, {}, {}, 2, -1, "wc");
  write();  // generation 2: c joined
  Answers a2;
  EXPECT_EQ(registerAs("a", a2, {}, {}, 2, /*known=*/1, "wa"), GroupModel::Registration::Answered);
  const auto& delta = a2.last<protocol::RegisterConsumerResponse>();
  EXPECT_EQ(delta.generation, 2);
  EXPECT_EQ(delta.listBase, 1);
  EXPECT_EQ(delta.memberData, (std::vector<protocol::MemberMetadata>{{"c", "wc", ""}}));
  EXPECT_TRUE(delta.removedMembers.empty());
  EXPECT_EQ(delta.memberCount, 3);

  // b leaves; a holds generation 2's list, c a generation never given out.
  Answers left;
  leave("b", left);
  write();  // generation 3
  Answers a3, c3;
  registerAs("a", a3, {}, {}, 2, /*known=*/2, "wa");
  registerAs("c", c3, {}, {}, 2, /*known=*/0, "wc");
  EXPECT_EQ(a3.last<protocol::RegisterConsumerResponse>().removedMembers, std::vector<std::string>{"b"});
  EXPECT_TRUE(a3.last<protocol::RegisterConsumerResponse>().memberData.empty());
  const auto& whole = c3.last<protocol::RegisterConsumerResponse>();
  EXPECT_EQ(whole.listBase, -1);
  EXPECT_EQ(whole.memberData, (std::vector<protocol::MemberMetadata>{{"a", "wa", ""}, {"c", "wc", ""}}));
  EXPECT_TRUE(model_.settled());
}

TEST_F(GroupModelTest, ClientModeEvictsAMemberThatDoesNotRegisterAtTheGenerationInTime) {
  load(0, {}, protocol::AssignmentMode::CLIENT);
  join("a");
  Answers b;
  registerAs("b", b);
  write();
  advance(kTimeoutMs / 2);
  beat("a", 2);
  beat("b", 2);
  advance(kTimeoutMs / 2 + 1);
  beat("a", 2);
  beat("b", 2);
  EXPECT_EQ(model_.scanLiveness(now_), 1u) << "a heartbeats but never registered at generation 2";
  EXPECT_EQ(stateOf("a"), MemberState::Leaving);
  auto l = model_.launchBatch(1000, at());
  ASSERT_FALSE(l.history.events.empty());
  EXPECT_NE(l.history.events.back().detail.find("did not register"), std::string::npos);
}

// ---- Offsets ----

TEST_F(GroupModelTest, CommitsAreTakenFromTheHolderOnlyAndAnsweredWhenDurable) {
  load(0);
  join("a");
  Answers c;
  {
    auto done = c.callback();
    Outbox out;
    protocol::CommitOffsetsRequest r{"g", "a", 1, {{"t", 0, 42}, {"t", 9, 1}, {"t", 1, -1}}};
    EXPECT_TRUE(model_.commit(r, ErrorCode::NONE, now_, done, out));
  }
  EXPECT_TRUE(c.got.empty());
  model_.commits().launch();
  {
    Outbox out;
    EXPECT_EQ(model_.commitsApplied(out), 1u);
  }
  const auto& resp = c.last<protocol::CommitOffsetsResponse>();
  ASSERT_EQ(resp.results.size(), 3u);
  EXPECT_EQ(resp.results[0].error, ErrorCode::NONE);
  EXPECT_EQ(resp.results[1].error, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
  EXPECT_EQ(resp.results[2].error, ErrorCode::INVALID_OFFSET);
  EXPECT_EQ(model_.committed().of(P{"t", 0}), 42);

  Answers stranger, refused;
  {
    auto done = stranger.callback();
    Outbox out;
    EXPECT_FALSE(model_.commit(protocol::CommitOffsetsRequest{"g", "x", 1, {{"t", 0, 1}}}, ErrorCode::NONE, now_,
                               done, out));
  }
  EXPECT_EQ(stranger.last<protocol::CommitOffsetsResponse>().error, ErrorCode::UNKNOWN_CONSUMER);
  {
    auto done = refused.callback();
    Outbox out;
    EXPECT_FALSE(model_.commit(protocol::CommitOffsetsRequest{"g", "a", 1, {{"t", 0, 1}}},
                               ErrorCode::CONTROLLER_NOT_AVAILABLE, now_, done, out));
  }
  EXPECT_EQ(refused.last<protocol::CommitOffsetsResponse>().error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
}

TEST_F(GroupModelTest, ARewindMovesTheGenerationAndFencesOlderCommits) {
  load(0);
  join("a");
  Answers w;
  {
    auto done = w.callback();
    Outbox out;
    EXPECT_TRUE(model_.rewind(protocol::RewindConsumerRequest{"g", {{"t", 0, 7}}}, ErrorCode::NONE, "alice", done,
                              out));
  }
  GroupModel::Launched l = write();
  EXPECT_EQ(l.rewound.size(), 1u);
  EXPECT_EQ(l.history.events.back().reason, RebalanceReason::REWIND);
  EXPECT_EQ(w.last<protocol::RewindConsumerResponse>().error, ErrorCode::NONE);
  EXPECT_EQ(model_.committed().of(P{"t", 0}), 7);
  EXPECT_EQ(model_.generation(), 2);
  Answers old;
  {
    auto done = old.callback();
    Outbox out;
    EXPECT_FALSE(model_.commit(protocol::CommitOffsetsRequest{"g", "a", 1, {{"t", 0, 50}}}, ErrorCode::NONE, now_,
                               done, out));
  }
  EXPECT_EQ(old.last<protocol::CommitOffsetsResponse>().error, ErrorCode::REBALANCE_NEEDED);
}

// ---- Topics, deletion, describe, the handover ----

TEST_F(GroupModelTest, ATopicChangeMovesTheGenerationOnlyWhenTheAssignmentChanges) {
  load(0);
  join("a");
  EXPECT_FALSE(model_.topicChanged("other", at())) << "not subscribed";
  EXPECT_FALSE(model_.topicChanged("t", at())) << "the same count";
  topics_.counts["t"] = 6;
  EXPECT_TRUE(model_.topicChanged("t", at()));
  EXPECT_TRUE(model_.batch().hasPendingWrites());
  GroupModel::Launched l = write();
  EXPECT_EQ(l.changes, 0u);
  EXPECT_EQ(l.history.events.back().reason, RebalanceReason::TOPIC_RESIZED);
  EXPECT_EQ(model_.generation(), 2);
  EXPECT_EQ(model_.ownership().target().at("a").size(), 6u);
}

TEST_F(GroupModelTest, OnlyAnEmptyGroupMayBeDeleted) {
  load(0);
  EXPECT_EQ(model_.deletable(), ErrorCode::NONE);
  Answers d;
  model_.queueDeletion(d.callback());
  EXPECT_TRUE(model_.deletionWaiting());
  {
    Outbox out;
    model_.answerDeletions(ErrorCode::NONE, out);
  }
  EXPECT_EQ(d.last<protocol::DeleteGroupResponse>().error, ErrorCode::NONE);
  EXPECT_FALSE(model_.deletionWaiting());
  join("a");
  EXPECT_EQ(model_.deletable(), ErrorCode::GROUP_NOT_EMPTY);
}

TEST_F(GroupModelTest, DescribeListsMembersHoldingsAndWhatTheyWaitFor) {
  const protocol::Broker self{1, "127.0.0.1", 7400};
  EXPECT_TRUE(model_.describe(self, protocol::GroupState::LOADING, at()).members.empty());
  load(0);
  join("a");
  Answers b;
  registerAs("b", b);
  write();
  auto d = model_.describe(self, protocol::GroupState::REBALANCING, at());
  EXPECT_EQ(d.state, protocol::GroupState::REBALANCING) << "the state is the caller's";
  EXPECT_EQ(d.generation, 2);
  ASSERT_EQ(d.members.size(), 2u);
  EXPECT_EQ(d.members[0].consumerId, "a");
  EXPECT_EQ(d.members[0].held.size(), 4u);
  EXPECT_EQ(d.members[1].waiting.size(), 2u) << "b waits for what a still holds";
  ASSERT_EQ(d.topics.size(), 1u);
  EXPECT_EQ(d.topics[0].partitions, 4);
  EXPECT_FALSE(d.history.empty());
}

TEST_F(GroupModelTest, AHandoverRecordIsTrustedByTheNextControllerWhenNothingMovedSince) {
  load(0);
  join("a");
  join("b");
  beat("a", 2);
  Answers again;
  registerAs("b", again);
  ASSERT_TRUE(model_.settled());
  layout::HandoverRecord record = model_.handoverRecord(1, 2, 1000);
  EXPECT_TRUE(record.movedMembers);
  EXPECT_EQ(record.generation, 2);
  ASSERT_EQ(record.members.size(), 2u);
  EXPECT_EQ(record.members.at("a").held.size(), 2u);

  FakeTopics topics;
  topics.counts["t"] = 4;
  GroupModel next("g", 2, topics, now_);
  GroupModel::Read r;
  layout::GroupSettings s;
  s.sessionTimeoutMs = kTimeoutMs;
  s.topics = {"t"};
  r.settingsData = layout::encodeSettings(s);
  r.version = 2;
  r.cversion = record.cversion + 1;  // this server's controller znode
  r.handover = layout::encodeHandover(record);
  Outbox out;
  auto loaded = next.applyRead(std::move(r), true, at(), out);
  ASSERT_TRUE(loaded.ok);
  EXPECT_EQ(loaded.adopt, (std::vector<std::string>{"a", "b"})) << "their znodes move to this session";
  EXPECT_FALSE(next.ownership().inGrace(now_)) << "nothing waits out a session timeout";
  EXPECT_TRUE(next.settled());
  EXPECT_EQ(next.ownership().heldBy("a").size(), 2u);
}

TEST_F(GroupModelTest, AnsweringEverythingWaitingLeavesNothingQueued) {
  load(0);
  join("a");
  Answers j, c, d;
  registerAs("b", j);
  {
    auto done = c.callback();
    Outbox out;
    model_.commit(protocol::CommitOffsetsRequest{"g", "a", 1, {{"t", 0, 1}}}, ErrorCode::NONE, now_, done, out);
  }
  model_.queueDeletion(d.callback());
  {
    Outbox out;
    model_.answerQueued(ErrorCode::CONTROLLER_NOT_AVAILABLE, out);
  }
  EXPECT_EQ(j.last<protocol::RegisterConsumerResponse>().error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_EQ(c.last<protocol::CommitOffsetsResponse>().error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_EQ(d.last<protocol::DeleteGroupResponse>().error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_TRUE(model_.quiet());
}

}  // namespace
}  // namespace groupcoord::adapter
