// groupcoord-etcd-smoke: the `peers` scenario's etcd members (EtcdSystem)
// against a live cluster started by scripts/etcd-cluster.sh. N members join
// in groups, each until it sees its whole group; they stay a while; then one
// member leaves and one crashes, and the others' watches time how long each
// takes to reach them (a leave at once, a crash about the lease's TTL). The
// leader's raft index is read before and after each step: entries in the
// replicated log per join and per change. docs/benchmarks.md describes the
// workload.
//
//   groupcoord-etcd-smoke [--members N] [--group-size G] [--ttl S]
//                         [--join-rate R] [--steady S] [--base-port P]
//                         [--cluster-script PATH] [--ports P1,P2,P3]

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/Ensemble.h"
#include "bench/Loop.h"
#include "bench/Peers.h"

namespace {

using namespace groupcoord::bench;

constexpr uint64_t kSec = 1'000'000'000;

std::string option(int argc, char** argv, const std::string& name, const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (prefix.compare(0, prefix.size(), argv[i], prefix.size()) == 0) return argv[i] + prefix.size();
    if (std::strncmp(argv[i], "--", 2) == 0 && name == argv[i] + 2 && i + 1 < argc) return argv[i + 1];
  }
  return fallback;
}

// The output of a command, whitespace trimmed at the end.
std::string run(const std::string& command) {
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf(
          "groupcoord-etcd-smoke [--members N] [--group-size G] [--ttl S] [--join-rate R] [--steady S]\n"
          "                      [--base-port P] [--cluster-script PATH] [--ports P1,P2,P3]\n"
          "  etcd members (a lease, a key, a watch on the group's prefix each) join a cluster started by\n"
          "  scripts/etcd-cluster.sh --base-port P (default 28300); one leaves and one crashes; prints how long\n"
          "  the others took to see each, and the raft entries each step wrote. --ports: the members connect\n"
          "  there instead of to the cluster's client ports (through a proxy, say).\n");
      return 0;
    }
  }
  const size_t members = std::strtoul(option(argc, argv, "members", "100").c_str(), nullptr, 10);
  const size_t groupSize = std::max<size_t>(3, std::strtoul(option(argc, argv, "group-size", "100").c_str(), nullptr, 10));
  const int ttl = std::atoi(option(argc, argv, "ttl", "10").c_str());
  const double joinRate = std::atof(option(argc, argv, "join-rate", "1000").c_str());
  const double steady = std::atof(option(argc, argv, "steady", "10").c_str());
  const int basePort = std::atoi(option(argc, argv, "base-port", "28300").c_str());
  const std::string script = option(argc, argv, "cluster-script", "scripts/etcd-cluster.sh");
  const std::string cluster = script + " --base-port " + std::to_string(basePort);
  if (members < 3) {
    std::fprintf(stderr, "groupcoord-etcd-smoke: --members must be at least 3\n");
    return 2;
  }

  std::vector<int> pids;
  for (const std::string& line : {run(cluster + " pids")}) {
    size_t pos = 0;
    while (pos < line.size()) {
      size_t end = line.find('\n', pos);
      if (end == std::string::npos) end = line.size();
      pids.push_back(std::atoi(line.substr(pos, end - pos).c_str()));
      pos = end + 1;
    }
  }
  if (pids.size() != 3) {
    std::fprintf(stderr, "groupcoord-etcd-smoke: no cluster (%s pids gave %zu); start it with %s start\n",
                 cluster.c_str(), pids.size(), cluster.c_str());
    return 1;
  }
  const auto raftIndex = [&] { return std::atoll(run(cluster + " raft-index").c_str()); };
  const auto etcdCpu = [&] {
    double s = 0;
    for (int pid : pids) s += cpuSeconds(pid);
    return s;
  };
  const auto etcdRssMiB = [&] {
    double kib = 0;
    for (int pid : pids) kib += static_cast<double>(rssKiB(pid));
    return kib / 1024;
  };

  const auto groupOf = [&](size_t i) { return i / groupSize; };
  const auto sizeOfGroup = [&](size_t g) { return std::min(groupSize, members - g * groupSize); };

  Loop loop;
  std::vector<uint16_t> ports;
  const std::string portList = option(argc, argv, "ports", "");
  for (size_t pos = 0; pos < portList.size();) {
    size_t end = portList.find(',', pos);
    if (end == std::string::npos) end = portList.size();
    ports.push_back(static_cast<uint16_t>(std::atoi(portList.substr(pos, end - pos).c_str())));
    pos = end + 1;
  }
  if (ports.empty()) {
    for (int n = 1; n <= 3; ++n) ports.push_back(static_cast<uint16_t>(basePort + n));
  }
  auto system = makeEtcdSystem(loop, ports, ttl);
  std::vector<size_t> sees(members, 0);
  size_t complete = 0;  // members that see their whole group
  size_t joined = 0, failedJoins = 0;
  size_t leaver = members, crasher = members;
  uint64_t leaveAt = 0, crashAt = 0;
  Histogram leaveSeen, crashSeen;
  uint64_t bogus = 0;  // reports that make no sense: another group's member, a count below zero
  system->seen = [&](size_t observer, size_t subject, bool present) {
    if (observer >= members || subject >= members || groupOf(observer) != groupOf(subject)) {
      ++bogus;
      return;
    }
    const size_t whole = sizeOfGroup(groupOf(observer));
    if (present) {
      if (++sees[observer] == whole) ++complete;
      return;
    }
    if (sees[observer] == 0) {
      ++bogus;
      return;
    }
    if (sees[observer]-- == whole) --complete;
    if (subject == leaver) leaveSeen.add(nowNs() - leaveAt);
    if (subject == crasher) crashSeen.add(nowNs() - crashAt);
  };

  const int64_t raftStart = raftIndex();
  const double cpuStart = etcdCpu();
  const uint64_t start = nowNs();
  for (size_t i = 0; i < members; ++i) {
    loop.after(static_cast<uint64_t>(static_cast<double>(i) * 1e9 / joinRate), [&, i] {
      system->join(i, "smoke" + std::to_string(::getpid()) + "-g" + std::to_string(groupOf(i)), [&](bool ok) { ok ? ++joined : ++failedJoins; });
    });
  }
  const double joinBudget = 60 + static_cast<double>(members) / joinRate;
  loop.runUntilEvery(
      50'000'000, [&] { return joined + failedJoins == members && complete == joined; },
      static_cast<uint64_t>(joinBudget * 1e9));
  const double joinSecs = static_cast<double>(nowNs() - start) / 1e9;
  const bool joinedWhole = failedJoins == 0 && complete == joined;
  const int64_t raftJoined = raftIndex();
  std::printf("join: %zu members in groups of %zu at %.0f/s: %zu joined, %zu failed, %zu see their whole group, "
              "after %.2f s\n",
              members, groupSize, joinRate, joined, failedJoins, complete, joinSecs);
  std::printf("join: raft index %lld -> %lld: %.2f entries per member; etcd CPU %.2f s; requests sent %llu\n",
              static_cast<long long>(raftStart), static_cast<long long>(raftJoined),
              static_cast<double>(raftJoined - raftStart) / static_cast<double>(members), etcdCpu() - cpuStart,
              static_cast<unsigned long long>(system->requestsSent()));

  // Steady: keep-alives only.
  const double cpuSteady = etcdCpu();
  const uint64_t sentSteady = system->requestsSent();
  const int64_t raftSteady = raftIndex();
  loop.runFor(static_cast<uint64_t>(steady * 1e9));
  const double steadyCpu = etcdCpu() - cpuSteady;
  const double sent = static_cast<double>(system->requestsSent() - sentSteady);
  std::printf("steady %.0f s: etcd CPU %.2f s (%.3f s per member-hour), RSS %.0f MiB (%.1f KiB per member), "
              "%.3f requests per member per second, raft entries %lld, connections lost %llu\n",
              steady, steadyCpu, steadyCpu / static_cast<double>(joined) * 3600 / steady, etcdRssMiB(),
              etcdRssMiB() * 1024 / static_cast<double>(joined), sent / static_cast<double>(joined) / steady,
              static_cast<long long>(raftIndex() - raftSteady), static_cast<unsigned long long>(loop.connectionsLost()));

  // One leave, then one crash, both in group 0.
  const size_t whole0 = sizeOfGroup(0);
  const int64_t raftBeforeLeave = raftIndex();
  leaver = 1;
  leaveAt = nowNs();
  system->leave(leaver);
  loop.runUntilEvery(10'000'000, [&] { return leaveSeen.count() >= whole0 - 1; }, 30 * kSec);
  const int64_t raftAfterLeave = raftIndex();
  std::printf("leave: seen by %zu of %zu others; p50 %.1f ms, p99 %.1f ms, max %.1f ms; raft entries %lld\n",
              leaveSeen.count(), whole0 - 1, leaveSeen.quantileMs(0.5), leaveSeen.quantileMs(0.99),
              leaveSeen.quantileMs(1), static_cast<long long>(raftAfterLeave - raftBeforeLeave));

  crasher = 2;
  crashAt = nowNs();
  system->crash(crasher);
  loop.runUntilEvery(10'000'000, [&] { return crashSeen.count() >= whole0 - 2; },
                     static_cast<uint64_t>(3 * ttl + 10) * kSec);
  const int64_t raftAfterCrash = raftIndex();
  std::printf("crash: seen by %zu of %zu others; p50 %.1f ms, p99 %.1f ms, max %.1f ms (TTL %d s); raft entries %lld\n",
              crashSeen.count(), whole0 - 2, crashSeen.quantileMs(0.5), crashSeen.quantileMs(0.99),
              crashSeen.quantileMs(1), ttl, static_cast<long long>(raftAfterCrash - raftAfterLeave));
  std::printf("total: requests sent %llu, connections lost %llu, failed connects %llu, nonsense reports %llu\n",
              static_cast<unsigned long long>(system->requestsSent()),
              static_cast<unsigned long long>(loop.connectionsLost()),
              static_cast<unsigned long long>(loop.failedConnects()), static_cast<unsigned long long>(bogus));
  const bool ok = joinedWhole && leaveSeen.count() == whole0 - 1 &&
                  crashSeen.count() == whole0 - 2 && bogus == 0;
  system.reset();
  return ok ? 0 : 1;
}
