// Kafka's flexible versions in the codec (protocol/kafka/Codec.h,
// docs/protocol.md "The Kafka port"): Metadata 9 to 12, OffsetCommit 8 and
// 9, OffsetFetch 6 to 9, and KIP-848's ConsumerGroupHeartbeat (0 and 1) and
// ConsumerGroupDescribe (0): header versions, compact forms and tagged
// fields against bytes built by hand (TestBytes.h), that ApiVersions lists
// the KIP-848 APIs, then malformed input as for the classic APIs: every truncation, truncated and overlong
// varints, lengths past the frame, compact counts that must not allocate,
// null where a field is not nullable.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <variant>
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

// Request header version 2: version 1's fields (ClientId with its int16
// length), then the header's tagged fields, none unless given.
Bytes flexibleHeader(ApiKey key, int16_t version = 0) {
  Bytes b;
  b.int16(static_cast<int>(key)).int16(version).int32(kCorrelationId).str(kClientId);
  return b;
}

std::vector<uint8_t> flexibleFrame(ApiKey key, const Bytes& body, int16_t version = 0) {
  return flexibleHeader(key, version).noTags().raw(body.body()).frame();
}

// Response header version 1: CorrelationId, then no tagged fields.
std::vector<uint8_t> flexibleResponseFrame(const Bytes& body) {
  return Bytes().int32(kCorrelationId).noTags().raw(body.body()).frame();
}

const RequestHeader kHeader68{68, 0, kCorrelationId, std::string(kClientId)};
const RequestHeader kHeader68v1{68, 1, kCorrelationId, std::string(kClientId)};

// Kafka's message definitions: the first flexible version of each served
// API that has one.
int16_t firstFlexibleServed(int16_t key) {
  switch (static_cast<ApiKey>(key)) {
    case ApiKey::Metadata:
      return 9;
    case ApiKey::OffsetCommit:
      return 8;
    case ApiKey::OffsetFetch:
      return 6;
    case ApiKey::ConsumerGroupHeartbeat:
    case ApiKey::ConsumerGroupDescribe:
      return 0;
    default:
      return 0x7fff;
  }
}

TEST(KafkaFlexible, HeaderVersionsFollowEachApisFirstFlexibleVersion) {
  for (const auto& api : apiVersionsResponse().apiKeys) {
    for (int16_t v = api.minVersion; v <= api.maxVersion; ++v) {
      const bool flexible = v >= firstFlexibleServed(api.apiKey);
      EXPECT_EQ(requestHeaderVersion(static_cast<ApiKey>(api.apiKey), v), flexible ? 2 : 1)
          << api.apiKey << " v" << v;
      EXPECT_EQ(responseHeaderVersion(static_cast<ApiKey>(api.apiKey), v), flexible ? 1 : 0)
          << api.apiKey << " v" << v;
    }
  }
  // ApiVersions is answered with response header version 0 at every version.
  EXPECT_EQ(responseHeaderVersion(ApiKey::ApiVersions, 2), 0);
  for (const ApiKey key : {ApiKey::ConsumerGroupHeartbeat, ApiKey::ConsumerGroupDescribe}) {
    const int16_t newest = key == ApiKey::ConsumerGroupHeartbeat ? 1 : 0;
    EXPECT_EQ(requestHeaderVersion(key, newest), 2);
    EXPECT_EQ(responseHeaderVersion(key, newest), 1);
    EXPECT_EQ(requestHeaderVersion(key, newest + 1), -1);
    EXPECT_EQ(responseHeaderVersion(key, -1), -1);
    EXPECT_EQ(minVersion(key), 0);
    EXPECT_EQ(maxVersion(key), newest);
  }
  EXPECT_EQ(apiName(68), "ConsumerGroupHeartbeat");
  EXPECT_EQ(apiName(69), "ConsumerGroupDescribe");
}

