#pragma once

// One group controlled by this server (docs/design.md, "A controlled
// group"): the thin shell around its GroupModel (GroupModel.h: members,
// generation, ownership, offsets, history, what waits to be written). It
// holds the lock, the phase machine (GroupPhase.h: what I/O is in flight,
// and the handover), the state clients see, and the ZooKeeper calls built
// by GroupZkOps.h.
//
// Membership changes (joins, leaves, evictions, rewinds, a generation move
// for a topic change) are batched: what arrives while a transaction is in
// flight, or within one batch interval, goes out in the next transaction,
// which also moves the generation (the group znode's version). Commits go
// in transactions of their own, beside the membership ones. Requests are
// answered from memory whatever the phase, except while loading.
//
// Threads: requests come from I/O threads, ZooKeeper answers on the
// completion thread, tick() from the ticker. Lock: mu_ guards everything
// below it. It is taken after the coordinator's table and registry locks
// are released, and it is the only lock held while a ZooKeeper operation is
// issued (the client never calls back inline). Answers are queued in a
// LockedOutbox and run after mu_ is released.
//
// GroupController.cpp holds the requests and the ticks; GroupWrites.cpp
// the ZooKeeper reads and transactions, the handover among them.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/Options.h"
#include "adapter/Clock.h"
#include "adapter/GroupModel.h"
#include "adapter/GroupPhase.h"
#include "adapter/GroupZkOps.h"
#include "adapter/OffsetStore.h"
#include "adapter/Outbox.h"
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
  // Joins coalesce (docs/design.md, "Coalesced joins"): new members wait
  // this long after the latest join for more, and at most joinWindowMax
  // after the first, before they go out and move the generation. 0 (here):
  // no wait; groupcoordd's defaults are 100 ms and 3 s (server/Config.h).
  Millis joinWindow{0};
  Millis joinWindowMax{0};
  // Largest member metadata a registration may carry; larger is INVALID_REQUEST.
  size_t maxMetadataBytes = options::defaultInt("group.max.metadata.bytes");
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
  // The session lease holds and no stall is suspected (docs/design.md, "The
  // session lease"): a held heartbeat is answered NONE only then. Unset:
  // always.
  std::function<bool(TimePoint now)> answersFromMemory;
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
  // (one connection's), a member that heartbeats again while nobody
  // joined or left is found without a lookup.
  using MemberCache = GroupModel::MemberCache;
  protocol::HeartbeatResponse heartbeat(const protocol::HeartbeatView& r, const protocol::Caller& caller,
                                        TimePoint now, MemberCache* cache = nullptr) EXCLUDES(mu_);
  // Heartbeat version 1 with a wait (docs/design.md, "Held heartbeats"):
  // answered at once when its answer is news or the group cannot hold it;
  // else held until its answer would differ, for `wait` (at most a third of
  // the group's session timeout), or until another request comes on its
  // connection (releaseHeld).
  void heartbeatHeld(const protocol::HeartbeatView& r, const protocol::Caller& caller, TimePoint now, Millis wait,
                     protocol::ResponseCallback done) EXCLUDES(mu_);
  // Another request came on `connection`: a heartbeat held from it is
  // answered now, so that the answers behind it on that connection do not
  // wait (the server answers a connection's requests in order).
  void releaseHeld(uint64_t connection) EXCLUDES(mu_);
  // Every held heartbeat answered now (the server is shutting down).
  void releaseAllHeld() EXCLUDES(mu_);
  size_t heldCount() const EXCLUDES(mu_);
  // Served here, not being handed over, and in step (GroupModel::inStep):
  // the server's heartbeat figures by group motion.
  bool inStep() const EXCLUDES(mu_);
  // A heartbeat the coordinator answers CONTROLLER_NOT_AVAILABLE without
  // asking the group (no lease): its member still counts as heard.
  void heard(std::string_view memberId, TimePoint now) EXCLUDES(mu_);
  void registerMember(const protocol::RequestHeader& h, protocol::RegisterConsumerRequest r,
                      protocol::ResponseCallback done, const protocol::Caller& caller = {}) EXCLUDES(mu_);
  void leave(const protocol::LeaveGroupRequest& r, protocol::ResponseCallback done) EXCLUDES(mu_);
  void deleteGroup(const protocol::DeleteGroupRequest& r, protocol::ResponseCallback done) EXCLUDES(mu_);
  void commit(const protocol::CommitOffsetsRequest& r, protocol::ResponseCallback done) EXCLUDES(mu_);
  void rewind(const protocol::RewindConsumerRequest& r, protocol::ResponseCallback done,
              const protocol::Caller& caller = {}) EXCLUDES(mu_);
  // Whether the group is a Kafka group (docs/kafka.md); nullopt until its
  // settings have been read, and once it is being deleted or dropped.
  std::optional<bool> kafkaGroup() const EXCLUDES(mu_);
  // A Kafka group's generation: the group znode's version as this
  // controller knows it; nullopt while memory is not known to match
  // ZooKeeper (loading, re-reading), being handed over, or dropped.
  std::optional<int32_t> kafkaGeneration() const EXCLUDES(mu_);
  // A Kafka group's member znodes (docs/kafka.md, "How Kafka groups live"):
  // `memberOps` in one transaction with `moves` setData of the group znode
  // from `version` (each moves the generation by one), or with a check of
  // `version` when `moves` is 0, so nothing is written if anybody else
  // wrote the group since the Kafka side knew it at `version`.
  // `done` (without the lock) gets the version after it, or nullopt and
  // why not: `busy` with a write of its own (try again), or the
  // transaction failed (the group is then read again).
  using KafkaWritten = std::function<void(std::optional<int32_t> version, bool busy, std::string why)>;
  void writeKafka(std::vector<zk::Op> memberOps, int32_t version, int moves, KafkaWritten done) EXCLUDES(mu_);
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
  using HandoverResult = adapter::HandoverResult;
  using HandoverDone = adapter::HandoverDone;
  // Starts handing the group over to server `to`: new registrations, leaves,
  // commits, rewinds and deletions answer CONTROLLER_NOT_AVAILABLE (the
  // member retries, and finds the next controller), heartbeats are still
  // answered, and what was accepted before is written first. Then one
  // transaction records who holds which partition (so the next controller
  // grants the rest at once) and removes this server's controller znode.
  // `done` runs once, without the lock. False, and `done` never runs, when
  // the group is not serving or is already being handed over.
  bool handOver(int32_t self, int32_t to, HandoverDone done) EXCLUDES(mu_);

  // ---- Introspection ----
  int64_t generation() const EXCLUDES(mu_);
  std::vector<std::string> memberIds() const EXCLUDES(mu_);
  size_t memberCount() const EXCLUDES(mu_);
  GroupPhase phase() const EXCLUDES(mu_);
  std::vector<protocol::RebalanceEvent> history() const EXCLUDES(mu_);

 private:
  Instant at() const { return Instant{ctx_.time.now(), ctx_.time.wallMs()}; }
  zkops::GroupPaths paths() const { return zkops::GroupPaths{ctx_.layout, name_}; }
  // Why a write cannot proceed now (NONE when it can).
  protocol::ErrorCode writeRefusal() const REQUIRES(mu_);
  // The state clients see, from the phase and the model: set after every
  // locked change (checked and logged by VisibleState).
  void noteState() REQUIRES(mu_);
  // A heartbeat's answer under the lock: the model's while the group is
  // served, else the phase's.
  protocol::HeartbeatResponse heartbeatLocked(const protocol::HeartbeatView& r, const protocol::Caller& caller,
                                              TimePoint now, MemberCache* cache, bool* moved) REQUIRES(mu_);
  // Held heartbeats whose answer would now differ from the one they were
  // held with, or whose time is up, answered. After every locked change.
  void wakeHeld(TimePoint now, Outbox& out) REQUIRES(mu_);
  struct HeldBeat {
    std::string group;
    std::string consumerId;
    int64_t generation = -1;
    int16_t version = 1;  // the request's: version 2 may take a new generation
    protocol::Caller caller;
    protocol::ErrorCode answer = protocol::ErrorCode::NONE;  // what it was held with
    TimePoint until;
    protocol::ResponseCallback done;
  };
  using HeldMap = std::map<std::string, HeldBeat, std::less<>>;
  // Answers it with what it gets at `now`, and forgets it.
  // `known`: its answer, looked at again just now under the lock.
  void answerHeld(HeldMap::iterator it, TimePoint now, Outbox& out,
                  const protocol::HeartbeatResponse* known = nullptr) REQUIRES(mu_);
  // When the next tick may have something to do; `now` when it may now.
  TimePoint nextTickDue(TimePoint now) const REQUIRES(mu_);
  // A big group's next assignment, computed on the completion thread
  // without the lock once its membership transaction is written, before
  // the transaction is applied under the lock.
  void assignAhead() EXCLUDES(mu_);

  // GroupWrites.cpp. Each continuation gets the result and the number of
  // ops it was for, and returns why the group is gone (it is then dropped,
  // after the lock) or nullptr.
  template <class Result>
  using Continuation = const char* (GroupController::*)(Result, size_t opCount, Outbox&);
  // A completion for a ZooKeeper operation of this group: bound to the
  // session, it runs the continuation under the lock unless the group was
  // dropped meanwhile, then drops the group if it says so. (A member
  // pointer, not a lambda: the analysis of a lambda's body cannot see the
  // lock its caller holds.)
  template <class Result>
  std::function<void(Result)> completion(Continuation<Result> continuation, size_t opCount = 0);
  struct Loaded {
    zk::GetResult group;
    zk::ChildrenResult members;
    zk::GetResult handover;       // the members znode's data: read by the first load only
    zk::ExistsResult controller;  // read while a handover's outcome is unknown
    zk::GetResult history;        // the history znode
  };
  void reload() REQUIRES(mu_);
  const char* onReloaded(Loaded read, size_t, Outbox& out) REQUIRES(mu_);
  void flush(Outbox& out) REQUIRES(mu_);
  void writeBatch() REQUIRES(mu_);
  const char* onBatchDone(zk::MultiResult r, size_t opCount, Outbox& out) REQUIRES(mu_);
  void removeSubtree() REQUIRES(mu_);
  const char* onSubtreeListed(OffsetsListing listing, size_t, Outbox& out) REQUIRES(mu_);
  const char* onSubtreeRemoved(zk::MultiResult r, size_t opCount, Outbox& out) REQUIRES(mu_);
  void loadOffsets() REQUIRES(mu_);
  const char* onOffsetsLoaded(OffsetsRead r, size_t, Outbox& out) REQUIRES(mu_);
  void flushCommits() REQUIRES(mu_);
  const char* onCommitsDone(zk::MultiResult r, size_t, Outbox& out) REQUIRES(mu_);
  void onKafkaWritten(const zk::MultiResult& r, int32_t version, int moves, size_t opCount,
                      const KafkaWritten& done) EXCLUDES(mu_);
  void adoptMembers(const std::vector<std::string>& ids) REQUIRES(mu_);
  const char* onAdopted(zk::MultiResult r, size_t count, Outbox& out) REQUIRES(mu_);
  void maybeHandOver(TimePoint now, Outbox& out) REQUIRES(mu_);
  const char* onHandedOver(zk::MultiResult r, size_t opCount, Outbox& out) REQUIRES(mu_);
  const char* checkHandedOver(const zk::ExistsResult& controller, Outbox& out) REQUIRES(mu_);
  void endHandover(bool ok, std::string why, Outbox& out) REQUIRES(mu_);

  GroupContext& ctx_;
  const std::string name_;

  mutable Mutex mu_;
  // tick() has nothing to do before this (TimePoint ticks; 0: tick now).
  // Set by a tick that found the group quiet; every locked path but the
  // heartbeat's sets it back to 0 (LockedOutbox), so a tick of a group with
  // nothing to do costs one atomic load and no lock.
  std::atomic<int64_t> quietUntil_{0};
  GroupPhaseMachine phase_ GUARDED_BY(mu_);
  VisibleState state_ GUARDED_BY(mu_);
  GroupModel model_ GUARDED_BY(mu_);
  TimePoint lastBatchAt_ GUARDED_BY(mu_);
  int failedBatches_ GUARDED_BY(mu_) = 0;  // refused transactions in a row
  std::optional<AssignedAhead> ahead_ GUARDED_BY(mu_);  // assignAhead()'s result
  // After a failed read of the committed offsets, none is tried again
  // before this (the delay doubles while reads keep failing).
  TimePoint offsetsRetryAt_ GUARDED_BY(mu_);
  Millis offsetsRetryDelay_ GUARDED_BY(mu_){0};
  // Heartbeats held (heartbeatHeld), by member, and by when each is due.
  HeldMap held_ GUARDED_BY(mu_);
  std::multimap<TimePoint, std::string> heldUntil_ GUARDED_BY(mu_);
  // What the held answers were decided on: a generation move, or a
  // client-mode group's barrier passing, looks at every one of them again.
  int32_t heldGeneration_ GUARDED_BY(mu_) = -1;
  bool heldSettled_ GUARDED_BY(mu_) = false;
  // What waiting requests are answered when a continuation says the group
  // is gone.
  protocol::ErrorCode goneAnswer_ GUARDED_BY(mu_) = protocol::ErrorCode::UNKNOWN_GROUP;
};

}  // namespace groupcoord::adapter
