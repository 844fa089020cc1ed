// The partition side of the Coordinator: topic metadata, the assignment of
// each generation, committed offsets (CommitOffsets, FetchOffsets) and
// RewindConsumer. Membership and generations are in Coordinator.cpp.

#include <algorithm>
#include <charconv>

#include <spdlog/spdlog.h>

#include "adapter/Assignment.h"
#include "adapter/Coordinator.h"
#include "protocol/Codec.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;
using protocol::PartitionError;
using protocol::PartitionOffset;
using protocol::ResponseCallback;
using protocol::TopicPartition;

namespace {

std::optional<int64_t> parseOffset(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<int32_t> parsePartition(std::string_view text) {
  int32_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

// ---------------------------------------------------------------------------
// Topic metadata: <topics-path>/<topic>, Kafka's JSON. Watched while a
// group controlled here subscribes to the topic.

void Coordinator::watchTopic(const std::string& topic) {
  {
    std::lock_guard lock(registryMu_);
    auto& t = topics_[topic];
    if (t.watching) return;
    t.watching = true;
  }
  uint64_t epoch = epoch_;
  std::string path = config_.topicsPath + "/" + topic;
  zk_.exists(
      path,
      [this, epoch, topic, path](zk::ExistsResult r) {
        if (epoch != epoch_) return;
        if (r.error == zk::Error::NoNode) return onTopicCount(topic, 0);
        if (r.error != zk::Error::Ok) {
          spdlog::warn("topic {}: reading its metadata failed: {}; retrying", topic, r.error);
          std::lock_guard lock(registryMu_);
          topics_[topic].watching = false;  // the tick sets it again
          return;
        }
        zk_.get(path, [this, epoch, topic](zk::GetResult g) {
          if (epoch != epoch_) return;
          if (g.error == zk::Error::NoNode) return onTopicCount(topic, 0);
          if (g.error != zk::Error::Ok) return;
          auto n = decodeTopicPartitions(g.data);
          if (!n) {
            spdlog::warn("topic {}: metadata is not Kafka's topic JSON; treating it as absent", topic);
            return onTopicCount(topic, 0);
          }
          onTopicCount(topic, *n);
        });
      },
      [this, epoch, topic](const zk::WatchEvent& ev) {
        if (epoch != epoch_ || ev.type == zk::WatchEvent::Type::Session) return;
        {
          std::lock_guard lock(registryMu_);
          topics_[topic].watching = false;
        }
        watchTopic(topic);
      });
}

void Coordinator::onTopicCount(const std::string& topic, int32_t partitions) {
  {
    std::lock_guard lock(registryMu_);
    auto& t = topics_[topic];
    if (t.partitions == partitions) return;
    spdlog::info("topic {}: {} -> {} partitions", topic, t.partitions, partitions);
    t.partitions = partitions;
  }
  std::vector<GroupPtr> all;
  {
    std::shared_lock lock(groupsMu_);
    for (auto& [_, g] : groups_) all.push_back(g);
  }
  for (auto& g : all) {
    Outbox out;
    {
      std::lock_guard lock(g->mu);
      auto& ts = g->settings.topics;
      if (g->state != GroupState::Active || std::find(ts.begin(), ts.end(), topic) == ts.end()) continue;
      spdlog::info("group {}: subscribed topic {} changed: rebalancing", g->name, topic);
      g->bumpRequested = true;
      flush(g, out);
    }
    run(out);
  }
}

std::map<std::string, int32_t> Coordinator::partitionCounts(const GroupSettings& s) const {
  std::map<std::string, int32_t> counts;
  std::lock_guard lock(registryMu_);
  for (auto& t : s.topics) {
    auto it = topics_.find(t);
    counts[t] = it == topics_.end() ? 0 : it->second.partitions;
  }
  return counts;
}

bool Coordinator::partitionExists(const GroupSettings& s, const TopicPartition& p) const {
  if (std::find(s.topics.begin(), s.topics.end(), p.topic) == s.topics.end() || p.partition < 0) return false;
  std::lock_guard lock(registryMu_);
  auto it = topics_.find(p.topic);
  return it != topics_.end() && p.partition < it->second.partitions;
}

void Coordinator::retarget(Group& g) {
  std::vector<std::string> ids;
  ids.reserve(g.members.size());
  for (auto& [id, _] : g.members) ids.push_back(id);
  // Stickiness is about what members hold now, not about what an earlier
  // target promised: a partition nobody holds costs nothing to move.
  Assignment previous;
  for (auto& id : ids) previous[id] = g.ownership.heldBy(id);
  for (auto& [_, ps] : previous) std::sort(ps.begin(), ps.end());
  auto target = assignPartitions(ids, partitionCounts(g.settings), previous);
  size_t moved = countMoves(previous, target);
  size_t total = 0;
  for (auto& [_, ps] : target) total += ps.size();
  if (!g.ownership.target().empty() || total > 0) {
    spdlog::info("group {}: generation {} assigns {} partitions over {} members ({} change owner)", g.name, g.version,
                 total, ids.size(), moved);
  }
  g.ownership.setTarget(std::move(target));
}

// ---------------------------------------------------------------------------
// Offsets in ZooKeeper

void Coordinator::readOffsets(const std::string& group, const std::vector<std::string>& topics,
                              std::function<void(OffsetsRead)> done) {
  struct Walk {
    std::mutex mu;
    int pending = 1;
    OffsetsRead read;
    std::function<void(OffsetsRead)> done;
  };
  auto walk = std::make_shared<Walk>();
  walk->done = std::move(done);
  auto release = [walk] {
    bool last;
    {
      std::lock_guard lock(walk->mu);
      last = --walk->pending == 0;
    }
    if (last) walk->done(std::move(walk->read));
  };
  auto noteError = [walk](zk::Error e) {
    std::lock_guard lock(walk->mu);
    if (walk->read.error == zk::Error::Ok) walk->read.error = e;
  };
  std::set<std::string> wanted(topics.begin(), topics.end());
  std::string base = layout_.offsetsPath(group);
  zk_.getChildren(base, [this, walk, release, noteError, wanted, base](zk::ChildrenResult r) {
    if (r.error != zk::Error::Ok) {
      noteError(r.error);
      return release();
    }
    std::vector<std::string> names;
    for (auto& t : r.children)
      if (wanted.empty() || wanted.count(t)) names.push_back(t);
    {
      std::lock_guard lock(walk->mu);
      walk->pending += static_cast<int>(names.size());
      for (auto& t : names) walk->read.topics.insert(t);
    }
    for (auto& t : names) {
      std::string dir = base + "/" + t;
      zk_.getChildren(dir, [this, walk, release, noteError, t, dir](zk::ChildrenResult c) {
        if (c.error != zk::Error::Ok) {
          if (c.error != zk::Error::NoNode) noteError(c.error);
          return release();
        }
        std::vector<std::pair<int32_t, std::string>> parts;
        for (auto& p : c.children)
          if (auto n = parsePartition(p)) parts.emplace_back(*n, p);
        {
          std::lock_guard lock(walk->mu);
          walk->pending += static_cast<int>(parts.size());
        }
        for (auto& [n, name] : parts) {
          zk_.get(dir + "/" + name, [walk, release, noteError, t, n = n](zk::GetResult g) {
            if (g.error == zk::Error::Ok) {
              if (auto v = parseOffset(g.data)) {
                std::lock_guard lock(walk->mu);
                walk->read.offsets[TopicPartition{t, n}] = *v;
              }
            } else if (g.error != zk::Error::NoNode) {
              noteError(g.error);
            }
            release();
          });
        }
        release();
      });
    }
    release();
  });
}

void Coordinator::offsetOps(const Group& g, const std::vector<PartitionOffset>& offsets, std::vector<zk::Op>& ops,
                            std::set<std::string>* newTopics) const {
  std::map<TopicPartition, int64_t> last;  // the last value of a partition wins
  for (auto& o : offsets) last[TopicPartition{o.topic, o.partition}] = o.offset;
  for (auto& [p, offset] : last) {
    std::string dir = layout_.offsetsPath(g.name) + "/" + p.topic;
    if (!g.offsetTopics.count(p.topic) && newTopics->insert(p.topic).second) ops.push_back(zk::makeCreate(dir, ""));
    std::string path = dir + "/" + std::to_string(p.partition);
    if (g.committed.count(p)) {
      ops.push_back(zk::makeSetData(path, std::to_string(offset)));
    } else {
      ops.push_back(zk::makeCreate(path, std::to_string(offset)));
    }
  }
}

void Coordinator::loadOffsets(const GroupPtr& g) {
  if (g->busy || !connected_) return;
  g->busy = true;
  uint64_t epoch = epoch_;
  readOffsets(g->name, {}, [this, g, epoch](OffsetsRead r) {
    if (epoch != epoch_) return;
    Outbox out;
    {
      std::lock_guard lock(g->mu);
      g->busy = false;
      if (r.error == zk::Error::Ok) {
        g->committed = std::move(r.offsets);
        g->offsetTopics = std::move(r.topics);
        g->offsetsLoaded = true;
      } else {
        spdlog::warn("group {}: reading its committed offsets failed: {}; retrying", g->name, r.error);
      }
      flush(g, out);
      flushCommits(g, out);
    }
    run(out);
  });
}

ErrorCode Coordinator::writeRefusal(const Group& g) const {
  if (g.state == GroupState::Deleting) return ErrorCode::UNKNOWN_GROUP;
  if (g.state == GroupState::Loading || !connected_) return ErrorCode::CONTROLLER_NOT_AVAILABLE;
  return ErrorCode::NONE;
}

Coordinator::OffsetWrite Coordinator::checkOffsets(const Group& g, const std::vector<PartitionOffset>& offsets,
                                                  const std::string* owner) const {
  OffsetWrite w;
  w.results.reserve(offsets.size());
  for (auto& o : offsets) {
    TopicPartition p{o.topic, o.partition};
    ErrorCode e = ErrorCode::NONE;
    if (!partitionExists(g.settings, p)) {
      e = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
    } else if (o.offset < 0) {
      e = ErrorCode::INVALID_OFFSET;
    } else if (owner && !g.ownership.owns(*owner, p)) {
      e = ErrorCode::NOT_OWNER;
    } else {
      w.accepted.push_back(o);
    }
    w.results.push_back(PartitionError{o.topic, o.partition, e});
  }
  return w;
}

// ---------------------------------------------------------------------------
// CommitOffsets: accepted only from the partition's holder; acknowledged once
// durable. Commits arriving while a write is in flight go out together.

void Coordinator::onCommit(const protocol::CommitOffsetsRequest& r, ResponseCallback done) {
  ErrorCode error;
  GroupPtr g = controlledGroup(r.group, &error);
  if (!g) return done(protocol::CommitOffsetsResponse{{}, error});
  Outbox out;
  {
    std::lock_guard lock(g->mu);
    error = writeRefusal(*g);
    if (error == ErrorCode::NONE && !g->members.count(r.consumerId)) {
      error = ErrorCode::UNKNOWN_CONSUMER;
    } else if (error == ErrorCode::NONE && r.generation < g->rewoundAt) {
      // Offsets were rewound after this member's generation: its commit
      // would undo the rewind.
      error = ErrorCode::REBALANCE_NEEDED;
    }
    if (error == ErrorCode::NONE) {
      g->members[r.consumerId].lastSeen = time_.now();
      OffsetWrite c = checkOffsets(*g, r.offsets, &r.consumerId);
      if (c.accepted.empty()) {
        out.push_back([done = std::move(done), results = std::move(c.results)]() mutable {
          done(protocol::CommitOffsetsResponse{std::move(results), ErrorCode::NONE});
        });
      } else {
        c.done = std::move(done);
        g->commits.push_back(std::move(c));
        flushCommits(g, out);
      }
    } else {
      out.push_back([done = std::move(done), error] { done(protocol::CommitOffsetsResponse{{}, error}); });
    }
  }
  run(out);
}

void Coordinator::flushCommits(const GroupPtr& g, Outbox& out) {
  if (g->committing || g->commits.empty() || g->state != GroupState::Active || !connected_) return;
  if (!g->offsetsLoaded) return loadOffsets(g);
  std::vector<PartitionOffset> all;
  for (auto& c : g->commits) all.insert(all.end(), c.accepted.begin(), c.accepted.end());
  std::vector<zk::Op> ops;
  std::set<std::string> newTopics;
  offsetOps(*g, all, ops, &newTopics);
  g->flightCommits = std::move(g->commits);
  g->commits.clear();
  g->committing = true;
  uint64_t epoch = epoch_;
  zk_.multi(std::move(ops), [this, g, epoch](zk::MultiResult r) { onCommitsDone(g, epoch, std::move(r)); });
  (void)out;
}

void Coordinator::onCommitsDone(const GroupPtr& g, uint64_t epoch, zk::MultiResult r) {
  if (epoch != epoch_) return;
  Outbox out;
  {
    std::lock_guard lock(g->mu);
    g->committing = false;
    auto flight = std::move(g->flightCommits);
    g->flightCommits.clear();
    if (r.error == zk::Error::Ok) {
      size_t n = 0;
      for (auto& c : flight) {
        for (auto& o : c.accepted) {
          g->committed[TopicPartition{o.topic, o.partition}] = o.offset;
          g->offsetTopics.insert(o.topic);
          ++n;
        }
        out.push_back([done = std::move(c.done), results = std::move(c.results)]() mutable {
          done(protocol::CommitOffsetsResponse{std::move(results), ErrorCode::NONE});
        });
      }
      spdlog::debug("group {}: {} offsets from {} commits durable in one transaction", g->name, n, flight.size());
    } else if (zk::isDataError(r.error) && g->state == GroupState::Active) {
      // The cache of which offset znodes exist was wrong: re-read and retry.
      spdlog::warn("group {}: offset transaction refused at op {}: {}; re-reading offsets", g->name, r.failedOp,
                   r.error);
      g->offsetsLoaded = false;
      for (auto& c : flight) g->commits.push_back(std::move(c));
    } else {
      spdlog::warn("group {}: {} commits failed: {}", g->name, flight.size(), r.error);
      ErrorCode e = fromZk(r.error);
      for (auto& c : flight)
        out.push_back([done = std::move(c.done), e] { done(protocol::CommitOffsetsResponse{{}, e}); });
    }
    flushCommits(g, out);
  }
  run(out);
}

// ---------------------------------------------------------------------------
// FetchOffsets: any server, from ZooKeeper.

void Coordinator::onFetch(const protocol::FetchOffsetsRequest& r, ResponseCallback done) {
  if (!connected_) return done(protocol::FetchOffsetsResponse{{}, ErrorCode::CONTROLLER_NOT_AVAILABLE});
  std::string group = r.group;
  readOffsets(group, r.topics, [this, group, done = std::move(done)](OffsetsRead read) {
    if (read.error == zk::Error::NoNode) {
      // No offsets znode: the group does not exist (or predates offsets).
      zk_.exists(layout_.groupPath(group), [done](zk::ExistsResult e) {
        done(protocol::FetchOffsetsResponse{
            {}, e.error == zk::Error::Ok ? ErrorCode::NONE
                                         : (e.error == zk::Error::NoNode ? ErrorCode::UNKNOWN_GROUP
                                                                         : ErrorCode::CONTROLLER_NOT_AVAILABLE)});
      });
      return;
    }
    if (read.error != zk::Error::Ok) {
      return done(protocol::FetchOffsetsResponse{{}, fromZk(read.error)});
    }
    protocol::FetchOffsetsResponse resp;
    resp.offsets.reserve(read.offsets.size());
    for (auto& [p, o] : read.offsets) resp.offsets.push_back(PartitionOffset{p.topic, p.partition, o});
    done(std::move(resp));
  });
}

// ---------------------------------------------------------------------------
// RewindConsumer: the offsets and a new generation in one transaction, so
// every member registers again and receives the rewound offsets.

void Coordinator::onRewind(const protocol::RewindConsumerRequest& r, ResponseCallback done) {
  ErrorCode error;
  GroupPtr g = controlledGroup(r.group, &error);
  if (!g) return done(protocol::RewindConsumerResponse{{}, error});
  Outbox out;
  {
    std::lock_guard lock(g->mu);
    error = writeRefusal(*g);
    if (error != ErrorCode::NONE) {
      out.push_back([done = std::move(done), error] { done(protocol::RewindConsumerResponse{{}, error}); });
    } else {
      OffsetWrite w = checkOffsets(*g, r.offsets, nullptr);
      if (w.accepted.empty()) {
        out.push_back([done = std::move(done), results = std::move(w.results)]() mutable {
          done(protocol::RewindConsumerResponse{std::move(results), ErrorCode::NONE});
        });
      } else {
        w.done = std::move(done);
        g->rewinds.push_back(std::move(w));
        flush(g, out);
      }
    }
  }
  run(out);
}

}  // namespace groupcoord::adapter
