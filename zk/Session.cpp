#include "zk/Session.h"

#include <zookeeper/zookeeper.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <condition_variable>
#include <climits>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "common/LogRateLimiter.h"
#include "common/Sync.h"
#include "zk/Path.h"

namespace groupcoord::zk {

namespace {

Error toError(int rc) { return static_cast<Error>(rc); }

Stat toStat(const ::Stat& s) {
  Stat out;
  out.czxid = s.czxid;
  out.mzxid = s.mzxid;
  out.ctime = s.ctime;
  out.mtime = s.mtime;
  out.version = s.version;
  out.cversion = s.cversion;
  out.aversion = s.aversion;
  out.ephemeralOwner = s.ephemeralOwner;
  out.dataLength = s.dataLength;
  out.numChildren = s.numChildren;
  out.pzxid = s.pzxid;
  return out;
}

int toCMode(CreateMode mode) {
  switch (mode) {
    case CreateMode::Persistent: return ZOO_PERSISTENT;
    case CreateMode::Ephemeral: return ZOO_EPHEMERAL;
    case CreateMode::PersistentSequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case CreateMode::EphemeralSequential: return ZOO_EPHEMERAL_SEQUENTIAL;
    case CreateMode::Container: return ZOO_CONTAINER;
  }
  return ZOO_PERSISTENT;
}

bool isSequential(CreateMode mode) {
  return mode == CreateMode::PersistentSequential || mode == CreateMode::EphemeralSequential;
}

WatchEvent::Type toEventType(int type) {
  if (type == ZOO_CREATED_EVENT) return WatchEvent::Type::Created;
  if (type == ZOO_DELETED_EVENT) return WatchEvent::Type::Deleted;
  if (type == ZOO_CHANGED_EVENT) return WatchEvent::Type::Changed;
  if (type == ZOO_CHILD_EVENT) return WatchEvent::Type::Child;
  if (type == ZOO_NOTWATCHING_EVENT) return WatchEvent::Type::NotWatching;
  return WatchEvent::Type::Session;
}

// "creator: all, anyone: read", for sessions that authenticate with digest.
// Built once; the C client only reads it.
ACL_vector* creatorAllAnyoneRead() {
  static ACL entries[2] = {{ZOO_PERM_ALL, ZOO_AUTH_IDS}, {ZOO_PERM_READ, ZOO_ANYONE_ID_UNSAFE}};
  static ACL_vector acl{2, entries};
  return &acl;
}

// The C client's own log, routed to spdlog one level below what it claims:
// its INFO lines narrate every connection and would flood the server's log.
void logFromClient(const char* message) {
  std::string_view text(message ? message : "");
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  auto level = spdlog::level::debug;
  if (text.find("ZOO_ERROR@") != std::string_view::npos) {
    level = spdlog::level::warn;
  } else if (text.find("ZOO_WARN@") != std::string_view::npos) {
    level = spdlog::level::info;
  } else if (text.find("ZOO_DEBUG@") != std::string_view::npos) {
    level = spdlog::level::trace;
  }
  // A node that is down makes the client retry it every few hundred
  // milliseconds, each time with an error line (a stopped container: one
  // whose name no longer resolves). One line per 5 s says as much.
  static LogRateLimiter loud{std::chrono::seconds(5)};
  if (level >= spdlog::level::info) {
    uint64_t suppressed = 0;
    if (!loud.allow(&suppressed)) return;
    if (suppressed != 0) {
      spdlog::log(level, "zookeeper client: {} ({} similar lines held back)", text, suppressed);
      return;
    }
  }
  spdlog::log(level, "zookeeper client: {}", text);
}

void configureClientLogging() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Formatting what would be dropped anyway costs CPU on the IO thread.
    ZooLogLevel level = ZOO_LOG_LEVEL_WARN;
    if (spdlog::should_log(spdlog::level::trace)) {
      level = ZOO_LOG_LEVEL_DEBUG;
    } else if (spdlog::should_log(spdlog::level::debug)) {
      level = ZOO_LOG_LEVEL_INFO;
    }
    zoo_set_debug_level(level);
  });
}

// How long closing waits for answers to operations already sent.
constexpr std::chrono::milliseconds kCloseDrainWait{2000};

template <typename R>
std::function<void()> deliver(Callback<R> done, R result) {
  return [done = std::move(done), result = std::move(result)]() mutable {
    if (done) done(std::move(result));
  };
}

}  // namespace

