// The fleet suite: groupcoordd servers sharing one ZooKeeper ensemble keep
// their groups placed within the bound (docs/design.md, "Claims",
// "Handover" and "Placement"). Three servers, 300 groups of simulated
// members (support/OwnershipChecker.h), heartbeating, and in every tenth
// group committing offsets, through:
//
//   A. a rolling restart: each server in turn stopped (SIGTERM), its groups
//      claimed by the others, then started again: no more groups move than
//      10% over the least the bound forces, and no server ends over the
//      bound by more than the margin
//   B. a fourth server joining: the same promise
//   C. a fifth server that joins and leaves three times, each time within
//      the settle delay: no group moves
//   D. a server drained with `groupctl drain --wait` (its groups move, no
//      other does, their members do not register again more than once),
//      then undrained (as for a server joining)
//   E. a server killed (SIGKILL) and started again: the same promises as A
//   F. ten minutes' worth of nothing (GROUPCOORD_FLEET_STEADY_SECONDS,
//      60 s by default): no group moves while the weights stay steady
//
// Every thirtieth group has 20 members, the others 2, so the groups weigh
// 30 and 12 in the placement.
//
// "Placed" is checked against the layout, not taken from the servers:
// every group's controller znode names a live undrained server, and the
// placement function the servers use (adapter/Placement.h), given the
// controllers and the published weights read from ZooKeeper, moves nothing
// more; each server's groupcoord_groups_controlled gauge counts exactly the
// znodes that name it. After each step every server's ListGroups agrees
// with the znodes, every group settles (all members in sync, its
// partitions held exactly once), no partition was ever held by two
// members, and no acknowledged commit was lost.
//
// The tests run in the order written and share one set-up; each repairs the
// fleet in its TearDown, so a failure does not cascade. Figures go to
// [figure] lines.
//
// Time (support/Timing.h): "nothing moves before a server has settled" is
// the protocol's lower bound, asserted strictly from a moment before the
// server was started. The settle delay itself holds the scheduling
// allowance, so that the flapping server of C, live for well under a second
// as the others see it, stays short of it however late they see it go. Every
// other wait polls up to the design's bound plus the allowance; how long a
// step took is a figure.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <iomanip>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "adapter/FleetSnapshot.h"
#include "adapter/Hash.h"
#include "adapter/LoadBoard.h"
#include "adapter/Placement.h"
#include "client/Connection.h"
#include "common/Layout.h"
#include "support/OwnershipChecker.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/Timing.h"
#include "tests/server/HttpTestUtil.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;
using protocol::TopicPartition;
using Clock = std::chrono::steady_clock;

constexpr int kGroups = 300;
// Uneven sizes, so that groups weigh differently in the placement (a
// group weighs its members + 10): every thirtieth group has 20 members.
constexpr int kMembersPerGroup = 2;
constexpr int kMembersPerBigGroup = 20;
constexpr int kBigEvery = 30;
int membersOf(int i) { return i % kBigEvery == 0 ? kMembersPerBigGroup : kMembersPerGroup; }
constexpr int kCommitEvery = 10;            // every tenth group commits offsets
constexpr int32_t kPartitions = 4;          // of the one topic every group consumes
constexpr int64_t kZkSessionMs = 4000;      // the servers' ZooKeeper session
constexpr int64_t kReaderSessionMs = 10000;  // the test's own ZooKeeper session
constexpr int64_t kClaimFallbackMs = 3000;  // the servers' claim fallback (the default)
// How long server 5 of C stays registered before it is stopped.
constexpr int64_t kFlapLiveMs = 500;
// --handover-settle-ms: 2 s and the scheduling allowance. Server 5 of C is
// registered for about a second; the others count it settled only if they
// see it live for the whole delay, so that a server that is late to see it
// go (by up to the allowance) still gives it nothing.
const int64_t kSettleMs = designBoundMs(2000);
constexpr int64_t kPlacementIntervalMs = 3000;  // --placement-interval-ms
constexpr uint64_t kGroupWeight = 10;           // the servers' placement.group.weight (the default)
constexpr int64_t kMemberSessionMs = 3000;  // the groups' session timeout
// Placing the groups after a step, beyond the settle delay: a killed
// server's session, the claim fallback, then handovers 8 at a time; 30 s is
// several times what 300 groups take (the figures print it).
constexpr auto kBalanceLimit = 30s;
// Every group's members in sync once the fleet is placed: generous beside
// the groups' session timeout (the figures print the time).
constexpr auto kMemberSettleLimit = 30s;
// A fleet already placed is seen so at the first look that reads it whole.
constexpr auto kAlreadyPlaced = 10s;
constexpr const char* kTopic = "t";

// The wait for a fleet to be placed after a step: the settle delay (which
// holds the scheduling allowance) and the placing itself.
std::chrono::milliseconds balanceWait() { return std::chrono::milliseconds(kSettleMs) + kBalanceLimit; }

std::string groupName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fleet-g%03d", i);
  return buf;
}

