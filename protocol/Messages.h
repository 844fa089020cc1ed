#pragma once

// Every request and response of the groupcoord wire protocol
// (docs/protocol.md), as plain structs. Each struct that travels lists its
// fields once, in wire order, in `fields` (protocol/Schema.h): the codec
// (protocol/Codec.h), the Python codec's table and the docs' field tables
// all come from that list. A request names its API's newest version in
// kMaxVersion.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "protocol/Schema.h"

namespace groupcoord::protocol {

enum class ErrorCode : int16_t {
  NONE = 0,
  UNKNOWN_SERVER_ERROR = -1,
  INVALID_REQUEST = 1,
  UNSUPPORTED_VERSION = 2,
  UNKNOWN_API = 3,
  UNKNOWN_GROUP = 10,
  GROUP_ALREADY_EXISTS = 11,
  GROUP_NOT_EMPTY = 12,
  INVALID_GROUP_NAME = 13,
  INVALID_SESSION_TIMEOUT = 14,
  NOT_CONTROLLER = 15,
  CONTROLLER_NOT_AVAILABLE = 16,
  UNKNOWN_CONSUMER = 17,
  REBALANCE_NEEDED = 18,
  NOT_OWNER = 19,
  UNKNOWN_TOPIC_OR_PARTITION = 20,
  INVALID_OFFSET = 21,
  NOT_AUTHORIZED = 22,
  INVALID_CONSUMER_ID = 23,
  // Client-assignment groups: registered at this generation, but not every
  // member has yet; keep heartbeating, do not start (docs/protocol.md).
  REBALANCE_IN_PROGRESS = 24,
};

// "REBALANCE_NEEDED"; an unknown value gives "UNKNOWN_ERROR_CODE".
std::string_view errorName(ErrorCode e);
// One readable sentence for people, e.g. "the group's generation moved: register again".
std::string_view errorMessage(ErrorCode e);
// Parses a name as errorName prints it.
std::optional<ErrorCode> errorFromName(std::string_view name);

enum class ApiKey : int16_t {
  Heartbeat = 0,
  CreateGroup = 1,
  DeleteGroup = 2,
  RegisterConsumer = 3,
  ListGroups = 4,
  LeaveGroup = 5,
  CommitOffsets = 6,
  FetchOffsets = 7,
  RewindConsumer = 8,
  Authenticate = 9,
  DrainServer = 10,
  DescribeGroup = 11,
  DescribeServers = 12,
};
inline constexpr int kApiCount = 13;
std::string_view apiName(ApiKey k);  // "Heartbeat", ...; "Unknown" otherwise
bool isKnownApi(int16_t key);
// Controller-only APIs answer NOT_CONTROLLER on another server.
bool isControllerOnly(ApiKey k);

inline constexpr int16_t kProtocolVersion = 0;
// The newest version of an API this codec speaks (its request's
// kMaxVersion; 0 for a key that is no API). A message of an older version
// is byte for byte what it always was.
int16_t maxVersion(ApiKey k);

// How a group's partitions are assigned (CreateGroup v1): by the server
// (the default, and every v0 group), or by the members themselves from the
// member list (membership only).
enum class AssignmentMode : int8_t {
  SERVER = 0,
  CLIENT = 1,
};
std::string_view assignmentModeName(AssignmentMode m);  // "server", "client"; "unknown" otherwise
namespace schema {
// Anything above CLIENT is malformed (protocol/FieldCodec.h).
template <>
struct ClosedEnum<AssignmentMode> : std::true_type {
  static constexpr int8_t kMax = static_cast<int8_t>(AssignmentMode::CLIENT);
};
}  // namespace schema

// ApiKey + Version + CorrelationId + ClientId length (2 + 2 + 8 + 2): a
// request body (the bytes after Size) shorter than this cannot be trusted.
inline constexpr int32_t kMinRequestBody = 14;
inline constexpr int32_t kDefaultMaxFrameBytes = 1 << 20;
inline constexpr size_t kMaxClientIdBytes = 255;

struct RequestHeader {
  ApiKey apiKey = ApiKey::Heartbeat;  // may hold an unknown value when decoding failed with UNKNOWN_API
  int16_t version = kProtocolVersion;
  int64_t correlationId = 0;
  std::optional<std::string> clientId;  // nullable
  bool operator==(const RequestHeader&) const = default;
};

struct ResponseHeader {
  int16_t version = kProtocolVersion;
  int64_t correlationId = 0;
  bool operator==(const ResponseHeader&) const = default;
};

struct Broker {
  int32_t brokerId = -1;
  std::string host;
  uint16_t port = 0;
  bool isNone() const { return brokerId == -1; }
  static constexpr std::string_view kName = "Broker";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.brokerId, "BrokerId", "broker_id");
    v(m.host, "Host", "host");
    v(m.port, "Port", "port");
  }
  bool operator==(const Broker&) const = default;
};

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  static constexpr std::string_view kName = "TopicPartition";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.topic, "Topic", "topic");
    v(m.partition, "Partition", "partition");
  }
  bool operator==(const TopicPartition&) const = default;
  auto operator<=>(const TopicPartition&) const = default;
};

