// zk::Session without a server: its lifecycle and the exactly-once
// delivery of callbacks when it is closed with work still pending.

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>

#include "ZkTestUtil.h"
#include "zk/Session.h"

namespace groupcoord::zk::test {
namespace {

// Nothing listens on port 1 of the loopback: connections are refused.
SessionConfig unreachable() {
  SessionConfig config;
  config.connect = "127.0.0.1:1";
  config.sessionTimeout = std::chrono::milliseconds(4000);
  config.logPrefix = "[unreachable] ";
  return config;
}

TEST(SessionUnit, CallsBeforeStartFailWithInvalidStateOnTheCompletionThread) {
  Session s(unreachable());
  EXPECT_EQ(s.state(), SessionState::Connecting);
  EXPECT_EQ(s.sessionId(), 0);
  std::promise<std::thread::id> where;
  s.get("/", [&](GetResult r) {
    EXPECT_EQ(r.error, Error::InvalidState);
    where.set_value(std::this_thread::get_id());
  });
  auto f = where.get_future();
  ASSERT_EQ(f.wait_for(kWait), std::future_status::ready);
  EXPECT_NE(f.get(), std::this_thread::get_id());
  EXPECT_EQ(s.multiSync({makeCheck("/", 0)}).error, Error::InvalidState);
}

TEST(SessionUnit, UnreachableEnsembleKeepsConnectingAndWaitIsBounded) {
  Session s(unreachable());
  ASSERT_EQ(s.start(), Error::Ok);
  EXPECT_EQ(s.start(), Error::Ok);  // already started
  EXPECT_EQ(s.waitConnected(std::chrono::milliseconds(300)), Error::OperationTimeout);
  EXPECT_EQ(s.state(), SessionState::Connecting);
  EXPECT_EQ(s.currentServer(), "");
  // Not connected: calls fail at once, they are not held for later.
  EXPECT_EQ(s.getSync("/").error, Error::ConnectionLoss);
  EXPECT_EQ(s.multiSync({makeCreate("/a", "")}).error, Error::ConnectionLoss);
  // Nothing to renew: renew() is harmless.
  s.renew();
  EXPECT_EQ(s.state(), SessionState::Connecting);
}

TEST(SessionUnit, ABadConnectStringIsRefusedAtStart) {
  SessionConfig config = unreachable();
  config.connect = "";
  Session s(config);
  EXPECT_NE(s.start(), Error::Ok);
  EXPECT_EQ(s.getSync("/").error, Error::InvalidState);
}

TEST(SessionUnit, DestroyedWithCallbacksQueuedCallsEachExactlyOnce) {
  constexpr int kOps = 200;
  std::mutex m;
  std::map<int, int> calls;
  std::map<int, Error> errors;
  std::atomic<int> watchEvents{0};
  std::vector<WatchEvent> events;
  StateRecorder states;
  {
    Session s(unreachable());
    s.setListener(&states);
    ASSERT_EQ(s.start(), Error::Ok);
    auto record = [&](int i, Error e) {
      std::lock_guard lock(m);
      ++calls[i];
      errors[i] = e;
    };
    for (int i = 0; i < kOps; ++i) {
      switch (i % 7) {
        case 0: s.create("/x" + std::to_string(i), "d", CreateMode::Ephemeral, [&, i](CreateResult r) { record(i, r.error); }); break;
        case 1: s.remove("/x", kAnyVersion, [&, i](Error e) { record(i, e); }); break;
        case 2:
          s.get("/x", [&, i](GetResult r) { record(i, r.error); },
                [&](const WatchEvent& e) {
                  std::lock_guard lock(m);
                  events.push_back(e);
                  ++watchEvents;
                });
          break;
        case 3: s.set("/x", "v", 2, [&, i](SetResult r) { record(i, r.error); }); break;
        case 4:
          s.exists("/x", [&, i](ExistsResult r) { record(i, r.error); },
                   [&](const WatchEvent& e) {
                     std::lock_guard lock(m);
                     events.push_back(e);
                     ++watchEvents;
                   });
          break;
        case 5: s.getChildren("/", [&, i](ChildrenResult r) { record(i, r.error); }); break;
        default:
          s.multi({makeCreate("/m", ""), makeSetData("/m", "x", 0)}, [&, i](MultiResult r) { record(i, r.error); });
          break;
      }
    }
    // Destroyed at once: most callbacks are still queued for delivery.
  }
  std::lock_guard lock(m);
  ASSERT_EQ(calls.size(), static_cast<size_t>(kOps));
  for (auto& [i, n] : calls) {
    EXPECT_EQ(n, 1) << "callback " << i;
    EXPECT_TRUE(errors[i] == Error::Closing || errors[i] == Error::ConnectionLoss)
        << "callback " << i << ": " << errorName(errors[i]);
  }
  // The watches were never armed (their reads never succeeded): not called.
  EXPECT_EQ(watchEvents.load(), 0);
  // The destructor does not call the listener.
  EXPECT_FALSE(states.saw(SessionState::Closed));
}

TEST(SessionUnit, CloseIsIdempotentAndLaterCallsGetClosing) {
  Session s(unreachable());
  StateRecorder states;
  s.setListener(&states);
  ASSERT_EQ(s.start(), Error::Ok);
  s.close();
  s.close();
  EXPECT_EQ(s.state(), SessionState::Closed);
  EXPECT_EQ(s.getSync("/").error, Error::Closing);
  EXPECT_EQ(s.waitConnected(std::chrono::milliseconds(10)), Error::Closing);
  EXPECT_EQ(s.start(), Error::Closing);
  EXPECT_TRUE(states.waitFor(SessionState::Closed));
}

TEST(SessionUnit, ExpireSessionRefusesNonsense) {
  EXPECT_EQ(expireSession("127.0.0.1:1", 0, std::string(16, 'x')), Error::BadArguments);
  EXPECT_EQ(expireSession("127.0.0.1:1", 42, "short"), Error::BadArguments);
  EXPECT_EQ(expireSession("127.0.0.1:1", 42, std::string(16, 'x'), std::chrono::milliseconds(200)),
            Error::OperationTimeout);
}

}  // namespace
}  // namespace groupcoord::zk::test