namespace detail {

struct WatchContext {
  SessionHandle* handle = nullptr;
  WatchCallback callback;
  // Set when a terminal Session event (Expired, AuthFailed) was delivered:
  // the C client may still hold the pointer, so it is freed only at close.
  bool fired = false;
};

struct Pending {
  virtual ~Pending() = default;
  // The task that completes this operation with `e` and no data.
  virtual std::function<void()> failure(Error e) = 0;
  SessionHandle* handle = nullptr;
  WatchContext* watch = nullptr;  // armed by this op; owned by handle->watches
};

// One zhandle_t and everything sent on it. Outlives zookeeper_close() on
// its handle, so the C client's threads never see it freed.
struct SessionHandle {
  explicit SessionHandle(Session* s) : session(s) {}

  Session* session;
  // Set before the handle is published in Session::handle_, cleared after
  // zookeeper_close(); used under Session::handleMutex_.
  zhandle_t* zh = nullptr;
  Mutex mutex;
  std::condition_variable drained;  // with mutex: pending became empty
  std::unordered_map<Pending*, std::unique_ptr<Pending>> pending GUARDED_BY(mutex);
  std::unordered_map<WatchContext*, std::unique_ptr<WatchContext>> watches GUARDED_BY(mutex);
  bool closing GUARDED_BY(mutex) = false;
  bool everConnected GUARDED_BY(mutex) = false;

  void add(std::unique_ptr<Pending> p) EXCLUDES(mutex) {
    MutexLock lock(mutex);
    Pending* raw = p.get();
    pending.emplace(raw, std::move(p));
  }

  std::unique_ptr<Pending> take(Pending* raw) EXCLUDES(mutex) {
    MutexLock lock(mutex);
    auto it = pending.find(raw);
    if (it == pending.end()) return nullptr;
    auto owned = std::move(it->second);
    pending.erase(it);
    if (pending.empty()) drained.notify_all();
    return owned;
  }

  WatchContext* addWatch(WatchCallback cb) EXCLUDES(mutex) {
    auto w = std::make_unique<WatchContext>();
    w->handle = this;
    w->callback = std::move(cb);
    WatchContext* raw = w.get();
    MutexLock lock(mutex);
    watches.emplace(raw, std::move(w));
    return raw;
  }

  // For a watch the C client never armed (its operation failed).
  void dropWatch(WatchContext* raw) EXCLUDES(mutex) {
    std::unique_ptr<WatchContext> owned;
    {
      MutexLock lock(mutex);
      auto it = watches.find(raw);
      if (it == watches.end()) return;
      owned = std::move(it->second);
      watches.erase(it);
    }
  }

  void post(std::function<void()> task);
};

// The C client's entry points, and the per-operation contexts. A friend of
// Session so it can reach the state and the completion queue.
struct SessionGlue {
  static void post(Session* s, std::function<void()> task) { s->queue_.post(std::move(task)); }

  static void onStateEvent(SessionHandle* h, zhandle_t* zh, int state);

  // Default watcher of the handle: only session events reach it.
  static void sessionWatcher(zhandle_t* zh, int type, int state, const char* /*path*/, void* ctx) {
    if (type != ZOO_SESSION_EVENT || ctx == nullptr) return;
    onStateEvent(static_cast<SessionHandle*>(ctx), zh, state);
  }

  static void pathWatcher(zhandle_t* /*zh*/, int type, int state, const char* path, void* ctx) {
    auto* w = static_cast<WatchContext*>(ctx);
    SessionHandle* h = w->handle;
    if (type == ZOO_SESSION_EVENT) {
      SessionState end;
      if (state == ZOO_EXPIRED_SESSION_STATE) {
        end = SessionState::Expired;
      } else if (state == ZOO_AUTH_FAILED_STATE) {
        end = SessionState::AuthFailed;
      } else {
        return;  // connection lost or back: the watch stays armed
      }
      WatchCallback cb;
      {
        MutexLock lock(h->mutex);
        if (w->fired) return;
        w->fired = true;
        cb = std::move(w->callback);
      }
      h->post([cb = std::move(cb), end] {
        if (cb) cb(WatchEvent{WatchEvent::Type::Session, end, {}});
      });
      return;
    }
    // A path event: the C client has dropped the watcher, so we own it now.
    std::unique_ptr<WatchContext> owned;
    {
      MutexLock lock(h->mutex);
      auto it = h->watches.find(w);
      if (it == h->watches.end()) return;
      owned = std::move(it->second);
      h->watches.erase(it);
    }
    if (owned->fired || !owned->callback) return;
    WatchEvent ev{toEventType(type), SessionState::Connected, path ? std::string(path) : std::string()};
    h->post([cb = std::move(owned->callback), ev = std::move(ev)] { cb(ev); });
  }

