#include "protocol/Codec.h"

#include <array>
#include <bit>
#include <cstring>
#include <type_traits>
#include <utility>
#include <variant>

#include "protocol/FieldCodec.h"
#include "protocol/Wire.h"

namespace groupcoord::protocol {

namespace {

using wire::Reader;
using wire::Writer;

// A response header: Version int16 + CorrelationId int64.
constexpr size_t kResponseHeaderBytes = 10;

// ---- Reading and writing by description ----------------------------------------
// Every message lists its fields once (`fields` in protocol/Messages.h,
// protocol/Schema.h); the visitors of protocol/FieldCodec.h read and write
// them. ErrorCode, GroupState and RebalanceReason keep any value (a newer
// server may send one this build does not name); AssignmentMode is a closed
// int8 enum, anything above CLIENT is malformed. A count or `bytes` length
// of -1 reads as empty (docs/protocol.md, "Types").

template <typename T>
int16_t newestOf() {
  if constexpr (ApiMessage<T>) {
    return maxVersion(T::kApi);
  } else {
    return 0;  // ErrorOnlyResponse: every field of every version
  }
}

using FieldReader = fieldcodec::FieldReader<fieldcodec::Nulls::AsEmpty>;
using FieldWriter = fieldcodec::FieldWriter<fieldcodec::Nulls::AsEmpty>;

// Reads the fields of `m` that `version` carries.
template <typename T>
void readBody(Reader& r, T& m, int16_t version) {
  FieldReader reader{r, version, newestOf<T>()};
  T::fields(reader, m);
}

template <typename T>
void writeBody(Writer& w, const T& m, int16_t version) {
  FieldWriter writer{w, version, newestOf<T>()};
  T::fields(writer, m);
}

// Decodes a `T` of `version` into `v` from r, strictly (no trailing bytes).
template <typename T, typename Variant>
bool decodeAs(Reader& r, Variant& v, int16_t version = 0) {
  auto& m = v.template emplace<T>();
  readBody(r, m, version);
  return r.expectEnd();
}

// The alternative of Variant whose kApi is K (Messages.h asserts there is
// exactly one).
template <typename Variant, ApiKey K, size_t I = 0>
struct AlternativeFor {
  using Candidate = std::variant_alternative_t<I, Variant>;
  static constexpr bool kMatch = [] {
    if constexpr (ApiMessage<Candidate>) {
      return Candidate::kApi == K;
    } else {
      return false;
    }
  }();
  using type =
      typename std::conditional_t<kMatch, std::type_identity<Candidate>, AlternativeFor<Variant, K, I + 1>>::type;
};

template <ApiKey K, typename Variant>
bool decodeApi(Reader& r, Variant& v, int16_t version) {
  return decodeAs<typename AlternativeFor<Variant, K>::type>(r, v, version);
}

// Decodes the alternative of `v` (a Request or a Response) that belongs to
// the ApiKey `key` (0 .. kApiCount-1).
template <typename Variant>
bool decodeByKey(Reader& r, Variant& v, int16_t key, int16_t version) {
  switch (static_cast<ApiKey>(key)) {
    case ApiKey::Heartbeat:
      return decodeApi<ApiKey::Heartbeat>(r, v, version);
    case ApiKey::CreateGroup:
      return decodeApi<ApiKey::CreateGroup>(r, v, version);
    case ApiKey::DeleteGroup:
      return decodeApi<ApiKey::DeleteGroup>(r, v, version);
    case ApiKey::RegisterConsumer:
      return decodeApi<ApiKey::RegisterConsumer>(r, v, version);
    case ApiKey::ListGroups:
      return decodeApi<ApiKey::ListGroups>(r, v, version);
    case ApiKey::LeaveGroup:
      return decodeApi<ApiKey::LeaveGroup>(r, v, version);
    case ApiKey::CommitOffsets:
      return decodeApi<ApiKey::CommitOffsets>(r, v, version);
    case ApiKey::FetchOffsets:
      return decodeApi<ApiKey::FetchOffsets>(r, v, version);
    case ApiKey::RewindConsumer:
      return decodeApi<ApiKey::RewindConsumer>(r, v, version);
    case ApiKey::Authenticate:
      return decodeApi<ApiKey::Authenticate>(r, v, version);
    case ApiKey::DrainServer:
      return decodeApi<ApiKey::DrainServer>(r, v, version);
    case ApiKey::DescribeGroup:
      return decodeApi<ApiKey::DescribeGroup>(r, v, version);
    case ApiKey::DescribeServers:
      return decodeApi<ApiKey::DescribeServers>(r, v, version);
  }
  return false;
}
static_assert(kApiCount == 13, "decodeByKey covers every ApiKey");

// ---- Names ---------------------------------------------------------------------

constexpr size_t kMaxNameBytes = 249;

// [a-zA-Z0-9._-] as a table: names are checked on every request.
constexpr std::array<bool, 256> kNameChars = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[static_cast<size_t>(c)] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                                c == '.' || c == '_' || c == '-';
  }
  return t;
}();

