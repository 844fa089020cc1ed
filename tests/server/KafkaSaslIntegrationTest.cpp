// SASL on the Kafka port against the live ensemble (docs/protocol.md,
// "Security on the Kafka port"): a groupcoordd with a credentials file, a
// permissions file of two teams and a Kafka port, spoken to over raw
// sockets with the Kafka codec. What is answered before SASL and what closes
// the connection; SCRAM-SHA-256 and PLAIN with the handshake's two versions
// (SaslAuthenticate frames, and bare tokens after version 0); a wrong secret;
// PLAIN as auth.plain allows; team A's user on team B's group.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/Connection.h"
#include "common/Layout.h"
#include "common/Scram.h"
#include "protocol/Codec.h"
#include "protocol/kafka/Codec.h"
#include "server/Auth.h"
#include "support/KafkaWire.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/TestSession.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
namespace k = protocol::kafka;
using k::ErrorCode;

constexpr std::chrono::milliseconds kZkSessionTimeout{10000};
// A Kafka group answers its first join after the initial rebalance delay,
// set to 0 here; a call that needs ZooKeeper within its session.
std::chrono::milliseconds answerWait() { return designBound(kZkSessionTimeout + 3000ms); }

const std::string kRules =
    "allow user:a-svc join,commit,fetch,describe,create prefix:team-a.\n"
    "allow user:b-svc join,commit,fetch,describe,create,delete prefix:team-b.\n"
    "allow user:a-svc join,commit,fetch,describe prefix:shared.\n"
    "allow user:b-svc join,commit,fetch,describe,create prefix:shared.\n"
    "allow role:admin all group:*\n";

std::string text(const std::vector<uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }

class KafkaSaslTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    char tmpl[] = "/tmp/groupcoord-kafka-sasl-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    root_ = "/" + uniqueName("kafka-sasl");
    topicsPath_ = root_ + "-topics";
    zk_ = openTestSession();
    ASSERT_NE(zk_, nullptr);
    ASSERT_EQ(zk_->ensurePathSync(topicsPath_), zk::Error::Ok);
    ASSERT_EQ(zk_->createSync(topicsPath_ + "/alpha", layout::encodeTopic(2), zk::CreateMode::Persistent).error,
              zk::Error::Ok);
    std::string error, lines;
    for (const char* user : {"a-svc", "b-svc"}) {
      const std::string l = server::makeCredentialLine(user, server::Role::Member, secretOf(user), 10000, &error);
      ASSERT_FALSE(l.empty()) << error;
      lines += l + "\n";
    }
    write(dir_ + "/credentials", lines);
    write(dir_ + "/permissions", kRules);
  }

  void TearDown() override {
    std::error_code ignored;
    if (dir_.rfind("/tmp/groupcoord-kafka-sasl-", 0) == 0) std::filesystem::remove_all(dir_, ignored);
  }

  static std::string secretOf(const std::string& user) { return user + "-secret"; }
  static void write(const std::string& path, const std::string& content) {
    std::ofstream out(path, std::ios::trunc);
    out << content;
  }

  // A server with authentication, the two teams' rules and a Kafka port.
  std::unique_ptr<ServerProcess> startServer(const std::string& plain = "allow") {
    auto s = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_,
        "--zk-session-timeout-ms=" + std::to_string(kZkSessionTimeout.count()), "--io-threads=2",
        "--auth-credentials-file=" + dir_ + "/credentials", "--auth-permissions-file=" + dir_ + "/permissions",
        "--auth-plain=" + plain, "--kafka-listen-port=0", "--kafka-port-file=" + dir_ + "/kafka-port",
        "--kafka-group-initial-rebalance-delay-ms=0"});
    EXPECT_TRUE(s->start());
    return s;
  }
  uint16_t kafkaPort() const {
    std::ifstream in(dir_ + "/kafka-port");
    int port = 0;
    in >> port;
    return static_cast<uint16_t>(port);
  }

  // SCRAM-SHA-256 with handshake version 1 and SaslAuthenticate frames;
  // the last SaslAuthenticate answer.
  static std::optional<k::SaslAuthenticateResponse> scram(KafkaWire& w, const std::string& user,
                                                          const std::string& secret) {
    auto hs = w.call<k::SaslHandshakeResponse>(k::SaslHandshakeRequest{"SCRAM-SHA-256"}, 1, answerWait());
    if (!hs || hs->error != ErrorCode::NONE) return std::nullopt;
    scram::ClientExchange client(user, secret);
    auto first = w.call<k::SaslAuthenticateResponse>(k::SaslAuthenticateRequest{client.first()}, 1, answerWait());
    if (!first || first->error != ErrorCode::NONE) return first;
    std::string error;
    auto final = client.final(first->authBytes, &error);
    if (!final) return std::nullopt;
    auto last = w.call<k::SaslAuthenticateResponse>(k::SaslAuthenticateRequest{*final}, 1, answerWait());
    if (last && last->error == ErrorCode::NONE && !client.verifyServer(last->authBytes, &error)) return std::nullopt;
    return last;
  }

  // A connection authenticated as `user` by SCRAM-SHA-256.
  std::unique_ptr<KafkaWire> as(const std::string& user) {
    auto w = std::make_unique<KafkaWire>(kafkaPort());
    EXPECT_TRUE(w->connected());
    auto done = scram(*w, user, secretOf(user));
    EXPECT_TRUE(done.has_value() && done->error == ErrorCode::NONE);
    return w;
  }

  static std::optional<k::FindCoordinatorResponse> findCoordinator(KafkaWire& w, const std::string& group) {
    return w.call<k::FindCoordinatorResponse>(k::FindCoordinatorRequest{group, 0}, 1, answerWait());
  }
  static std::optional<k::JoinGroupResponse> join(KafkaWire& w, const std::string& group) {
    k::JoinGroupRequest r;
    r.groupId = group;
    r.sessionTimeoutMs = 10000;
    r.rebalanceTimeoutMs = 10000;
    r.protocolType = "consumer";
    r.protocols = {{"range", std::string("\0\0\0\0\0\0\0\0\0\0", 10)}};
    // While the new group's state is read the answer is
    // COORDINATOR_LOAD_IN_PROGRESS, and a client asks again.
    const auto end = std::chrono::steady_clock::now() + answerWait();
    for (;;) {
      auto answer = w.call<k::JoinGroupResponse>(r, 2, answerWait());
      if (!answer || answer->error != ErrorCode::COORDINATOR_LOAD_IN_PROGRESS ||
          std::chrono::steady_clock::now() > end) {
        return answer;
      }
      std::this_thread::sleep_for(50ms);
    }
  }

  std::string root_;
  std::string topicsPath_;
  std::string dir_;
  std::unique_ptr<zk::Session> zk_;
};

TEST_F(KafkaSaslTest, BeforeSaslOnlyApiVersionsAndSaslAreAnsweredAndMetadataClosesTheConnection) {
  auto server = startServer();
  KafkaWire w(kafkaPort());
  ASSERT_TRUE(w.connected());
  auto versions = w.call<k::ApiVersionsResponse>(k::ApiVersionsRequest{}, 0, answerWait());
  ASSERT_TRUE(versions.has_value()) << server->log();
  EXPECT_EQ(versions->error, ErrorCode::NONE);
  auto hs = w.call<k::SaslHandshakeResponse>(k::SaslHandshakeRequest{"SCRAM-SHA-256"}, 1, answerWait());
  ASSERT_TRUE(hs.has_value());
  EXPECT_EQ(hs->error, ErrorCode::NONE);
  EXPECT_NE(std::find(hs->mechanisms.begin(), hs->mechanisms.end(), "SCRAM-SHA-256"), hs->mechanisms.end());

  // Metadata before SASL has completed: no answer, the connection closed.
  ASSERT_TRUE(w.send(k::MetadataRequest{}, 1));
  EXPECT_TRUE(w.closedByServer(answerWait()));
  EXPECT_NE(server->log().find("Metadata before SASL authentication"), std::string::npos) << server->log();

  // A group call first thing: the same.
  KafkaWire second(kafkaPort());
  ASSERT_TRUE(second.send(k::FindCoordinatorRequest{"team-a.orders", 0}, 1));
  EXPECT_TRUE(second.closedByServer(answerWait()));

  // A heartbeat first thing (the port answers heartbeats inline): the same.
  KafkaWire third(kafkaPort());
  k::HeartbeatRequest beat;
  beat.groupId = "team-a.orders";
  beat.generationId = 1;
  beat.memberId = "m";
  ASSERT_TRUE(third.send(beat, 3));
  EXPECT_TRUE(third.closedByServer(answerWait()));
}

