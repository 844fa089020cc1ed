#pragma once

// One controlled group as pure state (docs/design.md, "The group model"):
// its settings, its members each in an explicit state, who holds which
// partition, the committed offsets, the rebalance history and what waits
// to be written. No ZooKeeper, no lock, no clock: time comes in as an
// argument, answers go into an Outbox the caller runs, and what is to be
// written is handed out as data (launchBatch(), handoverRecord()) for the
// caller to turn into ZooKeeper operations (GroupZkOps.h).
//
// GroupController wraps one: it holds the lock, the phase of the I/O in
// flight, and the ZooKeeper calls. Its tests drive the model directly.
//
// GroupModel.cpp holds the requests, liveness and DescribeGroup;
// GroupModelApply.cpp what ZooKeeper said (a read, a transaction applied,
// a takeover) and the assignment; GroupEvents.cpp the history.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapter/Assignment.h"
#include "adapter/Clock.h"
#include "adapter/GroupBatch.h"
#include "adapter/GroupOps.h"
#include "adapter/History.h"
#include "adapter/MemberLists.h"
#include "adapter/NameMap.h"
#include "adapter/OffsetStore.h"
#include "adapter/OpQueue.h"
#include "adapter/Outbox.h"
#include "adapter/Ownership.h"
#include "adapter/PartitionSource.h"
#include "common/Layout.h"
#include "protocol/Handler.h"

namespace groupcoord::adapter {

// A moment, as the model is given it: the monotonic time every decision
// uses, and the wall clock for what people read (event and join times).
struct Instant {
  TimePoint now;
  int64_t wallMs = 0;
};

// A member's state, relative to the current generation.
enum class MemberState : uint8_t {
  Unregistered,  // not registered at the current generation (found in ZooKeeper, or it moved since)
  Registered,    // registered at it: in server mode it holds what it was granted
  Leaving,       // its leave or eviction is queued or being written
};
std::string_view toString(MemberState s);

// Why a group cannot take a request now, as its controller knows it.
struct Serving {
  bool idle = true;       // no membership write or read of its own in flight
  bool connected = true;  // the ZooKeeper session is up
};

struct AssignedAhead;

class GroupModel {
 public:
  struct Member {
    std::string clientId;
    TimePoint lastSeen;
    std::string host;  // "" until it is heard from (members found in ZooKeeper)
    uint16_t port = 0;
    int64_t joinedAtMs = -1;  // wall clock; -1 for members found in ZooKeeper
    std::string metadata;     // RegisterConsumer v1
    std::string rack;
    MemberState state = MemberState::Unregistered;
    int32_t registeredAt = -1;  // the generation it last registered at
    // The generation at which what the controller records it holding is
    // what its client holds: its registration's answer gave it all of it,
    // or its heartbeat at that generation released what the answer left
    // out (a partition it reported outside its target); -1: not known.
    int32_t recordExactAt = -1;
    // The generation it was last heard at: registered at it, or heartbeated
    // with it (inStep()).
    int32_t heardAt = -1;
    // Ownership::epoch() when a heartbeat last found it in sync; 0: not known.
    uint64_t inSyncAt = 0;
    // The newest connection it registered on (Caller::connection); 0: none
    // known (found in ZooKeeper).
    uint64_t connection = 0;
  };
  // One connection's last member found by heartbeat(): used while the
  // member map is unchanged since (no member joined or left, so the
  // element is where it was).
  struct MemberCache {
    uint64_t version = 0;  // the member map's version when filled; 0: empty
    std::string id;
    Member* member = nullptr;
  };

  GroupModel(std::string name, int32_t serverId, const PartitionSource& topics, TimePoint created);
  GroupModel(const GroupModel&) = delete;
  GroupModel& operator=(const GroupModel&) = delete;

