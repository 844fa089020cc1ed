#pragma once

// The Kafka requests and responses groupcoord's Kafka port serves, as
// plain structs described once each, like groupcoord's own messages
// (protocol/Schema.h, docs/design.md "One description per message"): every
// struct lists its fields in wire order with the versions that carry them,
// as Kafka's message definitions give them. The codec is
// protocol/kafka/Codec.h.
//
// Only the versions coded are described: a field that first appears in a
// version above a message's kMaxVersion is left out. fields() gives the wire
// order; a member added with a newer version is declared after the older
// ones, so that brace-initialised messages keep their meaning. A request and its
// response share kApiKey, kMinVersion and kMaxVersion. A message whose
// versions from kFlexibleSince on are flexible (compact lengths, tagged
// fields, request header version 2, response header version 1;
// docs/protocol.md, "The Kafka port") says so; every served version of the
// others is non-flexible.
//
// Wire types follow from the C++ types (protocol/FieldCodec.h):
// std::string a string (int16 length) or, with schema::bytes, bytes (int32
// length); std::optional<std::string> a nullable string; std::vector an
// array (int32 count); std::optional<std::vector> a nullable array, null
// from schema::nullableSince(N) on; Uuid 16 bytes; std::optional of a
// described struct a nullable structure (int8 -1 null, 1 present).

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/Schema.h"

namespace groupcoord::protocol::kafka {

enum class ApiKey : int16_t {
  Fetch = 1,
  ListOffsets = 2,
  Metadata = 3,
  OffsetCommit = 8,
  OffsetFetch = 9,
  FindCoordinator = 10,
  JoinGroup = 11,
  Heartbeat = 12,
  LeaveGroup = 13,
  SyncGroup = 14,
  DescribeGroups = 15,
  ListGroups = 16,
  SaslHandshake = 17,
  ApiVersions = 18,
  SaslAuthenticate = 36,
  DeleteGroups = 42,
  ConsumerGroupHeartbeat = 68,  // KIP-848's consumer protocol
  ConsumerGroupDescribe = 69,   // KIP-848's consumer protocol
};
// "JoinGroup", ...; "Unknown" for a key that is not coded.
std::string_view apiName(int16_t key);

// The Kafka error codes a group coordinator answers with (Kafka's protocol
// numbers them; a client may send back any value, which is kept).
enum class ErrorCode : int16_t {
  UNKNOWN_SERVER_ERROR = -1,
  NONE = 0,
  UNKNOWN_TOPIC_OR_PARTITION = 3,
  OFFSET_METADATA_TOO_LARGE = 12,
  COORDINATOR_LOAD_IN_PROGRESS = 14,
  COORDINATOR_NOT_AVAILABLE = 15,
  NOT_COORDINATOR = 16,
  ILLEGAL_GENERATION = 22,
  INCONSISTENT_GROUP_PROTOCOL = 23,
  INVALID_GROUP_ID = 24,
  UNKNOWN_MEMBER_ID = 25,
  INVALID_SESSION_TIMEOUT = 26,
  REBALANCE_IN_PROGRESS = 27,
  INVALID_COMMIT_OFFSET_SIZE = 28,
  TOPIC_AUTHORIZATION_FAILED = 29,
  GROUP_AUTHORIZATION_FAILED = 30,
  CLUSTER_AUTHORIZATION_FAILED = 31,
  UNSUPPORTED_SASL_MECHANISM = 33,
  ILLEGAL_SASL_STATE = 34,
  UNSUPPORTED_VERSION = 35,
  INVALID_REQUEST = 42,
  SASL_AUTHENTICATION_FAILED = 58,
  NON_EMPTY_GROUP = 68,
  GROUP_ID_NOT_FOUND = 69,
  MEMBER_ID_REQUIRED = 79,
  GROUP_MAX_SIZE_REACHED = 81,
  FENCED_INSTANCE_ID = 82,
  UNSTABLE_OFFSET_COMMIT = 88,
  UNKNOWN_TOPIC_ID = 100,
  FENCED_MEMBER_EPOCH = 110,
  UNRELEASED_INSTANCE_ID = 111,
  UNSUPPORTED_ASSIGNOR = 112,
  STALE_MEMBER_EPOCH = 113,
};
// "NOT_COORDINATOR"; a value not listed above gives "UNKNOWN_ERROR_CODE".
std::string_view errorName(ErrorCode e);

// DescribeGroups' AuthorizedOperations when they were not asked for.
inline constexpr int32_t kNoAuthorizedOperations = std::numeric_limits<int32_t>::min();

// The first flexible version of a message: its kFlexibleSince, or none.
inline constexpr int16_t kNeverFlexible = schema::kEveryVersion;
template <typename T>
constexpr int16_t firstFlexibleVersion() {
  if constexpr (requires { T::kFlexibleSince; }) {
    return T::kFlexibleSince;
  } else {
    return kNeverFlexible;
  }
}

// A topic's name and its partitions, as many Kafka messages nest them. P,
// the partition, names the structure (P::kTopicName); the topic's name
// travels as "Name" unless P gives kTopicField (and kTopicFieldPython).
template <typename P>
struct TopicOf {
  static constexpr std::string_view kName = P::kTopicName;
  std::string name;
  std::vector<P> partitions;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    if constexpr (requires { P::kTopicField; }) {
      v(m.name, P::kTopicField, P::kTopicFieldPython);
    } else {
      v(m.name, "Name", "name");
    }
    v(m.partitions, "Partitions", "partitions");
  }
  bool operator==(const TopicOf&) const = default;
};

// ---- 18 ApiVersions ----------------------------------------------------------

struct ApiVersionsRequest {
  static constexpr std::string_view kName = "ApiVersionsRequest";
  static constexpr ApiKey kApiKey = ApiKey::ApiVersions;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 2;
  template <typename V, typename Self>
  static constexpr void fields(V&, Self&) {}  // versions 0 to 2 carry no field
  bool operator==(const ApiVersionsRequest&) const = default;
};

struct ApiVersionsResponse {
  struct ApiVersion {
    static constexpr std::string_view kName = "ApiVersion";
    int16_t apiKey = 0;
    int16_t minVersion = 0;
    int16_t maxVersion = 0;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.apiKey, "ApiKey", "api_key");
      v(m.minVersion, "MinVersion", "min_version");
      v(m.maxVersion, "MaxVersion", "max_version");
    }
    bool operator==(const ApiVersion&) const = default;
  };
  static constexpr std::string_view kName = "ApiVersionsResponse";
  static constexpr ApiKey kApiKey = ApiKey::ApiVersions;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 2;
  ErrorCode error = ErrorCode::NONE;
  std::vector<ApiVersion> apiKeys;
  int32_t throttleTimeMs = 0;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.error, "ErrorCode", "error_code");
    v(m.apiKeys, "ApiKeys", "api_keys");
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(1));
  }
  bool operator==(const ApiVersionsResponse&) const = default;
};

