#pragma once

// A controlled group's recent rebalance reasons (docs/design.md, "Rebalance
// history"): why each generation move happened, with its time and the
// generation it produced, as DescribeGroup answers them
// (docs/protocol.md, "11 DescribeGroup").
//
// Pure bookkeeping: no ZooKeeper, no lock (the group's lock guards it).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "protocol/Messages.h"

namespace groupcoord::adapter {

// When more than this many events of one reason come in one generation
// move, they are kept as one entry with a count.
inline constexpr size_t kListedPerReason = 3;

// The events of one generation move, with like events folded: up to
// kListedPerReason of a reason stay one by one; more become one entry (the
// first by member id, Count = how many, Detail saying so). Order: by
// reason's first appearance, then as given.
std::vector<protocol::RebalanceEvent> foldEvents(std::vector<protocol::RebalanceEvent> events);

class RebalanceHistory {
 public:
  static constexpr size_t kKept = 100;      // answered by DescribeGroup
  static constexpr size_t kPersisted = 25;  // written to the history znode

  // Appends, dropping the oldest beyond kKept.
  void add(std::vector<protocol::RebalanceEvent> events);
  const std::deque<protocol::RebalanceEvent>& events() const { return events_; }
  std::vector<protocol::RebalanceEvent> all() const { return {events_.begin(), events_.end()}; }
  // The newest kPersisted of what is kept followed by `next` (the events a
  // transaction is about to make true), as the history znode would hold
  // them: oldest first, at most kPersisted.
  std::vector<protocol::RebalanceEvent> persisted(const std::vector<protocol::RebalanceEvent>& next) const;
  // The generation of the newest event, -1 when there is none.
  int64_t latestGeneration() const { return events_.empty() ? -1 : events_.back().generation; }
  void clear() { events_.clear(); }

 private:
  std::deque<protocol::RebalanceEvent> events_;
};

}  // namespace groupcoord::adapter
