// The queues of a controlled group's operations (OpQueue.h) with the real
// operations (GroupOps.h): what goes into flight, what comes back, and that
// every operation is answered exactly once.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adapter/GroupOps.h"
#include "adapter/OpQueue.h"

namespace groupcoord::adapter {
namespace {

using protocol::ErrorCode;

const std::string kGroup = "g";

// Records every answer given through the callbacks it hands out.
struct Recorder {
  struct Entry {
    std::string tag;
    protocol::Response response;
  };
  std::shared_ptr<std::vector<Entry>> answers = std::make_shared<std::vector<Entry>>();

  protocol::ResponseCallback cb(std::string tag) {
    return [answers = answers, tag](protocol::Response r) { answers->push_back({tag, std::move(r)}); };
  }
  size_t count() const { return answers->size(); }
  size_t count(const std::string& tag) const {
    size_t n = 0;
    for (auto& e : *answers) n += e.tag == tag;
    return n;
  }
  // The error of every answer, whatever its type.
  std::vector<ErrorCode> errors() const {
    std::vector<ErrorCode> out;
    for (auto& e : *answers) {
      std::visit(
          [&](auto& r) {
            if constexpr (requires { r.error; }) out.push_back(r.error);
          },
          e.response);
    }
    return out;
  }
};

Rejoin rejoin(Recorder& rec, const std::string& id) { return Rejoin{id, rec.cb(id)}; }

Join join(Recorder& rec, const std::string& id, const std::string& clientId, const std::string& tag) {
  Join j;
  j.memberId = id;
  j.clientId = clientId;
  j.waiters.push_back(rec.cb(tag));
  return j;
}

std::vector<std::string> idsOf(const std::vector<Rejoin>& ops) {
  std::vector<std::string> ids;
  for (auto& op : ops) ids.push_back(op.memberId);
  return ids;
}

template <class Op>
std::vector<std::string> keysOf(const std::map<std::string, Op>& ops) {
  std::vector<std::string> keys;
  for (auto& [k, _] : ops) keys.push_back(k);
  return keys;
}

TEST(OpQueue, LaunchPutsEveryPendingOpInFlight) {
  Recorder rec;
  OpQueue<std::vector<Rejoin>> q;
  EXPECT_TRUE(q.empty());
  for (auto id : {"a", "b", "c"}) q.pending().push_back(rejoin(rec, id));
  EXPECT_TRUE(q.hasPending());
  EXPECT_FALSE(q.hasInFlight());
  q.launch();
  EXPECT_FALSE(q.hasPending());
  EXPECT_EQ(idsOf(q.inFlight()), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FALSE(q.empty());
  EXPECT_EQ(rec.count(), 0u) << "launching answers nothing";
}

TEST(OpQueue, LaunchWithABudgetTakesFromTheFrontAndSpendsTheBudget) {
  Recorder rec;
  OpQueue<std::vector<Rejoin>> q;
  for (auto id : {"a", "b", "c"}) q.pending().push_back(rejoin(rec, id));
  size_t budget = 2;
  q.launch(budget);
  EXPECT_EQ(budget, 0u);
  EXPECT_EQ(idsOf(q.inFlight()), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(idsOf(q.pending()), (std::vector<std::string>{"c"}));
  q.launch(budget);  // nothing left to spend
  EXPECT_EQ(idsOf(q.pending()), (std::vector<std::string>{"c"}));
  budget = 5;
  q.launch(budget);
  EXPECT_EQ(budget, 4u) << "only what was launched is spent";
  EXPECT_EQ(idsOf(q.inFlight()), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FALSE(q.hasPending());
}

TEST(OpQueue, AMapLaunchesInKeyOrderWithinTheBudget) {
  Recorder rec;
  OpQueue<std::map<std::string, Join>> q;
  for (auto id : {"c", "a", "d", "b"}) q.pending()[id] = join(rec, id, "client", id);
  size_t budget = 2;
  q.launch(budget);
  EXPECT_EQ(budget, 0u);
  EXPECT_EQ(keysOf(q.inFlight()), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(keysOf(q.pending()), (std::vector<std::string>{"c", "d"}));
  q.launch();
  EXPECT_EQ(keysOf(q.inFlight()), (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST(OpQueue, ABudgetSharedByTwoQueuesCapsTheirSum) {
  Recorder rec;
  OpQueue<std::map<std::string, Removal>> removals;
  OpQueue<std::map<std::string, Join>> joins;
  for (auto id : {"r1", "r2"}) removals.pending()[id].memberId = id;
  for (auto id : {"j1", "j2", "j3"}) joins.pending()[id] = join(rec, id, "c", id);
  size_t budget = 3;
  removals.launch(budget);
  joins.launch(budget);
  EXPECT_EQ(budget, 0u);
  EXPECT_EQ(removals.inFlight().size(), 2u);
  EXPECT_EQ(keysOf(joins.inFlight()), (std::vector<std::string>{"j1"}));
  EXPECT_EQ(keysOf(joins.pending()), (std::vector<std::string>{"j2", "j3"}));
}

TEST(OpQueue, TakeInFlightHandsOverTheTransactionsOpsAndLeavesPendingAlone) {
  Recorder rec;
  OpQueue<std::vector<Rejoin>> q;
  q.pending().push_back(rejoin(rec, "a"));
  q.launch();
  q.pending().push_back(rejoin(rec, "b"));
  auto done = q.takeInFlight();
  EXPECT_EQ(idsOf(done), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(q.hasInFlight());
  EXPECT_EQ(idsOf(q.pending()), (std::vector<std::string>{"b"}));
  auto none = q.takePending();
  EXPECT_EQ(idsOf(none), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(rec.count(), 0u);
}

TEST(OpQueue, ARequeuedVectorGoesBehindWhatArrivedMeanwhile) {
  Recorder rec;
  OpQueue<std::vector<Rejoin>> q;
  q.pending().push_back(rejoin(rec, "a"));
  q.pending().push_back(rejoin(rec, "b"));
  q.launch();
  q.pending().push_back(rejoin(rec, "newer"));
  q.requeue();
  EXPECT_FALSE(q.hasInFlight());
  EXPECT_EQ(idsOf(q.pending()), (std::vector<std::string>{"newer", "a", "b"}));
}

TEST(OpQueue, ARequeuedMapMergesWithTheNewerOpAndKeepsBothWaiters) {
  Recorder rec;
  OpQueue<std::map<std::string, Join>> q;
  q.pending()["a"] = join(rec, "a", "client-old", "old");
  q.pending()["b"] = join(rec, "b", "client-b", "b");
  q.launch();
  q.pending()["a"] = join(rec, "a", "client-new", "new");
  q.requeue();
  EXPECT_FALSE(q.hasInFlight());
  ASSERT_EQ(keysOf(q.pending()), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(q.pending().at("a").waiters.size(), 2u);
  EXPECT_EQ(q.pending().at("b").waiters.size(), 1u);
  {
    Outbox out;
    q.answerAll(ErrorCode::CONTROLLER_NOT_AVAILABLE, kGroup, out);
  }
  EXPECT_EQ(rec.count("old"), 1u);
  EXPECT_EQ(rec.count("new"), 1u);
  EXPECT_EQ(rec.count("b"), 1u);
}

TEST(OpQueue, ARequeuedRemovalMergesWaitersToo) {
  Recorder rec;
  OpQueue<std::map<std::string, Removal>> q;
  auto& first = q.pending()["m"];
  first.memberId = "m";
  first.waiters.push_back(rec.cb("first"));
  q.launch();
  auto& second = q.pending()["m"];
  second.memberId = "m";
  second.waiters.push_back(rec.cb("second"));
  q.requeue();
  ASSERT_EQ(q.pending().size(), 1u);
  EXPECT_EQ(q.pending().at("m").waiters.size(), 2u);
  {
    Outbox out;
    q.answerAll(ErrorCode::NONE, kGroup, out);
  }
  EXPECT_EQ(rec.count(), 2u);
  for (auto& e : *rec.answers) EXPECT_TRUE(std::holds_alternative<protocol::LeaveGroupResponse>(e.response));
}

TEST(OpQueue, AnswerAllAnswersEveryOpOnceWithTheError) {
  Recorder rec;
  OpQueue<std::map<std::string, Join>> joins;
  joins.pending()["a"] = join(rec, "a", "c", "join-a");
  joins.pending()["a"].waiters.push_back(rec.cb("join-a"));  // two registrations of a
  joins.pending()["b"] = join(rec, "b", "c", "join-b");
  size_t budget = 1;
  joins.launch(budget);  // a in flight, b pending
  OpQueue<std::vector<Rejoin>> rejoins;
  rejoins.pending().push_back(rejoin(rec, "r1"));
  rejoins.launch();
  rejoins.pending().push_back(rejoin(rec, "r2"));
  {
    Outbox out;
    joins.answerAll(ErrorCode::NOT_CONTROLLER, kGroup, out);
    rejoins.answerAll(ErrorCode::NOT_CONTROLLER, kGroup, out);
    EXPECT_EQ(rec.count(), 0u) << "answers wait in the outbox";
    EXPECT_TRUE(joins.empty());
    EXPECT_TRUE(rejoins.empty());
  }
  EXPECT_EQ(rec.count(), 5u);
  EXPECT_EQ(rec.count("join-a"), 2u);
  EXPECT_EQ(rec.count("join-b"), 1u);
  EXPECT_EQ(rec.count("r1"), 1u);
  EXPECT_EQ(rec.count("r2"), 1u);
  for (ErrorCode e : rec.errors()) EXPECT_EQ(e, ErrorCode::NOT_CONTROLLER);
  for (auto& e : *rec.answers) {
    auto& r = std::get<protocol::RegisterConsumerResponse>(e.response);
    EXPECT_EQ(r.group, kGroup);
    const std::string member = e.tag.rfind("join-", 0) == 0 ? e.tag.substr(5) : e.tag;
    EXPECT_EQ(r.consumerId, member);
  }
  {
    Outbox out;
    joins.answerAll(ErrorCode::NONE, kGroup, out);
    rejoins.answerAll(ErrorCode::NONE, kGroup, out);
  }
  EXPECT_EQ(rec.count(), 5u) << "answered ops are gone: nothing is answered twice";
}

TEST(OpQueue, AnswerPendingLeavesTheOpsInFlightAlone) {
  Recorder rec;
  OpQueue<std::vector<OffsetWrite>> commits;
  auto commitOf = [&](const std::string& tag) {
    OffsetWrite w;
    w.kind = OffsetWrite::Kind::Commit;
    w.accepted = {{"t", 0, 1}};
    w.results = {{"t", 0, ErrorCode::NONE}};
    w.done = rec.cb(tag);
    return w;
  };
  commits.pending().push_back(commitOf("flying"));
  commits.launch();
  commits.pending().push_back(commitOf("queued"));
  {
    Outbox out;
    commits.answerPending(ErrorCode::CONTROLLER_NOT_AVAILABLE, kGroup, out);
  }
  ASSERT_EQ(rec.count(), 1u);
  EXPECT_EQ(rec.count("queued"), 1u);
  EXPECT_EQ(std::get<protocol::CommitOffsetsResponse>(rec.answers->at(0).response).error,
            ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_TRUE(commits.hasInFlight());
  EXPECT_FALSE(commits.hasPending());
  // The transaction succeeds: the op in flight gets its per-offset results.
  {
    Outbox out;
    for (auto& c : commits.takeInFlight()) c.succeed(out);
  }
  ASSERT_EQ(rec.count(), 2u);
  auto& ok = std::get<protocol::CommitOffsetsResponse>(rec.answers->at(1).response);
  EXPECT_EQ(rec.answers->at(1).tag, "flying");
  EXPECT_EQ(ok.error, ErrorCode::NONE);
  EXPECT_EQ(ok.results.size(), 1u);
  EXPECT_TRUE(commits.empty());
}

TEST(OpQueue, AnswerInFlightLeavesThePendingOpsAlone) {
  Recorder rec;
  OpQueue<std::vector<Rejoin>> q;
  q.pending().push_back(rejoin(rec, "a"));
  q.launch();
  q.pending().push_back(rejoin(rec, "b"));
  {
    Outbox out;
    q.answerInFlight(ErrorCode::CONTROLLER_NOT_AVAILABLE, kGroup, out);
  }
  EXPECT_EQ(rec.count(), 1u);
  EXPECT_EQ(rec.count("a"), 1u);
  EXPECT_EQ(idsOf(q.pending()), (std::vector<std::string>{"b"}));
}

TEST(OpQueue, EachOpAnswersWithItsOwnResponseType) {
  Recorder rec;
  {
    Outbox out;
    OffsetWrite rewind;
    rewind.kind = OffsetWrite::Kind::Rewind;
    rewind.done = rec.cb("rewind");
    rewind.answer(ErrorCode::UNKNOWN_GROUP, kGroup, out);
    Deletion{rec.cb("delete")}.answer(ErrorCode::GROUP_NOT_EMPTY, kGroup, out);
    Removal rm;
    rm.waiters.push_back(rec.cb("leave"));
    rm.answer(ErrorCode::UNKNOWN_CONSUMER, kGroup, out);
  }
  ASSERT_EQ(rec.count(), 3u);
  EXPECT_EQ(std::get<protocol::RewindConsumerResponse>(rec.answers->at(0).response).error, ErrorCode::UNKNOWN_GROUP);
  auto& del = std::get<protocol::DeleteGroupResponse>(rec.answers->at(1).response);
  EXPECT_EQ(del.error, ErrorCode::GROUP_NOT_EMPTY);
  EXPECT_EQ(del.group, kGroup);
  EXPECT_EQ(std::get<protocol::LeaveGroupResponse>(rec.answers->at(2).response).error, ErrorCode::UNKNOWN_CONSUMER);
}

// ---- PendingFlag ----

TEST(PendingFlag, ARequestRidesTheNextLaunchAndEndsWithItsCompletion) {
  PendingFlag f;
  EXPECT_FALSE(f.pending());
  EXPECT_FALSE(f.inFlight());
  f.request();
  EXPECT_TRUE(f.pending());
  f.launch();
  EXPECT_FALSE(f.pending());
  EXPECT_TRUE(f.inFlight());
  f.complete();
  EXPECT_FALSE(f.pending());
  EXPECT_FALSE(f.inFlight());
}

TEST(PendingFlag, LaunchingWithNothingRequestedPutsNothingInFlight) {
  PendingFlag f;
  f.launch();
  EXPECT_FALSE(f.inFlight());
  EXPECT_FALSE(f.pending());
}

TEST(PendingFlag, ARequeuedFlagIsPendingAgain) {
  PendingFlag f;
  f.request();
  f.launch();
  f.requeue();
  EXPECT_TRUE(f.pending());
  EXPECT_FALSE(f.inFlight()) << "the failed flight is over";
  f.launch();
  EXPECT_TRUE(f.inFlight());
  EXPECT_FALSE(f.pending());
  f.complete();
  EXPECT_FALSE(f.inFlight());
}

TEST(PendingFlag, ARequeueWithNothingInFlightRequestsNothing) {
  PendingFlag f;
  f.requeue();
  EXPECT_FALSE(f.pending());
}

TEST(PendingFlag, ARequestDuringTheFlightWaitsForTheNextLaunch) {
  PendingFlag f;
  f.request();
  f.launch();
  f.request();
  f.complete();
  EXPECT_TRUE(f.pending()) << "the second request was not carried by the first transaction";
  EXPECT_FALSE(f.inFlight());
}

}  // namespace
}  // namespace groupcoord::adapter
