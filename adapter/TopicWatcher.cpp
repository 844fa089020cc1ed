#include "adapter/TopicWatcher.h"

#include <algorithm>

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
        if (r.error == zk::Error::NoNode) return onCount(topic, 0);
        if (r.error != zk::Error::Ok) {
          spdlog::warn("topic {}: reading its metadata failed: {}; retrying", topic, r.error);
          return unwatched(topic);  // the tick watches it again
        }
        zk_.get(path, epoch_.bind([this, topic](zk::GetResult g) {
          if (g.error == zk::Error::NoNode) return onCount(topic, 0);
          if (g.error != zk::Error::Ok) return;
          auto n = layout::decodeTopicPartitions(g.data);
          if (!n) {
            spdlog::warn("topic {}: metadata is not Kafka's topic JSON; treating it as absent", topic);
            return onCount(topic, 0);
          }
          onCount(topic, *n);
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

void TopicWatcher::onCount(const std::string& topic, int32_t partitions) {
  {
    MutexLock lock(mu_);
    auto& t = topics_[topic];
    if (t.partitions == partitions) return;
    spdlog::info("topic {}: {} -> {} partitions", topic, t.partitions, partitions);
    t.partitions = partitions;
  }
  changed_(topic);
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
