#include "zk/FakeClient.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "zk/Path.h"

namespace groupcoord::zk {

namespace {

bool isSequential(CreateMode mode) {
  return mode == CreateMode::PersistentSequential || mode == CreateMode::EphemeralSequential;
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <typename R>
std::function<void()> deliver(Callback<R> done, R result) {
  return [done = std::move(done), result = std::move(result)]() mutable {
    if (done) done(std::move(result));
  };
}

bool validOp(const Op& op, size_t* dataBytes) {
  return std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, CreateOp>) {
          *dataBytes += o.data.size();
          return isValidPath(o.path, isSequential(o.mode));
        } else if constexpr (std::is_same_v<T, SetDataOp>) {
          *dataBytes += o.data.size();
          return isValidPath(o.path);
        } else {
          return isValidPath(o.path);
        }
      },
      op);
}

}  // namespace

// ---------------------------------------------------------------- ensemble

FakeEnsemble::FakeEnsemble() : nextSessionId_(0x0100000000000001LL) {
  // As a fresh ZooKeeper: the root and its system znodes.
  auto plain = [] {
    Node n;
    n.stat.version = 0;
    n.stat.cversion = 0;
    n.stat.aversion = 0;
    return n;
  };
  Node root = plain();
  root.children.insert("zookeeper");
  root.stat.numChildren = 1;
  Node system = plain();
  system.children = {"config", "quota"};
  system.stat.numChildren = 2;
  tree_.emplace("/", std::move(root));
  tree_.emplace("/zookeeper", std::move(system));
  tree_.emplace("/zookeeper/config", plain());
  tree_.emplace("/zookeeper/quota", plain());
}

FakeEnsemble::~FakeEnsemble() {
  MutexLock lock(mutex_);
  if (!clients_.empty()) spdlog::error("FakeEnsemble destroyed with {} clients still bound to it", clients_.size());
}

bool FakeEnsemble::exists(const std::string& path) const {
  MutexLock lock(mutex_);
  return tree_.count(path) != 0;
}

std::optional<std::string> FakeEnsemble::data(const std::string& path) const {
  MutexLock lock(mutex_);
  auto it = tree_.find(path);
  if (it == tree_.end()) return std::nullopt;
  return it->second.data;
}

std::optional<Stat> FakeEnsemble::stat(const std::string& path) const {
  MutexLock lock(mutex_);
  auto it = tree_.find(path);
  if (it == tree_.end()) return std::nullopt;
  return it->second.stat;
}

std::vector<std::string> FakeEnsemble::children(const std::string& path) const {
  MutexLock lock(mutex_);
  auto it = tree_.find(path);
  if (it == tree_.end()) return {};
  return {it->second.children.begin(), it->second.children.end()};
}

size_t FakeEnsemble::nodeCount() const {
  MutexLock lock(mutex_);
  return tree_.size();
}

int64_t FakeEnsemble::lastZxid() const {
  MutexLock lock(mutex_);
  return zxid_;
}

std::vector<std::shared_ptr<CompletionQueue>> FakeEnsemble::queuesOf() const {
  MutexLock lock(mutex_);
  std::vector<std::shared_ptr<CompletionQueue>> out;
  for (auto* c : clients_) out.push_back(c->queue_);
  return out;
}

void FakeEnsemble::waitIdle() {
  for (;;) {
    auto queues = queuesOf();
    auto executed = [&] {
      uint64_t n = 0;
      for (auto& q : queues) n += q->executed();
      return n;
    };
    uint64_t before = executed();
    for (auto& q : queues) q->waitIdle();
    // Nothing ran during the pass: no callback can have posted anything.
    if (executed() == before) return;
  }
}