  const std::string& name() const { return name_; }
  const layout::GroupSettings& settings() const { return settings_; }
  const std::string& settingsData() const { return settingsData_; }
  int32_t generation() const { return version_; }
  // A Kafka group's generation moved by its own transaction
  // (GroupController::writeKafka): the group znode's new version.
  void kafkaGenerationMoved(int32_t version) { version_ = version; }
  bool clientMode() const { return settings_.mode == protocol::AssignmentMode::CLIENT; }
  const NameMap<Member>& members() const { return members_; }
  const Member* member(std::string_view id) const;
  const Ownership& ownership() const { return ownership_; }
  const CommittedOffsets& committed() const { return committed_; }
  const RebalanceHistory& history() const { return history_; }
  MembershipBatch& batch() { return batch_; }
  const MembershipBatch& batch() const { return batch_; }
  // Joins coalesce (docs/design.md, "Coalesced joins"): while the group
  // forms (nobody in it yet) or its membership is moving (a change in
  // flight, or one applied within `cap`), new members wait `window` after
  // the latest join, at most `cap` after the first. A join into a group at
  // rest goes out at once. 0: no wait.
  void coalesceJoins(Millis window, Millis cap) {
    joinWindow_ = window;
    joinWindowMax_ = cap;
  }
  // When the joins waiting may go out (a time point in the past when none waits).
  TimePoint joinsDueAt() const { return batch_.joinsDueAt(joinWindowMax_); }
  // The members have what this generation gives them: in server mode each
  // holds its whole target, in client mode all registered at it.
  bool settled() const;
  // Settled, every member heard at the current generation (registered at
  // it, or heartbeated with it), and no membership change waiting or in
  // flight: the server's heartbeat figures by group motion.
  bool inStep() const;

  // ---- Requests (docs/protocol.md); the caller has checked the phase ----
  // A heartbeat of a group being served. `moved`: set when it changed who
  // holds what (the group's state may have changed).
  // The common case (the connection's member, in sync at this generation,
  // nothing about ownership changed since) is answered inline, below.
  protocol::HeartbeatResponse heartbeat(const protocol::HeartbeatView& r, const protocol::Caller& caller,
                                        TimePoint now, MemberCache* cache, bool* moved);
  // A held heartbeat looked at again (docs/design.md, "Held heartbeats"):
  // the answer it gets now, as heartbeat() gives it, except that the
  // member's last-seen time stays what its arrival made it.
  protocol::HeartbeatResponse recheck(const protocol::HeartbeatView& r, const protocol::Caller& caller, TimePoint now,
                                      bool* moved);
  // Members with something newly grantable since the last call
  // (Ownership::takeFreedFor).
  std::vector<std::string> takeFreedFor() { return ownership_.takeFreedFor(); }
  // A heartbeat of `memberId` heard while the server cannot answer it
  // (the session lease or the stall rule): the member is alive, so its
  // silence does not start (docs/design.md, "The session lease", "Heard,
  // not answered"). Grants nothing. False when no such member is in.
  bool heard(std::string_view memberId, TimePoint now);
  // INVALID_REQUEST for metadata or a rack a registration may not carry.
  protocol::ErrorCode checkRegistration(const protocol::RegisterConsumerRequest& r, size_t maxMetadataBytes) const;
  enum class Registration {
    Refused,   // answered with an error
    Answered,  // a member already in, answered at the current generation
    Rejoined,  // a member already in, answered after what is pending is written
    Joining,   // a new member, answered once its znode is written
  };
  // A registration of `id` (chosen by the caller when the request had
  // none) while the group is served.
  Registration registerMember(const protocol::RequestHeader& h, protocol::RegisterConsumerRequest& r,
                              const std::string& id, const protocol::Caller& caller, Instant at, Serving s,
                              protocol::ResponseCallback& done, Outbox& out);
  // Registrations refused because they came on an older connection than
  // the member's last one.
  uint64_t staleRegistrations() const { return staleRegistrations_; }
  // A LeaveGroup while the group is served; true when a removal was queued.
  bool leave(const protocol::LeaveGroupRequest& r, bool connected, protocol::ResponseCallback& done, Outbox& out);
  // NONE when the group may be deleted (nobody in it or joining).
  protocol::ErrorCode deletable() const;
  void queueDeletion(protocol::ResponseCallback done) { deletions_.push_back(Deletion{std::move(done)}); }
  bool deletionWaiting() const { return !deletions_.empty(); }
  void answerDeletions(protocol::ErrorCode e, Outbox& out);
  // CommitOffsets and RewindConsumer, given why the group cannot take a
  // write now (NONE when it can): true when something was queued.
  bool commit(const protocol::CommitOffsetsRequest& r, protocol::ErrorCode refusal, TimePoint now,
              protocol::ResponseCallback& done, Outbox& out);
  bool rewind(const protocol::RewindConsumerRequest& r, protocol::ErrorCode refusal, const std::string& user,
              protocol::ResponseCallback& done, Outbox& out);
  OpQueue<std::vector<OffsetWrite>>& commits() { return commits_; }
  // DescribeGroup's answer in `state`, as of `at`.
  protocol::DescribeGroupResponse describe(const protocol::Broker& self, protocol::GroupState state,
                                           Instant at) const;