struct PartitionOffset {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = -1;
  static constexpr std::string_view kName = "PartitionOffset";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.topic, "Topic", "topic");
    v(m.partition, "Partition", "partition");
    v(m.offset, "Offset", "offset");
  }
  bool operator==(const PartitionOffset&) const = default;
};

struct PartitionError {
  std::string topic;
  int32_t partition = 0;
  ErrorCode error = ErrorCode::NONE;
  static constexpr std::string_view kName = "PartitionError";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.topic, "Topic", "topic");
    v(m.partition, "Partition", "partition");
    v(m.error, "ErrorCode", "error");
  }
  bool operator==(const PartitionError&) const = default;
};

// 0 Heartbeat
struct HeartbeatRequest {
  static constexpr ApiKey kApi = ApiKey::Heartbeat;
  std::string group;
  std::string consumerId;
  int64_t generation = -1;
  // v1: how long the controller may hold the answer while it would be the
  // same as now (docs/protocol.md §20); 0: answer at once. v2: the same
  // fields; the member takes the generation of a NONE answer (§21).
  int32_t waitMs = 0;
  static constexpr std::string_view kName = "HeartbeatRequest";
  static constexpr int16_t kMaxVersion = 2;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.consumerId, "ConsumerId", "consumer_id");
    v(m.generation, "Generation", "generation");
    v(m.waitMs, "WaitMs", "wait_ms", schema::since(1),
      schema::note("the longest the answer may be held while nothing changes for the member; 0: at once"));
  }
  bool operator==(const HeartbeatRequest&) const = default;
};
struct HeartbeatResponse {
  static constexpr ApiKey kApi = ApiKey::Heartbeat;
  int64_t generation = -1;
  ErrorCode error = ErrorCode::NONE;
  static constexpr std::string_view kName = "HeartbeatResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.generation, "ControllerGeneration", "generation");
    v(m.error, "ErrorCode", "error");
  }
  bool operator==(const HeartbeatResponse&) const = default;
};

// 1 CreateGroup
struct CreateGroupRequest {
  static constexpr ApiKey kApi = ApiKey::CreateGroup;
  std::string group;
  int64_t sessionTimeoutMs = 0;
  std::vector<std::string> topics;
  bool ephemeral = false;
  AssignmentMode mode = AssignmentMode::SERVER;  // v1
  static constexpr std::string_view kName = "CreateGroupRequest";
  static constexpr int16_t kMaxVersion = 1;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.sessionTimeoutMs, "SessionTimeout", "session_timeout_ms", schema::note("ms"));
    v(m.topics, "Topics", "topics");
    v(m.ephemeral, "Ephemeral", "ephemeral");
    v(m.mode, "AssignmentMode", "mode", schema::since(1), schema::note("0 server, 1 client"));
  }
  bool operator==(const CreateGroupRequest&) const = default;
};
struct CreateGroupResponse {
  static constexpr ApiKey kApi = ApiKey::CreateGroup;
  std::string group;
  ErrorCode error = ErrorCode::NONE;
  Broker controller;
  static constexpr std::string_view kName = "CreateGroupResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.error, "ErrorCode", "error");
    v(m.controller, "Controller", "controller");
  }
  bool operator==(const CreateGroupResponse&) const = default;
};

// 2 DeleteGroup
struct DeleteGroupRequest {
  static constexpr ApiKey kApi = ApiKey::DeleteGroup;
  std::string group;
  static constexpr std::string_view kName = "DeleteGroupRequest";
  static constexpr int16_t kMaxVersion = 0;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
  }
  bool operator==(const DeleteGroupRequest&) const = default;
};
struct DeleteGroupResponse {
  static constexpr ApiKey kApi = ApiKey::DeleteGroup;
  std::string group;
  ErrorCode error = ErrorCode::NONE;
  static constexpr std::string_view kName = "DeleteGroupResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.error, "ErrorCode", "error");
  }
  bool operator==(const DeleteGroupResponse&) const = default;
};

