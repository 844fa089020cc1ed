// KafkaGroups' side of the consumer protocol (KIP-848; docs/kafka.md, "The
// consumer protocol"): ConsumerGroupHeartbeat and ConsumerGroupDescribe on
// the group's controller, the group saved before an answer that moved an
// epoch or gave a partition, and the subscribed topics read and watched.

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "adapter/Fanout.h"
#include "adapter/KafkaGroups.h"
#include "adapter/KafkaGroupsEntry.h"
#include "common/Layout.h"
#include "common/Options.h"

namespace groupcoord::adapter {

namespace k = protocol::kafka;
using k::ErrorCode;

namespace {

k::ConsumerGroupHeartbeatResponse beatRefused(ErrorCode e, std::string message = {}) {
  k::ConsumerGroupHeartbeatResponse r;
  r.error = e;
  if (!message.empty()) r.errorMessage = std::move(message);
  return r;
}

bool leaving(const k::ConsumerGroupHeartbeatRequest& r) { return r.memberEpoch == -1 || r.memberEpoch == -2; }

}  // namespace

void KafkaGroups::route(const protocol::Caller& caller, const k::RequestHeader& h,
                        k::ConsumerGroupHeartbeatRequest r, k::ResponseCallback& done) {
  if (!protocol::isValidName(r.groupId)) {
    return done(beatRefused(ErrorCode::INVALID_GROUP_ID, "not a valid group name"));
  }
  if (unclaimed(r.groupId)) {
    if (leaving(r)) {
      // Nothing to leave: the member goes anyway.
      k::ConsumerGroupHeartbeatResponse left;
      left.memberId = r.memberId;
      left.memberEpoch = r.memberEpoch;
      return done(left);
    }
    const std::string group = r.groupId;
    auto call = std::make_shared<std::pair<k::ConsumerGroupHeartbeatRequest, k::ResponseCallback>>(std::move(r),
                                                                                                   std::move(done));
    return made(group, [this, caller, h, call](bool ok) {
      if (!ok) return call->second(beatRefused(ErrorCode::COORDINATOR_NOT_AVAILABLE));
      consumerHeartbeat(caller, h, std::move(call->first), std::move(call->second), false);
    });
  }
  consumerHeartbeat(caller, h, std::move(r), std::move(done), false);
}

void KafkaGroups::consumerHeartbeat(const protocol::Caller& caller, const k::RequestHeader& h,
                                    k::ConsumerGroupHeartbeatRequest r, k::ResponseCallback done, bool retried) {
  Answers out;
  {
    MutexLock lock(mu_);
    ErrorCode error = ErrorCode::NONE;
    Entry* e = entryFor(r.groupId, &error);
    const TimePoint now = time_.now();
    if (e == nullptr) {
      out.push_back([done = std::move(done), error = notServedYet(r.groupId, error)] { done(beatRefused(error)); });
    } else if (!hooks_.answersFromMemory(now)) {
      // Not answered while the session lease does not hold (docs/design.md,
      // "The session lease"); heard, so its session does not run out.
      if (e->consumer) e->consumer->heard(r.memberId, now);
      out.push_back([done = std::move(done)] { done(beatRefused(ErrorCode::NOT_COORDINATOR)); });
    } else if (!e->model->empty()) {
      // One protocol at a time: a group with classic members refuses the
      // consumer protocol's (docs/kafka.md, "The consumer protocol").
      spdlog::info("kafka group {}: refused a ConsumerGroupHeartbeat: the group has {} classic member(s)",
                   r.groupId, e->model->size());
      out.push_back([done = std::move(done), group = r.groupId, n = e->model->size()] {
        done(beatRefused(ErrorCode::GROUP_ID_NOT_FOUND,
                         "group " + group + " has " + std::to_string(n) +
                             " member(s) of the classic protocol; groupcoord serves one protocol per group at a "
                             "time, so the consumer protocol may join once they have left"));
      });
    } else {
      if (!e->consumer) e->consumer.emplace(r.groupId, e->rules, std::max(e->version, e->model->generation()));
      // Its topics, read once before the first answer that needs them. A
      // steady heartbeat (no subscription in it) uses the group's table as
      // it is: kept current by topicRead.
      std::vector<std::string> missing;
      if (!e->topicsComplete || r.subscribedTopicNames) {
        std::set<std::string> names = e->consumer->subscribedTopics();
        if (r.subscribedTopicNames) names.insert(r.subscribedTopicNames->begin(), r.subscribedTopicNames->end());
        groupTopics(*e, std::move(names), &missing);
      }
      if (!missing.empty() && !retried) {
        const std::string first = missing.front();
        topicWaiters_.emplace(first, [this, caller, h, r = std::move(r), done = std::move(done)]() mutable {
          consumerHeartbeat(caller, h, std::move(r), std::move(done), true);
        });
        return;
      }
      kafka::HeartbeatArgs a;
      a.version = h.apiVersion;
      a.clientId = h.clientId.value_or("");
      a.clientHost = "/" + caller.host;
      a.clientPort = caller.port;
      if (r.memberId.empty() && r.memberEpoch == 0) a.freshMemberId = hooks_.newMemberId(a.clientId);
      const std::string group = r.groupId;
      a.request = std::move(r);
      kafka::ConsumerEffects fx;
      auto resp = e->consumer->heartbeat(a, e->topics, now, fx);
      if (resp.error != ErrorCode::NONE) {
        spdlog::debug("kafka group {}: ConsumerGroupHeartbeat of {} at epoch {}: {}: {}", group, a.request.memberId,
                      a.request.memberEpoch, k::errorName(resp.error), resp.errorMessage.value_or(""));
      }
      deliverConsumer(group, *e, fx, HeldBeat{std::move(done), std::move(resp)}, out);
    }
  }
  run(out);
}

void KafkaGroups::deliverConsumer(const std::string& group, Entry& e, kafka::ConsumerEffects& fx,
                                  std::optional<HeldBeat> answer, Answers& out) {
  for (const auto& id : fx.joined) {
    spdlog::info("kafka group {}: consumer-protocol member {} joined; group epoch {}", group, id,
                 e.consumer->groupEpoch());
  }
  for (const auto& [id, why] : fx.removed) {
    spdlog::info("kafka group {}: consumer-protocol member {} left ({}); group epoch {}", group, id, why,
                 e.consumer->groupEpoch());
  }
  if (fx.membership) reconcile(group, e, out);
  if (fx.durable && !e.closing) {
    if (answer) e.unsaved.push_back(std::move(*answer));
    saveConsumer(group, e, out);
    return;
  }
  if (!answer) return;
  if (e.saveInFlight || !e.unsaved.empty()) {
    // Answers leave in order: after those waiting for a save.
    e.unsaved.push_back(std::move(*answer));
    return;
  }
  out.push_back([a = std::move(*answer)]() mutable { a.done(a.response); });
}

// One save at a time per group; the answers of the calls before it go out
// when it is applied. Conditional on the saved znode's version, so that a
// controller that lost the group cannot overwrite what the next one saved.
void KafkaGroups::saveConsumer(const std::string& group, Entry& e, Answers& out) {
  if (e.saveInFlight || e.closing || !e.consumer) return;
  e.saveInFlight = true;
  e.saving = std::move(e.unsaved);
  e.unsaved.clear();
  std::string data = kafka::encodeConsumerSnapshot(e.consumer->snapshot());
  out.push_back([this, group, serial = e.serial, version = e.savedVersion, data = std::move(data)]() mutable {
    const std::string path = snapshotPath(group);
    if (version < 0) {
      zk_.create(path, data, zk::CreateMode::Persistent, [this, group, serial](zk::CreateResult c) {
        consumerSaved(group, serial, c.error, 0);
      });
      return;
    }
    zk_.set(path, std::move(data), version, [this, group, serial](zk::SetResult r) {
      consumerSaved(group, serial, r.error, r.stat.version);
    });
  });
}

void KafkaGroups::consumerSaved(const std::string& group, uint64_t serial, zk::Error error, int32_t savedVersion) {
  Answers out;
  {
    MutexLock lock(mu_);
    auto it = groups_.find(group);
    if (it == groups_.end() || it->second->serial != serial) return;
    Entry& e = *it->second;
    e.saveInFlight = false;
    if (error == zk::Error::Ok) {
      e.savedVersion = savedVersion;
      for (auto& b : e.saving) out.push_back([b = std::move(b)]() mutable { b.done(b.response); });
      e.saving.clear();
      if (!e.unsaved.empty()) saveConsumer(group, e, out);
    } else if (!e.closing) {
      // Another controller saved it since (BadVersion, NodeExists), or
      // ZooKeeper is away: what was decided is not durable, so nobody hears
      // it; the group is read again, and its members find it again.
      spdlog::warn("kafka group {}: saving the consumer-protocol group failed: {}; it is read again", group, error);
      forget(group, e, out);
      groups_.erase(it);
    }
  }
  run(out);
}

void KafkaGroups::groupTopics(Entry& e, std::set<std::string> names, std::vector<std::string>* missing) {
  if (e.topicsComplete && names == e.topicNames) return;
  std::vector<std::string> lacking;
  e.topics = topicTable(names, &lacking);
  e.topicNames = std::move(names);
  e.topicsComplete = lacking.empty();
  if (missing != nullptr) *missing = std::move(lacking);
}

kafka::TopicTable KafkaGroups::topicTable(const std::set<std::string>& names, std::vector<std::string>* missing) {
  kafka::TopicTable table;
  for (const auto& name : names) {
    auto it = topics_.find(name);
    if (it == topics_.end() || !it->second.read) {
      if (missing != nullptr) missing->push_back(name);
      if (it == topics_.end() || !it->second.reading) readTopic(name);
      continue;
    }
    table.emplace(name, it->second.info);
  }
  return table;
}

void KafkaGroups::readTopic(const std::string& name) {
  if (!protocol::isValidName(name)) {
    // Never a znode: a topic that does not exist.
    auto& c = topics_[name];
    c.read = true;
    return;
  }
  topics_[name].reading = true;
  auto again = [this, name](const zk::WatchEvent& ev) {
    if (ev.type == zk::WatchEvent::Type::Session) return;
    MutexLock lock(mu_);
    // A topic no group subscribes to any more was forgotten: not read again.
    if (!stopped_ && topics_.count(name)) readTopic(name);
  };
  const std::string path = config_.topicsPath + "/" + name;
  zk_.get(path, [this, name, path, again](zk::GetResult r) {
    if (r.error != zk::Error::NoNode) return topicRead(name, std::move(r));
    // A read of a missing znode leaves no watch: watch for its creation,
    // so that a topic made after its group subscribed is seen.
    zk_.exists(path, [this, name, r = std::move(r), again](zk::ExistsResult x) mutable {
      if (x.error == zk::Error::Ok) {
        // Created in between: read it (the watch fires too; one more read).
        MutexLock lock(mu_);
        if (!stopped_) readTopic(name);
        return;
      }
      topicRead(name, std::move(r));
    }, again);
  }, again);
}

void KafkaGroups::topicRead(const std::string& name, zk::GetResult r) {
  Answers out;
  std::vector<std::function<void()>> waiting;
  {
    MutexLock lock(mu_);
    auto& c = topics_[name];
    c.reading = false;
    kafka::TopicInfo info;
    std::vector<std::vector<int32_t>> replicas;
    if (r.error == zk::Error::Ok) {
      info.id.bytes = layout::topicIdOf(name, r.data);
      info.partitions = layout::decodeTopicPartitions(r.data).value_or(0);
      replicas = layout::decodeTopicReplicas(r.data).value_or(std::vector<std::vector<int32_t>>{});
    } else if (r.error != zk::Error::NoNode) {
      spdlog::warn("kafka: reading topic {} failed: {}; its partitions count as none until it is read", name,
                   r.error);
    }
    if (hooks_.brokerRacks && !replicas.empty()) {
      std::set<int32_t> brokers;
      for (const auto& ps : replicas) brokers.insert(ps.begin(), ps.end());
      const auto racks = hooks_.brokerRacks(brokers);
      bool any = false;
      for (const auto& ps : replicas) {
        auto& set = info.replicaRacks.emplace_back();
        for (int32_t b : ps) {
          auto rk = racks.find(b);
          if (rk != racks.end() && !rk->second.empty()) {
            set.insert(rk->second);
            any = true;
          }
        }
      }
      if (!any) info.replicaRacks.clear();
    }
    const bool changed = !c.read || !(c.info == info);
    c.info = std::move(info);
    c.read = true;
    auto [from, to] = topicWaiters_.equal_range(name);
    for (auto w = from; w != to; ++w) waiting.push_back(std::move(w->second));
    topicWaiters_.erase(from, to);
    if (changed) {
      for (auto& [group, e] : groups_) {
        if (!e->consumer || e->loading || e->closing || !e->topicNames.count(name)) continue;
        e->topicsComplete = false;
        groupTopics(*e, e->topicNames, nullptr);
        if (!e->consumer->subscribedTopics().count(name)) continue;
        kafka::ConsumerEffects fx;
        e->consumer->topicsChanged(e->topics, fx);
        if (fx.membership) {
          spdlog::info("kafka group {}: topic {} changed ({} partitions); group epoch {}", group, name,
                       c.info.partitions, e->consumer->groupEpoch());
        }
        deliverConsumer(group, *e, fx, std::nullopt, out);
      }
    }
  }
  run(out);
  for (auto& w : waiting) w();
}

void KafkaGroups::readGroupConfig(const std::string& group, uint64_t serial, std::function<void(zk::GetResult)> then) {
  const std::string path = layout_.groupConfigPath(group);
  auto again = [this, group, serial](const zk::WatchEvent& ev) {
    if (ev.type == zk::WatchEvent::Type::Session) return;
    {
      MutexLock lock(mu_);
      auto it = groups_.find(group);
      // Forgotten here (or loaded again, with watches of its own).
      if (stopped_ || it == groups_.end() || it->second->serial != serial) return;
    }
    readGroupConfig(group, serial, [this, group, serial](zk::GetResult r) {
      groupConfigChanged(group, serial, std::move(r));
    });
  };
  zk_.get(path, [this, group, serial, path, then = std::move(then), again](zk::GetResult r) mutable {
    if (r.error != zk::Error::NoNode) return then(std::move(r));
    // A read of a missing znode leaves no watch: watch for its creation.
    zk_.exists(path, [this, group, serial, r = std::move(r), then = std::move(then)](zk::ExistsResult x) mutable {
      // Created in between: read it.
      if (x.error == zk::Error::Ok) return readGroupConfig(group, serial, std::move(then));
      then(std::move(r));
    }, again);
  }, again);
}

void KafkaGroups::groupConfigChanged(const std::string& group, uint64_t serial, zk::GetResult r) {
  const kafka::ConsumerRules rules = consumerRulesOf(group, r);
  MutexLock lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end() || it->second->serial != serial) return;
  Entry& e = *it->second;
  if (rules.sessionTimeout == e.rules.sessionTimeout && rules.heartbeatInterval == e.rules.heartbeatInterval) return;
  spdlog::info("kafka group {}: consumer-protocol session timeout {} ms, heartbeat interval {} ms (were {} and {})",
               group, rules.sessionTimeout.count(), rules.heartbeatInterval.count(), e.rules.sessionTimeout.count(),
               e.rules.heartbeatInterval.count());
  e.rules = rules;
  if (e.consumer) e.consumer->setRules(rules);
}

