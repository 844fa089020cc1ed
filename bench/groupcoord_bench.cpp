// groupcoord-bench: the figures of docs/design.md, measured against running
// groupcoordd servers and a live three-node ZooKeeper ensemble on 127.0.0.1.
// bench/run.sh starts everything and runs every scenario; each one also runs
// alone:
//
//   groupcoord-bench throughput --ports P --echo-port E [--pids SPID,EPID] [--conns 1000] [--seconds 5]
//   groupcoord-bench members    --ports P --pids PID [--echo-port E] [--members 10000] [--seconds 20]
//   groupcoord-bench join-storm --ports P [--members 1000] [--partitions 1000]
//   groupcoord-bench direct     --ports P [--members 100]
//   groupcoord-bench failover   --ports P1,P2 --pids PID1,PID2 [--zk-session-ms 4000]
//   groupcoord-bench fleet      --server-bin GROUPCOORDD [--work-dir DIR] [--members 30000] [--groups 300]
//   groupcoord-bench placement  --server-bin GROUPCOORDD [--work-dir DIR] [--steady-seconds 600]
//   groupcoord-bench big-group  --ports P --server-log FILE [--members 10000] [--partitions 10000]
//                                [--metrics-port HTTP]
//   groupcoord-bench kafka      --kafka-port K [--members 1000] [--leave-sizes 10,1000]
//   groupcoord-bench rebalance  --ports P [--members 10000] [--interval-ms 1000] [--held 1]
//   groupcoord-bench peers      --system groupcoord|zookeeper|etcd --pids NAME:PID,... [--ports P] [--etcd-ports P1,P2,P3]
//                                [--members 1000]
//
// Common: --zk-base-port B (the ensemble of scripts/zk-ensemble.sh
// --base-port B; default 23800). Results are Markdown table rows on standard
// output: | scenario | figure | value | target |; progress goes to
// standard error. Every scenario is bounded in time and exits non-zero when
// it could not complete (not when a target is missed: the table says that).

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <ctime>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "adapter/Assignment.h"
#include "adapter/FleetSnapshot.h"
#include "adapter/Placement.h"
#include "adapter/Hash.h"
#include "common/Layout.h"
#include "bench/Common.h"
#include "bench/Ensemble.h"
#include "bench/Fleet.h"
#include "bench/KafkaScenario.h"
#include "bench/RebalanceScenario.h"
#include "bench/PeersScenario.h"
#include "bench/Loop.h"
#include "protocol/Codec.h"
#include "zk/Session.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace groupcoord::bench {
namespace {

using protocol::ErrorCode;

std::string errorsText(const FleetStats& s) {
  if (s.errors.empty()) return "none";
  std::string out;
  for (const auto& [name, n] : s.errors) {
    if (!out.empty()) out += ", ";
    out += name + " " + std::to_string(n);
  }
  return out;
}

std::vector<protocol::TopicPartition> partitionsOf(const std::string& topic, int32_t n) {
  std::vector<protocol::TopicPartition> out;
  for (int32_t p = 0; p < n; ++p) out.push_back({topic, p});
  return out;
}

// Heartbeats every `intervalNs` until all members are in sync (and, when
// `partitions` is given, hold them exactly per group); the time it took.
// keepBeating: the schedule runs on afterwards (the caller stops it).
uint64_t settle(Loop& loop, Fleet& fleet, uint64_t intervalNs, uint64_t timeoutNs,
                const std::map<std::string, std::vector<protocol::TopicPartition>>& partitions = {},
                Histogram* latency = nullptr, bool keepBeating = false) {
  const uint64_t t0 = nowNs();
  fleet.startBeating(intervalNs, latency);
  // The check walks every member: every 5 ms for small fleets, less often
  // for big ones (250 ms at 100,000), so that it does not starve the
  // schedule it checks.
  const uint64_t every = std::max<uint64_t>(5 * kMs, fleet.size() * 2500);
  bool ok = loop.runUntilEvery(
      every, [&] { return fleet.allInSync() && (partitions.empty() || fleet.assignmentExactAll(partitions)); },
      timeoutNs);
  const uint64_t took = nowNs() - t0;
  if (!keepBeating) {
    fleet.stopBeating();
    loop.runUntil([&] { return std::none_of(fleet.members().begin(), fleet.members().end(),
                                            [](const Member& m) { return m.busy; }); },
                  10 * kSec);
  }
  if (!ok) {
    size_t notInSync = 0;
    for (const auto& m : fleet.members()) notInSync += (!m.crashed && !m.inSync);
    fail("members did not settle within " + fmt(static_cast<double>(timeoutNs) / kSec) + " s (" +
         std::to_string(notInSync) + " not in sync; errors: " + errorsText(fleet.stats()) + ")");
  }
  return took;
}

// ---------------------------------------------------------------------------
// 1. Heartbeat throughput beside a minimal echo server.

// The soft limit on this process's open descriptors.
size_t openFileLimit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  return static_cast<size_t>(lim.rlim_cur);
}

// "median (min .. max)" of a list of ratios or figures.
std::string spread(std::vector<double> v, int decimals) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return std::string("-");
  auto f = [decimals](double x) { return decimals == 0 ? count(x) : fmt(x, decimals); };
  return f(v[(v.size() - 1) / 2]) + " (" + f(v.front()) + " .. " + f(v.back()) + ")";
}

void throughput(const Args& args) {
  const uint16_t port = static_cast<uint16_t>(args.list("ports").at(0));
  const uint16_t echo = static_cast<uint16_t>(args.num("echo-port", 0));
  const size_t conns = static_cast<size_t>(args.num("conns", 1000));
  const double seconds = static_cast<double>(args.num("seconds", 5));
  if (echo == 0) fail("--echo-port is required");
  Loop loop;
  const std::string base = "tp-" + stamp();
  const size_t groups = std::max<size_t>(1, conns / 100);
  for (size_t g = 0; g < groups; ++g) {
    if (auto e = createGroup(loop, port, base + "-" + std::to_string(g), 60000, {}); e != ErrorCode::NONE) {
      fail("CreateGroup: " + std::string(protocol::errorName(e)));
    }
  }
  Fleet fleet(loop, {port}, conns);
  for (size_t i = 0; i < conns; ++i) fleet.add(base + "-" + std::to_string(i % groups), port);
  log("throughput: %zu members joining %zu groups, one connection each", conns, groups);
  if (!fleet.joinAll(120 * kSec)) fail("members could not join");
  settle(loop, fleet, 100 * kMs, 60 * kSec);

  const uint16_t loopEcho = static_cast<uint16_t>(args.num("loop-echo-port", 0));
  std::vector<int> serverConns, echoConns, loopConns;
  for (size_t i = 0; i < conns; ++i) serverConns.push_back(fleet.connFor(i));
  for (size_t i = 0; i < conns; ++i) {
    int c = loop.connect(echo);
    if (c < 0) fail("cannot connect to the echo server");
    echoConns.push_back(c);
    if (loopEcho != 0) {
      c = loop.connect(loopEcho);
      if (c < 0) fail("cannot connect to the IoLoop echo server");
      loopConns.push_back(c);
    }
  }

  const auto pids = args.list("pids");
  const int serverPid = pids.size() > 0 ? static_cast<int>(pids[0]) : 0;
  const int echoPid = pids.size() > 1 ? static_cast<int>(pids[1]) : 0;
  const int loopPid = pids.size() > 2 ? static_cast<int>(pids[2]) : 0;
  const int pairs = static_cast<int>(std::max<int64_t>(1, args.num("pairs", 5)));
  struct Run {
    double rate = 0;
    uint64_t errors = 0;
    double cpuUs = 0;  // the server's CPU time per answered request
  };
  auto drive = [&](const std::vector<int>& connOf, int depth, int pid) {
    uint64_t responses = 0, errors = 0, outstanding = 0;
    bool measuring = false, stopping = false;
    std::function<void(size_t)> fire = [&](size_t i) {
      ++outstanding;
      loop.sendFrame(connOf[i], fleet.at(i).heartbeatFrame, protocol::ApiKey::Heartbeat,
                     [&, i](const protocol::Response* r, uint64_t) {
                       --outstanding;
                       if (measuring) {
                         ++responses;
                         if (r == nullptr || protocol::responseError(*r) != ErrorCode::NONE) ++errors;
                       }
                       if (!stopping && r != nullptr) fire(i);
                     });
    };
    for (size_t i = 0; i < conns; ++i) {
      for (int d = 0; d < depth; ++d) fire(i);
    }
    loop.runFor(kSec / 2);  // warm-up
    measuring = true;
    const uint64_t t0 = nowNs();
    const double c0 = pid ? cpuSeconds(pid) : 0;
    loop.runFor(static_cast<uint64_t>(seconds * kSec));
    const double c1 = pid ? cpuSeconds(pid) : 0;
    measuring = false;
    const double elapsed = static_cast<double>(nowNs() - t0) / kSec;
    stopping = true;
    loop.runUntil([&] { return outstanding == 0; }, 20 * kSec);
    return Run{static_cast<double>(responses) / elapsed, errors,
               responses ? (c1 - c0) * 1e6 / static_cast<double>(responses) : 0};
  };

  // The servers take turns in short windows, `pairs` rounds of each: a
  // disturbance of the machine falls on one window, not on one server.
  for (int depth : {1, 16}) {
    std::vector<double> gcRate, echoRate, loopRate, gcCpu, echoCpu, loopCpu, vsEcho, vsLoop, cpuVsLoop;
    uint64_t gcErrors = 0;
    for (int round = 0; round < pairs; ++round) {
      log("throughput: depth %d, round %d of %d", depth, round + 1, pairs);
      const Run g = drive(serverConns, depth, serverPid);
      const Run e = drive(echoConns, depth, echoPid);
      gcRate.push_back(g.rate);
      echoRate.push_back(e.rate);
      gcCpu.push_back(g.cpuUs);
      echoCpu.push_back(e.cpuUs);
      gcErrors += g.errors;
      if (e.rate > 0) vsEcho.push_back(g.rate / e.rate);
      if (loopEcho != 0) {
        const Run l = drive(loopConns, depth, loopPid);
        loopRate.push_back(l.rate);
        loopCpu.push_back(l.cpuUs);
        if (l.rate > 0) vsLoop.push_back(g.rate / l.rate);
        if (l.cpuUs > 0) cpuVsLoop.push_back(g.cpuUs / l.cpuUs);
      }
    }
    const std::string d = "depth " + std::to_string(depth) + ", " + std::to_string(conns) + " connections, " +
                          std::to_string(pairs) + " interleaved rounds, median (range)";
    row("1 throughput", "heartbeats/s through groupcoordd, " + d,
        spread(gcRate, 0) + (gcErrors ? " (" + count(static_cast<double>(gcErrors)) + " not NONE)" : ""));
    row("1 throughput", "frames/s through the minimal echo, " + d, spread(echoRate, 0));
    if (!loopRate.empty()) row("1 throughput", "frames/s through the IoLoop echo, " + d, spread(loopRate, 0));
    row("1 throughput", "frames/s, groupcoordd / minimal echo, depth " + std::to_string(depth), spread(vsEcho, 2),
        depth == 16 ? ">= 0.85" : "");
    if (!vsLoop.empty()) {
      row("1 throughput", "frames/s, groupcoordd / IoLoop echo, depth " + std::to_string(depth), spread(vsLoop, 2));
    }
    if (serverPid && echoPid) {
      row("1 throughput",
          "server CPU per request, groupcoordd / IoLoop echo / minimal echo, depth " + std::to_string(depth) +
              " (us, median)",
          spread(gcCpu, 2) + " / " + (loopCpu.empty() ? "-" : spread(loopCpu, 2)) + " / " + spread(echoCpu, 2));
      if (!cpuVsLoop.empty()) {
        row("1 throughput", "CPU per request, groupcoordd / IoLoop echo, depth " + std::to_string(depth),
            spread(cpuVsLoop, 2), depth == 16 ? "<= 1.3" : "");
      }
    }
  }
}

// ---------------------------------------------------------------------------
// groupcoordd's own figures, from its /metrics.

// The cumulative buckets of one histogram series in a scrape (Ensemble.h's
// scrapeMetrics), by upper bound in seconds (+Inf as infinity).
using Samples = std::map<std::string, double>;
std::map<double, double> bucketsOf(const Samples& samples, const std::string& family, const std::string& labels) {
  std::map<double, double> out;
  const std::string key = family + "_bucket{" + labels + ",le=\"";
  for (auto it = samples.lower_bound(key); it != samples.end() && it->first.rfind(key, 0) == 0; ++it) {
    const std::string le = it->first.substr(key.size(), it->first.size() - key.size() - 2);  // without "}
    out[le == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(le.c_str(), nullptr)] = it->second;
  }
  return out;
}

// The q-quantile of what was observed between two scrapes, as the upper
// bound of the bucket it falls in (seconds); -1 when nothing was observed.
double bucketQuantile(const std::map<double, double>& before, const std::map<double, double>& after, double q) {
  double total = after.empty() ? 0 : after.rbegin()->second;
  if (!before.empty()) total -= before.rbegin()->second;
  if (total <= 0) return -1;
  for (auto& [bound, cum] : after) {
    auto b = before.find(bound);
    const double d = cum - (b == before.end() ? 0 : b->second);
    if (d >= q * total) return bound;
  }
  return std::numeric_limits<double>::infinity();
}

// "p50 / p99 / p999" of a series between two scrapes, in microseconds, each
// "<= bound" (bucket upper bounds).
std::string serverQuantilesUs(const Samples& before, const Samples& after, const std::string& family,
                              const std::string& labels) {
  const auto b = bucketsOf(before, family, labels), a = bucketsOf(after, family, labels);
  std::string out;
  for (double q : {0.5, 0.99, 0.999}) {
    const double v = bucketQuantile(b, a, q);
    std::string cell = v < 0 ? "-" : std::isinf(v) ? "> max" : "<= " + fmt(v * 1e6, v * 1e6 < 1 ? 2 : 0);
    out += (out.empty() ? "" : " / ") + cell;
  }
  double n = a.empty() ? 0 : a.rbegin()->second;
  if (!b.empty()) n -= b.rbegin()->second;
  return out + " (" + count(n) + " observed)";
}

struct EchoRun {
  Histogram latency;   // from each frame's due time to its answer
  Histogram lateness;  // how late the generator fired each frame
  uint64_t answered = 0;
  double cpuPerAnswerUs = 0;
};
// The echo server on the schedule the members just had: `frames[i]` due
// every `intervalNs` on an absolute schedule, phases spread as Fleet
// spreads them, over `conns` connections, one frame of each stream out at
// a time (a later one waits its turn and counts the wait, as Fleet's
// beats do). Recorded: frames due in the `seconds` after one interval.
EchoRun echoSchedule(Loop& loop, uint16_t echo, int echoPid, const std::vector<std::vector<uint8_t>>& frames,
                     size_t conns, uint64_t intervalNs, double seconds) {
  EchoRun run;
  std::vector<int> echoConns;
  for (size_t c = 0; c < conns; ++c) {
    const int fd = loop.connect(echo);
    if (fd < 0) fail("cannot connect to the echo server (connection " + std::to_string(c) + ")");
    echoConns.push_back(fd);
  }
  const size_t n = frames.size();
  const uint64_t start = nowNs();
  const uint64_t from = start + intervalNs, until = from + static_cast<uint64_t>(seconds * kSec);
  std::vector<bool> busy(n, false);
  std::vector<std::deque<uint64_t>> deferred(n);
  std::function<void(size_t, uint64_t)> send = [&](size_t i, uint64_t due) {
    busy[i] = true;
    loop.sendFrame(echoConns[i % conns], frames[i], protocol::ApiKey::Heartbeat,
                   [&, i, due](const protocol::Response* r, uint64_t) {
                     busy[i] = false;
                     const uint64_t now = nowNs();
                     if (r != nullptr && due >= from && due < until) {
                       run.latency.add(now > due ? now - due : 0);
                       ++run.answered;
                     }
                     if (!deferred[i].empty()) {
                       const uint64_t next = deferred[i].front();
                       deferred[i].pop_front();
                       send(i, next);
                     }
                   });
  };
  std::function<void(size_t, uint64_t)> fire = [&](size_t i, uint64_t due) {
    if (due >= until) return;
    const uint64_t now = nowNs();
    const uint64_t next = due + intervalNs;
    loop.after(next > now ? next - now : 0, [&fire, i, next] { fire(i, next); });
    if (due >= from) run.lateness.add(now > due ? now - due : 0);
    if (busy[i]) {
      if (deferred[i].size() < 64) deferred[i].push_back(due);
      return;
    }
    send(i, due);
  };
  for (size_t i = 0; i < n; ++i) {
    const uint64_t due = start + intervalNs * i / n;
    loop.after(due - start, [&fire, i, due] { fire(i, due); });
  }
  loop.runFor(from - std::min(from, nowNs()));
  const double cpu0 = echoPid > 0 ? cpuSeconds(echoPid) : 0;
  loop.runFor(until - std::min(until, nowNs()));
  const double cpu1 = echoPid > 0 ? cpuSeconds(echoPid) : 0;
  // Every stream's last timer (due at or past `until`, so it schedules no
  // other) has fired by until + interval: none refers to `fire` after that.
  const uint64_t quiet = until + intervalNs + kMs;
  loop.runFor(quiet - std::min(quiet, nowNs()));
  loop.runUntil([&] { return std::none_of(busy.begin(), busy.end(), [](bool b) { return b; }); },
                intervalNs + 2 * kSec);
  for (int fd : echoConns) loop.close(fd);
  if (run.answered > 0) run.cpuPerAnswerUs = (cpu1 - cpu0) * 1e6 / static_cast<double>(run.answered);
  return run;
}

std::string quantiles(const Histogram& h) {
  return fmt(h.quantileMs(0.5), 3) + " / " + fmt(h.quantileMs(0.99), 3) + " / " + fmt(h.quantileMs(0.999), 3);
}

// ---------------------------------------------------------------------------
// 2. Many members heartbeating: latency beside the echo server on the same
// schedule, CPU and memory per member, ZooKeeper traffic.

