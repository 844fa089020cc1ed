// The registry of live servers on the in-memory ZooKeeper: this server's
// ephemeral registration, the watched list of the others, and rendezvous
// hashing over them.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <memory>

#include "adapter/Hash.h"
#include "adapter/ServerRegistry.h"
#include "tests/adapter/FakeZkTestSupport.h"

namespace groupcoord::adapter {
namespace {

using namespace std::chrono_literals;

constexpr const char* kRoot = "/gc";

struct Server {
  SessionEpoch epoch;
  std::unique_ptr<zk::FakeClient> zk;
  std::unique_ptr<ServerRegistry> registry;
  std::atomic<int> changed{0};
  std::atomic<int> registeredNow{0};

  ~Server() {
    // The session goes first: its last callbacks still reach the registry.
    if (zk) zk->close();
    zk.reset();
    registry.reset();
  }
};

class ServerRegistryTest : public ::testing::Test {
 protected:
  ServerRegistryTest() {
    testsupport::quietLogs();
    zk::FakeClient admin(ensemble_);
    EXPECT_EQ(admin.ensurePathSync(layout_.serversPath()), zk::Error::Ok);
    EXPECT_EQ(admin.ensurePathSync(layout_.drainingPath()), zk::Error::Ok);
  }
  // The groups (of g0..g199) whose preferred server, as `s` sees it, is `id`.
  std::set<std::string> preferring(Server& s, int32_t id) {
    std::set<std::string> out;
    for (int i = 0; i < 200; ++i) {
      std::string g = "g" + std::to_string(i);
      if (s.registry->preferredServer(g) == id) out.insert(g);
    }
    return out;
  }
  ~ServerRegistryTest() override { servers_.clear(); }

  Server& addServer(int32_t id, bool registerAndWatch = true, Millis settleDelay = Millis(0)) {
    auto s = std::make_unique<Server>();
    zk::FakeClientOptions o;
    o.name = "server-" + std::to_string(id);
    s->zk = std::make_unique<zk::FakeClient>(ensemble_, o);
    Server* raw = s.get();
    s->registry = std::make_unique<ServerRegistry>(
        *s->zk, layout_, time_, s->epoch,
        ServerRegistry::Events{[raw] { raw->changed++; }, [raw] { raw->registeredNow++; }}, settleDelay);
    s->registry->setIdentity(ServerIdentity{id, "host-" + std::to_string(id), static_cast<uint16_t>(9000 + id)});
    if (registerAndWatch) {
      s->registry->registerSelf();
      s->registry->watch();
      settle();
    }
    servers_[id] = std::move(s);
    return *servers_[id];
  }
  void settle() { testsupport::settle(ensemble_); }

