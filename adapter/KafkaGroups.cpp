#include "adapter/KafkaGroups.h"

#include <algorithm>
#include <cctype>
#include <atomic>
#include <set>
#include <span>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "adapter/Fanout.h"
#include "adapter/KafkaGroupsEntry.h"
#include "common/LogRateLimiter.h"
#include "protocol/Codec.h"
#include "protocol/Wire.h"

namespace groupcoord::adapter {

namespace k = protocol::kafka;
using k::ErrorCode;

namespace {

// A member's znode name: its id, with every byte other than letters,
// digits and - _ . + = written %XX. Ids of the consumer protocol are made
// by clients (librdkafka's are base64, with '/'); a '/' would make a path.
std::string memberZnodeName(std::string_view id) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(id.size());
  for (unsigned char c : id) {
    const bool plain = std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '+' || c == '=';
    if (plain && c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (out == "." || out == "..") {  // never a path step
    std::string dots;
    for (size_t i = 0; i < out.size(); ++i) dots += "%2E";
    return dots;
  }
  return out;
}

// Whole answers for a request refused before its group was asked.
template <class Response>
Response failed(ErrorCode e) {
  Response r;
  r.error = e;
  return r;
}

using FetchTopics = std::optional<std::vector<k::OffsetFetchRequest::Topic>>;

// OffsetFetch answered without reading: `e` for the group and every
// partition asked for, no offset (-1).
k::OffsetFetchResponse fetchRefusal(const FetchTopics& topics, ErrorCode e) {
  k::OffsetFetchResponse out;
  out.error = e;
  if (topics) {
    for (const auto& t : *topics) {
      k::OffsetFetchResponse::Topic topic{t.name, {}};
      for (int32_t p : t.partitionIndexes) topic.partitions.push_back({p, -1, -1, std::string(), e});
      out.topics.push_back(std::move(topic));
    }
  }
  return out;
}

// A commit's metadata longer than groupcoord stores (OffsetStore.h).
bool metadataTooLarge(const k::OffsetCommitRequest::Partition& p) {
  return p.committedMetadata && p.committedMetadata->size() > kMaxOffsetMetadataBytes;
}

// The answer of a commit that went on to its write: `error` for every
// partition, but OFFSET_METADATA_TOO_LARGE for those whose metadata was
// too long (they were not written).
k::OffsetCommitResponse commitAnswer(const k::OffsetCommitRequest& r, ErrorCode error) {
  k::OffsetCommitResponse out = k::offsetCommitAnswer(r, error);
  for (size_t t = 0; t < r.topics.size(); ++t) {
    for (size_t p = 0; p < r.topics[t].partitions.size(); ++p) {
      if (metadataTooLarge(r.topics[t].partitions[p])) {
        out.topics[t].partitions[p].error = ErrorCode::OFFSET_METADATA_TOO_LARGE;
      }
    }
  }
  return out;
}

}  // namespace

// Member znode ops in one transaction, at most (ZooKeeper's request size
// bounds a transaction; a native group's slices are as large).
constexpr size_t kMaxOpsPerWrite = 1000;

struct KafkaGroups::Loaded {
  zk::GetResult saved;
  zk::GetResult config;
  zk::ChildrenResult members;
  OffsetsRead offsets;
};

KafkaGroups::KafkaGroups(zk::Client& zk, const layout::Layout& layout, OffsetStore& offsets, const TimeSource& time,
                         KafkaGroupsConfig config, KafkaHooks hooks)
    : zk_(zk), layout_(layout), offsets_(offsets), time_(time), config_(std::move(config)), hooks_(std::move(hooks)) {}

KafkaGroups::~KafkaGroups() { stop(); }

std::string KafkaGroups::snapshotPath(const std::string& group) const { return layout_.kafkaGroupPath(group); }

void KafkaGroups::run(Answers& out) {
  for (auto& a : out) a();
  out.clear();
}

void KafkaGroups::handle(const protocol::Caller& caller, const k::RequestHeader& header, k::Request request,
                         k::ResponseCallback done) {
  std::visit([&](auto& r) { route(caller, header, std::move(r), done); }, request);
}

bool KafkaGroups::unclaimed(const std::string& group) {
  if (!protocol::isValidName(group) || hooks_.controlsHere(group) || hooks_.controllerOf(group) >= 0) return false;
  MutexLock lock(mu_);
  return !stopped_;
}

void KafkaGroups::made(const std::string& group, std::function<void(bool ok)> then) {
  hooks_.ensure(group, [group, then = std::move(then)](int32_t controller, std::string why) {
    if (controller < 0) spdlog::warn("kafka group {}: could not make it: {}", group, why);
    then(controller >= 0);
  });
}

ErrorCode KafkaGroups::notServedYet(const std::string& group, ErrorCode error) const {
  return error == ErrorCode::NOT_COORDINATOR && hooks_.controllerOf(group) == hooks_.selfId
             ? ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
             : error;
}

void KafkaGroups::absent(const std::string& group, std::function<void(bool absent)> then) {
  zk_.exists(layout_.groupPath(group), [then = std::move(then)](zk::ExistsResult r) {
    then(r.error == zk::Error::NoNode);
  });
}

KafkaGroups::Entry* KafkaGroups::entryFor(const std::string& group, ErrorCode* error) {
  if (stopped_ || !hooks_.controlsHere(group)) {
    *error = ErrorCode::NOT_COORDINATOR;
    return nullptr;
  }
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    const std::optional<bool> kafkaGroup = hooks_.isKafkaGroup(group);
    if (!kafkaGroup) {
      *error = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
      return nullptr;
    }
    if (!*kafkaGroup) {
      // A native group: its members follow groupcoord's own protocol.
      static LogRateLimiter log{std::chrono::seconds(1)};
      uint64_t suppressed = 0;
      if (log.allow(&suppressed)) {
        spdlog::warn("kafka: refused a Kafka consumer for group {}: it is a native groupcoord group, not a Kafka "
                     "group (docs/kafka.md){}",
                     group, suppressed ? fmt::format(" ({} similar lines suppressed)", suppressed) : std::string());
      }
      *error = ErrorCode::INCONSISTENT_GROUP_PROTOCOL;
      return nullptr;
    }
    // The generation as the group's controller read it; none while it
    // reads the group again (after a failed write) or hands it over.
    const std::optional<int32_t> version = hooks_.generationOf(group);
    if (!version) {
      *error = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
      return nullptr;
    }
    auto e = std::make_unique<Entry>();
    e->serial = nextSerial_++;
    e->rules = config_.consumer;
    const uint64_t serial = e->serial;
    groups_.emplace(group, std::move(e));
    // The generation a previous controller made stable, if any, and the
    // member znodes there are.
    auto reads = Fanout<Loaded>::start(zk_, [this, group, serial, v = *version](Loaded read) {
      loaded(group, serial, v, std::move(read));
    });
    zk_.get(snapshotPath(group),
            reads->collect<zk::GetResult>([](Loaded& l, zk::GetResult r) { l.saved = std::move(r); }));
    readGroupConfig(group, serial,
                    reads->collect<zk::GetResult>([](Loaded& l, zk::GetResult r) { l.config = std::move(r); }));
    zk_.getChildren(layout_.membersPath(group), reads->collect<zk::ChildrenResult>([](Loaded& l, zk::ChildrenResult r) {
      l.members = std::move(r);
    }));
    // Its committed offsets, for commits and for describe.
    offsets_.read(group, {}, reads->collect<OffsetsRead>([](Loaded& l, OffsetsRead r) { l.offsets = std::move(r); }));
    reads->release();
    *error = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
    return nullptr;
  }
  if (it->second->loading) {
    *error = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
    return nullptr;
  }
  return it->second.get();
}

void KafkaGroups::loaded(const std::string& group, uint64_t serial, int32_t version, Loaded read) {
  Answers out;
  {
    MutexLock lock(mu_);
    auto it = groups_.find(group);
    if (it == groups_.end() || it->second->serial != serial) return;
    Entry& e = *it->second;
    zk::Error error = read.saved.error == zk::Error::NoNode ? zk::Error::Ok : read.saved.error;
    if (error == zk::Error::Ok && read.members.error != zk::Error::NoNode) error = read.members.error;
    if (error != zk::Error::Ok) {
      // Read again on the next request.
      spdlog::warn("kafka group {}: reading its saved generation and members failed: {}", group, error);
      groups_.erase(it);
      return;
    }
    e.version = version;
    e.rules = consumerRulesOf(group, read.config);
    e.found.insert(read.members.children.begin(), read.members.children.end());
    if (read.offsets.error == zk::Error::Ok || read.offsets.error == zk::Error::NoNode) {
      e.offsets.offsets = std::move(read.offsets.offsets);
      e.offsets.topics = std::move(read.offsets.topics);
      e.offsets.loaded = true;
    }
    std::optional<kafka::Snapshot> s;
    std::optional<kafka::ConsumerSnapshot> cs;
    if (read.saved.error == zk::Error::Ok) {
      e.savedVersion = read.saved.stat.version;
      cs = kafka::decodeConsumerSnapshot(read.saved.data);
    }
    if (cs) {
      // A group under the consumer protocol: its epochs, holdings and
      // targets as its last controller saved them before answering.
      const int32_t savedEpoch = cs->groupEpoch;
      e.consumer.emplace(kafka::ConsumerGroup::resume(group, e.rules, std::move(*cs), time_.now()));
      if (version > savedEpoch) {
        // Its epoch moved past the saved one (a rewind; or a membership
        // write applied whose save was not, so nobody heard of it): each
        // member is fenced, gives up what it holds and joins again, so it
        // reads the offsets anew; what it holds stays held until then.
        e.consumer->fenceAll(version);
        spdlog::info("kafka group {}: consumer-protocol group resumed at epoch {} after its epoch moved to {}; its "
                     "members join again",
                     group, savedEpoch, version);
      } else {
        spdlog::info("kafka group {}: consumer-protocol group resumed at epoch {} with {} member(s)", group,
                     savedEpoch, e.consumer->size());
      }
      e.model.emplace(group, config_.rules, version);
    } else if (read.saved.error == zk::Error::Ok) {
      s = kafka::decodeSnapshot(read.saved.data);
      if (!s) {
        spdlog::warn("kafka group {}: the saved generation at {} is unreadable; the group starts empty", group,
                     snapshotPath(group));
      } else if (s->generation != version) {
        // A rebalance moved the generation after the saved one became
        // stable: its members are rejoining, as they will here.
        spdlog::info("kafka group {}: the saved generation {} is not the group's generation {}; the group starts "
                     "empty",
                     group, s->generation, version);
        s.reset();
      }
    }
    if (s) {
      e.model.emplace(kafka::ClassicGroup::resume(group, config_.rules, *s, time_.now()));
      e.savedMembers = !s->members.empty();
      spdlog::info("kafka group {}: resumed generation {} with {} member(s) (protocol {}, leader {})", group,
                   s->generation, s->members.size(), s->protocolName, s->leader);
    } else if (!e.consumer) {
      e.model.emplace(group, config_.rules, version);
      e.savedMembers = read.saved.error == zk::Error::Ok;
    }
    e.loading = false;
    // The member znodes become this controller's.
    reconcile(group, e, out);
  }
  run(out);
}

void KafkaGroups::reconcile(const std::string& group, Entry& e, Answers& out) {
  if (e.writing || e.loading || e.closing || !e.model) return;
  e.retry = false;
  std::map<std::string, std::string> want;  // member id -> client id
  for (const auto& m : e.model->members()) want.emplace(memberZnodeName(m.memberId), m.clientId);
  if (e.consumer) {
    for (const auto& [id, m] : e.consumer->members()) want.emplace(memberZnodeName(id), m.clientId);
  }
  std::vector<zk::Op> ops;
  std::vector<std::string> removed, created;
  auto room = [&] { return ops.size() < kMaxOpsPerWrite; };
  for (const auto& id : e.found) {
    if (!room()) break;
    ops.push_back(zk::makeRemove(layout_.memberPath(group, id)));
    removed.push_back(id);
  }
  for (const auto& id : e.inZk) {
    if (!room()) break;
    if (want.count(id)) continue;
    ops.push_back(zk::makeRemove(layout_.memberPath(group, id)));
    removed.push_back(id);
  }
  const std::set<std::string> removing(removed.begin(), removed.end());
  for (const auto& [id, clientId] : want) {
    if (!room()) break;
    // A znode found at load is removed first, and created again as this
    // controller's.
    if (e.inZk.count(id) && !removing.count(id)) continue;
    if (e.found.count(id) && !removing.count(id)) continue;
    ops.push_back(zk::makeCreate(layout_.memberPath(group, id), layout::encodeMember(clientId),
                                 zk::CreateMode::Ephemeral));
    created.push_back(id);
  }
  // The generation moves with the last slice: once ZooKeeper has it, its
  // member znodes are all there.
  const bool last = room();
  const int32_t generation = e.consumer ? std::max(e.model->generation(), e.consumer->groupEpoch())
                                        : e.model->generation();
  const int moves = last ? std::max(0, generation - e.version) : 0;
  if (ops.empty() && moves == 0) return;
  e.writing = true;
  out.push_back([this, group, serial = e.serial, ops = std::move(ops), version = e.version, moves,
                 removed = std::move(removed), created = std::move(created)]() mutable {
    hooks_.writeMembers(group, std::move(ops), version, moves,
                        [this, group, serial, removed = std::move(removed), created = std::move(created)](
                            std::optional<int32_t> after, bool busy, std::string why) mutable {
                          written(group, serial, std::move(removed), std::move(created), after, busy,
                                  std::move(why));
                        });
  });
}

void KafkaGroups::written(const std::string& group, uint64_t serial, std::vector<std::string> removed,
                          std::vector<std::string> created, std::optional<int32_t> version, bool busy,
                          std::string why) {
  Answers out;
  {
    MutexLock lock(mu_);
    auto it = groups_.find(group);
    if (it == groups_.end() || it->second->serial != serial) return;
    Entry& e = *it->second;
    e.writing = false;
    if (version) {
      for (const auto& id : removed) {
        e.found.erase(id);
        e.inZk.erase(id);
      }
      e.inZk.insert(created.begin(), created.end());
      e.version = *version;
      // The answers of the generations ZooKeeper now has go out.
      auto keep = std::partition(e.held.begin(), e.held.end(),
                                 [&](const auto& h) { return h.second.generationId > e.version; });
      for (auto h = keep; h != e.held.end(); ++h) {
        out.push_back([done = std::move(h->first), resp = std::move(h->second)] { done(resp); });
      }
      e.held.erase(keep, e.held.end());
      reconcile(group, e, out);
    } else if (busy) {
      e.retry = true;
    } else if (!e.closing) {
      // Memory and ZooKeeper disagree, or ZooKeeper is away: the group's
      // controller reads it again, and the members find it again and
      // rejoin (NOT_COORDINATOR).
      spdlog::warn("kafka group {}: writing its members and generation failed: {}; its members rejoin", group,
                   why);
      forget(group, e, out);
      groups_.erase(it);
    }
  }
  run(out);
}

void KafkaGroups::rewind(const protocol::RewindConsumerRequest& r, protocol::ResponseCallback done) {
  using protocol::ErrorCode;
  protocol::RewindConsumerResponse answer;
  std::vector<protocol::PartitionOffset> accepted;
  for (const auto& o : r.offsets) {
    // A topic name becomes a znode's name.
    const bool valid = protocol::isValidName(o.topic) && o.partition >= 0 && o.offset >= 0;
    answer.results.push_back(protocol::PartitionError{o.topic, o.partition,
                                                      valid ? ErrorCode::NONE : ErrorCode::INVALID_REQUEST});
    if (valid) accepted.push_back(o);
  }
  if (accepted.empty()) return done(std::move(answer));
  std::vector<zk::Op> ops;
  int32_t version = -1;
  uint64_t serial = 0;
  {
    MutexLock lock(mu_);
    k::ErrorCode refusal = k::ErrorCode::NONE;
    Entry* e = entryFor(r.group, &refusal);
    if (e != nullptr && !e->writing && e->offsets.loaded) {
      offsets_.writeOps(r.group, e->offsets, accepted, ops);
      version = e->version;
      serial = e->serial;
      e->writing = true;
    }
  }
  if (ops.empty()) {
    // Loading, or busy with a rebalance's write: the client asks again.
    answer.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    return done(std::move(answer));
  }
  hooks_.writeMembers(r.group, std::move(ops), version, 1,
                      [this, group = r.group, serial, answer = std::move(answer), done = std::move(done)](
                          std::optional<int32_t> moved, bool busy, std::string why) mutable {
                        Answers out;
                        {
                          MutexLock lock(mu_);
                          auto it = groups_.find(group);
                          if (it != groups_.end() && it->second->serial == serial) {
                            it->second->writing = false;
                            if (moved || !busy) {
                              forget(group, *it->second, out);
                              groups_.erase(it);
                            }
                          }
                        }
                        run(out);
                        if (moved) {
                          spdlog::info("kafka group {}: rewound, generation {}; its members join again", group,
                                       *moved);
                        } else {
                          spdlog::warn("kafka group {}: rewinding it failed: {}", group, why);
                          answer.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
                        }
                        done(std::move(answer));
                      });
}

void KafkaGroups::forget(const std::string& group, Entry& e, Answers& out) {
  e.closing = true;
  if (e.model) {
    kafka::Effects fx;
    e.model->abandon(ErrorCode::NOT_COORDINATOR, false, fx);
    deliver(group, e, fx, out);
  }
  for (auto& [done, resp] : e.held) {
    resp.error = ErrorCode::NOT_COORDINATOR;
    resp.generationId = -1;
    out.push_back([done = std::move(done), resp = std::move(resp)] { done(resp); });
  }
  e.held.clear();
  for (auto* beats : {&e.unsaved, &e.saving}) {
    for (auto& b : *beats) {
      k::ConsumerGroupHeartbeatResponse resp;
      resp.error = ErrorCode::NOT_COORDINATOR;
      out.push_back([done = std::move(b.done), resp = std::move(resp)] { done(resp); });
    }
    beats->clear();
  }
}

void KafkaGroups::deliver(const std::string& group, Entry& e, kafka::Effects& fx, Answers& out) {
  for (auto& [member, why] : fx.removed) {
    spdlog::info("kafka group {}: member {} left ({}); generation {}", group, member, why, e.model->generation());
  }
  auto take = [&](kafka::Ticket t) -> k::ResponseCallback {
    auto it = e.parked.find(t);
    if (it == e.parked.end()) return {};
    k::ResponseCallback done = std::move(it->second.done);
    e.parked.erase(it);
    return done;
  };
  for (auto& [t, resp] : fx.joins) {
    auto done = take(t);
    if (!done) continue;
    if (resp.error == ErrorCode::NONE && resp.generationId > e.version && !e.closing) {
      // Its generation is not in ZooKeeper yet (reconcile() below).
      e.held.emplace_back(std::move(done), std::move(resp));
    } else {
      out.push_back([done = std::move(done), resp = std::move(resp)] { done(resp); });
    }
  }
  Answers syncs;
  for (auto& [t, resp] : fx.syncs) {
    if (auto done = take(t)) syncs.push_back([done = std::move(done), resp = std::move(resp)] { done(resp); });
  }
  reconcile(group, e, out);
  if (!fx.becameStable) {
    for (auto& a : syncs) out.push_back(std::move(a));
    if (e.savedMembers && e.model->empty() && !e.closing) {
      e.savedMembers = false;
      zk_.remove(snapshotPath(group), -1, [group](zk::Error err) {
        if (err != zk::Error::Ok && err != zk::Error::NoNode) {
          spdlog::warn("kafka group {}: removing its saved generation failed: {}", group, err);
        }
      });
    }
    return;
  }
  e.savedMembers = true;
  // The stable generation is in ZooKeeper before any member hears it is
  // stable: a new controller then resumes what the members were told.
  const kafka::Snapshot snap = e.model->snapshot();
  spdlog::info("kafka group {}: generation {} stable with {} member(s) (protocol {}, leader {})", group,
               snap.generation, snap.members.size(), snap.protocolName, snap.leader);
  std::string data = kafka::encodeSnapshot(snap);
  auto pending = std::make_shared<Answers>(std::move(syncs));
  const std::string path = snapshotPath(group);
  zk_.set(path, data, -1, [this, path, data, pending, group](zk::SetResult r) {
    if (r.error == zk::Error::NoNode) {
      zk_.create(path, data, zk::CreateMode::Persistent, [pending, group](zk::CreateResult c) {
        if (c.error != zk::Error::Ok) {
          spdlog::warn("kafka group {}: saving the stable generation failed: {}; a new controller would rebalance",
                       group, c.error);
        }
        run(*pending);
      });
      return;
    }
    if (r.error != zk::Error::Ok) {
      spdlog::warn("kafka group {}: saving the stable generation failed: {}; a new controller would rebalance", group,
                   r.error);
    }
    run(*pending);
  });
}

void KafkaGroups::tick(TimePoint now) {
  Answers out;
  {
    MutexLock lock(fetchMu_);
    while (!fetches_.empty() && fetches_.begin()->first <= now) {
      out.push_back(std::move(fetches_.begin()->second));
      fetches_.erase(fetches_.begin());
    }
  }
  {
    MutexLock lock(mu_);
    if (now >= nextTopicSweep_) {
      forgetUnsubscribedTopics();
      nextTopicSweep_ = now + std::chrono::seconds(30);
    }
    for (auto it = groups_.begin(); it != groups_.end();) {
      Entry& e = *it->second;
      kafka::Effects fx;
      if (!hooks_.controlsHere(it->first)) {
        if (e.model) spdlog::info("kafka group {}: no longer controlled here", it->first);
        forget(it->first, e, out);
        it = groups_.erase(it);
        continue;
      }
      if (!e.loading && !e.writing && e.model) {
        const std::optional<int32_t> v = hooks_.generationOf(it->first);
        if (v && *v != e.version) {
          // Somebody else moved the generation (a rewind): the members
          // join again, and find the rewound offsets.
          spdlog::info("kafka group {}: its generation moved to {} outside its Kafka members; they join again",
                       it->first, *v);
          forget(it->first, e, out);
          it = groups_.erase(it);
          continue;
        }
      }
      if (e.retry) reconcile(it->first, e, out);
      if (e.consumer && !e.loading) {
        const auto due = e.consumer->nextDeadline();
        if (due && *due <= now) {
          kafka::ConsumerEffects cfx;
          if (!e.topicsComplete) groupTopics(e, e.consumer->subscribedTopics(), nullptr);
          e.consumer->tick(now, e.topics, cfx);
          deliverConsumer(it->first, e, cfx, std::nullopt, out);
        }
      }
      if (e.model) {
        const auto due = e.model->nextDeadline();
        if (due && *due <= now) {
          e.model->tick(now, fx);
          deliver(it->first, e, fx, out);
        }
      }
      ++it;
    }
  }
  run(out);
}

void KafkaGroups::stop() {
  Answers out;
  {
    MutexLock lock(fetchMu_);
    for (auto& [due, answer] : fetches_) out.push_back(std::move(answer));
    fetches_.clear();
  }
  {
    MutexLock lock(mu_);
    stopped_ = true;
    for (auto& [name, e] : groups_) forget(name, *e, out);
    groups_.clear();
    // Heartbeats waiting for a topic's first read: answered NOT_COORDINATOR
    // now that nothing is served.
    for (auto& [topic, w] : topicWaiters_) out.push_back(std::move(w));
    topicWaiters_.clear();
  }
  run(out);
}

std::optional<kafka::Snapshot> KafkaGroups::snapshotOf(const std::string& group) const {
  MutexLock lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end() || !it->second->model) return std::nullopt;
  return it->second->model->snapshot();
}

