// The Kafka codec (protocol/kafka/Codec.h) against bytes written by hand
// from the field layouts of Kafka's message definitions, for every served
// API and every served version: each request decodes from its bytes and
// encodes back to them, each response encodes to its bytes and decodes
// back. The expected bytes never pass through the codec's writer
// (TestBytes.h). Then malformed input: every status is defined, nothing
// crashes, nothing is allocated by a count the sender chose.

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "AllocationProbe.h"
#include "KafkaSamples.h"
#include "TestBytes.h"
#include "protocol/kafka/Codec.h"

namespace groupcoord::protocol::kafka {
namespace {

using testing::AllocationProbe;
using testing::Bytes;
using testing::bodyOf;
using testing::toHex;

constexpr int32_t kCorrelationId = 0x01020304;
constexpr std::string_view kClientId = "consumer-1";
constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();

// Request header version 1: ApiKey, ApiVersion, CorrelationId, ClientId.
Bytes requestHeader(ApiKey key, int16_t version, int32_t correlationId = kCorrelationId,
                    std::optional<std::string_view> clientId = kClientId) {
  Bytes b;
  b.int16(static_cast<int>(key)).int16(version).int32(correlationId);
  if (clientId) {
    b.str(*clientId);
  } else {
    b.nullStr();
  }
  return b;
}

std::vector<uint8_t> requestFrame(ApiKey key, int16_t version, const Bytes& body) {
  return requestHeader(key, version).raw(body.body()).frame();
}

// Response header version 0: CorrelationId.
std::vector<uint8_t> responseFrame(const Bytes& body) {
  return Bytes().int32(kCorrelationId).raw(body.body()).frame();
}

template <typename T>
void expectRequest(int16_t version, const Bytes& body, const T& expected) {
  SCOPED_TRACE(std::string(T::kName) + " version " + std::to_string(version));
  const std::vector<uint8_t> frame = requestFrame(T::kApiKey, version, body);
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(d.header, (RequestHeader{static_cast<int16_t>(T::kApiKey), version, kCorrelationId,
                                     std::string(kClientId)}));
  ASSERT_TRUE(std::holds_alternative<T>(d.request));
  EXPECT_EQ(std::get<T>(d.request), expected);

  std::vector<uint8_t> encoded;
  encodeRequest(d.header, expected, encoded);
  EXPECT_EQ(toHex(encoded), toHex(frame));
}

template <typename T>
void expectResponse(int16_t version, const Bytes& body, const T& response) {
  SCOPED_TRACE(std::string(T::kName) + " version " + std::to_string(version));
  const std::vector<uint8_t> frame = responseFrame(body);
  std::vector<uint8_t> encoded;
  encodeResponse(kCorrelationId, version, response, encoded);
  EXPECT_EQ(toHex(encoded), toHex(frame));

  const DecodedResponse d = decodeResponse(T::kApiKey, version, bodyOf(frame));
  ASSERT_TRUE(d.ok) << d.detail;
  EXPECT_EQ(d.correlationId, kCorrelationId);
  ASSERT_TRUE(std::holds_alternative<T>(d.response));
  EXPECT_EQ(std::get<T>(d.response), response);
}

// The classic (non-flexible) versions of T: the bytes below are built with
// int16 lengths and int32 counts. Its flexible versions are
// KafkaFlexibleTest.cpp's.
template <typename T>
std::vector<int16_t> versionsOf() {
  std::vector<int16_t> out;
  for (int16_t v = T::kMinVersion; v <= T::kMaxVersion && v < firstFlexibleVersion<T>(); ++v) out.push_back(v);
  return out;
}

// ---- The whole frame, byte by byte ---------------------------------------------

// The helpers themselves against bytes typed out in full, so a wrong shift
// in TestBytes.h cannot hide a wrong shift in the codec.
TEST(KafkaCodec, HeartbeatV3FrameTypedOut) {
  const std::vector<uint8_t> frame{
      0x00, 0x00, 0x00, 0x24,  // Size 36
      0x00, 0x0c,              // ApiKey 12 (Heartbeat)
      0x00, 0x03,              // ApiVersion 3
      0x00, 0x00, 0x00, 0x2a,  // CorrelationId 42
      0x00, 0x03, 'c', '-', '1',                       // ClientId "c-1"
      0x00, 0x02, 'g', '1',                            // GroupId "g1"
      0x00, 0x00, 0x00, 0x07,                          // GenerationId 7
      0x00, 0x03, 'm', '-', '1',                       // MemberId "m-1"
      0x00, 0x04, 'i', 'n', 's', '1',                  // GroupInstanceId "ins1"
  };
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(d.header, (RequestHeader{12, 3, 42, "c-1"}));
  EXPECT_EQ(std::get<HeartbeatRequest>(d.request), (HeartbeatRequest{"g1", 7, "m-1", "ins1"}));

  const std::vector<uint8_t> response{
      0x00, 0x00, 0x00, 0x0a,  // Size 10
      0x00, 0x00, 0x00, 0x2a,  // CorrelationId 42
      0x00, 0x00, 0x00, 0x00,  // ThrottleTimeMs 0
      0x00, 0x1b,              // ErrorCode 27 (REBALANCE_IN_PROGRESS)
  };
  std::vector<uint8_t> encoded;
  encodeResponse(42, 3, HeartbeatResponse{0, ErrorCode::REBALANCE_IN_PROGRESS}, encoded);
  EXPECT_EQ(toHex(encoded), toHex(response));
}

// The port's inline path reads a heartbeat in place and writes its answer
// by hand: the same fields decodeRequest reads, the same bytes
// encodeResponse writes, and nothing else accepted.
TEST(KafkaCodec, PeekHeartbeatReadsWhatDecodeRequestReads) {
  for (int16_t version : versionsOf<HeartbeatRequest>()) {
    for (const std::optional<std::string>& instance : {std::optional<std::string>("i-1"), std::optional<std::string>()}) {
      SCOPED_TRACE("version " + std::to_string(version) + (instance ? " with" : " without") + " an instance id");
      std::vector<uint8_t> frame;
      encodeRequest(RequestHeader{0, version, kCorrelationId, std::nullopt}, HeartbeatRequest{"g1", 3, "m-1", instance},
                    frame);
      const std::span<const uint8_t> body = bodyOf(frame);
      const DecodedRequest d = decodeRequest(body);
      ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
      const auto& expected = std::get<HeartbeatRequest>(d.request);
      HeartbeatView v;
      ASSERT_TRUE(peekHeartbeat(body, v));
      EXPECT_EQ(v.apiVersion, version);
      EXPECT_EQ(v.correlationId, kCorrelationId);
      EXPECT_EQ(v.groupId, expected.groupId);
      EXPECT_EQ(v.generationId, expected.generationId);
      EXPECT_EQ(v.memberId, expected.memberId);
      EXPECT_EQ(v.groupInstanceId.has_value(), expected.groupInstanceId.has_value());
      if (v.groupInstanceId && expected.groupInstanceId) {
        EXPECT_EQ(*v.groupInstanceId, *expected.groupInstanceId);
      }
      for (size_t cut = 0; cut < body.size(); ++cut) {
        EXPECT_FALSE(peekHeartbeat(body.first(cut), v)) << "cut at " << cut;
      }
      std::vector<uint8_t> longer(body.begin(), body.end());
      longer.push_back(0);
      EXPECT_FALSE(peekHeartbeat(longer, v));
    }
    for (ErrorCode e : {ErrorCode::NONE, ErrorCode::REBALANCE_IN_PROGRESS, ErrorCode::UNKNOWN_MEMBER_ID}) {
      std::vector<uint8_t> byHand, byCodec;
      appendHeartbeatResponse(kCorrelationId, version, e, byHand);
      encodeResponse(kCorrelationId, version, HeartbeatResponse{0, e}, byCodec);
      EXPECT_EQ(toHex(byHand), toHex(byCodec)) << "version " << version;
    }
  }
  std::vector<uint8_t> unserved;
  encodeRequest(RequestHeader{0, 4, kCorrelationId, "c"}, HeartbeatRequest{"g1", 3, "m-1", std::nullopt}, unserved);
  HeartbeatView v;
  EXPECT_FALSE(peekHeartbeat(bodyOf(unserved), v));
  for (const Request& q : samples::requestSamples()) {
    if (std::holds_alternative<HeartbeatRequest>(q)) continue;
    std::vector<uint8_t> frame;
    encodeRequest(RequestHeader{0, samples::versionRange(q).second, kCorrelationId, "c"}, q, frame);
    EXPECT_FALSE(peekHeartbeat(bodyOf(frame), v));
  }
}

// ---- Every API, every served version -------------------------------------------

TEST(KafkaCodec, ApiVersions) {
  for (const int16_t v : versionsOf<ApiVersionsRequest>()) {
    expectRequest(v, Bytes(), ApiVersionsRequest{});  // no field in versions 0 to 2

    Bytes body;
    body.int16(0);                     // ErrorCode NONE
    body.count(2);                     // ApiKeys: 2
    body.int16(11).int16(0).int16(5);  //   JoinGroup 0..5
    body.int16(12).int16(0).int16(3);  //   Heartbeat 0..3
    if (v >= 1) body.int32(100);       // ThrottleTimeMs
    ApiVersionsResponse r{ErrorCode::NONE, {{11, 0, 5}, {12, 0, 3}}, v >= 1 ? 100 : 0};
    expectResponse(v, body, r);
  }
}

TEST(KafkaCodec, Metadata) {
  for (const int16_t v : versionsOf<MetadataRequest>()) {
    Bytes body;
    body.count(1).str("orders");    // Topics: ["orders"]
    if (v >= 4) body.boolean(false);  // AllowAutoTopicCreation
    if (v >= 8) body.boolean(true);   // IncludeClusterAuthorizedOperations
    if (v >= 8) body.boolean(false);  // IncludeTopicAuthorizedOperations
    MetadataRequest q;
    q.topics = std::vector<MetadataRequest::Topic>{{"orders"}};
    q.allowAutoTopicCreation = v >= 4 ? false : true;
    q.includeClusterAuthorizedOperations = v >= 8;
    expectRequest(v, body, q);

    Bytes rb;
    if (v >= 3) rb.int32(16);                 // ThrottleTimeMs
    rb.count(1);                              // Brokers: 1
    rb.int32(1).str("gc-1").int32(9092);      //   NodeId, Host, Port
    if (v >= 1) rb.nullStr();                 //   Rack null
    if (v >= 2) rb.str("cl");                 // ClusterId
    if (v >= 1) rb.int32(1);                  // ControllerId
    rb.count(1);                              // Topics: 1
    rb.int16(0).str("orders");                //   ErrorCode, Name
    if (v >= 1) rb.boolean(false);            //   IsInternal
    rb.count(1);                              //   Partitions: 1
    rb.int16(0).int32(0).int32(1);            //     ErrorCode, PartitionIndex, LeaderId
    if (v >= 7) rb.int32(3);                  //     LeaderEpoch
    rb.count(1).int32(1);                     //     ReplicaNodes [1]
    rb.count(1).int32(1);                     //     IsrNodes [1]
    if (v >= 5) rb.count(1).int32(2);         //     OfflineReplicas [2]
    if (v >= 8) rb.int32(kInt32Min);          //   TopicAuthorizedOperations: not asked
    if (v >= 8) rb.int32(0x0f);               // ClusterAuthorizedOperations
    MetadataResponse r;
    r.throttleTimeMs = v >= 3 ? 16 : 0;
    r.brokers = {{1, "gc-1", 9092, std::nullopt}};
    if (v >= 2) r.clusterId = "cl";
    r.controllerId = v >= 1 ? 1 : -1;
    r.topics = {{ErrorCode::NONE, "orders", false,
                 {{ErrorCode::NONE, 0, 1, {1}, {1}, v >= 7 ? 3 : -1, v >= 5 ? std::vector<int32_t>{2}
                                                                        : std::vector<int32_t>{}}}}};
    r.clusterAuthorizedOperations = v >= 8 ? 0x0f : kInt32Min;
    expectResponse(v, rb, r);
  }
}

TEST(KafkaCodec, MetadataNullTopicsMeanEveryTopicFromVersionOne) {
  for (const int16_t v : versionsOf<MetadataRequest>()) {
    if (v == 0) continue;
    Bytes body;
    body.count(-1);                  // Topics: null
    if (v >= 4) body.boolean(true);  // AllowAutoTopicCreation
    if (v >= 8) body.boolean(false).boolean(false);  // Include...AuthorizedOperations
    MetadataRequest q;
    q.topics = std::nullopt;
    expectRequest(v, body, q);
  }
  // Version 0 cannot say null: every topic is an empty list there.
  const auto frame = requestFrame(ApiKey::Metadata, 0, Bytes().count(-1));
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  EXPECT_EQ(d.status, DecodeStatus::Malformed);
  EXPECT_NE(d.detail.find("Topics: null array"), std::string::npos) << d.detail;
  expectRequest(0, Bytes().count(0), MetadataRequest{});
}

TEST(KafkaCodec, FindCoordinator) {
  for (const int16_t v : versionsOf<FindCoordinatorRequest>()) {
    Bytes body;
    body.str("g1");              // Key
    if (v >= 1) body.int8(0);    // KeyType group
    expectRequest(v, body, FindCoordinatorRequest{"g1", 0});

    Bytes rb;
    if (v >= 1) rb.int32(5);                 // ThrottleTimeMs
    rb.int16(0);                             // ErrorCode
    if (v >= 1) rb.nullStr();                // ErrorMessage null
    rb.int32(1).str("gc-1").int32(9092);     // NodeId, Host, Port
    expectResponse(v, rb, FindCoordinatorResponse{v >= 1 ? 5 : 0, ErrorCode::NONE, std::nullopt, 1, "gc-1", 9092});
  }
}

TEST(KafkaCodec, JoinGroup) {
  const std::string metadata("\x00\x01\x00\x00\x00\x01\x00\x06orders", 14);
  for (const int16_t v : versionsOf<JoinGroupRequest>()) {
    Bytes body;
    body.str("g1");                   // GroupId
    body.int32(10000);                // SessionTimeoutMs
    if (v >= 1) body.int32(300000);   // RebalanceTimeoutMs
    body.str("");                     // MemberId: none yet
    if (v >= 5) body.str("i-1");      // GroupInstanceId
    body.str("consumer");             // ProtocolType
    body.count(1);                    // Protocols: 1
    body.str("range").blob(metadata);  //   Name, Metadata
    JoinGroupRequest q;
    q.groupId = "g1";
    q.sessionTimeoutMs = 10000;
    q.rebalanceTimeoutMs = v >= 1 ? 300000 : -1;
    if (v >= 5) q.groupInstanceId = "i-1";
    q.protocolType = "consumer";
    q.protocols = {{"range", metadata}};
    expectRequest(v, body, q);

    Bytes rb;
    if (v >= 2) rb.int32(0);              // ThrottleTimeMs
    rb.int16(79);                         // ErrorCode MEMBER_ID_REQUIRED
    rb.int32(-1);                         // GenerationId
    rb.str("").str("");                   // ProtocolName, Leader
    rb.str("m-1");                        // MemberId
    rb.count(1).str("m-1");               // Members: 1, MemberId
    if (v >= 5) rb.nullStr();             //   GroupInstanceId null
    rb.blob("md");                        //   Metadata
    JoinGroupResponse r;
    r.error = ErrorCode::MEMBER_ID_REQUIRED;
    r.memberId = "m-1";
    r.members = {{"m-1", std::nullopt, "md"}};
    expectResponse(v, rb, r);
  }
}

TEST(KafkaCodec, SyncGroup) {
  for (const int16_t v : versionsOf<SyncGroupRequest>()) {
    Bytes body;
    body.str("g1").int32(3).str("m-1");  // GroupId, GenerationId, MemberId
    if (v >= 3) body.nullStr();          // GroupInstanceId null
    body.count(1).str("m-1").blob("as");  // Assignments: 1, MemberId, Assignment
    expectRequest(v, body, SyncGroupRequest{"g1", 3, "m-1", std::nullopt, {{"m-1", "as"}}});

    Bytes rb;
    if (v >= 1) rb.int32(0);  // ThrottleTimeMs
    rb.int16(0).blob("as");   // ErrorCode, Assignment
    expectResponse(v, rb, SyncGroupResponse{0, ErrorCode::NONE, "as"});
  }
}

TEST(KafkaCodec, Heartbeat) {
  for (const int16_t v : versionsOf<HeartbeatRequest>()) {
    Bytes body;
    body.str("g1").int32(3).str("m-1");  // GroupId, GenerationId, MemberId
    if (v >= 3) body.str("i-1");         // GroupInstanceId
    expectRequest(v, body,
                  HeartbeatRequest{"g1", 3, "m-1", v >= 3 ? std::optional<std::string>("i-1") : std::nullopt});

    Bytes rb;
    if (v >= 1) rb.int32(7);  // ThrottleTimeMs
    rb.int16(27);             // ErrorCode REBALANCE_IN_PROGRESS
    expectResponse(v, rb, HeartbeatResponse{v >= 1 ? 7 : 0, ErrorCode::REBALANCE_IN_PROGRESS});
  }
}

TEST(KafkaCodec, LeaveGroup) {
  for (const int16_t v : versionsOf<LeaveGroupRequest>()) {
    expectRequest(v, Bytes().str("g1").str("m-1"), LeaveGroupRequest{"g1", "m-1"});  // GroupId, MemberId

    Bytes rb;
    if (v >= 1) rb.int32(0);  // ThrottleTimeMs
    rb.int16(25);             // ErrorCode UNKNOWN_MEMBER_ID
    expectResponse(v, rb, LeaveGroupResponse{0, ErrorCode::UNKNOWN_MEMBER_ID});
  }
}

TEST(KafkaCodec, OffsetCommit) {
  for (const int16_t v : versionsOf<OffsetCommitRequest>()) {
    Bytes body;
    body.str("g1");                            // GroupId
    if (v >= 1) body.int32(3).str("m-1");      // GenerationId, MemberId
    if (v >= 7) body.nullStr();                // GroupInstanceId null
    if (v >= 2 && v <= 4) body.int64(86400000);  // RetentionTimeMs
    body.count(1).str("orders");               // Topics: 1, Name
    body.count(2);                             //   Partitions: 2
    body.int32(0).int64(42);                   //     PartitionIndex, CommittedOffset
    if (v >= 6) body.int32(5);                 //     CommittedLeaderEpoch
    if (v == 1) body.int64(1700000000000);     //     CommitTimestamp
    body.str("");                              //     CommittedMetadata ""
    body.int32(1).int64(43);                   //     PartitionIndex, CommittedOffset
    if (v >= 6) body.int32(5);                 //     CommittedLeaderEpoch
    if (v == 1) body.int64(1700000000000);     //     CommitTimestamp
    body.nullStr();                            //     CommittedMetadata null
    OffsetCommitRequest q;
    q.groupId = "g1";
    if (v >= 1) {
      q.generationId = 3;
      q.memberId = "m-1";
    }
    if (v >= 2 && v <= 4) q.retentionTimeMs = 86400000;
    const int32_t epoch = v >= 6 ? 5 : -1;
    const int64_t stamp = v == 1 ? 1700000000000 : -1;
    q.topics = {{"orders", {{0, 42, epoch, stamp, ""}, {1, 43, epoch, stamp, std::nullopt}}}};
    expectRequest(v, body, q);

    Bytes rb;
    if (v >= 3) rb.int32(0);             // ThrottleTimeMs
    rb.count(1).str("orders");           // Topics: 1, Name
    rb.count(2);                         //   Partitions: 2
    rb.int32(0).int16(0);                //     PartitionIndex, ErrorCode NONE
    rb.int32(1).int16(22);               //     PartitionIndex, ErrorCode ILLEGAL_GENERATION
    OffsetCommitResponse r;
    r.topics = {{"orders", {{0, ErrorCode::NONE}, {1, ErrorCode::ILLEGAL_GENERATION}}}};
    expectResponse(v, rb, r);
  }
}

TEST(KafkaCodec, OffsetFetch) {
  for (const int16_t v : versionsOf<OffsetFetchRequest>()) {
    Bytes body;
    body.str("g1");                          // GroupId
    body.count(1).str("orders");             // Topics: 1, Name
    body.count(2).int32(0).int32(1);         //   PartitionIndexes [0, 1]
    OffsetFetchRequest q;
    q.groupId = "g1";
    q.topics = std::vector<OffsetFetchRequest::Topic>{{"orders", {0, 1}}};
    q.groups = {{"g1"}};  // not carried before version 8
    std::vector<uint8_t> encoded;
    encodeRequest(RequestHeader{9, v, kCorrelationId, std::string(kClientId)}, q, encoded);
    EXPECT_EQ(toHex(encoded), toHex(requestFrame(ApiKey::OffsetFetch, v, body)));
    q.groups.clear();
    expectRequest(v, body, q);

    Bytes rb;
    if (v >= 3) rb.int32(0);         // ThrottleTimeMs
    rb.count(1).str("orders");       // Topics: 1, Name
    rb.count(1);                     //   Partitions: 1
    rb.int32(0).int64(42);           //     PartitionIndex, CommittedOffset
    if (v >= 5) rb.int32(5);         //     CommittedLeaderEpoch
    rb.str("").int16(0);             //     Metadata "", ErrorCode
    if (v >= 2) rb.int16(16);        // ErrorCode NOT_COORDINATOR
    OffsetFetchResponse r;
    r.topics = {{"orders", {{0, 42, v >= 5 ? 5 : -1, "", ErrorCode::NONE}}}};
    r.error = v >= 2 ? ErrorCode::NOT_COORDINATOR : ErrorCode::NONE;
    expectResponse(v, rb, r);
  }
}

TEST(KafkaCodec, OffsetFetchNullTopicsFromVersionTwo) {
  for (const int16_t v : versionsOf<OffsetFetchRequest>()) {
    const auto frame = requestFrame(ApiKey::OffsetFetch, v, Bytes().str("g1").count(-1));
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    if (v < 2) {
      EXPECT_EQ(d.status, DecodeStatus::Malformed) << v;
    } else {
      ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
      EXPECT_FALSE(std::get<OffsetFetchRequest>(d.request).topics.has_value());
      std::vector<uint8_t> encoded;
      encodeRequest(d.header, d.request, encoded);
      EXPECT_EQ(toHex(encoded), toHex(frame));
    }
  }
}

TEST(KafkaCodec, ListGroups) {
  for (const int16_t v : versionsOf<ListGroupsRequest>()) {
    expectRequest(v, Bytes(), ListGroupsRequest{});  // no field in versions 0 to 2

    Bytes rb;
    if (v >= 1) rb.int32(0);            // ThrottleTimeMs
    rb.int16(0);                        // ErrorCode
    rb.count(1).str("g1").str("consumer");  // Groups: 1, GroupId, ProtocolType
    expectResponse(v, rb, ListGroupsResponse{0, ErrorCode::NONE, {{"g1", "consumer"}}});
  }
}

TEST(KafkaCodec, DescribeGroups) {
  for (const int16_t v : versionsOf<DescribeGroupsRequest>()) {
    Bytes body;
    body.count(2).str("g1").str("g2");  // Groups ["g1", "g2"]
    if (v >= 3) body.boolean(true);     // IncludeAuthorizedOperations
    expectRequest(v, body, DescribeGroupsRequest{{"g1", "g2"}, v >= 3});

    Bytes rb;
    if (v >= 1) rb.int32(0);                              // ThrottleTimeMs
    rb.count(1);                                          // Groups: 1
    rb.int16(0).str("g1").str("Stable");                  //   ErrorCode, GroupId, GroupState
    rb.str("consumer").str("range");                      //   ProtocolType, ProtocolData
    rb.count(1).str("m-1");                               //   Members: 1, MemberId
    if (v >= 4) rb.str("i-1");                            //     GroupInstanceId
    rb.str("consumer-1").str("/127.0.0.1");               //     ClientId, ClientHost
    rb.blob("md").blob("as");                             //     MemberMetadata, MemberAssignment
    if (v >= 3) rb.int32(kInt32Min);                      //   AuthorizedOperations: not asked for
    DescribeGroupsResponse r;
    DescribeGroupsResponse::Member m{"m-1", std::nullopt, "consumer-1", "/127.0.0.1", "md", "as"};
    if (v >= 4) m.groupInstanceId = "i-1";
    r.groups = {{ErrorCode::NONE, "g1", "Stable", "consumer", "range", {m}, kNoAuthorizedOperations}};
    expectResponse(v, rb, r);
  }
}

TEST(KafkaCodec, DeleteGroups) {
  for (const int16_t v : versionsOf<DeleteGroupsRequest>()) {
    expectRequest(v, Bytes().count(1).str("g1"), DeleteGroupsRequest{{"g1"}});  // GroupsNames ["g1"]

    Bytes rb;
    rb.int32(0);                        // ThrottleTimeMs, in every version
    rb.count(1).str("g1").int16(68);    // Results: 1, GroupId, ErrorCode NON_EMPTY_GROUP
    expectResponse(v, rb, DeleteGroupsResponse{0, {{"g1", ErrorCode::NON_EMPTY_GROUP}}});
  }
}

TEST(KafkaCodec, SaslHandshake) {
  for (const int16_t v : versionsOf<SaslHandshakeRequest>()) {
    expectRequest(v, Bytes().str("PLAIN"), SaslHandshakeRequest{"PLAIN"});  // Mechanism

    Bytes rb;
    rb.int16(33);                                      // ErrorCode UNSUPPORTED_SASL_MECHANISM
    rb.count(2).str("PLAIN").str("SCRAM-SHA-256");     // Mechanisms
    expectResponse(v, rb, SaslHandshakeResponse{ErrorCode::UNSUPPORTED_SASL_MECHANISM, {"PLAIN", "SCRAM-SHA-256"}});
  }
}

TEST(KafkaCodec, SaslAuthenticate) {
  const std::string plain("\0alice\0secret", 13);
  for (const int16_t v : versionsOf<SaslAuthenticateRequest>()) {
    expectRequest(v, Bytes().blob(plain), SaslAuthenticateRequest{plain});  // AuthBytes

    Bytes rb;
    rb.int16(58).str("bad password");  // ErrorCode SASL_AUTHENTICATION_FAILED, ErrorMessage
    rb.blob("");                       // AuthBytes empty
    if (v >= 1) rb.int64(0);           // SessionLifetimeMs
    expectResponse(v, rb, SaslAuthenticateResponse{ErrorCode::SASL_AUTHENTICATION_FAILED, "bad password", "", 0});
  }
}

TEST(KafkaCodec, Fetch) {
  for (const int16_t v : versionsOf<FetchRequest>()) {
    Bytes body;
    body.int32(-1).int32(500).int32(1);  // ReplicaId, MaxWaitMs, MinBytes
    if (v >= 3) body.int32(52428800);    // MaxBytes
    if (v >= 4) body.int8(1);            // IsolationLevel read committed
    body.count(1).str("orders");         // Topics: 1, Name
    body.count(1);                       //   Partitions: 1
    body.int32(0).int64(42);             //     PartitionIndex, FetchOffset
    if (v >= 5) body.int64(-1);          //     LogStartOffset
    body.int32(1048576);                 //     PartitionMaxBytes
    FetchRequest q;
    q.maxWaitMs = 500;
    q.minBytes = 1;
    if (v >= 3) q.maxBytes = 52428800;
    if (v >= 4) q.isolationLevel = 1;
    q.topics = {{"orders", {{0, 42, -1, 1048576}}}};
    expectRequest(v, body, q);

    // groupcoord's answer: no records, every offset 0.
    Bytes rb;
    if (v >= 1) rb.int32(0);           // ThrottleTimeMs
    rb.count(1).str("orders");         // Responses: 1, Topic
    rb.count(1);                       //   Partitions: 1
    rb.int32(0).int16(0).int64(0);     //     PartitionIndex, ErrorCode NONE, HighWatermark 0
    if (v >= 4) rb.int64(0);           //     LastStableOffset 0
    if (v >= 5) rb.int64(0);           //     LogStartOffset 0
    if (v >= 4) rb.count(0);           //     AbortedTransactions: none
    rb.int32(0);                       //     Records: empty, length 0
    FetchResponse r;
    r.topics = {{"orders", {FetchResponse::Partition{}}}};
    expectResponse(v, rb, r);
  }
}

TEST(KafkaCodec, FetchNullRecordsAndAbortedTransactionsReadBack) {
  for (const int16_t v : versionsOf<FetchResponse>()) {
    Bytes rb;
    if (v >= 1) rb.int32(0);
    rb.count(1).str("t").count(1).int32(3).int16(0).int64(0);
    if (v >= 4) rb.int64(0);
    if (v >= 5) rb.int64(0);
    if (v >= 4) rb.count(-1);  // AbortedTransactions null
    rb.int32(-1);              // Records null
    FetchResponse r;
    FetchResponse::Partition p;
    p.partitionIndex = 3;
    if (v >= 4) p.abortedTransactions = std::nullopt;
    p.records = std::nullopt;
    r.topics = {{"t", {p}}};
    expectResponse(v, rb, r);
  }
}

TEST(KafkaCodec, ListOffsets) {
  for (const int16_t v : versionsOf<ListOffsetsRequest>()) {
    Bytes body;
    body.int32(-1);                       // ReplicaId
    if (v >= 2) body.int8(0);             // IsolationLevel
    body.count(1).str("orders");          // Topics: 1, Name
    body.count(2);                        //   Partitions: 2
    body.int32(0).int64(-2);              //     PartitionIndex, Timestamp earliest
    if (v == 0) body.int32(1);            //     MaxNumOffsets
    body.int32(1).int64(-1);              //     PartitionIndex, Timestamp latest
    if (v == 0) body.int32(1);            //     MaxNumOffsets
    ListOffsetsRequest q;
    q.topics = {{"orders", {{0, -2, 1}, {1, -1, 1}}}};
    expectRequest(v, body, q);

    // groupcoord's answer: offset 0, earliest and latest alike.
    Bytes rb;
    if (v >= 2) rb.int32(0);           // ThrottleTimeMs
    rb.count(1).str("orders");         // Topics: 1, Name
    rb.count(1).int32(0).int16(0);     //   Partitions: 1, PartitionIndex, ErrorCode NONE
    if (v == 0) rb.count(1).int64(0);  //     OldStyleOffsets [0]
    if (v >= 1) rb.int64(-1).int64(0);  //     Timestamp -1, Offset 0
    ListOffsetsResponse r;
    ListOffsetsResponse::Partition p;
    if (v == 0) p.oldStyleOffsets = {0};
    if (v >= 1) p.offset = 0;
    r.topics = {{"orders", {p}}};
    expectResponse(v, rb, r);
  }
}

// ---- ApiVersions: the list and the answer above the served maximum ------------

TEST(KafkaCodec, ApiVersionsListsEveryServedApiInKeyOrder) {
  const ApiVersionsResponse r = apiVersionsResponse();
  const std::vector<ApiVersionsResponse::ApiVersion> expected{
      {1, 0, 6},  {2, 0, 3},  {3, 0, 12}, {8, 0, 9},  {9, 0, 9},  {10, 0, 2}, {11, 0, 5}, {12, 0, 3},
      {13, 0, 1}, {14, 0, 3}, {15, 0, 4}, {16, 0, 2}, {17, 0, 1}, {18, 0, 2}, {36, 0, 1}, {42, 0, 1},
      {68, 0, 1}, {69, 0, 0},
  };
  EXPECT_EQ(r.error, ErrorCode::NONE);
  EXPECT_EQ(r.apiKeys, expected);
  for (const auto& api : expected) {
    EXPECT_TRUE(isServedApi(api.apiKey));
    EXPECT_EQ(minVersion(static_cast<ApiKey>(api.apiKey)), api.minVersion);
    EXPECT_EQ(maxVersion(static_cast<ApiKey>(api.apiKey)), api.maxVersion);
    EXPECT_NE(apiName(api.apiKey), "Unknown");
  }
}

TEST(KafkaCodec, ApiVersionsAboveTheMaximumIsAnsweredWithVersionZeroAndTheList) {
  // A flexible ApiVersions request (version 3): header version 2 (the
  // ClientId as in version 1, then an empty tagged-field section), then
  // ClientSoftwareName and ClientSoftwareVersion as compact strings.
  Bytes body = requestHeader(ApiKey::ApiVersions, 3, 7, "rdkafka");
  body.int8(0);                                  // header tagged fields: none
  body.int8(9).raw(std::vector<uint8_t>{'l', 'i', 'b', 'r', 'd', 'k', 'a', 'f'});  // "librdkaf" (length + 1)
  body.int8(6).raw(std::vector<uint8_t>{'2', '.', '0', '.', '2'});  // "2.0.2"
  body.int8(0);                                  // body tagged fields: none
  const std::vector<uint8_t> frame = body.frame();
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::UnsupportedVersion) << d.detail;
  EXPECT_EQ(d.header, (RequestHeader{18, 3, 7, "rdkafka"}));