  // --- per-operation contexts and their completions ---

  struct CreateOp : Pending {
    Callback<CreateResult> done;
    std::function<void()> failure(Error e) override { return deliver(std::move(done), CreateResult{e, {}}); }
  };
  static void createDone(int rc, const char* value, const void* data) {
    auto* raw = static_cast<CreateOp*>(const_cast<void*>(data));
    SessionHandle* h = raw->handle;
    auto owned = h->take(raw);
    if (!owned) return;
    CreateResult r;
    r.error = toError(rc);
    if (rc == ZOK && value) r.path = value;
    h->post(deliver(std::move(raw->done), std::move(r)));
  }

  struct RemoveOp : Pending {
    Callback<Error> done;
    std::function<void()> failure(Error e) override { return deliver(std::move(done), e); }
  };
  static void removeDone(int rc, const void* data) {
    auto* raw = static_cast<RemoveOp*>(const_cast<void*>(data));
    SessionHandle* h = raw->handle;
    auto owned = h->take(raw);
    if (!owned) return;
    h->post(deliver(std::move(raw->done), toError(rc)));
  }

  struct GetOp : Pending {
    Callback<GetResult> done;
    std::function<void()> failure(Error e) override {
      GetResult r;
      r.error = e;
      return deliver(std::move(done), std::move(r));
    }
  };
  static void getDone(int rc, const char* value, int len, const ::Stat* stat, const void* data) {
    auto* raw = static_cast<GetOp*>(const_cast<void*>(data));
    SessionHandle* h = raw->handle;
    auto owned = h->take(raw);
    if (!owned) return;
    if (raw->watch && rc != ZOK) h->dropWatch(raw->watch);
    GetResult r;
    r.error = toError(rc);
    if (rc == ZOK) {
      if (value && len > 0) r.data.assign(value, static_cast<size_t>(len));
      if (stat) r.stat = toStat(*stat);
    }
    h->post(deliver(std::move(raw->done), std::move(r)));
  }

  struct SetOp : Pending {
    Callback<SetResult> done;
    std::function<void()> failure(Error e) override {
      SetResult r;
      r.error = e;
      return deliver(std::move(done), std::move(r));
    }
  };
  static void setDone(int rc, const ::Stat* stat, const void* data) {
    auto* raw = static_cast<SetOp*>(const_cast<void*>(data));
    SessionHandle* h = raw->handle;
    auto owned = h->take(raw);
    if (!owned) return;
    SetResult r;
    r.error = toError(rc);
    if (rc == ZOK && stat) r.stat = toStat(*stat);
    h->post(deliver(std::move(raw->done), std::move(r)));
  }

  struct ExistsOp : Pending {
    Callback<ExistsResult> done;
    std::function<void()> failure(Error e) override {
      ExistsResult r;
      r.error = e;
      return deliver(std::move(done), std::move(r));
    }
  };
  static void existsDone(int rc, const ::Stat* stat, const void* data) {
    auto* raw = static_cast<ExistsOp*>(const_cast<void*>(data));
    SessionHandle* h = raw->handle;
    auto owned = h->take(raw);
    if (!owned) return;
    // The C client arms an exists watch on Ok and on NoNode only.
    if (raw->watch && rc != ZOK && rc != ZNONODE) h->dropWatch(raw->watch);
    ExistsResult r;
    r.error = toError(rc);
    if (rc == ZOK && stat) r.stat = toStat(*stat);
    h->post(deliver(std::move(raw->done), std::move(r)));
  }

  struct ChildrenOp : Pending {
    Callback<ChildrenResult> done;
    std::function<void()> failure(Error e) override {
      ChildrenResult r;
      r.error = e;
      return deliver(std::move(done), std::move(r));
    }
  };
  static void childrenDone(int rc, const String_vector* strings, const ::Stat* stat, const void* data) {
    auto* raw = static_cast<ChildrenOp*>(const_cast<void*>(data));
    SessionHandle* h = raw->handle;
    auto owned = h->take(raw);
    if (!owned) return;
    if (raw->watch && rc != ZOK) h->dropWatch(raw->watch);
    ChildrenResult r;
    r.error = toError(rc);
    if (rc == ZOK) {
      if (strings) {
        r.children.reserve(static_cast<size_t>(strings->count));
        for (int32_t i = 0; i < strings->count; ++i) r.children.emplace_back(strings->data[i]);
      }
      if (stat) r.stat = toStat(*stat);
    }
    h->post(deliver(std::move(raw->done), std::move(r)));
  }