std::optional<k::DescribeGroupsResponse::Group> KafkaGroups::describeLocal(const std::string& group) const {
  MutexLock lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end() || !it->second->model) return std::nullopt;
  if (const auto& c = it->second->consumer; c && !c->empty()) {
    // A consumer-protocol group, as DescribeGroups shows one: its state and
    // members, no protocol metadata (ConsumerGroupDescribe has the rest).
    k::DescribeGroupsResponse::Group d;
    d.groupId = group;
    d.groupState = std::string(c->state());
    d.protocolType = "consumer";
    for (const auto& [id, m] : c->members()) {
      k::DescribeGroupsResponse::Member dm;
      dm.memberId = id;
      dm.groupInstanceId = m.instanceId;
      dm.clientId = m.clientId;
      dm.clientHost = m.clientHost;
      d.members.push_back(std::move(dm));
    }
    return d;
  }
  auto d = it->second->model->describe();
  d.groupId = group;
  return d;
}

namespace {

// The partitions a consumer-protocol assignment names (version int16, then
// topics: name, partitions; then user data): what a Kafka leader hands each
// member, opaque to the group's rules. Empty when it is not one.
std::vector<protocol::TopicPartition> partitionsOf(std::string_view a) {
  protocol::wire::Reader r(std::span(reinterpret_cast<const uint8_t*>(a.data()), a.size()));
  int16_t version = 0;
  size_t topics = 0;
  if (!r.readInt16(version, "Version") || !r.readCount(topics, 2 + 4, "Topics")) return {};
  std::vector<protocol::TopicPartition> out;
  for (size_t t = 0; t < topics; ++t) {
    std::string topic;
    size_t count = 0;
    if (!r.readString(topic, "Topic") || !r.readCount(count, 4, "Partitions")) return {};
    for (size_t i = 0; i < count; ++i) {
      int32_t p = 0;
      if (!r.readInt32(p, "Partition")) return {};
      out.push_back(protocol::TopicPartition{topic, p});
    }
  }
  return out;
}

}  // namespace

