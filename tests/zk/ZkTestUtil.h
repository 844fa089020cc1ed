#pragma once

// Small helpers for the zk/ tests: recorders for watch events and session
// states that tests can wait on with a bounded wait, and a recursive delete
// for cleaning up a test's znodes.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/Timing.h"
#include "zk/Client.h"
#include "zk/Path.h"

namespace groupcoord::zk::test {

using namespace std::chrono_literals;

// The session timeout of the live tests' sessions.
inline constexpr std::chrono::milliseconds kLiveSessionTimeout{4000};

// How long the helpers below wait by default: what they wait for (a
// session, a reconnection after a node dies, an expiry seen, a watch event)
// a live ensemble does within a session timeout; with the scheduling
// allowance (support/Timing.h). The fake does it at once.
inline const std::chrono::milliseconds kWait = groupcoord::testing::designBound(kLiveSessionTimeout);

// Collects the events of any number of watch callbacks.
class WatchProbe {
 public:
  WatchCallback callback() {
    return [this](const WatchEvent& e) {
      std::lock_guard lock(mutex_);
      events_.push_back(e);
      all_.push_back(e);
      threads_.push_back(std::this_thread::get_id());
      changed_.notify_all();
    };
  }

  // The next event not yet taken, waiting at most `wait`.
  std::optional<WatchEvent> next(std::chrono::milliseconds wait = kWait) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, wait, [this] { return !events_.empty(); })) return std::nullopt;
    WatchEvent e = events_.front();
    events_.pop_front();
    return e;
  }

  size_t count() const {
    std::lock_guard lock(mutex_);
    return all_.size();
  }

  std::vector<WatchEvent> all() const {
    std::lock_guard lock(mutex_);
    return all_;
  }

  std::vector<std::thread::id> threads() const {
    std::lock_guard lock(mutex_);
    return threads_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<WatchEvent> events_;
  std::vector<WatchEvent> all_;
  std::vector<std::thread::id> threads_;
};

// Records every state a listener is told.
class StateRecorder : public SessionListener {
 public:
  void onSessionState(SessionState s) override {
    std::lock_guard lock(mutex_);
    history_.push_back(s);
    changed_.notify_all();
  }

  // Waits until `s` has been told at index >= `from` of the history.
  bool waitFor(SessionState s, std::chrono::milliseconds wait = kWait, size_t from = 0) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, wait, [&] {
      return std::find(history_.begin() + static_cast<std::ptrdiff_t>(std::min(from, history_.size())),
                       history_.end(), s) != history_.end();
    });
  }

  bool saw(SessionState s) const {
    std::lock_guard lock(mutex_);
    return std::find(history_.begin(), history_.end(), s) != history_.end();
  }

  std::vector<SessionState> history() const {
    std::lock_guard lock(mutex_);
    return history_;
  }

  size_t size() const {
    std::lock_guard lock(mutex_);
    return history_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<SessionState> history_;
};

inline std::string describe(const std::vector<SessionState>& states) {
  std::string out;
  for (auto s : states) {
    if (!out.empty()) out += " -> ";
    out += toString(s);
  }
  return out;
}

// Polls `done` until it holds or `wait` passes.
inline bool eventually(const std::function<bool()>& done, std::chrono::milliseconds wait = kWait) {
  return groupcoord::testing::eventuallyWithin(wait, done);
}

// Deletes `path` and everything below it; NoNode anywhere is fine.
inline Error removeRecursive(Client& client, const std::string& path) {
  auto kids = client.getChildrenSync(path);
  if (kids.error == Error::NoNode) return Error::Ok;
  if (kids.error != Error::Ok) return kids.error;
  for (const auto& name : kids.children) {
    if (Error e = removeRecursive(client, joinPath(path, name)); e != Error::Ok) return e;
  }
  Error e = client.removeSync(path);
  return e == Error::NoNode ? Error::Ok : e;
}

}  // namespace groupcoord::zk::test

namespace groupcoord::zk {
// Readable gtest output for the zk value types.
inline void PrintTo(Error e, std::ostream* os) { *os << errorName(e); }
inline void PrintTo(SessionState s, std::ostream* os) { *os << toString(s); }
inline void PrintTo(WatchEvent::Type t, std::ostream* os) { *os << toString(t); }
}  // namespace groupcoord::zk
