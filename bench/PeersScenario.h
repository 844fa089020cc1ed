#pragma once

// The `peers` scenario: the same membership workload on groupcoordd, on the
// ZooKeeper ensemble alone and on etcd (bench/Peers.h), one system and one
// size per invocation, its figures as one `peers-result {json}` line on
// standard output. bench/peers_report.py turns the lines of several rounds
// into the table of docs/benchmarks.md ("Peers").
//
//   join: every member joins its group (groups of --group-size), at most
//   --join-parallel joins at a time; settle: until every member sees its
//   whole group; steady: --steady-seconds of keep-alives (coordination-side
//   CPU and RSS, requests); churn: every --churn-period-seconds,
//   --churn-percent of the members leave and as many new ones join, at
//   random moments of the period (time until every other member of the
//   group saw each change; writes to the replicated log per change); crash:
//   --crash-percent of the members vanish without a goodbye (time until the
//   others saw each go, against the TTL).

#include "bench/Common.h"

namespace groupcoord::bench {

void peersScenario(const Args& args);

}  // namespace groupcoord::bench
