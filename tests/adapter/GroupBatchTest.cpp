// Coalesced joins (docs/design.md, "Coalesced joins"): the joins waiting in
// a group's MembershipBatch go out `window` after the latest of them, and
// no later than `cap` after the first. Driven the way GroupController's
// flush drives it: on every tick, what is due goes out.

#include "adapter/GroupBatch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace groupcoord::adapter {
namespace {

using namespace std::chrono_literals;

constexpr Millis kWindow{100};
constexpr Millis kCap{3000};
constexpr Millis kTick{10};

TimePoint at(Millis ms) { return TimePoint{} + 1h + ms; }

void join(MembershipBatch& b, const std::string& id, TimePoint now) {
  b.noteJoin(now, kWindow);
  b.joins.pending()[id].memberId = id;
}

// What the controller's flush does with the joins: send them once due, and
// the transaction applies at once. Returns each member's send time.
struct Flusher {
  MembershipBatch batch;
  std::map<std::string, TimePoint> sentAt;
  size_t transactions = 0;

  void tick(TimePoint now) {
    if (!batch.joins.hasPending() || now < batch.joinsDueAt(kCap)) return;
    batch.launch(1'000'000);
    for (auto& [id, _] : batch.joins.takeInFlight()) sentAt[id] = now;
    batch.applied();
    ++transactions;
  }
};

TEST(CoalescedJoins, NothingWaitingIsDueAtOnce) {
  MembershipBatch b;
  EXPECT_EQ(b.joinsDueAt(kCap), TimePoint{});
}

TEST(CoalescedJoins, ALoneJoinWaitsTheWindowAndNoMore) {
  MembershipBatch b;
  join(b, "a", at(0ms));
  EXPECT_EQ(b.joinsDueAt(kCap), at(kWindow));
  MembershipBatch rest;
  rest.noteJoin(at(0ms), Millis(0));
  rest.joins.pending()["a"].memberId = "a";
  rest.noteJoin(at(5ms), Millis(0));
  EXPECT_EQ(rest.joinsDueAt(kCap), at(0ms)) << "window 0: no wait, and a later join does not open one";
}

TEST(CoalescedJoins, EachJoinRestartsTheWindowUpToTheCap) {
  MembershipBatch b;
  join(b, "a", at(0ms));
  join(b, "b", at(80ms));
  EXPECT_EQ(b.joinsDueAt(kCap), at(180ms));
  for (int i = 0; i < 100; ++i) join(b, "m" + std::to_string(i), at(Millis(80 * i)));
  EXPECT_EQ(b.joinsDueAt(kCap), at(kCap)) << "a steady trickle is cut at the cap";
}

TEST(CoalescedJoins, AStormWithinTheCapGoesOutInOneTransaction) {
  Flusher f;
  // 2,000 joins over 1.5 s, never more than 50 ms apart.
  for (int i = 0; i < 2000; ++i) {
    const TimePoint now = at(Millis(i * 3 / 4));
    join(f.batch, "m" + std::to_string(i), now);
  }
  for (Millis t{0}; t < 5000ms; t += kTick) f.tick(at(t));
  EXPECT_EQ(f.transactions, 1u);
  EXPECT_EQ(f.sentAt.size(), 2000u);
}

TEST(CoalescedJoins, JoinsThatKeepComingAreSentEveryCapAtTheLatest) {
  Flusher f;
  int n = 0;
  for (Millis t{0}; t < 10000ms; t += kTick) {
    if (t < 9000ms && t.count() % 50 == 0) join(f.batch, "m" + std::to_string(n++), at(t));
    f.tick(at(t));
  }
  EXPECT_EQ(f.sentAt.size(), static_cast<size_t>(n));
  EXPECT_LE(f.transactions, 4u) << "9 s of joins every 50 ms: one move per 3 s cap";
  EXPECT_GE(f.transactions, 3u);
}

// The property: over random arrival patterns, (1) no join waits longer
// than the cap (plus the tick that finds it due), and (2) a lone join (no
// other join waiting when it arrives, none arriving within the window
// after) is sent within the window (plus a tick), never later.
TEST(CoalescedJoins, PropertyALoneJoinIsNeverDelayedPastTheWindowNorAnyJoinPastTheCap) {
  std::mt19937 rng(20261204);
  size_t lone = 0;
  for (int round = 0; round < 200; ++round) {
    Flusher f;
    std::vector<std::pair<std::string, Millis>> arrivals;
    Millis t{0};
    const int count = std::uniform_int_distribution<int>(1, 60)(rng);
    for (int i = 0; i < count; ++i) {
      // Gaps from 0 to 400 ms: bursts, lone joins and everything between.
      const int pick = std::uniform_int_distribution<int>(0, 3)(rng);
      const int gap = pick == 0 ? 0 : pick == 1 ? std::uniform_int_distribution<int>(1, 99)(rng)
                                               : std::uniform_int_distribution<int>(100, 400)(rng);
      t += Millis(gap);
      arrivals.emplace_back("m" + std::to_string(i), t);
    }
    std::map<std::string, bool> waitingAtArrival;
    size_t next = 0;
    for (Millis now{0}; now <= t + kCap + 100ms; now += 1ms) {
      while (next < arrivals.size() && arrivals[next].second == now) {
        waitingAtArrival[arrivals[next].first] = f.batch.joins.hasPending();
        join(f.batch, arrivals[next].first, at(now));
        ++next;
      }
      if (now.count() % kTick.count() == 0) f.tick(at(now));
    }
    ASSERT_EQ(f.sentAt.size(), arrivals.size());
    for (size_t i = 0; i < arrivals.size(); ++i) {
      const auto& [id, arrived] = arrivals[i];
      const Millis waited = std::chrono::duration_cast<Millis>(f.sentAt[id] - at(arrived));
      EXPECT_LE(waited, kCap + kTick) << id << " in round " << round;
      const bool nextWithinWindow = i + 1 < arrivals.size() && arrivals[i + 1].second - arrived <= kWindow;
      if (!waitingAtArrival[id] && !nextWithinWindow) {
        ++lone;
        EXPECT_GE(waited, kWindow) << id << " in round " << round;
        EXPECT_LE(waited, kWindow + kTick) << id << " in round " << round;
      }
    }
  }
  EXPECT_GT(lone, 100u) << "the random patterns must hold lone joins";
}

}  // namespace
}  // namespace groupcoord::adapter