void KafkaGroups::describeInto(protocol::DescribeGroupResponse& d) const {
  MutexLock lock(mu_);
  auto it = groups_.find(d.group);
  if (it == groups_.end() || !it->second->model) return;
  if (const auto& c = it->second->consumer; c && !c->empty()) {
    describeConsumerInto(*c, d);
  } else {
    describeClassicInto(*it->second->model, d);
  }
  // Kafka commits are written here, not by the native model.
  if (it->second->offsets.loaded) {
    d.offsets.clear();
    for (const auto& [tp, offset] : it->second->offsets.offsets) {
      d.offsets.push_back(protocol::PartitionOffset{tp.topic, tp.partition, offset});
    }
  }
}

void KafkaGroups::describeClassicInto(const kafka::ClassicGroup& g, protocol::DescribeGroupResponse& d) const {
  d.kafka = true;
  d.protocolType = g.protocolType();
  d.protocolName = g.protocolName();
  d.generation = g.generation();
  d.members.clear();
  // Times as groupctl shows them: wall-clock milliseconds, from this
  // server's clock's reading of how long ago each was.
  const TimePoint now = time_.now();
  const int64_t wallNow = time_.wallMs();
  auto wallOf = [&](TimePoint t) {
    return wallNow - std::chrono::duration_cast<Millis>(now - t).count();
  };
  std::map<std::string, kafka::MemberActivity> activity;
  for (auto& a : g.activity()) activity.emplace(a.memberId, std::move(a));
  for (const auto& m : g.members()) {
    protocol::MemberState s;
    s.consumerId = m.memberId;
    s.clientId = m.clientId;
    s.host = m.clientHost.starts_with("/") ? m.clientHost.substr(1) : m.clientHost;
    if (auto a = activity.find(m.memberId); a != activity.end()) {
      s.port = a->second.clientPort;
      if (a->second.joinedAt) s.joinedAtMs = wallOf(*a->second.joinedAt);
      s.lastHeardMs = wallOf(a->second.lastHeard);
    }
    s.held = partitionsOf(m.assignment);
    std::sort(s.held.begin(), s.held.end());
    d.members.push_back(std::move(s));
  }
  std::sort(d.members.begin(), d.members.end(),
            [](const auto& a, const auto& b) { return a.consumerId < b.consumerId; });
}

