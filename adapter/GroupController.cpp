// A controlled group's requests and ticks: the phase decides whether a
// request is taken, the model (GroupModel.h) takes it. Its ZooKeeper reads
// and transactions are in GroupWrites.cpp.

#include "adapter/GroupController.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

namespace groupcoord::adapter {

using protocol::ErrorCode;
using protocol::ResponseCallback;

GroupController::GroupController(GroupContext& ctx, std::string name)
    : ctx_(ctx),
      name_(std::move(name)),
      phase_(name_),
      state_(name_),
      model_(name_, ctx.serverId, ctx.topics, ctx.time.now()) {
  model_.coalesceJoins(ctx.config.joinWindow, ctx.config.joinWindowMax);
}

void GroupController::load() {
  LockedOutbox lk(mu_, &quietUntil_);
  reload();
}

ErrorCode GroupController::writeRefusal() const {
  if (phase_.get() == GroupPhase::Deleting) return ErrorCode::UNKNOWN_GROUP;
  if (!isServing(phase_.get()) || !ctx_.connected || phase_.handingOver()) return ErrorCode::CONTROLLER_NOT_AVAILABLE;
  return ErrorCode::NONE;
}

void GroupController::noteState() {
  const GroupPhase p = phase_.get();
  if (p == GroupPhase::Dropped || p == GroupPhase::Deleting) return;  // DescribeGroup answers an error then
  if (isLoading(p)) return state_.to(protocol::GroupState::LOADING);
  if (phase_.handingOver()) return state_.to(protocol::GroupState::HANDING_OVER);
  state_.to(model_.settled() ? protocol::GroupState::STABLE : protocol::GroupState::REBALANCING);
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
  Outbox out;  // after the lock: held heartbeats this one's release woke
  MutexLock lock(mu_);
  bool moved = false;
  protocol::HeartbeatResponse resp = heartbeatLocked(r, caller, now, cache, &moved);
  if (moved) {
    noteState();
    wakeHeld(now, out);
  }
  return resp;
}

protocol::HeartbeatResponse GroupController::heartbeatLocked(const protocol::HeartbeatView& r,
                                                             const protocol::Caller& caller, TimePoint now,
                                                             MemberCache* cache, bool* moved) {
  const GroupPhase phase = phase_.get();
  if (isServing(phase) && phase_.handover() != HandoverStage::Verifying) {
    return model_.heartbeat(r, caller, now, cache, moved);
  }
  protocol::HeartbeatResponse resp;
  if (isLoading(phase) || phase == GroupPhase::Dropped) {
    resp.generation = -1;
    resp.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    return resp;
  }
  resp.generation = model_.generation();
  // Deleting: the group is going. Otherwise the handover transaction is in
  // flight, or its answer was lost: the next controller may serve the
  // group already, and it counts its members' sessions from its takeover.
  // An answer here that renews a member's lease could outlast that
  // (docs/design.md, "The session lease"); the member keeps its partitions
  // until its own timeout.
  resp.error = phase == GroupPhase::Deleting ? ErrorCode::UNKNOWN_GROUP : ErrorCode::CONTROLLER_NOT_AVAILABLE;
  return resp;
}

// ---------------------------------------------------------------------------
// Held heartbeats (docs/design.md, "Held heartbeats")

void GroupController::heartbeatHeld(const protocol::HeartbeatView& r, const protocol::Caller& caller, TimePoint now,
                                    Millis wait, ResponseCallback done) {
  LockedOutbox lk(mu_, &quietUntil_);
  // Held at most a third of the session: the member's next heartbeat comes
  // within two holds of this one's sending, inside its session either way
  // it counts (docs/design.md, "Held heartbeats").
  const TimePoint until = now + std::min(wait, Millis(model_.settings().sessionTimeoutMs / 3));
  bool moved = false;
  const protocol::HeartbeatResponse resp = heartbeatLocked(r, caller, now, nullptr, &moved);
  if (moved) noteState();
  // An earlier heartbeat of the same member still held (sent on another
  // connection, or given up by its client): answered with this one's news.
  if (auto old = held_.find(r.consumerId); old != held_.end()) answerHeld(old, now, lk.out);
  wakeHeld(now, lk.out);
  // Held only while the answer is "nothing to do" (a client-mode member
  // waiting at the barrier is told to keep waiting), the group is served
  // here, and no takeover grace runs: a grace's end makes partitions
  // grantable by the clock alone, which nothing here watches.
  const bool served = isServing(phase_.get()) && !phase_.handingOver();
  const bool idle = resp.error == ErrorCode::NONE ||
                    (model_.clientMode() && resp.error == ErrorCode::REBALANCE_IN_PROGRESS);
  if (!served || !idle || until <= now || model_.ownership().inGrace(now)) {
    lk.out.push([done = std::move(done), resp] { done(resp); });
    return;
  }
  if (held_.empty()) {
    heldGeneration_ = model_.generation();
    heldSettled_ = model_.settled();
  }
  std::string id(r.consumerId);
  heldUntil_.emplace(until, id);
  // Kept at a newer generation on arrival (version 2, docs/protocol.md
  // §21): held as of that one, which its member learns with the answer.
  const int64_t generation = resp.error == ErrorCode::NONE ? resp.generation : r.generation;
  held_.emplace(id, HeldBeat{std::string(r.group), id, generation, r.version, caller, resp.error, until,
                             std::move(done)});
}

void GroupController::releaseHeld(uint64_t connection) {
  LockedOutbox lk(mu_, &quietUntil_);
  const TimePoint now = ctx_.time.now();
  for (auto it = held_.begin(); it != held_.end();) {
    auto next = std::next(it);
    if (it->second.caller.connection == connection) answerHeld(it, now, lk.out);
    it = next;
  }
}

void GroupController::releaseAllHeld() {
  LockedOutbox lk(mu_, &quietUntil_);
  const TimePoint now = ctx_.time.now();
  while (!held_.empty()) answerHeld(held_.begin(), now, lk.out);
}

size_t GroupController::heldCount() const {
  MutexLock lock(mu_);
  return held_.size();
}

void GroupController::answerHeld(HeldMap::iterator it, TimePoint now, Outbox& out,
                                 const protocol::HeartbeatResponse* known) {
  HeldBeat& h = it->second;
  const protocol::HeartbeatView view{h.version, 0, h.group, h.consumerId, h.generation, 0};
  protocol::HeartbeatResponse resp;
  bool moved = false;
  if (ctx_.answersFromMemory && !ctx_.answersFromMemory(now)) {
    // Heard at its arrival; not answered from memory while the lease does
    // not hold, as a heartbeat arriving now would not be.
    resp.generation = model_.generation();
    resp.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
  } else if (isServing(phase_.get()) && phase_.handover() != HandoverStage::Verifying) {
    // Its session counts from its arrival, not from now. `known`: looked
    // at again just now (wakeHeld).
    resp = known != nullptr ? *known : model_.recheck(view, h.caller, now, &moved);
  } else {
    resp = heartbeatLocked(view, h.caller, now, nullptr, &moved);
  }
  for (auto [from, to] = heldUntil_.equal_range(h.until); from != to; ++from) {
    if (from->second == it->first) {
      heldUntil_.erase(from);
      break;
    }
  }
  out.push([done = std::move(h.done), resp] { done(resp); });
  held_.erase(it);
  if (moved) noteState();
}

void GroupController::wakeHeld(TimePoint now, Outbox& out) {
  std::vector<std::string> freed = model_.takeFreedFor();
  if (held_.empty()) return;
  // While handed over they stay held (the drop answers them); otherwise a
  // group not served answers them now.
  const bool served = isServing(phase_.get()) || phase_.handingOver();
  const bool settled = model_.settled();
  if (!served || model_.generation() != heldGeneration_ || (model_.clientMode() && settled != heldSettled_)) {
    // Every answer may have changed: each is looked at again. Those still
    // "nothing to do" stay held (a generation move answers all of them).
    heldGeneration_ = model_.generation();
    heldSettled_ = settled;
    bool moved = false;
    for (auto it = held_.begin(); it != held_.end();) {
      auto next = std::next(it);
      HeldBeat& h = it->second;
      const protocol::HeartbeatView view{h.version, 0, h.group, h.consumerId, h.generation, 0};
      const auto resp = served ? model_.recheck(view, h.caller, now, &moved) : protocol::HeartbeatResponse{};
      if (!served) {
        answerHeld(it, now, out);
      } else if (resp.error != h.answer || h.until <= now) {
        answerHeld(it, now, out, &resp);
      } else if (resp.error == ErrorCode::NONE) {
        // Still nothing to do at the new generation (version 2: a move
        // that left the member as it was): it stays held, as of now.
        h.generation = resp.generation;
      }
      it = next;
    }
    if (moved) noteState();
    freed = model_.takeFreedFor();
  }
  // A partition of their target became free: they may take it now. (An
  // answer looked at again may free more; a few rounds take those too.)
  for (int round = 0; round < 4 && !freed.empty(); ++round) {
    for (const auto& id : freed) {
      if (auto it = held_.find(id); it != held_.end()) answerHeld(it, now, out);
    }
    freed = model_.takeFreedFor();
  }
  // Those whose time is up.
  while (!heldUntil_.empty() && heldUntil_.begin()->first <= now) {
    auto it = held_.find(heldUntil_.begin()->second);
    if (it == held_.end()) {
      heldUntil_.erase(heldUntil_.begin());
      continue;
    }
    answerHeld(it, now, out);
  }
}

bool GroupController::inStep() const {
  MutexLock lock(mu_);
  return isServing(phase_.get()) && !phase_.handingOver() && model_.inStep();
}

void GroupController::heard(std::string_view memberId, TimePoint now) {
  MutexLock lock(mu_);
  if (isServing(phase_.get())) model_.heard(memberId, now);
}

void GroupController::registerMember(const protocol::RequestHeader& h, protocol::RegisterConsumerRequest r,
                                     ResponseCallback done, const protocol::Caller& caller) {
  LockedOutbox lk(mu_, &quietUntil_);
  const GroupPhase phase = phase_.get();
  std::string id = r.consumerId.empty() ? ctx_.newMemberId(h.clientId) : r.consumerId;
  auto refuse = [&, &out = lk.out](ErrorCode e) { Rejoin{r.consumerId, std::move(done)}.answer(e, name_, out); };
  // Being handed over: the next controller registers it (this one grants
  // nothing more, so the handover record stays true).
  if (phase_.handingOver()) return refuse(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  if (ErrorCode e = model_.checkRegistration(r, ctx_.config.maxMetadataBytes); e != ErrorCode::NONE) {
    return refuse(e);
  }
  if (phase == GroupPhase::Deleting) return refuse(ErrorCode::UNKNOWN_GROUP);
  if (!isServing(phase)) return refuse(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  model_.registerMember(h, r, id, caller, at(), Serving{!isBusy(phase), ctx_.connected}, done, lk.out);
  flush(lk.out);
  noteState();
  wakeHeld(ctx_.time.now(), lk.out);
}

void GroupController::leave(const protocol::LeaveGroupRequest& r, ResponseCallback done) {
  LockedOutbox lk(mu_, &quietUntil_);
  const GroupPhase phase = phase_.get();
  if (phase == GroupPhase::Deleting || !isServing(phase) || phase_.handingOver()) {
    const ErrorCode e = phase == GroupPhase::Deleting ? ErrorCode::UNKNOWN_GROUP : ErrorCode::CONTROLLER_NOT_AVAILABLE;
    return lk.out.push([done = std::move(done), e] { done(protocol::LeaveGroupResponse{e}); });
  }
  if (model_.leave(r, ctx_.connected, done, lk.out)) flush(lk.out);
  wakeHeld(ctx_.time.now(), lk.out);
}

void GroupController::deleteGroup(const protocol::DeleteGroupRequest& r, ResponseCallback done) {
  LockedOutbox lk(mu_, &quietUntil_);
  const GroupPhase phase = phase_.get();
  ErrorCode e = ErrorCode::NONE;
  if (isLoading(phase) || phase == GroupPhase::Dropped || phase == GroupPhase::HandingOver || !ctx_.connected ||
      phase_.handingOver()) {
    e = ErrorCode::CONTROLLER_NOT_AVAILABLE;
  } else {
    e = model_.deletable();
  }
  if (e != ErrorCode::NONE) return Deletion{std::move(done)}.answer(e, r.group, lk.out);
  model_.queueDeletion(std::move(done));
  if (isServing(phase)) flush(lk.out);  // deletes once nothing else is in flight
}

// CommitOffsets: accepted only from the partition's holder; acknowledged
// once durable. Commits arriving while one is in flight go out together.
void GroupController::commit(const protocol::CommitOffsetsRequest& r, ResponseCallback done) {
  LockedOutbox lk(mu_, &quietUntil_);
  if (model_.commit(r, writeRefusal(), ctx_.time.now(), done, lk.out)) flushCommits();
}

// RewindConsumer: the offsets and a new generation in one transaction, so
// every member registers again and receives the rewound offsets.
void GroupController::rewind(const protocol::RewindConsumerRequest& r, ResponseCallback done,
                             const protocol::Caller& caller) {
  LockedOutbox lk(mu_, &quietUntil_);
  if (model_.rewind(r, writeRefusal(), caller.user, done, lk.out)) flush(lk.out);
}

std::optional<bool> GroupController::kafkaGroup() const {
  MutexLock lock(mu_);
  const GroupPhase phase = phase_.get();
  if (phase == GroupPhase::Claimed || phase == GroupPhase::Loading || phase == GroupPhase::Dropped ||
      phase == GroupPhase::Deleting) {
    return std::nullopt;
  }
  return model_.settings().kafka;
}

protocol::DescribeGroupResponse GroupController::describe(const protocol::Broker& self) const {
  MutexLock lock(mu_);
  const GroupPhase phase = phase_.get();
  if (phase == GroupPhase::Dropped || phase == GroupPhase::Deleting) {
    protocol::DescribeGroupResponse d;
    d.group = name_;
    d.error = phase == GroupPhase::Dropped ? ErrorCode::NOT_CONTROLLER : ErrorCode::UNKNOWN_GROUP;
    return d;
  }
  return model_.describe(self, state_.get(), at());
}

// ---------------------------------------------------------------------------
// From the coordinator

// A quiet group is still looked at this often, whatever it says: a safety
// net under the wake-ups of LockedOutbox.
constexpr Millis kQuietTickLimit{250};

TimePoint GroupController::nextTickDue(TimePoint now) const {
  const bool quiet =
      phase_.get() == GroupPhase::Idle && ctx_.connected && !phase_.handingOver() && model_.quiet();
  if (!quiet || model_.nextLivenessScan() <= now) return now;
  TimePoint due = std::min(model_.nextLivenessScan(), now + kQuietTickLimit);
  // The first held heartbeat whose time comes.
  if (!heldUntil_.empty()) due = std::min(due, heldUntil_.begin()->first);
  return due;
}

void GroupController::tick(TimePoint now) {
  if (now.time_since_epoch().count() < quietUntil_.load(std::memory_order_acquire)) return;
  // Not through LockedOutbox's wake-up: this tick decides quietUntil_ itself.
  LockedOutbox lk(mu_);
  const GroupPhase phase = phase_.get();
  if (phase == GroupPhase::Dropped) return;
  if (isServing(phase) && ctx_.connected) {
    model_.scanLiveness(now);
    // An ephemeral group disappears when its last member goes, or when
    // nobody joined it within its session timeout after its creation or
    // after a takeover.
    if (!isBusy(phase) && model_.abandoned(now)) removeSubtree();
  }
  if (needsReload(phase_.get()) && !isBusy(phase_.get()) && ctx_.connected) {
    reload();
  } else {
    flush(lk.out);
    flushCommits();
    maybeHandOver(now, lk.out);
  }
  noteState();
  wakeHeld(now, lk.out);
  const TimePoint due = nextTickDue(now);
  quietUntil_.store(due > now ? due.time_since_epoch().count() : 0, std::memory_order_release);
}

void GroupController::topicChanged(const std::string& topic) {
  LockedOutbox lk(mu_, &quietUntil_);
  if (isServing(phase_.get()) && model_.topicChanged(topic, at())) flush(lk.out);
  wakeHeld(ctx_.time.now(), lk.out);
}

size_t GroupController::refuseQueuedCommits() {
  LockedOutbox lk(mu_, &quietUntil_);
  return model_.refuseQueuedCommits(ErrorCode::CONTROLLER_NOT_AVAILABLE, lk.out);
}

void GroupController::answerAllWaiting(ErrorCode answer) {
  LockedOutbox lk(mu_, &quietUntil_);
  model_.answerAll(answer, lk.out);
  for (auto& [id, h] : held_) {
    lk.out.push([done = std::move(h.done), answer] { done(protocol::HeartbeatResponse{-1, answer}); });
  }
  held_.clear();
  heldUntil_.clear();
}

void GroupController::drop(ErrorCode answer, const char* why) {
  LockedOutbox lk(mu_, &quietUntil_);
  if (phase_.get() == GroupPhase::Dropped) return;
  model_.answerAll(answer, lk.out);
  endHandover(false, why, lk.out);
  spdlog::info("group {}: no longer controlled here ({}); {} members dropped", name_, why, model_.members().size());
  model_.clearMembers();
  phase_.to(GroupPhase::Dropped);
  // Held heartbeats go now, with the answer a heartbeat arriving now gets
  // from the coordinator (NOT_CONTROLLER, UNKNOWN_GROUP): their members
  // look for the next controller at once.
  for (auto& [id, h] : held_) {
    lk.out.push([done = std::move(h.done), answer] { done(protocol::HeartbeatResponse{-1, answer}); });
  }
  held_.clear();
  heldUntil_.clear();
}

bool GroupController::handOver(int32_t self, int32_t to, HandoverDone done) {
  LockedOutbox lk(mu_, &quietUntil_);
  const TimePoint now = ctx_.time.now();
  if (!phase_.startHandover(GroupPhaseMachine::Handover{self, to, now, std::move(done)})) return false;
  spdlog::info("group {}: handing it over to server {}: new writes wait for the next controller", name_, to);
  maybeHandOver(now, lk.out);
  noteState();
  // Held heartbeats stay held: the drop that ends the handover answers them
  // NOT_CONTROLLER, so their members go to the next controller at once.
  return true;
}

// Runs on the ZooKeeper completion thread when the membership transaction
// succeeded, before its continuation takes the lock: the group answers
// heartbeats while its next assignment is computed.
void GroupController::assignAhead() {
  std::optional<GroupModel::AssignmentInputs> in;
  int32_t from = -1;
  {
    MutexLock lock(mu_);
    if (phase_.get() != GroupPhase::Writing) return;
    in = model_.inputsAfterBatch();
    from = model_.generation();
  }
  if (!in) return;
  const auto t0 = std::chrono::steady_clock::now();
  Assignment target = assignPartitions(in->ids, in->counts, in->held, in->racks);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const size_t moves = countMoves(in->held, target);
  MutexLock lock(mu_);
  ahead_ = AssignedAhead{from, std::move(*in), std::move(target), ms, moves};
}

// ---------------------------------------------------------------------------
// Introspection

int64_t GroupController::generation() const {
  MutexLock lock(mu_);
  return model_.generation();
}

std::vector<std::string> GroupController::memberIds() const {
  MutexLock lock(mu_);
  std::vector<std::string> ids;
  ids.reserve(model_.members().size());
  for (auto& [id, _] : model_.members()) ids.push_back(id);
  return ids;
}

size_t GroupController::memberCount() const {
  MutexLock lock(mu_);
  return model_.members().size();
}

GroupPhase GroupController::phase() const {
  MutexLock lock(mu_);
  return phase_.get();
}

std::vector<protocol::RebalanceEvent> GroupController::history() const {
  MutexLock lock(mu_);
  return model_.history().all();
}

}  // namespace groupcoord::adapter
