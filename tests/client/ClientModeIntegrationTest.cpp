// Membership-only (client-mode) groups and rack-aware assignment against a
// groupcoordd process and the live ensemble.
//
// Client mode: members of one group come, go and are evicted; every member
// registered at a generation receives the same member list, nobody starts
// on a generation before every member of it has registered at it, and keys
// shared out by rendezvous hashing (client::KeyOwners) are never owned by
// two members at once (the ownership checker's record, keys standing for
// partitions).
//
// Racks: nine members in three racks, topics whose replicas sit in known
// racks (Kafka's layout): the share of partitions assigned in-rack, with the
// members' racks given and without.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "client/Admin.h"
#include "client/Consumer.h"
#include "client/KeyOwners.h"
#include "common/Layout.h"
#include "support/OwnershipChecker.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/TestSession.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using client::Consumer;
using protocol::AssignmentMode;
using protocol::MemberMetadata;
using protocol::TopicPartition;
using Clock = std::chrono::steady_clock;

class ClientModeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("clientmode");
    topicsPath_ = root_ + "-kafka/brokers/topics";
    brokersPath_ = root_ + "-kafka/brokers/ids";
    zk_ = openTestSession();
    ASSERT_NE(zk_, nullptr);
    ASSERT_EQ(zk_->ensurePathSync(topicsPath_), zk::Error::Ok);
    ASSERT_EQ(zk_->ensurePathSync(brokersPath_), zk::Error::Ok);
  }

  void startServer() {
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=1", "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_,
        "--zk-brokers-path=" + brokersPath_, "--zk-session-timeout-ms=4000"});
    ASSERT_TRUE(server_->start());
    admin_ = std::make_unique<client::Admin>(std::vector<client::Endpoint>{{"127.0.0.1", server_->port()}});
  }

  std::string root_, topicsPath_, brokersPath_;
  std::unique_ptr<zk::Session> zk_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Admin> admin_;
};

// ---- Client mode with churn ---------------------------------------------------------

// The members of the test, all polled from the test's thread in turn, so
// every callback and every observation has a place in one sequence.
struct Cast {
  struct Member {
    std::string name;
    std::unique_ptr<Consumer> consumer;
    bool polling = true;
    int64_t seenGeneration = -1;
    std::set<std::string> keys;  // owned now
  };
  std::vector<std::unique_ptr<Member>> members;
  std::vector<std::string> keys;
  uint64_t seq = 0;
  // member id -> generation -> the sequence number at which it was seen registered there.
  std::map<std::string, std::map<int64_t, uint64_t>> registeredAt;
  struct Start {
    std::string member;
    int64_t generation;
    std::vector<MemberMetadata> list;
    uint64_t seq;
  };
  std::vector<Start> starts;
  OwnershipRecord record;
  size_t stops = 0;
};

std::unique_ptr<Cast::Member> newMember(Cast& cast, std::vector<uint16_t> ports, const std::string& name) {
  auto m = std::make_unique<Cast::Member>();
  m->name = name;
  Cast::Member* self = m.get();
  client::ConsumerConfig cc;
  for (uint16_t port : ports) cc.bootstrap.push_back({"127.0.0.1", port});
  cc.group = "shards";
  cc.clientId = name;
  cc.metadata = "name=" + name;
  client::ConsumerCallbacks cb;
  cb.onMembers = [&cast, self](int64_t generation, const std::vector<MemberMetadata>& list) {
    cast.starts.push_back({self->consumer->memberId(), generation, list, ++cast.seq});
    client::KeyOwners owners(list);
    for (auto& k : cast.keys) {
      if (owners.owner(k) != self->consumer->memberId()) continue;
      self->keys.insert(k);
      cast.record.add(self->name, TopicPartition{k, 0}, true);
    }
  };
  cb.onStop = [&cast, self](int64_t) {
    ++cast.stops;
    // A member that fenced itself stopped at its lease's end, not when the
    // callback finally ran (its thread was not polling).
    const auto at = std::min(Clock::now(), self->consumer->leaseExpiry());
    for (auto& k : self->keys) cast.record.add(self->name, TopicPartition{k, 0}, false, at);
    self->keys.clear();
  };
  m->consumer = std::make_unique<Consumer>(cc, cb);
  return m;
}

