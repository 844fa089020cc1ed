// Exclusive ownership bookkeeping: grants wait for releases.

#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "adapter/Ownership.h"

namespace groupcoord::adapter {
namespace {

using P = protocol::TopicPartition;
const TimePoint kT0 = TimePoint(std::chrono::hours(1));

TEST(Ownership, GrantsFreePartitionsOfTheTarget) {
  Ownership o;
  o.setTarget({{"a", {P{"t", 0}, P{"t", 1}}}, {"b", {P{"t", 2}}}});
  EXPECT_EQ(o.grant("a", kT0), (std::vector<P>{P{"t", 0}, P{"t", 1}}));
  EXPECT_TRUE(o.owns("a", P{"t", 1}));
  EXPECT_EQ(o.holderOf(P{"t", 2}), "");
  EXPECT_TRUE(o.due("b", kT0));
  EXPECT_FALSE(o.due("a", kT0));
}

TEST(Ownership, APartitionMovesOnlyAfterItsHolderReleasesIt) {
  Ownership o;
  o.setTarget({{"a", {P{"t", 0}, P{"t", 1}}}});
  o.grant("a", kT0);
  // b joins: the new generation gives t-1 to b.
  o.setTarget({{"a", {P{"t", 0}}}, {"b", {P{"t", 1}}}});
  EXPECT_TRUE(o.grant("b", kT0).empty()) << "a still holds t-1";
  EXPECT_FALSE(o.due("b", kT0));
  // a heartbeats at the new generation: it has stopped using t-1.
  EXPECT_EQ(o.releaseUntargeted("a"), 1u);
  EXPECT_TRUE(o.due("b", kT0));
  EXPECT_EQ(o.grant("b", kT0), (std::vector<P>{P{"t", 1}}));
  EXPECT_TRUE(o.owns("a", P{"t", 0}));
}

TEST(Ownership, RegisteringWithoutAPartitionReleasesIt) {
  Ownership o;
  o.setTarget({{"a", {P{"t", 0}, P{"t", 1}}}});
  o.grant("a", kT0);
  o.reportOwned("a", {P{"t", 0}});
  EXPECT_EQ(o.holderOf(P{"t", 1}), "");
  EXPECT_EQ(o.heldBy("a"), (std::vector<P>{P{"t", 0}}));
}

TEST(Ownership, LeaveOrEvictionFreesEverything) {
  Ownership o;
  o.setTarget({{"a", {P{"t", 0}, P{"t", 1}}}});
  o.grant("a", kT0);
  EXPECT_EQ(o.releaseAll("a"), 2u);
  EXPECT_EQ(o.heldCount(), 0u);
}

TEST(Ownership, AfterATakeoverUnreportedPartitionsWaitOneSessionTimeout) {
  Ownership o;
  o.holdUnclaimedUntil(kT0 + std::chrono::seconds(10));
  o.setTarget({{"a", {P{"t", 0}, P{"t", 1}}}, {"b", {P{"t", 2}}}});
  // a reports t-0 (and t-2, which b is due): both become a's.
  o.reportOwned("a", {P{"t", 0}, P{"t", 2}});
  EXPECT_EQ(o.grant("a", kT0), (std::vector<P>{P{"t", 0}})) << "t-1 was reported by nobody";
  EXPECT_FALSE(o.due("a", kT0));
  EXPECT_TRUE(o.grant("b", kT0).empty()) << "a still holds t-2";
  EXPECT_FALSE(o.due("a", kT0 + std::chrono::seconds(9)));
  EXPECT_TRUE(o.due("a", kT0 + std::chrono::seconds(10)));
  EXPECT_EQ(o.grant("a", kT0 + std::chrono::seconds(10)), (std::vector<P>{P{"t", 0}, P{"t", 1}}));
  o.releaseUntargeted("a");
  EXPECT_EQ(o.grant("b", kT0 + std::chrono::seconds(10)), (std::vector<P>{P{"t", 2}}));
}

TEST(Ownership, AReportCannotStealAHeldPartition) {
  Ownership o;
  o.setTarget({{"a", {P{"t", 0}}}});
  o.grant("a", kT0);
  o.reportOwned("b", {P{"t", 0}});
  EXPECT_EQ(o.holderOf(P{"t", 0}), "a");
  EXPECT_TRUE(o.heldBy("b").empty());
}

// The heartbeat path skips its checks while the epoch stays: every change
// that can alter a member's answer must move it, and nothing else may.
TEST(Ownership, TheEpochMovesOnEveryChangeAndOnlyThen) {
  Ownership o;
  uint64_t e = o.epoch();
  auto moved = [&] {
    const bool m = o.epoch() != e;
    e = o.epoch();
    return m;
  };
  o.setTarget({{"a", {P{"t", 0}, P{"t", 1}}}, {"b", {}}});
  EXPECT_TRUE(moved()) << "a new target";
  o.grant("a", kT0);
  EXPECT_TRUE(moved()) << "a grant";
  o.grant("a", kT0);
  EXPECT_FALSE(moved()) << "granting what it holds changes nothing";
  EXPECT_EQ(o.releaseUntargeted("a"), 0u);
  EXPECT_FALSE(moved()) << "an in-sync heartbeat changes nothing";
  EXPECT_FALSE(o.due("a", kT0));
  EXPECT_FALSE(moved());
  o.setTarget({{"a", {P{"t", 0}}}, {"b", {P{"t", 1}}}});
  EXPECT_TRUE(moved());
  EXPECT_EQ(o.releaseUntargeted("a"), 1u);
  EXPECT_TRUE(moved()) << "a release frees a partition b may now be granted";
  EXPECT_TRUE(o.due("b", kT0));
  o.reportOwned("b", {});
  EXPECT_TRUE(moved()) << "a report";
  o.releaseAll("a");
  EXPECT_TRUE(moved()) << "a leave";
  o.holdUnclaimedUntil(kT0 + std::chrono::seconds(10));
  EXPECT_TRUE(moved()) << "a takeover's grace";
  o.clear();
  EXPECT_TRUE(moved());
}

TEST(Ownership, SettledWhenEveryTargetedPartitionIsWithItsMember) {
  Ownership o;
  EXPECT_TRUE(o.settled()) << "nothing to place";
  o.setTarget({{"a", {P{"t", 0}, P{"t", 1}}}});
  EXPECT_FALSE(o.settled());
  o.grant("a", kT0);
  EXPECT_TRUE(o.settled());
  // b joins: t-1 is b's now, a still holds it.
  o.setTarget({{"a", {P{"t", 0}}}, {"b", {P{"t", 1}}}});
  EXPECT_FALSE(o.settled());
  o.releaseUntargeted("a");
  EXPECT_FALSE(o.settled()) << "free is not placed";
  o.grant("b", kT0);
  EXPECT_TRUE(o.settled());
  // b leaves: its partition is free until the next target.
  o.releaseAll("b");
  EXPECT_FALSE(o.settled());
  o.setTarget({{"a", {P{"t", 0}, P{"t", 1}}}});
  o.grant("a", kT0);
  EXPECT_TRUE(o.settled());
  // A member reporting a partition it was not given keeps the group unsettled
  // only while the target wants it elsewhere.
  o.setTarget({{"a", {P{"t", 0}}}, {"c", {P{"t", 1}}}});
  EXPECT_FALSE(o.settled());
  o.reportOwned("a", {P{"t", 0}});
  o.grant("c", kT0);
  EXPECT_TRUE(o.settled());
  o.clear();
  EXPECT_TRUE(o.settled());
}

// A target giving a partition to two members (a handover record could say
// so) is indexed as one built anew, and so is the next: when the member
// the index had for it leaves, the partition is still the other's target.
TEST(Ownership, APartitionTargetedTwiceStaysTargetedWhenOneOfThemLeaves) {
  Ownership o;
  o.setTarget({{"a", {P{"t", 0}}}, {"b", {P{"t", 0}}}});
  o.setTarget({{"b", {P{"t", 0}}}});  // a left; b's target unchanged
  EXPECT_FALSE(o.settled()) << "t-0 is b's target and nobody holds it";
  EXPECT_EQ(o.grant("b", kT0), (std::vector<P>{P{"t", 0}}));
  EXPECT_TRUE(o.settled());
}

// setTarget indexes again only the members whose targets changed: over a
// run of targets (members coming and going, partitions moving, a target
// unchanged, now and then a partition given to two members), what the
// index decides (settled, due, whom a release frees a
// partition for) is what an Ownership given the same target anew decides.
TEST(Ownership, AnIndexKeptAcrossTargetsDecidesAsOneBuiltAnew) {
  std::mt19937 rng(20261207);
  Ownership kept;
  std::map<std::string, std::vector<P>> target;
  for (int step = 0; step < 200; ++step) {
    if (step % 7 != 3) {  // every seventh step: the same target again
      target.clear();
      const int members = 1 + static_cast<int>(rng() % 6);
      for (int32_t p = 0; p < 12; ++p) {
        if (rng() % 5 == 0) continue;  // a partition in nobody's target
        target["m" + std::to_string(rng() % static_cast<unsigned>(members))].push_back(P{"t", p});
      }
      if (step % 11 == 5 && !target.empty()) {
        // A partition given to two members (a handover record could say so).
        target["m" + std::to_string(rng() % 6)].push_back(target.begin()->second.empty()
                                                               ? P{"t", 0}
                                                               : target.begin()->second.front());
      }
    }
    kept.setTarget(target);
    // Grants, a release and a leave, the same on both.
    Ownership fresh;
    for (const auto& id : kept.holders()) fresh.reportOwned(id, kept.heldBy(id));
    fresh.setTarget(target);
    for (const auto& [id, _] : target) {
      kept.grant(id, kT0);
      fresh.grant(id, kT0);
    }
    EXPECT_EQ(kept.settled(), fresh.settled()) << "step " << step;
    for (int m = 0; m < 6; ++m) {
      const std::string id = "m" + std::to_string(m);
      EXPECT_EQ(kept.due(id, kT0), fresh.due(id, kT0)) << "step " << step << ", " << id;
      EXPECT_EQ(kept.heldBy(id), fresh.heldBy(id)) << "step " << step << ", " << id;
    }
    const std::string leaver = "m" + std::to_string(rng() % 6);
    kept.releaseAll(leaver);
    fresh.releaseAll(leaver);
    EXPECT_EQ(kept.takeFreedFor(), fresh.takeFreedFor()) << "step " << step;
    EXPECT_EQ(kept.settled(), fresh.settled()) << "step " << step;
  }
}

}  // namespace
}  // namespace groupcoord::adapter