// 3 RegisterConsumer
struct RegisterConsumerRequest {
  static constexpr ApiKey kApi = ApiKey::RegisterConsumer;
  std::string group;
  std::string consumerId;  // empty: a new member
  std::vector<TopicPartition> owned;
  std::string metadata;  // v1: opaque, bounded by the server
  std::string rack;      // v1: "" for none
  // v2: the generation whose member list this member holds (client mode),
  // so that the answer carries only what changed since; -1: none.
  int64_t knownGeneration = -1;
  static constexpr std::string_view kName = "RegisterConsumerRequest";
  static constexpr int16_t kMaxVersion = 2;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.consumerId, "ConsumerId", "consumer_id", schema::note("empty: a new member"));
    v(m.owned, "OwnedPartitions", "owned");
    v(m.metadata, "Metadata", "metadata", schema::since(1), schema::bytes, schema::note("opaque to groupcoord"));
    v(m.rack, "Rack", "rack", schema::since(1), schema::note("\"\": none"));
    v(m.knownGeneration, "KnownGeneration", "known_generation", schema::since(2),
      schema::note("the generation whose member list the member holds; -1: none"));
  }
  bool operator==(const RegisterConsumerRequest&) const = default;
};
// One member as a v1 registration lists it, in the agreed order.
struct MemberMetadata {
  std::string consumerId;
  std::string metadata;
  std::string rack;
  static constexpr std::string_view kName = "MemberMetadata";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.consumerId, "ConsumerId", "consumer_id");
    v(m.metadata, "Metadata", "metadata", schema::bytes);
    v(m.rack, "Rack", "rack");
  }
  bool operator==(const MemberMetadata&) const = default;
};
struct RegisterConsumerResponse {
  static constexpr ApiKey kApi = ApiKey::RegisterConsumer;
  std::string group;
  std::string consumerId;
  int64_t generation = -1;
  std::vector<std::string> members;
  std::vector<PartitionOffset> partitions;
  ErrorCode error = ErrorCode::NONE;
  AssignmentMode mode = AssignmentMode::SERVER;  // v1
  std::vector<MemberMetadata> memberData;        // v1: every member, in the order of `members`
  // v2 (docs/protocol.md §16): the answer is sized by the member's share.
  // `members` is empty; in server mode so is `memberData`. In client mode
  // `memberData` is the whole list when `listBase` is -1, or else the
  // members added (or whose metadata changed) since generation `listBase`,
  // and `removedMembers` those gone since.
  int32_t memberCount = -1;
  int64_t listBase = -1;
  std::vector<std::string> removedMembers;
  static constexpr std::string_view kName = "RegisterConsumerResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.consumerId, "ConsumerId", "consumer_id");
    v(m.generation, "Generation", "generation");
    v(m.members, "GroupMembers", "members", schema::note("from version 2: empty"));
    v(m.partitions, "PartitionsToOwn", "partitions", schema::note("Offset -1: nothing committed"));
    v(m.error, "ErrorCode", "error");
    v(m.mode, "AssignmentMode", "mode", schema::since(1), schema::note("0 server, 1 client"));
    v(m.memberData, "MemberData", "member_data", schema::since(1), schema::note("§14; from version 2, §16"));
    v(m.memberCount, "MemberCount", "member_count", schema::since(2));
    v(m.listBase, "ListBase", "list_base", schema::since(2), schema::note("-1: MemberData is the whole list"));
    v(m.removedMembers, "RemovedMembers", "removed_members", schema::since(2));
  }
  bool operator==(const RegisterConsumerResponse&) const = default;
};

// 4 ListGroups
struct ListGroupsRequest {
  static constexpr ApiKey kApi = ApiKey::ListGroups;
  std::vector<std::string> groups;  // empty: every group
  static constexpr std::string_view kName = "ListGroupsRequest";
  static constexpr int16_t kMaxVersion = 2;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groups, "ConsumerGroups", "groups", schema::note("empty: every group"));
  }
  bool operator==(const ListGroupsRequest&) const = default;
};
struct GroupInfo {
  std::string name;
  ErrorCode error = ErrorCode::NONE;
  std::vector<std::string> members;
  std::vector<std::string> topics;
  Broker controller;
  int64_t sessionTimeoutMs = -1;
  int64_t generation = -1;
  bool ephemeral = false;
  AssignmentMode mode = AssignmentMode::SERVER;  // v1
  bool kafka = false;        // v2: a Kafka group (docs/kafka.md)
  std::string protocolType;  // v2: a Kafka group's protocol type ("consumer"); "" none yet
  std::string protocolName;  // v2: its chosen protocol, the assignor ("range"); "" none yet
  static constexpr std::string_view kName = "GroupInfo";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.name, "GroupName", "name");
    v(m.error, "ErrorCode", "error");
    v(m.members, "GroupMembers", "members");
    v(m.topics, "Topics", "topics");
    v(m.controller, "ControllerBroker", "controller");
    v(m.sessionTimeoutMs, "SessionTimeout", "session_timeout_ms", schema::note("ms"));
    v(m.generation, "Generation", "generation");
    v(m.ephemeral, "Ephemeral", "ephemeral");
    v(m.mode, "AssignmentMode", "mode", schema::since(1), schema::note("0 server, 1 client"));
    v(m.kafka, "Kafka", "kafka", schema::since(2), schema::note("a Kafka group (§18)"));
    v(m.protocolType, "ProtocolType", "protocol_type", schema::since(2),
      schema::note("a Kafka group's protocol type, e.g. \"consumer\"; \"\": none yet, or not a Kafka group"));
    v(m.protocolName, "ProtocolName", "protocol_name", schema::since(2),
      schema::note("a Kafka group's chosen protocol (its assignor), e.g. \"range\"; \"\": none yet"));
  }
  bool operator==(const GroupInfo&) const = default;
};
struct ListGroupsResponse {
  static constexpr ApiKey kApi = ApiKey::ListGroups;
  std::vector<GroupInfo> groups;
  ErrorCode error = ErrorCode::NONE;
  static constexpr std::string_view kName = "ListGroupsResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.groups, "GroupsInfo", "groups");
    v(m.error, "ErrorCode", "error");
  }
  bool operator==(const ListGroupsResponse&) const = default;
};

