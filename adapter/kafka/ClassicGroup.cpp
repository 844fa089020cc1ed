#include "adapter/kafka/ClassicGroup.h"

#include <algorithm>
#include <set>

namespace groupcoord::adapter::kafka {

using wire::ErrorCode;

std::string_view stateName(State s) {
  switch (s) {
    case State::Empty:
      return "Empty";
    case State::PreparingRebalance:
      return "PreparingRebalance";
    case State::CompletingRebalance:
      return "CompletingRebalance";
    case State::Stable:
      return "Stable";
    case State::Dead:
      return "Dead";
  }
  return "Unknown";
}

namespace {

wire::JoinGroupResponse joinError(ErrorCode e, std::string memberId = "") {
  wire::JoinGroupResponse r;
  r.error = e;
  r.memberId = std::move(memberId);
  return r;
}

wire::SyncGroupResponse syncAnswer(ErrorCode e, std::string assignment = "") {
  wire::SyncGroupResponse r;
  r.error = e;
  r.assignment = std::move(assignment);
  return r;
}

const std::string* metadataOf(const MemberView& v, const std::string& protocol) {
  for (auto& p : v.protocols) {
    if (p.name == protocol) return &p.metadata;
  }
  return nullptr;
}

}  // namespace

ClassicGroup::ClassicGroup(std::string groupId, GroupRules rules, int32_t generation)
    : groupId_(std::move(groupId)), rules_(rules), generation_(generation) {}

ClassicGroup ClassicGroup::resume(std::string groupId, GroupRules rules, const Snapshot& s, TimePoint now) {
  ClassicGroup g(std::move(groupId), rules);
  g.generation_ = s.generation;
  g.protocolType_ = s.protocolType;
  for (auto& v : s.members) {
    Member& m = g.members_[v.memberId];
    m.view = v;
    m.sessionDeadline = now + Millis(v.sessionTimeoutMs);
    m.joinOrder = g.joins_++;
    if (v.groupInstanceId) g.instances_[*v.groupInstanceId] = v.memberId;
  }
  if (g.members_.empty()) return g;
  g.state_ = State::Stable;
  g.protocolName_ = s.protocolName;
  // A snapshot names a leader among its members; should it not, the
  // earliest member leads, as after a barrier whose leader left.
  g.leader_ = g.members_.count(s.leader) ? s.leader : s.members.front().memberId;
  return g;
}

// ---- JoinGroup ------------------------------------------------------------------

void ClassicGroup::join(Ticket t, const JoinArgs& a, TimePoint now, Effects& out) {
  const auto& r = a.request;
  auto answer = [&](wire::JoinGroupResponse resp) { out.joins.emplace_back(t, std::move(resp)); };
  if (Millis(r.sessionTimeoutMs) < rules_.minSessionTimeout || Millis(r.sessionTimeoutMs) > rules_.maxSessionTimeout) {
    return answer(joinError(ErrorCode::INVALID_SESSION_TIMEOUT, r.memberId));
  }
  if (state_ == State::Dead) {
    // A deleted group knows no member: a member id names one of a group
    // that is gone, an empty one asks the client to find the coordinator again.
    return answer(joinError(r.memberId.empty() ? ErrorCode::COORDINATOR_NOT_AVAILABLE : ErrorCode::UNKNOWN_MEMBER_ID,
                            r.memberId));
  }
  // The member this join replaces or updates, whose own protocols do not
  // count in the compatibility check.
  std::string self = r.memberId;
  if (r.memberId.empty() && r.groupInstanceId) {
    auto it = instances_.find(*r.groupInstanceId);
    if (it != instances_.end()) self = it->second;
  }
  if (!protocolsCompatible(r, self)) return answer(joinError(ErrorCode::INCONSISTENT_GROUP_PROTOCOL, r.memberId));
  if (!members_.count(self) && members_.size() >= rules_.maxSize) {
    return answer(joinError(ErrorCode::GROUP_MAX_SIZE_REACHED, r.memberId));
  }
  if (r.memberId.empty()) {
    if (self.empty()) return joinNew(t, a, now, out);
    return joinReplacing(t, a, self, now, out);
  }
  if (auto p = pending_.find(r.memberId); p != pending_.end()) {
    if (r.groupInstanceId && instances_.count(*r.groupInstanceId)) {
      return answer(joinError(ErrorCode::FENCED_INSTANCE_ID, r.memberId));
    }
    pending_.erase(p);
    addMember(t, a, r.memberId, now);
    if (state_ == State::PreparingRebalance) {
      maybeCompleteBarrier(now, out);
    } else {
      prepareRebalance(now, out);
    }
    return;
  }
  if (fenced(r.memberId, r.groupInstanceId)) return answer(joinError(ErrorCode::FENCED_INSTANCE_ID, r.memberId));
  auto it = members_.find(r.memberId);
  bool instanceUnknown = r.groupInstanceId && !instances_.count(*r.groupInstanceId);
  if (it == members_.end() || instanceUnknown || state_ == State::Empty) {
    return answer(joinError(ErrorCode::UNKNOWN_MEMBER_ID, r.memberId));
  }
  joinKnown(t, a, it->second, now, out);
}

void ClassicGroup::joinNew(Ticket t, const JoinArgs& a, TimePoint now, Effects& out) {
  const auto& r = a.request;
  if (a.version >= 4 && !r.groupInstanceId) {
    // The member learns its id before it counts: a client that gives up
    // on a long barrier and retries leaves no stray member behind, only a
    // pending id that lapses after one session timeout.
    pending_[a.freshMemberId] = now + Millis(r.sessionTimeoutMs);
    out.joins.emplace_back(t, joinError(ErrorCode::MEMBER_ID_REQUIRED, a.freshMemberId));
    return;
  }
  addMember(t, a, a.freshMemberId, now);
  if (state_ == State::PreparingRebalance) {
    maybeCompleteBarrier(now, out);
  } else {
    prepareRebalance(now, out);
  }
}

void ClassicGroup::joinReplacing(Ticket t, const JoinArgs& a, const std::string& oldId, TimePoint now,
                                 Effects& out) {
  const auto& r = a.request;
  auto node = members_.extract(oldId);
  node.key() = a.freshMemberId;
  Member& m = members_.insert(std::move(node)).position->second;
  // Whatever the old incarnation still waits for is fenced at once.
  if (m.pendingJoin) out.joins.emplace_back(*m.pendingJoin, joinError(ErrorCode::FENCED_INSTANCE_ID, oldId));
  if (m.pendingSync) out.syncs.emplace_back(*m.pendingSync, syncAnswer(ErrorCode::FENCED_INSTANCE_ID));
  m.pendingJoin.reset();
  m.pendingSync.reset();
  out.removed.emplace_back(oldId, "replaced");
  const std::string previousLeader = leader_;
  if (leader_ == oldId) leader_ = a.freshMemberId;
  instances_[*r.groupInstanceId] = a.freshMemberId;

  bool unchanged = m.view.protocols == r.protocols;
  m.view.memberId = a.freshMemberId;
  takeJoin(m, a, now);

  switch (state_) {
    case State::Stable:
      if (unchanged) {
        // No rebalance: the assignment carries over. The answer names the
        // leader as it was before the replacement and holds no member list,
        // so that a returning leader does not compute an assignment a
        // Stable group would ignore (JoinGroup up to version 5 cannot tell
        // it to skip the assignment; docs/protocol.md, "The Kafka port").
        wire::JoinGroupResponse resp = joinAnswer(m);
        resp.leader = previousLeader;
        resp.members.clear();
        out.joins.emplace_back(t, std::move(resp));
        return;
      }
      m.pendingJoin = t;
      m.joinVersion = a.version;
      return prepareRebalance(now, out);
    case State::CompletingRebalance:
      // The leader may already be assigning to the old id: start over.
      m.pendingJoin = t;
      m.joinVersion = a.version;
      return prepareRebalance(now, out);
    case State::PreparingRebalance:
      m.pendingJoin = t;
      m.joinVersion = a.version;
      return maybeCompleteBarrier(now, out);
    case State::Empty:
    case State::Dead:
      break;  // a known instance means a member: neither state has one
  }
  out.joins.emplace_back(t, joinError(ErrorCode::UNKNOWN_MEMBER_ID));
}

void ClassicGroup::joinKnown(Ticket t, const JoinArgs& a, Member& m, TimePoint now, Effects& out) {
  const auto& r = a.request;
  bool unchanged = m.view.protocols == r.protocols;
  takeJoin(m, a, now);
  auto park = [&] {
    // A client that sends its join again has given up on the first one.
    if (m.pendingJoin) {
      out.joins.emplace_back(*m.pendingJoin, joinError(ErrorCode::REBALANCE_IN_PROGRESS, m.view.memberId));
    }
    m.pendingJoin = t;
    m.joinVersion = a.version;
  };
  switch (state_) {
    case State::PreparingRebalance:
      park();
      return maybeCompleteBarrier(now, out);
    case State::CompletingRebalance:
      if (unchanged) return void(out.joins.emplace_back(t, joinAnswer(m)));
      park();
      return prepareRebalance(now, out);
    case State::Stable:
      // The leader joins again to have the group reassigned (its metadata
      // view changed): that is always a rebalance.
      if (unchanged && m.view.memberId != leader_) return void(out.joins.emplace_back(t, joinAnswer(m)));
      park();
      return prepareRebalance(now, out);
    case State::Empty:
    case State::Dead:
      break;
  }
  out.joins.emplace_back(t, joinError(ErrorCode::UNKNOWN_MEMBER_ID, r.memberId));
}

ClassicGroup::Member& ClassicGroup::addMember(Ticket t, const JoinArgs& a, const std::string& id, TimePoint now) {
  const auto& r = a.request;
  if (members_.empty()) protocolType_ = r.protocolType;
  Member& m = members_[id];
  m.view.memberId = id;
  m.view.groupInstanceId = r.groupInstanceId;
  takeJoin(m, a, now);
  m.pendingJoin = t;
  m.joinVersion = a.version;
  m.joinOrder = joins_++;
  m.joinedAt = now;
  if (r.groupInstanceId) instances_[*r.groupInstanceId] = id;
  if (initialDelay_) newMemberAdded_ = true;
  return m;
}

void ClassicGroup::takeJoin(Member& m, const JoinArgs& a, TimePoint now) {
  const auto& r = a.request;
  m.view.clientId = a.clientId;
  m.view.clientHost = a.clientHost;
  m.clientPort = a.clientPort;
  m.view.protocols = r.protocols;
  m.view.sessionTimeoutMs = r.sessionTimeoutMs;
  // Version 0 has no rebalance timeout: the session timeout serves as one.
  m.view.rebalanceTimeoutMs =
      a.version == 0 || r.rebalanceTimeoutMs < 0 ? r.sessionTimeoutMs : r.rebalanceTimeoutMs;
  m.sessionDeadline = now + Millis(r.sessionTimeoutMs);
}

wire::JoinGroupResponse ClassicGroup::joinAnswer(const Member& m) const {
  wire::JoinGroupResponse r;
  r.generationId = generation_;
  r.protocolName = protocolName_;
  r.leader = leader_;
  r.memberId = m.view.memberId;
  if (m.view.memberId == leader_) {
    for (const Member* o : byJoinOrder()) {
      const std::string* md = metadataOf(o->view, protocolName_);
      r.members.push_back({o->view.memberId, o->view.groupInstanceId, md ? *md : std::string()});
    }
  }
  return r;
}

bool ClassicGroup::protocolsCompatible(const wire::JoinGroupRequest& r, const std::string& except) const {
  if (r.protocolType.empty() || r.protocols.empty()) return false;
  bool others = false;
  for (auto& [id, m] : members_) {
    if (id != except) others = true;
  }
  if (!others) return true;
  if (r.protocolType != protocolType_) return false;
  for (auto& p : r.protocols) {
    bool everyone = true;
    for (auto& [id, m] : members_) {
      if (id != except && !metadataOf(m.view, p.name)) {
        everyone = false;
        break;
      }
    }
    if (everyone) return true;
  }
  return false;
}

bool ClassicGroup::fenced(std::string_view memberId, const std::optional<std::string_view>& instanceId) const {
  if (!instanceId) return false;
  auto it = instances_.find(*instanceId);
  return it != instances_.end() && it->second != memberId;
}

// ---- The barrier ----------------------------------------------------------------

void ClassicGroup::prepareRebalance(TimePoint now, Effects& out) {
  if (state_ == State::CompletingRebalance) {
    for (auto& [id, m] : members_) {
      if (m.pendingSync) out.syncs.emplace_back(*m.pendingSync, syncAnswer(ErrorCode::REBALANCE_IN_PROGRESS));
      m.pendingSync.reset();
    }
  }
  Millis rebalance(maxRebalanceTimeoutMs());
  if (state_ == State::Empty && rules_.initialRebalanceDelay > Millis(0)) {
    // The first period is the delay (within the rebalance timeout); at its
    // end the barrier waits one more period, as long as some of the
    // rebalance timeout remains, whenever a new member joined meanwhile.
    Millis first = std::min(rules_.initialRebalanceDelay, rebalance);
    initialDelay_ = true;
    newMemberAdded_ = false;
    initialDelayEnd_ = now + first;
    initialRemaining_ = rebalance - first;
  } else {
    barrierDeadline_ = now + rebalance;
  }
  state_ = State::PreparingRebalance;
  maybeCompleteBarrier(now, out);
}

void ClassicGroup::maybeCompleteBarrier(TimePoint now, Effects& out) {
  if (state_ != State::PreparingRebalance || initialDelay_ || !pending_.empty()) return;
  for (auto& [id, m] : members_) {
    if (!m.pendingJoin) return;
  }
  completeBarrier(now, out);
}

void ClassicGroup::completeBarrier(TimePoint now, Effects& out) {
  // Dynamic members that did not join again leave; a static member stays
  // (its session decides), as it is expected back under the same instance.
  std::vector<std::string> gone;
  for (auto& [id, m] : members_) {
    if (!m.pendingJoin && !m.view.groupInstanceId) gone.push_back(id);
  }
  for (auto& id : gone) removeMember(id, "did not rejoin", ErrorCode::UNKNOWN_MEMBER_ID, out);
  std::vector<const Member*> joined;
  for (const Member* m : byJoinOrder()) {
    if (m->pendingJoin) joined.push_back(m);
  }
  if (joined.empty() && !members_.empty()) {
    // Only static members that have not joined remain: wait another
    // rebalance timeout for them (or their sessions' end).
    barrierDeadline_ = now + Millis(maxRebalanceTimeoutMs());
    return;
  }
  generation_++;
  if (members_.empty()) {
    state_ = State::Empty;
    protocolName_.clear();
    leader_.clear();
    return;
  }
  auto leader = members_.find(leader_);
  if (leader == members_.end() || !leader->second.pendingJoin) leader_ = joined.front()->view.memberId;
  protocolName_ = voteProtocol();
  state_ = State::CompletingRebalance;
  for (auto& [id, m] : members_) {
    m.view.assignment.clear();
    if (!m.pendingJoin) continue;
    out.joins.emplace_back(*m.pendingJoin, joinAnswer(m));
    m.pendingJoin.reset();
    m.sessionDeadline = now + Millis(m.view.sessionTimeoutMs);
  }
}

// Candidates are the protocols every member supports; each member votes for
// the first candidate in its own order. A tie goes to the tied protocol the
// earliest-joined member lists first (docs/protocol.md, "The Kafka port").
std::string ClassicGroup::voteProtocol() const {
  auto order = byJoinOrder();
  std::set<std::string> candidates;
  for (auto& p : order.front()->view.protocols) {
    bool everyone =
        std::all_of(order.begin(), order.end(), [&](const Member* m) { return metadataOf(m->view, p.name); });
    if (everyone) candidates.insert(p.name);
  }
  std::map<std::string, size_t> votes;
  for (const Member* m : order) {
    for (auto& p : m->view.protocols) {
      if (candidates.count(p.name)) {
        votes[p.name]++;
        break;
      }
    }
  }
  std::string best;
  size_t most = 0;
  for (auto& p : order.front()->view.protocols) {
    auto it = votes.find(p.name);
    if (it != votes.end() && it->second > most) {
      best = p.name;
      most = it->second;
    }
  }
  return best;
}

void ClassicGroup::removeMember(const std::string& id, const char* why, ErrorCode answer, Effects& out) {
  auto it = members_.find(id);
  if (it == members_.end()) return;
  Member& m = it->second;
  if (m.pendingJoin) out.joins.emplace_back(*m.pendingJoin, joinError(answer));
  if (m.pendingSync) out.syncs.emplace_back(*m.pendingSync, syncAnswer(answer));
  if (m.view.groupInstanceId) {
    auto inst = instances_.find(*m.view.groupInstanceId);
    if (inst != instances_.end() && inst->second == id) instances_.erase(inst);
  }
  out.removed.emplace_back(id, why);
  members_.erase(it);
}

void ClassicGroup::afterRemoval(TimePoint now, Effects& out) {
  switch (state_) {
    case State::Stable:
    case State::CompletingRebalance:
      return prepareRebalance(now, out);
    case State::PreparingRebalance:
      return maybeCompleteBarrier(now, out);
    case State::Empty:
    case State::Dead:
      return;
  }
}

std::vector<const ClassicGroup::Member*> ClassicGroup::byJoinOrder() const {
  std::vector<const Member*> v;
  for (auto& [id, m] : members_) v.push_back(&m);
  std::sort(v.begin(), v.end(), [](const Member* a, const Member* b) { return a->joinOrder < b->joinOrder; });
  return v;
}

int32_t ClassicGroup::maxRebalanceTimeoutMs() const {
  int32_t most = 0;
  for (auto& [id, m] : members_) most = std::max(most, m.view.rebalanceTimeoutMs);
  return most;
}

bool ClassicGroup::sessionRuns(const Member& m) const { return !m.pendingJoin && !m.pendingSync; }

// ---- SyncGroup, Heartbeat, LeaveGroup, OffsetCommit -----------------------------

void ClassicGroup::sync(Ticket t, const SyncArgs& a, TimePoint now, Effects& out) {
  const auto& r = a.request;
  auto answer = [&](ErrorCode e, std::string assignment = "") {
    out.syncs.emplace_back(t, syncAnswer(e, std::move(assignment)));
  };
  if (state_ == State::Dead) return answer(ErrorCode::COORDINATOR_NOT_AVAILABLE);
  if (fenced(r.memberId, r.groupInstanceId)) return answer(ErrorCode::FENCED_INSTANCE_ID);
  auto it = members_.find(r.memberId);
  if (it == members_.end()) return answer(ErrorCode::UNKNOWN_MEMBER_ID);
  if (r.generationId != generation_) return answer(ErrorCode::ILLEGAL_GENERATION);
  Member& m = it->second;
  switch (state_) {
    case State::Empty:
    case State::Dead:
      return answer(ErrorCode::UNKNOWN_MEMBER_ID);
    case State::PreparingRebalance:
      return answer(ErrorCode::REBALANCE_IN_PROGRESS);
    case State::Stable:
      m.sessionDeadline = now + Millis(m.view.sessionTimeoutMs);
      return answer(ErrorCode::NONE, m.view.assignment);
    case State::CompletingRebalance:
      break;
  }
  if (m.pendingSync) out.syncs.emplace_back(*m.pendingSync, syncAnswer(ErrorCode::REBALANCE_IN_PROGRESS));
  m.pendingSync = t;
  m.syncVersion = a.version;
  m.sessionDeadline = now + Millis(m.view.sessionTimeoutMs);
  if (r.memberId != leader_) return;
  for (auto& [id, o] : members_) o.view.assignment.clear();
  for (auto& as : r.assignments) {
    auto target = members_.find(as.memberId);
    if (target != members_.end()) target->second.view.assignment = as.assignment;
  }
  state_ = State::Stable;
  out.becameStable = true;
  for (auto& [id, o] : members_) {
    if (!o.pendingSync) continue;
    out.syncs.emplace_back(*o.pendingSync, syncAnswer(ErrorCode::NONE, o.view.assignment));
    o.pendingSync.reset();
    o.sessionDeadline = now + Millis(o.view.sessionTimeoutMs);
  }
}

ErrorCode ClassicGroup::heartbeat(const wire::HeartbeatRequest& r, TimePoint now, Effects& out) {
  (void)out;
  std::optional<std::string_view> instance;
  if (r.groupInstanceId) instance = *r.groupInstanceId;
  return heartbeat(r.generationId, r.memberId, instance, now);
}

ErrorCode ClassicGroup::heartbeat(int32_t generationId, std::string_view memberId,
                                  const std::optional<std::string_view>& groupInstanceId, TimePoint now) {
  if (state_ == State::Dead) return ErrorCode::COORDINATOR_NOT_AVAILABLE;
  if (fenced(memberId, groupInstanceId)) return ErrorCode::FENCED_INSTANCE_ID;
  auto it = members_.find(memberId);
  if (it == members_.end()) return ErrorCode::UNKNOWN_MEMBER_ID;
  if (generationId != generation_) return ErrorCode::ILLEGAL_GENERATION;
  if (state_ == State::Empty) return ErrorCode::UNKNOWN_MEMBER_ID;
  it->second.sessionDeadline = now + Millis(it->second.view.sessionTimeoutMs);
  return state_ == State::PreparingRebalance ? ErrorCode::REBALANCE_IN_PROGRESS : ErrorCode::NONE;
}

ErrorCode ClassicGroup::leave(const std::string& memberId, TimePoint now, Effects& out) {
  if (state_ == State::Dead) return ErrorCode::COORDINATOR_NOT_AVAILABLE;
  if (pending_.erase(memberId)) {
    maybeCompleteBarrier(now, out);
    return ErrorCode::NONE;
  }
  if (!members_.count(memberId)) return ErrorCode::UNKNOWN_MEMBER_ID;
  removeMember(memberId, "left", ErrorCode::UNKNOWN_MEMBER_ID, out);
  afterRemoval(now, out);
  return ErrorCode::NONE;
}

ErrorCode ClassicGroup::commitCheck(int32_t generation, const std::string& memberId,
                                    const std::optional<std::string>& groupInstanceId, TimePoint now) {
  if (state_ == State::Dead) return ErrorCode::COORDINATOR_NOT_AVAILABLE;
  if (generation < 0 && memberId.empty() && !groupInstanceId) {
    // A commit from outside group management (an admin tool, a consumer
    // assigning itself): only while no member could be fenced by it.
    return members_.empty() ? ErrorCode::NONE : ErrorCode::ILLEGAL_GENERATION;
  }
  if (fenced(memberId, groupInstanceId)) return ErrorCode::FENCED_INSTANCE_ID;
  auto it = members_.find(memberId);
  if (it == members_.end()) return ErrorCode::UNKNOWN_MEMBER_ID;
  if (generation != generation_) return ErrorCode::ILLEGAL_GENERATION;
  if (state_ == State::CompletingRebalance) return ErrorCode::REBALANCE_IN_PROGRESS;
  it->second.sessionDeadline = now + Millis(it->second.view.sessionTimeoutMs);
  return ErrorCode::NONE;
}

// ---- Time -----------------------------------------------------------------------

void ClassicGroup::tick(TimePoint now, Effects& out) {
  if (state_ == State::Dead) return;
  bool lapsed = false;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second <= now) {
      it = pending_.erase(it);
      lapsed = true;
    } else {
      ++it;
    }
  }
  std::vector<std::string> expired;
  for (auto& [id, m] : members_) {
    if (sessionRuns(m) && m.sessionDeadline <= now) expired.push_back(id);
  }
  for (auto& id : expired) removeMember(id, "session timeout", ErrorCode::UNKNOWN_MEMBER_ID, out);
  if (!expired.empty()) {
    afterRemoval(now, out);
  } else if (lapsed) {
    maybeCompleteBarrier(now, out);
  }
  if (state_ != State::PreparingRebalance) return;
  if (initialDelay_) {
    if (initialDelayEnd_ > now) return;
    if (newMemberAdded_ && initialRemaining_ > Millis(0)) {
      Millis more = std::min(rules_.initialRebalanceDelay, initialRemaining_);
      newMemberAdded_ = false;
      initialRemaining_ -= more;
      initialDelayEnd_ += more;
      return;
    }
    initialDelay_ = false;
    return completeBarrier(now, out);
  }
  if (barrierDeadline_ <= now) completeBarrier(now, out);
}

