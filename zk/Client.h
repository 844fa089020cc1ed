#pragma once

// The interface every ZooKeeper user in groupcoord programs against. Two
// implementations: zk::Session (the real C client, zookeeper_mt) and
// zk::FakeClient (in memory, for unit tests). One behaviour suite runs
// against both.
//
// Threads: completions and watches run on the implementation's completion
// thread (one at a time). They must be cheap: fulfil a promise or post to a
// queue. Calling back into the Client from a completion is allowed; blocking
// on another operation's result from a completion deadlocks and is not.
//
// Every callback passed to an operation is called exactly once, and never
// inside the call that was given it: also an error found before anything is
// sent (BadArguments for a malformed path or data above kMaxDataSize,
// ConnectionLoss while not connected, InvalidState after expiry, Closing
// after close) is delivered on the completion thread. So a caller may hold
// its own mutex while it issues an operation. Results of operations that
// reach ZooKeeper come in the order of the calls (from one thread); an
// error found before sending may overtake the results of earlier calls
// still in flight. When the client is destroyed, every call still pending
// is completed (with Closing, unless its answer came first) before the
// destructor returns.
//
// Watches are one-shot: each watch callback gets exactly one event, the
// real one (Created, Deleted, Changed, Child), or, when the session ends
// first, one Session event whose state says how (Expired, AuthFailed,
// Closed). Connection loss and reconnection of the same session are not
// told to watches; they stay armed. A watch whose operation failed is
// never armed and never called, except exists(), which arms on NoNode too.
//
// Paths are absolute ("/a/b"), relative to the chroot when one is set.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "zk/Types.h"

namespace groupcoord::zk {

// Told of every session state change, on the completion thread.
class SessionListener {
 public:
  virtual ~SessionListener() = default;
  // state: the new state. A change to Connected after Expired is a new
  // session (sessionId() differs): the owner rebuilds its ephemeral state.
  virtual void onSessionState(SessionState state) = 0;
};

class Client {
 public:
  virtual ~Client() = default;

  virtual void create(const std::string& path, std::string data, CreateMode mode, Callback<CreateResult> done) = 0;
  virtual void remove(const std::string& path, int32_t version, Callback<Error> done) = 0;
  virtual void get(const std::string& path, Callback<GetResult> done, WatchCallback watch = {}) = 0;
  virtual void set(const std::string& path, std::string data, int32_t version, Callback<SetResult> done) = 0;
  // Sets the watch whether or not the node exists (it then fires on Created).
  virtual void exists(const std::string& path, Callback<ExistsResult> done, WatchCallback watch = {}) = 0;
  virtual void getChildren(const std::string& path, Callback<ChildrenResult> done, WatchCallback watch = {}) = 0;
  // All ops apply or none does.
  virtual void multi(std::vector<Op> ops, Callback<MultiResult> done) = 0;

  virtual SessionState state() const = 0;
  // 0 while no session was established.
  virtual int64_t sessionId() const = 0;
  // The session timeout the ensemble granted (or the one asked for, before that).
  virtual std::chrono::milliseconds sessionTimeout() const = 0;

  // Runs `task` on the completion thread, after what is already queued
  // there: for work that must not run in the caller's stack (the caller may
  // hold a lock the task takes). Dropped, like any completion, once the
  // client is closed.
  virtual void post(std::function<void()> task) = 0;

  // Only one listener; set it before the session can change state you care about.
  virtual void setListener(SessionListener* listener) = 0;

  // After Expired (or AuthFailed): closes the old handle and opens a fresh
  // session. The listener sees Connecting, then Connected with a new
  // sessionId(). Harmless in any other state (does nothing).
  virtual void renew() = 0;

  // Blocking helpers on top of the async calls, each bounded by `wait`:
  // when it passes, the result is OperationTimeout (the operation may still
  // complete later). Never call these from a completion or a watch.
  CreateResult createSync(const std::string& path, std::string data, CreateMode mode,
                          std::chrono::milliseconds wait = kDefaultWait);
  Error removeSync(const std::string& path, int32_t version = kAnyVersion,
                   std::chrono::milliseconds wait = kDefaultWait);
  GetResult getSync(const std::string& path, std::chrono::milliseconds wait = kDefaultWait);
  SetResult setSync(const std::string& path, std::string data, int32_t version = kAnyVersion,
                    std::chrono::milliseconds wait = kDefaultWait);
  ExistsResult existsSync(const std::string& path, std::chrono::milliseconds wait = kDefaultWait);
  ChildrenResult getChildrenSync(const std::string& path, std::chrono::milliseconds wait = kDefaultWait);
  MultiResult multiSync(std::vector<Op> ops, std::chrono::milliseconds wait = kDefaultWait);

  // Creates path and every missing parent as persistent znodes with empty
  // data; NodeExists on any level is fine. Returns Ok or the first other error.
  Error ensurePathSync(const std::string& path, std::chrono::milliseconds wait = kDefaultWait);

  static constexpr std::chrono::milliseconds kDefaultWait{10000};
};

}  // namespace groupcoord::zk