std::string idList(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

std::string lastLines(const std::string& text, size_t lines) {
  size_t pos = text.size();
  for (size_t i = 0; i < lines && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos);
}

// A command's exit code and output (standard error included).
int runCommand(const std::string& cmd, std::string* out) {
  std::string text;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 512> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) text.append(buf.data(), n);
  const int status = ::pclose(p);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// One groupcoordd of the fleet, with its HTTP port for /metrics.
struct Node {
  int32_t id = 0;
  std::unique_ptr<ServerProcess> proc;
  std::string httpPortFile;
  uint16_t http = 0;

  bool start() {
    ::unlink(httpPortFile.c_str());
    http = 0;
    if (!proc->start()) return false;
    http = servertest::readPortFile(httpPortFile);
    return http != 0;
  }
  bool running() const { return proc && proc->running(); }
  std::map<std::string, double> scrape() const {
    if (http == 0) return {};
    const auto r = servertest::httpGet(http, "/metrics");
    if (r.status != 200) return {};
    return servertest::parseSamples(r.body);
  }
};

double valueOr(const std::map<std::string, double>& samples, const std::string& series, double def = -1) {
  return servertest::sample(samples, series).value_or(def);
}

// A group's controller znode as read: the server id it names (-1: no
// controller znode; -2: the read failed) and its creation zxid, which
// changes whenever the group changes hands, even if it comes back.
struct Ctl {
  int32_t id = -2;
  int64_t czxid = 0;
  bool operator==(const Ctl& o) const { return id == o.id && czxid == o.czxid; }
};
using Controllers = std::map<std::string, Ctl>;

struct Env {
  std::string dir;  // the servers' HTTP port files
  std::string root;
  std::string topicsPath;
  std::unique_ptr<layout::Layout> layout;
  std::unique_ptr<zk::Session> zk;  // an independent reader of the layout
  std::map<int32_t, Node> nodes;    // by server id
  std::set<int32_t> drained;        // what the suite drained (the servers read the markers)
  ServerPorts ports;
  std::vector<std::string> groups;
  std::vector<std::unique_ptr<OwnershipChecker>> checkers;  // checkers[i] for groups[i]
  std::set<TopicPartition> all;
  std::vector<std::string> figures;
  OwnershipRecord::Counts lastCounts;  // summed over the checkers at the last member check
  bool ready = false;

  void refreshPorts() {
    std::vector<uint16_t> p;
    for (auto& [id, n] : nodes)
      if (n.running()) p.push_back(n.proc->port());
    ports.set(p);
  }
  std::vector<int32_t> live() {
    std::vector<int32_t> out;
    for (auto& [id, n] : nodes)
      if (n.running()) out.push_back(id);
    return out;
  }
  // The servers that should control groups: live and not drained.
  std::vector<int32_t> candidates() {
    std::vector<int32_t> out;
    for (int32_t id : live())
      if (!drained.count(id)) out.push_back(id);
    return out;
  }
  std::string bootstrap() {
    std::string out;
    for (uint16_t p : ports.get()) out += (out.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(p);
    return out;
  }
  bool committing(size_t i) const { return i % kCommitEvery == 0; }
};

Env* env = nullptr;

class FleetSuite : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    if (!env) return;
    {
      // Side by side: each member finishes its call in flight first.
      std::vector<std::thread> stoppers;
      for (auto& c : env->checkers) stoppers.emplace_back([&c] { c->stop(); });
      for (auto& t : stoppers) t.join();
    }
    std::cout << "[fleet] summary of this run:" << std::endl;
    for (auto& f : env->figures) std::cout << "  " << f << std::endl;
    for (auto& [id, n] : env->nodes) {
      std::cout << "[fleet] log of groupcoordd server " << id << ": " << n.proc->logPath() << std::endl;
      n.proc->terminate();
    }
    delete env;
    env = nullptr;
  }

  void SetUp() override {
    requireEnsemble();
    if (HasFatalFailure()) return;
    if (!env) {
      env = new Env;
      setUpEnv();
    }
    ASSERT_TRUE(env->ready) << "the suite's set-up failed (see the first test)";
    logOffsets_.clear();
    for (auto& [id, n] : env->nodes) logOffsets_[id] = n.proc->log().size();
  }

  void TearDown() override {
    if (!env || !env->ready) return;
    if (HasFailure()) dumpLogs();
    // Whatever a failed test left behind: a drain marker, a server down.
    for (int32_t id : env->drained) env->zk->removeSync(env->layout->drainingPath(id));
    env->drained.clear();
    for (auto& [id, n] : env->nodes) {
      if (wanted_.count(id) && !n.running()) n.start();
      if (!wanted_.count(id) && n.running()) n.proc->terminate();
    }
    env->refreshPorts();
    for (auto& c : env->checkers) c->resumeCommits();
  }

  // The servers each test expects to be running when it ends.
  static inline std::set<int32_t> wanted_{1, 2, 3};

  Node& addNode(int32_t id) {
    Node& n = env->nodes[id];
    n.id = id;
    n.httpPortFile = env->dir + "/http-port-" + std::to_string(id);
    n.proc = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=" + std::to_string(id), "--zk-root=" + env->root, "--zk-topics-path=" + env->topicsPath,
        "--zk-session-timeout-ms=" + std::to_string(kZkSessionMs), "--handover-settle-ms=" + std::to_string(kSettleMs),
        "--placement-interval-ms=" + std::to_string(kPlacementIntervalMs),
        "--io-threads=2", "--http-address=127.0.0.1", "--http-port=0", "--http-port-file=" + n.httpPortFile});
    return n;
  }

  bool waitRegistered(int32_t id, bool present, std::chrono::milliseconds wait) {
    auto deadline = Clock::now() + wait;
    do {
      auto r = env->zk->existsSync(env->layout->serverPath(id));
      if ((r.error == zk::Error::Ok) == present) return true;
      std::this_thread::sleep_for(20ms);
    } while (Clock::now() < deadline);
    return false;
  }

  void setUpEnv() {
    char tmpl[] = "/tmp/groupcoord-fleet-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    ASSERT_NE(d, nullptr);
    env->dir = d;
    env->root = "/" + uniqueName("fleet");
    env->topicsPath = env->root + "-topics";
    env->layout = std::make_unique<layout::Layout>(env->root);
    zk::SessionConfig zc;
    zc.connect = zkConnect();
    zc.sessionTimeout = std::chrono::milliseconds(kReaderSessionMs);
    env->zk = std::make_unique<zk::Session>(zc);
    ASSERT_EQ(env->zk->start(), zk::Error::Ok);
    ASSERT_EQ(env->zk->waitConnected(designBound(zc.sessionTimeout)), zk::Error::Ok);
    ASSERT_EQ(env->zk->ensurePathSync(env->topicsPath), zk::Error::Ok);
    ASSERT_EQ(env->zk->createSync(env->topicsPath + "/" + kTopic, layout::encodeTopic(kPartitions),
                                  zk::CreateMode::Persistent)
                  .error,
              zk::Error::Ok);
    for (int32_t p = 0; p < kPartitions; ++p) env->all.insert({kTopic, p});

    for (int32_t id = 1; id <= 3; ++id) {
      Node& n = addNode(id);
      ASSERT_TRUE(n.start()) << "groupcoordd server " << id << " did not start";
      std::cout << "[fleet] groupcoordd server " << id << " logs to " << n.proc->logPath() << std::endl;
    }
    env->refreshPorts();
    for (int32_t id = 1; id <= 3; ++id) ASSERT_TRUE(waitRegistered(id, true, registerWait())) << "server " << id;
    // Every server has seen the others and counts them settled: the groups
    // are claimed where they belong from the start. (Pacing only: groups
    // claimed elsewhere are handed over, and the wait below polls.)
    std::this_thread::sleep_for(std::chrono::milliseconds(kSettleMs + 500));

    const auto t0 = Clock::now();
    client::Connection c;
    ASSERT_TRUE(c.connect("127.0.0.1", env->nodes[1].proc->port(), 5000ms));
    for (int i = 0; i < kGroups; ++i) {
      env->groups.push_back(groupName(i));
      // CreateGroup answers within the server's 5 s wait for a claim.
      auto r = c.call(protocol::CreateGroupRequest{env->groups.back(), kMemberSessionMs, {kTopic}, false},
                      designBound(5s));
      ASSERT_TRUE(r.ok) << "CreateGroup " << env->groups.back() << ": no answer";
      auto& created = std::get<protocol::CreateGroupResponse>(r.response);
      ASSERT_EQ(created.error, ErrorCode::NONE) << env->groups.back();
      // CreateGroup waits 5 s for a claim and may answer before one (no
      // controller, docs/protocol.md): the controller znode follows, at the
      // latest after the claim fallback.
      const bool controlled =
          !created.controller.isNone() ||
          eventuallyWithin(designBound(std::chrono::milliseconds(kClaimFallbackMs)), [&] {
            return env->zk->existsSync(env->layout->controllerPath(env->groups.back())).error == zk::Error::Ok;
          }, 100ms);
      ASSERT_TRUE(controlled) << env->groups.back() << ": no server claimed it";
    }
    std::cout << "[fleet] " << kGroups << " groups created in " << msBetween(t0, Clock::now()) << " ms" << std::endl;
    auto balanced = waitBalanced(env->candidates(), balanceWait());
    ASSERT_TRUE(balanced.ok) << "the new fleet did not balance: " << balanced.reason;

    const auto m0 = Clock::now();
    for (int i = 0; i < kGroups; ++i) {
      SimMemberOptions options;
      options.group = env->groups[static_cast<size_t>(i)];
      options.sessionTimeoutMs = kMemberSessionMs;
      options.loopInterval = 250ms;
      options.callTimeout = 2000ms;
      options.commitPermille = env->committing(static_cast<size_t>(i)) ? 400 : 0;
      env->checkers.push_back(std::make_unique<OwnershipChecker>(env->ports, options));
      env->checkers.back()->start(membersOf(i), 1000 + static_cast<uint64_t>(i));
    }
    ASSERT_TRUE(allSettled(m0, designBound(kMemberSettleLimit), nullptr)) << "the members did not settle";
    int members = 0;
    for (int i = 0; i < kGroups; ++i) members += membersOf(i);
    std::cout << "[fleet] " << members << " members in sync in " << msBetween(m0, Clock::now())
              << " ms" << std::endl;
    // A server publishes a weight change at most every 5 s, and only one
    // of more than 2 or a tenth (docs/design.md, "Placement"): the steps
    // start from a fleet whose published weights count its members, as an
    // operator's rolling restart starts from a settled fleet. A server stopped before then leaves the others placing
    // its groups by the weights of empty groups, and correcting with moves
    // of their own groups once the real weights are read.
    const auto w0 = Clock::now();
    std::string stale;
    const auto weightsPublished = [&] {
      auto snap = adapter::readFleet(*env->zk, *env->layout, env->groups, adapter::Weighting::Members, kGroupWeight);
      if (!snap.ok) {
        stale = "reading the fleet: " + snap.error;
        return false;
      }
      for (size_t i = 0; i < snap.groups.size(); ++i) {
        // Within what a server leaves unpublished (the servers run with
        // the default LoadBoardConfig).
        const uint64_t want = static_cast<uint64_t>(membersOf(static_cast<int>(i))) + kGroupWeight;
        const uint64_t got = snap.groups[i].weight;
        if (adapter::LoadBoardConfig{}.changeWorthPublishing(got, want)) {
          stale = snap.groups[i].name + " published at " + std::to_string(got) + ", not " + std::to_string(want);
          return false;
        }
      }
      return true;
    };
    bool published = false;
    published = eventuallyWithin(balanceWait(), weightsPublished, 200ms);
    ASSERT_TRUE(published) << "the servers did not publish their groups' weights: " << stale;
    auto weighed = waitBalanced(env->candidates(), balanceWait());
    ASSERT_TRUE(weighed.ok) << "the fleet did not balance by its members' weights: " << weighed.reason;
    std::cout << "[fleet] weights published and the fleet placed by them in " << msBetween(w0, Clock::now()) << " ms"
              << std::endl;
    env->lastCounts = counts();
    env->ready = true;
  }

  // ---- the layout and the servers' views ----

  Controllers readControllers() {
    struct Shared {
      std::mutex mu;
      std::condition_variable cv;
      size_t left = 0;
      Controllers out;
    };
    auto sh = std::make_shared<Shared>();
    sh->left = env->groups.size();
    for (auto& g : env->groups) {
      env->zk->get(env->layout->controllerPath(g), [sh, g](zk::GetResult r) {
        Ctl c;
        if (r.error == zk::Error::NoNode) {
          c.id = -1;
        } else if (r.error == zk::Error::Ok) {
          try {
            c.id = std::stoi(r.data);
          } catch (...) {
            c.id = -2;
          }
          c.czxid = r.stat.czxid;
        }
        std::lock_guard lock(sh->mu);
        sh->out[g] = c;
        if (--sh->left == 0) sh->cv.notify_all();
      });
    }
    std::unique_lock lock(sh->mu);
    sh->cv.wait_for(lock, 20s, [&] { return sh->left == 0; });
    Controllers out = sh->out;
    for (auto& g : env->groups) out.try_emplace(g);  // unanswered: -2
    return out;
  }

  // readControllers() again until every znode was read: a read that failed
  // or went unanswered (a starved ensemble) is "unread", not a change. Up to
  // the test's own ZooKeeper session and the allowance.
  Controllers readAllControllers() {
    Controllers ctl;
    eventuallyWithin(designBound(std::chrono::milliseconds(kReaderSessionMs)), [&] {
      ctl = readControllers();
      return std::none_of(ctl.begin(), ctl.end(), [](const auto& gc) { return gc.second.id == -2; });
    }, 100ms);
    return ctl;
  }

  // A server registers as soon as its ZooKeeper session is established, and
  // its registration goes with its session.
  static std::chrono::milliseconds registerWait() { return designBound(std::chrono::milliseconds(kZkSessionMs)); }

  static std::map<int32_t, int> perServer(const Controllers& ctl) {
    std::map<int32_t, int> n;
    for (auto& [g, c] : ctl) ++n[c.id];
    return n;
  }

  static std::string spread(const Controllers& ctl) {
    std::string out;
    for (auto& [id, n] : perServer(ctl)) {
      out += (out.empty() ? "" : ", ") + (id == -1 ? std::string("none") : id == -2 ? std::string("unread")
                                                                                      : "server " + std::to_string(id)) +
             ": " + std::to_string(n);
    }
    return out;
  }

  struct Balanced {
    bool ok = false;
    int64_t ms = -1;
    int64_t firstChangeMs = -1;  // the first look at which a controller differed from the first look
    Clock::time_point at;
    Controllers ctl;
    std::vector<adapter::PlacementGroup> groups;  // controllers and published weights, as read
    adapter::PlacementResult placement;           // of `groups` over the candidates
    std::string reason;
  };

  // "server 1: 1320 (110 groups), ...; bound 1320"
  static std::string loadText(const adapter::PlacementResult& p) {
    std::string out;
    for (auto& s : p.servers) {
      out += (out.empty() ? "" : ", ") + std::string("server ") + std::to_string(s.id) + ": " + std::to_string(s.load) +
             " (" + std::to_string(s.groups) + " groups)";
    }
    return out + "; bound " + std::to_string(p.bound);
  }

  // The busiest candidate's load over the mean.
  static double maxOverMean(const adapter::PlacementResult& p) {
    if (p.servers.empty() || p.total == 0) return 0;
    uint64_t most = 0;
    for (auto& s : p.servers) most = std::max(most, s.load);
    return static_cast<double>(most) * static_cast<double>(p.servers.size()) / static_cast<double>(p.total);
  }

  // Waits until every group's controller znode names one of `candidates`,
  // the placement function over them (with the weights the servers
  // published) would move no group, and every live server's
  // groupcoord_groups_controlled gauge counts the znodes that name it.
  Balanced waitBalanced(const std::vector<int32_t>& candidates, std::chrono::milliseconds limit,
                        Clock::time_point from = Clock::now()) {
    Balanced b;
    const auto deadline = from + limit;
    std::optional<Controllers> initial;
    const std::set<int32_t> allowed(candidates.begin(), candidates.end());
    do {
      const auto observedAt = Clock::now();
      b.ctl = readControllers();
      if (!initial) {
        initial = b.ctl;
      } else if (b.firstChangeMs < 0 && b.ctl != *initial) {
        b.firstChangeMs = std::max<int64_t>(0, msBetween(from, observedAt));
      }
      auto snap = adapter::readFleet(*env->zk, *env->layout, env->groups, adapter::Weighting::Members, kGroupWeight);
      b.reason.clear();
      if (!snap.ok) {
        b.reason = "reading the fleet: " + snap.error;
      } else {
        b.groups = snap.groups;
        b.placement = adapter::place(candidates, snap.groups, adapter::PlacementConfig{});
        size_t wrong = 0, moving = 0;
        std::string first;
        for (size_t i = 0; i < snap.groups.size(); ++i) {
          const auto& g = snap.groups[i];
          if (b.ctl[g.name].id != g.controller) {
            b.reason = "group " + g.name + " changed controller while read";
            break;
          }
          if (!allowed.count(g.controller)) {
            if (wrong++ == 0) first = g.name + " controlled by " + std::to_string(g.controller);
          } else if (b.placement.target[i] != g.controller) {
            if (moving++ == 0 && first.empty()) {
              first = g.name + " should move from " + std::to_string(g.controller) + " to " +
                      std::to_string(b.placement.target[i]);
            }
          }
        }
        if (b.reason.empty() && (wrong > 0 || moving > 0)) {
          b.reason = std::to_string(wrong) + " groups not controlled by one of servers " + idList(candidates) + ", " +
                     std::to_string(moving) + " the placement would still move (e.g. " + first + "); " +
                     loadText(b.placement);
        }
      }
      if (b.reason.empty()) {
        auto n = perServer(b.ctl);
        for (int32_t id : env->live()) {
          const double v = valueOr(env->nodes[id].scrape(), "groupcoord_groups_controlled");
          if (v != n[id]) {
            b.reason = "server " + std::to_string(id) + " reports groupcoord_groups_controlled " +
                       std::to_string(static_cast<int64_t>(v)) + ", its controller znodes number " +
                       std::to_string(n[id]);
            break;
          }
        }
      }
      if (b.reason.empty()) {
        b.ok = true;
        b.at = observedAt;
        b.ms = std::max<int64_t>(0, msBetween(from, observedAt));
        return b;
      }
      std::this_thread::sleep_for(100ms);
    } while (Clock::now() < deadline);
    return b;
  }

  // After a server joined (or returned, or was undrained): the groups that
  // changed controller since `before`, no more of them than 10% over the
  // least the new bound forces (heaviest first, with the weights as they
  // are now, on the controllers as they were), and none of them away from
  // `to`. *toNew: how many of them went to `to` (a group given up goes to
  // the first server of its own order with room, most often the new one).
  std::set<std::string> expectMovesWithinMinimum(const std::string& label, int32_t to, const Balanced& before,
                                                 const Balanced& after, size_t* minimum, size_t* toNew) {
    std::set<std::string> moved;
    *toNew = 0;
    for (auto& [g, c] : after.ctl) {
      if (c == before.ctl.at(g)) continue;
      moved.insert(g);
      EXPECT_NE(before.ctl.at(g).id, to) << label << ": group " << g << " moved away from server " << to;
      if (c.id == to) ++*toNew;
    }
    std::vector<adapter::PlacementGroup> was = after.groups;
    for (auto& g : was) g.controller = before.ctl.at(g.name).id;
    *minimum = adapter::minimumMoves(env->candidates(), was, after.placement.bound);
    const auto allowed = static_cast<size_t>(std::ceil(1.1 * static_cast<double>(*minimum)));
    EXPECT_LE(moved.size(), allowed) << label << ": " << moved.size() << " groups moved; the bound "
                                     << after.placement.bound << " forces at least " << *minimum;
    return moved;
  }

  // Every live server's ListGroups names, for every group, the controller
  // its znode names (waits for the servers' watches to catch up: within
  // their ZooKeeper session, and the allowance).
  void expectServersAgree(const std::string& label, const Controllers& ctl) {
    std::string why;
    const auto deadline = Clock::now() + designBound(std::chrono::milliseconds(kZkSessionMs));
    do {
      why.clear();
      for (int32_t id : env->live()) {
        client::Connection c;
        if (!c.connect("127.0.0.1", env->nodes[id].proc->port(), 2000ms)) {
          why = "server " + std::to_string(id) + " does not accept connections";
          break;
        }
        auto r = c.call(protocol::ListGroupsRequest{env->groups}, 10000ms);
        auto* resp = r.ok ? std::get_if<protocol::ListGroupsResponse>(&r.response) : nullptr;
        if (!resp || resp->error != ErrorCode::NONE || resp->groups.size() != env->groups.size()) {
          why = "server " + std::to_string(id) + " did not list the groups";
          break;
        }
        for (auto& gi : resp->groups) {
          auto it = ctl.find(gi.name);
          const int32_t named = gi.controller.isNone() ? -1 : gi.controller.brokerId;
          if (it == ctl.end() || it->second.id != named) {
            why = "server " + std::to_string(id) + " names " + std::to_string(named) + " as the controller of " +
                  gi.name + ", its znode " + (it == ctl.end() ? std::string("?") : std::to_string(it->second.id));
            break;
          }
        }
        if (!why.empty()) break;
      }
      if (why.empty()) return;
      std::this_thread::sleep_for(200ms);
    } while (Clock::now() < deadline);
    ADD_FAILURE() << label << ": " << why;
  }

  // Exactly one controller per group, the servers agree, and (when
  // `withinBound`) no candidate's load is over the bound by more than the
  // margin (a server between the two gives nothing up, so that small
  // changes move nothing): max / mean at most (1 + epsilon)(1 + margin).
  void expectFleet(const std::string& label, const Balanced& b, bool withinBound) {
    for (auto& [g, c] : b.ctl) EXPECT_GE(c.id, 0) << label << ": group " << g << " has no controller";
    expectServersAgree(label, b.ctl);
    double sum = 0;
    for (int32_t id : env->live()) {
      const double v = valueOr(env->nodes[id].scrape(), "groupcoord_groups_controlled");
      sum += v;
    }
    EXPECT_EQ(sum, kGroups) << label << ": the servers' groupcoord_groups_controlled add up to " << sum;
    if (!withinBound) return;
    const adapter::PlacementConfig config;
    const uint64_t limit = b.placement.bound + b.placement.bound * config.marginPermille / 1000;
    for (auto& s : b.placement.servers) {
      EXPECT_LE(s.load, limit) << label << ": server " << s.id << " is over the bound and its margin ("
                               << loadText(b.placement) << ")";
    }
  }

  static std::string ratioText(const Balanced& b) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(2) << maxOverMean(b.placement);
    return "max / mean load " + o.str() + " (" + loadText(b.placement) + ")";
  }

  // ---- the members ----

  OwnershipRecord::Counts counts() {
    OwnershipRecord::Counts sum;
    for (auto& c : env->checkers) {
      auto k = c->record().counts();
      sum.grants += k.grants;
      sum.releases += k.releases;
      sum.commitsAcked += k.commitsAcked;
      for (auto& [name, v] : k.errors) sum.errors[name] += v;
    }
    return sum;
  }

  static std::string errorsSince(const OwnershipRecord::Counts& before, const OwnershipRecord::Counts& after) {
    std::string out;
    for (auto& [name, n] : after.errors) {
      auto it = before.errors.find(name);
      const uint64_t d = n - (it == before.errors.end() ? 0 : it->second);
      if (d > 0) out += (out.empty() ? "" : ", ") + name + " x" + std::to_string(d);
    }
    return out.empty() ? "none" : out;
  }

  // registrations()[i][k]: RegisterConsumer calls of member k of group i.
  std::vector<std::vector<uint64_t>> registrations() {
    std::vector<std::vector<uint64_t>> out;
    for (auto& c : env->checkers) {
      out.emplace_back();
      for (auto& m : c->members()) out.back().push_back(m->registrations());
    }
    return out;
  }

  struct Reregs {
    int members = 0;          // members of the groups looked at
    int registeredAgain = 0;  // of them, those that sent RegisterConsumer
    uint64_t calls = 0;
    uint64_t most = 0;        // by one member
  };
  // RegisterConsumer calls since `before` by the members of `groups`.
  Reregs reregistrations(const std::vector<std::vector<uint64_t>>& before, const std::set<std::string>& groups) {
    Reregs r;
    auto now = registrations();
    for (size_t i = 0; i < env->groups.size(); ++i) {
      if (!groups.count(env->groups[i])) continue;
      for (size_t k = 0; k < now[i].size(); ++k) {
        const uint64_t d = now[i][k] - before[i][k];
        ++r.members;
        r.calls += d;
        r.most = std::max(r.most, d);
        if (d > 0) ++r.registeredAgain;
      }
    }
    return r;
  }

  // Waits up to `limit` from now (the fleet placed: the last move done)
  // until every group has settled; *slowest: when the last one did, in ms
  // after `from`.
  bool allSettled(Clock::time_point from, std::chrono::milliseconds limit, int64_t* slowest,
                  std::string* why = nullptr) {
    int64_t worst = 0;
    bool ok = true;
    const auto until = Clock::now() + limit;
    for (size_t i = 0; i < env->checkers.size(); ++i) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      auto s = env->checkers[i]->waitSettled(env->all, Clock::now(), std::max(left, 1ms));
      if (!s.settled) {
        ok = false;
        if (why) *why = "group " + env->groups[i] + " did not settle: " + s.reason;
        break;
      }
      worst = std::max(worst, msBetween(from, s.at));
    }
    if (slowest) *slowest = worst;
    return ok;
  }

  struct MemberCheck {
    int64_t settledMs = -1;
    size_t overlaps = 0;
    size_t lost = 0;
    size_t inDoubt = 0;
    size_t partitionsCommitted = 0;
    uint64_t acked = 0;
    std::string errors;
  };
  // Every group settled, no partition held twice, no acknowledged commit
  // lost, and commits acknowledged since the last check.
  MemberCheck checkMembers(const std::string& label, Clock::time_point from) {
    MemberCheck m;
    std::string why;
    const bool settled = allSettled(from, designBound(kMemberSettleLimit), &m.settledMs, &why);
    EXPECT_TRUE(settled) << label << ": " << why;
    if (!settled) m.settledMs = -1;

    // Commits flow again before they are compared: a commit is a ZooKeeper
    // write, answered within the servers' ZooKeeper session.
    eventuallyWithin(designBound(std::chrono::milliseconds(kZkSessionMs)),
                     [&] { return counts().commitsAcked != env->lastCounts.commitsAcked; });
    for (size_t i = 0; i < env->checkers.size(); ++i)
      if (env->committing(i)) env->checkers[i]->quiesceCommits();
    for (size_t i = 0; i < env->checkers.size(); ++i) {
      if (!env->committing(i)) continue;
      auto fetched = fetchOffsetsOnAny(env->ports.get(), env->groups[i]);
      EXPECT_TRUE(fetched.has_value()) << label << ": FetchOffsets of " << env->groups[i] << " failed on every server";
      if (!fetched) continue;
      auto cc = env->checkers[i]->record().compareCommits(*fetched);
      m.lost += cc.lost;
      m.inDoubt += cc.inDoubt;
      m.partitionsCommitted += cc.partitions;
      for (auto& p : cc.problems) ADD_FAILURE() << label << ": group " << env->groups[i] << ": acknowledged commit lost: " << p;
    }
    for (size_t i = 0; i < env->checkers.size(); ++i)
      if (env->committing(i)) env->checkers[i]->resumeCommits();
    for (size_t i = 0; i < env->checkers.size(); ++i) {
      for (auto& o : env->checkers[i]->record().overlaps()) {
        ++m.overlaps;
        ADD_FAILURE() << label << ": group " << env->groups[i] << ": partition owned twice: " << o;
      }
    }
    auto now = counts();
    m.acked = now.commitsAcked - env->lastCounts.commitsAcked;
    m.errors = errorsSince(env->lastCounts, now);
    EXPECT_GT(m.acked, 0u) << label << ": no commit was acknowledged since the last check";
    env->lastCounts = now;
    return m;
  }

  static std::string memberText(const MemberCheck& m) {
    std::ostringstream o;
    o << "members settled " << (m.settledMs >= 0 ? std::to_string(m.settledMs) + " ms" : std::string("never"))
      << "; overlaps " << m.overlaps << "; commits acknowledged " << m.acked << ", lost " << m.lost << " of "
      << m.partitionsCommitted << " partitions, in doubt " << m.inDoubt << "; client errors: " << m.errors;
    return o.str();
  }

  void figure(const std::string& text) {
    std::cout << "[figure] " << text << std::endl;
    env->figures.push_back("[figure] " + text);
  }

  // ---- metrics ----

  static double sumHandovers(const std::map<std::string, double>& s) {
    return valueOr(s, "groupcoord_handovers_total{reason=\"rebalance\"}", 0) +
           valueOr(s, "groupcoord_handovers_total{reason=\"drain\"}", 0);
  }

  double handoversOf(const std::vector<int32_t>& ids) {
    double n = 0;
    for (int32_t id : ids) n += sumHandovers(env->nodes[id].scrape());
    return n;
  }

  // "p50 <= X s, max <= Y s over N" from a handover duration histogram.
  static std::string histogramText(const std::map<std::string, double>& s) {
    const std::string name = "groupcoord_handover_duration_seconds";
    std::vector<std::pair<double, double>> buckets;  // (le, cumulative)
    for (auto& [series, v] : s) {
      const std::string prefix = name + "_bucket{le=\"";
      if (series.rfind(prefix, 0) != 0) continue;
      std::string le = series.substr(prefix.size(), series.size() - prefix.size() - 2);
      buckets.emplace_back(le == "+Inf" ? 1e300 : std::stod(le), v);
    }
    std::sort(buckets.begin(), buckets.end());
    const double count = valueOr(s, name + "_count", 0);
    if (count <= 0) return "no handovers";
    auto quantile = [&](double q) {
      for (auto& [le, c] : buckets)
        if (c >= q * count) return le >= 1e300 ? std::string("+Inf") : std::to_string(static_cast<int>(le * 1000));
      return std::string("?");
    };
    std::ostringstream o;
    o << "p50 <= " << quantile(0.5) << " ms, max <= " << quantile(1.0) << " ms, mean "
      << static_cast<int>(valueOr(s, name + "_sum", 0) * 1000 / count) << " ms over " << count;
    return o.str();
  }

  void dumpLogs() {
    for (auto& [id, n] : env->nodes) {
      std::string all = n.proc->log();
      size_t from = logOffsets_.count(id) ? logOffsets_[id] : 0;
      std::cerr << "---- groupcoordd server " << id << " since the test began (" << n.proc->logPath() << ")\n"
                << lastLines(from <= all.size() ? all.substr(from) : all, 60) << std::endl;
    }
  }

  std::map<int32_t, size_t> logOffsets_;
};

