#include "bench/RebalanceScenario.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/Fleet.h"
#include "bench/Loop.h"

namespace groupcoord::bench {
namespace {

using protocol::ErrorCode;
using protocol::TopicPartition;

// Who holds what, as the members were told, and how long each partition
// that changed hands went without anyone.
class Holdings {
 public:
  // Member i was told it holds `now` at t (a registration's answer).
  void told(size_t i, const std::vector<TopicPartition>& now, uint64_t t) {
    if (of_.size() <= i) of_.resize(i + 1);
    auto& before = of_[i];
    const std::set<TopicPartition> after(now.begin(), now.end());
    for (const auto& p : before) {
      if (after.count(p) == 0) release(i, p, t);
    }
    for (const auto& p : after) {
      if (before.count(p) != 0) continue;
      if (auto o = owner_.find(p); o != owner_.end() && o->second != i) {
        if (violations_.size() < 20) {
          violations_.push_back("member " + std::to_string(i) + " given " + p.topic + "/" +
                                std::to_string(p.partition) + " while member " + std::to_string(o->second) +
                                " holds it");
        }
        ++violationCount_;
      }
      owner_[p] = i;
      if (auto r = releasedAt_.find(p); r != releasedAt_.end()) {
        unowned_.push_back(static_cast<double>(t - r->second) / 1e6);
        releasedAt_.erase(r);
      }
    }
    before = after;
  }
  // Member i stops working on everything it holds (a graceful leave).
  void leaves(size_t i, uint64_t t) {
    if (of_.size() <= i) return;
    for (const auto& p : of_[i]) release(i, p, t);
    of_[i].clear();
    live_.erase(i);
  }
  void joins(size_t i) { live_.insert(i); }
  // Partitions nobody held before (a topic grew) count from t.
  void appeared(const std::vector<TopicPartition>& ps, uint64_t t) {
    for (const auto& p : ps) releasedAt_[p] = t;
  }
  // Every partition held once, none waiting, the live members' shares
  // within one of each other.
  bool inStep(size_t partitions) const {
    if (!releasedAt_.empty() || owner_.size() != partitions || live_.empty()) return false;
    size_t lo = SIZE_MAX, hi = 0, sum = 0;
    for (size_t i : live_) {
      const size_t n = i < of_.size() ? of_[i].size() : 0;
      lo = std::min(lo, n);
      hi = std::max(hi, n);
      sum += n;
    }
    return sum == partitions && hi - lo <= 1;
  }
  std::vector<double> takeUnowned() { return std::exchange(unowned_, {}); }
  size_t violationCount() const { return violationCount_; }
  const std::vector<std::string>& violations() const { return violations_; }
  size_t heldBy(size_t i) const { return i < of_.size() ? of_[i].size() : 0; }

 private:
  void release(size_t i, const TopicPartition& p, uint64_t t) {
    if (auto o = owner_.find(p); o != owner_.end() && o->second == i) owner_.erase(o);
    releasedAt_[p] = t;
  }