bool isNameChar(char c) { return kNameChars[static_cast<unsigned char>(c)]; }

// Group first, then the member, then topics: the first that fails is the answer.
ErrorCode groupError(const std::string& group) {
  return isValidName(group) ? ErrorCode::NONE : ErrorCode::INVALID_GROUP_NAME;
}

ErrorCode groupAndMemberError(const std::string& group, const std::string& consumerId) {
  if (!isValidName(group)) return ErrorCode::INVALID_GROUP_NAME;
  if (!isValidName(consumerId)) return ErrorCode::INVALID_CONSUMER_ID;
  return ErrorCode::NONE;
}

const std::string& topicOf(const std::string& topic) { return topic; }
const std::string& topicOf(const TopicPartition& tp) { return tp.topic; }
const std::string& topicOf(const PartitionOffset& po) { return po.topic; }

template <typename Item>
ErrorCode topicsError(const std::vector<Item>& items) {
  for (const auto& item : items) {
    if (!isValidName(topicOf(item))) return ErrorCode::INVALID_GROUP_NAME;
  }
  return ErrorCode::NONE;
}

ErrorCode namesError(const HeartbeatRequest& m) { return groupAndMemberError(m.group, m.consumerId); }

ErrorCode namesError(const CreateGroupRequest& m) {
  const ErrorCode e = groupError(m.group);
  return e != ErrorCode::NONE ? e : topicsError(m.topics);
}

ErrorCode namesError(const DeleteGroupRequest& m) { return groupError(m.group); }

ErrorCode namesError(const RegisterConsumerRequest& m) {
  // An empty ConsumerId asks for a new member.
  const ErrorCode e = m.consumerId.empty() ? groupError(m.group) : groupAndMemberError(m.group, m.consumerId);
  return e != ErrorCode::NONE ? e : topicsError(m.owned);
}

// Each named group is answered in its own GroupInfo, by the server.
ErrorCode namesError(const ListGroupsRequest&) { return ErrorCode::NONE; }

ErrorCode namesError(const LeaveGroupRequest& m) { return groupAndMemberError(m.group, m.consumerId); }

ErrorCode namesError(const CommitOffsetsRequest& m) {
  const ErrorCode e = groupAndMemberError(m.group, m.consumerId);
  return e != ErrorCode::NONE ? e : topicsError(m.offsets);
}

ErrorCode namesError(const FetchOffsetsRequest& m) {
  const ErrorCode e = groupError(m.group);
  return e != ErrorCode::NONE ? e : topicsError(m.topics);
}

ErrorCode namesError(const RewindConsumerRequest& m) {
  const ErrorCode e = groupError(m.group);
  return e != ErrorCode::NONE ? e : topicsError(m.offsets);
}

// A user name is never a path; an unknown or malformed one is NOT_AUTHORIZED.
ErrorCode namesError(const AuthenticateRequest&) { return ErrorCode::NONE; }

// No name, but one number the codec can judge alone: server ids are 0 or
// more (groupcoordd refuses a negative server.id), so a negative one names
// no server. Refused like a bad name: the API's full response, before
// anything reaches ZooKeeper.
ErrorCode namesError(const DrainServerRequest& m) {
  return m.serverId < 0 ? ErrorCode::INVALID_REQUEST : ErrorCode::NONE;
}

