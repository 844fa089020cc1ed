// libFuzzer entry point for the codec: what groupcoordd does with bytes from
// a socket (the frame reader, then every request decoder) and what a client
// does with bytes from the server (every response decoder). Build with
// -DGROUPCOORD_FUZZ=ON and clang; scripts/fuzz.sh builds and runs it.
//
// Checks beyond "does not crash" (ASan and UBSan watch the rest):
// - a request or a response that decodes re-encodes to a frame whose Size
//   matches its body and that decodes to the same message;
// - the frame reader never announces a body it was not given, nor one
//   outside its bounds;
// - peekHeartbeat (the server's heartbeat fast path) accepts a body exactly
//   when decodeRequest reads a Heartbeat from it whose names are valid, and
//   then reads the same fields.

#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "protocol/Codec.h"
#include "protocol/fuzz/RoundTrip.h"

using namespace groupcoord::protocol;

namespace {

// A frame size the reader may return must lie within the bounds it was given.
void checkFrame(FrameStatus status, int32_t bodySize, size_t available, int32_t maxFrameBytes, int32_t minBody) {
  if (status != FrameStatus::Ready) return;
  if (bodySize < minBody || bodySize > maxFrameBytes || static_cast<size_t>(bodySize) + 4 > available) std::abort();
}

// The server's side: split the input into frames as an I/O loop does, and
// answer each as the server would, until a frame cannot be trusted or the
// bytes run out.
void readAsServer(std::span<const uint8_t> input, int32_t maxFrameBytes) {
  std::vector<uint8_t> answer;
  while (true) {
    int32_t bodySize = -1;
    const FrameStatus status = peekFrame(input, maxFrameBytes, kMinRequestBody, &bodySize);
    checkFrame(status, bodySize, input.size(), maxFrameBytes, kMinRequestBody);
    if (status != FrameStatus::Ready) return;
    const DecodedRequest d = decodeRequest(input.subspan(4, static_cast<size_t>(bodySize)));
    answer.clear();
    const ResponseHeader header{d.header.version, d.header.correlationId};
    switch (d.status) {
      case DecodeStatus::Ok:
        encodeResponse(header, errorResponse(d.request, validateNames(d.request)), answer);
        break;
      case DecodeStatus::UnknownApi:
        encodeResponse(header, ErrorOnlyResponse{ErrorCode::UNKNOWN_API}, answer);
        break;
      case DecodeStatus::UnsupportedVersion:
        encodeResponse(header, ErrorOnlyResponse{ErrorCode::UNSUPPORTED_VERSION}, answer);
        break;
      case DecodeStatus::InvalidRequest:
        if (d.detail.empty()) std::abort();  // every refusal says why, for the log
        encodeResponse(header, ErrorOnlyResponse{ErrorCode::INVALID_REQUEST}, answer);
        break;
    }
    input = input.subspan(4 + static_cast<size_t>(bodySize));
  }
}

// The fast path and the decoder agree on every body.
void heartbeatPeek(std::span<const uint8_t> body, const DecodedRequest& decoded) {
  HeartbeatView v;
  const bool peeked = peekHeartbeat(body, v);
  const auto* hb = decoded.status == DecodeStatus::Ok ? std::get_if<HeartbeatRequest>(&decoded.request) : nullptr;
  const bool expected = hb != nullptr && validateNames(decoded.request) == ErrorCode::NONE;
  if (peeked != expected) std::abort();
  if (peeked && (v.group != hb->group || v.consumerId != hb->consumerId || v.generation != hb->generation ||
                 v.version != decoded.header.version || v.correlationId != decoded.header.correlationId)) {
    std::abort();
  }
}

// body as a request body: when it decodes, the round trip must be exact.
void requestRoundTrip(std::span<const uint8_t> body) {
  const DecodedRequest decoded = decodeRequest(body);
  heartbeatPeek(body, decoded);
  if (decoded.status != DecodeStatus::Ok) return;
  (void)responseError(errorResponse(decoded.request, ErrorCode::INVALID_REQUEST));

  fuzz::expectRoundTrip(
      decoded, kMinRequestBody, [](const DecodedRequest& d, auto& out) { encodeRequest(d.header, d.request, out); },
      [](std::span<const uint8_t> b) { return decodeRequest(b); },
      [](const DecodedRequest& d, const DecodedRequest& again) {
        return again.status == DecodeStatus::Ok && again.header == d.header && again.request == d.request;
      });
}

// body as the answer to a request of `api` (a client's side).
void responseRoundTrip(ApiKey api, std::span<const uint8_t> body) {
  const DecodedResponse decoded = decodeResponse(api, body);
  if (!decoded.ok) {
    if (decoded.detail.empty()) std::abort();
    return;
  }
  (void)responseError(decoded.response);
  fuzz::expectRoundTrip(
      decoded, 10, [](const DecodedResponse& d, auto& out) { encodeResponse(d.header, d.response, out); },
      [api](std::span<const uint8_t> b) { return decodeResponse(api, b); },
      [](const DecodedResponse& d, const DecodedResponse& again) {
        return again.ok && again.header == d.header && again.response == d.response;
      });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);

  // The input as a stream of frames, with the default limit and with a
  // small one (so that TooLarge is reachable with small inputs)...
  readAsServer(input, kDefaultMaxFrameBytes);
  readAsServer(input, 64);

  // ...and as one body, so that the fuzzer need not learn the Size prefix.
  requestRoundTrip(input);

  // The same bytes as a response to every API, and to one no server knows.
  // A client reads frames with a 10-byte minimum (the response header).
  int32_t bodySize = -1;
  const FrameStatus status = peekFrame(input, kDefaultMaxFrameBytes, 10, &bodySize);
  checkFrame(status, bodySize, input.size(), kDefaultMaxFrameBytes, 10);
  const std::span<const uint8_t> framed =
      status == FrameStatus::Ready ? input.subspan(4, static_cast<size_t>(bodySize)) : std::span<const uint8_t>();
  for (int16_t key = 0; key <= kApiCount; ++key) {
    const auto api = static_cast<ApiKey>(key == kApiCount ? 42 : key);
    responseRoundTrip(api, input);
    if (status == FrameStatus::Ready) responseRoundTrip(api, framed);
  }
  return 0;
}