// ---- 3 Metadata --------------------------------------------------------------

struct MetadataRequest {
  struct Topic {
    static constexpr std::string_view kName = "MetadataRequestTopic";
    std::optional<std::string> name;  // null (version 10 on): the topic is asked by its id
    Uuid topicId;                     // version 10 on; all zero: asked by its name
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.topicId, "TopicId", "topic_id", schema::since(10), schema::note("all zero: by name"));
      v(m.name, "Name", "name", schema::nullableSince(10), schema::note("null: by id"));
    }
    bool operator==(const Topic&) const = default;
  };
  static constexpr std::string_view kName = "MetadataRequest";
  static constexpr ApiKey kApiKey = ApiKey::Metadata;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 12;
  static constexpr int16_t kFlexibleSince = 9;
  // Version 0: empty means every topic. Version 1 on: null means every
  // topic, empty none.
  std::optional<std::vector<Topic>> topics = std::vector<Topic>{};
  bool allowAutoTopicCreation = true;
  bool includeClusterAuthorizedOperations = false;
  bool includeTopicAuthorizedOperations = false;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.topics, "Topics", "topics", schema::nullableSince(1));
    v(m.allowAutoTopicCreation, "AllowAutoTopicCreation", "allow_auto_topic_creation", schema::since(4));
    v(m.includeClusterAuthorizedOperations, "IncludeClusterAuthorizedOperations",
      "include_cluster_authorized_operations", schema::since(8), schema::until(10));
    v(m.includeTopicAuthorizedOperations, "IncludeTopicAuthorizedOperations", "include_topic_authorized_operations",
      schema::since(8));
  }
  bool operator==(const MetadataRequest&) const = default;
};

struct MetadataResponse {
  struct Broker {
    static constexpr std::string_view kName = "MetadataResponseBroker";
    int32_t nodeId = 0;
    std::string host;
    int32_t port = 0;
    std::optional<std::string> rack;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.nodeId, "NodeId", "node_id");
      v(m.host, "Host", "host");
      v(m.port, "Port", "port");
      v(m.rack, "Rack", "rack", schema::since(1));
    }
    bool operator==(const Broker&) const = default;
  };
  struct Partition {
    static constexpr std::string_view kName = "MetadataResponsePartition";
    ErrorCode error = ErrorCode::NONE;
    int32_t partitionIndex = 0;
    int32_t leaderId = -1;
    std::vector<int32_t> replicaNodes;
    std::vector<int32_t> isrNodes;
    int32_t leaderEpoch = -1;  // -1: unknown, so a client does not validate its position against it
    std::vector<int32_t> offlineReplicas;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.error, "ErrorCode", "error_code");
      v(m.partitionIndex, "PartitionIndex", "partition_index");
      v(m.leaderId, "LeaderId", "leader_id");
      v(m.leaderEpoch, "LeaderEpoch", "leader_epoch", schema::since(7), schema::note("-1: unknown"));
      v(m.replicaNodes, "ReplicaNodes", "replica_nodes");
      v(m.isrNodes, "IsrNodes", "isr_nodes");
      v(m.offlineReplicas, "OfflineReplicas", "offline_replicas", schema::since(5));
    }
    bool operator==(const Partition&) const = default;
  };
  struct Topic {
    static constexpr std::string_view kName = "MetadataResponseTopic";
    ErrorCode error = ErrorCode::NONE;
    std::optional<std::string> name;  // null (version 12 on): an id asked for that names no topic
    bool isInternal = false;
    std::vector<Partition> partitions;
    Uuid topicId;  // version 10 on
    int32_t topicAuthorizedOperations = kNoAuthorizedOperations;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.error, "ErrorCode", "error_code");
      v(m.name, "Name", "name", schema::nullableSince(12));
      v(m.topicId, "TopicId", "topic_id", schema::since(10));
      v(m.isInternal, "IsInternal", "is_internal", schema::since(1));
      v(m.partitions, "Partitions", "partitions");
      v(m.topicAuthorizedOperations, "TopicAuthorizedOperations", "topic_authorized_operations", schema::since(8));
    }
    bool operator==(const Topic&) const = default;
  };
  static constexpr std::string_view kName = "MetadataResponse";
  static constexpr ApiKey kApiKey = ApiKey::Metadata;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 12;
  static constexpr int16_t kFlexibleSince = 9;
  int32_t throttleTimeMs = 0;
  std::vector<Broker> brokers;
  std::optional<std::string> clusterId;
  int32_t controllerId = -1;
  std::vector<Topic> topics;
  int32_t clusterAuthorizedOperations = kNoAuthorizedOperations;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(3));
    v(m.brokers, "Brokers", "brokers");
    v(m.clusterId, "ClusterId", "cluster_id", schema::since(2));
    v(m.controllerId, "ControllerId", "controller_id", schema::since(1));
    v(m.topics, "Topics", "topics");
    v(m.clusterAuthorizedOperations, "ClusterAuthorizedOperations", "cluster_authorized_operations",
      schema::since(8), schema::until(10));
  }
  bool operator==(const MetadataResponse&) const = default;
};

// ---- 10 FindCoordinator ------------------------------------------------------

struct FindCoordinatorRequest {
  static constexpr std::string_view kName = "FindCoordinatorRequest";
  static constexpr ApiKey kApiKey = ApiKey::FindCoordinator;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 2;
  std::string key;
  int8_t keyType = 0;  // 0 a group, 1 a transaction
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.key, "Key", "key");
    v(m.keyType, "KeyType", "key_type", schema::since(1));
  }
  bool operator==(const FindCoordinatorRequest&) const = default;
};

struct FindCoordinatorResponse {
  static constexpr std::string_view kName = "FindCoordinatorResponse";
  static constexpr ApiKey kApiKey = ApiKey::FindCoordinator;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 2;
  int32_t throttleTimeMs = 0;
  ErrorCode error = ErrorCode::NONE;
  std::optional<std::string> errorMessage;
  int32_t nodeId = -1;
  std::string host;
  int32_t port = -1;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(1));
    v(m.error, "ErrorCode", "error_code");
    v(m.errorMessage, "ErrorMessage", "error_message", schema::since(1));
    v(m.nodeId, "NodeId", "node_id");
    v(m.host, "Host", "host");
    v(m.port, "Port", "port");
  }
  bool operator==(const FindCoordinatorResponse&) const = default;
};

