#pragma once

// One row per partition of a DescribeGroup answer: who holds it, who waits
// for it, its committed offset. The status page's partition table,
// `groupctl describe`'s and the "partitions" of the DescribeGroup JSON
// (docs/protocol.md, "DescribeGroup as JSON") are all built from these.

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/Messages.h"

namespace groupcoord::protocol {

struct PartitionRow {
  TopicPartition partition;
  int64_t committed = -1;                // its committed offset; -1: nothing committed
  const MemberState* owner = nullptr;    // the member holding it; nullptr: nobody does
  const MemberState* waiting = nullptr;  // assigned to it, waiting for `owner` to release it; nullptr: none
};

// Every partition of the group's topics (0 .. partitions-1 of each topic
// whose partition count is known), and any other partition a member holds
// or waits for or that has a committed offset; sorted by topic, then
// partition. The rows point into `group`, which must outlive them.
std::vector<PartitionRow> partitionRows(const DescribeGroupResponse& group);

// "host:port", "[v6-host]:port" for a host with a ':', "" when the host is
// not known yet.
std::string hostPort(const std::string& host, uint16_t port);
// A member's hostPort(), "-" while it is not known.
std::string memberAddress(const MemberState& m);

}  // namespace groupcoord::protocol
