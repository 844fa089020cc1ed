// DescribeGroup end to end: a groupcoordd process, the live ensemble, C++
// consumers on two topics. What the controller answers (through
// Admin::describeGroup and `groupctl describe --output json`) must agree
// with what each consumer holds, and each kind of generation move (join,
// topic growth, rewind, leave, eviction) must appear in the history with
// its reason and the generation it produced.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/Admin.h"
#include "client/Consumer.h"
#include "common/Layout.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/TestSession.h"
#include "support/Timing.h"
#include "tests/client/groupctl/GroupctlRun.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using client::Admin;
using client::Consumer;
using nlohmann::json;
using protocol::RebalanceReason;
using protocol::TopicPartition;

using Holdings = std::map<std::string, std::set<TopicPartition>>;  // member -> partitions

// The group's session timeout: 3 s and the scheduling allowance, with
// heartbeats every second as with 3 s. The consumers are polled by the test's
// thread, which also runs groupctl between polls: a thread seconds late must
// not let a lease run out, or an eviction nobody asked for would move the
// generations counted below.
constexpr auto kHeartbeat = 1000ms;
std::chrono::milliseconds sessionTimeout() { return designBound(3000ms); }

class DescribeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("describe");
    topicsPath_ = root_ + "-topics";
    zk_ = openTestSession();
    ASSERT_NE(zk_, nullptr);
    ASSERT_EQ(zk_->ensurePathSync(topicsPath_), zk::Error::Ok);
    setTopic("alpha", 3, true);
    setTopic("beta", 2, true);
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=1", "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_, "--zk-session-timeout-ms=4000"});
    ASSERT_TRUE(server_->start());
    admin_ = std::make_unique<Admin>(std::vector<client::Endpoint>{{"127.0.0.1", server_->port()}});
    ASSERT_TRUE(admin_->createGroup(kGroup, sessionTimeout(), {"alpha", "beta"}, false).ok());
  }

  void setTopic(const std::string& topic, int32_t partitions, bool create) {
    const std::string path = topicsPath_ + "/" + topic;
    const std::string data = layout::encodeTopic(partitions);
    if (create) {
      ASSERT_EQ(zk_->createSync(path, data, zk::CreateMode::Persistent).error, zk::Error::Ok);
    } else {
      ASSERT_EQ(zk_->setSync(path, data).error, zk::Error::Ok);
    }
  }

  std::unique_ptr<Consumer> consumer(const std::string& clientId) {
    client::ConsumerConfig cc;
    cc.bootstrap = {{"127.0.0.1", server_->port()}};
    cc.group = kGroup;
    cc.clientId = clientId;
    cc.heartbeatInterval = kHeartbeat;
    return std::make_unique<Consumer>(cc, client::ConsumerCallbacks{});
  }

  // Polls the consumers until the controller says the group is stable and
  // each consumer holds what the controller says it holds.
  bool settle(const std::vector<Consumer*>& consumers, std::chrono::milliseconds wait = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      for (auto* c : consumers) c->poll(20ms);
      auto d = admin_->describeGroup(kGroup);
      if (!d.ok() || d.value.state != protocol::GroupState::STABLE) continue;
      if (d.value.members.size() != consumers.size()) continue;
      Holdings said = holdings(d.value);
      bool agree = true;
      for (auto* c : consumers) {
        auto held = c->assignment();
        agree = agree && said[c->memberId()] == std::set<TopicPartition>(held.begin(), held.end()) &&
                c->generation() == d.value.generation;
      }
      if (agree) return true;
    }
    return false;
  }

  static Holdings holdings(const protocol::DescribeGroupResponse& d) {
    Holdings h;
    for (auto& m : d.members) h[m.consumerId] = {m.held.begin(), m.held.end()};
    return h;
  }

  protocol::DescribeGroupResponse describe() {
    auto d = admin_->describeGroup(kGroup);
    EXPECT_TRUE(d.ok()) << d.status.toString();
    return d.value;
  }

  // The newest history entry of `reason`, which must exist.
  static protocol::RebalanceEvent newest(const protocol::DescribeGroupResponse& d, RebalanceReason reason) {
    for (auto it = d.history.rbegin(); it != d.history.rend(); ++it) {
      if (it->reason == reason) return *it;
    }
    ADD_FAILURE() << "no " << protocol::rebalanceReasonName(reason) << " in the history";
    return {};
  }

  static constexpr const char* kGroup = "described";
  std::string root_;
  std::string topicsPath_;
  std::unique_ptr<zk::Session> zk_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Admin> admin_;
};

