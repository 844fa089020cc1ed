// The group model's requests, liveness and DescribeGroup. What ZooKeeper
// said is applied in GroupModelApply.cpp; the history in GroupEvents.cpp.

#include "adapter/GroupModel.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "protocol/Codec.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;
using protocol::PartitionError;
using protocol::PartitionOffset;
using protocol::RebalanceEvent;
using protocol::RebalanceReason;
using protocol::TopicPartition;

std::string_view toString(MemberState s) {
  switch (s) {
    case MemberState::Unregistered: return "Unregistered";
    case MemberState::Registered: return "Registered";
    case MemberState::Leaving: return "Leaving";
  }
  return "?";
}

GroupModel::GroupModel(std::string name, int32_t serverId, const PartitionSource& topics, TimePoint created)
    : name_(std::move(name)), serverId_(serverId), topics_(topics), emptySince_(created) {}

const GroupModel::Member* GroupModel::member(std::string_view id) const {
  auto it = members_.find(id);
  return it == members_.end() ? nullptr : &it->second;
}

bool GroupModel::settled() const {
  return clientMode() ? registeredAtCurrent_ == members_.size() : ownership_.settled();
}

bool GroupModel::inStep() const {
  return heardAtCurrent_ == members_.size() && settled() && !batch_.hasPendingWrites() && !batch_.hasInFlight();
}

// ---------------------------------------------------------------------------
// Members' states

void GroupModel::markRegistered(Member& m) {
  if (m.registeredAt == version_) return;
  m.registeredAt = version_;
  ++registeredAtCurrent_;
  if (m.heardAt != version_) {
    m.heardAt = version_;
    ++heardAtCurrent_;
  }
  if (m.state != MemberState::Leaving) m.state = MemberState::Registered;
}

void GroupModel::restate() {
  registeredAtCurrent_ = 0;
  heardAtCurrent_ = 0;
  const bool removals = !batch_.removals.empty();
  for (auto& [id, m] : members_) {
    const bool registered = m.registeredAt == version_;
    registeredAtCurrent_ += registered ? 1 : 0;
    heardAtCurrent_ += m.heardAt == version_ ? 1 : 0;
    if (removals && batch_.removing(id)) {
      m.state = MemberState::Leaving;
    } else {
      m.state = registered ? MemberState::Registered : MemberState::Unregistered;
    }
  }
}

void GroupModel::generationMoved(TimePoint now) {
  movedAt_ = now;
  restate();
  // Client mode evicts members that do not register in time: the liveness
  // scan must run by then.
  if (clientMode()) nextLivenessScan_ = std::min(nextLivenessScan_, now + Millis(settings_.sessionTimeoutMs));
}

void GroupModel::queueRemoval(const std::string& id, Removal rm) {
  if (auto m = members_.find(id); m != members_.end()) m->second.state = MemberState::Leaving;
  batch_.removals.pending().emplace(id, std::move(rm));
}

// ---------------------------------------------------------------------------
// Requests

