#pragma once

// Exclusive partition ownership for one group, as its controller sees it
// (docs/design.md, "Ownership"): at no instant may two members hold the same
// partition. The controller grants a partition only once its previous
// holder released it: by a heartbeat at a generation whose assignment no
// longer gives it that partition, by registering without it in
// OwnedPartitions, by leaving, or by being evicted. A controller that has
// just taken the group over learns holders from OwnedPartitions and grants
// nothing that nobody reported until one session timeout has passed.
//
// Pure bookkeeping: no ZooKeeper, no threads (the owner's lock guards it),
// time passed in.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "adapter/Clock.h"
#include "protocol/Messages.h"

namespace groupcoord::adapter {

using Partition = protocol::TopicPartition;

class Ownership {
 public:
  // The assignment of the current generation: member -> partitions.
  void setTarget(std::map<std::string, std::vector<Partition>> target);
  const std::map<std::string, std::vector<Partition>>& target() const { return target_; }

  // Until `until`, a partition nobody holds is not granted (takeover).
  void holdUnclaimedUntil(TimePoint until) {
    graceUntil_ = until;
    ++epoch_;
  }
  bool inGrace(TimePoint now) const { return now < graceUntil_; }

  // A registration: `owned` is what the member says it holds now. What it
  // held here and did not report is released; what it reports and nobody
  // holds is its own (a controller learning after a takeover). A partition
  // reported while another member holds it stays with that member.
  void reportOwned(const std::string& member, const std::vector<Partition>& owned);

  // Grants the member every partition of its target that is free to grant
  // now; returns what it holds of its target afterwards (sorted).
  std::vector<Partition> grant(const std::string& member, TimePoint now);

  // A heartbeat at the current generation: the member has stopped using
  // what its target does not give it. Returns how many were released.
  size_t releaseUntargeted(const std::string& member);

  // Leave or eviction: everything the member held is free.
  size_t releaseAll(const std::string& member);

  // True when the member's target holds a partition it does not hold yet
  // that could be granted now: it should register again.
  bool due(const std::string& member, TimePoint now) const;

  // The member holds its whole target and nothing else.
  bool holdsExactlyItsTarget(const std::string& member) const;
  // Everything the member holds is in its target.
  bool holdsOnlyItsTarget(const std::string& member) const;

  bool owns(const std::string& member, const Partition& p) const;
  // The holder of a partition, or "" when free.
  const std::string& holderOf(const Partition& p) const;
  std::vector<Partition> heldBy(const std::string& member) const;
  // What each member holds, sorted by member and by partition.
  const std::map<std::string, std::set<Partition>>& holdings() const { return held_; }
  size_t heldCount() const { return holder_.size(); }
  // Every member id that holds something.
  std::vector<std::string> holders() const {
    std::vector<std::string> ids;
    ids.reserve(held_.size());
    for (const auto& [id, ps] : held_) ids.push_back(id);
    return ids;
  }
  // Every partition of the target is held by the member it is assigned to.
  // Kept as a count on every change, so asking costs nothing.
  bool settled() const { return placed_ == targetOf_.size(); }

  // Moves on every change of targets, holders or grace. A member found in
  // sync (holding exactly what it may, nothing due) at epoch E is still in
  // sync while the epoch is E and the grace is over: the heartbeat path
  // skips its checks then (docs/design.md, "Heartbeats").
  uint64_t epoch() const { return epoch_; }

  void clear();

  // Members a partition of whose target became free since the last call,
  // each once, sorted: they have something to be granted, so a heartbeat
  // of theirs held at the controller is answered now (docs/design.md,
  // "Held heartbeats").
  std::vector<std::string> takeFreedFor() {
    std::vector<std::string> out(freedFor_.begin(), freedFor_.end());
    freedFor_.clear();
    return out;
  }

 private:
  bool grantable(const std::string& member, const Partition& p, TimePoint now) const;
  // The partition is held by the member the target gives it to.
  bool placed(const Partition& p) const;
  // Every change of a holder goes through these two, which keep placed_.
  void hold(const Partition& p, const std::string& member);
  void free(const Partition& p);

  std::map<std::string, std::vector<Partition>> target_;
  std::map<Partition, std::string> holder_;
  std::map<std::string, std::set<Partition>> held_;
  std::map<Partition, std::string> targetOf_;  // the target, by partition
  size_t placed_ = 0;                          // partitions of targetOf_ placed()
  bool overlapping_ = false;                   // target_ gives a partition to two members
  TimePoint graceUntil_{};
  uint64_t epoch_ = 1;
  std::set<std::string> freedFor_;
};

}  // namespace groupcoord::adapter
