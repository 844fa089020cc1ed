#pragma once

// Which ZooKeeper session an asynchronous answer belongs to.
//
// When the session is lost every znode it owned is gone (registration,
// controllers, members), and with it the meaning of any answer still on
// its way. The epoch moves then; a callback bound to an older epoch does
// nothing. Every ZooKeeper callback of the adapter that touches its state
// is bound with bind(), so none has to compare epochs by hand.

#include <atomic>
#include <cstdint>
#include <utility>

namespace groupcoord::adapter {

class SessionEpoch {
 public:
  uint64_t current() const { return epoch_.load(std::memory_order_acquire); }
  bool isCurrent(uint64_t e) const { return e == current(); }
  // The session is gone: answers to what it sent are ignored from now on.
  void advance() { epoch_.fetch_add(1, std::memory_order_acq_rel); }

  // f, run only while the session that was current at this call still is.
  template <class F>
  auto bind(F f) const {
    return [this, e = current(), f = std::move(f)](auto&&... args) mutable {
      if (e != current()) return;
      f(std::forward<decltype(args)>(args)...);
    };
  }

 private:
  std::atomic<uint64_t> epoch_{1};
};

}  // namespace groupcoord::adapter
