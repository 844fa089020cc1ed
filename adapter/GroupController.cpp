// A controlled group's requests, liveness and assignment. Its ZooKeeper
// reads and transactions are in GroupWrites.cpp.

#include "adapter/GroupController.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "adapter/Assignment.h"
#include "metrics/Coordination.h"
#include "protocol/Codec.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;
using protocol::RebalanceEvent;
using protocol::RebalanceReason;
using protocol::PartitionError;
using protocol::PartitionOffset;
using protocol::ResponseCallback;
using protocol::TopicPartition;

GroupController::GroupController(GroupContext& ctx, std::string name)
    : ctx_(ctx), name_(std::move(name)), phase_(name_) {
  MutexLock lock(mu_);
  emptySince_ = ctx_.time.now();
}

void GroupController::load() {
  LockedOutbox lk(mu_, &quietUntil_);
  reload();
}

// ---------------------------------------------------------------------------
// State shared by the requests

// The answer to a registration at the current generation: the members,
// and the member's assignment as far as it can be granted now (partitions
// another member still holds are left out until released).
protocol::RegisterConsumerResponse GroupController::registration(const std::string& member) {
  protocol::RegisterConsumerResponse r;
  r.group = name_;
  r.consumerId = member;
  r.generation = version_;
  r.members.reserve(members_.size());
  for (auto& [id, _] : members_) r.members.push_back(id);
  r.mode = settings_.mode;
  if (clientMode()) {
    // The member list is the answer, in one order for everybody (by id),
    // each with its metadata; the member is now registered at this generation.
    r.memberData.reserve(members_.size());
    for (auto& [id, m] : members_) r.memberData.push_back(protocol::MemberMetadata{id, m.metadata, m.rack});
    if (auto it = members_.find(member); it != members_.end()) markRegistered(it->second);
  } else {
    for (auto& p : ownership_.grant(member, ctx_.time.now()))
      r.partitions.push_back(PartitionOffset{p.topic, p.partition, committed_.of(p)});
  }
  r.error = ErrorCode::NONE;
  return r;
}

void GroupController::markRegistered(Member& m) {
  if (m.registeredAt == version_) return;
  m.registeredAt = version_;
  ++registeredAtCurrent_;
}

void GroupController::countRegistered() {
  registeredAtCurrent_ = 0;
  for (auto& [_, m] : members_) registeredAtCurrent_ += m.registeredAt == version_ ? 1 : 0;
}

void GroupController::generationMoved(TimePoint now) {
  movedAt_ = now;
  countRegistered();
  // Client mode evicts members that do not register in time: the liveness
  // scan must run by then.
  if (clientMode()) nextLivenessScan_ = std::min(nextLivenessScan_, now + Millis(settings_.sessionTimeoutMs));
}

// What the next membership transaction would carry.
bool GroupController::hasPendingWrites() const {
  return joins_.hasPending() || removals_.hasPending() || rewinds_.hasPending() || bump_.pending();
}

bool GroupController::leaving(const std::string& member) const {
  return removals_.pending().count(member) > 0 || removals_.inFlight().count(member) > 0;
}

// Why a write to the group cannot proceed now (NONE when it can).
ErrorCode GroupController::writeRefusal() const {
  if (phase_.get() == GroupPhase::Deleting) return ErrorCode::UNKNOWN_GROUP;
  if (!isServing(phase_.get()) || !ctx_.connected || handover_) return ErrorCode::CONTROLLER_NOT_AVAILABLE;
  return ErrorCode::NONE;
}

// Checks each offset (partition exists, offset >= 0, and, when owner is
// given, held by that member) into accepted and results.
OffsetWrite GroupController::checkOffsets(const std::vector<PartitionOffset>& offsets,
                                          const std::string* owner) const {
  OffsetWrite w;
  w.results.reserve(offsets.size());
  for (auto& o : offsets) {
    TopicPartition p{o.topic, o.partition};
    ErrorCode e = ErrorCode::NONE;
    if (!ctx_.topics.partitionExists(settings_, p)) {
      e = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
    } else if (o.offset < 0) {
      e = ErrorCode::INVALID_OFFSET;
    } else if (owner && !ownership_.owns(*owner, p)) {
      e = ErrorCode::NOT_OWNER;
    } else {
      w.accepted.push_back(o);
    }
    w.results.push_back(PartitionError{o.topic, o.partition, e});
  }
  return w;
}

// What each member holds now, sorted: stickiness is about that, not about
// what an earlier target promised (a partition nobody holds costs nothing
// to move).
Assignment GroupController::heldNow() const {
  Assignment held;
  for (auto& [id, _] : members_) {
    auto& ps = held[id] = ownership_.heldBy(id);
    std::sort(ps.begin(), ps.end());
  }
  return held;
}

