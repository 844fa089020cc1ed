#include "protocol/kafka/Messages.h"

namespace groupcoord::protocol::kafka {

std::string_view apiName(int16_t key) {
  switch (static_cast<ApiKey>(key)) {
    case ApiKey::Fetch:
      return "Fetch";
    case ApiKey::ListOffsets:
      return "ListOffsets";
    case ApiKey::Metadata:
      return "Metadata";
    case ApiKey::OffsetCommit:
      return "OffsetCommit";
    case ApiKey::OffsetFetch:
      return "OffsetFetch";
    case ApiKey::FindCoordinator:
      return "FindCoordinator";
    case ApiKey::JoinGroup:
      return "JoinGroup";
    case ApiKey::Heartbeat:
      return "Heartbeat";
    case ApiKey::LeaveGroup:
      return "LeaveGroup";
    case ApiKey::SyncGroup:
      return "SyncGroup";
    case ApiKey::DescribeGroups:
      return "DescribeGroups";
    case ApiKey::ListGroups:
      return "ListGroups";
    case ApiKey::SaslHandshake:
      return "SaslHandshake";
    case ApiKey::ApiVersions:
      return "ApiVersions";
    case ApiKey::SaslAuthenticate:
      return "SaslAuthenticate";
    case ApiKey::DeleteGroups:
      return "DeleteGroups";
    case ApiKey::ConsumerGroupHeartbeat:
      return "ConsumerGroupHeartbeat";
    case ApiKey::ConsumerGroupDescribe:
      return "ConsumerGroupDescribe";
  }
  return "Unknown";
}

std::string_view errorName(ErrorCode e) {
  switch (e) {
#define GROUPCOORD_KAFKA_ERROR(name) \
  case ErrorCode::name:              \
    return #name;
    GROUPCOORD_KAFKA_ERROR(UNKNOWN_SERVER_ERROR)
    GROUPCOORD_KAFKA_ERROR(NONE)
    GROUPCOORD_KAFKA_ERROR(UNKNOWN_TOPIC_OR_PARTITION)
    GROUPCOORD_KAFKA_ERROR(OFFSET_METADATA_TOO_LARGE)
    GROUPCOORD_KAFKA_ERROR(COORDINATOR_LOAD_IN_PROGRESS)
    GROUPCOORD_KAFKA_ERROR(COORDINATOR_NOT_AVAILABLE)
    GROUPCOORD_KAFKA_ERROR(NOT_COORDINATOR)
    GROUPCOORD_KAFKA_ERROR(ILLEGAL_GENERATION)
    GROUPCOORD_KAFKA_ERROR(INCONSISTENT_GROUP_PROTOCOL)
    GROUPCOORD_KAFKA_ERROR(INVALID_GROUP_ID)
    GROUPCOORD_KAFKA_ERROR(UNKNOWN_MEMBER_ID)
    GROUPCOORD_KAFKA_ERROR(INVALID_SESSION_TIMEOUT)
    GROUPCOORD_KAFKA_ERROR(REBALANCE_IN_PROGRESS)
    GROUPCOORD_KAFKA_ERROR(INVALID_COMMIT_OFFSET_SIZE)
    GROUPCOORD_KAFKA_ERROR(TOPIC_AUTHORIZATION_FAILED)
    GROUPCOORD_KAFKA_ERROR(GROUP_AUTHORIZATION_FAILED)
    GROUPCOORD_KAFKA_ERROR(CLUSTER_AUTHORIZATION_FAILED)
    GROUPCOORD_KAFKA_ERROR(UNSUPPORTED_SASL_MECHANISM)
    GROUPCOORD_KAFKA_ERROR(ILLEGAL_SASL_STATE)
    GROUPCOORD_KAFKA_ERROR(UNSUPPORTED_VERSION)
    GROUPCOORD_KAFKA_ERROR(INVALID_REQUEST)
    GROUPCOORD_KAFKA_ERROR(SASL_AUTHENTICATION_FAILED)
    GROUPCOORD_KAFKA_ERROR(NON_EMPTY_GROUP)
    GROUPCOORD_KAFKA_ERROR(GROUP_ID_NOT_FOUND)
    GROUPCOORD_KAFKA_ERROR(MEMBER_ID_REQUIRED)
    GROUPCOORD_KAFKA_ERROR(GROUP_MAX_SIZE_REACHED)
    GROUPCOORD_KAFKA_ERROR(FENCED_INSTANCE_ID)
    GROUPCOORD_KAFKA_ERROR(UNSTABLE_OFFSET_COMMIT)
    GROUPCOORD_KAFKA_ERROR(UNKNOWN_TOPIC_ID)
    GROUPCOORD_KAFKA_ERROR(FENCED_MEMBER_EPOCH)
    GROUPCOORD_KAFKA_ERROR(UNRELEASED_INSTANCE_ID)
    GROUPCOORD_KAFKA_ERROR(UNSUPPORTED_ASSIGNOR)
    GROUPCOORD_KAFKA_ERROR(STALE_MEMBER_EPOCH)
#undef GROUPCOORD_KAFKA_ERROR
  }
  return "UNKNOWN_ERROR_CODE";
}

OffsetCommitResponse offsetCommitAnswer(const OffsetCommitRequest& request, ErrorCode error) {
  OffsetCommitResponse out;
  for (const auto& t : request.topics) {
    OffsetCommitResponse::Topic topic{t.name, {}};
    for (const auto& p : t.partitions) topic.partitions.push_back({p.partitionIndex, error});
    out.topics.push_back(std::move(topic));
  }
  return out;
}

}  // namespace groupcoord::protocol::kafka
