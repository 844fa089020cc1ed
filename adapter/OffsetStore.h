#pragma once

// Committed offsets in ZooKeeper: <group>/offsets/<topic>/<partition>,
// decimal text, followed by a newline and the commit's metadata string when
// a Kafka client gave a non-empty one (docs/design.md, "ZooKeeper layout").
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
  // The metadata strings of the offsets that carry one (a Kafka commit's);
  // an offset without an entry has "".
  std::map<protocol::TopicPartition, std::string> metadata;
};

// Every znode below a group's offsets znode, for its deletion.
struct OffsetsListing {
  zk::Error error = zk::Error::Ok;  // NoNode: the group has no offsets znode
  std::vector<std::string> leaves;  // offsets/<topic>/<partition>
  std::vector<std::string> topics;  // offsets/<topic>
};

// The longest metadata string a Kafka OffsetCommit may store with an
// offset, in bytes; a longer one is refused for its partition
// (OFFSET_METADATA_TOO_LARGE) and the partition's offset is left as it was.
inline constexpr size_t kMaxOffsetMetadataBytes = 4096;

// What an offset znode holds: the offset in decimal text, then, only when
// the metadata is not empty, a newline and the metadata as it was given
// (it may hold newlines itself). A znode without the newline is an offset
// with "" metadata, as every offset written before metadata was kept.
struct StoredOffset {
  int64_t offset = -1;
  std::string metadata;
  bool operator==(const StoredOffset&) const = default;
};
std::string encodeOffset(int64_t offset, std::string_view metadata = {});
std::optional<StoredOffset> parseStoredOffset(std::string_view text);

// Parses what an offset znode holds (its offset: metadata after a newline
// is skipped), or a partition znode's name.
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
  // wins), creating the offsets/<topic> znodes `known` lacks. A partition
  // in `metadata` is written with that metadata string, every other one
  // with none (an earlier commit's metadata is replaced).
  void writeOps(const std::string& group, const CommittedOffsets& known,
                const std::vector<protocol::PartitionOffset>& offsets, std::vector<zk::Op>& ops,
                const std::map<protocol::TopicPartition, std::string>& metadata = {}) const;

  // FetchOffsets: the group's committed offsets, from ZooKeeper.
  void fetch(const protocol::FetchOffsetsRequest& r, std::function<void(protocol::FetchOffsetsResponse)> done);

 private:
  zk::Client& zk_;
  const layout::Layout& layout_;
};

}  // namespace groupcoord::adapter
