#include "adapter/GroupPhase.h"

#include <spdlog/spdlog.h>

namespace groupcoord::adapter {

std::string_view toString(GroupPhase p) {
  switch (p) {
    case GroupPhase::Claimed: return "Claimed";
    case GroupPhase::Loading: return "Loading";
    case GroupPhase::Idle: return "Idle";
    case GroupPhase::Writing: return "Writing";
    case GroupPhase::ReadingOffsets: return "ReadingOffsets";
    case GroupPhase::Stale: return "Stale";
    case GroupPhase::Reloading: return "Reloading";
    case GroupPhase::Deleting: return "Deleting";
    case GroupPhase::HandingOver: return "HandingOver";
    case GroupPhase::Dropped: return "Dropped";
  }
  return "?";
}

bool isLegalTransition(GroupPhase from, GroupPhase to) {
  using P = GroupPhase;
  if (from == to) return true;
  if (from == P::Dropped) return false;
  if (to == P::Dropped) return true;
  switch (from) {
    case P::Claimed: return to == P::Loading;
    case P::Loading: return to == P::Claimed || to == P::Idle;
    case P::Idle: return to == P::Writing || to == P::ReadingOffsets || to == P::Deleting || to == P::HandingOver;
    case P::Writing: return to == P::Idle || to == P::Stale;
    case P::ReadingOffsets: return to == P::Idle;
    case P::Stale: return to == P::Reloading || to == P::Deleting;
    case P::Reloading: return to == P::Idle || to == P::Stale;
    case P::Deleting: return to == P::Stale;
    case P::HandingOver: return to == P::Stale;
    case P::Dropped: return false;
  }
  return false;
}

IllegalTransition::IllegalTransition(const std::string& group, GroupPhase from, GroupPhase to)
    : std::logic_error("group " + group + ": illegal phase transition " + std::string(toString(from)) + " -> " +
                       std::string(toString(to))) {}

void GroupPhaseMachine::to(GroupPhase next) {
  if (next == phase_) return;
  if (!isLegalTransition(phase_, next)) throw IllegalTransition(group_, phase_, next);
  spdlog::debug("group {}: {} -> {}", group_, toString(phase_), toString(next));
  phase_ = next;
}

}  // namespace groupcoord::adapter
