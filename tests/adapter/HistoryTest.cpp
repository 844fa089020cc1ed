// The rebalance history's pure parts: folding like events, the bounds of
// what is kept and persisted, and the history znode's encoding.

#include <gtest/gtest.h>

#include "adapter/History.h"
#include "common/Layout.h"

namespace groupcoord::adapter {
namespace {

using protocol::RebalanceEvent;
using protocol::RebalanceReason;

RebalanceEvent ev(RebalanceReason reason, std::string member, int64_t generation = 1) {
  RebalanceEvent e;
  e.timeMs = 1000 + generation;
  e.generation = generation;
  e.reason = reason;
  e.consumerId = std::move(member);
  e.detail = "member " + e.consumerId;
  return e;
}

TEST(FoldEvents, UpToThreeOfAReasonStayOneByOne) {
  auto out = foldEvents({ev(RebalanceReason::MEMBER_JOINED, "b"), ev(RebalanceReason::MEMBER_LEFT, "x"),
                         ev(RebalanceReason::MEMBER_JOINED, "a"), ev(RebalanceReason::MEMBER_JOINED, "c")});
  ASSERT_EQ(out.size(), 4u);
  // By reason's first appearance, then as given.
  EXPECT_EQ(out[0].consumerId, "b");
  EXPECT_EQ(out[1].consumerId, "a");
  EXPECT_EQ(out[2].consumerId, "c");
  EXPECT_EQ(out[3].reason, RebalanceReason::MEMBER_LEFT);
  for (auto& e : out) EXPECT_EQ(e.count, 1);
}

TEST(FoldEvents, MoreThanThreeBecomeOneEntryNamingTheFirstById) {
  std::vector<RebalanceEvent> in;
  for (const char* m : {"m3", "m1", "m4", "m2"}) in.push_back(ev(RebalanceReason::MEMBER_EVICTED, m));
  in.push_back(ev(RebalanceReason::TOPIC_RESIZED, ""));
  auto out = foldEvents(in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].reason, RebalanceReason::MEMBER_EVICTED);
  EXPECT_EQ(out[0].count, 4);
  EXPECT_EQ(out[0].consumerId, "m1");
  EXPECT_EQ(out[0].value, -1);
  EXPECT_NE(out[0].detail.find("4 members were evicted"), std::string::npos) << out[0].detail;
  EXPECT_EQ(out[1].reason, RebalanceReason::TOPIC_RESIZED);
}

TEST(RebalanceHistory, KeepsTheNewestHundredAndPersistsTheNewestTwentyFive) {
  RebalanceHistory h;
  for (int g = 1; g <= 130; ++g) h.add({ev(RebalanceReason::MEMBER_JOINED, "m", g)});
  ASSERT_EQ(h.events().size(), RebalanceHistory::kKept);
  EXPECT_EQ(h.events().front().generation, 31);
  EXPECT_EQ(h.latestGeneration(), 130);
  auto p = h.persisted({ev(RebalanceReason::MEMBER_LEFT, "n", 131)});
  ASSERT_EQ(p.size(), RebalanceHistory::kPersisted);
  EXPECT_EQ(p.front().generation, 107);
  EXPECT_EQ(p.back().generation, 131);
  EXPECT_TRUE(RebalanceHistory{}.persisted({}).empty());
}

TEST(HistoryZnode, RoundTripsAndSkipsWhatItCannotRead) {
  layout::HistoryRecord r;
  r.controller = 3;
  RebalanceEvent e = ev(RebalanceReason::REWIND, "", 9);
  e.subject = "ops";
  e.value = 12;
  e.count = 2;
  e.clientId = "svc ✓";
  e.host = "10.0.0.1";
  r.events = {e, ev(RebalanceReason::CONTROLLER_TAKEOVER, "", 9)};
  auto back = layout::decodeHistory(layout::encodeHistory(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, r);

  EXPECT_FALSE(layout::decodeHistory(""));
  EXPECT_FALSE(layout::decodeHistory("{\"history\":2,\"events\":[]}"));
  EXPECT_FALSE(layout::decodeHistory("not json"));
  auto partial = layout::decodeHistory(
      R"({"history":1,"controller":1,"events":[{"t":5,"g":2,"r":1,"m":"a"},"junk",{"g":3},{"t":6,"g":3,"r":2,"n":-4}]})");
  ASSERT_TRUE(partial);
  ASSERT_EQ(partial->events.size(), 2u);
  EXPECT_EQ(partial->events[0].consumerId, "a");
  EXPECT_EQ(partial->events[1].count, 1) << "a count below 1 reads as 1";
}

}  // namespace
}  // namespace groupcoord::adapter
