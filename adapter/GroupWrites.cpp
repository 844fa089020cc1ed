// A controlled group's ZooKeeper reads and transactions: loading, the
// batched membership transaction, offsets, deletion and the handover. The
// operations come from GroupZkOps.h, what they did goes to the model
// (GroupModel.h); here they are issued, and their answers read. Requests
// are in GroupController.cpp.

#include <algorithm>

#include <spdlog/spdlog.h>

#include "adapter/Fanout.h"
#include "adapter/GroupController.h"
#include "adapter/ZkErrors.h"
#include "metrics/Coordination.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;
using zkops::TxnOutcome;

template <class Result>
std::function<void(Result)> GroupController::completion(Continuation<Result> continuation, size_t opCount) {
  return ctx_.epoch.bind([self = shared_from_this(), continuation, opCount](Result r) {
    const char* gone = nullptr;
    ErrorCode answer;
    {
      LockedOutbox lk(self->mu_, &self->quietUntil_);
      if (self->phase_.get() == GroupPhase::Dropped) return;
      gone = (self.get()->*continuation)(std::move(r), opCount, lk.out);
      if (gone == nullptr) self->noteState();
      self->wakeHeld(self->ctx_.time.now(), lk.out);
      answer = self->goneAnswer_;
    }
    if (gone) self->ctx_.vanished(self->name_, answer, gone);
  });
}

// ---------------------------------------------------------------------------
// Loading: the group's settings, version and members, after a claim and
// whenever a write's outcome is unknown. Writes wait until it is done.

void GroupController::reload() {
  const GroupPhase phase = phase_.get();
  if (isBusy(phase) || !ctx_.connected) return;
  const bool first = phase == GroupPhase::Claimed;
  phase_.to(first ? GroupPhase::Loading : GroupPhase::Reloading);
  auto reads = Fanout<Loaded>::start(ctx_.zk, completion<Loaded>(&GroupController::onReloaded));
  ctx_.zk.get(ctx_.layout.groupPath(name_),
              reads->collect<zk::GetResult>([](Loaded& s, zk::GetResult r) { s.group = std::move(r); }));
  if (first) {
    ctx_.zk.get(ctx_.layout.membersPath(name_),
                reads->collect<zk::GetResult>([](Loaded& s, zk::GetResult r) { s.handover = std::move(r); }));
  }
  if (phase_.handover() == HandoverStage::Verifying) {
    ctx_.zk.exists(ctx_.layout.controllerPath(name_), reads->collect<zk::ExistsResult>([](Loaded& s,
                                                                                          zk::ExistsResult r) {
      s.controller = std::move(r);
    }));
  }
  ctx_.zk.get(ctx_.layout.historyPath(name_),
              reads->collect<zk::GetResult>([](Loaded& s, zk::GetResult r) { s.history = std::move(r); }));
  ctx_.zk.getChildren(ctx_.layout.membersPath(name_), reads->collect<zk::ChildrenResult>([](Loaded& s,
                                                                                             zk::ChildrenResult r) {
    s.members = std::move(r);
  }));
  reads->release();
}