// ---------------------------------------------------------------------------
// Requests

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::ApiVersionsRequest,
                        k::ResponseCallback& done) {
  done(k::apiVersionsResponse());
}

// Every live server with a Kafka port is a broker; every partition of the
// topics under the topics path is led by one of them (spread by index), so
// a client finds every subscribed topic whole. Partitions carry no records
// here (docs/kafka.md, "Fetching"). From version 10 each topic carries its
// id (layout::topicIdOf: the one in its znode, else one derived from its
// name), and from version 12 a client may ask by id alone (librdkafka does
// for the topics of a KIP-848 assignment): every topic is then read to find
// the name, and an id that names none is UNKNOWN_TOPIC_ID with a null name.
void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader& h, k::MetadataRequest r,
                        k::ResponseCallback& done) {
  k::MetadataResponse out;
  for (const auto& b : hooks_.brokers()) {
    out.brokers.push_back(k::MetadataResponse::Broker{b.brokerId, b.host, b.port, std::nullopt});
  }
  out.controllerId = out.brokers.empty() ? -1 : out.brokers.front().nodeId;
  out.clusterId = "groupcoord";
  std::vector<int32_t> nodes;
  for (const auto& b : out.brokers) nodes.push_back(b.nodeId);

  // Version 0: an empty list asks for every topic; later, null does.
  const bool all = !r.topics.has_value() || (h.apiVersion == 0 && r.topics->empty());
  std::set<std::string> names;
  std::vector<layout::TopicId> ids;  // asked by id alone, in the request's order
  if (!all) {
    for (const auto& t : *r.topics) {
      if (t.name) {
        names.insert(*t.name);
      } else if (std::find(ids.begin(), ids.end(), t.topicId.bytes) == ids.end()) {
        ids.push_back(t.topicId.bytes);
      }
    }
  }
  // Every topic is read when every topic is asked for, or to find ids.
  const bool readAll = all || !ids.empty();

  struct Topics {
    std::map<std::string, k::MetadataResponse::Topic> byName;
  };
  using Reads = Fanout<Topics>;
  auto reads = Reads::start(zk_, [out = std::move(out), all, names, ids, done = std::move(done)](Topics t) mutable {
    std::vector<bool> found(ids.size(), false);
    for (auto& [name, topic] : t.byName) {
      const auto id = std::find(ids.begin(), ids.end(), topic.topicId.bytes);
      if (id != ids.end()) found[static_cast<size_t>(id - ids.begin())] = true;
      if (all || names.contains(name) || id != ids.end()) out.topics.push_back(std::move(topic));
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      if (found[i]) continue;
      k::MetadataResponse::Topic unknown;
      unknown.error = ErrorCode::UNKNOWN_TOPIC_ID;
      unknown.topicId.bytes = ids[i];
      out.topics.push_back(std::move(unknown));
    }
    done(std::move(out));
  });
  auto readTopic = [this, nodes, base = config_.topicsPath](Reads& fan, const std::string& name) {
    zk_.get(base + "/" + name, fan.collect<zk::GetResult>([name, nodes](Topics& s, zk::GetResult res) {
      k::MetadataResponse::Topic t;
      t.name = name;
      std::optional<int32_t> count;
      if (res.error == zk::Error::Ok) {
        t.topicId.bytes = layout::topicIdOf(name, res.data);  // a topic that does not exist has the zero id
        count = layout::decodeTopicPartitions(res.data);
      }
      if (!count || nodes.empty()) {
        t.error = nodes.empty() ? ErrorCode::COORDINATOR_NOT_AVAILABLE : ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
      } else {
        for (int32_t p = 0; p < *count; ++p) {
          const int32_t leader = nodes[static_cast<size_t>(p) % nodes.size()];
          t.partitions.push_back(k::MetadataResponse::Partition{ErrorCode::NONE, p, leader, {leader}, {leader}});
        }
      }
      s.byName[name] = std::move(t);
    }));
  };
  if (readAll) {
    zk_.getChildren(config_.topicsPath,
                    reads->collect<zk::ChildrenResult>([reads, readTopic, names](Topics&, zk::ChildrenResult c) {
                      // A topic asked by name is answered even if it is not
                      // listed (UNKNOWN_TOPIC_OR_PARTITION) or the list failed.
                      std::set<std::string> listed = names;
                      if (c.error == zk::Error::Ok) listed.insert(c.children.begin(), c.children.end());
                      for (const auto& name : listed) readTopic(*reads, name);
                    }));
  } else {
    for (const auto& name : names) readTopic(*reads, name);
  }
  reads->release();
}

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::FindCoordinatorRequest r,
                        k::ResponseCallback& done) {
  auto answer = [](ErrorCode e, std::string message) {
    k::FindCoordinatorResponse out;
    out.error = e;
    out.errorMessage = std::move(message);
    return out;
  };
  if (r.keyType != 0) {
    return done(answer(ErrorCode::COORDINATOR_NOT_AVAILABLE, "groupcoord coordinates groups, not transactions"));
  }
  if (!protocol::isValidName(r.key)) {
    return done(answer(ErrorCode::INVALID_GROUP_ID,
                       "a group id of groupcoord is 1 to 255 letters, digits, '.', '_' or '-' (docs/kafka.md)"));
  }
  auto at = [this](int32_t controller) {
    const protocol::Broker b = hooks_.brokerOf(controller);
    k::FindCoordinatorResponse out;
    if (b.isNone()) {
      out.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
      out.errorMessage = fmt::format("the group's controller, server {}, has no Kafka port", controller);
      return out;
    }
    out.nodeId = b.brokerId;
    out.host = b.host;
    out.port = b.port;
    return out;
  };
  const int32_t controller = hooks_.controllerOf(r.key);
  if (controller >= 0) return done(at(controller));
  zk_.exists(layout_.groupPath(r.key), [this, group = r.key, done = std::move(done), at,
                                        answer](zk::ExistsResult res) mutable {
    if (res.error == zk::Error::NoNode) {
      // Not made by being looked up: its first JoinGroup or OffsetCommit
      // makes it, on the server named here, the one that would control it.
      int32_t where = hooks_.placementOf(group);
      if (where < 0 || hooks_.brokerOf(where).isNone()) where = hooks_.selfId;
      return done(at(where));
    }
    if (res.error != zk::Error::Ok) {
      return done(answer(ErrorCode::COORDINATOR_NOT_AVAILABLE,
                         fmt::format("reading the group in ZooKeeper failed ({}); ask again", res.error)));
    }
    // It exists and has no controller yet (one is taking it over): wait for it.
    hooks_.ensure(group, [done = std::move(done), at, answer](int32_t c, std::string why) {
      if (c < 0) return done(answer(ErrorCode::COORDINATOR_NOT_AVAILABLE, why));
      done(at(c));
    });
  });
}