void members(const Args& args) {
  const uint16_t port = static_cast<uint16_t>(args.list("ports").at(0));
  const int pid = static_cast<int>(args.list("pids").at(0));
  const size_t n = static_cast<size_t>(args.num("members", 10000));
  const size_t conns = static_cast<size_t>(args.num("conns", 1000));
  const size_t groups = static_cast<size_t>(args.num("groups", 100));
  const int32_t partitions = static_cast<int32_t>(args.num("partitions", 100));
  const uint64_t intervalNs = static_cast<uint64_t>(args.num("interval-ms", 1000)) * kMs;
  const int64_t sessionMs = args.num("session-ms", 30000);
  const uint64_t settleNs = static_cast<uint64_t>(args.num("settle-interval-ms", 250)) * kMs;
  const double seconds = static_cast<double>(args.num("seconds", 20));
  const double idle = static_cast<double>(args.num("idle-seconds", 10));
  const std::string sc = args.get("label", "2 " + count(static_cast<double>(n)) + " members");
  EnsembleProbe zk{static_cast<int>(args.num("zk-base-port", 23800))};
  if (conns == 0 || groups == 0 || n == 0) fail("--members, --conns and --groups must be positive");
  if (idle * 1000 >= static_cast<double>(sessionMs)) fail("--idle-seconds must be shorter than --session-ms");

  const std::string base = "mb-" + stamp();
  const std::string topic = base + "-t";
  createTopic(zk, args.get("topics-path", "/brokers/topics"), topic, partitions);
  Loop loop;
  const int64_t rss0 = rssKiB(pid);
  for (size_t g = 0; g < groups; ++g) {
    if (auto e = createGroup(loop, port, base + "-" + std::to_string(g), sessionMs, {topic}); e != ErrorCode::NONE) {
      fail("CreateGroup: " + std::string(protocol::errorName(e)));
    }
  }
  Fleet fleet(loop, {port}, conns);
  for (size_t i = 0; i < n; ++i) fleet.add(base + "-" + std::to_string(i % groups), port);
  // A member told UNKNOWN_CONSUMER while the generator kept it alive (not
  // one that left, or whose connection was killed) was evicted falsely.
  std::set<size_t> expectedGone, falselyEvicted;
  std::map<std::string, uint64_t> answersNotNone;
  fleet.onHeartbeatAnswer = [&](size_t i, uint16_t, ErrorCode e, bool connectionFailed) {
    if (e == ErrorCode::NONE) return;
    ++answersNotNone[connectionFailed ? std::string("CONNECTION") : std::string(protocol::errorName(e))];
    if (e == ErrorCode::UNKNOWN_CONSUMER && !expectedGone.count(i)) falselyEvicted.insert(i);
  };
  const Samples metricsStart = args.num("metrics-port", 0)
                                   ? scrapeMetrics(static_cast<uint16_t>(args.num("metrics-port", 0)))
                                   : Samples{};
  // The connections first, all at once: how fast the server accepts them
  // (its own count, from /metrics).
  double acceptSeconds = -1;
  size_t opened = 0;
  if (const auto mp = static_cast<uint16_t>(args.num("metrics-port", 0)); mp != 0) {
    const auto accepted = [mp] {
      const Samples m = scrapeMetrics(mp);
      const auto it = m.find("groupcoord_connections_accepted_total");
      return it == m.end() ? 0.0 : it->second;
    };
    const double a0 = accepted();
    const uint64_t c0 = nowNs();
    for (size_t i = 0; i < std::min(n, conns); ++i) opened += fleet.connFor(i) >= 0;
    while (accepted() < a0 + static_cast<double>(opened) && nowNs() - c0 < 60 * kSec) loop.runFor(10 * kMs);
    acceptSeconds = static_cast<double>(nowNs() - c0) / kSec;
  }
  // ZooKeeper's idle rate: with the members joined and silent when they
  // can be, well within their session (idle, then up to two intervals
  // before and after it); else before they join, the groups created, and
  // then the schedule runs without a pause from the join to the end.
  const uint64_t intervalMs = intervalNs / kMs;
  const bool idleBeforeJoin = idle * 1000 + static_cast<double>(2 * intervalMs + 2000) >= static_cast<double>(sessionMs);
  double p0 = 0, p1 = 0;
  if (idleBeforeJoin) {
    p0 = zk.sum("zk_packets_received");
    loop.runFor(static_cast<uint64_t>(idle * kSec));
    p1 = zk.sum("zk_packets_received");
  }
  log("%s: %zu members joining %zu groups over %zu connections", sc.c_str(), n, groups, conns);
  const uint64_t j0 = nowNs();
  // Each member heartbeats from its registration on, as a client does: a
  // join that takes longer than the session must not evict the first ones.
  fleet.startBeating(settleNs);
  if (!fleet.joinAll(300 * kSec)) fail("members could not join");
  const uint64_t joined = nowNs() - j0;
  std::map<std::string, std::vector<protocol::TopicPartition>> expected;
  for (size_t g = 0; g < groups; ++g) expected[base + "-" + std::to_string(g)] = partitionsOf(topic, partitions);
  // Without the idle window between, the settling schedule (at the
  // measured interval) runs on into the first measured window.
  bool beating = idleBeforeJoin && settleNs == intervalNs;
  settle(loop, fleet, settleNs, 300 * kSec, expected, nullptr, beating);
  const uint64_t synced = nowNs() - j0;
  log("%s: all in sync after %.1f s", sc.c_str(), static_cast<double>(synced) / kSec);
  loop.runFor(1 * kSec);
  const int64_t rss1 = rssKiB(pid);

  // A window with the members idle (well within their session), then one
  // with every member heartbeating: whatever ZooKeeper receives beyond the
  // idle rate is caused by heartbeats.
  if (!idleBeforeJoin) {
    p0 = zk.sum("zk_packets_received");
    loop.runFor(static_cast<uint64_t>(idle * kSec));
    p1 = zk.sum("zk_packets_received");
  }
  // The measured windows: beats due in [from, until). Whatever blocks the
  // generator's one thread (ZooKeeper's four-letter words, scraping the
  // server's /metrics) happens outside them, a second away from either
  // end, and the schedule is absolute, so nothing it delays is measured.
  // With --rounds=K the servers take turns: K windows of groupcoordd, each
  // followed by one of the minimal echo and one of the IoLoop echo on the
  // same schedule, with the members silent meanwhile (well within their
  // session), so that a disturbance of the machine falls on one window.
  const int rounds = std::max(1, static_cast<int>(args.num("rounds", 1)));
  // The echoes' windows (default: as long as groupcoordd's).
  const double echoSeconds = static_cast<double>(args.num("echo-seconds", static_cast<int64_t>(seconds)));
  Histogram latency, lateness;
  const auto errors0 = fleet.stats().errors;
  const uint16_t metricsPort = static_cast<uint16_t>(args.num("metrics-port", 0));
  const uint16_t echo = static_cast<uint16_t>(args.num("echo-port", 0));
  const uint16_t loopEcho = static_cast<uint16_t>(args.num("loop-echo-port", 0));
  if (rounds > 1 && conns * 2 + 1000 > openFileLimit()) {
    fail("--rounds needs the members' connections and the echoes' open at once: raise the open-file limit or use --rounds=1");
  }
  // Between two windows of groupcoordd its members are silent for both
  // echo runs: that must stay well within their session.
  const double echoRunMs = 2.0 * static_cast<double>(intervalNs) / kMs + seconds * 1000 + 2000;
  if (rounds > 1 && 2 * echoRunMs * 1.5 >= static_cast<double>(sessionMs)) {
    fail("--rounds: the members would be silent for about " + fmt(2 * echoRunMs, 0) +
         " ms while the echoes run, too close to their " + std::to_string(sessionMs) + " ms session");
  }
  double p2 = 0, p3 = 0;
  uint64_t p2At = 0, hbAtP2 = 0, p3At = 0, hbAtP3 = 0;
  Samples metrics0, metrics1;
  double cpu = 0, self = 0;
  uint64_t hbs0 = 0;
  EchoRun er, lr;  // every window's samples together
  std::vector<double> vsEcho99, vsLoop99, gc99, loop99;
  int lateRounds = 0;
  std::vector<std::vector<uint8_t>> frames;
  auto echoRun = [&](uint16_t p, int echoPid, EchoRun& all) {
    loop.runFor(500 * kMs);
    EchoRun r = echoSchedule(loop, p, echoPid, frames, conns, intervalNs, echoSeconds);
    all.latency.merge(r.latency);
    all.lateness.merge(r.lateness);
    all.cpuPerAnswerUs = (all.cpuPerAnswerUs * static_cast<double>(all.answered) +
                          r.cpuPerAnswerUs * static_cast<double>(r.answered)) /
                         static_cast<double>(std::max<uint64_t>(all.answered + r.answered, 1));
    all.answered += r.answered;
    return r;
  };
  for (int round = 0; round < rounds; ++round) {
    if (rounds > 1) log("%s: round %d of %d", sc.c_str(), round + 1, rounds);
    Histogram lat, late;
    if (!beating) {
      fleet.startBeating(intervalNs, BeatMeasure{});
      loop.runFor(intervalNs);  // every member has had its first beat
    }
    if (round == 0) {
      p2 = zk.sum("zk_packets_received");
      p2At = nowNs();
      hbAtP2 = fleet.stats().heartbeats;
      if (metricsPort) metrics0 = scrapeMetrics(metricsPort);
      loop.runFor(kSec);
    }
    const uint64_t from = nowNs(), until = from + static_cast<uint64_t>(seconds * kSec);
    fleet.setMeasure(BeatMeasure{&lat, &late, from, until});
    const uint64_t hb1 = fleet.stats().heartbeats;
    const double cpu0 = cpuSeconds(pid), self0 = cpuSeconds(::getpid());
    loop.runFor(until - std::min(until, nowNs()));
    cpu += cpuSeconds(pid) - cpu0;
    self += cpuSeconds(::getpid()) - self0;
    hbs0 += fleet.stats().heartbeats - hb1;
    loop.runFor(kSec);  // the answers to beats due before `until` come in
    if (round == rounds - 1) {
      if (metricsPort) metrics1 = scrapeMetrics(metricsPort);
      p3 = zk.sum("zk_packets_received");
      p3At = nowNs();
      hbAtP3 = fleet.stats().heartbeats;
    }
    const bool churnNext = round == rounds - 1 && (args.num("churn-percent", 0) > 0 || args.num("kill-percent", 0) > 0);
    if (churnNext) {
      fleet.setMeasure(BeatMeasure{});  // the schedule runs on into the churn
    } else {
      fleet.stopBeating();
    }
    beating = churnNext;
    latency.merge(lat);
    lateness.merge(late);
    if (rounds == 1) {
      // Closed before the echo runs: a process may hold 20,000 descriptors here.
      frames.reserve(n);
      for (size_t i = 0; i < n; ++i) frames.push_back(fleet.at(i).heartbeatFrame);
      break;
    }
    if (frames.empty()) {
      for (size_t i = 0; i < n; ++i) frames.push_back(fleet.at(i).heartbeatFrame);
    }
    bool wasLate = late.quantileMs(0.99) > 1.0;
    double e99 = 0, l99 = 0;
    if (echo != 0) {
      const EchoRun r = echoRun(echo, static_cast<int>(args.num("echo-pid", 0)), er);
      e99 = r.latency.quantileMs(0.99);
      wasLate = wasLate || r.lateness.quantileMs(0.99) > 1.0;
    }
    if (loopEcho != 0) {
      const EchoRun r = echoRun(loopEcho, static_cast<int>(args.num("loop-echo-pid", 0)), lr);
      l99 = r.latency.quantileMs(0.99);
      wasLate = wasLate || r.lateness.quantileMs(0.99) > 1.0;
    }
    const double g99 = lat.quantileMs(0.99);
    lateRounds += wasLate ? 1 : 0;
    if (!wasLate) {
      gc99.push_back(g99);
      if (e99 > 0) vsEcho99.push_back(g99 / e99);
      if (l99 > 0) {
        loop99.push_back(l99);
        vsLoop99.push_back(g99 / l99);
      }
    }
    log("%s: round %d: p99 groupcoordd %.3f ms, minimal echo %.3f ms, IoLoop echo %.3f ms%s", sc.c_str(), round + 1,
        g99, e99, l99, wasLate ? " (the generator fell behind)" : "");
  }
  // 1% of the members leave and come back as new members; then 1% of the
  // connections are killed (their members silent from then on, as a
  // SIGKILLed process's) and, a second later, the process restarts: new
  // members on a new connection. The schedule runs throughout.
  uint64_t errors = 0;
  for (const auto& [name, c] : fleet.stats().errors) errors += c - (errors0.count(name) ? errors0.at(name) : 0);
  const int64_t churnPct = args.num("churn-percent", 0);
  const int64_t killPct = args.num("kill-percent", 0);
  std::vector<std::pair<std::string, double>> churnSteps;  // what, seconds until every group settled
  size_t killedMembers = 0, leavers = 0;
  if (churnPct > 0 || killPct > 0) {
    if (!beating) {
      fleet.startBeating(intervalNs, BeatMeasure{});
      loop.runFor(intervalNs);
    }
    // Every live member in sync and every group's partitions held exactly
    // once; checked every 250 ms (the check walks every member).
    auto settled = [&](const char* what) {
      const uint64_t t0 = nowNs();
      const bool ok = loop.runUntilEvery(
          250 * kMs, [&] { return fleet.allInSync() && fleet.assignmentExactAll(expected); }, 120 * kSec);
      const double took = static_cast<double>(nowNs() - t0) / kSec;
      log("%s: %s: %s after %.2f s", sc.c_str(), what, ok ? "settled" : "NOT settled", took);
      churnSteps.emplace_back(what, ok ? took : -1);
    };
    // Each comes back as a new member on its old connection.
    auto comeBack = [&](const std::vector<size_t>& gone) {
      for (size_t i : gone) {
        const size_t j = fleet.add(fleet.at(i).group, port);
        fleet.at(j).slot = fleet.at(i).slot;
        fleet.registerMember(j, [&fleet, j](bool) { fleet.joinSchedule(j); });
      }
    };
    if (churnPct > 0) {
      // The member of rank 37 (of every 100 / churn-percent) of each group:
      // member i is in group i % groups, of rank i / groups there.
      std::vector<size_t> leaving;
      const size_t every = static_cast<size_t>(100 / churnPct);
      for (size_t i = 0; i < n; ++i) {
        if ((i / groups) % every == 37 % every) leaving.push_back(i);
      }
      size_t acked = 0;
      for (size_t i : leaving) {
        expectedGone.insert(i);
        fleet.at(i).crashed = true;
        loop.send(fleet.connFor(i), protocol::LeaveGroupRequest{fleet.at(i).group, fleet.at(i).id},
                  [&acked](const protocol::Response*, uint64_t) { ++acked; });
      }
      loop.runUntil([&] { return acked == leaving.size(); }, 30 * kSec);
      leavers = leaving.size();
      settled("1% leave");
      comeBack(leaving);
      settled("1% rejoin");
    }
    if (killPct > 0) {
      // Connections k * 101 (mod conns): spread over the groups, where
      // every 100th would hit the same few (connection c hosts members of
      // group c % groups).
      const size_t kills = std::max<size_t>(1, conns * static_cast<size_t>(killPct) / 100);
      std::set<size_t> slots;
      for (size_t k = 0; k < kills; ++k) slots.insert(k * 101 % conns);
      std::vector<size_t> killed;
      for (size_t i = 0; i < fleet.size(); ++i) {
        Member& m = fleet.at(i);
        if (m.crashed || !slots.count(m.slot % conns)) continue;
        m.crashed = true;
        expectedGone.insert(i);
        killed.push_back(i);
      }
      for (size_t c : slots) fleet.killConnection(port, c);
      killedMembers = killed.size();
      loop.runFor(kSec);
      comeBack(killed);
      settled("1% of connections killed, restarted 1 s later");
    }
    fleet.stopBeating();
    loop.runUntil([&] { return std::none_of(fleet.members().begin(), fleet.members().end(),
                                            [](const Member& m) { return m.busy; }); },
                  10 * kSec);
  }
  const Samples metricsEnd = metricsPort ? scrapeMetrics(metricsPort) : Samples{};

  loop.runFor(500 * kMs);
  const int64_t rss2 = rssKiB(pid);
  size_t notInSync = 0;
  for (const auto& m : fleet.members()) notInSync += !m.inSync;
  fleet.closeAll();
  if (rounds == 1) {
    // The same schedule against the echo server, which answers without any
    // work: what this machine's scheduling alone costs a heartbeat at this
    // rate (idle cores wake up for each one); and against groupcoordd's own
    // TCP server with a handler that does nothing (groupcoord-loop-echo):
    // what the handler costs, apart from the loop.
    if (echo != 0) echoRun(echo, static_cast<int>(args.num("echo-pid", 0)), er);
    if (loopEcho != 0) echoRun(loopEcho, static_cast<int>(args.num("loop-echo-pid", 0)), lr);
  }
  const double measuredSeconds = seconds * rounds;

  const double hbs = static_cast<double>(hbs0);
  const std::string every = intervalNs == kSec ? "second" : fmt(static_cast<double>(intervalNs) / kSec, 0) + " s";
  row(sc, "members, groups, connections; heartbeat interval, session timeout",
      count(static_cast<double>(n)) + ", " + count(static_cast<double>(groups)) + ", " +
          count(static_cast<double>(conns)) + "; " + fmt(static_cast<double>(intervalNs) / kMs) + " ms, " +
          count(static_cast<double>(sessionMs)) + " ms");
  if (acceptSeconds >= 0) {
    row(sc, "connections opened at once and accepted by the server: count, seconds, per second",
        count(static_cast<double>(opened)) + ", " + fmt(acceptSeconds, 2) + ", " +
            count(static_cast<double>(opened) / std::max(acceptSeconds, 1e-3)));
  }
  row(sc, "all registered / all in sync, from the first registration (s)",
      fmt(static_cast<double>(joined) / kSec, 2) + " / " + fmt(static_cast<double>(synced) / kSec, 2));
  row(sc, "heartbeats answered per second (1 per member per " + every + ")", count(hbs / measuredSeconds));
  if (rounds > 1) {
    row(sc, "windows: groupcoordd, minimal echo, IoLoop echo in turn",
        std::to_string(rounds) + " rounds of " + fmt(seconds, 0) + " s each" +
            (lateRounds ? " (" + std::to_string(lateRounds) + " with the generator behind, left out of the ratios)" : ""));
  }
  row(sc, "heartbeat latency p50 / p99 / p999 (ms), from each beat's due time", quantiles(latency));
  const bool behind = lateness.quantileMs(0.99) > 1.0;
  row(sc, "the generator's own lateness against the schedule: p99 / max (ms)",
      fmt(lateness.quantileMs(0.99), 3) + " / " + fmt(lateness.quantileMs(1.0), 3) +
          (behind ? " (the generator fell behind: latencies above include its own delay)" : ""),
      "p99 <= 1");
  if (!metrics0.empty() && !metrics1.empty()) {
    row(sc, "server-side heartbeat time, read to answer: p50 / p99 / p999 (us)",
        serverQuantilesUs(metrics0, metrics1, "groupcoord_request_duration_seconds", "api=\"Heartbeat\""),
        "p99 <= 50, p999 <= 250");
    for (const char* stage : {"wake_to_read", "decode", "handle", "encode", "write"}) {
      row(sc, std::string("server stage ") + stage + ", sampled: p50 / p99 / p999 (us)",
          serverQuantilesUs(metrics0, metrics1, "groupcoord_heartbeat_stage_seconds",
                            std::string("stage=\"") + stage + "\""));
    }
  }
  if (er.latency.count() > 0) {
    row(sc, "the same schedule against the echo server: p50 / p99 / p999 (ms)", quantiles(er.latency));
    row(sc, "the generator's lateness in the echo runs: p99 / max (ms)",
        fmt(er.lateness.quantileMs(0.99), 3) + " / " + fmt(er.lateness.quantileMs(1.0), 3), "p99 <= 1");
  }
  if (lr.latency.count() > 0) {
    row(sc, "the same schedule against the IoLoop echo: p50 / p99 / p999 (ms)", quantiles(lr.latency));
    row(sc, "the generator's lateness in the IoLoop echo runs: p99 / max (ms)",
        fmt(lr.lateness.quantileMs(0.99), 3) + " / " + fmt(lr.lateness.quantileMs(1.0), 3), "p99 <= 1");
  }
  if (rounds > 1) {
    const std::string pairs = std::to_string(vsLoop99.size()) + " of " + std::to_string(rounds) +
                              " interleaved rounds with the generator on time, median (range)";
    row(sc, "client-seen p99 per round, groupcoordd / IoLoop echo (ms), " + pairs,
        spread(gc99, 3) + " / " + spread(loop99, 3));
    row(sc, "client-seen p99, groupcoordd / minimal echo, " + pairs, spread(vsEcho99, 2));
    row(sc, "client-seen p99, groupcoordd / IoLoop echo, " + pairs,
        vsLoop99.empty() ? std::string("not measured: the generator fell behind in every round") : spread(vsLoop99, 2),
        "<= 1.5");
  } else if (lr.latency.count() > 0) {
    const bool late = behind || lr.lateness.quantileMs(0.99) > 1.0;
    row(sc, "groupcoordd / IoLoop echo: p99",
        fmt(latency.quantileMs(0.99) / std::max(lr.latency.quantileMs(0.99), 1e-6), 2) + "x" +
            (late ? " (the generator fell behind in one of the runs)" : ""),
        "<= 1.5");
  }
  row(sc, "heartbeats not answered NONE over the " + fmt(measuredSeconds) + " s measured; members not in sync at the end",
      count(static_cast<double>(errors)) + "; " + count(static_cast<double>(notInSync)), "0; 0");
  if (!churnSteps.empty()) {
    for (const auto& [what, took] : churnSteps) {
      row(sc, what + ": every member in sync, every partition held once (s)",
          took < 0 ? std::string("not within 120 s") : fmt(took, 2));
    }
  }
  {
    std::string text;
    uint64_t total = 0;
    for (const auto& [name, c] : answersNotNone) {
      text += (text.empty() ? "" : ", ") + name + " " + count(static_cast<double>(c));
      total += c;
    }
    row(sc, "heartbeats answered other than NONE over the whole run, by answer",
        count(static_cast<double>(total)) + (text.empty() ? "" : " (" + text + ")"));
  }
  if (!metricsStart.empty() && !metricsEnd.empty()) {
    const auto evictions = [](const Samples& s) {
      const auto it = s.find("groupcoord_evictions_total");
      return it == s.end() ? 0.0 : it->second;
    };
    row(sc, "members evicted (server count); of them, members the generator kept alive (false evictions)",
        count(evictions(metricsEnd) - evictions(metricsStart)) + " (" + count(static_cast<double>(killedMembers)) +
            " expected: the killed connections' members" + (leavers ? "; " + count(static_cast<double>(leavers)) + " left" : std::string()) +
            "); " + count(static_cast<double>(falselyEvicted.size())),
        "0 false");
  } else {
    row(sc, "members the generator kept alive told UNKNOWN_CONSUMER (false evictions)",
        count(static_cast<double>(falselyEvicted.size())), "0");
  }
  row(sc, "CPU per heartbeat: groupcoordd / IoLoop echo / minimal echo / load generator (us)",
      fmt(cpu * 1e6 / hbs, 1) + " / " + (lr.answered > 0 ? fmt(lr.cpuPerAnswerUs, 1) : "-") + " / " +
          (er.answered > 0 ? fmt(er.cpuPerAnswerUs, 1) : "-") + " / " + fmt(self * 1e6 / hbs, 1));
  const double perMember = static_cast<double>(rss1 - rss0) * 1024.0 / static_cast<double>(n);
  row(sc, "server RSS: before / with members / after the run (MiB)",
      fmt(rss0 / 1024.0, 1) + " / " + fmt(rss1 / 1024.0, 1) + " / " + fmt(rss2 / 1024.0, 1));
  row(sc, "server memory per member (bytes, connections included)", count(perMember), "< 2048");
  const double idleRate = (p1 - p0) / idle;
  const double busyRate = (p3 - p2) * kSec / static_cast<double>(std::max<uint64_t>(p3At - p2At, 1));
  row(sc, std::string("ZooKeeper packets received/s: ") +
              (idleBeforeJoin ? "groups created, no member yet" : "members idle") + " / heartbeating",
      fmt(idleRate, 2) + " / " + fmt(busyRate, 2));
  const double hbsZk = static_cast<double>(hbAtP3 - hbAtP2);
  row(sc, "ZooKeeper packets per 1,000 heartbeats", fmt((p3 - p2) * 1000.0 / std::max(hbsZk, 1.0), 3),
      "0 caused by heartbeats");
}

