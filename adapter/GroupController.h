#pragma once

// One group controlled by this server (docs/design.md, "A controlled
// group"): its members and their liveness, the generation, who holds which
// partition, the committed offsets, and the writes that make changes
// durable.
//
// Membership changes (joins, leaves, evictions, rewinds, a generation move
// for a topic change) are batched: what arrives while a transaction is in
// flight, or within one batch interval, goes out in the next transaction,
// which also moves the generation (the group znode's version). Commits go
// in transactions of their own, beside the membership ones.
//
// The group's phase (GroupPhase.h) says what is in flight; requests are
// answered from memory whatever the phase, except while loading.
//
// Threads: requests come from I/O threads, ZooKeeper answers on the
// completion thread, tick() from the ticker. Lock: mu_ guards everything
// below it. It is taken after the coordinator's table and registry locks
// are released, and it is the only lock held while a ZooKeeper operation is
// issued (the client never calls back inline). Answers are queued in a
// LockedOutbox and run after mu_ is released.
//
// GroupController.cpp holds requests, liveness and the phase changes;
// GroupWrites.cpp the ZooKeeper reads and transactions.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapter/Assignment.h"
#include "adapter/Clock.h"
#include "adapter/GroupOps.h"
#include "adapter/GroupPhase.h"
#include "adapter/History.h"
#include "adapter/NameMap.h"
#include "adapter/OffsetStore.h"
#include "adapter/OpQueue.h"
#include "adapter/Outbox.h"
#include "adapter/Ownership.h"
#include "adapter/SessionEpoch.h"
#include "adapter/TopicWatcher.h"
#include "common/Layout.h"
#include "common/Sync.h"
#include "protocol/Handler.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

struct GroupConfig {
  // Membership changes of one group go to ZooKeeper at most once per
  // interval; what arrives meanwhile joins the next transaction.
  Millis batchInterval{10};
  // Upper bound of membership changes in one ZooKeeper transaction.
  size_t maxChangesPerTransaction = 1000;
  // Largest member metadata a registration may carry; larger is INVALID_REQUEST.
  size_t maxMetadataBytes = 4096;
};

// What every controlled group shares: the session, the other parts, and
// the way back to the coordinator.
struct GroupContext {
  int32_t serverId;  // this server's
  zk::Client& zk;
  const layout::Layout& layout;
  GroupConfig config;
  const TimeSource& time;
  const SessionEpoch& epoch;
  const std::atomic<bool>& connected;
  TopicWatcher& topics;
  OffsetStore& offsets;
  // The group's znode is gone (or it was deleted here): the coordinator
  // forgets the group. Called without the group's lock.
  std::function<void(const std::string& group, protocol::ErrorCode answer, const char* why)> vanished;
  // A fresh member id for a registration without one.
  std::function<std::string(const std::optional<std::string>& clientId)> newMemberId;
};

class GroupController : public std::enable_shared_from_this<GroupController> {
 public:
  GroupController(GroupContext& ctx, std::string name);

  const std::string& name() const { return name_; }

  // Just claimed: reads the group from ZooKeeper, then serves it.
  void load() EXCLUDES(mu_);

  // ---- Requests (docs/protocol.md) ----
  // Answered at once, from memory; never reaches ZooKeeper.
  // `caller` says where the member connects from (for DescribeGroup).
  protocol::HeartbeatResponse heartbeat(const protocol::HeartbeatRequest& r,
                                        const protocol::Caller& caller = {}) EXCLUDES(mu_);
  // The same, from a request read in place (the server's fast path), at
  // `now` (the caller's one clock read for this heartbeat). With `cache`
  // (one connection's, below), a member that heartbeats again while nobody
  // joined or left is found without a lookup.
  struct MemberCache;
  protocol::HeartbeatResponse heartbeat(const protocol::HeartbeatView& r, const protocol::Caller& caller,
                                        TimePoint now, MemberCache* cache = nullptr) EXCLUDES(mu_);
  void registerMember(const protocol::RequestHeader& h, protocol::RegisterConsumerRequest r,
                      protocol::ResponseCallback done, const protocol::Caller& caller = {}) EXCLUDES(mu_);
  void leave(const protocol::LeaveGroupRequest& r, protocol::ResponseCallback done) EXCLUDES(mu_);
  void deleteGroup(const protocol::DeleteGroupRequest& r, protocol::ResponseCallback done) EXCLUDES(mu_);
  void commit(const protocol::CommitOffsetsRequest& r, protocol::ResponseCallback done) EXCLUDES(mu_);
  void rewind(const protocol::RewindConsumerRequest& r, protocol::ResponseCallback done,
              const protocol::Caller& caller = {}) EXCLUDES(mu_);
  // Everything known about the group, from memory; `self` is this server
  // as clients reach it.
  protocol::DescribeGroupResponse describe(const protocol::Broker& self) const EXCLUDES(mu_);