// 5 LeaveGroup
struct LeaveGroupRequest {
  static constexpr ApiKey kApi = ApiKey::LeaveGroup;
  std::string group;
  std::string consumerId;
  static constexpr std::string_view kName = "LeaveGroupRequest";
  static constexpr int16_t kMaxVersion = 0;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.consumerId, "ConsumerId", "consumer_id");
  }
  bool operator==(const LeaveGroupRequest&) const = default;
};
struct LeaveGroupResponse {
  static constexpr ApiKey kApi = ApiKey::LeaveGroup;
  ErrorCode error = ErrorCode::NONE;
  static constexpr std::string_view kName = "LeaveGroupResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.error, "ErrorCode", "error");
  }
  bool operator==(const LeaveGroupResponse&) const = default;
};

// 6 CommitOffsets
struct CommitOffsetsRequest {
  static constexpr ApiKey kApi = ApiKey::CommitOffsets;
  std::string group;
  std::string consumerId;
  int64_t generation = -1;
  std::vector<PartitionOffset> offsets;
  static constexpr std::string_view kName = "CommitOffsetsRequest";
  static constexpr int16_t kMaxVersion = 0;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.consumerId, "ConsumerId", "consumer_id");
    v(m.generation, "Generation", "generation");
    v(m.offsets, "Offsets", "offsets");
  }
  bool operator==(const CommitOffsetsRequest&) const = default;
};
struct CommitOffsetsResponse {
  static constexpr ApiKey kApi = ApiKey::CommitOffsets;
  std::vector<PartitionError> results;
  ErrorCode error = ErrorCode::NONE;
  static constexpr std::string_view kName = "CommitOffsetsResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.results, "Results", "results");
    v(m.error, "ErrorCode", "error");
  }
  bool operator==(const CommitOffsetsResponse&) const = default;
};

// 7 FetchOffsets
struct FetchOffsetsRequest {
  static constexpr ApiKey kApi = ApiKey::FetchOffsets;
  std::string group;
  std::vector<std::string> topics;  // empty: every committed offset of the group
  static constexpr std::string_view kName = "FetchOffsetsRequest";
  static constexpr int16_t kMaxVersion = 0;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.topics, "Topics", "topics", schema::note("empty: every topic"));
  }
  bool operator==(const FetchOffsetsRequest&) const = default;
};
struct FetchOffsetsResponse {
  static constexpr ApiKey kApi = ApiKey::FetchOffsets;
  std::vector<PartitionOffset> offsets;
  ErrorCode error = ErrorCode::NONE;
  static constexpr std::string_view kName = "FetchOffsetsResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.offsets, "Offsets", "offsets");
    v(m.error, "ErrorCode", "error");
  }
  bool operator==(const FetchOffsetsResponse&) const = default;
};

// 8 RewindConsumer
struct RewindConsumerRequest {
  static constexpr ApiKey kApi = ApiKey::RewindConsumer;
  std::string group;
  std::vector<PartitionOffset> offsets;
  static constexpr std::string_view kName = "RewindConsumerRequest";
  static constexpr int16_t kMaxVersion = 0;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.offsets, "Offsets", "offsets");
  }
  bool operator==(const RewindConsumerRequest&) const = default;
};
struct RewindConsumerResponse {
  static constexpr ApiKey kApi = ApiKey::RewindConsumer;
  std::vector<PartitionError> results;
  ErrorCode error = ErrorCode::NONE;
  static constexpr std::string_view kName = "RewindConsumerResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.results, "Results", "results");
    v(m.error, "ErrorCode", "error");
  }
  bool operator==(const RewindConsumerResponse&) const = default;
};

