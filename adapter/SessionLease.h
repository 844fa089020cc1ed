#pragma once

// The session lease (docs/design.md, "The session lease").
//
// ZooKeeper may expire this server's session one session timeout after it
// last heard from the server, and from then on another server may claim its
// groups and grant their partitions. So the answers given from memory that
// extend a member's hold on its partitions (heartbeats, registrations) are
// given only while the session is certainly alive on the ensemble's side:
// until the send time of the latest request of this session that ZooKeeper
// answered, plus the session timeout, less a margin.
//
// The tick keeps that request recent with a probe (an exists() of the root)
// every tenth of the session timeout; a new connection probes at once. The
// request path reads one atomic (valid()), never a lock.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "adapter/Clock.h"
#include "adapter/SessionEpoch.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

class SessionLease {
 public:
  // probePath: a znode that exists (the root). margin: subtracted from the
  // session timeout; 0 picks the default (defaultMargin()).
  SessionLease(zk::Client& zk, std::string probePath, const SessionEpoch& epoch, Millis margin = Millis(0))
      : zk_(zk), probePath_(std::move(probePath)), epoch_(epoch), margin_(margin) {}

  // A fifth of the session timeout, at least 200 ms (docs/design.md).
  static Millis defaultMargin(Millis sessionTimeout) {
    return std::max(Millis(200), Millis(sessionTimeout.count() / 5));
  }
  Millis margin() const;
  // How long after a probe is sent the next one goes.
  Millis probeInterval() const { return Millis(std::max<int64_t>(zk_.sessionTimeout().count() / 10, 10)); }

  // From each tick: sends a probe when the last one is a probe interval
  // old and none is in flight; logs when the lease has just run out.
  void onTick(TimePoint now);
  // The connection is (back) up: probes now rather than at the next tick.
  void probeNow(TimePoint now) { probe(now); }
  // The session ended: nothing of it is confirmed any more.
  void reset() {
    untilNs_.store(0, std::memory_order_release);
    lapsed_ = false;
  }
  void stop() { stopped_ = true; }

  // True while this server may answer from memory (now is before the end).
  bool valid(TimePoint now) const { return nanos(now) < untilNs_.load(std::memory_order_acquire); }
  // When it ends (TimePoint{} when nothing was ever confirmed).
  TimePoint until() const { return TimePoint(std::chrono::nanoseconds(untilNs_.load(std::memory_order_acquire))); }

 private:
  static int64_t nanos(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  void probe(TimePoint now);
  void confirmed(int64_t sentNs);

  zk::Client& zk_;
  const std::string probePath_;
  const SessionEpoch& epoch_;
  const Millis margin_;

  std::atomic<int64_t> untilNs_{0};
  std::atomic<int64_t> lastSentNs_{0};
  std::atomic<bool> inFlight_{false};
  std::atomic<bool> lapsed_{false};  // the end was passed and logged; not yet confirmed again
  std::atomic<bool> stopped_{false};
};

}  // namespace groupcoord::adapter