// ApiVersions lists KIP-848's APIs (ConsumerGroupHeartbeat 0-1,
// ConsumerGroupDescribe 0), and the port's decoder reads them.
TEST(KafkaFlexible, TheKip848ApisAreAdvertisedAndServed) {
  std::map<int16_t, std::pair<int16_t, int16_t>> listed;
  for (const auto& api : apiVersionsResponse().apiKeys) listed[api.apiKey] = {api.minVersion, api.maxVersion};
  EXPECT_TRUE(isServedApi(68));
  EXPECT_TRUE(isServedApi(69));
  EXPECT_EQ(listed[68], (std::pair<int16_t, int16_t>{0, 1}));
  EXPECT_EQ(listed[69], (std::pair<int16_t, int16_t>{0, 0}));
  int decoded = 0;
  for (const Request& q : samples::requestSamples()) {
    const int16_t key = std::visit([](const auto& m) { return static_cast<int16_t>(m.kApiKey); }, q);
    if (key != 68 && key != 69) continue;
    const auto [oldest, newest] = samples::versionRange(q);
    for (int16_t v = oldest; v <= newest; ++v) {
      std::vector<uint8_t> frame;
      encodeRequest(RequestHeader{key, v, kCorrelationId, std::string(kClientId)}, q, frame);
      const DecodedRequest d = decodeRequest(bodyOf(frame));
      ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
      EXPECT_EQ(d.header.correlationId, kCorrelationId);
      EXPECT_EQ(d.header.clientId, std::string(kClientId));
      ++decoded;
    }
  }
  EXPECT_EQ(decoded, 3);
  // A version past the newest is UnsupportedVersion, its body unread.
  const DecodedRequest past = decodeRequest(bodyOf(flexibleFrame(ApiKey::ConsumerGroupHeartbeat, Bytes(), 2)));
  EXPECT_EQ(past.status, DecodeStatus::UnsupportedVersion);
  EXPECT_EQ(decodeRequest(bodyOf(flexibleFrame(ApiKey::ConsumerGroupDescribe, Bytes(), 1))).status,
            DecodeStatus::UnsupportedVersion);
}

// Version 1 adds SubscribedTopicRegex, a compact nullable string right
// after SubscribedTopicNames; version 0 carries none (a regex set is not
// written there). The response of version 1 is version 0's.
TEST(KafkaFlexible, HeartbeatVersion1CarriesTheRegex) {
  ConsumerGroupHeartbeatRequest q;
  q.groupId = "g1";
  q.memberId = "m-1";
  q.subscribedTopicNames = std::vector<std::string>{"a"};
  q.subscribedTopicRegex = "a.*";
  const auto upToNames = [] {
    return Bytes()
        .compactStr("g1")
        .compactStr("m-1")
        .int32(0)          // MemberEpoch
        .compactNull()     // InstanceId
        .compactNull()     // RackId
        .int32(-1)         // RebalanceTimeoutMs
        .compactCount(1)   // SubscribedTopicNames: ["a"]
        .compactStr("a");
  };
  const Bytes v1 = upToNames().compactStr("a.*").compactNull().compactNull().noTags();
  const auto frame1 = flexibleFrame(ApiKey::ConsumerGroupHeartbeat, v1, 1);
  std::vector<uint8_t> written;
  encodeRequest(kHeader68v1, Request(q), written);
  EXPECT_EQ(toHex(written), toHex(frame1));
  DecodedRequest d = decodeRequest(bodyOf(frame1));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(std::get<ConsumerGroupHeartbeatRequest>(d.request), q);

  // Null: unchanged.
  q.subscribedTopicRegex.reset();
  const auto frameNull =
      flexibleFrame(ApiKey::ConsumerGroupHeartbeat, upToNames().compactNull().compactNull().compactNull().noTags(), 1);
  d = decodeRequest(bodyOf(frameNull));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(std::get<ConsumerGroupHeartbeatRequest>(d.request), q);

  // Version 0: no regex on the wire, whatever the message holds.
  q.subscribedTopicRegex = "a.*";
  written.clear();
  encodeRequest(kHeader68, Request(q), written);
  EXPECT_EQ(toHex(written),
            toHex(flexibleFrame(ApiKey::ConsumerGroupHeartbeat, upToNames().compactNull().compactNull().noTags())));

  // The answer: the same bytes at both versions.
  ConsumerGroupHeartbeatResponse answer{0, ErrorCode::UNSUPPORTED_VERSION, "not served yet", std::nullopt, 0, 0,
                                        std::nullopt};
  std::vector<uint8_t> at0;
  std::vector<uint8_t> at1;
  encodeResponse(kCorrelationId, 0, Response(answer), at0);
  encodeResponse(kCorrelationId, 1, Response(answer), at1);
  EXPECT_EQ(toHex(at1), toHex(at0));
  const Bytes body =
      Bytes().int32(0).int16(35).compactStr("not served yet").compactNull().int32(0).int32(0).int8(-1).noTags();
  EXPECT_EQ(toHex(at1), toHex(flexibleResponseFrame(body)));
  const auto r = decodeResponse(ApiKey::ConsumerGroupHeartbeat, 1, bodyOf(at1));
  ASSERT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(std::get<ConsumerGroupHeartbeatResponse>(r.response), answer);
}