// 9 Authenticate: proves the connection's user (docs/protocol.md). The
// secret travels as it is: use TLS on any network that is not trusted.
// Version 0 carries the user and the secret; version 1 one message of a
// SASL mechanism's exchange (SCRAM-SHA-256: common/Scram.h), the user named
// inside it.
struct AuthenticateRequest {
  static constexpr ApiKey kApi = ApiKey::Authenticate;
  std::string user;     // v0
  std::string secret;   // v0
  std::string mechanism;  // v1: "SCRAM-SHA-256"
  std::string message;    // v1: the client's message of the exchange
  static constexpr std::string_view kName = "AuthenticateRequest";
  static constexpr int16_t kMaxVersion = 1;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.user, "User", "user", schema::until(0));
    v(m.secret, "Secret", "secret", schema::until(0), schema::note("any bytes"));
    v(m.mechanism, "Mechanism", "mechanism", schema::since(1), schema::note("\"SCRAM-SHA-256\""));
    v(m.message, "Message", "message", schema::since(1), schema::bytes,
      schema::note("the client's message of the exchange"));
  }
  bool operator==(const AuthenticateRequest&) const = default;
};
struct AuthenticateResponse {
  static constexpr ApiKey kApi = ApiKey::Authenticate;
  ErrorCode error = ErrorCode::NONE;
  std::string message;  // v1: the server's message of the exchange
  static constexpr std::string_view kName = "AuthenticateResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.error, "ErrorCode", "error");
    v(m.message, "Message", "message", schema::since(1), schema::bytes,
      schema::note("the server's message of the exchange"));
  }
  bool operator==(const AuthenticateResponse&) const = default;
};

// 10 DrainServer: marks a groupcoordd server drained, so that it hands over
// every group it controls and takes no new one, or undoes that
// (docs/protocol.md). Any server answers it; only an admin may call it.
struct DrainServerRequest {
  static constexpr ApiKey kApi = ApiKey::DrainServer;
  int32_t serverId = -1;  // negative: refused with INVALID_REQUEST (validateNames)
  bool drain = true;      // false: undrain
  static constexpr std::string_view kName = "DrainServerRequest";
  static constexpr int16_t kMaxVersion = 0;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.serverId, "ServerId", "server_id", schema::note("0 or more"));
    v(m.drain, "Drain", "drain", schema::note("1 drain, 0 undrain"));
  }
  bool operator==(const DrainServerRequest&) const = default;
};
struct DrainServerResponse {
  static constexpr ApiKey kApi = ApiKey::DrainServer;
  ErrorCode error = ErrorCode::NONE;
  static constexpr std::string_view kName = "DrainServerResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.error, "ErrorCode", "error");
  }
  bool operator==(const DrainServerResponse&) const = default;
};

// 11 DescribeGroup: everything the group's controller knows about the group
// (docs/protocol.md): settings, state, members with where they connect from
// and what they hold, committed offsets, and why the generation moved.
struct DescribeGroupRequest {
  static constexpr ApiKey kApi = ApiKey::DescribeGroup;
  std::string group;
  static constexpr std::string_view kName = "DescribeGroupRequest";
  static constexpr int16_t kMaxVersion = 2;
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
  }
  bool operator==(const DescribeGroupRequest&) const = default;
};

// A value this build does not name is kept as its number (like ErrorCode).
enum class GroupState : int8_t {
  LOADING = 0,
  STABLE = 1,
  REBALANCING = 2,  // some partition is not with its assigned member yet
  HANDING_OVER = 3,
};
std::string_view groupStateName(GroupState s);  // "STABLE"; "UNKNOWN_STATE" otherwise

enum class RebalanceReason : int16_t {
  OTHER = 0,
  MEMBER_JOINED = 1,
  MEMBER_LEFT = 2,
  MEMBER_EVICTED = 3,       // value: how long it was silent, ms
  MEMBER_REPLACED = 4,      // subject: the id it had before
  TOPIC_APPEARED = 5,       // subject: the topic; value: its partitions
  TOPIC_RESIZED = 6,        // subject: the topic; value: its partitions now
  TOPIC_GONE = 7,           // subject: the topic
  REWIND = 8,               // subject: the user; value: how many offsets
  CONTROLLER_TAKEOVER = 9,  // subject: the previous controller ("" unknown); value: this server
  HANDOVER = 10,            // subject: the server it came from; value: this server
};
std::string_view rebalanceReasonName(RebalanceReason r);  // "MEMBER_JOINED"; "UNKNOWN_REASON" otherwise
std::optional<RebalanceReason> rebalanceReasonFromName(std::string_view name);

