#pragma once

// The phase of a group controlled here: what its controller is doing with
// it, and therefore what it may do next (docs/design.md, "A controlled
// group").
//
//   Claimed ──> Loading ──> Idle <──> Writing          (membership transaction)
//      ^           │          │ <──> ReadingOffsets    (committed offsets)
//      └───────────┘          │ ──> Deleting ──> Stale (deletion refused)
//                             v          ^
//                   Writing ──> Stale ──> Reloading ──> Idle
//                                 ^
//                   Idle ──> HandingOver                (to another server)
//
// and from any phase to Dropped, which is final. A transition not in the
// table is a bug: GroupPhaseMachine::to() throws std::logic_error for it.

#include <stdexcept>
#include <string>
#include <string_view>

namespace groupcoord::adapter {

enum class GroupPhase {
  Claimed,         // controlled here, not read from ZooKeeper yet: requests wait
  Loading,         // the first read of settings and members is in flight
  Idle,            // serving, nothing in flight
  Writing,         // serving, a membership transaction is in flight
  ReadingOffsets,  // serving, the committed offsets are being read
  Stale,           // serving, memory must be re-read before the next write
  Reloading,       // serving, that re-read is in flight
  Deleting,        // its subtree is being removed
  HandingOver,     // the handover transaction is in flight: heartbeats only
  Dropped,         // no longer controlled here
};

std::string_view toString(GroupPhase p);

// Not served yet: requests answer CONTROLLER_NOT_AVAILABLE.
constexpr bool isLoading(GroupPhase p) { return p == GroupPhase::Claimed || p == GroupPhase::Loading; }
// Serving requests from memory.
constexpr bool isServing(GroupPhase p) {
  return p == GroupPhase::Idle || p == GroupPhase::Writing || p == GroupPhase::ReadingOffsets ||
         p == GroupPhase::Stale || p == GroupPhase::Reloading;
}
// A ZooKeeper operation of the group's own (not a commit) is in flight.
constexpr bool isBusy(GroupPhase p) {
  return p == GroupPhase::Loading || p == GroupPhase::Writing || p == GroupPhase::ReadingOffsets ||
         p == GroupPhase::Reloading || p == GroupPhase::Deleting || p == GroupPhase::HandingOver;
}
// Memory is not known to match ZooKeeper.
constexpr bool needsReload(GroupPhase p) {
  return p == GroupPhase::Claimed || p == GroupPhase::Loading || p == GroupPhase::Stale ||
         p == GroupPhase::Reloading;
}

bool isLegalTransition(GroupPhase from, GroupPhase to);

class IllegalTransition : public std::logic_error {
 public:
  IllegalTransition(const std::string& group, GroupPhase from, GroupPhase to);
};

// One group's phase; the group's lock guards it.
class GroupPhaseMachine {
 public:
  explicit GroupPhaseMachine(const std::string& group) : group_(group) {}
  GroupPhase get() const { return phase_; }
  // Moves to `next` (staying is always legal), logging at debug level.
  // Throws IllegalTransition for a move the table does not allow.
  void to(GroupPhase next);

 private:
  const std::string& group_;
  GroupPhase phase_ = GroupPhase::Claimed;
};

}  // namespace groupcoord::adapter
