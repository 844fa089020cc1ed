#pragma once

// The fleet's placement as this server computes it (docs/design.md,
// "Placement"): the pure function of adapter/Placement.h applied to what
// this server has read from ZooKeeper, namely the candidate servers
// (ServerRegistry), every group's controller (ControllerClaims) and every
// group's published weight (LoadBoard). Claims and handovers ask it where a
// group should be controlled.
//
// The result is cached and computed again when an input changed. For more
// than kAlwaysFresh groups it is computed again at most every 50 times what
// the last computation took, capped at `refreshEvery`; and a group
// not in the cache, or whose controller has changed since, counts as not
// known yet until then (a server must never claim a group back, or
// hand it over, on a view older than the group's own change).
//
// Threads: any. Lock: mu_ guards the cache; the inputs are read before it
// is taken (each part has its own lock) and nothing is called while it is
// held.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/Options.h"
#include "adapter/Clock.h"
#include "adapter/Hash.h"
#include "adapter/Placement.h"
#include "common/Sync.h"

namespace groupcoord::adapter {

class ServerRegistry;
class ControllerClaims;
class LoadBoard;

enum class Weighting { Members, Groups };

struct FleetPlacementConfig {
  PlacementConfig placement;
  Weighting weighting = Weighting::Members;
  // A group's weight is its member count plus this (so that empty groups
  // count); with Weighting::Groups every group weighs this.
  uint64_t groupWeight = options::defaultInt("placement.group.weight");
  Millis refreshEvery{1000};
};

// What `groupctl servers` and the status page show.
struct PlacementView {
  int32_t server = -1;  // the server whose view this is
  uint32_t epsilonPermille = 0;
  uint32_t marginPermille = 0;
  std::string weighting;  // "members" or "groups"
  uint64_t groupWeight = 0;
  uint64_t total = 0;
  uint64_t bound = 0;
  // Every group's controller has been read (until then no group is moved
  // for load).
  bool complete = false;
  struct Server {
    int32_t id = -1;
    bool drained = false;
    bool settled = false;
    bool candidate = false;
    uint64_t load = 0;   // the weights of the groups it controls
    uint32_t groups = 0;
    uint64_t placed = 0;  // its load once the moves below are made
  };
  std::vector<Server> servers;  // the live servers, by id
  struct Move {
    std::string group;
    uint64_t weight = 0;
    int32_t controller = -1;  // -1: none
    int32_t target = -1;
  };
  // Groups whose target is not their controller, heaviest first.
  std::vector<Move> moves;
};

class FleetPlacement {
 public:
  static constexpr size_t kAlwaysFresh = 2000;

  FleetPlacement(const ServerRegistry& servers, const ControllerClaims& claims, const LoadBoard& board,
                 FleetPlacementConfig config);

  // The server that should control `group`; -1 when not known (no server).
  int32_t target(const std::string& group) EXCLUDES(mu_);
  // A round of moves for load decided that `group` goes from `from` to `to`,
  // and the placement now keeps it where it is (`from` came within the
  // margin part way through the round). The round's decision stands while
  // `from` is still over the bound and `to` is a candidate with room for
  // the group: a server that starts giving groups up goes down to the
  // bound, not just under the margin, whatever the order the moves ended
  // in.
  bool mayFinishRound(const std::string& group, int32_t from, int32_t to) EXCLUDES(mu_);
  // True when this server is a candidate (live, settled and undrained, or
  // the fallback when none is).
  bool selfCandidate() EXCLUDES(mu_);
  // True once every group's controller and the weights have been read.
  bool complete() EXCLUDES(mu_);
  PlacementView view() EXCLUDES(mu_);
  // The weight a group of `members` members is published with.
  uint64_t weightOf(size_t members) const;
  const FleetPlacementConfig& config() const { return config_; }
  // An input changed: compute again at the next question.
  void invalidate() EXCLUDES(mu_);

 private:
  void refresh(bool force) EXCLUDES(mu_);

  const ServerRegistry& servers_;
  const ControllerClaims& claims_;
  const LoadBoard& board_;
  const FleetPlacementConfig config_;

  mutable Mutex mu_;
  bool dirty_ GUARDED_BY(mu_) = true;
  // On the steady clock: the gap is about CPU, not the fleet's time.
  std::chrono::steady_clock::time_point computedAt_ GUARDED_BY(mu_);
  std::chrono::steady_clock::duration minGap_ GUARDED_BY(mu_){};
  // Computations in the order they began, and the one whose result is kept.
  uint64_t started_ GUARDED_BY(mu_) = 0;
  uint64_t stored_ GUARDED_BY(mu_) = 0;
  uint64_t claimsVersion_ GUARDED_BY(mu_) = ~0ULL;
  uint64_t boardVersion_ GUARDED_BY(mu_) = ~0ULL;
  std::vector<int32_t> candidates_ GUARDED_BY(mu_);
  std::vector<PlacementGroup> groups_ GUARDED_BY(mu_);
  struct Cached {
    int32_t target;
    int32_t controller;  // as the computation saw it
    uint64_t weight;
  };
  std::unordered_map<std::string, Cached, NameHash, std::equal_to<>> targets_ GUARDED_BY(mu_);
  PlacementResult result_ GUARDED_BY(mu_);
  bool complete_ GUARDED_BY(mu_) = false;
};

}  // namespace groupcoord::adapter