// ---------------------------------------------------------------------------

TEST_F(FleetSuite, A_RollingRestart) {
  wanted_ = {1, 2, 3};
  for (int32_t id = 1; id <= 3; ++id) {
    Node& node = env->nodes[id];
    const std::string step = "rolling restart, server " + std::to_string(id);

    // Down: its groups are claimed by the others.
    const auto regsBefore = registrations();
    const auto before = readAllControllers();
    std::set<std::string> itsGroups;
    for (auto& [g, c] : before)
      if (c.id == id) itsGroups.insert(g);
    const auto stopped = Clock::now();
    EXPECT_EQ(node.proc->terminate(), 0) << step << ": SIGTERM did not end it cleanly";
    env->refreshPorts();
    auto down = waitBalanced(env->candidates(), balanceWait(), stopped);
    EXPECT_TRUE(down.ok) << step << ": its groups were not claimed by the others: " << down.reason;
    if (!down.ok) continue;
    expectFleet(step + " (down)", down, false);
    for (auto& [g, c] : down.ctl) {
      if (!itsGroups.count(g)) {
        EXPECT_EQ(c, before.at(g)) << step << ": group " << g << " changed controller";
      }
    }
    auto downMembers = checkMembers(step + " (down)", stopped);
    auto downRegs = reregistrations(regsBefore, itsGroups);
    figure("fleet " + step + " stopped: its " + std::to_string(itsGroups.size()) + " groups claimed by the others " +
           std::to_string(down.ms) + " ms after SIGTERM (" + spread(down.ctl) + "); " +
           std::to_string(downRegs.registeredAgain) + " of their " + std::to_string(downRegs.members) +
           " members registered again; " + memberText(downMembers));

    // Back: once settled, the others hand it what the bound forces off them.
    // Not before: the others count the settle delay from when they see it
    // registered, after `starting` (a lower bound of the protocol, strict).
    const auto regsMid = registrations();
    const double handoversBefore = handoversOf(env->candidates());
    const auto starting = Clock::now();
    ASSERT_TRUE(node.start()) << step << ": it did not start again";
    const auto back = Clock::now();
    env->refreshPorts();
    auto up = waitBalanced(env->candidates(), balanceWait(), starting);
    EXPECT_TRUE(up.ok) << step << ": the fleet did not balance after its return: " << up.reason;
    if (!up.ok) continue;
    EXPECT_GE(up.firstChangeMs, kSettleMs) << step << ": groups moved to it before it had settled";
    expectFleet(step + " (back)", up, true);
    size_t minimum = 0, toNew = 0;
    const auto moved = expectMovesWithinMinimum(step, id, down, up, &minimum, &toNew);
    const double handedOver = handoversOf(env->candidates()) - handoversBefore;
    EXPECT_GE(handedOver, static_cast<double>(moved.size()))
        << step << ": groupcoord_handovers_total moved by " << handedOver << " for " << moved.size() << " groups";
    auto upMembers = checkMembers(step + " (back)", back);
    auto upRegs = reregistrations(regsMid, moved);
    EXPECT_LE(upRegs.most, 1u) << step << ": a member of a handed-over group registered " << upRegs.most
                               << " times";
    figure("fleet " + step + " returned: balanced " + std::to_string(up.ms) +
           " ms after it was started, first group seen moved at " + std::to_string(up.firstChangeMs) +
           " ms (settle delay " + std::to_string(kSettleMs) + " ms; " + spread(up.ctl) + "; " + ratioText(up) + "); " +
           std::to_string(moved.size()) + " groups handed over, " + std::to_string(toNew) +
           " of them to it (the bound forces at least " + std::to_string(minimum) + "), handovers counted " +
           std::to_string(static_cast<int>(handedOver)) + "; " + std::to_string(upRegs.registeredAgain) + " of their " +
           std::to_string(upRegs.members) + " members registered again (" + std::to_string(upRegs.calls) +
           " calls); " + memberText(upMembers));
  }

  // At the end: the whole run's record.
  auto end = waitBalanced(env->candidates(), designBound(kAlreadyPlaced));
  EXPECT_TRUE(end.ok) << "after the rolling restart: " << end.reason;
  expectFleet("after the rolling restart", end, true);
  size_t overlaps = 0;
  for (auto& c : env->checkers) overlaps += c->record().overlaps().size();
  EXPECT_EQ(overlaps, 0u);
  auto k = counts();
  figure("fleet rolling restart done: " + spread(end.ctl) + "; over the whole restart: grants " +
         std::to_string(k.grants) + ", releases " + std::to_string(k.releases) + ", overlaps " +
         std::to_string(overlaps) + ", commits acknowledged " + std::to_string(k.commitsAcked));
}