  // ---- Liveness and topics ----
  // Queues the removal of members silent for a session timeout (and, in
  // client mode, of members not registered at the generation within one);
  // returns how many were queued.
  size_t scanLiveness(TimePoint now);
  // The next time scanLiveness() may find something (`now` while a removal waits).
  TimePoint nextLivenessScan() const { return nextLivenessScan_; }
  // An ephemeral group with nobody in it, nobody joining, and either a
  // member that was there and went, or none within a session timeout.
  bool abandoned(TimePoint now) const;
  // A subscribed topic changed: true when the assignment would change (a
  // generation move is then queued).
  bool topicChanged(const std::string& topic, Instant at);

  // ---- Writes: what the next transaction carries, and its outcome ----
  // Nothing accepted waits for a write or is in flight.
  bool quiet() const;
  // The next membership transaction, launched.
  struct Launched {
    std::vector<std::string> removed;
    std::vector<std::pair<std::string, std::string>> joined;  // id, client id
    std::vector<protocol::PartitionOffset> rewound;
    layout::HistoryRecord history;  // the history znode as it will read
    bool createsHistory = false;
    size_t changes = 0;
    // false: a slice, the member znodes of joins only, written without
    // moving the generation (GroupBatch.h); the last transaction moves it.
    bool moves = true;
  };
  Launched launchBatch(size_t maxChanges, Instant at);
  // The slice in flight was applied.
  void sliceWritten() { batch_.sliceWritten(); }
  // Nothing to write: re-registrations waiting are answered at the
  // current generation.
  void answerRejoins(TimePoint now, Outbox& out);
  // The transaction moved the generation to `version`.
  struct Applied {
    int32_t from = -1;
    size_t joined = 0, left = 0, evicted = 0, rewinds = 0;
  };
  Applied applyBatch(int32_t version, Instant at, std::optional<AssignedAhead> ahead, Outbox& out);
  // An ephemeral group whose last member went, with nothing to write.
  bool emptiedOut() const;
  // It did not happen, or may not have: what was in it waits again.
  void requeueBatch() { batch_.requeue(); }
  // It failed for good or its outcome is unknown: its waiters are answered.
  void failBatch(protocol::ErrorCode e, Outbox& out, bool retryMove);
  // The history of a write that carries no membership change (a handover).
  layout::HistoryRecord historyRecord(const std::vector<protocol::RebalanceEvent>& next) const;
  bool historyExists() const { return historyExists_; }
  int32_t groupCversion() const { return groupCversion_; }