  // A multi keeps the C client's output buffers alive until it completes:
  // the results array, the created-path buffers and the setData stats.
  struct MultiOp : Pending {
    Callback<MultiResult> done;
    std::vector<Op> ops;
    std::vector<zoo_op_t> cops;
    std::vector<zoo_op_result_t> results;
    std::vector<std::string> pathBuffers;
    std::vector<::Stat> stats;
    std::function<void()> failure(Error e) override {
      MultiResult r;
      r.error = e;
      r.results.resize(ops.size());
      for (auto& one : r.results) one.error = e;
      return deliver(std::move(done), std::move(r));
    }
  };
  static void multiDone(int rc, const void* data) {
    auto* raw = static_cast<MultiOp*>(const_cast<void*>(data));
    SessionHandle* h = raw->handle;
    auto owned = h->take(raw);
    if (!owned) return;
    MultiResult r;
    r.error = toError(rc);
    r.results.resize(raw->ops.size());
    if (rc == ZOK) {
      for (size_t i = 0; i < raw->ops.size(); ++i) {
        auto& out = r.results[i];
        out.error = Error::Ok;
        if (std::holds_alternative<zk::CreateOp>(raw->ops[i])) {
          const std::string& buf = raw->pathBuffers[i];
          out.path.assign(buf.c_str(), strnlen(buf.c_str(), buf.size()));
        } else if (std::holds_alternative<SetDataOp>(raw->ops[i])) {
          out.stat = toStat(raw->stats[i]);
        }
      }
    } else if (isDataError(r.error)) {
      // The server answered op by op: ops before the failed one read Ok
      // (rolled back), ops after it RuntimeInconsistency.
      for (size_t i = 0; i < raw->ops.size(); ++i) {
        int err = raw->results[i].err;
        r.results[i].error = toError(err);
        if (r.failedOp < 0 && err != ZOK && err != ZRUNTIMEINCONSISTENCY) r.failedOp = static_cast<int>(i);
      }
    } else {
      for (auto& one : r.results) one.error = r.error;
    }
    h->post(deliver(std::move(raw->done), std::move(r)));
  }

  static void authDone(int rc, const void* /*data*/) {
    if (rc != ZOK) spdlog::warn("zk: digest authentication answered {}", toError(rc));
  }
};

void SessionHandle::post(std::function<void()> task) { SessionGlue::post(session, std::move(task)); }

void SessionGlue::onStateEvent(SessionHandle* h, zhandle_t* zh, int state) {
  Session* s = h->session;
  SessionState next;
  if (state == ZOO_CONNECTED_STATE || state == ZOO_READONLY_STATE) {
    next = SessionState::Connected;
  } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE || state == ZOO_NOTCONNECTED_STATE) {
    next = SessionState::Connecting;
  } else if (state == ZOO_EXPIRED_SESSION_STATE) {
    next = SessionState::Expired;
  } else if (state == ZOO_AUTH_FAILED_STATE) {
    next = SessionState::AuthFailed;
  } else {
    return;
  }

  SessionState previous;
  int64_t id;
  {
    MutexLock handleLock(h->mutex);
    if (h->closing) return;  // a handle being replaced speaks no more
    if (next == SessionState::Connected) {
      h->everConnected = true;
    } else if (next == SessionState::Connecting && h->everConnected) {
      next = SessionState::Reconnecting;
    }
    MutexLock stateLock(s->stateMutex_);
    previous = s->state_;
    if (next == SessionState::Connected) {
      const clientid_t* cid = zoo_client_id(zh);
      s->sessionId_ = cid->client_id;
      s->password_.assign(cid->passwd, sizeof(cid->passwd));
      s->negotiatedTimeout_ = std::chrono::milliseconds(zoo_recv_timeout(zh));
    }
    id = s->sessionId_;
    if (previous == next) return;
    s->state_ = next;
    s->stateChanged_.notify_all();
    // Posted under the handle's lock, so notifications keep their order.
    s->queue_.post([s, next] {
      if (auto* l = s->listener_.load()) l->onSessionState(next);
    });
  }
  auto level = next == SessionState::Connected ? spdlog::level::info : spdlog::level::warn;
  spdlog::log(level, "{}zk session {:#x}: {} -> {}", s->config_.logPrefix, id, toString(previous), toString(next));
}

}  // namespace detail