ErrorCode namesError(const DescribeGroupRequest& m) { return groupError(m.group); }

// No name, no value.
ErrorCode namesError(const DescribeServersRequest&) { return ErrorCode::NONE; }

}  // namespace

// ---- Framing -------------------------------------------------------------------

FrameStatus peekFrame(std::span<const uint8_t> buffered, int32_t maxFrameBytes, int32_t minBody, int32_t* bodySize) {
  if (buffered.size() < 4) return FrameStatus::NeedMore;
  const uint32_t raw = (uint32_t{buffered[0]} << 24) | (uint32_t{buffered[1]} << 16) | (uint32_t{buffered[2]} << 8) |
                       uint32_t{buffered[3]};
  const auto size = static_cast<int32_t>(raw);
  if (size < 0) return FrameStatus::TooLarge;
  if (size < minBody) return FrameStatus::TooSmall;
  if (size > maxFrameBytes) return FrameStatus::TooLarge;
  if (bodySize) *bodySize = size;
  if (buffered.size() - 4 < static_cast<size_t>(size)) return FrameStatus::NeedMore;
  return FrameStatus::Ready;
}

// ---- Requests ------------------------------------------------------------------

DecodedRequest decodeRequest(std::span<const uint8_t> body) {
  DecodedRequest out;
  Reader r(body);
  int16_t key = 0;
  // Every status carries ApiKey, Version and CorrelationId: read them even
  // from a body too short to be a request, as far as it goes.
  if (r.readInt16(key, "ApiKey")) out.header.apiKey = static_cast<ApiKey>(key);
  r.readInt16(out.header.version, "Version");
  r.readInt64(out.header.correlationId, "CorrelationId");
  if (body.size() < static_cast<size_t>(kMinRequestBody)) {
    out.status = DecodeStatus::InvalidRequest;
    out.detail = "request body of " + std::to_string(body.size()) + " bytes, shorter than the " +
                 std::to_string(kMinRequestBody) + "-byte request header";
    return out;
  }
  // The ClientId is only for the log: keep it when it is well-formed and
  // within bounds, whatever the rest of the request turns out to be.
  std::optional<std::string> clientId;
  const bool clientIdRead = r.readNullableString(clientId, "ClientId");
  const bool clientIdFits = clientIdRead && (!clientId || clientId->size() <= kMaxClientIdBytes);
  if (clientIdFits) out.header.clientId = std::move(clientId);

  if (!isKnownApi(key)) {
    out.status = DecodeStatus::UnknownApi;
    out.detail = "unknown ApiKey " + std::to_string(key);
    return out;
  }
  if (out.header.version < 0 || out.header.version > maxVersion(out.header.apiKey)) {
    out.status = DecodeStatus::UnsupportedVersion;
    out.detail = std::string(apiName(out.header.apiKey)) + " version " + std::to_string(out.header.version) +
                 " is not supported (this codec speaks 0 to " + std::to_string(maxVersion(out.header.apiKey)) + ")";
    return out;
  }
  if (!clientIdRead) {
    out.status = DecodeStatus::InvalidRequest;
    out.detail = r.describeFailure();
    return out;
  }
  if (!clientIdFits) {
    out.status = DecodeStatus::InvalidRequest;
    out.detail = "ClientId of " + std::to_string(clientId->size()) + " bytes, longer than " +
                 std::to_string(kMaxClientIdBytes);
    return out;
  }
  if (!decodeByKey(r, out.request, key, out.header.version)) {
    out.status = DecodeStatus::InvalidRequest;
    out.detail = std::string(apiName(out.header.apiKey)) + " request: " + r.describeFailure();
    return out;
  }
  out.status = DecodeStatus::Ok;
  return out;
}

