#pragma once

// Counts heap allocations made through operator new while a probe is alive,
// so tests can check that decoding never allocates by a count the sender
// chose, and that a Heartbeat decodes without touching the heap. The
// replacement operator new lives in AllocationProbe.cpp; it only observes.

#include <cstddef>

namespace groupcoord::protocol::testing {

class AllocationProbe {
 public:
  AllocationProbe();
  ~AllocationProbe();
  AllocationProbe(const AllocationProbe&) = delete;
  AllocationProbe& operator=(const AllocationProbe&) = delete;

  size_t count() const;    // allocations since construction
  size_t largest() const;  // largest single request in bytes
};

}  // namespace groupcoord::protocol::testing
