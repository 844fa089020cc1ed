#pragma once

// Waiting on a std::condition_variable while holding a groupcoord::Mutex
// (common/Sync.h) through a MutexLock. std::condition_variable wants a
// std::unique_lock<std::mutex>, which the thread-safety analysis cannot
// follow; these two borrow the held native mutex for the wait and hand it
// back locked, so the caller keeps its MutexLock and writes the predicate
// as a loop the analysis does check:
//
//   MutexLock lock(mutex_);
//   while (!ready_) waitLocked(changed_, mutex_);

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/Sync.h"

namespace groupcoord::zk {

// One wait (wakes on a notification or spuriously); `mu` is held again on
// return.
// Unchecked inside: the analysis cannot see std::adopt_lock take over `mu`.
inline void waitLocked(std::condition_variable& cv, Mutex& mu) REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
  std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
  cv.wait(lock);
  lock.release();  // still locked: the caller's MutexLock unlocks it
}

// One wait bounded by `deadline`; false when it returned because the
// deadline passed. `mu` is held again on return.
// Unchecked inside: the analysis cannot see std::adopt_lock take over `mu`.
template <typename Clock, typename Duration>
bool waitLockedUntil(std::condition_variable& cv, Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline)
    REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
  std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
  const bool notified = cv.wait_until(lock, deadline) == std::cv_status::no_timeout;
  lock.release();  // still locked: the caller's MutexLock unlocks it
  return notified;
}

}  // namespace groupcoord::zk
