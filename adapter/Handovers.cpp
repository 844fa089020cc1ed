#include "adapter/Handovers.h"

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "metrics/Coordination.h"

namespace groupcoord::adapter {

Handovers::Handovers(const ServerRegistry& servers, FleetPlacement& placement, const GroupTable& groups,
                     const TimeSource& time, HandoverConfig config)
    : servers_(servers), placement_(placement), groups_(groups), time_(time), config_(config) {}

void Handovers::recheckSoon() {
  MutexLock lock(mu_);
  nextCheck_ = TimePoint{};
}

void Handovers::tick(TimePoint now) {
  const int32_t self = servers_.self().id;
  bool rescan;
  {
    MutexLock lock(mu_);
    rescan = now >= nextCheck_;
    if (rescan) nextCheck_ = now + config_.checkInterval;
    if (!rescan && queue_.empty()) return;
  }
  const bool candidate = placement_.selfCandidate();
  bool forLoad = false;
  if (rescan) {
    // Every controlled group against its target: once per check interval
    // or change, not per tick (the placement itself is cached).
    bool loadRound;
    std::map<std::string, Due> queued;
    {
      MutexLock lock(mu_);
      loadRound = now >= nextLoadRound_;
      for (auto& d : queue_) queued.emplace(d.group, d);
    }
    loadRound = loadRound && candidate && placement_.complete();
    std::deque<Due> due;
    for (auto& g : groups_.snapshot()) {
      const int32_t to = placement_.target(g->name());
      auto was = queued.find(g->name());
      if (to < 0 || to == self) {
        // Not known yet, or kept here since the round: what a round queued
        // stays queued, and is looked at again when it is its turn.
        if (was != queued.end() && (to < 0 || was->second.forLoad)) due.push_back(was->second);
        continue;
      }
      // Not a candidate: every group goes at once. A candidate over its
      // bound: in a round, and what a round queued stays queued.
      const bool wasForLoad = was != queued.end() && was->second.forLoad;
      if (!candidate || loadRound || was != queued.end()) {
        due.push_back(Due{g->name(), to, (candidate && loadRound) || wasForLoad});
      }
      if (candidate && loadRound) forLoad = true;
    }
    MutexLock lock(mu_);
    if (forLoad) nextLoadRound_ = now + config_.loadInterval;
    queue_ = std::move(due);
  }
  std::vector<Due> next;
  size_t waiting;
  {
    MutexLock lock(mu_);
    while (inFlight_.size() + next.size() < config_.maxInFlight && !queue_.empty()) {
      if (!inFlight_.count(queue_.front().group)) next.push_back(queue_.front());
      queue_.pop_front();
    }
    waiting = queue_.size();
  }
  if (next.empty()) return;
  const bool drain = servers_.draining(self);
  size_t started = 0;
  std::vector<Due> later;
  for (auto& d : next) {
    auto g = groups_.find(d.group);
    if (!g) continue;
    int32_t to = placement_.target(d.group);  // may have changed since the scan
    if (to < 0) {
      later.push_back(d);  // the placement has not caught up with a change yet
      continue;
    }
    if (to == self) {
      // Earlier moves of the round brought this server within the margin:
      // it still goes down to the bound (FleetPlacement::mayFinishRound).
      if (!d.forLoad || !placement_.mayFinishRound(d.group, self, d.to)) continue;
      to = d.to;
    }
    if (start(g, to, drain)) ++started;
  }
  if (!later.empty()) {
    MutexLock lock(mu_);
    for (auto& d : later) queue_.push_back(std::move(d));
  }
  if (started > 0 && rescan) {
    std::string why = drain       ? "this server is drained"
                      : !candidate ? "this server has not been live for the settle delay"
                                   : "this server is over its bound in the fleet's placement";
    if (forLoad) {
      const PlacementView v = placement_.view();
      for (auto& s : v.servers) {
        if (s.id == self) why += fmt::format(": load {}, bound {}", s.load, v.bound);
      }
    }
    spdlog::info("{} of the groups controlled here should be controlled elsewhere ({}); handing them over, {} at a "
                 "time",
                 started + waiting, why, config_.maxInFlight);
  }
}

bool Handovers::start(const GroupTable::Ptr& group, int32_t to, bool drain) {
  {
    MutexLock lock(mu_);
    if (!inFlight_.insert(group->name()).second) return false;
  }
  const auto reason = drain ? metrics::HandoverReason::Drain : metrics::HandoverReason::Rebalance;
  const bool started = group->handOver(
      servers_.self().id, to, [this, name = group->name(), reason](GroupController::HandoverResult r) {
        auto& m = metrics::coordination();
        if (r.ok) {
          m.handovers[static_cast<size_t>(reason)].add();
          m.handoverDuration.observe(static_cast<uint64_t>(r.took.count()) * 1000000);
        } else {
          m.handoverFailures.add();
        }
        MutexLock lock(mu_);
        inFlight_.erase(name);
        // A failed group is tried again at the next regular check, not in
        // a tight loop.
      });
  if (!started) {
    // Not serving (loading, deleting, or already dropped): tried again later.
    MutexLock lock(mu_);
    inFlight_.erase(group->name());
  }
  return started;
}

}  // namespace groupcoord::adapter
