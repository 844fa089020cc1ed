// encode -> decode gives back what went in, for every API and the edges of
// every field type.

#include <gtest/gtest.h>

#include "Samples.h"
#include "TestBytes.h"
#include "protocol/Codec.h"

namespace groupcoord::protocol::testing {
namespace {

TEST(RoundTrip, EveryRequestSample) {
  const auto samples = requestSamples();
  bool seen[kApiCount] = {};
  for (const auto& s : samples) {
    SCOPED_TRACE(s.name);
    seen[static_cast<size_t>(apiKeyOf(s.request))] = true;
    std::vector<uint8_t> frame;
    encodeRequest(s.header, s.request, frame);

    int32_t bodySize = -1;
    ASSERT_EQ(peekFrame(frame, kDefaultMaxFrameBytes, kMinRequestBody, &bodySize), FrameStatus::Ready);
    ASSERT_EQ(static_cast<size_t>(bodySize) + 4, frame.size());

    const DecodedRequest d = decodeRequest(bodyOf(frame));
    ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
    EXPECT_TRUE(d.detail.empty());
    EXPECT_EQ(d.header, s.header);
    EXPECT_EQ(d.request, s.request);
    EXPECT_EQ(apiKeyOf(d.request), apiKeyOf(s.request));
  }
  for (int k = 0; k < kApiCount; ++k) EXPECT_TRUE(seen[k]) << "no request sample for ApiKey " << k;
}

TEST(RoundTrip, EveryResponseSample) {
  const auto samples = responseSamples();
  bool seen[kApiCount + 1] = {};
  for (const auto& s : samples) {
    SCOPED_TRACE(s.name);
    const std::optional<ApiKey> api = apiKeyOf(s.response);  // nullopt: ErrorOnlyResponse
    seen[api ? static_cast<size_t>(*api) : static_cast<size_t>(kApiCount)] = true;
    std::vector<uint8_t> frame;
    encodeResponse(s.header, s.response, frame);

    int32_t bodySize = -1;
    ASSERT_EQ(peekFrame(frame, kDefaultMaxFrameBytes, 10, &bodySize), FrameStatus::Ready);
    ASSERT_EQ(static_cast<size_t>(bodySize) + 4, frame.size());

    const DecodedResponse d = decodeResponse(s.api, bodyOf(frame));
    ASSERT_TRUE(d.ok) << d.detail;
    EXPECT_EQ(d.header, s.header);
    EXPECT_EQ(d.response, s.response);
  }
  for (int k = 0; k <= kApiCount; ++k) EXPECT_TRUE(seen[k]) << "no response sample for ApiKey " << k << " (" << kApiCount << ": error-only)";
}

TEST(RoundTrip, EncodeAppendsAfterWhatIsInTheBuffer) {
  std::vector<uint8_t> out{0xde, 0xad};
  const auto samples = requestSamples();
  encodeRequest(samples[0].header, samples[0].request, out);
  const size_t first = out.size();
  encodeRequest(samples[1].header, samples[1].request, out);
  ASSERT_GT(first, 6u);
  EXPECT_EQ(out[0], 0xde);
  EXPECT_EQ(out[1], 0xad);

  // Two frames back to back, each found by peekFrame.
  std::span<const uint8_t> rest = std::span<const uint8_t>(out).subspan(2);
  for (int i = 0; i < 2; ++i) {
    int32_t size = 0;
    ASSERT_EQ(peekFrame(rest, kDefaultMaxFrameBytes, kMinRequestBody, &size), FrameStatus::Ready);
    const DecodedRequest d = decodeRequest(rest.subspan(4, static_cast<size_t>(size)));
    ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
    EXPECT_EQ(d.request, samples[static_cast<size_t>(i)].request);
    rest = rest.subspan(4 + static_cast<size_t>(size));
  }
  EXPECT_TRUE(rest.empty());
}

TEST(RoundTrip, RequestApiKeyComesFromTheRequestNotTheHeader) {
  RequestHeader h = headerFor(ApiKey::ListGroups, 77, "x");  // disagrees with the request
  std::vector<uint8_t> frame;
  encodeRequest(h, Request{HeartbeatRequest{"g", "c", 1}}, frame);
  ASSERT_GE(frame.size(), 6u);
  EXPECT_EQ(frame[4], 0x00);
  EXPECT_EQ(frame[5], 0x00);  // ApiKey 0, Heartbeat
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(d.header.apiKey, ApiKey::Heartbeat);
}

TEST(RoundTrip, LeaveGroupResponseDecodesAsItsOwnType) {
  // A LeaveGroup response has the shape of an error-only answer; the codec
  // gives the API's type so callers need not handle both.
  for (ErrorCode e : {ErrorCode::NONE, ErrorCode::UNKNOWN_API, ErrorCode::INVALID_REQUEST}) {
    std::vector<uint8_t> frame;
    encodeResponse({0, 8}, ErrorOnlyResponse{e}, frame);
    const DecodedResponse d = decodeResponse(ApiKey::LeaveGroup, bodyOf(frame));
    ASSERT_TRUE(d.ok) << d.detail;
    ASSERT_TRUE(std::holds_alternative<LeaveGroupResponse>(d.response));
    EXPECT_EQ(std::get<LeaveGroupResponse>(d.response).error, e);
  }
}

TEST(RoundTrip, DrainServerResponseDecodesAsItsOwnType) {
  // Like LeaveGroup's: two bytes after the header are always a DrainServerResponse.
  for (ErrorCode e : {ErrorCode::NONE, ErrorCode::UNKNOWN_API, ErrorCode::INVALID_REQUEST}) {
    std::vector<uint8_t> frame;
    encodeResponse({0, 9}, ErrorOnlyResponse{e}, frame);
    const DecodedResponse d = decodeResponse(ApiKey::DrainServer, bodyOf(frame));
    ASSERT_TRUE(d.ok) << d.detail;
    ASSERT_TRUE(std::holds_alternative<DrainServerResponse>(d.response));
    EXPECT_EQ(std::get<DrainServerResponse>(d.response).error, e);
  }
}

TEST(RoundTrip, StringLongerThanInt16IsCutSoTheFrameStaysWellFormed) {
  // Not a legal message (names are at most 249 bytes), but the encoder must
  // never write a length that disagrees with the bytes that follow.
  const std::string huge(40000, 'x');
  std::vector<uint8_t> frame;
  encodeRequest(headerFor(ApiKey::DeleteGroup, 1, std::nullopt), DeleteGroupRequest{huge}, frame);
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(std::get<DeleteGroupRequest>(d.request).group, std::string(0x7fff, 'x'));
}

}  // namespace
}  // namespace groupcoord::protocol::testing