bool peekHeartbeat(std::span<const uint8_t> body, HeartbeatView& out) {
  const uint8_t* p = body.data();
  const size_t size = body.size();
  if (size < static_cast<size_t>(kMinRequestBody)) return false;
  auto be16 = [p](size_t at) { return static_cast<int16_t>((p[at] << 8) | p[at + 1]); };
  auto be64 = [p](size_t at) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v = (v << 8) | p[at + i];
    return static_cast<int64_t>(v);
  };
  if (be16(0) != static_cast<int16_t>(ApiKey::Heartbeat)) return false;
  out.version = be16(2);
  if (out.version < 0 || out.version > HeartbeatRequest::kMaxVersion) return false;
  out.correlationId = be64(4);
  size_t pos = 12;
  // ClientId: nullable, at most kMaxClientIdBytes; skipped (a heartbeat's
  // answer does not depend on it).
  const int16_t clientId = be16(pos);
  pos += 2;
  if (clientId < -1 || clientId > static_cast<int16_t>(kMaxClientIdBytes)) return false;
  if (clientId > 0) {
    if (size - pos < static_cast<size_t>(clientId)) return false;
    pos += static_cast<size_t>(clientId);
  }
  auto name = [&](std::string_view& v) {
    if (size - pos < 2) return false;
    const int16_t len = be16(pos);
    pos += 2;
    if (len < 0 || size - pos < static_cast<size_t>(len)) return false;
    v = std::string_view(reinterpret_cast<const char*>(p + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
    return isValidName(v);
  };
  if (!name(out.group) || !name(out.consumerId)) return false;
  // The Generation, then version 1's WaitMs, and nothing after them.
  if (size - pos != (out.version >= 1 ? 12u : 8u)) return false;
  out.generation = be64(pos);
  out.waitMs = 0;
  if (out.version >= 1) {
    out.waitMs = static_cast<int32_t>((static_cast<uint32_t>(p[pos + 8]) << 24) |
                                      (static_cast<uint32_t>(p[pos + 9]) << 16) |
                                      (static_cast<uint32_t>(p[pos + 10]) << 8) | p[pos + 11]);
  }
  return true;
}

void encodeRequest(const RequestHeader& header, const Request& request, std::vector<uint8_t>& out) {
  Writer w(out);
  const size_t frame = w.beginFrame();
  w.writeInt16(static_cast<int16_t>(apiKeyOf(request)));
  w.writeInt16(header.version);
  w.writeInt64(header.correlationId);
  w.writeNullableString(header.clientId);
  std::visit([&w, version = header.version](const auto& m) { writeBody(w, m, version); }, request);
  w.endFrame(frame);
}

// ---- Responses -----------------------------------------------------------------

void appendHeartbeatResponse(int16_t version, int64_t correlationId, const HeartbeatResponse& response,
                             std::vector<uint8_t>& out) {
  // Size int32 (20), Version int16, CorrelationId int64, Generation int64,
  // ErrorCode int16: docs/protocol.md, Heartbeat.
  static_assert(std::endian::native == std::endian::little, "the byte swaps below assume a little-endian host");
  constexpr size_t kBytes = 24;
  uint8_t frame[kBytes];
  const uint32_t size = __builtin_bswap32(static_cast<uint32_t>(kBytes - 4));
  const uint16_t ver = __builtin_bswap16(static_cast<uint16_t>(version));
  const uint64_t corr = __builtin_bswap64(static_cast<uint64_t>(correlationId));
  const uint64_t gen = __builtin_bswap64(static_cast<uint64_t>(response.generation));
  const uint16_t err = __builtin_bswap16(static_cast<uint16_t>(static_cast<int16_t>(response.error)));
  std::memcpy(frame, &size, 4);
  std::memcpy(frame + 4, &ver, 2);
  std::memcpy(frame + 6, &corr, 8);
  std::memcpy(frame + 14, &gen, 8);
  std::memcpy(frame + 22, &err, 2);
  out.insert(out.end(), frame, frame + kBytes);
}

void encodeResponse(const ResponseHeader& header, const Response& response, std::vector<uint8_t>& out) {
  Writer w(out);
  const size_t frame = w.beginFrame();
  w.writeInt16(header.version);
  w.writeInt64(header.correlationId);
  std::visit([&w, version = header.version](const auto& m) { writeBody(w, m, version); }, response);
  w.endFrame(frame);
}

DecodedResponse decodeResponse(ApiKey api, std::span<const uint8_t> body) {
  DecodedResponse out;
  Reader r(body);
  r.readInt16(out.header.version, "Version");
  if (!r.readInt64(out.header.correlationId, "CorrelationId")) {
    out.detail = "response body of " + std::to_string(body.size()) + " bytes, shorter than the " +
                 std::to_string(kResponseHeaderBytes) + "-byte response header";
    return out;
  }
  const auto key = static_cast<int16_t>(api);
  if (r.remaining() == 2) {
    // UNKNOWN_API, UNSUPPORTED_VERSION and INVALID_REQUEST answers. LeaveGroup,
    // Authenticate and DrainServer responses are byte for byte the same
    // shape, so for them it is read as the API's own response: the caller
    // gets the type it expects and the same ErrorCode either way.
    if (api == ApiKey::LeaveGroup) {
      out.ok = decodeAs<LeaveGroupResponse>(r, out.response);
    } else if (api == ApiKey::Authenticate) {
      out.ok = decodeAs<AuthenticateResponse>(r, out.response);
    } else if (api == ApiKey::DrainServer) {
      out.ok = decodeAs<DrainServerResponse>(r, out.response);
    } else {
      out.ok = decodeAs<ErrorOnlyResponse>(r, out.response);
    }
    return out;
  }
  if (!isKnownApi(key)) {
    out.detail = "response to unknown ApiKey " + std::to_string(key) + " with " + std::to_string(r.remaining()) +
                 " bytes after the header, not an error-only answer";
    return out;
  }
  if (out.header.version < 0 || out.header.version > maxVersion(api)) {
    out.detail = std::string(apiName(api)) + " response of version " + std::to_string(out.header.version) +
                 ", this codec reads versions 0 to " + std::to_string(maxVersion(api));
    return out;
  }
  if (!decodeByKey(r, out.response, key, out.header.version)) {
    out.detail = std::string(apiName(api)) + " response: " + r.describeFailure();
    return out;
  }
  out.ok = true;
  return out;
}

// ---- Semantics -----------------------------------------------------------------

bool isValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  if (name == "." || name == "..") return false;
  // Every character is looked at, with no branch per character: names are
  // short, and a heartbeat checks two (bench/run.sh instructions).
  bool all = true;
  for (const char c : name) all &= isNameChar(c);
  return all;
}

