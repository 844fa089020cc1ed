#pragma once

// The completion thread of a zk::Client: one thread that runs posted tasks
// one at a time, in the order they were posted. Session and FakeClient both
// deliver every completion, watch event and listener call through one of
// these, so user callbacks never run in the caller's stack and never on the
// ZooKeeper C client's own threads.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "common/Sync.h"

namespace groupcoord::zk {

class CompletionQueue {
 public:
  explicit CompletionQueue(std::string name);
  // Runs what is still queued, then joins the thread (see stop()).
  ~CompletionQueue();

  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // Thread-safe and non-blocking (the queue is unbounded). A task posted
  // after stop() is dropped with a warning. A task that throws is logged and
  // the thread goes on.
  void post(std::function<void()> task) EXCLUDES(mutex_);

  // Blocks until the queue is empty and no task is running. From the
  // completion thread itself it returns at once (waiting would deadlock).
  void waitIdle() EXCLUDES(mutex_);

  // Runs every task already queued, refuses new ones, joins the thread.
  // Idempotent. Must not be called from the completion thread.
  void stop() EXCLUDES(mutex_);

  bool inCompletionThread() const { return std::this_thread::get_id() == threadId_; }

  // Tasks run so far (tests use it to assert progress).
  uint64_t executed() const EXCLUDES(mutex_);

 private:
  void run() EXCLUDES(mutex_);

  std::string name_;
  mutable Mutex mutex_;
  std::condition_variable wake_;  // with mutex_: a task was posted, or stop()
  std::condition_variable idle_;  // with mutex_: tasks_ empty and nothing running
  std::deque<std::function<void()>> tasks_ GUARDED_BY(mutex_);
  bool running_ GUARDED_BY(mutex_) = false;  // a task is executing now
  bool stopping_ GUARDED_BY(mutex_) = false;
  uint64_t executed_ GUARDED_BY(mutex_) = 0;
  std::thread thread_;
  std::thread::id threadId_;
};

}  // namespace groupcoord::zk