Error FakeEnsemble::applyCreate(Tree& tree, const std::string& path, const std::string& data, CreateMode mode,
                                int64_t owner, int64_t zxid, int64_t now, std::string* created,
                                std::vector<Change>* changes) {
  if (path == "/") return Error::NodeExists;
  auto parentIt = tree.find(parentPath(path));
  if (parentIt == tree.end()) return Error::NoNode;
  Node& parent = parentIt->second;
  std::string actual = path;
  if (isSequential(mode)) actual += fmt::format("{:010d}", parent.childrenCreated);
  if (tree.count(actual)) return Error::NodeExists;
  if (parent.stat.ephemeralOwner != 0) return Error::NoChildrenForEphemerals;

  Node node;
  node.data = data;
  node.stat.czxid = zxid;
  node.stat.mzxid = zxid;
  node.stat.pzxid = zxid;
  node.stat.ctime = now;
  node.stat.mtime = now;
  node.stat.version = 0;
  node.stat.cversion = 0;
  node.stat.aversion = 0;
  node.stat.dataLength = static_cast<int32_t>(data.size());
  node.stat.numChildren = 0;
  if (mode == CreateMode::Ephemeral || mode == CreateMode::EphemeralSequential) {
    node.stat.ephemeralOwner = owner;
  }
  node.container = mode == CreateMode::Container;
  parent.children.insert(std::string(baseName(actual)));
  parent.childrenCreated += 1;
  parent.stat.cversion += 1;
  parent.stat.numChildren = static_cast<int32_t>(parent.children.size());
  parent.stat.pzxid = zxid;
  tree.emplace(actual, std::move(node));
  if (created) *created = actual;
  changes->push_back({Change::Kind::Created, actual});
  return Error::Ok;
}

Error FakeEnsemble::applyRemove(Tree& tree, const std::string& path, int32_t version, int64_t zxid,
                                std::vector<Change>* changes) {
  // ZooKeeper refuses to delete the root and its own system znode.
  if (path == "/" || path == "/zookeeper") return Error::BadArguments;
  auto it = tree.find(path);
  if (it == tree.end()) return Error::NoNode;
  if (version != kAnyVersion && version != it->second.stat.version) return Error::BadVersion;
  if (!it->second.children.empty()) return Error::NotEmpty;
  auto parentIt = tree.find(parentPath(path));
  if (parentIt != tree.end()) {
    Node& parent = parentIt->second;
    parent.children.erase(std::string(baseName(path)));
    parent.stat.cversion += 1;
    parent.stat.numChildren = static_cast<int32_t>(parent.children.size());
    parent.stat.pzxid = zxid;
  }
  tree.erase(it);
  changes->push_back({Change::Kind::Deleted, path});
  return Error::Ok;
}

Error FakeEnsemble::applySet(Tree& tree, const std::string& path, const std::string& data, int32_t version,
                             int64_t zxid, int64_t now, Stat* out, std::vector<Change>* changes) {
  auto it = tree.find(path);
  if (it == tree.end()) return Error::NoNode;
  Node& node = it->second;
  if (version != kAnyVersion && version != node.stat.version) return Error::BadVersion;
  node.data = data;
  node.stat.version += 1;
  node.stat.mzxid = zxid;
  node.stat.mtime = now;
  node.stat.dataLength = static_cast<int32_t>(data.size());
  if (out) *out = node.stat;
  changes->push_back({Change::Kind::Changed, path});
  return Error::Ok;
}

Error FakeEnsemble::applyCheck(const Tree& tree, const std::string& path, int32_t version) {
  auto it = tree.find(path);
  if (it == tree.end()) return Error::NoNode;
  if (version != kAnyVersion && version != it->second.stat.version) return Error::BadVersion;
  return Error::Ok;
}

// Unchecked: a client here is bound to this ensemble, so its ensemble_.mutex_
// is our mutex_ (held), which the analysis cannot tell from ref.client.
void FakeEnsemble::fireList(std::vector<WatchRef>& list, WatchEvent::Type type, const std::string& path)
    NO_THREAD_SAFETY_ANALYSIS {
  // One-shot: the list is consumed.
  auto refs = std::move(list);
  list.clear();
  for (auto& ref : refs) ref.client->fireWatchLocked(ref.id, WatchEvent{type, SessionState::Connected, path});
}

