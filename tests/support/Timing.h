#pragma once

// What a test may assert about time (tests/README.md, "Time in tests"):
//
//   1. a rule of the protocol on an injected clock (FakeTime, a hand-driven
//      lease): exact, asserted as it is;
//   2. a rule with a bound the design itself gives (a session timeout, the
//      claim fallback, the idle timeout): asserted against that bound plus
//      schedulingAllowance(), and waited for by polling up to that deadline
//      (eventuallyWithin), never by sleeping a fixed time and then looking;
//   3. a measure of speed (a latency, a p99, a time to settle): printed as a
//      figure() line, never asserted. The test asserts what cannot flake:
//      every probe answered, none refused, nothing lost.
//
// A busy machine (scripts/dev.sh test with GROUPCOORD_TEST_BUSY=2) delays
// everything a test runs, the ZooKeeper ensemble's JVMs included, by whole
// seconds at a time; it never turns a missing event into one that happens.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

namespace groupcoord::testing {

// What a deadline derived from the design's bounds adds for scheduling: 20 s
// by default, or GROUPCOORD_TEST_ALLOWANCE_MS. Generous on purpose: a wait
// often rests on a chain of processes that a busy machine holds back (the
// server, a member's thread, a ZooKeeper node's JVM), and waits poll, so the
// allowance costs nothing when things go well. A deadline still ends, so
// that a test that waits for something that never comes says what it waited
// for well before ctest's timeout.
inline std::chrono::milliseconds schedulingAllowance() {
  static const std::chrono::milliseconds value = [] {
    const char* env = std::getenv("GROUPCOORD_TEST_ALLOWANCE_MS");
    if (env != nullptr && *env != '\0') {
      char* end = nullptr;
      long long ms = std::strtoll(env, &end, 10);
      if (end != env && *end == '\0' && ms >= 0) return std::chrono::milliseconds(ms);
    }
    return std::chrono::milliseconds(20000);
  }();
  return value;
}

// Whole milliseconds from `a` to `b` (negative when b is earlier), for
// figure lines and design-bound checks.
template <class TimePoint>
int64_t msBetween(TimePoint a, TimePoint b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

// A bound the design gives, with the scheduling allowance added: the deadline
// for waiting on it and the limit for asserting it.
inline std::chrono::milliseconds designBound(std::chrono::milliseconds bound) {
  return bound + schedulingAllowance();
}
inline long long designBoundMs(long long boundMs) {
  return boundMs + static_cast<long long>(schedulingAllowance().count());
}

// Polls `state` every `every` until it holds or `deadline` passes; true when
// it held. Looks once more at the deadline, so that a state reached during
// the last sleep counts.
inline bool eventuallyWithin(std::chrono::milliseconds deadline, const std::function<bool()>& state,
                             std::chrono::milliseconds every = std::chrono::milliseconds(20)) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!state()) {
    if (std::chrono::steady_clock::now() >= until) return state();
    std::this_thread::sleep_for(every);
  }
  return true;
}

// One "[figure] ..." line on stdout: a measure of speed that a test reports
// and does not assert. scripts/dev.sh test gathers them into
// <build>/Testing/figures.txt.
inline void figure(const std::string& text) {
  std::ostringstream line;
  line << "[figure] " << text << '\n';
  std::cout << line.str() << std::flush;
}

}  // namespace groupcoord::testing
