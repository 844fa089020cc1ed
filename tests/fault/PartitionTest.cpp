// Network partitions: the group's controller cut off from ZooKeeper while
// its members still reach it (docs/design.md, "The session lease").
//
// Three ZooKeeper nodes (the test ensemble), two groupcoordd servers, each
// run under a uid of its own, and twenty simulated members
// (support/OwnershipChecker.h) joining, leaving, crashing, committing, and
// fencing themselves once their session timeout passes without a renewal.
// Each schedule drops everything the controller's uid sends to the three
// ZooKeeper ports (one nftables rule in a table this test creates and
// removes), for 9 s or for 25 s, both longer than the server's ZooKeeper
// session of 4 s, then heals the link. Meanwhile the ensemble expires the
// controller's session, the other server claims the group, and the members
// move to it.
//
// After each schedule: no partition ever held by two members, no
// acknowledged commit lost, the group settled again, and the margin between
// the cut-off controller's last renewal of any member and the new
// controller's first grant (both as the members saw them), which the
// session lease keeps positive. GROUPCOORD_PARTITION_SCHEDULES sets the
// number of schedules (default 20, half of each length).

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/Connection.h"
#include "common/Layout.h"
#include "support/OwnershipChecker.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;
using protocol::TopicPartition;
using Clock = std::chrono::steady_clock;

constexpr int64_t kZkSessionMs = 4000;      // the servers' ZooKeeper session
constexpr int64_t kMemberSessionMs = 3000;  // the group's session timeout
constexpr int kMembers = 20;
constexpr const char* kGroup = "partitioned";
constexpr const char* kTablePrefix = "groupcoord_partition_";

int64_t msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

int run(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 512> buf{};
  std::string text;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) text.append(buf.data(), n);
  int rc = ::pclose(p);
  if (out) *out = text;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// One nftables table of this process: a rule in its output chain drops what
// one uid sends to the ensemble's ports. Removed by the destructor, and a
// table left by an earlier run whose process is gone is removed first.
class Firewall {
 public:
  Firewall() : table_(kTablePrefix + std::to_string(::getpid())) {
    std::string tables;
    if (run("nft list tables", &tables) != 0) {
      error_ = "nft does not work here (it needs root and the nftables package): " + tables;
      return;
    }
    std::istringstream in(tables);
    std::string line;
    while (std::getline(in, line)) {
      auto at = line.find(kTablePrefix);
      if (at == std::string::npos) continue;
      const std::string name = line.substr(at);
      const int pid = std::atoi(name.c_str() + std::string(kTablePrefix).size());
      if (pid > 0 && ::kill(pid, 0) != 0) run("nft delete table inet " + name);
    }
    std::string out;
    if (run("nft add table inet " + table_ + " && nft add chain inet " + table_ +
                " out '{ type filter hook output priority 0; policy accept; }'",
            &out) != 0) {
      error_ = "cannot create the nftables table " + table_ + ": " + out;
      return;
    }
    created_ = true;
  }
  ~Firewall() {
    if (created_) run("nft delete table inet " + table_);
  }
  Firewall(const Firewall&) = delete;
  Firewall& operator=(const Firewall&) = delete;

  const std::string& error() const { return error_; }

  // Drops every packet `uid` sends to the ZooKeeper client ports.
  bool cut(uid_t uid) {
    const int base = zkBasePort();
    std::string out;
    const bool ok = run("nft add rule inet " + table_ + " out meta skuid " + std::to_string(uid) + " tcp dport '{ " +
                            std::to_string(base + 1) + ", " + std::to_string(base + 2) + ", " +
                            std::to_string(base + 3) + " }' drop",
                        &out) == 0;
    if (!ok) std::cerr << "[partition] nft add rule failed: " << out << std::endl;
    return ok;
  }
  bool heal() { return run("nft flush chain inet " + table_ + " out") == 0; }
  std::string rules() const {
    std::string out;
    run("nft list table inet " + table_, &out);
    return out;
  }

 private:
  std::string table_;
  std::string error_;
  bool created_ = false;
};

int schedules() {
  const char* v = std::getenv("GROUPCOORD_PARTITION_SCHEDULES");
  const int n = v ? std::atoi(v) : 20;
  return n > 0 ? n : 20;
}

struct Margins {
  std::vector<int64_t> ms;
  void add(int64_t m) { ms.push_back(m); }
  int64_t quantile(double q) const {
    if (ms.empty()) return 0;
    auto v = ms;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  }
  int64_t min() const { return ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end()); }
};

