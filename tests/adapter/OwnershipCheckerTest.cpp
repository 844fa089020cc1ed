// The ownership checker: members driven over TCP join, leave, crash, pause
// and restart at random on one group with several topics, while a
// ZooKeeper node is killed and restarted and one of two groupcoordd servers
// is killed. Every grant and release is recorded with its time; the test
// fails if two members ever held the same partition at once, if an
// acknowledged commit is not what FetchOffsets returns at the end, or if the
// group does not settle within two session timeouts once the churn stops.
//
// GROUPCOORD_CHECKER_SEED replays a seed; GROUPCOORD_CHECKER_SECONDS sets
// the churn's length (at least 30 s by default).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "WireMember.h"
#include "adapter/Layout.h"
#include "client/Connection.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;
using protocol::TopicPartition;
using Clock = std::chrono::steady_clock;

constexpr int64_t kSessionTimeoutMs = 2000;

int64_t msSinceHelper(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}
constexpr const char* kGroup = "checked";

struct Event {
  Clock::time_point at;
  std::string member;  // the process incarnation, "id#n"
  TopicPartition partition;
  bool grant;
};

// Everything the members saw, for the checks at the end.
struct Record {
  std::mutex mu;
  std::vector<Event> events;
  std::map<TopicPartition, std::pair<Clock::time_point, int64_t>> lastAcked;  // ack time, offset
  std::atomic<uint64_t> commitsAcked{0};

  void add(const std::string& who, const TopicPartition& p, bool grant, Clock::time_point at = Clock::now()) {
    std::lock_guard lock(mu);
    events.push_back(Event{at, who, p, grant});
  }
  void acked(const TopicPartition& p, int64_t offset) {
    std::lock_guard lock(mu);
    auto now = Clock::now();
    auto& slot = lastAcked[p];
    if (now >= slot.first) slot = {now, offset};
    ++commitsAcked;
  }
};

// One simulated consumer process: a correct client of the protocol that
// holds partitions only between a grant and its own release.
class SimMember {
 public:
  SimMember(int index, std::vector<uint16_t> ports, Record& record, uint64_t seed)
      : index_(index), ports_(std::move(ports)), record_(record), rng_(seed) {}

  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void setChurn(bool on) { churn_ = on; }

  // The member's view, read after it stopped or while the test checks settling.
  struct View {
    bool alive = false;
    int64_t generation = -1;
    std::vector<std::string> members;
    std::set<TopicPartition> held;
    std::string id;
    Clock::time_point lastNone;
  };
  View view() {
    std::lock_guard lock(mu_);
    return view_;
  }

 private:
  std::string incarnation() const { return id_ + "#" + std::to_string(incarnation_); }

  void releaseAll(Clock::time_point at) {
    for (auto& p : held_) record_.add(incarnation(), p, false, at);
    held_.clear();
  }

  bool connectToController() {
    if (conn_.isOpen()) return true;
    for (uint16_t port : ports_) {
      auto info = callOnce<protocol::ListGroupsResponse>(port, protocol::ListGroupsRequest{{kGroup}}, 1000ms);
      if (!info || info->groups.size() != 1 || info->groups[0].controller.isNone()) continue;
      conn_.setClientId("checker-" + std::to_string(index_));
      if (conn_.connect("127.0.0.1", info->groups[0].controller.port, 1000ms)) return true;
    }
    return false;
  }

  // Self-fencing: no heartbeat has succeeded for the session timeout, so
  // the controller may evict this member: stop using everything, as of the
  // moment that became true.
  void fenceIfOverdue() {
    if (held_.empty()) return;
    auto deadline = lastSuccessSent_ + std::chrono::milliseconds(kSessionTimeoutMs);
    if (Clock::now() >= deadline) releaseAll(deadline);
  }