TEST_F(KafkaSaslTest, ScramSha256ThenFindCoordinatorAndJoinGroupWork) {
  auto server = startServer();
  auto w = as("a-svc");
  auto found = findCoordinator(*w, "team-a.orders");
  ASSERT_TRUE(found.has_value()) << server->log();
  EXPECT_EQ(found->error, ErrorCode::NONE) << found->errorMessage.value_or("");
  EXPECT_EQ(found->port, static_cast<int32_t>(kafkaPort()));
  auto joined = join(*w, "team-a.orders");
  ASSERT_TRUE(joined.has_value()) << server->log();
  EXPECT_EQ(joined->error, ErrorCode::NONE);
  EXPECT_FALSE(joined->memberId.empty());
  EXPECT_EQ(joined->leader, joined->memberId);
  // Metadata, which names no group, is answered too.
  auto metadata = w->call<k::MetadataResponse>(k::MetadataRequest{}, 1, answerWait());
  EXPECT_TRUE(metadata.has_value());
}

TEST_F(KafkaSaslTest, BareTokensAfterHandshakeVersion0ServeScramAndPlain) {
  auto server = startServer();
  {
    // kafka-python 2.0.2: handshake version 0, then the SCRAM messages as bare frames.
    KafkaWire w(kafkaPort());
    auto hs = w.call<k::SaslHandshakeResponse>(k::SaslHandshakeRequest{"SCRAM-SHA-256"}, 0, answerWait());
    ASSERT_TRUE(hs.has_value()) << server->log();
    ASSERT_EQ(hs->error, ErrorCode::NONE);
    scram::ClientExchange client("b-svc", secretOf("b-svc"));
    ASSERT_TRUE(w.sendBare(client.first()));
    auto serverFirst = w.readFrame(answerWait());
    ASSERT_TRUE(serverFirst.has_value()) << server->log();
    std::string error;
    auto final = client.final(text(*serverFirst), &error);
    ASSERT_TRUE(final.has_value()) << error;
    ASSERT_TRUE(w.sendBare(*final));
    auto serverFinal = w.readFrame(answerWait());
    ASSERT_TRUE(serverFinal.has_value()) << server->log();
    EXPECT_TRUE(client.verifyServer(text(*serverFinal), &error)) << error;
    auto found = findCoordinator(w, "team-b.bare");
    ASSERT_TRUE(found.has_value()) << server->log();
    EXPECT_EQ(found->error, ErrorCode::NONE);
  }
  {
    // PLAIN the same way: an empty frame says yes.
    KafkaWire w(kafkaPort());
    auto hs = w.call<k::SaslHandshakeResponse>(k::SaslHandshakeRequest{"PLAIN"}, 0, answerWait());
    ASSERT_TRUE(hs.has_value());
    ASSERT_EQ(hs->error, ErrorCode::NONE);
    ASSERT_TRUE(w.sendBare(std::string("b-svc\0b-svc\0", 12) + secretOf("b-svc")));
    auto yes = w.readFrame(answerWait());
    ASSERT_TRUE(yes.has_value()) << server->log();
    EXPECT_TRUE(yes->empty());
    auto found = findCoordinator(w, "team-b.bare");
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->error, ErrorCode::NONE);
  }
  {
    // A wrong PLAIN secret as a bare token: the connection closes, no answer.
    KafkaWire w(kafkaPort());
    auto hs = w.call<k::SaslHandshakeResponse>(k::SaslHandshakeRequest{"PLAIN"}, 0, answerWait());
    ASSERT_TRUE(hs.has_value());
    ASSERT_TRUE(w.sendBare(std::string("b-svc\0b-svc\0", 12) + "not-the-secret"));
    EXPECT_FALSE(w.readFrame(answerWait()).has_value());
  }
}