using detail::SessionGlue;
using detail::SessionHandle;

Session::Session(SessionConfig config)
    : config_(std::move(config)),
      queue_(config_.logPrefix + "zk-completions"),
      negotiatedTimeout_(config_.sessionTimeout) {
  if (!config_.digestUser.empty()) aclDigest_ = config_.digestUser + ":" + config_.digestPassword;
}

Session::~Session() {
  listener_.store(nullptr);
  close();
  queue_.stop();
}

Error Session::start() {
  MutexLock life(lifecycleMutex_);
  if (closed_) return Error::Closing;
  {
    ReaderLock lock(handleMutex_);
    if (handle_) return Error::Ok;
  }
  return openHandle();
}

Error Session::openHandle() {
  configureClientLogging();
  auto h = std::make_unique<SessionHandle>(this);
  auto timeoutMs = static_cast<int>(std::min<int64_t>(config_.sessionTimeout.count(), INT_MAX));
  spdlog::info("{}zk: connecting to {} (session timeout {} ms)", config_.logPrefix, config_.connect, timeoutMs);
  WriterLock lock(handleMutex_);
  errno = 0;
  zhandle_t* zh = zookeeper_init2(config_.connect.c_str(), &SessionGlue::sessionWatcher, timeoutMs, nullptr,
                                  h.get(), ZOO_NO_LOG_CLIENTENV, &logFromClient);
  if (!zh) {
    int err = errno;
    spdlog::error("{}zk: cannot open a session to '{}': {}", config_.logPrefix, config_.connect,
                  err ? std::strerror(err) : "unknown error");
    return err == EINVAL ? Error::BadArguments : Error::SystemError;
  }
  h->zh = zh;
  if (!aclDigest_.empty()) {
    // Queued before any request of ours; the C client sends it first on
    // every (re)connection.
    int rc = zoo_add_auth(zh, "digest", aclDigest_.data(), static_cast<int>(aclDigest_.size()),
                          &SessionGlue::authDone, nullptr);
    if (rc != ZOK) {
      spdlog::error("{}zk: cannot queue digest authentication: {}", config_.logPrefix, toError(rc));
    }
  }
  handle_ = std::move(h);
  return Error::Ok;
}

void Session::closeHandle(SessionState finalState) {
  std::unique_ptr<SessionHandle> old;
  {
    // Exclusive: every C call on this handle has returned, none can start.
    WriterLock lock(handleMutex_);
    old = std::move(handle_);
  }
  if (!old) return;
  {
    MutexLock lock(old->mutex);
    old->closing = true;
    // Let what is already on the wire come back with its real result: a
    // create that was sent will be applied anyway, so Ok is the truer
    // answer than Closing. It also keeps the C client from being closed
    // with completions in flight, which it leaks. Bounded, and skipped when
    // there is no connection to answer.
    if (!old->pending.empty() && zoo_state(old->zh) == ZOO_CONNECTED_STATE) {
      const auto deadline = std::chrono::steady_clock::now() + kCloseDrainWait;
      while (!old->pending.empty() && waitLockedUntil(old->drained, old->mutex, deadline)) {
      }
    }
  }
  int rc = zookeeper_close(old->zh);
  old->zh = nullptr;
  if (rc != ZOK) spdlog::debug("{}zk: close returned {}", config_.logPrefix, toError(rc));

  // The C client's threads are joined: whatever it did not complete is ours
  // to complete now, each exactly once.
  MutexLock lock(old->mutex);
  for (auto& [raw, op] : old->pending) {
    if (op->watch) old->watches.erase(op->watch);  // never armed
    queue_.post(op->failure(Error::Closing));
  }
  old->pending.clear();
  for (auto& [raw, w] : old->watches) {
    if (w->fired || !w->callback) continue;
    queue_.post([cb = std::move(w->callback), finalState] {
      cb(WatchEvent{WatchEvent::Type::Session, finalState, {}});
    });
  }
  old->watches.clear();
}

