#pragma once

// zk::Session: the one zk::Client that talks to a real ensemble through the
// ZooKeeper C client (zookeeper_mt). See Client.h for the contract every
// Client keeps; what follows is specific to the real session.
//
// Lifecycle: construct, setListener(), start(), optionally waitConnected().
// The session owns its zhandle_t and closes it exactly once: in close(), in
// the destructor, or in renew() (which then opens a new one).
//
// Threads: the C client runs an IO thread and a completion thread per
// handle; neither ever runs user code. Their completions and watch events
// are copied and handed to this session's own completion thread, which
// runs every callback, watch and listener call, one at a time, in the order
// ZooKeeper produced them. Because that thread is ours and not the C
// client's, a callback may call renew() or issue new operations without
// deadlocking the C client.
//
// Ownership of pending work: every operation's context lives in a table of
// the handle it was sent on. The C completion takes it out of that table;
// whatever is still there after zookeeper_close() has returned (the C
// client's threads are joined by then) is completed with Error::Closing by
// the session. Each callback is therefore called exactly once and each
// context freed exactly once, whatever the C client does at close. Before
// closing a connected handle, the session waits (at most 2 s) for answers
// to what it already sent, so those calls report their real outcome.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <string>

#include "common/Options.h"
#include "common/Sync.h"
#include "zk/Client.h"
#include "zk/CompletionQueue.h"

namespace groupcoord::zk {

namespace detail {
struct SessionHandle;
struct SessionGlue;
}  // namespace detail

struct SessionConfig {
  // "host1:port1,host2:port2[/chroot]". With a chroot, every path this
  // session uses and returns is relative to it; the chroot znode itself
  // must exist (operations below a missing one fail with NoNode).
  std::string connect;
  // Asked for; the ensemble grants a value within its [2, 20] ticks range,
  // sessionTimeout() reports what it granted.
  std::chrono::milliseconds sessionTimeout{options::defaultInt("zk.session.timeout.ms")};
  // When digestUser is set, the session authenticates with
  // digest "user:password" before its first request, and every znode it
  // creates gets the ACL "creator: all, anyone: read". Otherwise znodes are
  // created open to everyone (ZOO_OPEN_ACL_UNSAFE).
  std::string digestUser;
  std::string digestPassword;
  // Put in front of this session's log lines, e.g. "[server-1] ".
  std::string logPrefix;
};

class Session final : public Client {
 public:
  explicit Session(SessionConfig config);
  // Closes the handle if still open and delivers every pending callback
  // (Error::Closing) and every armed watch (a Session event, state Closed)
  // before returning; the listener is not called from the destructor. Must
  // not run on this session's completion thread (that is, not from one of
  // its callbacks), nor while holding a lock those callbacks take: it waits
  // for them.
  ~Session() override;

  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Opens the handle and starts connecting; returns at once. BadArguments
  // for a connect string the C client refuses, SystemError if it could not
  // start. Ok when already started. Operations issued before start() fail
  // with InvalidState, and with ConnectionLoss until the first connection.
  Error start() EXCLUDES(lifecycleMutex_);

  // Waits at most `wait` for state Connected. Ok when connected;
  // SessionExpired / AuthFailed when the session ended that way;
  // Closing after close(); OperationTimeout when the wait passed.
  Error waitConnected(std::chrono::milliseconds wait) EXCLUDES(stateMutex_);

  // Closes the handle (idempotent). Pending callbacks get Error::Closing,
  // armed watches a Session event with state Closed; the listener is told
  // Closed. Later operations fail with Closing.
  void close() EXCLUDES(lifecycleMutex_);

  // --- zk::Client ---
  //
  // Errors found before anything is sent (a malformed path: BadArguments; a
  // handle that expired: InvalidState; not started: InvalidState; closed:
  // Closing; not connected, i.e. Connecting or Reconnecting:
  // ConnectionLoss) are delivered like any other result: on the completion
  // thread, never inside the caller's stack. Calls are not held back until
  // a connection exists; waitConnected() is there for start-up.
  //
  // Watches: each watch callback gets exactly one event. Either the real
  // one (Created, Deleted, Changed, Child; NotWatching if ZooKeeper drops
  // it), or, when the session ends before that, one Session event whose
  // state is Expired, AuthFailed or Closed. Connection loss and reconnection
  // of the same session are not delivered to watches (they stay armed;
  // ZooKeeper re-registers them on reconnect and fires what was missed).
  // A watch whose operation failed (e.g. get() on a missing node) is never
  // armed and never called; exists() arms its watch on Ok and on NoNode.
  void create(const std::string& path, std::string data, CreateMode mode, Callback<CreateResult> done) override;
  void remove(const std::string& path, int32_t version, Callback<Error> done) override;
  void get(const std::string& path, Callback<GetResult> done, WatchCallback watch = {}) override;
  void set(const std::string& path, std::string data, int32_t version, Callback<SetResult> done) override;
  void exists(const std::string& path, Callback<ExistsResult> done, WatchCallback watch = {}) override;
  void getChildren(const std::string& path, Callback<ChildrenResult> done, WatchCallback watch = {}) override;
  void multi(std::vector<Op> ops, Callback<MultiResult> done) override;