// A member joining: nulls wherever Kafka allows them, written as compact
// null (00), and a partition list empty rather than null.
TEST(KafkaFlexible, NullsAndEmptiesInTheHeartbeat) {
  ConsumerGroupHeartbeatRequest join;
  join.groupId = "g1";
  join.topicPartitions = std::vector<ConsumerGroupHeartbeatRequest::TopicPartitions>{};
  const Bytes body = Bytes()
                         .compactStr("g1")
                         .compactStr("")  // MemberId
                         .int32(0)        // MemberEpoch: joins
                         .compactNull()   // InstanceId
                         .compactNull()   // RackId
                         .int32(-1)       // RebalanceTimeoutMs
                         .compactNull()   // SubscribedTopicNames
                         .compactNull()   // ServerAssignor
                         .compactCount(0)  // TopicPartitions: []
                         .noTags();
  const auto frame = flexibleFrame(ApiKey::ConsumerGroupHeartbeat, body);
  std::vector<uint8_t> written;
  encodeRequest(kHeader68, Request(join), written);
  EXPECT_EQ(toHex(written), toHex(frame));
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(std::get<ConsumerGroupHeartbeatRequest>(d.request), join);

  // The answer with no assignment: presence byte -1.
  ConsumerGroupHeartbeatResponse answer{0, ErrorCode::UNKNOWN_MEMBER_ID, "who?", std::nullopt, 0, 5000, std::nullopt};
  const Bytes responseBody = Bytes()
                                 .int32(0)
                                 .int16(25)
                                 .compactStr("who?")
                                 .compactNull()
                                 .int32(0)
                                 .int32(5000)
                                 .int8(-1)  // Assignment: null
                                 .noTags();
  std::vector<uint8_t> encoded;
  encodeResponse(kCorrelationId, 0, Response(answer), encoded);
  EXPECT_EQ(toHex(encoded), toHex(flexibleResponseFrame(responseBody)));
  const auto r = decodeResponse(ApiKey::ConsumerGroupHeartbeat, 0, bodyOf(encoded));
  ASSERT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(std::get<ConsumerGroupHeartbeatResponse>(r.response), answer);
}

// Lengths of 127 and more take two varint bytes: a string of 200 bytes has
// the length 201 = 0xc9 0x01; an array of 130 ints the count 131 = 0x83 0x01.
TEST(KafkaFlexible, VarintsLongerThanOneByte) {
  ConsumerGroupHeartbeatRequest q;
  q.groupId = std::string(200, 'g');
  q.topicPartitions = std::vector<ConsumerGroupHeartbeatRequest::TopicPartitions>{{samples::sampleTopicId(), {}}};
  for (int32_t p = 0; p < 130; ++p) q.topicPartitions->front().partitions.push_back(p);
  Bytes partitions;
  partitions.uvarint(131);
  for (int32_t p = 0; p < 130; ++p) partitions.int32(p);
  const Bytes body = Bytes()
                         .raw(std::vector<uint8_t>{0xc9, 0x01})
                         .raw(std::vector<uint8_t>(200, 'g'))
                         .compactStr("")
                         .int32(0)
                         .compactNull()
                         .compactNull()
                         .int32(-1)
                         .compactNull()
                         .compactNull()
                         .compactCount(1)
                         .uuid(0)
                         .raw(partitions.body())
                         .noTags()
                         .noTags();
  const auto frame = flexibleFrame(ApiKey::ConsumerGroupHeartbeat, body);
  std::vector<uint8_t> written;
  encodeRequest(kHeader68, Request(q), written);
  EXPECT_EQ(toHex(written), toHex(frame));
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(std::get<ConsumerGroupHeartbeatRequest>(d.request), q);
}

// Tagged fields this codec does not know are read and skipped wherever a
// structure ends: the header's, a nested structure's, the body's. What is
// written again carries none.
TEST(KafkaFlexible, UnknownTaggedFieldsAreSkipped) {
  // Two: tag 0 with 3 bytes, tag 300 (two varint bytes) with none.
  const Bytes tags =
      Bytes().uvarint(2).uvarint(0).uvarint(3).raw(std::vector<uint8_t>{1, 2, 3}).uvarint(300).uvarint(0);
  const Bytes body = Bytes()
                         .compactCount(2)
                         .compactStr("g1")
                         .compactStr("g2")
                         .boolean(true)
                         .raw(tags.body());
  const auto frame = flexibleHeader(ApiKey::ConsumerGroupDescribe).raw(tags.body()).raw(body.body()).frame();
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(std::get<ConsumerGroupDescribeRequest>(d.request), (ConsumerGroupDescribeRequest{{"g1", "g2"}, true}));

  // In a nested structure (a TopicPartitions element) and in the response
  // header.
  const Bytes response = Bytes()
                             .int32(0)
                             .int16(0)
                             .compactNull()
                             .compactStr("m-1")
                             .int32(1)
                             .int32(5000)
                             .int8(1)
                             .compactCount(1)
                             .uuid(0)
                             .compactCount(1)
                             .int32(7)
                             .raw(tags.body())  // TopicPartitions' tagged fields
                             .noTags()          // Assignment's
                             .noTags();         // the body's
  const auto responseFrame = Bytes().int32(kCorrelationId).raw(tags.body()).raw(response.body()).frame();
  const auto r = decodeResponse(ApiKey::ConsumerGroupHeartbeat, 0, bodyOf(responseFrame));
  ASSERT_TRUE(r.ok) << r.detail;
  const auto& answer = std::get<ConsumerGroupHeartbeatResponse>(r.response);
  ASSERT_TRUE(answer.assignment);
  EXPECT_EQ(answer.assignment->topicPartitions,
            (std::vector<ConsumerGroupHeartbeatRequest::TopicPartitions>{{samples::sampleTopicId(), {7}}}));
}