void Session::close() {
  MutexLock life(lifecycleMutex_);
  if (closed_.exchange(true)) return;
  int64_t id = sessionId();
  bool open;
  {
    ReaderLock lock(handleMutex_);
    open = handle_ != nullptr;
  }
  closeHandle(SessionState::Closed);
  setState(SessionState::Closed);
  if (open && id != 0) {
    spdlog::info("{}zk session {:#x} closed", config_.logPrefix, id);
  } else if (open) {
    spdlog::info("{}gave up connecting to ZooKeeper (no session was established)", config_.logPrefix);
  }
}

void Session::renew() {
  MutexLock life(lifecycleMutex_);
  if (closed_) return;
  SessionState s = state();
  if (s != SessionState::Expired && s != SessionState::AuthFailed) return;
  closeHandle(s);
  {
    MutexLock lock(stateMutex_);
    sessionId_ = 0;
    password_.clear();
    negotiatedTimeout_ = config_.sessionTimeout;
  }
  setState(SessionState::Connecting);
  if (Error e = openHandle(); e != Error::Ok) {
    spdlog::error("{}zk: renew failed ({}); still expired", config_.logPrefix, e);
    setState(SessionState::Expired);
  }
}

void Session::setState(SessionState next) {
  {
    MutexLock lock(stateMutex_);
    if (state_ == next) return;
    state_ = next;
    stateChanged_.notify_all();
  }
  queue_.post([this, next] {
    if (auto* l = listener_.load()) l->onSessionState(next);
  });
}

Error Session::waitConnected(std::chrono::milliseconds wait) {
  MutexLock lock(stateMutex_);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  auto settled = [](SessionState s) {
    return s == SessionState::Connected || s == SessionState::Expired || s == SessionState::AuthFailed ||
           s == SessionState::Closed;
  };
  while (!settled(state_) && waitLockedUntil(stateChanged_, stateMutex_, deadline)) {
  }
  switch (state_) {
    case SessionState::Connected: return Error::Ok;
    case SessionState::Expired: return Error::SessionExpired;
    case SessionState::AuthFailed: return Error::AuthFailed;
    case SessionState::Closed: return Error::Closing;
    default: return Error::OperationTimeout;
  }
}

SessionState Session::state() const {
  MutexLock lock(stateMutex_);
  return state_;
}

int64_t Session::sessionId() const {
  MutexLock lock(stateMutex_);
  return sessionId_;
}

std::chrono::milliseconds Session::sessionTimeout() const {
  MutexLock lock(stateMutex_);
  return negotiatedTimeout_;
}

std::string Session::sessionPassword() const {
  MutexLock lock(stateMutex_);
  return password_;
}

std::string Session::currentServer() const {
  ReaderLock lock(handleMutex_);
  if (!handle_ || zoo_state(handle_->zh) != ZOO_CONNECTED_STATE) return {};
  const char* server = zoo_get_current_server(handle_->zh);
  return server ? std::string(server) : std::string();
}

void Session::setListener(SessionListener* listener) { listener_.store(listener); }

template <typename P, typename Send>
void Session::submit(std::unique_ptr<P> op, WatchCallback watch, Send&& send) {
  ReaderLock lock(handleMutex_);
  SessionHandle* h = handle_.get();
  if (!h) {
    queue_.post(op->failure(closed_ ? Error::Closing : Error::InvalidState));
    return;
  }
  // Without a connection, fail fast instead of letting the C client queue
  // the call until some later connection: the caller decides whether to
  // retry, and nothing is left in the C client to be lost when it closes.
  SessionState now = state();
  if (now == SessionState::Connecting || now == SessionState::Reconnecting) {
    queue_.post(op->failure(Error::ConnectionLoss));
    return;
  }
  op->handle = h;
  if (watch) op->watch = h->addWatch(std::move(watch));
  P* raw = op.get();
  h->add(std::move(op));
  // The completion may run on the C client's thread before send() returns;
  // the context is in the table already, so that is fine.
  int rc = send(h->zh, raw);
  if (rc == ZOK) return;
  // Not queued by the C client: it will never call the completion.
  auto owned = h->take(raw);
  if (!owned) return;
  if (owned->watch) h->dropWatch(owned->watch);
  queue_.post(owned->failure(toError(rc)));
}

