#pragma once

// Every request and response of the groupcoord wire protocol, version 0
// (docs/protocol.md), as plain structs. One codec (protocol/Codec.h) reads
// and writes them for the server and the client library alike.

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
// The newest version of an API this codec speaks: 2 for RegisterConsumer,
// 1 for CreateGroup, ListGroups, DescribeGroup and Authenticate, 0 for the
// others. A
// message of an older version is byte for byte what it always was.
int16_t maxVersion(ApiKey k);

// How a group's partitions are assigned (CreateGroup v1): by the server
// (the default, and every v0 group), or by the members themselves from the
// member list (membership only).
enum class AssignmentMode : int8_t {
  SERVER = 0,
  CLIENT = 1,
};
std::string_view assignmentModeName(AssignmentMode m);  // "server", "client"; "unknown" otherwise

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
  bool operator==(const Broker&) const = default;
};

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  bool operator==(const TopicPartition&) const = default;
  auto operator<=>(const TopicPartition&) const = default;
};

struct PartitionOffset {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = -1;
  bool operator==(const PartitionOffset&) const = default;
};

struct PartitionError {
  std::string topic;
  int32_t partition = 0;
  ErrorCode error = ErrorCode::NONE;
  bool operator==(const PartitionError&) const = default;
};

// 0 Heartbeat
struct HeartbeatRequest {
  static constexpr ApiKey kApi = ApiKey::Heartbeat;
  std::string group;
  std::string consumerId;
  int64_t generation = -1;
  bool operator==(const HeartbeatRequest&) const = default;
};
struct HeartbeatResponse {
  static constexpr ApiKey kApi = ApiKey::Heartbeat;
  int64_t generation = -1;
  ErrorCode error = ErrorCode::NONE;
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
  bool operator==(const CreateGroupRequest&) const = default;
};
struct CreateGroupResponse {
  static constexpr ApiKey kApi = ApiKey::CreateGroup;
  std::string group;
  ErrorCode error = ErrorCode::NONE;
  Broker controller;
  bool operator==(const CreateGroupResponse&) const = default;
};

// 2 DeleteGroup
struct DeleteGroupRequest {
  static constexpr ApiKey kApi = ApiKey::DeleteGroup;
  std::string group;
  bool operator==(const DeleteGroupRequest&) const = default;
};
struct DeleteGroupResponse {
  static constexpr ApiKey kApi = ApiKey::DeleteGroup;
  std::string group;
  ErrorCode error = ErrorCode::NONE;
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
  bool operator==(const RegisterConsumerRequest&) const = default;
};
// One member as a v1 registration lists it, in the agreed order.
struct MemberMetadata {
  std::string consumerId;
  std::string metadata;
  std::string rack;
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
  bool operator==(const RegisterConsumerResponse&) const = default;
};

// 4 ListGroups
struct ListGroupsRequest {
  static constexpr ApiKey kApi = ApiKey::ListGroups;
  std::vector<std::string> groups;  // empty: every group
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
  bool operator==(const GroupInfo&) const = default;
};
struct ListGroupsResponse {
  static constexpr ApiKey kApi = ApiKey::ListGroups;
  std::vector<GroupInfo> groups;
  ErrorCode error = ErrorCode::NONE;
  bool operator==(const ListGroupsResponse&) const = default;
};

// 5 LeaveGroup
struct LeaveGroupRequest {
  static constexpr ApiKey kApi = ApiKey::LeaveGroup;
  std::string group;
  std::string consumerId;
  bool operator==(const LeaveGroupRequest&) const = default;
};
struct LeaveGroupResponse {
  static constexpr ApiKey kApi = ApiKey::LeaveGroup;
  ErrorCode error = ErrorCode::NONE;
  bool operator==(const LeaveGroupResponse&) const = default;
};