void KafkaGroups::route(const protocol::Caller& caller, const k::RequestHeader& h, k::JoinGroupRequest r,
                        k::ResponseCallback& done) {
  if (!protocol::isValidName(r.groupId)) return done(failed<k::JoinGroupResponse>(ErrorCode::INVALID_GROUP_ID));
  if (unclaimed(r.groupId)) {
    const std::string group = r.groupId;
    auto call = std::make_shared<std::pair<k::JoinGroupRequest, k::ResponseCallback>>(std::move(r), std::move(done));
    return made(group, [this, caller, h, call](bool ok) {
      if (ok) return join(caller, h, std::move(call->first), call->second);
      auto resp = failed<k::JoinGroupResponse>(ErrorCode::COORDINATOR_NOT_AVAILABLE);
      resp.memberId = call->first.memberId;
      call->second(resp);
    });
  }
  join(caller, h, std::move(r), done);
}

void KafkaGroups::join(const protocol::Caller& caller, const k::RequestHeader& h, k::JoinGroupRequest r,
                       k::ResponseCallback& done) {
  Answers out;
  {
    MutexLock lock(mu_);
    ErrorCode error = ErrorCode::NONE;
    Entry* e = entryFor(r.groupId, &error);
    if (e == nullptr) {
      auto resp = failed<k::JoinGroupResponse>(notServedYet(r.groupId, error));
      resp.memberId = r.memberId;
      out.push_back([done = std::move(done), resp] { done(resp); });
    } else if (e->consumer && !e->consumer->empty()) {
      // One protocol at a time (docs/kafka.md, "The consumer protocol").
      spdlog::info("kafka group {}: refused a classic JoinGroup: the group has {} consumer-protocol member(s)",
                   r.groupId, e->consumer->size());
      auto resp = failed<k::JoinGroupResponse>(ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
      resp.memberId = r.memberId;
      out.push_back([done = std::move(done), resp] { done(resp); });
    } else {
      if (e->model->empty() && e->model->generation() < e->version) {
        // The consumer protocol moved the epoch since: the classic
        // generations go on from it.
        e->model.emplace(r.groupId, config_.rules, e->version);
      }
      const kafka::Ticket t = nextTicket_++;
      e->parked[t] = Entry::Parked{std::move(done)};
      kafka::JoinArgs a;
      a.version = h.apiVersion;
      a.clientId = h.clientId.value_or("");
      a.clientHost = "/" + caller.host;
      a.clientPort = caller.port;
      a.freshMemberId = hooks_.newMemberId(a.clientId);
      a.request = std::move(r);
      kafka::Effects fx;
      e->model->join(t, a, time_.now(), fx);
      deliver(a.request.groupId, *e, fx, out);
    }
  }
  run(out);
}

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader& h, k::SyncGroupRequest r,
                        k::ResponseCallback& done) {
  // A group no server controls: a member of a group that is gone is told
  // so (it joins again, which makes the group), not sent to look for a
  // coordinator that would send it back here.
  if (unclaimed(r.groupId)) {
    return absent(r.groupId, [done = std::move(done)](bool gone) {
      done(failed<k::SyncGroupResponse>(gone ? ErrorCode::UNKNOWN_MEMBER_ID : ErrorCode::NOT_COORDINATOR));
    });
  }
  Answers out;
  {
    MutexLock lock(mu_);
    ErrorCode error = ErrorCode::NONE;
    Entry* e = entryFor(r.groupId, &error);
    if (e == nullptr) {
      out.push_back([done = std::move(done), error] { done(failed<k::SyncGroupResponse>(error)); });
    } else if (!hooks_.answersFromMemory(time_.now())) {
      // The session lease may have lapsed: another server may control the
      // group by now.
      out.push_back([done = std::move(done)] { done(failed<k::SyncGroupResponse>(ErrorCode::NOT_COORDINATOR)); });
    } else {
      const kafka::Ticket t = nextTicket_++;
      e->parked[t] = Entry::Parked{std::move(done)};
      kafka::SyncArgs a;
      a.version = h.apiVersion;
      const std::string group = r.groupId;
      a.request = std::move(r);
      kafka::Effects fx;
      e->model->sync(t, a, time_.now(), fx);
      deliver(group, *e, fx, out);
    }
  }
  run(out);
}

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::HeartbeatRequest r,
                        k::ResponseCallback& done) {
  // As SyncGroup's.
  if (unclaimed(r.groupId)) {
    return absent(r.groupId, [done = std::move(done)](bool gone) {
      done(failed<k::HeartbeatResponse>(gone ? ErrorCode::UNKNOWN_MEMBER_ID : ErrorCode::NOT_COORDINATOR));
    });
  }
  Answers out;
  ErrorCode error = ErrorCode::NONE;
  {
    MutexLock lock(mu_);
    Entry* e = entryFor(r.groupId, &error);
    const TimePoint now = time_.now();
    if (e != nullptr) {
      if (!hooks_.answersFromMemory(now)) {
        // Not renewed while the session lease does not hold (docs/design.md,
        // "The session lease"): the member finds the controller again.
        error = ErrorCode::NOT_COORDINATOR;
      } else {
        kafka::Effects fx;
        error = e->model->heartbeat(r, now, fx);
        deliver(r.groupId, *e, fx, out);
      }
    }
  }
  run(out);
  done(failed<k::HeartbeatResponse>(error));
}

