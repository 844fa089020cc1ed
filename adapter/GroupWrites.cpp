// A controlled group's ZooKeeper reads and transactions: loading, the
// batched membership transaction, offsets, and deletion. Requests and
// liveness are in GroupController.cpp.

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "adapter/Fanout.h"
#include "adapter/GroupController.h"
#include "adapter/ZkErrors.h"
#include "metrics/Coordination.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;
using protocol::PartitionOffset;

template <class Result>
std::function<void(Result)> GroupController::completion(const char* (GroupController::*continuation)(Result,
                                                                                                     Outbox&)) {
  return ctx_.epoch.bind([self = shared_from_this(), continuation](Result r) {
    const char* gone = nullptr;
    ErrorCode answer;
    {
      LockedOutbox lk(self->mu_, &self->quietUntil_);
      if (self->phase_.get() == GroupPhase::Dropped) return;
      gone = (self.get()->*continuation)(std::move(r), lk.out);
      answer = self->goneAnswer_;
    }
    if (gone) self->ctx_.vanished(self->name_, answer, gone);
  });
}

template <class Result>
std::function<void(Result)> GroupController::completion(
    const char* (GroupController::*continuation)(size_t, Result, Outbox&), size_t opCount) {
  return ctx_.epoch.bind([self = shared_from_this(), continuation, opCount](Result r) {
    const char* gone = nullptr;
    ErrorCode answer;
    {
      LockedOutbox lk(self->mu_, &self->quietUntil_);
      if (self->phase_.get() == GroupPhase::Dropped) return;
      gone = (self.get()->*continuation)(opCount, std::move(r), lk.out);
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
  if (handover_ && handover_->verifying) {
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

const char* GroupController::onReloaded(Loaded read, Outbox& out) {
  zk::GetResult& group = read.group;
  zk::ChildrenResult& members = read.members;
  const bool first = phase_.get() == GroupPhase::Loading;
  if (group.error == zk::Error::NoNode) return "its znode is gone";
  // Until a read succeeds, memory still has to be re-read.
  const GroupPhase failed = first ? GroupPhase::Claimed : GroupPhase::Stale;
  zk::Error e = group.error != zk::Error::Ok ? group.error : members.error;
  if (e == zk::Error::Ok && read.history.error != zk::Error::NoNode) e = read.history.error;
  if (e != zk::Error::Ok) {
    spdlog::warn("group {}: reading it from ZooKeeper failed: {}; will retry", name_, e);
    phase_.to(failed);
    return nullptr;
  }
  if (handover_ && handover_->verifying) {
    if (const char* gone = checkHandedOver(read.controller, out)) return gone;
    if (handover_ && handover_->verifying) {
      phase_.to(failed);
      return nullptr;
    }
  }
  auto s = layout::decodeSettings(group.data);
  if (!s) {
    spdlog::error("group {}: its znode holds data this server cannot read ({} bytes); not serving it", name_,
                  group.data.size());
    phase_.to(failed);
    return nullptr;
  }
  settings_ = *s;
  settingsData_ = std::move(group.data);
  // The history znode: what earlier controllers recorded (a takeover reads
  // it first), and after an unknown outcome the events of a transaction
  // that was applied after all.
  historyExists_ = read.history.error == zk::Error::Ok;
  int32_t lastWriter = -1;
  if (auto h = historyExists_ ? layout::decodeHistory(read.history.data) : std::nullopt) {
    lastWriter = h->controller;
    const int64_t known = history_.latestGeneration();
    std::vector<protocol::RebalanceEvent> newer;
    for (auto& ev : h->events) {
      if (ev.generation > known) newer.push_back(std::move(ev));
    }
    history_.add(std::move(newer));
  }
  const int32_t before = version_;
  version_ = group.stat.version;
  groupCversion_ = group.stat.cversion;
  const TimePoint now = ctx_.time.now();
  std::set<std::string> inZk(members.children.begin(), members.children.end());
  for (auto it = members_.begin(); it != members_.end();) {
    if (!inZk.count(it->first)) {
      spdlog::warn("group {}: member {} is not in ZooKeeper any more; it must register again", name_, it->first);
      it = members_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& id : inZk) {
    if (members_.emplace(id, Member{"", now, "", 0, -1}).second && !first) {
      spdlog::info("group {}: member {} found in ZooKeeper", name_, id);
    }
  }
  // Registrations whose member now exists were applied by a transaction
  // whose answer was lost: they are members. Leaves whose member is gone
  // were applied too.
  auto& joins = joins_.pending();
  for (auto it = joins.begin(); it != joins.end();) {
    if (!inZk.count(it->first)) {
      ++it;
      continue;
    }
    for (auto& w : it->second.waiters) rejoins_.pending().push_back(Rejoin{it->first, std::move(w)});
    it = joins.erase(it);
  }
  auto& removals = removals_.pending();
  for (auto it = removals.begin(); it != removals.end();) {
    if (inZk.count(it->first)) {
      ++it;
      continue;
    }
    it->second.answer(ErrorCode::NONE, name_, out);
    it = removals.erase(it);
  }
  phase_.to(GroupPhase::Idle);
  TakenOver taken;
  if (first) {
    taken = takeOver(group, read.handover, now, lastWriter);
    for (auto& t : settings_.topics) ctx_.topics.watch(t);
  } else if (before != version_) {
    spdlog::info("group {}: generation {} -> {} found in ZooKeeper", name_, before, version_);
  }
  if (first || before != version_) {
    generationMoved(now);
  } else {
    countRegistered();  // members may have gone
  }
  if (first && clientMode() && !members_.empty()) {
    // The members' metadata is in the previous controller's memory only:
    // a new generation makes every member register again, here.
    waitingEvents_.push_back(event(protocol::RebalanceReason::OTHER,
                                 "server " + std::to_string(ctx_.serverId) +
                                     " controls the group now: every member registers again with it"));
    bump_.request();
  }
  if (members_.empty()) emptySince_ = now;
  if (!taken.targetKept) retarget();
  if (!taken.adopt.empty()) return adoptMembers(taken.adopt), nullptr;
  flush(out);
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
  if (!committed_.loaded && (rewinds_.hasPending() || rejoins_.hasPending() || joins_.hasPending())) {
    return loadOffsets();  // registrations carry committed offsets; rewinds need to know what exists
  }
  if (!hasPendingWrites()) {
    for (auto& rj : rejoins_.takePending()) {
      out.push([done = std::move(rj.done), resp = registration(rj.memberId)]() mutable { done(std::move(resp)); });
    }
    if (!deletions_.empty()) {
      if (members_.empty()) {
        removeSubtree();
      } else {
        answerDeletions(ErrorCode::GROUP_NOT_EMPTY, out);
      }
    }
    return;
  }
  // At most one transaction per batch interval: changes arriving together
  // (a join storm) wait for the tick and go out as one.
  const TimePoint now = ctx_.time.now();
  if (now - lastBatchAt_ < ctx_.config.batchInterval) return;
  lastBatchAt_ = now;
  writeBatch();
}

void GroupController::writeBatch() {
  std::vector<zk::Op> ops;
  size_t budget = ctx_.config.maxChangesPerTransaction;
  removals_.launch(budget);
  for (auto& [id, _] : removals_.inFlight()) ops.push_back(zk::makeRemove(ctx_.layout.memberPath(name_, id)));
  joins_.launch(budget);
  for (auto& [id, j] : joins_.inFlight()) {
    ops.push_back(zk::makeCreate(ctx_.layout.memberPath(name_, id), layout::encodeMember(j.clientId),
                                 zk::CreateMode::Ephemeral));
  }
  rejoins_.launch();
  std::vector<PartitionOffset> rewound;
  for (auto& w : rewinds_.pending()) rewound.insert(rewound.end(), w.accepted.begin(), w.accepted.end());
  if (!rewound.empty()) ctx_.offsets.writeOps(name_, committed_, rewound, ops);
  rewinds_.launch();
  bump_.launch();
  waitingEventsInFlight_ = std::move(waitingEvents_);
  waitingEvents_.clear();
  // Why this transaction moves the generation, written with it; the group
  // znode's setData stays the last op (its result gives the generation).
  batchEvents_ = batchEvents(version_ + 1);
  historyCreating_ = !historyExists_;
  ops.push_back(historyOp(batchEvents_));
  ops.push_back(zk::makeSetData(ctx_.layout.groupPath(name_), settingsData_, version_));
  phase_.to(GroupPhase::Writing);
  metrics::coordination().transactionChanges.observe(ctx_.config.maxChangesPerTransaction - budget);
  const size_t opCount = ops.size();
  ahead_.reset();
  auto done = completion<zk::MultiResult>(&GroupController::onBatchDone, opCount);
  ctx_.zk.multi(std::move(ops), [self = shared_from_this(), done = std::move(done)](zk::MultiResult r) {
    if (r.error == zk::Error::Ok) self->assignAhead();
    done(std::move(r));
  });
}

const char* GroupController::onBatchDone(size_t opCount, zk::MultiResult r, Outbox& out) {
  const size_t changes = joins_.inFlight().size() + removals_.inFlight().size();
  if (r.error == zk::Error::Ok) {
    phase_.to(GroupPhase::Idle);
    onBatchApplied(r, changes, out);
  } else if (zk::isConnectionProblem(r.error)) {
    spdlog::warn("group {}: a transaction of {} membership changes failed with {}; its outcome is re-read when "
                 "ZooKeeper is back",
                 name_, changes, r.error);
    // The outcome is unknown: the registrations and leaves in flight are
    // told to retry; evictions (no waiter) are found again if the members
    // stay silent.
    joins_.answerInFlight(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
    removals_.answerInFlight(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
    rejoins_.answerInFlight(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
    rewinds_.answerInFlight(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
    bump_.requeue();
    requeueEvents();
    phase_.to(GroupPhase::Stale);
  } else if (r.error == zk::Error::NoNode && r.failedOp == static_cast<int>(opCount) - 1) {
    return "its znode is gone";  // the group znode itself
  } else {
    // Memory and ZooKeeper disagree (a member znode already there or
    // already gone, or the version moved): put the changes back, re-read,
    // and try again.
    ++failedBatches_;
    spdlog::warn("group {}: transaction of {} changes refused at op {}: {}; re-reading the group (attempt {})", name_,
                 changes, r.failedOp, r.error, failedBatches_);
    if (failedBatches_ > 3) {
      spdlog::error("group {}: giving up on {} changes after {} refused transactions", name_, changes,
                    failedBatches_);
      joins_.answerInFlight(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
      removals_.answerInFlight(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
      rejoins_.answerInFlight(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
      rewinds_.answerInFlight(ErrorCode::CONTROLLER_NOT_AVAILABLE, name_, out);
      bump_.complete();
      batchEvents_.clear();
      waitingEventsInFlight_.clear();
      failedBatches_ = 0;
    } else {
      joins_.requeue();
      removals_.requeue();
      rejoins_.requeue();
      rewinds_.requeue();
      bump_.requeue();
      requeueEvents();
      committed_.loaded = false;  // a rewind may have met an offset znode it did not know
    }
    phase_.to(GroupPhase::Stale);
  }
  if (settings_.ephemeral && hadMembers_ && members_.empty() && !hasPendingWrites()) {
    removeSubtree();  // its last member went: an ephemeral group goes with it
  } else {
    flush(out);
  }
  return nullptr;
}

void GroupController::onBatchApplied(const zk::MultiResult& r, size_t changes, Outbox& out) {
  const int32_t before = version_;
  version_ = r.results.empty() ? version_ + 1 : r.results.back().stat.version;
  failedBatches_ = 0;
  const TimePoint now = ctx_.time.now();
  // Each event is logged once, here (a member's join, leave or eviction
  // among them).
  for (auto& e : batchEvents_) e.generation = version_;
  recordNow(std::move(batchEvents_));
  batchEvents_.clear();
  waitingEventsInFlight_.clear();
  historyExists_ = true;
  if (historyCreating_) ++groupCversion_;  // the history znode is a child of the group znode
  historyCreating_ = false;
  size_t evicted = 0, left = 0;
  for (auto& [id, rm] : removals_.takeInFlight()) {
    if (auto m = members_.find(id); m != members_.end() && m->second.port != 0) {
      rememberRemoved(id, m->second, now);
    }
    members_.erase(id);
    size_t freed = ownership_.releaseAll(id);
    if (freed > 0) spdlog::info("group {}: {} partitions of member {} are free", name_, freed, id);
    ++(rm.evicted ? evicted : left);
    rm.answer(ErrorCode::NONE, name_, out);
  }
  auto joined = joins_.takeInFlight();
  if (!joined.empty()) hadMembers_ = true;
  const int64_t wallNow = ctx_.time.wallMs();
  for (auto& [id, j] : joined) members_[id] = Member{j.clientId, now, j.host, j.port, wallNow, j.metadata, j.rack, -1};
  generationMoved(now);
  auto rewound = rewinds_.takeInFlight();
  for (auto& w : rewound) {
    committed_.apply(w.accepted);
    rewoundAt_ = version_;
    w.succeed(out);
  }
  metrics::coordination().generationMoves.add();
  if (evicted > 0) metrics::coordination().evictions.add(evicted);
  bump_.complete();
  spdlog::info("group {}: generation {} -> {} ({} joined, {} left, {} evicted; {} members) in one transaction{}",
               name_, before, version_, joined.size(), left, evicted, members_.size(),
               rewound.empty() && changes == 0 ? " (subscribed topics changed)" : "");
  std::optional<AssignedAhead> ahead = std::exchange(ahead_, std::nullopt);
  if (ahead && ahead->from != before) ahead.reset();
  retarget(std::move(ahead));
  for (auto& [id, j] : joined)
    for (auto& w : j.waiters)
      out.push([w = std::move(w), resp = registration(id)]() mutable { w(std::move(resp)); });
  for (auto& rj : rejoins_.takeInFlight())
    out.push([done = std::move(rj.done), resp = registration(rj.memberId)]() mutable { done(std::move(resp)); });
  if (members_.empty()) emptySince_ = now;
}

// ---------------------------------------------------------------------------
// Deletion: the group's whole subtree in one transaction: offsets, members
// (which must be empty), the controller znode and the group znode at the
// version this controller knows.

void GroupController::removeSubtree() {
  if (isBusy(phase_.get()) || !ctx_.connected) return;
  phase_.to(GroupPhase::Deleting);
  ctx_.offsets.list(name_, completion<OffsetsListing>(&GroupController::onSubtreeListed));
}

const char* GroupController::onSubtreeListed(OffsetsListing listing, Outbox& out) {
  if (listing.error != zk::Error::Ok && listing.error != zk::Error::NoNode) {
    // The offsets could not be listed: deleting now could leave them behind.
    spdlog::warn("group {}: listing its offsets for deletion failed: {}", name_, listing.error);
    answerDeletions(fromZk(listing.error), out);
    phase_.to(GroupPhase::Stale);
    return nullptr;
  }
  std::vector<zk::Op> ops;
  if (listing.error == zk::Error::Ok) {
    for (auto& p : listing.leaves) ops.push_back(zk::makeRemove(p));
    for (auto& p : listing.topics) ops.push_back(zk::makeRemove(p));
    ops.push_back(zk::makeRemove(ctx_.layout.offsetsPath(name_)));
  }
  ops.push_back(zk::makeRemove(ctx_.layout.membersPath(name_)));
  if (historyExists_) ops.push_back(zk::makeRemove(ctx_.layout.historyPath(name_)));
  ops.push_back(zk::makeRemove(ctx_.layout.controllerPath(name_)));
  ops.push_back(zk::makeRemove(ctx_.layout.groupPath(name_), version_));
  const size_t opCount = ops.size();
  ctx_.zk.multi(std::move(ops), completion<zk::MultiResult>(&GroupController::onSubtreeRemoved, opCount));
  return nullptr;
}

const char* GroupController::onSubtreeRemoved(size_t opCount, zk::MultiResult r, Outbox& out) {
  ErrorCode answer;
  if (r.error == zk::Error::Ok) {
    answer = ErrorCode::NONE;
    spdlog::info("group {}: deleted with its offsets at generation {} ({})", name_, version_,
                 settings_.ephemeral && deletions_.empty() ? "ephemeral group, no members left" : "on request");
  } else if (r.error == zk::Error::NotEmpty) {
    answer = ErrorCode::GROUP_NOT_EMPTY;
  } else {
    spdlog::warn("group {}: deleting it failed at op {} of {}: {}", name_, r.failedOp, opCount, r.error);
    answer = fromZk(r.error);
  }
  answerDeletions(answer, out);
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

const char* GroupController::onOffsetsLoaded(OffsetsRead r, Outbox& out) {
  phase_.to(GroupPhase::Idle);
  if (r.error == zk::Error::Ok) {
    committed_.offsets = std::move(r.offsets);
    committed_.topics = std::move(r.topics);
    committed_.loaded = true;
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
  if (commits_.hasInFlight() || !commits_.hasPending() || !isServing(phase_.get()) || !ctx_.connected) return;
  if (!committed_.loaded) return loadOffsets();
  std::vector<PartitionOffset> all;
  for (auto& c : commits_.pending()) all.insert(all.end(), c.accepted.begin(), c.accepted.end());
  std::vector<zk::Op> ops;
  ctx_.offsets.writeOps(name_, committed_, all, ops);
  commits_.launch();
  ctx_.zk.multi(std::move(ops), completion<zk::MultiResult>(&GroupController::onCommitsDone));
}

const char* GroupController::onCommitsDone(zk::MultiResult r, Outbox& out) {
  if (r.error == zk::Error::Ok) {
    auto flight = commits_.takeInFlight();
    size_t n = 0;
    for (auto& c : flight) {
      committed_.apply(c.accepted);
      n += c.accepted.size();
      c.succeed(out);
    }
    spdlog::debug("group {}: {} offsets from {} commits durable in one transaction", name_, n, flight.size());
  } else if (zk::isDataError(r.error) && isServing(phase_.get())) {
    // The cache of which offset znodes exist was wrong: re-read and retry.
    spdlog::warn("group {}: offset transaction refused at op {}: {}; re-reading offsets", name_, r.failedOp, r.error);
    committed_.loaded = false;
    commits_.requeue();
  } else {
    spdlog::warn("group {}: {} commits failed: {}", name_, commits_.inFlight().size(), r.error);
    commits_.answerInFlight(fromZk(r.error), name_, out);
  }
  flushCommits();
  return nullptr;
}

}  // namespace groupcoord::adapter