  bool registerNow() {
    if (!connectToController()) return false;
    auto sent = Clock::now();
    std::vector<TopicPartition> owned(held_.begin(), held_.end());
    auto r = conn_.call(protocol::RegisterConsumerRequest{kGroup, id_, owned}, 3000ms);
    if (!r.ok) {
      conn_.close();
      return false;
    }
    auto& resp = std::get<protocol::RegisterConsumerResponse>(r.response);
    if (resp.error == ErrorCode::NOT_CONTROLLER) conn_.close();
    if (resp.error != ErrorCode::NONE) return false;
    fenceIfOverdue();
    id_ = resp.consumerId;
    generation_ = resp.generation;
    lastSuccessSent_ = sent;
    std::set<TopicPartition> granted;
    for (auto& p : resp.partitions) {
      TopicPartition tp{p.topic, p.partition};
      granted.insert(tp);
      nextOffset_[tp] = std::max<int64_t>(p.offset, 0);
    }
    // What it held and was not granted again is not its own at this
    // generation: it stops using it now, before the heartbeat that says so.
    for (auto it = held_.begin(); it != held_.end();) {
      if (!granted.count(*it)) {
        record_.add(incarnation(), *it, false);
        it = held_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& p : granted)
      if (held_.insert(p).second) record_.add(incarnation(), p, true);
    std::lock_guard lock(mu_);
    view_.members = resp.members;
    return true;
  }

  void commitSome() {
    if (held_.empty() || !conn_.isOpen()) return;
    std::vector<protocol::PartitionOffset> offsets;
    for (auto& p : held_) offsets.push_back({p.topic, p.partition, ++nextOffset_[p]});
    auto r = conn_.call(protocol::CommitOffsetsRequest{kGroup, id_, generation_, offsets}, 3000ms);
    if (!r.ok) {
      conn_.close();
      return;
    }
    auto& resp = std::get<protocol::CommitOffsetsResponse>(r.response);
    if (resp.error != ErrorCode::NONE) return;
    for (size_t i = 0; i < resp.results.size() && i < offsets.size(); ++i)
      if (resp.results[i].error == ErrorCode::NONE)
        record_.acked({offsets[i].topic, offsets[i].partition}, offsets[i].offset);
  }

  void heartbeatOnce() {
    if (!connectToController()) return;
    auto sent = Clock::now();
    auto r = conn_.call(protocol::HeartbeatRequest{kGroup, id_, generation_}, 3000ms);
    if (!r.ok) {
      conn_.close();
      return;
    }
    auto& resp = std::get<protocol::HeartbeatResponse>(r.response);
    switch (resp.error) {
      case ErrorCode::NONE:
        lastSuccessSent_ = sent;
        {
          std::lock_guard lock(mu_);
          view_.lastNone = Clock::now();
        }
        break;
      case ErrorCode::REBALANCE_NEEDED:
        lastSuccessSent_ = sent;
        registerNow();
        break;
      case ErrorCode::UNKNOWN_CONSUMER:
        // Evicted, or a new controller that never saw it: it holds nothing
        // the controller knows of, so it lets go and joins again.
        releaseAll(Clock::now());
        registerNow();
        break;
      case ErrorCode::NOT_CONTROLLER:
        conn_.close();
        break;
      default:
        break;
    }
  }

  void run() {
    std::uniform_int_distribution<int> action(0, 999);
    while (!stop_) {
      if (!alive_) {
        // Down (crashed or left): come back after a while, or at once when
        // the churn is over.
        if (Clock::now() >= downUntil_ || !churn_) {
          alive_ = true;
          ++incarnation_;
          if (!keepId_) id_.clear();
          held_.clear();
          registerNow();
        } else {
          std::this_thread::sleep_for(50ms);
        }
        publish();
        continue;
      }
      fenceIfOverdue();
      if (generation_ < 0) {
        registerNow();
      } else {
        heartbeatOnce();
        if (action(rng_) < 300) commitSome();
      }
      publish();
      if (churn_) {
        int a = action(rng_);
        if (a < 15) {  // leave
          releaseAll(Clock::now());
          if (connectToController()) conn_.call(protocol::LeaveGroupRequest{kGroup, id_}, 3000ms);
          conn_.close();
          goDown(500 + action(rng_) * 2, false);
        } else if (a < 27) {  // crash: gone at once, its partitions with it
          releaseAll(Clock::now());
          conn_.close();
          goDown(kSessionTimeoutMs + action(rng_) * 2, false);
        } else if (a < 39) {  // restart under the same id within the session timeout
          releaseAll(Clock::now());
          conn_.close();
          goDown(100 + action(rng_) / 2, true);
        } else if (a < 50) {  // pause: frozen, holding what it held, then it resumes
          std::this_thread::sleep_for(std::chrono::milliseconds(300 + action(rng_) * 3));
        }
      }
      std::this_thread::sleep_for(200ms);
    }
    // Stopping: what it holds is released when the test ends.
    releaseAll(Clock::now());
  }

  void goDown(int ms, bool keepId) {
    alive_ = false;
    keepId_ = keepId;
    generation_ = -1;
    downUntil_ = Clock::now() + std::chrono::milliseconds(ms);
  }

  void publish() {
    std::lock_guard lock(mu_);
    view_.alive = alive_;
    view_.generation = generation_;
    view_.held = held_;
    view_.id = id_;
  }

  int index_;
  std::vector<uint16_t> ports_;
  Record& record_;
  std::mt19937_64 rng_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> churn_{true};

  client::Connection conn_;
  std::string id_;
  int incarnation_ = 0;
  int64_t generation_ = -1;
  std::set<TopicPartition> held_;
  std::map<TopicPartition, int64_t> nextOffset_;
  Clock::time_point lastSuccessSent_ = Clock::now();
  bool alive_ = true;
  bool keepId_ = false;
  Clock::time_point downUntil_;

  std::mutex mu_;
  View view_;
};

TEST(OwnershipChecker, NoPartitionIsEverHeldTwiceUnderChurnAndFaults) {
  requireEnsemble();
  uint64_t seed = 20261130;
  if (const char* s = std::getenv("GROUPCOORD_CHECKER_SEED")) seed = std::strtoull(s, nullptr, 10);
  int seconds = 30;
  if (const char* s = std::getenv("GROUPCOORD_CHECKER_SECONDS")) seconds = std::max(5, std::atoi(s));
  std::cout << "[checker] seed " << seed << " (replay with GROUPCOORD_CHECKER_SEED=" << seed << ")" << std::endl;

  const std::string root = "/" + uniqueName("checker");
  const std::string topicsPath = root + "-topics";
  zk::SessionConfig zc;
  zc.connect = zkConnect();
  zc.sessionTimeout = 10000ms;
  zk::Session zk(zc);
  ASSERT_EQ(zk.start(), zk::Error::Ok);
  ASSERT_EQ(zk.waitConnected(10s), zk::Error::Ok);
  ASSERT_EQ(zk.ensurePathSync(topicsPath), zk::Error::Ok);
  const std::map<std::string, int32_t> topics{{"alpha", 12}, {"beta", 7}, {"gamma", 5}};
  std::set<TopicPartition> all;
  for (auto& [t, n] : topics) {
    ASSERT_EQ(zk.createSync(topicsPath + "/" + t, adapter::encodeTopic(n), zk::CreateMode::Persistent).error,
              zk::Error::Ok);
    for (int32_t p = 0; p < n; ++p) all.insert({t, p});
  }

  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int id = 1; id <= 2; ++id) {
    servers.push_back(std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=" + std::to_string(id), "--zk-root=" + root, "--zk-topics-path=" + topicsPath,
        "--zk-session-timeout-ms=4000"}));
    ASSERT_TRUE(servers.back()->start());
  }
  std::vector<uint16_t> ports{servers[0]->port(), servers[1]->port()};
  // Both registered before the group exists, so either may control it.
  for (int i = 0; i < 200 && zk.getChildrenSync(root + "/servers").children.size() < 2; ++i)
    std::this_thread::sleep_for(50ms);
  auto created = createGroup(ports[0], kGroup, kSessionTimeoutMs, false, {"alpha", "beta", "gamma"});
  ASSERT_EQ(created.error, ErrorCode::NONE);
  ASSERT_FALSE(created.controller.isNone());
  size_t controllerIndex = created.controller.port == ports[0] ? 0 : 1;

  Record record;
  std::vector<std::unique_ptr<SimMember>> members;
  for (int i = 0; i < 20; ++i) {
    members.push_back(std::make_unique<SimMember>(i, ports, record, seed * 1000 + i));
    members.back()->start();
  }

  auto churnStart = Clock::now();
  auto at = [&](int s) { return churnStart + std::chrono::seconds(s); };
  int leader = ensembleLeader();
  int follower = leader % 3 + 1;
  std::this_thread::sleep_until(at(seconds / 3));
  ASSERT_EQ(ensemble("kill " + std::to_string(follower)), 0);
  std::cout << "[checker] killed ZooKeeper node " << follower << std::endl;
  std::this_thread::sleep_until(at(seconds / 3 + 3));
  ASSERT_EQ(ensemble("restart " + std::to_string(follower)), 0);
  std::this_thread::sleep_until(at(seconds / 2));
  servers[controllerIndex]->kill9();
  std::cout << "[checker] killed the controlling groupcoordd (server " << controllerIndex + 1 << ")" << std::endl;
  std::this_thread::sleep_until(at(seconds));

  // The churn stops: every member comes back and behaves.
  auto churnStop = Clock::now();
  for (auto& m : members) m->setChurn(false);
  bool settled = false;
  int64_t settleMs = -1;
  std::string lastReason;
  while (msSinceHelper(churnStop) < 2 * kSessionTimeoutMs + 20000) {
    std::vector<SimMember::View> views;
    for (auto& m : members) views.push_back(m->view());
    auto info = describeGroup(ports[1 - controllerIndex], kGroup);
    std::set<TopicPartition> owned;
    bool ok = info.error == ErrorCode::NONE && info.members.size() == members.size();
    if (!ok) lastReason = "group has " + std::to_string(info.members.size()) + " members";
    for (auto& v : views) {
      if (!ok) break;
      if (!v.alive || v.generation != info.generation) {
        ok = false;
        lastReason = "member " + v.id + " at generation " + std::to_string(v.generation) + ", group at " +
                     std::to_string(info.generation);
        break;
      }
      if (v.members != info.members) {
        ok = false;
        lastReason = "member " + v.id + " has another member list";
        break;
      }
      for (auto& p : v.held)
        if (!owned.insert(p).second) {
          ok = false;
          lastReason = "partition held twice at the end";
        }
    }
    if (ok && owned != all) {
      ok = false;
      lastReason = std::to_string(owned.size()) + " of " + std::to_string(all.size()) + " partitions owned";
    }
    if (ok) {
      settled = true;
      settleMs = msSinceHelper(churnStop);
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  for (auto& m : members) m->stop();

  // Overlaps: per partition, the holding intervals must not intersect.
  std::map<TopicPartition, std::vector<Event>> byPartition;
  size_t grants = 0, releases = 0;
  for (auto& e : record.events) {
    byPartition[e.partition].push_back(e);
    (e.grant ? grants : releases)++;
  }
  size_t overlaps = 0;
  for (auto& [p, events] : byPartition) {
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.at < b.at; });
    std::string holder;
    for (auto& e : events) {
      if (e.grant) {
        if (!holder.empty() && holder != e.member) {
          ++overlaps;
          ADD_FAILURE() << p.topic << "-" << p.partition << " granted to " << e.member << " while " << holder
                        << " held it";
        }
        holder = e.member;
      } else if (holder == e.member) {
        holder.clear();
      }
    }
  }

  // Acknowledged commits against what ZooKeeper has.
  auto fetched = callOnce<protocol::FetchOffsetsResponse>(ports[1 - controllerIndex],
                                                          protocol::FetchOffsetsRequest{kGroup, {}});
  ASSERT_TRUE(fetched.has_value());
  ASSERT_EQ(fetched->error, ErrorCode::NONE);
  std::map<TopicPartition, int64_t> inZk;
  for (auto& o : fetched->offsets) inZk[{o.topic, o.partition}] = o.offset;
  size_t lost = 0;
  for (auto& [p, acked] : record.lastAcked) {
    if (inZk[p] != acked.second) {
      ++lost;
      ADD_FAILURE() << p.topic << "-" << p.partition << ": last acknowledged commit " << acked.second
                    << ", FetchOffsets says " << inZk[p];
    }
  }

  std::cout << "[figure] ownership checker: " << grants << " grants and " << releases << " releases checked, "
            << overlaps << " overlaps; " << record.commitsAcked << " commits acknowledged, " << lost
            << " differ from FetchOffsets; settled " << settleMs << " ms after the churn stopped (limit "
            << 2 * kSessionTimeoutMs << " ms)" << std::endl;
  EXPECT_TRUE(settled) << "the group did not settle: " << lastReason;
  EXPECT_LE(settleMs, 2 * kSessionTimeoutMs) << "settled, but later than two session timeouts";
  EXPECT_GT(grants, 100u);
  EXPECT_GT(record.commitsAcked.load(), 100u);
  if (HasFailure()) {
    for (auto& s : servers) std::cerr << "---- groupcoordd log\n" << s->log() << std::endl;
  }
  for (auto& s : servers) s->terminate();
}

}  // namespace
}  // namespace groupcoord::testing