// ---- 11 JoinGroup ------------------------------------------------------------

struct JoinGroupRequest {
  struct Protocol {
    static constexpr std::string_view kName = "JoinGroupRequestProtocol";
    std::string name;
    std::string metadata;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.name, "Name", "name");
      v(m.metadata, "Metadata", "metadata", schema::bytes);
    }
    bool operator==(const Protocol&) const = default;
  };
  static constexpr std::string_view kName = "JoinGroupRequest";
  static constexpr ApiKey kApiKey = ApiKey::JoinGroup;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 5;
  std::string groupId;
  int32_t sessionTimeoutMs = 0;
  int32_t rebalanceTimeoutMs = -1;  // version 0: the session timeout is the rebalance timeout
  std::string memberId;
  std::optional<std::string> groupInstanceId;
  std::string protocolType;
  std::vector<Protocol> protocols;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groupId, "GroupId", "group_id");
    v(m.sessionTimeoutMs, "SessionTimeoutMs", "session_timeout_ms");
    v(m.rebalanceTimeoutMs, "RebalanceTimeoutMs", "rebalance_timeout_ms", schema::since(1));
    v(m.memberId, "MemberId", "member_id");
    v(m.groupInstanceId, "GroupInstanceId", "group_instance_id", schema::since(5));
    v(m.protocolType, "ProtocolType", "protocol_type");
    v(m.protocols, "Protocols", "protocols");
  }
  bool operator==(const JoinGroupRequest&) const = default;
};

struct JoinGroupResponse {
  struct Member {
    static constexpr std::string_view kName = "JoinGroupResponseMember";
    std::string memberId;
    std::optional<std::string> groupInstanceId;
    std::string metadata;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.memberId, "MemberId", "member_id");
      v(m.groupInstanceId, "GroupInstanceId", "group_instance_id", schema::since(5));
      v(m.metadata, "Metadata", "metadata", schema::bytes);
    }
    bool operator==(const Member&) const = default;
  };
  static constexpr std::string_view kName = "JoinGroupResponse";
  static constexpr ApiKey kApiKey = ApiKey::JoinGroup;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 5;
  int32_t throttleTimeMs = 0;
  ErrorCode error = ErrorCode::NONE;
  int32_t generationId = -1;
  std::string protocolName;
  std::string leader;
  std::string memberId;
  std::vector<Member> members;  // filled for the leader only
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(2));
    v(m.error, "ErrorCode", "error_code");
    v(m.generationId, "GenerationId", "generation_id");
    v(m.protocolName, "ProtocolName", "protocol_name");
    v(m.leader, "Leader", "leader");
    v(m.memberId, "MemberId", "member_id");
    v(m.members, "Members", "members");
  }
  bool operator==(const JoinGroupResponse&) const = default;
};

// ---- 14 SyncGroup ------------------------------------------------------------

struct SyncGroupRequest {
  struct Assignment {
    static constexpr std::string_view kName = "SyncGroupRequestAssignment";
    std::string memberId;
    std::string assignment;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.memberId, "MemberId", "member_id");
      v(m.assignment, "Assignment", "assignment", schema::bytes);
    }
    bool operator==(const Assignment&) const = default;
  };
  static constexpr std::string_view kName = "SyncGroupRequest";
  static constexpr ApiKey kApiKey = ApiKey::SyncGroup;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 3;
  std::string groupId;
  int32_t generationId = -1;
  std::string memberId;
  std::optional<std::string> groupInstanceId;
  std::vector<Assignment> assignments;  // sent by the leader only
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groupId, "GroupId", "group_id");
    v(m.generationId, "GenerationId", "generation_id");
    v(m.memberId, "MemberId", "member_id");
    v(m.groupInstanceId, "GroupInstanceId", "group_instance_id", schema::since(3));
    v(m.assignments, "Assignments", "assignments");
  }
  bool operator==(const SyncGroupRequest&) const = default;
};

struct SyncGroupResponse {
  static constexpr std::string_view kName = "SyncGroupResponse";
  static constexpr ApiKey kApiKey = ApiKey::SyncGroup;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 3;
  int32_t throttleTimeMs = 0;
  ErrorCode error = ErrorCode::NONE;
  std::string assignment;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(1));
    v(m.error, "ErrorCode", "error_code");
    v(m.assignment, "Assignment", "assignment", schema::bytes);
  }
  bool operator==(const SyncGroupResponse&) const = default;
};

// ---- 12 Heartbeat ------------------------------------------------------------

struct HeartbeatRequest {
  static constexpr std::string_view kName = "HeartbeatRequest";
  static constexpr ApiKey kApiKey = ApiKey::Heartbeat;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 3;
  std::string groupId;
  int32_t generationId = -1;
  std::string memberId;
  std::optional<std::string> groupInstanceId;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groupId, "GroupId", "group_id");
    v(m.generationId, "GenerationId", "generation_id");
    v(m.memberId, "MemberId", "member_id");
    v(m.groupInstanceId, "GroupInstanceId", "group_instance_id", schema::since(3));
  }
  bool operator==(const HeartbeatRequest&) const = default;
};

struct HeartbeatResponse {
  static constexpr std::string_view kName = "HeartbeatResponse";
  static constexpr ApiKey kApiKey = ApiKey::Heartbeat;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 3;
  int32_t throttleTimeMs = 0;
  ErrorCode error = ErrorCode::NONE;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(1));
    v(m.error, "ErrorCode", "error_code");
  }
  bool operator==(const HeartbeatResponse&) const = default;
};

// ---- 13 LeaveGroup -----------------------------------------------------------

struct LeaveGroupRequest {
  static constexpr std::string_view kName = "LeaveGroupRequest";
  static constexpr ApiKey kApiKey = ApiKey::LeaveGroup;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 1;
  std::string groupId;
  std::string memberId;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groupId, "GroupId", "group_id");
    v(m.memberId, "MemberId", "member_id", schema::until(2));  // a list of members from version 3
  }
  bool operator==(const LeaveGroupRequest&) const = default;
};

struct LeaveGroupResponse {
  static constexpr std::string_view kName = "LeaveGroupResponse";
  static constexpr ApiKey kApiKey = ApiKey::LeaveGroup;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 1;
  int32_t throttleTimeMs = 0;
  ErrorCode error = ErrorCode::NONE;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(1));
    v(m.error, "ErrorCode", "error_code");
  }
  bool operator==(const LeaveGroupResponse&) const = default;
};

