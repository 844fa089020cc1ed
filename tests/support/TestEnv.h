#pragma once

// Where the tests find the live ZooKeeper ensemble and the project's
// binaries. Integration tests never skip: when the ensemble is not there,
// requireEnsemble() fails the test with a message that says how to start it.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace groupcoord::testing {

// The ensemble's connect string: $GROUPCOORD_TEST_ZK, or the one
// scripts/zk-ensemble.sh serves on its default base port.
std::string zkConnect();

// The base port of the ensemble (GROUPCOORD_ZK_BASE_PORT, default 21800).
int zkBasePort();

// Runs scripts/zk-ensemble.sh with the tests' base port and the given
// arguments ("kill 2", "leader", ...). Returns its exit code; its stdout,
// trimmed, goes to *out when given.
int ensemble(const std::string& args, std::string* out = nullptr);

// True when one of the nodes says it leads (awaitEnsembleLeader()).
bool ensembleServing();

// Fails the current test (GoogleTest fatal failure) unless the ensemble serves.
void requireEnsemble();

// The node (1..3) that leads now, or -1: one look (`srvr`, answered within
// 2 s, to each node).
int ensembleLeader();

// The node (1..3) that leads, looked for until one does while any node
// listens: an ensemble elects a leader and its followers sync with it within
// initLimit ticks (10 of GROUPCOORD_ZK_TICK_MS, 500 ms by default, in
// scripts/zk-ensemble.sh), and a busy machine delays the answers; waited for
// that long plus the scheduling allowance (support/Timing.h). -1 when none
// leads by then, at once when no node listens.
int awaitEnsembleLeader();

// Absolute path of a built binary of the project, e.g. "server/groupcoordd".
std::string binaryPath(const std::string& relative);

// Source tree root.
std::string sourceDir();

// A name unique to this process and call, for znodes and groups.
std::string uniqueName(const std::string& prefix);

// The last `lines` lines of `text` (a server's log, for a failure message).
std::string lastLines(const std::string& text, size_t lines);

// A port on 127.0.0.1 that nothing listens on: bound, then closed again.
uint16_t closedLoopbackPort();

// The resident set of process `pid` in KiB (VmRSS), or -1 when it cannot be
// read.
long rssKiB(pid_t pid);

// Raises this process's open-file limit to its hard limit (tests that open
// thousands of connections).
void raiseOpenFileLimit();

// The environment variable `name` as a positive integer; `fallback` when it
// is unset, empty, not a number or not positive.
int envInt(const char* name, int fallback);

}  // namespace groupcoord::testing