  std::vector<std::set<TopicPartition>> of_;
  std::set<size_t> live_;
  std::map<TopicPartition, size_t> owner_;
  std::map<TopicPartition, uint64_t> releasedAt_;
  std::vector<double> unowned_;
  std::vector<std::string> violations_;
  size_t violationCount_ = 0;
};

std::string quantiles(const std::vector<double>& ms) {
  if (ms.empty()) return "none moved";
  Histogram h;
  for (double m : ms) h.add(static_cast<uint64_t>(m * 1e6));
  return "p50 " + fmt(h.quantileMs(0.5), 1) + " / p99 " + fmt(h.quantileMs(0.99), 1) + " / max " +
         fmt(h.quantileMs(1.0), 1) + " ms (" + count(static_cast<double>(ms.size())) + " moves)";
}

double heartbeatsAnswered(uint16_t metricsPort) {
  const auto samples = scrapeMetrics(metricsPort);
  const auto it = samples.find("groupcoord_requests_total{api=\"Heartbeat\"}");
  return it == samples.end() ? 0.0 : it->second;
}

}  // namespace

void rebalanceScenario(const Args& args) {
  const uint16_t port = static_cast<uint16_t>(args.list("ports").at(0));
  const size_t n = static_cast<size_t>(args.num("members", 10000));
  const int32_t perMember = static_cast<int32_t>(std::max<long>(1, args.num("partitions-per-member", 2)));
  const uint64_t intervalNs = static_cast<uint64_t>(std::max<long>(10, args.num("interval-ms", 1000))) * kMs;
  const bool held = args.num("held", 1) != 0;
  const int joins = static_cast<int>(std::max<long>(1, args.num("joins", 3)));
  const int restarts = static_cast<int>(std::max<long>(1, args.num("restarts", 5)));
  const int pid = static_cast<int>(args.num("server-pid", 0));
  const auto metricsPort = static_cast<uint16_t>(args.num("metrics-port", 0));
  const uint64_t steadyNs = static_cast<uint64_t>(std::max<long>(1, args.num("steady-s", 20))) * kSec;
  // Settling takes at most two intervals a step; beside a loaded machine
  // allow far more, and fail only past it.
  const uint64_t settleNs = std::max<uint64_t>(120 * kSec, 20 * intervalNs);
  EnsembleProbe zk{static_cast<int>(args.num("zk-base-port", 23800))};
  const std::string topicsPath = args.get("topics-path", "/brokers/topics");
  const std::string label =
      args.get("label", held ? "held (v" + std::to_string(std::clamp<long>(args.num("heartbeat-version", 2), 1, 2)) + ")"
                             : "not held");
  const std::string sc = "13 rebalance";

  const std::string group = "rb-" + stamp() + (held ? "-held" : "-v0");
  const std::string topic = group + "-t";
  int32_t partitions = static_cast<int32_t>(n) * perMember;
  createTopic(zk, topicsPath, topic, partitions);
  Loop loop;
  const int64_t sessionMs = static_cast<int64_t>(3 * intervalNs / kMs);
  if (auto e = createGroup(loop, port, group, sessionMs, {topic}); e != ErrorCode::NONE) {
    fail("CreateGroup: " + std::string(protocol::errorName(e)));
  }

  // The control for the server's CPU: as long as the steady window, before
  // any member (its ticker, its ZooKeeper session, the group loaded).
  double idleCpuPerS = 0;
  if (pid > 0) {
    const double c0 = cpuSeconds(pid);
    const uint64_t t0 = nowNs();
    loop.runFor(steadyNs);
    idleCpuPerS = (cpuSeconds(pid) - c0) / (static_cast<double>(nowNs() - t0) / kSec);
  }

  // One connection a member, for the members to come too: a held heartbeat
  // is answered by any other request on its connection.
  const size_t capacity = n + static_cast<size_t>(joins + restarts) + 1;
  Fleet fleet(loop, {port}, capacity);
  fleet.heldVersion = static_cast<int16_t>(std::clamp<long>(args.num("heartbeat-version", 2), 1, 2));
  Holdings holdings;
  // A member that has left reads nothing more (an answer to a registration
  // sent before it left is not acted on, as the clients do after close).
  fleet.onRegistered = [&](size_t i, int64_t) {
    if (!fleet.at(i).crashed) holdings.told(i, fleet.at(i).owned, nowNs());
  };
  for (size_t i = 0; i < n; ++i) {
    fleet.add(group, port);
    holdings.joins(i);
  }
  const std::string what = label + ", " + count(static_cast<double>(n)) + " members, " +
                           count(static_cast<double>(intervalNs / kMs)) + " ms interval";
  log("%s: forming", what.c_str());
  const uint64_t f0 = nowNs();
  if (!fleet.joinAll(600 * kSec)) fail("members could not join");
  if (held) {
    fleet.startHeldBeating(intervalNs);
  } else {
    fleet.startBeating(intervalNs);
  }
  auto settle = [&](const char* phase) {
    const uint64_t t0 = nowNs();
    if (!loop.runUntil([&] { return holdings.inStep(static_cast<size_t>(partitions)); }, settleNs)) {
      fail(std::string(phase) + ": the group was not in step after " + fmt(static_cast<double>(settleNs) / kSec) +
           " s (" + what + ")");
    }
    return static_cast<double>(nowNs() - t0) / kMs;
  };
  log("%s: formed in %.1f s", what.c_str(), (settle("forming") + static_cast<double>(nowNs() - f0) / kMs) / 1e3);
  // The first beats are spread over one interval: every member has one out
  // (held, or on its schedule) before the first change.
  loop.runFor(intervalNs + 100 * kMs);
  settle("forming");
  holdings.takeUnowned();

  // A member joins: registered, then beating as the others do (its first
  // heartbeat at once, acknowledging the registration).
  auto join = [&] {
    const size_t i = fleet.add(group, port);
    holdings.joins(i);
    Member& m = fleet.at(i);
    m.busy = true;
    bool ok = false;
    fleet.registerMember(i, [&](bool r) {
      fleet.at(i).busy = false;
      ok = r;
    });
    loop.runUntil([&] { return !fleet.at(i).busy; }, 60 * kSec);
    if (!ok) fail("a joining member could not register");
    if (held) {
      fleet.joinHeldBeating(i);
    } else {
      fleet.at(i).busy = true;
      fleet.heartbeat(i, [&fleet, i](ErrorCode, uint64_t) { fleet.at(i).busy = false; });
      fleet.joinSchedule(i);
    }
    return i;
  };
  // A graceful leave: the member stops working on what it holds, then
  // sends LeaveGroup.
  auto leave = [&](size_t i) {
    Member& m = fleet.at(i);
    m.crashed = true;  // no more beats
    holdings.leaves(i, nowNs());
    bool answered = false, left = false;
    loop.send(fleet.connFor(i), protocol::LeaveGroupRequest{group, m.id}, [&](const protocol::Response* r, uint64_t) {
      answered = true;
      const auto* lr = r ? std::get_if<protocol::LeaveGroupResponse>(r) : nullptr;
      left = lr != nullptr && lr->error == ErrorCode::NONE;
    });
    loop.runUntil([&] { return answered; }, 60 * kSec);
    if (!left) fail("LeaveGroup was not answered NONE");
  };

  std::map<std::string, std::vector<double>> phases;
  std::map<std::string, std::vector<double>> settles;
  for (int k = 0; k < joins; ++k) {
    const size_t i = join();
    settles["join"].push_back(settle("join"));
    auto u = holdings.takeUnowned();
    phases["join"].insert(phases["join"].end(), u.begin(), u.end());
    leave(i);
    settles["leave"].push_back(settle("leave"));
    u = holdings.takeUnowned();
    phases["leave"].insert(phases["leave"].end(), u.begin(), u.end());
  }
  {
    const int32_t grown = partitions + std::max<int32_t>(1, partitions / 4);
    std::vector<TopicPartition> added;
    for (int32_t p = partitions; p < grown; ++p) added.push_back({topic, p});
    holdings.appeared(added, nowNs());
    growTopic(zk, topicsPath + "/" + topic, grown);
    partitions = grown;
    settles["grow"].push_back(settle("grow"));
    phases["grow"] = holdings.takeUnowned();
  }
  for (int k = 0; k < restarts; ++k) {
    leave(static_cast<size_t>(k));
    join();
    settles["restart"].push_back(settle("restart"));
    auto u = holdings.takeUnowned();
    phases["restart"].insert(phases["restart"].end(), u.begin(), u.end());
  }
  for (const char* phase : {"join", "leave", "grow", "restart"}) {
    auto& s = settles[phase];
    std::sort(s.begin(), s.end());
    const std::string line = quantiles(phases[phase]);
    log("%s: %s: unowned %s; in step after %s ms (worst)", what.c_str(), phase, line.c_str(),
        fmt(s.empty() ? 0 : s.back(), 0).c_str());
    row(sc, label + " | " + count(static_cast<double>(n)) + " | " + count(static_cast<double>(intervalNs / kMs)) +
                " | " + phase,
        line);
  }

  // Steady: every member in step, beating; the server's CPU and the
  // heartbeats it answered per member per second.
  if (pid > 0) {
    const double hb0 = metricsPort ? heartbeatsAnswered(metricsPort) : 0;
    const double c0 = cpuSeconds(pid);
    const uint64_t t0 = nowNs();
    loop.runFor(steadyNs);
    const double secs = static_cast<double>(nowNs() - t0) / kSec;
    const double busy = (cpuSeconds(pid) - c0) / secs;
    const double beats = metricsPort ? (heartbeatsAnswered(metricsPort) - hb0) / secs : 0;
    const double live = static_cast<double>(n);
    const double perMemberUs = (busy - idleCpuPerS) / live * 1e6;
    log("%s: steady %.0f s: server CPU %.2f ms/s with the members, %.2f ms/s before them: %.2f us per member per "
        "second; %.3f heartbeats per member per second",
        what.c_str(), secs, busy * 1e3, idleCpuPerS * 1e3, perMemberUs, beats / live);
    row(sc, label + " | " + count(live) + " | " + count(static_cast<double>(intervalNs / kMs)) + " | steady",
        "server CPU " + fmt(perMemberUs, 2) + " us per member per s (" + fmt(busy * 1e3, 1) + " ms/s less " +
            fmt(idleCpuPerS * 1e3, 1) + " ms/s idle), " + fmt(beats / live, 3) + " heartbeats per member per s");
  }
  fleet.stopBeating();
  if (holdings.violationCount() != 0) {
    for (const auto& v : holdings.violations()) log("OWNERSHIP VIOLATION: %s", v.c_str());
    fail(std::to_string(holdings.violationCount()) + " partitions given while another member held them");
  }
  log("%s: no partition held twice", what.c_str());
}

}  // namespace groupcoord::bench