ErrorCode validateNames(const Request& request) {
  return std::visit([](const auto& m) { return namesError(m); }, request);
}

Response errorResponse(const Request& request, ErrorCode error) {
  struct Visitor {
    ErrorCode error;
    Response operator()(const HeartbeatRequest&) const { return HeartbeatResponse{-1, error}; }
    Response operator()(const CreateGroupRequest& m) const { return CreateGroupResponse{m.group, error, Broker{}}; }
    Response operator()(const DeleteGroupRequest& m) const { return DeleteGroupResponse{m.group, error}; }
    Response operator()(const RegisterConsumerRequest& m) const {
      return RegisterConsumerResponse{m.group, m.consumerId, -1, {}, {}, error};
    }
    Response operator()(const ListGroupsRequest&) const { return ListGroupsResponse{{}, error}; }
    Response operator()(const LeaveGroupRequest&) const { return LeaveGroupResponse{error}; }
    Response operator()(const CommitOffsetsRequest&) const { return CommitOffsetsResponse{{}, error}; }
    Response operator()(const FetchOffsetsRequest&) const { return FetchOffsetsResponse{{}, error}; }
    Response operator()(const RewindConsumerRequest&) const { return RewindConsumerResponse{{}, error}; }
    Response operator()(const AuthenticateRequest&) const { return AuthenticateResponse{error}; }
    Response operator()(const DrainServerRequest&) const { return DrainServerResponse{error}; }
    Response operator()(const DescribeGroupRequest& m) const {
      DescribeGroupResponse r;
      r.group = m.group;
      r.error = error;
      return r;
    }
    Response operator()(const DescribeServersRequest&) const {
      DescribeServersResponse r;
      r.error = error;
      return r;
    }
  };
  return std::visit(Visitor{error}, request);
}

ErrorCode responseError(const Response& response) {
  return std::visit([](const auto& m) { return m.error; }, response);
}

}  // namespace groupcoord::protocol
