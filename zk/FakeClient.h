#pragma once

// An in-memory ZooKeeper behind the zk::Client interface, for unit tests of
// code above zk/ (the adapter). The shared behaviour suite in tests/zk runs
// against this fake and against a live ensemble, so the two agree on what
// the suite checks: error codes and their order of precedence, versions,
// sequence numbers, ephemeral and container znodes, atomic multi with the
// failed op's index, one-shot watches and which events fire them.
//
//   FakeEnsemble zk;                    // one data tree ("the ensemble")
//   FakeClient server1(zk), server2(zk); // two sessions on it
//
// Threads: like zk::Session, each FakeClient delivers every completion,
// watch event and listener call on its own completion thread, one at a
// time, in order, never inside the caller's stack. An operation is applied
// to the tree at once, in the calling thread, under the ensemble's lock;
// only its result travels through the completion thread. waitIdle() (one
// client) and FakeEnsemble::waitIdle() (every client) block until all that
// was queued has been delivered, for deterministic tests.
//
// Differences from the real thing, on purpose: no ACLs or auth, no chroot;
// container znodes are never reaped; no latency, so an operation issued
// while connected never fails with ConnectionLoss unless failNext() says so.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/Sync.h"
#include "zk/Client.h"
#include "zk/CompletionQueue.h"

namespace groupcoord::zk {

class FakeClient;

// The shared data tree. Must outlive every FakeClient bound to it.
class FakeEnsemble {
 public:
  FakeEnsemble();
  ~FakeEnsemble();

  FakeEnsemble(const FakeEnsemble&) = delete;
  FakeEnsemble& operator=(const FakeEnsemble&) = delete;

  // Direct reads for test assertions: no client, no counters, no watches.
  bool exists(const std::string& path) const EXCLUDES(mutex_);
  std::optional<std::string> data(const std::string& path) const EXCLUDES(mutex_);
  std::optional<Stat> stat(const std::string& path) const EXCLUDES(mutex_);
  std::vector<std::string> children(const std::string& path) const EXCLUDES(mutex_);  // sorted names
  size_t nodeCount() const EXCLUDES(mutex_);  // every znode, "/" and "/zookeeper" included
  int64_t lastZxid() const EXCLUDES(mutex_);

  // Blocks until every client's completion queue is idle and stays idle
  // over one full pass (a callback on one client may post to another).
  void waitIdle() EXCLUDES(mutex_);

 private:
  friend class FakeClient;

  struct Node {
    std::string data;
    Stat stat;
    std::set<std::string> children;
    // Children ever created. ZooKeeper numbers sequential children with
    // this count; stat.cversion counts deletes as well.
    int32_t childrenCreated = 0;
    bool container = false;
  };
  using Tree = std::map<std::string, Node>;

  // A change the watches care about, in the order it happened.
  struct Change {
    enum class Kind { Created, Deleted, Changed };
    Kind kind;
    std::string path;
  };

  struct WatchRef {
    FakeClient* client;
    uint64_t id;
  };

  // Tree operations, shared by single ops and multi (which runs them on a
  // copy and keeps the copy only if all succeed).
  static Error applyCreate(Tree& tree, const std::string& path, const std::string& data, CreateMode mode,
                           int64_t owner, int64_t zxid, int64_t now, std::string* created, std::vector<Change>* changes);
  static Error applyRemove(Tree& tree, const std::string& path, int32_t version, int64_t zxid,
                           std::vector<Change>* changes);
  static Error applySet(Tree& tree, const std::string& path, const std::string& data, int32_t version,
                        int64_t zxid, int64_t now, Stat* out, std::vector<Change>* changes);
  static Error applyCheck(const Tree& tree, const std::string& path, int32_t version);

  void fireLocked(const std::vector<Change>& changes) REQUIRES(mutex_);
  void fireList(std::vector<WatchRef>& list, WatchEvent::Type type, const std::string& path) REQUIRES(mutex_);
  void dropWatchesOfLocked(FakeClient* client) REQUIRES(mutex_);
  void removeEphemeralsLocked(int64_t owner) REQUIRES(mutex_);
  int64_t nextZxidLocked() REQUIRES(mutex_) { return ++zxid_; }
  int64_t newSessionIdLocked() REQUIRES(mutex_) { return nextSessionId_++; }

  // Also guards the session fields of every FakeClient bound here.
  mutable Mutex mutex_;
  Tree tree_ GUARDED_BY(mutex_);
  int64_t zxid_ GUARDED_BY(mutex_) = 0;
  int64_t nextSessionId_ GUARDED_BY(mutex_);
  // Data watches (get, exists) and child watches, by path.
  std::map<std::string, std::vector<WatchRef>> dataWatches_ GUARDED_BY(mutex_);
  std::map<std::string, std::vector<WatchRef>> childWatches_ GUARDED_BY(mutex_);
  std::set<FakeClient*> clients_ GUARDED_BY(mutex_);
  std::vector<std::shared_ptr<CompletionQueue>> queuesOf() const EXCLUDES(mutex_);
};

struct FakeClientOptions {
  std::chrono::milliseconds sessionTimeout{10000};
  // false: the client starts in Connecting and operations fail with
  // ConnectionLoss until reconnect() makes the first connection.
  bool startConnected = true;
  std::string name = "fake-zk";  // names the completion thread in logs
};

// What a FakeClient was asked to do, for assertions such as "a heartbeat
// made no ZooKeeper call". Every call counts, also those that failed.
struct FakeCounters {
  uint64_t calls = 0;    // every operation
  uint64_t reads = 0;    // get, exists, getChildren
  uint64_t writes = 0;   // create, remove, set, multi (a multi counts once)
  uint64_t creates = 0;
  uint64_t removes = 0;
  uint64_t sets = 0;
  uint64_t multis = 0;
  uint64_t multiOps = 0;  // ops inside multis
  uint64_t watchesSet = 0;  // watch callbacks armed
};

class FakeClient final : public Client {
 public:
  explicit FakeClient(FakeEnsemble& ensemble, FakeClientOptions options = {});
  // Like close() but without telling the listener; delivers what is still
  // queued before returning. Not from one of this client's callbacks, nor
  // while holding a lock those callbacks take.
  ~FakeClient() override;

