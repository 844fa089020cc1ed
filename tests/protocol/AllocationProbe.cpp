#include "AllocationProbe.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<bool> gArmed{false};
std::atomic<size_t> gCount{0};
std::atomic<size_t> gLargest{0};

void record(size_t n) {
  if (!gArmed.load(std::memory_order_relaxed)) return;
  gCount.fetch_add(1, std::memory_order_relaxed);
  size_t prev = gLargest.load(std::memory_order_relaxed);
  while (n > prev && !gLargest.compare_exchange_weak(prev, n, std::memory_order_relaxed)) {
  }
}

void* allocate(size_t n) {
  record(n);
  // A request too large for malloc reports failure like the default operator new.
  void* p = std::malloc(n == 0 ? 1 : n);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(size_t n) { return allocate(n); }
void* operator new[](size_t n) { return allocate(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  record(n);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  record(n);
  return std::malloc(n == 0 ? 1 : n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace groupcoord::protocol::testing {

AllocationProbe::AllocationProbe() {
  gCount = 0;
  gLargest = 0;
  gArmed = true;
}

AllocationProbe::~AllocationProbe() { gArmed = false; }

size_t AllocationProbe::count() const { return gCount.load(); }
size_t AllocationProbe::largest() const { return gLargest.load(); }

}  // namespace groupcoord::protocol::testing
