// The Kafka port (docs/kafka.md) of two groupcoordd processes against the
// live ensemble, driven by a client speaking the Kafka codec over TCP: a
// group forms through FindCoordinator, MEMBER_ID_REQUIRED, the join barrier
// and the leader's SyncGroup; the other server answers NOT_COORDINATOR;
// offsets are fenced by generation; after SIGKILL of the controller the
// other server takes the group over and accepts the same generation's
// heartbeats, syncs and commits, with no rebalance. A commit's metadata is
// kept, and refused per partition when too large. Requests the port cannot
// answer close the connection. /metrics counts the port's requests.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/Admin.h"
#include "common/Layout.h"
#include "protocol/kafka/Codec.h"
#include "support/KafkaWire.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/TestSession.h"
#include "support/Timing.h"
#include "tests/server/HttpTestUtil.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

namespace k = protocol::kafka;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int32_t kSessionMs = 10000;
constexpr int64_t kZkSessionMs = 4000;

// The consumer protocol's assignment of one topic's partitions, as a
// client's leader writes it (an opaque byte string to the server).
std::string assignmentOf(const std::string& topic, std::vector<int32_t> partitions) {
  std::string out;
  auto i16 = [&](int16_t v) {
    out.push_back(static_cast<char>(v >> 8));
    out.push_back(static_cast<char>(v));
  };
  auto i32 = [&](int32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>(v >> s));
  };
  i16(0);
  i32(1);
  i16(static_cast<int16_t>(topic.size()));
  out += topic;
  i32(static_cast<int32_t>(partitions.size()));
  for (int32_t p : partitions) i32(p);
  i32(-1);
  return out;
}

class KafkaPortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("kafkaport");
    topicsPath_ = root_ + "-kafka/brokers/topics";
    zk_ = openTestSession();
    ASSERT_NE(zk_, nullptr);
    ASSERT_EQ(zk_->ensurePathSync(topicsPath_), zk::Error::Ok);
    ASSERT_EQ(zk_->createSync(topicsPath_ + "/work", layout::encodeTopic(4), zk::CreateMode::Persistent).error,
              zk::Error::Ok);
  }

  // Starts server `id` with a Kafka port; its Kafka port is kafkaPort(i).
  void startServer(int id) {
    const std::string portFile = "/tmp/" + uniqueName("kafka-port") + ".port";
    const std::string httpPortFile = "/tmp/" + uniqueName("kafka-http-port") + ".port";
    auto s = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=" + std::to_string(id), "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_,
        "--zk-session-timeout-ms=" + std::to_string(kZkSessionMs), "--kafka-listen-port=0",
        "--kafka-port-file=" + portFile, "--kafka-group-initial-rebalance-delay-ms=0",
        // Consumer-protocol groups: the interval their members are told,
        // and a session the failover tests outlast.
        "--kafka-group-consumer-heartbeat-interval-ms=1000",
        "--kafka-group-consumer-session-timeout-ms=" + std::to_string(kSessionMs),
        "--http-address=127.0.0.1", "--http-port=0", "--http-port-file=" + httpPortFile,
        // Placed once, where it stays: no handover moves the group while
        // the test watches it.
        "--handover-settle-ms=0"});
    ASSERT_TRUE(s->start());
    std::ifstream in(portFile);
    int port = 0;
    in >> port;
    ASSERT_GT(port, 0) << "no Kafka port in " << portFile;
    servers_.push_back(std::move(s));
    kafkaPorts_.push_back(static_cast<uint16_t>(port));
    httpPorts_.push_back(servertest::readPortFile(httpPortFile));
  }

  // Server i's /metrics, by series.
  std::map<std::string, double> scrape(size_t i) {
    const servertest::HttpReply r = servertest::httpGet(httpPorts_[i], "/metrics");
    EXPECT_EQ(r.status, 200);
    return servertest::parseSamples(r.body);
  }

  // FindCoordinator until it names a controller (a new group's controller
  // claims it within the claims' waits); its Kafka port.
  uint16_t coordinatorOf(const std::string& group, uint16_t askAt) {
    const auto deadline = Clock::now() + designBound(std::chrono::milliseconds(2 * kZkSessionMs + 3000));
    while (Clock::now() < deadline) {
      KafkaWire c(askAt);
      k::FindCoordinatorRequest r;
      r.key = group;
      auto a = c.call<k::FindCoordinatorResponse>(r, 2);
      if (a && a->error == k::ErrorCode::NONE) return static_cast<uint16_t>(a->port);
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "no coordinator for " << group;
    return 0;
  }

  // The group as ZooKeeper has it: its znode's version (the generation)
  // and its member znodes with their owning sessions.
  struct InZk {
    int32_t version = -1;
    std::map<std::string, int64_t> members;  // member id -> ephemeral owner
  };
  InZk inZk(const std::string& group) {
    layout::Layout l(root_);
    InZk out;
    auto g = zk_->getSync(l.groupPath(group));
    EXPECT_EQ(g.error, zk::Error::Ok);
    out.version = g.stat.version;
    auto c = zk_->getChildrenSync(l.membersPath(group));
    EXPECT_EQ(c.error, zk::Error::Ok);
    for (const auto& id : c.children) {
      auto m = zk_->getSync(l.memberPath(group, id));
      if (m.error == zk::Error::Ok) out.members[id] = m.stat.ephemeralOwner;
    }
    return out;
  }

  std::string root_, topicsPath_;
  std::unique_ptr<zk::Session> zk_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::vector<uint16_t> kafkaPorts_;
  std::vector<uint16_t> httpPorts_;
};

// How far behind the leader this test's ZooKeeper node may be: syncLimit
// (5) ticks of GROUPCOORD_ZK_TICK_MS (scripts/zk-ensemble.sh).
std::chrono::milliseconds followerLag() {
  const char* tickEnv = std::getenv("GROUPCOORD_ZK_TICK_MS");
  return std::chrono::milliseconds(5 * (tickEnv != nullptr ? std::atoll(tickEnv) : 500));
}

// A series' value; -1 when the scrape lacks it.
double seriesValue(const std::map<std::string, double>& samples, const std::string& series) {
  return servertest::sample(samples, series).value_or(-1);
}

k::JoinGroupRequest joinRequest(const std::string& group, const std::string& memberId) {
  k::JoinGroupRequest r;
  r.groupId = group;
  r.sessionTimeoutMs = kSessionMs;
  r.rebalanceTimeoutMs = kSessionMs;
  r.memberId = memberId;
  r.protocolType = "consumer";
  r.protocols.push_back({"range", std::string("\0\0\0\0\0\1\0\4work\xff\xff\xff\xff", 16)});
  return r;
}

// Two members through MEMBER_ID_REQUIRED and the barrier; the leader
// assigns partitions 0,1 to itself and 2,3 to the other.
struct FormedGroup {
  std::string leader, other;
  int32_t generation = -1;
};