void FakeEnsemble::fireLocked(const std::vector<Change>& changes) {
  auto take = [](std::map<std::string, std::vector<WatchRef>>& table, const std::string& path) {
    std::vector<WatchRef> out;
    auto it = table.find(path);
    if (it != table.end()) {
      out = std::move(it->second);
      table.erase(it);
    }
    return out;
  };
  for (const auto& change : changes) {
    std::string parent = parentPath(change.path);
    switch (change.kind) {
      case Change::Kind::Created: {
        auto data = take(dataWatches_, change.path);
        fireList(data, WatchEvent::Type::Created, change.path);
        auto kids = take(childWatches_, parent);
        fireList(kids, WatchEvent::Type::Child, parent);
        break;
      }
      case Change::Kind::Deleted: {
        auto data = take(dataWatches_, change.path);
        fireList(data, WatchEvent::Type::Deleted, change.path);
        auto own = take(childWatches_, change.path);
        fireList(own, WatchEvent::Type::Deleted, change.path);
        auto kids = take(childWatches_, parent);
        fireList(kids, WatchEvent::Type::Child, parent);
        break;
      }
      case Change::Kind::Changed: {
        auto data = take(dataWatches_, change.path);
        fireList(data, WatchEvent::Type::Changed, change.path);
        break;
      }
    }
  }
}

void FakeEnsemble::dropWatchesOfLocked(FakeClient* client) {
  for (auto* table : {&dataWatches_, &childWatches_}) {
    for (auto it = table->begin(); it != table->end();) {
      auto& refs = it->second;
      refs.erase(std::remove_if(refs.begin(), refs.end(), [&](const WatchRef& r) { return r.client == client; }),
                 refs.end());
      it = refs.empty() ? table->erase(it) : std::next(it);
    }
  }
}

void FakeEnsemble::removeEphemeralsLocked(int64_t owner) {
  if (owner == 0) return;
  std::vector<std::string> doomed;
  for (const auto& [path, node] : tree_) {
    if (node.stat.ephemeralOwner == owner) doomed.push_back(path);
  }
  if (doomed.empty()) return;
  // One transaction, as ZooKeeper's closeSession is.
  int64_t zxid = nextZxidLocked();
  std::vector<Change> changes;
  for (const auto& path : doomed) applyRemove(tree_, path, kAnyVersion, zxid, &changes);
  fireLocked(changes);
}

// ------------------------------------------------------------------ client

FakeClient::FakeClient(FakeEnsemble& ensemble, FakeClientOptions options)
    : ensemble_(ensemble),
      options_(std::move(options)),
      queue_(std::make_shared<CompletionQueue>(options_.name + "-completions")),
      state_(options_.startConnected ? SessionState::Connected : SessionState::Connecting) {
  MutexLock lock(ensemble_.mutex_);
  if (options_.startConnected) sessionId_ = ensemble_.newSessionIdLocked();
  ensemble_.clients_.insert(this);
}

FakeClient::~FakeClient() {
  listener_.store(nullptr);
  close();
  {
    MutexLock lock(ensemble_.mutex_);
    ensemble_.clients_.erase(this);
  }
  queue_->stop();
}

SessionState FakeClient::state() const {
  MutexLock lock(ensemble_.mutex_);
  return state_;
}

int64_t FakeClient::sessionId() const {
  MutexLock lock(ensemble_.mutex_);
  return sessionId_;
}

std::chrono::milliseconds FakeClient::sessionTimeout() const { return options_.sessionTimeout; }

void FakeClient::setListener(SessionListener* listener) { listener_.store(listener); }

void FakeClient::setStateLocked(SessionState next) {
  if (state_ == next) return;
  state_ = next;
  post([this, next] {
    if (auto* l = listener_.load()) l->onSessionState(next);
  });
}

Error FakeClient::admitLocked(bool /*write*/) {
  switch (state_) {
    case SessionState::Connected: return Error::Ok;
    case SessionState::Connecting:
    case SessionState::Reconnecting: return Error::ConnectionLoss;
    case SessionState::Expired:
    case SessionState::AuthFailed: return Error::InvalidState;
    case SessionState::Closed: return Error::Closing;
  }
  return Error::InvalidState;
}

bool FakeClient::consumeInjectedLocked(Error* error, bool* applied) {
  if (injectedCount_ <= 0) return false;
  --injectedCount_;
  *error = injected_;
  *applied = injectedApplied_;
  return true;
}

void FakeClient::armLocked(WatchKind kind, const std::string& path, WatchCallback watch) {
  if (!watch) return;
  uint64_t id = nextWatchId_++;
  watches_.emplace(id, std::move(watch));
  auto& table = kind == WatchKind::Data ? ensemble_.dataWatches_ : ensemble_.childWatches_;
  table[path].push_back({this, id});
  ++counters_.watchesSet;
}