// ---- 8 OffsetCommit ----------------------------------------------------------

struct OffsetCommitRequest {
  struct Partition {
    static constexpr std::string_view kName = "OffsetCommitRequestPartition";
    static constexpr std::string_view kTopicName = "OffsetCommitRequestTopic";
    int32_t partitionIndex = 0;
    int64_t committedOffset = -1;
    int32_t committedLeaderEpoch = -1;
    int64_t commitTimestamp = -1;
    std::optional<std::string> committedMetadata;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.partitionIndex, "PartitionIndex", "partition_index");
      v(m.committedOffset, "CommittedOffset", "committed_offset");
      v(m.committedLeaderEpoch, "CommittedLeaderEpoch", "committed_leader_epoch", schema::since(6));
      v(m.commitTimestamp, "CommitTimestamp", "commit_timestamp", schema::since(1), schema::until(1));
      v(m.committedMetadata, "CommittedMetadata", "committed_metadata");
    }
    bool operator==(const Partition&) const = default;
  };
  using Topic = TopicOf<Partition>;
  static constexpr std::string_view kName = "OffsetCommitRequest";
  static constexpr ApiKey kApiKey = ApiKey::OffsetCommit;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 9;
  static constexpr int16_t kFlexibleSince = 8;
  std::string groupId;
  int32_t generationId = -1;
  std::string memberId;
  std::optional<std::string> groupInstanceId;
  int64_t retentionTimeMs = -1;
  std::vector<Topic> topics;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groupId, "GroupId", "group_id");
    v(m.generationId, "GenerationId", "generation_id", schema::since(1),
      schema::note("from version 9 also a KIP-848 member's epoch (Kafka: GenerationIdOrMemberEpoch)"));
    v(m.memberId, "MemberId", "member_id", schema::since(1));
    v(m.groupInstanceId, "GroupInstanceId", "group_instance_id", schema::since(7));
    v(m.retentionTimeMs, "RetentionTimeMs", "retention_time_ms", schema::since(2), schema::until(4));
    v(m.topics, "Topics", "topics");
  }
  bool operator==(const OffsetCommitRequest&) const = default;
};

struct OffsetCommitResponse {
  struct Partition {
    static constexpr std::string_view kName = "OffsetCommitResponsePartition";
    static constexpr std::string_view kTopicName = "OffsetCommitResponseTopic";
    int32_t partitionIndex = 0;
    ErrorCode error = ErrorCode::NONE;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.partitionIndex, "PartitionIndex", "partition_index");
      v(m.error, "ErrorCode", "error_code");
    }
    bool operator==(const Partition&) const = default;
  };
  using Topic = TopicOf<Partition>;
  static constexpr std::string_view kName = "OffsetCommitResponse";
  static constexpr ApiKey kApiKey = ApiKey::OffsetCommit;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 9;
  static constexpr int16_t kFlexibleSince = 8;
  int32_t throttleTimeMs = 0;
  std::vector<Topic> topics;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(3));
    v(m.topics, "Topics", "topics");
  }
  bool operator==(const OffsetCommitResponse&) const = default;
};

// ---- 9 OffsetFetch -----------------------------------------------------------
// Versions 0 to 7 ask for one group's offsets; version 8 on for several
// groups at once (Groups), each answered on its own. Version 9 adds the
// asking member's id and epoch (KIP-848).

struct OffsetFetchRequest {
  struct Topic {
    static constexpr std::string_view kName = "OffsetFetchRequestTopic";
    std::string name;
    std::vector<int32_t> partitionIndexes;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.name, "Name", "name");
      v(m.partitionIndexes, "PartitionIndexes", "partition_indexes");
    }
    bool operator==(const Topic&) const = default;
  };
  struct Group {
    static constexpr std::string_view kName = "OffsetFetchRequestGroup";
    std::string groupId;
    std::optional<std::string> memberId;  // version 9 on; null: not asked as a KIP-848 member
    int32_t memberEpoch = -1;
    std::optional<std::vector<Topic>> topics = std::vector<Topic>{};  // null: every topic
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.groupId, "GroupId", "group_id");
      v(m.memberId, "MemberId", "member_id", schema::since(9), schema::note("null: not a KIP-848 member"));
      v(m.memberEpoch, "MemberEpoch", "member_epoch", schema::since(9), schema::note("-1: not a KIP-848 member"));
      v(m.topics, "Topics", "topics", schema::note("null: every topic"));
    }
    bool operator==(const Group&) const = default;
  };
  static constexpr std::string_view kName = "OffsetFetchRequest";
  static constexpr ApiKey kApiKey = ApiKey::OffsetFetch;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 9;
  static constexpr int16_t kFlexibleSince = 6;
  static constexpr int16_t kGroupsSince = 8;  // the first version that asks by Groups
  std::string groupId;                                               // versions 0 to 7
  std::optional<std::vector<Topic>> topics = std::vector<Topic>{};  // versions 0 to 7; null (2 on): every topic
  std::vector<Group> groups;                                         // version 8 on
  bool requireStable = false;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groupId, "GroupId", "group_id", schema::until(7));
    v(m.topics, "Topics", "topics", schema::until(7), schema::nullableSince(2));
    v(m.groups, "Groups", "groups", schema::since(8));
    v(m.requireStable, "RequireStable", "require_stable", schema::since(7));
  }
  bool operator==(const OffsetFetchRequest&) const = default;
};

