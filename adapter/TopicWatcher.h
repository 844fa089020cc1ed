#pragma once

// Topic metadata: how many partitions each subscribed topic has, and each
// partition's replica brokers, from Kafka's layout at <topics-path>/<topic>
// (docs/design.md). A topic is watched from the first time a group
// controlled here subscribes to it; when its partition count or its
// replicas change, or the rack of one of its replica brokers does
// (brokerChanged()), `changed(topic)` is told, without locks held, on the
// completion thread.
//
// Lock: mu_ guards the topic table only; it is never held while calling
// out or while taking another lock. replicaRacks() asks BrokerRacks after
// releasing it.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "adapter/Assignment.h"
#include "adapter/BrokerRacks.h"
#include "adapter/PartitionSource.h"
#include "adapter/SessionEpoch.h"
#include "common/Layout.h"
#include "common/Sync.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

class TopicWatcher final : public PartitionSource {
 public:
  using Changed = std::function<void(const std::string& topic)>;

  // brokers: where replicas' racks come from; without it replicaRacks() is
  // always empty.
  TopicWatcher(zk::Client& zk, std::string topicsPath, const SessionEpoch& epoch, Changed changed,
               const BrokerRacks* brokers = nullptr)
      : zk_(zk),
        topicsPath_(std::move(topicsPath)),
        epoch_(epoch),
        changed_(std::move(changed)),
        brokers_(brokers) {}

  // Starts watching the topic unless already watched.
  void watch(const std::string& topic) EXCLUDES(mu_);
  // Watches again the topics whose watch failed. Called by the tick while
  // ZooKeeper is connected.
  void rewatch() EXCLUDES(mu_);
  // The session ended: its watches are gone.
  void clear() EXCLUDES(mu_);

  // PartitionSource, from the topics watched.
  std::map<std::string, int32_t> partitionCounts(const layout::GroupSettings& s) const override EXCLUDES(mu_);
  bool partitionExists(const layout::GroupSettings& s, const protocol::TopicPartition& p) const override
      EXCLUDES(mu_);
  ReplicaRacks replicaRacks(const layout::GroupSettings& s) const override EXCLUDES(mu_);

  // A broker's rack changed: the topics it holds a replica of are told.
  void brokerChanged(int32_t broker) EXCLUDES(mu_);

 private:
  struct Topic {
    int32_t partitions = 0;  // 0 while the topic does not exist
    std::vector<std::vector<int32_t>> replicas;  // broker ids of each partition
    bool watching = false;
  };
  void onTopic(const std::string& topic, std::vector<std::vector<int32_t>> replicas) EXCLUDES(mu_);
  void unwatched(const std::string& topic) EXCLUDES(mu_);

  zk::Client& zk_;
  const std::string topicsPath_;
  const SessionEpoch& epoch_;
  const Changed changed_;
  const BrokerRacks* const brokers_;

  mutable Mutex mu_;
  std::map<std::string, Topic> topics_ GUARDED_BY(mu_);
};

}  // namespace groupcoord::adapter
