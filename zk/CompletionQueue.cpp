#include "zk/CompletionQueue.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "common/Sync.h"

namespace groupcoord::zk {

CompletionQueue::CompletionQueue(std::string name) : name_(std::move(name)) {
  thread_ = std::thread([this] { run(); });
  threadId_ = thread_.get_id();
}

CompletionQueue::~CompletionQueue() { stop(); }

void CompletionQueue::post(std::function<void()> task) {
  {
    MutexLock lock(mutex_);
    if (!stopping_) {
      tasks_.push_back(std::move(task));
      wake_.notify_one();
      return;
    }
  }
  spdlog::warn("{}: completion posted after stop, dropped", name_);
}

void CompletionQueue::waitIdle() {
  if (inCompletionThread()) return;
  MutexLock lock(mutex_);
  while (!(tasks_.empty() && !running_)) waitLocked(idle_, mutex_);
}

uint64_t CompletionQueue::executed() const {
  MutexLock lock(mutex_);
  return executed_;
}

void CompletionQueue::stop() {
  {
    MutexLock lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    wake_.notify_one();
  }
  if (inCompletionThread()) {
    // Destroying the owner from one of its own callbacks is a contract
    // violation; detaching at least avoids std::terminate from join().
    spdlog::error("{}: stopped from its own completion thread", name_);
    if (thread_.joinable()) thread_.detach();
    return;
  }
  if (thread_.joinable()) thread_.join();
}

void CompletionQueue::run() {
  // Locked by hand, not by a MutexLock: each task runs unlocked. Nothing
  // between lock() and unlock() throws (a task's exceptions are caught).
  mutex_.lock();
  for (;;) {
    while (!(stopping_ || !tasks_.empty())) waitLocked(wake_, mutex_);
    if (tasks_.empty()) break;  // stopping and drained
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    running_ = true;
    mutex_.unlock();
    try {
      task();
    } catch (const std::exception& e) {
      spdlog::error("{}: a callback threw: {}", name_, e.what());
    } catch (...) {
      spdlog::error("{}: a callback threw a non-standard exception", name_);
    }
    task = nullptr;  // destroy captured state outside the lock
    mutex_.lock();
    running_ = false;
    ++executed_;
    if (tasks_.empty()) idle_.notify_all();
  }
  idle_.notify_all();
  mutex_.unlock();
}

}  // namespace groupcoord::zk
