// A controlled group changing hands (docs/design.md, "Handover"): this
// server giving it to the server that should control it, and a server
// taking a group over, with or without the record the previous controller
// left.

#include <spdlog/spdlog.h>

#include "adapter/GroupController.h"
#include "adapter/ZkErrors.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;

namespace {

// A handover waits this long for what was accepted before it to be written;
// what is still queued then is answered CONTROLLER_NOT_AVAILABLE.
constexpr Millis kHandoverDrainLimit{5000};

}  // namespace

// ---------------------------------------------------------------------------
// Taking over

GroupController::TakenOver GroupController::takeOver(const zk::GetResult& group, const zk::GetResult& handover,
                                                     TimePoint now, int32_t lastWriter) {
  ownership_.clear();
  // A group at generation 0 never had a member: nobody can hold anything.
  if (version_ <= 0) {
    if (lastWriter >= 0) recordTakeover(protocol::RebalanceReason::CONTROLLER_TAKEOVER, lastWriter);
    spdlog::info("group {}: serving at generation {} with {} members (session timeout {} ms{})", name_, version_,
                 members_.size(), settings_.sessionTimeoutMs, settings_.ephemeral ? ", ephemeral" : "");
    return TakenOver{};
  }
  // The record of a handover is trusted when this claim is the first since
  // it was written: the handover removed the controller znode, this server
  // created it again, nothing else touched the group's children, and the
  // generation has not moved. Then it lists every member and everything
  // anybody may hold.
  std::optional<layout::HandoverRecord> record;
  if (handover.error == zk::Error::Ok) record = layout::decodeHandover(handover.data);
  if (record && record->generation == version_ && record->cversion + 1 == group.stat.cversion) {
    TakenOver taken;
    size_t held = 0;
    Assignment target;
    for (auto& [id, m] : record->members) {
      if (record->movedMembers && members_.emplace(id, Member{m.clientId, now, "", 0, -1}).second) {
        taken.adopt.push_back(id);
      }
      if (!members_.count(id)) continue;
      ownership_.reportOwned(id, m.held);
      held += m.held.size();
      target[id] = m.target;
    }
    // The generation did not move: its assignment stays what the members
    // were told (they release on heartbeats what it does not give them).
    // Members found in ZooKeeper but not in the record get nothing until
    // the next generation.
    for (auto& [id, _] : members_) target.try_emplace(id);
    ownership_.setTarget(std::move(target));
    taken.targetKept = true;
    recordTakeover(protocol::RebalanceReason::HANDOVER, record->from);
    spdlog::info(
        "group {}: handed over by server {}; serving at generation {} with {} members (session timeout {} ms{}); "
        "{} partitions held, the others granted at once",
        name_, record->from, version_, members_.size(), settings_.sessionTimeoutMs,
        settings_.ephemeral ? ", ephemeral" : "", held);
    return taken;
  }
  // Members may still hold partitions granted by the previous controller:
  // nothing nobody reports is granted for one session timeout.
  ownership_.holdUnclaimedUntil(now + Millis(settings_.sessionTimeoutMs));
  recordTakeover(protocol::RebalanceReason::CONTROLLER_TAKEOVER, lastWriter);
  spdlog::info(
      "group {}: serving at generation {} with {} members (session timeout {} ms{}); partitions nobody reports wait "
      "one session timeout{}",
      name_, version_, members_.size(), settings_.sessionTimeoutMs, settings_.ephemeral ? ", ephemeral" : "",
      record ? " (the handover record found is not from the last handover)" : "");
  return TakenOver{};
}

// In the history: this server controls the group from now on.
void GroupController::recordTakeover(protocol::RebalanceReason reason, int32_t from) {
  const std::string by = from >= 0 ? "server " + std::to_string(from) : "a server not known";
  auto e = event(reason, reason == protocol::RebalanceReason::HANDOVER
                             ? "handed over by " + by + " to server " + std::to_string(ctx_.serverId)
                             : "server " + std::to_string(ctx_.serverId) + " took the group over from " + by);
  e.subject = from >= 0 ? std::to_string(from) : "";
  e.value = ctx_.serverId;
  recordNow({std::move(e)});
}