TEST_F(FleetSuite, B_FourthServerJoins) {
  wanted_ = {1, 2, 3, 4};
  auto before = waitBalanced(env->candidates(), designBound(kAlreadyPlaced));
  ASSERT_TRUE(before.ok) << "not balanced before the fourth server joins: " << before.reason;
  const auto regsBefore = registrations();
  Node& n4 = env->nodes.count(4) ? env->nodes[4] : addNode(4);
  // The settle delay runs from when the others see it registered, after this.
  const auto starting = Clock::now();
  ASSERT_TRUE(n4.start()) << "server 4 did not start";
  logOffsets_[4] = 0;
  std::cout << "[fleet] groupcoordd server 4 logs to " << n4.proc->logPath() << std::endl;
  const auto joined = Clock::now();
  env->refreshPorts();
  auto after = waitBalanced(env->candidates(), balanceWait(), starting);
  ASSERT_TRUE(after.ok) << "the fleet did not balance after server 4 joined: " << after.reason;
  EXPECT_GE(after.firstChangeMs, kSettleMs) << "groups moved to server 4 before it had settled";
  expectFleet("server 4 joined", after, true);
  size_t minimum = 0, toNew = 0;
  const auto moved = expectMovesWithinMinimum("server 4 joined", 4, before, after, &minimum, &toNew);
  EXPECT_GT(moved.size(), 0u) << "nothing moved to the new server";
  const double share = static_cast<double>(moved.size()) / kGroups;
  auto members = checkMembers("server 4 joined", joined);
  auto regs = reregistrations(regsBefore, moved);
  EXPECT_LE(regs.most, 1u) << "a member of a group handed over to server 4 registered " << regs.most << " times";
  std::ostringstream f;
  f << "fleet fourth server joined: " << moved.size() << " groups (" << static_cast<int>(share * 100 + 0.5)
    << "%) moved, " << toNew << " of them to it; the bound forces at least " << minimum << "; " << ratioText(after)
    << "; placed " << after.ms << " ms after it started, first group seen moved at "
    << after.firstChangeMs << " ms (settle delay " << kSettleMs
    << " ms; " << spread(after.ctl) << "); " << regs.registeredAgain << " of their " << regs.members
    << " members registered again; " << memberText(members);
  figure(f.str());
}

