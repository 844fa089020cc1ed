#pragma once

// The codec of the Kafka requests and responses groupcoord serves
// (protocol/kafka/Messages.h), driven by their descriptions like
// groupcoord's own codec (protocol/FieldCodec.h). Bounded the same way:
// every length and count is checked against the bytes that remain before it
// is used; bad bytes give a status, never an exception and never an
// allocation sized by the sender. No name rules: Kafka group, member and
// client ids are arbitrary strings, judged (if at all) by the server.
//
// A frame is an int32 big-endian Size, then the header, then the body.
// Request header version 1 (every served request): ApiKey int16,
// ApiVersion int16, CorrelationId int32, ClientId nullable string.
// Response header version 0 (every served response): CorrelationId int32.
// A flexible version of an API (from its message's kFlexibleSince on) has
// request header version 2 (version 1 and tagged fields; ClientId keeps its
// int16 length) and response header version 1 (CorrelationId and tagged
// fields), except ApiVersions, whose response header is always version 0
// (docs/protocol.md, "The Kafka port"). Framing itself is groupcoord's
// (protocol/Codec.h, peekFrame, with kMinRequestBody below).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/kafka/Messages.h"

namespace groupcoord::protocol::kafka {

// ApiKey + ApiVersion + CorrelationId + ClientId length.
inline constexpr int32_t kMinRequestBody = 10;

struct RequestHeader {
  int16_t apiKey = 0;  // the raw key: may be one this codec does not serve
  int16_t apiVersion = 0;
  int32_t correlationId = 0;
  std::optional<std::string> clientId;  // nullable
  bool operator==(const RequestHeader&) const = default;
};

enum class DecodeStatus {
  Ok,
  UnknownApi,          // ApiKey not served: header has the key, version and correlation id
  UnsupportedVersion,  // served ApiKey, version outside its range: the body is not read
  Malformed,           // detail names the field
};
std::string_view decodeStatusName(DecodeStatus s);

struct DecodedRequest {
  DecodeStatus status = DecodeStatus::Malformed;
  // Key, version and correlation id are filled whenever the body has their
  // 8 bytes; clientId whenever it was read, whatever the status.
  RequestHeader header;
  Request request;  // valid only when status == Ok
  std::string detail;
};

// body: the frame without its 4-byte Size. The header's ClientId is read
// for every ApiKey (header version 1; a flexible request, header version 2,
// starts the same way), then, for served versions only, the header's tagged
// fields where the version is flexible, then the body, strictly: no bytes
// may follow the last field.
DecodedRequest decodeRequest(std::span<const uint8_t> body);

// The whole frame (Size, header version 1 or, flexible, 2, body) of
// `request` at header.apiVersion; the ApiKey written is the request's own.
// For tests and tools: a server only decodes requests.
void encodeRequest(const RequestHeader& header, const Request& request, std::vector<uint8_t>& out);

// Appends the whole frame (Size, response header version 0 or, flexible,
// 1, body) of `response` at `version`, which the caller takes from the
// request it answers (within the API's kMinVersion..kMaxVersion).
void encodeResponse(int32_t correlationId, int16_t version, const Response& response, std::vector<uint8_t>& out);

struct DecodedResponse {
  bool ok = false;
  int32_t correlationId = 0;
  Response response;
  std::string detail;
};

// body: a response frame without its Size, of `api` at `version` (what the
// request was). For tests and tools.
DecodedResponse decodeResponse(ApiKey api, int16_t version, std::span<const uint8_t> body);

// The header versions of `api` at `version`: request 1 or 2, response 0 or
// 1 (ApiVersions: always 0). -1 for an API not served or a version outside
// its range.
int16_t requestHeaderVersion(ApiKey api, int16_t version);
int16_t responseHeaderVersion(ApiKey api, int16_t version);

// A Heartbeat request read in place (the views point into the body it was
// read from): what the Kafka port answers on its I/O thread.
struct HeartbeatView {
  int16_t apiVersion = 0;
  int32_t correlationId = 0;
  std::string_view groupId;
  int32_t generationId = -1;
  std::string_view memberId;
  std::optional<std::string_view> groupInstanceId;
};

// Whether `body` (a frame without its Size) is a Heartbeat request that
// decodeRequest reads as one (a served version, every field whole, nothing
// after the last), read into `out`. false for anything else, which
// decodeRequest then judges.
bool peekHeartbeat(std::span<const uint8_t> body, HeartbeatView& out);

// Appends the whole frame of a Heartbeat answer with `error` at `version`
// (a served one): the bytes encodeResponse writes for it.
void appendHeartbeatResponse(int32_t correlationId, int16_t version, ErrorCode error, std::vector<uint8_t>& out);

// Whether `key` is served, and its version range (an API not served has 0
// and -1).
bool isServedApi(int16_t key);
int16_t minVersion(ApiKey api);
int16_t maxVersion(ApiKey api);

// Every served API with its version range, in ApiKey order, with `error`:
// the ApiVersions answer.
ApiVersionsResponse apiVersionsResponse(ErrorCode error = ErrorCode::NONE);

// The answer to an ApiVersions request whose version is above the served
// maximum (a client that tries its newest version first, as librdkafka
// 2.0.2 does with version 3): the request is not parsed, and the answer is
// a version-0 body, UNSUPPORTED_VERSION with the served list, so the client
// can pick a version and ask again. Response header version 0, as every
// ApiVersions response has.
void encodeApiVersionsFallback(int32_t correlationId, std::vector<uint8_t>& out);

}  // namespace groupcoord::protocol::kafka