  std::vector<uint8_t> answer;
  encodeApiVersionsFallback(d.header.correlationId, answer);
  Bytes expected;
  expected.int32(7);                        // CorrelationId (response header version 0)
  expected.int16(35);                       // ErrorCode UNSUPPORTED_VERSION
  expected.count(18);                       // ApiKeys: 18, as ApiKey, MinVersion, MaxVersion
  expected.int16(1).int16(0).int16(6);      //   Fetch
  expected.int16(2).int16(0).int16(3);      //   ListOffsets
  expected.int16(3).int16(0).int16(12);     //   Metadata
  expected.int16(8).int16(0).int16(9);      //   OffsetCommit
  expected.int16(9).int16(0).int16(9);      //   OffsetFetch
  expected.int16(10).int16(0).int16(2);     //   FindCoordinator
  expected.int16(11).int16(0).int16(5);     //   JoinGroup
  expected.int16(12).int16(0).int16(3);     //   Heartbeat
  expected.int16(13).int16(0).int16(1);     //   LeaveGroup
  expected.int16(14).int16(0).int16(3);     //   SyncGroup
  expected.int16(15).int16(0).int16(4);     //   DescribeGroups
  expected.int16(16).int16(0).int16(2);     //   ListGroups
  expected.int16(17).int16(0).int16(1);     //   SaslHandshake
  expected.int16(18).int16(0).int16(2);     //   ApiVersions
  expected.int16(36).int16(0).int16(1);     //   SaslAuthenticate
  expected.int16(42).int16(0).int16(1);     //   DeleteGroups
  expected.int16(68).int16(0).int16(1);     //   ConsumerGroupHeartbeat
  expected.int16(69).int16(0).int16(0);     //   ConsumerGroupDescribe
  // No ThrottleTimeMs: a version-0 body.
  EXPECT_EQ(toHex(answer), toHex(expected.frame()));
}

// docs/protocol.md, "The Kafka port": the table of served APIs between its
// markers is the ApiVersions list, row for row.
TEST(KafkaCodec, TheDocsTableOfServedApisIsTheApiVersionsList) {
  std::ifstream doc(std::string(GROUPCOORD_SOURCE_DIR) + "/docs/protocol.md");
  ASSERT_TRUE(doc) << "docs/protocol.md";
  std::vector<std::string> rows;
  bool inTable = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.starts_with("<!-- Kafka APIs served:")) {
      inTable = true;
    } else if (line.starts_with("<!-- end of the Kafka APIs served")) {
      inTable = false;
    } else if (inTable && line.starts_with("| ") && line.find("ApiKey") == std::string::npos) {
      rows.push_back(line);
    }
  }
  std::vector<std::string> expected;
  for (const auto& api : apiVersionsResponse().apiKeys) {
    expected.push_back("| " + std::to_string(api.apiKey) + " | " + std::string(apiName(api.apiKey)) + " | " +
                       std::to_string(api.minVersion) + "-" + std::to_string(api.maxVersion) + " |");
  }
  EXPECT_EQ(rows, expected);
}