// Groups at least this big get their assignment computed off the lock
// (assignAhead); smaller ones take microseconds, under it.
constexpr size_t kAssignAheadMembers = 256;
constexpr int64_t kAssignAheadPartitions = 4096;

GroupController::AssignmentInputs GroupController::inputsNow() const {
  AssignmentInputs in;
  in.held = heldNow();
  in.ids.reserve(in.held.size());
  for (auto& [id, _] : in.held) in.ids.push_back(id);
  // Members' racks (RegisterConsumer v1) against the racks of each
  // partition's replicas: in-rack placements are preferred within the
  // balance and stickiness rules; without racks nothing changes.
  for (auto& [id, m] : members_) {
    if (!m.rack.empty()) in.racks.members[id] = m.rack;
  }
  if (!in.racks.members.empty()) in.racks.replicas = ctx_.topics.replicaRacks(settings_);
  in.counts = ctx_.topics.partitionCounts(settings_);
  return in;
}

// The members, holdings and racks the transaction in flight leads to: its
// removals gone (with what they held), its joins in, holding nothing.
std::optional<GroupController::AssignmentInputs> GroupController::inputsAfterBatch() const {
  if (phase_.get() != GroupPhase::Writing || clientMode()) return std::nullopt;
  AssignmentInputs in;
  in.counts = ctx_.topics.partitionCounts(settings_);
  int64_t partitions = 0;
  for (auto& [_, n] : in.counts) partitions += std::max(n, 0);
  const auto& removed = removals_.inFlight();
  const auto& joined = joins_.inFlight();
  if (members_.size() + joined.size() < kAssignAheadMembers && partitions < kAssignAheadPartitions) {
    return std::nullopt;
  }
  for (auto& [id, m] : members_) {
    if (removed.count(id)) continue;
    auto& held = in.held[id] = ownership_.heldBy(id);
    std::sort(held.begin(), held.end());
    if (!m.rack.empty()) in.racks.members[id] = m.rack;
  }
  for (auto& [id, j] : joined) {
    in.held.try_emplace(id);
    if (!j.rack.empty()) in.racks.members[id] = j.rack;
  }
  for (auto& [id, _] : in.held) in.ids.push_back(id);
  if (!in.racks.members.empty()) in.racks.replicas = ctx_.topics.replicaRacks(settings_);
  return in;
}

// Runs on the ZooKeeper completion thread when the membership transaction
// succeeded, before its continuation takes the lock: the group answers
// heartbeats while its next assignment is computed.
void GroupController::assignAhead() {
  std::optional<AssignmentInputs> in;
  int32_t from = -1;
  {
    MutexLock lock(mu_);
    in = inputsAfterBatch();
    from = version_;
  }
  if (!in) return;
  const auto t0 = std::chrono::steady_clock::now();
  Assignment target = assignPartitions(in->ids, in->counts, in->held, in->racks);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  MutexLock lock(mu_);
  ahead_ = AssignedAhead{from, std::move(*in), std::move(target), ms};
}

