#pragma once

// Partition assignment of a group (docs/design.md, "Assignment"), as a pure
// function: the controller calls it with the members of a generation, the
// partition count of each subscribed topic and what every member held before,
// and sends each member its part. Nothing here touches ZooKeeper, the clock or randomness, so
// two controllers (or a client computing its own share from GroupMembers)
// given the same inputs compute the same assignment.
//
// What the result guarantees, when there is at least one member:
// - complete and disjoint: every partition of every topic has exactly one owner;
// - balanced per topic: members' counts of one topic differ by at most one;
// - balanced in total: members' total counts differ by at most one;
// - sticky, exactly: among all assignments balanced in both senses, it keeps
//   the largest possible number of the partitions members already hold, so a
//   rebalance moves only what the two balance rules force.
//
// Why "exactly" matters: choosing each topic's extra partition greedily,
// topic by topic, moves partitions between members that stay. Here, starting
// from a balanced assignment, a leave moves only the leaver's partitions
// whenever any balanced assignment allows it. Some inputs do not allow it
// (three members, topics of 1, 2 and 1 partitions: see AssignmentTest.cpp);
// there the extra moves are the fewest possible: none with at most two
// topics, and at most the sum over topics t of (leaver's partitions of t mod
// members left). A topic growing by d partitions moves at most d mod N.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "protocol/Messages.h"

namespace groupcoord::adapter {

// Member id -> its partitions, each vector sorted.
using Assignment = std::map<std::string, std::vector<protocol::TopicPartition>>;

// members: the member ids (any order; duplicates are ignored).
// partitions: topic -> partition count; a count <= 0 (or a missing topic)
//   contributes nothing.
// previous: what each member held before. Entries for members that are gone,
//   topics that are absent or shrank, and partition numbers out of range are
//   ignored; a partition claimed by several current members counts as held by
//   the one with the smallest id.
// Returns an entry for every member (possibly an empty vector); empty when
// there are no members. Deterministic: the same inputs give the same output.
Assignment assignPartitions(const std::vector<std::string>& members,
                            const std::map<std::string, int32_t>& partitions,
                            const Assignment& previous);

// Topic -> racks holding a replica of each partition, indexed by partition
// number; a topic absent, a partition past the end, or an empty set: no rack
// known for it.
using ReplicaRacks = std::map<std::string, std::vector<std::set<std::string>>>;

// Racks, for rack-aware assignment (docs/design.md, "Assignment"). A member
// whose rack holds a replica of a partition reads it without crossing racks;
// such a placement is "in-rack".
struct RackInfo {
  // Member id -> its rack; a member absent here, or with "", has none.
  std::map<std::string, std::string> members;
  ReplicaRacks replicas;

  bool operator==(const RackInfo&) const = default;
};

// The same, rack-aware. On top of everything above, which stays as it is
// (complete, disjoint, both balance rules, and exactly as sticky: no held
// partition ever moves for locality), partitions that do change hands go
// in-rack where the balance rules leave room:
// - a member keeps, of what it held beyond its quota, its in-rack partitions
//   first;
// - which members get a topic's extra partition prefers members of racks
//   whose replicas of the topic outnumber what the rack's members' base
//   quotas take (a cost in the same flow that keeps stickiness, weighted
//   below it);
// - the partitions left free go to members below quota with the most
//   in-rack placements possible (a maximum matching between the partitions'
//   racks and the members' racks).
// Without racks (empty RackInfo, members without racks, partitions without
// replica racks, or racks that no member has) the result is exactly that of
// the overload above. Deterministic.
Assignment assignPartitions(const std::vector<std::string>& members,
                            const std::map<std::string, int32_t>& partitions,
                            const Assignment& previous,
                            const RackInfo& racks);

// How many of the assignment's partitions sit with a member whose rack holds
// one of their replicas.
size_t countInRack(const Assignment& assignment, const RackInfo& racks);

// How many partitions changed owner from `before` to `after` (which gives
// no partition to two members, as no assignment does): a partition owned in
// `before` by X (the smallest id if several claim it) and in `after` by some
// Y != X counts once. Partitions present in only one of the two (created,
// removed) do not count.
size_t countMoves(const Assignment& before, const Assignment& after);

}  // namespace groupcoord::adapter