// ---- Frames captured from Kafka clients -------------------------------------------
// Recorded by a listener on 127.0.0.1 that answered nothing: the first
// bytes each client sent, Size included.

// kcat 1.7.1 with librdkafka 2.0.2 (Debian 12), `kcat -b HOST:PORT -L`: an
// ApiVersions request at version 3, which is answered with the version-0
// fallback.
constexpr std::string_view kKcatApiVersionsV3 =
    "00000024001200030000000100077264"
    "6b61666b61000b6c696272646b61666b"
    "6106322e302e3200";

// kafka-python 2.0.2 (Debian 12), a KafkaConsumer with api_version (1, 0, 0),
// client_id "kp", group "g1", topic "orders": FindCoordinator version 0,
// then Metadata version 1, in one read.
constexpr std::string_view kKafkaPythonFindCoordinatorThenMetadata =
    "00000010000a00000000000100026b70"
    "00026731"
    "00000018000300010000000200026b70"
    "0000000100066f7264657273";

// A client's frame decodes and encodes back to the same bytes.
void expectReencodes(const std::vector<uint8_t>& frame) {
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  std::vector<uint8_t> encoded;
  encodeRequest(d.header, d.request, encoded);
  EXPECT_EQ(toHex(encoded), toHex(frame));
}

TEST(KafkaCodecCaptured, KcatApiVersionsV3IsAnsweredWithTheFallback) {
  const auto frame = testing::fromHex(kKcatApiVersionsV3);
  ASSERT_TRUE(frame);
  const DecodedRequest d = decodeRequest(bodyOf(*frame));
  ASSERT_EQ(d.status, DecodeStatus::UnsupportedVersion) << d.detail;
  EXPECT_EQ(d.header, (RequestHeader{18, 3, 1, "rdkafka"}));
}

