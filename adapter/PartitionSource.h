#pragma once

// What a group's assignment reads about its subscribed topics: how many
// partitions each has and the racks of their replicas. TopicWatcher is the
// real one (from ZooKeeper); the group model's tests give their own.

#include <map>
#include <string>

#include "adapter/Assignment.h"
#include "common/Layout.h"
#include "protocol/Messages.h"

namespace groupcoord::adapter {

class PartitionSource {
 public:
  virtual ~PartitionSource() = default;
  // Partitions of each of the group's topics, 0 for a topic not (yet) known.
  virtual std::map<std::string, int32_t> partitionCounts(const layout::GroupSettings& s) const = 0;
  // The group subscribes to the partition's topic and the partition exists.
  virtual bool partitionExists(const layout::GroupSettings& s, const protocol::TopicPartition& p) const = 0;
  // Racks holding a replica of each partition of the group's topics, for
  // RackInfo::replicas; topics without any known replica rack are absent.
  virtual ReplicaRacks replicaRacks(const layout::GroupSettings& s) const = 0;
};

}  // namespace groupcoord::adapter
