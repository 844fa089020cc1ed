#pragma once

// Work that must wait until every lock is released: mostly answers to
// requests, whose callbacks may write to a socket or re-enter the
// coordinator (docs/design.md, "Threads and locks").
//
// An Outbox runs what it holds when it is destroyed. A LockedOutbox holds a
// mutex and an Outbox, releasing the mutex first: code that queues answers
// under a lock cannot run them under it, by construction.

#include <atomic>
#include <functional>
#include <utility>
#include <vector>

#include "common/Sync.h"

namespace groupcoord::adapter {

class Outbox {
 public:
  Outbox() = default;
  ~Outbox() { flush(); }
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  template <class F>
  void push(F&& f) {
    work_.emplace_back(std::forward<F>(f));
  }
  bool empty() const { return work_.empty(); }

 private:
  void flush() {
    // In the order queued: answers to one member keep their order.
    for (auto& f : work_) f();
    work_.clear();
  }
  std::vector<std::function<void()>> work_;
};

// Holds `mu` for its scope; `out` runs after `mu` is released.
class SCOPED_CAPABILITY LockedOutbox {
 public:
  explicit LockedOutbox(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  // `wake`, when given, is set to 0 before the unlock: whatever happened
  // under the lock may give the owner's periodic tick something to do.
  LockedOutbox(Mutex& mu, std::atomic<int64_t>* wake) ACQUIRE(mu) : mu_(mu), wake_(wake) { mu_.lock(); }
  ~LockedOutbox() RELEASE() {
    if (wake_) wake_->store(0, std::memory_order_release);
    mu_.unlock();
    // out's destructor runs the work, after the unlock above.
  }
  LockedOutbox(const LockedOutbox&) = delete;
  LockedOutbox& operator=(const LockedOutbox&) = delete;

  Outbox out;

 private:
  Mutex& mu_;
  std::atomic<int64_t>* wake_ = nullptr;
};

}  // namespace groupcoord::adapter
