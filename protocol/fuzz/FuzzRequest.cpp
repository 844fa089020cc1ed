// libFuzzer entry point for the request side of the codec: what a server
// does with bytes from a socket. Build with -DGROUPCOORD_FUZZ=ON and clang.
//
// Checks beyond "does not crash": a request that decodes re-encodes to a frame
// that decodes to the same request, and the frame's Size matches its body.

#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "protocol/Codec.h"

using namespace groupcoord::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);

  // The input as a stream: a frame when its prefix allows one...
  int32_t bodySize = 0;
  if (peekFrame(input, kDefaultMaxFrameBytes, kMinRequestBody, &bodySize) == FrameStatus::Ready) {
    (void)decodeRequest(input.subspan(4, static_cast<size_t>(bodySize)));
  }

  // ...and as a body, so that the fuzzer need not learn the Size prefix.
  const DecodedRequest decoded = decodeRequest(input);
  if (decoded.status != DecodeStatus::Ok) return 0;
  (void)validateNames(decoded.request);
  (void)responseError(errorResponse(decoded.request, ErrorCode::INVALID_REQUEST));

  std::vector<uint8_t> frame;
  encodeRequest(decoded.header, decoded.request, frame);
  int32_t again = 0;
  if (peekFrame(frame, INT32_MAX, kMinRequestBody, &again) != FrameStatus::Ready ||
      static_cast<size_t>(again) + 4 != frame.size()) {
    std::abort();
  }
  const DecodedRequest redecoded = decodeRequest(std::span<const uint8_t>(frame).subspan(4));
  if (redecoded.status != DecodeStatus::Ok || !(redecoded.header == decoded.header) ||
      !(redecoded.request == decoded.request)) {
    std::abort();
  }
  return 0;
}