  // ---- From the coordinator ----
  // Evicts silent members, deletes an abandoned ephemeral group, sends
  // what waits.
  void tick(TimePoint now) EXCLUDES(mu_);
  // A subscribed topic's partition count changed: move the generation.
  void topicChanged(const std::string& topic) EXCLUDES(mu_);
  // ZooKeeper is away: commits not sent yet are refused (their members
  // would otherwise wait as long as the outage). Returns how many.
  size_t refuseQueuedCommits() EXCLUDES(mu_);
  // Answers everything waiting with `answer` (stopping: the group stays).
  void answerAllWaiting(protocol::ErrorCode answer) EXCLUDES(mu_);
  // No longer controlled here: answers everything waiting with `answer`,
  // forgets the members; later ZooKeeper answers for it do nothing.
  void drop(protocol::ErrorCode answer, const char* why) EXCLUDES(mu_);

  // ---- Handover to another server (docs/design.md, "Handover") ----
  struct HandoverResult {
    bool ok = false;  // the group is now the other server's to claim
    int32_t to = -1;
    Millis took{0};   // from handOver() to the end
    std::string why;  // when not ok
  };
  using HandoverDone = std::function<void(HandoverResult)>;
  // Starts handing the group over to server `to`: new registrations, leaves,
  // commits, rewinds and deletions answer CONTROLLER_NOT_AVAILABLE (the
  // member retries, and finds the next controller), heartbeats are still
  // answered, and what was accepted before is written first. Then one
  // transaction records who holds which partition (so the next controller
  // grants the rest at once) and removes this server's controller znode.
  // `done` runs once, without the lock. False, and `done` never runs, when
  // the group is not serving or is already being handed over.
  bool handOver(int32_t self, int32_t to, HandoverDone done) EXCLUDES(mu_);
  bool handingOver() const EXCLUDES(mu_);

  // ---- Introspection ----
  int64_t generation() const EXCLUDES(mu_);
  std::vector<std::string> memberIds() const EXCLUDES(mu_);
  size_t memberCount() const EXCLUDES(mu_);
  GroupPhase phase() const EXCLUDES(mu_);
  std::vector<protocol::RebalanceEvent> history() const EXCLUDES(mu_);

 private:
  struct Member {
    std::string clientId;
    TimePoint lastSeen;
    std::string host;  // "" until it is heard from (members found in ZooKeeper)
    uint16_t port = 0;
    int64_t joinedAtMs = -1;  // wall clock; -1 for members found in ZooKeeper
    std::string metadata;     // RegisterConsumer v1
    std::string rack;
    int32_t registeredAt = -1;  // client mode: the generation it last registered at
    // Ownership::epoch() when a heartbeat last found it in sync; 0: not known.
    uint64_t inSyncAt = 0;
  };

 public:
  // One connection's last member found by heartbeat() in this group: used
  // while members_ is unchanged since (no member joined or left, so the
  // element is where it was). The caller keeps one per group it caches.
  struct MemberCache {
    uint64_t version = 0;  // members_.version() when filled; 0: empty
    std::string id;
    Member* member = nullptr;
  };