kafka::ConsumerRules KafkaGroups::consumerRulesOf(const std::string& group, const zk::GetResult& read) const {
  kafka::ConsumerRules rules = config_.consumer;
  if (read.error == zk::Error::NoNode) return rules;
  if (read.error != zk::Error::Ok) {
    spdlog::warn("kafka group {}: reading its own settings at {} failed: {}; the server's apply until it is loaded "
                 "again",
                 group, layout_.groupConfigPath(group), read.error);
    return rules;
  }
  std::string why;
  const auto c = layout::decodeGroupConfig(read.data, &why);
  if (!c) {
    spdlog::warn("kafka group {}: its settings at {} are unreadable ({}); the server's apply", group,
                 layout_.groupConfigPath(group), why);
    return rules;
  }
  auto within = [&](std::string_view key, std::string_view option, std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    const auto& o = options::find(option);
    const int64_t bounded = std::clamp(*v, o.min, o.max);
    if (bounded != *v) {
      spdlog::warn("kafka group {}: its {} {} is out of {}..{}; {} applies", group, key, *v, o.min, o.max, bounded);
    }
    return bounded;
  };
  const int64_t session = within(layout::kConsumerSessionTimeoutKey, "kafka.group.consumer.session.timeout.ms",
                                 c->consumerSessionTimeoutMs, rules.sessionTimeout.count());
  int64_t interval = within(layout::kConsumerHeartbeatIntervalKey, "kafka.group.consumer.heartbeat.interval.ms",
                            c->consumerHeartbeatIntervalMs, rules.heartbeatInterval.count());
  if (interval * 2 > session) {
    // A member beats at least twice within its session.
    spdlog::warn("kafka group {}: heartbeat interval {} ms is over half its session timeout {} ms; {} ms applies",
                 group, interval, session, session / 2);
    interval = session / 2;
  }
  rules.sessionTimeout = std::chrono::milliseconds(session);
  rules.heartbeatInterval = std::chrono::milliseconds(interval);
  return rules;
}

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::ConsumerGroupDescribeRequest r,
                        k::ResponseCallback& done) {
  k::ConsumerGroupDescribeResponse out;
  std::vector<size_t> unknown;  // no server controls them: not found if ZooKeeper has none
  {
    MutexLock lock(mu_);
    for (const auto& name : r.groupIds) {
      k::ConsumerGroupDescribeResponse::Group g;
      g.groupId = name;
      if (!protocol::isValidName(name)) {
        g.error = ErrorCode::INVALID_GROUP_ID;
      } else if (!hooks_.controlsHere(name)) {
        if (hooks_.controllerOf(name) >= 0) {
          g.error = ErrorCode::NOT_COORDINATOR;
        } else {
          g.error = ErrorCode::GROUP_ID_NOT_FOUND;
          unknown.push_back(out.groups.size());
        }
      } else {
        ErrorCode error = ErrorCode::NONE;
        Entry* e = entryFor(name, &error);
        if (e == nullptr) {
          g.error = error;
        } else if (!e->model->empty()) {
          g.error = ErrorCode::GROUP_ID_NOT_FOUND;
          g.errorMessage = "group " + name + " is a classic group (DescribeGroups describes it)";
        } else if (!e->consumer) {
          g.groupState = "Empty";
          g.groupEpoch = e->version;
          g.assignmentEpoch = e->version;
          g.assignorName = "uniform";
        } else {
          g = e->consumer->describe(topicTable(e->consumer->subscribedTopics(), nullptr));
        }
      }
      if (r.includeAuthorizedOperations) g.authorizedOperations = 0;
      out.groups.push_back(std::move(g));
    }
  }
  if (unknown.empty()) return done(std::move(out));
  auto reads = Fanout<k::ConsumerGroupDescribeResponse>::start(
      zk_, [done = std::move(done)](k::ConsumerGroupDescribeResponse answer) { done(std::move(answer)); });
  reads->update([&](k::ConsumerGroupDescribeResponse& answer) { answer = std::move(out); });
  for (size_t i : unknown) {
    // It exists and is between controllers: the client asks again.
    absent(r.groupIds[i], reads->collect<bool>([i](k::ConsumerGroupDescribeResponse& answer, bool gone) {
      if (!gone) answer.groups[i].error = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
    }));
  }
  reads->release();
}