TEST_F(FleetSuite, C_ServerFlappingWithinTheSettleDelay) {
  wanted_ = {1, 2, 3, 4};
  auto before = waitBalanced(env->candidates(), designBound(kAlreadyPlaced));
  ASSERT_TRUE(before.ok) << "not balanced before the flapping: " << before.reason;
  const auto fleetIds = env->candidates();
  const double handoversBefore = handoversOf(fleetIds);
  Node& n5 = env->nodes.count(5) ? env->nodes[5] : addNode(5);
  logOffsets_[5] = 0;
  std::cout << "[fleet] groupcoordd server 5 logs to " << n5.proc->logPath() << std::endl;

  // Watches the controllers all along: a group that moves and comes back
  // in between still changes its controller znode's czxid.
  std::vector<std::string> changes;
  auto look = [&] {
    auto now = readAllControllers();
    for (auto& [g, c] : now)
      if (!(c == before.ctl.at(g)) && changes.size() < 20)
        changes.push_back(g + ": " + std::to_string(before.ctl.at(g).id) + " -> " + std::to_string(c.id));
  };
  const auto t0 = Clock::now();
  std::vector<int64_t> lives;
  for (int round = 0; round < 3; ++round) {
    const auto started = Clock::now();
    ASSERT_TRUE(n5.start()) << "server 5 did not start (round " << round + 1 << ")";
    env->refreshPorts();
    ASSERT_TRUE(waitRegistered(5, true, registerWait())) << "server 5 did not register";
    // Live for half a second after it registered.
    std::this_thread::sleep_for(std::chrono::milliseconds(kFlapLiveMs));
    look();
    EXPECT_EQ(n5.proc->terminate(), 0);
    env->refreshPorts();
    ASSERT_TRUE(waitRegistered(5, false, registerWait())) << "server 5's registration outlived it";
    // From before it started to its registration seen gone: longer than any
    // server saw it live, unless one saw it go late. The settle delay holds
    // the allowance for that.
    lives.push_back(msBetween(started, Clock::now()));
    EXPECT_LT(lives.back(), kSettleMs) << "server 5 lived longer than the settle delay: the round proves nothing";
  }
  const int64_t span = msBetween(t0, Clock::now());
  // Anything late would have started by now.
  const auto quietUntil = Clock::now() + std::chrono::milliseconds(kSettleMs + 3000);
  while (Clock::now() < quietUntil) {
    look();
    std::this_thread::sleep_for(250ms);
  }
  auto after = readAllControllers();
  size_t moved = 0;
  for (auto& [g, c] : after) moved += c == before.ctl.at(g) ? 0 : 1;
  EXPECT_EQ(moved, 0u) << "groups moved although server 5 never stayed for the settle delay";
  for (auto& c : changes) ADD_FAILURE() << "controller changed: " << c;
  const double handovers = handoversOf(fleetIds) - handoversBefore;
  EXPECT_EQ(handovers, 0) << "groupcoord_handovers_total moved";
  std::string livesText;
  for (auto l : lives) livesText += (livesText.empty() ? "" : ", ") + std::to_string(l);
  figure("fleet server flapping: 3 joins and leaves, live " + livesText + " ms each (settle delay " +
         std::to_string(kSettleMs) + " ms), over " + std::to_string(span) + " ms; groups that changed controller " +
         std::to_string(moved) + ", handovers " + std::to_string(static_cast<int>(handovers)));
}

