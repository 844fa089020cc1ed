#include "support/NetLab.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace groupcoord::testing {

namespace {

constexpr const char* kNetnsPrefix = "gcn";
constexpr const char* kBridgePrefix = "gcb";
constexpr const char* kVethPrefix = "gcv";
constexpr const char* kRuleComment = "groupcoord-netlab-";
// The table each node's namespace holds its cuts in.
constexpr const char* kTable = "gclab";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

// The pid a lab name carries after its prefix ("gcn1234-zk1" -> 1234).
pid_t pidOf(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return 0;
  return static_cast<pid_t>(std::atol(name.c_str() + prefix.size()));
}

bool alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH); }

// Lab namespaces and links that exist now, each with the pid it names.
std::vector<std::pair<std::string, pid_t>> labObjects() {
  std::vector<std::pair<std::string, pid_t>> found;
  std::string out;
  runCommand("ip netns list", &out);
  for (auto& l : lines(out)) {
    std::string name = l.substr(0, l.find(' '));
    if (name.rfind(kNetnsPrefix, 0) == 0) found.emplace_back("netns " + name, pidOf(name, kNetnsPrefix));
  }
  runCommand("ip -o link show", &out);
  for (auto& l : lines(out)) {
    // "12: gcb1234: <BROADCAST,..." or "13: gcv1234-0@if2: ..."
    auto a = l.find(": ");
    if (a == std::string::npos) continue;
    auto b = l.find_first_of(":@", a + 2);
    std::string name = l.substr(a + 2, b == std::string::npos ? std::string::npos : b - a - 2);
    if (name.rfind(kBridgePrefix, 0) == 0) found.emplace_back("link " + name, pidOf(name, kBridgePrefix));
    if (name.rfind(kVethPrefix, 0) == 0) found.emplace_back("link " + name, pidOf(name, kVethPrefix));
  }
  if (runCommand("iptables -S FORWARD", &out) == 0) {
    for (auto& l : lines(out)) {
      auto at = l.find(kRuleComment);
      if (at == std::string::npos) continue;
      found.emplace_back("iptables " + l, static_cast<pid_t>(std::atol(l.c_str() + at + std::string(kRuleComment).size())));
    }
  }
  return found;
}