std::optional<TimePoint> ClassicGroup::nextDeadline() const {
  if (state_ == State::Dead) return std::nullopt;
  std::optional<TimePoint> next;
  auto consider = [&](TimePoint t) {
    if (!next || t < *next) next = t;
  };
  for (auto& [id, m] : members_) {
    if (sessionRuns(m)) consider(m.sessionDeadline);
  }
  for (auto& [id, when] : pending_) consider(when);
  if (state_ == State::PreparingRebalance) consider(initialDelay_ ? initialDelayEnd_ : barrierDeadline_);
  return next;
}

void ClassicGroup::abandon(ErrorCode answer, bool deleted, Effects& out) {
  for (auto& [id, m] : members_) {
    if (m.pendingJoin) out.joins.emplace_back(*m.pendingJoin, joinError(answer, id));
    if (m.pendingSync) out.syncs.emplace_back(*m.pendingSync, syncAnswer(answer));
    m.pendingJoin.reset();
    m.pendingSync.reset();
  }
  if (!deleted) return;
  for (auto& [id, m] : members_) out.removed.emplace_back(id, "deleted");
  members_.clear();
  pending_.clear();
  instances_.clear();
  initialDelay_ = false;
  protocolName_.clear();
  leader_.clear();
  state_ = State::Dead;
}

