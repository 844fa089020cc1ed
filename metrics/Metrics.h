#pragma once

// groupcoord's metric primitives: counters, gauges and histograms that the
// data path updates without a lock, and that a scrape (metrics/Registry.h)
// reads at any time.
//
// Cost on the hot path: Counter::add and Histogram::observe are one or two
// relaxed atomic additions on a cache line owned by the calling thread's
// stripe (threads are spread over kStripes stripes), so I/O threads
// recording the same API do not fight over one line. A scrape sums the
// stripes; values are read one by one, not as one atomic picture.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace groupcoord::metrics {

inline constexpr size_t kStripes = 8;

// The calling thread's stripe, 0..kStripes-1, fixed for the thread's life.
size_t stripeIndex();

// A monotonically increasing count.
class Counter {
 public:
  void add(uint64_t n = 1) { cells_[stripeIndex()].value.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const;

 private:
  struct alignas(64) Cell {
    std::atomic<uint64_t> value{0};
  };
  std::array<Cell, kStripes> cells_;
};

// A value that goes up and down; one atomic (set from few places).
class Gauge {
 public:
  void set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Integer observations (nanoseconds, counts) in fixed buckets. A value v
// falls in the first bucket whose upper bound b has v <= b, else in +Inf.
class Histogram {
 public:
  // `bounds`: strictly ascending upper bounds; unsorted or repeated bounds
  // are sorted and de-duplicated.
  explicit Histogram(std::vector<uint64_t> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void observe(uint64_t value);

  struct Snapshot {
    std::vector<uint64_t> bounds;
    std::vector<uint64_t> buckets;  // per bucket, not cumulative; bounds.size() + 1 (the last is +Inf)
    uint64_t sum = 0;
    uint64_t count = 0;  // the sum of buckets
  };
  Snapshot snapshot() const;
  const std::vector<uint64_t>& bounds() const { return bounds_; }

 private:
  struct alignas(64) Line {
    std::array<std::atomic<uint64_t>, 8> slot{};
  };
  std::atomic<uint64_t>& cell(size_t stripe, size_t index) {
    const size_t flat = stripe * linesPerStripe_ * 8 + index;
    return lines_[flat / 8].slot[flat % 8];
  }
  const std::atomic<uint64_t>& cell(size_t stripe, size_t index) const {
    const size_t flat = stripe * linesPerStripe_ * 8 + index;
    return lines_[flat / 8].slot[flat % 8];
  }

  std::vector<uint64_t> bounds_;
  size_t linesPerStripe_ = 0;  // per stripe: bounds+1 buckets, then the sum
  std::unique_ptr<Line[]> lines_;
};

// Bucket bounds used across groupcoord, in nanoseconds or plain counts.
std::vector<uint64_t> requestLatencyBoundsNs();    // 5 us .. 1 s
std::vector<uint64_t> stageBoundsNs();             // 0.25 us .. 25 ms: the stages of a heartbeat
std::vector<uint64_t> heartbeatLatencyBoundsNs();  // 1 us .. 1 s, ten to a decade: a heartbeat from its arrival to its answer
std::vector<uint64_t> zookeeperLatencyBoundsNs();  // 0.25 ms .. 10 s
std::vector<uint64_t> transactionSizeBounds();     // 1 .. 1000 changes
std::vector<uint64_t> handoverDurationBoundsNs();  // 10 ms .. 60 s

}  // namespace groupcoord::metrics