struct OffsetFetchResponse {
  struct Partition {
    static constexpr std::string_view kName = "OffsetFetchResponsePartition";
    static constexpr std::string_view kTopicName = "OffsetFetchResponseTopic";
    int32_t partitionIndex = 0;
    int64_t committedOffset = -1;
    int32_t committedLeaderEpoch = -1;
    std::optional<std::string> metadata;
    ErrorCode error = ErrorCode::NONE;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.partitionIndex, "PartitionIndex", "partition_index");
      v(m.committedOffset, "CommittedOffset", "committed_offset");
      v(m.committedLeaderEpoch, "CommittedLeaderEpoch", "committed_leader_epoch", schema::since(5));
      v(m.metadata, "Metadata", "metadata");
      v(m.error, "ErrorCode", "error_code");
    }
    bool operator==(const Partition&) const = default;
  };
  using Topic = TopicOf<Partition>;
  struct Group {
    static constexpr std::string_view kName = "OffsetFetchResponseGroup";
    std::string groupId;
    std::vector<Topic> topics;
    ErrorCode error = ErrorCode::NONE;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.groupId, "GroupId", "group_id");
      v(m.topics, "Topics", "topics");
      v(m.error, "ErrorCode", "error_code");
    }
    bool operator==(const Group&) const = default;
  };
  static constexpr std::string_view kName = "OffsetFetchResponse";
  static constexpr ApiKey kApiKey = ApiKey::OffsetFetch;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 9;
  static constexpr int16_t kFlexibleSince = 6;
  int32_t throttleTimeMs = 0;
  std::vector<Topic> topics;          // versions 0 to 7
  ErrorCode error = ErrorCode::NONE;  // the group's (versions 2 to 7); before it, only per partition
  std::vector<Group> groups;          // version 8 on, in the request's order
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(3));
    v(m.topics, "Topics", "topics", schema::until(7));
    v(m.error, "ErrorCode", "error_code", schema::since(2), schema::until(7));
    v(m.groups, "Groups", "groups", schema::since(8));
  }
  bool operator==(const OffsetFetchResponse&) const = default;
};

// ---- 16 ListGroups -----------------------------------------------------------

struct ListGroupsRequest {
  static constexpr std::string_view kName = "ListGroupsRequest";
  static constexpr ApiKey kApiKey = ApiKey::ListGroups;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 2;
  template <typename V, typename Self>
  static constexpr void fields(V&, Self&) {}  // versions 0 to 2 carry no field
  bool operator==(const ListGroupsRequest&) const = default;
};

struct ListGroupsResponse {
  struct Group {
    static constexpr std::string_view kName = "ListedGroup";
    std::string groupId;
    std::string protocolType;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.groupId, "GroupId", "group_id");
      v(m.protocolType, "ProtocolType", "protocol_type");
    }
    bool operator==(const Group&) const = default;
  };
  static constexpr std::string_view kName = "ListGroupsResponse";
  static constexpr ApiKey kApiKey = ApiKey::ListGroups;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 2;
  int32_t throttleTimeMs = 0;
  ErrorCode error = ErrorCode::NONE;
  std::vector<Group> groups;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(1));
    v(m.error, "ErrorCode", "error_code");
    v(m.groups, "Groups", "groups");
  }
  bool operator==(const ListGroupsResponse&) const = default;
};

// ---- 15 DescribeGroups -------------------------------------------------------

struct DescribeGroupsRequest {
  static constexpr std::string_view kName = "DescribeGroupsRequest";
  static constexpr ApiKey kApiKey = ApiKey::DescribeGroups;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 4;
  std::vector<std::string> groups;
  bool includeAuthorizedOperations = false;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groups, "Groups", "groups");
    v(m.includeAuthorizedOperations, "IncludeAuthorizedOperations", "include_authorized_operations",
      schema::since(3));
  }
  bool operator==(const DescribeGroupsRequest&) const = default;
};

struct DescribeGroupsResponse {
  struct Member {
    static constexpr std::string_view kName = "DescribedGroupMember";
    std::string memberId;
    std::optional<std::string> groupInstanceId;
    std::string clientId;
    std::string clientHost;
    std::string memberMetadata;
    std::string memberAssignment;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.memberId, "MemberId", "member_id");
      v(m.groupInstanceId, "GroupInstanceId", "group_instance_id", schema::since(4));
      v(m.clientId, "ClientId", "client_id");
      v(m.clientHost, "ClientHost", "client_host");
      v(m.memberMetadata, "MemberMetadata", "member_metadata", schema::bytes);
      v(m.memberAssignment, "MemberAssignment", "member_assignment", schema::bytes);
    }
    bool operator==(const Member&) const = default;
  };
  struct Group {
    static constexpr std::string_view kName = "DescribedGroup";
    ErrorCode error = ErrorCode::NONE;
    std::string groupId;
    std::string groupState;
    std::string protocolType;
    std::string protocolData;
    std::vector<Member> members;
    int32_t authorizedOperations = kNoAuthorizedOperations;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.error, "ErrorCode", "error_code");
      v(m.groupId, "GroupId", "group_id");
      v(m.groupState, "GroupState", "group_state");
      v(m.protocolType, "ProtocolType", "protocol_type");
      v(m.protocolData, "ProtocolData", "protocol_data");
      v(m.members, "Members", "members");
      v(m.authorizedOperations, "AuthorizedOperations", "authorized_operations", schema::since(3));
    }
    bool operator==(const Group&) const = default;
  };
  static constexpr std::string_view kName = "DescribeGroupsResponse";
  static constexpr ApiKey kApiKey = ApiKey::DescribeGroups;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 4;
  int32_t throttleTimeMs = 0;
  std::vector<Group> groups;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(1));
    v(m.groups, "Groups", "groups");
  }
  bool operator==(const DescribeGroupsResponse&) const = default;
};

// ---- 42 DeleteGroups ---------------------------------------------------------

struct DeleteGroupsRequest {
  static constexpr std::string_view kName = "DeleteGroupsRequest";
  static constexpr ApiKey kApiKey = ApiKey::DeleteGroups;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 1;
  std::vector<std::string> groupsNames;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groupsNames, "GroupsNames", "groups_names");
  }
  bool operator==(const DeleteGroupsRequest&) const = default;
};

struct DeleteGroupsResponse {
  struct Result {
    static constexpr std::string_view kName = "DeletableGroupResult";
    std::string groupId;
    ErrorCode error = ErrorCode::NONE;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.groupId, "GroupId", "group_id");
      v(m.error, "ErrorCode", "error_code");
    }
    bool operator==(const Result&) const = default;
  };
  static constexpr std::string_view kName = "DeleteGroupsResponse";
  static constexpr ApiKey kApiKey = ApiKey::DeleteGroups;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 1;
  int32_t throttleTimeMs = 0;  // in every version, unlike the other APIs
  std::vector<Result> results;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms");
    v(m.results, "Results", "results");
  }
  bool operator==(const DeleteGroupsResponse&) const = default;
};

// ---- 17 SaslHandshake --------------------------------------------------------

struct SaslHandshakeRequest {
  static constexpr std::string_view kName = "SaslHandshakeRequest";
  static constexpr ApiKey kApiKey = ApiKey::SaslHandshake;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 1;
  std::string mechanism;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.mechanism, "Mechanism", "mechanism");
  }
  bool operator==(const SaslHandshakeRequest&) const = default;
};