void pollRound(Cast& cast) {
  for (auto& m : cast.members) {
    if (!m->polling) continue;
    m->consumer->poll(5ms);
    const int64_t g = m->consumer->generation();
    if (g >= 0 && g != m->seenGeneration) {
      m->seenGeneration = g;
      cast.registeredAt[m->consumer->memberId()].emplace(g, ++cast.seq);
    }
  }
}

// Every polling member has started on the same generation, with the same list
// of exactly the polling members.
bool agreed(const Cast& cast) {
  int64_t g = -2;
  std::set<std::string> ids;
  for (auto& m : cast.members) {
    if (!m->polling) continue;
    if (m->consumer->startedGeneration() < 0) return false;
    if (g != -2 && m->consumer->startedGeneration() != g) return false;
    g = m->consumer->startedGeneration();
    ids.insert(m->consumer->memberId());
  }
  for (auto& m : cast.members) {
    if (!m->polling) continue;
    std::set<std::string> listed;
    for (auto& e : m->consumer->members()) listed.insert(e.consumerId);
    if (listed != ids) return false;
  }
  return g >= 0;
}

bool settle(Cast& cast, std::chrono::milliseconds wait = 30s) {
  const auto deadline = Clock::now() + wait;
  while (Clock::now() < deadline) {
    pollRound(cast);
    if (agreed(cast)) return true;
  }
  return false;
}

TEST_F(ClientModeTest, TenMembersWithChurnAgreeOnTheListAndNeverShareAKey) {
  startServer();
  ASSERT_TRUE(admin_->createGroup("shards", 2000ms, {}, false, AssignmentMode::CLIENT).ok());
  auto info = admin_->groupInfo("shards");
  ASSERT_TRUE(info.ok()) << info.status.toString();
  EXPECT_EQ(info.value.mode, AssignmentMode::CLIENT) << "ListGroups v1 says the mode";

  Cast cast;
  for (int k = 0; k < 200; ++k) cast.keys.push_back("key-" + std::to_string(k));
  int next = 0;
  for (; next < 10; ++next) cast.members.push_back(newMember(cast, {server_->port()}, "m" + std::to_string(next)));
  ASSERT_TRUE(settle(cast)) << "ten members never agreed";

  for (int round = 0; round < 2; ++round) {
    // A join.
    cast.members.push_back(newMember(cast, {server_->port()}, "m" + std::to_string(next++)));
    ASSERT_TRUE(settle(cast)) << "round " << round << ": after a join";
    // A leave.
    ASSERT_TRUE(cast.members.front()->consumer->close().ok());
    cast.members.erase(cast.members.begin());
    ASSERT_TRUE(settle(cast)) << "round " << round << ": after a leave";
    // An eviction: one member stops polling (no heartbeats) past its session.
    Cast::Member* frozen = cast.members[3].get();
    frozen->polling = false;
    const std::string frozenId = frozen->consumer->memberId();
    ASSERT_TRUE(settle(cast, 30s)) << "round " << round << ": after an eviction";
    for (auto& m : cast.members) {
      if (m->polling) {
        for (auto& e : m->consumer->members()) EXPECT_NE(e.consumerId, frozenId) << "evicted, still listed";
      }
    }
    // It comes back: fences itself, is told it is unknown, joins again under a new id.
    frozen->polling = true;
    ASSERT_TRUE(settle(cast, 30s)) << "round " << round << ": after the evicted member came back";
  }

  // Agreement: every start on a generation had the same list, with each member's metadata.
  std::map<int64_t, std::vector<MemberMetadata>> listOf;
  size_t generations = 0;
  for (auto& s : cast.starts) {
    auto [it, fresh] = listOf.emplace(s.generation, s.list);
    generations += fresh ? 1 : 0;
    EXPECT_EQ(it->second, s.list) << "generation " << s.generation << ": two different member lists";
    for (auto& e : s.list) EXPECT_EQ(e.metadata.rfind("name=m", 0), 0u) << e.consumerId;
  }
  // The barrier: whoever started on G did so after every member of G's list had registered at G.
  size_t checked = 0;
  for (auto& s : cast.starts) {
    for (auto& e : s.list) {
      if (e.consumerId == s.member) continue;
      auto at = cast.registeredAt[e.consumerId].find(s.generation);
      ASSERT_NE(at, cast.registeredAt[e.consumerId].end())
          << s.member << " started on generation " << s.generation << " but " << e.consumerId
          << " never registered at it";
      EXPECT_LT(at->second, s.seq) << s.member << " started on generation " << s.generation << " before "
                                   << e.consumerId << " registered at it";
      ++checked;
    }
  }
  // Keys: never two owners at once.
  const auto overlaps = cast.record.overlaps();
  EXPECT_TRUE(overlaps.empty()) << overlaps.size() << " overlaps, the first: " << overlaps.front();
  const auto counts = cast.record.counts();
  std::printf("[figure] client mode: %zu starts over %zu generations, %zu barrier checks, %llu key grants, "
              "%llu releases, %zu stops, %zu overlaps\n",
              cast.starts.size(), generations, checked, static_cast<unsigned long long>(counts.grants),
              static_cast<unsigned long long>(counts.releases), cast.stops, overlaps.size());
  EXPECT_GE(generations, 9u) << "ten joins, two more joins, two leaves, two evictions, two returns";
  EXPECT_GT(counts.grants, 200u);

  // DescribeGroup (version 1) shows the mode and the members' metadata.
  auto d = admin_->describeGroup("shards");
  ASSERT_TRUE(d.ok()) << d.status.toString();
  EXPECT_EQ(d.value.mode, AssignmentMode::CLIENT);
  EXPECT_EQ(d.value.state, protocol::GroupState::STABLE);
  for (auto& m : d.value.members) EXPECT_EQ(m.metadata.rfind("name=m", 0), 0u);
  for (auto& m : cast.members) m->consumer->close();
}