TEST_F(DescribeTest, TheControllersAnswerAgreesWithTheConsumersAndExplainsEveryMove) {
  auto one = consumer("one");
  ASSERT_TRUE(settle({one.get()}));
  auto d = describe();
  const int64_t joinedOne = d.generation;
  EXPECT_EQ(newest(d, RebalanceReason::MEMBER_JOINED).consumerId, one->memberId());
  EXPECT_EQ(newest(d, RebalanceReason::MEMBER_JOINED).generation, joinedOne);

  auto two = consumer("two");
  ASSERT_TRUE(settle({one.get(), two.get()}));
  d = describe();
  {
    // Who holds what, where from: the two consumers split all five partitions.
    ASSERT_EQ(d.members.size(), 2u);
    std::set<TopicPartition> all;
    for (auto& m : d.members) {
      EXPECT_EQ(m.host, "127.0.0.1");
      EXPECT_NE(m.port, 0);
      EXPECT_GT(m.joinedAtMs, 0);
      EXPECT_GE(m.lastHeardMs, m.joinedAtMs);
      EXPECT_TRUE(m.waiting.empty());
      EXPECT_EQ(m.clientId, m.consumerId == one->memberId() ? "one" : "two");
      for (auto& p : m.held) EXPECT_TRUE(all.insert(p).second) << p.topic << "/" << p.partition << " held twice";
    }
    EXPECT_EQ(all.size(), 5u);
    EXPECT_EQ(d.topics, (std::vector<protocol::TopicState>{{"alpha", 3}, {"beta", 2}}));
    auto joined = newest(d, RebalanceReason::MEMBER_JOINED);
    EXPECT_EQ(joined.consumerId, two->memberId());
    EXPECT_EQ(joined.clientId, "two");
    EXPECT_EQ(joined.host, "127.0.0.1");
    EXPECT_EQ(joined.generation, d.generation);
  }

  // groupctl says the same, per partition.
  ASSERT_TRUE(one->commitSync({}).ok());
  CtlRun ctl = groupctl({"--bootstrap", "127.0.0.1:" + std::to_string(server_->port()), "--output", "json",
                         "describe", kGroup});
  ASSERT_EQ(ctl.exit, 0) << ctl.err;
  json j = json::parse(ctl.out);
  EXPECT_EQ(j["state"], "STABLE");
  EXPECT_EQ(j["group"]["generation"], d.generation);
  ASSERT_EQ(j["partitions"].size(), 5u);
  Holdings fromCtl;
  for (auto& p : j["partitions"]) {
    ASSERT_FALSE(p["owner"].is_null()) << p.dump();
    fromCtl[p["owner"].get<std::string>()].insert({p["topic"].get<std::string>(), p["partition"].get<int32_t>()});
    EXPECT_EQ(p["host"].get<std::string>().rfind("127.0.0.1:", 0), 0u) << p.dump();
    EXPECT_TRUE(p["waiting"].is_null());
  }
  EXPECT_EQ(fromCtl, holdings(d));
  EXPECT_EQ(j["history"].size(), d.history.size());
  EXPECT_EQ(j["members"].size(), 2u);

  // The topic alpha grows to 4 partitions.
  int64_t before = d.generation;
  setTopic("alpha", 4, false);
  ASSERT_TRUE(settle({one.get(), two.get()}));
  d = describe();
  ASSERT_GT(d.generation, before);
  auto grew = newest(d, RebalanceReason::TOPIC_RESIZED);
  EXPECT_EQ(grew.subject, "alpha");
  EXPECT_EQ(grew.value, 4);
  EXPECT_EQ(grew.generation, d.generation);

  // A rewind of alpha/0.
  const protocol::MemberState holder = d.members[0].held.empty() ? d.members[1] : d.members[0];
  const TopicPartition moved = holder.held[0];
  Consumer* owner = holder.consumerId == one->memberId() ? one.get() : two.get();
  ASSERT_TRUE(owner->commitSync({{moved.topic, moved.partition, 40}}).ok());
  before = d.generation;
  auto rewound = admin_->rewind(kGroup, {{moved.topic, moved.partition, 10}});
  ASSERT_TRUE(rewound.ok()) << rewound.status.toString();
  ASSERT_TRUE(settle({one.get(), two.get()}));
  d = describe();
  auto rw = newest(d, RebalanceReason::REWIND);
  EXPECT_EQ(rw.generation, before + 1);
  EXPECT_EQ(rw.value, 1);
  EXPECT_EQ(rw.subject, "") << "authentication is off";
  bool offsetShown = false;
  for (auto& o : d.offsets) offsetShown |= o.topic == moved.topic && o.partition == moved.partition && o.offset == 10;
  EXPECT_TRUE(offsetShown) << "the rewound offset is among the committed offsets";

  // two leaves.
  const std::string twoId = two->memberId();
  before = d.generation;
  ASSERT_TRUE(two->close().ok());
  ASSERT_TRUE(settle({one.get()}));
  d = describe();
  auto left = newest(d, RebalanceReason::MEMBER_LEFT);
  EXPECT_EQ(left.consumerId, twoId);
  EXPECT_EQ(left.clientId, "two");
  EXPECT_EQ(left.generation, before + 1);

  // three joins, then falls silent (no more polls): evicted after its session timeout.
  auto three = consumer("three");
  ASSERT_TRUE(settle({one.get(), three.get()}));
  const std::string threeId = three->memberId();
  before = describe().generation;
  // Not evicted before its lease ran out: the lease runs from the send time
  // of its last successful call, which the controller heard after it was
  // sent (a lower bound of the protocol, strict). The test's own clock from
  // here is no such bound: three's last heartbeat may be up to an interval
  // older than this line.
  const auto threeLease = three->leaseExpiry();
  ASSERT_TRUE(settle({one.get()}, sessionTimeout() + 30s));
  const auto evictionSeen = std::chrono::steady_clock::now();
  d = describe();
  auto evicted = newest(d, RebalanceReason::MEMBER_EVICTED);
  EXPECT_EQ(evicted.consumerId, threeId);
  EXPECT_EQ(evicted.generation, before + 1);
  EXPECT_GE(evicted.value, sessionTimeout().count()) << "silent for at least the session timeout";
  EXPECT_GE(evictionSeen, threeLease) << "evicted before its lease ran out";

  // Generations only grow along the history, and each kind appeared.
  for (size_t i = 1; i < d.history.size(); ++i) EXPECT_GE(d.history[i].generation, d.history[i - 1].generation);
  std::set<RebalanceReason> seen;
  for (auto& e : d.history) seen.insert(e.reason);
  for (auto r : {RebalanceReason::MEMBER_JOINED, RebalanceReason::TOPIC_RESIZED, RebalanceReason::REWIND,
                 RebalanceReason::MEMBER_LEFT, RebalanceReason::MEMBER_EVICTED}) {
    EXPECT_TRUE(seen.count(r)) << protocol::rebalanceReasonName(r);
  }
  // The history survives in ZooKeeper for the next controller.
  auto stored = zk_->getSync(layout::Layout(root_).historyPath(kGroup));
  ASSERT_EQ(stored.error, zk::Error::Ok);
  auto record = layout::decodeHistory(stored.data);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->controller, 1);
  ASSERT_FALSE(record->events.empty());
  EXPECT_EQ(record->events.back(), d.history.back());
  EXPECT_TRUE(one->close().ok());
}

