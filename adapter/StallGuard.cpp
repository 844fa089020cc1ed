#include "adapter/StallGuard.h"

#include <spdlog/spdlog.h>

namespace groupcoord::adapter {

void StallGuard::onTick(TimePoint now) {
  const int64_t nowNs = nanos(now);
  const int64_t last = lastTickNs_.exchange(nowNs, std::memory_order_relaxed);
  const auto limit = std::chrono::duration_cast<std::chrono::nanoseconds>(zk_.sessionTimeout() / 3);
  deadlineNs_.store(nowNs + limit.count(), std::memory_order_relaxed);
  if (last != 0 && std::chrono::nanoseconds(nowNs - last) > limit && !suspect_.exchange(true)) {
    spdlog::warn("this server did not run for {} ms (more than a third of its {} ms ZooKeeper session): "
                 "heartbeats and registrations answer CONTROLLER_NOT_AVAILABLE until ZooKeeper confirms the session",
                 (nowNs - last) / 1000000, zk_.sessionTimeout().count());
  }
  if (!suspect_ || probeInFlight_.exchange(true)) return;
  const uint64_t epoch = epoch_.current();
  zk_.exists(probePath_, [this, epoch, stalledAt = now](const zk::ExistsResult& r) {
    probeInFlight_ = false;
    if (r.error == zk::Error::Ok && epoch_.isCurrent(epoch) && !stopped_) {
      suspect_ = false;
      spdlog::info("ZooKeeper answered after the stall: the session is alive, heartbeats and registrations are "
                   "answered again ({} ms after the stall was seen)",
                   millisBetween(stalledAt, time_.now()));
    }
  });
}

}  // namespace groupcoord::adapter