// ---- The served flexible versions ------------------------------------------------

std::vector<uint8_t> servedFrame(ApiKey key, int16_t version, const Bytes& body) {
  return flexibleHeader(key, version).noTags().raw(body.body()).frame();
}

template <typename T>
void expectServedRequest(int16_t version, const Bytes& body, const T& expected) {
  SCOPED_TRACE(std::string(T::kName) + " version " + std::to_string(version));
  const auto frame = servedFrame(T::kApiKey, version, body);
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(d.header,
            (RequestHeader{static_cast<int16_t>(T::kApiKey), version, kCorrelationId, std::string(kClientId)}));
  EXPECT_EQ(std::get<T>(d.request), expected);
  std::vector<uint8_t> written;
  encodeRequest(d.header, Request(expected), written);
  EXPECT_EQ(toHex(written), toHex(frame));
}

template <typename T>
void expectServedResponse(int16_t version, const Bytes& body, const T& response) {
  SCOPED_TRACE(std::string(T::kName) + " version " + std::to_string(version));
  const auto frame = flexibleResponseFrame(body);
  std::vector<uint8_t> written;
  encodeResponse(kCorrelationId, version, Response(response), written);
  EXPECT_EQ(toHex(written), toHex(frame));
  const DecodedResponse d = decodeResponse(T::kApiKey, version, bodyOf(frame));
  ASSERT_TRUE(d.ok) << d.detail;
  EXPECT_EQ(std::get<T>(d.response), response);
}

// librdkafka 2.15.1 resolves the topic ids of a KIP-848 assignment with
// Metadata version 12: topics by id, names null. The answer names the topic
// and repeats its id; an id that names no topic is UNKNOWN_TOPIC_ID with a
// null name.
TEST(KafkaFlexibleServed, MetadataByTopicId) {
  const Uuid known = samples::sampleTopicId();
  Uuid unknown;
  unknown.bytes.fill(0xee);
  for (const int16_t v : {int16_t{10}, int16_t{11}, int16_t{12}}) {
    Bytes body;
    body.compactCount(2);
    body.uuid(0).compactNull().noTags();  // TopicId 00..0f, Name null
    body.raw(std::vector<uint8_t>(16, 0xee)).compactNull().noTags();
    body.boolean(false);             // AllowAutoTopicCreation
    if (v == 10) body.boolean(false);  // IncludeClusterAuthorizedOperations (8 to 10)
    body.boolean(false);             // IncludeTopicAuthorizedOperations
    body.noTags();
    MetadataRequest q;
    q.topics = std::vector<MetadataRequest::Topic>{{std::nullopt, known}, {std::nullopt, unknown}};
    q.allowAutoTopicCreation = false;
    expectServedRequest(v, body, q);
  }

  MetadataResponse r;
  r.brokers = {{1, "gc-1", 9092, std::nullopt}};
  r.clusterId = "groupcoord";
  r.controllerId = 1;
  MetadataResponse::Topic orders;
  orders.name = "orders";
  orders.topicId = known;
  orders.partitions = {{ErrorCode::NONE, 0, 1, {1}, {1}}};
  MetadataResponse::Topic missing;
  missing.error = ErrorCode::UNKNOWN_TOPIC_ID;
  missing.topicId = unknown;
  r.topics = {orders, missing};
  Bytes rb;
  rb.int32(0);                                                     // ThrottleTimeMs
  rb.compactCount(1).int32(1).compactStr("gc-1").int32(9092).compactNull().noTags();  // Brokers
  rb.compactStr("groupcoord").int32(1);                            // ClusterId, ControllerId
  rb.compactCount(2);                                              // Topics: 2
  rb.int16(0).compactStr("orders").uuid(0).boolean(false);         //   NONE, "orders", its id, not internal
  rb.compactCount(1);                                              //   Partitions: 1
  rb.int16(0).int32(0).int32(1).int32(-1);                         //     NONE, 0, leader 1, epoch -1
  rb.compactCount(1).int32(1).compactCount(1).int32(1).compactCount(0).noTags();  // [1], [1], offline []
  rb.int32(kInt32Min).noTags();                                    //   TopicAuthorizedOperations
  rb.int16(100).compactNull().raw(std::vector<uint8_t>(16, 0xee)).boolean(false).compactCount(0);
  rb.int32(kInt32Min).noTags();
  rb.noTags();
  expectServedResponse(12, rb, r);
}

