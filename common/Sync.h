#pragma once

// Mutexes and locks the compiler can check.
//
// groupcoord states its threading rules as Clang thread-safety annotations
// rather than prose: a field says which mutex guards it (GUARDED_BY), a
// function which mutex its caller must hold (REQUIRES) or must not hold
// (EXCLUDES). The Clang build with -Wthread-safety -Werror=thread-safety
// (GROUPCOORD_THREAD_SAFETY=ON, run by CI) refuses code that breaks them;
// with GCC the annotations compile to nothing. std::mutex carries no
// annotations in libstdc++, hence these thin wrappers.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define GC_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define GC_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) GC_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY GC_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) GC_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) GC_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) GC_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) GC_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) GC_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) GC_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) GC_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) GC_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) GC_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) GC_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) GC_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) GC_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) GC_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) GC_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) GC_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS GC_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace groupcoord {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // For std::condition_variable; the analysis cannot follow it there.
  std::mutex& native() RETURN_CAPABILITY(this) { return mu_; }

 private:
  std::mutex mu_;
};

class CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  void lock_shared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a Mutex (or a SharedMutex exclusively) for its scope.
template <class M>
class SCOPED_CAPABILITY BasicLock {
 public:
  explicit BasicLock(M& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~BasicLock() RELEASE() { mu_.unlock(); }
  BasicLock(const BasicLock&) = delete;
  BasicLock& operator=(const BasicLock&) = delete;

 private:
  M& mu_;
};
using MutexLock = BasicLock<Mutex>;
using WriterLock = BasicLock<SharedMutex>;

// Holds a SharedMutex shared for its scope.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Waiting on a std::condition_variable while holding a Mutex through a
// MutexLock. std::condition_variable wants a std::unique_lock<std::mutex>,
// which the analysis cannot follow; these two borrow the held native mutex
// for the wait and hand it back locked, so the caller keeps its MutexLock
// and writes the predicate as a loop the analysis does check:
//
//   MutexLock lock(mutex_);
//   while (!ready_) waitLocked(changed_, mutex_);

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

}  // namespace groupcoord