// ---------------------------------------------------------------------------
// 3. Join storm.

void joinStorm(const Args& args) {
  const uint16_t port = static_cast<uint16_t>(args.list("ports").at(0));
  const size_t n = static_cast<size_t>(args.num("members", 1000));
  const int32_t partitions = static_cast<int32_t>(args.num("partitions", 1000));
  const uint64_t interval = static_cast<uint64_t>(args.num("heartbeat-ms", 100)) * kMs;
  EnsembleProbe zk{static_cast<int>(args.num("zk-base-port", 23800))};

  const std::string group = "st-" + stamp();
  const std::string topic = group + "-t";
  createTopic(zk, args.get("topics-path", "/brokers/topics"), topic, partitions);
  Loop loop;
  protocol::Broker controller;
  if (auto e = createGroup(loop, port, group, 10000, {topic}, &controller); e != ErrorCode::NONE) {
    fail("CreateGroup: " + std::string(protocol::errorName(e)));
  }
  loop.runFor(500 * kMs);
  Fleet fleet(loop, {port}, std::min<size_t>(n, 100));
  for (size_t i = 0; i < n; ++i) fleet.add(group, port);
  const auto expected = partitionsOf(topic, partitions);
  const int64_t z0 = zk.zxid();
  log("join storm: %zu members join group %s (%d partitions), heartbeating every %llu ms", n, group.c_str(),
      partitions, static_cast<unsigned long long>(interval / kMs));

  const uint64_t t0 = nowNs();
  size_t pending = 0;
  std::function<void(size_t)> join = [&](size_t i) {
    fleet.at(i).busy = true;
    ++pending;
    fleet.registerMember(i, [&, i](bool ok) {
      fleet.at(i).busy = false;
      --pending;
      if (!ok) loop.after(20 * kMs, [&, i] { join(i); });
    });
  };
  for (size_t i = 0; i < n; ++i) join(i);
  fleet.startBeating(interval);
  std::string why;
  const bool ok = loop.runUntilEvery(
      2 * kMs, [&] { return fleet.allInSync() && fleet.assignmentExact(expected, &why); }, 60 * kSec);
  const uint64_t took = nowNs() - t0;
  const int64_t z1 = zk.zxid();
  fleet.stopBeating();
  loop.runUntil([&] { return pending == 0; }, 10 * kSec);
  if (!ok) fail("the join storm did not settle within 60 s (" + why + "; errors: " + errorsText(fleet.stats()) + ")");
  int64_t gen = -1;
  fleet.allInSync(&gen);
  loop.runFor(1 * kSec);
  const int64_t z2 = zk.zxid();

  const std::string sc = "3 join storm";
  row(sc, count(static_cast<double>(n)) + " members in sync, " + count(partitions) +
              " partitions assigned exactly once (s)",
      fmt(static_cast<double>(took) / kSec, 2), "< 3 s");
  row(sc, "ZooKeeper transactions until in sync (zxid delta)", std::to_string(z1 - z0), "<= 50");
  row(sc, "ZooKeeper transactions in the second after", std::to_string(z2 - z1));
  row(sc, "final generation; registrations; answers not NONE",
      std::to_string(gen) + "; " + count(static_cast<double>(fleet.stats().registrations)) + "; " +
          errorsText(fleet.stats()));

  // What an operator's `groupctl describe` costs on a group this size: one
  // DescribeGroup to the controller, its answer's size on the wire (the
  // codec is canonical, so encoding the decoded answer gives its bytes) and
  // the round trip.
  const int probe = loop.connect(controller.port ? controller.port : port);
  size_t bytes = 0, members = 0, held = 0, history = 0;
  uint64_t rtt = 0;
  bool answered = false;
  loop.send(probe, protocol::DescribeGroupRequest{group}, [&](const protocol::Response* r, uint64_t latency) {
    answered = true;
    rtt = latency;
    if (!r) return;
    std::vector<uint8_t> frame;
    protocol::encodeResponse(protocol::ResponseHeader{0, 1}, *r, frame);
    bytes = frame.size();
    if (auto* d = std::get_if<protocol::DescribeGroupResponse>(r)) {
      members = d->members.size();
      for (auto& m : d->members) held += m.held.size();
      history = d->history.size();
    }
  });
  loop.runUntil([&] { return answered; }, 10 * kSec);
  if (!answered || bytes == 0) fail("DescribeGroup was not answered");
  row(sc, "DescribeGroup answer: bytes on the wire (members, partitions held, history entries)",
      count(static_cast<double>(bytes)) + " (" + count(static_cast<double>(members)) + ", " +
          count(static_cast<double>(held)) + ", " + std::to_string(history) + ")");
  row(sc, "DescribeGroup round trip (ms)", fmt(static_cast<double>(rtt) / kMs, 2));
}

// ---------------------------------------------------------------------------
// 7. One big group: its first assignment, then one join and one leave among
// thousands of members, beside members of another group.

// What groupcoordd logged about `group`'s assignments past `offset` of its
// log (moved on to the end): the time each took (ms), how many partitions
// changed owner, and whether it ran off the group's lock.
struct LoggedAssignment {
  double ms = 0;
  size_t moved = 0;
  bool ahead = false;
};
std::vector<LoggedAssignment> assignmentsInLog(const std::string& file, const std::string& group, size_t& offset) {
  std::vector<LoggedAssignment> out;
  std::ifstream in(file);
  if (!in) return out;
  in.seekg(static_cast<std::streamoff>(offset));
  std::string line;
  const std::string key = "group " + group + ": generation ";
  while (std::getline(in, line)) {
    offset += line.size() + 1;
    if (line.find(key) == std::string::npos) continue;
    const auto c = line.find(" change owner; computed in ");
    if (c == std::string::npos) continue;
    LoggedAssignment a;
    const auto open = line.rfind('(', c);
    if (open != std::string::npos) a.moved = std::strtoull(line.c_str() + open + 1, nullptr, 10);
    a.ms = std::strtod(line.c_str() + c + std::strlen(" change owner; computed in "), nullptr);
    a.ahead = line.find("off the group's lock") != std::string::npos;
    out.push_back(a);
  }
  return out;
}

// One more member of `group` registers (the fleet not beating), then
// every member beats until all are in sync: how long from the registration.
uint64_t joinOne(Loop& loop, Fleet& fleet, const std::string& group, uint16_t port, uint64_t settleNs,
                 const std::map<std::string, std::vector<protocol::TopicPartition>>& expected, Histogram* latency) {
  const size_t added = fleet.add(group, port);
  bool registered = false;
  const uint64_t t0 = nowNs();
  fleet.at(added).busy = true;
  fleet.registerMember(added, [&](bool ok) {
    fleet.at(added).busy = false;
    registered = ok;
  });
  loop.runUntil([&] { return !fleet.at(added).busy; }, 60 * kSec);
  if (!registered) fail("the joining member of " + group + " could not register");
  settle(loop, fleet, settleNs, 600 * kSec, expected, latency);
  return nowNs() - t0;
}

void bigGroup(const Args& args) {
  const uint16_t port = static_cast<uint16_t>(args.list("ports").at(0));
  const size_t n = static_cast<size_t>(args.num("members", 10000));
  const int32_t partitions = static_cast<int32_t>(args.num("partitions", 10000));
  const size_t conns = static_cast<size_t>(args.num("conns", 1000));
  const size_t others = static_cast<size_t>(args.num("others", 1000));
  const int64_t sessionMs = args.num("session-ms", 60000);
  const uint64_t settleNs = static_cast<uint64_t>(args.num("settle-interval-ms", 1000)) * kMs;
  const std::string serverLog = args.get("server-log");
  if (serverLog.empty()) fail("big-group needs --server-log (groupcoordd's log file: assignment times)");
  EnsembleProbe zk{static_cast<int>(args.num("zk-base-port", 23800))};
  const std::string sc =
      args.get("label", "7 one group of " + count(static_cast<double>(n)) + " members, " + count(partitions) +
                            " partitions");

  const std::string big = "bg-" + stamp(), side = big + "-others";
  const std::string sideTopic = side + "-t";
  const std::string topicsPath = args.get("topics-path", "/brokers/topics");
  // A topic's znode lists its partitions, and ZooKeeper takes about 1 MiB a
  // znode (100,000 partitions need 1.2 MB): past 50,000 the group's
  // partitions are spread over more topics.
  constexpr int32_t kPerTopic = 50000;
  std::vector<std::string> topics;
  std::vector<protocol::TopicPartition> all;
  for (int32_t first = 0, k = 0; first < partitions; first += kPerTopic, ++k) {
    const int32_t size = std::min(kPerTopic, partitions - first);
    const std::string t = big + "-t" + (k > 0 ? std::to_string(k + 1) : "");
    createTopic(zk, topicsPath, t, size);
    for (const auto& tp : partitionsOf(t, size)) all.push_back(tp);
    topics.push_back(t);
  }
  createTopic(zk, topicsPath, sideTopic, 100);
  Loop loop;
  for (const auto& [g, t] : {std::pair{big, topics}, std::pair{side, std::vector<std::string>{sideTopic}}}) {
    if (auto e = createGroup(loop, port, g, sessionMs, t); e != ErrorCode::NONE) {
      fail("CreateGroup: " + std::string(protocol::errorName(e)));
    }
  }
  const auto registerVersion = static_cast<int16_t>(args.num("register-version", 2));
  Fleet fleet(loop, {port}, conns);
  fleet.registerVersion = registerVersion;
  for (size_t i = 0; i < n; ++i) fleet.add(big, port);
  Fleet bystanders(loop, {port}, std::max<size_t>(1, others / 10));
  for (size_t i = 0; i < others; ++i) bystanders.add(side, port);
  const std::map<std::string, std::vector<protocol::TopicPartition>> expected{{big, all}};
  const std::map<std::string, std::vector<protocol::TopicPartition>> sideExpected{{side, partitionsOf(sideTopic, 100)}};
  size_t logOffset = 0;
  assignmentsInLog(serverLog, big, logOffset);  // to the end: earlier scenarios' lines

  // What a step cost: generation moves, registrations, the bytes of their
  // answers, connections lost, members told they were evicted.
  struct Mark {
    int64_t generation = 0;
    uint64_t registrations = 0, bytes = 0, lost = 0, evicted = 0;
  };
  auto mark = [&](Fleet& f) {
    Mark m;
    for (const auto& x : f.members()) m.generation = std::max(m.generation, x.generation);
    m.registrations = f.stats().registrations;
    m.bytes = loop.bytesReceived(protocol::ApiKey::RegisterConsumer);
    m.lost = loop.connectionsLost();
    auto e = f.stats().errors.find("UNKNOWN_CONSUMER");
    m.evicted = e == f.stats().errors.end() ? 0 : e->second;
    return m;
  };
  auto costText = [](const Mark& a, const Mark& b) {
    const int64_t moves = b.generation - a.generation;
    const double bytes = static_cast<double>(b.bytes - a.bytes);
    return std::to_string(moves) + "; " + count(static_cast<double>(b.registrations - a.registrations)) + "; " +
           fmt(bytes / 1e6 / static_cast<double>(std::max<int64_t>(1, moves)), 2) + " MB; " +
           std::to_string(b.lost - a.lost) + "; " + std::to_string(b.evicted - a.evicted);
  };
  const std::string costName =
      "generation moves; registrations; RegisterConsumer answer bytes per move (v" + std::to_string(registerVersion) +
      "); connections lost; members told they were evicted";

  // The server's own figures of each step (/metrics), when its port is
  // given: the sampled heartbeats of groups in step, which during a step of
  // the big group are the other group's (docs/design.md, "Heartbeats").
  const auto metricsPort = static_cast<uint16_t>(args.num("metrics-port", 0));
  auto scrape = [&] { return metricsPort != 0 ? scrapeMetrics(metricsPort) : Samples{}; };

  // The other group first: its members heartbeat through every step of the
  // big group, the storm included.
  if (!bystanders.joinAll(60 * kSec)) fail("the other group's members could not join");
  settle(loop, bystanders, 250 * kMs, 60 * kSec, sideExpected);
  Histogram bigSteady, sideStorm, sideSteady, bigJoin, sideJoin, bigLeave, sideLeave;

  log("%s: %zu members joining one group", sc.c_str(), n);
  const Samples s0 = scrape();
  bystanders.startBeating(1 * kSec, &sideStorm);
  const Mark m0 = mark(fleet);
  const uint64_t j0 = nowNs();
  if (!fleet.joinAll(600 * kSec)) fail("members could not join");
  // The storm's window for the server's figures ends with the last
  // registration answered: after it the big group is in step and its own
  // heartbeats would count among the other group's.
  const Samples s1 = scrape();
  settle(loop, fleet, settleNs, 600 * kSec, expected);
  const uint64_t first = nowNs() - j0;
  const Mark m1 = mark(fleet);
  bystanders.stopBeating();
  const auto initial = assignmentsInLog(serverLog, big, logOffset);
  log("%s: all in sync after %.1f s", sc.c_str(), static_cast<double>(first) / kSec);

  // Steady: both groups heartbeat; then one join, then one leave, each
  // until every member of the big group is in sync again, with the other
  // group heartbeating throughout.
  loop.runFor(20 * kMs);
  const Samples s2 = scrape();
  bystanders.startBeating(1 * kSec, &sideSteady);
  fleet.startBeating(settleNs, &bigSteady);
  loop.runFor(settleNs + 3 * kSec);
  fleet.stopBeating();
  bystanders.stopBeating();
  const Samples s3 = scrape();
  loop.runFor(20 * kMs);

  // One join and one leave, --rounds times (3 by default): the server's
  // figures of each kind of step are summed over the rounds (a step of
  // about a second gives the other group some 130 samples, so one step's
  // p99 would be its second-worst sample). The cost rows are the first
  // round's.
  const int rounds = static_cast<int>(std::max<int64_t>(1, args.num("rounds", 3)));
  Samples joinWin, leaveWin;
  auto addWindow = [](Samples& sum, const Samples& before, const Samples& after) {
    for (const auto& [key, v] : after) {
      const auto b = before.find(key);
      sum[key] += v - (b == before.end() ? 0.0 : b->second);
    }
  };
  Mark m2, m3, m4;
  std::vector<double> joinSyncs, leaveSyncs;
  std::vector<LoggedAssignment> onJoin, onLeave;
  for (int round = 0; round < rounds; ++round) {
    const Samples s4 = scrape();
    bystanders.startBeating(1 * kSec, &sideJoin);
    const Mark a = mark(fleet);
    joinSyncs.push_back(static_cast<double>(joinOne(loop, fleet, big, port, settleNs, expected, &bigJoin)) / kSec);
    const Mark b = mark(fleet);
    bystanders.stopBeating();
    addWindow(joinWin, s4, scrape());
    for (const auto& x : assignmentsInLog(serverLog, big, logOffset)) onJoin.push_back(x);

    const Samples s6 = scrape();
    bystanders.startBeating(1 * kSec, &sideLeave);
    const uint64_t t1 = nowNs();
    bool leftOk = false, leftAnswered = false;
    const auto who = static_cast<size_t>(round);
    Member& leaver = fleet.at(who);
    leaver.crashed = true;  // beats no more
    loop.send(fleet.connFor(who), protocol::LeaveGroupRequest{big, leaver.id},
              [&](const protocol::Response* r, uint64_t) {
                leftAnswered = true;
                auto* lr = r ? std::get_if<protocol::LeaveGroupResponse>(r) : nullptr;
                leftOk = lr && lr->error == ErrorCode::NONE;
              });
    loop.runUntil([&] { return leftAnswered; }, 60 * kSec);
    if (!leftOk) fail("LeaveGroup was not answered NONE");
    settle(loop, fleet, settleNs, 600 * kSec, expected, &bigLeave);
    leaveSyncs.push_back(static_cast<double>(nowNs() - t1) / kSec);
    const Mark c = mark(fleet);
    bystanders.stopBeating();
    addWindow(leaveWin, s6, scrape());
    loop.runFor(100 * kMs);
    for (const auto& x : assignmentsInLog(serverLog, big, logOffset)) onLeave.push_back(x);
    if (round == 0) {
      m2 = a;
      m3 = b;
      m4 = c;
    }
  }
  auto syncText = [](const std::vector<double>& v) {
    std::string out;
    for (double x : v) out += (out.empty() ? "" : ", ") + fmt(x, 2);
    return out;
  };
  const Samples none;

  auto assignmentText = [](const std::vector<LoggedAssignment>& v) {
    if (v.empty()) return std::string("not logged");
    double worst = 0;
    size_t moved = 0;
    bool ahead = true;
    for (auto& a : v) {
      worst = std::max(worst, a.ms);
      moved = std::max(moved, a.moved);
      ahead = ahead && a.ahead;
    }
    return fmt(worst, 1) + " ms" + (v.size() > 1 ? " (worst of " + std::to_string(v.size()) + ")" : "") + ", " +
           (v.size() > 1 ? "at most " : "") + count(static_cast<double>(moved)) + " moved" + (ahead ? ", off the lock" : ", under the lock");
  };
  row(sc, "first registrations until all in sync (s); its assignments",
      fmt(static_cast<double>(first) / kSec, 2) + "; " + assignmentText(initial), "< 10 s");
  row(sc, "the join storm: " + costName, costText(m0, m1), "<= 3; -; < 20 MB; 0; 0");
  row(sc, "one join: " + costName, costText(m2, m3), "1; -; < 20 MB; 0; 0");
  row(sc, "one leave: " + costName, costText(m3, m4), "1; -; < 20 MB; 0; 0");
  // A join into a balanced group must hand the newcomer its quota, taken
  // from others; a leave must hand out only the leaver's partitions (the
  // log counts those apart: they had no owner left).
  const size_t forcedOnJoin = all.size() / (n + 1);
  row(sc, "assignment on a join: time, partitions moved (balance forces " + count(static_cast<double>(forcedOnJoin)) +
              "), where",
      assignmentText(onJoin), "< 100 ms");
  row(sc, "assignment on a leave: time, partitions moved besides the leaver's (balance forces 0), where",
      assignmentText(onLeave), "< 100 ms");
  row(sc, "one join: every member in sync after (s) / one leave (s), each round",
      syncText(joinSyncs) + " / " + syncText(leaveSyncs));
  row(sc, "the group's heartbeat p99: steady / during the joins / during the leaves (ms)",
      fmt(bigSteady.quantileMs(0.99), 3) + " / " + fmt(bigJoin.quantileMs(0.99), 3) + " / " +
          fmt(bigLeave.quantileMs(0.99), 3));
  row(sc,
      count(static_cast<double>(others)) +
          " members of another group, client-seen heartbeat p99: during the storm / steady / during the joins / "
          "during the leaves (ms)",
      fmt(sideStorm.quantileMs(0.99), 3) + " / " + fmt(sideSteady.quantileMs(0.99), 3) + " / " +
          fmt(sideJoin.quantileMs(0.99), 3) + " / " + fmt(sideLeave.quantileMs(0.99), 3));
  if (metricsPort != 0) {
    // Server-side, from the kernel's receipt of a heartbeat to its answer
    // sent: the samples of groups in step. Steady, that is both groups;
    // during a step of the big group (moving), the other group's alone.
    const std::string family = "groupcoord_heartbeat_latency_seconds";
    const std::string inStep = "group=\"in_step\"", moving = "group=\"moving\"";
    const auto p99 = [&](const Samples& a, const Samples& b, const std::string& labels) {
      return bucketQuantile(bucketsOf(a, family, labels), bucketsOf(b, family, labels), 0.99);
    };
    const double steady99 = p99(s2, s3, inStep);
    const Samples* joins = &joinWin;
    const Samples* leaves = &leaveWin;
    for (const auto& [what, a, b] : {std::tuple{"steady (both groups in step)", &s2, &s3},
                                     std::tuple{"during the storm (until every registration is answered)", &s0, &s1},
                                     std::tuple{"during the joins", &none, joins},
                                     std::tuple{"during the leaves", &none, leaves}}) {
      const double v = p99(*a, *b, inStep);
      row(sc,
          std::string("server-side heartbeat time of groups in step, arrival to answer sent, ") + what +
              ": p50 / p99 / p999 (us)",
          serverQuantilesUs(*a, *b, family, inStep) +
              (a != &s2 && v > 0 && steady99 > 0 ? "; p99 " + fmt(v / steady99, 1) + "x steady" : std::string()),
          a == &s2 ? std::string() : std::string("p99 <= 2x steady"));
    }
    // Not the storm: the big group heartbeats only once its registrations
    // are answered, which ends the storm's window.
    for (const auto& [what, a, b] : {std::tuple{"the joins", &none, joins}, std::tuple{"the leaves", &none, leaves}}) {
      row(sc, std::string("server-side heartbeat time of the moving group during ") + what + ": p50 / p99 / p999 (us)",
          serverQuantilesUs(*a, *b, family, moving));
    }
    // Where the time went during the storm: the big group does not
    // heartbeat until its registrations are answered, so these samples are
    // the other group's.
    for (const char* stage : {"arrival_to_wake", "wake_to_read", "handle", "encode", "write"}) {
      row(sc, std::string("server stage ") + stage + " during the storm, sampled: p50 / p99 / p999 (us)",
          serverQuantilesUs(s0, s1, "groupcoord_heartbeat_stage_seconds", std::string("stage=\"") + stage + "\""));
    }
  }
  row(sc, "answers not NONE (all of the group's, rebalances included); the other group's",
      errorsText(fleet.stats()) + "; " + errorsText(bystanders.stats()));
  if (args.num("client-mode", 1) == 0) return;

  // The same group size in client mode (membership only): its join storm,
  // then one join, with the answers' bytes per move.
  const std::string cm = big + "-client";
  if (auto e = createGroup(loop, port, cm, sessionMs, {}, nullptr, protocol::AssignmentMode::CLIENT);
      e != ErrorCode::NONE) {
    fail("CreateGroup (client mode): " + std::string(protocol::errorName(e)));
  }
  // Each new member's answer is the whole list (it holds none), so the
  // storm costs O(members²) bytes whatever the version: its size is its own.
  const size_t cn = static_cast<size_t>(args.num("client-members", static_cast<int64_t>(n)));
  Fleet members(loop, {port}, std::max<size_t>(1, conns * cn / std::max<size_t>(1, n)));
  members.registerVersion = registerVersion;
  for (size_t i = 0; i < cn; ++i) members.add(cm, port);
  log("%s: %zu members joining a client-mode group", sc.c_str(), cn);
  const Mark c0 = mark(members);
  const uint64_t c0t = nowNs();
  if (!members.joinAll(600 * kSec)) fail("client-mode members could not join");
  settle(loop, members, settleNs, 600 * kSec);
  const uint64_t cFirst = nowNs() - c0t;
  const Mark c1 = mark(members);
  const uint64_t cJoin = joinOne(loop, members, cm, port, settleNs, {}, nullptr);
  const Mark c2 = mark(members);
  row(sc, "client mode, " + count(static_cast<double>(cn)) + " members: join storm until all in sync (s) / one join (s)",
      fmt(static_cast<double>(cFirst) / kSec, 2) + " / " + fmt(static_cast<double>(cJoin) / kSec, 2));
  row(sc, "client mode, the join storm: " + costName, costText(c0, c1));
  row(sc, "client mode, one join: " + costName, costText(c1, c2), "1; -; < 20 MB; 0; 0");
}

