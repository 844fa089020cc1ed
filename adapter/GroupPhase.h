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
//
// A handover (docs/design.md, "Handover") is a stage of the same machine,
// not a second flag beside it:
//
//   None ──> Draining ──> Sending ──> Verifying ──> None
//               │  (Idle ──> HandingOver)  (──> Stale, re-read)
//               └──────────────┴───────────────────> None
//
// Draining: accepted writes go out first, new ones are refused. Sending:
// the handover transaction is in flight (the phase is HandingOver).
// Verifying: its answer was lost; the group stays Stale (nothing is
// granted, no heartbeat answered) until a re-read says whether it happened.
//
// What clients see of it all (DescribeGroup's state) is VisibleState:
// LOADING, then STABLE and REBALANCING as the members catch up with each
// generation, HANDING_OVER while a handover runs; checked and logged on
// every change.

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "adapter/Clock.h"
#include "protocol/Messages.h"

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

enum class HandoverStage { None, Draining, Sending, Verifying };
std::string_view toString(HandoverStage s);

struct HandoverResult {
  bool ok = false;  // the group is now the other server's to claim
  int32_t to = -1;
  Millis took{0};   // from the start to the end
  std::string why;  // when not ok
};
using HandoverDone = std::function<void(HandoverResult)>;

// One group's phase and handover stage; the group's lock guards it.
class GroupPhaseMachine {
 public:
  struct Handover {
    int32_t from = -1;
    int32_t to = -1;
    TimePoint since;
    HandoverDone done;
  };

  explicit GroupPhaseMachine(const std::string& group) : group_(group) {}
  GroupPhase get() const { return phase_; }
  // Moves to `next` (staying is always legal), logging at debug level.
  // Throws IllegalTransition for a move the table does not allow, and for
  // a move to Idle while a lost handover answer is being verified.
  void to(GroupPhase next);

  HandoverStage handover() const { return stage_; }
  bool handingOver() const { return stage_ != HandoverStage::None; }
  const Handover& job() const { return job_; }
  // None -> Draining, while serving; false (nothing changes) otherwise.
  bool startHandover(Handover job);
  // Draining -> Sending, and Idle -> HandingOver.
  void sendHandover();
  // Sending -> Verifying, and HandingOver -> Stale.
  void verifyHandover();
  // Any stage -> None: the job, to be answered (nullopt when none ran).
  std::optional<Handover> endHandover();

 private:
  void stage(HandoverStage next);

  const std::string& group_;
  GroupPhase phase_ = GroupPhase::Claimed;
  HandoverStage stage_ = HandoverStage::None;
  Handover job_;
};

// The group's state as clients see it (DescribeGroup). Moves are checked:
// LOADING goes anywhere and nothing comes back to it; STABLE and
// REBALANCING alternate; either may become HANDING_OVER and back (a
// handover that failed). An illegal move throws IllegalTransition's
// sibling std::logic_error; every move is logged at info level.
class VisibleState {
 public:
  explicit VisibleState(const std::string& group) : group_(group) {}
  protocol::GroupState get() const { return state_; }
  static bool legal(protocol::GroupState from, protocol::GroupState to);
  void to(protocol::GroupState next);

 private:
  const std::string& group_;
  protocol::GroupState state_ = protocol::GroupState::LOADING;
};

}  // namespace groupcoord::adapter