TEST_F(KafkaSaslTest, AWrongSecretIsAnsweredSaslAuthenticationFailedAndTheConnectionCloses) {
  auto server = startServer();
  {
    KafkaWire w(kafkaPort());
    auto refused = scram(w, "a-svc", "not-the-secret");
    ASSERT_TRUE(refused.has_value()) << server->log();
    EXPECT_EQ(refused->error, ErrorCode::SASL_AUTHENTICATION_FAILED);
    EXPECT_NE(refused->errorMessage.value_or("").find("SCRAM-SHA-256"), std::string::npos);
    EXPECT_TRUE(w.closedByServer(answerWait()));
  }
  {
    // An unknown user: the same answer (the exchange does not tell who exists).
    KafkaWire w(kafkaPort());
    auto refused = scram(w, "nobody", "x");
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(refused->error, ErrorCode::SASL_AUTHENTICATION_FAILED);
    EXPECT_TRUE(w.closedByServer(answerWait()));
  }
  {
    // PLAIN with SaslAuthenticate frames.
    KafkaWire w(kafkaPort());
    auto hs = w.call<k::SaslHandshakeResponse>(k::SaslHandshakeRequest{"PLAIN"}, 1, answerWait());
    ASSERT_TRUE(hs.has_value());
    auto refused = w.call<k::SaslAuthenticateResponse>(
        k::SaslAuthenticateRequest{std::string("\0a-svc\0", 7) + "wrong"}, 1, answerWait());
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(refused->error, ErrorCode::SASL_AUTHENTICATION_FAILED);
    EXPECT_TRUE(w.closedByServer(answerWait()));
  }
}

TEST_F(KafkaSaslTest, PlainIsOfferedAsAuthPlainAllows) {
  {
    auto server = startServer("allow");
    KafkaWire w(kafkaPort());
    auto hs = w.call<k::SaslHandshakeResponse>(k::SaslHandshakeRequest{"PLAIN"}, 1, answerWait());
    ASSERT_TRUE(hs.has_value()) << server->log();
    EXPECT_EQ(hs->error, ErrorCode::NONE);
    EXPECT_EQ(hs->mechanisms, (std::vector<std::string>{"SCRAM-SHA-256", "PLAIN"}));
    auto ok = w.call<k::SaslAuthenticateResponse>(
        k::SaslAuthenticateRequest{std::string("\0a-svc\0", 7) + secretOf("a-svc")}, 1, answerWait());
    ASSERT_TRUE(ok.has_value()) << server->log();
    EXPECT_EQ(ok->error, ErrorCode::NONE);
    auto found = findCoordinator(w, "team-a.plain");
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->error, ErrorCode::NONE);
    EXPECT_EQ(server->terminate(), 0);
  }
  {
    auto server = startServer("never");
    KafkaWire w(kafkaPort());
    auto hs = w.call<k::SaslHandshakeResponse>(k::SaslHandshakeRequest{"PLAIN"}, 1, answerWait());
    ASSERT_TRUE(hs.has_value()) << server->log();
    EXPECT_EQ(hs->error, ErrorCode::UNSUPPORTED_SASL_MECHANISM);
    EXPECT_EQ(hs->mechanisms, (std::vector<std::string>{"SCRAM-SHA-256"}));
    // SCRAM-SHA-256 still is, on the same connection.
    auto done = scram(w, "a-svc", secretOf("a-svc"));
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->error, ErrorCode::NONE);
  }
}