 private:
  // A member removed lately, by the address it connected from: a
  // registration without an id from there is the same client again
  // (MEMBER_REPLACED).
  struct Removed {
    std::string id;
    std::string clientId;
    TimePoint at;
  };
  using Ptr = std::shared_ptr<GroupController>;

  // GroupController.cpp
  protocol::RegisterConsumerResponse registration(const std::string& member) REQUIRES(mu_);
  bool hasPendingWrites() const REQUIRES(mu_);
  bool leaving(const std::string& member) const REQUIRES(mu_);
  protocol::ErrorCode writeRefusal() const REQUIRES(mu_);
  OffsetWrite checkOffsets(const std::vector<protocol::PartitionOffset>& offsets, const std::string* owner) const
      REQUIRES(mu_);
  void scanLiveness(TimePoint now) REQUIRES(mu_);
  // When the next tick may have something to do; `now` when it may now.
  TimePoint nextTickDue(TimePoint now) const REQUIRES(mu_);
  Assignment heldNow() const REQUIRES(mu_);
  // What an assignment of the group depends on, and what it gave.
  struct AssignmentInputs {
    std::vector<std::string> ids;  // sorted
    std::map<std::string, int32_t> counts;
    Assignment held;  // sticky to this
    RackInfo racks;
  };
  struct AssignedAhead {
    int32_t from = -1;  // the generation the transaction moves from
    AssignmentInputs inputs;
    Assignment target;
    double tookMs = 0;
  };
  AssignmentInputs inputsNow() const REQUIRES(mu_);
  // The assignment of the generation just reached. `ahead`: computed while
  // the transaction was in flight; used when its members, partition counts
  // and racks are those of the generation reached, computed here otherwise.
  void retarget(std::optional<AssignedAhead> ahead = std::nullopt) REQUIRES(mu_);
  // A big group's next assignment, computed without the lock while its
  // membership transaction is in flight (docs/design.md, "Assignment").
  std::optional<AssignmentInputs> inputsAfterBatch() const REQUIRES(mu_);
  void assignAhead() EXCLUDES(mu_);
  void answerEverything(protocol::ErrorCode e, Outbox& out) REQUIRES(mu_);
  void answerDeletions(protocol::ErrorCode e, Outbox& out) REQUIRES(mu_);
  // History (GroupController.cpp): an event of this group, stamped now.
  protocol::RebalanceEvent event(protocol::RebalanceReason reason, std::string detail) const REQUIRES(mu_);
  // Events that do not wait for a transaction (takeover, handover): kept,
  // logged and counted at once, persisted with the next write.
  void recordNow(std::vector<protocol::RebalanceEvent> events) REQUIRES(mu_);
  // The events the transaction being built makes true, at `generation`.
  std::vector<protocol::RebalanceEvent> batchEvents(int64_t generation) const REQUIRES(mu_);
  // Topic events of a generation move asked by a topic change.
  std::vector<protocol::RebalanceEvent> topicEvents() const REQUIRES(mu_);
  // The history znode's operation carrying `next` as well: a create the
  // first time, then a setData.
  zk::Op historyOp(const std::vector<protocol::RebalanceEvent>& next) const REQUIRES(mu_);
  void logAndCount(const std::vector<protocol::RebalanceEvent>& events) const REQUIRES(mu_);
  // The transaction did not happen (or may not have): its waiting events wait
  // for the next one; its member events are made again from the queues.
  void requeueEvents() REQUIRES(mu_);
  void rememberRemoved(const std::string& id, const Member& m, TimePoint now) REQUIRES(mu_);
  void recordTakeover(protocol::RebalanceReason reason, int32_t from) REQUIRES(mu_);
  // Client mode (docs/protocol.md §14).
  bool clientMode() const REQUIRES(mu_) { return settings_.mode == protocol::AssignmentMode::CLIENT; }
  // Every member has registered at the current generation: they may start.
  bool agreed() const REQUIRES(mu_) { return registeredAtCurrent_ == members_.size(); }
  void markRegistered(Member& m) REQUIRES(mu_);
  // registeredAtCurrent_ counted again from the members.
  void countRegistered() REQUIRES(mu_);
  // The generation moved (or was found to have moved) at `now`.
  void generationMoved(TimePoint now) REQUIRES(mu_);

