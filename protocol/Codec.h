#pragma once

// The one codec of the groupcoord wire protocol (docs/protocol.md), shared by
// groupcoordd and the client library. Bounded: every length and count is
// checked against the bytes that remain before it is used; bad bytes give a
// status, never an exception and never an allocation sized by the sender.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/Messages.h"

namespace groupcoord::protocol {

// ---- Framing --------------------------------------------------------------

enum class FrameStatus {
  NeedMore,  // fewer than 4 bytes, or the body is not complete yet
  Ready,     // a whole frame: *bodySize bytes follow the 4-byte size
  TooSmall,  // Size below the minimum: close the connection
  TooLarge,  // Size above max_frame_bytes (or negative): close the connection
};

// Looks at the start of `buffered`. minBody is kMinRequestBody for requests
// (server side) and 10 (a response header) for responses (client side).
// A negative Size is TooLarge. *bodySize (may be null) is set for Ready, and
// for NeedMore once the Size is known and within bounds, so a reader knows how
// much is still to come.
FrameStatus peekFrame(std::span<const uint8_t> buffered, int32_t maxFrameBytes, int32_t minBody,
                      int32_t* bodySize);

// ---- Requests -------------------------------------------------------------

enum class DecodeStatus {
  Ok,
  UnknownApi,          // answer ErrorOnlyResponse{UNKNOWN_API}
  UnsupportedVersion,  // answer ErrorOnlyResponse{UNSUPPORTED_VERSION}
  InvalidRequest,      // answer ErrorOnlyResponse{INVALID_REQUEST}
};

struct DecodedRequest {
  DecodeStatus status = DecodeStatus::InvalidRequest;
  // ApiKey, Version and CorrelationId are always filled (a trusted request
  // body has at least kMinRequestBody bytes), so every status can be
  // answered with the right correlation id.
  RequestHeader header;
  Request request;  // valid only when status == Ok
  std::string detail;  // why decoding failed, for the log ("count 70000 beyond the 12 bytes left")
};

// body: the frame without its 4-byte Size.
DecodedRequest decodeRequest(std::span<const uint8_t> body);

// A Heartbeat request read in place: its names point into the body, which
// must outlive the view. For the server's heartbeat fast path
// (docs/design.md, "Heartbeats").
struct HeartbeatView {
  int16_t version = 0;
  int64_t correlationId = 0;
  std::string_view group;
  std::string_view consumerId;
  int64_t generation = -1;
  int32_t waitMs = 0;  // version 1
};

// True when `body` (a frame without its Size) is a well-formed Heartbeat
// request whose names are valid: decodeRequest would give Ok and the same
// fields, and validateNames NONE. False for anything else, which
// decodeRequest then reads and explains. Allocates nothing.
bool peekHeartbeat(std::span<const uint8_t> body, HeartbeatView& out);

// Appends the whole frame (Size included) of a Heartbeat response: the bytes
// encodeResponse writes for it, stored in place with one resize (the
// server's heartbeat fast path).
void appendHeartbeatResponse(int16_t version, int64_t correlationId, const HeartbeatResponse& response,
                             std::vector<uint8_t>& out);

// Appends a whole frame (Size included) to out. The ApiKey written is the
// request's own (apiKeyOf(request)); header.apiKey is not consulted.
void encodeRequest(const RequestHeader& header, const Request& request, std::vector<uint8_t>& out);

// ---- Responses ------------------------------------------------------------

// Appends a whole frame (Size included) to out.
void encodeResponse(const ResponseHeader& header, const Response& response, std::vector<uint8_t>& out);

struct DecodedResponse {
  bool ok = false;
  ResponseHeader header;
  Response response;  // the API's response, or ErrorOnlyResponse when the body was 2 bytes after the header
  std::string detail;
};

// body: the frame without its 4-byte Size; api: what the request was.
// LeaveGroup, Authenticate and DrainServer responses have the same shape as
// an error-only answer; for them the result is always the API's own
// response type.
DecodedResponse decodeResponse(ApiKey api, std::span<const uint8_t> body);

// ---- Semantics shared by server and client -----------------------------------

// Group names, topic names and consumer ids: 1..249 of [A-Za-z0-9._-], not "." or "..".
bool isValidName(std::string_view name);

// Checks the names a request carries, before anything reaches ZooKeeper:
// NONE, INVALID_GROUP_NAME (group or topic) or INVALID_CONSUMER_ID. An empty
// ConsumerId is valid only in RegisterConsumer (a new member). ListGroups
// never fails here: its bad names are answered per GroupInfo. DrainServer
// carries no name; its ServerId is checked here instead (INVALID_REQUEST
// when negative).
ErrorCode validateNames(const Request& request);

// The full response of the request's API carrying `error`, with the fields
// the contract says an error answer has (the group echoed where the
// response has one; other strings empty, numbers -1, arrays empty, a Broker
// of "no controller").
Response errorResponse(const Request& request, ErrorCode error);

// The ErrorCode of any response.
ErrorCode responseError(const Response& response);

}  // namespace groupcoord::protocol
