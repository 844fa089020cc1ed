#pragma once

// Committed offsets in ZooKeeper: <group>/offsets/<topic>/<partition>,
// decimal text (docs/design.md, "ZooKeeper layout").
//
// No lock and no state of its own beyond what it is given: reads go
// straight to ZooKeeper (their continuations run on the completion
// thread), and the writes are ops for a transaction the caller sends.

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/Layout.h"
#include "protocol/Messages.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

// What this controller knows is durable of one group's offsets.
struct CommittedOffsets {
  std::map<protocol::TopicPartition, int64_t> offsets;
  std::set<std::string> topics;  // offsets/<topic> znodes that exist
  bool loaded = false;           // read from ZooKeeper since the last doubt

  // Offsets just made durable.
  void apply(const std::vector<protocol::PartitionOffset>& written);
  // The committed offset, -1 when none.
  int64_t of(const protocol::TopicPartition& p) const;
};

// Offsets read from ZooKeeper, and the offsets/<topic> znodes seen.
struct OffsetsRead {
  zk::Error error = zk::Error::Ok;
  std::map<protocol::TopicPartition, int64_t> offsets;
  std::set<std::string> topics;
};

// Every znode below a group's offsets znode, for its deletion.
struct OffsetsListing {
  zk::Error error = zk::Error::Ok;  // NoNode: the group has no offsets znode
  std::vector<std::string> leaves;  // offsets/<topic>/<partition>
  std::vector<std::string> topics;  // offsets/<topic>
};

// Parses what an offset znode holds, or a partition znode's name.
std::optional<int64_t> parseOffset(std::string_view text);
std::optional<int32_t> parsePartition(std::string_view text);

class OffsetStore {
 public:
  OffsetStore(zk::Client& zk, const layout::Layout& layout) : zk_(zk), layout_(layout) {}

  // Reads the group's offsets of `topics` (all topics when empty).
  void read(const std::string& group, const std::vector<std::string>& topics, std::function<void(OffsetsRead)> done);

  // Lists the znodes below the group's offsets znode.
  void list(const std::string& group, std::function<void(OffsetsListing)> done);

  // Adds to `ops` the writes of `offsets` (the last value of a partition
  // wins), creating the offsets/<topic> znodes `known` lacks.
  void writeOps(const std::string& group, const CommittedOffsets& known,
                const std::vector<protocol::PartitionOffset>& offsets, std::vector<zk::Op>& ops) const;

  // FetchOffsets: the group's committed offsets, from ZooKeeper.
  void fetch(const protocol::FetchOffsetsRequest& r, std::function<void(protocol::FetchOffsetsResponse)> done);

 private:
  zk::Client& zk_;
  const layout::Layout& layout_;
};

}  // namespace groupcoord::adapter