TEST(KafkaCodecCaptured, KafkaPythonFindCoordinatorAndMetadata) {
  const auto bytes = testing::fromHex(kKafkaPythonFindCoordinatorThenMetadata);
  ASSERT_TRUE(bytes);
  const std::vector<uint8_t> first(bytes->begin(), bytes->begin() + 20);
  const std::vector<uint8_t> second(bytes->begin() + 20, bytes->end());

  const DecodedRequest find = decodeRequest(bodyOf(first));
  ASSERT_EQ(find.status, DecodeStatus::Ok) << find.detail;
  EXPECT_EQ(find.header, (RequestHeader{10, 0, 1, "kp"}));
  EXPECT_EQ(std::get<FindCoordinatorRequest>(find.request), (FindCoordinatorRequest{"g1", 0}));

  const DecodedRequest metadata = decodeRequest(bodyOf(second));
  ASSERT_EQ(metadata.status, DecodeStatus::Ok) << metadata.detail;
  EXPECT_EQ(metadata.header, (RequestHeader{3, 1, 2, "kp"}));
  MetadataRequest q;
  q.topics = std::vector<MetadataRequest::Topic>{{"orders"}};
  EXPECT_EQ(std::get<MetadataRequest>(metadata.request), q);

  expectReencodes(first);
  expectReencodes(second);
}

