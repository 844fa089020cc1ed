// The phase machine of a controlled group: the transition table, the
// refusal of everything else, and the predicates the controller asks.

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "adapter/GroupPhase.h"

namespace groupcoord::adapter {
namespace {

using P = GroupPhase;

const std::vector<P> kAll{P::Claimed, P::Writing,  P::Loading,   P::Idle,   P::ReadingOffsets,
                          P::Stale,   P::Reloading, P::Deleting, P::HandingOver, P::Dropped};

// The moves (other than staying, and other than to Dropped) the table in
// GroupPhase.cpp allows, written out independently of it.
const std::set<std::pair<P, P>> kMoves{
    {P::Claimed, P::Loading},        {P::Loading, P::Claimed},  {P::Loading, P::Idle},
    {P::Idle, P::Writing},           {P::Idle, P::ReadingOffsets}, {P::Idle, P::Deleting},
    {P::Writing, P::Idle},           {P::Writing, P::Stale},    {P::ReadingOffsets, P::Idle},
    {P::Stale, P::Reloading},        {P::Stale, P::Deleting},   {P::Reloading, P::Idle},
    {P::Reloading, P::Stale},        {P::Deleting, P::Stale},
    {P::Idle, P::HandingOver},       {P::HandingOver, P::Stale},
};

bool expectedLegal(P from, P to) {
  if (from == to) return true;
  if (from == P::Dropped) return false;
  if (to == P::Dropped) return true;
  return kMoves.count({from, to}) > 0;
}

// A legal path from Claimed (where every machine starts) to `target`.
void reach(GroupPhaseMachine& m, P target) {
  std::vector<P> path;
  switch (target) {
    case P::Claimed: break;
    case P::Loading: path = {P::Loading}; break;
    case P::Idle: path = {P::Loading, P::Idle}; break;
    case P::Writing: path = {P::Loading, P::Idle, P::Writing}; break;
    case P::ReadingOffsets: path = {P::Loading, P::Idle, P::ReadingOffsets}; break;
    case P::Stale: path = {P::Loading, P::Idle, P::Writing, P::Stale}; break;
    case P::Reloading: path = {P::Loading, P::Idle, P::Writing, P::Stale, P::Reloading}; break;
    case P::Deleting: path = {P::Loading, P::Idle, P::Deleting}; break;
    case P::HandingOver: path = {P::Loading, P::Idle, P::HandingOver}; break;
    case P::Dropped: path = {P::Dropped}; break;
  }
  for (P p : path) m.to(p);
  ASSERT_EQ(m.get(), target);
}

TEST(GroupPhase, AMachineStartsClaimed) {
  const std::string name = "g";
  GroupPhaseMachine m(name);
  EXPECT_EQ(m.get(), P::Claimed);
}

TEST(GroupPhase, EveryMoveOfTheTableIsAccepted) {
  const std::string name = "g";
  int accepted = 0;
  for (P from : kAll) {
    for (P to : kAll) {
      if (!expectedLegal(from, to)) continue;
      EXPECT_TRUE(isLegalTransition(from, to)) << toString(from) << " -> " << toString(to);
      GroupPhaseMachine m(name);
      reach(m, from);
      EXPECT_NO_THROW(m.to(to)) << toString(from) << " -> " << toString(to);
      EXPECT_EQ(m.get(), to);
      ++accepted;
    }
  }
  // 10 stays, 9 drops, 16 moves.
  EXPECT_EQ(accepted, 10 + 9 + 16);
}

TEST(GroupPhase, EveryMoveOutsideTheTableThrowsAndLeavesThePhase) {
  const std::string name = "orders";
  int refused = 0;
  for (P from : kAll) {
    for (P to : kAll) {
      if (expectedLegal(from, to)) continue;
      EXPECT_FALSE(isLegalTransition(from, to)) << toString(from) << " -> " << toString(to);
      GroupPhaseMachine m(name);
      reach(m, from);
      EXPECT_THROW(m.to(to), IllegalTransition) << toString(from) << " -> " << toString(to);
      EXPECT_EQ(m.get(), from) << "a refused move must not change the phase";
      ++refused;
    }
  }
  EXPECT_EQ(refused, 100 - (10 + 9 + 16));
}

TEST(GroupPhase, NamedIllegalMovesThrowALogicErrorNamingGroupAndPhases) {
  const std::string name = "orders";
  for (auto [from, to] : std::vector<std::pair<P, P>>{{P::Claimed, P::Writing},
                                                      {P::Writing, P::Deleting},
                                                      {P::ReadingOffsets, P::Stale},
                                                      {P::Claimed, P::Idle},
                                                      {P::Idle, P::Reloading},
                                                      {P::Deleting, P::Idle}}) {
    GroupPhaseMachine m(name);
    reach(m, from);
    try {
      m.to(to);
      ADD_FAILURE() << toString(from) << " -> " << toString(to) << " was accepted";
    } catch (const std::logic_error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("orders"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string(toString(from))), std::string::npos) << what;
      EXPECT_NE(what.find(std::string(toString(to))), std::string::npos) << what;
    }
    EXPECT_EQ(m.get(), from);
  }
}

TEST(GroupPhase, StayingIsAlwaysLegal) {
  const std::string name = "g";
  for (P p : kAll) {
    GroupPhaseMachine m(name);
    reach(m, p);
    EXPECT_NO_THROW(m.to(p)) << toString(p);
    EXPECT_EQ(m.get(), p);
  }
}

TEST(GroupPhase, DroppedIsFinal) {
  const std::string name = "g";
  for (P to : kAll) {
    if (to == P::Dropped) continue;
    GroupPhaseMachine m(name);
    m.to(P::Dropped);
    EXPECT_THROW(m.to(to), IllegalTransition) << toString(to);
    EXPECT_EQ(m.get(), P::Dropped);
  }
}

TEST(GroupPhase, EveryPhaseCanBeDropped) {
  const std::string name = "g";
  for (P from : kAll) {
    GroupPhaseMachine m(name);
    reach(m, from);
    m.to(P::Dropped);
    EXPECT_EQ(m.get(), P::Dropped);
  }
}

TEST(GroupPhase, PredicatesOfEachPhase) {
  struct Row {
    P phase;
    bool loading, serving, busy, reload;
  };
  const std::vector<Row> rows{
      {P::Claimed, true, false, false, true},       {P::Loading, true, false, true, true},
      {P::Idle, false, true, false, false},         {P::Writing, false, true, true, false},
      {P::ReadingOffsets, false, true, true, false}, {P::Stale, false, true, false, true},
      {P::Reloading, false, true, true, true},      {P::Deleting, false, false, true, false},
      {P::HandingOver, false, false, true, false},  {P::Dropped, false, false, false, false},
  };
  ASSERT_EQ(rows.size(), kAll.size());
  for (auto& r : rows) {
    EXPECT_EQ(isLoading(r.phase), r.loading) << toString(r.phase);
    EXPECT_EQ(isServing(r.phase), r.serving) << toString(r.phase);
    EXPECT_EQ(isBusy(r.phase), r.busy) << toString(r.phase);
    EXPECT_EQ(needsReload(r.phase), r.reload) << toString(r.phase);
  }
}

TEST(GroupPhase, EveryPhaseHasAName) {
  std::set<std::string_view> names;
  for (P p : kAll) {
    EXPECT_NE(toString(p), "?");
    names.insert(toString(p));
  }
  EXPECT_EQ(names.size(), kAll.size());
}

// ---- The handover, a stage of the same machine ----

TEST(GroupPhase, AHandoverDrainsSendsAndEnds) {
  const std::string g = "g";
  GroupPhaseMachine m(g);
  EXPECT_FALSE(m.startHandover({1, 2, {}, nullptr})) << "not serving yet";
  m.to(P::Loading);
  m.to(P::Idle);
  bool answered = false;
  ASSERT_TRUE(m.startHandover({1, 2, {}, [&](HandoverResult) { answered = true; }}));
  EXPECT_EQ(m.handover(), HandoverStage::Draining);
  EXPECT_FALSE(m.startHandover({1, 3, {}, nullptr})) << "one at a time";
  EXPECT_EQ(m.job().to, 2);
  m.sendHandover();
  EXPECT_EQ(m.handover(), HandoverStage::Sending);
  EXPECT_EQ(m.get(), P::HandingOver);
  auto job = m.endHandover();
  ASSERT_TRUE(job.has_value());
  job->done(HandoverResult{});
  EXPECT_TRUE(answered);
  EXPECT_FALSE(m.handingOver());
  EXPECT_FALSE(m.endHandover().has_value()) << "ended once";
}

TEST(GroupPhase, AHandoverWhoseAnswerWasLostStaysStaleUntilVerified) {
  const std::string g = "g";
  GroupPhaseMachine m(g);
  m.to(P::Loading);
  m.to(P::Idle);
  ASSERT_TRUE(m.startHandover({1, 2, {}, nullptr}));
  EXPECT_THROW(m.verifyHandover(), std::logic_error) << "nothing was sent";
  m.sendHandover();
  m.verifyHandover();
  EXPECT_EQ(m.handover(), HandoverStage::Verifying);
  EXPECT_EQ(m.get(), P::Stale);
  m.to(P::Reloading);
  EXPECT_THROW(m.to(P::Idle), IllegalTransition) << "serving again before the re-read said it did not happen";
  EXPECT_EQ(m.get(), P::Reloading);
  m.endHandover();
  m.to(P::Idle);
  EXPECT_EQ(m.get(), P::Idle);
}

TEST(GroupPhase, AHandoverIsSentOnlyFromIdleWhileDraining) {
  const std::string g = "g";
  GroupPhaseMachine m(g);
  m.to(P::Loading);
  m.to(P::Idle);
  EXPECT_THROW(m.sendHandover(), std::logic_error) << "no handover started";
  ASSERT_TRUE(m.startHandover({1, 2, {}, nullptr}));
  m.to(P::Writing);
  EXPECT_THROW(m.sendHandover(), std::logic_error) << "a write is in flight";
  EXPECT_EQ(m.get(), P::Writing);
}

// ---- The state clients see ----

TEST(VisibleState, StartsLoadingAndNeverGoesBack) {
  const std::string g = "g";
  using S = protocol::GroupState;
  VisibleState v(g);
  EXPECT_EQ(v.get(), S::LOADING);
  v.to(S::REBALANCING);
  v.to(S::STABLE);
  v.to(S::HANDING_OVER);
  v.to(S::STABLE);  // the handover failed
  v.to(S::STABLE);  // staying
  EXPECT_THROW(v.to(S::LOADING), std::logic_error);
  EXPECT_EQ(v.get(), S::STABLE);
}

TEST(VisibleState, TheTable) {
  using S = protocol::GroupState;
  const std::vector<S> all{S::LOADING, S::STABLE, S::REBALANCING, S::HANDING_OVER};
  for (S from : all) {
    for (S to : all) {
      const bool expected = from == to || to != S::LOADING;
      EXPECT_EQ(VisibleState::legal(from, to), expected)
          << protocol::groupStateName(from) << " -> " << protocol::groupStateName(to);
    }
  }
}

}  // namespace
}  // namespace groupcoord::adapter