// The answer to a registration at the current generation, in the form the
// registrant asked for: the member's assignment as far as it can be
// granted now (partitions another member still holds are left out until
// released), and the members. Versions 0 and 1 list every member; from
// version 2 (docs/protocol.md §16) a server-mode answer lists none, and a
// client-mode one the list shared by every answer at this generation, or
// only what changed since the generation the member holds.
protocol::RegisterConsumerResponse GroupModel::registration(const std::string& member, TimePoint now,
                                                            const Registrant& form) {
  protocol::RegisterConsumerResponse r;
  r.group = name_;
  r.consumerId = member;
  r.generation = version_;
  r.mode = settings_.mode;
  if (form.version < 2) {
    r.members.reserve(members_.size());
    for (auto& [id, _] : members_) r.members.push_back(id);
    if (clientMode()) {
      // The member list is the answer, in one order for everybody (by id),
      // each with its metadata.
      r.memberData = *memberList();
    }
  } else {
    r.memberCount = static_cast<int32_t>(members_.size());
    if (clientMode()) {
      auto list = memberList();
      auto delta = form.knownGeneration >= 0 ? lists_.since(form.knownGeneration) : nullptr;
      if (delta) {
        r.listBase = form.knownGeneration;
        r.memberData = delta->added;
        r.removedMembers = delta->removed;
      } else {
        r.memberData = *list;
      }
    }
  }
  if (!clientMode()) {
    for (auto& p : ownership_.grant(member, now))
      r.partitions.push_back(PartitionOffset{p.topic, p.partition, committed_.of(p)});
  }
  if (auto it = members_.find(member); it != members_.end()) {
    markRegistered(it->second);
    // What it reported outside its target stays recorded as its own until
    // its heartbeat at this generation releases it; its client drops it on
    // this answer.
    it->second.recordExactAt = !clientMode() && ownership_.holdsOnlyItsTarget(member) ? version_ : -1;
  }
  r.error = ErrorCode::NONE;
  return r;
}

std::shared_ptr<const MemberLists::List> GroupModel::memberList() {
  return lists_.current(version_, {members_.version(), metadataChanges_}, [this] {
    MemberLists::List l;
    l.reserve(members_.size());
    for (auto& [id, m] : members_) l.push_back(protocol::MemberMetadata{id, m.metadata, m.rack});
    return l;
  }, movedHere_);
}

bool GroupModel::heard(std::string_view memberId, TimePoint now) {
  auto it = members_.find(memberId);
  if (it == members_.end() || it->second.state == MemberState::Leaving) return false;
  it->second.lastSeen = std::max(it->second.lastSeen, now);
  return true;
}

protocol::HeartbeatResponse GroupModel::heartbeatChecked(const protocol::HeartbeatView& r,
                                                         const protocol::Caller& caller, TimePoint now,
                                                         MemberCache* cache, bool* moved) {
  protocol::HeartbeatResponse resp;
  resp.generation = version_;
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
    return resp;
  }
  if (member == nullptr || member->state == MemberState::Leaving) {
    resp.error = ErrorCode::UNKNOWN_CONSUMER;
    return resp;
  }
  member->lastSeen = now;
  if (r.generation == version_ && member->heardAt != version_) {
    member->heardAt = version_;
    ++heardAtCurrent_;
  }
  if (member->port == 0 && caller.port != 0) {
    // Found in ZooKeeper (a takeover): where it connects from is learnt here.
    member->host = caller.host;
    member->port = caller.port;
  }
  if (r.generation != version_) {
    if (keepsItsPartitions(r, *member, now)) {
      // Version 2: the move leaves this member as it is; it takes the
      // generation from this answer instead of registering again.
      markRegistered(*member);
      member->recordExactAt = version_;
      member->inSyncAt = ownership_.epoch();
      resp.error = ErrorCode::NONE;
    } else {
      resp.error = ErrorCode::REBALANCE_NEEDED;
    }
  } else if (clientMode()) {
    // The barrier: nobody starts on this generation before everybody has
    // registered at it (and so stopped using the previous one).
    resp.error = member->registeredAt != version_                ? ErrorCode::REBALANCE_NEEDED
                 : registeredAtCurrent_ == members_.size() ? ErrorCode::NONE
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
      if (ownership_.releaseUntargeted(id) > 0 && moved != nullptr) *moved = true;
      // Its client speaks this generation: it has dropped what its
      // registration's answer left out, and that is released now.
      if (member->registeredAt == version_) member->recordExactAt = version_;
      const bool due = ownership_.due(id, now);
      resp.error = due ? ErrorCode::REBALANCE_NEEDED : ErrorCode::NONE;
      member->inSyncAt = due || grace ? 0 : ownership_.epoch();
    }
  }
  return resp;
}

