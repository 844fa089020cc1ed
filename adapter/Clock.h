#pragma once

// Time for the adapter, injected so eviction and takeover logic can be
// tested without sleeping.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace groupcoord::adapter {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Millis = std::chrono::milliseconds;

class TimeSource {
 public:
  virtual ~TimeSource() = default;
  virtual TimePoint now() const = 0;
  // Wall-clock time, ms since the Unix epoch: only for what people read
  // (DescribeGroup's times), never for a decision.
  virtual int64_t wallMs() const {
    return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
};

class SystemTimeSource final : public TimeSource {
 public:
  TimePoint now() const override { return Clock::now(); }
};

// Moves only when told to. Thread-safe.
class ManualTimeSource final : public TimeSource {
 public:
  TimePoint now() const override { return TimePoint(Clock::duration(now_.load())); }
  // 2026-01-01T00:00:00Z at construction, moving with now().
  int64_t wallMs() const override {
    return 1767225600000 + std::chrono::duration_cast<Millis>(Clock::duration(now_.load())).count();
  }
  void advance(Clock::duration d) { now_.fetch_add(d.count()); }

 private:
  std::atomic<Clock::rep> now_{std::chrono::duration_cast<Clock::duration>(std::chrono::hours(1)).count()};
};

inline int64_t millisBetween(TimePoint from, TimePoint to) {
  return std::chrono::duration_cast<Millis>(to - from).count();
}

}  // namespace groupcoord::adapter