// ---- Views ----------------------------------------------------------------------

wire::DescribeGroupsResponse::Group ClassicGroup::describe() const {
  wire::DescribeGroupsResponse::Group g;
  g.groupId = groupId_;
  g.groupState = std::string(stateName(state_));
  g.protocolType = protocolType_;
  bool chosen = state_ == State::Stable || state_ == State::CompletingRebalance;
  if (chosen) g.protocolData = protocolName_;
  for (const Member* m : byJoinOrder()) {
    wire::DescribeGroupsResponse::Member d;
    d.memberId = m->view.memberId;
    d.groupInstanceId = m->view.groupInstanceId;
    d.clientId = m->view.clientId;
    d.clientHost = m->view.clientHost;
    if (chosen) {
      const std::string* md = metadataOf(m->view, protocolName_);
      if (md) d.memberMetadata = *md;
    }
    if (state_ == State::Stable) d.memberAssignment = m->view.assignment;
    g.members.push_back(std::move(d));
  }
  return g;
}

Snapshot ClassicGroup::snapshot() const {
  Snapshot s;
  s.generation = generation_;
  s.protocolType = protocolType_;
  s.protocolName = protocolName_;
  s.leader = leader_;
  s.members = members();
  return s;
}

std::vector<MemberView> ClassicGroup::members() const {
  std::vector<MemberView> v;
  for (const Member* m : byJoinOrder()) v.push_back(m->view);
  return v;
}

std::vector<MemberActivity> ClassicGroup::activity() const {
  std::vector<MemberActivity> v;
  for (const Member* m : byJoinOrder()) {
    // Every renewal sets the deadline one session timeout ahead.
    v.push_back(MemberActivity{m->view.memberId, m->clientPort, m->joinedAt,
                               m->sessionDeadline - Millis(m->view.sessionTimeoutMs)});
  }
  return v;
}

}  // namespace groupcoord::adapter::kafka