// Version 9 on, null Topics asks for every topic, and an empty list for
// none, as in versions 1 to 8.
TEST(KafkaFlexibleServed, MetadataEveryTopic) {
  for (int16_t v = 9; v <= 12; ++v) {
    Bytes body;
    body.compactNull().boolean(true);
    if (v <= 10) body.boolean(false);
    body.boolean(false).noTags();
    MetadataRequest q;
    q.topics = std::nullopt;
    expectServedRequest(v, body, q);
  }
}

// OffsetCommit as librdkafka 2.15.1 sends it (version 9): GenerationId is
// the member's epoch, GroupInstanceId null, the metadata of a commit empty.
TEST(KafkaFlexibleServed, OffsetCommit) {
  for (const int16_t v : {int16_t{8}, int16_t{9}}) {
    Bytes body;
    body.compactStr("g1").int32(7).compactStr("m-1").compactNull();  // GroupId, epoch, MemberId, no instance
    body.compactCount(1).compactStr("orders");                       // Topics: 1
    body.compactCount(1).int32(2).int64(100).int32(-1).compactStr("").noTags();  // partition 2 at 100
    body.noTags().noTags();
    OffsetCommitRequest q;
    q.groupId = "g1";
    q.generationId = 7;
    q.memberId = "m-1";
    q.topics = {{"orders", {{2, 100, -1, -1, ""}}}};
    expectServedRequest(v, body, q);

    Bytes rb;
    rb.int32(0).compactCount(1).compactStr("orders").compactCount(1).int32(2).int16(0).noTags().noTags().noTags();
    OffsetCommitResponse r;
    r.topics = {{"orders", {{2, ErrorCode::NONE}}}};
    expectServedResponse(v, rb, r);
  }
}

// OffsetFetch: version 6 and 7 flexible forms of one group, version 8 on
// several groups, version 9 with the member's id and epoch (librdkafka
// 2.15.1's consumer sends null and -1).
TEST(KafkaFlexibleServed, OffsetFetch) {
  for (const int16_t v : {int16_t{6}, int16_t{7}}) {
    Bytes body;
    body.compactStr("g1").compactCount(1).compactStr("orders").compactCount(2).int32(0).int32(1).noTags();
    if (v >= 7) body.boolean(true);  // RequireStable
    body.noTags();
    OffsetFetchRequest q;
    q.groupId = "g1";
    q.topics = std::vector<OffsetFetchRequest::Topic>{{"orders", {0, 1}}};
    q.requireStable = v >= 7;
    expectServedRequest(v, body, q);

    Bytes rb;
    rb.int32(0).compactCount(1).compactStr("orders");
    rb.compactCount(1).int32(0).int64(42).int32(-1).compactStr("").int16(0).noTags().noTags();
    rb.int16(0).noTags();
    OffsetFetchResponse r;
    r.topics = {{"orders", {{0, 42, -1, "", ErrorCode::NONE}}}};
    expectServedResponse(v, rb, r);
  }
  for (const int16_t v : {int16_t{8}, int16_t{9}}) {
    Bytes body;
    body.compactCount(2);
    body.compactStr("g1");
    if (v >= 9) body.compactNull().int32(-1);  // MemberId null, MemberEpoch -1
    body.compactCount(1).compactStr("orders").compactCount(1).int32(0).noTags().noTags();
    body.compactStr("g2");
    if (v >= 9) body.compactStr("m-2").int32(5);
    body.compactNull().noTags();  // Topics null: every topic
    body.boolean(false).noTags();
    OffsetFetchRequest q;
    q.groupId.clear();
    q.topics = std::vector<OffsetFetchRequest::Topic>{};
    q.groups = {{"g1", std::nullopt, -1, std::vector<OffsetFetchRequest::Topic>{{"orders", {0}}}},
                {"g2", v >= 9 ? std::optional<std::string>("m-2") : std::nullopt, v >= 9 ? 5 : -1, std::nullopt}};
    expectServedRequest(v, body, q);

    Bytes rb;
    rb.int32(0).compactCount(2);
    rb.compactStr("g1").compactCount(1).compactStr("orders");
    rb.compactCount(1).int32(0).int64(42).int32(3).compactNull().int16(0).noTags().noTags();
    rb.int16(0).noTags();
    rb.compactStr("g2").compactCount(0).int16(30).noTags();  // GROUP_AUTHORIZATION_FAILED
    rb.noTags();
    OffsetFetchResponse r;
    r.groups = {{"g1", {{"orders", {{0, 42, 3, std::nullopt, ErrorCode::NONE}}}}, ErrorCode::NONE},
                {"g2", {}, ErrorCode::GROUP_AUTHORIZATION_FAILED}};
    expectServedResponse(v, rb, r);
  }
}