  // ---- Offsets ----
  void offsetsLoaded(OffsetsRead r);
  void offsetsInDoubt() { committed_.loaded = false; }
  // Commits made durable.
  size_t commitsApplied(Outbox& out);

  // ---- Loading (a claim, or a re-read after a doubt) ----
  struct Read {
    std::string settingsData;
    int32_t version = -1;
    int32_t cversion = -1;
    std::vector<std::string> members;       // the member znodes
    std::optional<std::string> history;     // the history znode, when there is one
    std::optional<std::string> handover;    // the members znode's data: first load only
  };
  struct Loaded {
    bool ok = false;                  // false: the settings could not be read
    std::vector<std::string> adopt;   // member znodes to create again (a handover)
    std::vector<std::string> topics;  // topics to watch (first load)
  };
  Loaded applyRead(Read read, bool first, Instant at, Outbox& out);

  // ---- Handover (docs/design.md, "Handover") ----
  layout::HandoverRecord handoverRecord(int32_t from, int32_t to, size_t maxChanges) const;

  // ---- Assignment ----
  struct AssignmentInputs {
    std::vector<std::string> ids;  // sorted
    std::map<std::string, int32_t> counts;
    Assignment held;  // sticky to this
    RackInfo racks;
  };
  // A big group's assignment after the transaction in flight (its removals
  // gone, its joins in), to compute without the lock; nullopt when the
  // group is small enough to compute under it.
  std::optional<AssignmentInputs> inputsAfterBatch() const;

  // ---- Answers to everything waiting ----
  void answerAll(protocol::ErrorCode e, Outbox& out);
  // Queued commits (not in flight) refused; how many.
  size_t refuseQueuedCommits(protocol::ErrorCode e, Outbox& out);
  // Nothing waiting will be sent (handover): waiters answered `e`.
  void answerQueued(protocol::ErrorCode e, Outbox& out);
  void clearMembers() { members_.clear(); }

 private:
  struct Removed {  // a member removed lately, by the address it connected from
    std::string id;
    std::string clientId;
    TimePoint at;
  };
  protocol::RegisterConsumerResponse registration(const std::string& member, TimePoint now, const Registrant& form);
  // The client-mode member list at the current generation, shared.
  std::shared_ptr<const MemberLists::List> memberList();
  OffsetWrite checkOffsets(const std::vector<protocol::PartitionOffset>& offsets, const std::string* owner) const;
  void markRegistered(Member& m);
  // Members' states (and the client-mode count) made true again after a
  // generation move or the end of removals.
  void restate();
  void generationMoved(TimePoint now);
  void queueRemoval(const std::string& id, Removal rm);
  void rememberRemoved(const std::string& id, const Member& m, TimePoint now);
  Assignment heldNow() const;
  AssignmentInputs inputsNow() const;
  void retarget(std::optional<AssignedAhead> ahead);
  // The ahead assignment's inputs are still what the group is now.
  bool stillHolds(const AssignmentInputs& in) const;
  // GroupEvents.cpp
  protocol::RebalanceEvent event(protocol::RebalanceReason reason, std::string detail, int64_t wallMs) const;
  void recordNow(std::vector<protocol::RebalanceEvent> events);
  std::vector<protocol::RebalanceEvent> batchEvents(int64_t generation, int64_t wallMs) const;
  std::vector<protocol::RebalanceEvent> topicEvents(int64_t wallMs) const;
  void logAndCount(const std::vector<protocol::RebalanceEvent>& events) const;
  void recordTakeover(protocol::RebalanceReason reason, int32_t from, int64_t wallMs);
  // A heartbeat (version 2) from an older generation that this one's move
  // left as it was: answered NONE at the current generation, no
  // registration needed (docs/protocol.md §21).
  bool keepsItsPartitions(const protocol::HeartbeatView& r, const Member& m, TimePoint now) const;
  protocol::HeartbeatResponse heartbeatChecked(const protocol::HeartbeatView& r, const protocol::Caller& caller,
                                               TimePoint now, MemberCache* cache, bool* moved);
  // GroupModelApply.cpp
  bool takeOver(const Read& read, Instant at, int32_t lastWriter, std::vector<std::string>& adopt);