void Session::create(const std::string& path, std::string data, CreateMode mode, Callback<CreateResult> done) {
  auto op = std::make_unique<SessionGlue::CreateOp>();
  op->done = std::move(done);
  if (!isValidPath(path, isSequential(mode)) || data.size() > kMaxDataSize) {
    queue_.post(op->failure(Error::BadArguments));
    return;
  }
  ACL_vector* acl = aclDigest_.empty() ? &ZOO_OPEN_ACL_UNSAFE : creatorAllAnyoneRead();
  int cmode = toCMode(mode);
  submit(std::move(op), {}, [&](zhandle_t* zh, SessionGlue::CreateOp* raw) {
    return zoo_acreate(zh, path.c_str(), data.data(), static_cast<int>(data.size()), acl, cmode,
                       &SessionGlue::createDone, raw);
  });
}

void Session::remove(const std::string& path, int32_t version, Callback<Error> done) {
  auto op = std::make_unique<SessionGlue::RemoveOp>();
  op->done = std::move(done);
  if (!isValidPath(path)) {
    queue_.post(op->failure(Error::BadArguments));
    return;
  }
  submit(std::move(op), {}, [&](zhandle_t* zh, SessionGlue::RemoveOp* raw) {
    return zoo_adelete(zh, path.c_str(), version, &SessionGlue::removeDone, raw);
  });
}

void Session::get(const std::string& path, Callback<GetResult> done, WatchCallback watch) {
  auto op = std::make_unique<SessionGlue::GetOp>();
  op->done = std::move(done);
  if (!isValidPath(path)) {
    queue_.post(op->failure(Error::BadArguments));
    return;
  }
  submit(std::move(op), std::move(watch), [&](zhandle_t* zh, SessionGlue::GetOp* raw) {
    if (raw->watch) {
      return zoo_awget(zh, path.c_str(), &SessionGlue::pathWatcher, raw->watch, &SessionGlue::getDone, raw);
    }
    return zoo_aget(zh, path.c_str(), 0, &SessionGlue::getDone, raw);
  });
}

void Session::set(const std::string& path, std::string data, int32_t version, Callback<SetResult> done) {
  auto op = std::make_unique<SessionGlue::SetOp>();
  op->done = std::move(done);
  if (!isValidPath(path) || data.size() > kMaxDataSize) {
    queue_.post(op->failure(Error::BadArguments));
    return;
  }
  submit(std::move(op), {}, [&](zhandle_t* zh, SessionGlue::SetOp* raw) {
    return zoo_aset(zh, path.c_str(), data.data(), static_cast<int>(data.size()), version, &SessionGlue::setDone,
                    raw);
  });
}

void Session::exists(const std::string& path, Callback<ExistsResult> done, WatchCallback watch) {
  auto op = std::make_unique<SessionGlue::ExistsOp>();
  op->done = std::move(done);
  if (!isValidPath(path)) {
    queue_.post(op->failure(Error::BadArguments));
    return;
  }
  submit(std::move(op), std::move(watch), [&](zhandle_t* zh, SessionGlue::ExistsOp* raw) {
    if (raw->watch) {
      return zoo_awexists(zh, path.c_str(), &SessionGlue::pathWatcher, raw->watch, &SessionGlue::existsDone, raw);
    }
    return zoo_aexists(zh, path.c_str(), 0, &SessionGlue::existsDone, raw);
  });
}

void Session::getChildren(const std::string& path, Callback<ChildrenResult> done, WatchCallback watch) {
  auto op = std::make_unique<SessionGlue::ChildrenOp>();
  op->done = std::move(done);
  if (!isValidPath(path)) {
    queue_.post(op->failure(Error::BadArguments));
    return;
  }
  submit(std::move(op), std::move(watch), [&](zhandle_t* zh, SessionGlue::ChildrenOp* raw) {
    if (raw->watch) {
      return zoo_awget_children2(zh, path.c_str(), &SessionGlue::pathWatcher, raw->watch,
                                 &SessionGlue::childrenDone, raw);
    }
    return zoo_aget_children2(zh, path.c_str(), 0, &SessionGlue::childrenDone, raw);
  });
}

