// zk::Session against the live ensemble: what only a real ensemble can
// show. Sessions closing and expiring, watches across sessions, a killed
// leader, digest ACLs, a chroot, and closing with work in flight. These
// tests never skip: without an ensemble they fail.

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>

#include "ZkTestUtil.h"
#include "support/TestEnv.h"
#include "zk/Session.h"

namespace groupcoord::zk::test {
namespace {

namespace env = groupcoord::testing;

constexpr std::chrono::milliseconds kSessionTimeout = kLiveSessionTimeout;

SessionConfig liveConfig(const std::string& prefix) {
  SessionConfig config;
  config.connect = env::zkConnect();
  config.sessionTimeout = kSessionTimeout;
  config.logPrefix = "[" + prefix + "] ";
  return config;
}

// Starts a session and waits until it is connected.
std::unique_ptr<Session> open(SessionConfig config, SessionListener* listener = nullptr) {
  auto s = std::make_unique<Session>(std::move(config));
  if (listener) s->setListener(listener);
  EXPECT_EQ(s->start(), Error::Ok);
  EXPECT_EQ(s->waitConnected(kWait), Error::Ok);
  return s;
}

// Starts node `node` again when the test ends, however it ends, so the
// tests after it find three nodes.
class RestartOnExit {
 public:
  explicit RestartOnExit(int node) : node_(node) {}
  ~RestartOnExit() {
    EXPECT_EQ(env::ensemble("restart " + std::to_string(node_)), 0) << "node " << node_ << " did not come back";
    EXPECT_EQ(env::ensemble("wait"), 0);
  }

 private:
  int node_;
};

// ZooKeeper is sequentially consistent per session, not across sessions: a
// session served by a follower may see another session's write a moment
// later. Cross-session checks therefore wait (bounded) for it.
bool seesData(Client& reader, const std::string& p, const std::string& data) {
  return eventually([&] {
    auto r = reader.getSync(p);
    return r.error == Error::Ok && r.data == data;
  });
}

bool seesNode(Client& reader, const std::string& p) {
  return eventually([&] { return reader.existsSync(p).error == Error::Ok; });
}

// Resumes a paused node when the test ends, however it ends.
class ResumeOnExit {
 public:
  explicit ResumeOnExit(int node) : node_(node) {}
  ~ResumeOnExit() {
    EXPECT_EQ(env::ensemble("resume " + std::to_string(node_)), 0);
    EXPECT_EQ(env::ensemble("wait"), 0);
  }

 private:
  int node_;
};

int nodeOfServer(const std::string& server) {
  auto colon = server.rfind(':');
  if (colon == std::string::npos) return -1;
  return std::stoi(server.substr(colon + 1)) - env::zkBasePort();
}

// Expires `session` from a second handle and waits until `states` saw it.
// Tried up to three times: while the ensemble is still settling (a test
// before this one restarts its leader), the session's own handle may take
// its connection back before the close reaches the ensemble, and the
// session lives on. Each try waits kWait: the handle learns of the expiry
// when it reconnects, within a session timeout.
bool expireAndSee(const Session& session, StateRecorder& states) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (expireSession(session) != Error::Ok) continue;
    if (states.waitFor(SessionState::Expired)) return true;
  }
  return false;
}

class SessionLive : public ::testing::Test {
 protected:
  void SetUp() override {
    env::requireEnsemble();
    if (HasFatalFailure()) return;
    admin_ = open(liveConfig("admin"));
    ASSERT_EQ(admin_->state(), SessionState::Connected);
    root_ = "/" + env::uniqueName("zk-session");
    ASSERT_EQ(admin_->ensurePathSync(root_), Error::Ok);
  }

  void TearDown() override {
    if (!admin_) return;
    if (admin_->state() != SessionState::Connected) admin_ = open(liveConfig("admin"));
    // Ephemerals of sessions closed a moment ago may still be there.
    EXPECT_TRUE(eventually([&] { return removeRecursive(*admin_, root_) == Error::Ok; }));
  }

