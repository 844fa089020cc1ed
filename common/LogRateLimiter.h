#pragma once

// Keeps a log line that a client (bad frames, refused connections) or a
// peer (a ZooKeeper node that is down) can provoke from flooding the log: at most one line per interval, and the
// line that gets through says how many were held back.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace groupcoord {

class LogRateLimiter {
 public:
  explicit LogRateLimiter(std::chrono::milliseconds interval) : intervalNs_(toNs(interval)) {}

  // Any thread. True when a line may be logged now; then *suppressed is the
  // number of lines refused since the last one allowed.
  bool allow(uint64_t* suppressed) {
    const int64_t now = toNs(std::chrono::steady_clock::now().time_since_epoch());
    int64_t next = nextAllowedNs_.load(std::memory_order_relaxed);
    if (now < next || !nextAllowedNs_.compare_exchange_strong(next, now + intervalNs_, std::memory_order_relaxed)) {
      suppressed_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    *suppressed = suppressed_.exchange(0, std::memory_order_relaxed);
    return true;
  }

 private:
  template <typename D>
  static int64_t toNs(D d) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  }
  const int64_t intervalNs_;
  std::atomic<int64_t> nextAllowedNs_{0};
  std::atomic<uint64_t> suppressed_{0};
};

}  // namespace groupcoord
