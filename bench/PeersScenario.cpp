#include "bench/PeersScenario.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bench/Ensemble.h"
#include "bench/Loop.h"
#include "bench/Peers.h"

namespace groupcoord::bench {
namespace {

// A process of the coordination side: its name in the figures and its pid.
struct Proc {
  std::string name;
  int pid = 0;
};

// --pids NAME:PID,...: the coordination side's processes.
std::vector<Proc> procsOf(const std::string& text) {
  std::vector<Proc> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) fail("--pids takes NAME:PID,... (" + item + ")");
    out.push_back({item.substr(0, colon), std::stoi(item.substr(colon + 1))});
  }
  return out;
}

std::map<std::string, double> cpuByName(const std::vector<Proc>& procs) {
  std::map<std::string, double> out;
  for (const auto& p : procs) out[p.name] += std::max(0.0, cpuSeconds(p.pid));
  return out;
}

std::map<std::string, double> rssByName(const std::vector<Proc>& procs) {
  std::map<std::string, double> out;
  for (const auto& p : procs) out[p.name] += static_cast<double>(std::max<int64_t>(0, rssKiB(p.pid)));
  return out;
}

// etcd's raft index, the highest its members report through the JSON
// gateway (POST /v3/maintenance/status); -1 when none answers.
int64_t etcdRaftIndex(const std::vector<long>& ports) {
  int64_t best = -1;
  for (long port : ports) {
    const std::string reply = fourLetter(static_cast<uint16_t>(port),
                                         "POST /v3/maintenance/status HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                         "Content-Type: application/json\r\nContent-Length: 2\r\n"
                                         "Connection: close\r\n\r\n{}");
    for (const char* key : {"\"raftIndex\"", "\"raft_index\""}) {
      auto at = reply.find(key);
      if (at == std::string::npos) continue;
      at = reply.find_first_of("0123456789", at + std::strlen(key));
      if (at != std::string::npos) best = std::max<int64_t>(best, std::stoll(reply.substr(at)));
      break;
    }
  }
  return best;
}

enum class Kind { Join, Leave, Crash };

// Who sees whom, and how long each change took to be seen by every member
// of its group that was there when it happened.
class Tracker {
 public:
  struct Change {
    uint64_t t0 = 0;
    bool present = true;
    Kind kind = Kind::Join;
    std::unordered_set<size_t> waiting;  // members that have not seen it yet
  };

  void grow(size_t id) {
    if (views_.size() <= id) {
      views_.resize(id + 1);
      groupOf_.resize(id + 1, SIZE_MAX);
      live_.resize(id + 1, false);
    }
  }

  void setGroup(size_t id, size_t group) {
    grow(id);
    groupOf_[id] = group;
    if (members_.size() <= group) members_.resize(group + 1);
  }
  size_t groupOf(size_t id) const { return groupOf_[id]; }
  bool live(size_t id) const { return id < live_.size() && live_[id]; }
  bool changing(size_t id) const { return changes_.count(id) != 0; }
  const std::unordered_set<size_t>& membersOf(size_t group) const { return members_[group]; }

  // The member is in: it now counts as an observer of later changes.
  void joined(size_t id) {
    grow(id);
    live_[id] = true;
    members_[groupOf_[id]].insert(id);
  }