struct TopicState {
  std::string topic;
  int32_t partitions = -1;  // -1: no such topic, or its metadata cannot be read
  static constexpr std::string_view kName = "TopicState";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.topic, "Topic", "topic");
    v(m.partitions, "Partitions", "partitions",
      schema::note("-1: the topic does not exist, or its metadata cannot be read"));
  }
  bool operator==(const TopicState&) const = default;
};

struct MemberState {
  std::string consumerId;
  std::string clientId;
  std::string host;       // "" when not known yet
  uint16_t port = 0;      // 0 when not known yet
  int64_t joinedAtMs = -1;   // ms since the Unix epoch; -1 when not known
  int64_t lastHeardMs = -1;  // ms since the Unix epoch
  std::vector<TopicPartition> held;
  std::vector<TopicPartition> waiting;  // assigned to it, still held by another member
  std::string metadata;  // v1
  std::string rack;      // v1
  static constexpr std::string_view kName = "MemberState";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.consumerId, "ConsumerId", "consumer_id");
    v(m.clientId, "ClientId", "client_id", schema::note("the ClientId of its registration (\"\" when it sent none)"));
    v(m.host, "Host", "host", schema::note("the address it connects from, as text (\"\" when not known yet)"));
    v(m.port, "Port", "port", schema::note("its source port (0 when not known yet)"));
    v(m.joinedAtMs, "JoinedAt", "joined_at_ms", schema::note("ms since the Unix epoch; -1 when not known"));
    v(m.lastHeardMs, "LastHeard", "last_heard_ms",
      schema::note("ms since the Unix epoch: its last heartbeat or registration"));
    v(m.held, "Held", "held", schema::note("what it holds now"));
    v(m.waiting, "Waiting", "waiting", schema::note("assigned to it in this generation, still held by another member"));
    v(m.metadata, "Metadata", "metadata", schema::since(1), schema::bytes);
    v(m.rack, "Rack", "rack", schema::since(1));
  }
  bool operator==(const MemberState&) const = default;
};

struct RebalanceEvent {
  int64_t timeMs = 0;  // ms since the Unix epoch
  int64_t generation = -1;
  RebalanceReason reason = RebalanceReason::OTHER;
  int32_t count = 1;  // events of this reason in the same move that this entry stands for
  std::string consumerId;
  std::string clientId;
  std::string host;
  std::string subject;
  int64_t value = -1;
  std::string detail;  // one sentence, for people
  static constexpr std::string_view kName = "RebalanceEvent";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.timeMs, "Time", "time_ms", schema::note("ms since the Unix epoch"));
    v(m.generation, "Generation", "generation",
      schema::note("the generation the event produced (for an event that does not move it: the generation at "
                   "the time)"));
    v(m.reason, "Reason", "reason", schema::note("below"));
    v(m.count, "Count", "count",
      schema::note("how many events of this Reason, in the same generation move, this entry stands for: 1, or "
                   "more (below)"));
    v(m.consumerId, "ConsumerId", "consumer_id", schema::note("the member concerned; \"\" for none"));
    v(m.clientId, "ClientId", "client_id", schema::note("its ClientId; \"\" for none"));
    v(m.host, "Host", "host", schema::note("its address; \"\" when not known"));
    v(m.subject, "Subject", "subject", schema::note("a topic, a user or a server, by Reason"));
    v(m.value, "Value", "value", schema::note("a number, by Reason; -1 for none"));
    v(m.detail, "Detail", "detail", schema::note("the event in one sentence, for people"));
  }
  bool operator==(const RebalanceEvent&) const = default;
};

