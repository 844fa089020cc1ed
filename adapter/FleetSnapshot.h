#pragma once

// The fleet's placement inputs read straight from ZooKeeper, for tools,
// tests and benchmarks that judge the placement from outside the servers:
// each group's controller (its controller znode) and weight (the loads
// znodes, with the rule LoadBoard applies). Blocking; not for a server's
// own threads.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "adapter/FleetPlacement.h"
#include "adapter/Placement.h"
#include "common/Layout.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

struct FleetSnapshot {
  bool ok = false;  // every read answered
  std::string error;
  std::vector<PlacementGroup> groups;  // in the order asked; controller -1: none
};

FleetSnapshot readFleet(zk::Client& zk, const layout::Layout& layout, const std::vector<std::string>& groups,
                        Weighting weighting, uint64_t groupWeight,
                        std::chrono::milliseconds wait = std::chrono::milliseconds(10000));

}  // namespace groupcoord::adapter
