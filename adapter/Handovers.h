#pragma once

// Handing groups over to the server that should control them
// (docs/design.md, "Handover" and "Placement"): every group controlled here
// whose target in the fleet's placement (FleetPlacement) is another server
// is handed over to it, at most `maxInFlight` at a time. When this server
// is drained or not settled, at once; when it is a candidate but over its
// bound, in rounds at most one `loadInterval` apart, and only once the
// whole fleet's controllers have been read. The settle delay lives in
// ServerRegistry: a server that has not been live for it is no candidate,
// so a server that comes and goes draws no group.
//
// Threads: tick() on the ticker; the handovers' ends on the completion
// thread. Lock: mu_ guards the set in flight and the queue of groups due;
// never held while calling a group or the registry.

#include <cstddef>
#include <deque>
#include <set>
#include <string>

#include "common/Options.h"
#include "adapter/Clock.h"
#include "adapter/FleetPlacement.h"
#include "adapter/GroupTable.h"
#include "adapter/ServerRegistry.h"
#include "common/Sync.h"

namespace groupcoord::adapter {

struct HandoverConfig {
  // Groups being handed over at once, by this server.
  size_t maxInFlight = options::defaultInt("handover.max.in.flight");
  // How often the controlled groups are compared with their preferred
  // servers when nothing changed (a server settling changes nothing that
  // is watched).
  Millis checkInterval{1000};
  // Moves for load (this server over its bound) start at most this often.
  Millis loadInterval{30000};
};

class Handovers {
 public:
  Handovers(const ServerRegistry& servers, FleetPlacement& placement, const GroupTable& groups,
            const TimeSource& time, HandoverConfig config);

  // Starts the handovers that are due and fit. Called by the tick while
  // this server is registered, connected and not stopping.
  void tick(TimePoint now) EXCLUDES(mu_);
  // The live servers or drain markers changed: look at the next tick.
  void recheckSoon() EXCLUDES(mu_);

 private:
  bool start(const GroupTable::Ptr& group, int32_t to, bool drain) EXCLUDES(mu_);

  const ServerRegistry& servers_;
  FleetPlacement& placement_;
  const GroupTable& groups_;
  const TimeSource& time_;
  const HandoverConfig config_;

  mutable Mutex mu_;
  std::set<std::string> inFlight_ GUARDED_BY(mu_);
  struct Due {
    std::string group;
    int32_t to;    // the target when the scan found it due
    bool forLoad;  // found in a round for load
  };
  std::deque<Due> queue_ GUARDED_BY(mu_);  // due, from the last scan, not started yet
  TimePoint nextCheck_ GUARDED_BY(mu_);
  TimePoint nextLoadRound_ GUARDED_BY(mu_);
};

}  // namespace groupcoord::adapter