struct DescribeGroupResponse {
  static constexpr ApiKey kApi = ApiKey::DescribeGroup;
  std::string group;
  ErrorCode error = ErrorCode::NONE;
  Broker controller;
  GroupState state = GroupState::LOADING;
  int64_t sessionTimeoutMs = -1;
  bool ephemeral = false;
  int64_t generation = -1;
  std::vector<TopicState> topics;
  std::vector<MemberState> members;  // sorted by id
  std::vector<PartitionOffset> offsets;
  std::vector<RebalanceEvent> history;  // oldest first
  AssignmentMode mode = AssignmentMode::SERVER;  // v1
  bool kafka = false;        // v2: a Kafka group (docs/kafka.md)
  std::string protocolType;  // v2: a Kafka group's protocol type ("consumer"); "" none yet
  std::string protocolName;  // v2: its chosen protocol, the assignor ("range"); "" none yet
  static constexpr std::string_view kName = "DescribeGroupResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "ConsumerGroup", "group");
    v(m.error, "ErrorCode", "error");
    v(m.controller, "Controller", "controller");
    v(m.state, "State", "state", schema::note("below"));
    v(m.sessionTimeoutMs, "SessionTimeout", "session_timeout_ms", schema::note("ms"));
    v(m.ephemeral, "Ephemeral", "ephemeral");
    v(m.generation, "Generation", "generation");
    v(m.topics, "Topics", "topics");
    v(m.members, "Members", "members", schema::note("sorted by ConsumerId"));
    v(m.offsets, "Offsets", "offsets", schema::note("every committed offset of the group"));
    v(m.history, "History", "history", schema::note("oldest first, at most 100"));
    v(m.mode, "AssignmentMode", "mode", schema::since(1), schema::note("0 server, 1 client"));
    v(m.kafka, "Kafka", "kafka", schema::since(2), schema::note("a Kafka group (§18)"));
    v(m.protocolType, "ProtocolType", "protocol_type", schema::since(2),
      schema::note("a Kafka group's protocol type, e.g. \"consumer\"; \"\": none yet, or not a Kafka group"));
    v(m.protocolName, "ProtocolName", "protocol_name", schema::since(2),
      schema::note("a Kafka group's chosen protocol (its assignor), e.g. \"range\"; \"\": none yet"));
  }
  bool operator==(const DescribeGroupResponse&) const = default;
};

// 12 DescribeServers: the fleet's placement as the answering server computes
// it (docs/protocol.md; docs/design.md, "Placement"): each live server with
// where clients reach it, its state, its load and its load once the groups
// that should move have moved; the bound; and those groups. Any server
// answers it; it changes nothing.
struct DescribeServersRequest {
  static constexpr ApiKey kApi = ApiKey::DescribeServers;
  static constexpr std::string_view kName = "DescribeServersRequest";
  static constexpr int16_t kMaxVersion = 0;
  template <typename V, typename Self>
  static constexpr void fields(V& /*v*/, Self& /*m*/) {
  }
  bool operator==(const DescribeServersRequest&) const = default;
};

// One live server as DescribeServers describes it.
struct ServerPlacement {
  int32_t id = -1;
  std::string host;  // where clients reach it; "" when not read yet
  int32_t port = 0;
  bool drained = false;
  bool settled = false;
  bool candidate = false;  // groups may be placed on it
  int64_t load = 0;        // the weights of the groups it controls
  int32_t groups = 0;      // how many groups it controls
  int64_t placed = 0;      // its load once the moves are made
  static constexpr std::string_view kName = "ServerPlacement";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.id, "Id", "server_id", schema::note("the server's id"));
    v(m.host, "Host", "host", schema::note("where clients reach it (\"\" while its address has not been read)"));
    v(m.port, "Port", "port", schema::note("its port (0 likewise)"));
    v(m.drained, "Drained", "drained", schema::note("it is marked drained (DrainServer)"));
    v(m.settled, "Settled", "settled",
      schema::note("it has been live long enough (the handover settle delay) to take groups"));
    v(m.candidate, "Candidate", "candidate",
      schema::note("groups are placed on it: live, settled and not drained (or, when no server is, the "
                   "fallback)"));
    v(m.load, "Load", "load", schema::note("the weights of the groups it controls now"));
    v(m.groups, "Groups", "groups", schema::note("how many groups it controls now"));
    v(m.placed, "Placed", "placed", schema::note("its load once the Moves are made"));
  }
  bool operator==(const ServerPlacement&) const = default;
};

// A group whose target is not its controller.
struct GroupMove {
  std::string group;
  int64_t weight = 0;
  int32_t controller = -1;  // -1: none
  int32_t target = -1;      // -1: no candidate
  static constexpr std::string_view kName = "GroupMove";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.group, "Group", "group");
    v(m.weight, "Weight", "weight");
    v(m.controller, "Controller", "controller", schema::note("-1: none now"));
    v(m.target, "Target", "target", schema::note("-1: no candidate"));
  }
  bool operator==(const GroupMove&) const = default;
};

