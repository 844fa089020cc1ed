// What only the fake has: its test controls (disconnect, reconnect,
// expire, injected failures), counters, several sessions on one ensemble,
// and deterministic delivery with waitIdle().

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "ZkTestUtil.h"
#include "zk/FakeClient.h"

namespace groupcoord::zk::test {
namespace {

class FakeClientTest : public ::testing::Test {
 protected:
  FakeEnsemble ensemble_;
};

TEST_F(FakeClientTest, SessionsGetDistinctIdsAndStartConnected) {
  FakeClient a(ensemble_);
  FakeClient b(ensemble_);
  EXPECT_EQ(a.state(), SessionState::Connected);
  EXPECT_NE(a.sessionId(), 0);
  EXPECT_NE(a.sessionId(), b.sessionId());
  EXPECT_EQ(a.sessionTimeout(), std::chrono::milliseconds(10000));
}

TEST_F(FakeClientTest, AClientMayStartUnconnected) {
  FakeClientOptions options;
  options.startConnected = false;
  options.sessionTimeout = std::chrono::milliseconds(4000);
  FakeClient c(ensemble_, options);
  StateRecorder states;
  c.setListener(&states);
  EXPECT_EQ(c.state(), SessionState::Connecting);
  EXPECT_EQ(c.sessionId(), 0);
  EXPECT_EQ(c.sessionTimeout(), std::chrono::milliseconds(4000));
  EXPECT_EQ(c.existsSync("/").error, Error::ConnectionLoss);
  c.reconnect();
  EXPECT_EQ(c.state(), SessionState::Connected);
  EXPECT_NE(c.sessionId(), 0);
  EXPECT_EQ(c.existsSync("/").error, Error::Ok);
  c.waitIdle();
  EXPECT_EQ(states.history(), std::vector<SessionState>{SessionState::Connected});
}

TEST_F(FakeClientTest, DisconnectFailsCallsButKeepsSessionAndWatches) {
  FakeClient owner(ensemble_);
  FakeClient other(ensemble_);
  StateRecorder states;
  owner.setListener(&states);
  ASSERT_EQ(owner.createSync("/g", "", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(owner.createSync("/g/m", "", CreateMode::Ephemeral).error, Error::Ok);
  WatchProbe probe;
  std::promise<void> armed;
  owner.getChildren("/g", [&](ChildrenResult) { armed.set_value(); }, probe.callback());
  armed.get_future().get();
  int64_t id = owner.sessionId();

  owner.disconnect();
  EXPECT_EQ(owner.state(), SessionState::Reconnecting);
  EXPECT_EQ(owner.getSync("/g").error, Error::ConnectionLoss);
  EXPECT_EQ(owner.createSync("/g/x", "", CreateMode::Persistent).error, Error::ConnectionLoss);
  EXPECT_EQ(owner.multiSync({makeCheck("/g", 0)}).error, Error::ConnectionLoss);
  // The ephemeral survives a disconnection; a change meanwhile is held back.
  EXPECT_TRUE(ensemble_.exists("/g/m"));
  ASSERT_EQ(other.createSync("/g/n", "", CreateMode::Persistent).error, Error::Ok);
  ensemble_.waitIdle();
  EXPECT_EQ(probe.count(), 0u);
  EXPECT_EQ(owner.armedWatches(), 1u);

  owner.reconnect();
  auto ev = probe.next();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, WatchEvent::Type::Child);
  EXPECT_EQ(owner.sessionId(), id);
  EXPECT_EQ(owner.getSync("/g").error, Error::Ok);
  owner.waitIdle();
  EXPECT_EQ(states.history(), (std::vector<SessionState>{SessionState::Reconnecting, SessionState::Connected}));
}

TEST_F(FakeClientTest, ExpiryDropsEphemeralsAndTellsOwnerAndWatchers) {
  auto owner = std::make_unique<FakeClient>(ensemble_);
  FakeClient watcher(ensemble_);
  StateRecorder states;
  owner->setListener(&states);
  ASSERT_EQ(owner->createSync("/g", "", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(owner->createSync("/g/m", "", CreateMode::Ephemeral).error, Error::Ok);
  WatchProbe others;
  WatchProbe own;
  std::promise<void> a, b;
  watcher.exists("/g/m", [&](ExistsResult) { a.set_value(); }, others.callback());
  owner->get("/g", [&](GetResult) { b.set_value(); }, own.callback());
  a.get_future().get();
  b.get_future().get();
  int64_t oldId = owner->sessionId();

  owner->expire();
  EXPECT_EQ(owner->state(), SessionState::Expired);
  EXPECT_FALSE(ensemble_.exists("/g/m"));
  auto deleted = others.next();
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->type, WatchEvent::Type::Deleted);
  auto ended = own.next();
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->type, WatchEvent::Type::Session);
  EXPECT_EQ(ended->state, SessionState::Expired);

  // Calls on the expired session fail cleanly until renew().
  EXPECT_EQ(owner->getSync("/g").error, Error::InvalidState);
  EXPECT_EQ(owner->createSync("/g/m", "", CreateMode::Ephemeral).error, Error::InvalidState);
  EXPECT_EQ(owner->multiSync({makeCheck("/g", 0)}).error, Error::InvalidState);
  owner->renew();
  EXPECT_EQ(owner->state(), SessionState::Connected);
  EXPECT_NE(owner->sessionId(), oldId);
  ASSERT_EQ(owner->createSync("/g/m", "", CreateMode::Ephemeral).error, Error::Ok);
  EXPECT_EQ(ensemble_.stat("/g/m")->ephemeralOwner, owner->sessionId());
  owner->waitIdle();
  EXPECT_EQ(states.history(),
            (std::vector<SessionState>{SessionState::Expired, SessionState::Connecting, SessionState::Connected}));
  // renew() in any other state does nothing.
  int64_t id = owner->sessionId();
  owner->renew();
  EXPECT_EQ(owner->sessionId(), id);
}

TEST_F(FakeClientTest, ExpiryDuringDisconnectionIsLearnedOnReconnect) {
  FakeClient owner(ensemble_);
  StateRecorder states;
  owner.setListener(&states);
  ASSERT_EQ(owner.createSync("/m", "", CreateMode::Ephemeral).error, Error::Ok);
  WatchProbe probe;
  std::promise<void> armed;
  owner.exists("/other", [&](ExistsResult) { armed.set_value(); }, probe.callback());
  armed.get_future().get();

  owner.disconnect();
  owner.expire();
  // The ensemble has dropped the session; the client does not know yet.
  EXPECT_FALSE(ensemble_.exists("/m"));
  EXPECT_EQ(owner.state(), SessionState::Reconnecting);
  EXPECT_EQ(owner.getSync("/").error, Error::ConnectionLoss);

  owner.reconnect();
  EXPECT_EQ(owner.state(), SessionState::Expired);
  auto ev = probe.next();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, WatchEvent::Type::Session);
  EXPECT_EQ(ev->state, SessionState::Expired);
  owner.waitIdle();
  EXPECT_EQ(states.history(), (std::vector<SessionState>{SessionState::Reconnecting, SessionState::Expired}));
}

TEST_F(FakeClientTest, ClosingASessionDeletesItsEphemeralsAndFiresOthersWatches) {
  FakeClient watcher(ensemble_);
  ASSERT_EQ(watcher.createSync("/g", "", CreateMode::Persistent).error, Error::Ok);
  WatchProbe probe;
  {
    FakeClient owner(ensemble_);
    ASSERT_EQ(owner.createSync("/g/m", "", CreateMode::Ephemeral).error, Error::Ok);
    std::promise<void> armed;
    watcher.getChildren("/g", [&](ChildrenResult) { armed.set_value(); }, probe.callback());
    armed.get_future().get();
  }
  EXPECT_FALSE(ensemble_.exists("/g/m"));
  auto ev = probe.next();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, WatchEvent::Type::Child);
  EXPECT_EQ(ev->path, "/g");
}

TEST_F(FakeClientTest, CloseDeliversAClosedEventToArmedWatchesAndFailsLaterCalls) {
  FakeClient c(ensemble_);
  StateRecorder states;
  c.setListener(&states);
  WatchProbe probe;
  std::promise<void> armed;
  c.exists("/nothing", [&](ExistsResult) { armed.set_value(); }, probe.callback());
  armed.get_future().get();
  c.close();
  auto ev = probe.next();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, WatchEvent::Type::Session);
  EXPECT_EQ(ev->state, SessionState::Closed);
  EXPECT_EQ(c.getSync("/").error, Error::Closing);
  c.close();  // idempotent
  c.waitIdle();
  EXPECT_EQ(states.history(), std::vector<SessionState>{SessionState::Closed});
  EXPECT_EQ(probe.count(), 1u);
}