bool GroupModel::keepsItsPartitions(const protocol::HeartbeatView& r, const Member& m, TimePoint now) const {
  // Registered here at the generation it speaks of, with the record of what
  // it holds exact at it (it holds what that registration granted, less
  // what it has released since; a partition it reported outside its target
  // is recorded as its own until its heartbeat at that generation released
  // it, and a move meanwhile may have put it back in its target); no rewind
  // since (its offsets would be stale), nor a generation found by a read
  // (what moved it is not known); server mode (a client-mode member needs
  // the new member list); no grace (what it holds may not be known); and
  // what it holds is exactly its target now: nothing to give up, nothing
  // to take (docs/design.md, "Moves that leave a member as it is").
  return r.version >= 2 && !clientMode() && r.generation >= 0 && r.generation < version_ &&
         m.registeredAt == r.generation && m.recordExactAt == r.generation && m.state != MemberState::Leaving &&
         rewoundAt_ <= r.generation &&
         keptFrom_ <= r.generation && !ownership_.inGrace(now) &&
         ownership_.holdsExactlyItsTarget(std::string(r.consumerId));
}

protocol::HeartbeatResponse GroupModel::recheck(const protocol::HeartbeatView& r, const protocol::Caller& caller,
                                                TimePoint now, bool* moved) {
  auto it = members_.find(r.consumerId);
  const TimePoint seen = it != members_.end() ? it->second.lastSeen : TimePoint{};
  protocol::HeartbeatResponse resp = heartbeatChecked(r, caller, now, nullptr, moved);
  if (it != members_.end()) it->second.lastSeen = seen;
  return resp;
}

ErrorCode GroupModel::checkRegistration(const protocol::RegisterConsumerRequest& r, size_t maxMetadataBytes) const {
  if (r.metadata.size() > maxMetadataBytes || r.rack.size() > 64 ||
      (!r.rack.empty() && !protocol::isValidName(r.rack))) {
    return ErrorCode::INVALID_REQUEST;
  }
  return ErrorCode::NONE;
}