// The member znodes the handover removed, created again in this server's
// session (so they live as long as this server controls the group). The
// generation does not move: for the members nothing changed.
void GroupController::adoptMembers(const std::vector<std::string>& ids) {
  std::vector<zk::Op> ops{zk::makeCheck(ctx_.layout.groupPath(name_), version_)};
  ops.reserve(ids.size() + 1);
  for (auto& id : ids) {
    ops.push_back(zk::makeCreate(ctx_.layout.memberPath(name_, id), layout::encodeMember(members_[id].clientId),
                                 zk::CreateMode::Ephemeral));
  }
  phase_.to(GroupPhase::Writing);
  ctx_.zk.multi(std::move(ops), completion<zk::MultiResult>(&GroupController::onAdopted, ids.size()));
}

const char* GroupController::onAdopted(size_t count, zk::MultiResult r, Outbox& out) {
  if (r.error == zk::Error::NoNode && r.failedOp == 0) return "its znode is gone";
  if (r.error != zk::Error::Ok) {
    // Re-read: the members whose znodes are not there must register again.
    spdlog::warn("group {}: writing the {} member znodes of the handover failed: {}; re-reading the group", name_,
                 count, r.error);
    phase_.to(GroupPhase::Stale);
    return nullptr;
  }
  phase_.to(GroupPhase::Idle);
  spdlog::debug("group {}: {} member znodes of the handover written", name_, count);
  flush(out);
  return nullptr;
}

// ---------------------------------------------------------------------------
// Handing over

bool GroupController::handOver(int32_t self, int32_t to, HandoverDone done) {
  LockedOutbox lk(mu_, &quietUntil_);
  const GroupPhase phase = phase_.get();
  if (handover_ || !isServing(phase)) return false;
  handover_ = PendingHandover{self, to, ctx_.time.now(), std::move(done), false};
  spdlog::info("group {}: handing it over to server {}: new writes wait for the next controller", name_, to);
  maybeHandOver(ctx_.time.now(), lk.out);
  return true;
}

bool GroupController::handingOver() const {
  MutexLock lock(mu_);
  return handover_.has_value();
}

