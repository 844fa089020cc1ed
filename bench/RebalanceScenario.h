#pragma once

// Planned rebalances in one large group, by the bench's simulated members
// (bench/Fleet.h), each on a connection of its own, all from this one
// generator thread: the time each moved partition goes without an owner, as
// the members saw it (from the answer that took it from its old owner to
// the answer that gave it to the new one), for
//
//   join     one more member joins (--joins times; it leaves again between);
//   leave    that member leaves gracefully (LeaveGroup);
//   grow     the topic grows by a quarter of its partitions;
//   restart  --restarts members in turn leave and a new one joins in place,
//
// each phase once the group is in step (every partition held once, the
// shares within one of each other). --held 1: the members keep a held
// heartbeat (version 1, WaitMs one interval, docs/protocol.md §20); 0:
// version 0 heartbeats every interval, as clients did before it. Then,
// with --server-pid, the server's CPU per member per second in a steady
// window, less its CPU over as long before any member joined.
//
// A partition given to a member while another still holds it fails the run.

#include "bench/Common.h"

namespace groupcoord::bench {

void rebalanceScenario(const Args& args);

}  // namespace groupcoord::bench