const char* GroupController::onReloaded(Loaded read, size_t, Outbox& out) {
  const bool first = phase_.get() == GroupPhase::Loading;
  if (read.group.error == zk::Error::NoNode) return "its znode is gone";
  // Until a read succeeds, memory still has to be re-read.
  const GroupPhase failed = first ? GroupPhase::Claimed : GroupPhase::Stale;
  zk::Error e = read.group.error != zk::Error::Ok ? read.group.error : read.members.error;
  if (e == zk::Error::Ok && read.history.error != zk::Error::NoNode) e = read.history.error;
  if (e != zk::Error::Ok) {
    spdlog::warn("group {}: reading it from ZooKeeper failed: {}; will retry", name_, e);
    phase_.to(failed);
    return nullptr;
  }
  if (phase_.handover() == HandoverStage::Verifying) {
    if (const char* gone = checkHandedOver(read.controller, out)) return gone;
    if (phase_.handover() == HandoverStage::Verifying) {
      phase_.to(failed);
      return nullptr;
    }
  }
  GroupModel::Read in;
  in.settingsData = std::move(read.group.data);
  in.version = read.group.stat.version;
  in.cversion = read.group.stat.cversion;
  in.members = std::move(read.members.children);
  if (read.history.error == zk::Error::Ok) in.history = std::move(read.history.data);
  if (first && read.handover.error == zk::Error::Ok) in.handover = std::move(read.handover.data);
  GroupModel::Loaded loaded = model_.applyRead(std::move(in), first, at(), out);
  if (!loaded.ok) {
    phase_.to(failed);
    return nullptr;
  }
  phase_.to(GroupPhase::Idle);
  for (auto& t : loaded.topics) ctx_.topics.watch(t);
  if (!loaded.adopt.empty()) {
    adoptMembers(loaded.adopt);
  } else {
    flush(out);
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// The membership transaction: the changes waiting for the group, in one
// transaction that also moves the generation. With nothing to write, the
// waiting re-registrations are answered and a requested deletion starts.

void GroupController::flush(Outbox& out) {
  const GroupPhase phase = phase_.get();
  if (isBusy(phase) || !isServing(phase) || !ctx_.connected) return;
  if (needsReload(phase)) return reload();
  const MembershipBatch& batch = model_.batch();
  if (!model_.committed().loaded &&
      (batch.rewinds.hasPending() || batch.rejoins.hasPending() || batch.joins.hasPending())) {
    return loadOffsets();  // registrations carry committed offsets; rewinds need to know what exists
  }
  if (!batch.hasPendingWrites()) {
    model_.answerRejoins(ctx_.time.now(), out);
    if (model_.deletionWaiting()) {
      if (model_.members().empty()) {
        removeSubtree();
      } else {
        model_.answerDeletions(ErrorCode::GROUP_NOT_EMPTY, out);
      }
    }
    return;
  }
  // At most one transaction per batch interval: changes arriving together
  // (a join storm) wait for the tick and go out as one.
  const TimePoint now = ctx_.time.now();
  if (now - lastBatchAt_ < ctx_.config.batchInterval) return;
  // Joins coalesce: a storm of them moves the generation once.
  if (now < model_.joinsDueAt()) return;
  lastBatchAt_ = now;
  writeBatch();
}

void GroupController::writeBatch() {
  GroupModel::Launched l = model_.launchBatch(ctx_.config.maxChangesPerTransaction, at());
  // A slice writes member znodes only, checked against the generation; the
  // transaction that moves the generation carries everything else.
  std::vector<zk::Op> ops =
      l.moves ? zkops::batchOps(paths(), ctx_.offsets,
                                zkops::BatchWrite{l.removed, l.joined, l.rewound, model_.committed(),
                                                  std::move(l.history), model_.historyExists(), model_.settingsData(),
                                                  model_.generation()})
              : zkops::adoptOps(paths(), model_.generation(), l.joined);
  phase_.to(GroupPhase::Writing);
  metrics::coordination().transactionChanges.observe(l.changes);
  ahead_.reset();
  auto done = completion<zk::MultiResult>(&GroupController::onBatchDone, ops.size());
  ctx_.zk.multi(std::move(ops), [self = shared_from_this(), done = std::move(done), moves = l.moves](zk::MultiResult r) {
    if (moves && r.error == zk::Error::Ok) self->assignAhead();
    done(std::move(r));
  });
}

const char* GroupController::onBatchDone(zk::MultiResult r, size_t opCount, Outbox& out) {
  const size_t changes = model_.batch().changesInFlight();
  // A slice checks the group znode first; a move sets it last.
  const bool slice = model_.batch().sliceInFlight;
  switch (zkops::classify(r, opCount, slice ? 0 : static_cast<int>(opCount) - 1)) {
    case TxnOutcome::Applied: {
      phase_.to(GroupPhase::Idle);
      if (slice) {
        model_.sliceWritten();
        break;
      }
      failedBatches_ = 0;
      // The group znode's setData is the last op: its result gives the generation.
      const int32_t version = r.results.empty() ? model_.generation() + 1 : r.results.back().stat.version;
      model_.applyBatch(version, at(), std::exchange(ahead_, std::nullopt), out);
      break;
    }
    case TxnOutcome::GroupGone:
      return "its znode is gone";
    case TxnOutcome::Unknown:
      spdlog::warn("group {}: a transaction of {} membership changes failed with {}; its outcome is re-read when "
                   "ZooKeeper is back",
                   name_, changes, r.error);
      // The registrations and leaves in flight are told to retry;
      // evictions (no waiter) are found again if the members stay silent.
      model_.failBatch(ErrorCode::CONTROLLER_NOT_AVAILABLE, out, /*retryMove=*/true);
      phase_.to(GroupPhase::Stale);
      break;
    case TxnOutcome::LastGone:
    case TxnOutcome::Refused:
      // Memory and ZooKeeper disagree (a member znode already there or
      // already gone, or the version moved): put the changes back, re-read,
      // and try again.
      ++failedBatches_;
      spdlog::warn("group {}: transaction of {} changes refused at op {}: {}; re-reading the group (attempt {})",
                   name_, changes, r.failedOp, r.error, failedBatches_);
      if (failedBatches_ > 3) {
        spdlog::error("group {}: giving up on {} changes after {} refused transactions", name_, changes,
                      failedBatches_);
        model_.failBatch(ErrorCode::CONTROLLER_NOT_AVAILABLE, out, /*retryMove=*/false);
        failedBatches_ = 0;
      } else {
        model_.requeueBatch();
        model_.offsetsInDoubt();  // a rewind may have met an offset znode it did not know
      }
      phase_.to(GroupPhase::Stale);
      break;
  }
  if (model_.emptiedOut()) {
    removeSubtree();  // its last member went: an ephemeral group goes with it
  } else {
    flush(out);
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// A Kafka group's transactions: its member znodes and generation moves,
// decided by its Kafka state (adapter/KafkaGroups.h) and written here, where
// the group znode's version is kept, so that a handover or a deletion of
// the group checks the version the Kafka side moved it to.

std::optional<int32_t> GroupController::kafkaGeneration() const {
  MutexLock lock(mu_);
  const GroupPhase phase = phase_.get();
  if (!isServing(phase) || needsReload(phase) || phase_.handover() != HandoverStage::None) return std::nullopt;
  return model_.generation();
}

void GroupController::writeKafka(std::vector<zk::Op> memberOps, int32_t version, int moves, KafkaWritten done) {
  std::string refused;
  {
    LockedOutbox lk(mu_, &quietUntil_);
    const GroupPhase phase = phase_.get();
    if (phase != GroupPhase::Idle || phase_.handover() != HandoverStage::None || !ctx_.connected) {
      refused = fmt::format("the group is busy ({})", toString(phase));
    } else {
      const std::string path = ctx_.layout.groupPath(name_);
      std::vector<zk::Op> ops = std::move(memberOps);
      if (moves == 0) ops.push_back(zk::makeCheck(path, version));
      for (int i = 0; i < moves; ++i) ops.push_back(zk::makeSetData(path, model_.settingsData(), version + i));
      const size_t opCount = ops.size();
      phase_.to(GroupPhase::Writing);
      noteState();
      ctx_.zk.multi(std::move(ops), [self = shared_from_this(), version, moves, opCount,
                                     done = std::move(done)](zk::MultiResult r) {
        self->onKafkaWritten(r, version, moves, opCount, done);
      });
    }
  }
  if (!refused.empty()) done(std::nullopt, true, std::move(refused));
}

void GroupController::onKafkaWritten(const zk::MultiResult& r, int32_t version, int moves, size_t opCount,
                                     const KafkaWritten& done) {
  std::optional<int32_t> after;
  std::string why;
  const char* gone = nullptr;
  ErrorCode answer = ErrorCode::UNKNOWN_GROUP;
  {
    LockedOutbox lk(mu_, &quietUntil_);
    if (phase_.get() == GroupPhase::Dropped) {
      why = "the group is no longer controlled here";
    } else if (zkops::classify(r, opCount, static_cast<int>(opCount) - std::max(moves, 1)) == TxnOutcome::GroupGone) {
      gone = "its znode is gone";
      why = gone;
    } else if (r.error == zk::Error::Ok) {
      phase_.to(GroupPhase::Idle);
      if (moves > 0) model_.kafkaGenerationMoved(version + moves);
      after = version + moves;
      flush(lk.out);
    } else {
      why = fmt::format("{} at op {} of {}", zk::errorName(r.error), r.failedOp, opCount);
      spdlog::warn("group {}: a Kafka membership transaction failed: {}; re-reading the group", name_, why);
      phase_.to(GroupPhase::Stale);
      flush(lk.out);
    }
    if (gone == nullptr) noteState();
    answer = goneAnswer_;
  }
  if (gone) ctx_.vanished(name_, answer, gone);
  done(after, false, std::move(why));
}

// ---------------------------------------------------------------------------
// Deletion: the group's whole subtree in one transaction.

void GroupController::removeSubtree() {
  if (isBusy(phase_.get()) || !ctx_.connected) return;
  phase_.to(GroupPhase::Deleting);
  ctx_.offsets.list(name_, completion<OffsetsListing>(&GroupController::onSubtreeListed));
}

const char* GroupController::onSubtreeListed(OffsetsListing listing, size_t, Outbox& out) {
  if (listing.error != zk::Error::Ok && listing.error != zk::Error::NoNode) {
    // The offsets could not be listed: deleting now could leave them behind.
    spdlog::warn("group {}: listing its offsets for deletion failed: {}", name_, listing.error);
    model_.answerDeletions(fromZk(listing.error), out);
    phase_.to(GroupPhase::Stale);
    return nullptr;
  }
  std::vector<zk::Op> ops = zkops::deleteOps(paths(), listing, model_.historyExists(), model_.generation());
  const size_t opCount = ops.size();
  ctx_.zk.multi(std::move(ops), completion<zk::MultiResult>(&GroupController::onSubtreeRemoved, opCount));
  return nullptr;
}

const char* GroupController::onSubtreeRemoved(zk::MultiResult r, size_t opCount, Outbox& out) {
  ErrorCode answer;
  if (r.error == zk::Error::Ok) {
    answer = ErrorCode::NONE;
    spdlog::info("group {}: deleted with its offsets at generation {} ({})", name_, model_.generation(),
                 model_.settings().ephemeral && !model_.deletionWaiting() ? "ephemeral group, no members left"
                                                                          : "on request");
  } else if (r.error == zk::Error::NotEmpty) {
    answer = ErrorCode::GROUP_NOT_EMPTY;
  } else {
    spdlog::warn("group {}: deleting it failed at op {} of {}: {}", name_, r.failedOp, opCount, r.error);
    answer = fromZk(r.error);
  }
  model_.answerDeletions(answer, out);
  if (answer == ErrorCode::NONE) return "deleted";
  phase_.to(GroupPhase::Stale);
  flush(out);
  return nullptr;
}

// ---------------------------------------------------------------------------
// Offsets: read once before the first registration or write needs them;
// commits go in transactions of their own, one in flight at a time.

// Between failed reads: from kOffsetsRetryFirst, doubling up to kOffsetsRetryMax.
constexpr Millis kOffsetsRetryFirst{100};
constexpr Millis kOffsetsRetryMax{5000};

void GroupController::loadOffsets() {
  if (phase_.get() != GroupPhase::Idle || !ctx_.connected) return;
  if (ctx_.time.now() < offsetsRetryAt_) return;  // the tick tries again when it is time
  phase_.to(GroupPhase::ReadingOffsets);
  ctx_.offsets.read(name_, {}, completion<OffsetsRead>(&GroupController::onOffsetsLoaded));
}

const char* GroupController::onOffsetsLoaded(OffsetsRead r, size_t, Outbox& out) {
  phase_.to(GroupPhase::Idle);
  if (r.error == zk::Error::Ok) {
    model_.offsetsLoaded(std::move(r));
    offsetsRetryDelay_ = Millis(0);
  } else {
    offsetsRetryDelay_ = std::clamp(offsetsRetryDelay_ * 2, kOffsetsRetryFirst, kOffsetsRetryMax);
    offsetsRetryAt_ = ctx_.time.now() + offsetsRetryDelay_;
    spdlog::warn("group {}: reading its committed offsets failed: {}; registrations and commits wait, "
                 "next try in {} ms", name_, r.error, offsetsRetryDelay_.count());
  }
  flush(out);
  flushCommits();
  return nullptr;
}

void GroupController::flushCommits() {
  auto& commits = model_.commits();
  if (commits.hasInFlight() || !commits.hasPending() || !isServing(phase_.get()) || !ctx_.connected) return;
  if (!model_.committed().loaded) return loadOffsets();
  std::vector<protocol::PartitionOffset> all;
  for (auto& c : commits.pending()) all.insert(all.end(), c.accepted.begin(), c.accepted.end());
  std::vector<zk::Op> ops;
  ctx_.offsets.writeOps(name_, model_.committed(), all, ops);
  commits.launch();
  ctx_.zk.multi(std::move(ops), completion<zk::MultiResult>(&GroupController::onCommitsDone));
}

const char* GroupController::onCommitsDone(zk::MultiResult r, size_t, Outbox& out) {
  auto& commits = model_.commits();
  if (r.error == zk::Error::Ok) {
    model_.commitsApplied(out);
  } else if (zk::isDataError(r.error) && isServing(phase_.get())) {
    // The cache of which offset znodes exist was wrong: re-read and retry.
    spdlog::warn("group {}: offset transaction refused at op {}: {}; re-reading offsets", name_, r.failedOp, r.error);
    model_.offsetsInDoubt();
    commits.requeue();
  } else {
    spdlog::warn("group {}: {} commits failed: {}", name_, commits.inFlight().size(), r.error);
    commits.answerInFlight(fromZk(r.error), name_, out);
  }
  flushCommits();
  return nullptr;
}

// ---------------------------------------------------------------------------
// Handover (docs/design.md, "Handover")

// The member znodes the handover removed, created again in this server's
// session (so they live as long as this server controls the group). The
// generation does not move: for the members nothing changed.
void GroupController::adoptMembers(const std::vector<std::string>& ids) {
  std::vector<std::pair<std::string, std::string>> members;
  members.reserve(ids.size());
  for (auto& id : ids) {
    const GroupModel::Member* m = model_.member(id);
    members.emplace_back(id, m ? m->clientId : "");
  }
  phase_.to(GroupPhase::Writing);
  ctx_.zk.multi(zkops::adoptOps(paths(), model_.generation(), members),
                completion<zk::MultiResult>(&GroupController::onAdopted, ids.size()));
}

const char* GroupController::onAdopted(zk::MultiResult r, size_t count, Outbox& out) {
  const TxnOutcome outcome = zkops::classify(r, count + 1, 0);
  if (outcome == TxnOutcome::GroupGone) return "its znode is gone";
  if (outcome != TxnOutcome::Applied) {
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

// A handover waits this long for what was accepted before it to be written;
// what is still queued then is answered CONTROLLER_NOT_AVAILABLE.
constexpr Millis kHandoverDrainLimit{5000};

// Sends the handover transaction once nothing the group accepted is still
// queued or in flight.
void GroupController::maybeHandOver(TimePoint now, Outbox& out) {
  if (phase_.handover() != HandoverStage::Draining || !ctx_.connected) return;
  if (phase_.get() != GroupPhase::Idle) return;  // a write or a re-read first
  const MembershipBatch& batch = model_.batch();
  const bool queued = batch.hasPendingWrites() || batch.rejoins.hasPending() || model_.commits().hasPending() ||
                      model_.deletionWaiting();
  if (queued && now - phase_.job().since < kHandoverDrainLimit) return;
  if (model_.commits().hasInFlight()) return;
  if (queued) {
    spdlog::warn("group {}: what was queued was not written within {} ms of the handover's start; answered "
                 "CONTROLLER_NOT_AVAILABLE (the members retry with the next controller)",
                 name_, kHandoverDrainLimit.count());
    // The next controller computes with the partition counts it reads.
    model_.answerQueued(ErrorCode::CONTROLLER_NOT_AVAILABLE, out);
  }
  const auto& job = phase_.job();
  // What happened since the last membership transaction (this server's
  // takeover, say) goes with the group.
  std::optional<layout::HistoryRecord> history;
  if (model_.historyExists()) history = model_.historyRecord({});
  zkops::HandoverWrite w =
      zkops::handoverOps(paths(), model_.handoverRecord(job.from, job.to, ctx_.config.maxChangesPerTransaction),
                         model_.generation(), std::move(history));
  if (!w.recorded) {
    // The next controller waits one session timeout before it grants what
    // nobody reports, as after a failure.
    spdlog::warn("group {}: the handover record ({} bytes) is larger than ZooKeeper takes; handing over without it",
                 name_, w.recordBytes);
  }
  phase_.sendHandover();
  const size_t opCount = w.ops.size();
  ctx_.zk.multi(std::move(w.ops), completion<zk::MultiResult>(&GroupController::onHandedOver, opCount));
}

const char* GroupController::onHandedOver(zk::MultiResult r, size_t opCount, Outbox& out) {
  switch (zkops::classify(r, opCount, 0)) {
    case TxnOutcome::Applied:
      spdlog::info("group {}: handed over at generation {} (server {} claims it now)", name_, model_.generation(),
                   phase_.job().to);
      endHandover(true, "", out);
      goneAnswer_ = ErrorCode::NOT_CONTROLLER;
      return "handed over";
    case TxnOutcome::GroupGone:
      return "its znode is gone";
    case TxnOutcome::LastGone:
      endHandover(false, "its controller znode was already gone", out);
      goneAnswer_ = ErrorCode::NOT_CONTROLLER;
      return "its controller znode vanished";
    case TxnOutcome::Unknown:
      // Applied or not: a re-read of the controller znode tells. Until then
      // nothing is granted (new writes are still refused).
      spdlog::warn("group {}: the answer to its handover was lost ({}); re-reading whether it happened", name_,
                   r.error);
      phase_.verifyHandover();
      return nullptr;
    case TxnOutcome::Refused:
      phase_.to(GroupPhase::Stale);
      endHandover(false, fmt::format("the handover transaction failed at op {}: {}", r.failedOp, r.error), out);
      return nullptr;
  }
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
  std::optional<GroupPhaseMachine::Handover> job = phase_.endHandover();
  if (!job) return;
  HandoverResult result{ok, job->to, Millis(millisBetween(job->since, ctx_.time.now())), std::move(why)};
  if (!ok) spdlog::warn("group {}: handover to server {} failed: {}; still controlled here", name_, result.to, result.why);
  if (job->done) {
    out.push([done = std::move(job->done), result = std::move(result)]() mutable { done(std::move(result)); });
  }
}

}  // namespace groupcoord::adapter