// 6 CommitOffsets
struct CommitOffsetsRequest {
  static constexpr ApiKey kApi = ApiKey::CommitOffsets;
  std::string group;
  std::string consumerId;
  int64_t generation = -1;
  std::vector<PartitionOffset> offsets;
  bool operator==(const CommitOffsetsRequest&) const = default;
};
struct CommitOffsetsResponse {
  static constexpr ApiKey kApi = ApiKey::CommitOffsets;
  std::vector<PartitionError> results;
  ErrorCode error = ErrorCode::NONE;
  bool operator==(const CommitOffsetsResponse&) const = default;
};

// 7 FetchOffsets
struct FetchOffsetsRequest {
  static constexpr ApiKey kApi = ApiKey::FetchOffsets;
  std::string group;
  std::vector<std::string> topics;  // empty: every committed offset of the group
  bool operator==(const FetchOffsetsRequest&) const = default;
};
struct FetchOffsetsResponse {
  static constexpr ApiKey kApi = ApiKey::FetchOffsets;
  std::vector<PartitionOffset> offsets;
  ErrorCode error = ErrorCode::NONE;
  bool operator==(const FetchOffsetsResponse&) const = default;
};

// 8 RewindConsumer
struct RewindConsumerRequest {
  static constexpr ApiKey kApi = ApiKey::RewindConsumer;
  std::string group;
  std::vector<PartitionOffset> offsets;
  bool operator==(const RewindConsumerRequest&) const = default;
};
struct RewindConsumerResponse {
  static constexpr ApiKey kApi = ApiKey::RewindConsumer;
  std::vector<PartitionError> results;
  ErrorCode error = ErrorCode::NONE;
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
  bool operator==(const AuthenticateRequest&) const = default;
};
struct AuthenticateResponse {
  static constexpr ApiKey kApi = ApiKey::Authenticate;
  ErrorCode error = ErrorCode::NONE;
  std::string message;  // v1: the server's message of the exchange
  bool operator==(const AuthenticateResponse&) const = default;
};

// 10 DrainServer: marks a groupcoordd server drained, so that it hands over
// every group it controls and takes no new one, or undoes that
// (docs/protocol.md). Any server answers it; only an admin may call it.
struct DrainServerRequest {
  static constexpr ApiKey kApi = ApiKey::DrainServer;
  int32_t serverId = -1;  // negative: refused with INVALID_REQUEST (validateNames)
  bool drain = true;      // false: undrain
  bool operator==(const DrainServerRequest&) const = default;
};
struct DrainServerResponse {
  static constexpr ApiKey kApi = ApiKey::DrainServer;
  ErrorCode error = ErrorCode::NONE;
  bool operator==(const DrainServerResponse&) const = default;
};

// 11 DescribeGroup: everything the group's controller knows about the group
// (docs/protocol.md): settings, state, members with where they connect from
// and what they hold, committed offsets, and why the generation moved.
struct DescribeGroupRequest {
  static constexpr ApiKey kApi = ApiKey::DescribeGroup;
  std::string group;
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
  bool operator==(const DescribeGroupResponse&) const = default;
};

// 12 DescribeServers: the fleet's placement as the answering server computes
// it (docs/protocol.md; docs/design.md, "Placement"): each live server with
// where clients reach it, its state, its load and its load once the groups
// that should move have moved; the bound; and those groups. Any server
// answers it; it changes nothing.
struct DescribeServersRequest {
  static constexpr ApiKey kApi = ApiKey::DescribeServers;
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
  bool operator==(const ServerPlacement&) const = default;
};

// A group whose target is not its controller.
struct GroupMove {
  std::string group;
  int64_t weight = 0;
  int32_t controller = -1;  // -1: none
  int32_t target = -1;      // -1: no candidate
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
  bool operator==(const DescribeServersResponse&) const = default;
};

// UNKNOWN_API, UNSUPPORTED_VERSION, INVALID_REQUEST: a body of only ErrorCode.
struct ErrorOnlyResponse {
  ErrorCode error = ErrorCode::INVALID_REQUEST;
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
