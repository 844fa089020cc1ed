// One Kafka group under the consumer protocol (ConsumerGroup.h).

#include "adapter/kafka/ConsumerGroup.h"

#include <algorithm>
#include <span>

#include "adapter/Assignment.h"
#include "protocol/Wire.h"

namespace groupcoord::adapter::kafka {

namespace {

using cwire::ErrorCode;
using Response = cwire::ConsumerGroupHeartbeatResponse;

Response refused(ErrorCode e, std::string message) {
  Response r;
  r.error = e;
  r.errorMessage = std::move(message);
  return r;
}

TopicSets minus(const TopicSets& a, const TopicSets& b) {
  TopicSets out;
  for (const auto& [t, ps] : a) {
    auto it = b.find(t);
    for (int32_t p : ps) {
      if (it == b.end() || !it->second.count(p)) out[t].insert(p);
    }
  }
  return out;
}

bool contains(const TopicSets& s, const std::string& t, int32_t p) {
  auto it = s.find(t);
  return it != s.end() && it->second.count(p);
}

void erase(TopicSets& s, const std::string& t, int32_t p) {
  auto it = s.find(t);
  if (it == s.end()) return;
  it->second.erase(p);
  if (it->second.empty()) s.erase(it);
}

// The request's partitions by topic name; topics whose id names no
// subscribed topic are left out (the member cannot hold them here).
TopicSets byName(const std::vector<cwire::ConsumerGroupHeartbeatRequest::TopicPartitions>& tps,
                 const TopicTable& topics) {
  TopicSets out;
  for (const auto& tp : tps) {
    for (const auto& [name, info] : topics) {
      if (info.id == tp.topicId) {
        out[name].insert(tp.partitions.begin(), tp.partitions.end());
        break;
      }
    }
  }
  return out;
}

std::vector<std::string> sortedUnique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

// Bounds on what a client names (a member id becomes a znode's name, a
// subscribed topic a watched znode).
constexpr size_t kMaxIdBytes = 255;
constexpr size_t kMaxSubscribedTopics = 10000;

// A fenced member's epoch: no heartbeat or commit carries it.
constexpr int32_t kFenced = -1000;

bool knownAssignor(std::string_view name) { return name.empty() || name == "uniform"; }

ConsumerGroup::ConsumerGroup(std::string groupId, ConsumerRules rules, int32_t groupEpoch)
    : groupId_(std::move(groupId)), rules_(rules), groupEpoch_(groupEpoch) {}

ConsumerGroup ConsumerGroup::resume(std::string groupId, ConsumerRules rules, ConsumerSnapshot s, ConsumerTime now) {
  ConsumerGroup g(std::move(groupId), rules, s.groupEpoch);
  for (auto& m : s.members) {
    m.lastHeard = now;
    m.revokingSince = now;
    m.told.reset();
    std::string id = m.memberId;
    g.members_.emplace(std::move(id), std::move(m));
  }
  return g;
}

std::string_view ConsumerGroup::state() const {
  if (members_.empty()) return "Empty";
  for (const auto& [id, m] : members_) {
    if (m.epoch != groupEpoch_ || !m.revoking.empty() || m.assigned != m.target) return "Reconciling";
  }
  return "Stable";
}

std::set<std::string> ConsumerGroup::subscribedTopics() const {
  std::set<std::string> out;
  for (const auto& [id, m] : members_) out.insert(m.topics.begin(), m.topics.end());
  return out;
}

Response ConsumerGroup::heartbeat(const HeartbeatArgs& a, const TopicTable& topics, ConsumerTime now,
                                  ConsumerEffects& fx) {
  const auto& r = a.request;
  if (r.memberEpoch == -1 || r.memberEpoch == -2) {
    auto it = members_.find(r.memberId);
    if (it != members_.end()) it->second.lastHeard = now;
    return leave(a, topics, fx);
  }
  if (r.memberId.size() > kMaxIdBytes || r.instanceId.value_or("").size() > kMaxIdBytes ||
      r.rackId.value_or("").size() > kMaxIdBytes) {
    return refused(ErrorCode::INVALID_REQUEST, "MemberId, InstanceId and RackId are at most " +
                                                   std::to_string(kMaxIdBytes) + " bytes");
  }
  if (r.subscribedTopicNames && r.subscribedTopicNames->size() > kMaxSubscribedTopics) {
    return refused(ErrorCode::INVALID_REQUEST, "at most " + std::to_string(kMaxSubscribedTopics) +
                                                   " subscribed topics");
  }
  if (a.version >= 1 && r.memberId.empty()) {
    return refused(ErrorCode::INVALID_REQUEST, "MemberId must be set: the member makes its own id");
  }
  if (r.memberEpoch < -2) return refused(ErrorCode::INVALID_REQUEST, "MemberEpoch must be -2 or more");
  if (r.subscribedTopicRegex && !r.subscribedTopicRegex->empty()) {
    return refused(ErrorCode::INVALID_REQUEST,
                   "subscribing by a regular expression is not supported by groupcoord; subscribe by topic names");
  }
  if (r.serverAssignor && !knownAssignor(*r.serverAssignor)) {
    return refused(ErrorCode::UNSUPPORTED_ASSIGNOR, "groupcoord assigns with its own balanced, sticky, rack-aware "
                                                    "optimiser: ask for \"uniform\" or for no assignor, not \"" +
                                                        *r.serverAssignor + "\"");
  }
  if (r.rebalanceTimeoutMs < -1) return refused(ErrorCode::INVALID_REQUEST, "RebalanceTimeoutMs must be -1 or more");
  if (r.memberEpoch == 0) return join(a, topics, now, fx);

  auto it = members_.find(r.memberId);
  if (it == members_.end()) {
    return refused(ErrorCode::UNKNOWN_MEMBER_ID, "member " + r.memberId + " is not in group " + groupId_);
  }
  ConsumerMember& m = it->second;
  if (r.memberEpoch != m.epoch) {
    // The answer that moved it to its epoch may have been lost: its
    // previous epoch is accepted while it holds nothing it was not given.
    bool lostAnswer = r.memberEpoch == m.previousEpoch;
    if (lostAnswer && r.topicPartitions) {
      const TopicSets owned = byName(*r.topicPartitions, topics);
      lostAnswer = minus(owned, m.assigned).empty();
    }
    if (!lostAnswer) {
      return refused(ErrorCode::FENCED_MEMBER_EPOCH, "member " + r.memberId + " is at epoch " +
                                                         std::to_string(m.epoch) + ", not " +
                                                         std::to_string(r.memberEpoch));
    }
  }
  m.away = false;
  if (takeRequest(m, a, topics, now, fx)) retarget(topics, fx);
  reconcile(m, now, fx);
  // A full request (what a member sends after an error, with every field
  // set) is answered with its whole assignment; otherwise only a change is.
  const bool full = r.rebalanceTimeoutMs != -1 && r.subscribedTopicNames && r.topicPartitions;
  return answer(m, topics, full);
}

Response ConsumerGroup::leave(const HeartbeatArgs& a, const TopicTable& topics, ConsumerEffects& fx) {
  const auto& r = a.request;
  Response out;
  out.memberId = r.memberId;
  out.memberEpoch = r.memberEpoch;
  auto it = members_.find(r.memberId);
  if (it == members_.end()) return out;  // gone already: the member does not care
  ConsumerMember& m = it->second;
  if (r.memberEpoch == -2 && m.instanceId) {
    // A static member leaving to come back: it keeps its partitions (held
    // by nobody meanwhile) until its session runs out.
    m.away = true;
    m.told.reset();
    fx.durable = true;
    return out;
  }
  remove(r.memberId, "left", fx);
  retarget(topics, fx);
  return out;
}

Response ConsumerGroup::join(const HeartbeatArgs& a, const TopicTable& topics, ConsumerTime now,
                             ConsumerEffects& fx) {
  const auto& r = a.request;
  if (!r.subscribedTopicNames) {
    return refused(ErrorCode::INVALID_REQUEST, "a joining member (epoch 0) must send SubscribedTopicNames");
  }
  if (r.rebalanceTimeoutMs < 0) {
    return refused(ErrorCode::INVALID_REQUEST, "a joining member (epoch 0) must send RebalanceTimeoutMs");
  }
  const std::string id = r.memberId.empty() ? a.freshMemberId : r.memberId;
  if (r.instanceId) {
    auto same = std::find_if(members_.begin(), members_.end(),
                             [&](const auto& kv) { return kv.second.instanceId == r.instanceId; });
    if (same != members_.end() && same->first != id) {
      if (!same->second.away) {
        return refused(ErrorCode::UNRELEASED_INSTANCE_ID,
                       "instance " + *r.instanceId + " is still held by member " + same->first +
                           "; it must leave (epoch -2) or its session (" +
                           std::to_string(rules_.sessionTimeout.count()) + " ms) run out first");
      }
      // The static member back under a new id: everything it had is its
      // again, and nobody else moves.
      ConsumerMember m = std::move(same->second);
      const std::string old = same->first;
      members_.erase(same);
      m.memberId = id;
      m.away = false;
      m.told.reset();
      m.lastHeard = now;
      m.joinedAt = now;
      auto& placed = members_.emplace(id, std::move(m)).first->second;
      fx.membership = true;
      fx.durable = true;
      fx.removed.emplace_back(old, "replaced by the same static instance");
      fx.joined.push_back(id);
      if (takeRequest(placed, a, topics, now, fx)) retarget(topics, fx);
      reconcile(placed, now, fx);
      return answer(placed, topics, true);
    }
  }
  auto it = members_.find(id);
  if (it != members_.end()) {
    // A member joining again (fenced, or it lost its partitions): it holds
    // nothing now.
    ConsumerMember& m = it->second;
    m.assigned.clear();
    m.revoking.clear();
    m.away = false;
    m.epoch = 0;
    m.previousEpoch = -1;
    m.told.reset();
    fx.durable = true;
    if (takeRequest(m, a, topics, now, fx)) retarget(topics, fx);
    reconcile(m, now, fx);
    return answer(m, topics, true);
  }
  if (members_.size() >= rules_.maxSize) {
    return refused(ErrorCode::GROUP_MAX_SIZE_REACHED,
                   "group " + groupId_ + " has " + std::to_string(members_.size()) + " members, its most");
  }
  ConsumerMember fresh;
  fresh.memberId = id;
  fresh.lastHeard = now;
  fresh.joinedAt = now;
  auto& m = members_.emplace(id, std::move(fresh)).first->second;
  fx.membership = true;
  fx.durable = true;
  fx.joined.push_back(id);
  takeRequest(m, a, topics, now, fx);
  retarget(topics, fx);
  reconcile(m, now, fx);
  return answer(m, topics, true);
}

bool ConsumerGroup::takeRequest(ConsumerMember& m, const HeartbeatArgs& a, const TopicTable& topics,
                                ConsumerTime now, ConsumerEffects& fx) {
  const auto& r = a.request;
  m.lastHeard = now;
  bool retarget = false;
  if (!a.clientId.empty()) m.clientId = a.clientId;
  if (!a.clientHost.empty()) m.clientHost = a.clientHost;
  if (a.clientPort != 0) m.clientPort = a.clientPort;
  if (r.instanceId && m.instanceId != r.instanceId) {
    m.instanceId = r.instanceId;
    fx.durable = true;
  }
  if (r.rackId && m.rackId != *r.rackId) {
    m.rackId = *r.rackId;
    retarget = true;
  }
  if (r.rebalanceTimeoutMs >= 0) m.rebalanceTimeoutMs = r.rebalanceTimeoutMs;
  if (r.serverAssignor) m.assignor = *r.serverAssignor;
  if (r.subscribedTopicNames) {
    auto subscribed = sortedUnique(*r.subscribedTopicNames);
    if (subscribed != m.topics) {
      m.topics = std::move(subscribed);
      retarget = true;
    }
  }
  if (r.topicPartitions) {
    // What it gave up: partitions it was told to release and no longer
    // lists.
    const TopicSets owned = byName(*r.topicPartitions, topics);
    for (const auto& [t, ps] : TopicSets(m.revoking)) {
      for (int32_t p : ps) {
        if (!contains(owned, t, p)) {
          erase(m.revoking, t, p);
          erase(m.assigned, t, p);
          fx.durable = true;
        }
      }
    }
  }
  return retarget;
}

void ConsumerGroup::reconcile(ConsumerMember& m, ConsumerTime now, ConsumerEffects& fx) {
  if (m.epoch == groupEpoch_ && m.revoking.empty() && m.assigned == m.target) return;
  const TopicSets revoke = minus(m.assigned, m.target);
  if (!revoke.empty()) {
    if (m.revoking != revoke) {
      if (m.revoking.empty()) m.revokingSince = now;
      m.revoking = revoke;
    }
    return;  // its epoch moves once they are given up
  }
  m.revoking.clear();
  if (m.epoch != groupEpoch_) {
    m.previousEpoch = m.epoch;
    m.epoch = groupEpoch_;
    fx.durable = true;
  }
  const TopicSets wanted = minus(m.target, m.assigned);
  if (wanted.empty()) return;
  // Who holds what, once for this member's grants.
  std::set<std::pair<std::string, int32_t>> held;
  for (const auto& [id, other] : members_) {
    if (id == m.memberId) continue;
    for (const auto& [t, ps] : other.assigned) {
      if (!wanted.count(t)) continue;
      for (int32_t p : ps) held.emplace(t, p);
    }
  }
  for (const auto& [t, ps] : wanted) {
    for (int32_t p : ps) {
      if (held.count({t, p})) continue;
      m.assigned[t].insert(p);
      fx.durable = true;
    }
  }
}

Response ConsumerGroup::answer(ConsumerMember& m, const TopicTable& topics, bool full) {
  Response out;
  out.memberId = m.memberId;
  out.memberEpoch = m.epoch;
  // A member waiting for partitions others still hold heartbeats sooner,
  // until it has them (docs/kafka.md, "The consumer protocol").
  bool waiting = false;
  for (const auto& [t, ps] : m.target) {
    auto held = m.assigned.find(t);
    for (int32_t p : ps) {
      if (held == m.assigned.end() || !held->second.count(p)) {
        waiting = true;
        break;
      }
    }
    if (waiting) break;
  }
  const auto interval =
      waiting ? std::min(rules_.waitingHeartbeatInterval, rules_.heartbeatInterval) : rules_.heartbeatInterval;
  out.heartbeatIntervalMs = static_cast<int32_t>(interval.count());
  TopicSets told = minus(m.assigned, m.revoking);
  if (full || !m.told || *m.told != told) {
    Response::Assignment as;
    for (const auto& [t, ps] : told) {
      auto info = topics.find(t);
      if (info == topics.end() || ps.empty()) continue;
      as.topicPartitions.push_back({info->second.id, std::vector<int32_t>(ps.begin(), ps.end())});
    }
    out.assignment = std::move(as);
    m.told = std::move(told);
  }
  return out;
}

void ConsumerGroup::remove(const std::string& id, const char* why, ConsumerEffects& fx) {
  if (members_.erase(id) == 0) return;
  fx.membership = true;
  fx.durable = true;
  fx.removed.emplace_back(id, why);
}

void ConsumerGroup::retarget(const TopicTable& topics, ConsumerEffects& fx) {
  ++groupEpoch_;
  fx.durable = true;
  fx.membership = true;  // the group znode's version follows the group epoch
  std::vector<std::string> ids;
  RackInfo racks;
  for (const auto& [id, m] : members_) {
    ids.push_back(id);
    if (!m.rackId.empty()) racks.members[id] = m.rackId;
  }
  auto countOf = [&](const std::string& t) {
    auto it = topics.find(t);
    return it == topics.end() ? 0 : it->second.partitions;
  };
  auto previousOf = [&](const std::vector<std::string>& subs, const std::set<std::string>& ts) {
    Assignment prev;
    for (const auto& id : subs) {
      auto& v = prev[id];
      for (const auto& [t, ps] : members_.at(id).assigned) {
        if (!ts.count(t)) continue;
        for (int32_t p : ps) v.push_back(protocol::TopicPartition{t, p});
      }
    }
    return prev;
  };
  auto racksOf = [&](const std::set<std::string>& ts) {
    RackInfo r = racks;
    for (const auto& t : ts) {
      auto it = topics.find(t);
      if (it != topics.end() && !it->second.replicaRacks.empty()) r.replicas[t] = it->second.replicaRacks;
    }
    return r;
  };
  for (auto& [id, m] : members_) m.target.clear();
  auto take = [&](const Assignment& result) {
    for (const auto& [id, tps] : result) {
      auto it = members_.find(id);
      if (it == members_.end()) continue;
      for (const auto& tp : tps) it->second.target[tp.topic].insert(tp.partition);
    }
  };
  if (ids.empty()) return;
  // One subscription for everyone (the common case): one computation,
  // balanced per topic and in total. Otherwise each topic among its own
  // subscribers, balanced per topic.
  const bool uniform = std::all_of(members_.begin(), members_.end(),
                                   [&](const auto& kv) { return kv.second.topics == members_.begin()->second.topics; });
  if (uniform) {
    const auto& ts = members_.begin()->second.topics;
    std::map<std::string, int32_t> counts;
    for (const auto& t : ts) {
      if (countOf(t) > 0) counts[t] = countOf(t);
    }
    const std::set<std::string> tset(ts.begin(), ts.end());
    take(assignPartitions(ids, counts, previousOf(ids, tset), racksOf(tset)));
    return;
  }
  for (const auto& t : subscribedTopics()) {
    if (countOf(t) <= 0) continue;
    std::vector<std::string> subs;
    for (const auto& [id, m] : members_) {
      if (std::binary_search(m.topics.begin(), m.topics.end(), t)) subs.push_back(id);
    }
    const std::set<std::string> one{t};
    take(assignPartitions(subs, {{t, countOf(t)}}, previousOf(subs, one), racksOf(one)));
  }
}

void ConsumerGroup::tick(ConsumerTime now, const TopicTable& topics, ConsumerEffects& fx) {
  std::vector<std::pair<std::string, const char*>> out;
  for (const auto& [id, m] : members_) {
    if (now >= m.lastHeard + rules_.sessionTimeout) {
      out.emplace_back(id, m.away ? "did not come back within the session timeout" : "session timeout");
    } else if (!m.revoking.empty() && now >= m.revokingSince + std::chrono::milliseconds(m.rebalanceTimeoutMs)) {
      out.emplace_back(id, "kept partitions it was told to give up past its rebalance timeout");
    }
  }
  for (const auto& [id, why] : out) remove(id, why, fx);
  if (!out.empty()) retarget(topics, fx);
}

std::optional<ConsumerTime> ConsumerGroup::nextDeadline() const {
  std::optional<ConsumerTime> due;
  auto earliest = [&](ConsumerTime t) {
    if (!due || t < *due) due = t;
  };
  for (const auto& [id, m] : members_) {
    earliest(m.lastHeard + rules_.sessionTimeout);
    if (!m.revoking.empty()) earliest(m.revokingSince + std::chrono::milliseconds(m.rebalanceTimeoutMs));
  }
  return due;
}

void ConsumerGroup::topicsChanged(const TopicTable& topics, ConsumerEffects& fx) {
  if (members_.empty()) return;
  std::map<std::string, TopicSets> before;
  for (const auto& [id, m] : members_) before[id] = m.target;
  const int32_t epoch = groupEpoch_;
  ConsumerEffects trial;
  retarget(topics, trial);
  bool same = true;
  for (const auto& [id, m] : members_) same = same && before[id] == m.target;
  if (same) {
    // Nothing moves: the epoch stays.
    groupEpoch_ = epoch;
    return;
  }
  fx.durable = true;
  fx.membership = true;
}

ErrorCode ConsumerGroup::commitCheck(const std::string& memberId, int32_t epoch) const {
  if (memberId.empty() && epoch < 0) return members_.empty() ? ErrorCode::NONE : ErrorCode::UNKNOWN_MEMBER_ID;
  auto it = members_.find(memberId);
  if (it == members_.end()) return ErrorCode::UNKNOWN_MEMBER_ID;
  // Its previous epoch too: a commit sent before the answer that moved it.
  if (epoch != it->second.epoch && epoch != it->second.previousEpoch) return ErrorCode::STALE_MEMBER_EPOCH;
  return ErrorCode::NONE;
}

void ConsumerGroup::clear(ConsumerEffects& fx) {
  std::vector<std::string> ids;
  for (const auto& [id, m] : members_) ids.push_back(id);
  for (const auto& id : ids) remove(id, "removed with the group", fx);
}

void ConsumerGroup::fenceAll(int32_t epoch) {
  groupEpoch_ = std::max(groupEpoch_, epoch);
  for (auto& [id, m] : members_) {
    m.epoch = kFenced;
    m.previousEpoch = kFenced;
    m.told.reset();
  }
}

void ConsumerGroup::heard(std::string_view memberId, ConsumerTime now) {
  auto it = members_.find(memberId);
  if (it != members_.end()) it->second.lastHeard = std::max(it->second.lastHeard, now);
}

ConsumerSnapshot ConsumerGroup::snapshot() const {
  ConsumerSnapshot s;
  s.groupEpoch = groupEpoch_;
  for (const auto& [id, m] : members_) {
    ConsumerMember c = m;
    c.lastHeard = {};
    c.revokingSince = {};
    c.told.reset();
    c.clientPort = 0;
    c.joinedAt.reset();
    s.members.push_back(std::move(c));
  }
  return s;
}

std::map<std::pair<std::string, int32_t>, std::string> ConsumerGroup::holders() const {
  std::map<std::pair<std::string, int32_t>, std::string> out;
  for (const auto& [id, m] : members_) {
    for (const auto& [t, ps] : m.assigned) {
      for (int32_t p : ps) out[{t, p}] = id;
    }
  }
  return out;
}

cwire::ConsumerGroupDescribeResponse::Group ConsumerGroup::describe(const TopicTable& topics) const {
  using D = cwire::ConsumerGroupDescribeResponse;
  D::Group g;
  g.groupId = groupId_;
  g.groupState = std::string(state());
  g.groupEpoch = groupEpoch_;
  g.assignmentEpoch = groupEpoch_;
  g.assignorName = "uniform";
  auto described = [&](const TopicSets& s) {
    D::Assignment a;
    for (const auto& [t, ps] : s) {
      auto info = topics.find(t);
      D::TopicPartitions tp;
      if (info != topics.end()) tp.topicId = info->second.id;
      tp.topicName = t;
      tp.partitions.assign(ps.begin(), ps.end());
      a.topicPartitions.push_back(std::move(tp));
    }
    return a;
  };
  for (const auto& [id, m] : members_) {
    D::Member dm;
    dm.memberId = id;
    dm.instanceId = m.instanceId;
    if (!m.rackId.empty()) dm.rackId = m.rackId;
    dm.memberEpoch = m.epoch;
    dm.clientId = m.clientId;
    dm.clientHost = m.clientHost;
    dm.subscribedTopicNames = m.topics;
    dm.assignment = described(m.assigned);
    dm.targetAssignment = described(m.target);
    g.members.push_back(std::move(dm));
  }
  return g;
}

// ---- The durable form --------------------------------------------------------
// One version byte ('C', 0x43: never the classic snapshot's 1), then
// big-endian fields in protocol/Wire.h's primitives, as the classic
// snapshot's: texts are int32-length bytes, an optional one a flag byte
// before it, partition sets a count then their numbers. Strict: anything
// past the bytes that remain, or a byte left over, gives nullopt.

namespace {

namespace pw = protocol::wire;
constexpr uint8_t kConsumerSnapshotVersion = 0x43;

void writeSets(pw::Writer& w, const TopicSets& s) {
  w.writeInt32(static_cast<int32_t>(s.size()));
  for (const auto& [t, ps] : s) {
    w.writeBytes(t);
    w.writeInt32(static_cast<int32_t>(ps.size()));
    for (int32_t p : ps) w.writeInt32(p);
  }
}

bool readText(pw::Reader& r, std::string& v, const char* field) {
  std::optional<std::string> t;
  if (!r.readNullableBytes(t, field)) return false;
  if (!t) return false;
  v = std::move(*t);
  return true;
}

bool readCount(pw::Reader& r, size_t& n, size_t minBytes, const char* field) {
  std::optional<size_t> c;
  if (!r.readNullableCount(c, minBytes, field) || !c) return false;
  n = *c;
  return true;
}

bool readSets(pw::Reader& r, TopicSets& s) {
  size_t topics = 0;
  if (!readCount(r, topics, 4 + 4, "Topics")) return false;
  for (size_t i = 0; i < topics; ++i) {
    std::string t;
    size_t n = 0;
    if (!readText(r, t, "Topic") || !readCount(r, n, 4, "Partitions")) return false;
    auto& ps = s[t];
    for (size_t j = 0; j < n; ++j) {
      int32_t p = 0;
      if (!r.readInt32(p, "Partition")) return false;
      ps.insert(p);
    }
  }
  return true;
}

}  // namespace

std::string encodeConsumerSnapshot(const ConsumerSnapshot& s) {
  std::vector<uint8_t> out;
  pw::Writer w(out);
  w.writeInt8(static_cast<int8_t>(kConsumerSnapshotVersion));
  w.writeInt32(s.groupEpoch);
  w.writeInt32(static_cast<int32_t>(s.members.size()));
  for (const auto& m : s.members) {
    w.writeBytes(m.memberId);
    w.writeBool(m.instanceId.has_value());
    if (m.instanceId) w.writeBytes(*m.instanceId);
    w.writeBytes(m.rackId);
    w.writeBytes(m.clientId);
    w.writeBytes(m.clientHost);
    w.writeInt32(m.rebalanceTimeoutMs);
    w.writeInt32(static_cast<int32_t>(m.topics.size()));
    for (const auto& t : m.topics) w.writeBytes(t);
    w.writeBytes(m.assignor);
    w.writeInt32(m.epoch);
    w.writeInt32(m.previousEpoch);
    w.writeBool(m.away);
    writeSets(w, m.assigned);
    writeSets(w, m.revoking);
    writeSets(w, m.target);
  }
  return std::string(out.begin(), out.end());
}

std::optional<ConsumerSnapshot> decodeConsumerSnapshot(std::string_view bytes) {
  pw::Reader r(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  int8_t version = 0;
  if (!r.readInt8(version, "Version") || static_cast<uint8_t>(version) != kConsumerSnapshotVersion) {
    return std::nullopt;
  }
  ConsumerSnapshot s;
  size_t n = 0;
  if (!r.readInt32(s.groupEpoch, "GroupEpoch") || !readCount(r, n, 4 * 12, "Members")) return std::nullopt;
  for (size_t i = 0; i < n; ++i) {
    ConsumerMember m;
    bool hasInstance = false;
    if (!readText(r, m.memberId, "MemberId") || !r.readBool(hasInstance, "HasInstance")) return std::nullopt;
    if (hasInstance && !readText(r, m.instanceId.emplace(), "InstanceId")) return std::nullopt;
    size_t topics = 0;
    if (!readText(r, m.rackId, "RackId") || !readText(r, m.clientId, "ClientId") ||
        !readText(r, m.clientHost, "ClientHost") || !r.readInt32(m.rebalanceTimeoutMs, "RebalanceTimeoutMs") ||
        !readCount(r, topics, 4, "SubscribedTopics")) {
      return std::nullopt;
    }
    for (size_t j = 0; j < topics; ++j) {
      if (!readText(r, m.topics.emplace_back(), "SubscribedTopic")) return std::nullopt;
    }
    if (!readText(r, m.assignor, "Assignor") || !r.readInt32(m.epoch, "Epoch") ||
        !r.readInt32(m.previousEpoch, "PreviousEpoch") || !r.readBool(m.away, "Away") || !readSets(r, m.assigned) ||
        !readSets(r, m.revoking) || !readSets(r, m.target)) {
      return std::nullopt;
    }
    s.members.push_back(std::move(m));
  }
  if (!r.expectEnd()) return std::nullopt;
  return s;
}

}  // namespace groupcoord::adapter::kafka
