#include "metrics/Metrics.h"

#include <algorithm>

namespace groupcoord::metrics {

namespace {
std::atomic<size_t> gNextStripe{0};
}

size_t stripeIndex() {
  thread_local const size_t stripe = gNextStripe.fetch_add(1, std::memory_order_relaxed) % kStripes;
  return stripe;
}

uint64_t Counter::value() const {
  uint64_t total = 0;
  for (const auto& c : cells_) total += c.value.load(std::memory_order_relaxed);
  return total;
}

Histogram::Histogram(std::vector<uint64_t> bounds) : bounds_(std::move(bounds)) {
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
  const size_t slots = bounds_.size() + 2;  // buckets with +Inf, and the sum
  linesPerStripe_ = (slots + 7) / 8;
  lines_ = std::make_unique<Line[]>(linesPerStripe_ * kStripes);
}

void Histogram::observe(uint64_t value) {
  // A scan from the smallest bound: what is observed most (a heartbeat's few
  // microseconds) lands in the first buckets, found in a compare or two.
  size_t bucket = 0;
  const size_t n = bounds_.size();
  while (bucket < n && value > bounds_[bucket]) ++bucket;
  const size_t stripe = stripeIndex();
  cell(stripe, bucket).fetch_add(1, std::memory_order_relaxed);
  cell(stripe, bounds_.size() + 1).fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.bounds = bounds_;
  s.buckets.assign(bounds_.size() + 1, 0);
  for (size_t stripe = 0; stripe < kStripes; ++stripe) {
    for (size_t b = 0; b <= bounds_.size(); ++b) s.buckets[b] += cell(stripe, b).load(std::memory_order_relaxed);
    s.sum += cell(stripe, bounds_.size() + 1).load(std::memory_order_relaxed);
  }
  for (uint64_t n : s.buckets) s.count += n;
  return s;
}

std::vector<uint64_t> requestLatencyBoundsNs() {
  constexpr uint64_t us = 1000;
  return {5 * us,      10 * us,     25 * us,     50 * us,     100 * us,    250 * us,     500 * us,
          1000 * us,   2500 * us,   5000 * us,   10000 * us,  25000 * us,  50000 * us,   100000 * us,
          250000 * us, 500000 * us, 1000000 * us};
}

std::vector<uint64_t> stageBoundsNs() {
  constexpr uint64_t us = 1000;
  return {1 * us / 4, 1 * us / 2, 1 * us,   2 * us,    5 * us,    10 * us,   20 * us,
          50 * us,    100 * us,   250 * us, 1000 * us, 5000 * us, 25000 * us};
}

std::vector<uint64_t> heartbeatLatencyBoundsNs() {
  // Ten to a decade (each 1.26 times the one before, rounded), 1 us to
  // 1 s: fine enough to tell a p99 twice another from one 1.3 times it.
  constexpr std::array<uint64_t, 10> kDecade{100, 126, 158, 200, 251, 316, 398, 501, 631, 794};
  std::vector<uint64_t> out;
  for (uint64_t scale = 10; scale <= 10'000'000; scale *= 10) {
    for (uint64_t m : kDecade) out.push_back(m * scale);
  }
  out.push_back(1'000'000'000);
  return out;
}

std::vector<uint64_t> zookeeperLatencyBoundsNs() {
  constexpr uint64_t us = 1000;
  return {250 * us,     500 * us,     1000 * us,    2500 * us,     5000 * us,     10000 * us,    25000 * us,
          50000 * us,   100000 * us,  250000 * us,  500000 * us,   1000000 * us,  2500000 * us,  10000000 * us};
}

std::vector<uint64_t> transactionSizeBounds() { return {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}; }

std::vector<uint64_t> handoverDurationBoundsNs() {
  constexpr uint64_t ms = 1000000;
  return {10 * ms,   25 * ms,   50 * ms,    100 * ms,   250 * ms,   500 * ms,
          1000 * ms, 2500 * ms, 5000 * ms, 10000 * ms, 30000 * ms, 60000 * ms};
}

}  // namespace groupcoord::metrics