// As route() answers a heartbeat, less what it leaves to route(): a group
// not loaded here yet, one no longer controlled here, a lapsed lease. A
// heartbeat has no effects to deliver.
bool KafkaGroups::heartbeatNow(const protocol::Caller&, const k::HeartbeatView& r, ErrorCode* error) {
  MutexLock lock(mu_);
  if (stopped_) return false;
  auto it = groups_.find(r.groupId);
  if (it == groups_.end() || it->second->loading || !it->second->model) return false;
  const TimePoint now = time_.now();
  if (!hooks_.controlsHere(it->first) || !hooks_.answersFromMemory(now)) return false;
  *error = it->second->model->heartbeat(r.generationId, r.memberId, r.groupInstanceId, now);
  return true;
}

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::LeaveGroupRequest r,
                        k::ResponseCallback& done) {
  // As SyncGroup's.
  if (unclaimed(r.groupId)) {
    return absent(r.groupId, [done = std::move(done)](bool gone) {
      done(failed<k::LeaveGroupResponse>(gone ? ErrorCode::UNKNOWN_MEMBER_ID : ErrorCode::NOT_COORDINATOR));
    });
  }
  Answers out;
  ErrorCode error = ErrorCode::NONE;
  {
    MutexLock lock(mu_);
    Entry* e = entryFor(r.groupId, &error);
    if (e != nullptr) {
      kafka::Effects fx;
      error = e->model->leave(r.memberId, time_.now(), fx);
      deliver(r.groupId, *e, fx, out);
    }
  }
  run(out);
  done(failed<k::LeaveGroupResponse>(error));
}

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::OffsetCommitRequest r,
                        k::ResponseCallback& done) {
  if (unclaimed(r.groupId)) {
    const std::string group = r.groupId;
    auto call = std::make_shared<std::pair<k::OffsetCommitRequest, k::ResponseCallback>>(std::move(r), std::move(done));
    return made(group, [this, call](bool ok) {
      if (ok) return commit(std::move(call->first), call->second);
      call->second(k::offsetCommitAnswer(call->first, ErrorCode::COORDINATOR_NOT_AVAILABLE));
    });
  }
  commit(std::move(r), done);
}

