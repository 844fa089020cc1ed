#pragma once

// The stall rule (docs/design.md, "The stall rule").
//
// A process frozen or starved past a third of its ZooKeeper session
// timeout cannot know whether its session, and with it control of its
// groups, survived: another server may already have taken over. Until a
// ZooKeeper round trip succeeds again, heartbeats and registrations
// answer CONTROLLER_NOT_AVAILABLE rather than from memory, which would
// extend a member's lease on partitions someone else may be granted.
//
// The tick records its time and the deadline past which the next tick is
// late; the request path reads one atomic (stalled()), never a lock.

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>

#include "adapter/Clock.h"
#include "adapter/SessionEpoch.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

class StallGuard {
 public:
  // probePath: any znode that exists (the root); reading it proves the
  // session is alive.
  StallGuard(zk::Client& zk, std::string probePath, const TimeSource& time, const SessionEpoch& epoch)
      : zk_(zk), probePath_(std::move(probePath)), time_(time), epoch_(epoch) {}

  // Called by each tick with its time: notices a stall (a gap since the
  // previous tick above a third of the session timeout) and, while one is
  // suspected, probes ZooKeeper once at a time.
  void onTick(TimePoint now);

  // True while a stall is suspected, or when the tick is overdue now.
  bool stalled(TimePoint now) const {
    if (suspect_.load(std::memory_order_relaxed)) return true;
    return nanos(now) > deadlineNs_.load(std::memory_order_relaxed);
  }

  // Stop answering probes (the coordinator is stopping).
  void stop() { stopped_ = true; }

 private:
  static int64_t nanos(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }

  zk::Client& zk_;
  const std::string probePath_;
  const TimeSource& time_;
  const SessionEpoch& epoch_;

  std::atomic<int64_t> lastTickNs_{0};
  std::atomic<int64_t> deadlineNs_{std::numeric_limits<int64_t>::max()};
  std::atomic<bool> suspect_{false};
  std::atomic<bool> probeInFlight_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace groupcoord::adapter