FormedGroup formGroup(KafkaWire& a, KafkaWire& b, const std::string& group) {
  FormedGroup g;
  // The controller reads the group's saved generation on the first request
  // and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile, which clients retry.
  std::optional<k::JoinGroupResponse> first;
  for (int i = 0; i < 50; ++i) {
    first = a.call<k::JoinGroupResponse>(joinRequest(group, ""), 5);
    if (!first || first->error != k::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) break;
    std::this_thread::sleep_for(100ms);
  }
  auto second = b.call<k::JoinGroupResponse>(joinRequest(group, ""), 5);
  EXPECT_TRUE(first && second);
  if (!first || !second) return g;
  EXPECT_EQ(first->error, k::ErrorCode::MEMBER_ID_REQUIRED);
  EXPECT_EQ(second->error, k::ErrorCode::MEMBER_ID_REQUIRED);
  // Each join waits at the barrier for the other: one on its own thread.
  std::optional<k::JoinGroupResponse> joinedB;
  std::thread t([&] { joinedB = b.call<k::JoinGroupResponse>(joinRequest(group, second->memberId), 5); });
  auto joinedA = a.call<k::JoinGroupResponse>(joinRequest(group, first->memberId), 5);
  t.join();
  EXPECT_TRUE(joinedA && joinedB);
  if (!joinedA || !joinedB) return g;
  EXPECT_EQ(joinedA->error, k::ErrorCode::NONE);
  EXPECT_EQ(joinedB->error, k::ErrorCode::NONE);
  EXPECT_EQ(joinedA->generationId, joinedB->generationId);
  EXPECT_EQ(joinedA->leader, joinedB->leader);
  EXPECT_EQ(joinedA->protocolName, "range");
  const bool aLeads = joinedA->leader == joinedA->memberId;
  KafkaWire& leaderConn = aLeads ? a : b;
  KafkaWire& otherConn = aLeads ? b : a;
  const auto& leaderJoin = aLeads ? *joinedA : *joinedB;
  const auto& otherJoin = aLeads ? *joinedB : *joinedA;
  EXPECT_EQ(leaderJoin.members.size(), 2u) << "the leader gets every member";
  EXPECT_TRUE(otherJoin.members.empty()) << "only the leader gets the members";
  g.leader = leaderJoin.memberId;
  g.other = otherJoin.memberId;
  g.generation = leaderJoin.generationId;

  std::optional<k::SyncGroupResponse> otherSync;
  std::thread s([&] {
    k::SyncGroupRequest r;
    r.groupId = group;
    r.generationId = g.generation;
    r.memberId = g.other;
    otherSync = otherConn.call<k::SyncGroupResponse>(r, 3);
  });
  k::SyncGroupRequest r;
  r.groupId = group;
  r.generationId = g.generation;
  r.memberId = g.leader;
  r.assignments = {{g.leader, assignmentOf("work", {0, 1})}, {g.other, assignmentOf("work", {2, 3})}};
  auto leaderSync = leaderConn.call<k::SyncGroupResponse>(r, 3);
  s.join();
  EXPECT_TRUE(leaderSync && otherSync);
  if (leaderSync && otherSync) {
    EXPECT_EQ(leaderSync->error, k::ErrorCode::NONE);
    EXPECT_EQ(otherSync->error, k::ErrorCode::NONE);
    EXPECT_EQ(leaderSync->assignment, assignmentOf("work", {0, 1}));
    EXPECT_EQ(otherSync->assignment, assignmentOf("work", {2, 3})) << "the leader's assignment reaches the other";
  }
  return g;
}

k::ErrorCode heartbeat(KafkaWire& c, const std::string& group, const std::string& member, int32_t generation) {
  k::HeartbeatRequest r;
  r.groupId = group;
  r.memberId = member;
  r.generationId = generation;
  auto a = c.call<k::HeartbeatResponse>(r, 3);
  return a ? a->error : k::ErrorCode::UNKNOWN_SERVER_ERROR;
}

k::ErrorCode commit(KafkaWire& c, const std::string& group, const std::string& member, int32_t generation,
                    int64_t offset) {
  k::OffsetCommitRequest r;
  r.groupId = group;
  r.memberId = member;
  r.generationId = generation;
  r.topics.push_back({"work", {{0, offset, -1, -1, std::string("m")}}});
  auto a = c.call<k::OffsetCommitResponse>(r, 7);
  if (!a || a->topics.size() != 1 || a->topics[0].partitions.size() != 1) return k::ErrorCode::UNKNOWN_SERVER_ERROR;
  return a->topics[0].partitions[0].error;
}

// The committed offset and metadata of work/0.
struct Committed {
  int64_t offset = -1;
  std::optional<std::string> metadata;
  bool operator==(const Committed&) const = default;
};

std::optional<Committed> fetchCommitted(KafkaWire& c, const std::string& group) {
  k::OffsetFetchRequest r;
  r.groupId = group;
  r.topics = std::vector<k::OffsetFetchRequest::Topic>{{"work", {0}}};
  auto a = c.call<k::OffsetFetchResponse>(r, 5);
  if (!a || a->error != k::ErrorCode::NONE || a->topics.size() != 1 || a->topics[0].partitions.size() != 1) {
    return std::nullopt;
  }
  const auto& p = a->topics[0].partitions[0];
  if (p.error != k::ErrorCode::NONE) return std::nullopt;
  return Committed{p.committedOffset, p.metadata};
}

std::optional<int64_t> fetchOffset(KafkaWire& c, const std::string& group) {
  auto committed = fetchCommitted(c, group);
  return committed ? std::optional<int64_t>(committed->offset) : std::nullopt;
}

TEST_F(KafkaPortTest, MetadataListsEveryServerAndTheTopic) {
  startServer(1);
  startServer(2);
  const auto deadline = Clock::now() + designBound(std::chrono::milliseconds(kZkSessionMs));
  std::optional<k::MetadataResponse> m;
  while (Clock::now() < deadline) {
    KafkaWire c(kafkaPorts_[0]);
    k::MetadataRequest r;
    r.topics = std::vector<k::MetadataRequest::Topic>{{"work"}, {"missing"}};
    m = c.call<k::MetadataResponse>(r, 4);
    if (m && m->brokers.size() == 2) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(m);
  ASSERT_EQ(m->brokers.size(), 2u) << "both servers with a Kafka port are brokers";
  std::set<int32_t> ports;
  for (const auto& b : m->brokers) ports.insert(b.port);
  EXPECT_EQ(ports, (std::set<int32_t>{kafkaPorts_[0], kafkaPorts_[1]}));
  ASSERT_EQ(m->topics.size(), 2u);
  for (const auto& t : m->topics) {
    if (t.name == "missing") {
      EXPECT_EQ(t.error, k::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
      continue;
    }
    EXPECT_EQ(t.error, k::ErrorCode::NONE);
    ASSERT_EQ(t.partitions.size(), 4u);
    for (const auto& p : t.partitions) EXPECT_TRUE(m->brokers[0].nodeId == p.leaderId || m->brokers[1].nodeId == p.leaderId);
  }
}

// Metadata 12 as librdkafka 2.15.1 uses it for a KIP-848 assignment: the
// topic's id by its name, then the name by its id alone; an id that names
// no topic is UNKNOWN_TOPIC_ID with a null name. The id is the same on
// every server.
TEST_F(KafkaPortTest, MetadataGivesTopicIdsAndFindsATopicByItsId) {
  startServer(1);
  startServer(2);
  auto byName = [&](uint16_t port) -> std::optional<k::MetadataResponse::Topic> {
    const auto deadline = Clock::now() + designBound(std::chrono::milliseconds(kZkSessionMs));
    while (Clock::now() < deadline) {
      KafkaWire c(port);
      k::MetadataRequest r;
      r.topics = std::vector<k::MetadataRequest::Topic>{{"work"}};
      auto m = c.call<k::MetadataResponse>(r, 12);
      if (m && m->topics.size() == 1 && m->topics[0].error == k::ErrorCode::NONE) return m->topics[0];
      std::this_thread::sleep_for(100ms);
    }
    return std::nullopt;
  };
  const auto first = byName(kafkaPorts_[0]);
  const auto second = byName(kafkaPorts_[1]);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->topicId, second->topicId);
  EXPECT_NE(first->topicId, protocol::Uuid{}) << "an existing topic has an id";
  EXPECT_EQ(first->partitions.size(), 4u);
  for (const auto& p : first->partitions) EXPECT_EQ(p.leaderEpoch, -1);

  protocol::Uuid unknown;
  unknown.bytes.fill(0xee);
  KafkaWire c(kafkaPorts_[1]);
  k::MetadataRequest r;
  r.topics = std::vector<k::MetadataRequest::Topic>{{std::nullopt, first->topicId}, {std::nullopt, unknown}};
  r.allowAutoTopicCreation = false;
  auto m = c.call<k::MetadataResponse>(r, 12);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->topics.size(), 2u);
  EXPECT_EQ(m->topics[0].name, std::optional<std::string>("work"));
  EXPECT_EQ(m->topics[0].topicId, first->topicId);
  EXPECT_EQ(m->topics[0].partitions.size(), 4u);
  EXPECT_EQ(m->topics[1].error, k::ErrorCode::UNKNOWN_TOPIC_ID);
  EXPECT_EQ(m->topics[1].name, std::nullopt);
  EXPECT_EQ(m->topics[1].topicId, unknown);
}