void KafkaGroups::commit(k::OffsetCommitRequest r, k::ResponseCallback& done) {
  ErrorCode error = ErrorCode::NONE;
  {
    MutexLock lock(mu_);
    Entry* e = entryFor(r.groupId, &error);
    if (e != nullptr && e->consumer && !e->consumer->empty()) {
      // Fenced by the member's epoch (OffsetCommit 9's
      // GenerationIdOrMemberEpoch): STALE_MEMBER_EPOCH, never
      // ILLEGAL_GENERATION, which would cost the member its partitions.
      error = e->consumer->commitCheck(r.memberId, r.generationId);
    } else if (e != nullptr) {
      error = e->model->commitCheck(r.generationId, r.memberId, r.groupInstanceId, time_.now());
    }
    if (e == nullptr) error = notServedYet(r.groupId, error);
  }
  if (error != ErrorCode::NONE) return done(k::offsetCommitAnswer(r, error));
  for (const auto& t : r.topics) {
    // A topic name becomes a znode's name.
    if (!protocol::isValidName(t.name)) return done(k::offsetCommitAnswer(r, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  }
  const std::string group = r.groupId;
  writeOffsets(group, std::move(r), std::move(done), false);
}

void KafkaGroups::writeOffsets(const std::string& group, k::OffsetCommitRequest r, k::ResponseCallback done,
                               bool retried) {
  // A partition whose metadata is too long is not written (only it is
  // refused); the others are, each with its metadata.
  std::vector<protocol::PartitionOffset> written;
  std::map<protocol::TopicPartition, std::string> metadata;
  for (const auto& t : r.topics) {
    for (const auto& p : t.partitions) {
      if (metadataTooLarge(p)) continue;
      written.push_back(protocol::PartitionOffset{t.name, p.partitionIndex, p.committedOffset});
      // The last commit of a partition in the request wins, metadata too.
      metadata[protocol::TopicPartition{t.name, p.partitionIndex}] = p.committedMetadata.value_or(std::string());
    }
  }
  if (written.empty()) return done(commitAnswer(r, ErrorCode::NONE));
  std::vector<zk::Op> ops;
  bool needRead = false;
  bool gone = false;
  {
    MutexLock lock(mu_);
    auto it = groups_.find(group);
    if (it == groups_.end() || it->second->loading) {
      gone = true;
    } else if (!it->second->offsets.loaded) {
      needRead = true;
    } else {
      offsets_.writeOps(group, it->second->offsets, written, ops, metadata);
    }
  }
  if (gone) return done(commitAnswer(r, ErrorCode::NOT_COORDINATOR));
  auto shared = std::make_shared<k::OffsetCommitRequest>(std::move(r));
  if (needRead) {
    offsets_.read(group, {}, [this, group, shared, done = std::move(done), retried](OffsetsRead read) mutable {
      if (read.error != zk::Error::Ok) {
        spdlog::warn("kafka group {}: reading its committed offsets failed: {}", group, read.error);
        return done(commitAnswer(*shared, ErrorCode::COORDINATOR_NOT_AVAILABLE));
      }
      {
        MutexLock lock(mu_);
        auto it = groups_.find(group);
        if (it != groups_.end()) {
          it->second->offsets.offsets = std::move(read.offsets);
          it->second->offsets.topics = std::move(read.topics);
          it->second->offsets.loaded = true;
        }
      }
      writeOffsets(group, std::move(*shared), std::move(done), retried);
    });
    return;
  }
  if (ops.empty()) return done(commitAnswer(*shared, ErrorCode::NONE));
  zk_.multi(std::move(ops), [this, group, shared, written, done = std::move(done), retried](zk::MultiResult res) mutable {
    if (res.error == zk::Error::Ok) {
      {
        MutexLock lock(mu_);
        if (auto it = groups_.find(group); it != groups_.end()) it->second->offsets.apply(written);
      }
      return done(commitAnswer(*shared, ErrorCode::NONE));
    }
    if ((res.error == zk::Error::NodeExists || res.error == zk::Error::NoNode) && !retried) {
      // Another writer (a rewind, a native commit) changed the offsets
      // znodes: read them again and write once more.
      {
        MutexLock lock(mu_);
        if (auto it = groups_.find(group); it != groups_.end()) it->second->offsets.loaded = false;
      }
      return writeOffsets(group, std::move(*shared), std::move(done), true);
    }
    spdlog::warn("kafka group {}: writing committed offsets failed: {}", group, res.error);
    done(commitAnswer(*shared, ErrorCode::COORDINATOR_NOT_AVAILABLE));
  });
}

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader& h, k::OffsetFetchRequest r,
                        k::ResponseCallback& done) {
  if (h.apiVersion < k::OffsetFetchRequest::kGroupsSince) {
    return fetchGroupOffsets(std::move(r.groupId), std::move(r.topics),
                             [done = std::move(done)](k::OffsetFetchResponse a) { done(std::move(a)); });
  }
  // Version 8 on: each group is answered on its own, in the request's
  // order. Each answer fills its own slot; the last one in answers.
  // MemberId and MemberEpoch (version 9) are not checked: groupcoord has no
  // KIP-848 member yet, and a classic group's fetch ignores them, as Kafka's.
  struct Gathered {
    explicit Gathered(size_t n, k::ResponseCallback d) : groups(n), left(n), done(std::move(d)) {}
    std::vector<k::OffsetFetchResponse::Group> groups;
    std::atomic<size_t> left;
    k::ResponseCallback done;
  };
  if (r.groups.empty()) return done(k::OffsetFetchResponse{});
  auto gathered = std::make_shared<Gathered>(r.groups.size(), std::move(done));
  for (size_t i = 0; i < r.groups.size(); ++i) {
    auto& g = r.groups[i];
    gathered->groups[i].groupId = g.groupId;
    fetchGroupOffsets(std::move(g.groupId), std::move(g.topics), [gathered, i](k::OffsetFetchResponse a) {
      gathered->groups[i].topics = std::move(a.topics);
      gathered->groups[i].error = a.error;
      if (gathered->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
      k::OffsetFetchResponse out;
      out.groups = std::move(gathered->groups);
      gathered->done(std::move(out));
    });
  }
}

void KafkaGroups::fetchGroupOffsets(std::string group, FetchTopics topics,
                                    std::function<void(k::OffsetFetchResponse)> done) {
  auto refuse = [&](ErrorCode e) { done(fetchRefusal(topics, e)); };
  if (!protocol::isValidName(group)) return refuse(ErrorCode::INVALID_GROUP_ID);
  // A group that does not exist has no offsets (and is not made by asking).
  if (unclaimed(group)) {
    auto asked = std::make_shared<FetchTopics>(std::move(topics));
    return absent(group, [asked, done = std::move(done)](bool gone) {
      done(fetchRefusal(*asked, gone ? ErrorCode::NONE : ErrorCode::NOT_COORDINATOR));
    });
  }
  if (!hooks_.controlsHere(group)) return refuse(ErrorCode::NOT_COORDINATOR);
  std::vector<std::string> names;
  if (topics) {
    for (const auto& t : *topics) {
      if (protocol::isValidName(t.name)) names.push_back(t.name);
    }
    // Only topics that cannot be znode names were asked for: none has an
    // offset.
    if (names.empty() && !topics->empty()) names.push_back(".");
  }
  offsets_.read(group, names,
                [group, topics = std::move(topics), done = std::move(done)](OffsetsRead read) {
                  k::OffsetFetchResponse out;
                  if (read.error != zk::Error::Ok && read.error != zk::Error::NoNode) {
                    spdlog::warn("kafka group {}: reading its committed offsets failed: {}", group,
                                 read.error);
                    out.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
                  }
                  auto offsetOf = [&](const std::string& topic, int32_t p) -> int64_t {
                    auto it = read.offsets.find(protocol::TopicPartition{topic, p});
                    return it == read.offsets.end() ? -1 : it->second;
                  };
                  // The metadata committed with the offset; "" when none.
                  auto metadataOf = [&](const protocol::TopicPartition& tp) -> std::string {
                    auto it = read.metadata.find(tp);
                    return it == read.metadata.end() ? std::string() : it->second;
                  };
                  if (topics) {
                    for (const auto& t : *topics) {
                      k::OffsetFetchResponse::Topic topic{t.name, {}};
                      for (int32_t p : t.partitionIndexes) {
                        topic.partitions.push_back(
                            {p, offsetOf(t.name, p), -1, metadataOf(protocol::TopicPartition{t.name, p}), out.error});
                      }
                      out.topics.push_back(std::move(topic));
                    }
                  } else {
                    std::map<std::string, k::OffsetFetchResponse::Topic> byTopic;
                    for (const auto& [tp, offset] : read.offsets) {
                      auto& topic = byTopic[tp.topic];
                      topic.name = tp.topic;
                      topic.partitions.push_back({tp.partition, offset, -1, metadataOf(tp), ErrorCode::NONE});
                    }
                    for (auto& [name, t] : byTopic) out.topics.push_back(std::move(t));
                  }
                  done(std::move(out));
                });
}

// Kafka's ListGroups names the groups this broker coordinates; an admin
// client asks every broker and merges.
void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::ListGroupsRequest,
                        k::ResponseCallback& done) {
  k::ListGroupsResponse out;
  const std::vector<std::string> names = hooks_.controlled();
  {
    MutexLock lock(mu_);
    for (const auto& name : names) {
      // Being loaded, deleted or handed away: not listed, as a Kafka
      // broker lists only the groups it serves.
      if (!hooks_.isKafkaGroup(name).has_value()) continue;
      std::string type;
      if (auto it = groups_.find(name); it != groups_.end() && it->second->model) {
        type = it->second->consumer && !it->second->consumer->empty() ? "consumer" : it->second->model->protocolType();
      }
      out.groups.push_back(k::ListGroupsResponse::Group{name, type});
    }
  }
  done(std::move(out));
}

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::DescribeGroupsRequest r,
                        k::ResponseCallback& done) {
  k::DescribeGroupsResponse out;
  std::vector<size_t> unknown;  // no server controls them: Dead if ZooKeeper has none
  for (const auto& name : r.groups) {
    k::DescribeGroupsResponse::Group g;
    g.groupId = name;
    if (!protocol::isValidName(name)) {
      g.error = ErrorCode::INVALID_GROUP_ID;
    } else if (hooks_.controlsHere(name)) {
      if (auto d = describeLocal(name)) {
        g = std::move(*d);
      } else {
        g.groupState = "Empty";
      }
    } else if (hooks_.controllerOf(name) >= 0) {
      g.error = ErrorCode::NOT_COORDINATOR;
    } else {
      g.groupState = "Dead";
      unknown.push_back(out.groups.size());
    }
    if (r.includeAuthorizedOperations) g.authorizedOperations = 0;
    out.groups.push_back(std::move(g));
  }
  if (unknown.empty()) return done(std::move(out));
  auto reads = Fanout<k::DescribeGroupsResponse>::start(
      zk_, [done = std::move(done)](k::DescribeGroupsResponse answer) { done(std::move(answer)); });
  reads->update([&](k::DescribeGroupsResponse& answer) { answer = std::move(out); });
  for (size_t i : unknown) {
    // It exists and is between controllers: the client asks again.
    absent(r.groups[i], reads->collect<bool>([i](k::DescribeGroupsResponse& answer, bool gone) {
      if (gone) return;
      answer.groups[i].groupState.clear();
      answer.groups[i].error = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
    }));
  }
  reads->release();
}

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::DeleteGroupsRequest r,
                        k::ResponseCallback& done) {
  k::DeleteGroupsResponse out;
  std::vector<std::pair<size_t, std::string>> toDelete;
  std::vector<size_t> unknown;  // no server controls them: not found if ZooKeeper has none
  for (const auto& name : r.groupsNames) {
    out.results.push_back(k::DeleteGroupsResponse::Result{name, ErrorCode::NONE});
    ErrorCode& e = out.results.back().error;
    if (!protocol::isValidName(name)) {
      e = ErrorCode::INVALID_GROUP_ID;
    } else if (!hooks_.controlsHere(name)) {
      e = hooks_.controllerOf(name) >= 0 ? ErrorCode::NOT_COORDINATOR : ErrorCode::GROUP_ID_NOT_FOUND;
      if (e == ErrorCode::GROUP_ID_NOT_FOUND) unknown.push_back(out.results.size() - 1);
    } else {
      MutexLock lock(mu_);
      auto it = groups_.find(name);
      if (it != groups_.end() && ((it->second->model && !it->second->model->empty()) ||
                                  (it->second->consumer && !it->second->consumer->empty()))) {
        e = ErrorCode::NON_EMPTY_GROUP;
      } else {
        toDelete.emplace_back(out.results.size() - 1, name);
      }
    }
  }
  struct Deleted {
    bool ok = false;
    bool notEmpty = false;
    std::string why;
  };
  auto deletions = Fanout<k::DeleteGroupsResponse>::start(
      zk_, [done = std::move(done)](k::DeleteGroupsResponse answer) { done(std::move(answer)); });
  deletions->update([&](k::DeleteGroupsResponse& answer) { answer = std::move(out); });
  for (size_t i : unknown) {
    // It exists and is between controllers: the client asks again.
    absent(r.groupsNames[i], deletions->collect<bool>([i](k::DeleteGroupsResponse& answer, bool gone) {
      if (!gone) answer.results[i].error = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
    }));
  }
  for (auto& [i, name] : toDelete) {
    auto collected = deletions->collect<Deleted>([i = i](k::DeleteGroupsResponse& answer, Deleted d) {
      answer.results[i].error =
          d.ok ? ErrorCode::NONE : (d.notEmpty ? ErrorCode::NON_EMPTY_GROUP : ErrorCode::COORDINATOR_NOT_AVAILABLE);
    });
    hooks_.deleteGroup(name, [this, name = name, collected = std::move(collected)](bool ok, bool notEmpty,
                                                                                   std::string why) {
      if (ok) {
        Answers answers;
        {
          MutexLock lock(mu_);
          if (auto it = groups_.find(name); it != groups_.end()) {
            forget(name, *it->second, answers);
            groups_.erase(it);
          }
        }
        run(answers);
        zk_.remove(snapshotPath(name), -1, [](zk::Error) {});
        spdlog::info("kafka group {}: deleted", name);
      } else if (!notEmpty) {
        spdlog::warn("kafka group {}: deleting it failed: {}", name, why);
      }
      collected(Deleted{ok, notEmpty, std::move(why)});
    });
  }
  deletions->release();
}