// A rolling upgrade (docs/protocol.md §16): server 1 answers RegisterConsumer
// up to version 1, as the release before version 2 did, server 2 up to
// version 2. A client-mode group and a server-mode group move between them
// (a drain hands each over) and back; their members step down to version 1
// and up to version 2 with the controller, and every time the client-mode
// members agree on one list and the server-mode members share out every
// partition, none twice.
TEST_F(ClientModeTest, AFleetOfMixedVersionsKeepsBothModesInSyncAsGroupsMoveBetweenServers) {
  std::vector<std::unique_ptr<ServerProcess>> servers;
  std::vector<uint16_t> ports;
  for (int id = 1; id <= 2; ++id) {
    std::vector<std::string> args{"--server-id=" + std::to_string(id), "--zk-root=" + root_,
                                  "--zk-topics-path=" + topicsPath_, "--zk-brokers-path=" + brokersPath_,
                                  "--zk-session-timeout-ms=4000", "--handover-settle-ms=500"};
    if (id == 1) args.push_back("--protocol-register-max-version=1");
    servers.push_back(std::make_unique<ServerProcess>(args));
    ASSERT_TRUE(servers.back()->start());
    ports.push_back(servers.back()->port());
  }
  ASSERT_EQ(zk_->createSync(topicsPath_ + "/alpha", layout::encodeTopic(12), zk::CreateMode::Persistent).error,
            zk::Error::Ok);
  client::Admin admin({{"127.0.0.1", ports[0]}, {"127.0.0.1", ports[1]}});
  ASSERT_TRUE(admin.createGroup("shards", 2000ms, {}, false, AssignmentMode::CLIENT).ok());
  ASSERT_TRUE(admin.createGroup("orders", 2000ms, {"alpha"}, false).ok());

  Cast cast;
  for (int k = 0; k < 50; ++k) cast.keys.push_back("key-" + std::to_string(k));
  for (int i = 0; i < 4; ++i) cast.members.push_back(newMember(cast, ports, "m" + std::to_string(i)));
  std::vector<std::unique_ptr<Consumer>> workers;
  auto addWorker = [&] {
    client::ConsumerConfig cc;
    for (uint16_t port : ports) cc.bootstrap.push_back({"127.0.0.1", port});
    cc.group = "orders";
    cc.clientId = "w" + std::to_string(workers.size());
    workers.push_back(std::make_unique<Consumer>(cc, client::ConsumerCallbacks{}));
  };
  for (int i = 0; i < 3; ++i) addWorker();
  // Both groups in sync, their members speaking `version` to the controller.
  auto inSync = [&](int16_t version) {
    if (!agreed(cast)) return false;
    for (auto& m : cast.members)
      if (m->consumer->registerVersion() != version) return false;
    auto d = admin.describeGroup("orders");
    if (!d.ok() || d.value.state != protocol::GroupState::STABLE) return false;
    std::set<TopicPartition> owned;
    size_t held = 0;
    for (auto& w : workers) {
      if (w->generation() != d.value.generation || w->registerVersion() != version) return false;
      for (auto& p : w->assignment()) owned.insert(p);
      held += w->assignment().size();
    }
    return owned.size() == 12 && held == 12;
  };
  auto settleBoth = [&](int16_t version) {
    const auto deadline = Clock::now() + 40s;
    while (Clock::now() < deadline) {
      pollRound(cast);
      for (auto& w : workers) w->poll(5ms);
      if (inSync(version)) return true;
    }
    return false;
  };
  // What each member is at, for a failure's message.
  auto state = [&] {
    std::string out;
    for (auto& m : cast.members)
      out += "\n  client mode " + m->name + ": version " + std::to_string(m->consumer->registerVersion()) +
             ", generation " + std::to_string(m->consumer->generation()) + ", started " +
             std::to_string(m->consumer->startedGeneration()) + ", " +
             std::to_string(m->consumer->members().size()) + " listed";
    auto d = admin.describeGroup("orders");
    out += "\n  orders: " + (d.ok() ? "generation " + std::to_string(d.value.generation) + ", state " +
                                          std::string(protocol::groupStateName(d.value.state))
                                    : d.status.toString());
    for (auto& w : workers)
      out += "\n  server mode: version " + std::to_string(w->registerVersion()) + ", generation " +
             std::to_string(w->generation()) + ", " + std::to_string(w->assignment().size()) + " partitions";
    return out;
  };
  // Where the groups are now, by server id.
  auto controllers = [&] {
    std::set<int32_t> at;
    for (const char* g : {"shards", "orders"}) {
      auto d = admin.describeGroup(g);
      at.insert(d.ok() ? d.value.controller.brokerId : -1);
    }
    return at;
  };

  // Everything on server 1 (server 2 drained), then on server 2, then back.
  int moves = 0;
  for (int32_t to : {1, 2, 1}) {
    const int32_t away = 3 - to;
    const bool moving = controllers() != std::set<int32_t>{to};
    ASSERT_TRUE(admin.drainServer(away, true).ok());
    ASSERT_TRUE(admin.drainServer(to, false).ok());
    const int16_t version = to == 1 ? 1 : 2;
    // A server-mode member registers again only when the generation moves
    // (a handover alone does not move it): one more member makes everybody
    // register with the new controller.
    addWorker();
    ASSERT_TRUE(settleBoth(version)) << "the groups did not settle on server " << to << " speaking version "
                                     << version << "; controllers now: " << *controllers().begin() << state();
    EXPECT_EQ(controllers(), std::set<int32_t>{to});
    moves += moving ? 1 : 0;
  }
  const auto overlaps = cast.record.overlaps();
  EXPECT_TRUE(overlaps.empty()) << overlaps.size() << " overlaps, the first: " << overlaps.front();
  std::set<int64_t> generations;
  for (auto& st : cast.starts) generations.insert(st.generation);
  EXPECT_GE(moves, 2) << "the groups moved from one server to the other and back";
  std::printf("[figure] mixed versions: %d moves between a version-1 and a version-2 server; client mode: %zu "
              "starts over %zu generations, %zu overlaps\n",
              moves, cast.starts.size(), generations.size(), overlaps.size());
  for (auto& m : cast.members) m->consumer->close();
  for (auto& w : workers) w->close();
}