  // The member is going (a leave or a crash): it observes nothing more.
  void departing(size_t id) {
    if (!live(id)) return;
    live_[id] = false;
    members_[groupOf_[id]].erase(id);
    for (auto it = changes_.begin(); it != changes_.end();) {
      it->second.waiting.erase(id);
      if (it->second.waiting.empty()) {
        complete(it->second);
        it = changes_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // A change of `subject` starts now: every live member of its group that
  // does not yet see it so must.
  void start(size_t subject, Kind kind) {
    grow(subject);
    Change c;
    c.t0 = nowNs();
    c.kind = kind;
    c.present = kind == Kind::Join;
    for (size_t o : members_[groupOf_[subject]]) {
      if (o != subject && (views_[o].count(subject) != 0) != c.present) c.waiting.insert(o);
    }
    ++started_[static_cast<int>(kind)];
    if (c.waiting.empty()) return;
    changes_[subject] = std::move(c);
  }

  void onSeen(size_t observer, size_t subject, bool present) {
    grow(std::max(observer, subject));
    auto& view = views_[observer];
    if (present ? !view.insert(subject).second : view.erase(subject) == 0) return;
    auto it = changes_.find(subject);
    if (it == changes_.end() || it->second.present != present) return;
    it->second.waiting.erase(observer);
    if (it->second.waiting.empty()) {
      complete(it->second);
      changes_.erase(it);
    }
  }

  // Every live member sees exactly the live members of its group.
  bool settled() const {
    for (size_t id = 0; id < live_.size(); ++id) {
      if (!live_[id]) continue;
      const auto& group = members_[groupOf_[id]];
      const auto& view = views_[id];
      if (view.size() != group.size()) return false;
      for (size_t o : group) {
        if (!view.count(o)) return false;
      }
    }
    return true;
  }

  size_t pending(Kind kind) const {
    size_t n = 0;
    for (const auto& [_, c] : changes_) n += c.kind == kind;
    return n;
  }
  // Drops the changes still pending (they count as not seen).
  void abandon() { changes_.clear(); }

  const Histogram& seenAfter(Kind kind) const { return hist_[static_cast<int>(kind)]; }
  uint64_t started(Kind kind) const { return started_[static_cast<int>(kind)]; }

 private:
  void complete(const Change& c) { hist_[static_cast<int>(c.kind)].add(nowNs() - c.t0); }

  std::vector<std::unordered_set<size_t>> views_;  // member -> the members it sees
  std::vector<size_t> groupOf_;
  std::vector<bool> live_;
  std::vector<std::unordered_set<size_t>> members_;  // group -> its live members
  std::unordered_map<size_t, Change> changes_;       // subject -> its change in progress
  Histogram hist_[3];
  uint64_t started_[3] = {0, 0, 0};
};

std::string num(double v, int decimals = 3) {
  if (!std::isfinite(v)) return "null";
  return fmt(v, decimals);
}

std::string object(const std::map<std::string, double>& m, int decimals = 3) {
  std::string out = "{";
  for (const auto& [k, v] : m) out += (out.size() > 1 ? "," : "") + ("\"" + k + "\":" + num(v, decimals));
  return out + "}";
}

std::string quantilesJson(const Histogram& h, uint64_t started, size_t unseen) {
  // No change seen: no figure (not 0 ms).
  auto q = [&h](double at) { return h.count() == 0 ? std::string("null") : num(h.quantileMs(at), 1); };
  return "{\"p50_ms\":" + q(0.5) + ",\"p99_ms\":" + q(0.99) + ",\"max_ms\":" + q(1.0) + ",\"seen\":" + std::to_string(h.count()) +
         ",\"started\":" + std::to_string(started) + ",\"unseen\":" + std::to_string(unseen) + "}";
}

}  // namespace

void peersScenario(const Args& args) {
  const std::string system = args.get("system");
  const size_t n = static_cast<size_t>(args.num("members", 1000));
  const size_t groupSize = static_cast<size_t>(args.num("group-size", 100));
  const int ttl = static_cast<int>(args.num("ttl-seconds", 10));
  const double steadySeconds = static_cast<double>(args.num("steady-seconds", 60));
  const double churnSeconds = static_cast<double>(args.num("churn-seconds", 60));
  const double period = static_cast<double>(args.num("churn-period-seconds", 10));
  const double churnPercent = static_cast<double>(args.num("churn-percent", 1));
  const double crashPercent = static_cast<double>(args.num("crash-percent", 1));
  const size_t parallel = static_cast<size_t>(args.num("join-parallel", 200));
  const std::vector<Proc> procs = procsOf(args.get("pids"));
  const EnsembleProbe zk{static_cast<int>(args.num("zk-base-port", 23800))};
  const std::vector<long> etcdPorts = args.list("etcd-ports");
  const std::string round = args.get("round", "1");

  Loop loop;
  std::unique_ptr<PeerSystem> peers;
  std::function<int64_t()> logIndex;
  if (system == "groupcoord") {
    peers = makeGroupcoordSystem(loop, static_cast<uint16_t>(args.list("ports").at(0)), int64_t{ttl} * 1000);
    logIndex = [&zk] { return zk.zxid(); };
  } else if (system == "zookeeper") {
    std::vector<uint16_t> ports;
    for (int k = 1; k <= 3; ++k) ports.push_back(static_cast<uint16_t>(zk.basePort + k));
    peers = makeZookeeperSystem(loop, ports, int64_t{ttl} * 1000);
    logIndex = [&zk] { return zk.zxid(); };
  } else if (system == "etcd") {
    if (etcdPorts.empty()) fail("--system=etcd needs --etcd-ports P1,P2,P3");
    std::vector<uint16_t> ports;
    for (long p : etcdPorts) ports.push_back(static_cast<uint16_t>(p));
    peers = makeEtcdSystem(loop, ports, ttl);
    logIndex = [&etcdPorts] { return etcdRaftIndex(etcdPorts); };
  } else {
    fail("--system is groupcoord, zookeeper or etcd (" + system + ")");
  }
  if (procs.empty()) fail("--pids NAME:PID,... names the coordination side's processes");

  Tracker tracker;
  peers->seen = [&tracker](size_t o, size_t s, bool present) { tracker.onSeen(o, s, present); };

  const size_t groups = (n + groupSize - 1) / groupSize;
  const std::string prefix = "peers-" + stamp();
  std::vector<std::string> names;
  for (size_t g = 0; g < groups; ++g) names.push_back(prefix + "-g" + std::to_string(g));
  log("peers: %s, %zu members in %zu groups of %zu, TTL %d s, round %s", system.c_str(), n, groups, groupSize, ttl,
      round.c_str());
  const auto rss0 = rssByName(procs);
  if (!peers->prepare(names)) fail("the groups could not be prepared");

  // The generator's own lateness: a 10 ms tick, measured against when it
  // was due, from the start of the steady phase to the end of the crash.
  Histogram lateness;
  bool measuringLateness = false;
  std::function<void(uint64_t)> tick = [&](uint64_t due) {
    const uint64_t now = nowNs();
    if (measuringLateness) lateness.add(now > due ? now - due : 0);
    loop.after(due + 10 * kMs > now ? due + 10 * kMs - now : 0, [&, due] { tick(due + 10 * kMs); });
  };

  // Join: all members, at most `parallel` at a time.
  size_t nextId = 0, inFlight = 0, joinedCount = 0, joinFailures = 0;
  std::function<void()> pump;
  auto joinOne = [&](size_t id, size_t group, std::function<void(bool)> then) {
    tracker.setGroup(id, group);
    peers->join(id, names[group], [&, id, then = std::move(then)](bool ok) {
      if (ok) tracker.joined(id);
      then(ok);
    });
  };
  pump = [&] {
    while (inFlight < parallel && nextId < n) {
      const size_t id = nextId++;
      ++inFlight;
      joinOne(id, id / groupSize, [&](bool ok) {
        --inFlight;
        ok ? ++joinedCount : ++joinFailures;
        pump();
      });
    }
  };
  uint64_t t0 = nowNs();
  pump();
  if (!loop.runUntil([&] { return joinedCount + joinFailures == n; }, 300 * kSec) || joinFailures != 0) {
    fail("joined " + std::to_string(joinedCount) + " of " + std::to_string(n) + " (" + std::to_string(joinFailures) +
         " failed)");
  }
  const double joinSeconds = static_cast<double>(nowNs() - t0) / kSec;
  log("peers: %zu joined in %.1f s", n, joinSeconds);

  t0 = nowNs();
  if (!loop.runUntilEvery(std::max<uint64_t>(100 * kMs, n * 20'000), [&] { return tracker.settled(); }, 180 * kSec)) {
    fail("members did not all see their whole group within 180 s");
  }
  const double settleSeconds = static_cast<double>(nowNs() - t0) / kSec;
  log("peers: every member sees its group after %.1f s more; 2 s more, then steady", settleSeconds);
  loop.runFor(2 * kSec);

  // Steady.
  loop.after(0, [&] { tick(nowNs()); });
  measuringLateness = true;
  const auto cpuA = cpuByName(procs);
  const uint64_t reqA = peers->requestsSent();
  const int64_t idxA = logIndex();
  t0 = nowNs();
  loop.runFor(static_cast<uint64_t>(steadySeconds * kSec));
  const double steadyElapsed = static_cast<double>(nowNs() - t0) / kSec;
  const auto cpuB = cpuByName(procs);
  const uint64_t reqB = peers->requestsSent();
  const int64_t idxB = logIndex();
  const auto rss1 = rssByName(procs);
  const double steadyWritesPerSecond = static_cast<double>(idxB - idxA) / steadyElapsed;
  std::map<std::string, double> cpuPerMemberHour, rssPerMember, rssMiB;
  double cpuTotal = 0, rssGrowthTotal = 0, rssTotal = 0;
  for (const auto& [name, after] : cpuB) {
    const double used = after - cpuA.at(name);
    cpuPerMemberHour[name] = used / (static_cast<double>(n) * steadyElapsed / 3600.0);
    cpuTotal += used;
  }
  cpuPerMemberHour["total"] = cpuTotal / (static_cast<double>(n) * steadyElapsed / 3600.0);
  for (const auto& [name, kib] : rss1) {
    rssPerMember[name] = (kib - rss0.at(name)) / static_cast<double>(n);
    rssMiB[name] = kib / 1024.0;
    rssGrowthTotal += kib - rss0.at(name);
    rssTotal += kib;
  }
  rssPerMember["total"] = rssGrowthTotal / static_cast<double>(n);
  rssMiB["total"] = rssTotal / 1024.0;
  const double requestsPerMemberSecond = static_cast<double>(reqB - reqA) / (static_cast<double>(n) * steadyElapsed);
  log("peers: steady %.0f s: CPU %.2f s (%.3f s per member-hour), %.3f requests per member per second, %.2f log "
      "writes/s, RSS %.0f MiB",
      steadyElapsed, cpuTotal, cpuPerMemberHour["total"], requestsPerMemberSecond, steadyWritesPerSecond,
      rssMiB["total"]);

  // Churn: in each period, k members leave and k new ones join, each pair
  // in one group, at random moments.
  std::mt19937_64 rng(20261207);
  const size_t k = std::max<size_t>(1, static_cast<size_t>(std::llround(static_cast<double>(n) * churnPercent / 100)));
  const size_t periods = static_cast<size_t>(std::max(1.0, std::floor(churnSeconds / period)));
  const uint64_t periodNs = static_cast<uint64_t>(period * kSec);
  size_t churnJoinFailures = 0;
  // A random live member of `group` with no change of its own in progress.
  auto pickIn = [&](size_t group) -> size_t {
    const auto& members = tracker.membersOf(group);
    std::vector<size_t> candidates;
    for (size_t id : members) {
      if (!tracker.changing(id)) candidates.push_back(id);
    }
    if (candidates.empty()) return SIZE_MAX;
    std::sort(candidates.begin(), candidates.end());
    return candidates[rng() % candidates.size()];
  };
  const auto cpuC = cpuByName(procs);
  const int64_t idxC = logIndex();
  t0 = nowNs();
  for (size_t p = 0; p < periods; ++p) {
    for (size_t j = 0; j < k; ++j) {
      const size_t group = rng() % groups;
      loop.after(p * periodNs + rng() % periodNs, [&, group] {
        const size_t id = pickIn(group);
        if (id == SIZE_MAX) return;
        tracker.departing(id);
        tracker.start(id, Kind::Leave);
        peers->leave(id);
      });
      loop.after(p * periodNs + rng() % periodNs, [&, group] {
        const size_t id = nextId++;
        tracker.setGroup(id, group);
        tracker.start(id, Kind::Join);
        joinOne(id, group, [&](bool ok) { churnJoinFailures += !ok; });
      });
    }
  }
  loop.runFor(periods * periodNs);
  const double churnElapsed = static_cast<double>(nowNs() - t0) / kSec;
  const auto cpuD = cpuByName(procs);
  // Changes still being seen: wait for them (up to the TTL and 10 s more).
  loop.runUntilEvery(10 * kMs, [&] { return tracker.pending(Kind::Join) + tracker.pending(Kind::Leave) == 0; },
                     static_cast<uint64_t>(ttl + 10) * kSec);
  const size_t unseenJoins = tracker.pending(Kind::Join), unseenLeaves = tracker.pending(Kind::Leave);
  tracker.abandon();
  const double churnAll = static_cast<double>(nowNs() - t0) / kSec;
  const int64_t idxD = logIndex();
  const double changes = static_cast<double>(tracker.started(Kind::Join) + tracker.started(Kind::Leave));
  const double churnWrites = static_cast<double>(idxD - idxC) - steadyWritesPerSecond * churnAll;
  double churnCpu = 0;
  for (const auto& [name, after] : cpuD) churnCpu += after - cpuC.at(name);
  log("peers: churn %.0f s: %.0f changes (%zu join(s) failed), join seen p50 %.1f / p99 %.1f ms, leave seen p50 %.1f / "
      "p99 %.1f ms; %.1f log writes per change",
      churnElapsed, changes, churnJoinFailures, tracker.seenAfter(Kind::Join).quantileMs(0.5),
      tracker.seenAfter(Kind::Join).quantileMs(0.99), tracker.seenAfter(Kind::Leave).quantileMs(0.5),
      tracker.seenAfter(Kind::Leave).quantileMs(0.99), changes > 0 ? churnWrites / changes : 0.0);

  // Crash: members of no change in progress vanish at once.
  const size_t crashes = std::max<size_t>(1, static_cast<size_t>(std::llround(static_cast<double>(n) * crashPercent / 100)));
  const int64_t idxE = logIndex();
  t0 = nowNs();
  for (size_t c = 0; c < crashes; ++c) {
    const size_t id = pickIn(rng() % groups);
    if (id == SIZE_MAX) continue;
    tracker.departing(id);
    tracker.start(id, Kind::Crash);
    peers->crash(id);
  }
  loop.runUntilEvery(10 * kMs, [&] { return tracker.pending(Kind::Crash) == 0; }, static_cast<uint64_t>(3 * ttl + 10) * kSec);
  const size_t unseenCrashes = tracker.pending(Kind::Crash);
  tracker.abandon();
  const double crashAll = static_cast<double>(nowNs() - t0) / kSec;
  const int64_t idxF = logIndex();
  const double crashWrites = static_cast<double>(idxF - idxE) - steadyWritesPerSecond * crashAll;
  measuringLateness = false;
  log("peers: crash of %zu: seen gone p50 %.1f / p99 %.1f ms (TTL %d s), %zu not seen", crashes,
      tracker.seenAfter(Kind::Crash).quantileMs(0.5), tracker.seenAfter(Kind::Crash).quantileMs(0.99), ttl,
      unseenCrashes);
  log("peers: generator lateness p50 %.2f / p99 %.2f / max %.2f ms", lateness.quantileMs(0.5), lateness.quantileMs(0.99),
      lateness.quantileMs(1.0));

  // Everyone left says goodbye, so that the next run starts clean.
  for (size_t id = 0; id < nextId; ++id) {
    if (tracker.live(id)) {
      tracker.departing(id);
      peers->leave(id);
    }
  }
  loop.runFor(3 * kSec);
  peers.reset();

  std::string out = "peers-result {";
  out += "\"system\":\"" + system + "\",\"members\":" + std::to_string(n) + ",\"group_size\":" +
         std::to_string(groupSize) + ",\"ttl_s\":" + std::to_string(ttl) + ",\"round\":\"" + round + "\"";
  out += ",\"join_s\":" + num(joinSeconds, 2) + ",\"settle_s\":" + num(settleSeconds, 2);
  out += ",\"steady_s\":" + num(steadyElapsed, 2);
  out += ",\"cpu_s_per_member_hour\":" + object(cpuPerMemberHour, 4);
  out += ",\"rss_kib_per_member\":" + object(rssPerMember, 2);
  out += ",\"rss_mib\":" + object(rssMiB, 1);
  out += ",\"requests_per_member_s\":" + num(requestsPerMemberSecond, 4);
  out += ",\"churn_s\":" + num(churnElapsed, 2) + ",\"churn_cpu_s\":" + num(churnCpu, 2);
  out += ",\"join_seen\":" + quantilesJson(tracker.seenAfter(Kind::Join), tracker.started(Kind::Join), unseenJoins);
  out += ",\"leave_seen\":" + quantilesJson(tracker.seenAfter(Kind::Leave), tracker.started(Kind::Leave), unseenLeaves);
  out += ",\"crash_seen\":" + quantilesJson(tracker.seenAfter(Kind::Crash), tracker.started(Kind::Crash), unseenCrashes);
  out += ",\"log_writes\":{\"steady_per_s\":" + num(steadyWritesPerSecond, 3) + ",\"per_change\":" +
         num(changes > 0 ? churnWrites / changes : NAN, 2) + ",\"per_crash\":" +
         num(crashes > 0 ? crashWrites / static_cast<double>(crashes) : NAN, 2) + "}";
  out += ",\"churn_join_failures\":" + std::to_string(churnJoinFailures);
  out += ",\"lateness_ms\":{\"p50\":" + num(lateness.quantileMs(0.5), 2) + ",\"p99\":" +
         num(lateness.quantileMs(0.99), 2) + ",\"max\":" + num(lateness.quantileMs(1.0), 2) + "}";
  out += "}";
  std::printf("%s\n", out.c_str());
  std::fflush(stdout);
}

}  // namespace groupcoord::bench