TEST_F(DescribeTest, AnotherServerAnswersNotControllerAndAnUnknownGroupIsUnknown) {
  EXPECT_EQ(admin_->describeGroup("no-such-group").status.code, protocol::ErrorCode::UNKNOWN_GROUP);
  // A second server that does not control the group says so on the wire.
  ServerProcess other({"--server-id=2", "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_,
                       "--zk-session-timeout-ms=4000"});
  ASSERT_TRUE(other.start());
  auto info = admin_->groupInfo(kGroup);
  ASSERT_TRUE(info.ok());
  const uint16_t notController = info.value.controller.brokerId == 1 ? other.port() : server_->port();
  client::Connection conn;
  ASSERT_TRUE(conn.connect("127.0.0.1", notController, 5s)) << conn.lastError();
  // A server that has just started answers CONTROLLER_NOT_AVAILABLE until it
  // has read who controls the group (docs/protocol.md), then NOT_CONTROLLER.
  protocol::DescribeGroupResponse answer;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  do {
    auto r = conn.call(protocol::DescribeGroupRequest{kGroup}, 5s);
    ASSERT_TRUE(r.ok) << conn.lastError() << r.detail;
    auto* got = std::get_if<protocol::DescribeGroupResponse>(&r.response);
    ASSERT_NE(got, nullptr);
    answer = *got;
    if (answer.error != protocol::ErrorCode::CONTROLLER_NOT_AVAILABLE) break;
    std::this_thread::sleep_for(50ms);
  } while (std::chrono::steady_clock::now() < deadline);
  const auto* d = &answer;
  EXPECT_EQ(d->error, protocol::ErrorCode::NOT_CONTROLLER);
  EXPECT_EQ(d->group, kGroup);
  // Admin finds the controller anyway.
  Admin viaOther({{"127.0.0.1", notController}});
  auto found = viaOther.describeGroup(kGroup);
  ASSERT_TRUE(found.ok()) << found.status.toString();
  EXPECT_EQ(found.value.controller.brokerId, info.value.controller.brokerId);
}

}  // namespace
}  // namespace groupcoord::testing
