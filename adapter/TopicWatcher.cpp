#include "adapter/TopicWatcher.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

namespace groupcoord::adapter {

void TopicWatcher::watch(const std::string& topic) {
  {
    MutexLock lock(mu_);
    auto& t = topics_[topic];
    if (t.watching) return;
    t.watching = true;
  }
  std::string path = topicsPath_ + "/" + topic;
  zk_.exists(
      path,
      epoch_.bind([this, topic, path](zk::ExistsResult r) {
        if (r.error == zk::Error::NoNode) return onTopic(topic, {});
        if (r.error != zk::Error::Ok) {
          spdlog::warn("topic {}: reading its metadata failed: {}; retrying", topic, r.error);
          return unwatched(topic);  // the tick watches it again
        }
        zk_.get(path, epoch_.bind([this, topic](zk::GetResult g) {
          if (g.error == zk::Error::NoNode) return onTopic(topic, {});
          if (g.error != zk::Error::Ok) return;
          auto replicas = layout::decodeTopicReplicas(g.data);
          if (!replicas) {
            spdlog::warn("topic {}: metadata is not Kafka's topic JSON; treating it as absent", topic);
            return onTopic(topic, {});
          }
          onTopic(topic, std::move(*replicas));
        }));
      }),
      epoch_.bind([this, topic](const zk::WatchEvent& ev) {
        if (ev.type == zk::WatchEvent::Type::Session) return;
        unwatched(topic);
        watch(topic);
      }));
}

void TopicWatcher::unwatched(const std::string& topic) {
  MutexLock lock(mu_);
  topics_[topic].watching = false;
}

void TopicWatcher::rewatch() {
  std::vector<std::string> again;
  {
    MutexLock lock(mu_);
    for (auto& [t, info] : topics_)
      if (!info.watching) again.push_back(t);
  }
  for (auto& t : again) watch(t);
}

void TopicWatcher::clear() {
  MutexLock lock(mu_);
  topics_.clear();
}

void TopicWatcher::onTopic(const std::string& topic, std::vector<std::vector<int32_t>> replicas) {
  const auto partitions = static_cast<int32_t>(replicas.size());
  {
    MutexLock lock(mu_);
    auto& t = topics_[topic];
    if (t.partitions == partitions && t.replicas == replicas) return;
    if (t.partitions != partitions) {
      spdlog::info("topic {}: {} -> {} partitions", topic, t.partitions, partitions);
    } else {
      spdlog::info("topic {}: replicas moved", topic);
    }
    t.partitions = partitions;
    t.replicas = std::move(replicas);
  }
  changed_(topic);
}

ReplicaRacks TopicWatcher::replicaRacks(const layout::GroupSettings& s) const {
  std::map<std::string, std::vector<std::vector<int32_t>>> replicas;
  std::set<int32_t> brokers;
  {
    MutexLock lock(mu_);
    for (const auto& name : s.topics) {
      auto it = topics_.find(name);
      if (it == topics_.end() || it->second.replicas.empty()) continue;
      for (const auto& ids : it->second.replicas) brokers.insert(ids.begin(), ids.end());
      replicas.emplace(name, it->second.replicas);
    }
  }
  ReplicaRacks out;
  if (brokers_ == nullptr || brokers.empty()) return out;
  const auto racks = brokers_->racksOf(brokers);
  if (racks.empty()) return out;
  for (const auto& [name, parts] : replicas) {
    std::vector<std::set<std::string>> sets(parts.size());
    bool any = false;
    for (size_t p = 0; p < parts.size(); ++p) {
      for (int32_t id : parts[p]) {
        auto r = racks.find(id);
        if (r == racks.end()) continue;
        sets[p].insert(r->second);
        any = true;
      }
    }
    if (any) out.emplace(name, std::move(sets));
  }
  return out;
}

void TopicWatcher::brokerChanged(int32_t broker) {
  std::vector<std::string> touched;
  {
    MutexLock lock(mu_);
    for (const auto& [name, t] : topics_) {
      const bool holds = std::any_of(t.replicas.begin(), t.replicas.end(), [&](const std::vector<int32_t>& ids) {
        return std::find(ids.begin(), ids.end(), broker) != ids.end();
      });
      if (holds) touched.push_back(name);
    }
  }
  for (const auto& name : touched) changed_(name);
}

std::map<std::string, int32_t> TopicWatcher::partitionCounts(const layout::GroupSettings& s) const {
  std::map<std::string, int32_t> counts;
  MutexLock lock(mu_);
  for (auto& t : s.topics) {
    auto it = topics_.find(t);
    counts[t] = it == topics_.end() ? 0 : it->second.partitions;
  }
  return counts;
}

bool TopicWatcher::partitionExists(const layout::GroupSettings& s, const protocol::TopicPartition& p) const {
  if (std::find(s.topics.begin(), s.topics.end(), p.topic) == s.topics.end() || p.partition < 0) return false;
  MutexLock lock(mu_);
  auto it = topics_.find(p.topic);
  return it != topics_.end() && p.partition < it->second.partitions;
}

}  // namespace groupcoord::adapter