void removeObject(const std::string& what) {
  if (what.rfind("netns ", 0) == 0) {
    runCommand("ip netns delete " + what.substr(6));
  } else if (what.rfind("link ", 0) == 0) {
    runCommand("ip link delete " + what.substr(5));
  } else if (what.rfind("iptables -A ", 0) == 0) {
    runCommand("iptables -D " + what.substr(12));
  }
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

int runCommand(const std::string& command, std::string* out) {
  FILE* p = ::popen(("exec 2>&1; " + command).c_str(), "r");
  if (!p) return -1;
  std::array<char, 512> buf{};
  std::string text;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) text.append(buf.data(), n);
  const int rc = ::pclose(p);
  if (out) *out = text;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

NetLab::NetLab() : tag_(std::to_string(::getpid())) {
  if (::geteuid() != 0) {
    error_ = "the partition lab needs root (network namespaces, a bridge, nftables)";
    return;
  }
  std::string out;
  if (runCommand("ip -V", &out) != 0 || runCommand("nft --version", &out) != 0) {
    error_ = "the partition lab needs iproute2 and nftables (`ip`, `nft`): " + out;
    return;
  }
  removeStale();
  bridge_ = kBridgePrefix + tag_;
  // A /24 of 10.0.0.0/8 chosen by the pid, skipping any this machine uses.
  runCommand("ip -4 -o addr show; ip -4 route show", &out);
  const long pid = ::getpid();
  for (int attempt = 0; attempt < 64 && subnet_.empty(); ++attempt) {
    const long k = pid + attempt * 7919;
    std::string s = "10." + std::to_string(200 + k % 50) + "." + std::to_string((k / 50) % 256);
    if (out.find(" " + s + ".") == std::string::npos) subnet_ = s;
  }
  if (subnet_.empty()) {
    error_ = "no free 10.x.y.0/24 for the lab";
    return;
  }
  hostAddress_ = subnet_ + ".1";
  if (runCommand("ip link add " + bridge_ + " type bridge && ip addr add " + hostAddress_ + "/24 dev " + bridge_ +
                     " && ip link set " + bridge_ + " up",
                 &out) != 0) {
    error_ = "cannot make the bridge " + bridge_ + ": " + out;
    teardown();
    return;
  }
  // Where bridged packets pass iptables (br_netfilter, which Docker loads)
  // under a FORWARD policy of DROP (which Docker sets), nodes would not
  // reach each other: let the lab's bridge through, ahead of every rule.
  std::ifstream nf("/proc/sys/net/bridge/bridge-nf-call-iptables");
  int callsIptables = 0;
  if (nf >> callsIptables && callsIptables == 1 && runCommand("iptables -S FORWARD", &out) == 0) {
    const std::string rule =
        "FORWARD -i " + bridge_ + " -o " + bridge_ + " -m comment --comment " + kRuleComment + tag_ + " -j ACCEPT";
    if (runCommand("iptables -I " + rule, &out) != 0) {
      error_ = "cannot let the lab's bridge through iptables' FORWARD chain: " + out;
      teardown();
      return;
    }
    forwardRule_ = rule;
  }
}

NetLab::~NetLab() { teardown(); }

void NetLab::teardown() {
  // The root ends of the veth pairs first: deleting one deletes its peer at
  // once, where a deleted namespace takes its interfaces with it only later.
  for (auto& n : nodes_) runCommand("ip link delete " + n.veth + " 2>/dev/null; ip netns delete " + n.netns);
  nodes_.clear();
  cuts_.clear();
  if (!bridge_.empty()) runCommand("ip link delete " + bridge_ + " 2>/dev/null");
  if (!forwardRule_.empty()) runCommand("iptables -D " + forwardRule_);
  forwardRule_.clear();
}

void NetLab::removeStale() {
  for (auto& [what, pid] : labObjects())
    if (!alive(pid)) removeObject(what);
}

std::vector<std::string> NetLab::leftovers(bool anyProcess) {
  std::vector<std::string> out;
  const pid_t self = ::getpid();
  for (auto& [what, pid] : labObjects())
    if (anyProcess || pid == self) out.push_back(what);
  return out;
}

int NetLab::addNode(const std::string& name) {
  if (!error_.empty()) return -1;
  if (name.empty() || name.size() > 5 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos) {
    error_ = "a lab node's name is 1 to 5 lower-case letters and digits, not '" + name + "'";
    return -1;
  }
  const int index = static_cast<int>(nodes_.size());
  if (index >= 200) {
    error_ = "a lab holds at most 200 nodes";
    return -1;
  }
  Node n;
  n.name = name;
  n.netns = kNetnsPrefix + tag_ + "-" + name;
  n.veth = kVethPrefix + tag_ + "-" + std::to_string(index);
  n.address = subnet_ + "." + std::to_string(10 + index);
  const std::string peer = "gcp" + tag_ + "-" + std::to_string(index);
  const std::string in = "ip netns exec " + n.netns + " ";
  std::string out;
  const std::string script =
      "set -e; ip netns add " + n.netns + "; ip link add " + n.veth + " type veth peer name " + peer +
      "; ip link set " + peer + " netns " + n.netns + "; ip link set " + n.veth + " master " + bridge_ +
      "; ip link set " + n.veth + " up; " + in + "ip link set lo up; " + in + "ip link set " + peer +
      " name eth0; " + in + "ip addr add " + n.address + "/24 dev eth0; " + in + "ip link set eth0 up; " + in +
      "ip route add default via " + hostAddress_ + "; " + in + "nft " +
      quoted(std::string("add table inet ") + kTable + "; add chain inet " + kTable +
             " in { type filter hook input priority 0; policy accept; }");
  if (runCommand(script, &out) != 0) {
    error_ = "cannot make the lab node " + name + ": " + out;
    runCommand("ip netns delete " + n.netns + " 2>/dev/null; ip link delete " + n.veth + " 2>/dev/null");
    return -1;
  }
  nodes_.push_back(std::move(n));
  return index;
}

bool NetLab::apply(int node) {
  // What reaches `node` from the nodes cut from it is dropped on arrival:
  // the senders see silence (their packets leave and are lost), as across
  // a real partition, not an error of their own stack.
  std::string sources;
  for (auto& [from, to] : cuts_)
    if (to == node) sources += (sources.empty() ? "" : ", ") + address(from);
  std::string command = std::string("flush chain inet ") + kTable + " in";
  if (!sources.empty()) command += std::string("; add rule inet ") + kTable + " in ip saddr { " + sources + " } drop";
  std::string out;
  if (runIn(node, "nft " + quoted(command), &out) != 0) {
    error_ = "cannot set the cuts of " + name(node) + ": " + out;
    return false;
  }
  return true;
}

bool NetLab::cut(int from, int to, bool bothWays) {
  if (from == to || from < 0 || to < 0 || static_cast<size_t>(from) >= size() || static_cast<size_t>(to) >= size())
    return false;
  cuts_.insert({from, to});
  bool ok = apply(to);
  if (bothWays) {
    cuts_.insert({to, from});
    ok = apply(from) && ok;
  }
  return ok;
}

bool NetLab::isolate(int node, const std::vector<int>& others) {
  bool ok = true;
  for (int o : others)
    if (o != node) ok = cut(node, o, true) && ok;
  return ok;
}

bool NetLab::heal(int from, int to, bool bothWays) {
  if (from < 0 || to < 0 || static_cast<size_t>(from) >= size() || static_cast<size_t>(to) >= size()) return false;
  cuts_.erase({from, to});
  bool ok = apply(to);
  if (bothWays) {
    cuts_.erase({to, from});
    ok = apply(from) && ok;
  }
  return ok;
}

bool NetLab::healAll() {
  cuts_.clear();
  bool ok = true;
  for (size_t i = 0; i < size(); ++i) ok = apply(static_cast<int>(i)) && ok;
  return ok;
}

std::string NetLab::describeCuts() const {
  std::string s;
  for (auto& [from, to] : cuts_) s += (s.empty() ? "" : " ") + name(from) + "->" + name(to);
  return s.empty() ? "(none)" : s;
}

int NetLab::runIn(int node, const std::string& command, std::string* out) const {
  return runCommand("ip netns exec " + netns(node) + " sh -c " + quoted(command), out);
}

}  // namespace groupcoord::testing