// Sends the handover transaction once nothing the group accepted is still
// queued or in flight.
void GroupController::maybeHandOver(TimePoint now, Outbox& out) {
  if (!handover_ || handover_->verifying || !ctx_.connected) return;
  if (phase_.get() != GroupPhase::Idle) return;  // a write or a re-read first
  const bool queued = hasPendingWrites() || rejoins_.hasPending() || commits_.hasPending() || !deletions_.empty();
  if (queued && now - handover_->since < kHandoverDrainLimit) return;
  if (commits_.hasInFlight()) return;
  if (queued) {
    spdlog::warn("group {}: what was queued was not written within {} ms of the handover's start; answered "
                 "CONTROLLER_NOT_AVAILABLE (the members retry with the next controller)",
                 name_, kHandoverDrainLimit.count());
    joins_.answerPending(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
    removals_.answerPending(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
    rejoins_.answerPending(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
    rewinds_.answerPending(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
    commits_.answerPending(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
    answerDeletions(ErrorCode::CONTROLLER_NOT_AVAILABLE, out);
    bump_.cancel();  // the next controller computes with the partition counts it reads
  }
  layout::HandoverRecord record;
  record.from = handover_->from;
  record.to = handover_->to;
  record.generation = version_;
  record.cversion = groupCversion_ + 1;  // after removing the controller znode
  // The member znodes belong to this server's session: moved to the next
  // controller's (removed here, created there) unless there are too many
  // for one transaction; then they stay, and their members register again
  // when this server's session ends.
  record.movedMembers = members_.size() + 3 <= ctx_.config.maxChangesPerTransaction;
  const auto& target = ownership_.target();
  for (auto& [id, m] : members_) {
    auto t = target.find(id);
    record.members.emplace(id, layout::HandedMember{m.clientId, ownership_.heldBy(id),
                                                    t == target.end() ? std::vector<Partition>{} : t->second});
  }
  std::string data = layout::encodeHandover(record);
  if (data.size() > zk::kMaxDataSize) {
    // Too big to record: the next controller waits one session timeout
    // before it grants what nobody reports, as after a failure.
    spdlog::warn("group {}: the handover record ({} bytes) is larger than ZooKeeper takes; handing over without it",
                 name_, data.size());
    data.clear();
    record.movedMembers = false;
  }
  std::vector<zk::Op> ops{zk::makeCheck(ctx_.layout.groupPath(name_), version_),
                          zk::makeSetData(ctx_.layout.membersPath(name_), std::move(data))};
  // What happened since the last membership transaction (this server's
  // takeover, say) goes with the group. Only when the znode exists: a
  // create would change the group's child version the record relies on.
  if (historyExists_) ops.push_back(historyOp({}));
  if (record.movedMembers) {
    for (auto& [id, _] : members_) ops.push_back(zk::makeRemove(ctx_.layout.memberPath(name_, id)));
  }
  ops.push_back(zk::makeRemove(ctx_.layout.controllerPath(name_)));
  phase_.to(GroupPhase::HandingOver);
  const size_t opCount = ops.size();
  ctx_.zk.multi(std::move(ops), completion<zk::MultiResult>(&GroupController::onHandedOver, opCount));
}

const char* GroupController::onHandedOver(size_t opCount, zk::MultiResult r, Outbox& out) {
  const int32_t to = handover_ ? handover_->to : -1;
  if (r.error == zk::Error::Ok) {
    spdlog::info("group {}: handed over at generation {} (server {} claims it now)", name_, version_, to);
    endHandover(true, "", out);
    goneAnswer_ = ErrorCode::NOT_CONTROLLER;
    return "handed over";
  }
  if (r.error == zk::Error::NoNode && r.failedOp == 0) return "its znode is gone";
  if (r.error == zk::Error::NoNode && r.failedOp == static_cast<int>(opCount) - 1) {
    endHandover(false, "its controller znode was already gone", out);
    goneAnswer_ = ErrorCode::NOT_CONTROLLER;
    return "its controller znode vanished";
  }
  phase_.to(GroupPhase::Stale);
  if (zk::isConnectionProblem(r.error)) {
    // Applied or not: a re-read of the controller znode tells. Until then
    // nothing is granted (new writes are still refused).
    spdlog::warn("group {}: the answer to its handover was lost ({}); re-reading whether it happened", name_,
                 r.error);
    handover_->verifying = true;
    return nullptr;
  }
  endHandover(false, fmt::format("the handover transaction failed at op {}: {}", r.failedOp, r.error), out);
  return nullptr;
}

// The re-read after a lost answer: the controller znode gone (or not ours)
// means the handover happened.
const char* GroupController::checkHandedOver(const zk::ExistsResult& controller, Outbox& out) {
  if (controller.error == zk::Error::Ok && controller.stat.ephemeralOwner == ctx_.zk.sessionId()) {
    endHandover(false, "the handover transaction was not applied", out);
    return nullptr;
  }
  if (controller.error == zk::Error::Ok || controller.error == zk::Error::NoNode) {
    spdlog::info("group {}: its handover had happened (confirmed by a re-read)", name_);
    endHandover(true, "", out);
    goneAnswer_ = ErrorCode::NOT_CONTROLLER;
    return "handed over";
  }
  return nullptr;  // still unknown: the re-read is retried
}

void GroupController::endHandover(bool ok, std::string why, Outbox& out) {
  if (!handover_) return;
  HandoverResult result{ok, handover_->to, Millis(millisBetween(handover_->since, ctx_.time.now())), std::move(why)};
  if (!ok) spdlog::warn("group {}: handover to server {} failed: {}; still controlled here", name_, result.to, result.why);
  if (handover_->done) {
    out.push([done = std::move(handover_->done), result = std::move(result)]() mutable { done(std::move(result)); });
  }
  handover_.reset();
}

}  // namespace groupcoord::adapter