struct SaslHandshakeResponse {
  static constexpr std::string_view kName = "SaslHandshakeResponse";
  static constexpr ApiKey kApiKey = ApiKey::SaslHandshake;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 1;
  ErrorCode error = ErrorCode::NONE;
  std::vector<std::string> mechanisms;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.error, "ErrorCode", "error_code");
    v(m.mechanisms, "Mechanisms", "mechanisms");
  }
  bool operator==(const SaslHandshakeResponse&) const = default;
};

// ---- 36 SaslAuthenticate -----------------------------------------------------

struct SaslAuthenticateRequest {
  static constexpr std::string_view kName = "SaslAuthenticateRequest";
  static constexpr ApiKey kApiKey = ApiKey::SaslAuthenticate;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 1;
  std::string authBytes;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.authBytes, "AuthBytes", "auth_bytes", schema::bytes);
  }
  bool operator==(const SaslAuthenticateRequest&) const = default;
};

struct SaslAuthenticateResponse {
  static constexpr std::string_view kName = "SaslAuthenticateResponse";
  static constexpr ApiKey kApiKey = ApiKey::SaslAuthenticate;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 1;
  ErrorCode error = ErrorCode::NONE;
  std::optional<std::string> errorMessage;
  std::string authBytes;
  int64_t sessionLifetimeMs = 0;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.error, "ErrorCode", "error_code");
    v(m.errorMessage, "ErrorMessage", "error_message");
    v(m.authBytes, "AuthBytes", "auth_bytes", schema::bytes);
    v(m.sessionLifetimeMs, "SessionLifetimeMs", "session_lifetime_ms", schema::since(1));
  }
  bool operator==(const SaslAuthenticateResponse&) const = default;
};

// ---- 1 Fetch -----------------------------------------------------------------
// Versions 0 to 6: version 7 brings fetch sessions, and a client that reads
// the broker's release from the ApiVersions list takes Fetch 7 for a newer
// release than the other APIs served (docs/protocol.md, "The Kafka port").

struct FetchRequest {
  struct Partition {
    static constexpr std::string_view kName = "FetchPartition";
    static constexpr std::string_view kTopicName = "FetchTopic";
    int32_t partitionIndex = 0;
    int64_t fetchOffset = 0;
    int64_t logStartOffset = -1;  // a follower's; -1 from a consumer
    int32_t partitionMaxBytes = 0;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.partitionIndex, "PartitionIndex", "partition_index");
      v(m.fetchOffset, "FetchOffset", "fetch_offset");
      v(m.logStartOffset, "LogStartOffset", "log_start_offset", schema::since(5));
      v(m.partitionMaxBytes, "PartitionMaxBytes", "partition_max_bytes");
    }
    bool operator==(const Partition&) const = default;
  };
  using Topic = TopicOf<Partition>;
  static constexpr std::string_view kName = "FetchRequest";
  static constexpr ApiKey kApiKey = ApiKey::Fetch;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 6;
  int32_t replicaId = -1;  // -1: a consumer
  int32_t maxWaitMs = 0;
  int32_t minBytes = 0;
  int32_t maxBytes = 0x7fffffff;
  int8_t isolationLevel = 0;  // 0 read uncommitted, 1 read committed
  std::vector<Topic> topics;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.replicaId, "ReplicaId", "replica_id");
    v(m.maxWaitMs, "MaxWaitMs", "max_wait_ms");
    v(m.minBytes, "MinBytes", "min_bytes");
    v(m.maxBytes, "MaxBytes", "max_bytes", schema::since(3));
    v(m.isolationLevel, "IsolationLevel", "isolation_level", schema::since(4));
    v(m.topics, "Topics", "topics");
  }
  bool operator==(const FetchRequest&) const = default;
};

struct FetchResponse {
  struct AbortedTransaction {
    static constexpr std::string_view kName = "AbortedTransaction";
    int64_t producerId = 0;
    int64_t firstOffset = 0;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.producerId, "ProducerId", "producer_id");
      v(m.firstOffset, "FirstOffset", "first_offset");
    }
    bool operator==(const AbortedTransaction&) const = default;
  };
  struct Partition {
    static constexpr std::string_view kName = "FetchPartitionResponse";
    static constexpr std::string_view kTopicName = "FetchTopicResponse";
    static constexpr const char* kTopicField = "Topic";
    static constexpr const char* kTopicFieldPython = "topic";
    int32_t partitionIndex = 0;
    ErrorCode error = ErrorCode::NONE;
    int64_t highWatermark = 0;
    int64_t lastStableOffset = 0;
    int64_t logStartOffset = 0;
    std::optional<std::vector<AbortedTransaction>> abortedTransactions = std::vector<AbortedTransaction>{};
    // Empty (length 0) rather than null: some clients read a record set of
    // length -1 as an error (docs/protocol.md, "The Kafka port").
    std::optional<std::string> records = std::string();
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.partitionIndex, "PartitionIndex", "partition_index");
      v(m.error, "ErrorCode", "error_code");
      v(m.highWatermark, "HighWatermark", "high_watermark");
      v(m.lastStableOffset, "LastStableOffset", "last_stable_offset", schema::since(4));
      v(m.logStartOffset, "LogStartOffset", "log_start_offset", schema::since(5));
      v(m.abortedTransactions, "AbortedTransactions", "aborted_transactions", schema::since(4),
        schema::nullableSince(4));
      v(m.records, "Records", "records", schema::bytes);
    }
    bool operator==(const Partition&) const = default;
  };
  using Topic = TopicOf<Partition>;
  static constexpr std::string_view kName = "FetchResponse";
  static constexpr ApiKey kApiKey = ApiKey::Fetch;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 6;
  int32_t throttleTimeMs = 0;
  std::vector<Topic> topics;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(1));
    v(m.topics, "Responses", "responses");
  }
  bool operator==(const FetchResponse&) const = default;
};

// ---- 2 ListOffsets -----------------------------------------------------------
// Versions 0 to 3: version 4 adds leader epochs, which no partition here has.