// ---------------------------------------------------------------------------
// 7c. The optimiser alone: adapter::assignPartitions on a balanced group,
// one member joining and one leaving, for the shapes of the big-group
// scenarios and a group of many small topics. No server: the time is the
// function's, on the calling thread, median of --repeat runs.

void assignScenario(const Args& args) {
  const int repeat = static_cast<int>(args.num("repeat", 5));
  struct Shape {
    std::string name;
    size_t members;
    int32_t topics, perTopic;
  };
  const std::vector<Shape> shapes{{"10,000 members, one topic of 10,000", 10000, 1, 10000},
                                  {"1,000 members, 100,000 partitions in 2 topics", 1000, 2, 50000},
                                  {"1,000 members, 1,000 topics of 50", 1000, 1000, 50}};
  for (const auto& sh : shapes) {
    std::map<std::string, int32_t> partitions;
    for (int32_t t = 0; t < sh.topics; ++t) partitions["t" + std::to_string(t)] = sh.perTopic;
    std::vector<std::string> ids;
    for (size_t i = 0; i < sh.members; ++i) ids.push_back("m-" + std::to_string(100000 + i));
    const adapter::Assignment base = adapter::assignPartitions(ids, partitions, {});
    auto timeOf = [&](const std::vector<std::string>& members, size_t* moved) {
      std::vector<double> ms;
      adapter::Assignment out;
      for (int r = 0; r < repeat; ++r) {
        const uint64_t t0 = nowNs();
        out = adapter::assignPartitions(members, partitions, base);
        ms.push_back(static_cast<double>(nowNs() - t0) / kMs);
      }
      *moved = adapter::countMoves(base, out);
      std::sort(ms.begin(), ms.end());
      return ms[ms.size() / 2];
    };
    std::vector<std::string> joined = ids;
    joined.push_back("m-999999");
    std::vector<std::string> left(ids.begin() + 1, ids.end());
    size_t movedJoin = 0, movedLeave = 0;
    const double join = timeOf(joined, &movedJoin);
    const double leave = timeOf(left, &movedLeave);
    row("7c the optimiser alone", sh.name + ": one join / one leave (ms, median of " + std::to_string(repeat) +
                                      "; partitions moved)",
        fmt(join, 1) + " / " + fmt(leave, 1) + " (" + count(static_cast<double>(movedJoin)) + " / " +
            count(static_cast<double>(movedLeave)) + ")",
        sh.topics == 1000 ? "<= 15 ms" : "");
  }
}

// ---------------------------------------------------------------------------
// 4. Failure detection and takeover.

void failover(const Args& args) {
  const auto ports = args.list("ports");
  const auto pids = args.list("pids");
  if (ports.size() != 2 || pids.size() != 2) fail("failover needs --ports P1,P2 and --pids PID1,PID2");
  const std::vector<uint16_t> servers{static_cast<uint16_t>(ports[0]), static_cast<uint16_t>(ports[1])};
  const int64_t zkSessionMs = args.num("zk-session-ms", 4000);
  const int64_t memberSessionMs = args.num("member-session-ms", 2000);
  const uint64_t interval = static_cast<uint64_t>(args.num("heartbeat-ms", 200)) * kMs;
  EnsembleProbe zk{static_cast<int>(args.num("zk-base-port", 23800))};
  const std::string base = "fo-" + stamp();
  const std::string topic = base + "-t";
  createTopic(zk, args.get("topics-path", "/brokers/topics"), topic, 20);
  const auto parts = partitionsOf(topic, 20);

  // (a) A member crashes: it stops heartbeating.
  {
    Loop loop;
    const std::string group = base + "-crash";
    protocol::Broker controller;
    if (auto e = createGroup(loop, servers[0], group, memberSessionMs, {topic}, &controller); e != ErrorCode::NONE) {
      fail("CreateGroup: " + std::string(protocol::errorName(e)));
    }
    Fleet fleet(loop, servers, 10);
    for (int i = 0; i < 10; ++i) fleet.add(group, controller.port);
    if (!fleet.joinAll(30 * kSec)) fail("members could not join");
    settle(loop, fleet, interval, 30 * kSec, {{group, parts}});
    fleet.startBeating(interval);
    std::vector<double> evictions, reowned;
    for (size_t victim = 0; victim < 3; ++victim) {
      loop.runFor(1 * kSec);
      Member& v = fleet.at(victim);
      v.crashed = true;
      loop.runUntil([&] { return !v.busy; }, 5 * kSec);
      const uint64_t last = v.lastAckedHeartbeatSentNs;
      const auto lost = v.owned;
      const std::string id = v.id;
      // The controller's view, polled on a connection of its own.
      const int probe = loop.connect(v.port);
      uint64_t evictedAt = 0, ownedAt = 0;
      bool asked = false;
      std::function<void()> poll = [&] {
        if (evictedAt || asked) return;
        asked = true;
        loop.send(probe, protocol::ListGroupsRequest{{group}}, [&](const protocol::Response* r, uint64_t) {
          asked = false;
          const auto* resp = r ? std::get_if<protocol::ListGroupsResponse>(r) : nullptr;
          if (resp && resp->groups.size() == 1) {
            const auto& ms = resp->groups[0].members;
            if (std::find(ms.begin(), ms.end(), id) == ms.end()) evictedAt = nowNs();
          }
          if (!evictedAt) loop.after(1 * kMs, poll);
        });
      };
      poll();
      loop.runUntil(
          [&] {
            if (!ownedAt) {
              std::set<protocol::TopicPartition> held;
              for (const auto& m : fleet.members()) {
                if (!m.crashed) held.insert(m.owned.begin(), m.owned.end());
              }
              if (std::all_of(lost.begin(), lost.end(), [&](const auto& tp) { return held.count(tp) > 0; })) {
                ownedAt = nowNs();
              }
            }
            return evictedAt && ownedAt;
          },
          30 * kSec);
      loop.close(probe);
      if (!evictedAt || !ownedAt) fail("a crashed member was not evicted, or its partitions not taken over");
      const double deadline = static_cast<double>(last) + static_cast<double>(memberSessionMs) * kMs;
      evictions.push_back((static_cast<double>(evictedAt) - deadline) / kMs);
      reowned.push_back((static_cast<double>(ownedAt) - deadline) / kMs);
      log("failover: member %zu evicted %.0f ms past its session timeout; its %zu partitions owned again at +%.0f ms",
          victim, evictions.back(), lost.size(), reowned.back());
    }
    fleet.stopBeating();
    loop.runFor(300 * kMs);
    auto join = [](const std::vector<double>& v) {
      std::string s;
      for (double x : v) s += (s.empty() ? "" : ", ") + fmt(x);
      return s;
    };
    const std::string sc = "4 failure";
    row(sc, "crashed member evicted, ms past its " + std::to_string(memberSessionMs) + " ms session (3 crashes)",
        join(evictions), "<= 100");
    row(sc, "its partitions owned again, ms past the session (heartbeat every " +
                std::to_string(interval / kMs) + " ms)",
        join(reowned), "<= " + std::to_string(2 * interval / kMs));
  }

  // (b) A server is killed with SIGKILL.
  {
    Loop loop;
    const size_t groups = 10;
    Fleet fleet(loop, servers, 20);
    std::map<std::string, std::vector<protocol::TopicPartition>> expected;
    for (size_t g = 0; g < groups; ++g) {
      const std::string group = base + "-k" + std::to_string(g);
      if (auto e = createGroup(loop, servers[g % 2], group, 10000, {topic}); e != ErrorCode::NONE) {
        fail("CreateGroup: " + std::string(protocol::errorName(e)));
      }
      expected[group] = parts;
      for (int i = 0; i < 5; ++i) fleet.add(group, servers[0]);
    }
    if (!fleet.joinAll(60 * kSec)) fail("members could not join");
    settle(loop, fleet, 500 * kMs, 60 * kSec, expected);
    std::map<uint16_t, int> controlled;
    for (const auto& [group, _] : expected) {
      auto info = describe(loop, servers[0], group);
      if (!info || info->controller.isNone()) fail("group " + group + " has no controller");
      ++controlled[info->controller.port];
    }
    const uint16_t victim = controlled[servers[0]] >= controlled[servers[1]] ? servers[0] : servers[1];
    const uint16_t survivor = victim == servers[0] ? servers[1] : servers[0];
    const int victimPid = static_cast<int>(victim == servers[0] ? pids[0] : pids[1]);
    fleet.startBeating(500 * kMs);
    loop.runFor(1 * kSec);
    log("failover: SIGKILL to the server on port %u (pid %d), which controls %d of %zu groups", victim, victimPid,
        controlled[victim], groups);
    fleet.stats() = FleetStats{};
    const uint64_t t0 = nowNs();
    ::kill(victimPid, SIGKILL);
    uint64_t controlAt = 0, syncAt = 0;
    bool asked = false;
    int probe = -1;
    std::function<void()> poll = [&] {
      if (controlAt || asked) return;
      if (!loop.isOpen(probe)) probe = loop.connect(survivor);
      asked = true;
      std::vector<std::string> names;
      for (const auto& [g, _] : expected) names.push_back(g);
      loop.send(probe, protocol::ListGroupsRequest{names}, [&](const protocol::Response* r, uint64_t) {
        asked = false;
        const auto* resp = r ? std::get_if<protocol::ListGroupsResponse>(r) : nullptr;
        if (resp && resp->groups.size() == groups &&
            std::all_of(resp->groups.begin(), resp->groups.end(),
                        [&](const protocol::GroupInfo& gi) { return gi.controller.port == survivor; })) {
          controlAt = nowNs();
          return;
        }
        loop.after(5 * kMs, poll);
      });
    };
    poll();
    uint64_t lastCheck = 0;
    loop.runUntil(
        [&] {
          const uint64_t now = nowNs();
          if (controlAt && !syncAt && now - lastCheck > 5 * kMs) {
            lastCheck = now;
            bool all = fleet.allInSync();
            for (const auto& [g, p] : expected) all = all && fleet.assignmentExact(p, nullptr, g);
            if (all) syncAt = now;
          }
          return controlAt && syncAt;
        },
        60 * kSec);
    fleet.stopBeating();
    loop.runFor(300 * kMs);
    if (!controlAt || !syncAt) fail("the surviving server did not take over within 60 s");
    const std::string sc = "4 takeover";
    const std::string target = "<= " + std::to_string(zkSessionMs + 2000);
    row(sc, "survivor controls all " + std::to_string(groups) + " groups after SIGKILL (ms, ZooKeeper session " +
                std::to_string(zkSessionMs) + " ms)",
        fmt(static_cast<double>(controlAt - t0) / kMs), target);
    row(sc, "all " + std::to_string(fleet.size()) + " members in sync, assignments exact (ms after SIGKILL)",
        fmt(static_cast<double>(syncAt - t0) / kMs), target);
    row(sc, "answers the members saw meanwhile (not NONE)", errorsText(fleet.stats()));
  }
}

// ---------------------------------------------------------------------------
// 5. Membership held directly in ZooKeeper, beside groupcoord.

struct Window {
  double packets = 0;
  double cpu = 0;
  double seconds = 0;
};

template <typename Fn>
Window measure(const EnsembleProbe& zk, Fn&& during) {
  const double p0 = zk.sum("zk_packets_received");
  const double c0 = zk.cpuSeconds();
  const uint64_t t0 = nowNs();
  during();
  Window w;
  w.seconds = static_cast<double>(nowNs() - t0) / kSec;
  w.packets = zk.sum("zk_packets_received") - p0;
  w.cpu = zk.cpuSeconds() - c0;
  return w;
}

struct ChangeFigures {
  double learnMs = 0;       // until every member knew
  double packets = 0;       // received by the ensemble meanwhile
  double notifications = 0; // watch notifications delivered
};

struct SideFigures {
  double sessions = 0;
  double watches = 0;
  Window steady;
  ChangeFigures join, leave;
};

