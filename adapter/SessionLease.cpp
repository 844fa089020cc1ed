#include "adapter/SessionLease.h"

#include <spdlog/spdlog.h>

namespace groupcoord::adapter {

Millis SessionLease::margin() const {
  return margin_.count() > 0 ? margin_ : defaultMargin(zk_.sessionTimeout());
}

void SessionLease::onTick(TimePoint now) {
  const int64_t until = untilNs_.load(std::memory_order_acquire);
  if (until != 0 && nanos(now) >= until && !lapsed_.exchange(true)) {
    // The send time of the last probe ZooKeeper answered: the lease ran
    // from it for the session timeout less the margin.
    const auto lastSent = std::chrono::nanoseconds(until) - (zk_.sessionTimeout() - margin());
    spdlog::warn(
        "no ZooKeeper answer to a request sent in the last {} ms (session timeout {} ms, margin {} ms): the "
        "ensemble may expire the session, so heartbeats and registrations answer CONTROLLER_NOT_AVAILABLE until "
        "ZooKeeper answers again; members keep their partitions only until their own session timeout",
        std::chrono::duration_cast<Millis>(now.time_since_epoch() - lastSent).count(), zk_.sessionTimeout().count(),
        margin().count());
  }
  if (nanos(now) - lastSentNs_.load(std::memory_order_relaxed) <
      std::chrono::duration_cast<std::chrono::nanoseconds>(probeInterval()).count()) {
    return;
  }
  probe(now);
}

void SessionLease::probe(TimePoint now) {
  if (stopped_ || inFlight_.exchange(true)) return;
  const int64_t sentNs = nanos(now);
  lastSentNs_.store(sentNs, std::memory_order_relaxed);
  const uint64_t epoch = epoch_.current();
  zk_.exists(probePath_, [this, epoch, sentNs](const zk::ExistsResult& r) {
    inFlight_ = false;
    // Ok or NoNode came from the ensemble: it had the session then.
    if ((r.error == zk::Error::Ok || r.error == zk::Error::NoNode) && epoch_.isCurrent(epoch) && !stopped_) {
      confirmed(sentNs);
    }
  });
}

void SessionLease::confirmed(int64_t sentNs) {
  const int64_t end =
      sentNs + std::chrono::duration_cast<std::chrono::nanoseconds>(zk_.sessionTimeout() - margin()).count();
  int64_t cur = untilNs_.load(std::memory_order_acquire);
  while (end > cur && !untilNs_.compare_exchange_weak(cur, end, std::memory_order_acq_rel)) {
  }
  if (lapsed_.exchange(false)) {
    spdlog::info("ZooKeeper answered again in the same session: heartbeats and registrations are answered again");
  }
}

}  // namespace groupcoord::adapter