// Every truncation of every served flexible version's sample is malformed,
// and so is a byte after the last field.
TEST(KafkaFlexibleServed, EveryTruncationIsMalformed) {
  int frames = 0;
  for (const Request& q : samples::requestSamples()) {
    const auto [oldest, newest] = samples::versionRange(q);
    for (int16_t v = oldest; v <= newest; ++v) {
      const int16_t key = std::visit([](const auto& m) { return static_cast<int16_t>(m.kApiKey); }, q);
      if (requestHeaderVersion(static_cast<ApiKey>(key), v) != 2) continue;
      ++frames;
      std::vector<uint8_t> frame;
      encodeRequest(RequestHeader{key, v, kCorrelationId, std::string(kClientId)}, q, frame);
      const auto body = bodyOf(frame);
      ASSERT_EQ(decodeRequest(body).status, DecodeStatus::Ok) << toHex(frame);
      for (size_t n = 0; n < body.size(); ++n) {
        EXPECT_EQ(decodeRequest(body.first(n)).status, DecodeStatus::Malformed) << toHex(frame) << " cut at " << n;
      }
      frame.push_back(0);
      const DecodedRequest d = decodeRequest(bodyOf(frame));
      EXPECT_EQ(d.status, DecodeStatus::Malformed) << toHex(frame);
      EXPECT_NE(d.detail.find("after the last field"), std::string::npos) << d.detail;
    }
  }
  // Metadata 9-12, OffsetCommit 8-9, OffsetFetch 6-9, ConsumerGroupHeartbeat 0-1, ConsumerGroupDescribe 0
  EXPECT_EQ(frames, 4 + 2 + 4 + 2 + 1);
}

TEST(KafkaFlexibleServed, HugeCompactCountsAndBadNulls) {
  struct Case {
    ApiKey key;
    int16_t version;
    Bytes body;
    std::string expect;
  };
  const std::vector<Case> cases{
      // 0x7fffffff topics of at least 18 bytes each (id, null name, no tags).
      {ApiKey::Metadata, 12, Bytes().uvarint(0x7fffffff).boolean(true).boolean(false).noTags(), "Topics: array count"},
      {ApiKey::OffsetFetch, 9, Bytes().uvarint(0x10000000).compactStr("g"), "Groups: array count"},
      {ApiKey::OffsetFetch, 9,
       Bytes().compactCount(1).compactStr("g").compactNull().int32(-1).compactCount(1).compactStr("t").uvarint(
           0x40000000),
       "PartitionIndexes: array count"},
      {ApiKey::OffsetCommit, 9,
       Bytes().compactStr("g").int32(1).compactStr("m").compactNull().compactCount(1).compactStr("t").uvarint(
           0x40000000),
       "Partitions: array count"},
      // A null name before version 10, a null group id, null groups.
      {ApiKey::Metadata, 9, Bytes().compactCount(1).compactNull().noTags().boolean(true).boolean(false).noTags(),
       "Name: null string"},
      {ApiKey::OffsetFetch, 8, Bytes().compactCount(1).compactNull().compactCount(0).noTags().boolean(false).noTags(),
       "GroupId: null string"},
      {ApiKey::OffsetFetch, 9, Bytes().compactNull().boolean(false).noTags(), "Groups: null array"},
  };
  for (const auto& c : cases) {
    const auto frame = servedFrame(c.key, c.version, c.body);
    AllocationProbe probe;
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    EXPECT_LT(probe.largest(), size_t{4096}) << c.expect;
    EXPECT_EQ(d.status, DecodeStatus::Malformed) << c.expect;
    EXPECT_NE(d.detail.find(c.expect), std::string::npos) << d.detail;
  }
}

// ---- Malformed input -------------------------------------------------------------

// KIP-848's sample requests at each of their versions.
std::vector<std::vector<uint8_t>> kip848Frames() {
  std::vector<std::vector<uint8_t>> out;
  for (const Request& q : samples::requestSamples()) {
    const int16_t key = std::visit([](const auto& m) { return static_cast<int16_t>(m.kApiKey); }, q);
    if (key != 68 && key != 69) continue;
    const auto [oldest, newest] = samples::versionRange(q);
    for (int16_t v = oldest; v <= newest; ++v) {
      std::vector<uint8_t> frame;
      encodeRequest(RequestHeader{key, v, kCorrelationId, std::string(kClientId)}, q, frame);
      out.push_back(std::move(frame));
    }
  }
  return out;
}

TEST(KafkaFlexibleMalformed, EveryTruncationIsMalformed) {
  for (const auto& frame : kip848Frames()) {
    const auto body = bodyOf(frame);
    ASSERT_EQ(decodeRequest(body).status, DecodeStatus::Ok) << toHex(frame);
    for (size_t n = 0; n < body.size(); ++n) {
      const DecodedRequest d = decodeRequest(body.first(n));
      EXPECT_EQ(d.status, DecodeStatus::Malformed) << toHex(frame) << " cut at " << n;
      EXPECT_FALSE(d.detail.empty());
    }
  }
}

