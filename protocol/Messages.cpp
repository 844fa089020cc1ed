#include "protocol/Messages.h"

#include <array>

namespace groupcoord::protocol {

namespace {

struct ErrorEntry {
  ErrorCode code;
  std::string_view name;
  std::string_view message;
};

constexpr std::array kErrors{
    ErrorEntry{ErrorCode::NONE, "NONE", "success"},
    ErrorEntry{ErrorCode::UNKNOWN_SERVER_ERROR, "UNKNOWN_SERVER_ERROR",
               "the server failed unexpectedly; its log has the detail"},
    ErrorEntry{ErrorCode::INVALID_REQUEST, "INVALID_REQUEST",
               "the request could not be decoded, or carries a value outside its range"},
    ErrorEntry{ErrorCode::UNSUPPORTED_VERSION, "UNSUPPORTED_VERSION",
               "the server does not speak this version of the API"},
    ErrorEntry{ErrorCode::UNKNOWN_API, "UNKNOWN_API", "the server does not know this ApiKey"},
    ErrorEntry{ErrorCode::UNKNOWN_GROUP, "UNKNOWN_GROUP", "no such group"},
    ErrorEntry{ErrorCode::GROUP_ALREADY_EXISTS, "GROUP_ALREADY_EXISTS",
               "the group exists with different settings"},
    ErrorEntry{ErrorCode::GROUP_NOT_EMPTY, "GROUP_NOT_EMPTY", "the group still has members"},
    ErrorEntry{ErrorCode::INVALID_GROUP_NAME, "INVALID_GROUP_NAME",
               "a group or topic name is not 1 to 249 characters of [A-Za-z0-9._-] (or is \".\" or \"..\")"},
    ErrorEntry{ErrorCode::INVALID_SESSION_TIMEOUT, "INVALID_SESSION_TIMEOUT",
               "the session timeout is outside the server's allowed range"},
    ErrorEntry{ErrorCode::NOT_CONTROLLER, "NOT_CONTROLLER",
               "this server does not control the group: find its controller with ListGroups"},
    ErrorEntry{ErrorCode::CONTROLLER_NOT_AVAILABLE, "CONTROLLER_NOT_AVAILABLE",
               "ZooKeeper is unreachable or the group has no controller yet: retry"},
    ErrorEntry{ErrorCode::UNKNOWN_CONSUMER, "UNKNOWN_CONSUMER",
               "the member is not in the group (evicted or never joined): register again"},
    ErrorEntry{ErrorCode::REBALANCE_NEEDED, "REBALANCE_NEEDED",
               "the group's generation moved or partitions are due: register again"},
    ErrorEntry{ErrorCode::NOT_OWNER, "NOT_OWNER", "the member does not own this partition now"},
    ErrorEntry{ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "UNKNOWN_TOPIC_OR_PARTITION", "no such topic or partition"},
    ErrorEntry{ErrorCode::INVALID_OFFSET, "INVALID_OFFSET", "an offset must be 0 or more"},
    ErrorEntry{ErrorCode::NOT_AUTHORIZED, "NOT_AUTHORIZED", "the caller may not do this"},
    ErrorEntry{ErrorCode::INVALID_CONSUMER_ID, "INVALID_CONSUMER_ID",
               "a consumer id is not 1 to 249 characters of [A-Za-z0-9._-] (or is \".\" or \"..\")"},
    ErrorEntry{ErrorCode::REBALANCE_IN_PROGRESS, "REBALANCE_IN_PROGRESS",
               "registered at this generation, but other members have not yet: keep heartbeating, do not start"},
};

const ErrorEntry* findError(ErrorCode e) {
  for (const auto& entry : kErrors) {
    if (entry.code == e) return &entry;
  }
  return nullptr;
}

constexpr std::array<std::string_view, kApiCount> kApiNames{
    "Heartbeat",  "CreateGroup",   "DeleteGroup",  "RegisterConsumer", "ListGroups",
    "LeaveGroup", "CommitOffsets", "FetchOffsets", "RewindConsumer",   "Authenticate",
    "DrainServer", "DescribeGroup", "DescribeServers",
};

constexpr std::array<std::string_view, 4> kStateNames{"LOADING", "STABLE", "REBALANCING", "HANDING_OVER"};

constexpr std::array<std::string_view, 11> kReasonNames{
    "OTHER",           "MEMBER_JOINED", "MEMBER_LEFT",    "MEMBER_EVICTED", "MEMBER_REPLACED",     "TOPIC_APPEARED",
    "TOPIC_RESIZED",   "TOPIC_GONE",    "REWIND",         "CONTROLLER_TAKEOVER", "HANDOVER",
};

}  // namespace

std::string_view errorName(ErrorCode e) {
  const ErrorEntry* entry = findError(e);
  return entry ? entry->name : "UNKNOWN_ERROR_CODE";
}

std::string_view errorMessage(ErrorCode e) {
  const ErrorEntry* entry = findError(e);
  return entry ? entry->message : "an error code this build does not know";
}

std::optional<ErrorCode> errorFromName(std::string_view name) {
  for (const auto& entry : kErrors) {
    if (entry.name == name) return entry.code;
  }
  return std::nullopt;
}

bool isKnownApi(int16_t key) { return key >= 0 && key < kApiCount; }

std::string_view apiName(ApiKey k) {
  const auto key = static_cast<int16_t>(k);
  return isKnownApi(key) ? kApiNames[static_cast<size_t>(key)] : "Unknown";
}

std::string_view groupStateName(GroupState s) {
  const auto v = static_cast<int>(s);
  return v >= 0 && v < static_cast<int>(kStateNames.size()) ? kStateNames[static_cast<size_t>(v)] : "UNKNOWN_STATE";
}

std::string_view rebalanceReasonName(RebalanceReason r) {
  const auto v = static_cast<int>(r);
  return v >= 0 && v < static_cast<int>(kReasonNames.size()) ? kReasonNames[static_cast<size_t>(v)]
                                                              : "UNKNOWN_REASON";
}

std::optional<RebalanceReason> rebalanceReasonFromName(std::string_view name) {
  for (size_t i = 0; i < kReasonNames.size(); ++i) {
    if (kReasonNames[i] == name) return static_cast<RebalanceReason>(i);
  }
  return std::nullopt;
}

namespace {
// Each request names its API's newest version (kMaxVersion in Messages.h).
constexpr auto kMaxVersions = []<size_t... I>(std::index_sequence<I...>) {
  std::array<int16_t, kApiCount> out{};
  ((out[static_cast<size_t>(std::variant_alternative_t<I, Request>::kApi)] =
        std::variant_alternative_t<I, Request>::kMaxVersion),
   ...);
  return out;
}(std::make_index_sequence<std::variant_size_v<Request>>());

static_assert([] {
  for (const int16_t v : kMaxVersions) {
    if (v < 0 || v >= schema::kVersions) return false;
  }
  return true;
}(), "an API's newest version is below schema::kVersions (protocol/Schema.h)");
}  // namespace

int16_t maxVersion(ApiKey k) {
  const auto i = static_cast<size_t>(static_cast<int16_t>(k));
  return i < kMaxVersions.size() ? kMaxVersions[i] : 0;
}

std::string_view assignmentModeName(AssignmentMode m) {
  switch (m) {
    case AssignmentMode::SERVER: return "server";
    case AssignmentMode::CLIENT: return "client";
  }
  return "unknown";
}

bool isControllerOnly(ApiKey k) {
  switch (k) {
    case ApiKey::Heartbeat:
    case ApiKey::DeleteGroup:
    case ApiKey::RegisterConsumer:
    case ApiKey::LeaveGroup:
    case ApiKey::CommitOffsets:
    case ApiKey::RewindConsumer:
    case ApiKey::DescribeGroup:
      return true;
    case ApiKey::CreateGroup:
    case ApiKey::ListGroups:
    case ApiKey::FetchOffsets:
    case ApiKey::Authenticate:
    case ApiKey::DrainServer:
    case ApiKey::DescribeServers:
      return false;
  }
  return false;
}

}  // namespace groupcoord::protocol