// The pre-adapter design: every member has its own ZooKeeper session and
// ephemeral znode and keeps a children watch on its group, re-reading the
// children each time it fires.
SideFigures directZk(const EnsembleProbe& zk, size_t n, double steadySeconds) {
  struct DirectMember {
    std::unique_ptr<zk::Session> session;
    std::atomic<uint64_t> learnedNs{0};
    std::atomic<bool> armed{false};
  };
  const double sessionsBefore = zk.clientConnections();
  const double watchesBefore = zk.sum("zk_watch_count");
  const std::string root = "/bench-direct-" + stamp() + "-" + std::to_string(n);
  const std::string ids = root + "/ids";
  zk::SessionConfig cfg;
  cfg.connect = zk.connectString();
  cfg.sessionTimeout = std::chrono::milliseconds(10000);
  zk::Session admin(cfg);
  admin.start();
  if (admin.waitConnected(std::chrono::seconds(15)) != zk::Error::Ok) fail("cannot connect to ZooKeeper");
  if (admin.ensurePathSync(ids) != zk::Error::Ok) fail("cannot create " + ids);

  std::vector<std::unique_ptr<DirectMember>> ms;
  for (size_t i = 0; i < n; ++i) {
    auto m = std::make_unique<DirectMember>();
    m->session = std::make_unique<zk::Session>(cfg);
    m->session->start();
    ms.push_back(std::move(m));
  }
  for (size_t i = 0; i < n; ++i) {
    if (ms[i]->session->waitConnected(std::chrono::seconds(60)) != zk::Error::Ok) fail("a direct member could not connect");
    if (ms[i]->session->createSync(ids + "/m" + std::to_string(i), "", zk::CreateMode::Ephemeral).error != zk::Error::Ok) {
      fail("a direct member could not create its znode");
    }
  }
  // What every member waits to see: `wanted` present (phase 1) or absent
  // (phase 2).
  std::atomic<int> phase{0};
  const std::string wanted = "joiner";
  std::atomic<uint64_t> notifications{0};
  std::atomic<bool> stopping{false};  // sessions are closing: watches stop re-arming
  std::function<void(DirectMember*)> watchChildren = [&](DirectMember* m) {
    m->session->getChildren(
        ids,
        [&, m](const zk::ChildrenResult& r) {
          m->armed = true;
          if (r.error != zk::Error::Ok) return;
          const bool present = std::find(r.children.begin(), r.children.end(), wanted) != r.children.end();
          const int p = phase.load();
          if ((p == 1 && present) || (p == 2 && !present)) {
            uint64_t zero = 0;
            m->learnedNs.compare_exchange_strong(zero, nowNs());
          }
        },
        [&, m](const zk::WatchEvent& e) {
          if (e.type != zk::WatchEvent::Type::Child || stopping) return;
          ++notifications;
          watchChildren(m);
        });
  };
  for (auto& m : ms) watchChildren(m.get());
  const uint64_t armDeadline = nowNs() + 60 * kSec;
  while (nowNs() < armDeadline &&
         !std::all_of(ms.begin(), ms.end(), [](const auto& m) { return m->armed.load(); })) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));

  admin.close();
  SideFigures f;
  f.sessions = zk.clientConnections() - sessionsBefore;
  f.watches = zk.sum("zk_watch_count") - watchesBefore;
  f.steady = measure(zk, [&] { std::this_thread::sleep_for(std::chrono::duration<double>(steadySeconds)); });

  auto change = [&](int p, const std::function<void()>& act) {
    ChangeFigures c;
    for (auto& m : ms) m->learnedNs = 0;
    const uint64_t n0 = notifications.load();
    phase = p;
    uint64_t t0 = 0;
    Window w = measure(zk, [&] {
      t0 = nowNs();
      act();
      const uint64_t deadline = nowNs() + 30 * kSec;
      while (nowNs() < deadline &&
             !std::all_of(ms.begin(), ms.end(), [](const auto& m) { return m->learnedNs.load() != 0; })) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
    uint64_t last = 0;
    for (auto& m : ms) {
      if (m->learnedNs == 0) fail("a direct member never saw the membership change");
      last = std::max<uint64_t>(last, m->learnedNs);
    }
    c.learnMs = static_cast<double>(last - t0) / kMs;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // stragglers' notifications
    c.packets = w.packets;
    c.notifications = static_cast<double>(notifications.load() - n0);
    return c;
  };
  auto joiner = std::make_unique<zk::Session>(cfg);
  joiner->start();
  if (joiner->waitConnected(std::chrono::seconds(15)) != zk::Error::Ok) fail("the joiner could not connect");
  f.join = change(1, [&] {
    if (joiner->createSync(ids + "/" + wanted, "", zk::CreateMode::Ephemeral).error != zk::Error::Ok) {
      fail("the joiner could not create its znode");
    }
  });
  // Leaving: the joiner's session closes, so its ephemeral znode goes.
  f.leave = change(2, [&] { joiner->close(); });
  stopping = true;
  joiner.reset();
  phase = 0;
  // Closing a session waits for ZooKeeper's answer: a thousand of them one
  // after another take a minute, so they close side by side.
  std::vector<std::thread> closers;
  const size_t lanes = 32;
  for (size_t l = 0; l < lanes; ++l) {
    closers.emplace_back([&ms, l] {
      for (size_t i = l; i < ms.size(); i += lanes) ms[i]->session.reset();
    });
  }
  for (auto& t : closers) t.join();
  ms.clear();
  return f;
}

SideFigures viaGroupcoord(const EnsembleProbe& zk, uint16_t port, size_t n, double steadySeconds) {
  const double watchesBefore = zk.sum("zk_watch_count");
  Loop loop;
  const std::string group = "dz-" + stamp() + "-" + std::to_string(n);
  if (auto e = createGroup(loop, port, group, 10000, {}); e != ErrorCode::NONE) {
    fail("CreateGroup: " + std::string(protocol::errorName(e)));
  }
  Fleet fleet(loop, {port}, std::min<size_t>(n, 100));
  for (size_t i = 0; i < n; ++i) fleet.add(group, port);
  if (!fleet.joinAll(120 * kSec)) fail("members could not join");
  settle(loop, fleet, 200 * kMs, 120 * kSec);
  // From here on, members heartbeat once a second, as a real client would.
  fleet.startBeating(1 * kSec);
  loop.runFor(1500 * kMs);

  SideFigures f;
  f.sessions = zk.clientConnections();  // the server's own: the members add none
  f.watches = zk.sum("zk_watch_count") - watchesBefore;
  f.steady = measure(zk, [&] { loop.runFor(static_cast<uint64_t>(steadySeconds * kSec)); });

  // Each member learns of a change when it registers at the new generation
  // (its next heartbeat answers REBALANCE_NEEDED).
  std::vector<uint64_t> learned(n + 1, 0);
  int64_t wantGen = INT64_MAX;
  fleet.onRegistered = [&](size_t i, int64_t gen) {
    if (gen >= wantGen && learned[i] == 0) learned[i] = nowNs();
  };
  auto change = [&](const std::function<void()> act) {
    ChangeFigures c;
    std::fill(learned.begin(), learned.end(), 0);
    // The change moves the generation by one; members may register at the
    // new one before `act` has even returned.
    auto before = describe(loop, port, group);
    if (!before) fail("cannot describe the group");
    wantGen = before->generation + 1;
    uint64_t t0 = 0;
    Window w = measure(zk, [&] {
      t0 = nowNs();
      act();
      loop.runUntil(
          [&] {
            for (size_t i = 0; i < n; ++i) {
              if (learned[i] == 0) return false;
            }
            return true;
          },
          30 * kSec);
    });
    uint64_t last = 0;
    std::vector<double> ms;
    for (size_t i = 0; i < n; ++i) {
      if (learned[i] == 0) fail("a member never learned of the membership change");
      last = std::max(last, learned[i]);
      ms.push_back(static_cast<double>(learned[i] - t0) / kMs);
    }
    std::sort(ms.begin(), ms.end());
    log("direct: through groupcoordd, members learned after %.1f (first), %.1f (median), %.1f ms (last)", ms.front(),
        ms[ms.size() / 2], ms.back());
    c.learnMs = static_cast<double>(last - t0) / kMs;
    c.packets = w.packets;
    c.notifications = 0;  // members learn from heartbeats, not watches
    return c;
  };
  const size_t joiner = fleet.add(group, port);
  f.join = change([&] {
    bool done = false, ok = false;
    fleet.registerMember(joiner, [&](bool r) {
      done = true;
      ok = r;
    });
    loop.runUntil([&] { return done; }, 10 * kSec);
    if (!ok) fail("the joiner could not register");
  });
  fleet.at(joiner).crashed = true;  // not beating; leaves explicitly
  f.leave = change([&] {
    auto r = call(loop, port, protocol::LeaveGroupRequest{group, fleet.at(joiner).id});
    if (!r || protocol::responseError(*r) != ErrorCode::NONE) {
      fail("the joiner could not leave: " +
           (r ? std::string(protocol::errorName(protocol::responseError(*r))) : std::string("no answer")));
    }
  });
  fleet.stopBeating();
  loop.runFor(1200 * kMs);
  for (size_t i = 0; i < n; ++i) call(loop, port, protocol::LeaveGroupRequest{group, fleet.at(i).id});
  return f;
}

void direct(const Args& args) {
  const uint16_t port = static_cast<uint16_t>(args.list("ports").at(0));
  const size_t n = static_cast<size_t>(args.num("members", 100));
  const double steady = static_cast<double>(args.num("steady-seconds", 10));
  EnsembleProbe zk{static_cast<int>(args.num("zk-base-port", 23800))};

  log("direct: %zu members, each with its own ZooKeeper session", n);
  SideFigures d = directZk(zk, n, steady);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  log("direct: the same %zu members through groupcoordd", n);
  SideFigures g = viaGroupcoord(zk, port, n, steady);

  const std::string sc = "5 vs direct ZooKeeper, " + count(static_cast<double>(n)) + " members";
  auto pair = [](double a, double b, int decimals = 0) { return fmt(a, decimals) + " / " + fmt(b, decimals); };
  row(sc, "ZooKeeper sessions held (direct / groupcoord)", pair(d.sessions, g.sessions));
  row(sc, "watches the members add on the ensemble", pair(d.watches, g.watches));
  row(sc, "ZooKeeper packets/s, steady state", pair(d.steady.packets / d.steady.seconds,
                                                   g.steady.packets / g.steady.seconds, 1));
  row(sc, "ensemble CPU, steady state (ms per s)",
      pair(d.steady.cpu * 1000 / d.steady.seconds, g.steady.cpu * 1000 / g.steady.seconds, 1));
  row(sc, "ZooKeeper packets for one member joining / leaving",
      fmt(d.join.packets) + " / " + fmt(d.leave.packets) + " vs " + fmt(g.join.packets) + " / " +
          fmt(g.leave.packets));
  row(sc, "watch notifications per membership change", pair(d.join.notifications, g.join.notifications));
  row(sc, "ms until every member knew of a join / leave (groupcoord: heartbeat every 1 s)",
      fmt(d.join.learnMs, 1) + " / " + fmt(d.leave.learnMs, 1) + " vs " + fmt(g.join.learnMs, 1) + " / " +
          fmt(g.leave.learnMs, 1));
}

// ---------------------------------------------------------------------------
// 6. A fleet of servers through a rolling restart.
//
// This scenario starts its groupcoordd servers itself (it has to restart
// them), each on the same ports every time, with --handover-settle-ms
// short enough for a benchmark. The members follow their groups between
// servers as the client library does (Fleet::followWithoutRegistering).

std::vector<pid_t> gFleetChildren;  // what the exit paths must not leave behind

void killFleetChildren() {
  for (pid_t p : gFleetChildren) {
    if (p > 0) ::kill(p, SIGKILL);
  }
}

void onFleetAlarm(int) {
  static const char msg[] = "[bench] FAILED: the fleet scenario ran past its time limit\n";
  ssize_t ignored = ::write(2, msg, sizeof msg - 1);
  (void)ignored;
  killFleetChildren();
  ::_exit(1);
}

struct FleetServer {
  int32_t id = 0;
  pid_t pid = -1;
  uint16_t port = 0;
  uint16_t http = 0;
  int incarnation = 0;
  std::vector<std::string> logs;  // one per incarnation
};

class ServerFarm {
 public:
  ServerFarm(std::string bin, std::string dir, std::vector<std::string> common)
      : bin_(std::move(bin)), dir_(std::move(dir)), common_(std::move(common)) {}

  FleetServer& at(int32_t id) { return servers_[id]; }

  // Starts server `id` (on its earlier ports when it ran before) and waits
  // until it listens.
  void start(int32_t id) {
    FleetServer& s = servers_[id];
    s.id = id;
    ++s.incarnation;
    const std::string stem = dir_ + "/fleet-server" + std::to_string(id) + "-" + std::to_string(s.incarnation);
    const std::string portFile = stem + ".port", httpFile = stem + ".http-port", log = stem + ".log";
    ::unlink(portFile.c_str());
    ::unlink(httpFile.c_str());
    s.logs.push_back(log);
    std::vector<std::string> argv{bin_,
                                  "--server-id=" + std::to_string(id),
                                  "--listen-address=127.0.0.1",
                                  "--listen-port=" + std::to_string(s.port),
                                  "--port-file=" + portFile,
                                  "--http-address=127.0.0.1",
                                  "--http-port=" + std::to_string(s.http),
                                  "--http-port-file=" + httpFile,
                                  "--log-file=" + log};
    argv.insert(argv.end(), common_.begin(), common_.end());
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) fail("fork failed");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      const int fd = ::open((stem + ".stderr").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::close(fd);
      }
      std::vector<char*> cargs;
      for (auto& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
      cargs.push_back(nullptr);
      ::execv(cargs[0], cargs.data());
      ::_exit(127);
    }
    s.pid = pid;
    gFleetChildren.push_back(pid);
    const uint64_t deadline = nowNs() + 20 * kSec;
    while (nowNs() < deadline) {
      int p = 0, h = 0;
      std::ifstream pf(portFile), hf(httpFile);
      if ((pf >> p) && (hf >> h) && p > 0 && h > 0) {
        s.port = static_cast<uint16_t>(p);
        s.http = static_cast<uint16_t>(h);
        return;
      }
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        s.pid = -1;
        std::ifstream err(stem + ".stderr");
        std::stringstream text;
        text << err.rdbuf();
        fail("groupcoordd " + std::to_string(id) + " exited at start: " + text.str());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    fail("groupcoordd " + std::to_string(id) + " did not listen within 20 s (log: " + log + ")");
  }

  void terminate(int32_t id) {
    if (servers_[id].pid > 0) ::kill(servers_[id].pid, SIGTERM);
  }

  // SIGKILL, as a crash; returns once the process is reaped.
  void crash(int32_t id) {
    if (servers_[id].pid > 0) ::kill(servers_[id].pid, SIGKILL);
    while (!reaped(id)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  // True once the process has exited (it is reaped).
  bool reaped(int32_t id) {
    FleetServer& s = servers_[id];
    if (s.pid <= 0) return true;
    int status = 0;
    if (::waitpid(s.pid, &status, WNOHANG) != s.pid) return false;
    std::replace(gFleetChildren.begin(), gFleetChildren.end(), s.pid, pid_t{-1});
    s.pid = -1;
    return true;
  }

  void stopAll() {
    for (auto& [id, s] : servers_) terminate(id);
    const uint64_t deadline = nowNs() + 15 * kSec;
    for (auto& [id, s] : servers_) {
      while (!reaped(id) && nowNs() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    killFleetChildren();
    for (auto& [id, s] : servers_) reaped(id);
  }

  std::map<int32_t, FleetServer>& all() { return servers_; }

 private:
  std::string bin_, dir_;
  std::vector<std::string> common_;
  std::map<int32_t, FleetServer> servers_;
};

// Watches, on a thread of its own, whether the fleet is balanced: every
// group's controller znode names the server rendezvous hashing (the
// servers' own function, adapter/Hash.h) picks among the expected
// candidates, and each of them reports that many groups in
// groupcoord_groups_controlled.
class BalanceWatch {
 public:
  BalanceWatch(zk::Session& zk, layout::Layout layout, std::vector<std::string> groups)
      : zk_(zk), layout_(std::move(layout)), groups_(std::move(groups)), thread_([this] { run(); }) {}
  ~BalanceWatch() {
    stop_ = true;
    thread_.join();
  }

  // From now on balanced means: over `candidates`, whose HTTP ports these are.
  void expect(std::vector<int32_t> candidates, std::vector<uint16_t> httpPorts) {
    std::lock_guard lock(mu_);
    candidates_ = std::move(candidates);
    httpPorts_ = std::move(httpPorts);
    ++epoch_;
    balancedAt_ = 0;
  }
  // When it was first seen balanced since the last expect(); 0 until then.
  uint64_t balancedAt() const {
    std::lock_guard lock(mu_);
    return balancedAt_;
  }
  std::map<int32_t, int> spread() const {
    std::lock_guard lock(mu_);
    return spread_;
  }

 private:
  void run() {
    while (!stop_) {
      uint64_t epoch;
      std::vector<int32_t> candidates;
      std::vector<uint16_t> https;
      {
        std::lock_guard lock(mu_);
        epoch = epoch_;
        candidates = candidates_;
        https = httpPorts_;
      }
      const uint64_t observed = nowNs();
      std::map<int32_t, int> counts;
      bool ok = !candidates.empty() && read(candidates, counts);
      for (size_t i = 0; ok && i < candidates.size(); ++i) {
        auto m = scrapeMetrics(https[i]);
        auto it = m.find("groupcoord_groups_controlled");
        ok = it != m.end() && static_cast<int>(it->second) == counts[candidates[i]];
      }
      {
        std::lock_guard lock(mu_);
        if (epoch == epoch_) {
          spread_ = counts;
          if (ok && balancedAt_ == 0) balancedAt_ = observed;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // Reads every controller znode and the published weights; true when
  // every group is controlled by a candidate and the placement function
  // the servers use would move none of them.
  bool read(const std::vector<int32_t>& candidates, std::map<int32_t, int>& counts) {
    auto snap = adapter::readFleet(zk_, layout_, groups_, adapter::Weighting::Members, 10);
    if (!snap.ok) return false;
    auto placed = adapter::place(candidates, snap.groups, adapter::PlacementConfig{});
    bool ok = true;
    const std::set<int32_t> allowed(candidates.begin(), candidates.end());
    for (size_t i = 0; i < snap.groups.size(); ++i) {
      ++counts[snap.groups[i].controller];
      if (!allowed.count(snap.groups[i].controller) || placed.target[i] != snap.groups[i].controller) ok = false;
    }
    std::lock_guard lock(mu_);
    last_ = std::move(snap.groups);
    placed_ = std::move(placed);
    return ok;
  }

 public:
  // The last read: controllers and weights, and their placement.
  std::vector<adapter::PlacementGroup> lastGroups() const {
    std::lock_guard lock(mu_);
    return last_;
  }
  adapter::PlacementResult lastPlacement() const {
    std::lock_guard lock(mu_);
    return placed_;
  }

 private:
  std::vector<adapter::PlacementGroup> last_;
  adapter::PlacementResult placed_;
  zk::Session& zk_;
  const layout::Layout layout_;
  const std::vector<std::string> groups_;
  mutable std::mutex mu_;
  std::vector<int32_t> candidates_;
  std::vector<uint16_t> httpPorts_;
  uint64_t epoch_ = 0;
  uint64_t balancedAt_ = 0;
  std::map<int32_t, int> spread_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Heartbeat answers in a window, by answer and by who gave it.
struct Tally {
  uint64_t answered = 0;
  uint64_t notNone = 0;
  std::map<std::string, uint64_t> kinds;
  uint64_t registrations = 0;  // RegisterConsumer calls (set at the window's end)

  std::string text() const {
    std::string out = count(static_cast<double>(answered)) + " / " + count(static_cast<double>(notNone)) + " (" +
                      fmt(answered ? 100.0 * static_cast<double>(notNone) / static_cast<double>(answered) : 0, 2) +
                      "%)";
    if (!kinds.empty()) {
      out += ":";
      bool first = true;
      for (const auto& [k, v] : kinds) {
        out += std::string(first ? " " : ", ") + k + " " + count(static_cast<double>(v));
        first = false;
      }
    }
    return out;
  }
};

// Cumulative histogram buckets (upper bound in seconds -> count), summed
// over scrapes of different processes.
using Buckets = std::map<double, double>;

void addHistogram(Buckets& into, const std::map<std::string, double>& scrape, const std::string& name) {
  const std::string prefix = name + "_bucket{le=\"";
  for (const auto& [series, v] : scrape) {
    if (series.rfind(prefix, 0) != 0) continue;
    const std::string le = series.substr(prefix.size(), series.size() - prefix.size() - 2);
    into[le == "+Inf" ? HUGE_VAL : std::strtod(le.c_str(), nullptr)] += v;
  }
}

// "<= X ms" for the bucket holding quantile q.
std::string bucketQuantile(const Buckets& b, double q) {
  if (b.empty()) return "-";
  const double total = b.rbegin()->second;
  if (total <= 0) return "-";
  for (const auto& [le, c] : b) {
    if (c < q * total) continue;
    if (!std::isinf(le)) return "<= " + fmt(le * 1000);
    return b.size() > 1 ? "> " + fmt(std::prev(b.end(), 2)->first * 1000) : std::string("+Inf");
  }
  return "-";
}

// One handover seen in the servers' logs: when the giving server decided,
// when its transaction was done, and when the next controller served.
struct LoggedHandover {
  double decided = 0, handedOver = 0, serving = 0;  // ms since the epoch; 0: not seen
};

double logTimeMs(const std::string& line) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(line.c_str(), "%d-%d-%d %d:%d:%d.%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &ms) != 7) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(::timegm(&tm)) * 1000.0 + ms;
}

std::vector<LoggedHandover> handoversInLogs(const std::vector<std::string>& files) {
  // group -> times of each kind of line
  std::map<std::string, std::vector<double>> decided, done, serving;
  auto groupOf = [](const std::string& line, size_t at) {
    const size_t colon = line.find(':', at);
    return line.substr(at, colon - at);
  };
  for (const auto& file : files) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      const size_t g = line.find("] group ");
      if (g == std::string::npos) continue;
      const size_t at = g + 8;
      const double t = logTimeMs(line);
      if (line.find(": handing it over to server ", at) != std::string::npos) {
        decided[groupOf(line, at)].push_back(t);
      } else if (line.find(": handed over at generation ", at) != std::string::npos) {
        done[groupOf(line, at)].push_back(t);
      } else if (line.find(": handed over by server ", at) != std::string::npos) {
        serving[groupOf(line, at)].push_back(t);
      }
    }
  }
  std::vector<LoggedHandover> out;
  for (auto& [group, starts] : decided) {
    std::sort(starts.begin(), starts.end());
    auto& d = done[group];
    auto& s = serving[group];
    std::sort(d.begin(), d.end());
    std::sort(s.begin(), s.end());
    for (double t : starts) {
      LoggedHandover h;
      h.decided = t;
      auto di = std::lower_bound(d.begin(), d.end(), t);
      if (di != d.end()) h.handedOver = *di;
      auto si = std::lower_bound(s.begin(), s.end(), t);
      if (si != s.end()) h.serving = *si;
      out.push_back(h);
    }
  }
  return out;
}

std::string p50Max(std::vector<double> v) {
  if (v.empty()) return "-";
  std::sort(v.begin(), v.end());
  return fmt(v[v.size() / 2]) + " / " + fmt(v.back());
}

void fleetScenario(const Args& args) {
  const std::string bin = args.get("server-bin");
  const std::string dir = args.get("work-dir", "/tmp");
  const int servers = static_cast<int>(args.num("servers", 3));
  const size_t n = static_cast<size_t>(args.num("members", 30000));
  const size_t groups = static_cast<size_t>(args.num("groups", 300));
  const int32_t partitions = static_cast<int32_t>(args.num("partitions", 200));
  const size_t conns = static_cast<size_t>(args.num("conns", 100));
  const uint64_t interval = static_cast<uint64_t>(args.num("heartbeat-ms", 3000)) * kMs;
  const int64_t memberSessionMs = args.num("member-session-ms", 10000);
  const int64_t zkSessionMs = args.num("zk-session-ms", 4000);
  const int64_t settleMs = args.num("settle-ms", 2000);
  const long maxSeconds = args.num("max-seconds", 540);
  EnsembleProbe zk{static_cast<int>(args.num("zk-base-port", 23800))};
  if (bin.empty()) fail("fleet needs --server-bin (the groupcoordd binary; it starts and restarts the servers)");
  if (servers < 2) fail("fleet needs --servers 2 or more");

  // However it ends, no server is left behind, and it ends in time.
  std::atexit(killFleetChildren);
  ::signal(SIGALRM, onFleetAlarm);
  ::alarm(static_cast<unsigned>(maxSeconds));
  const uint64_t t00 = nowNs();

  const std::string base = "fl-" + stamp();
  const std::string root = "/bench-" + base;
  const std::string topicsPath = args.get("topics-path", "/brokers/topics");
  const std::string topic = base + "-t";
  createTopic(zk, topicsPath, topic, partitions);
  ServerFarm farm(bin, dir,
                  {"--zk-connect=" + zk.connectString(), "--zk-root=" + root, "--zk-topics-path=" + topicsPath,
                   "--zk-session-timeout-ms=" + std::to_string(zkSessionMs),
                   "--handover-settle-ms=" + std::to_string(settleMs)});
  std::vector<int32_t> ids;
  for (int32_t id = 1; id <= servers; ++id) {
    farm.start(id);
    ids.push_back(id);
  }
  auto portsOf = [&](const std::vector<int32_t>& which, bool http) {
    std::vector<uint16_t> out;
    for (int32_t id : which) out.push_back(http ? farm.at(id).http : farm.at(id).port);
    return out;
  };
  const std::vector<uint16_t> ports = portsOf(ids, false);
  log("fleet: %d servers on ports %u..., ZooKeeper root %s, settle delay %lld ms", servers, ports[0], root.c_str(),
      static_cast<long long>(settleMs));

  zk::SessionConfig cfg;
  cfg.connect = zk.connectString();
  zk::Session observer(cfg);
  observer.start();
  if (observer.waitConnected(std::chrono::seconds(15)) != zk::Error::Ok) fail("cannot connect to ZooKeeper");
  const layout::Layout layout(root);
  for (int i = 0; i < 200; ++i) {
    auto r = observer.getChildrenSync(layout.serversPath());
    if (r.error == zk::Error::Ok && static_cast<int>(r.children.size()) == servers) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Every server has seen the others for the settle delay: groups are
  // claimed where they belong.
  std::this_thread::sleep_for(std::chrono::milliseconds(settleMs + 500));

  Loop loop;
  std::vector<std::string> names;
  std::map<std::string, uint16_t> controllerPort;
  for (size_t g = 0; g < groups; ++g) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "-g%03zu", g);
    names.push_back(base + buf);
    protocol::Broker controller;
    if (auto e = createGroup(loop, ports[g % ports.size()], names.back(), memberSessionMs, {topic}, &controller);
        e != ErrorCode::NONE) {
      fail("CreateGroup: " + std::string(protocol::errorName(e)));
    }
    controllerPort[names.back()] = controller.isNone() ? ports[0] : controller.port;
  }
  BalanceWatch watch(observer, layout, names);
  watch.expect(ids, portsOf(ids, true));

  Fleet fleet(loop, ports, conns);
  fleet.followWithoutRegistering = true;
  for (size_t i = 0; i < n; ++i) fleet.add(names[i % groups], controllerPort[names[i % groups]]);
  log("fleet: %zu members joining %zu groups (%d partitions each) over %zu connections per server", n, groups,
      partitions, conns);
  const uint64_t j0 = nowNs();
  if (!fleet.joinAll(240 * kSec)) fail("members could not join (errors: " + errorsText(fleet.stats()) + ")");
  std::map<std::string, std::vector<protocol::TopicPartition>> expected;
  for (const auto& g : names) expected[g] = partitionsOf(topic, partitions);
  settle(loop, fleet, 1000 * kMs, 240 * kSec, expected);
  const double joinSeconds = static_cast<double>(nowNs() - j0) / kSec;
  log("fleet: all members in sync after %.1f s", joinSeconds);
  if (!loop.runUntil([&] { return watch.balancedAt() != 0; }, 60 * kSec)) fail("the fleet did not balance at start");

  // Every member, in sync, since `since`: its last heartbeat (sent after
  // `since`) answered NONE, and each group's partitions are held exactly once.
  std::string why;
  auto steadySince = [&](uint64_t since) {
    std::map<std::string, std::set<protocol::TopicPartition>> held;
    for (const auto& m : fleet.members()) {
      if (!m.inSync || m.lastAckedHeartbeatSentNs < since) {
        why = "member " + m.id + " of " + m.group + " has not heartbeated NONE since";
        return false;
      }
      for (const auto& tp : m.owned) {
        if (!held[m.group].insert(tp).second) {
          why = m.group + ": a partition held twice";
          return false;
        }
      }
    }
    for (const auto& g : names) {
      if (held[g].size() != static_cast<size_t>(partitions)) {
        why = g + ": " + std::to_string(held[g].size()) + " of " + std::to_string(partitions) + " partitions held";
        return false;
      }
    }
    return true;
  };

  Tally* tally = nullptr;
  uint16_t returningPort = 0;  // the port of the server stopped or returning in this window
  fleet.onHeartbeatAnswer = [&](size_t, uint16_t port, ErrorCode e, bool connectionFailed) {
    if (tally == nullptr) return;
    ++tally->answered;
    if (e == ErrorCode::NONE && !connectionFailed) return;
    ++tally->notNone;
    const std::string what = connectionFailed ? "connection failed" : std::string(protocol::errorName(e));
    ++tally->kinds[what + (port == returningPort ? " (the restarted server)" : " (another server)")];
  };
  fleet.startBeating(interval);
  loop.runFor(interval + 1 * kSec);

  struct Restart {
    int32_t id = 0;
    int groupsBefore = 0;
    double claimedMs = -1, stopSyncMs = -1;
    Tally stopped;
    double balancedMs = -1, backSyncMs = -1;
    Tally window;
    std::map<int32_t, int> spread;
  };
  std::vector<Restart> restarts;
  Buckets histogram;
  const std::string histName = "groupcoord_handover_duration_seconds";
  const size_t restartCount = static_cast<size_t>(std::max<long>(1, args.num("restarts", servers)));
  for (int32_t id : ids) {
    if (restarts.size() >= restartCount) break;
    Restart r;
    r.id = id;
    r.groupsBefore = watch.spread()[id];
    returningPort = farm.at(id).port;
    std::vector<int32_t> others;
    for (int32_t o : ids)
      if (o != id) others.push_back(o);

    // Stopped: its groups are claimed afresh by the others (SIGTERM hands
    // nothing over), and their members register with them.
    addHistogram(histogram, scrapeMetrics(farm.at(id).http), histName);
    log("fleet: SIGTERM to server %d (%d groups)", id, r.groupsBefore);
    uint64_t regs0 = fleet.stats().registrations;
    tally = &r.stopped;
    const uint64_t t0 = nowNs();
    watch.expect(others, portsOf(others, true));
    farm.terminate(id);
    uint64_t lastCheck = 0, claimedAt = 0, syncAt = 0;
    loop.runUntil(
        [&] {
          const uint64_t now = nowNs();
          if (now - lastCheck < 100 * kMs) return false;
          lastCheck = now;
          if (!farm.reaped(id)) return false;
          if (!claimedAt) claimedAt = watch.balancedAt();
          if (claimedAt && steadySince(claimedAt)) syncAt = now;
          return syncAt != 0;
        },
        120 * kSec);
    if (!syncAt) fail("server " + std::to_string(id) + " stopped: the fleet did not settle within 120 s (" + why + ")");
    r.claimedMs = static_cast<double>(claimedAt - t0) / kMs;
    r.stopSyncMs = static_cast<double>(syncAt - t0) / kMs;
    loop.runFor(1 * kSec);
    tally = nullptr;
    r.stopped.registrations = fleet.stats().registrations - regs0;

    // Back: once settled, the others hand it its share.
    farm.start(id);
    const uint64_t back = nowNs();
    log("fleet: server %d is back", id);
    watch.expect(ids, portsOf(ids, true));
    loop.after(static_cast<uint64_t>(settleMs) * kMs, [&] {
      tally = &r.window;
      regs0 = fleet.stats().registrations;
    });
    uint64_t balancedAt = 0;
    syncAt = 0;
    lastCheck = 0;
    loop.runUntil(
        [&] {
          const uint64_t now = nowNs();
          if (now - lastCheck < 100 * kMs) return false;
          lastCheck = now;
          if (!balancedAt) balancedAt = watch.balancedAt();
          if (balancedAt && steadySince(balancedAt)) syncAt = now;
          return syncAt != 0;
        },
        120 * kSec);
    if (!balancedAt) fail("server " + std::to_string(id) + " returned: the fleet did not balance within 120 s");
    if (!syncAt) fail("server " + std::to_string(id) + " returned: members not in sync within 120 s (" + why + ")");
    r.balancedMs = static_cast<double>(balancedAt - back) / kMs;
    r.backSyncMs = static_cast<double>(syncAt - back) / kMs;
    r.spread = watch.spread();
    // The window ends one heartbeat interval and a second after the fleet
    // balanced: every member has heartbeated since the last handover.
    const uint64_t windowEnd =
        std::max({nowNs(), balancedAt + interval + 1 * kSec, back + static_cast<uint64_t>(settleMs) * kMs + kMs});
    loop.runFor(windowEnd - nowNs());
    tally = nullptr;
    r.window.registrations = fleet.stats().registrations - regs0;
    log("fleet: server %d: balanced %.0f ms after its return; heartbeats in the handover window %s", id,
        r.balancedMs, r.window.text().c_str());
    restarts.push_back(r);
  }
  fleet.stopBeating();
  loop.runFor(500 * kMs);
  std::vector<std::string> logs;
  for (auto& [id, s] : farm.all()) {
    addHistogram(histogram, scrapeMetrics(s.http), histName);
    logs.insert(logs.end(), s.logs.begin(), s.logs.end());
  }
  farm.stopAll();
  const auto logged = handoversInLogs(logs);
  std::vector<double> toHandedOver, toServing;
  size_t incomplete = 0;
  for (const auto& h : logged) {
    if (h.handedOver > 0) toHandedOver.push_back(h.handedOver - h.decided);
    if (h.serving > 0) {
      toServing.push_back(h.serving - h.decided);
    } else {
      ++incomplete;
    }
  }

  const std::string sc = "6 fleet";
  const std::string setup = std::to_string(servers) + " servers, " + count(static_cast<double>(n)) + " members in " +
                            count(static_cast<double>(groups)) + " groups";
  row(sc, setup + " (" + std::to_string(partitions) + " partitions each) over " + std::to_string(conns) +
              " connections per server, heartbeat every " + std::to_string(interval / kMs) +
              " ms: all in sync after joining (s)",
      fmt(joinSeconds, 1));
  for (const auto& r : restarts) {
    const std::string s = "server " + std::to_string(r.id);
    row(sc, s + " stopped (SIGTERM): its " + std::to_string(r.groupsBefore) +
                " groups claimed by the others / all members in sync again (ms)",
        fmt(r.claimedMs) + " / " + fmt(r.stopSyncMs));
    row(sc, s + " stopped: heartbeats answered / not NONE until 1 s after in sync; RegisterConsumer calls",
        r.stopped.text() + "; " + count(static_cast<double>(r.stopped.registrations)));
    std::string spread;
    for (const auto& [sid, c] : r.spread) spread += (spread.empty() ? "" : ", ") + std::to_string(c);
    row(sc, s + " back: placed (no group the placement would still move) / all members in sync, ms after its return "
                "(settle delay " + std::to_string(settleMs) + " ms); groups per server after",
        fmt(r.balancedMs) + " / " + fmt(r.backSyncMs) + "; " + spread);
    row(sc, s + " back: handover window (settle delay elapsed until a heartbeat interval + 1 s after balanced): "
                "heartbeats answered / not NONE (share)",
        r.window.text());
    row(sc, s + " back: RegisterConsumer calls in the handover window", count(static_cast<double>(r.window.registrations)),
        "0");
  }
  const double histCount = histogram.empty() ? 0 : histogram.rbegin()->second;
  row(sc, "handover duration p50 / max, servers' " + histName + " (ms, bucket bounds; " +
              count(histCount) + " handovers)",
      bucketQuantile(histogram, 0.5) + " / " + bucketQuantile(histogram, 1.0));
  row(sc, "handover duration p50 / max from the servers' logs (ms): decision to handed over; decision to the next "
          "controller serving (" + count(static_cast<double>(logged.size())) + " handovers" +
          (incomplete ? ", " + std::to_string(incomplete) + " not seen served" : "") + ")",
      p50Max(toHandedOver) + "; " + p50Max(toServing));
  ::alarm(0);
  log("fleet: done in %.0f s (logs: %s/fleet-server*.log)", static_cast<double>(nowNs() - t00) / kSec, dir.c_str());
}

// ---------------------------------------------------------------------------
// 7 placement. The bounded-load placement of groups over servers
// (docs/design.md, "Placement"), judged from outside: each reading takes
// every group's controller and published weight from ZooKeeper and asks the
// servers' own placement function whether it would still move a group. Each
// phase starts its own servers (ServerFarm) under a fresh ZooKeeper root:
//   equal groups: 30 empty groups over 3 servers, one SIGKILLed and back;
//   a fourth server joins 3 holding 300 empty groups; then a fifth comes
//   and goes within the settle delay, three times;
//   uneven groups: 30 groups of heartbeating members, sizes drawn
//   log-uniform, one server SIGKILLed and back; then steady weights for
//   --steady-seconds.

void onPlacementAlarm(int) {
  static const char msg[] = "[bench] FAILED: the placement scenario ran past its time limit\n";
  ssize_t ignored = ::write(2, msg, sizeof msg - 1);
  (void)ignored;
  killFleetChildren();
  ::_exit(1);
}

// What every group weighs besides its members (the servers'
// placement.group.weight, left at its default).
constexpr uint64_t kGroupWeight = 10;

// One reading of a fleet under test.
struct PlacementRead {
  bool placed = false;
  std::string why;                              // why not placed
  std::vector<adapter::PlacementGroup> groups;  // controllers (-1: none) and weights, in the order asked
  double worstWeight = 0;  // with members: the largest |published - (members + 10)| / (members + 10)
};

// Placed: every group is controlled by one of `candidates`, the placement
// over them would move none, and each of them says it controls as many in
// groupcoord_groups_controlled. With `members` (each group's member count)
// also: every published weight is its member count + 10 within what the
// servers republish, a tenth or 10 when that is more (a smaller change of
// weight is never published again).
PlacementRead readPlacement(zk::Session& zk, const layout::Layout& layout, const std::vector<std::string>& names,
                            const std::vector<int32_t>& candidates, const std::vector<uint16_t>& https,
                            const std::vector<uint64_t>* members) {
  PlacementRead r;
  auto snap = adapter::readFleet(zk, layout, names, adapter::Weighting::Members, kGroupWeight);
  if (!snap.ok) {
    r.why = snap.error;
    return r;
  }
  r.groups = std::move(snap.groups);
  const auto placed = adapter::place(candidates, r.groups, adapter::PlacementConfig{});
  const std::set<int32_t> allowed(candidates.begin(), candidates.end());
  std::map<int32_t, int> counts;
  auto because = [&](std::string text) {
    if (r.why.empty()) r.why = std::move(text);
  };
  for (size_t i = 0; i < r.groups.size(); ++i) {
    const auto& g = r.groups[i];
    ++counts[g.controller];
    if (!allowed.count(g.controller)) {
      because(g.name + " controlled by " + std::to_string(g.controller));
    } else if (placed.target[i] != g.controller) {
      because(g.name + " would move from server " + std::to_string(g.controller) + " to " +
              std::to_string(placed.target[i]));
    }
    if (members) {
      const uint64_t expected = (*members)[i] + kGroupWeight;
      const uint64_t d = g.weight > expected ? g.weight - expected : expected - g.weight;
      r.worstWeight = std::max(r.worstWeight, static_cast<double>(d) / static_cast<double>(expected));
      if (d > std::max<uint64_t>(kGroupWeight, std::max(expected, g.weight) / 10)) {
        because(g.name + " published at weight " + std::to_string(g.weight) + ", has " +
                std::to_string((*members)[i]) + " members");
      }
    }
  }
  for (size_t c = 0; c < candidates.size(); ++c) {
    auto m = scrapeMetrics(https[c]);
    auto it = m.find("groupcoord_groups_controlled");
    if (it == m.end() || static_cast<int>(it->second) != counts[candidates[c]]) {
      because("server " + std::to_string(candidates[c]) + " reports " +
              (it == m.end() ? std::string("no gauge") : fmt(it->second)) + " groups controlled, ZooKeeper says " +
              std::to_string(counts[candidates[c]]));
    }
  }
  r.placed = r.why.empty();
  return r;
}

// The groups seen controlled by another server than at the start (a group
// between two controllers counts once the next has claimed it), and those
// seen without a controller.
struct ControllerChanges {
  std::vector<int32_t> start;
  std::set<size_t> moved, uncontrolled;
  uint64_t readings = 0;

  explicit ControllerChanges(const std::vector<adapter::PlacementGroup>& groups) {
    for (const auto& g : groups) start.push_back(g.controller);
  }
  void see(const std::vector<adapter::PlacementGroup>& groups) {
    if (groups.size() != start.size()) return;
    ++readings;
    for (size_t i = 0; i < groups.size(); ++i) {
      if (groups[i].controller < 0) {
        uncontrolled.insert(i);
      } else if (groups[i].controller != start[i]) {
        moved.insert(i);
      }
    }
  }
};

// Runs `f` on a thread of its own while the loop keeps running, so that a
// slow ZooKeeper read or server start does not stop the members'
// heartbeats nor the reading of their answers; f's result.
template <class F>
auto offLoop(Loop& loop, F&& f) {
  auto result = std::async(std::launch::async, std::forward<F>(f));
  auto ready = [&] { return result.wait_for(std::chrono::seconds(0)) == std::future_status::ready; };
  while (!ready()) loop.runUntil(ready, 5 * kMs);
  return result.get();
}

// Reads every 500 ms, the loop running meanwhile (so that members keep
// heartbeating), until two readings in a row are placed with the same
// controllers; every reading also goes to `seen`. Fails after `timeoutNs`.
PlacementRead waitPlaced(Loop& loop, const std::function<PlacementRead()>& read, uint64_t timeoutNs,
                         const std::string& what, ControllerChanges* seen = nullptr) {
  const uint64_t t0 = nowNs();
  auto controllers = [](const PlacementRead& r) {
    std::vector<int32_t> c;
    for (const auto& g : r.groups) c.push_back(g.controller);
    return c;
  };
  PlacementRead prev;
  for (;;) {
    PlacementRead cur = offLoop(loop, read);
    if (seen && !cur.groups.empty()) seen->see(cur.groups);
    if (cur.placed && prev.placed && controllers(cur) == controllers(prev)) {
      log("placement: %s: placed after %.1f s", what.c_str(), static_cast<double>(nowNs() - t0) / kSec);
      return cur;
    }
    if (nowNs() - t0 >= timeoutNs) {
      fail(what + ": not placed within " + fmt(static_cast<double>(timeoutNs) / kSec) + " s (" + cur.why + ")");
    }
    prev = std::move(cur);
    loop.runFor(500 * kMs);
  }
}

// Each server's load: the weights of the groups it holds (owner[i] holds
// group i); every server of `ids` appears.
std::map<int32_t, uint64_t> loadsOf(const std::vector<int32_t>& ids, const std::vector<int32_t>& owner,
                                    const std::vector<uint64_t>& weight) {
  std::map<int32_t, uint64_t> out;
  for (int32_t id : ids) out[id] = 0;
  for (size_t i = 0; i < owner.size(); ++i) out[owner[i]] += weight[i];
  return out;
}

double maxOverMean(const std::map<int32_t, uint64_t>& loads) {
  uint64_t total = 0, most = 0;
  for (const auto& [_, l] : loads) total += l, most = std::max(most, l);
  return total ? static_cast<double>(most) * static_cast<double>(loads.size()) / static_cast<double>(total) : 0;
}

std::string loadsText(const std::map<int32_t, uint64_t>& loads) {
  std::string out;
  for (const auto& [_, l] : loads) out += (out.empty() ? "" : " / ") + count(static_cast<double>(l));
  return out;
}

std::vector<int32_t> controllersOf(const std::vector<adapter::PlacementGroup>& groups) {
  std::vector<int32_t> out;
  for (const auto& g : groups) out.push_back(g.controller);
  return out;
}

std::vector<uint64_t> weightsOf(const std::vector<adapter::PlacementGroup>& groups) {
  std::vector<uint64_t> out;
  for (const auto& g : groups) out.push_back(g.weight);
  return out;
}

// "server: weight weight ...; server: ..." for the log.
std::string holdingsText(const std::vector<adapter::PlacementGroup>& groups) {
  std::map<int32_t, std::vector<uint64_t>> held;
  for (const auto& g : groups) held[g.controller].push_back(g.weight);
  std::string out;
  for (auto& [id, ws] : held) {
    std::sort(ws.rbegin(), ws.rend());
    out += (out.empty() ? "" : "; ") + std::to_string(id) + ":";
    for (uint64_t w : ws) out += " " + std::to_string(w);
  }
  return out;
}

std::vector<int32_t> rendezvousOwners(const std::vector<std::string>& names, const std::vector<int32_t>& ids) {
  std::vector<int32_t> out;
  for (const auto& n : names) out.push_back(adapter::rendezvousPick(n, ids));
  return out;
}

void placementScenario(const Args& args) {
  const std::string bin = args.get("server-bin");
  const std::string dir = args.get("work-dir", "/tmp");
  const int64_t zkSessionMs = args.num("zk-session-ms", 4000);
  const int64_t settleMs = args.num("settle-ms", 2000);
  const int64_t intervalMs = args.num("placement-interval-ms", 3000);
  const long steadySeconds = args.num("steady-seconds", 600);
  // Outside the steady window it has taken 110 to 240 s on two cores.
  const long maxSeconds = args.num("max-seconds", steadySeconds + 420);
  const uint64_t seed = static_cast<uint64_t>(args.num("seed", 20240611));
  const uint64_t minMembers = static_cast<uint64_t>(args.num("min-members", 2));
  const uint64_t maxMembers = static_cast<uint64_t>(args.num("max-members", 5000));
  const int32_t partitions = static_cast<int32_t>(args.num("partitions", 64));
  const size_t conns = static_cast<size_t>(args.num("conns", 50));
  const uint64_t heartbeat = static_cast<uint64_t>(args.num("heartbeat-ms", 3000)) * kMs;
  // Long enough that the members stay through the join storm of 20,000 of
  // them on a small machine (a member evicted changes its group's weight).
  const int64_t memberSessionMs = args.num("member-session-ms", 30000);
  const std::string topicsPath = args.get("topics-path", "/brokers/topics");
  EnsembleProbe zk{static_cast<int>(args.num("zk-base-port", 23800))};
  if (bin.empty()) fail("placement needs --server-bin (the groupcoordd binary; it starts and kills the servers)");
  if (minMembers < 1 || maxMembers < minMembers) fail("placement needs 1 <= --min-members <= --max-members");

  // However it ends, no server is left behind, and it ends in time.
  std::atexit(killFleetChildren);
  ::signal(SIGALRM, onPlacementAlarm);
  ::alarm(static_cast<unsigned>(maxSeconds));
  const uint64_t t00 = nowNs();
  const std::string sc = "7 placement";
  const std::string base = "pl-" + stamp();
  const std::string topic = base + "-t";
  createTopic(zk, topicsPath, topic, partitions);

  zk::SessionConfig cfg;
  cfg.connect = zk.connectString();
  zk::Session observer(cfg);
  observer.start();
  if (observer.waitConnected(std::chrono::seconds(15)) != zk::Error::Ok) fail("cannot connect to ZooKeeper");
  Loop loop;

  // A phase: its own root, its servers' files in a directory of their own.
  struct Phase {
    std::string root;
    layout::Layout layout;
    std::unique_ptr<ServerFarm> farm;
  };
  auto startPhase = [&](const std::string& name, int servers) {
    Phase p{"/bench-" + base + "-" + name, layout::Layout("/bench-" + base + "-" + name), nullptr};
    const std::string sub = dir + "/placement-" + name;
    ::mkdir(sub.c_str(), 0755);
    p.farm = std::make_unique<ServerFarm>(
        bin, sub,
        std::vector<std::string>{"--zk-connect=" + zk.connectString(), "--zk-root=" + p.root,
                                 "--zk-topics-path=" + topicsPath,
                                 "--zk-session-timeout-ms=" + std::to_string(zkSessionMs),
                                 "--handover-settle-ms=" + std::to_string(settleMs),
                                 "--placement-interval-ms=" + std::to_string(intervalMs)});
    for (int32_t id = 1; id <= servers; ++id) p.farm->start(id);
    for (int i = 0; i < 400; ++i) {
      auto r = observer.getChildrenSync(p.layout.serversPath());
      if (r.error == zk::Error::Ok && static_cast<int>(r.children.size()) == servers) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Every server has seen the others for the settle delay: groups are
    // claimed where they belong.
    std::this_thread::sleep_for(std::chrono::milliseconds(settleMs + 500));
    log("placement: %s: %d servers under %s (logs in %s)", name.c_str(), servers, p.root.c_str(), sub.c_str());
    return p;
  };
  // The same names in every run (each phase has a root of its own), so
  // that the rendezvous orders, and with the seed the whole setup, repeat.
  auto groupNames = [&](const std::string& tag, size_t n) {
    std::vector<std::string> out;
    for (size_t g = 0; g < n; ++g) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "placement-%s%03zu", tag.c_str(), g);
      out.push_back(buf);
    }
    return out;
  };
  // Creates the groups through the servers in turn; each one's controller port.
  auto createGroups = [&](Phase& p, const std::vector<std::string>& names, const std::vector<int32_t>& ids) {
    std::vector<uint16_t> out;
    for (size_t g = 0; g < names.size(); ++g) {
      const uint16_t port = p.farm->at(ids[g % ids.size()]).port;
      protocol::Broker controller;
      if (auto e = createGroup(loop, port, names[g], memberSessionMs, {topic}, &controller); e != ErrorCode::NONE) {
        fail("CreateGroup " + names[g] + ": " + std::string(protocol::errorName(e)));
      }
      out.push_back(controller.isNone() ? port : controller.port);
    }
    return out;
  };
  auto reader = [&](Phase& p, const std::vector<std::string>& names, std::vector<int32_t> ids,
                    const std::vector<uint64_t>* members = nullptr) {
    std::vector<uint16_t> https;
    for (int32_t id : ids) https.push_back(p.farm->at(id).http);
    return [&observer, &p, &names, ids, https, members] {
      return readPlacement(observer, p.layout, names, ids, https, members);
    };
  };
  // Reads the controllers every `everyNs` for `durationNs`, the loop
  // running in between; each reading to `seen`.
  auto watchFor = [&](Phase& p, const std::vector<std::string>& names, uint64_t durationNs, uint64_t everyNs,
                      ControllerChanges& seen, uint64_t* failed = nullptr) {
    const uint64_t end = nowNs() + durationNs;
    for (;;) {
      auto snap = offLoop(loop, [&] {
        return adapter::readFleet(observer, p.layout, names, adapter::Weighting::Members, kGroupWeight);
      });
      if (snap.ok) {
        seen.see(snap.groups);
      } else if (failed) {
        ++*failed;
      }
      const uint64_t now = nowNs();
      if (now >= end) return;
      loop.runFor(std::min(everyNs, end - now));
    }
  };
  const std::vector<int32_t> three{1, 2, 3}, four{1, 2, 3, 4};
  auto maxMinText = [](const std::map<int32_t, uint64_t>& groups) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& [_, g] : groups) lo = std::min(lo, g), hi = std::max(hi, g);
    return fmt(maxOverMean(groups), 2) + " (max - min " + std::to_string(hi - lo) + ")";
  };
  auto movesText = [](size_t moved, size_t minimum) {
    return std::to_string(moved) + " / " + std::to_string(minimum) +
           (minimum ? " (" + fmt(static_cast<double>(moved) / static_cast<double>(minimum), 2) + " x)" : "");
  };

  // --- Equal groups after a restart ---------------------------------------
  {
    Phase p = startPhase("equal", 3);
    const auto names = groupNames("e", 30);
    createGroups(p, names, three);
    const std::vector<uint64_t> ones(names.size(), 1);
    const auto atStart = waitPlaced(loop, reader(p, names, three), 60 * kSec, "equal groups at start");
    log("placement: equal groups: SIGKILL to server 3");
    p.farm->crash(3);
    const auto over2 = waitPlaced(loop, reader(p, names, {1, 2}), 90 * kSec, "equal groups, server 3 killed");
    p.farm->start(3);
    log("placement: equal groups: server 3 is back");
    ControllerChanges changes(over2.groups);
    const auto back = waitPlaced(loop, reader(p, names, three), 120 * kSec, "equal groups, server 3 back", &changes);
    const uint64_t bound = adapter::place(three, over2.groups, adapter::PlacementConfig{}).bound;
    const size_t minimum = adapter::minimumMoves(three, over2.groups, bound);
    const auto perServer = loadsOf(three, controllersOf(back.groups), ones);
    const auto rendezvous = loadsOf(three, rendezvousOwners(names, three), ones);
    row(sc, "equal groups: 30 empty groups over 3 servers, groups per server: at start; over 1, 2 after server 3's "
            "SIGKILL; after its return",
        loadsText(loadsOf(three, controllersOf(atStart.groups), ones)) + "; " +
            loadsText(loadsOf({1, 2}, controllersOf(over2.groups), ones)) + "; " + loadsText(perServer));
    row(sc, "equal groups after the return: max / mean groups per server", maxMinText(perServer),
        "<= 1.10, or max - min <= 1");
    row(sc, "equal groups: groups moved on the return / the least any placement within the bound (" +
                std::to_string(bound / kGroupWeight) + " groups) must move",
        movesText(changes.moved.size(), minimum), "<= 1.1 x minimum");
    row(sc, "control: rendezvous hashing alone, the same 30 groups over 3 servers: groups per server; max / mean",
        loadsText(rendezvous) + "; " + maxMinText(rendezvous));
    p.farm->stopAll();
  }

  // --- A fourth server joins; then a fifth flaps ----------------------------
  {
    Phase p = startPhase("join", 3);
    const auto names = groupNames("j", 300);
    createGroups(p, names, three);
    const std::vector<uint64_t> ones(names.size(), 1);
    const auto before = waitPlaced(loop, reader(p, names, three), 90 * kSec, "300 groups over 3 servers");
    p.farm->start(4);
    log("placement: fourth server started");
    ControllerChanges changes(before.groups);
    const auto after = waitPlaced(loop, reader(p, names, four), 120 * kSec, "300 groups, server 4 joined", &changes);
    const uint64_t bound = adapter::place(four, before.groups, adapter::PlacementConfig{}).bound;
    const size_t minimum = adapter::minimumMoves(four, before.groups, bound);
    const auto owners3 = rendezvousOwners(names, three), owners4 = rendezvousOwners(names, four);
    size_t rendezvousMoves = 0;
    for (size_t i = 0; i < names.size(); ++i) rendezvousMoves += owners3[i] != owners4[i];
    row(sc, "fourth server joins 3 holding 300 empty groups: groups moved / the least any placement within the bound (" +
                std::to_string(bound / kGroupWeight) + " groups) must move; groups per server after",
        movesText(changes.moved.size(), minimum) + "; " + loadsText(loadsOf(four, controllersOf(after.groups), ones)),
        "<= 1.1 x minimum");
    row(sc, "control: rendezvous hashing alone would move (share of 300); groups per server before; after",
        std::to_string(rendezvousMoves) + " (" + fmt(100.0 * static_cast<double>(rendezvousMoves) / 300, 1) + "%); " +
            loadsText(loadsOf(three, owners3, ones)) + "; " + loadsText(loadsOf(four, owners4, ones)));

    // A fifth server that comes and goes within the settle delay draws no
    // group: watched from its first start until settle delay + 3 s after it
    // last stopped.
    ControllerChanges flap(after.groups);
    for (int k = 0; k < 3; ++k) {
      p.farm->start(5);
      watchFor(p, names, 1 * kSec, 200 * kMs, flap);
      p.farm->terminate(5);
      while (!p.farm->reaped(5)) watchFor(p, names, 100 * kMs, 100 * kMs, flap);
    }
    log("placement: fifth server started and stopped three times");
    watchFor(p, names, static_cast<uint64_t>(settleMs) * kMs + 3 * kSec, 200 * kMs, flap);
    const auto end = reader(p, names, four)();
    row(sc, "flapping fifth server (up 1 s, then SIGTERM, three times; settle delay " + std::to_string(settleMs) +
                " ms), until settle delay + 3 s after: groups that changed controller; seen without one (" +
                std::to_string(flap.readings) + " readings); still placed over 4",
        std::to_string(flap.moved.size()) + "; " + std::to_string(flap.uncontrolled.size()) + "; " +
            (end.placed ? "yes" : "no (" + end.why + ")"),
        "0; 0; yes");
    p.farm->stopAll();
  }

  // --- Uneven groups by weight; then steady weights -------------------------
  {
    Phase p = startPhase("uneven", 3);
    const auto names = groupNames("u", 30);
    // Member counts log-uniform in [min, max], from the seed alone.
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> sizes;
    uint64_t total = 0;
    for (size_t g = 0; g < names.size(); ++g) {
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      const double lo = std::log(static_cast<double>(minMembers)), hi = std::log(static_cast<double>(maxMembers));
      const uint64_t n = static_cast<uint64_t>(std::llround(std::exp(lo + u * (hi - lo))));
      sizes.push_back(std::clamp(n, minMembers, maxMembers));
      total += sizes.back();
    }
    const auto ports = createGroups(p, names, three);
    std::vector<uint16_t> serverPorts;
    for (int32_t id : three) serverPorts.push_back(p.farm->at(id).port);
    Fleet fleet(loop, serverPorts, conns);
    fleet.followWithoutRegistering = true;
    for (size_t g = 0; g < names.size(); ++g) {
      for (uint64_t k = 0; k < sizes[g]; ++k) fleet.add(names[g], ports[g]);
    }
    log("placement: uneven groups: %llu members (seed %llu) joining %zu groups", static_cast<unsigned long long>(total),
        static_cast<unsigned long long>(seed), names.size());
    const uint64_t j0 = nowNs();
    if (!fleet.joinAll(300 * kSec)) fail("members could not join (errors: " + errorsText(fleet.stats()) + ")");
    // In sync at the members' own heartbeat interval, which they keep
    // from then on (a faster one would only load the machine more).
    settle(loop, fleet, heartbeat, 300 * kSec, {}, nullptr, true);
    log("placement: uneven groups: all members in sync after %.1f s", static_cast<double>(nowNs() - j0) / kSec);
    const uint64_t w0 = nowNs();
    const auto placed = waitPlaced(loop, reader(p, names, three, &sizes), 180 * kSec, "uneven groups, weights published");
    const double placedSeconds = static_cast<double>(nowNs() - w0) / kSec;
    log("placement: uneven groups placed, weights by server: %s", holdingsText(placed.groups).c_str());
    std::vector<uint64_t> trueWeights;
    for (uint64_t n : sizes) trueWeights.push_back(n + kGroupWeight);
    const auto loads = loadsOf(three, controllersOf(placed.groups), weightsOf(placed.groups));
    const auto trueLoads = loadsOf(three, controllersOf(placed.groups), trueWeights);
    const auto rendezvous = loadsOf(three, rendezvousOwners(names, three), weightsOf(placed.groups));
    row(sc, "uneven groups: 30 groups, member counts log-uniform " + std::to_string(minMembers) + ".." +
                std::to_string(maxMembers) + " (seed " + std::to_string(seed) +
                "), members heartbeating every " + std::to_string(heartbeat / kMs) + " ms (session " +
                std::to_string(memberSessionMs) + " ms): members in all; smallest / largest group",
        count(static_cast<double>(total)) + "; " + count(static_cast<double>(*std::min_element(sizes.begin(), sizes.end()))) +
            " / " + count(static_cast<double>(*std::max_element(sizes.begin(), sizes.end()))));
    row(sc, "uneven groups, placed with weights published (" + fmt(placedSeconds, 1) +
                " s after all in sync; published weights within " + fmt(100 * placed.worstWeight, 1) +
                "% of members + 10): server load by weight, max / mean (loads); by members + 10",
        fmt(maxOverMean(loads), 2) + " (" + loadsText(loads) + "); " + fmt(maxOverMean(trueLoads), 2), "<= 1.15");
    row(sc, "control: rendezvous hashing alone, the same weights: max / mean (loads)",
        fmt(maxOverMean(rendezvous), 2) + " (" + loadsText(rendezvous) + ")");

    // The most loaded server crashes and comes back.
    int32_t victim = three.front();
    for (const auto& [id, l] : loads)
      if (l > loads.at(victim)) victim = id;
    std::vector<int32_t> survivors;
    for (int32_t id : three)
      if (id != victim) survivors.push_back(id);
    log("placement: uneven groups: SIGKILL to server %d (load %llu)", victim,
        static_cast<unsigned long long>(loads.at(victim)));
    offLoop(loop, [&] { p.farm->crash(victim); });
    const auto over2 =
        waitPlaced(loop, reader(p, names, survivors, &sizes), 180 * kSec, "uneven groups, the most loaded killed");
    log("placement: uneven groups placed over the other two, weights by server: %s", holdingsText(over2.groups).c_str());
    // On this thread: a server started from another would be killed when
    // that thread ends (its parent-death signal follows the thread).
    p.farm->start(victim);
    log("placement: uneven groups: server %d is back", victim);
    ControllerChanges changes(over2.groups);
    const auto back =
        waitPlaced(loop, reader(p, names, three, &sizes), 180 * kSec, "uneven groups, the killed server back", &changes);
    log("placement: uneven groups placed again, weights by server: %s", holdingsText(back.groups).c_str());
    const uint64_t bound = adapter::place(three, over2.groups, adapter::PlacementConfig{}).bound;
    const size_t minimum = adapter::minimumMoves(three, over2.groups, bound);
    const auto backLoads = loadsOf(three, controllersOf(back.groups), weightsOf(back.groups));
    row(sc, "uneven groups, server " + std::to_string(victim) +
                " (the most loaded) SIGKILLed and back, placed again: max / mean (loads; the bound); loads over the "
                "other two meanwhile",
        fmt(maxOverMean(backLoads), 2) + " (" + loadsText(backLoads) + "; " +
            count(static_cast<double>(adapter::place(three, back.groups, adapter::PlacementConfig{}).bound)) + "); " +
            loadsText(loadsOf(survivors, controllersOf(over2.groups), weightsOf(over2.groups))),
        "<= 1.15");
    row(sc, "uneven groups, on server " + std::to_string(victim) +
                "'s return: groups moved / the least any placement within the bound must move",
        movesText(changes.moved.size(), minimum), "<= 1.1 x minimum");

    // Steady weights: once every member is in sync again (those the crash
    // sent elsewhere have registered again) and the weights are published,
    // members keep heartbeating and nothing else happens.
    const uint64_t s0 = nowNs();
    uint64_t lastCheck = 0;
    const bool inSync = loop.runUntil(
        [&] {
          const uint64_t now = nowNs();
          if (now - lastCheck < 1 * kSec) return false;
          lastCheck = now;
          return fleet.allInSync();
        },
        180 * kSec);
    size_t notInSync = 0;
    for (const auto& m : fleet.members()) notInSync += (!m.crashed && !m.inSync);
    const double syncSeconds = static_cast<double>(nowNs() - s0) / kSec;
    log("placement: uneven groups: members in sync again after %.1f s: %s", syncSeconds, inSync ? "yes" : "no");
    const auto steadyStart =
        waitPlaced(loop, reader(p, names, three, &sizes), 180 * kSec, "uneven groups, before the steady window");
    log("placement: steady weights for %ld s", steadySeconds);
    ControllerChanges steady(steadyStart.groups);
    uint64_t failedReads = 0;
    watchFor(p, names, static_cast<uint64_t>(steadySeconds) * kSec, 5 * kSec, steady, &failedReads);
    const auto end = offLoop(loop, reader(p, names, three, &sizes));
    const auto endLoads = loadsOf(three, controllersOf(end.groups), weightsOf(end.groups));
    row(sc, "steady weights: the uneven groups for " + std::to_string(steadySeconds) +
                " s from when all members were in sync again (" +
                (inSync ? fmt(syncSeconds, 1) + " s after placed" : std::to_string(notInSync) + " not in sync after " + fmt(syncSeconds) + " s") +
                ") and placed, members heartbeating, controllers read every 5 s (" + std::to_string(steady.readings) +
                " readings" + (failedReads ? ", " + std::to_string(failedReads) + " failed" : "") +
                "): groups that changed controller; seen without one; max / mean at the end",
        std::to_string(steady.moved.size()) + "; " + std::to_string(steady.uncontrolled.size()) + "; " +
            (end.groups.empty() ? std::string("-") : fmt(maxOverMean(endLoads), 2)),
        "0; 0; <= 1.15");
    row(sc, "uneven groups: answers the members saw over the whole phase (not NONE)", errorsText(fleet.stats()));
    fleet.stopBeating();
    loop.runFor(500 * kMs);
    fleet.closeAll();
    p.farm->stopAll();
  }
  observer.close();
  ::alarm(0);
  log("placement: done in %.0f s (logs: %s/placement-*/)", static_cast<double>(nowNs() - t00) / kSec, dir.c_str());
}

// ---------------------------------------------------------------------------
// 9. Instructions per heartbeat, counted by callgrind: a figure that noise
// does not move. Each server runs under `valgrind --tool=callgrind
// --instr-atstart=no --callgrind-out-file=BASE.%p` (bench/run.sh limits
// the IoLoop servers' count to their I/O threads' loop turns); only the
// windows in which the load runs are counted (callgrind_control -z, -i on,
// -i off, -d). A window of N heartbeats and one of 2N, at depth 16 on one
// connection: the difference over N is one heartbeat's instructions, with
// whatever a window costs apart from its heartbeats left in both.

void instructions(const Args& args) {
  const auto ports = args.list("ports");
  const auto pids = args.list("pids");
  const std::string bases = args.get("callgrind-bases", "");
  std::vector<std::string> base, labels;
  for (std::stringstream in(bases); in.good();) {
    std::string b;
    std::getline(in, b, ',');
    if (!b.empty()) base.push_back(b);
  }
  for (std::stringstream in(args.get("labels", "groupcoordd,IoLoop echo,minimal echo")); in.good();) {
    std::string l;
    std::getline(in, l, ',');
    labels.push_back(l);
  }
  const size_t n = static_cast<size_t>(args.num("count", 20000));
  const int depth = 16;
  if (ports.empty() || ports.size() != pids.size() || base.size() != ports.size()) {
    fail("instructions needs --ports, --pids and --callgrind-bases of the same length");
  }
  std::vector<double> perHeartbeat;
  // The first server is groupcoordd: a member in sync heartbeats there. The
  // echo servers get the very same frame (the same names to read and check).
  std::vector<uint8_t> frame;
  {
    Loop loop;
    const uint16_t port = static_cast<uint16_t>(ports[0]);
    const std::string group = "ins-" + stamp();
    if (auto e = createGroup(loop, port, group, 60000, {}); e != ErrorCode::NONE) {
      fail("CreateGroup: " + std::string(protocol::errorName(e)));
    }
    Fleet fleet(loop, {port}, 1);
    fleet.add(group, port);
    if (!fleet.joinAll(120 * kSec)) fail("the member could not join");
    settle(loop, fleet, 100 * kMs, 120 * kSec);
    frame = fleet.at(0).heartbeatFrame;
  }
  for (size_t k = 0; k < ports.size(); ++k) {
    const uint16_t port = static_cast<uint16_t>(ports[k]);
    const int pid = static_cast<int>(pids[k]);
    Loop loop;
    const int conn = loop.connect(port);
    if (conn < 0) fail("cannot connect to " + labels[std::min(k, labels.size() - 1)]);
    uint64_t notNone = 0;
    auto drive = [&](size_t count) {
      auto send = [&](const std::function<void()>& answered) {
        loop.sendFrame(conn, frame, protocol::ApiKey::Heartbeat, [&](const protocol::Response* r, uint64_t) {
          if (r == nullptr || protocol::responseError(*r) != ErrorCode::NONE) ++notNone;
          answered();
        });
      };
      if (!loop.pipelined(count, depth, send, 600 * kSec)) fail("heartbeats went unanswered");
    };
    const double per = perRequestInstructions(pid, base[k], n, drive);
    loop.close(conn);
    if (Loop::authFailures() != 0) fail("Authenticate was refused " + count(double(Loop::authFailures())) + " times");
    const std::string label = k < labels.size() ? labels[k] : "server " + std::to_string(k + 1);
    perHeartbeat.push_back(per);
    row("9 instructions", "instructions per heartbeat, " + label + " (callgrind; windows of " + count(n) + " and " +
                              count(2.0 * n) + " at depth 16)",
        count(per) + (notNone ? " (" + count(static_cast<double>(notNone)) + " not NONE)" : ""));
  }
  if (perHeartbeat.size() >= 2 && perHeartbeat[1] > 0) {
    row("9 instructions", "instructions per heartbeat, groupcoordd / IoLoop echo", fmt(perHeartbeat[0] / perHeartbeat[1], 2),
        "<= 1.5");
  }
  if (perHeartbeat.size() >= 3 && perHeartbeat[2] > 0) {
    row("9 instructions", "instructions per heartbeat, IoLoop echo / minimal echo", fmt(perHeartbeat[1] / perHeartbeat[2], 2));
  }
  // The first server's Kafka port: a Kafka member's heartbeat, the same way.
  if (const long kafkaPort = args.num("kafka-port", 0); kafkaPort > 0) {
    uint64_t notNone = 0;
    const double kafka = kafkaHeartbeatInstructions(static_cast<uint16_t>(kafkaPort), static_cast<int>(pids[0]),
                                                    base[0], n, depth, &notNone);
    row("9 instructions", "instructions per heartbeat, " + labels[0] + "'s Kafka port (Heartbeat version 3; callgrind; windows of " +
                              count(n) + " and " + count(2.0 * n) + " at depth 16)",
        count(kafka) + (notNone ? " (" + count(static_cast<double>(notNone)) + " not NONE)" : ""));
    if (!perHeartbeat.empty() && perHeartbeat[0] > 0) {
      row("9 instructions", "instructions per heartbeat, " + labels[0] + ": Kafka / native (" + count(kafka) + " / " +
                                count(perHeartbeat[0]) + ")",
          fmt(kafka / perHeartbeat[0], 2), "<= 1.3");
    }
  }
}

int usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: groupcoord-bench SCENARIO [--key=value ...]\n"
               "scenarios:\n"
               "  throughput  --ports P --echo-port E [--loop-echo-port L] [--pids SERVER_PID,ECHO_PID,LOOP_PID]\n"
               "              [--conns 1000] [--seconds 5] [--pairs 5]\n"
               "  members     --ports P --pids PID [--echo-port E] [--members 10000] [--conns 1000] [--groups 100]\n"
               "              [--partitions 100] [--interval-ms 1000] [--session-ms 30000] [--settle-interval-ms 250]\n"
               "              [--seconds 20] [--idle-seconds 10] [--echo-pid PID] [--loop-echo-port L]\n"
               "              [--loop-echo-pid PID] [--metrics-port HTTP] [--label TEXT]\n"
               "              [--rounds 1] (K > 1: K windows of --seconds each, groupcoordd and the echoes in turn)\n"
               "  join-storm  --ports P [--members 1000] [--partitions 1000] [--heartbeat-ms 100]\n"
               "  direct      --ports P [--members 100] [--steady-seconds 10]\n"
               "  failover    --ports P1,P2 --pids PID1,PID2 [--zk-session-ms 4000]\n"
               "              [--member-session-ms 2000] [--heartbeat-ms 200]\n"
               "  fleet       --server-bin GROUPCOORDD [--work-dir DIR] [--servers 3] [--members 30000] [--groups 300]\n"
               "              [--partitions 200] [--conns 100] [--heartbeat-ms 3000] [--member-session-ms 10000]\n"
               "              [--zk-session-ms 4000] [--settle-ms 2000] [--max-seconds 540] [--restarts SERVERS]\n"
               "              (starts and restarts its own servers: a rolling restart under load, of the\n"
               "              first --restarts of them, all by default)\n"
               "  placement   --server-bin GROUPCOORDD [--work-dir DIR] [--steady-seconds 600] [--seed 20240611]\n"
               "              [--min-members 2] [--max-members 5000] [--settle-ms 2000] [--zk-session-ms 4000]\n"
               "              [--placement-interval-ms 3000] [--heartbeat-ms 3000] [--member-session-ms 30000]\n"
               "              [--conns 50] [--partitions 64] [--max-seconds STEADY+420]\n"
               "              (starts and kills its own servers: the bounded-load placement of groups over\n"
               "              servers after a crash, with uneven weights, a server joining, one flapping,\n"
               "              and steady weights)\n"
               "  big-group   --ports P --server-log FILE [--members 10000] [--partitions 10000] [--conns 1000]\n"
               "              [--others 1000] [--session-ms 60000] [--settle-interval-ms 1000] [--label TEXT]\n"
               "              [--register-version 2] [--client-mode 1] (0: no client-mode group after)\n"
               "              [--client-members N] (the client-mode group's size; default --members)\n"
               "              [--metrics-port HTTP] (groupcoordd's own heartbeat figures of each step)\n"
               "              [--rounds 3] (one join and one leave, this many times)\n"
               "  assign      [--repeat 5] (the optimiser alone, no server: one join and one leave in three shapes)\n"
               "  instructions --ports P,LE,E --pids ... --callgrind-bases BASE,... [--count 20000]\n"
               "              [--labels NAME,...]\n"
               "              (each server under callgrind --instr-atstart=no --callgrind-out-file=BASE.%%p;\n"
               "              the first one groupcoordd)\n"
               "              [--kafka-port K] (the first server's Kafka port: a Kafka heartbeat's instructions too)\n"
               "  kafka       --kafka-port K [--members 1000] [--delay-ms 3000] [--interval-ms 1000]\n"
               "              [--leave-sizes 10,1000] [--intervals-ms 1000,3000] [--rounds 3]\n"
               "              (Kafka members, a connection each: --members form one group, one partition each;\n"
               "              then in a group of each --leave-sizes at each heartbeat interval, one member\n"
               "              leaves, --rounds times; --delay-ms: the server's initial rebalance delay, to print)\n"
               "  peers       --system groupcoord|zookeeper|etcd --pids NAME:PID,... (the coordination side's\n"
               "              processes: CPU and RSS) [--ports P] (groupcoord) [--etcd-ports P1,P2,P3] (etcd)\n"
               "              [--members 1000] [--group-size 100]\n"
               "              [--ttl-seconds 10] [--steady-seconds 60] [--churn-seconds 60] [--churn-period-seconds 10]\n"
               "              [--churn-percent 1] [--crash-percent 1] [--join-parallel 200] [--round R]\n"
               "              (one system, one size: join, settle, steady, churn, crash; prints one\n"
               "              `peers-result {json}` line; bench/peers_report.py makes the table)\n"
               "  rebalance   --ports P [--members 10000] [--partitions-per-member 2] [--interval-ms 1000]\n"
               "              [--held 1] (0: version 0 heartbeats every interval, as before held ones)\n"
               "              [--joins 3] [--restarts 5] [--server-pid PID --metrics-port HTTP] [--steady-s 20]\n"
               "              [--label TEXT] (one group, a connection a member: each moved partition's time\n"
               "              unowned over joins, graceful leaves, a growth and a rolling restart; then the\n"
               "              server's CPU and heartbeats per member per second, steady)\n"
               "common: --zk-base-port B (default 23800), --topics-path (default /brokers/topics),\n"
               "        --user U --secret S (every connection authenticates first: a server with\n"
               "        auth.credentials.file; Authenticate version 0, so the secret crosses loopback)\n"
               "Prints Markdown rows: | scenario | figure | value | target |. bench/run.sh runs them all.\n");
  return code;
}

}  // namespace
}  // namespace groupcoord::bench