  // GroupWrites.cpp
  // The continuations return why the group is gone (it is then dropped,
  // after the lock), or nullptr.
  struct Loaded {
    zk::GetResult group;
    zk::ChildrenResult members;
    zk::GetResult handover;        // the members znode's data: read by the first load only
    zk::ExistsResult controller;   // read while a handover's outcome is unknown
    zk::GetResult history;         // the history znode
  };
  void reload() REQUIRES(mu_);
  const char* onReloaded(Loaded read, Outbox& out) REQUIRES(mu_);
  void flush(Outbox& out) REQUIRES(mu_);
  void writeBatch() REQUIRES(mu_);
  const char* onBatchDone(size_t opCount, zk::MultiResult r, Outbox& out) REQUIRES(mu_);
  void onBatchApplied(const zk::MultiResult& r, size_t changes, Outbox& out) REQUIRES(mu_);
  void removeSubtree() REQUIRES(mu_);
  const char* onSubtreeListed(OffsetsListing listing, Outbox& out) REQUIRES(mu_);
  const char* onSubtreeRemoved(size_t opCount, zk::MultiResult r, Outbox& out) REQUIRES(mu_);
  void loadOffsets() REQUIRES(mu_);
  const char* onOffsetsLoaded(OffsetsRead r, Outbox& out) REQUIRES(mu_);
  void flushCommits() REQUIRES(mu_);
  struct TakenOver {
    std::vector<std::string> adopt;  // member znodes to create again
    bool targetKept = false;         // the generation's assignment came with the handover
  };
  // `lastWriter`: the server that last wrote the history znode (-1: none).
  TakenOver takeOver(const zk::GetResult& group, const zk::GetResult& handover, TimePoint now, int32_t lastWriter)
      REQUIRES(mu_);
  void adoptMembers(const std::vector<std::string>& ids) REQUIRES(mu_);
  const char* onAdopted(size_t count, zk::MultiResult r, Outbox& out) REQUIRES(mu_);
  void maybeHandOver(TimePoint now, Outbox& out) REQUIRES(mu_);
  const char* onHandedOver(size_t opCount, zk::MultiResult r, Outbox& out) REQUIRES(mu_);
  const char* checkHandedOver(const zk::ExistsResult& controller, Outbox& out) REQUIRES(mu_);
  void endHandover(bool ok, std::string why, Outbox& out) REQUIRES(mu_);
  const char* onCommitsDone(zk::MultiResult r, Outbox& out) REQUIRES(mu_);
  // A completion for a ZooKeeper operation of this group: bound to the
  // session, it runs `(this->*continuation)(result, out)` under the lock
  // unless the group was dropped meanwhile, then drops the group if it
  // says so. (A member pointer, not a lambda: the analysis of a lambda's
  // body cannot see the lock its caller holds.)
  template <class Result>
  std::function<void(Result)> completion(const char* (GroupController::*continuation)(Result, Outbox&));
  template <class Result>
  std::function<void(Result)> completion(const char* (GroupController::*continuation)(size_t, Result, Outbox&),
                                         size_t opCount);

  GroupContext& ctx_;
  const std::string name_;

  mutable Mutex mu_;
  // tick() has nothing to do before this (TimePoint ticks; 0: tick now).
  // Set by a tick that found the group quiet; every locked path but the
  // heartbeat's sets it back to 0 (LockedOutbox), so a tick of a group with
  // nothing to do costs one atomic load and no lock.
  std::atomic<int64_t> quietUntil_{0};
  GroupPhaseMachine phase_ GUARDED_BY(mu_);
  layout::GroupSettings settings_ GUARDED_BY(mu_);
  std::string settingsData_ GUARDED_BY(mu_);  // the group znode's data, rewritten as is to move the version
  int32_t version_ GUARDED_BY(mu_) = -1;       // the generation
  // Sorted: a registration lists them in order. Found by a hash (NameMap).
  NameMap<Member> members_ GUARDED_BY(mu_);
  // No member can time out before this: the liveness scan skips the group
  // until then (heartbeats only move lastSeen later; members join with
  // lastSeen = now), or until the member count changes.
  TimePoint nextLivenessScan_ GUARDED_BY(mu_);
  size_t membersAtScan_ GUARDED_BY(mu_) = 0;
  TimePoint emptySince_ GUARDED_BY(mu_);
  bool hadMembers_ GUARDED_BY(mu_) = false;  // a member joined since this server took the group
  TimePoint lastBatchAt_ GUARDED_BY(mu_);
  int failedBatches_ GUARDED_BY(mu_) = 0;