TEST_F(ClientModeTest, AVersionZeroRegistrationOfAClientModeGroupIsRefusedAndServerModeIsUnchanged) {
  startServer();
  ASSERT_TRUE(admin_->createGroup("shards", 2000ms, {}, false, AssignmentMode::CLIENT).ok());
  client::Connection conn;
  ASSERT_TRUE(conn.connect("127.0.0.1", server_->port(), 5s));
  const auto deadline = Clock::now() + 20s;
  protocol::RegisterConsumerResponse reg;
  do {
    auto r = conn.call(protocol::RegisterConsumerRequest{"shards", "", {}}, 5s);  // version 0
    ASSERT_TRUE(r.ok) << r.detail;
    reg = std::get<protocol::RegisterConsumerResponse>(r.response);
  } while (reg.error == protocol::ErrorCode::CONTROLLER_NOT_AVAILABLE && Clock::now() < deadline);
  EXPECT_EQ(reg.error, protocol::ErrorCode::UNSUPPORTED_VERSION);
  // CreateGroup again with another mode: different settings.
  EXPECT_EQ(admin_->createGroup("shards", 2000ms, {}, false, AssignmentMode::SERVER).status.code,
            protocol::ErrorCode::GROUP_ALREADY_EXISTS);
}

// ---- Rack-aware server-side assignment ---------------------------------------------------