struct ListOffsetsRequest {
  struct Partition {
    static constexpr std::string_view kName = "ListOffsetsPartition";
    static constexpr std::string_view kTopicName = "ListOffsetsTopic";
    int32_t partitionIndex = 0;
    int64_t timestamp = -1;  // -1 the latest offset, -2 the earliest, else a time in ms
    int32_t maxNumOffsets = 1;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.partitionIndex, "PartitionIndex", "partition_index");
      v(m.timestamp, "Timestamp", "timestamp");
      v(m.maxNumOffsets, "MaxNumOffsets", "max_num_offsets", schema::until(0));
    }
    bool operator==(const Partition&) const = default;
  };
  using Topic = TopicOf<Partition>;
  static constexpr std::string_view kName = "ListOffsetsRequest";
  static constexpr ApiKey kApiKey = ApiKey::ListOffsets;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 3;
  int32_t replicaId = -1;
  int8_t isolationLevel = 0;
  std::vector<Topic> topics;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.replicaId, "ReplicaId", "replica_id");
    v(m.isolationLevel, "IsolationLevel", "isolation_level", schema::since(2));
    v(m.topics, "Topics", "topics");
  }
  bool operator==(const ListOffsetsRequest&) const = default;
};

struct ListOffsetsResponse {
  struct Partition {
    static constexpr std::string_view kName = "ListOffsetsPartitionResponse";
    static constexpr std::string_view kTopicName = "ListOffsetsTopicResponse";
    int32_t partitionIndex = 0;
    ErrorCode error = ErrorCode::NONE;
    std::vector<int64_t> oldStyleOffsets;  // version 0 only
    int64_t timestamp = -1;
    int64_t offset = -1;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.partitionIndex, "PartitionIndex", "partition_index");
      v(m.error, "ErrorCode", "error_code");
      v(m.oldStyleOffsets, "OldStyleOffsets", "old_style_offsets", schema::until(0));
      v(m.timestamp, "Timestamp", "timestamp", schema::since(1));
      v(m.offset, "Offset", "offset", schema::since(1));
    }
    bool operator==(const Partition&) const = default;
  };
  using Topic = TopicOf<Partition>;
  static constexpr std::string_view kName = "ListOffsetsResponse";
  static constexpr ApiKey kApiKey = ApiKey::ListOffsets;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 3;
  int32_t throttleTimeMs = 0;
  std::vector<Topic> topics;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms", schema::since(2));
    v(m.topics, "Topics", "topics");
  }
  bool operator==(const ListOffsetsResponse&) const = default;
};

// ---- 68 ConsumerGroupHeartbeat -----------------------------------------------
// KIP-848's consumer protocol: flexible from version 0. Version 1 adds
// SubscribedTopicRegex to the request (the response is version 0's), and
// Kafka then wants a MemberId the client made, never empty: a rule of the
// server, not of the codec.

struct ConsumerGroupHeartbeatRequest {
  struct TopicPartitions {
    static constexpr std::string_view kName = "TopicPartitions";
    Uuid topicId;
    std::vector<int32_t> partitions;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.topicId, "TopicId", "topic_id");
      v(m.partitions, "Partitions", "partitions");
    }
    bool operator==(const TopicPartitions&) const = default;
  };
  static constexpr std::string_view kName = "ConsumerGroupHeartbeatRequest";
  static constexpr ApiKey kApiKey = ApiKey::ConsumerGroupHeartbeat;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 1;
  static constexpr int16_t kFlexibleSince = 0;
  std::string groupId;
  std::string memberId;
  int32_t memberEpoch = 0;  // 0 joins, -1 leaves, -2 a static member leaves to rejoin
  std::optional<std::string> instanceId;
  std::optional<std::string> rackId;
  int32_t rebalanceTimeoutMs = -1;
  std::optional<std::vector<std::string>> subscribedTopicNames;
  std::optional<std::string> serverAssignor;
  std::optional<std::vector<TopicPartitions>> topicPartitions;
  std::optional<std::string> subscribedTopicRegex;  // version 1 on, after SubscribedTopicNames on the wire
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groupId, "GroupId", "group_id");
    v(m.memberId, "MemberId", "member_id", schema::note("version 1 on: made by the client, never empty"));
    v(m.memberEpoch, "MemberEpoch", "member_epoch", schema::note("0 joins; -1 leaves; -2 a static member leaves"));
    v(m.instanceId, "InstanceId", "instance_id", schema::note("null: none, or unchanged"));
    v(m.rackId, "RackId", "rack_id", schema::note("null: none, or unchanged"));
    v(m.rebalanceTimeoutMs, "RebalanceTimeoutMs", "rebalance_timeout_ms", schema::note("ms; -1: unchanged"));
    v(m.subscribedTopicNames, "SubscribedTopicNames", "subscribed_topic_names", schema::note("null: unchanged"));
    v(m.subscribedTopicRegex, "SubscribedTopicRegex", "subscribed_topic_regex", schema::since(1),
      schema::note("null: unchanged"));
    v(m.serverAssignor, "ServerAssignor", "server_assignor", schema::note("null: none, or unchanged"));
    v(m.topicPartitions, "TopicPartitions", "topic_partitions", schema::note("owned; null: unchanged"));
  }
  bool operator==(const ConsumerGroupHeartbeatRequest&) const = default;
};

struct ConsumerGroupHeartbeatResponse {
  using TopicPartitions = ConsumerGroupHeartbeatRequest::TopicPartitions;
  struct Assignment {
    static constexpr std::string_view kName = "Assignment";
    std::vector<TopicPartitions> topicPartitions;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.topicPartitions, "TopicPartitions", "topic_partitions");
    }
    bool operator==(const Assignment&) const = default;
  };
  static constexpr std::string_view kName = "ConsumerGroupHeartbeatResponse";
  static constexpr ApiKey kApiKey = ApiKey::ConsumerGroupHeartbeat;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 1;  // version 1 is version 0
  static constexpr int16_t kFlexibleSince = 0;
  int32_t throttleTimeMs = 0;
  ErrorCode error = ErrorCode::NONE;
  std::optional<std::string> errorMessage;
  std::optional<std::string> memberId;
  int32_t memberEpoch = 0;
  int32_t heartbeatIntervalMs = 0;
  std::optional<Assignment> assignment;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms");
    v(m.error, "ErrorCode", "error_code");
    v(m.errorMessage, "ErrorMessage", "error_message");
    v(m.memberId, "MemberId", "member_id", schema::note("given when the member joins with epoch 0"));
    v(m.memberEpoch, "MemberEpoch", "member_epoch");
    v(m.heartbeatIntervalMs, "HeartbeatIntervalMs", "heartbeat_interval_ms", schema::note("ms"));
    v(m.assignment, "Assignment", "assignment", schema::note("null: unchanged"));
  }
  bool operator==(const ConsumerGroupHeartbeatResponse&) const = default;
};

// ---- 69 ConsumerGroupDescribe ------------------------------------------------
// KIP-848's consumer protocol: flexible from version 0.