TEST(PartitionSuite, ControllerCutOffFromZooKeeperWhileItsMembersStillReachIt) {
  requireEnsemble();
  Firewall firewall;
  ASSERT_TRUE(firewall.error().empty()) << firewall.error();

  const std::string root = "/" + uniqueName("partition");
  const std::string topicsPath = root + "-topics";
  zk::SessionConfig zc;
  zc.connect = zkConnect();
  zc.sessionTimeout = 10000ms;
  zk::Session zk(zc);
  ASSERT_EQ(zk.start(), zk::Error::Ok);
  ASSERT_EQ(zk.waitConnected(10s), zk::Error::Ok);
  ASSERT_EQ(zk.ensurePathSync(topicsPath), zk::Error::Ok);
  std::set<TopicPartition> all;
  for (auto [topic, n] : std::map<std::string, int32_t>{{"alpha", 12}, {"beta", 8}}) {
    ASSERT_EQ(zk.createSync(topicsPath + "/" + topic, layout::encodeTopic(n), zk::CreateMode::Persistent).error,
              zk::Error::Ok);
    for (int32_t p = 0; p < n; ++p) all.insert({topic, p});
  }

  // Two uids of their own, unlikely to be anybody else's.
  const uid_t uidBase = 52000 + static_cast<uid_t>(::getpid() % 4000) * 2;
  std::vector<std::unique_ptr<ServerProcess>> servers;
  std::vector<uid_t> uids;
  for (int id = 1; id <= 2; ++id) {
    servers.push_back(std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=" + std::to_string(id), "--zk-root=" + root, "--zk-topics-path=" + topicsPath,
        "--zk-session-timeout-ms=" + std::to_string(kZkSessionMs)}));
    uids.push_back(uidBase + static_cast<uid_t>(id - 1));
    servers.back()->runAs(uids.back());
    ASSERT_TRUE(servers.back()->start());
    std::cout << "[partition] groupcoordd server " << id << " (uid " << uids.back() << ") logs to "
              << servers.back()->logPath() << std::endl;
  }
  ServerPorts ports({servers[0]->port(), servers[1]->port()});
  for (int i = 0; i < 200 && zk.getChildrenSync(root + "/servers").children.size() < 2; ++i)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(zk.getChildrenSync(root + "/servers").children.size(), 2u) << "the servers did not register";
  {
    client::Connection c;
    ASSERT_TRUE(c.connect("127.0.0.1", servers[0]->port(), 5000ms));
    auto r = c.call(protocol::CreateGroupRequest{kGroup, kMemberSessionMs, {"alpha", "beta"}, false}, 10000ms);
    ASSERT_TRUE(r.ok);
    ASSERT_EQ(std::get<protocol::CreateGroupResponse>(r.response).error, ErrorCode::NONE);
  }

  SimMemberOptions options;
  options.group = kGroup;
  options.sessionTimeoutMs = kMemberSessionMs;
  options.commitPermille = 400;
  OwnershipChecker checker(ports, options);
  checker.start(kMembers, 35);

  auto controllerIndex = [&]() -> int {
    auto info = describeGroupOnAny(ports.get(), kGroup);
    if (!info || info->controller.isNone()) return -1;
    for (size_t i = 0; i < servers.size(); ++i)
      if (servers[i]->port() == info->controller.port) return static_cast<int>(i);
    return -1;
  };
  auto waitLog = [&](int index, size_t from, const std::string& text, std::chrono::milliseconds wait) {
    auto deadline = Clock::now() + wait;
    do {
      std::string log = servers[index]->log();
      if (log.size() > from && log.find(text, from) != std::string::npos) return true;
      std::this_thread::sleep_for(50ms);
    } while (Clock::now() < deadline);
    return false;
  };

  const int total = schedules();
  std::mt19937_64 rng(20261203);
  Margins margins;
  size_t overlapsSeen = 0;
  int run9 = 0, run25 = 0, violations = 0, lostCommits = 0;
  for (int s = 0; s < total; ++s) {
    const int64_t cutMs = s % 2 == 0 ? 9000 : 25000;
    auto before = checker.waitSettled(all, Clock::now(), 60s);
    ASSERT_TRUE(before.settled) << "schedule " << s << ": the group is not settled before the cut: "
                                << before.reason;
    checker.setChurn(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(500 + rng() % 2000));
    const int c = controllerIndex();
    ASSERT_GE(c, 0) << "schedule " << s << ": no controller";
    const int other = 1 - c;
    const uint16_t oldPort = servers[c]->port(), newPort = servers[other]->port();
    const size_t oldLogFrom = servers[c]->log().size(), otherLogFrom = servers[other]->log().size();

    const auto cutAt = Clock::now();
    ASSERT_TRUE(firewall.cut(uids[c])) << firewall.rules();
    std::this_thread::sleep_for(std::chrono::milliseconds(cutMs));
    const auto healAt = Clock::now();
    ASSERT_TRUE(firewall.heal());
    checker.setChurn(false);
    (cutMs == 9000 ? run9 : run25)++;

    // What the servers said, in an operator's words.
    EXPECT_TRUE(waitLog(c, oldLogFrom, "no ZooKeeper answer to a request sent in the last", 1s))
        << "schedule " << s << ": the cut-off server did not say it stopped answering from memory; its log ends:\n"
        << lastLines(servers[c]->log(), 30);
    EXPECT_TRUE(waitLog(other, otherLogFrom, "controller claimed by server", 1s))
        << "schedule " << s << ": the other server did not claim the group during the cut; its log ends:\n"
        << lastLines(servers[other]->log(), 30);
    EXPECT_TRUE(waitLog(c, oldLogFrom, "expired: gave up control", 15s))
        << "schedule " << s << ": the healed server did not learn that its session expired; its log ends:\n"
        << lastLines(servers[c]->log(), 30);
    EXPECT_TRUE(waitLog(c, oldLogFrom, "registered at", 15s)) << "schedule " << s << ": not registered again";

    auto settled = checker.waitSettled(all, healAt, 45s);
    EXPECT_TRUE(settled.settled) << "schedule " << s << ": the group did not settle after the heal: "
                                 << settled.reason;

    // The margin: the cut-off controller's last renewal of any member
    // against the new controller's first grant, both as the members saw
    // them (one clock).
    const auto windowEnd = settled.settled ? settled.at : Clock::now();
    Clock::time_point lastRenewal{}, firstGrant = Clock::time_point::max();
    for (auto& r : checker.record().renewals())
      if (r.server == oldPort && r.at >= cutAt - 10s && r.at <= healAt) lastRenewal = std::max(lastRenewal, r.at);
    for (auto& e : checker.record().events())
      if (e.grant && e.server == newPort && e.at >= cutAt && e.at <= windowEnd) firstGrant = std::min(firstGrant, e.at);
    std::string marginText = "no grant by the new controller";
    if (firstGrant != Clock::time_point::max() && lastRenewal != Clock::time_point{}) {
      const int64_t m = msBetween(lastRenewal, firstGrant);
      margins.add(m);
      marginText = std::to_string(m) + " ms";
      EXPECT_GT(m, 0) << "schedule " << s << ": the new controller granted a partition before the cut-off one "
                      << "stopped renewing members";
    }

    // Commits: what was acknowledged is in ZooKeeper.
    checker.quiesceCommits();
    auto fetched = fetchOffsetsOnAny(ports.get(), kGroup);
    EXPECT_TRUE(fetched.has_value()) << "schedule " << s << ": FetchOffsets failed on every server";
    size_t lost = 0;
    if (fetched) {
      auto commits = checker.record().compareCommits(*fetched);
      lost = commits.lost;
      for (auto& p : commits.problems) ADD_FAILURE() << "schedule " << s << ": acknowledged commit lost: " << p;
    }
    checker.resumeCommits();
    lostCommits += static_cast<int>(lost);

    auto overlaps = checker.record().overlaps();
    for (size_t i = overlapsSeen; i < overlaps.size(); ++i)
      ADD_FAILURE() << "schedule " << s << ": partition owned twice: " << overlaps[i];
    violations += static_cast<int>(overlaps.size() - overlapsSeen);
    overlapsSeen = overlaps.size();

    std::cout << "[figure] partition schedule " << s + 1 << "/" << total << ": server " << c + 1
              << " cut off from ZooKeeper for " << cutMs << " ms (" << msBetween(cutAt, healAt)
              << " ms measured); settled " << (settled.settled ? std::to_string(settled.ms) + " ms" : "never")
              << " after the heal; last renewal by the cut-off controller to first grant by server " << other + 1
              << ": " << marginText << "; double ownership " << overlaps.size() << " in all; commits lost " << lost
              << std::endl;
  }
  checker.stop();
  std::cout << "[figure] partition suite: " << run9 + run25 << " schedules (" << run9 << " of 9 s, " << run25
            << " of 25 s); double ownership " << violations << "; acknowledged commits lost " << lostCommits
            << "; margin from the cut-off controller's last renewal to the new controller's first grant: p50 "
            << margins.quantile(0.5) << " ms, min " << margins.min() << " ms over " << margins.ms.size()
            << " schedules" << std::endl;
  EXPECT_EQ(violations, 0);
  EXPECT_EQ(lostCommits, 0);
  EXPECT_EQ(static_cast<int>(margins.ms.size()), total) << "every schedule moved the group to the other server";
  for (auto& srv : servers) srv->terminate();
}

}  // namespace
}  // namespace groupcoord::testing
