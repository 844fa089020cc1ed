#pragma once

// N ZooKeeper reads, one continuation.
//
// A Fanout collects the answers of reads issued together (or discovered
// while answers arrive: the children of a znode just listed) into one
// State, and calls `done` once with it when the last answer is in. The
// starter holds one count until it has issued every first read, so the
// continuation cannot run before the fan-out is complete:
//
//   auto reads = Fanout<Reads>::start(zk, [](Reads r) { ... });
//   zk.get(a, reads->collect<zk::GetResult>([](Reads& s, zk::GetResult r) { s.a = std::move(r); }));
//   zk.getChildren(b, reads->collect<zk::ChildrenResult>(...));
//   reads->release();
//
// A collector runs under the Fanout's lock (answers arrive on the
// completion thread, but a starter may still be issuing reads); it may
// issue further reads with collect(). `done` runs without that lock, and
// never inside the starter's release(): when every answer came before it,
// `done` is posted to the completion thread instead. So, as with a single
// zk::Client call, the starter may hold a lock that `done` takes.

#include <atomic>
#include <functional>
#include <memory>
#include <utility>

#include "common/Sync.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

template <class State>
class Fanout : public std::enable_shared_from_this<Fanout<State>> {
 public:
  using Done = std::function<void(State)>;
  // Runs a task later on the completion thread (zk::Client::post).
  using Post = std::function<void(std::function<void()>)>;

  static std::shared_ptr<Fanout> start(zk::Client& zk, Done done) {
    return start([&zk](std::function<void()> task) { zk.post(std::move(task)); }, std::move(done));
  }
  static std::shared_ptr<Fanout> start(Post post, Done done) {
    return std::shared_ptr<Fanout>(new Fanout(std::move(post), std::move(done)));
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
      if (self->pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) self->finish();
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
    post_([self = this->shared_from_this()] { self->finish(); });
  }

 private:
  Fanout(Post post, Done done) : post_(std::move(post)), done_(std::move(done)) {}

  void finish() {
    State s;
    {
      MutexLock lock(mu_);
      s = std::move(state_);
    }
    done_(std::move(s));
  }

  Mutex mu_;
  State state_ GUARDED_BY(mu_);
  std::atomic<int> pending_{1};
  Post post_;
  Done done_;
};

}  // namespace groupcoord::adapter