  zk::FakeEnsemble ensemble_;
  ManualTimeSource time_;
  layout::Layout layout_{kRoot};
  std::map<int32_t, std::unique_ptr<Server>> servers_;
};

TEST_F(ServerRegistryTest, RegisterSelfCreatesAnEphemeralZnodeWithHostAndPort) {
  auto& s = addServer(7, false);
  EXPECT_FALSE(s.registry->registered());
  s.registry->registerSelf();
  settle();
  EXPECT_TRUE(s.registry->registered());
  EXPECT_EQ(s.registeredNow.load(), 1);
  auto stat = ensemble_.stat("/gc/servers/7");
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->ephemeralOwner, s.zk->sessionId());
  auto data = ensemble_.data("/gc/servers/7");
  ASSERT_TRUE(data.has_value());
  auto broker = layout::decodeServer(7, *data);
  ASSERT_TRUE(broker.has_value()) << *data;
  EXPECT_EQ(*broker, (protocol::Broker{7, "host-7", 9007}));
}

TEST_F(ServerRegistryTest, RegisterSelfTwiceWritesOnce) {
  auto& s = addServer(1, false);
  s.zk->resetCounters();
  s.registry->registerSelf();
  s.registry->registerSelf();  // while the first is being written
  settle();
  s.registry->registerSelf();  // once registered
  settle();
  EXPECT_EQ(s.zk->counters().creates, 1u);
  EXPECT_EQ(s.registeredNow.load(), 1);
}

TEST_F(ServerRegistryTest, AnIdHeldByAnotherSessionIsRetriedByTheTickUntilFree) {
  zk::FakeClient other(ensemble_);
  ASSERT_EQ(other.createSync("/gc/servers/3", layout::encodeServer("elsewhere", 1), zk::CreateMode::Ephemeral).error,
            zk::Error::Ok);
  auto& s = addServer(3, false);
  s.registry->registerSelf();
  settle();
  EXPECT_FALSE(s.registry->registered());
  other.close();  // the previous holder's session ends
  settle();
  s.registry->tick(time_.now());
  settle();
  EXPECT_FALSE(s.registry->registered()) << "retried no sooner than 500 ms after the failure";
  time_.advance(500ms);
  s.registry->tick(time_.now());
  settle();
  EXPECT_TRUE(s.registry->registered());
  EXPECT_EQ(ensemble_.stat("/gc/servers/3")->ephemeralOwner, s.zk->sessionId());
}

TEST_F(ServerRegistryTest, WatchLearnsServersRegisteredByOtherSessions) {
  auto& a = addServer(1);
  EXPECT_EQ(a.registry->liveServers(), (std::vector<int32_t>{1}));
  addServer(2);
  addServer(3);
  EXPECT_EQ(a.registry->liveServers(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(a.registry->brokerOf(2), (protocol::Broker{2, "host-2", 9002}));
  EXPECT_EQ(a.registry->brokerOf(3), (protocol::Broker{3, "host-3", 9003}));
  // Every server sees the same fleet.
  EXPECT_EQ(servers_[3]->registry->liveServers(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(servers_[3]->registry->brokerOf(1), (protocol::Broker{1, "host-1", 9001}));
}

TEST_F(ServerRegistryTest, AServerWhoseSessionClosesIsForgotten) {
  auto& a = addServer(1);
  auto& b = addServer(2);
  ASSERT_EQ(a.registry->liveServers(), (std::vector<int32_t>{1, 2}));
  b.zk->close();
  settle();
  EXPECT_EQ(a.registry->liveServers(), (std::vector<int32_t>{1}));
  EXPECT_TRUE(a.registry->brokerOf(2).isNone());
}

TEST_F(ServerRegistryTest, AServerWhoseSessionExpiresIsForgotten) {
  auto& a = addServer(1);
  auto& b = addServer(2);
  b.zk->expire();
  settle();
  EXPECT_EQ(a.registry->liveServers(), (std::vector<int32_t>{1}));
}

TEST_F(ServerRegistryTest, BrokerOfSelfIsKnownAtOnceAndOfStrangersIsEmpty) {
  auto& a = addServer(5, false);
  EXPECT_EQ(a.registry->brokerOf(5), (protocol::Broker{5, "host-5", 9005}));
  EXPECT_TRUE(a.registry->brokerOf(6).isNone());
  EXPECT_EQ(a.registry->brokerOf(6), protocol::Broker{});
}

TEST_F(ServerRegistryTest, ChangedFiresWhenTheFleetChanges) {
  auto& a = addServer(1);
  const int afterStart = a.changed.load();
  EXPECT_GE(afterStart, 1) << "the first listing is a change";
  addServer(2);
  const int afterJoin = a.changed.load();
  EXPECT_GT(afterJoin, afterStart);
  servers_[2]->zk->close();
  settle();
  EXPECT_GT(a.changed.load(), afterJoin);
}

TEST_F(ServerRegistryTest, AloneItPrefersItself) {
  auto& a = addServer(4, false);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(a.registry->preferredServer("g" + std::to_string(i)), 4);
}

TEST_F(ServerRegistryTest, PreferredServerIsStableAndTheSameOnEveryServer) {
  addServer(1);
  addServer(2);
  addServer(3);
  for (int i = 0; i < 100; ++i) {
    const std::string g = "group-" + std::to_string(i);
    const int32_t first = servers_[1]->registry->preferredServer(g);
    EXPECT_EQ(servers_[1]->registry->preferredServer(g), first) << g;
    EXPECT_EQ(servers_[2]->registry->preferredServer(g), first) << g;
    EXPECT_EQ(servers_[3]->registry->preferredServer(g), first) << g;
  }
}

TEST_F(ServerRegistryTest, PreferredServersSpreadGroups) {
  addServer(1);
  addServer(2);
  addServer(3);
  std::map<int32_t, int> load;
  for (int i = 0; i < 300; ++i) load[servers_[1]->registry->preferredServer("g" + std::to_string(i))]++;
  ASSERT_EQ(load.size(), 3u);
  for (auto& [id, n] : load) EXPECT_GE(n, 50) << "server " << id;
}

// The registry and everyone outside it (groupctl's tests, the fleet suite,
// the benchmarks) agree through one function: rendezvousPick.
TEST_F(ServerRegistryTest, PreferredServerIsRendezvousPickOverTheSettledServers) {
  addServer(1);
  addServer(2);
  addServer(3);
  std::set<int32_t> picked;
  for (int i = 0; i < 100; ++i) {
    const std::string g = "g" + std::to_string(i);
    const int32_t want = rendezvousPick(g, {1, 2, 3});
    picked.insert(want);
    EXPECT_EQ(servers_[2]->registry->preferredServer(g), want) << g;
    // Order does not matter; the highest score wins.
    EXPECT_EQ(rendezvousPick(g, {3, 1, 2}), want) << g;
    const uint64_t h = fnv1a(g);
    for (int32_t id : {1, 2, 3}) EXPECT_GE(rendezvousScore(h, want), rendezvousScore(h, id)) << g;
  }
  EXPECT_EQ(picked, (std::set<int32_t>{1, 2, 3}));
  EXPECT_EQ(rendezvousPick("g", {}), -1);
}

TEST_F(ServerRegistryTest, WhenAServerLeavesOnlyItsGroupsMove) {
  addServer(1);
  addServer(2);
  addServer(3);
  std::map<std::string, int32_t> before;
  for (int i = 0; i < 300; ++i) {
    const std::string g = "g" + std::to_string(i);
    before[g] = servers_[1]->registry->preferredServer(g);
  }
  servers_[3]->zk->close();
  settle();
  for (auto& [g, id] : before) {
    const int32_t now = servers_[1]->registry->preferredServer(g);
    if (id != 3) {
      EXPECT_EQ(now, id) << g;
    }
    EXPECT_NE(now, 3) << g;
  }
}

TEST_F(ServerRegistryTest, ResetForgetsTheRegistrationAndTheFleet) {
  auto& a = addServer(1);
  addServer(2);
  a.registry->reset();
  EXPECT_FALSE(a.registry->registered());
  EXPECT_TRUE(a.registry->liveServers().empty());
  EXPECT_TRUE(a.registry->brokerOf(2).isNone());
}

TEST_F(ServerRegistryTest, ANewServerIsPreferredOnlyOnceSettled) {
  auto& a = addServer(1, true, 1000ms);
  addServer(2, true, 1000ms);
  time_.advance(1000ms);
  const auto before = preferring(a, 3);
  EXPECT_TRUE(before.empty());
  addServer(3, true, 1000ms);
  EXPECT_TRUE(preferring(a, 3).empty()) << "live, but not for the settle delay yet";
  time_.advance(999ms);
  EXPECT_TRUE(preferring(a, 3).empty());
  time_.advance(1ms);
  EXPECT_GT(preferring(a, 3).size(), 30u) << "about a third of the groups once settled";
}

TEST_F(ServerRegistryTest, ServersAlreadyThereAtTheFirstListingCountAsSettled) {
  addServer(1, true, 1000ms);
  addServer(2, true, 1000ms);
  time_.advance(1000ms);
  auto& c = addServer(3, true, 1000ms);
  // Server 3 agrees with the others at once: 1 and 2 are settled, 3 is not.
  EXPECT_TRUE(preferring(c, 3).empty());
  EXPECT_EQ(preferring(c, 1).size() + preferring(c, 2).size(), 200u);
  EXPECT_EQ(preferring(c, 1), preferring(*servers_[1], 1));
}

// Each list is watched once, however often the other changes: a change of
// the drain markers costs one listing, after any number of joins.
TEST_F(ServerRegistryTest, TheDrainMarkersAreWatchedOnceWhateverTheServerListDid) {
  auto& a = addServer(1);
  for (int32_t id = 2; id <= 4; ++id) addServer(id);
  servers_[4]->zk->close();
  settle();
  ASSERT_EQ(a.registry->liveServers().size(), 3u);
  a.zk->resetCounters();
  protocol::ErrorCode answer = protocol::ErrorCode::UNKNOWN_SERVER_ERROR;
  servers_[2]->registry->requestDrain(3, true, [&](protocol::ErrorCode e) { answer = e; });
  settle();
  ASSERT_EQ(answer, protocol::ErrorCode::NONE);
  EXPECT_TRUE(a.registry->draining(3));
  const auto c = a.zk->counters();
  EXPECT_EQ(c.reads, 1u) << "the markers were listed " << c.reads << " times for one change";
  EXPECT_EQ(c.watchesSet, 1u);
}

TEST_F(ServerRegistryTest, ADrainedServerIsNeverPreferredAndMayNotTakeGroups) {
  auto& a = addServer(1);
  auto& b = addServer(2);
  ASSERT_FALSE(preferring(a, 2).empty());
  protocol::ErrorCode answer = protocol::ErrorCode::UNKNOWN_SERVER_ERROR;
  a.registry->requestDrain(2, true, [&](protocol::ErrorCode e) { answer = e; });
  settle();
  EXPECT_EQ(answer, protocol::ErrorCode::NONE);
  EXPECT_TRUE(ensemble_.exists("/gc/draining/2"));
  EXPECT_TRUE(preferring(a, 2).empty());
  EXPECT_TRUE(preferring(b, 2).empty()) << "every server sees the marker";
  EXPECT_TRUE(b.registry->draining(2));
  EXPECT_FALSE(b.registry->mayTakeGroups());
  EXPECT_TRUE(a.registry->mayTakeGroups());
  // Draining the last undrained server too: someone must still take groups.
  a.registry->requestDrain(1, true, [&](protocol::ErrorCode e) { answer = e; });
  settle();
  EXPECT_TRUE(a.registry->mayTakeGroups());
  EXPECT_TRUE(b.registry->mayTakeGroups());
  // Undrained (twice: idempotent).
  for (int i = 0; i < 2; ++i) {
    answer = protocol::ErrorCode::UNKNOWN_SERVER_ERROR;
    a.registry->requestDrain(2, false, [&](protocol::ErrorCode e) { answer = e; });
    settle();
    EXPECT_EQ(answer, protocol::ErrorCode::NONE);
  }
  EXPECT_FALSE(b.registry->draining(2));
  EXPECT_EQ(preferring(a, 2).size(), 200u) << "the only undrained server";
}

}  // namespace
}  // namespace groupcoord::adapter