void FakeClient::fireWatchLocked(uint64_t id, const WatchEvent& event) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return;
  if (state_ == SessionState::Reconnecting || state_ == SessionState::Connecting) {
    // The ensemble would tell us once we are back (ZooKeeper's SetWatches).
    heldBack_.emplace_back(id, event);
    return;
  }
  auto cb = std::move(it->second);
  watches_.erase(it);
  post([cb = std::move(cb), event] { cb(event); });
}

void FakeClient::endWatchesLocked(SessionState finalState) {
  for (auto& [id, cb] : watches_) {
    post([cb = std::move(cb), finalState] { cb(WatchEvent{WatchEvent::Type::Session, finalState, {}}); });
  }
  watches_.clear();
  heldBack_.clear();
}

void FakeClient::create(const std::string& path, std::string data, CreateMode mode, Callback<CreateResult> done) {
  MutexLock lock(ensemble_.mutex_);
  ++counters_.calls;
  ++counters_.writes;
  ++counters_.creates;
  CreateResult r;
  if (!isValidPath(path, isSequential(mode)) || data.size() > kMaxDataSize) {
    r.error = Error::BadArguments;
  } else if ((r.error = admitLocked(true)) == Error::Ok) {
    Error injected = Error::Ok;
    bool applied = false;
    bool inject = consumeInjectedLocked(&injected, &applied);
    if (!inject || applied) {
      std::vector<FakeEnsemble::Change> changes;
      int64_t zxid = ensemble_.nextZxidLocked();
      r.error = FakeEnsemble::applyCreate(ensemble_.tree_, path, data, mode, sessionId_, zxid, nowMs(), &r.path,
                                          &changes);
      ensemble_.fireLocked(changes);
    }
    if (inject) r = CreateResult{injected, {}};
  }
  post(deliver(std::move(done), std::move(r)));
}

void FakeClient::remove(const std::string& path, int32_t version, Callback<Error> done) {
  MutexLock lock(ensemble_.mutex_);
  ++counters_.calls;
  ++counters_.writes;
  ++counters_.removes;
  Error e;
  if (!isValidPath(path)) {
    e = Error::BadArguments;
  } else if ((e = admitLocked(true)) == Error::Ok) {
    Error injected = Error::Ok;
    bool applied = false;
    bool inject = consumeInjectedLocked(&injected, &applied);
    if (!inject || applied) {
      std::vector<FakeEnsemble::Change> changes;
      int64_t zxid = ensemble_.nextZxidLocked();
      e = FakeEnsemble::applyRemove(ensemble_.tree_, path, version, zxid, &changes);
      ensemble_.fireLocked(changes);
    }
    if (inject) e = injected;
  }
  post(deliver(std::move(done), e));
}

void FakeClient::get(const std::string& path, Callback<GetResult> done, WatchCallback watch) {
  MutexLock lock(ensemble_.mutex_);
  ++counters_.calls;
  ++counters_.reads;
  GetResult r;
  Error injected = Error::Ok;
  bool applied = false;
  if (!isValidPath(path)) {
    r.error = Error::BadArguments;
  } else if ((r.error = admitLocked(false)) != Error::Ok) {
  } else if (consumeInjectedLocked(&injected, &applied)) {
    r.error = injected;
  } else {
    auto it = ensemble_.tree_.find(path);
    if (it == ensemble_.tree_.end()) {
      r.error = Error::NoNode;
    } else {
      r.data = it->second.data;
      r.stat = it->second.stat;
      armLocked(WatchKind::Data, path, std::move(watch));
    }
  }
  post(deliver(std::move(done), std::move(r)));
}

void FakeClient::set(const std::string& path, std::string data, int32_t version, Callback<SetResult> done) {
  MutexLock lock(ensemble_.mutex_);
  ++counters_.calls;
  ++counters_.writes;
  ++counters_.sets;
  SetResult r;
  if (!isValidPath(path) || data.size() > kMaxDataSize) {
    r.error = Error::BadArguments;
  } else if ((r.error = admitLocked(true)) == Error::Ok) {
    Error injected = Error::Ok;
    bool applied = false;
    bool inject = consumeInjectedLocked(&injected, &applied);
    if (!inject || applied) {
      std::vector<FakeEnsemble::Change> changes;
      int64_t zxid = ensemble_.nextZxidLocked();
      r.error = FakeEnsemble::applySet(ensemble_.tree_, path, data, version, zxid, nowMs(), &r.stat, &changes);
      ensemble_.fireLocked(changes);
    }
    if (inject) r = SetResult{injected, {}};
  }
  post(deliver(std::move(done), std::move(r)));
}

