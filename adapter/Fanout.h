#pragma once

// N ZooKeeper reads, one continuation.
//
// A Fanout collects the answers of reads issued together (or discovered
// while answers arrive: the children of a znode just listed) into one
// State, and calls `done` once with it when the last answer is in. The
// starter holds one count until it has issued every first read, so the
// continuation cannot run before the fan-out is complete:
//
//   auto reads = Fanout<Reads>::start([](Reads r) { ... });
//   zk.get(a, reads->collect<zk::GetResult>([](Reads& s, zk::GetResult r) { s.a = std::move(r); }));
//   zk.getChildren(b, reads->collect<zk::ChildrenResult>(...));
//   reads->release();
//
// A collector runs under the Fanout's lock (answers arrive on the
// completion thread, but a starter may still be issuing reads); it may
// issue further reads with collect(). `done` runs without that lock.

#include <atomic>
#include <functional>
#include <memory>
#include <utility>

#include "common/Sync.h"

namespace groupcoord::adapter {

template <class State>
class Fanout : public std::enable_shared_from_this<Fanout<State>> {
 public:
  using Done = std::function<void(State)>;

  static std::shared_ptr<Fanout> start(Done done) {
    return std::shared_ptr<Fanout>(new Fanout(std::move(done)));
  }

  // A completion for one more read: `f(State&, Result)` under the lock.
  template <class Result, class F>
  std::function<void(Result)> collect(F f) {
    pending_.fetch_add(1, std::memory_order_relaxed);
    return [self = this->shared_from_this(), f = std::move(f)](Result r) mutable {
      {
        MutexLock lock(self->mu_);
        f(self->state_, std::move(r));
      }
      self->release();
    };
  }

  // Runs f(State&) under the lock: the starter preparing the state.
  template <class F>
  void update(F&& f) {
    MutexLock lock(mu_);
    f(state_);
  }

  // The starter's count: call once, after issuing the first reads.
  void release() {
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    State s;
    {
      MutexLock lock(mu_);
      s = std::move(state_);
    }
    done_(std::move(s));
  }

 private:
  explicit Fanout(Done done) : done_(std::move(done)) {}

  Mutex mu_;
  State state_ GUARDED_BY(mu_);
  std::atomic<int> pending_{1};
  Done done_;
};

}  // namespace groupcoord::adapter