void Session::multi(std::vector<Op> ops, Callback<MultiResult> done) {
  auto op = std::make_unique<SessionGlue::MultiOp>();
  op->done = std::move(done);
  op->ops = std::move(ops);

  // Checked here, not by the C client: it reports a bad path inside a
  // multi as a marshalling error.
  size_t total = 0;
  for (const auto& one : op->ops) {
    bool valid = std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, zk::CreateOp>) {
            total += o.data.size();
            return isValidPath(o.path, isSequential(o.mode));
          } else if constexpr (std::is_same_v<T, SetDataOp>) {
            total += o.data.size();
            return isValidPath(o.path);
          } else {
            return isValidPath(o.path);
          }
        },
        one);
    if (!valid) {
      queue_.post(op->failure(Error::BadArguments));
      return;
    }
  }
  if (total > kMaxDataSize) {
    queue_.post(op->failure(Error::BadArguments));
    return;
  }
  if (op->ops.size() > static_cast<size_t>(INT_MAX)) {
    queue_.post(op->failure(Error::BadArguments));
    return;
  }

  const size_t n = op->ops.size();
  op->cops.resize(n);
  op->results.resize(n);
  op->pathBuffers.resize(n);
  op->stats.resize(n);
  ACL_vector* acl = aclDigest_.empty() ? &ZOO_OPEN_ACL_UNSAFE : creatorAllAnyoneRead();
  for (size_t i = 0; i < n; ++i) {
    zoo_op_t* c = &op->cops[i];
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, zk::CreateOp>) {
            // Room for the chroot-relative path plus a 10-digit sequence.
            op->pathBuffers[i].assign(o.path.size() + 32, '\0');
            zoo_create_op_init(c, o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()), acl,
                               toCMode(o.mode), op->pathBuffers[i].data(),
                               static_cast<int>(op->pathBuffers[i].size()));
          } else if constexpr (std::is_same_v<T, zk::RemoveOp>) {
            zoo_delete_op_init(c, o.path.c_str(), o.version);
          } else if constexpr (std::is_same_v<T, SetDataOp>) {
            zoo_set_op_init(c, o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()), o.version,
                            &op->stats[i]);
          } else {
            zoo_check_op_init(c, o.path.c_str(), o.version);
          }
        },
        op->ops[i]);
  }
  submit(std::move(op), {}, [](zhandle_t* zh, SessionGlue::MultiOp* raw) {
    // An expired handle would otherwise report a marshalling error.
    if (int u = is_unrecoverable(zh); u != ZOK) return u;
    return zoo_amulti(zh, static_cast<int>(raw->cops.size()), raw->cops.data(), raw->results.data(),
                      &SessionGlue::multiDone, raw);
  });
}

Error expireSession(const std::string& connect, int64_t sessionId, const std::string& password,
                    std::chrono::milliseconds wait) {
  clientid_t cid{};
  if (sessionId == 0 || password.size() != sizeof(cid.passwd)) return Error::BadArguments;
  cid.client_id = sessionId;
  std::memcpy(cid.passwd, password.data(), sizeof(cid.passwd));

  struct Waiter {
    Mutex mutex;
    std::condition_variable changed;  // with mutex: state changed
    int state GUARDED_BY(mutex) = 0;
  } waiter;
  auto watcher = [](zhandle_t*, int type, int state, const char*, void* ctx) {
    if (type != ZOO_SESSION_EVENT) return;
    auto* w = static_cast<Waiter*>(ctx);
    MutexLock lock(w->mutex);
    w->state = state;
    w->changed.notify_all();
  };
  configureClientLogging();
  zhandle_t* zh = zookeeper_init2(connect.c_str(), watcher, 10000, &cid, &waiter, ZOO_NO_LOG_CLIENTENV,
                                  &logFromClient);
  if (!zh) return Error::BadArguments;
  int seen;
  {
    MutexLock lock(waiter.mutex);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    auto settled = [](int s) {
      return s == ZOO_CONNECTED_STATE || s == ZOO_EXPIRED_SESSION_STATE || s == ZOO_AUTH_FAILED_STATE;
    };
    while (!settled(waiter.state) && waitLockedUntil(waiter.changed, waiter.mutex, deadline)) {
    }
    seen = waiter.state;
  }
  // Closing the second handle closes the session itself on the ensemble.
  zookeeper_close(zh);
  if (seen == ZOO_CONNECTED_STATE) return Error::Ok;
  if (seen == ZOO_EXPIRED_SESSION_STATE) return Error::SessionExpired;
  if (seen == ZOO_AUTH_FAILED_STATE) return Error::AuthFailed;
  return Error::OperationTimeout;
}

Error expireSession(const Session& session, std::chrono::milliseconds wait) {
  return expireSession(session.config().connect, session.sessionId(), session.sessionPassword(), wait);
}

}  // namespace groupcoord::zk