void FakeClient::exists(const std::string& path, Callback<ExistsResult> done, WatchCallback watch) {
  MutexLock lock(ensemble_.mutex_);
  ++counters_.calls;
  ++counters_.reads;
  ExistsResult r;
  Error injected = Error::Ok;
  bool applied = false;
  if (!isValidPath(path)) {
    r.error = Error::BadArguments;
  } else if ((r.error = admitLocked(false)) != Error::Ok) {
  } else if (consumeInjectedLocked(&injected, &applied)) {
    r.error = injected;
  } else {
    auto it = ensemble_.tree_.find(path);
    if (it == ensemble_.tree_.end()) {
      r.error = Error::NoNode;
    } else {
      r.stat = it->second.stat;
    }
    // Armed either way: it then fires on Created.
    armLocked(WatchKind::Data, path, std::move(watch));
  }
  post(deliver(std::move(done), std::move(r)));
}

void FakeClient::getChildren(const std::string& path, Callback<ChildrenResult> done, WatchCallback watch) {
  MutexLock lock(ensemble_.mutex_);
  ++counters_.calls;
  ++counters_.reads;
  ChildrenResult r;
  Error injected = Error::Ok;
  bool applied = false;
  if (!isValidPath(path)) {
    r.error = Error::BadArguments;
  } else if ((r.error = admitLocked(false)) != Error::Ok) {
  } else if (consumeInjectedLocked(&injected, &applied)) {
    r.error = injected;
  } else {
    auto it = ensemble_.tree_.find(path);
    if (it == ensemble_.tree_.end()) {
      r.error = Error::NoNode;
    } else {
      r.children.assign(it->second.children.begin(), it->second.children.end());
      r.stat = it->second.stat;
      armLocked(WatchKind::Child, path, std::move(watch));
    }
  }
  post(deliver(std::move(done), std::move(r)));
}

void FakeClient::multi(std::vector<Op> ops, Callback<MultiResult> done) {
  MutexLock lock(ensemble_.mutex_);
  ++counters_.calls;
  ++counters_.writes;
  ++counters_.multis;
  counters_.multiOps += ops.size();
  MultiResult r;
  r.results.resize(ops.size());
  auto failAll = [&](Error e) {
    r.error = e;
    for (auto& one : r.results) one.error = e;
  };

  size_t dataBytes = 0;
  bool valid = std::all_of(ops.begin(), ops.end(), [&](const Op& op) { return validOp(op, &dataBytes); });
  if (!valid || dataBytes > kMaxDataSize) {
    failAll(Error::BadArguments);
    post(deliver(std::move(done), std::move(r)));
    return;
  }
  if (Error e = admitLocked(true); e != Error::Ok) {
    failAll(e);
    post(deliver(std::move(done), std::move(r)));
    return;
  }
  Error injected = Error::Ok;
  bool applied = false;
  bool inject = consumeInjectedLocked(&injected, &applied);
  if (!inject || applied) {
    // All or nothing: run on a copy, keep it only if every op succeeds.
    FakeEnsemble::Tree work = ensemble_.tree_;
    std::vector<FakeEnsemble::Change> changes;
    int64_t zxid = ensemble_.nextZxidLocked();
    int64_t now = nowMs();
    const int64_t owner = sessionId_;  // read here: the lambda below is checked without the lock
    int failed = -1;
    Error failure = Error::Ok;
    for (size_t i = 0; i < ops.size() && failed < 0; ++i) {
      auto& out = r.results[i];
      Error e = std::visit(
          [&](const auto& o) -> Error {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, CreateOp>) {
              return FakeEnsemble::applyCreate(work, o.path, o.data, o.mode, owner, zxid, now, &out.path,
                                               &changes);
            } else if constexpr (std::is_same_v<T, RemoveOp>) {
              return FakeEnsemble::applyRemove(work, o.path, o.version, zxid, &changes);
            } else if constexpr (std::is_same_v<T, SetDataOp>) {
              return FakeEnsemble::applySet(work, o.path, o.data, o.version, zxid, now, &out.stat, &changes);
            } else {
              return FakeEnsemble::applyCheck(work, o.path, o.version);
            }
          },
          ops[i]);
      if (e != Error::Ok) {
        failed = static_cast<int>(i);
        failure = e;
      }
    }
    if (failed < 0) {
      ensemble_.tree_ = std::move(work);
      ensemble_.fireLocked(changes);
      r.error = Error::Ok;
    } else {
      // As ZooKeeper reports a failed multi: ops before the failed one read
      // Ok (rolled back), the failed one its error, the rest
      // RuntimeInconsistency; nothing of it is applied.
      r.error = failure;
      r.failedOp = isDataError(failure) ? failed : -1;
      for (size_t i = 0; i < r.results.size(); ++i) {
        auto idx = static_cast<int>(i);
        r.results[i] = OpResult{};
        r.results[i].error = idx < failed ? Error::Ok : idx == failed ? failure : Error::RuntimeInconsistency;
      }
    }
  }
  if (inject) {
    r.failedOp = -1;
    failAll(injected);
    for (auto& one : r.results) {
      one.path.clear();
      one.stat = Stat{};
    }
  }
  post(deliver(std::move(done), std::move(r)));
}

