// One Kafka group under the classic group protocol, driven directly
// (adapter/kafka/ClassicGroup.h): the join barrier with MEMBER_ID_REQUIRED
// and the initial delay, the leader's member list, SyncGroup parking until
// the leader's assignment, Heartbeat's answers per state, leaving, session
// and barrier timeouts, the protocol vote, static members replacing their
// old id, OffsetCommit's fence, and the snapshot with its strict decoder.
// Time is a TimePoint the tests advance; nothing sleeps.

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "adapter/kafka/ClassicGroup.h"

namespace groupcoord::adapter::kafka {
namespace {

using wire::ErrorCode;
using Protocols = std::vector<wire::JoinGroupRequest::Protocol>;

const TimePoint kT0 = TimePoint(std::chrono::hours(1));
constexpr int32_t kSessionMs = 10000;
constexpr int32_t kRebalanceMs = 30000;

Protocols range() { return {{"range", "m-range"}}; }

GroupRules noDelay() {
  GroupRules r;
  r.initialRebalanceDelay = Millis(0);
  return r;
}

// The group and what came out of it: every answer by ticket, each ticket
// answered at most once.
struct Harness {
  explicit Harness(GroupRules r = noDelay()) : rules(r), g("g", r) {}

  GroupRules rules;
  ClassicGroup g;
  TimePoint now = kT0;
  Ticket nextTicket = 1;
  uint16_t port = 0;  // the source port the next joins come from
  std::map<Ticket, wire::JoinGroupResponse> joins;
  std::map<Ticket, wire::SyncGroupResponse> syncs;
  Effects last;

  void collect(Effects& e) {
    for (auto& [t, r] : e.joins) {
      EXPECT_FALSE(joins.count(t) || syncs.count(t)) << "ticket " << t << " answered twice";
      joins[t] = r;
    }
    for (auto& [t, r] : e.syncs) {
      EXPECT_FALSE(joins.count(t) || syncs.count(t)) << "ticket " << t << " answered twice";
      syncs[t] = r;
    }
    last = e;
  }

  Ticket join(const std::string& memberId, const std::string& fresh, int16_t version = 5,
              Protocols protocols = range(), std::optional<std::string> instance = std::nullopt,
              int32_t sessionMs = kSessionMs, std::string protocolType = "consumer") {
    JoinArgs a;
    a.request.groupId = "g";
    a.request.sessionTimeoutMs = sessionMs;
    a.request.rebalanceTimeoutMs = kRebalanceMs;
    a.request.memberId = memberId;
    a.request.groupInstanceId = std::move(instance);
    a.request.protocolType = std::move(protocolType);
    a.request.protocols = std::move(protocols);
    a.version = version;
    a.clientId = "client-" + (memberId.empty() ? fresh : memberId);
    a.clientHost = "/10.0.0.1";
    a.clientPort = port;
    a.freshMemberId = fresh;
    Ticket t = nextTicket++;
    Effects e;
    g.join(t, a, now, e);
    collect(e);
    return t;
  }

  Ticket sync(const std::string& memberId, int32_t generation, std::vector<std::pair<std::string, std::string>> as = {},
              std::optional<std::string> instance = std::nullopt) {
    SyncArgs a;
    a.request.groupId = "g";
    a.request.generationId = generation;
    a.request.memberId = memberId;
    a.request.groupInstanceId = std::move(instance);
    for (auto& [m, bytes] : as) a.request.assignments.push_back({m, bytes});
    a.version = 3;
    Ticket t = nextTicket++;
    Effects e;
    g.sync(t, a, now, e);
    collect(e);
    return t;
  }

  ErrorCode heartbeat(const std::string& memberId, int32_t generation,
                      std::optional<std::string> instance = std::nullopt) {
    wire::HeartbeatRequest r;
    r.groupId = "g";
    r.memberId = memberId;
    r.generationId = generation;
    r.groupInstanceId = std::move(instance);
    Effects e;
    ErrorCode c = g.heartbeat(r, now, e);
    collect(e);
    return c;
  }

  ErrorCode leave(const std::string& memberId) {
    Effects e;
    ErrorCode c = g.leave(memberId, now, e);
    collect(e);
    return c;
  }

  Effects abandon(ErrorCode answer, bool deleted) {
    Effects e;
    g.abandon(answer, deleted, e);
    collect(e);
    return e;
  }

  void advance(Millis d) {
    now += d;
    Effects e;
    g.tick(now, e);
    collect(e);
  }

  bool answered(Ticket t) const { return joins.count(t) || syncs.count(t); }

  // A stable generation 1 of these members, the first the leader, each
  // assigned "assign-<id>", as a controller resumes it (the barrier that
  // forms a generation has tests of its own).
  void formStable(const std::vector<std::string>& ids) {
    Snapshot s{.generation = 1, .protocolType = "consumer", .protocolName = "range", .leader = ids.front()};
    for (auto& id : ids) {
      s.members.push_back(MemberView{.memberId = id,
                                     .clientId = "client-" + id,
                                     .clientHost = "/10.0.0.1",
                                     .sessionTimeoutMs = kSessionMs,
                                     .rebalanceTimeoutMs = kRebalanceMs,
                                     .protocols = range(),
                                     .assignment = "assign-" + id});
    }
    g = ClassicGroup::resume("g", rules, s, now);
    ASSERT_EQ(g.state(), State::Stable);
  }