GroupModel::Registration GroupModel::registerMember(const protocol::RequestHeader& h,
                                                    protocol::RegisterConsumerRequest& r, const std::string& id,
                                                    const protocol::Caller& caller, Instant at, Serving s,
                                                    protocol::ResponseCallback& done, Outbox& out) {
  auto refuse = [&](ErrorCode e) {
    Rejoin{r.consumerId, Registrant{std::move(done), h.version}}.answer(e, name_, out);
    return Registration::Refused;
  };
  if (settings_.kafka) {
    // Its members are Kafka consumers, whose rules are not these
    // (docs/kafka.md): a native member would share nothing with them.
    spdlog::warn("group {}: refused a native registration from {}: the group belongs to Kafka consumers (its "
                 "settings say \"protocol\":\"kafka\"); use another group name",
                 name_, caller.address());
    return refuse(ErrorCode::INVALID_REQUEST);
  }
  // Sent on a connection older than the one the member last registered on:
  // a request its client gave up on, held up in the network until the
  // client had moved to a new connection. Nothing it says is current, and
  // what it would grant would go in an answer nobody reads, leaving the
  // controller sure the member holds partitions it never got (docs/design.md,
  // "Stale registrations").
  if (auto known = members_.find(id); known != members_.end() && caller.connection != 0 &&
                                      known->second.connection > caller.connection) {
    spdlog::info("group {}: a registration of member {} from {} came on an older connection than its last one: "
                 "refused as stale",
                 name_, id, caller.address());
    ++staleRegistrations_;
    return refuse(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  }
  // What the member says it holds: releases what it no longer reports and,
  // after a takeover, tells this controller who holds what.
  ownership_.reportOwned(id, r.owned);
  if (!members_.count(id)) {
    // Not a member (yet): if it never becomes one, what it reported is
    // freed one session timeout after it was last heard (scanLiveness).
    unjoinedHeard_[id] = at.now;
    nextLivenessScan_ = std::min(nextLivenessScan_, at.now + Millis(settings_.sessionTimeoutMs));
  }
  // A version-0 answer cannot carry the member list a client-mode member needs.
  if (clientMode() && h.version < 1) return refuse(ErrorCode::UNSUPPORTED_VERSION);
  auto member = members_.find(id);
  if (member != members_.end() && !batch_.removals.inFlight().count(id)) {
    // Still a member: a restart within the session timeout costs no
    // rebalance. A queued eviction or leave is called off.
    Member& m = member->second;
    m.lastSeen = at.now;
    m.connection = std::max(m.connection, caller.connection);
    if (caller.port != 0) {
      m.host = caller.host;
      m.port = caller.port;
    }
    if (m.metadata != r.metadata || m.rack != r.rack) {
      m.metadata = r.metadata;
      m.rack = r.rack;
      ++metadataChanges_;
      if (clientMode()) {
        // Everybody must see the new metadata: a new generation.
        RebalanceEvent e = event(RebalanceReason::OTHER, "member " + id + " registered with new metadata", at.wallMs);
        e.consumerId = id;
        e.clientId = m.clientId;
        e.host = m.host;
        batch_.movesWaiting.push_back(std::move(e));
        batch_.move.request();
      }
    }
    if (auto rm = batch_.removals.pending().find(id); rm != batch_.removals.pending().end()) {
      rm->second.answer(ErrorCode::NONE, name_, out);
      batch_.removals.pending().erase(rm);
      m.state = m.registeredAt == version_ ? MemberState::Registered : MemberState::Unregistered;
      spdlog::info("group {}: member {} registered again before its removal was written; it stays", name_, id);
    }
    // Answered at the current generation unless a write is about to move
    // it. A join waiting out its window (docs/design.md, "Coalesced joins")
    // does not hold it back: the move that join makes reaches this member
    // when it is written, at once for a held heartbeat.
    if (s.idle && !batch_.hasWritesDue(at.now, joinWindowMax_) && committed_.loaded) {
      out.push([done = std::move(done), resp = registration(id, at.now, Registrant{nullptr, h.version,
                                                                                    r.knownGeneration})]() mutable {
        done(std::move(resp));
      });
      return Registration::Answered;
    }
    batch_.rejoins.pending().push_back(Rejoin{id, Registrant{std::move(done), h.version, r.knownGeneration}});
    return Registration::Rejoined;
  }
  if (!s.connected) return refuse(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  // Joins coalesce while the group forms (nobody in it yet) or its
  // membership moves; a join into a group at rest goes out at once.
  const bool forming = members_.empty();
  const bool moving = batch_.changesInFlight() > 0 || !batch_.written.empty() ||
                      (membershipMovedAt_ && at.now - *membershipMovedAt_ < joinWindowMax_);
  batch_.noteJoin(at.now, forming || moving ? joinWindow_ : Millis(0));
  auto& j = batch_.joins.pending()[id];
  j.memberId = id;
  j.clientId = h.clientId.value_or("");
  j.host = caller.host;
  j.port = caller.port;
  j.connection = std::max(j.connection, caller.connection);
  j.metadata = r.metadata;
  j.rack = r.rack;
  if (r.consumerId.empty() && caller.port != 0) {
    // The same connection and ClientId as a member removed within the
    // session timeout: that client again, under a new id.
    auto was = removedFrom_.find(caller.address());
    if (was != removedFrom_.end() && was->second.clientId == j.clientId &&
        at.now - was->second.at <= Millis(settings_.sessionTimeoutMs)) {
      j.replaces = was->second.id;
      removedFrom_.erase(was);
    }
  }
  j.waiters.push_back(Registrant{std::move(done), h.version, r.knownGeneration});
  return Registration::Joining;
}

bool GroupModel::leave(const protocol::LeaveGroupRequest& r, bool connected, protocol::ResponseCallback& done,
                       Outbox& out) {
  auto answer = [&](ErrorCode e) {
    out.push([done = std::move(done), e] { done(protocol::LeaveGroupResponse{e}); });
    return false;
  };
  auto& joins = batch_.joins.pending();
  if (auto j = joins.find(r.consumerId); j != joins.end()) {
    // Left before its registration was written: nothing to write.
    j->second.answer(ErrorCode::UNKNOWN_CONSUMER, name_, out);
    joins.erase(j);
    return answer(ErrorCode::NONE);
  }
  if (!members_.count(r.consumerId) || batch_.removals.inFlight().count(r.consumerId)) {
    return answer(ErrorCode::UNKNOWN_CONSUMER);
  }
  if (!connected) return answer(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  if (auto rm = batch_.removals.pending().find(r.consumerId); rm != batch_.removals.pending().end()) {
    rm->second.evicted = false;
    rm->second.waiters.push_back(std::move(done));
    return true;
  }
  Removal rm;
  rm.memberId = r.consumerId;
  rm.waiters.push_back(std::move(done));
  queueRemoval(r.consumerId, std::move(rm));
  return true;
}

ErrorCode GroupModel::deletable() const {
  return members_.empty() && batch_.joins.empty() ? ErrorCode::NONE : ErrorCode::GROUP_NOT_EMPTY;
}

void GroupModel::answerDeletions(ErrorCode e, Outbox& out) {
  for (auto& d : deletions_) d.answer(e, name_, out);
  deletions_.clear();
}

// Checks each offset (partition exists, offset >= 0, and, when owner is
// given, held by that member) into accepted and results.
OffsetWrite GroupModel::checkOffsets(const std::vector<PartitionOffset>& offsets, const std::string* owner) const {
  OffsetWrite w;
  w.results.reserve(offsets.size());
  for (auto& o : offsets) {
    TopicPartition p{o.topic, o.partition};
    ErrorCode e = ErrorCode::NONE;
    if (!topics_.partitionExists(settings_, p)) {
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

// CommitOffsets: accepted only from the partition's holder; acknowledged
// once durable. Commits arriving while one is in flight go out together.
bool GroupModel::commit(const protocol::CommitOffsetsRequest& r, ErrorCode refusal, TimePoint now,
                        protocol::ResponseCallback& done, Outbox& out) {
  ErrorCode error = refusal;
  auto m = members_.find(r.consumerId);
  if (error == ErrorCode::NONE && m == members_.end()) {
    error = ErrorCode::UNKNOWN_CONSUMER;
  } else if (error == ErrorCode::NONE && r.generation < rewoundAt_) {
    // Offsets were rewound after this member's generation: its commit
    // would undo the rewind.
    error = ErrorCode::REBALANCE_NEEDED;
  } else if (error == ErrorCode::NONE && clientMode()) {
    // No owner to check: a commit must come from the current, agreed generation.
    if (r.generation != version_ || m->second.registeredAt != version_) {
      error = ErrorCode::REBALANCE_NEEDED;
    } else if (registeredAtCurrent_ != members_.size()) {
      error = ErrorCode::REBALANCE_IN_PROGRESS;
    }
  }
  if (error != ErrorCode::NONE) {
    out.push([done = std::move(done), error] { done(protocol::CommitOffsetsResponse{{}, error}); });
    return false;
  }
  m->second.lastSeen = now;
  OffsetWrite c = checkOffsets(r.offsets, clientMode() ? nullptr : &r.consumerId);
  c.kind = OffsetWrite::Kind::Commit;
  c.done = std::move(done);
  if (c.accepted.empty()) {
    c.succeed(out);
    return false;
  }
  commits_.pending().push_back(std::move(c));
  return true;
}

// RewindConsumer: the offsets and a new generation in one transaction, so
// every member registers again and receives the rewound offsets.
bool GroupModel::rewind(const protocol::RewindConsumerRequest& r, ErrorCode refusal, const std::string& user,
                        protocol::ResponseCallback& done, Outbox& out) {
  if (refusal != ErrorCode::NONE) {
    out.push([done = std::move(done), refusal] { done(protocol::RewindConsumerResponse{{}, refusal}); });
    return false;
  }
  OffsetWrite w = checkOffsets(r.offsets, nullptr);
  w.kind = OffsetWrite::Kind::Rewind;
  w.user = user;
  w.done = std::move(done);
  if (w.accepted.empty()) {
    w.succeed(out);
    return false;
  }
  batch_.rewinds.pending().push_back(std::move(w));
  return true;
}

// ---------------------------------------------------------------------------
// Liveness

size_t GroupModel::scanLiveness(TimePoint now) {
  auto timeout = Millis(settings_.sessionTimeoutMs);
  // Scanning every member on every tick would cost O(members) a tick for
  // nothing; the scan runs when the earliest possible timeout is due.
  // While a removal is pending it runs every tick, as the removal may fail
  // and leave the member in place.
  if (now < nextLivenessScan_ && members_.size() == membersAtScan_) return 0;
  TimePoint next = now + timeout;
  bool removing = false;
  size_t queued = 0;
  for (auto& [id, m] : members_) {
    if (m.state == MemberState::Leaving) {
      removing = true;
    } else if (now - m.lastSeen > timeout) {
      Removal rm;
      rm.memberId = id;
      rm.evicted = true;
      rm.silentMs = millisBetween(m.lastSeen, now);
      queueRemoval(id, std::move(rm));
      removing = true;
      ++queued;
    } else if (clientMode() && m.registeredAt != version_ && now - movedAt_ > timeout) {
      // Heartbeating, but not registered at this generation in time: it
      // holds up everybody else's start.
      Removal rm;
      rm.memberId = id;
      rm.evicted = true;
      rm.unregistered = true;
      rm.silentMs = millisBetween(movedAt_, now);
      queueRemoval(id, std::move(rm));
      removing = true;
      ++queued;
    } else {
      next = std::min(next, m.lastSeen + timeout);
      if (clientMode() && m.registeredAt != version_) next = std::min(next, movedAt_ + timeout);
    }
  }
  // Partitions reported by registrations that never became members (refused,
  // or left before they were written): the client, answered nothing it could
  // use, fences one session timeout after its last renewal, which came
  // before this controller last heard it; from then on nobody holds them.
  // Any other holder outside the member list starts its clock now.
  for (const auto& id : ownership_.holders()) {
    if (!members_.count(id) && !unjoinedHeard_.count(id)) unjoinedHeard_[id] = now;
  }
  for (auto u = unjoinedHeard_.begin(); u != unjoinedHeard_.end();) {
    const std::string& id = u->first;
    if (members_.count(id)) {
      u = unjoinedHeard_.erase(u);
    } else if (batch_.joins.pending().count(id) || batch_.joins.inFlight().count(id) || batch_.written.count(id)) {
      next = std::min(next, now + timeout);
      ++u;
    } else if (now - u->second > timeout) {
      if (size_t freed = ownership_.releaseAll(id); freed > 0) {
        spdlog::info("group {}: {} partitions reported by {}, which never became a member, are free after its "
                     "session timeout",
                     name_, freed, id);
      }
      u = unjoinedHeard_.erase(u);
    } else {
      next = std::min(next, u->second + timeout);
      ++u;
    }
  }
  nextLivenessScan_ = removing ? now : next;
  membersAtScan_ = members_.size();
  return queued;
}

bool GroupModel::abandoned(TimePoint now) const {
  return settings_.ephemeral && members_.empty() && !batch_.joins.hasPending() &&
         (hadMembers_ || now - emptySince_ >= Millis(settings_.sessionTimeoutMs));
}

bool GroupModel::quiet() const {
  return !batch_.hasPendingWrites() && !batch_.hasInFlight() && !batch_.rejoins.hasPending() && commits_.empty() &&
         deletions_.empty() && !(settings_.ephemeral && members_.empty());
}

// ---------------------------------------------------------------------------
// Answers to everything waiting

void GroupModel::answerAll(ErrorCode e, Outbox& out) {
  batch_.answerAll(e, name_, out);
  answerDeletions(e, out);
  commits_.answerAll(e, name_, out);
  restate();
}

size_t GroupModel::refuseQueuedCommits(ErrorCode e, Outbox& out) {
  const size_t n = commits_.pending().size();
  commits_.answerPending(e, name_, out);
  return n;
}

void GroupModel::answerQueued(ErrorCode e, Outbox& out) {
  batch_.answerPending(e, name_, out);
  commits_.answerPending(e, name_, out);
  answerDeletions(e, out);
  restate();
}

void GroupModel::failBatch(ErrorCode e, Outbox& out, bool retryMove) {
  batch_.answerInFlight(e, name_, out, retryMove);
  restate();
}

// ---------------------------------------------------------------------------
// DescribeGroup

protocol::DescribeGroupResponse GroupModel::describe(const protocol::Broker& self, protocol::GroupState state,
                                                     Instant at) const {
  protocol::DescribeGroupResponse d;
  d.group = name_;
  d.error = ErrorCode::NONE;
  d.controller = self;
  d.state = state;
  if (state == protocol::GroupState::LOADING) return d;  // nothing read yet
  d.sessionTimeoutMs = settings_.sessionTimeoutMs;
  d.ephemeral = settings_.ephemeral;
  d.generation = version_;
  const auto counts = topics_.partitionCounts(settings_);
  for (auto& t : settings_.topics) {
    auto c = counts.find(t);
    d.topics.push_back(protocol::TopicState{t, c == counts.end() || c->second <= 0 ? -1 : c->second});
  }
  const auto& target = ownership_.target();
  d.members.reserve(members_.size());
  for (auto& [id, m] : members_) {
    protocol::MemberState s;
    s.consumerId = id;
    s.clientId = m.clientId;
    s.host = m.host;
    s.port = m.port;
    s.joinedAtMs = m.joinedAtMs;
    s.lastHeardMs = at.wallMs - millisBetween(m.lastSeen, at.now);
    s.metadata = m.metadata;
    s.rack = m.rack;
    s.held = ownership_.heldBy(id);
    std::sort(s.held.begin(), s.held.end());
    if (auto t = target.find(id); t != target.end()) {
      for (auto& p : t->second) {
        const std::string& holder = ownership_.holderOf(p);
        if (!holder.empty() && holder != id) s.waiting.push_back(p);
      }
    }
    d.members.push_back(std::move(s));
  }
  d.offsets.reserve(committed_.offsets.size());
  for (auto& [p, o] : committed_.offsets) d.offsets.push_back(PartitionOffset{p.topic, p.partition, o});
  d.history = history_.all();
  d.mode = settings_.mode;
  d.kafka = settings_.kafka;
  return d;
}

void GroupModel::rememberRemoved(const std::string& id, const Member& m, TimePoint now) {
  // Bounded: entries older than the session timeout are of no use.
  constexpr size_t kMaxRemembered = 1024;
  if (removedFrom_.size() >= kMaxRemembered) {
    const Millis timeout(settings_.sessionTimeoutMs);
    std::erase_if(removedFrom_, [&](const auto& kv) { return now - kv.second.at > timeout; });
    if (removedFrom_.size() >= kMaxRemembered) removedFrom_.erase(removedFrom_.begin());
  }
  removedFrom_[protocol::Caller{m.host, m.port, ""}.address()] = Removed{id, m.clientId, now};
}

}  // namespace groupcoord::adapter