// JoinGroup and OffsetCommit make a missing group, so they take CreateGroup's
// permission besides their own, as FindCoordinator does: a user who may
// join and commit but not create makes nothing through any of them.
TEST_F(KafkaSaslTest, AUserWhoMayNotCreateMakesNoGroupByJoiningOrCommitting) {
  auto server = startServer();
  const std::string g = "shared.jobs";
  const layout::Layout l(root_);
  constexpr auto kRefused = ErrorCode::GROUP_AUTHORIZATION_FAILED;
  auto a = as("a-svc");
  auto found = findCoordinator(*a, g);
  ASSERT_TRUE(found.has_value()) << server->log();
  EXPECT_EQ(found->error, kRefused);
  auto joined = join(*a, g);
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(joined->error, kRefused);
  k::OffsetCommitRequest commit;
  commit.groupId = g;
  commit.generationId = -1;
  commit.topics = {{"alpha", {{0, 42, -1, -1, std::string()}}}};
  auto committed = a->call<k::OffsetCommitResponse>(commit, 2, answerWait());
  ASSERT_TRUE(committed.has_value());
  ASSERT_EQ(committed->topics.size(), 1u);
  ASSERT_EQ(committed->topics[0].partitions.size(), 1u);
  EXPECT_EQ(committed->topics[0].partitions[0].error, kRefused);
  EXPECT_EQ(zk_->getSync(l.groupPath(g)).error, zk::Error::NoNode) << "nothing was made";
  // The user who may create makes it by its join.
  auto b = as("b-svc");
  auto made = join(*b, g);
  ASSERT_TRUE(made.has_value());
  EXPECT_EQ(made->error, ErrorCode::NONE) << k::errorName(made->error);
  EXPECT_EQ(zk_->getSync(l.groupPath(g)).error, zk::Error::Ok);
}