struct ConsumerGroupDescribeRequest {
  static constexpr std::string_view kName = "ConsumerGroupDescribeRequest";
  static constexpr ApiKey kApiKey = ApiKey::ConsumerGroupDescribe;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 0;
  static constexpr int16_t kFlexibleSince = 0;
  std::vector<std::string> groupIds;
  bool includeAuthorizedOperations = false;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groupIds, "GroupIds", "group_ids");
    v(m.includeAuthorizedOperations, "IncludeAuthorizedOperations", "include_authorized_operations");
  }
  bool operator==(const ConsumerGroupDescribeRequest&) const = default;
};

struct ConsumerGroupDescribeResponse {
  struct TopicPartitions {
    static constexpr std::string_view kName = "DescribedTopicPartitions";
    Uuid topicId;
    std::string topicName;
    std::vector<int32_t> partitions;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.topicId, "TopicId", "topic_id");
      v(m.topicName, "TopicName", "topic_name");
      v(m.partitions, "Partitions", "partitions");
    }
    bool operator==(const TopicPartitions&) const = default;
  };
  struct Assignment {
    static constexpr std::string_view kName = "DescribedAssignment";
    std::vector<TopicPartitions> topicPartitions;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.topicPartitions, "TopicPartitions", "topic_partitions");
    }
    bool operator==(const Assignment&) const = default;
  };
  struct Member {
    static constexpr std::string_view kName = "DescribedConsumerGroupMember";
    std::string memberId;
    std::optional<std::string> instanceId;
    std::optional<std::string> rackId;
    int32_t memberEpoch = 0;
    std::string clientId;
    std::string clientHost;
    std::vector<std::string> subscribedTopicNames;
    std::optional<std::string> subscribedTopicRegex;
    Assignment assignment;
    Assignment targetAssignment;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.memberId, "MemberId", "member_id");
      v(m.instanceId, "InstanceId", "instance_id");
      v(m.rackId, "RackId", "rack_id");
      v(m.memberEpoch, "MemberEpoch", "member_epoch");
      v(m.clientId, "ClientId", "client_id");
      v(m.clientHost, "ClientHost", "client_host");
      v(m.subscribedTopicNames, "SubscribedTopicNames", "subscribed_topic_names");
      v(m.subscribedTopicRegex, "SubscribedTopicRegex", "subscribed_topic_regex");
      v(m.assignment, "Assignment", "assignment");
      v(m.targetAssignment, "TargetAssignment", "target_assignment");
    }
    bool operator==(const Member&) const = default;
  };
  struct Group {
    static constexpr std::string_view kName = "DescribedConsumerGroup";
    ErrorCode error = ErrorCode::NONE;
    std::optional<std::string> errorMessage;
    std::string groupId;
    std::string groupState;
    int32_t groupEpoch = 0;
    int32_t assignmentEpoch = 0;
    std::string assignorName;
    std::vector<Member> members;
    int32_t authorizedOperations = kNoAuthorizedOperations;
    template <typename V, typename Self>
    static constexpr void fields(V& v, Self& m) {
      v(m.error, "ErrorCode", "error_code");
      v(m.errorMessage, "ErrorMessage", "error_message");
      v(m.groupId, "GroupId", "group_id");
      v(m.groupState, "GroupState", "group_state");
      v(m.groupEpoch, "GroupEpoch", "group_epoch");
      v(m.assignmentEpoch, "AssignmentEpoch", "assignment_epoch");
      v(m.assignorName, "AssignorName", "assignor_name");
      v(m.members, "Members", "members");
      v(m.authorizedOperations, "AuthorizedOperations", "authorized_operations");
    }
    bool operator==(const Group&) const = default;
  };
  static constexpr std::string_view kName = "ConsumerGroupDescribeResponse";
  static constexpr ApiKey kApiKey = ApiKey::ConsumerGroupDescribe;
  static constexpr int16_t kMinVersion = 0;
  static constexpr int16_t kMaxVersion = 0;
  static constexpr int16_t kFlexibleSince = 0;
  int32_t throttleTimeMs = 0;
  std::vector<Group> groups;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.throttleTimeMs, "ThrottleTimeMs", "throttle_time_ms");
    v(m.groups, "Groups", "groups");
  }
  bool operator==(const ConsumerGroupDescribeResponse&) const = default;
};

// ---- Every API served --------------------------------------------------------

// One alternative per served API, in the same order in both.
using Request = std::variant<ApiVersionsRequest, MetadataRequest, FindCoordinatorRequest, JoinGroupRequest,
                             SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest, OffsetCommitRequest,
                             OffsetFetchRequest, ListGroupsRequest, DescribeGroupsRequest, DeleteGroupsRequest,
                             SaslHandshakeRequest, SaslAuthenticateRequest, FetchRequest, ListOffsetsRequest,
                             ConsumerGroupHeartbeatRequest, ConsumerGroupDescribeRequest>;
using Response = std::variant<ApiVersionsResponse, MetadataResponse, FindCoordinatorResponse, JoinGroupResponse,
                              SyncGroupResponse, HeartbeatResponse, LeaveGroupResponse, OffsetCommitResponse,
                              OffsetFetchResponse, ListGroupsResponse, DescribeGroupsResponse, DeleteGroupsResponse,
                              SaslHandshakeResponse, SaslAuthenticateResponse, FetchResponse, ListOffsetsResponse,
                              ConsumerGroupHeartbeatResponse, ConsumerGroupDescribeResponse>;

namespace detail {
template <typename Q, typename A, size_t I = 0>
constexpr bool requestsMatchResponses() {
  if constexpr (I == std::variant_size_v<Q>) {
    return std::variant_size_v<Q> == std::variant_size_v<A>;
  } else {
    using QI = std::variant_alternative_t<I, Q>;
    using AI = std::variant_alternative_t<I, A>;
    return QI::kApiKey == AI::kApiKey && QI::kMinVersion == AI::kMinVersion && QI::kMaxVersion == AI::kMaxVersion &&
           firstFlexibleVersion<QI>() == firstFlexibleVersion<AI>() && QI::kMaxVersion < schema::kVersions &&
           requestsMatchResponses<Q, A, I + 1>();
  }
}
}  // namespace detail
static_assert(detail::requestsMatchResponses<Request, Response>(),
              "Request and Response list the same APIs in the same order with the same versions and first flexible version, each within the versions schema::smallest knows");

// An OffsetCommit answer with `error` for every partition the request names:
// a commit refused before its group was asked.
OffsetCommitResponse offsetCommitAnswer(const OffsetCommitRequest& request, ErrorCode error);

}  // namespace groupcoord::protocol::kafka
