// The session lease on a hand-driven clock and the in-memory ZooKeeper:
// it lasts from the send time of the latest answered probe for the session
// timeout less the margin, is renewed by the tick while ZooKeeper answers,
// and runs out on time when it does not.

#include <gtest/gtest.h>

#include "adapter/SessionLease.h"
#include "tests/adapter/FakeZkTestSupport.h"

namespace groupcoord::adapter {
namespace {

using namespace std::chrono_literals;
using testsupport::CompletionGate;

constexpr const char* kProbe = "/gc";

class SessionLeaseTest : public ::testing::Test {
 protected:
  SessionLeaseTest() {
    testsupport::quietLogs();
    zk::FakeClientOptions o;
    o.sessionTimeout = 4000ms;  // margin 800 ms, a probe every 400 ms
    o.name = "lease";
    zk_ = std::make_unique<zk::FakeClient>(ensemble_, o);
    EXPECT_EQ(zk_->createSync(kProbe, "", zk::CreateMode::Persistent).error, zk::Error::Ok);
  }
  ~SessionLeaseTest() override { zk_.reset(); }

  void settle() { testsupport::settle(ensemble_); }
  TimePoint advance(std::chrono::milliseconds d) {
    time_.advance(d);
    return time_.now();
  }

  zk::FakeEnsemble ensemble_;
  std::unique_ptr<zk::FakeClient> zk_;
  ManualTimeSource time_;
  SessionEpoch epoch_;
};

TEST_F(SessionLeaseTest, NothingIsValidBeforeZooKeeperAnswers) {
  SessionLease lease(*zk_, kProbe, epoch_);
  EXPECT_FALSE(lease.valid(time_.now()));
  CompletionGate gate(*zk_);
  lease.probeNow(time_.now());
  EXPECT_FALSE(lease.valid(time_.now())) << "sent, not answered yet";
  gate.open();
  settle();
  EXPECT_TRUE(lease.valid(time_.now()));
}

TEST_F(SessionLeaseTest, ItEndsTheSessionTimeoutLessTheMarginAfterTheProbeWasSent) {
  SessionLease lease(*zk_, kProbe, epoch_);
  EXPECT_EQ(lease.margin(), 800ms);
  EXPECT_EQ(lease.probeInterval(), 400ms);
  const TimePoint sent = time_.now();
  {
    // The answer comes 300 ms after the send: the lease still counts from
    // the send, the latest moment the ensemble can have heard the session.
    CompletionGate gate(*zk_);
    lease.probeNow(sent);
    advance(300ms);
    gate.open();
    settle();
  }
  EXPECT_EQ(lease.until(), sent + 3200ms);
  EXPECT_TRUE(lease.valid(sent + 3199ms));
  EXPECT_FALSE(lease.valid(sent + 3200ms));
}

TEST_F(SessionLeaseTest, TicksRenewItWhileZooKeeperAnswersWithOneProbePerInterval) {
  SessionLease lease(*zk_, kProbe, epoch_);
  zk_->resetCounters();
  for (int i = 0; i < 100; ++i) {  // 10 s in ticks of 100 ms
    lease.onTick(advance(100ms));
    settle();
    ASSERT_TRUE(lease.valid(time_.now()));
    EXPECT_GE(lease.until(), time_.now() + 4000ms - 800ms - 400ms) << "the lease is never older than an interval";
  }
  EXPECT_EQ(zk_->counters().calls, 25u) << "one probe every 400 ms";
}

TEST_F(SessionLeaseTest, CutOffItRunsOutBeforeTheEnsembleCouldExpireTheSession) {
  SessionLease lease(*zk_, kProbe, epoch_);
  for (int i = 0; i < 20; ++i) {
    lease.onTick(advance(100ms));
    settle();
  }
  // The last probe before the cut: the ensemble heard the session no later
  // than the tick that sent it.
  zk_->resetCounters();
  lease.onTick(advance(400ms));
  settle();
  ASSERT_EQ(zk_->counters().calls, 1u);
  const TimePoint lastAnswered = time_.now();
  zk_->disconnect();
  const TimePoint couldExpire = lastAnswered + 4000ms;
  TimePoint lastValid{};
  for (int i = 0; i < 100; ++i) {
    lease.onTick(advance(100ms));
    settle();
    if (lease.valid(time_.now())) lastValid = time_.now();
  }
  EXPECT_LT(lastValid, couldExpire - 700ms) << "the margin holds";
  EXPECT_GE(lastValid, lastAnswered + 3000ms) << "a blip shorter than the bound changes nothing";
  EXPECT_FALSE(lease.valid(time_.now()));
  // Back in the same session: the next probe renews it.
  zk_->reconnect();
  lease.probeNow(time_.now());
  settle();
  EXPECT_TRUE(lease.valid(time_.now()));
}

TEST_F(SessionLeaseTest, AnAnswerFromAnEndedSessionConfirmsNothing) {
  SessionLease lease(*zk_, kProbe, epoch_);
  {
    CompletionGate gate(*zk_);
    lease.probeNow(time_.now());
    epoch_.advance();  // the session ended while the probe was out
    lease.reset();
    gate.open();
    settle();
  }
  EXPECT_FALSE(lease.valid(time_.now()));
}

TEST_F(SessionLeaseTest, AnErrorConfirmsNothing) {
  SessionLease lease(*zk_, kProbe, epoch_);
  zk_->disconnect();
  lease.probeNow(time_.now());
  settle();
  EXPECT_FALSE(lease.valid(time_.now()));
}

TEST_F(SessionLeaseTest, AGivenMarginReplacesTheDefault) {
  SessionLease lease(*zk_, kProbe, epoch_, 1500ms);
  EXPECT_EQ(lease.margin(), 1500ms);
  const TimePoint sent = time_.now();
  lease.probeNow(sent);
  settle();
  EXPECT_EQ(lease.until(), sent + 2500ms);
  EXPECT_EQ(SessionLease::defaultMargin(10000ms), 2000ms);
  EXPECT_EQ(SessionLease::defaultMargin(500ms), 200ms);
}

}  // namespace
}  // namespace groupcoord::adapter