  FakeClient(const FakeClient&) = delete;
  FakeClient& operator=(const FakeClient&) = delete;

  // --- zk::Client (same contract as zk::Session) ---
  void create(const std::string& path, std::string data, CreateMode mode, Callback<CreateResult> done) override
      EXCLUDES(ensemble_.mutex_);
  void remove(const std::string& path, int32_t version, Callback<Error> done) override EXCLUDES(ensemble_.mutex_);
  void get(const std::string& path, Callback<GetResult> done, WatchCallback watch = {}) override
      EXCLUDES(ensemble_.mutex_);
  void set(const std::string& path, std::string data, int32_t version, Callback<SetResult> done) override
      EXCLUDES(ensemble_.mutex_);
  void exists(const std::string& path, Callback<ExistsResult> done, WatchCallback watch = {}) override
      EXCLUDES(ensemble_.mutex_);
  void getChildren(const std::string& path, Callback<ChildrenResult> done, WatchCallback watch = {}) override
      EXCLUDES(ensemble_.mutex_);
  void multi(std::vector<Op> ops, Callback<MultiResult> done) override EXCLUDES(ensemble_.mutex_);

  SessionState state() const override EXCLUDES(ensemble_.mutex_);
  int64_t sessionId() const override EXCLUDES(ensemble_.mutex_);
  std::chrono::milliseconds sessionTimeout() const override;
  void setListener(SessionListener* listener) override;
  void post(std::function<void()> task) override { queue_->post(std::move(task)); }
  void renew() override EXCLUDES(ensemble_.mutex_);

  // --- test controls; each tells the listener of the change it makes ---

  // Connection lost (Connected -> Reconnecting). Operations fail with
  // ConnectionLoss; watches stay armed, and what would fire them meanwhile
  // is held back and delivered after reconnect(), as ZooKeeper does.
  void disconnect() EXCLUDES(ensemble_.mutex_);
  // The connection is back (Reconnecting/Connecting -> Connected, same
  // session). If the session was expired meanwhile, -> Expired instead.
  void reconnect() EXCLUDES(ensemble_.mutex_);
  // The ensemble expires the session now: its ephemeral znodes are deleted
  // (other sessions' watches fire). A connected client learns at once:
  // -> Expired, armed watches get a Session event (state Expired), and
  // every later operation fails with InvalidState until renew(). A
  // disconnected client learns at its next reconnect().
  void expire() EXCLUDES(ensemble_.mutex_);
  // Closes the session as its owner would (ephemerals deleted, -> Closed,
  // armed watches get a Session event with state Closed). Idempotent.
  void close() EXCLUDES(ensemble_.mutex_);
  // The next `count` operations fail with `error`. With applied = true a
  // write is still carried out (models a reply lost after the commit, e.g.
  // ConnectionLoss after a successful create).
  void failNext(Error error, int count = 1, bool applied = false) EXCLUDES(ensemble_.mutex_);

  FakeCounters counters() const EXCLUDES(ensemble_.mutex_);
  void resetCounters() EXCLUDES(ensemble_.mutex_);
  // Watch callbacks armed and not yet fired.
  size_t armedWatches() const EXCLUDES(ensemble_.mutex_);
  // Blocks until this client's queued completions and events are delivered.
  void waitIdle();

 private:
  friend class FakeEnsemble;

  enum class WatchKind { Data, Child };

  Error admitLocked(bool write) REQUIRES(ensemble_.mutex_);  // connection state and injected failures
  bool consumeInjectedLocked(Error* error, bool* applied) REQUIRES(ensemble_.mutex_);
  void armLocked(WatchKind kind, const std::string& path, WatchCallback watch) REQUIRES(ensemble_.mutex_);
  void fireWatchLocked(uint64_t id, const WatchEvent& event) REQUIRES(ensemble_.mutex_);
  void endWatchesLocked(SessionState finalState) REQUIRES(ensemble_.mutex_);
  void setStateLocked(SessionState next) REQUIRES(ensemble_.mutex_);

  FakeEnsemble& ensemble_;
  const FakeClientOptions options_;
  std::shared_ptr<CompletionQueue> queue_;
  std::atomic<SessionListener*> listener_{nullptr};

  SessionState state_ GUARDED_BY(ensemble_.mutex_);
  int64_t sessionId_ GUARDED_BY(ensemble_.mutex_) = 0;
  // The ensemble ended the session; the client may not know yet.
  bool serverExpired_ GUARDED_BY(ensemble_.mutex_) = false;
  uint64_t nextWatchId_ GUARDED_BY(ensemble_.mutex_) = 1;
  std::unordered_map<uint64_t, WatchCallback> watches_ GUARDED_BY(ensemble_.mutex_);
  // Events while disconnected.
  std::vector<std::pair<uint64_t, WatchEvent>> heldBack_ GUARDED_BY(ensemble_.mutex_);
  Error injected_ GUARDED_BY(ensemble_.mutex_) = Error::Ok;
  int injectedCount_ GUARDED_BY(ensemble_.mutex_) = 0;
  bool injectedApplied_ GUARDED_BY(ensemble_.mutex_) = false;
  FakeCounters counters_ GUARDED_BY(ensemble_.mutex_);
};

}  // namespace groupcoord::zk