// kafka-python 2.0.2 (Debian 12): what its consumer sends against groupcoord's
// list (it takes the broker for 0.11 and fixes Fetch at version 4 and
// ListOffsets at version 1), written by its own request classes, client_id
// "kp": Fetch of "orders" partition 0 from offset 0, then ListOffsets for
// the latest offset of the same partition.
constexpr std::string_view kKafkaPythonFetchV4 =
    "0000003d000100040000000500026b70"
    "ffffffff000001f40000000103200000"
    "000000000100066f7264657273000000"
    "01000000000000000000000000001000"
    "00";
constexpr std::string_view kKafkaPythonListOffsetsV1 =
    "0000002c000200010000000600026b70"
    "ffffffff0000000100066f7264657273"
    "0000000100000000ffffffffffffffff";

// A client's frame, given in hex, decodes to `expected` and encodes back.
template <typename T>
void expectClientFrame(std::string_view hex, const RequestHeader& header, const T& expected) {
  const auto frame = testing::fromHex(hex);
  ASSERT_TRUE(frame);
  const DecodedRequest d = decodeRequest(bodyOf(*frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(d.header, header);
  EXPECT_EQ(std::get<T>(d.request), expected);
  expectReencodes(*frame);
}

TEST(KafkaCodecCaptured, KafkaPythonFetchAndListOffsets) {
  expectClientFrame(kKafkaPythonFetchV4, RequestHeader{1, 4, 5, "kp"},
                    FetchRequest{-1, 500, 1, 52428800, 0, {{"orders", {{0, 0, -1, 1048576}}}}});
  expectClientFrame(kKafkaPythonListOffsetsV1, RequestHeader{2, 1, 6, "kp"},
                    ListOffsetsRequest{-1, 0, {{"orders", {{0, -1, 1}}}}});
}

// ---- Malformed input -------------------------------------------------------------

// One well-formed request frame per API at its newest and oldest versions.
std::vector<std::vector<uint8_t>> sampleFrames() {
  std::vector<std::vector<uint8_t>> out;
  for (const Request& q : samples::requestSamples()) {
    const auto [oldest, newest] = samples::versionRange(q);
    for (const int16_t version : {oldest, newest}) {
      std::vector<uint8_t> frame;
      encodeRequest(RequestHeader{0, version, kCorrelationId, std::string(kClientId)}, q, frame);
      out.push_back(std::move(frame));
    }
  }
  return out;
}

TEST(KafkaCodecMalformed, EveryTruncationIsMalformed) {
  for (const auto& frame : sampleFrames()) {
    const auto body = bodyOf(frame);
    ASSERT_EQ(decodeRequest(body).status, DecodeStatus::Ok) << toHex(frame);
    for (size_t n = 0; n < body.size(); ++n) {
      const DecodedRequest d = decodeRequest(body.first(n));
      EXPECT_EQ(d.status, DecodeStatus::Malformed) << toHex(frame) << " cut at " << n;
      EXPECT_FALSE(d.detail.empty());
    }
  }
}

TEST(KafkaCodecMalformed, ATrailingByteIsMalformed) {
  for (auto frame : sampleFrames()) {
    frame.push_back(0);
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    EXPECT_EQ(d.status, DecodeStatus::Malformed) << toHex(frame);
    EXPECT_NE(d.detail.find("after the last field"), std::string::npos) << d.detail;
  }
}

TEST(KafkaCodecMalformed, HugeCountsAreRefusedBeforeAnythingIsAllocated) {
  struct Case {
    ApiKey key;
    int16_t version;
    Bytes body;
    std::string field;
  };
  const std::vector<Case> cases{
      {ApiKey::JoinGroup, 5, Bytes().str("g1").int32(1).int32(1).str("").nullStr().str("c").count(0x7fffffff),
       "Protocols"},
      {ApiKey::DescribeGroups, 4, Bytes().count(0x7fffffff), "Groups"},
      {ApiKey::DeleteGroups, 1, Bytes().count(0x10000000).str("g"), "GroupsNames"},
      {ApiKey::OffsetFetch, 5, Bytes().str("g1").count(1).str("t").count(0x7fffffff).int32(0), "PartitionIndexes"},
      {ApiKey::OffsetCommit, 7,
       Bytes().str("g1").int32(1).str("m").nullStr().count(1).str("t").count(0x40000000), "Partitions"},
      {ApiKey::Metadata, 4, Bytes().count(0x7fffffff).boolean(true), "Topics"},
      {ApiKey::Fetch, 6, Bytes().int32(-1).int32(0).int32(1).int32(1).int8(0).count(1).str("t").count(0x7fffffff),
       "Partitions"},
      {ApiKey::ListOffsets, 3, Bytes().int32(-1).int8(0).count(0x7fffffff), "Topics"},
  };
  for (const auto& c : cases) {
    const auto frame = requestFrame(c.key, c.version, c.body);
    AllocationProbe probe;
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    EXPECT_LT(probe.largest(), size_t{4096}) << c.field;
    EXPECT_EQ(d.status, DecodeStatus::Malformed) << c.field;
    EXPECT_NE(d.detail.find(c.field + ": array count"), std::string::npos) << d.detail;
  }
}

TEST(KafkaCodecMalformed, NegativeAndNullLengthsWhereNotAllowed) {
  struct Case {
    ApiKey key;
    int16_t version;
    Bytes body;
    std::string expect;  // in the detail
  };
  const std::vector<Case> cases{
      {ApiKey::Heartbeat, 0, Bytes().int16(-2), "GroupId: negative string length -2"},
      {ApiKey::Heartbeat, 3, Bytes().nullStr(), "GroupId: null string"},
      {ApiKey::Heartbeat, 3, Bytes().str("g").int32(1).str("m").int16(-3), "GroupInstanceId: negative string length"},
      {ApiKey::Heartbeat, 0, Bytes().int16(0x7fff).str("g"), "GroupId: string length 32767 beyond"},
      {ApiKey::SaslAuthenticate, 0, Bytes().int32(-1), "AuthBytes: null bytes"},
      {ApiKey::SaslAuthenticate, 1, Bytes().int32(-7), "AuthBytes: negative string length -7"},
      {ApiKey::SaslAuthenticate, 1, Bytes().int32(0x7fffffff), "AuthBytes: string length 2147483647 beyond"},
      {ApiKey::JoinGroup, 0, Bytes().str("g").int32(1).str("").str("c").count(-1), "Protocols: null array"},
      {ApiKey::JoinGroup, 0, Bytes().str("g").int32(1).str("").str("c").count(1).str("r").int32(-1),
       "Metadata: null bytes"},
      {ApiKey::DescribeGroups, 0, Bytes().count(-2), "Groups: negative array count -2"},
      {ApiKey::DeleteGroups, 0, Bytes().count(-1), "GroupsNames: null array"},
      {ApiKey::Metadata, 4, Bytes().count(0).int8(2), "AllowAutoTopicCreation: bool byte 2"},
  };
  for (const auto& c : cases) {
    const auto frame = requestFrame(c.key, c.version, c.body);
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    EXPECT_EQ(d.status, DecodeStatus::Malformed) << c.expect;
    EXPECT_NE(d.detail.find(c.expect), std::string::npos) << d.detail;
    EXPECT_EQ(d.header.correlationId, kCorrelationId);
  }
}

TEST(KafkaCodecMalformed, UnknownApiKeepsTheHeader) {
  for (const int16_t key : {0, 4, 7, 19, 37, 43, 1000, -1}) {
    const auto frame = Bytes().int16(key).int16(0).int32(99).str("c").int32(0).frame();
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    EXPECT_EQ(d.status, DecodeStatus::UnknownApi) << key;
    EXPECT_EQ(d.header, (RequestHeader{key, 0, 99, "c"}));
    EXPECT_EQ(apiName(key), "Unknown");
  }
}

TEST(KafkaCodecMalformed, VersionsOutsideTheServedRange) {
  const std::vector<std::pair<ApiKey, int16_t>> cases{
      {ApiKey::Heartbeat, 4},    {ApiKey::Heartbeat, -1},  {ApiKey::JoinGroup, 6},      {ApiKey::OffsetCommit, 10},
      {ApiKey::OffsetFetch, 10}, {ApiKey::Metadata, 13},   {ApiKey::LeaveGroup, 2},     {ApiKey::SaslAuthenticate, 2},
      {ApiKey::ApiVersions, 4},  {ApiKey::ListGroups, 3},  {ApiKey::DescribeGroups, 5}, {ApiKey::DeleteGroups, 2},
      {ApiKey::SyncGroup, 4},    {ApiKey::FindCoordinator, 3}, {ApiKey::SaslHandshake, 2}, {ApiKey::Heartbeat, 0x7fff},
      {ApiKey::Fetch, 7},        {ApiKey::Fetch, 11},      {ApiKey::ListOffsets, 4},    {ApiKey::ListOffsets, 5},
  };
  for (const auto& [key, version] : cases) {
    const auto frame = requestFrame(key, version, Bytes().str("anything"));
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    EXPECT_EQ(d.status, DecodeStatus::UnsupportedVersion) << apiName(static_cast<int16_t>(key)) << " " << version;
    EXPECT_EQ(d.header.apiVersion, version);
    EXPECT_EQ(d.header.correlationId, kCorrelationId);
  }
}

TEST(KafkaCodecMalformed, ShortHeadersAndBadClientIds) {
  EXPECT_EQ(decodeRequest({}).status, DecodeStatus::Malformed);
  const auto shortHeader = Bytes().int16(12).int16(0).int16(0).body();
  EXPECT_EQ(decodeRequest(shortHeader).status, DecodeStatus::Malformed);
  // A ClientId of any bytes is kept: Kafka client ids follow no name rule.
  const std::string odd("a b/\xff\0z", 7);
  const auto frame = Bytes().int16(12).int16(0).int32(1).str(odd).str("g").int32(1).str("m").frame();
  const DecodedRequest ok = decodeRequest(bodyOf(frame));
  ASSERT_EQ(ok.status, DecodeStatus::Ok) << ok.detail;
  EXPECT_EQ(ok.header.clientId, odd);
  // A null ClientId is allowed.
  const auto nullClient = Bytes().int16(12).int16(0).int32(1).nullStr().str("g").int32(1).str("m").frame();
  const DecodedRequest n = decodeRequest(bodyOf(nullClient));
  ASSERT_EQ(n.status, DecodeStatus::Ok) << n.detail;
  EXPECT_FALSE(n.header.clientId.has_value());
  // A ClientId longer than the body.
  const auto longClient = Bytes().int16(12).int16(0).int32(1).int16(100).str("g").frame();
  const DecodedRequest l = decodeRequest(bodyOf(longClient));
  EXPECT_EQ(l.status, DecodeStatus::Malformed);
  EXPECT_NE(l.detail.find("ClientId"), std::string::npos) << l.detail;
}

// Random bytes after a valid header, and random changes to valid frames:
// a defined status every time.
TEST(KafkaCodecMalformed, RandomBytesNeverCrash) {
  std::mt19937 random(20261206);
  const auto samples = sampleFrames();
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> frame = samples[static_cast<size_t>(round) % samples.size()];
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) frame[4 + random() % (frame.size() - 4)] = static_cast<uint8_t>(random());
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    if (d.status == DecodeStatus::Ok) {
      // What decodes encodes back to the same bytes: nothing is lost or
      // invented. A flexible version may have read tagged fields, which are
      // skipped, or a varint longer than it needed: it encodes back to a
      // request that reads the same.
      std::vector<uint8_t> encoded;
      encodeRequest(d.header, d.request, encoded);
      if (requestHeaderVersion(static_cast<ApiKey>(d.header.apiKey), d.header.apiVersion) == 2) {
        const DecodedRequest again = decodeRequest(bodyOf(encoded));
        ASSERT_EQ(again.status, DecodeStatus::Ok) << again.detail;
        EXPECT_EQ(again.request, d.request);
        EXPECT_EQ(again.header, d.header);
      } else {
        EXPECT_EQ(toHex(encoded), toHex(frame));
      }
    } else {
      EXPECT_FALSE(d.detail.empty());
    }
  }
}

}  // namespace
}  // namespace groupcoord::protocol::kafka
