#pragma once

// Where each group should be controlled: consistent hashing with bounded
// loads, made sticky (docs/design.md, "Placement").
//
// A pure function of what every server reads from ZooKeeper alike: the
// candidate servers (live, settled, undrained), every group with its weight
// and its current controller. Servers that read the same input compute the
// same placement, so they agree without talking to each other; the claim
// znodes stay the guard of exclusivity when they briefly do not.
//
// The bound is B = ceil((1 + epsilon) x total weight / candidates).
//  1. A group stays with its controller when that is a candidate.
//  2. A candidate over B by more than the margin (load > B x (1 + margin))
//     gives up groups, heaviest first and then those it ranks lowest by
//     rendezvous hashing, until it is within B. Nothing else moves: a
//     server joining takes only what the bound forces off the others.
//  3. Every group without a candidate controller, and every group given up
//     in 2, is placed in a fixed order (heaviest first, then by name hash)
//     on the first server of its own rendezvous order that stays within B;
//     when none would, on the least loaded server (its own controller among
//     equals).
//  4. A candidate still over B by more than the margin (a heavy group fit
//     nowhere and came back to it) gives up lighter groups that fit
//     elsewhere, heaviest first, until it is within B.
// Applying the result and computing again moves nothing (no candidate is
// then over its bound by the margin), which is what keeps steady weights
// from ever moving a group.

#include <cstdint>
#include <string>
#include <vector>

#include "common/Options.h"

namespace groupcoord::adapter {

struct PlacementConfig {
  // The bound over the mean load, in thousandths: 100 is epsilon = 0.1.
  uint32_t epsilonPermille = 10 * options::defaultInt("placement.epsilon.percent");
  // How far over its bound a server may be before it gives groups up, in
  // thousandths of the bound.
  uint32_t marginPermille = 10 * options::defaultInt("placement.margin.percent");
};

struct PlacementGroup {
  std::string name;
  uint64_t weight = 1;      // at least 1
  int32_t controller = -1;  // -1: none
};

struct PlacementResult {
  // target[i]: the server that should control input group i; -1 only when
  // there is no candidate.
  std::vector<int32_t> target;
  uint64_t total = 0;  // the groups' weights
  uint64_t bound = 0;  // B; 0 without candidates
  struct Server {
    int32_t id = -1;
    uint64_t load = 0;      // by the current controllers
    uint64_t placed = 0;    // by the targets
    uint32_t groups = 0;    // controlled now
  };
  std::vector<Server> servers;  // the candidates, by id
  // Groups whose target is not their controller.
  size_t moves = 0;
};

// The servers `group` prefers, best first (rendezvous hashing over
// `candidates`; ties to the lower id).
std::vector<int32_t> rendezvousOrder(const std::string& group, const std::vector<int32_t>& candidates);

PlacementResult place(const std::vector<int32_t>& candidates, const std::vector<PlacementGroup>& groups,
                      const PlacementConfig& config);

// The least number of groups that must move so that no candidate holds more
// than `bound`, given each server's current groups (a lower bound for any
// placement within the bound: each server over it gives up its heaviest
// groups first). Used by tests and benchmarks to judge `place`.
size_t minimumMoves(const std::vector<int32_t>& candidates, const std::vector<PlacementGroup>& groups,
                    uint64_t bound);

}  // namespace groupcoord::adapter
