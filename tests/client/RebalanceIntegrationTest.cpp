// Planned rebalances with held heartbeats (docs/design.md, "Held
// heartbeats"), against two real groupcoordd processes and the live
// ensemble: a join, a graceful leave, a topic growing and a drain of the
// controller's server, at heartbeat intervals of 1 s and 10 s. Each step
// waits until every member holds its share (every partition held once, the
// shares within one of each other) and the ownership checker finds no
// partition held by two members at once.
//
// Time (tests/README.md, "Time in tests"): each wait polls up to a bound the
// design gives plus the scheduling allowance; how long each step took, and
// how long each moved partition went without an owner, are printed as
// figures, never asserted (bench/run.sh rebalance measures them).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/Admin.h"
#include "client/Consumer.h"
#include "common/Layout.h"
#include "support/OwnershipChecker.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/TestSession.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using client::Admin;
using client::Consumer;
using client::ConsumerCallbacks;
using client::ConsumerConfig;
using protocol::TopicPartition;
using Clock = std::chrono::steady_clock;

constexpr int32_t kPartitions = 12;
// The servers' defaults the steps wait on: a join waits at most the join
// window's cap (group.join.window.max.ms) before it is written, and a group
// without a controller is claimed within the claim fallback.
constexpr auto kJoinWindowMax = 3000ms;
constexpr auto kClaimFallback = 3000ms;

// One member on a thread of its own, polling until stopped; what it holds
// is kept from its callbacks (the consumer itself is the thread's alone).
class Member {
 public:
  Member(const std::string& name, ConsumerConfig config, OwnershipRecord& record) : name_(name), record_(record) {
    ConsumerCallbacks cb;
    cb.onAssigned = [this](const std::vector<protocol::PartitionOffset>& ps) {
      std::lock_guard lock(mu_);
      for (auto& p : ps) {
        held_.insert({p.topic, p.partition});
        record_.add(name_, {p.topic, p.partition}, true);
      }
    };
    auto release = [this](const std::vector<TopicPartition>& tps) {
      std::lock_guard lock(mu_);
      for (auto& tp : tps) {
        held_.erase(tp);
        record_.add(name_, tp, false);
      }
    };
    cb.onRevoked = release;
    cb.onLost = [this, release](const std::vector<TopicPartition>& tps) {
      lost_ += tps.size();
      release(tps);
    };
    consumer_ = std::make_unique<Consumer>(std::move(config), std::move(cb));
    thread_ = std::thread([this] {
      while (!stop_) consumer_->poll(100ms);
      if (close_) consumer_->close();
    });
  }
  ~Member() { stop(false); }
  // Stops polling; `close`: leaves the group (its partitions are revoked
  // first), as a graceful shutdown does.
  void stop(bool close) {
    if (!thread_.joinable()) return;
    close_ = close;
    stop_ = true;
    thread_.join();
  }
  std::set<TopicPartition> held() const {
    std::lock_guard lock(mu_);
    return held_;
  }
  size_t lost() const { return lost_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  OwnershipRecord& record_;
  mutable std::mutex mu_;
  std::set<TopicPartition> held_;
  std::atomic<size_t> lost_{0};
  std::unique_ptr<Consumer> consumer_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> close_{false};
  std::thread thread_;
};

class RebalanceTest : public ::testing::TestWithParam<std::chrono::milliseconds> {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("rebalance");
    topicsPath_ = root_ + "-topics";
    zk_ = openTestSession();
    ASSERT_NE(zk_, nullptr);
    ASSERT_EQ(zk_->ensurePathSync(topicsPath_), zk::Error::Ok);
    ASSERT_EQ(zk_->createSync(topicsPath_ + "/work", layout::encodeTopic(kPartitions), zk::CreateMode::Persistent)
                  .error,
              zk::Error::Ok);
    for (int id = 1; id <= 2; ++id) {
      servers_.push_back(std::make_unique<ServerProcess>(std::vector<std::string>{
          "--server-id=" + std::to_string(id), "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_,
          "--zk-session-timeout-ms=4000", "--handover-settle-ms=0"}));
      ASSERT_TRUE(servers_.back()->start());
      bootstrap_.push_back({"127.0.0.1", servers_.back()->port()});
    }
    eventuallyWithin(designBound(kClaimFallback),
                     [&] { return zk_->getChildrenSync(root_ + "/servers").children.size() == 2; }, 50ms);
    admin_ = std::make_unique<Admin>(bootstrap_);
  }
  void TearDown() override { members_.clear(); }

  std::chrono::milliseconds interval() const { return GetParam(); }
  // A third of the session is the interval; the session also holds the
  // scheduling allowance, so that a member's thread held back by a busy
  // machine does not let its lease run out (the steps are the scenario,
  // not crashes).
  std::chrono::milliseconds session() const { return designBound(3 * interval()); }

  Member& add(const std::string& name) {
    ConsumerConfig c;
    c.bootstrap = bootstrap_;
    c.group = group_;
    c.clientId = name;
    c.heartbeatInterval = interval();
    members_.push_back(std::make_unique<Member>(name, c, record_));
    return *members_.back();
  }

  // Every live member holds its share of `partitions`: each partition held
  // once, the shares within one of each other.
  bool inSync(int32_t partitions) const {
    std::set<TopicPartition> all;
    size_t most = 0, least = SIZE_MAX, count = 0;
    for (auto& m : members_) {
      const auto h = m->held();
      for (auto& tp : h) {
        if (!all.insert(tp).second) return false;
      }
      most = std::max(most, h.size());
      least = std::min(least, h.size());
      count += h.size();
    }
    return count == static_cast<size_t>(partitions) && most - least <= 1;
  }