  std::string path(const std::string& name) const { return joinPath(root_, name); }

  std::unique_ptr<Session> admin_;
  std::string root_;
};

TEST_F(SessionLive, TheListenerIsToldConnectedWithTheGrantedSession) {
  StateRecorder states;
  auto s = open(liveConfig("fresh"), &states);
  ASSERT_TRUE(states.waitFor(SessionState::Connected));
  EXPECT_EQ(states.history(), std::vector<SessionState>{SessionState::Connected});
  EXPECT_NE(s->sessionId(), 0);
  EXPECT_EQ(s->sessionPassword().size(), 16u);
  EXPECT_EQ(s->sessionTimeout(), kSessionTimeout);
  int node = nodeOfServer(s->currentServer());
  EXPECT_TRUE(node >= 1 && node <= 3) << s->currentServer();
}

TEST_F(SessionLive, EphemeralsVanishWhenTheirSessionCloses) {
  auto owner = open(liveConfig("owner"));
  ASSERT_EQ(owner->createSync(path("e"), "", CreateMode::Ephemeral).error, Error::Ok);
  ASSERT_TRUE(seesNode(*admin_, path("e")));
  WatchProbe probe;
  std::promise<ExistsResult> armed;
  admin_->exists(path("e"), [&](ExistsResult r) { armed.set_value(r); }, probe.callback());
  ASSERT_EQ(armed.get_future().get().error, Error::Ok);

  owner.reset();
  auto ev = probe.next();
  ASSERT_TRUE(ev) << "no event for the ephemeral of a closed session";
  EXPECT_EQ(ev->type, WatchEvent::Type::Deleted);
  EXPECT_EQ(ev->path, path("e"));
  EXPECT_EQ(admin_->existsSync(path("e")).error, Error::NoNode);
}

TEST_F(SessionLive, EphemeralsVanishWhenTheirSessionExpires) {
  StateRecorder states;
  auto owner = open(liveConfig("owner"), &states);
  ASSERT_EQ(owner->createSync(path("e"), "", CreateMode::Ephemeral).error, Error::Ok);
  ASSERT_TRUE(seesNode(*admin_, path("e")));
  WatchProbe probe;
  std::promise<ExistsResult> armed;
  admin_->exists(path("e"), [&](ExistsResult r) { armed.set_value(r); }, probe.callback());
  ASSERT_EQ(armed.get_future().get().error, Error::Ok);

  ASSERT_TRUE(expireAndSee(*owner, states)) << describe(states.history());
  auto ev = probe.next();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, WatchEvent::Type::Deleted);
  EXPECT_EQ(admin_->existsSync(path("e")).error, Error::NoNode);
}

TEST_F(SessionLive, AChildWatchOnAnotherSessionSeesAnEphemeralChildComeAndGo) {
  ASSERT_EQ(admin_->createSync(path("members"), "", CreateMode::Persistent).error, Error::Ok);
  WatchProbe probe;
  auto watchChildren = [&] {
    std::promise<ChildrenResult> p;
    admin_->getChildren(path("members"), [&](ChildrenResult r) { p.set_value(r); }, probe.callback());
    return p.get_future().get();
  };
  ASSERT_TRUE(watchChildren().children.empty());

  auto member = open(liveConfig("member"));
  ASSERT_EQ(member->createSync(path("members/c1"), "", CreateMode::Ephemeral).error, Error::Ok);
  auto joined = probe.next();
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->type, WatchEvent::Type::Child);
  EXPECT_EQ(joined->path, path("members"));
  EXPECT_EQ(watchChildren().children, std::vector<std::string>{"c1"});

  ASSERT_EQ(member->removeSync(path("members/c1")), Error::Ok);
  auto left = probe.next();
  ASSERT_TRUE(left);
  EXPECT_EQ(left->type, WatchEvent::Type::Child);
  EXPECT_TRUE(watchChildren().children.empty());

  // And when the child goes with its session.
  ASSERT_EQ(member->createSync(path("members/c2"), "", CreateMode::Ephemeral).error, Error::Ok);
  auto again = probe.next();
  ASSERT_TRUE(again);
  EXPECT_EQ(watchChildren().children, std::vector<std::string>{"c2"});
  member.reset();
  auto gone = probe.next();
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->type, WatchEvent::Type::Child);
  EXPECT_TRUE(admin_->getChildrenSync(path("members")).children.empty());
}