int main(int argc, char** argv) {
  using namespace groupcoord::bench;
  if (argc < 2) return usage(2);
  const std::string scenario = argv[1];
  if (scenario == "--help" || scenario == "-h") return usage(0);
  Args args;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) return usage(2);
    a = a.substr(2);
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      args.values[a.substr(0, eq)] = a.substr(eq + 1);
    } else if (i + 1 < argc) {
      args.values[a] = argv[++i];
    } else {
      return usage(2);
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  // --user and --secret: every connection authenticates first (a server
  // started with auth.credentials.file).
  if (args.values.count("user") != 0) Loop::authenticateAs(args.values["user"], args.values["secret"]);
  // The table goes to standard output; the ZooKeeper sessions' own lines
  // (a thousand sessions open and close in `direct`) only matter as
  // warnings, on standard error.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("bench"));
  spdlog::set_level(spdlog::level::warn);
  // Thousands of sockets (and threads, for the direct ZooKeeper members).
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  try {
    if (scenario == "throughput") {
      throughput(args);
    } else if (scenario == "members") {
      members(args);
    } else if (scenario == "join-storm") {
      joinStorm(args);
    } else if (scenario == "direct") {
      direct(args);
    } else if (scenario == "failover") {
      failover(args);
    } else if (scenario == "fleet") {
      fleetScenario(args);
    } else if (scenario == "placement") {
      placementScenario(args);
    } else if (scenario == "big-group") {
      bigGroup(args);
    } else if (scenario == "assign") {
      assignScenario(args);
    } else if (scenario == "instructions") {
      instructions(args);
    } else if (scenario == "kafka") {
      kafkaScenario(args);
    } else if (scenario == "peers") {
      peersScenario(args);
    } else if (scenario == "rebalance") {
      rebalanceScenario(args);
    } else {
      return usage(2);
    }
  } catch (const std::exception& e) {
    fail(std::string("bad arguments or setup: ") + e.what());
  }
  return 0;
}