TEST_F(FakeClientTest, CountersCountEveryCall) {
  FakeClient c(ensemble_);
  ASSERT_EQ(c.createSync("/a", "", CreateMode::Persistent).error, Error::Ok);
  c.getSync("/a");
  c.existsSync("/b");
  c.getChildrenSync("/a");
  c.setSync("/a", "x");
  c.multiSync({makeCheck("/a", 1), makeSetData("/a", "y")});
  c.removeSync("/missing");
  c.getSync("bad");
  std::promise<void> armed;
  c.get("/a", [&](GetResult) { armed.set_value(); }, [](const WatchEvent&) {});
  armed.get_future().get();

  auto n = c.counters();
  EXPECT_EQ(n.calls, 9u);
  EXPECT_EQ(n.reads, 5u);
  EXPECT_EQ(n.writes, 4u);
  EXPECT_EQ(n.creates, 1u);
  EXPECT_EQ(n.sets, 1u);
  EXPECT_EQ(n.removes, 1u);
  EXPECT_EQ(n.multis, 1u);
  EXPECT_EQ(n.multiOps, 2u);
  EXPECT_EQ(n.watchesSet, 1u);

  c.resetCounters();
  EXPECT_EQ(c.counters().calls, 0u);
}

TEST_F(FakeClientTest, InjectedFailuresHitTheNextCallsOnly) {
  FakeClient c(ensemble_);
  c.failNext(Error::ConnectionLoss, 2);
  EXPECT_EQ(c.createSync("/a", "", CreateMode::Persistent).error, Error::ConnectionLoss);
  EXPECT_FALSE(ensemble_.exists("/a"));
  auto m = c.multiSync({makeCreate("/a", ""), makeCreate("/b", "")});
  EXPECT_EQ(m.error, Error::ConnectionLoss);
  EXPECT_EQ(m.failedOp, -1);
  ASSERT_EQ(m.results.size(), 2u);
  EXPECT_EQ(m.results[1].error, Error::ConnectionLoss);
  EXPECT_FALSE(ensemble_.exists("/b"));
  EXPECT_EQ(c.createSync("/a", "", CreateMode::Persistent).error, Error::Ok);

  // A reply lost after the commit: the caller sees the error, the write is there.
  c.failNext(Error::ConnectionLoss, 1, /*applied=*/true);
  EXPECT_EQ(c.setSync("/a", "new").error, Error::ConnectionLoss);
  EXPECT_EQ(ensemble_.data("/a"), "new");
  EXPECT_EQ(c.getSync("/a").stat.version, 1);
}

