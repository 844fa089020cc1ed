#pragma once

// The handler of a build that serves no API yet: every request is answered
// with the API's full response carrying UNKNOWN_SERVER_ERROR, and the log
// says why. groupcoordd never answers with invented data.

#include <array>
#include <atomic>
#include <cstdint>

#include "protocol/Handler.h"

namespace groupcoord::server {

class UnservedHandler : public protocol::Handler {
 public:
  // Any I/O thread; answers before returning.
  void handle(const protocol::RequestHeader& header, protocol::Request request,
              protocol::ResponseCallback done) override;

 private:
  // Per API: when the next "not served" line may be logged (steady clock, ns).
  std::array<std::atomic<int64_t>, protocol::kApiCount> nextLogNs_{};
  std::array<std::atomic<uint64_t>, protocol::kApiCount> unserved_{};
};

}  // namespace groupcoord::server