TEST_F(KafkaSaslTest, TeamAsUserGetsGroupAuthorizationFailedOnTeamBsGroup) {
  auto server = startServer();
  const std::string g = "team-b.orders";
  // Team B makes its group and commits to it.
  auto b = as("b-svc");
  auto found = findCoordinator(*b, g);
  ASSERT_TRUE(found.has_value()) << server->log();
  ASSERT_EQ(found->error, ErrorCode::NONE);
  auto joined = join(*b, g);
  ASSERT_TRUE(joined.has_value());
  ASSERT_EQ(joined->error, ErrorCode::NONE);

  auto a = as("a-svc");
  constexpr auto kRefused = ErrorCode::GROUP_AUTHORIZATION_FAILED;
  auto refusedFind = findCoordinator(*a, g);
  ASSERT_TRUE(refusedFind.has_value());
  EXPECT_EQ(refusedFind->error, kRefused);
  auto refusedJoin = join(*a, g);
  ASSERT_TRUE(refusedJoin.has_value());
  EXPECT_EQ(refusedJoin->error, kRefused);

  // Heartbeats, answered inline for whom the gate allows: team B's member
  // is answered, team A's user with the same member id is refused.
  k::HeartbeatRequest beat;
  beat.groupId = g;
  beat.generationId = joined->generationId;
  beat.memberId = joined->memberId;
  auto ownBeat = b->call<k::HeartbeatResponse>(beat, 3, answerWait());
  ASSERT_TRUE(ownBeat.has_value());
  EXPECT_EQ(ownBeat->error, ErrorCode::NONE);
  auto refusedBeat = a->call<k::HeartbeatResponse>(beat, 3, answerWait());
  ASSERT_TRUE(refusedBeat.has_value());
  EXPECT_EQ(refusedBeat->error, kRefused);

  k::OffsetCommitRequest commit;
  commit.groupId = g;
  commit.generationId = joined->generationId;
  commit.memberId = joined->memberId;
  commit.topics = {{"alpha", {{0, 42, -1, -1, std::string()}}}};
  auto refusedCommit = a->call<k::OffsetCommitResponse>(commit, 2, answerWait());
  ASSERT_TRUE(refusedCommit.has_value());
  ASSERT_EQ(refusedCommit->topics.size(), 1u);
  ASSERT_EQ(refusedCommit->topics[0].partitions.size(), 1u);
  EXPECT_EQ(refusedCommit->topics[0].partitions[0].error, kRefused);

  k::OffsetFetchRequest fetch;
  fetch.groupId = g;
  fetch.topics = std::vector<k::OffsetFetchRequest::Topic>{{"alpha", {0, 1}}};
  auto refusedFetch = a->call<k::OffsetFetchResponse>(fetch, 3, answerWait());
  ASSERT_TRUE(refusedFetch.has_value());
  EXPECT_EQ(refusedFetch->error, kRefused);
  ASSERT_EQ(refusedFetch->topics.size(), 1u);
  for (const auto& p : refusedFetch->topics[0].partitions) EXPECT_EQ(p.error, kRefused);

  // Several groups in one request: each decided on its own, in order.
  auto described = a->call<k::DescribeGroupsResponse>(k::DescribeGroupsRequest{{"team-a.x", g}, false}, 1,
                                                      answerWait());
  ASSERT_TRUE(described.has_value());
  ASSERT_EQ(described->groups.size(), 2u);
  EXPECT_EQ(described->groups[0].groupId, "team-a.x");
  EXPECT_NE(described->groups[0].error, kRefused);
  EXPECT_EQ(described->groups[1].groupId, g);
  EXPECT_EQ(described->groups[1].error, kRefused);
  EXPECT_TRUE(described->groups[1].members.empty());

  // KIP-848's: the heartbeat judged as JoinGroup, the describe per group
  // (the groups allowed get the handler's answer, GROUP_ID_NOT_FOUND for now).
  k::ConsumerGroupHeartbeatRequest heartbeat;
  heartbeat.groupId = g;
  heartbeat.memberId = "m-1";
  auto refusedHeartbeat = a->call<k::ConsumerGroupHeartbeatResponse>(heartbeat, 1, answerWait());
  ASSERT_TRUE(refusedHeartbeat.has_value());
  EXPECT_EQ(refusedHeartbeat->error, kRefused);
  auto consumerDescribed = a->call<k::ConsumerGroupDescribeResponse>(
      k::ConsumerGroupDescribeRequest{{"team-a.x", g}, false}, 0, answerWait());
  ASSERT_TRUE(consumerDescribed.has_value());
  ASSERT_EQ(consumerDescribed->groups.size(), 2u);
  EXPECT_EQ(consumerDescribed->groups[0].groupId, "team-a.x");
  EXPECT_EQ(consumerDescribed->groups[0].error, ErrorCode::GROUP_ID_NOT_FOUND);
  EXPECT_EQ(consumerDescribed->groups[1].groupId, g);
  EXPECT_EQ(consumerDescribed->groups[1].error, kRefused);

  auto deleted = a->call<k::DeleteGroupsResponse>(k::DeleteGroupsRequest{{g}}, 1, answerWait());
  ASSERT_TRUE(deleted.has_value());
  ASSERT_EQ(deleted->results.size(), 1u);
  EXPECT_EQ(deleted->results[0].error, kRefused);

  // ListGroups shows A none of B's groups; B sees its own.
  auto listedByA = a->call<k::ListGroupsResponse>(k::ListGroupsRequest{}, 1, answerWait());
  ASSERT_TRUE(listedByA.has_value());
  for (const auto& l : listedByA->groups) EXPECT_NE(l.groupId, g);
  auto listedByB = b->call<k::ListGroupsResponse>(k::ListGroupsRequest{}, 1, answerWait());
  ASSERT_TRUE(listedByB.has_value());
  EXPECT_TRUE(std::any_of(listedByB->groups.begin(), listedByB->groups.end(),
                          [&](const auto& l) { return l.groupId == g; }));

  // Team B itself may: its describe of the group shows its member.
  auto own = b->call<k::DescribeGroupsResponse>(k::DescribeGroupsRequest{{g}, false}, 1, answerWait());
  ASSERT_TRUE(own.has_value());
  ASSERT_EQ(own->groups.size(), 1u);
  EXPECT_EQ(own->groups[0].error, ErrorCode::NONE);

  // The binary port decides the same for the same user and group.
  client::Connection binary;
  client::SecurityOptions sec;
  sec.user = "a-svc";
  sec.secret = secretOf("a-svc");
  binary.setSecurity(sec);
  ASSERT_TRUE(binary.connect("127.0.0.1", server->port(), answerWait())) << binary.lastError();
  auto viaBinary = binary.call(protocol::DescribeGroupRequest{g}, answerWait());
  ASSERT_TRUE(viaBinary.ok);
  EXPECT_EQ(protocol::responseError(viaBinary.response), protocol::ErrorCode::NOT_AUTHORIZED);
  // The first refusal is logged (later ones within the second are counted).
  EXPECT_NE(server->log().find("refused FindCoordinator of group 'team-b.orders'"), std::string::npos);
}

}  // namespace
}  // namespace groupcoord::testing