void FakeClient::renew() {
  MutexLock lock(ensemble_.mutex_);
  if (state_ != SessionState::Expired && state_ != SessionState::AuthFailed) return;
  sessionId_ = ensemble_.newSessionIdLocked();
  serverExpired_ = false;
  heldBack_.clear();
  setStateLocked(SessionState::Connecting);
  setStateLocked(SessionState::Connected);
}

void FakeClient::disconnect() {
  MutexLock lock(ensemble_.mutex_);
  if (state_ != SessionState::Connected) return;
  setStateLocked(SessionState::Reconnecting);
}

void FakeClient::reconnect() {
  MutexLock lock(ensemble_.mutex_);
  if (state_ != SessionState::Reconnecting && state_ != SessionState::Connecting) return;
  if (serverExpired_) {
    setStateLocked(SessionState::Expired);
    endWatchesLocked(SessionState::Expired);
    return;
  }
  if (sessionId_ == 0) sessionId_ = ensemble_.newSessionIdLocked();
  setStateLocked(SessionState::Connected);
  auto held = std::move(heldBack_);
  heldBack_.clear();
  for (auto& [id, event] : held) fireWatchLocked(id, event);
}

void FakeClient::expire() {
  MutexLock lock(ensemble_.mutex_);
  if (sessionId_ == 0 || serverExpired_) return;
  if (state_ == SessionState::Closed || state_ == SessionState::Expired || state_ == SessionState::AuthFailed) return;
  serverExpired_ = true;
  // The ensemble forgets the session's watches and ephemerals now.
  ensemble_.dropWatchesOfLocked(this);
  ensemble_.removeEphemeralsLocked(sessionId_);
  if (state_ == SessionState::Connected) {
    setStateLocked(SessionState::Expired);
    endWatchesLocked(SessionState::Expired);
  }
}

void FakeClient::close() {
  MutexLock lock(ensemble_.mutex_);
  if (state_ == SessionState::Closed) return;
  ensemble_.dropWatchesOfLocked(this);
  if (!serverExpired_) ensemble_.removeEphemeralsLocked(sessionId_);
  serverExpired_ = true;
  // Watches first, then the listener: the order zk::Session::close() uses.
  endWatchesLocked(SessionState::Closed);
  setStateLocked(SessionState::Closed);
}

void FakeClient::failNext(Error error, int count, bool applied) {
  MutexLock lock(ensemble_.mutex_);
  injected_ = error;
  injectedCount_ = count;
  injectedApplied_ = applied;
}

FakeCounters FakeClient::counters() const {
  MutexLock lock(ensemble_.mutex_);
  return counters_;
}

void FakeClient::resetCounters() {
  MutexLock lock(ensemble_.mutex_);
  counters_ = FakeCounters{};
}

size_t FakeClient::armedWatches() const {
  MutexLock lock(ensemble_.mutex_);
  return watches_.size();
}

void FakeClient::waitIdle() { queue_->waitIdle(); }

}  // namespace groupcoord::zk