void GroupController::retarget(std::optional<AssignedAhead> ahead) {
  knownPartitions_ = ctx_.topics.partitionCounts(settings_);
  if (clientMode()) {
    ownership_.setTarget({});  // the members assign; the server holds no target
    return;
  }
  AssignmentInputs in = inputsNow();
  Assignment target;
  double tookMs = 0;
  const bool usedAhead = ahead && ahead->inputs.ids == in.ids && ahead->inputs.counts == in.counts &&
                         ahead->inputs.racks == in.racks;
  if (usedAhead) {
    // Sticky to what was held when it was computed; anything released
    // since only makes it move less than it says.
    target = std::move(ahead->target);
    tookMs = ahead->tookMs;
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    target = assignPartitions(in.ids, in.counts, in.held, in.racks);
    tookMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  size_t moved = countMoves(in.held, target);
  size_t total = 0;
  for (auto& [_, ps] : target) total += ps.size();
  if (!ownership_.target().empty() || total > 0) {
    spdlog::info("group {}: generation {} assigns {} partitions over {} members ({} change owner; computed in {:.1f} "
                 "ms {})",
                 name_, version_, total, in.held.size(), moved, tookMs,
                 usedAhead ? "while the transaction was in flight" : "under the group's lock");
  }
  ownership_.setTarget(std::move(target));
}

void GroupController::answerDeletions(ErrorCode e, Outbox& out) {
  for (auto& d : deletions_) d.answer(e, name_, out);
  deletions_.clear();
}

void GroupController::answerEverything(ErrorCode e, Outbox& out) {
  joins_.answerAll(e, name_, out);
  removals_.answerAll(e, name_, out);
  rejoins_.answerAll(e, name_, out);
  answerDeletions(e, out);
  rewinds_.answerAll(e, name_, out);
  commits_.answerAll(e, name_, out);
}

// ---------------------------------------------------------------------------
// Requests

protocol::HeartbeatResponse GroupController::heartbeat(const protocol::HeartbeatRequest& r,
                                                       const protocol::Caller& caller) {
  return heartbeat(protocol::HeartbeatView{0, 0, r.group, r.consumerId, r.generation}, caller, ctx_.time.now());
}

protocol::HeartbeatResponse GroupController::heartbeat(const protocol::HeartbeatView& r,
                                                       const protocol::Caller& caller, TimePoint now,
                                                       MemberCache* cache) {
  protocol::HeartbeatResponse resp;
  MutexLock lock(mu_);
  const GroupPhase phase = phase_.get();
  if (isLoading(phase) || phase == GroupPhase::Dropped) {
    resp.generation = -1;
    resp.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    return resp;
  }
  resp.generation = version_;
  if (phase == GroupPhase::Deleting) {
    resp.error = ErrorCode::UNKNOWN_GROUP;
    return resp;
  }
  if (phase == GroupPhase::HandingOver || (handover_ && handover_->verifying)) {
    // The handover transaction is in flight, or its answer was lost: the
    // next controller may serve the group already, and it counts its
    // members' sessions from its takeover. An answer here that renews a
    // member's lease could outlast that (docs/design.md, "The session
    // lease"); the member keeps its partitions until its own timeout.
    resp.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    return resp;
  }
  Member* member = nullptr;
  if (cache != nullptr && cache->version == members_.version() && cache->id == r.consumerId) {
    member = cache->member;
  } else if (auto it = members_.find(r.consumerId); it != members_.end()) {
    member = &it->second;
    if (cache != nullptr) *cache = MemberCache{members_.version(), std::string(r.consumerId), member};
  }
  if (member == nullptr && ownership_.inGrace(now)) {
    // This server has just taken the group over, and the member may still
    // hold partitions granted by the previous controller: it is told to
    // register again (reporting what it holds) rather than that it is
    // unknown, which would make it drop everything and leave its
    // partitions waiting out the grace.
    resp.error = ErrorCode::REBALANCE_NEEDED;
  } else if (member == nullptr || ((removals_.hasPending() || removals_.hasInFlight()) &&
                                    leaving(std::string(r.consumerId)))) {
    resp.error = ErrorCode::UNKNOWN_CONSUMER;
  } else {
    member->lastSeen = now;
    if (member->port == 0 && caller.port != 0) {
      // Found in ZooKeeper (a takeover): where it connects from is learnt here.
      member->host = caller.host;
      member->port = caller.port;
    }
    if (r.generation != version_) {
      resp.error = ErrorCode::REBALANCE_NEEDED;
    } else if (clientMode()) {
      // The barrier: nobody starts on this generation before everybody has
      // registered at it (and so stopped using the previous one).
      resp.error = member->registeredAt != version_ ? ErrorCode::REBALANCE_NEEDED
                   : agreed()                          ? ErrorCode::NONE
                                                       : ErrorCode::REBALANCE_IN_PROGRESS;
    } else {
      // In sync: it has stopped using what this generation took from it.
      // Nothing about ownership changed since a heartbeat last found it so
      // (and no grace is running out): the same answer, without the checks.
      const bool grace = ownership_.inGrace(now);
      if (member->inSyncAt == ownership_.epoch() && !grace) {
        resp.error = ErrorCode::NONE;
      } else {
        const std::string id(r.consumerId);
        ownership_.releaseUntargeted(id);
        const bool due = ownership_.due(id, now);
        resp.error = due ? ErrorCode::REBALANCE_NEEDED : ErrorCode::NONE;
        member->inSyncAt = due || grace ? 0 : ownership_.epoch();
      }
    }
  }
  return resp;
}

void GroupController::registerMember(const protocol::RequestHeader& h, protocol::RegisterConsumerRequest r,
                                     ResponseCallback done, const protocol::Caller& caller) {
  LockedOutbox lk(mu_, &quietUntil_);
  const GroupPhase phase = phase_.get();
  std::string id = r.consumerId.empty() ? ctx_.newMemberId(h.clientId) : r.consumerId;
  auto refuse = [&, &out = lk.out](ErrorCode e) { Rejoin{r.consumerId, std::move(done)}.answer(e, name_, out); };
  // Being handed over: the next controller registers it (this one grants
  // nothing more, so the handover record stays true).
  if (handover_) return refuse(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  if (r.metadata.size() > ctx_.config.maxMetadataBytes || r.rack.size() > 64 ||
      (!r.rack.empty() && !protocol::isValidName(r.rack))) {
    return refuse(ErrorCode::INVALID_REQUEST);
  }
  // What the member says it holds: releases what it no longer reports and,
  // after a takeover, tells this controller who holds what.
  if (isServing(phase)) ownership_.reportOwned(id, r.owned);
  auto member = members_.find(id);
  if (phase == GroupPhase::Deleting) {
    refuse(ErrorCode::UNKNOWN_GROUP);
  } else if (!isServing(phase)) {
    refuse(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  } else if (clientMode() && h.version < 1) {
    // A version-0 answer cannot carry the member list a client-mode member needs.
    refuse(ErrorCode::UNSUPPORTED_VERSION);
  } else if (member != members_.end() && !removals_.inFlight().count(id)) {
    // Still a member: a restart within the session timeout costs no
    // rebalance. A queued eviction or leave is called off.
    member->second.lastSeen = ctx_.time.now();
    if (caller.port != 0) {
      member->second.host = caller.host;
      member->second.port = caller.port;
    }
    if (member->second.metadata != r.metadata || member->second.rack != r.rack) {
      member->second.metadata = r.metadata;
      member->second.rack = r.rack;
      if (clientMode()) {
        // Everybody must see the new metadata: a new generation.
        RebalanceEvent e = event(RebalanceReason::OTHER, "member " + id + " registered with new metadata");
        e.consumerId = id;
        e.clientId = member->second.clientId;
        e.host = member->second.host;
        waitingEvents_.push_back(std::move(e));
        bump_.request();
      }
    }
    if (auto rm = removals_.pending().find(id); rm != removals_.pending().end()) {
      rm->second.answer(ErrorCode::NONE, name_, lk.out);
      removals_.pending().erase(rm);
      spdlog::info("group {}: member {} registered again before its removal was written; it stays", name_, id);
    }
    if (!isBusy(phase) && !hasPendingWrites() && committed_.loaded) {
      lk.out.push([done = std::move(done), resp = registration(id)]() mutable { done(std::move(resp)); });
    } else {
      rejoins_.pending().push_back(Rejoin{id, std::move(done)});
    }
  } else if (!ctx_.connected) {
    refuse(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  } else {
    auto& j = joins_.pending()[id];
    j.memberId = id;
    j.clientId = h.clientId.value_or("");
    j.host = caller.host;
    j.port = caller.port;
    j.metadata = r.metadata;
    j.rack = r.rack;
    if (r.consumerId.empty() && caller.port != 0) {
      // The same connection and ClientId as a member removed within the
      // session timeout: that client again, under a new id.
      auto was = removedFrom_.find(caller.address());
      if (was != removedFrom_.end() && was->second.clientId == j.clientId &&
          ctx_.time.now() - was->second.at <= Millis(settings_.sessionTimeoutMs)) {
        j.replaces = was->second.id;
        removedFrom_.erase(was);
      }
    }
    j.waiters.push_back(std::move(done));
  }
  flush(lk.out);
}

void GroupController::leave(const protocol::LeaveGroupRequest& r, ResponseCallback done) {
  LockedOutbox lk(mu_, &quietUntil_);
  auto answer = [&out = lk.out, &done](ErrorCode e) {
    out.push([done = std::move(done), e] { done(protocol::LeaveGroupResponse{e}); });
  };
  const GroupPhase phase = phase_.get();
  if (phase == GroupPhase::Deleting) return answer(ErrorCode::UNKNOWN_GROUP);
  if (!isServing(phase) || handover_) return answer(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  if (auto j = joins_.pending().find(r.consumerId); j != joins_.pending().end()) {
    // Left before its registration was written: nothing to write.
    j->second.answer(ErrorCode::UNKNOWN_CONSUMER, name_, lk.out);
    joins_.pending().erase(j);
    answer(ErrorCode::NONE);
  } else if (!members_.count(r.consumerId) || removals_.inFlight().count(r.consumerId)) {
    answer(ErrorCode::UNKNOWN_CONSUMER);
  } else if (!ctx_.connected) {
    answer(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  } else {
    auto& rm = removals_.pending()[r.consumerId];
    rm.memberId = r.consumerId;
    rm.evicted = false;
    rm.waiters.push_back(std::move(done));
    flush(lk.out);
  }
}

void GroupController::deleteGroup(const protocol::DeleteGroupRequest& r, ResponseCallback done) {
  LockedOutbox lk(mu_, &quietUntil_);
  const GroupPhase phase = phase_.get();
  ErrorCode e = ErrorCode::NONE;
  if (isLoading(phase) || phase == GroupPhase::Dropped || phase == GroupPhase::HandingOver || !ctx_.connected ||
      handover_) {
    e = ErrorCode::CONTROLLER_NOT_AVAILABLE;
  } else if (!members_.empty() || !joins_.empty()) {
    e = ErrorCode::GROUP_NOT_EMPTY;
  }
  if (e != ErrorCode::NONE) return Deletion{std::move(done)}.answer(e, r.group, lk.out);
  deletions_.push_back(Deletion{std::move(done)});
  if (isServing(phase)) flush(lk.out);  // deletes once nothing else is in flight
}

// CommitOffsets: accepted only from the partition's holder; acknowledged
// once durable. Commits arriving while one is in flight go out together.
void GroupController::commit(const protocol::CommitOffsetsRequest& r, ResponseCallback done) {
  LockedOutbox lk(mu_, &quietUntil_);
  ErrorCode error = writeRefusal();
  if (error == ErrorCode::NONE && !members_.count(r.consumerId)) {
    error = ErrorCode::UNKNOWN_CONSUMER;
  } else if (error == ErrorCode::NONE && r.generation < rewoundAt_) {
    // Offsets were rewound after this member's generation: its commit
    // would undo the rewind.
    error = ErrorCode::REBALANCE_NEEDED;
  } else if (error == ErrorCode::NONE && clientMode()) {
    // No owner to check: a commit must come from the current, agreed generation.
    if (r.generation != version_ || members_[r.consumerId].registeredAt != version_) {
      error = ErrorCode::REBALANCE_NEEDED;
    } else if (!agreed()) {
      error = ErrorCode::REBALANCE_IN_PROGRESS;
    }
  }
  if (error != ErrorCode::NONE) {
    return lk.out.push([done = std::move(done), error] { done(protocol::CommitOffsetsResponse{{}, error}); });
  }
  members_[r.consumerId].lastSeen = ctx_.time.now();
  OffsetWrite c = checkOffsets(r.offsets, clientMode() ? nullptr : &r.consumerId);
  c.kind = OffsetWrite::Kind::Commit;
  c.done = std::move(done);
  if (c.accepted.empty()) return c.succeed(lk.out);
  commits_.pending().push_back(std::move(c));
  flushCommits();
}

// RewindConsumer: the offsets and a new generation in one transaction, so
// every member registers again and receives the rewound offsets.
void GroupController::rewind(const protocol::RewindConsumerRequest& r, ResponseCallback done,
                             const protocol::Caller& caller) {
  LockedOutbox lk(mu_, &quietUntil_);
  if (ErrorCode error = writeRefusal(); error != ErrorCode::NONE) {
    return lk.out.push([done = std::move(done), error] { done(protocol::RewindConsumerResponse{{}, error}); });
  }
  OffsetWrite w = checkOffsets(r.offsets, nullptr);
  w.kind = OffsetWrite::Kind::Rewind;
  w.user = caller.user;
  w.done = std::move(done);
  if (w.accepted.empty()) return w.succeed(lk.out);
  rewinds_.pending().push_back(std::move(w));
  flush(lk.out);
}

// ---------------------------------------------------------------------------
// From the coordinator

void GroupController::scanLiveness(TimePoint now) {
  auto timeout = Millis(settings_.sessionTimeoutMs);
  // Scanning every member on every tick would cost O(members) a tick for
  // nothing; the scan runs when the earliest possible timeout is due.
  // While a removal is pending it runs every tick, as the removal may fail
  // and leave the member in place.
  if (now < nextLivenessScan_ && members_.size() == membersAtScan_) return;
  TimePoint next = now + timeout;
  bool removing = false;
  for (auto& [id, m] : members_) {
    if (leaving(id)) {
      removing = true;
    } else if (now - m.lastSeen > timeout) {
      Removal rm;
      rm.memberId = id;
      rm.evicted = true;
      rm.silentMs = millisBetween(m.lastSeen, now);
      removals_.pending().emplace(id, std::move(rm));
      removing = true;
    } else if (clientMode() && m.registeredAt != version_ && now - movedAt_ > timeout) {
      // Heartbeating, but not registered at this generation in time: it
      // holds up everybody else's start.
      Removal rm;
      rm.memberId = id;
      rm.evicted = true;
      rm.unregistered = true;
      rm.silentMs = millisBetween(movedAt_, now);
      removals_.pending().emplace(id, std::move(rm));
      removing = true;
    } else {
      next = std::min(next, m.lastSeen + timeout);
      if (clientMode() && m.registeredAt != version_) next = std::min(next, movedAt_ + timeout);
    }
  }
  nextLivenessScan_ = removing ? now : next;
  membersAtScan_ = members_.size();
}

// A quiet group is still looked at this often, whatever it says: a safety
// net under the wake-ups of LockedOutbox.
constexpr Millis kQuietTickLimit{250};

TimePoint GroupController::nextTickDue(TimePoint now) const {
  const bool quiet = phase_.get() == GroupPhase::Idle && ctx_.connected && !hasPendingWrites() &&
                     !joins_.hasInFlight() && !removals_.hasInFlight() && !rejoins_.hasPending() &&
                     !rewinds_.hasInFlight() && !commits_.hasPending() && !commits_.hasInFlight() &&
                     deletions_.empty() && !handover_ && !(settings_.ephemeral && members_.empty());
  if (!quiet || nextLivenessScan_ <= now) return now;
  return std::min(nextLivenessScan_, now + kQuietTickLimit);
}

void GroupController::tick(TimePoint now) {
  if (now.time_since_epoch().count() < quietUntil_.load(std::memory_order_acquire)) return;
  // Not through LockedOutbox's wake-up: this tick decides quietUntil_ itself.
  LockedOutbox lk(mu_);
  const GroupPhase phase = phase_.get();
  if (phase == GroupPhase::Dropped) return;
  if (isServing(phase) && ctx_.connected) {
    scanLiveness(now);
    // An ephemeral group disappears when its last member goes, or when
    // nobody joined it within its session timeout after its creation or
    // after a takeover.
    if (settings_.ephemeral && members_.empty() && !joins_.hasPending() && !isBusy(phase) &&
        (hadMembers_ || now - emptySince_ >= Millis(settings_.sessionTimeoutMs))) {
      removeSubtree();
    }
  }
  if (needsReload(phase_.get()) && !isBusy(phase_.get()) && ctx_.connected) {
    reload();
  } else {
    flush(lk.out);
    flushCommits();
    maybeHandOver(now, lk.out);
  }
  const TimePoint due = nextTickDue(now);
  quietUntil_.store(due > now ? due.time_since_epoch().count() : 0, std::memory_order_release);
}

void GroupController::topicChanged(const std::string& topic) {
  LockedOutbox lk(mu_, &quietUntil_);
  auto& ts = settings_.topics;
  if (!isServing(phase_.get()) || std::find(ts.begin(), ts.end(), topic) == ts.end()) return;
  // The count this server first reads (after a handover, whose assignment
  // was kept) may give the same assignment: nothing to tell the members.
  const AssignmentInputs in = inputsNow();
  Assignment now = assignPartitions(in.ids, in.counts, in.held, in.racks);
  Assignment current = ownership_.target();
  for (auto* a : {&now, &current}) {
    for (auto it = a->begin(); it != a->end();) {
      std::sort(it->second.begin(), it->second.end());
      it = it->second.empty() ? a->erase(it) : std::next(it);
    }
  }
  if (now == current) return;
  spdlog::info("group {}: subscribed topic {} changed: rebalancing", name_, topic);
  for (auto& e : topicEvents()) {
    // One event per topic and move: a later change of the same topic
    // before the transaction replaces the earlier one.
    std::erase_if(waitingEvents_, [&](const RebalanceEvent& o) { return o.subject == e.subject; });
    waitingEvents_.push_back(std::move(e));
  }
  bump_.request();
  flush(lk.out);
}

size_t GroupController::refuseQueuedCommits() {
  LockedOutbox lk(mu_, &quietUntil_);
  size_t n = commits_.pending().size();
  commits_.answerPending(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, lk.out);
  return n;
}

void GroupController::answerAllWaiting(ErrorCode answer) {
  LockedOutbox lk(mu_, &quietUntil_);
  answerEverything(answer, lk.out);
}

void GroupController::drop(ErrorCode answer, const char* why) {
  LockedOutbox lk(mu_, &quietUntil_);
  if (phase_.get() == GroupPhase::Dropped) return;
  answerEverything(answer, lk.out);
  endHandover(false, why, lk.out);
  spdlog::info("group {}: no longer controlled here ({}); {} members dropped", name_, why, members_.size());
  members_.clear();
  phase_.to(GroupPhase::Dropped);
}

int64_t GroupController::generation() const {
  MutexLock lock(mu_);
  return version_;
}

std::vector<std::string> GroupController::memberIds() const {
  MutexLock lock(mu_);
  std::vector<std::string> ids;
  ids.reserve(members_.size());
  for (auto& [id, _] : members_) ids.push_back(id);
  return ids;
}

size_t GroupController::memberCount() const {
  MutexLock lock(mu_);
  return members_.size();
}

GroupPhase GroupController::phase() const {
  MutexLock lock(mu_);
  return phase_.get();
}

std::vector<RebalanceEvent> GroupController::history() const {
  MutexLock lock(mu_);
  return history_.all();
}

// ---------------------------------------------------------------------------
// DescribeGroup and the rebalance history

protocol::DescribeGroupResponse GroupController::describe(const protocol::Broker& self) const {
  MutexLock lock(mu_);
  protocol::DescribeGroupResponse d;
  d.group = name_;
  const GroupPhase phase = phase_.get();
  if (phase == GroupPhase::Dropped) {
    d.error = ErrorCode::NOT_CONTROLLER;
    return d;
  }
  if (phase == GroupPhase::Deleting) {
    d.error = ErrorCode::UNKNOWN_GROUP;
    return d;
  }
  d.error = ErrorCode::NONE;
  d.controller = self;
  if (isLoading(phase)) {
    d.state = protocol::GroupState::LOADING;
    return d;  // nothing read yet
  }
  d.sessionTimeoutMs = settings_.sessionTimeoutMs;
  d.ephemeral = settings_.ephemeral;
  d.generation = version_;
  const auto counts = ctx_.topics.partitionCounts(settings_);
  for (auto& t : settings_.topics) {
    auto c = counts.find(t);
    d.topics.push_back(protocol::TopicState{t, c == counts.end() || c->second <= 0 ? -1 : c->second});
  }
  const TimePoint now = ctx_.time.now();
  const int64_t wallNow = ctx_.time.wallMs();
  const auto& target = ownership_.target();
  bool settled = true;
  d.members.reserve(members_.size());
  for (auto& [id, m] : members_) {
    protocol::MemberState s;
    s.consumerId = id;
    s.clientId = m.clientId;
    s.host = m.host;
    s.port = m.port;
    s.joinedAtMs = m.joinedAtMs;
    s.lastHeardMs = wallNow - millisBetween(m.lastSeen, now);
    s.metadata = m.metadata;
    s.rack = m.rack;
    s.held = ownership_.heldBy(id);
    std::sort(s.held.begin(), s.held.end());
    if (auto t = target.find(id); t != target.end()) {
      for (auto& p : t->second) {
        const std::string& holder = ownership_.holderOf(p);
        if (holder == id) continue;
        settled = false;
        if (!holder.empty()) s.waiting.push_back(p);
      }
    }
    d.members.push_back(std::move(s));
  }
  if (handover_) {
    d.state = protocol::GroupState::HANDING_OVER;
  } else {
    d.state = settled ? protocol::GroupState::STABLE : protocol::GroupState::REBALANCING;
  }
  d.offsets.reserve(committed_.offsets.size());
  for (auto& [p, o] : committed_.offsets) d.offsets.push_back(PartitionOffset{p.topic, p.partition, o});
  d.history = history_.all();
  d.mode = settings_.mode;
  if (clientMode() && !handover_) {
    d.state = agreed() ? protocol::GroupState::STABLE : protocol::GroupState::REBALANCING;
  }
  return d;
}

RebalanceEvent GroupController::event(RebalanceReason reason, std::string detail) const {
  RebalanceEvent e;
  e.timeMs = ctx_.time.wallMs();
  e.generation = version_;
  e.reason = reason;
  e.detail = std::move(detail);
  return e;
}

void GroupController::logAndCount(const std::vector<RebalanceEvent>& events) const {
  for (auto& e : events) {
    spdlog::info("group {}: generation {}: {} ({})", name_, e.generation, e.detail,
                 protocol::rebalanceReasonName(e.reason));
    metrics::coordination().rebalance(static_cast<size_t>(e.reason), static_cast<uint64_t>(e.count));
  }
}

void GroupController::recordNow(std::vector<RebalanceEvent> events) {
  logAndCount(events);
  history_.add(std::move(events));
}

// The partition counts now against those of the current target.
std::vector<RebalanceEvent> GroupController::topicEvents() const {
  std::vector<RebalanceEvent> out;
  const auto counts = ctx_.topics.partitionCounts(settings_);
  for (auto& t : settings_.topics) {
    auto was = knownPartitions_.find(t);
    auto is = counts.find(t);
    const int32_t before = was == knownPartitions_.end() ? 0 : was->second;
    const int32_t after = is == counts.end() ? 0 : is->second;
    if (before == after) continue;
    RebalanceEvent e;
    if (before <= 0) {
      e = event(RebalanceReason::TOPIC_APPEARED,
                "subscribed topic " + t + " appeared with " + std::to_string(after) + " partitions");
      e.value = after;
    } else if (after <= 0) {
      e = event(RebalanceReason::TOPIC_GONE, "subscribed topic " + t + " went away");
    } else {
      e = event(RebalanceReason::TOPIC_RESIZED, "subscribed topic " + t + " went from " + std::to_string(before) +
                                                    " to " + std::to_string(after) + " partitions");
      e.value = after;
    }
    e.subject = t;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<RebalanceEvent> GroupController::batchEvents(int64_t generation) const {
  std::vector<RebalanceEvent> out;
  auto whereFrom = [](const std::string& host, uint16_t port) {
    return host.empty() ? std::string() : ", from " + protocol::Caller{host, port, ""}.address();
  };
  for (auto& [id, rm] : removals_.inFlight()) {
    auto m = members_.find(id);
    const std::string clientId = m == members_.end() ? "" : m->second.clientId;
    const std::string host = m == members_.end() ? "" : m->second.host;
    RebalanceEvent e;
    if (rm.unregistered) {
      e = event(RebalanceReason::MEMBER_EVICTED,
                "member " + id + " evicted: it did not register at generation " + std::to_string(version_) +
                    " within the session timeout (" + std::to_string(settings_.sessionTimeoutMs) + " ms)");
      e.value = rm.silentMs;
    } else if (rm.evicted) {
      e = event(RebalanceReason::MEMBER_EVICTED,
                "member " + id + " evicted after " + std::to_string(rm.silentMs) + " ms of silence (session timeout " +
                    std::to_string(settings_.sessionTimeoutMs) + " ms)");
      e.value = rm.silentMs;
    } else {
      e = event(RebalanceReason::MEMBER_LEFT, "member " + id + " left");
    }
    e.consumerId = id;
    e.clientId = clientId;
    e.host = host;
    out.push_back(std::move(e));
  }
  for (auto& [id, j] : joins_.inFlight()) {
    const std::string who = " (client id '" + j.clientId + "'" + whereFrom(j.host, j.port) + ")";
    RebalanceEvent e = j.replaces.empty()
                           ? event(RebalanceReason::MEMBER_JOINED, "member " + id + " joined" + who)
                           : event(RebalanceReason::MEMBER_REPLACED,
                                   "member " + id + " registered again under a new id, replacing " + j.replaces + who);
    e.consumerId = id;
    e.clientId = j.clientId;
    e.host = j.host;
    e.subject = j.replaces;
    out.push_back(std::move(e));
  }
  for (auto& w : rewinds_.inFlight()) {
    RebalanceEvent e = event(RebalanceReason::REWIND, std::to_string(w.accepted.size()) + " offsets rewound" +
                                                          (w.user.empty() ? "" : " by " + w.user));
    e.subject = w.user;
    e.value = static_cast<int64_t>(w.accepted.size());
    out.push_back(std::move(e));
  }
  for (auto& e : waitingEventsInFlight_) out.push_back(e);
  if (out.empty()) out.push_back(event(RebalanceReason::OTHER, "the generation moved"));
  for (auto& e : out) e.generation = generation;
  return foldEvents(std::move(out));
}

void GroupController::requeueEvents() {
  for (auto& e : waitingEvents_) waitingEventsInFlight_.push_back(std::move(e));
  waitingEvents_ = std::move(waitingEventsInFlight_);
  waitingEventsInFlight_.clear();
  batchEvents_.clear();
  historyCreating_ = false;
}

void GroupController::rememberRemoved(const std::string& id, const Member& m, TimePoint now) {
  // Bounded: entries older than the session timeout are of no use.
  constexpr size_t kMaxRemembered = 1024;
  if (removedFrom_.size() >= kMaxRemembered) {
    const Millis timeout(settings_.sessionTimeoutMs);
    std::erase_if(removedFrom_, [&](const auto& kv) { return now - kv.second.at > timeout; });
    if (removedFrom_.size() >= kMaxRemembered) removedFrom_.erase(removedFrom_.begin());
  }
  removedFrom_[protocol::Caller{m.host, m.port, ""}.address()] = Removed{id, m.clientId, now};
}

zk::Op GroupController::historyOp(const std::vector<RebalanceEvent>& next) const {
  layout::HistoryRecord record{ctx_.serverId, history_.persisted(next)};
  std::string data = layout::encodeHistory(record);
  // Detail strings are short, but client ids and hosts come from the wire:
  // keep the znode well under ZooKeeper's limit by dropping the oldest.
  while (data.size() > zk::kMaxDataSize / 4 && !record.events.empty()) {
    record.events.erase(record.events.begin());
    data = layout::encodeHistory(record);
  }
  const std::string path = ctx_.layout.historyPath(name_);
  return historyExists_ ? zk::makeSetData(path, std::move(data)) : zk::makeCreate(path, std::move(data));
}

}  // namespace groupcoord::adapter