// The session's own server dies: the client reconnects elsewhere with the
// same session; nothing expires.
TEST_F(SessionLive, LosingItsServerIsNotExpiry) {
  StateRecorder states;
  auto owner = open(liveConfig("owner"), &states);
  ASSERT_EQ(owner->createSync(path("e"), "mine", CreateMode::Ephemeral).error, Error::Ok);
  int64_t id = owner->sessionId();
  int node = nodeOfServer(owner->currentServer());
  ASSERT_TRUE(node >= 1 && node <= 3) << owner->currentServer();
  {
    RestartOnExit restart(node);
    ASSERT_EQ(env::ensemble("kill " + std::to_string(node)), 0);
    ASSERT_TRUE(states.waitFor(SessionState::Reconnecting)) << describe(states.history());
    ASSERT_TRUE(states.waitFor(SessionState::Connected, kWait, 2)) << describe(states.history());
    EXPECT_NE(nodeOfServer(owner->currentServer()), node);
    EXPECT_EQ(owner->sessionId(), id);
    EXPECT_EQ(owner->getSync(path("e")).data, "mine");
  }
  EXPECT_FALSE(states.saw(SessionState::Expired)) << describe(states.history());
  ASSERT_TRUE(seesNode(*admin_, path("e")));
  auto st = admin_->existsSync(path("e"));
  ASSERT_EQ(st.error, Error::Ok);
  EXPECT_EQ(st.stat.ephemeralOwner, id);
}

TEST_F(SessionLive, KillingTheLeaderDoesNotExpireAnOpenSession) {
  int leader = env::awaitEnsembleLeader();
  ASSERT_GT(leader, 0);
  StateRecorder states;
  auto owner = open(liveConfig("owner"), &states);
  ASSERT_EQ(owner->createSync(path("e"), "", CreateMode::Ephemeral).error, Error::Ok);
  ASSERT_EQ(owner->createSync(path("counter"), "0", CreateMode::Persistent).error, Error::Ok);
  int64_t id = owner->sessionId();
  bool onLeader = nodeOfServer(owner->currentServer()) == leader;
  {
    RestartOnExit restart(leader);
    ASSERT_EQ(env::ensemble("kill " + std::to_string(leader)), 0);
    // A write needs a leader: once one succeeds, a new leader serves and
    // this same session is still valid. Calls meanwhile may fail with
    // ConnectionLoss; they must not crash or expire anything.
    int attempts = 0;
    bool written = eventually(
        [&] {
          ++attempts;
          return owner->setSync(path("counter"), "1", kAnyVersion, std::chrono::milliseconds(2000)).error ==
                 Error::Ok;
        },
        std::chrono::milliseconds(30000));
    ASSERT_TRUE(written) << "no write succeeded after the leader died; states " << describe(states.history());
    EXPECT_EQ(owner->state(), SessionState::Connected);
    EXPECT_EQ(owner->sessionId(), id);
    if (onLeader) {
      EXPECT_TRUE(states.saw(SessionState::Reconnecting)) << describe(states.history());
    }
    EXPECT_EQ(owner->existsSync(path("e")).error, Error::Ok);
  }
  EXPECT_FALSE(states.saw(SessionState::Expired)) << describe(states.history());
  ASSERT_TRUE(seesNode(*admin_, path("e")));
  auto st = admin_->existsSync(path("e"));
  ASSERT_EQ(st.error, Error::Ok);
  EXPECT_EQ(st.stat.ephemeralOwner, id);
  EXPECT_NE(env::awaitEnsembleLeader(), -1);
}