TEST(KafkaFlexibleMalformed, ATrailingByteIsMalformed) {
  for (auto frame : kip848Frames()) {
    frame.push_back(0);
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    EXPECT_EQ(d.status, DecodeStatus::Malformed) << toHex(frame);
    EXPECT_NE(d.detail.find("after the last field"), std::string::npos) << d.detail;
  }
}

// ConsumerGroupHeartbeat version 1 up to its SubscribedTopicRegex.
Bytes heartbeatUpToRegex() {
  return Bytes()
      .compactStr("g")
      .compactStr("m")
      .int32(1)
      .compactNull()
      .compactNull()
      .int32(-1)
      .compactCount(1)
      .compactStr("t");
}

TEST(KafkaFlexibleMalformed, BadVarintsAndLengths) {
  struct Case {
    std::vector<uint8_t> frame;
    std::string expect;  // in the detail
  };
  const auto describe = [](const Bytes& body) { return flexibleFrame(ApiKey::ConsumerGroupDescribe, body); };
  const std::vector<Case> cases{
      // A varint whose last byte still says "more", at the end of the frame.
      {describe(Bytes().raw(std::vector<uint8_t>{0x80})), "GroupIds: truncated"},
      {describe(Bytes().raw(std::vector<uint8_t>{0xff, 0xff, 0xff})), "GroupIds: truncated"},
      // Six bytes, and five whose value passes 2^32-1.
      {describe(Bytes().raw(std::vector<uint8_t>{0x81, 0x80, 0x80, 0x80, 0x80, 0x00})), "GroupIds: unsigned varint"},
      {describe(Bytes().raw(std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff, 0x7f}).boolean(true).noTags()),
       "GroupIds: unsigned varint"},
      // A string length past the frame; above 32767; null where not nullable.
      {describe(Bytes().compactCount(1).uvarint(50).str("g").boolean(true).noTags()), "Name: string length 49 beyond"},
      {describe(Bytes().compactCount(1).uvarint(0x8001).raw(std::vector<uint8_t>(0x8000, 'g')).boolean(true).noTags()),
       "Name: compact string length 32768"},
      {describe(Bytes().compactCount(1).compactNull().boolean(true).noTags()), "Name: null string"},
      {describe(Bytes().compactNull().boolean(true).noTags()), "GroupIds: null array"},
      {describe(Bytes().compactCount(0).int8(2).noTags()), "IncludeAuthorizedOperations: bool byte 2"},
      // Tagged fields: a size past the frame, a count past it, a truncated tag.
      {describe(Bytes().compactCount(0).boolean(true).uvarint(1).uvarint(0).uvarint(9).int8(1)),
       "TaggedFields: string length 9 beyond"},
      {describe(Bytes().compactCount(0).boolean(true).uvarint(1000)), "TaggedFields: array count 1000"},
      {describe(Bytes().compactCount(0).boolean(true).uvarint(1).raw(std::vector<uint8_t>{0x80, 0x80})),
       "TaggedFields: "},
      // The header's tagged fields, truncated.
      {flexibleHeader(ApiKey::ConsumerGroupDescribe).raw(std::vector<uint8_t>{0x80}).frame(),
       "TaggedFields: truncated"},
      // Heartbeat: a non-nullable string null.
      {flexibleFrame(ApiKey::ConsumerGroupHeartbeat, Bytes().compactNull()), "GroupId: null string"},
      // Heartbeat version 1: the regex's length past the frame, truncated,
      // and above 32767.
      {flexibleFrame(ApiKey::ConsumerGroupHeartbeat, heartbeatUpToRegex().uvarint(40).str("a.*"), 1),
       "SubscribedTopicRegex: string length 39 beyond"},
      {flexibleFrame(ApiKey::ConsumerGroupHeartbeat, heartbeatUpToRegex().raw(std::vector<uint8_t>{0x80}), 1),
       "SubscribedTopicRegex: truncated"},
      {flexibleFrame(ApiKey::ConsumerGroupHeartbeat,
                     heartbeatUpToRegex().uvarint(0x8001).raw(std::vector<uint8_t>(0x8000, 'a')), 1),
       "SubscribedTopicRegex: compact string length 32768"},
  };
  for (const auto& c : cases) {
    const DecodedRequest d = decodeRequest(bodyOf(c.frame));
    EXPECT_EQ(d.status, DecodeStatus::Malformed) << c.expect;
    EXPECT_NE(d.detail.find(c.expect), std::string::npos) << d.detail;
    EXPECT_EQ(d.header.correlationId, kCorrelationId);
  }
}