  const std::string name_;
  const int32_t serverId_;
  const PartitionSource& topics_;

  layout::GroupSettings settings_;
  std::string settingsData_;  // the group znode's data, rewritten as is to move the version
  int32_t version_ = -1;      // the generation
  int32_t groupCversion_ = -1;  // the group znode's child version as last read (layout::HandoverRecord)
  NameMap<Member> members_;   // sorted: a registration lists them in order
  // No member can time out before this (heartbeats only move lastSeen
  // later; members join with lastSeen = now), or until the count changes.
  TimePoint nextLivenessScan_;
  size_t membersAtScan_ = 0;
  // Registrations of ids that are not members, by when last heard: what
  // they reported holding is freed if they never become members.
  std::map<std::string, TimePoint> unjoinedHeard_;
  TimePoint emptySince_;
  bool hadMembers_ = false;  // a member joined since this server took the group
  size_t registeredAtCurrent_ = 0;  // members registered at the current generation
  size_t heardAtCurrent_ = 0;       // members heard at the current generation (Member::heardAt)
  TimePoint movedAt_;               // when it was reached
  uint64_t metadataChanges_ = 0;    // a member's metadata or rack changed (lists_)
  MemberLists lists_;               // client mode, version-2 answers
  bool movedHere_ = false;          // this model's own transaction reached the current generation

  MembershipBatch batch_;
  Millis joinWindow_{0};
  Millis joinWindowMax_{0};
  std::optional<TimePoint> membershipMovedAt_;  // the last transaction with a join or a removal applied
  std::vector<Deletion> deletions_;
  OpQueue<std::vector<OffsetWrite>> commits_;  // their own transactions, one in flight at a time

  RebalanceHistory history_;
  bool historyExists_ = false;                   // the history znode, as last read or written
  std::map<std::string, int32_t> knownPartitions_;  // topic counts of the current target
  std::map<std::string, Removed> removedFrom_;   // by "host:port"

  Ownership ownership_;
  CommittedOffsets committed_;
  int32_t rewoundAt_ = -1;  // generation of the last rewind: older commits are fenced
  // The oldest generation a version-2 heartbeat may be kept from: the last
  // one found by a read rather than moved here (docs/protocol.md §21).
  int32_t keptFrom_ = -1;
  uint64_t staleRegistrations_ = 0;
};

// Inline because it is most of the traffic (docs/design.md, "Heartbeats"):
// every other case, and the first heartbeat on a connection, takes
// heartbeatChecked() (GroupModel.cpp), which gives the same answer here.
inline protocol::HeartbeatResponse GroupModel::heartbeat(const protocol::HeartbeatView& r,
                                                         const protocol::Caller& caller, TimePoint now,
                                                         MemberCache* cache, bool* moved) {
  if (cache != nullptr && cache->version == members_.version() && r.generation == version_ &&
      cache->id == r.consumerId) {
    Member& m = *cache->member;
    if (m.inSyncAt == ownership_.epoch() && m.state != MemberState::Leaving && m.port != 0 && !clientMode() &&
        !ownership_.inGrace(now)) {
      m.lastSeen = now;
      return protocol::HeartbeatResponse{version_, protocol::ErrorCode::NONE};
    }
  }
  return heartbeatChecked(r, caller, now, cache, moved);
}

// A big group's next assignment, computed while its transaction is in
// flight (docs/design.md, "Assignment").
struct AssignedAhead {
  int32_t from = -1;  // the generation the transaction moves from
  GroupModel::AssignmentInputs inputs;
  Assignment target;
  double tookMs = 0;
  size_t moves = 0;  // partitions the target gives to another member than inputs.held's
};

}  // namespace groupcoord::adapter