TEST_F(FakeClientTest, WaitIdleDeliversEverythingQueued) {
  FakeClient c(ensemble_);
  std::atomic<int> done{0};
  for (int i = 0; i < 500; ++i) {
    c.exists("/", [&](ExistsResult r) {
      EXPECT_EQ(r.error, Error::Ok);
      ++done;
    });
  }
  c.waitIdle();
  EXPECT_EQ(done.load(), 500);
}

TEST_F(FakeClientTest, EnsembleWaitIdleFollowsCallbacksAcrossClients) {
  FakeClient a(ensemble_);
  FakeClient b(ensemble_);
  std::atomic<bool> reached{false};
  // a's callback makes b's watch fire, whose callback issues a call on b.
  std::promise<void> armed;
  b.exists("/ping", [&](ExistsResult) { armed.set_value(); },
           [&](const WatchEvent&) { b.exists("/ping", [&](ExistsResult) { reached = true; }); });
  armed.get_future().get();
  a.exists("/", [&](ExistsResult) { a.create("/ping", "", CreateMode::Persistent, [](CreateResult) {}); });
  ensemble_.waitIdle();
  EXPECT_TRUE(reached.load());
}

TEST_F(FakeClientTest, CallbacksNeverRunInTheCallersStack) {
  FakeClient c(ensemble_);
  std::mutex callerMutex;
  std::promise<bool> ran;
  {
    // Holding our own mutex while calling: a callback that takes it must
    // not run inline (it would deadlock here).
    std::lock_guard lock(callerMutex);
    c.get("/", [&](GetResult) {
      std::lock_guard inner(callerMutex);
      ran.set_value(true);
    });
  }
  auto f = ran.get_future();
  ASSERT_EQ(f.wait_for(kWait), std::future_status::ready);
  EXPECT_TRUE(f.get());
}

TEST_F(FakeClientTest, DirectReadsSeeTheTree) {
  FakeClient c(ensemble_);
  EXPECT_EQ(ensemble_.nodeCount(), 4u);  // "/", "/zookeeper" and its two children
  ASSERT_EQ(c.createSync("/x", "data", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(c.createSync("/x/b", "", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(c.createSync("/x/a", "", CreateMode::Persistent).error, Error::Ok);
  EXPECT_TRUE(ensemble_.exists("/x"));
  EXPECT_EQ(ensemble_.data("/x"), "data");
  EXPECT_EQ(ensemble_.data("/nothing"), std::nullopt);
  EXPECT_EQ(ensemble_.children("/x"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ensemble_.stat("/x")->numChildren, 2);
  EXPECT_EQ(ensemble_.nodeCount(), 7u);
  EXPECT_EQ(ensemble_.lastZxid(), ensemble_.stat("/x/a")->czxid);
}

}  // namespace
}  // namespace groupcoord::zk::test
