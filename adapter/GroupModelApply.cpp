// The group model applying what ZooKeeper said: a read of the group (a
// claim, a takeover, a re-read after a doubt), a membership transaction
// launched and applied, offsets read and written; and the assignment each
// generation gets.

#include <algorithm>
#include <chrono>
#include <set>

#include <spdlog/spdlog.h>

#include "adapter/GroupModel.h"
#include "metrics/Coordination.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;
using protocol::RebalanceEvent;
using protocol::RebalanceReason;

// ---------------------------------------------------------------------------
// A read of the group

GroupModel::Loaded GroupModel::applyRead(Read read, bool first, Instant at, Outbox& out) {
  Loaded loaded;
  auto s = layout::decodeSettings(read.settingsData);
  if (!s) {
    spdlog::error("group {}: its znode holds data this server cannot read ({} bytes); not serving it", name_,
                  read.settingsData.size());
    return loaded;
  }
  loaded.ok = true;
  settings_ = *s;
  // A Kafka group's member znodes are its Kafka members, written by the
  // Kafka port's side of the controller (adapter/KafkaGroups.h): not
  // members of this model, which would evict them.
  if (settings_.kafka) read.members.clear();
  settingsData_ = std::move(read.settingsData);
  // The history znode: what earlier controllers recorded (a takeover reads
  // it first), and after an unknown outcome the events of a transaction
  // that was applied after all.
  historyExists_ = read.history.has_value();
  int32_t lastWriter = -1;
  if (auto h = historyExists_ ? layout::decodeHistory(*read.history) : std::nullopt) {
    lastWriter = h->controller;
    const int64_t known = history_.latestGeneration();
    std::vector<RebalanceEvent> newer;
    for (auto& ev : h->events) {
      if (ev.generation > known) newer.push_back(std::move(ev));
    }
    history_.add(std::move(newer));
  }
  const int32_t before = version_;
  version_ = read.version;
  groupCversion_ = read.cversion;
  // A generation found by a read, not moved by a transaction this model
  // applied: what moved it (a rewind whose answer was lost, say) is not
  // known, so no member is kept from before it (keepsItsPartitions).
  if (version_ != before) keptFrom_ = version_;
  const TimePoint now = at.now;
  std::set<std::string> inZk(read.members.begin(), read.members.end());
  for (auto it = members_.begin(); it != members_.end();) {
    if (!inZk.count(it->first)) {
      // A removal whose answer was lost was applied: as when it is applied
      // with its answer, what the member held is free.
      const size_t freed = ownership_.releaseAll(it->first);
      spdlog::warn("group {}: member {} is not in ZooKeeper any more; it must register again ({} partitions free)",
                   name_, it->first, freed);
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
  auto& joins = batch_.joins.pending();
  for (auto it = joins.begin(); it != joins.end();) {
    if (!inZk.count(it->first)) {
      ++it;
      continue;
    }
    for (auto& w : it->second.waiters) batch_.rejoins.pending().push_back(Rejoin{it->first, std::move(w)});
    it = joins.erase(it);
  }
  auto& removals = batch_.removals.pending();
  for (auto it = removals.begin(); it != removals.end();) {
    if (inZk.count(it->first)) {
      ++it;
      continue;
    }
    it->second.answer(ErrorCode::NONE, name_, out);
    it = removals.erase(it);
  }
  bool targetKept = false;
  if (first) {
    targetKept = takeOver(read, at, lastWriter, loaded.adopt);
    loaded.topics = settings_.topics;
  } else if (before != version_) {
    spdlog::info("group {}: generation {} -> {} found in ZooKeeper", name_, before, version_);
  }
  if (first || before != version_) {
    movedHere_ = false;
    generationMoved(now);
  } else {
    restate();  // members may have gone
  }
  if (first && clientMode() && !members_.empty()) {
    // The members' metadata is in the previous controller's memory only:
    // a new generation makes every member register again, here.
    batch_.movesWaiting.push_back(event(RebalanceReason::OTHER,
                                        "server " + std::to_string(serverId_) +
                                            " controls the group now: every member registers again with it",
                                        at.wallMs));
    batch_.move.request();
  }
  if (members_.empty()) emptySince_ = now;
  if (!targetKept) retarget(std::nullopt);
  return loaded;
}

// A claim's first read: what members may still hold, from the handover
// record when it can be trusted, or else nothing granted that nobody
// reports for one session timeout. True when the record gave the
// generation's assignment.
bool GroupModel::takeOver(const Read& read, Instant at, int32_t lastWriter, std::vector<std::string>& adopt) {
  const TimePoint now = at.now;
  ownership_.clear();
  // A group at generation 0 never had a member: nobody can hold anything.
  if (version_ <= 0) {
    if (lastWriter >= 0) recordTakeover(RebalanceReason::CONTROLLER_TAKEOVER, lastWriter, at.wallMs);
    spdlog::info("group {}: serving at generation {} with {} members (session timeout {} ms{})", name_, version_,
                 members_.size(), settings_.sessionTimeoutMs, settings_.ephemeral ? ", ephemeral" : "");
    return false;
  }
  // The record of a handover is trusted when this claim is the first since
  // it was written: the handover removed the controller znode, this server
  // created it again, nothing else touched the group's children, and the
  // generation has not moved. Then it lists every member and everything
  // anybody may hold.
  std::optional<layout::HandoverRecord> record;
  if (read.handover) record = layout::decodeHandover(*read.handover);
  if (record && record->generation == version_ && record->cversion + 1 == read.cversion) {
    size_t held = 0;
    Assignment target;
    for (auto& [id, m] : record->members) {
      if (record->movedMembers && members_.emplace(id, Member{m.clientId, now, "", 0, -1}).second) {
        adopt.push_back(id);
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
    recordTakeover(RebalanceReason::HANDOVER, record->from, at.wallMs);
    spdlog::info(
        "group {}: handed over by server {}; serving at generation {} with {} members (session timeout {} ms{}); "
        "{} partitions held, the others granted at once",
        name_, record->from, version_, members_.size(), settings_.sessionTimeoutMs,
        settings_.ephemeral ? ", ephemeral" : "", held);
    return true;
  }
  // Members may still hold partitions granted by the previous controller:
  // nothing nobody reports is granted for one session timeout.
  ownership_.holdUnclaimedUntil(now + Millis(settings_.sessionTimeoutMs));
  recordTakeover(RebalanceReason::CONTROLLER_TAKEOVER, lastWriter, at.wallMs);
  spdlog::info(
      "group {}: serving at generation {} with {} members (session timeout {} ms{}); partitions nobody reports wait "
      "one session timeout{}",
      name_, version_, members_.size(), settings_.sessionTimeoutMs, settings_.ephemeral ? ", ephemeral" : "",
      record ? " (the handover record found is not from the last handover)" : "");
  return false;
}

layout::HandoverRecord GroupModel::handoverRecord(int32_t from, int32_t to, size_t maxChanges) const {
  layout::HandoverRecord record;
  record.from = from;
  record.to = to;
  record.generation = version_;
  record.cversion = groupCversion_ + 1;  // after removing the controller znode
  // The member znodes belong to this server's session: moved to the next
  // controller's (removed here, created there) unless there are too many
  // for one transaction; then they stay, and their members register again
  // when this server's session ends.
  record.movedMembers = members_.size() + 3 <= maxChanges;
  const auto& target = ownership_.target();
  for (auto& [id, m] : members_) {
    auto t = target.find(id);
    record.members.emplace(id, layout::HandedMember{m.clientId, ownership_.heldBy(id),
                                                    t == target.end() ? std::vector<Partition>{} : t->second});
  }
  return record;
}

// ---------------------------------------------------------------------------
// The membership transaction

GroupModel::Launched GroupModel::launchBatch(size_t maxChanges, Instant at) {
  Launched l;
  if (batch_.joins.hasPending() && batch_.joins.pending().size() + batch_.removals.pending().size() > maxChanges) {
    // More than one transaction carries: the joins' znodes first, in
    // slices, and one generation move for all of them at the end.
    batch_.launchSlice(maxChanges);
    for (auto& [id, j] : batch_.joins.inFlight()) l.joined.emplace_back(id, j.clientId);
    l.changes = l.joined.size();
    l.moves = false;
    return l;
  }
  l.changes = batch_.launch(maxChanges);
  for (auto& [id, _] : batch_.removals.inFlight()) l.removed.push_back(id);
  for (auto& [id, j] : batch_.joins.inFlight()) {
    if (!batch_.writtenInFlight.count(id)) l.joined.emplace_back(id, j.clientId);
  }
  for (auto& w : batch_.rewinds.inFlight()) l.rewound.insert(l.rewound.end(), w.accepted.begin(), w.accepted.end());
  // Why this transaction moves the generation, written with it.
  batch_.eventsInFlight = batchEvents(version_ + 1, at.wallMs);
  batch_.createsHistory = !historyExists_;
  l.createsHistory = batch_.createsHistory;
  l.history = historyRecord(batch_.eventsInFlight);
  return l;
}

GroupModel::Applied GroupModel::applyBatch(int32_t version, Instant at, std::optional<AssignedAhead> ahead,
                                           Outbox& out) {
  Applied a;
  a.from = version_;
  version_ = version;
  const TimePoint now = at.now;
  const size_t changes = batch_.changesInFlight();
  // Each event is logged once, here (a member's join, leave or eviction
  // among them).
  auto events = std::move(batch_.eventsInFlight);
  for (auto& e : events) e.generation = version_;
  recordNow(std::move(events));
  historyExists_ = true;
  if (batch_.createsHistory) ++groupCversion_;  // the history znode is a child of the group znode
  batch_.applied();
  for (auto& [id, rm] : batch_.removals.takeInFlight()) {
    if (auto m = members_.find(id); m != members_.end() && m->second.port != 0) rememberRemoved(id, m->second, now);
    members_.erase(id);
    size_t freed = ownership_.releaseAll(id);
    if (freed > 0) spdlog::info("group {}: {} partitions of member {} are free", name_, freed, id);
    ++(rm.evicted ? a.evicted : a.left);
    rm.answer(ErrorCode::NONE, name_, out);
  }
  auto joined = batch_.joins.takeInFlight();
  a.joined = joined.size();
  if (!joined.empty()) hadMembers_ = true;
  for (auto& [id, j] : joined) {
    Member& m = members_[id] = Member{j.clientId, now, j.host, j.port, at.wallMs, j.metadata, j.rack};
    m.connection = j.connection;
  }
  movedHere_ = true;
  generationMoved(now);
  if (a.joined + a.left + a.evicted > 0) membershipMovedAt_ = now;
  auto rewound = batch_.rewinds.takeInFlight();
  a.rewinds = rewound.size();
  for (auto& w : rewound) {
    committed_.apply(w.accepted);
    rewoundAt_ = version_;
    w.succeed(out);
  }
  metrics::coordination().generationMoves.add();
  if (a.evicted > 0) metrics::coordination().evictions.add(a.evicted);
  spdlog::info("group {}: generation {} -> {} ({} joined, {} left, {} evicted; {} members) in one transaction{}",
               name_, a.from, version_, a.joined, a.left, a.evicted, members_.size(),
               rewound.empty() && changes == 0 ? " (subscribed topics changed)" : "");
  if (ahead && ahead->from != a.from) ahead.reset();
  retarget(std::move(ahead));
  for (auto& [id, j] : joined)
    for (auto& w : j.waiters)
      out.push([resp = registration(id, now, w), w = std::move(w)]() mutable { w(std::move(resp)); });
  for (auto& rj : batch_.rejoins.takeInFlight())
    out.push([resp = registration(rj.memberId, now, rj.done), done = std::move(rj.done)]() mutable {
      done(std::move(resp));
    });
  if (members_.empty()) emptySince_ = now;
  return a;
}

void GroupModel::answerRejoins(TimePoint now, Outbox& out) {
  for (auto& rj : batch_.rejoins.takePending())
    out.push([resp = registration(rj.memberId, now, rj.done), done = std::move(rj.done)]() mutable {
      done(std::move(resp));
    });
}

bool GroupModel::emptiedOut() const {
  return settings_.ephemeral && hadMembers_ && members_.empty() && !batch_.hasPendingWrites();
}

// ---------------------------------------------------------------------------
// Offsets

void GroupModel::offsetsLoaded(OffsetsRead r) {
  committed_.offsets = std::move(r.offsets);
  committed_.topics = std::move(r.topics);
  committed_.loaded = true;
}

size_t GroupModel::commitsApplied(Outbox& out) {
  auto flight = commits_.takeInFlight();
  size_t n = 0;
  for (auto& c : flight) {
    committed_.apply(c.accepted);
    n += c.accepted.size();
    c.succeed(out);
  }
  spdlog::debug("group {}: {} offsets from {} commits durable in one transaction", name_, n, flight.size());
  return n;
}

// ---------------------------------------------------------------------------
// Assignment

// Groups at least this big get their assignment computed off the lock
// (inputsAfterBatch); smaller ones take microseconds, under it.
constexpr size_t kAssignAheadMembers = 256;
constexpr int64_t kAssignAheadPartitions = 4096;

// What each member holds now, sorted: stickiness is about that, not about
// what an earlier target promised (a partition nobody holds costs nothing
// to move).
Assignment GroupModel::heldNow() const {
  Assignment held;
  // Members and holdings are both sorted by id: one walk, each entry put
  // at the end (a 10,000-member group's inputs are built under the lock).
  const auto& holdings = ownership_.holdings();
  auto h = holdings.begin();
  for (auto& [id, _] : members_) {
    while (h != holdings.end() && h->first < id) ++h;
    auto& ps = held.emplace_hint(held.end(), id, std::vector<Partition>{})->second;
    if (h != holdings.end() && h->first == id) ps.assign(h->second.begin(), h->second.end());
  }
  return held;
}

GroupModel::AssignmentInputs GroupModel::inputsNow() const {
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
  if (!in.racks.members.empty()) in.racks.replicas = topics_.replicaRacks(settings_);
  in.counts = topics_.partitionCounts(settings_);
  return in;
}

// The members, holdings and racks the transaction in flight leads to: its
// removals gone (with what they held), its joins in, holding nothing.
std::optional<GroupModel::AssignmentInputs> GroupModel::inputsAfterBatch() const {
  if (clientMode()) return std::nullopt;
  AssignmentInputs in;
  in.counts = topics_.partitionCounts(settings_);
  int64_t partitions = 0;
  for (auto& [_, n] : in.counts) partitions += std::max(n, 0);
  const auto& removed = batch_.removals.inFlight();
  const auto& joined = batch_.joins.inFlight();
  if (members_.size() + joined.size() < kAssignAheadMembers && partitions < kAssignAheadPartitions) {
    return std::nullopt;
  }
  const auto& holdings = ownership_.holdings();
  auto h = holdings.begin();
  for (auto& [id, m] : members_) {
    if (removed.count(id)) continue;
    while (h != holdings.end() && h->first < id) ++h;
    auto& held = in.held.emplace_hint(in.held.end(), id, std::vector<Partition>{})->second;
    if (h != holdings.end() && h->first == id) held.assign(h->second.begin(), h->second.end());
    if (!m.rack.empty()) in.racks.members[id] = m.rack;
  }
  for (auto& [id, j] : joined) {
    in.held.try_emplace(id);
    if (!j.rack.empty()) in.racks.members[id] = j.rack;
  }
  in.ids.reserve(in.held.size());
  for (auto& [id, _] : in.held) in.ids.push_back(id);
  if (!in.racks.members.empty()) in.racks.replicas = topics_.replicaRacks(settings_);
  return in;
}

bool GroupModel::stillHolds(const AssignmentInputs& in) const {
  // What the assignment depends on: the members (sorted, as in.ids), the
  // partition counts and the racks. Looked at in place rather than built
  // again (inputsNow): a 10,000-member group's holdings took tens of
  // milliseconds to build, under the lock.
  if (in.ids.size() != members_.size() || in.counts != knownPartitions_) return false;
  size_t i = 0;
  size_t racked = 0;
  for (const auto& [id, m] : members_) {
    if (in.ids[i++] != id) return false;
    if (m.rack.empty()) continue;
    ++racked;
    auto r = in.racks.members.find(id);
    if (r == in.racks.members.end() || r->second != m.rack) return false;
  }
  if (racked != in.racks.members.size()) return false;
  return racked == 0 || in.racks.replicas == topics_.replicaRacks(settings_);
}

void GroupModel::retarget(std::optional<AssignedAhead> ahead) {
  knownPartitions_ = topics_.partitionCounts(settings_);
  if (clientMode()) {
    ownership_.setTarget({});  // the members assign; the server holds no target
    return;
  }
  Assignment target;
  double tookMs = 0;
  size_t moved = 0;
  const bool usedAhead = ahead && stillHolds(ahead->inputs);
  if (usedAhead) {
    // Sticky to what was held when it was computed; anything released
    // since only makes it move less than it says.
    target = std::move(ahead->target);
    tookMs = ahead->tookMs;
    moved = ahead->moves;
  } else {
    AssignmentInputs in = inputsNow();
    const auto t0 = std::chrono::steady_clock::now();
    target = assignPartitions(in.ids, in.counts, in.held, in.racks);
    tookMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    moved = countMoves(in.held, target);
  }
  size_t total = 0;
  for (auto& [_, ps] : target) total += ps.size();
  if (!ownership_.target().empty() || total > 0) {
    spdlog::info("group {}: generation {} assigns {} partitions over {} members ({} change owner; computed in {:.1f} "
                 "ms {})",
                 name_, version_, total, members_.size(), moved, tookMs,
                 usedAhead ? "off the group's lock" : "under the group's lock");
  }
  ownership_.setTarget(std::move(target));
}

bool GroupModel::topicChanged(const std::string& topic, Instant at) {
  auto& ts = settings_.topics;
  if (std::find(ts.begin(), ts.end(), topic) == ts.end()) return false;
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
  if (now == current) return false;
  spdlog::info("group {}: subscribed topic {} changed: rebalancing", name_, topic);
  for (auto& e : topicEvents(at.wallMs)) {
    // One event per topic and move: a later change of the same topic
    // before the transaction replaces the earlier one.
    std::erase_if(batch_.movesWaiting, [&](const RebalanceEvent& o) { return o.subject == e.subject; });
    batch_.movesWaiting.push_back(std::move(e));
  }
  batch_.move.request();
  return true;
}

}  // namespace groupcoord::adapter