  // Waiting for the next membership transaction, and in flight in it.
  OpQueue<std::map<std::string, Join>> joins_ GUARDED_BY(mu_);
  OpQueue<std::map<std::string, Removal>> removals_ GUARDED_BY(mu_);
  OpQueue<std::vector<Rejoin>> rejoins_ GUARDED_BY(mu_);
  OpQueue<std::vector<OffsetWrite>> rewinds_ GUARDED_BY(mu_);
  PendingFlag bump_ GUARDED_BY(mu_);  // move the generation (a subscribed topic changed)
  std::vector<Deletion> deletions_ GUARDED_BY(mu_);
  // Commits: their own transactions, one in flight at a time.
  OpQueue<std::vector<OffsetWrite>> commits_ GUARDED_BY(mu_);

  // Rebalance history (docs/design.md, "Rebalance history").
  RebalanceHistory history_ GUARDED_BY(mu_);
  bool historyExists_ GUARDED_BY(mu_) = false;  // the history znode, as last read or written
  bool historyCreating_ GUARDED_BY(mu_) = false;  // the transaction in flight creates it
  std::vector<protocol::RebalanceEvent> batchEvents_ GUARDED_BY(mu_);  // what the one in flight makes true
  // Events of a generation move asked for outside the queues (a topic
  // change, new metadata, a client-mode takeover), waiting for the next
  // transaction, and those of the one in flight.
  std::vector<protocol::RebalanceEvent> waitingEvents_ GUARDED_BY(mu_);
  std::vector<protocol::RebalanceEvent> waitingEventsInFlight_ GUARDED_BY(mu_);
  std::map<std::string, int32_t> knownPartitions_ GUARDED_BY(mu_);  // topic counts of the current target
  std::optional<AssignedAhead> ahead_ GUARDED_BY(mu_);              // assignAhead()'s result
  std::map<std::string, Removed> removedFrom_ GUARDED_BY(mu_);      // by "host:port"

  // Client mode: members registered at the current generation, and when it
  // was reached (a member not registered one session timeout later is evicted).
  size_t registeredAtCurrent_ GUARDED_BY(mu_) = 0;
  TimePoint movedAt_ GUARDED_BY(mu_);

  Ownership ownership_ GUARDED_BY(mu_);
  CommittedOffsets committed_ GUARDED_BY(mu_);
  // After a failed read of the committed offsets, none is tried again
  // before this (the delay doubles while reads keep failing).
  TimePoint offsetsRetryAt_ GUARDED_BY(mu_);
  Millis offsetsRetryDelay_ GUARDED_BY(mu_){0};
  int32_t rewoundAt_ GUARDED_BY(mu_) = -1;  // generation of the last rewind: older commits are fenced

  // The group znode's child version as last read (see layout::HandoverRecord).
  int32_t groupCversion_ GUARDED_BY(mu_) = -1;
  struct PendingHandover {
    int32_t from = -1;
    int32_t to = -1;
    TimePoint since;
    HandoverDone done;
    // The transaction's answer was lost: until a re-read says whether the
    // controller znode is still ours, nothing is granted.
    bool verifying = false;
  };
  std::optional<PendingHandover> handover_ GUARDED_BY(mu_);
  // What waiting requests are answered when a continuation says the group
  // is gone.
  protocol::ErrorCode goneAnswer_ GUARDED_BY(mu_) = protocol::ErrorCode::UNKNOWN_GROUP;
};

}  // namespace groupcoord::adapter
