// The stall rule on a hand-driven clock and the in-memory ZooKeeper: a
// tick overdue by more than a third of the session timeout makes the
// server stalled until a ZooKeeper round trip of the same session succeeds.

#include <gtest/gtest.h>

#include "adapter/StallGuard.h"
#include "tests/adapter/FakeZkTestSupport.h"

namespace groupcoord::adapter {
namespace {

using namespace std::chrono_literals;
using testsupport::CompletionGate;

constexpr const char* kProbe = "/gc";
constexpr const char* kMissing = "/nowhere";

class StallGuardTest : public ::testing::Test {
 protected:
  StallGuardTest() {
    testsupport::quietLogs();
    zk::FakeClientOptions o;
    o.sessionTimeout = 3000ms;  // a third: 1000 ms
    o.name = "stall";
    zk_ = std::make_unique<zk::FakeClient>(ensemble_, o);
    EXPECT_EQ(zk_->createSync(kProbe, "", zk::CreateMode::Persistent).error, zk::Error::Ok);
  }
  ~StallGuardTest() override { zk_.reset(); }

  void settle() { testsupport::settle(ensemble_); }
  TimePoint advance(std::chrono::milliseconds d) {
    time_.advance(d);
    return time_.now();
  }
  // A tick that comes late: the gap exceeds a third of the session timeout.
  void lateTick(StallGuard& g) { g.onTick(advance(1001ms)); }
  uint64_t probes() { return zk_->counters().reads; }

  zk::FakeEnsemble ensemble_;
  std::unique_ptr<zk::FakeClient> zk_;
  ManualTimeSource time_;
  SessionEpoch epoch_;
};

TEST_F(StallGuardTest, NotStalledBeforeTheFirstTick) {
  StallGuard g(*zk_, kProbe, time_, epoch_);
  EXPECT_FALSE(g.stalled(time_.now()));
  EXPECT_FALSE(g.stalled(time_.now() + 1h));
}

TEST_F(StallGuardTest, RegularTicksNeverStallNorProbe) {
  StallGuard g(*zk_, kProbe, time_, epoch_);
  zk_->resetCounters();
  for (int i = 0; i < 20; ++i) {
    g.onTick(advance(500ms));
    EXPECT_FALSE(g.stalled(time_.now()));
    EXPECT_FALSE(g.stalled(time_.now() + 999ms));
  }
  // Exactly a third is not late yet.
  g.onTick(advance(1000ms));
  EXPECT_FALSE(g.stalled(time_.now()));
  settle();
  EXPECT_EQ(zk_->counters().calls, 0u) << "no ZooKeeper call without a stall";
}

TEST_F(StallGuardTest, AnOverdueTickStallsEvenBeforeItComes) {
  StallGuard g(*zk_, kProbe, time_, epoch_);
  g.onTick(time_.now());
  const TimePoint tick = time_.now();
  EXPECT_FALSE(g.stalled(tick + 1000ms)) << "exactly a third after the tick is still in time";
  EXPECT_TRUE(g.stalled(tick + 1001ms));
  EXPECT_TRUE(g.stalled(tick + 1h));
  // The next tick, in time, moves the deadline.
  g.onTick(advance(900ms));
  EXPECT_FALSE(g.stalled(tick + 1001ms));
  EXPECT_TRUE(g.stalled(tick + 1901ms));
}

TEST_F(StallGuardTest, ALateTickStallsUntilZooKeeperAnswers) {
  StallGuard g(*zk_, kProbe, time_, epoch_);
  g.onTick(time_.now());
  zk_->resetCounters();
  {
    CompletionGate hold(*zk_);
    lateTick(g);
    EXPECT_TRUE(g.stalled(time_.now())) << "the tick came, but late: stalled until ZooKeeper answers";
    EXPECT_TRUE(g.stalled(time_.now() + 1ms));
    hold.open();
  }
  settle();
  EXPECT_EQ(probes(), 1u) << "one probe";
  EXPECT_FALSE(g.stalled(time_.now()));
  // And the deadline counts from the late tick.
  EXPECT_TRUE(g.stalled(time_.now() + 1001ms));
}

TEST_F(StallGuardTest, OnlyOneProbeIsInFlightAtATime) {
  StallGuard g(*zk_, kProbe, time_, epoch_);
  g.onTick(time_.now());
  {
    CompletionGate hold(*zk_);
    zk_->resetCounters();
    lateTick(g);
    for (int i = 0; i < 5; ++i) g.onTick(advance(100ms));
    lateTick(g);  // late again while the probe is out
    EXPECT_EQ(probes(), 1u) << "one probe until it is answered";
    EXPECT_TRUE(g.stalled(time_.now()));
    hold.open();
  }
  settle();
  EXPECT_FALSE(g.stalled(time_.now()));
  g.onTick(advance(100ms));
  settle();
  EXPECT_EQ(probes(), 1u) << "no probe once the stall is cleared";
}

TEST_F(StallGuardTest, AProbeOfAnEarlierSessionDoesNotClearTheStall) {
  StallGuard g(*zk_, kProbe, time_, epoch_);
  g.onTick(time_.now());
  {
    CompletionGate hold(*zk_);
    lateTick(g);
    epoch_.advance();  // the session ended while the probe was out
    hold.open();
  }
  settle();
  EXPECT_TRUE(g.stalled(time_.now())) << "an answer of the old session proves nothing";
  // The next tick probes again, in the current session.
  zk_->resetCounters();
  g.onTick(advance(100ms));
  settle();
  EXPECT_EQ(probes(), 1u);
  EXPECT_FALSE(g.stalled(time_.now()));
}

TEST_F(StallGuardTest, AFailedProbeKeepsItStalledAndTheTicksProbeAgain) {
  StallGuard g(*zk_, kMissing, time_, epoch_);
  g.onTick(time_.now());
  zk_->resetCounters();
  lateTick(g);
  settle();
  EXPECT_TRUE(g.stalled(time_.now())) << "NoNode is no proof";
  EXPECT_EQ(probes(), 1u);
  for (int i = 0; i < 3; ++i) {
    g.onTick(advance(100ms));
    settle();
    EXPECT_TRUE(g.stalled(time_.now()));
  }
  EXPECT_EQ(probes(), 4u) << "each tick probes again once the previous probe answered";
}

TEST_F(StallGuardTest, AProbeLostToTheConnectionKeepsItStalledUntilOneSucceeds) {
  StallGuard g(*zk_, kProbe, time_, epoch_);
  g.onTick(time_.now());
  zk_->disconnect();
  lateTick(g);
  settle();
  EXPECT_TRUE(g.stalled(time_.now()));
  zk_->reconnect();
  g.onTick(advance(100ms));
  settle();
  EXPECT_FALSE(g.stalled(time_.now()));
}

TEST_F(StallGuardTest, AfterStopAProbeAnswerNoLongerClearsTheStall) {
  StallGuard g(*zk_, kProbe, time_, epoch_);
  g.onTick(time_.now());
  {
    CompletionGate hold(*zk_);
    lateTick(g);
    g.stop();
    hold.open();
  }
  settle();
  EXPECT_TRUE(g.stalled(time_.now()));
}

}  // namespace
}  // namespace groupcoord::adapter