TEST_F(ClientModeTest, NineMembersInThreeRacksGetMostPartitionsInRack) {
  // Brokers 1..3 in racks r1..r3; each partition has one replica, on broker
  // (p mod 3) + 1, so a third of the partitions lives in each rack.
  for (int b = 1; b <= 3; ++b) {
    ASSERT_EQ(zk_->createSync(brokersPath_ + "/" + std::to_string(b),
                              layout::encodeBroker("10.0.0." + std::to_string(b), 9092, "r" + std::to_string(b)),
                              zk::CreateMode::Persistent)
                  .error,
              zk::Error::Ok);
  }
  std::map<std::string, std::string> rackOf;  // "topic/partition" -> rack of its replica
  for (const char* topic : {"alpha", "beta"}) {
    std::vector<std::vector<int32_t>> replicas;
    for (int p = 0; p < 18; ++p) {
      replicas.push_back({p % 3 + 1});
      rackOf[std::string(topic) + "/" + std::to_string(p)] = "r" + std::to_string(p % 3 + 1);
    }
    ASSERT_EQ(zk_->createSync(topicsPath_ + "/" + topic, layout::encodeTopicReplicas(replicas),
                              zk::CreateMode::Persistent)
                  .error,
              zk::Error::Ok);
  }
  startServer();

  // One group whose members give racks, one whose members do not.
  auto share = [&](const std::string& group, bool withRacks, double* inRack) {
    ASSERT_TRUE(admin_->createGroup(group, 5000ms, {"alpha", "beta"}, false).ok());
    std::vector<std::unique_ptr<Consumer>> members;
    std::map<std::string, std::string> memberRack;
    for (int i = 0; i < 9; ++i) {
      client::ConsumerConfig cc;
      cc.bootstrap = {{"127.0.0.1", server_->port()}};
      cc.group = group;
      cc.clientId = "c" + std::to_string(i);
      if (withRacks) cc.rack = "r" + std::to_string(i % 3 + 1);
      members.push_back(std::make_unique<Consumer>(cc, client::ConsumerCallbacks{}));
    }
    // Until the controller says the group is stable with every partition held.
    protocol::DescribeGroupResponse d;
    const auto deadline = Clock::now() + 60s;
    for (;;) {
      for (auto& c : members) c->poll(5ms);
      auto r = admin_->describeGroup(group);
      size_t held = 0;
      if (r.ok()) {
        for (auto& m : r.value.members) held += m.held.size();
      }
      if (r.ok() && r.value.state == protocol::GroupState::STABLE && r.value.members.size() == 9 && held == 36) {
        d = r.value;
        break;
      }
      ASSERT_LT(Clock::now(), deadline) << group << " never settled";
    }
    size_t in = 0, total = 0;
    std::map<std::string, size_t> perMember;
    for (auto& m : d.members) {
      if (withRacks) {
        EXPECT_FALSE(m.rack.empty());
      }
      const std::string rack = "r" + std::to_string(std::stoi(m.clientId.substr(1)) % 3 + 1);
      for (auto& p : m.held) {
        ++total;
        in += rackOf[p.topic + "/" + std::to_string(p.partition)] == rack ? 1 : 0;
      }
      perMember[m.consumerId] = m.held.size();
    }
    // Balance unchanged: 36 partitions over 9 members, 4 each (2 of each topic).
    for (auto& [id, n] : perMember) EXPECT_EQ(n, 4u) << id;
    for (auto& m : d.members) {
      std::map<std::string, int> perTopic;
      for (auto& p : m.held) ++perTopic[p.topic];
      EXPECT_EQ(perTopic["alpha"], 2) << m.consumerId;
      EXPECT_EQ(perTopic["beta"], 2) << m.consumerId;
    }
    *inRack = total ? static_cast<double>(in) / static_cast<double>(total) : 0;
    std::printf("[figure] racks %s: %zu of %zu partitions in the member's rack (%.1f%%)\n",
                withRacks ? "given" : "not given", in, total, 100.0 * *inRack);
    for (auto& c : members) c->close();
  };
  double with = 0, without = 0;
  share("racked", true, &with);
  share("unracked", false, &without);
  EXPECT_GT(with, without + 0.3) << "racks given should place most partitions in-rack";
  EXPECT_GE(with, 0.9);
}

}  // namespace
}  // namespace groupcoord::testing