void KafkaGroups::describeConsumerInto(const kafka::ConsumerGroup& g, protocol::DescribeGroupResponse& d) const {
  d.kafka = true;
  d.protocolType = "consumer";
  d.protocolName = std::string(kafka::kConsumerProtocolName);
  d.generation = g.groupEpoch();
  // The server assigns, and the group sets the session.
  d.mode = protocol::AssignmentMode::SERVER;
  d.sessionTimeoutMs = g.rules().sessionTimeout.count();
  // Its members' subscriptions, with the partition counts as last read.
  d.topics.clear();
  for (const auto& t : g.subscribedTopics()) {
    auto it = topics_.find(t);
    const bool known = it != topics_.end() && it->second.read && it->second.info.partitions > 0;
    d.topics.push_back(protocol::TopicState{t, known ? it->second.info.partitions : -1});
  }
  d.members.clear();
  const TimePoint now = time_.now();
  const int64_t wallNow = time_.wallMs();
  auto tps = [](const kafka::TopicSets& s) {
    std::vector<protocol::TopicPartition> v;
    for (const auto& [t, ps] : s) {
      for (int32_t p : ps) v.push_back(protocol::TopicPartition{t, p});
    }
    return v;
  };
  for (const auto& [id, m] : g.members()) {
    protocol::MemberState s;
    s.consumerId = id;
    s.clientId = m.clientId;
    s.host = m.clientHost.starts_with("/") ? m.clientHost.substr(1) : m.clientHost;
    s.port = m.clientPort;
    auto wallOf = [&](TimePoint t) { return wallNow - std::chrono::duration_cast<Millis>(now - t).count(); };
    s.lastHeardMs = wallOf(m.lastHeard);
    if (m.joinedAt) s.joinedAtMs = wallOf(*m.joinedAt);
    s.rack = m.rackId;
    s.held = tps(m.assigned);
    kafka::TopicSets waiting;
    for (const auto& [t, ps] : m.target) {
      for (int32_t p : ps) {
        auto a = m.assigned.find(t);
        if (a == m.assigned.end() || !a->second.count(p)) waiting[t].insert(p);
      }
    }
    s.waiting = tps(waiting);
    d.members.push_back(std::move(s));
  }
}

