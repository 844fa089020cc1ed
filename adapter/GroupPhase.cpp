#include "adapter/GroupPhase.h"

#include <utility>

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
  if (!isLegalTransition(phase_, next) || (next == GroupPhase::Idle && stage_ == HandoverStage::Verifying)) {
    throw IllegalTransition(group_, phase_, next);
  }
  spdlog::debug("group {}: {} -> {}", group_, toString(phase_), toString(next));
  phase_ = next;
}

std::string_view toString(HandoverStage s) {
  switch (s) {
    case HandoverStage::None: return "None";
    case HandoverStage::Draining: return "Draining";
    case HandoverStage::Sending: return "Sending";
    case HandoverStage::Verifying: return "Verifying";
  }
  return "?";
}

void GroupPhaseMachine::stage(HandoverStage next) {
  spdlog::debug("group {}: handover {} -> {}", group_, toString(stage_), toString(next));
  stage_ = next;
}

bool GroupPhaseMachine::startHandover(Handover job) {
  if (stage_ != HandoverStage::None || !isServing(phase_)) return false;
  job_ = std::move(job);
  stage(HandoverStage::Draining);
  return true;
}

void GroupPhaseMachine::sendHandover() {
  if (stage_ != HandoverStage::Draining || phase_ != GroupPhase::Idle) {
    throw std::logic_error("group " + group_ + ": handover sent from stage " + std::string(toString(stage_)) +
                           " in phase " + std::string(toString(phase_)));
  }
  stage(HandoverStage::Sending);
  to(GroupPhase::HandingOver);
}

void GroupPhaseMachine::verifyHandover() {
  if (stage_ != HandoverStage::Sending) {
    throw std::logic_error("group " + group_ + ": handover verified from stage " + std::string(toString(stage_)));
  }
  stage(HandoverStage::Verifying);
  to(GroupPhase::Stale);
}

std::optional<GroupPhaseMachine::Handover> GroupPhaseMachine::endHandover() {
  if (stage_ == HandoverStage::None) return std::nullopt;
  stage(HandoverStage::None);
  return std::exchange(job_, Handover{});
}

bool VisibleState::legal(protocol::GroupState from, protocol::GroupState to) {
  // Out of LOADING to anything, then among STABLE, REBALANCING and
  // HANDING_OVER in any order; never back to LOADING.
  return from == to || to != protocol::GroupState::LOADING;
}

void VisibleState::to(protocol::GroupState next) {
  if (next == state_) return;
  if (!legal(state_, next)) {
    throw std::logic_error("group " + group_ + ": illegal state change " +
                           std::string(protocol::groupStateName(state_)) + " -> " +
                           std::string(protocol::groupStateName(next)));
  }
  spdlog::info("group {}: {} -> {}", group_, protocol::groupStateName(state_), protocol::groupStateName(next));
  state_ = next;
}

}  // namespace groupcoord::adapter
