#include "server/UnservedHandler.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "protocol/Codec.h"

namespace groupcoord::server {

namespace {
// After the first line per API, at most one line per API per minute.
constexpr int64_t kRelogNs = 60'000'000'000;
}  // namespace

void UnservedHandler::handle(const protocol::RequestHeader& header, protocol::Request request,
                             protocol::ResponseCallback done) {
  const auto api = static_cast<size_t>(protocol::apiKeyOf(request));
  const uint64_t count = unserved_[api].fetch_add(1, std::memory_order_relaxed) + 1;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
  int64_t next = nextLogNs_[api].load(std::memory_order_relaxed);
  if (now >= next && nextLogNs_[api].compare_exchange_strong(next, now + kRelogNs, std::memory_order_relaxed)) {
    spdlog::warn("{} is not served yet by this build: answering {} ({} such request(s) so far)",
                 protocol::apiName(header.apiKey), protocol::errorName(protocol::ErrorCode::UNKNOWN_SERVER_ERROR),
                 count);
  }
  done(protocol::errorResponse(request, protocol::ErrorCode::UNKNOWN_SERVER_ERROR));
}

}  // namespace groupcoord::server