void KafkaGroups::forgetUnsubscribedTopics() {
  std::set<std::string> subscribed;
  for (auto& [group, e] : groups_) {
    if (!e->consumer) continue;
    // Each group's table shrinks to what its members subscribe to now.
    if (!e->loading && !e->closing) groupTopics(*e, e->consumer->subscribedTopics(), nullptr);
    subscribed.insert(e->topicNames.begin(), e->topicNames.end());
  }
  for (auto it = topics_.begin(); it != topics_.end();) {
    if (!subscribed.count(it->first) && !it->second.reading && !topicWaiters_.count(it->first)) {
      it = topics_.erase(it);
    } else {
      ++it;
    }
  }
}

std::pair<size_t, size_t> KafkaGroups::consumerProtocolCounts() const {
  MutexLock lock(mu_);
  std::pair<size_t, size_t> out{0, 0};
  for (const auto& [name, e] : groups_) {
    if (!e->consumer || e->consumer->empty()) continue;
    ++out.first;
    out.second += e->consumer->size();
  }
  return out;
}

std::optional<kafka::ConsumerSnapshot> KafkaGroups::consumerSnapshotOf(const std::string& group) const {
  MutexLock lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end() || !it->second->consumer) return std::nullopt;
  return it->second->consumer->snapshot();
}

}  // namespace groupcoord::adapter
