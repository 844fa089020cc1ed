#pragma once

// One sample request per served Kafka API (protocol/kafka/Messages.h), with
// a field set in every version that carries one: the codec tests' malformed input starts from them and the
// Kafka fuzzer's seeds are them, encoded at every version
// (protocol/fuzz/MakeKafkaSeeds.cpp).

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "protocol/kafka/Messages.h"

namespace groupcoord::protocol::kafka::samples {

// The samples' topic id: the bytes 00 01 ... 0f.
inline Uuid sampleTopicId() {
  Uuid id;
  for (uint8_t i = 0; i < 16; ++i) id.bytes[i] = i;
  return id;
}

inline std::vector<Request> requestSamples() {
  MetadataRequest metadata;  // "orders" also by its id (version 10 on)
  metadata.topics = std::vector<MetadataRequest::Topic>{{"orders", sampleTopicId()}, {"payments", {}}};
  metadata.includeTopicAuthorizedOperations = true;
  OffsetFetchRequest offsetFetch;  // one group, asked both ways: versions 0 to 7, and 8 on
  offsetFetch.groupId = "g1";
  offsetFetch.topics = std::vector<OffsetFetchRequest::Topic>{{"orders", {0, 1, 2}}};
  offsetFetch.groups = {{"g1", "m-1", 4, std::vector<OffsetFetchRequest::Topic>{{"orders", {0, 1, 2}}}}};
  offsetFetch.requireStable = true;
  ConsumerGroupHeartbeatRequest heartbeat;  // every field set
  heartbeat.groupId = "g1";
  heartbeat.memberId = "m-1";
  heartbeat.memberEpoch = 3;
  heartbeat.instanceId = "i-1";
  heartbeat.rackId = "r1";
  heartbeat.rebalanceTimeoutMs = 300000;
  heartbeat.subscribedTopicNames = std::vector<std::string>{"orders"};
  heartbeat.subscribedTopicRegex = "ord.*";  // version 1 on
  heartbeat.serverAssignor = "uniform";
  heartbeat.topicPartitions = std::vector<ConsumerGroupHeartbeatRequest::TopicPartitions>{{sampleTopicId(), {0, 1}}};
  return {
      ApiVersionsRequest{},
      metadata,
      FindCoordinatorRequest{"g1", 0},
      JoinGroupRequest{"g1", 10000, 300000, "m-1", "i-1", "consumer", {{"range", "md"}, {"roundrobin", "md"}}},
      SyncGroupRequest{"g1", 3, "m-1", "i-1", {{"m-1", "as"}, {"m-2", "as"}}},
      HeartbeatRequest{"g1", 3, "m-1", "i-1"},
      LeaveGroupRequest{"g1", "m-1"},
      OffsetCommitRequest{"g1", 3, "m-1", "i-1", 1000, {{"orders", {{0, 42, 5, 7, "x"}, {1, 43, 5, 7, {}}}}}},
      offsetFetch,
      ListGroupsRequest{},
      DescribeGroupsRequest{{"g1", "g2"}, true},
      DeleteGroupsRequest{{"g1", "g2"}},
      SaslHandshakeRequest{"SCRAM-SHA-256"},
      SaslAuthenticateRequest{"n,,n=alice,r=abc"},
      FetchRequest{-1, 500, 1, 1048576, 0, {{"orders", {{0, 42, -1, 65536}, {1, 7, -1, 65536}}}}},
      ListOffsetsRequest{-1, 1, {{"orders", {{0, -2, 1}, {1, -1, 1}}}}},
      heartbeat,
      ConsumerGroupDescribeRequest{{"g1", "g2"}, true},
  };
}

// A request's versions.
template <typename Requests>
std::pair<int16_t, int16_t> versionRange(const Requests& q) {
  return std::visit(
      [](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        return std::pair<int16_t, int16_t>{T::kMinVersion, T::kMaxVersion};
      },
      q);
}

}  // namespace groupcoord::protocol::kafka::samples
