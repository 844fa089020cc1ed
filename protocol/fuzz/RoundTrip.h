#pragma once

// The check both fuzz targets make of whatever decodes (FuzzRequest.cpp for
// groupcoord's protocol, FuzzKafkaRequest.cpp for the Kafka port's): written
// again as a whole frame, its Size is its body's, and that body decodes to
// the same message. Aborts otherwise, which libFuzzer reports as a crash.

#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "protocol/Codec.h"

namespace groupcoord::protocol::fuzz {

// encode(decoded, frame) appends a whole frame; decode(body) reads a body
// without its Size; same(decoded, again) compares the two readings.
template <typename Decoded, typename Encode, typename Decode, typename Same>
void expectRoundTrip(const Decoded& decoded, int32_t minBody, Encode encode, Decode decode, Same same) {
  std::vector<uint8_t> frame;
  encode(decoded, frame);
  int32_t size = -1;
  const FrameStatus status = peekFrame(frame, INT32_MAX, minBody, &size);
  if (status != FrameStatus::Ready || static_cast<size_t>(size) + 4 != frame.size()) std::abort();
  if (!same(decoded, decode(std::span<const uint8_t>(frame).subspan(4)))) std::abort();
}

}  // namespace groupcoord::protocol::fuzz
