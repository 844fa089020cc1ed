#pragma once

// A private network for partition tests: network namespaces ("nodes") on
// one bridge of their own, each with one IPv4 address, and cuts between any
// two of them.
//
// The test process stays in the root namespace; it reaches every node at
// its address through the bridge (whose own address is hostAddress()), and
// processes started in a node (setns into netnsPath()) see only that node's
// interface. A cut from A to B is an nftables rule in A's namespace that
// drops what A sends to B; a cut both ways adds the rule in B's namespace
// too. The rules live and die with the namespaces.
//
// Everything is named after the test's pid (namespaces "gcn<pid>-<node>",
// the bridge "gcb<pid>", veth "gcv<pid>-<i>"), removed by the destructor,
// and what a lab of a process that no longer runs left behind is removed
// by the next lab (a test killed mid-run must not leave addresses behind).
// Needs root, iproute2 and nft.

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace groupcoord::testing {

class NetLab {
 public:
  NetLab();
  ~NetLab();
  NetLab(const NetLab&) = delete;
  NetLab& operator=(const NetLab&) = delete;

  // Why the lab cannot be used (empty when it can).
  const std::string& error() const { return error_; }

  // A new node named `name` (letters and digits, at most 5): its index, or
  // -1 with error() set.
  int addNode(const std::string& name);
  size_t size() const { return nodes_.size(); }
  const std::string& name(int node) const { return nodes_.at(static_cast<size_t>(node)).name; }
  const std::string& address(int node) const { return nodes_.at(static_cast<size_t>(node)).address; }
  // The namespace's name (`ip netns exec NAME ...`) and its file, for setns.
  const std::string& netns(int node) const { return nodes_.at(static_cast<size_t>(node)).netns; }
  std::string netnsPath(int node) const { return "/var/run/netns/" + netns(node); }
  // The root namespace's address on the bridge.
  const std::string& hostAddress() const { return hostAddress_; }

  // Drops what `from` sends to `to`, and with bothWays what `to` sends to
  // `from`. Takes effect for connections already open too (their packets
  // are dropped, nothing is reset).
  bool cut(int from, int to, bool bothWays = true);
  // Cuts `node` from every node in `others`, both ways.
  bool isolate(int node, const std::vector<int>& others);
  bool heal(int from, int to, bool bothWays = true);
  bool healAll();
  // The cuts in force, as (from, to) pairs.
  std::set<std::pair<int, int>> cuts() const { return cuts_; }
  // "a->b a->c ..." with node names, for logs and failure messages.
  std::string describeCuts() const;

  // Runs a shell command inside a node's namespace; its exit status (output
  // in *out).
  int runIn(int node, const std::string& command, std::string* out = nullptr) const;

  // What this process's labs (or, with anyProcess, any lab) left: namespace
  // and link names. A test checks it is empty after a lab is gone.
  static std::vector<std::string> leftovers(bool anyProcess = false);

 private:
  struct Node {
    std::string name;
    std::string netns;
    std::string veth;
    std::string address;
  };
  bool apply(int node);
  void removeStale();
  void teardown();

  std::string tag_;     // the pid, as text
  std::string bridge_;
  std::string subnet_;  // "10.a.b"
  std::string hostAddress_;
  std::string forwardRule_;  // the iptables rule letting bridged packets through, if one was needed
  std::vector<Node> nodes_;
  std::set<std::pair<int, int>> cuts_;
  std::string error_;
};

// Runs a shell command (stderr folded into stdout); its exit status.
int runCommand(const std::string& command, std::string* out = nullptr);

}  // namespace groupcoord::testing