// Partitions carry no records here: a consumer's fetch is answered empty
// once its MaxWaitMs has passed (as a broker answers a fetch that found
// nothing), so the consumer neither spins nor fails, and keeps its
// membership (docs/kafka.md, "Fetching").
void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::FetchRequest r,
                        k::ResponseCallback& done) {
  k::FetchResponse out;
  for (const auto& t : r.topics) {
    k::FetchResponse::Topic topic{t.name, {}};
    for (const auto& p : t.partitions) {
      k::FetchResponse::Partition part;
      part.partitionIndex = p.partitionIndex;
      topic.partitions.push_back(std::move(part));
    }
    out.topics.push_back(std::move(topic));
  }
  // Bounded: a client asking for a longer wait is answered after 30 s.
  const Millis wait{std::clamp<int32_t>(r.maxWaitMs, 0, 30000)};
  auto answer = [done = std::move(done), out = std::move(out)]() mutable { done(std::move(out)); };
  if (wait.count() == 0) return answer();
  MutexLock lock(fetchMu_);
  fetches_.emplace(time_.now() + wait, std::move(answer));
}

// Every partition starts and ends at offset 0.
void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader& h, k::ListOffsetsRequest r,
                        k::ResponseCallback& done) {
  k::ListOffsetsResponse out;
  for (const auto& t : r.topics) {
    k::ListOffsetsResponse::Topic topic{t.name, {}};
    for (const auto& p : t.partitions) {
      k::ListOffsetsResponse::Partition part;
      part.partitionIndex = p.partitionIndex;
      if (h.apiVersion == 0) {
        part.oldStyleOffsets = {0};
      } else {
        part.timestamp = -1;
        part.offset = 0;
      }
      topic.partitions.push_back(std::move(part));
    }
    out.topics.push_back(std::move(topic));
  }
  done(std::move(out));
}

// With authentication on the port answers SASL itself (server/KafkaPort.h);
// these come only with it off: a client that asks is told no mechanism is
// enabled (docs/protocol.md, "Security on the Kafka port").
void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::SaslHandshakeRequest,
                        k::ResponseCallback& done) {
  k::SaslHandshakeResponse out;
  out.error = ErrorCode::UNSUPPORTED_SASL_MECHANISM;
  done(std::move(out));
}

void KafkaGroups::route(const protocol::Caller&, const k::RequestHeader&, k::SaslAuthenticateRequest,
                        k::ResponseCallback& done) {
  k::SaslAuthenticateResponse out;
  out.error = ErrorCode::ILLEGAL_SASL_STATE;
  out.errorMessage = "SASL is not enabled on this Kafka port";
  done(std::move(out));
}

}  // namespace groupcoord::adapter
