#pragma once

// A three-node ZooKeeper ensemble inside a NetLab: each node runs in a lab
// node's namespace and listens on that node's address only (clients on
// port 2181, quorum on 2888 and 3888), so that a cut between lab nodes
// separates ZooKeeper nodes from each other and from the servers as a real
// partition would. Uses Debian's zookeeper package (the jars the test
// ensemble of scripts/zk-ensemble.sh uses).

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/NetLab.h"

namespace groupcoord::testing {

class LabEnsemble {
 public:
  // One ZooKeeper node in each of the lab's nodes `where` (three of them).
  LabEnsemble(NetLab& lab, std::vector<int> where, int tickMs = 500);

  // A leader that hears from no quorum for this many ticks steps down
  // (the nodes' syncLimit).
  static constexpr int kSyncLimitTicks = 5;
  int tickMs() const { return tickMs_; }
  // Kills the nodes still running (SIGKILL) and removes their data.
  ~LabEnsemble();
  LabEnsemble(const LabEnsemble&) = delete;
  LabEnsemble& operator=(const LabEnsemble&) = delete;

  // Starts every node and waits until all serve and one leads; false with
  // *why set (and the nodes' logs' ends) otherwise.
  bool start(std::chrono::milliseconds wait, std::string* why);
  bool startNode(int i);
  void killNode(int i);
  bool running(int i);

  // "10.a.b.c:2181,..." of every node.
  std::string connectString() const;
  // What `srvr` says a node is ("leader", "follower", or "none" when it
  // does not answer or does not serve).
  std::string mode(int i) const;
  // The index (0..2) of the node that says it leads, or -1.
  int leader() const;
  // The lab node of ZooKeeper node i.
  int labNode(int i) const { return where_.at(static_cast<size_t>(i)); }
  std::string logTail(int i, size_t lines = 20) const;
  const std::string& dir() const { return dir_; }

 private:
  NetLab& lab_;
  std::vector<int> where_;
  int tickMs_;
  std::string dir_;
  std::vector<pid_t> pids_;
};

// Sends a four-letter word to host:port and returns the answer ("" when
// nothing answered within `wait`).
std::string fourLetterWord(const std::string& host, uint16_t port, const std::string& word,
                           std::chrono::milliseconds wait = std::chrono::milliseconds(2000));

}  // namespace groupcoord::testing