TEST_F(SessionLive, AnExpiredSessionFailsCleanlyAndRenewGivesAFreshOne) {
  StateRecorder states;
  auto owner = open(liveConfig("owner"), &states);
  ASSERT_EQ(owner->createSync(path("e"), "", CreateMode::Ephemeral).error, Error::Ok);
  WatchProbe armedBefore;
  std::promise<void> armed;
  owner->exists(path("later"), [&](ExistsResult) { armed.set_value(); }, armedBefore.callback());
  armed.get_future().get();
  int64_t oldId = owner->sessionId();

  ASSERT_TRUE(expireAndSee(*owner, states)) << describe(states.history());
  EXPECT_EQ(owner->state(), SessionState::Expired);
  auto ended = armedBefore.next();
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->type, WatchEvent::Type::Session);
  EXPECT_EQ(ended->state, SessionState::Expired);

  auto cleanFailure = [](Error e) { return e == Error::InvalidState || e == Error::SessionExpired; };
  EXPECT_PRED1(cleanFailure, owner->getSync(root_).error);
  EXPECT_PRED1(cleanFailure, owner->createSync(path("x"), "", CreateMode::Ephemeral).error);
  EXPECT_PRED1(cleanFailure, owner->setSync(root_, "x").error);
  EXPECT_PRED1(cleanFailure, owner->removeSync(path("e")));
  EXPECT_PRED1(cleanFailure, owner->getChildrenSync(root_).error);
  EXPECT_PRED1(cleanFailure, owner->multiSync({makeCheck(root_, 0)}).error);
  EXPECT_PRED1(cleanFailure, owner->multiSync({}).error);
  WatchProbe never;
  std::promise<ExistsResult> refused;
  owner->exists(root_, [&](ExistsResult r) { refused.set_value(r); }, never.callback());
  EXPECT_PRED1(cleanFailure, refused.get_future().get().error);

  size_t mark = states.size();
  owner->renew();
  ASSERT_TRUE(states.waitFor(SessionState::Connected, kWait, mark)) << describe(states.history());
  auto history = states.history();
  EXPECT_EQ(std::vector<SessionState>(history.begin() + static_cast<std::ptrdiff_t>(mark), history.end()),
            (std::vector<SessionState>{SessionState::Connecting, SessionState::Connected}));
  EXPECT_NE(owner->sessionId(), 0);
  EXPECT_NE(owner->sessionId(), oldId);
  EXPECT_EQ(owner->existsSync(path("e")).error, Error::NoNode);
  ASSERT_EQ(owner->createSync(path("e"), "", CreateMode::Ephemeral).error, Error::Ok);
  ASSERT_TRUE(seesNode(*admin_, path("e")));
  EXPECT_EQ(admin_->existsSync(path("e")).stat.ephemeralOwner, owner->sessionId());
  EXPECT_EQ(never.count(), 0u);
}

// The owner's natural reaction, straight from the listener (the completion
// thread): no deadlock, a new session.
class RenewOnExpiry : public SessionListener {
 public:
  void onSessionState(SessionState s) override {
    states.onSessionState(s);
    if (s == SessionState::Expired && session) session->renew();
  }
  Session* session = nullptr;
  StateRecorder states;
};

TEST_F(SessionLive, AListenerMayRenewFromItsCallback) {
  RenewOnExpiry listener;
  auto owner = open(liveConfig("owner"), &listener);
  listener.session = owner.get();
  int64_t oldId = owner->sessionId();
  ASSERT_TRUE(expireAndSee(*owner, listener.states)) << describe(listener.states.history());
  // The listener renews inside the Expired callback, so the new session's
  // Connecting and Connected may already be recorded: look after Expired.
  auto seen = listener.states.history();
  size_t mark = static_cast<size_t>(std::find(seen.begin(), seen.end(), SessionState::Expired) - seen.begin()) + 1;
  ASSERT_TRUE(listener.states.waitFor(SessionState::Connected, kWait, mark))
      << describe(listener.states.history());
  EXPECT_NE(owner->sessionId(), oldId);
  EXPECT_EQ(owner->createSync(path("back"), "", CreateMode::Ephemeral).error, Error::Ok);
}