  SessionState state() const override EXCLUDES(stateMutex_);
  int64_t sessionId() const override EXCLUDES(stateMutex_);
  std::chrono::milliseconds sessionTimeout() const override EXCLUDES(stateMutex_);
  // The listener must outlive the session, or be replaced (nullptr) before
  // it goes; a notification already running is not waited for.
  void setListener(SessionListener* listener) override;
  void post(std::function<void()> task) override { queue_.post(std::move(task)); }
  // After Expired or AuthFailed: closes the old handle (its leftovers get
  // Closing) and opens a new one; the listener sees Connecting, then
  // Connected with a new sessionId(). If the new handle cannot even be
  // opened, the listener is told Expired again and renew() may be retried.
  // Does nothing in any other state. Callable from a callback.
  void renew() override EXCLUDES(lifecycleMutex_);

  // The 16-byte password of the current session (raw bytes), for
  // expireSession(). Empty before the first connection.
  std::string sessionPassword() const EXCLUDES(stateMutex_);
  // "host:port" of the server the handle is connected to, or "" if none.
  std::string currentServer() const EXCLUDES(handleMutex_);
  const SessionConfig& config() const { return config_; }

 private:
  friend struct detail::SessionGlue;

  Error openHandle() REQUIRES(lifecycleMutex_) EXCLUDES(handleMutex_);
  void closeHandle(SessionState finalState) REQUIRES(lifecycleMutex_) EXCLUDES(handleMutex_);
  void setState(SessionState next) EXCLUDES(stateMutex_);

  // Sends one request on the current handle. `send(zh, op)` issues the C
  // call and returns its immediate rc; on any rc but ZOK the operation is
  // failed with it (delivered on the completion thread like a result).
  template <typename P, typename Send>
  void submit(std::unique_ptr<P> op, WatchCallback watch, Send&& send) EXCLUDES(handleMutex_);

  const SessionConfig config_;
  std::string aclDigest_;  // "user:password"

  CompletionQueue queue_;

  // Serializes start(), renew() and close().
  Mutex lifecycleMutex_;
  std::atomic<bool> closed_{false};

  // Shared by operations while they use the zhandle_t, exclusive while it
  // is created or closed; so no C call ever runs on a closed handle.
  // Taken before stateMutex_ and before a handle's own mutex.
  mutable SharedMutex handleMutex_;
  std::unique_ptr<detail::SessionHandle> handle_ GUARDED_BY(handleMutex_);

  // Taken after a handle's own mutex (the C client's state events).
  mutable Mutex stateMutex_;
  std::condition_variable stateChanged_;  // with stateMutex_: state_ changed
  SessionState state_ GUARDED_BY(stateMutex_) = SessionState::Connecting;
  int64_t sessionId_ GUARDED_BY(stateMutex_) = 0;
  std::string password_ GUARDED_BY(stateMutex_);
  std::chrono::milliseconds negotiatedTimeout_ GUARDED_BY(stateMutex_);

  std::atomic<SessionListener*> listener_{nullptr};
};

// Expires a session the way ZooKeeper's own tests do: opens a second handle
// with the same session id and password, waits (at most `wait`) until it
// is connected, and closes it, which ends the session on the ensemble. The
// original handle then sees Expired. Test support only. Ok, or
// SessionExpired if the session was already gone, or OperationTimeout.
Error expireSession(const std::string& connect, int64_t sessionId, const std::string& password,
                    std::chrono::milliseconds wait = std::chrono::milliseconds(10000));
Error expireSession(const Session& session, std::chrono::milliseconds wait = std::chrono::milliseconds(10000));

}  // namespace groupcoord::zk