TEST_F(FleetSuite, D_DrainAndUndrain) {
  wanted_ = {1, 2, 3, 4};
  const int32_t victim = 2;
  auto before = waitBalanced(env->candidates(), designBound(kAlreadyPlaced));
  ASSERT_TRUE(before.ok) << "not balanced before the drain: " << before.reason;
  std::set<std::string> itsGroups;
  for (auto& [g, c] : before.ctl)
    if (c.id == victim) itsGroups.insert(g);
  ASSERT_FALSE(itsGroups.empty());
  const auto regsBefore = registrations();
  const auto metricsBefore = env->nodes[victim].scrape();
  const double drainsBefore = valueOr(metricsBefore, "groupcoord_handovers_total{reason=\"drain\"}", 0);
  const std::string groupctl = binaryPath("client/groupctl");

  std::string out;
  const auto t0 = Clock::now();
  env->drained.insert(victim);  // so that TearDown undrains it whatever happens
  // Its groups handed over 8 at a time: 60 s is several times what they take
  // (the figure prints it), and the allowance.
  const auto drainWait = designBound(60s);
  int rc = runCommand("timeout " + std::to_string(drainWait.count() / 1000 + 30) + " " + groupctl + " --bootstrap " +
                          env->bootstrap() + " drain " + std::to_string(victim) + " --wait " +
                          std::to_string(drainWait.count()) + "ms",
                      &out);
  const int64_t drainMs = msBetween(t0, Clock::now());
  ASSERT_EQ(rc, 0) << "groupctl drain: " << out;
  std::cout << "[fleet] groupctl drain " << victim << " (" << drainMs << " ms): " << out;

  // At once: no controller znode names it, and no other group moved. A
  // group it handed over has no controller znode until the next one claims
  // it, at once, at the latest after the claim fallback: waited for.
  Controllers after;
  eventuallyWithin(designBound(std::chrono::milliseconds(kClaimFallbackMs)), [&] {
    after = readAllControllers();
    return std::all_of(after.begin(), after.end(), [](const auto& gc) { return gc.second.id >= 0; });
  }, 100ms);
  for (auto& [g, c] : after) {
    EXPECT_NE(c.id, victim) << "group " << g << " is still controlled by the drained server";
    EXPECT_GE(c.id, 0) << "group " << g << " has no controller after the drain";
    if (!itsGroups.count(g)) {
      EXPECT_EQ(c, before.ctl.at(g)) << "group " << g << " moved although not drained";
    }
  }
  // Its gauge follows (it counts the groups it controls when scraped, and
  // a group is dropped right after its handover), polled up to a second and
  // the allowance; its drain handovers are counted.
  double gauge = -1;
  eventuallyWithin(designBound(1s), [&] {
    gauge = valueOr(env->nodes[victim].scrape(), "groupcoord_groups_controlled");
    return gauge == 0;
  }, 100ms);
  EXPECT_EQ(gauge, 0) << "the drained server reports groupcoord_groups_controlled " << gauge;
  const auto metricsAfter = env->nodes[victim].scrape();
  const double drains = valueOr(metricsAfter, "groupcoord_handovers_total{reason=\"drain\"}", 0) - drainsBefore;
  EXPECT_GE(drains, static_cast<double>(itsGroups.size()))
      << "groupcoord_handovers_total{reason=\"drain\"} moved by " << drains << " for " << itsGroups.size()
      << " groups";
  auto drained = waitBalanced(env->candidates(), designBound(kAlreadyPlaced));
  EXPECT_TRUE(drained.ok) << "after the drain: " << drained.reason;
  expectFleet("drained", drained, false);
  auto members = checkMembers("server " + std::to_string(victim) + " drained", t0);
  auto regs = reregistrations(regsBefore, itsGroups);
  EXPECT_LE(regs.most, 1u) << "a member of a drained group registered " << regs.most << " times";
  figure("fleet drain of server " + std::to_string(victim) + ": groupctl drain --wait returned after " +
         std::to_string(drainMs) + " ms; " + std::to_string(itsGroups.size()) + " groups handed over, " +
         std::to_string(static_cast<int>(drains)) + " counted as drain (its handover durations since it started: " +
         histogramText(metricsAfter) + "); " + spread(after) + "; " + std::to_string(regs.registeredAgain) + " of their " + std::to_string(regs.members) +
         " members registered again (" + std::to_string(regs.calls) + " calls, at most " +
         std::to_string(regs.most) + " by one); " + memberText(members));

  // Undrained: it gets back exactly what it gave up, nothing else moves.
  const auto regsMid = registrations();
  const auto t1 = Clock::now();
  rc = runCommand("timeout 30 " + groupctl + " --bootstrap " + env->bootstrap() + " undrain " + std::to_string(victim),
                  &out);
  ASSERT_EQ(rc, 0) << "groupctl undrain: " << out;
  env->drained.erase(victim);
  auto back = waitBalanced(env->candidates(), balanceWait(), t1);
  ASSERT_TRUE(back.ok) << "the fleet did not balance after the undrain: " << back.reason;
  expectFleet("undrained", back, true);
  size_t minimum = 0, toNew = 0;
  const auto returned = expectMovesWithinMinimum("undrained", victim, drained, back, &minimum, &toNew);
  auto members2 = checkMembers("server " + std::to_string(victim) + " undrained", t1);
  auto regs2 = reregistrations(regsMid, returned);
  EXPECT_LE(regs2.most, 1u) << "a member of a group returned to the undrained server registered " << regs2.most
                            << " times";
  figure("fleet undrain of server " + std::to_string(victim) + ": placed " + std::to_string(back.ms) +
         " ms after groupctl undrain; " + std::to_string(returned.size()) + " groups moved, " + std::to_string(toNew) + " of them to it (the bound forces at least " +
         std::to_string(minimum) + "; " + spread(back.ctl) + "; " + ratioText(back) + "); " + std::to_string(regs2.registeredAgain) + " of their " + std::to_string(regs2.members) +
         " members registered again; " + memberText(members2));
}

