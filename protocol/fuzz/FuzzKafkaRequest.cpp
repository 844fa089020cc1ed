// libFuzzer entry point for the Kafka codec (protocol/kafka/Codec.h): what
// groupcoordd's Kafka port does with bytes from a socket (the frame reader,
// then the request decoder) and what a test client does with bytes from the
// port (every response decoder at every served version). Build with
// -DGROUPCOORD_FUZZ=ON and clang; scripts/fuzz.sh builds and runs it beside
// the groupcoord protocol's target (FuzzRequest.cpp).
//
// Checks beyond "does not crash" (ASan and UBSan watch the rest; the run's
// -malloc_limit_mb catches an allocation sized by a count the bytes do not
// hold, docs/protocol.md "The Kafka port"):
// - every status but Ok says why, for the log;
// - a request or a response that decodes re-encodes to a frame whose Size
//   matches its body and that decodes to the same message and header;
// - an ApiVersions request above the served maximum gets the version-0
//   fallback, whatever its body holds.

#include <cstdint>
#include <cstdlib>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include "protocol/Codec.h"
#include "protocol/fuzz/RoundTrip.h"
#include "protocol/kafka/Codec.h"

namespace kafka = groupcoord::protocol::kafka;
using groupcoord::protocol::FrameStatus;
using groupcoord::protocol::peekFrame;

namespace {

constexpr int32_t kMaxFrameBytes = 1 << 20;

// body as one request body: a defined status, and an exact round trip.
void requestRoundTrip(std::span<const uint8_t> body) {
  const kafka::DecodedRequest decoded = kafka::decodeRequest(body);
  if (decoded.status != kafka::DecodeStatus::Ok) {
    if (decoded.detail.empty()) std::abort();
    return;
  }
  groupcoord::protocol::fuzz::expectRoundTrip(
      decoded, kafka::kMinRequestBody,
      [](const kafka::DecodedRequest& d, auto& out) { kafka::encodeRequest(d.header, d.request, out); },
      [](std::span<const uint8_t> b) { return kafka::decodeRequest(b); },
      [](const kafka::DecodedRequest& d, const kafka::DecodedRequest& again) {
        return again.status == kafka::DecodeStatus::Ok && again.header == d.header && again.request == d.request;
      });
}

// The port's side: split the input into frames, decode each, and write the
// answers the codec alone decides (ApiVersions, and its fallback).
void readAsPort(std::span<const uint8_t> input, int32_t maxFrameBytes) {
  std::vector<uint8_t> answer;
  while (true) {
    int32_t bodySize = -1;
    const FrameStatus status = peekFrame(input, maxFrameBytes, kafka::kMinRequestBody, &bodySize);
    if (status != FrameStatus::Ready) return;
    if (bodySize < kafka::kMinRequestBody || bodySize > maxFrameBytes ||
        static_cast<size_t>(bodySize) + 4 > input.size()) {
      std::abort();
    }
    const auto body = input.subspan(4, static_cast<size_t>(bodySize));
    requestRoundTrip(body);
    const kafka::DecodedRequest d = kafka::decodeRequest(body);
    answer.clear();
    const bool apiVersions = d.header.apiKey == static_cast<int16_t>(kafka::ApiKey::ApiVersions);
    if (apiVersions && d.status == kafka::DecodeStatus::Ok) {
      kafka::encodeResponse(d.header.correlationId, d.header.apiVersion, kafka::apiVersionsResponse(), answer);
    } else if (apiVersions && d.status == kafka::DecodeStatus::UnsupportedVersion) {
      kafka::encodeApiVersionsFallback(d.header.correlationId, answer);
      const auto written = std::span<const uint8_t>(answer).subspan(4);
      const kafka::DecodedResponse r = kafka::decodeResponse(kafka::ApiKey::ApiVersions, 0, written);
      if (!r.ok || std::get<kafka::ApiVersionsResponse>(r.response).error != kafka::ErrorCode::UNSUPPORTED_VERSION) {
        std::abort();
      }
    }
    input = input.subspan(4 + static_cast<size_t>(bodySize));
  }
}

// body as the answer to `api` at `version` (a test client's side).
void responseRoundTrip(kafka::ApiKey api, int16_t version, std::span<const uint8_t> body) {
  const kafka::DecodedResponse decoded = kafka::decodeResponse(api, version, body);
  if (!decoded.ok) {
    if (decoded.detail.empty()) std::abort();
    return;
  }
  groupcoord::protocol::fuzz::expectRoundTrip(
      decoded, 4,
      [version](const kafka::DecodedResponse& d, auto& out) {
        kafka::encodeResponse(d.correlationId, version, d.response, out);
      },
      [api, version](std::span<const uint8_t> b) { return kafka::decodeResponse(api, version, b); },
      [](const kafka::DecodedResponse& d, const kafka::DecodedResponse& again) {
        return again.ok && again.correlationId == d.correlationId && again.response == d.response;
      });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);

  // As a stream of frames, with a large limit and a small one...
  readAsPort(input, kMaxFrameBytes);
  readAsPort(input, 64);
  // ...and as one body, so that the fuzzer need not learn the Size prefix.
  requestRoundTrip(input);

  // As a response body to every served API at every served version, and at
  // one version past the newest (refused, with a reason).
  const kafka::ApiVersionsResponse served = kafka::apiVersionsResponse();
  for (const auto& api : served.apiKeys) {
    for (int16_t v = api.minVersion; v <= api.maxVersion + 1; ++v) {
      responseRoundTrip(static_cast<kafka::ApiKey>(api.apiKey), v, input);
    }
  }
  return 0;
}