  // Static members s1 (instance i1, the leader) and s2 (i2) joined the
  // real way: s1 alone formed generation 1, s2 made generation 2, which s1
  // assigned (A1, A2).
  void formStatic() {
    join("", "s1", 5, range(), "i1");
    join("", "s2", 5, range(), "i2");
    join("s1", "unused", 5, range(), "i1");
    ASSERT_EQ(g.generation(), 2);
    sync("s1", 2, {{"s1", "A1"}, {"s2", "A2"}}, "i1");
    ASSERT_EQ(g.state(), State::Stable);
  }
};

// ---- Forming a group ------------------------------------------------------------

TEST(KafkaClassicGroupTest, ThreeMembersFormViaMemberIdRequiredAndTheInitialDelay) {
  Harness h(GroupRules{});  // initial delay 3 s
  for (auto id : {"a", "b", "c"}) {
    Ticket t = h.join("", id, 4);
    ASSERT_TRUE(h.joins.count(t));
    EXPECT_EQ(h.joins[t].error, ErrorCode::MEMBER_ID_REQUIRED);
    EXPECT_EQ(h.joins[t].memberId, id);
  }
  EXPECT_EQ(h.g.state(), State::Empty);
  EXPECT_TRUE(h.g.empty());

  Ticket ta = h.join("a", "unused", 4);
  EXPECT_EQ(h.g.state(), State::PreparingRebalance);
  h.now += Millis(1000);
  Ticket tb = h.join("b", "unused", 4);
  h.now += Millis(1000);
  Ticket tc = h.join("c", "unused", 4);
  EXPECT_EQ(h.g.size(), 3u);
  // Everyone has joined, yet the delay holds the barrier open.
  EXPECT_FALSE(h.answered(ta) || h.answered(tb) || h.answered(tc));
  EXPECT_EQ(h.g.nextDeadline(), kT0 + Millis(3000));

  // New members came during the first period: one more period.
  h.advance(Millis(1000));
  EXPECT_FALSE(h.answered(ta));
  EXPECT_EQ(h.g.state(), State::PreparingRebalance);
  EXPECT_EQ(h.g.nextDeadline(), kT0 + Millis(6000));
  h.advance(Millis(2999));
  EXPECT_FALSE(h.answered(ta));
  h.advance(Millis(1));

  ASSERT_TRUE(h.answered(ta) && h.answered(tb) && h.answered(tc));
  EXPECT_EQ(h.g.state(), State::CompletingRebalance);
  EXPECT_EQ(h.g.generation(), 1);
  EXPECT_EQ(h.g.leader(), "a");
  EXPECT_EQ(h.g.protocolName(), "range");
  for (auto [t, id] : {std::pair{ta, "a"}, {tb, "b"}, {tc, "c"}}) {
    EXPECT_EQ(h.joins[t].error, ErrorCode::NONE);
    EXPECT_EQ(h.joins[t].generationId, 1);
    EXPECT_EQ(h.joins[t].leader, "a");
    EXPECT_EQ(h.joins[t].memberId, id);
    EXPECT_EQ(h.joins[t].protocolName, "range");
  }
  ASSERT_EQ(h.joins[ta].members.size(), 3u);
  EXPECT_EQ(h.joins[ta].members[0].memberId, "a");
  EXPECT_EQ(h.joins[ta].members[2].memberId, "c");
  EXPECT_EQ(h.joins[ta].members[1].metadata, "m-range");
  EXPECT_TRUE(h.joins[tb].members.empty());
  EXPECT_TRUE(h.joins[tc].members.empty());
}

TEST(KafkaClassicGroupTest, InitialDelayEndsAfterOnePeriodWithoutNewMembersAndZeroMeansNoWait) {
  Harness delayed(GroupRules{});
  Ticket t = delayed.join("", "a", 3);
  EXPECT_FALSE(delayed.answered(t));
  delayed.advance(Millis(3000));
  ASSERT_TRUE(delayed.answered(t));
  EXPECT_EQ(delayed.joins[t].generationId, 1);

  Harness at(noDelay());
  Ticket u = at.join("", "a", 3);
  ASSERT_TRUE(at.answered(u));
  EXPECT_EQ(at.g.state(), State::CompletingRebalance);
}

TEST(KafkaClassicGroupTest, InitialDelayNeverRunsPastTheRebalanceTimeout) {
  GroupRules rules;
  rules.initialRebalanceDelay = Millis(20000);  // rebalance timeout 30 s
  Harness h(rules);
  Ticket ta = h.join("", "a", 3);
  h.now += Millis(1000);
  h.join("", "b", 3);
  h.advance(Millis(19000));  // first period ends; b was new: 10 s more (what remains), not 20
  EXPECT_FALSE(h.answered(ta));
  EXPECT_EQ(h.g.nextDeadline(), kT0 + Millis(30000));
  h.now += Millis(5000);
  h.join("", "c", 3);  // new again, but nothing of the timeout remains
  h.advance(Millis(5000));
  ASSERT_TRUE(h.answered(ta));
  EXPECT_EQ(h.joins[ta].members.size(), 3u);
}

TEST(KafkaClassicGroupTest, PendingMemberIdLapsesAfterTheSessionTimeoutAndOldVersionsJoinAtOnce) {
  Harness h;
  h.join("", "p", 4);
  EXPECT_EQ(h.g.nextDeadline(), kT0 + Millis(kSessionMs));
  h.advance(Millis(kSessionMs));
  Ticket t = h.join("p", "unused", 4);
  EXPECT_EQ(h.joins[t].error, ErrorCode::UNKNOWN_MEMBER_ID);

  Ticket old = h.join("", "v3", 3);
  EXPECT_EQ(h.joins[old].error, ErrorCode::NONE);
  EXPECT_EQ(h.joins[old].memberId, "v3");
}

TEST(KafkaClassicGroupTest, PendingMemberIdHoldsTheBarrier) {
  Harness h;
  h.formStable({"a"});
  h.join("", "b", 4);  // MEMBER_ID_REQUIRED: b is expected
  Ticket ta = h.join("a", "unused", 4, {{"range", "changed"}});
  EXPECT_FALSE(h.answered(ta));
  Ticket tb = h.join("b", "unused", 4);
  ASSERT_TRUE(h.answered(ta) && h.answered(tb));
  EXPECT_EQ(h.joins[ta].members.size(), 2u);
}

TEST(KafkaClassicGroupTest, JoinValidation) {
  GroupRules rules = noDelay();
  rules.maxSize = 2;
  Harness h(rules);
  Ticket shortSession = h.join("", "x", 3, range(), std::nullopt, 5999);
  EXPECT_EQ(h.joins[shortSession].error, ErrorCode::INVALID_SESSION_TIMEOUT);
  Ticket longSession = h.join("", "x", 3, range(), std::nullopt, 300001);
  EXPECT_EQ(h.joins[longSession].error, ErrorCode::INVALID_SESSION_TIMEOUT);
  Ticket noProtocols = h.join("", "x", 3, {});
  EXPECT_EQ(h.joins[noProtocols].error, ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
  Ticket noType = h.join("", "x", 3, range(), std::nullopt, kSessionMs, "");
  EXPECT_EQ(h.joins[noType].error, ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
  EXPECT_TRUE(h.g.empty());

  h.formStable({"a", "b"});
  Ticket third = h.join("", "c", 3);
  EXPECT_EQ(h.joins[third].error, ErrorCode::GROUP_MAX_SIZE_REACHED);
  // The size comes first, as Kafka checks it: even an unknown member id hears of it.
  Ticket stranger = h.join("nobody", "c", 4);
  EXPECT_EQ(h.joins[stranger].error, ErrorCode::GROUP_MAX_SIZE_REACHED);
  EXPECT_EQ(h.g.state(), State::Stable);
  // A member already in a full group may still join again.
  Ticket again = h.join("b", "unused", 3);
  EXPECT_EQ(h.joins[again].error, ErrorCode::NONE);
}

// ---- SyncGroup and Heartbeat -----------------------------------------------------

TEST(KafkaClassicGroupTest, SyncParksUntilTheLeadersAssignment) {
  Harness h;
  h.join("", "a", 3);
  h.join("", "b", 3);  // a alone formed generation 1; b's join starts generation 2
  Ticket ta = h.join("a", "unused", 3);
  ASSERT_TRUE(h.answered(ta));
  ASSERT_EQ(h.g.generation(), 2);
  h.join("", "c", 3);
  for (auto id : {"a", "b"}) h.join(id, "unused", 3);
  ASSERT_EQ(h.g.state(), State::CompletingRebalance);
  ASSERT_EQ(h.g.generation(), 3);
  ASSERT_EQ(h.g.leader(), "a");

  Ticket sb = h.sync("b", 3);
  Ticket sc = h.sync("c", 3);
  EXPECT_FALSE(h.answered(sb) || h.answered(sc));
  Ticket sa = h.sync("a", 3, {{"a", "A"}, {"b", "B"}, {"zz", "ignored"}});
  ASSERT_TRUE(h.answered(sa) && h.answered(sb) && h.answered(sc));
  EXPECT_TRUE(h.last.becameStable);
  EXPECT_EQ(h.g.state(), State::Stable);
  EXPECT_EQ(h.syncs[sa].assignment, "A");
  EXPECT_EQ(h.syncs[sb].assignment, "B");
  EXPECT_EQ(h.syncs[sc].error, ErrorCode::NONE);
  EXPECT_EQ(h.syncs[sc].assignment, "");

  // Stable: the stored assignment at once, whatever is sent.
  Ticket again = h.sync("b", 3, {{"b", "other"}});
  EXPECT_EQ(h.syncs[again].assignment, "B");
  EXPECT_FALSE(h.last.becameStable);
  EXPECT_EQ(h.syncs[h.sync("b", 2)].error, ErrorCode::ILLEGAL_GENERATION);
  EXPECT_EQ(h.syncs[h.sync("zz", 3)].error, ErrorCode::UNKNOWN_MEMBER_ID);
}

TEST(KafkaClassicGroupTest, HeartbeatAnswersPerState) {
  Harness h;
  h.join("", "a", 3);
  h.join("", "b", 3);
  ASSERT_EQ(h.g.state(), State::PreparingRebalance);
  EXPECT_EQ(h.heartbeat("a", 1), ErrorCode::REBALANCE_IN_PROGRESS);
  EXPECT_EQ(h.heartbeat("a", 0), ErrorCode::ILLEGAL_GENERATION);
  h.join("a", "unused", 3);
  ASSERT_EQ(h.g.state(), State::CompletingRebalance);
  EXPECT_EQ(h.heartbeat("b", 2), ErrorCode::NONE);
  EXPECT_EQ(h.heartbeat("b", 1), ErrorCode::ILLEGAL_GENERATION);
  EXPECT_EQ(h.heartbeat("nobody", 2), ErrorCode::UNKNOWN_MEMBER_ID);
  h.sync("a", 2, {{"a", "A"}, {"b", "B"}});
  ASSERT_EQ(h.g.state(), State::Stable);
  EXPECT_EQ(h.heartbeat("a", 2), ErrorCode::NONE);

  EXPECT_EQ(h.leave("a"), ErrorCode::NONE);
  EXPECT_EQ(h.leave("b"), ErrorCode::NONE);
  ASSERT_EQ(h.g.state(), State::Empty);
  EXPECT_EQ(h.g.generation(), 3);
  EXPECT_EQ(h.heartbeat("a", 3), ErrorCode::UNKNOWN_MEMBER_ID);

  h.abandon(ErrorCode::NOT_COORDINATOR, true);
  EXPECT_EQ(h.g.state(), State::Dead);
  EXPECT_EQ(h.heartbeat("a", 3), ErrorCode::COORDINATOR_NOT_AVAILABLE);
}

// ---- Leaving and timeouts --------------------------------------------------------

TEST(KafkaClassicGroupTest, LeaveStartsARebalanceAndTheRemainingMembersFormTheNextGeneration) {
  Harness h;
  h.formStable({"a", "b", "c"});
  EXPECT_EQ(h.leave("a"), ErrorCode::NONE);  // the leader
  ASSERT_EQ(h.last.removed.size(), 1u);
  EXPECT_EQ(h.last.removed[0], (std::pair<std::string, std::string>{"a", "left"}));
  EXPECT_EQ(h.g.state(), State::PreparingRebalance);
  EXPECT_EQ(h.leave("a"), ErrorCode::UNKNOWN_MEMBER_ID);
  EXPECT_EQ(h.heartbeat("b", 1), ErrorCode::REBALANCE_IN_PROGRESS);

  Ticket tc = h.join("c", "unused", 3);
  Ticket tb = h.join("b", "unused", 3);
  ASSERT_TRUE(h.answered(tb) && h.answered(tc));
  EXPECT_EQ(h.g.generation(), 2);
  // The leader left: the earliest-joined member of those that came leads.
  EXPECT_EQ(h.g.leader(), "b");
  EXPECT_EQ(h.joins[tb].members.size(), 2u);
  EXPECT_TRUE(h.joins[tc].members.empty());
}

TEST(KafkaClassicGroupTest, LeaveAnswersTheLeaversParkedJoinAndCompletesTheBarrier) {
  Harness h;
  h.formStable({"a", "b", "c"});
  Ticket ta = h.join("a", "unused", 3);  // the leader: a rebalance
  Ticket tb = h.join("b", "unused", 3);
  EXPECT_FALSE(h.answered(tb));
  EXPECT_EQ(h.leave("b"), ErrorCode::NONE);
  ASSERT_TRUE(h.answered(tb));
  EXPECT_EQ(h.joins[tb].error, ErrorCode::UNKNOWN_MEMBER_ID);
  EXPECT_FALSE(h.answered(ta));
  EXPECT_EQ(h.leave("c"), ErrorCode::NONE);  // only a remains, and it waits: the barrier completes
  ASSERT_TRUE(h.answered(ta));
  EXPECT_EQ(h.joins[ta].generationId, 2);
  ASSERT_EQ(h.joins[ta].members.size(), 1u);
}

TEST(KafkaClassicGroupTest, LeaveDuringCompletingRebalanceAnswersParkedSyncs) {
  Harness h;
  h.join("", "a", 3);
  h.join("", "b", 3);
  h.port = 41000;  // a's connection: a join again names where it came from last
  h.join("a", "unused", 3);
  ASSERT_EQ(h.g.state(), State::CompletingRebalance);
  Ticket sb = h.sync("b", 2);
  EXPECT_EQ(h.leave("b"), ErrorCode::NONE);
  ASSERT_TRUE(h.answered(sb));
  EXPECT_EQ(h.syncs[sb].error, ErrorCode::UNKNOWN_MEMBER_ID);
  // a, the only member left, has no parked join: the barrier waits for it.
  EXPECT_EQ(h.g.state(), State::PreparingRebalance);
}

TEST(KafkaClassicGroupTest, LastMemberLeavingEmptiesTheGroupWithANewGeneration) {
  Harness h;
  h.formStable({"a"});
  EXPECT_EQ(h.leave("a"), ErrorCode::NONE);
  EXPECT_EQ(h.g.state(), State::Empty);
  EXPECT_EQ(h.g.generation(), 2);
  EXPECT_EQ(h.g.protocolName(), "");
  EXPECT_EQ(h.g.leader(), "");
  EXPECT_EQ(h.g.nextDeadline(), std::nullopt);
}

TEST(KafkaClassicGroupTest, AGroupStartedAtAGenerationFormsTheNextOne) {
  // The controller starts a group at its znode's version: generations go
  // on from there, never back.
  Harness h;
  h.g = ClassicGroup("g", h.rules, 41);
  EXPECT_EQ(h.g.generation(), 41);
  EXPECT_EQ(h.g.state(), State::Empty);
  h.join("", "a");
  const Ticket t = h.join("a", "unused");
  ASSERT_TRUE(h.joins.count(t));
  EXPECT_EQ(h.joins[t].error, ErrorCode::NONE);
  EXPECT_EQ(h.joins[t].generationId, 42);
  EXPECT_EQ(h.g.generation(), 42);
  EXPECT_EQ(h.leave("a"), ErrorCode::NONE);
  EXPECT_EQ(h.g.generation(), 43);
}

TEST(KafkaClassicGroupTest, SessionTimeoutRemovesTheSilentMember) {
  Harness h;
  h.formStable({"a", "b"});
  EXPECT_EQ(h.g.nextDeadline(), kT0 + Millis(kSessionMs));
  h.now += Millis(6000);
  EXPECT_EQ(h.heartbeat("a", 1), ErrorCode::NONE);
  h.advance(Millis(3999));
  EXPECT_EQ(h.g.size(), 2u);
  h.advance(Millis(1));
  ASSERT_EQ(h.g.size(), 1u);
  ASSERT_EQ(h.last.removed.size(), 1u);
  EXPECT_EQ(h.last.removed[0], (std::pair<std::string, std::string>{"b", "session timeout"}));
  EXPECT_EQ(h.g.state(), State::PreparingRebalance);
  EXPECT_EQ(h.heartbeat("a", 1), ErrorCode::REBALANCE_IN_PROGRESS);
  Ticket ta = h.join("a", "unused", 3);
  ASSERT_TRUE(h.answered(ta));
  EXPECT_EQ(h.joins[ta].generationId, 2);
}

TEST(KafkaClassicGroupTest, AMemberWaitingInJoinOutlivesItsSession) {
  Harness h;
  h.formStable({"a", "b"});
  h.now += Millis(5000);
  h.heartbeat("b", 1);
  Ticket ta = h.join("a", "unused", 3);  // the leader: the barrier waits for b
  h.advance(Millis(9000));               // a's session would have ended at 15 s; b heartbeats at 14 s
  EXPECT_EQ(h.heartbeat("b", 1), ErrorCode::REBALANCE_IN_PROGRESS);
  h.advance(Millis(2000));
  EXPECT_EQ(h.g.size(), 2u);
  EXPECT_FALSE(h.answered(ta));
}

TEST(KafkaClassicGroupTest, BarrierDeadlineRemovesTheMemberThatDidNotRejoin) {
  Harness h;
  h.formStable({"a", "b", "c"});
  Ticket ta = h.join("a", "unused", 3);
  Ticket tb = h.join("b", "unused", 3);
  EXPECT_EQ(h.g.nextDeadline(), kT0 + Millis(kSessionMs));  // c's session comes first
  for (int i = 0; i < 5; ++i) {
    h.now += Millis(5000);
    EXPECT_EQ(h.heartbeat("c", 1), ErrorCode::REBALANCE_IN_PROGRESS);
    h.advance(Millis(0));
  }
  EXPECT_FALSE(h.answered(ta));
  EXPECT_EQ(h.g.nextDeadline(), kT0 + Millis(kRebalanceMs));
  h.advance(Millis(5000));
  ASSERT_TRUE(h.answered(ta) && h.answered(tb));
  ASSERT_EQ(h.last.removed.size(), 1u);
  EXPECT_EQ(h.last.removed[0], (std::pair<std::string, std::string>{"c", "did not rejoin"}));
  EXPECT_EQ(h.joins[ta].generationId, 2);
  EXPECT_EQ(h.joins[ta].members.size(), 2u);
  EXPECT_EQ(h.heartbeat("c", 1), ErrorCode::UNKNOWN_MEMBER_ID);
}

// ---- The protocol ---------------------------------------------------------------

TEST(KafkaClassicGroupTest, ProtocolVoteAmongTheCommonProtocols) {
  Harness h;
  Ticket ta = h.join("", "a", 3, {{"range", "ra"}, {"roundrobin", "rr-a"}});
  h.join("", "b", 3, {{"roundrobin", "rr-b"}, {"range", "rb"}});
  h.join("", "c", 3, {{"roundrobin", "rr-c"}, {"sticky", "s"}});
  ta = h.join("a", "unused", 3, {{"range", "ra"}, {"roundrobin", "rr-a"}});
  h.join("b", "unused", 3, {{"roundrobin", "rr-b"}, {"range", "rb"}});
  ASSERT_EQ(h.g.state(), State::CompletingRebalance);
  // range is not c's: roundrobin is the only candidate, and a votes for it.
  EXPECT_EQ(h.g.protocolName(), "roundrobin");
  ASSERT_EQ(h.joins[ta].members.size(), 3u);
  EXPECT_EQ(h.joins[ta].members[0].metadata, "rr-a");
  EXPECT_EQ(h.joins[ta].members[2].metadata, "rr-c");
  EXPECT_EQ(h.g.describe().members[1].memberMetadata, "rr-b");

  // Two of three prefer range.
  Harness m;
  m.join("", "a", 3, {{"roundrobin", ""}, {"range", ""}});
  m.join("", "b", 3, {{"range", ""}, {"roundrobin", ""}});
  m.join("", "c", 3, {{"range", ""}, {"roundrobin", ""}});
  m.join("a", "unused", 3, {{"roundrobin", ""}, {"range", ""}});
  m.join("b", "unused", 3, {{"range", ""}, {"roundrobin", ""}});
  EXPECT_EQ(m.g.protocolName(), "range");
}

TEST(KafkaClassicGroupTest, ProtocolVoteTieGoesToTheEarliestMembersPreference) {
  Harness h;
  h.join("", "a", 3, {{"roundrobin", ""}, {"range", ""}});
  h.join("", "b", 3, {{"range", ""}, {"roundrobin", ""}});
  h.join("a", "unused", 3, {{"roundrobin", ""}, {"range", ""}});
  ASSERT_EQ(h.g.state(), State::CompletingRebalance);
  EXPECT_EQ(h.g.protocolName(), "roundrobin");
}

TEST(KafkaClassicGroupTest, InconsistentGroupProtocol) {
  Harness h;
  h.formStable({"a", "b"});
  Ticket disjoint = h.join("", "c", 3, {{"sticky", ""}});
  EXPECT_EQ(h.joins[disjoint].error, ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
  Ticket otherType = h.join("", "c", 3, range(), std::nullopt, kSessionMs, "connect");
  EXPECT_EQ(h.joins[otherType].error, ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
  // A member's own old protocols do not count: b may not move away from a.
  Ticket away = h.join("b", "unused", 3, {{"sticky", ""}});
  EXPECT_EQ(h.joins[away].error, ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
  EXPECT_EQ(h.g.state(), State::Stable);
  EXPECT_EQ(h.g.size(), 2u);
  Ticket shared = h.join("", "c", 3, {{"sticky", ""}, {"range", ""}});
  EXPECT_EQ(h.joins.count(shared), 0u);  // parked: a rebalance
  EXPECT_EQ(h.g.state(), State::PreparingRebalance);
}

// ---- Rebalances back to back -----------------------------------------------------

TEST(KafkaClassicGroupTest, BackToBackRebalancesAsCooperativeMembersDo) {
  Harness h;
  h.formStable({"a", "b"});
  // Stable, a non-leader with unchanged protocols: its current generation at once.
  Ticket same = h.join("b", "unused", 3);
  ASSERT_TRUE(h.answered(same));
  EXPECT_EQ(h.joins[same].generationId, 1);
  EXPECT_EQ(h.g.state(), State::Stable);

  // Each member joins again right after its sync, as a cooperative
  // consumer does after giving partitions up; each round is a generation.
  for (int32_t gen = 2; gen <= 4; ++gen) {
    Ticket ta = h.join("a", "unused", 3, {{"range", "owned-" + std::to_string(gen)}});
    Ticket tb = h.join("b", "unused", 3, {{"range", "owned-" + std::to_string(gen)}});
    ASSERT_TRUE(h.answered(ta) && h.answered(tb));
    ASSERT_EQ(h.joins[ta].generationId, gen);
    Ticket sb = h.sync("b", gen);
    h.sync("a", gen, {{"a", "A" + std::to_string(gen)}, {"b", "B" + std::to_string(gen)}});
    ASSERT_EQ(h.g.state(), State::Stable);
    EXPECT_EQ(h.syncs[sb].assignment, "B" + std::to_string(gen));
  }

  // A changed join while CompletingRebalance aborts the round: the parked
  // syncs learn of it, and the next round is one generation further.
  Ticket ta = h.join("a", "unused", 3);
  h.join("b", "unused", 3);
  ASSERT_EQ(h.joins[ta].generationId, 5);
  Ticket sb = h.sync("b", 5);
  Ticket again = h.join("b", "unused", 3);  // unchanged: the current answer
  EXPECT_EQ(h.joins[again].generationId, 5);
  EXPECT_FALSE(h.answered(sb));
  Ticket changed = h.join("b", "unused", 3, {{"range", "new"}});
  ASSERT_TRUE(h.answered(sb));
  EXPECT_EQ(h.syncs[sb].error, ErrorCode::REBALANCE_IN_PROGRESS);
  EXPECT_EQ(h.g.state(), State::PreparingRebalance);
  EXPECT_EQ(h.syncs[h.sync("a", 5)].error, ErrorCode::REBALANCE_IN_PROGRESS);
  Ticket ta2 = h.join("a", "unused", 3);
  ASSERT_TRUE(h.answered(changed) && h.answered(ta2));
  EXPECT_EQ(h.joins[changed].generationId, 6);
}

// ---- Static members --------------------------------------------------------------

TEST(KafkaClassicGroupTest, StaticMemberRejoinWithUnchangedProtocolsKeepsTheGenerationAndFencesTheOldId) {
  Harness h;
  h.formStatic();
  ASSERT_EQ(h.joins[1].error, ErrorCode::NONE);  // no MEMBER_ID_REQUIRED for a static member
  ASSERT_EQ(h.joins[1].memberId, "s1");

  h.now += Millis(1000);
  Ticket back = h.join("", "s2b", 5, range(), "i2");
  ASSERT_TRUE(h.answered(back));
  const auto& r = h.joins[back];
  EXPECT_EQ(r.error, ErrorCode::NONE);
  EXPECT_EQ(r.memberId, "s2b");
  EXPECT_EQ(r.generationId, 2);
  EXPECT_EQ(r.protocolName, "range");
  EXPECT_EQ(r.leader, "s1");
  EXPECT_TRUE(r.members.empty());
  EXPECT_EQ(h.g.state(), State::Stable);
  EXPECT_EQ(h.g.generation(), 2);
  ASSERT_EQ(h.last.removed.size(), 1u);
  EXPECT_EQ(h.last.removed[0], (std::pair<std::string, std::string>{"s2", "replaced"}));

  Ticket sync = h.sync("s2b", 2, {}, "i2");
  EXPECT_EQ(h.syncs[sync].assignment, "A2");
  EXPECT_EQ(h.heartbeat("s2b", 2, "i2"), ErrorCode::NONE);

  EXPECT_EQ(h.heartbeat("s2", 2, "i2"), ErrorCode::FENCED_INSTANCE_ID);
  EXPECT_EQ(h.heartbeat("s2", 2), ErrorCode::UNKNOWN_MEMBER_ID);
  EXPECT_EQ(h.syncs[h.sync("s2", 2, {}, "i2")].error, ErrorCode::FENCED_INSTANCE_ID);
  EXPECT_EQ(h.g.commitCheck(2, "s2", "i2", h.now), ErrorCode::FENCED_INSTANCE_ID);
  EXPECT_EQ(h.g.commitCheck(2, "s2b", "i2", h.now), ErrorCode::NONE);
  EXPECT_EQ(h.joins[h.join("s2", "unused", 5, range(), "i2")].error, ErrorCode::FENCED_INSTANCE_ID);
  // A known member id under another member's instance id.
  EXPECT_EQ(h.joins[h.join("s1", "unused", 5, range(), "i2")].error, ErrorCode::FENCED_INSTANCE_ID);
  EXPECT_EQ(h.g.state(), State::Stable);
}

TEST(KafkaClassicGroupTest, StaticLeaderRejoiningLeadsUnderItsNewIdButIsNotAskedToAssign) {
  Harness h;
  h.formStatic();
  ASSERT_EQ(h.g.leader(), "s1");

  Ticket back = h.join("", "s1b", 5, range(), "i1");
  ASSERT_TRUE(h.answered(back));
  EXPECT_EQ(h.g.leader(), "s1b");
  EXPECT_EQ(h.g.generation(), 2);
  // The answer names the leader it replaced and carries no member list, so
  // the returning leader does not compute an assignment a Stable group ignores.
  EXPECT_EQ(h.joins[back].leader, "s1");
  EXPECT_TRUE(h.joins[back].members.empty());
  EXPECT_EQ(h.syncs[h.sync("s1b", 2, {}, "i1")].assignment, "A1");
  // As leader under its new id, its next join starts a rebalance.
  Ticket rejoin = h.join("s1b", "unused", 5, range(), "i1");
  EXPECT_FALSE(h.answered(rejoin));
  EXPECT_EQ(h.g.state(), State::PreparingRebalance);
}

TEST(KafkaClassicGroupTest, StaticMemberRejoinWithChangedProtocolsRebalances) {
  Harness h;
  h.formStatic();

  Ticket back = h.join("", "s2b", 5, {{"range", "other topics"}}, "i2");
  EXPECT_FALSE(h.answered(back));
  EXPECT_EQ(h.g.state(), State::PreparingRebalance);
  Ticket t1 = h.join("s1", "unused", 5, range(), "i1");
  ASSERT_TRUE(h.answered(back) && h.answered(t1));
  EXPECT_EQ(h.joins[back].generationId, 3);
  EXPECT_EQ(h.joins[back].memberId, "s2b");
  ASSERT_EQ(h.joins[t1].members.size(), 2u);
  EXPECT_EQ(h.joins[t1].members[1].groupInstanceId, "i2");
  EXPECT_EQ(h.joins[t1].members[1].metadata, "other topics");
}

TEST(KafkaClassicGroupTest, StaticMemberThatDidNotRejoinStaysUntilItsSessionEnds) {
  Harness h;
  h.join("", "s1", 5, range(), "i1");
  h.join("", "d", 5, range());  // MEMBER_ID_REQUIRED
  h.join("d", "unused", 5);
  h.join("s1", "unused", 5, range(), "i1");
  ASSERT_EQ(h.g.size(), 2u);
  h.sync("s1", 2, {{"s1", "A1"}, {"d", "D"}}, "i1");
  Ticket td = h.join("d", "unused", 5, {{"range", "changed"}});
  for (int i = 0; i < 5; ++i) {
    h.now += Millis(5000);
    EXPECT_EQ(h.heartbeat("s1", 2, "i1"), ErrorCode::REBALANCE_IN_PROGRESS);
  }
  h.advance(Millis(5000));  // the barrier deadline: s1 did not join, yet stays
  ASSERT_TRUE(h.answered(td));
  EXPECT_EQ(h.g.size(), 2u);
  EXPECT_EQ(h.joins[td].generationId, 3);
  EXPECT_EQ(h.g.leader(), "d");
  EXPECT_EQ(h.heartbeat("s1", 2, "i1"), ErrorCode::ILLEGAL_GENERATION);
}

// ---- OffsetCommit's fence ---------------------------------------------------------

TEST(KafkaClassicGroupTest, CommitCheck) {
  Harness h;
  EXPECT_EQ(h.g.commitCheck(-1, "", std::nullopt, h.now), ErrorCode::NONE);  // standalone, empty group
  EXPECT_EQ(h.g.commitCheck(1, "x", std::nullopt, h.now), ErrorCode::UNKNOWN_MEMBER_ID);

  h.join("", "a", 3);
  h.join("", "b", 3);
  h.port = 41000;  // a's connection: a join again names where it came from last
  h.join("a", "unused", 3);
  ASSERT_EQ(h.g.state(), State::CompletingRebalance);
  EXPECT_EQ(h.g.commitCheck(2, "a", std::nullopt, h.now), ErrorCode::REBALANCE_IN_PROGRESS);
  h.sync("a", 2, {{"a", "A"}, {"b", "B"}});
  EXPECT_EQ(h.g.commitCheck(-1, "", std::nullopt, h.now), ErrorCode::ILLEGAL_GENERATION);
  EXPECT_EQ(h.g.commitCheck(2, "zz", std::nullopt, h.now), ErrorCode::UNKNOWN_MEMBER_ID);
  EXPECT_EQ(h.g.commitCheck(1, "a", std::nullopt, h.now), ErrorCode::ILLEGAL_GENERATION);
  EXPECT_EQ(h.g.commitCheck(2, "a", std::nullopt, h.now), ErrorCode::NONE);

  // A commit renews the session.
  h.now += Millis(8000);
  EXPECT_EQ(h.g.commitCheck(2, "b", std::nullopt, h.now), ErrorCode::NONE);
  h.heartbeat("a", 2);
  h.advance(Millis(8000));
  EXPECT_EQ(h.g.size(), 2u);

  // PreparingRebalance: the current generation may still commit.
  h.join("a", "unused", 3);
  ASSERT_EQ(h.g.state(), State::PreparingRebalance);
  EXPECT_EQ(h.g.commitCheck(2, "b", std::nullopt, h.now), ErrorCode::NONE);

  h.abandon(ErrorCode::NOT_COORDINATOR, true);
  EXPECT_EQ(h.g.commitCheck(-1, "", std::nullopt, h.now), ErrorCode::COORDINATOR_NOT_AVAILABLE);
}

// ---- Abandon and describe ---------------------------------------------------------

TEST(KafkaClassicGroupTest, AbandonAnswersEveryParkedRequest) {
  Harness h;
  h.formStable({"a", "b"});
  Ticket ta = h.join("a", "unused", 3);
  h.abandon(ErrorCode::NOT_COORDINATOR, false);
  ASSERT_TRUE(h.answered(ta));
  EXPECT_EQ(h.joins[ta].error, ErrorCode::NOT_COORDINATOR);
  EXPECT_NE(h.g.state(), State::Dead);

  Harness d;
  d.join("", "a", 3);
  d.join("", "b", 3);
  d.join("a", "unused", 3);
  Ticket sb = d.sync("b", 2);
  Effects f = d.abandon(ErrorCode::GROUP_ID_NOT_FOUND, true);
  ASSERT_TRUE(d.answered(sb));
  EXPECT_EQ(d.syncs[sb].error, ErrorCode::GROUP_ID_NOT_FOUND);
  EXPECT_EQ(d.g.state(), State::Dead);
  EXPECT_EQ(f.removed.size(), 2u);
  EXPECT_EQ(d.joins[d.join("", "c", 3)].error, ErrorCode::COORDINATOR_NOT_AVAILABLE);
  EXPECT_EQ(d.joins[d.join("a", "c", 3)].error, ErrorCode::UNKNOWN_MEMBER_ID);
  EXPECT_EQ(d.g.nextDeadline(), std::nullopt);
}

TEST(KafkaClassicGroupTest, DescribeShowsTheChosenProtocolAndAssignmentsOnceStable) {
  Harness h;
  h.join("", "a", 3);
  h.join("", "b", 3);
  auto preparing = h.g.describe();
  EXPECT_EQ(preparing.groupState, "PreparingRebalance");
  EXPECT_EQ(preparing.protocolType, "consumer");
  EXPECT_EQ(preparing.protocolData, "");
  h.join("a", "unused", 3);
  h.sync("a", 2, {{"a", "A"}, {"b", "B"}});
  auto g = h.g.describe();
  EXPECT_EQ(g.groupId, "g");
  EXPECT_EQ(g.groupState, "Stable");
  EXPECT_EQ(g.protocolData, "range");
  ASSERT_EQ(g.members.size(), 2u);
  EXPECT_EQ(g.members[1].memberId, "b");
  EXPECT_EQ(g.members[1].clientId, "client-b");
  EXPECT_EQ(g.members[1].clientHost, "/10.0.0.1");
  EXPECT_EQ(g.members[1].memberMetadata, "m-range");
  EXPECT_EQ(g.members[1].memberAssignment, "B");
}

// ---- The snapshot -----------------------------------------------------------------

Snapshot stableSnapshot(Harness& h) {
  h.join("", "s1", 5, {{"range", "m1"}, {"roundrobin", "r1"}}, "i1");
  h.join("", "d", 5);
  h.join("d", "unused", 5);
  h.join("s1", "unused", 5, {{"range", "m1"}, {"roundrobin", "r1"}}, "i1");
  h.sync("s1", 2, {{"s1", std::string("A\0\x01", 3)}, {"d", "D"}}, "i1");
  return h.g.snapshot();
}

TEST(KafkaClassicGroupTest, SnapshotRoundTripAndResumeKeepTheGenerationAndAssignments) {
  Harness h;
  Snapshot s = stableSnapshot(h);
  ASSERT_EQ(s.generation, 2);
  ASSERT_EQ(s.members.size(), 2u);
  EXPECT_EQ(s.leader, "s1");
  std::string bytes = encodeSnapshot(s);
  auto back = decodeSnapshot(bytes);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, s);

  TimePoint later = h.now + Millis(60000);
  ClassicGroup g = ClassicGroup::resume("g", noDelay(), *back, later);
  EXPECT_EQ(g.state(), State::Stable);
  EXPECT_EQ(g.generation(), 2);
  EXPECT_EQ(g.leader(), "s1");
  EXPECT_EQ(g.protocolName(), "range");
  EXPECT_EQ(g.members(), s.members);
  EXPECT_EQ(g.nextDeadline(), later + Millis(kSessionMs));

  Effects e;
  SyncArgs a;
  a.request.generationId = 2;
  a.request.memberId = "s1";
  g.sync(7, a, later, e);
  ASSERT_EQ(e.syncs.size(), 1u);
  EXPECT_EQ(e.syncs[0].second.assignment, std::string("A\0\x01", 3));
  wire::HeartbeatRequest hb;
  hb.generationId = 2;
  hb.memberId = "d";
  EXPECT_EQ(g.heartbeat(hb, later, e), ErrorCode::NONE);
  hb.memberId = "old";
  hb.groupInstanceId = "i1";
  EXPECT_EQ(g.heartbeat(hb, later, e), ErrorCode::FENCED_INSTANCE_ID);  // the instance map is rebuilt

  Effects none;
  g.tick(later + Millis(kSessionMs - 1), none);
  EXPECT_EQ(g.size(), 2u);
  EXPECT_TRUE(none.removed.empty());

  ClassicGroup empty = ClassicGroup::resume("g", noDelay(), Snapshot{.generation = 4}, later);
  EXPECT_EQ(empty.state(), State::Empty);
  EXPECT_EQ(empty.generation(), 4);
  EXPECT_EQ(empty.commitCheck(-1, "", std::nullopt, later), ErrorCode::NONE);
}

// What groupctl describe shows beyond the snapshot: each member's source
// port, when it joined and when it was last heard (its last join, sync,
// heartbeat or commit); a member resumed from a snapshot has no join time.
TEST(KafkaClassicGroupTest, ActivityShowsEachMembersPortJoinTimeAndLastHeard) {
  Harness h;
  h.port = 41000;
  h.join("", "a", 3);
  h.port = 41001;
  h.advance(Millis(500));
  h.join("", "b", 3);
  h.port = 41000;  // a's connection: a join again names where it came from last
  h.join("a", "unused", 3);
  ASSERT_EQ(h.g.state(), State::CompletingRebalance);
  const TimePoint formed = h.now;
  h.advance(Millis(2000));
  EXPECT_EQ(h.heartbeat("a", h.g.generation()), ErrorCode::NONE);
  auto activity = h.g.activity();
  ASSERT_EQ(activity.size(), 2u);
  EXPECT_EQ(activity[0].memberId, "a");
  EXPECT_EQ(activity[0].clientPort, 41000);
  EXPECT_EQ(activity[0].joinedAt, std::optional<TimePoint>(kT0));
  EXPECT_EQ(activity[0].lastHeard, formed + Millis(2000)) << "its heartbeat";
  EXPECT_EQ(activity[1].memberId, "b");
  EXPECT_EQ(activity[1].clientPort, 41001);
  EXPECT_EQ(activity[1].joinedAt, std::optional<TimePoint>(kT0 + Millis(500)));
  EXPECT_EQ(activity[1].lastHeard, formed) << "its join";

  Harness resumed;
  resumed.formStable({"x"});
  auto r = resumed.g.activity();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].joinedAt.has_value()) << "not known to this controller";
  EXPECT_EQ(r[0].lastHeard, resumed.now);
}

TEST(KafkaClassicGroupTest, DecodeSnapshotRejectsEveryTruncationAndMalformedInput) {
  Harness h;
  std::string bytes = encodeSnapshot(stableSnapshot(h));
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(decodeSnapshot(std::string_view(bytes).substr(0, n)), std::nullopt) << "prefix of " << n << " bytes";
  }
  EXPECT_EQ(decodeSnapshot(bytes + '\0'), std::nullopt);  // trailing byte

  std::string otherVersion = bytes;
  otherVersion[0] = 2;
  EXPECT_EQ(decodeSnapshot(otherVersion), std::nullopt);

  // Generation, then three int32-length texts: the member count follows.
  Snapshot bare{.generation = 1, .protocolType = "consumer", .protocolName = "range", .leader = "x"};
  std::string huge = encodeSnapshot(bare);
  ASSERT_TRUE(decodeSnapshot(huge).has_value());
  huge.replace(huge.size() - 4, 4, std::string("\x7f\xff\xff\xff", 4));
  EXPECT_EQ(decodeSnapshot(huge), std::nullopt);
  huge.replace(huge.size() - 4, 4, std::string("\xff\xff\xff\xff", 4));  // -1
  EXPECT_EQ(decodeSnapshot(huge), std::nullopt);

  // The instance flag of the first member (after its int32-length id) must be 0 or 1.
  Snapshot one = bare;
  one.members.push_back(MemberView{.memberId = "m"});
  std::string flag = encodeSnapshot(one);
  size_t at = 1 + 4 + (4 + 8) + (4 + 5) + (4 + 1) + 4 + (4 + 1);
  ASSERT_EQ(flag[at], '\0');
  ASSERT_TRUE(decodeSnapshot(flag).has_value());
  flag[at] = 2;
  EXPECT_EQ(decodeSnapshot(flag), std::nullopt);
}

}  // namespace
}  // namespace groupcoord::adapter::kafka