TEST_F(FleetSuite, E_KilledAndRestarted) {
  wanted_ = {1, 2, 3, 4};
  const int32_t victim = 3;
  auto before = waitBalanced(env->candidates(), designBound(kAlreadyPlaced));
  ASSERT_TRUE(before.ok) << "not placed before the kill: " << before.reason;
  std::set<std::string> itsGroups;
  for (auto& [g, c] : before.ctl)
    if (c.id == victim) itsGroups.insert(g);
  Node& node = env->nodes[victim];

  // Killed: its session lives on until ZooKeeper expires it, then the
  // others claim its groups, each on the first server of its own order
  // with room under the bound.
  const auto killed = Clock::now();
  node.proc->kill9();
  env->refreshPorts();
  auto down = waitBalanced(env->candidates(), balanceWait(), killed);
  ASSERT_TRUE(down.ok) << "its groups were not claimed by the others: " << down.reason;
  expectFleet("server " + std::to_string(victim) + " killed", down, true);
  for (auto& [g, c] : down.ctl) {
    if (!itsGroups.count(g)) {
      EXPECT_EQ(c, before.ctl.at(g)) << "group " << g << " moved, not the killed server's";
    }
  }
  auto downMembers = checkMembers("server " + std::to_string(victim) + " killed", killed);
  figure("fleet SIGKILL of server " + std::to_string(victim) + ": its " + std::to_string(itsGroups.size()) +
         " groups claimed by the others " + std::to_string(down.ms) + " ms after the kill (ZooKeeper session " +
         std::to_string(kZkSessionMs) + " ms; " + ratioText(down) + "); " + memberText(downMembers));

  // Started again: it says its id is taken until the old session is gone,
  // then settles, and the others hand it what the bound forces off them.
  // Not before: the others count the settle delay from when they see it
  // registered, after `starting` (a lower bound of the protocol, strict).
  const double handoversBefore = handoversOf(env->candidates());
  const auto starting = Clock::now();
  ASSERT_TRUE(node.start()) << "server " << victim << " did not start again";
  const auto back = Clock::now();
  env->refreshPorts();
  auto up = waitBalanced(env->candidates(), balanceWait(), starting);
  ASSERT_TRUE(up.ok) << "the fleet was not placed again after the restart: " << up.reason;
  EXPECT_GE(up.firstChangeMs, kSettleMs) << "groups moved to it before it had settled";
  expectFleet("server " + std::to_string(victim) + " restarted", up, true);
  size_t minimum = 0, toNew = 0;
  const auto moved = expectMovesWithinMinimum("restarted after SIGKILL", victim, down, up, &minimum, &toNew);
  const double handedOver = handoversOf(env->candidates()) - handoversBefore;
  auto upMembers = checkMembers("server " + std::to_string(victim) + " restarted", back);
  figure("fleet restart after SIGKILL of server " + std::to_string(victim) + ": placed " + std::to_string(up.ms) +
         " ms after it started, first group seen moved at " + std::to_string(up.firstChangeMs) + " ms; " +
         std::to_string(moved.size()) + " groups moved, " + std::to_string(toNew) + " of them to it (the bound forces at least " + std::to_string(minimum) +
         "), handovers counted " + std::to_string(static_cast<int>(handedOver)) + "; " + spread(up.ctl) + "; " +
         ratioText(up) + "; " + memberText(upMembers));
}

