#pragma once

// What the benchmarks read from the ZooKeeper ensemble and from processes:
// the four-letter words mntr and srvr over TCP, and /proc figures.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace groupcoord::bench {

// The ensemble started by scripts/zk-ensemble.sh --base-port P: client
// ports P+1..P+3, pid files in /tmp/groupcoord-zk-P/nodeN/pid.
struct EnsembleProbe {
  int basePort = 23800;

  std::string connectString() const;
  // "key value" lines of `mntr` from node n (1..3); empty when unreachable.
  std::map<std::string, std::string> mntr(int node) const;
  // A numeric mntr figure summed over the nodes that answer.
  double sum(const std::string& key) const;
  // Client connections the nodes hold, not counting the probe's own (mntr
  // is asked over a connection of its own to each node).
  double clientConnections() const;
  // The highest last-processed zxid the nodes report (srvr's "Zxid:").
  int64_t zxid() const;
  std::vector<int> pids() const;
  // CPU seconds (user + system) used so far by the three ZooKeeper processes.
  double cpuSeconds() const;
};

std::string fourLetter(uint16_t port, const std::string& word);
// Resident set size of a process in KiB, from /proc/<pid>/status; -1 if gone.
int64_t rssKiB(int pid);
// CPU seconds (user + system) of a process; -1 if gone.
double cpuSeconds(int pid);
// A groupcoordd's /metrics on 127.0.0.1:httpPort, one entry per sample line
// keyed by its series text ("name{label=\"v\"}"); empty when unreachable.
std::map<std::string, double> scrapeMetrics(uint16_t httpPort);

}  // namespace groupcoord::bench