struct DescribeServersResponse {
  static constexpr ApiKey kApi = ApiKey::DescribeServers;
  ErrorCode error = ErrorCode::NONE;
  int32_t server = -1;  // the answering server: whose view this is
  int32_t epsilonPermille = -1;
  int32_t marginPermille = -1;
  std::string weighting;  // "members" or "groups"
  int64_t groupWeight = -1;
  int64_t total = -1;  // the weights of every group
  int64_t bound = -1;  // B = ceil((1 + epsilon) x total / candidates)
  // Every group's controller has been read; until then no group moves for load.
  bool complete = false;
  std::vector<ServerPlacement> servers;  // the live servers, by id
  std::vector<GroupMove> moves;          // heaviest first
  static constexpr std::string_view kName = "DescribeServersResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.error, "ErrorCode", "error");
    v(m.server, "ServerId", "server", schema::note("the answering server, whose view this is"));
    v(m.epsilonPermille, "EpsilonPermille", "epsilon_permille", schema::note("epsilon in thousandths (100: 0.10)"));
    v(m.marginPermille, "MarginPermille", "margin_permille", schema::note("the margin in thousandths of the bound"));
    v(m.weighting, "Weighting", "weighting", schema::note("`members` or `groups`"));
    v(m.groupWeight, "GroupWeight", "group_weight");
    v(m.total, "Total", "total", schema::note("the weights of every group"));
    v(m.bound, "Bound", "bound", schema::note("B = ceil((1 + epsilon) x Total / candidates); 0 without candidates"));
    v(m.complete, "Complete", "complete");
    v(m.servers, "Servers", "servers", schema::note("by Id: the live servers"));
    v(m.moves, "Moves", "moves", schema::note("heaviest first"));
  }
  bool operator==(const DescribeServersResponse&) const = default;
};

// UNKNOWN_API, UNSUPPORTED_VERSION, INVALID_REQUEST: a body of only ErrorCode.
struct ErrorOnlyResponse {
  ErrorCode error = ErrorCode::INVALID_REQUEST;
  static constexpr std::string_view kName = "ErrorOnlyResponse";
  template <typename V, typename Self>
  static constexpr void fields(V& v, Self& m) {
    v(m.error, "ErrorCode", "error");
  }
  bool operator==(const ErrorOnlyResponse&) const = default;
};

// Every request and every response of an API names its ApiKey in `kApi`;
// ErrorOnlyResponse belongs to no API and has none. Code that needs the API
// of a message asks apiKeyOf() (or std::holds_alternative for one type),
// never the position of an alternative in these variants.
using Request = std::variant<HeartbeatRequest, CreateGroupRequest, DeleteGroupRequest, RegisterConsumerRequest,
                             ListGroupsRequest, LeaveGroupRequest, CommitOffsetsRequest, FetchOffsetsRequest,
                             RewindConsumerRequest, AuthenticateRequest, DrainServerRequest, DescribeGroupRequest,
                             DescribeServersRequest>;

using Response = std::variant<HeartbeatResponse, CreateGroupResponse, DeleteGroupResponse, RegisterConsumerResponse,
                              ListGroupsResponse, LeaveGroupResponse, CommitOffsetsResponse, FetchOffsetsResponse,
                              RewindConsumerResponse, AuthenticateResponse, DrainServerResponse, DescribeGroupResponse,
                              DescribeServersResponse, ErrorOnlyResponse>;

// A message type of one API (it has `kApi`).
template <typename T>
concept ApiMessage = requires {
  { T::kApi } -> std::convertible_to<ApiKey>;
};

inline ApiKey apiKeyOf(const Request& r) {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::kApi; }, r);
}

// The API the response answers; nullopt for ErrorOnlyResponse.
inline std::optional<ApiKey> apiKeyOf(const Response& r) {
  return std::visit(
      []<typename T>(const T&) -> std::optional<ApiKey> {
        if constexpr (ApiMessage<T>) {
          return T::kApi;
        } else {
          return std::nullopt;
        }
      },
      r);
}

namespace detail {
// How many alternatives of Variant carry `key`.
template <typename Variant, size_t... I>
consteval int countApi(ApiKey key, std::index_sequence<I...>) {
  int n = 0;
  (
      [&] {
        using T = std::variant_alternative_t<I, Variant>;
        if constexpr (ApiMessage<T>) n += T::kApi == key ? 1 : 0;
      }(),
      ...);
  return n;
}
// Every ApiKey has exactly one request and exactly one response type.
template <typename Variant, int Extra>
consteval bool oneOfEachApi() {
  constexpr auto seq = std::make_index_sequence<std::variant_size_v<Variant>>();
  for (int k = 0; k < kApiCount; ++k) {
    if (countApi<Variant>(static_cast<ApiKey>(k), seq) != 1) return false;
  }
  return std::variant_size_v<Variant> == static_cast<size_t>(kApiCount + Extra);
}
}  // namespace detail

static_assert(detail::oneOfEachApi<Request, 0>(), "each ApiKey needs exactly one request type in Request");
static_assert(detail::oneOfEachApi<Response, 1>(),
              "each ApiKey needs exactly one response type in Response, plus ErrorOnlyResponse");
static_assert(!ApiMessage<ErrorOnlyResponse>, "ErrorOnlyResponse answers no particular API");

}  // namespace groupcoord::protocol