  // Waits for the members to be in sync after a change; prints how long it
  // took. `bound`: what the design gives the change beyond the round trips.
  void settle(const std::string& step, int32_t partitions, std::chrono::milliseconds bound) {
    const auto start = Clock::now();
    const bool ok = eventuallyWithin(designBound(bound), [&] { return inSync(partitions); }, 5ms);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    std::printf("[figure] rebalance at a %lld ms heartbeat interval: %s in sync after %.0f ms\n",
                static_cast<long long>(interval().count()), step.c_str(), ms);
    ASSERT_TRUE(ok) << step << ": the members never held their shares";
    const auto overlaps = record_.overlaps();
    ASSERT_TRUE(overlaps.empty()) << step << ": " << overlaps.size() << " overlaps, the first: " << overlaps.front();
  }

  // For each partition that moved: the time from its release to its next
  // grant, as the members saw them.
  std::vector<double> unownedMs() const {
    std::map<TopicPartition, Clock::time_point> releasedAt;
    std::vector<double> out;
    for (const auto& e : record_.events()) {
      if (!e.grant) {
        releasedAt[e.partition] = e.at;
      } else if (auto it = releasedAt.find(e.partition); it != releasedAt.end()) {
        out.push_back(std::chrono::duration<double, std::milli>(e.at - it->second).count());
        releasedAt.erase(it);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string root_, topicsPath_;
  const std::string group_ = "planned";
  std::unique_ptr<zk::Session> zk_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::vector<client::Endpoint> bootstrap_;
  std::unique_ptr<Admin> admin_;
  OwnershipRecord record_;
  std::vector<std::unique_ptr<Member>> members_;
};

TEST_P(RebalanceTest, AJoinALeaveATopicGrowingAndADrainLeaveEveryMemberInSyncAndNoPartitionTwiceHeld) {
  auto created = admin_->createGroup(group_, session(), {"work"}, false);
  ASSERT_TRUE(created.ok()) << created.status.toString();
  for (int i = 0; i < 3; ++i) add("m" + std::to_string(i));
  // Formation: the first registration waits for the controller's claim and
  // the joins' window.
  settle("three members forming the group", kPartitions, kClaimFallback + kJoinWindowMax);

  // A join: written within the join window's cap; the members that give
  // partitions up hear at once, and those they go to as soon as they are
  // released.
  add("m3");
  settle("a fourth member joining", kPartitions, kJoinWindowMax);

  // A graceful leave: its partitions are revoked, then LeaveGroup.
  members_.front()->stop(true);
  members_.erase(members_.begin());
  settle("a member leaving", kPartitions, kJoinWindowMax);

  // The topic grows: the controller's watch moves the generation.
  ASSERT_EQ(zk_->setSync(topicsPath_ + "/work", layout::encodeTopic(kPartitions + 4)).error, zk::Error::Ok);
  settle("the topic growing to 16 partitions", kPartitions + 4, kJoinWindowMax);

  // A drain of the controller's server: the group is handed over to the
  // other, and its members follow it there.
  auto info = admin_->groupInfo(group_);
  ASSERT_TRUE(info.ok()) << info.status.toString();
  const int32_t controller = info.value.controller.brokerId;
  ASSERT_TRUE(controller == 1 || controller == 2) << controller;
  ASSERT_TRUE(admin_->drainServer(controller).ok());
  ASSERT_TRUE(eventuallyWithin(designBound(kClaimFallback), [&] {
    auto now = admin_->groupInfo(group_);
    return now.ok() && now.value.controller.brokerId != controller && now.value.controller.brokerId > 0;
  }, 50ms)) << "the group never left the drained server";
  settle("the controller's server drained", kPartitions + 4, kClaimFallback + kJoinWindowMax);
  // The new controller knows every member and who holds what, as the
  // members do: they reported it to it.
  ASSERT_TRUE(eventuallyWithin(designBound(kClaimFallback + kJoinWindowMax), [&] {
    auto d = admin_->describeGroup(group_);
    if (!d.ok() || d.value.controller.brokerId == controller || d.value.members.size() != members_.size()) return false;
    std::set<TopicPartition> described, journal;
    for (auto& m : d.value.members) described.insert(m.held.begin(), m.held.end());
    for (auto& m : members_) {
      const auto h = m->held();
      journal.insert(h.begin(), h.end());
    }
    return described == journal && described.size() == static_cast<size_t>(kPartitions + 4);
  }, 20ms)) << "the next controller never described what the members hold";
  ASSERT_TRUE(admin_->drainServer(controller, false).ok());

  for (auto& m : members_) EXPECT_EQ(m->lost(), 0u) << m->name() << " lost partitions: no step is a failure";
  const auto gaps = unownedMs();
  ASSERT_FALSE(gaps.empty()) << "partitions moved";
  const double p50 = gaps[gaps.size() / 2];
  const double p99 = gaps[std::min(gaps.size() - 1, gaps.size() * 99 / 100)];
  std::printf("[figure] rebalance at a %lld ms heartbeat interval: %zu moves, unowned p50 %.1f ms, p99 %.1f ms, "
              "max %.1f ms\n",
              static_cast<long long>(interval().count()), gaps.size(), p50, p99, gaps.back());
}

INSTANTIATE_TEST_SUITE_P(Intervals, RebalanceTest, ::testing::Values(1000ms, 10000ms),
                         [](const ::testing::TestParamInfo<std::chrono::milliseconds>& p) {
                           return "Every" + std::to_string(p.param.count()) + "ms";
                         });

}  // namespace
}  // namespace groupcoord::testing
