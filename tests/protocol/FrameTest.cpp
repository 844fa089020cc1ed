// peekFrame: the int32 Size prefix, trusted only within [minBody, maxFrameBytes].

#include <gtest/gtest.h>

#include "TestBytes.h"
#include "protocol/Codec.h"

namespace groupcoord::protocol::testing {
namespace {

std::vector<uint8_t> sizePrefix(int64_t size) {
  std::vector<uint8_t> out;
  encodeInt32(out, size);
  return out;
}

TEST(PeekFrame, FewerThanFourBytesNeedsMore) {
  const std::vector<uint8_t> bytes{0x00, 0x00, 0x00};
  for (size_t n = 0; n < 4; ++n) {
    int32_t bodySize = 123;
    EXPECT_EQ(peekFrame(std::span(bytes.data(), n), kDefaultMaxFrameBytes, kMinRequestBody, &bodySize),
              FrameStatus::NeedMore);
    EXPECT_EQ(bodySize, 123) << "nothing is known yet";
  }
}

TEST(PeekFrame, IncompleteBodyNeedsMoreAndTellsTheSize) {
  std::vector<uint8_t> bytes = sizePrefix(20);
  bytes.resize(4 + 19);
  int32_t bodySize = 0;
  EXPECT_EQ(peekFrame(bytes, kDefaultMaxFrameBytes, kMinRequestBody, &bodySize), FrameStatus::NeedMore);
  EXPECT_EQ(bodySize, 20);
}

TEST(PeekFrame, WholeFrameIsReadyEvenWithTheNextOneBehindIt) {
  std::vector<uint8_t> bytes = sizePrefix(14);
  bytes.resize(4 + 14 + 9, 0xab);
  int32_t bodySize = 0;
  EXPECT_EQ(peekFrame(bytes, kDefaultMaxFrameBytes, kMinRequestBody, &bodySize), FrameStatus::Ready);
  EXPECT_EQ(bodySize, 14);
}

TEST(PeekFrame, RequestSizeBelowFourteenIsTooSmall) {
  for (int64_t size : {0, 1, 10, 13}) {
    std::vector<uint8_t> bytes = sizePrefix(size);
    bytes.resize(64);
    int32_t bodySize = 0;
    EXPECT_EQ(peekFrame(bytes, kDefaultMaxFrameBytes, kMinRequestBody, &bodySize), FrameStatus::TooSmall)
        << "Size " << size;
  }
  // Fourteen, the smallest header, is a frame.
  std::vector<uint8_t> bytes = sizePrefix(14);
  bytes.resize(18);
  int32_t bodySize = 0;
  EXPECT_EQ(peekFrame(bytes, kDefaultMaxFrameBytes, kMinRequestBody, &bodySize), FrameStatus::Ready);
}

TEST(PeekFrame, ResponseMinimumIsTheResponseHeader) {
  int32_t bodySize = 0;
  EXPECT_EQ(peekFrame(sizePrefix(9), kDefaultMaxFrameBytes, 10, &bodySize), FrameStatus::TooSmall);
  std::vector<uint8_t> bytes = sizePrefix(10);
  bytes.resize(14);
  EXPECT_EQ(peekFrame(bytes, kDefaultMaxFrameBytes, 10, &bodySize), FrameStatus::Ready);
}

TEST(PeekFrame, SizeAboveTheMaximumIsTooLargeBeforeTheBodyArrives) {
  int32_t bodySize = 0;
  EXPECT_EQ(peekFrame(sizePrefix(kDefaultMaxFrameBytes + 1), kDefaultMaxFrameBytes, kMinRequestBody, &bodySize),
            FrameStatus::TooLarge);
  EXPECT_EQ(peekFrame(sizePrefix(0x7fffffff), kDefaultMaxFrameBytes, kMinRequestBody, &bodySize),
            FrameStatus::TooLarge);
  // A configured smaller maximum applies.
  EXPECT_EQ(peekFrame(sizePrefix(101), 100, kMinRequestBody, &bodySize), FrameStatus::TooLarge);
  // Exactly the maximum is allowed: it waits for its body.
  EXPECT_EQ(peekFrame(sizePrefix(kDefaultMaxFrameBytes), kDefaultMaxFrameBytes, kMinRequestBody, &bodySize),
            FrameStatus::NeedMore);
  EXPECT_EQ(bodySize, kDefaultMaxFrameBytes);
}

TEST(PeekFrame, NegativeSizeIsTooLarge) {
  for (int64_t size : std::initializer_list<int64_t>{-1, -14, INT32_MIN}) {
    int32_t bodySize = 0;
    EXPECT_EQ(peekFrame(sizePrefix(size), kDefaultMaxFrameBytes, kMinRequestBody, &bodySize), FrameStatus::TooLarge)
        << "Size " << size;
  }
}

TEST(PeekFrame, BodySizePointerMayBeNull) {
  std::vector<uint8_t> bytes = sizePrefix(14);
  bytes.resize(18);
  EXPECT_EQ(peekFrame(bytes, kDefaultMaxFrameBytes, kMinRequestBody, nullptr), FrameStatus::Ready);
}

}  // namespace
}  // namespace groupcoord::protocol::testing
