#include "adapter/FleetPlacement.h"

#include <algorithm>

#include "adapter/ControllerClaims.h"
#include "adapter/LoadBoard.h"
#include "adapter/ServerRegistry.h"

namespace groupcoord::adapter {

FleetPlacement::FleetPlacement(const ServerRegistry& servers, const ControllerClaims& claims, const LoadBoard& board,
                               FleetPlacementConfig config)
    : servers_(servers), claims_(claims), board_(board), config_(config) {}

uint64_t FleetPlacement::weightOf(size_t members) const {
  return config_.weighting == Weighting::Members ? members + config_.groupWeight : config_.groupWeight;
}

void FleetPlacement::invalidate() {
  MutexLock lock(mu_);
  dirty_ = true;
}

void FleetPlacement::refresh(bool force) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<int32_t> candidates = servers_.candidates();
  const uint64_t claimsVersion = claims_.version();
  const uint64_t boardVersion = board_.version();
  uint64_t ticket = 0;
  {
    MutexLock lock(mu_);
    const bool changed =
        dirty_ || claimsVersion != claimsVersion_ || boardVersion != boardVersion_ || candidates != candidates_;
    if (!changed) return;
    if (!force && now - computedAt_ < minGap_) return;
    ticket = ++started_;
  }
  bool controllersRead = false;
  auto controllers = claims_.controllers(&controllersRead);
  std::vector<PlacementGroup> groups;
  groups.reserve(controllers.size());
  for (auto& [name, id] : controllers) groups.push_back(PlacementGroup{name, config_.groupWeight, id});
  const bool weightsRead = config_.weighting == Weighting::Groups || board_.complete();
  if (config_.weighting == Weighting::Members) board_.fillWeights(groups, config_.groupWeight);
  PlacementResult result = place(candidates, groups, config_.placement);
  const auto took = std::chrono::steady_clock::now() - now;

  MutexLock lock(mu_);
  // Two threads may compute at once. One that began later read inputs at
  // least as new: an earlier one finishing last must not put its older
  // result back (the later one's caller would then find its group missing,
  // and nothing would ask again until the next tick).
  if (ticket < stored_) return;
  stored_ = ticket;
  targets_.clear();
  targets_.reserve(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    targets_.emplace(groups[i].name, Cached{result.target[i], groups[i].controller, groups[i].weight});
  }
  groups_ = std::move(groups);
  result_ = std::move(result);
  candidates_ = std::move(candidates);
  claimsVersion_ = claimsVersion;
  boardVersion_ = boardVersion;
  computedAt_ = now;
  // Up to a few thousand groups a computation costs well under a
  // millisecond: computed whenever asked after a change.
  minGap_ = groups_.size() <= kAlwaysFresh ? std::chrono::steady_clock::duration{}
                                           : std::min<std::chrono::steady_clock::duration>(took * 50, config_.refreshEvery);
  dirty_ = false;
  complete_ = controllersRead && weightsRead;
}

int32_t FleetPlacement::target(const std::string& group) {
  refresh(false);
  const int32_t controller = claims_.controllerOf(group);
  MutexLock lock(mu_);
  auto it = targets_.find(group);
  // Unknown to the computation, or it has changed hands since: not known
  // yet (nobody claims it at once, nobody hands it over); asked again by
  // the next tick, once the computation has caught up.
  if (it == targets_.end() || it->second.controller != controller) return -1;
  return it->second.target;
}

bool FleetPlacement::mayFinishRound(const std::string& group, int32_t from, int32_t to) {
  refresh(false);
  const int32_t controller = claims_.controllerOf(group);
  MutexLock lock(mu_);
  auto it = targets_.find(group);
  if (it == targets_.end() || it->second.controller != controller || controller != from) return false;
  if (it->second.target != from) return false;  // the placement names a server itself
  const PlacementResult::Server* src = nullptr;
  const PlacementResult::Server* dst = nullptr;
  for (auto& s : result_.servers) {
    if (s.id == from) src = &s;
    if (s.id == to) dst = &s;
  }
  if (!src || !dst) return false;  // one of them is no candidate now
  return src->load > result_.bound && dst->placed + it->second.weight <= result_.bound;
}

bool FleetPlacement::selfCandidate() {
  const auto c = servers_.candidates();
  return std::binary_search(c.begin(), c.end(), servers_.self().id);
}

bool FleetPlacement::complete() {
  refresh(false);
  MutexLock lock(mu_);
  return complete_;
}

PlacementView FleetPlacement::view() {
  refresh(true);
  const auto states = servers_.serverStates();
  PlacementView v;
  v.server = servers_.self().id;
  v.epsilonPermille = config_.placement.epsilonPermille;
  v.marginPermille = config_.placement.marginPermille;
  v.weighting = config_.weighting == Weighting::Members ? "members" : "groups";
  v.groupWeight = config_.groupWeight;
  MutexLock lock(mu_);
  v.total = result_.total;
  v.bound = result_.bound;
  v.complete = complete_;
  for (auto& s : states) {
    PlacementView::Server out;
    out.id = s.id;
    out.drained = s.drained;
    out.settled = s.settled;
    out.candidate = std::binary_search(candidates_.begin(), candidates_.end(), s.id);
    for (auto& r : result_.servers) {
      if (r.id != s.id) continue;
      out.load = r.load;
      out.groups = r.groups;
      out.placed = r.placed;
    }
    if (!out.candidate) {
      // Not in the computation: what it controls still counts.
      for (auto& g : groups_) {
        if (g.controller != s.id) continue;
        out.load += g.weight;
        ++out.groups;
      }
    }
    v.servers.push_back(out);
  }
  for (size_t i = 0; i < groups_.size() && i < result_.target.size(); ++i) {
    if (result_.target[i] == groups_[i].controller) continue;
    v.moves.push_back({groups_[i].name, groups_[i].weight, groups_[i].controller, result_.target[i]});
  }
  std::sort(v.moves.begin(), v.moves.end(), [](const PlacementView::Move& a, const PlacementView::Move& b) {
    return a.weight != b.weight ? a.weight > b.weight : a.group < b.group;
  });
  return v;
}

}  // namespace groupcoord::adapter