TEST_F(FleetSuite, F_SteadyWeightsMoveNothing) {
  wanted_ = {1, 2, 3, 4};
  auto before = waitBalanced(env->candidates(), designBound(kAlreadyPlaced));
  ASSERT_TRUE(before.ok) << "not placed before the steady run: " << before.reason;
  const char* text = std::getenv("GROUPCOORD_FLEET_STEADY_SECONDS");
  const int seconds = text ? std::max(1, std::atoi(text)) : 60;
  const double handoversBefore = handoversOf(env->candidates());
  std::vector<std::string> changes;
  const auto t0 = Clock::now();
  while (Clock::now() < t0 + std::chrono::seconds(seconds)) {
    std::this_thread::sleep_for(1s);
    for (auto& [g, c] : readAllControllers())
      if (!(c == before.ctl.at(g)) && changes.size() < 20)
        changes.push_back(g + ": " + std::to_string(before.ctl.at(g).id) + " -> " + std::to_string(c.id));
  }
  for (auto& c : changes) ADD_FAILURE() << "controller changed while nothing happened: " << c;
  const double handovers = handoversOf(env->candidates()) - handoversBefore;
  EXPECT_EQ(handovers, 0) << "groupcoord_handovers_total moved";
  auto after = waitBalanced(env->candidates(), designBound(kAlreadyPlaced));
  EXPECT_TRUE(after.ok) << after.reason;
  figure("fleet steady weights for " + std::to_string(seconds) + " s (members heartbeating and committing): " +
         std::to_string(changes.size()) + " groups changed controller, handovers " +
         std::to_string(static_cast<int>(handovers)) + "; " + ratioText(after));
}

}  // namespace
}  // namespace groupcoord::testing