// A compact count is checked against the bytes that remain, each element
// taking at least its smallest flexible encoding (one byte for a string, 18
// for a TopicPartitions: its UUID, an empty array and no tagged fields),
// before anything is reserved.
TEST(KafkaFlexibleMalformed, HugeCompactCountsAreRefusedBeforeAnythingIsAllocated) {
  struct Case {
    ApiKey key;
    Bytes body;
    std::string field;
    int16_t version = 0;
  };
  const auto heartbeatUpTo = [] {
    return Bytes().compactStr("g").compactStr("m").int32(1).compactNull().compactNull().int32(-1);
  };
  const std::vector<Case> cases{
      {ApiKey::ConsumerGroupDescribe, Bytes().uvarint(0xffffffffu).boolean(true).noTags(), "GroupIds"},
      {ApiKey::ConsumerGroupDescribe, Bytes().uvarint(0x7fffffff).boolean(true).noTags(), "GroupIds"},
      {ApiKey::ConsumerGroupHeartbeat, heartbeatUpTo().uvarint(0x10000000).compactStr("t"), "SubscribedTopicNames"},
      // 4 TopicPartitions need 72 bytes; 40 remain.
      {ApiKey::ConsumerGroupHeartbeat,
       heartbeatUpTo().compactNull().compactNull().compactCount(4).raw(std::vector<uint8_t>(40, 0)), "TopicPartitions"},
      {ApiKey::ConsumerGroupHeartbeat,
       heartbeatUpTo().compactNull().compactNull().compactCount(1).uuid(0).uvarint(0xfffffff0u).noTags().noTags(),
       "Partitions"},
      // Version 1: after the regex, 4 TopicPartitions in 40 bytes.
      {ApiKey::ConsumerGroupHeartbeat,
       heartbeatUpToRegex().compactStr("t.*").compactNull().compactCount(4).raw(std::vector<uint8_t>(40, 0)),
       "TopicPartitions", 1},
  };
  for (const auto& c : cases) {
    const auto frame = flexibleFrame(c.key, c.body, c.version);
    AllocationProbe probe;
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    EXPECT_LT(probe.largest(), size_t{4096}) << c.field;
    EXPECT_EQ(d.status, DecodeStatus::Malformed) << c.field;
    EXPECT_NE(d.detail.find(c.field + ": array count"), std::string::npos) << d.detail;
  }
}

TEST(KafkaFlexibleMalformed, ResponsesToo) {
  // A presence byte other than -1 or 1, and a response header cut short.
  const Bytes body = Bytes().int32(0).int16(0).compactNull().compactNull().int32(1).int32(5000).int8(2).noTags();
  const auto frame = flexibleResponseFrame(body);
  const auto d = decodeResponse(ApiKey::ConsumerGroupHeartbeat, 0, bodyOf(frame));
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("Assignment: presence byte 2"), std::string::npos) << d.detail;
  const auto cut = Bytes().int32(kCorrelationId).raw(std::vector<uint8_t>{0x81}).frame();
  const auto h = decodeResponse(ApiKey::ConsumerGroupDescribe, 0, bodyOf(cut));
  EXPECT_FALSE(h.ok);
  EXPECT_NE(h.detail.find("response header"), std::string::npos) << h.detail;
  // A huge member count in ConsumerGroupDescribe's answer.
  const Bytes describe = Bytes()
                             .int32(0)
                             .compactCount(1)
                             .int16(0)
                             .compactNull()
                             .compactStr("g1")
                             .compactStr("Stable")
                             .int32(1)
                             .int32(1)
                             .compactStr("uniform")
                             .uvarint(0x7fffffff);
  AllocationProbe probe;
  const auto m = decodeResponse(ApiKey::ConsumerGroupDescribe, 0, bodyOf(flexibleResponseFrame(describe)));
  EXPECT_LT(probe.largest(), size_t{4096});
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.detail.find("Members: array count"), std::string::npos) << m.detail;
}

// Random changes to valid frames: a defined status every time, and what
// decodes encodes back to the same bytes unless it carried tagged fields.
TEST(KafkaFlexibleMalformed, RandomBytesNeverCrash) {
  std::mt19937 random(20261207);
  const auto samples = kip848Frames();
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> frame = samples[static_cast<size_t>(round) % samples.size()];
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) frame[4 + random() % (frame.size() - 4)] = static_cast<uint8_t>(random());
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    if (d.status == DecodeStatus::Ok) {
      std::vector<uint8_t> encoded;
      encodeRequest(d.header, d.request, encoded);
      const DecodedRequest again = decodeRequest(bodyOf(encoded));
      ASSERT_EQ(again.status, DecodeStatus::Ok) << again.detail;
      EXPECT_EQ(again.request, d.request);
      EXPECT_EQ(again.header, d.header);
    } else {
      EXPECT_FALSE(d.detail.empty());
    }
  }
}

}  // namespace
}  // namespace groupcoord::protocol::kafka
