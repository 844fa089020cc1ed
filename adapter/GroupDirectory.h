#pragma once

// The read-only calls any server answers from ZooKeeper, whoever controls
// the group: ListGroups (settings, generation, members, controller of each
// group, and a Kafka group's protocol from its saved generation) and
// FetchOffsets (docs/protocol.md).
//
// No lock and no state: every answer is read fresh; its continuation runs
// on the completion thread.

#include <atomic>
#include <cstddef>

#include "adapter/OffsetStore.h"
#include "adapter/ServerRegistry.h"
#include "common/Layout.h"
#include "protocol/Handler.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

class GroupDirectory {
 public:
  // A ListGroups naming more groups than this answers INVALID_REQUEST:
  // each named group costs three ZooKeeper reads (four for a Kafka group).
  static constexpr size_t kMaxListedGroups = 10000;

  GroupDirectory(zk::Client& zk, const layout::Layout& layout, const ServerRegistry& servers, OffsetStore& offsets,
                 const std::atomic<bool>& connected)
      : zk_(zk), layout_(layout), servers_(servers), offsets_(offsets), connected_(connected) {}

  void listGroups(const protocol::ListGroupsRequest& r, protocol::ResponseCallback done);
  void fetchOffsets(const protocol::FetchOffsetsRequest& r, protocol::ResponseCallback done);

 private:
  void describe(std::vector<std::string> names, protocol::ResponseCallback done);

  zk::Client& zk_;
  const layout::Layout& layout_;
  const ServerRegistry& servers_;
  OffsetStore& offsets_;
  const std::atomic<bool>& connected_;
};

}  // namespace groupcoord::adapter