TEST_F(SessionLive, DigestAuthLetsEveryoneReadButOnlyTheOwnerWrite) {
  auto config = liveConfig("digest");
  config.digestUser = "groupcoord";
  config.digestPassword = "s3cret";
  auto owner = open(config);
  ASSERT_EQ(owner->createSync(path("guarded"), "v0", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(owner->multiSync({makeCreate(path("guarded-too"), "m")}).error, Error::Ok);

  EXPECT_TRUE(seesData(*admin_, path("guarded"), "v0"));
  EXPECT_EQ(admin_->setSync(path("guarded"), "theirs").error, Error::NoAuth);
  EXPECT_EQ(admin_->createSync(path("guarded/kid"), "", CreateMode::Persistent).error, Error::NoAuth);
  EXPECT_EQ(admin_->setSync(path("guarded-too"), "theirs").error, Error::NoAuth);

  auto sameUser = open(config);
  EXPECT_EQ(sameUser->setSync(path("guarded"), "v1").error, Error::Ok);
  EXPECT_TRUE(seesData(*owner, path("guarded"), "v1"));
  // Clean-up needs the delete right on the parent only, which is open.
}

TEST_F(SessionLive, AChrootedSessionSpeaksInPathsBelowItsRoot) {
  auto config = liveConfig("chroot");
  config.connect += root_;
  auto jailed = open(config);

  auto created = jailed->createSync("/a", "in", CreateMode::Persistent);
  ASSERT_EQ(created.error, Error::Ok);
  EXPECT_EQ(created.path, "/a");
  EXPECT_TRUE(seesData(*admin_, path("a"), "in"));

  auto seq = jailed->createSync("/a/s-", "", CreateMode::PersistentSequential);
  ASSERT_EQ(seq.error, Error::Ok);
  EXPECT_EQ(seq.path, "/a/s-0000000000");
  auto multi = jailed->multiSync({makeCreate("/a/m-", "", CreateMode::EphemeralSequential)});
  ASSERT_EQ(multi.error, Error::Ok);
  EXPECT_EQ(multi.results[0].path, "/a/m-0000000001");

  WatchProbe probe;
  std::promise<void> armed;
  jailed->exists("/b", [&](ExistsResult) { armed.set_value(); }, probe.callback());
  armed.get_future().get();
  ASSERT_EQ(admin_->createSync(path("b"), "", CreateMode::Persistent).error, Error::Ok);
  auto ev = probe.next();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->path, "/b");
  auto kids = jailed->getChildrenSync("/");
  std::sort(kids.children.begin(), kids.children.end());
  EXPECT_EQ(kids.children, (std::vector<std::string>{"a", "b"}));
}

TEST_F(SessionLive, ClosingWithWorkInFlightCallsEveryCallbackAndWatchOnce) {
  ASSERT_EQ(admin_->createSync(path("n"), "", CreateMode::Persistent).error, Error::Ok);
  constexpr int kOps = 300;
  std::mutex m;
  std::map<int, int> calls;
  std::map<int, Error> results;
  std::map<int, int> watchCalls;
  {
    auto s = open(liveConfig("busy"));
    for (int i = 0; i < kOps; ++i) {
      auto done = [&, i](Error e) {
        std::lock_guard lock(m);
        ++calls[i];
        results[i] = e;
      };
      auto watch = [&, i](const WatchEvent&) {
        std::lock_guard lock(m);
        ++watchCalls[i];
      };
      switch (i % 5) {
        case 0: s->get(path("n"), [done](GetResult r) { done(r.error); }, watch); break;
        case 1: s->exists(path("none-" + std::to_string(i)), [done](ExistsResult r) { done(r.error); }, watch); break;
        case 2: s->getChildren(path("n"), [done](ChildrenResult r) { done(r.error); }, watch); break;
        case 3: s->create(path("n/e" + std::to_string(i)), "", CreateMode::Ephemeral, [done](CreateResult r) { done(r.error); }); break;
        default: s->multi({makeCheck(path("n"), 0)}, [done](MultiResult r) { done(r.error); }); break;
      }
    }
  }
  // The ensemble ends the closed session shortly after; once it has, its
  // ephemerals no longer keep "n" from being deleted.
  EXPECT_TRUE(eventually([&] { return removeRecursive(*admin_, path("n")) == Error::Ok; }));
  std::lock_guard lock(m);
  ASSERT_EQ(calls.size(), static_cast<size_t>(kOps));
  for (int i = 0; i < kOps; ++i) {
    EXPECT_EQ(calls[i], 1) << "callback " << i;
    if (i % 5 > 2) continue;
    // A watch is armed iff its read succeeded (exists: also on NoNode); an
    // armed watch gets exactly one event (here: the session closed), an
    // unarmed one none.
    Error e = results[i];
    bool armed = e == Error::Ok || (i % 5 == 1 && e == Error::NoNode);
    EXPECT_EQ(watchCalls[i], armed ? 1 : 0) << "watch " << i << " after " << errorName(e);
  }
}

// The server stops answering (SIGSTOP) with calls on the wire: closing
// waits a bounded time for answers that never come, then completes every
// call with Closing; nothing hangs, nothing is called twice.
TEST_F(SessionLive, ClosingWhileTheServerIsSilentCompletesEveryCallWithClosing) {
  int leader = env::awaitEnsembleLeader();
  ASSERT_GT(leader, 0);
  int follower = leader % 3 + 1;  // pausing a follower keeps the quorum
  auto config = liveConfig("silent");
  config.connect = "127.0.0.1:" + std::to_string(env::zkBasePort() + follower);
  ASSERT_EQ(admin_->createSync(path("n"), "", CreateMode::Persistent).error, Error::Ok);

  constexpr int kOps = 60;
  std::mutex m;
  std::map<int, int> calls;
  std::map<int, Error> results;
  std::atomic<int> unarmedEvents{0};
  WatchProbe armedBefore;
  {
    auto s = open(config);
    ASSERT_TRUE(seesNode(*s, path("n")));
    std::promise<GetResult> armed;
    s->get(path("n"), [&](GetResult r) { armed.set_value(r); }, armedBefore.callback());
    ASSERT_EQ(armed.get_future().get().error, Error::Ok);

    ResumeOnExit resume(follower);
    ASSERT_EQ(env::ensemble("pause " + std::to_string(follower)), 0);
    for (int i = 0; i < kOps; ++i) {
      auto done = [&, i](Error e) {
        std::lock_guard lock(m);
        ++calls[i];
        results[i] = e;
      };
      auto watch = [&](const WatchEvent&) { ++unarmedEvents; };
      switch (i % 3) {
        case 0: s->get(path("n"), [done](GetResult r) { done(r.error); }, watch); break;
        case 1: s->create(path("n/e" + std::to_string(i)), "", CreateMode::Ephemeral, [done](CreateResult r) { done(r.error); }); break;
        default: s->multi({makeCheck(path("n"), 0)}, [done](MultiResult r) { done(r.error); }); break;
      }
    }
    // Returns after the bounded drain wait and the C client's own close.
    s.reset();
  }
  std::lock_guard lock(m);
  ASSERT_EQ(calls.size(), static_cast<size_t>(kOps));
  for (int i = 0; i < kOps; ++i) {
    EXPECT_EQ(calls[i], 1) << "callback " << i;
    EXPECT_TRUE(results[i] == Error::Closing || results[i] == Error::ConnectionLoss)
        << "callback " << i << ": " << errorName(results[i]);
  }
  EXPECT_EQ(unarmedEvents.load(), 0);
  auto ended = armedBefore.next(std::chrono::milliseconds(0));
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->type, WatchEvent::Type::Session);
  EXPECT_EQ(ended->state, SessionState::Closed);
  EXPECT_EQ(armedBefore.count(), 1u);
}

}  // namespace
}  // namespace groupcoord::zk::test
