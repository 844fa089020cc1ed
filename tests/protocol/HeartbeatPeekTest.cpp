// peekHeartbeat, the server's heartbeat fast path (docs/design.md,
// "Heartbeats"): it must accept exactly the bodies that decodeRequest reads
// as a Heartbeat with valid names, and read the same fields from them.
// Anything else goes to the general path, which explains the refusal.

#include <gtest/gtest.h>

#include <cstdint>

#include "Samples.h"
#include "protocol/Codec.h"

namespace groupcoord::protocol::testing {
namespace {

std::vector<uint8_t> bodyOf(const RequestHeader& h, const Request& r) {
  std::vector<uint8_t> frame;
  encodeRequest(h, r, frame);
  return std::vector<uint8_t>(frame.begin() + 4, frame.end());
}

// The two readers agree on `body`; returns whether the fast path took it.
bool agree(const std::vector<uint8_t>& body) {
  HeartbeatView v;
  const bool peeked = peekHeartbeat(body, v);
  const DecodedRequest d = decodeRequest(body);
  const auto* hb = d.status == DecodeStatus::Ok ? std::get_if<HeartbeatRequest>(&d.request) : nullptr;
  const bool expected = hb != nullptr && validateNames(d.request) == ErrorCode::NONE;
  EXPECT_EQ(peeked, expected) << "decode status " << static_cast<int>(d.status) << ", detail: " << d.detail;
  if (peeked && hb != nullptr) {
    EXPECT_EQ(v.group, hb->group);
    EXPECT_EQ(v.consumerId, hb->consumerId);
    EXPECT_EQ(v.generation, hb->generation);
    EXPECT_EQ(v.waitMs, hb->waitMs);
    EXPECT_EQ(v.version, d.header.version);
    EXPECT_EQ(v.correlationId, d.header.correlationId);
  }
  return peeked;
}

// The fast path's answer is written in place; it must be the general
// encoder's bytes exactly.
TEST(HeartbeatAnswer, IsTheEncodersFrameByteForByte) {
  const int64_t generations[] = {-1, 0, 1, 255, 1LL << 40, INT64_MAX, INT64_MIN};
  const int64_t correlations[] = {0, 1, -1, 0x0102030405060708LL, INT64_MIN};
  const ErrorCode errors[] = {ErrorCode::NONE, ErrorCode::REBALANCE_NEEDED, ErrorCode::UNKNOWN_CONSUMER,
                              ErrorCode::CONTROLLER_NOT_AVAILABLE, static_cast<ErrorCode>(-1)};
  size_t cases = 0;
  for (int16_t version : {int16_t{0}, int16_t{1}, int16_t{-1}, int16_t{0x7fff}}) {
    for (int64_t c : correlations) {
      for (int64_t g : generations) {
        for (ErrorCode e : errors) {
          const HeartbeatResponse r{g, e};
          std::vector<uint8_t> general{0xAA}, fast{0xAA};  // after bytes already there
          encodeResponse(ResponseHeader{version, c}, Response{r}, general);
          appendHeartbeatResponse(version, c, r, fast);
          ASSERT_EQ(fast, general) << "version " << version << ", correlation " << c << ", generation " << g;
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 4u * 5 * 7 * 5);
}

TEST(HeartbeatPeek, ReadsEveryHeartbeatSampleAsTheDecoderDoes) {
  size_t heartbeats = 0;
  for (const auto& s : requestSamples()) {
    const bool isHeartbeat = std::holds_alternative<HeartbeatRequest>(s.request);
    EXPECT_EQ(agree(bodyOf(s.header, s.request)), isHeartbeat) << s.name;
    heartbeats += isHeartbeat;
  }
  EXPECT_GE(heartbeats, 5u);
}

// Version 1 carries WaitMs after the Generation: its truncations, and
// version 0's body under a version-1 header, are refused by both readers.
TEST(HeartbeatPeek, VersionOneReadsItsWaitAndRefusesVersionZerosBody) {
  const auto body = bodyOf(headerFor(ApiKey::Heartbeat, 9, "svc", 1), HeartbeatRequest{"orders", "svc-1", 4, 750});
  HeartbeatView v;
  ASSERT_TRUE(peekHeartbeat(body, v));
  EXPECT_EQ(v.version, 1);
  EXPECT_EQ(v.waitMs, 750);
  ASSERT_TRUE(agree(body));
  for (size_t n = 0; n < body.size(); ++n) {
    EXPECT_FALSE(agree(std::vector<uint8_t>(body.begin(), body.begin() + static_cast<ptrdiff_t>(n)))) << n;
  }
  auto asZero = bodyOf(headerFor(ApiKey::Heartbeat, 9, "svc", 0), HeartbeatRequest{"orders", "svc-1", 4, 750});
  EXPECT_TRUE(agree(asZero));
  ASSERT_TRUE(peekHeartbeat(asZero, v));
  EXPECT_EQ(v.waitMs, 0) << "version 0 carries no wait";
  asZero[3] = 1;  // the version's low byte: version 1 without its WaitMs
  EXPECT_FALSE(agree(asZero));
}

TEST(HeartbeatPeek, RefusesEveryTruncationAndTrailingBytes) {
  const auto body = bodyOf(headerFor(ApiKey::Heartbeat, 9, "svc"), HeartbeatRequest{"orders", "svc-1", 4});
  ASSERT_TRUE(agree(body));
  for (size_t n = 0; n < body.size(); ++n) {
    EXPECT_FALSE(agree(std::vector<uint8_t>(body.begin(), body.begin() + static_cast<ptrdiff_t>(n)))) << n;
  }
  auto longer = body;
  longer.push_back(0);
  EXPECT_FALSE(agree(longer));
}

TEST(HeartbeatPeek, InvalidNamesNullOrOversizedFieldsGoToTheGeneralPath) {
  EXPECT_FALSE(agree(bodyOf(headerFor(ApiKey::Heartbeat, 1, "c"), HeartbeatRequest{"", "m", 1})));
  EXPECT_FALSE(agree(bodyOf(headerFor(ApiKey::Heartbeat, 1, "c"), HeartbeatRequest{"g", "", 1})));
  EXPECT_FALSE(agree(bodyOf(headerFor(ApiKey::Heartbeat, 1, "c"), HeartbeatRequest{"a/b", "m", 1})));
  EXPECT_FALSE(agree(bodyOf(headerFor(ApiKey::Heartbeat, 1, "c"), HeartbeatRequest{"..", "m", 1})));
  EXPECT_FALSE(agree(bodyOf(headerFor(ApiKey::Heartbeat, 1, std::string(256, 'c')), HeartbeatRequest{"g", "m", 1})));
  EXPECT_TRUE(agree(bodyOf(headerFor(ApiKey::Heartbeat, 1, std::nullopt), HeartbeatRequest{"g", "m", 1})));
  EXPECT_TRUE(agree(bodyOf(headerFor(ApiKey::Heartbeat, 1, std::string(255, 'c')), HeartbeatRequest{"g", "m", 1})));
  EXPECT_FALSE(agree(bodyOf(headerFor(ApiKey::RegisterConsumer, 1, "c"), RegisterConsumerRequest{"g", "m", {}})));
}

// Every byte of a heartbeat, set to a few telling values: the two readers
// still agree (the codec fuzzer checks the same on random bodies).
TEST(HeartbeatPeek, AgreesWithTheDecoderOnEverySingleByteChange) {
  const auto body = bodyOf(headerFor(ApiKey::Heartbeat, 9, "svc"), HeartbeatRequest{"orders", "svc-1", 4});
  size_t taken = 0, changes = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    for (uint8_t value : {0x00, 0x01, 0x02, 0x2e, 0x2f, 0x41, 0x7f, 0x80, 0xff}) {
      auto changed = body;
      changed[i] = value;
      taken += agree(changed);
      ++changes;
    }
  }
  EXPECT_GT(taken, 0u);
  EXPECT_LT(taken, changes);
}

}  // namespace
}  // namespace groupcoord::protocol::testing
