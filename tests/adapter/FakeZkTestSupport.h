#pragma once

// Small helpers for the unit tests of the coordinator's parts on the
// in-memory ZooKeeper (zk/FakeClient.h).

#include <cstdlib>
#include <future>
#include <memory>

#include <spdlog/spdlog.h>

#include "zk/FakeClient.h"

namespace groupcoord::adapter::testsupport {

// Quiet logs unless GROUPCOORD_TEST_LOG says otherwise.
inline void quietLogs() {
  const char* level = std::getenv("GROUPCOORD_TEST_LOG");
  spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
}

// Lets every completion and watch, and what they trigger, run out.
inline void settle(zk::FakeEnsemble& ensemble) {
  for (int i = 0; i < 5; ++i) ensemble.waitIdle();
}

// Holds a FakeClient's completion thread: a FakeClient delivers answers in
// order on that one thread, so every answer to an operation issued while
// the gate is closed is delivered only after open(). Do not settle or
// waitIdle() while it is closed.
class CompletionGate {
 public:
  explicit CompletionGate(zk::Client& zk) {
    auto opened = open_.get_future().share();
    zk.post([opened] { opened.wait(); });  // no ZooKeeper call: the counters do not see the gate
  }
  ~CompletionGate() { open(); }
  CompletionGate(const CompletionGate&) = delete;
  CompletionGate& operator=(const CompletionGate&) = delete;

  void open() {
    if (!opened_) {
      opened_ = true;
      open_.set_value();
    }
  }

 private:
  std::promise<void> open_;
  bool opened_ = false;
};

// An answer delivered asynchronously, read after the fake has settled.
template <class T>
class Answer {
 public:
  Answer() : p_(std::make_shared<std::promise<T>>()), f_(p_->get_future()) {}
  // The callback to hand out (copyable, as std::function needs).
  auto callback() {
    return [p = p_](T v) { p->set_value(std::move(v)); };
  }
  bool ready() const { return f_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  T get() { return f_.get(); }

 private:
  std::shared_ptr<std::promise<T>> p_;
  std::future<T> f_;
};

}  // namespace groupcoord::adapter::testsupport