// OffsetFetch 8 and 9 ask for several groups at once: each is answered as
// version 7 would answer it, in the request's order.
TEST_F(KafkaPortTest, OffsetFetchByGroups) {
  startServer(1);
  const std::string group = "fetch-groups";
  ASSERT_NE(coordinatorOf(group, kafkaPorts_[0]), 0);
  KafkaWire c(kafkaPorts_[0]);
  // A standalone commit (no member, generation -1) at version 9, flexible,
  // makes the group; until it is loaded it answers
  // COORDINATOR_LOAD_IN_PROGRESS.
  k::OffsetCommitRequest commit;
  commit.groupId = group;
  commit.topics.push_back({"work", {{0, 77, -1, -1, std::string("m")}}});
  k::ErrorCode error = k::ErrorCode::UNKNOWN_SERVER_ERROR;
  const auto deadline = Clock::now() + designBound(std::chrono::milliseconds(kZkSessionMs));
  while (Clock::now() < deadline) {
    auto committed = c.call<k::OffsetCommitResponse>(commit, 9);
    ASSERT_TRUE(committed);
    ASSERT_EQ(committed->topics.size(), 1u);
    ASSERT_EQ(committed->topics[0].partitions.size(), 1u);
    error = committed->topics[0].partitions[0].error;
    if (error != k::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(error, k::ErrorCode::NONE);
  for (const int16_t version : {int16_t{8}, int16_t{9}}) {
    k::OffsetFetchRequest r;
    r.groups = {{group, std::nullopt, -1, std::vector<k::OffsetFetchRequest::Topic>{{"work", {0}}}},
                {"never-made", std::nullopt, -1, std::nullopt}};
    auto a = c.call<k::OffsetFetchResponse>(r, version);
    ASSERT_TRUE(a) << "version " << version;
    ASSERT_EQ(a->groups.size(), 2u);
    EXPECT_EQ(a->groups[0].groupId, group);
    EXPECT_EQ(a->groups[0].error, k::ErrorCode::NONE);
    ASSERT_EQ(a->groups[0].topics.size(), 1u);
    ASSERT_EQ(a->groups[0].topics[0].partitions.size(), 1u);
    EXPECT_EQ(a->groups[0].topics[0].partitions[0].committedOffset, 77);
    EXPECT_EQ(a->groups[1].groupId, "never-made");
    EXPECT_TRUE(a->groups[1].topics.empty());
  }
}

TEST_F(KafkaPortTest, AGroupFormsAndItsControllerFailsOverWithoutARebalance) {
  startServer(1);
  startServer(2);
  const std::string group = "orders-workers";
  const uint16_t controllerPort = coordinatorOf(group, kafkaPorts_[0]);
  ASSERT_NE(controllerPort, 0);
  const size_t controllerIndex = controllerPort == kafkaPorts_[0] ? 0 : 1;
  const uint16_t otherPort = kafkaPorts_[1 - controllerIndex];
  ASSERT_EQ(controllerPort, kafkaPorts_[controllerIndex]);

  // The other server is not the group's coordinator.
  {
    KafkaWire c(otherPort);
    auto a = c.call<k::JoinGroupResponse>(joinRequest(group, ""), 5);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->error, k::ErrorCode::NOT_COORDINATOR);
  }

  FormedGroup g;
  {
    KafkaWire a(controllerPort), b(controllerPort);
    ASSERT_TRUE(a.connected() && b.connected());
    g = formGroup(a, b, group);
    ASSERT_GE(g.generation, 1);
    EXPECT_EQ(heartbeat(a, group, g.leader, g.generation), k::ErrorCode::NONE);
    EXPECT_EQ(heartbeat(a, group, g.leader, g.generation + 1), k::ErrorCode::ILLEGAL_GENERATION);
    EXPECT_EQ(heartbeat(a, group, "nobody", g.generation), k::ErrorCode::UNKNOWN_MEMBER_ID);
    // Offsets fenced by generation.
    EXPECT_EQ(commit(a, group, g.leader, g.generation, 42), k::ErrorCode::NONE);
    EXPECT_EQ(commit(a, group, g.leader, g.generation - 1, 7), k::ErrorCode::ILLEGAL_GENERATION);
    EXPECT_EQ(commit(a, group, "nobody", g.generation, 7), k::ErrorCode::UNKNOWN_MEMBER_ID);
    EXPECT_EQ(commit(a, group, "", -1, 7), k::ErrorCode::ILLEGAL_GENERATION) << "a standalone commit to a live group";
    EXPECT_EQ(fetchOffset(a, group), std::optional<int64_t>(42));
  }
  // The members are ephemeral znodes of the controller's session, and the
  // generation is the group znode's version.
  const InZk before = inZk(group);
  EXPECT_EQ(before.version, g.generation);
  ASSERT_EQ(before.members.size(), 2u);
  EXPECT_TRUE(before.members.count(g.leader) && before.members.count(g.other));
  for (const auto& [id, owner] : before.members) EXPECT_NE(owner, 0) << id << " is ephemeral";

  // groupcoord's own calls name the group's protocol: ListGroups (read
  // from ZooKeeper, on either server) and DescribeGroup (the controller's).
  for (size_t i = 0; i < servers_.size(); ++i) {
    client::Admin admin({{"127.0.0.1", servers_[i]->port()}});
    auto listed = admin.listGroups({group});
    ASSERT_TRUE(listed.ok()) << listed.status.toString();
    ASSERT_EQ(listed.value.size(), 1u);
    EXPECT_TRUE(listed.value[0].kafka);
    EXPECT_EQ(listed.value[0].protocolType, "consumer");
    EXPECT_EQ(listed.value[0].protocolName, "range");
  }
  {
    client::Admin admin({{"127.0.0.1", servers_[1 - controllerIndex]->port()}});
    auto described = admin.describeGroup(group);
    ASSERT_TRUE(described.ok()) << described.status.toString();
    EXPECT_TRUE(described.value.kafka);
    EXPECT_EQ(described.value.protocolType, "consumer");
    EXPECT_EQ(described.value.protocolName, "range");
    EXPECT_EQ(described.value.generation, g.generation);
    EXPECT_EQ(described.value.members.size(), 2u);
    // Each member as groupctl describe shows it: where it connects from,
    // when it joined and when it was last heard (wall-clock ms).
    const int64_t wallNow =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    for (const auto& m : described.value.members) {
      EXPECT_EQ(m.host, "127.0.0.1") << m.consumerId;
      EXPECT_NE(m.port, 0) << m.consumerId << ": its source port";
      EXPECT_GT(m.joinedAtMs, 0) << m.consumerId;
      EXPECT_GE(m.lastHeardMs, m.joinedAtMs) << m.consumerId;
      EXPECT_LE(m.lastHeardMs, wallNow + 1000) << m.consumerId << ": not in the future";
    }
    // The Kafka commit is among the group's offsets, as groupctl describe
    // and the status page show them.
    bool committed = false;
    for (const auto& o : described.value.offsets) {
      if (o.topic == "work" && o.partition == 0) committed = o.offset == 42;
    }
    EXPECT_TRUE(committed) << "work/0 committed at 42";
    // A groupcoord group is none of that.
    ASSERT_TRUE(admin.createGroup("native-one", std::chrono::milliseconds(10000), {"work"}, false).ok());
    auto native = admin.listGroups({"native-one"});
    ASSERT_TRUE(native.ok());
    ASSERT_EQ(native.value.size(), 1u);
    EXPECT_FALSE(native.value[0].kafka);
    EXPECT_EQ(native.value[0].protocolName, "");
  }

  // The controller dies without a word; the other server takes the group
  // over once the ensemble expires its session, and goes on with the same
  // generation.
  servers_[controllerIndex]->kill9();
  KafkaWire leader(otherPort), other(otherPort);
  const auto deadline = Clock::now() + designBound(std::chrono::milliseconds(2 * kZkSessionMs + 3000));
  k::ErrorCode last = k::ErrorCode::UNKNOWN_SERVER_ERROR;
  while (Clock::now() < deadline) {
    last = heartbeat(leader, group, g.leader, g.generation);
    if (last == k::ErrorCode::NONE) break;
    EXPECT_TRUE(last == k::ErrorCode::NOT_COORDINATOR || last == k::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
        << "while the group moves: " << k::errorName(last);
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(last, k::ErrorCode::NONE) << "the new controller accepts the generation's heartbeats";
  EXPECT_EQ(heartbeat(other, group, g.other, g.generation), k::ErrorCode::NONE) << "no rebalance";
  k::SyncGroupRequest sync;
  sync.groupId = group;
  sync.generationId = g.generation;
  sync.memberId = g.other;
  auto synced = other.call<k::SyncGroupResponse>(sync, 3);
  ASSERT_TRUE(synced);
  EXPECT_EQ(synced->error, k::ErrorCode::NONE);
  EXPECT_EQ(synced->assignment, assignmentOf("work", {2, 3})) << "the same assignment, from the saved generation";
  EXPECT_EQ(fetchOffset(other, group), std::optional<int64_t>(42)) << "the committed offset, from the other server";
  EXPECT_EQ(fetchCommitted(other, group), (std::optional<Committed>{{42, std::string("m")}}))
      << "with the metadata it was committed with";
  EXPECT_EQ(commit(other, group, g.other, g.generation, 43), k::ErrorCode::NONE);
  // The new controller made the member znodes its own session's, at the
  // same generation.
  const auto owned = Clock::now() + designBound(std::chrono::milliseconds(kZkSessionMs));
  InZk after = inZk(group);
  while (Clock::now() < owned && after.members.size() != 2) {
    std::this_thread::sleep_for(100ms);
    after = inZk(group);
  }
  EXPECT_EQ(after.version, g.generation) << "no rebalance moved the generation";
  ASSERT_EQ(after.members.size(), 2u);
  EXPECT_TRUE(after.members.count(g.leader) && after.members.count(g.other));
  for (const auto& [id, owner] : after.members) {
    EXPECT_NE(owner, 0);
    EXPECT_NE(owner, before.members.begin()->second) << id << " belongs to the new controller's session";
  }

  // A member leaves: the other's next heartbeat hears of the rebalance.
  k::LeaveGroupRequest leave;
  leave.groupId = group;
  leave.memberId = g.leader;
  auto left = leader.call<k::LeaveGroupResponse>(leave, 1);
  ASSERT_TRUE(left);
  EXPECT_EQ(left->error, k::ErrorCode::NONE);
  EXPECT_EQ(heartbeat(other, group, g.other, g.generation), k::ErrorCode::REBALANCE_IN_PROGRESS);
  // The other joins again: the next generation is the group znode's next
  // version, and only its member is left in ZooKeeper.
  auto rejoined = other.call<k::JoinGroupResponse>(joinRequest(group, g.other), 5);
  ASSERT_TRUE(rejoined);
  EXPECT_EQ(rejoined->error, k::ErrorCode::NONE);
  EXPECT_EQ(rejoined->generationId, g.generation + 1);
  const InZk next = inZk(group);
  EXPECT_EQ(next.version, g.generation + 1) << "the answer went out after the version moved";
  EXPECT_EQ(next.members.size(), 1u);
  EXPECT_TRUE(next.members.count(g.other));
}

// A commit's metadata is stored with its offset (after a newline in the
// offset znode) and fetched back; metadata over 4096 bytes is refused for
// its partition alone, whose offset stays as it was.
TEST_F(KafkaPortTest, CommitMetadataIsKeptAndTooLargeMetadataIsRefusedPerPartition) {
  startServer(1);
  const std::string group = "checkpointed";
  const uint16_t port = coordinatorOf(group, kafkaPorts_[0]);
  ASSERT_EQ(port, kafkaPorts_[0]);
  KafkaWire c(port);
  ASSERT_TRUE(c.connected());
  const std::string atLimit(4096, 'z');
  const std::string overLimit(4097, 'y');
  // A commit from outside group management (no member, no generation),
  // which an empty group takes; retried while the controller loads it.
  auto commitAll = [&](std::vector<k::OffsetCommitRequest::Partition> partitions) {
    k::OffsetCommitRequest r;
    r.groupId = group;
    r.topics.push_back({"work", std::move(partitions)});
    std::optional<k::OffsetCommitResponse> a;
    for (int i = 0; i < 50; ++i) {
      a = c.call<k::OffsetCommitResponse>(r, 7);
      if (!a || a->topics.empty() || a->topics[0].partitions.empty() ||
          a->topics[0].partitions[0].error != k::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) {
        break;
      }
      std::this_thread::sleep_for(100ms);
    }
    std::vector<k::ErrorCode> errors;
    if (a && a->topics.size() == 1) {
      for (const auto& p : a->topics[0].partitions) errors.push_back(p.error);
    }
    return errors;
  };
  auto fetchAll = [&] {
    k::OffsetFetchRequest r;
    r.groupId = group;
    r.topics = std::vector<k::OffsetFetchRequest::Topic>{{"work", {0, 1, 2, 3}}};
    std::vector<Committed> out;
    auto a = c.call<k::OffsetFetchResponse>(r, 5);
    EXPECT_TRUE(a && a->error == k::ErrorCode::NONE && a->topics.size() == 1);
    if (!a || a->topics.size() != 1) return out;
    for (const auto& p : a->topics[0].partitions) {
      EXPECT_EQ(p.error, k::ErrorCode::NONE);
      out.push_back(Committed{p.committedOffset, p.metadata});
    }
    return out;
  };
  const std::string twoLines = "checkpoint 7\nsecond line";
  EXPECT_EQ(commitAll({{0, 10, -1, -1, twoLines},
                       {1, 11, -1, -1, overLimit},
                       {2, 12, -1, -1, atLimit},
                       {3, 13, -1, -1, std::nullopt}}),
            (std::vector<k::ErrorCode>{k::ErrorCode::NONE, k::ErrorCode::OFFSET_METADATA_TOO_LARGE,
                                       k::ErrorCode::NONE, k::ErrorCode::NONE}));
  EXPECT_EQ(fetchAll(), (std::vector<Committed>{{10, twoLines}, {-1, std::string()}, {12, atLimit}, {13, std::string()}}))
      << "the refused partition has no offset; the others have theirs, with their metadata";

  // In ZooKeeper: the decimal offset, then a newline and the metadata when
  // there is any.
  const std::string offsets = root_ + "/groups/" + group + "/offsets/work/";
  EXPECT_EQ(zk_->getSync(offsets + "0").data, "10\n" + twoLines);
  EXPECT_EQ(zk_->getSync(offsets + "2").data, "12\n" + atLimit);
  EXPECT_EQ(zk_->getSync(offsets + "3").data, "13");
  EXPECT_EQ(zk_->getSync(offsets + "1").error, zk::Error::NoNode);

  // Too large again, for a partition that has an offset: it keeps it and
  // its metadata; the other partition of the same request moves on.
  EXPECT_EQ(commitAll({{0, 20, -1, -1, overLimit}, {3, 23, -1, -1, std::string("later")}}),
            (std::vector<k::ErrorCode>{k::ErrorCode::OFFSET_METADATA_TOO_LARGE, k::ErrorCode::NONE}));
  EXPECT_EQ(fetchAll(), (std::vector<Committed>{{10, twoLines}, {-1, std::string()}, {12, atLimit}, {23, "later"}}));
  // Every partition too large: nothing is written, each is refused.
  EXPECT_EQ(commitAll({{1, 31, -1, -1, overLimit}, {2, 32, -1, -1, overLimit}}),
            (std::vector<k::ErrorCode>{k::ErrorCode::OFFSET_METADATA_TOO_LARGE,
                                       k::ErrorCode::OFFSET_METADATA_TOO_LARGE}));
  EXPECT_EQ(fetchAll(), (std::vector<Committed>{{10, twoLines}, {-1, std::string()}, {12, atLimit}, {23, "later"}}));

  // /metrics counted the commits by the error they answered, and the
  // fetches, which answered none.
  const auto m = scrape(0);
  EXPECT_EQ(seriesValue(m, "groupcoord_kafka_request_errors_total{api=\"OffsetCommit\",error=\"OFFSET_METADATA_TOO_LARGE\"}"),
            3.0);
  EXPECT_GE(seriesValue(m, "groupcoord_kafka_requests_total{api=\"OffsetCommit\"}"), 3.0);
  EXPECT_EQ(seriesValue(m, "groupcoord_kafka_requests_total{api=\"OffsetFetch\"}"), 3.0);
  EXPECT_GE(seriesValue(m, "groupcoord_kafka_requests_total{api=\"FindCoordinator\"}"), 1.0);
  EXPECT_EQ(seriesValue(m, "groupcoord_kafka_requests_total{api=\"JoinGroup\"}"), 0.0) << "every served API is listed";
  for (const auto& [series, value] : m) {
    EXPECT_FALSE(series.starts_with("groupcoord_kafka_request_errors_total{api=\"OffsetFetch\"")) << series;
  }
}

// Looking a group up makes nothing: FindCoordinator names the server that
// would control a new group, and DescribeGroups, DeleteGroups, OffsetFetch
// and Heartbeat answer for a group that is not there (Dead, not found, no
// offset, unknown member) without making it, as an admin client's describe
// of a mistyped name does. Its first JoinGroup makes it; once deleted, it
// stays deleted however often it is looked up.
TEST_F(KafkaPortTest, LookingAGroupUpMakesNothingAndItsFirstJoinDoes) {
  startServer(1);
  startServer(2);
  const std::string group = "looked-up";
  const layout::Layout l(root_);
  auto made = [&] { return zk_->getSync(l.groupPath(group)).error != zk::Error::NoNode; };
  auto lookUps = [&](const std::string& when) {
    // Both servers name the same one, the placement's, once each has seen
    // the other.
    uint16_t port = 0, other = 0;
    const auto agreed = Clock::now() + designBound(std::chrono::milliseconds(kZkSessionMs));
    do {
      port = coordinatorOf(group, kafkaPorts_[0]);
      other = coordinatorOf(group, kafkaPorts_[1]);
      if (port != other) std::this_thread::sleep_for(100ms);
    } while (port != other && Clock::now() < agreed);
    ASSERT_NE(port, 0) << when;
    EXPECT_EQ(other, port) << when << ": both servers name the same one";
    KafkaWire c(port);
    k::DescribeGroupsRequest describe;
    describe.groups = {group};
    auto described = c.call<k::DescribeGroupsResponse>(describe, 4);
    ASSERT_TRUE(described) << c.lastError();
    ASSERT_EQ(described->groups.size(), 1u);
    EXPECT_EQ(described->groups[0].error, k::ErrorCode::NONE) << when;
    EXPECT_EQ(described->groups[0].groupState, "Dead") << when;
    k::DeleteGroupsRequest remove;
    remove.groupsNames = {group};
    auto removed = c.call<k::DeleteGroupsResponse>(remove, 1);
    ASSERT_TRUE(removed) << c.lastError();
    ASSERT_EQ(removed->results.size(), 1u);
    EXPECT_EQ(removed->results[0].error, k::ErrorCode::GROUP_ID_NOT_FOUND) << when;
    EXPECT_EQ(fetchOffset(c, group), std::optional<int64_t>(-1)) << when << ": no offset, and no error";
    EXPECT_EQ(heartbeat(c, group, "nobody", 1), k::ErrorCode::UNKNOWN_MEMBER_ID) << when;
    EXPECT_FALSE(made()) << when << ": looking it up made nothing";
  };
  lookUps("before its first join");

  const uint16_t port = coordinatorOf(group, kafkaPorts_[0]);
  {
    KafkaWire a(port), b(port);
    const FormedGroup g = formGroup(a, b, group);
    ASSERT_GE(g.generation, 1);
    EXPECT_TRUE(made());
    for (auto [conn, id] : {std::pair{&a, g.leader}, std::pair{&b, g.other}}) {
      k::LeaveGroupRequest leave;
      leave.groupId = group;
      leave.memberId = id;
      auto left = conn->call<k::LeaveGroupResponse>(leave, 1);
      ASSERT_TRUE(left) << conn->lastError();
      EXPECT_EQ(left->error, k::ErrorCode::NONE);
    }
  }
  // Empty now: deleted (asked again while the members' removal is written).
  KafkaWire c(port);
  k::DeleteGroupsRequest remove;
  remove.groupsNames = {group};
  std::optional<k::DeleteGroupsResponse> removed;
  const auto deadline = Clock::now() + designBound(std::chrono::milliseconds(kZkSessionMs));
  do {
    removed = c.call<k::DeleteGroupsResponse>(remove, 1);
    ASSERT_TRUE(removed && removed->results.size() == 1) << c.lastError();
    if (removed->results[0].error != k::ErrorCode::COORDINATOR_NOT_AVAILABLE &&
        removed->results[0].error != k::ErrorCode::NON_EMPTY_GROUP) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  } while (Clock::now() < deadline);
  EXPECT_EQ(removed->results[0].error, k::ErrorCode::NONE) << k::errorName(removed->results[0].error);
  EXPECT_FALSE(made());
  lookUps("after it was deleted");
}

TEST_F(KafkaPortTest, ARewindMakesTheMembersJoinAgainAndFindTheRewoundOffset) {
  startServer(1);
  const std::string group = "rewound-workers";
  const uint16_t port = coordinatorOf(group, kafkaPorts_[0]);
  ASSERT_EQ(port, kafkaPorts_[0]);
  KafkaWire a(port), b(port);
  ASSERT_TRUE(a.connected() && b.connected());
  const FormedGroup g = formGroup(a, b, group);
  ASSERT_GE(g.generation, 1);
  ASSERT_EQ(commit(a, group, g.leader, g.generation, 42), k::ErrorCode::NONE);

  // groupctl rewind: the offsets and a generation move in one transaction,
  // as for a native group.
  client::Admin admin({{"127.0.0.1", servers_[0]->port()}});
  auto rewound = admin.rewind(group, {protocol::PartitionOffset{"work", 0, 5}});
  ASSERT_TRUE(rewound.ok()) << rewound.status.toString();
  EXPECT_TRUE(eventuallyWithin(designBound(followerLag()), [&] { return inZk(group).version > g.generation; }));

  // The members' generation is gone: their heartbeats say so, they join
  // again, at the group znode's next version, and fetch the rewound offset.
  const auto deadline = Clock::now() + designBound(std::chrono::milliseconds(kSessionMs));
  k::ErrorCode hb = k::ErrorCode::NONE;
  while (Clock::now() < deadline) {
    hb = heartbeat(a, group, g.leader, g.generation);
    if (hb != k::ErrorCode::NONE && hb != k::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(hb, k::ErrorCode::UNKNOWN_MEMBER_ID) << k::errorName(hb);
  std::optional<k::JoinGroupResponse> joined;
  for (int i = 0; i < 3 && (!joined || joined->error == k::ErrorCode::MEMBER_ID_REQUIRED); ++i) {
    joined = a.call<k::JoinGroupResponse>(joinRequest(group, joined ? joined->memberId : ""), 5);
    ASSERT_TRUE(joined);
  }
  ASSERT_EQ(joined->error, k::ErrorCode::NONE);
  // This test's session reads from its own ZooKeeper node, which may apply
  // the server's write a little later (a follower is within syncLimit
  // ticks of the leader: 5 of GROUPCOORD_ZK_TICK_MS, scripts/zk-ensemble.sh).
  InZk now = inZk(group);
  eventuallyWithin(designBound(followerLag()), [&] {
    now = inZk(group);
    return now.version == joined->generationId;
  });
  EXPECT_EQ(joined->generationId, now.version);
  EXPECT_EQ(now.members.size(), 1u);
  EXPECT_TRUE(now.members.count(joined->memberId));
  EXPECT_EQ(fetchOffset(a, group), std::optional<int64_t>(5));
}

// ---- The consumer protocol (KIP-848; docs/kafka.md, "The consumer protocol") ----

// One consumer-protocol member as librdkafka 2.15.1 speaks it, by hand: its
// own member id, its epoch, what it owns.
struct ConsumerMember {
  std::string id;
  int32_t epoch = 0;
  std::set<int32_t> owned;
};

std::set<int32_t> partitionsIn(const std::optional<k::ConsumerGroupHeartbeatResponse::Assignment>& a) {
  std::set<int32_t> out;
  if (a) {
    for (const auto& tp : a->topicPartitions) out.insert(tp.partitions.begin(), tp.partitions.end());
  }
  return out;
}

// A heartbeat: full (epoch 0, or every field set as after an error) or
// steady (only its epoch and what it owns). The member takes the answer's
// epoch and, when it carries one, its assignment as what it owns.
std::optional<k::ConsumerGroupHeartbeatResponse> consumerBeat(KafkaWire& c, const std::string& group,
                                                              const protocol::Uuid& topicId, ConsumerMember& m,
                                                              bool full) {
  k::ConsumerGroupHeartbeatRequest r;
  r.groupId = group;
  r.memberId = m.id;
  r.memberEpoch = m.epoch;
  if (full) {
    r.rebalanceTimeoutMs = kSessionMs;
    r.subscribedTopicNames = std::vector<std::string>{"work"};
    r.subscribedTopicRegex = "";
  }
  if (full || m.epoch > 0) {
    r.topicPartitions = std::vector<k::ConsumerGroupHeartbeatRequest::TopicPartitions>{};
    if (!m.owned.empty()) {
      r.topicPartitions->push_back({topicId, std::vector<int32_t>(m.owned.begin(), m.owned.end())});
    }
  }
  return c.call<k::ConsumerGroupHeartbeatResponse>(r, 1);
}

TEST_F(KafkaPortTest, ConsumerProtocolMembersAreRevokedBeforeAnyoneIsGivenAndKeepEverythingAcrossAFailover) {
  startServer(1);
  startServer(2);
  const std::string group = "kip848-workers";
  const uint16_t controllerPort = coordinatorOf(group, kafkaPorts_[0]);
  ASSERT_NE(controllerPort, 0);
  const size_t controllerIndex = controllerPort == kafkaPorts_[0] ? 0 : 1;
  const uint16_t otherPort = kafkaPorts_[1 - controllerIndex];
  auto topic = zk_->getSync(topicsPath_ + "/work");
  ASSERT_EQ(topic.error, zk::Error::Ok);
  protocol::Uuid workId;
  workId.bytes = layout::topicIdOf("work", topic.data);

  // Each request names what its member owns by the topic's id.
  auto beat = [&](KafkaWire& c, ConsumerMember& m, bool full) { return consumerBeat(c, group, workId, m, full); };

  KafkaWire ca(controllerPort), cb(controllerPort);
  ASSERT_TRUE(ca.connected() && cb.connected());
  // Ids as librdkafka makes them: base64, with '/' and '+'.
  ConsumerMember a{"memberA/AAAAAAA+AAAAAA", 0, {}}, b{"memberBBBBBBBBBBBBBBBB", 0, {}};
  // The first heartbeat makes the group; its controller loads it meanwhile.
  std::optional<k::ConsumerGroupHeartbeatResponse> ra;
  const auto loadDeadline = Clock::now() + designBound(std::chrono::milliseconds(kZkSessionMs));
  while (Clock::now() < loadDeadline) {
    ra = beat(ca, a, true);
    ASSERT_TRUE(ra) << ca.lastError();
    if (ra->error != k::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(ra->error, k::ErrorCode::NONE) << ra->errorMessage.value_or("");
  EXPECT_EQ(ra->memberId, std::optional<std::string>(a.id));
  EXPECT_GT(ra->memberEpoch, 0);
  EXPECT_EQ(ra->heartbeatIntervalMs, 1000) << "the group's interval, as the server was started with";
  ASSERT_TRUE(ra->assignment.has_value());
  ASSERT_EQ(ra->assignment->topicPartitions.size(), 1u);
  EXPECT_EQ(ra->assignment->topicPartitions[0].topicId, workId);
  a.epoch = ra->memberEpoch;
  a.owned = partitionsIn(ra->assignment);
  EXPECT_EQ(a.owned, (std::set<int32_t>{0, 1, 2, 3}));

  // A second member joins: nothing is free, so it gets nothing yet.
  auto rb = beat(cb, b, true);
  ASSERT_TRUE(rb);
  ASSERT_EQ(rb->error, k::ErrorCode::NONE) << rb->errorMessage.value_or("");
  EXPECT_GT(rb->memberEpoch, a.epoch);
  EXPECT_TRUE(partitionsIn(rb->assignment).empty()) << "nobody has given anything up yet";
  b.epoch = rb->memberEpoch;
  // The first is told to give two up, and stays at its epoch until it has.
  ra = beat(ca, a, false);
  ASSERT_TRUE(ra && ra->error == k::ErrorCode::NONE);
  EXPECT_EQ(ra->memberEpoch, a.epoch);
  const std::set<int32_t> kept = partitionsIn(ra->assignment);
  ASSERT_EQ(kept.size(), 2u);
  rb = beat(cb, b, false);
  ASSERT_TRUE(rb && rb->error == k::ErrorCode::NONE);
  EXPECT_TRUE(partitionsIn(rb->assignment).empty()) << "still held by the first member";
  // It gives them up: its next heartbeat no longer lists them.
  a.owned = kept;
  ra = beat(ca, a, false);
  ASSERT_TRUE(ra && ra->error == k::ErrorCode::NONE);
  EXPECT_EQ(ra->memberEpoch, b.epoch) << "at the new epoch once it gave them up";
  a.epoch = ra->memberEpoch;
  rb = beat(cb, b, false);
  ASSERT_TRUE(rb && rb->error == k::ErrorCode::NONE);
  b.owned = partitionsIn(rb->assignment);
  std::set<int32_t> all = a.owned;
  all.insert(b.owned.begin(), b.owned.end());
  EXPECT_EQ(b.owned.size(), 2u);
  EXPECT_EQ(all, (std::set<int32_t>{0, 1, 2, 3})) << "disjoint and complete";

  // ConsumerGroupDescribe, and ZooKeeper: member znodes, the epoch as the
  // group znode's version, the group saved.
  {
    k::ConsumerGroupDescribeRequest d;
    d.groupIds = {group, "never-made"};
    auto described = ca.call<k::ConsumerGroupDescribeResponse>(d, 0);
    ASSERT_TRUE(described);
    ASSERT_EQ(described->groups.size(), 2u);
    const auto& g = described->groups[0];
    EXPECT_EQ(g.error, k::ErrorCode::NONE);
    EXPECT_EQ(g.groupState, "Stable");
    EXPECT_EQ(g.groupEpoch, b.epoch);
    ASSERT_EQ(g.members.size(), 2u);
    for (const auto& m : g.members) {
      EXPECT_EQ(m.memberEpoch, b.epoch);
      EXPECT_EQ(m.subscribedTopicNames, std::vector<std::string>{"work"});
      ASSERT_EQ(m.assignment.topicPartitions.size(), 1u);
      EXPECT_EQ(m.assignment.topicPartitions[0].topicName, "work");
      EXPECT_EQ(m.assignment.topicPartitions[0].partitions.size(), 2u);
    }
    EXPECT_EQ(described->groups[1].error, k::ErrorCode::GROUP_ID_NOT_FOUND);
  }
  InZk before = inZk(group);
  eventuallyWithin(designBound(followerLag()), [&] {
    before = inZk(group);
    return before.version == b.epoch && before.members.size() == 2;
  });
  EXPECT_EQ(before.version, b.epoch);
  EXPECT_EQ(before.members.size(), 2u);
  EXPECT_TRUE(before.members.count("memberA%2FAAAAAAA+AAAAAA") && before.members.count(b.id))
      << "a '/' in an id is written %2F in its znode's name";
  EXPECT_EQ(zk_->getSync(layout::Layout(root_).kafkaGroupPath(group)).error, zk::Error::Ok);
  {
    const auto m = scrape(controllerIndex);
    EXPECT_EQ(seriesValue(m, "groupcoord_kafka_consumer_protocol_groups"), 1.0);
    EXPECT_EQ(seriesValue(m, "groupcoord_kafka_consumer_protocol_members"), 2.0);
    EXPECT_GE(seriesValue(m, "groupcoord_kafka_requests_total{api=\"ConsumerGroupHeartbeat\"}"), 7.0);
  }
  // groupcoord's own calls (groupctl list and describe, the status page)
  // name the protocol, and show what each member holds.
  {
    client::Admin admin({{"127.0.0.1", servers_[1 - controllerIndex]->port()}});
    auto listed = admin.listGroups({group});
    ASSERT_TRUE(listed.ok()) << listed.status.toString();
    ASSERT_EQ(listed.value.size(), 1u);
    EXPECT_EQ(listed.value[0].protocolType, "consumer");
    EXPECT_EQ(listed.value[0].protocolName, "uniform, consumer protocol");
    auto described = admin.describeGroup(group);
    ASSERT_TRUE(described.ok()) << described.status.toString();
    EXPECT_TRUE(described.value.kafka);
    EXPECT_EQ(described.value.protocolName, "uniform, consumer protocol");
    EXPECT_EQ(described.value.generation, b.epoch);
    EXPECT_EQ(described.value.mode, protocol::AssignmentMode::SERVER) << "the server assigns";
    EXPECT_EQ(described.value.sessionTimeoutMs, kSessionMs) << "the group's session, as the server was started";
    ASSERT_EQ(described.value.topics.size(), 1u) << "the members' subscription";
    EXPECT_EQ(described.value.topics[0].topic, "work");
    EXPECT_EQ(described.value.topics[0].partitions, 4);
    ASSERT_EQ(described.value.members.size(), 2u);
    for (const auto& m : described.value.members) {
      EXPECT_EQ(m.held.size(), 2u) << m.consumerId;
      EXPECT_TRUE(m.waiting.empty()) << m.consumerId;
      EXPECT_GT(m.lastHeardMs, 0) << m.consumerId;
      EXPECT_GT(m.joinedAtMs, 0) << m.consumerId;
      EXPECT_NE(m.port, 0) << m.consumerId << ": its source port";
    }
  }

  // Offsets fenced by the member's epoch; a classic join is refused.
  auto commitAt = [&](KafkaWire& c, const std::string& member, int32_t epoch, int64_t offset) {
    k::OffsetCommitRequest r;
    r.groupId = group;
    r.memberId = member;
    r.generationId = epoch;
    r.topics.push_back({"work", {{*a.owned.begin(), offset, -1, -1, std::string()}}});
    auto x = c.call<k::OffsetCommitResponse>(r, 9);
    return x && x->topics.size() == 1 ? x->topics[0].partitions[0].error : k::ErrorCode::UNKNOWN_SERVER_ERROR;
  };
  EXPECT_EQ(commitAt(ca, a.id, a.epoch, 42), k::ErrorCode::NONE);
  EXPECT_EQ(commitAt(ca, a.id, a.epoch + 7, 43), k::ErrorCode::STALE_MEMBER_EPOCH);
  EXPECT_EQ(commitAt(ca, "nobody", a.epoch, 43), k::ErrorCode::UNKNOWN_MEMBER_ID);
  EXPECT_EQ(commitAt(ca, "", -1, 43), k::ErrorCode::UNKNOWN_MEMBER_ID) << "a standalone commit to a live group";
  {
    KafkaWire classic(controllerPort);
    auto j = classic.call<k::JoinGroupResponse>(joinRequest(group, "x"), 5);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->error, k::ErrorCode::INCONSISTENT_GROUP_PROTOCOL) << "one protocol per group";
  }

  // The controller dies; the other server takes the group over and both
  // members go on at their epochs with what they own: nothing reassigned.
  servers_[controllerIndex]->kill9();
  KafkaWire na(otherPort), nb(otherPort);
  const auto deadline = Clock::now() + designBound(std::chrono::milliseconds(2 * kZkSessionMs + 3000));
  k::ErrorCode last = k::ErrorCode::UNKNOWN_SERVER_ERROR;
  const std::set<int32_t> ownedA = a.owned, ownedB = b.owned;
  while (Clock::now() < deadline) {
    ra = beat(na, a, true);
    ASSERT_TRUE(ra);
    last = ra->error;
    if (last == k::ErrorCode::NONE) break;
    EXPECT_TRUE(last == k::ErrorCode::NOT_COORDINATOR || last == k::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
        << "while the group moves: " << k::errorName(last);
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(last, k::ErrorCode::NONE) << "the new controller knows the member and its epoch";
  EXPECT_EQ(ra->memberEpoch, a.epoch);
  EXPECT_EQ(partitionsIn(ra->assignment), ownedA) << "a full heartbeat is answered with the same assignment";
  rb = beat(nb, b, true);
  ASSERT_TRUE(rb && rb->error == k::ErrorCode::NONE);
  EXPECT_EQ(rb->memberEpoch, b.epoch);
  EXPECT_EQ(partitionsIn(rb->assignment), ownedB);

  // A leaves (epoch -1): its partitions go to the other at once.
  a.epoch = -1;
  ra = beat(na, a, false);
  ASSERT_TRUE(ra);
  EXPECT_EQ(ra->error, k::ErrorCode::NONE);
  EXPECT_EQ(ra->memberEpoch, -1);
  rb = beat(nb, b, false);
  ASSERT_TRUE(rb && rb->error == k::ErrorCode::NONE);
  EXPECT_EQ(partitionsIn(rb->assignment), (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_GT(rb->memberEpoch, b.epoch);
}

// A group's own settings (`groupctl config`, <root>/config/groups/<group>)
// over the server's options: read when its controller loads it, and a
// change applied at once, with nothing moved.
TEST_F(KafkaPortTest, AConsumerProtocolGroupTakesItsOwnSessionAndIntervalAtOnce) {
  startServer(1);
  const std::string group = "kip848-own-settings";
  const layout::Layout l(root_);
  ASSERT_EQ(zk_->ensurePathSync(l.groupConfigsPath()), zk::Error::Ok);
  layout::GroupConfig own;
  own.consumerHeartbeatIntervalMs = 2500;
  ASSERT_EQ(zk_->createSync(l.groupConfigPath(group), layout::encodeGroupConfig(own), zk::CreateMode::Persistent).error,
            zk::Error::Ok);
  auto topic = zk_->getSync(topicsPath_ + "/work");
  ASSERT_EQ(topic.error, zk::Error::Ok);
  protocol::Uuid workId;
  workId.bytes = layout::topicIdOf("work", topic.data);
  KafkaWire c(kafkaPorts_[0]);
  ASSERT_TRUE(c.connected());
  ConsumerMember a{"own-settings-member", 0, {}};
  std::optional<k::ConsumerGroupHeartbeatResponse> r;
  const auto loadDeadline = Clock::now() + designBound(std::chrono::milliseconds(kZkSessionMs));
  while (Clock::now() < loadDeadline) {
    r = consumerBeat(c, group, workId, a, true);
    ASSERT_TRUE(r) << c.lastError();
    if (r->error != k::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(r->error, k::ErrorCode::NONE) << r->errorMessage.value_or("");
  EXPECT_EQ(r->heartbeatIntervalMs, 2500) << "the group's own interval, not the server's 1000";
  const int32_t epoch = r->memberEpoch;
  a.epoch = epoch;
  a.owned = partitionsIn(r->assignment);
  EXPECT_EQ(a.owned, (std::set<int32_t>{0, 1, 2, 3}));

  // Changed while the member is in the group: its next answers tell the new
  // interval, and describe the new session; nothing moves.
  own.consumerHeartbeatIntervalMs = 700;
  own.consumerSessionTimeoutMs = 9000;
  ASSERT_EQ(zk_->setSync(l.groupConfigPath(group), layout::encodeGroupConfig(own)).error, zk::Error::Ok);
  eventuallyWithin(designBound(followerLag()), [&] {
    r = consumerBeat(c, group, workId, a, false);
    return r && r->error == k::ErrorCode::NONE && r->heartbeatIntervalMs == 700;
  });
  ASSERT_TRUE(r && r->error == k::ErrorCode::NONE);
  EXPECT_EQ(r->heartbeatIntervalMs, 700);
  EXPECT_EQ(r->memberEpoch, epoch) << "a setting moves no epoch";
  {
    client::Admin admin({{"127.0.0.1", servers_[0]->port()}});
    auto described = admin.describeGroup(group);
    ASSERT_TRUE(described.ok()) << described.status.toString();
    EXPECT_EQ(described.value.sessionTimeoutMs, 9000) << "the group's own session";
    EXPECT_EQ(described.value.generation, epoch);
  }

  // An interval over half the session is brought to half of it; removed,
  // the server's options apply again.
  own.consumerHeartbeatIntervalMs = 8000;
  ASSERT_EQ(zk_->setSync(l.groupConfigPath(group), layout::encodeGroupConfig(own)).error, zk::Error::Ok);
  eventuallyWithin(designBound(followerLag()), [&] {
    r = consumerBeat(c, group, workId, a, false);
    return r && r->error == k::ErrorCode::NONE && r->heartbeatIntervalMs == 4500;
  });
  EXPECT_EQ(r->heartbeatIntervalMs, 4500);
  ASSERT_EQ(zk_->removeSync(l.groupConfigPath(group)), zk::Error::Ok);
  eventuallyWithin(designBound(followerLag()), [&] {
    r = consumerBeat(c, group, workId, a, false);
    return r && r->error == k::ErrorCode::NONE && r->heartbeatIntervalMs == 1000;
  });
  EXPECT_EQ(r->heartbeatIntervalMs, 1000) << "the server's interval again";
  // Made again (the controller watched for its creation), then made
  // unreadable: the server's options apply to what cannot be read.
  own = {};
  own.consumerHeartbeatIntervalMs = 2500;
  ASSERT_EQ(zk_->createSync(l.groupConfigPath(group), layout::encodeGroupConfig(own), zk::CreateMode::Persistent).error,
            zk::Error::Ok);
  eventuallyWithin(designBound(followerLag()), [&] {
    r = consumerBeat(c, group, workId, a, false);
    return r && r->error == k::ErrorCode::NONE && r->heartbeatIntervalMs == 2500;
  });
  EXPECT_EQ(r->heartbeatIntervalMs, 2500) << "a setting made after the group was loaded";
  ASSERT_EQ(zk_->setSync(l.groupConfigPath(group), "{\"consumer.heartbeat.interval.ms\":\"soon\"}").error,
            zk::Error::Ok);
  eventuallyWithin(designBound(followerLag()), [&] {
    r = consumerBeat(c, group, workId, a, false);
    return r && r->error == k::ErrorCode::NONE && r->heartbeatIntervalMs == 1000;
  });
  EXPECT_EQ(r->heartbeatIntervalMs, 1000);
  EXPECT_EQ(r->memberEpoch, epoch) << "nothing moved through all of it";
}

TEST_F(KafkaPortTest, RequestsThePortCannotAnswerCloseTheConnection) {
  startServer(1);
  // ApiVersions above the served maximum: the served list at version 0.
  {
    KafkaWire c(kafkaPorts_[0]);
    k::RequestHeader h;
    h.apiKey = static_cast<int16_t>(k::ApiKey::ApiVersions);
    h.apiVersion = 3;
    h.correlationId = 9;
    h.clientId = "x";
    std::vector<uint8_t> frame;
    k::encodeRequest(h, k::Request(k::ApiVersionsRequest{}), frame);
    ASSERT_TRUE(c.sendBytes(frame));
    auto body = c.readFrame();
    ASSERT_TRUE(body);
    auto d = k::decodeResponse(k::ApiKey::ApiVersions, 0, *body);
    ASSERT_TRUE(d.ok) << d.detail;
    const auto& v = std::get<k::ApiVersionsResponse>(d.response);
    EXPECT_EQ(v.error, k::ErrorCode::UNSUPPORTED_VERSION);
    EXPECT_FALSE(v.apiKeys.empty());
  }
  // An API the port does not serve (Produce, key 0): nothing is answered
  // and the connection closes, after what came before it is answered.
  {
    KafkaWire c(kafkaPorts_[0]);
    auto before = c.call<k::ApiVersionsResponse>(k::ApiVersionsRequest{}, 2);
    ASSERT_TRUE(before);
    std::vector<uint8_t> produce = {0, 0, 0, 10, 0, 0, 0, 3, 0, 0, 0, 1, 0xff, 0xff};
    std::vector<uint8_t> ahead;
    k::RequestHeader h;
    h.apiKey = static_cast<int16_t>(k::ApiKey::ApiVersions);
    h.apiVersion = 0;
    h.correlationId = 77;
    k::encodeRequest(h, k::Request(k::ApiVersionsRequest{}), ahead);
    ahead.insert(ahead.end(), produce.begin(), produce.end());
    ASSERT_TRUE(c.sendBytes(ahead));
    auto answered = c.readFrame();
    ASSERT_TRUE(answered) << "the request before the refused one is answered";
    EXPECT_FALSE(c.readFrame()) << "then the connection closes";
  }
  // A malformed body of a served API closes the connection too.
  {
    KafkaWire c(kafkaPorts_[0]);
    std::vector<uint8_t> bad = {0, 0, 0, 12, 0, 12, 0, 3, 0, 0, 0, 1, 0, 0, 0, 5};  // Heartbeat v3, truncated
    ASSERT_TRUE(c.sendBytes(bad));
    EXPECT_FALSE(c.readFrame());
  }
  // /metrics: the answers by API and error, the refusals by reason. The
  // connections are closed, so every answer above has been counted.
  const auto m = scrape(0);
  EXPECT_EQ(seriesValue(m, "groupcoord_kafka_requests_total{api=\"ApiVersions\"}"), 3.0);
  EXPECT_EQ(seriesValue(m, "groupcoord_kafka_request_errors_total{api=\"ApiVersions\",error=\"UNSUPPORTED_VERSION\"}"),
            1.0);
  EXPECT_EQ(seriesValue(m, "groupcoord_kafka_requests_refused_total{reason=\"unknown_api\"}"), 1.0);
  EXPECT_EQ(seriesValue(m, "groupcoord_kafka_requests_refused_total{reason=\"malformed\"}"), 1.0);
  EXPECT_EQ(seriesValue(m, "groupcoord_kafka_requests_refused_total{reason=\"unsupported_version\"}"), 0.0);
  EXPECT_EQ(seriesValue(m, "groupcoord_kafka_requests_refused_total{reason=\"before_sasl\"}"), 0.0);
  EXPECT_EQ(seriesValue(m, "groupcoord_kafka_requests_total{api=\"Heartbeat\"}"), 0.0) << "the malformed one is not an answer";
}

}  // namespace
}  // namespace groupcoord::testing
