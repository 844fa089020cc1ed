// groupctl as an operator runs it: the built binary against a groupcoordd
// process and the live ensemble, its --output json parsed, its exit codes
// checked.

#include <gtest/gtest.h>

#include <map>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/Connection.h"
#include "client/Consumer.h"
#include "common/Layout.h"
#include "common/TopicWriter.h"
#include "tests/client/FakeServer.h"
#include "tests/client/groupctl/GroupctlRun.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/TestSession.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr auto kClaimFallback = 3000ms;  // the server's claim fallback (the default)

class GroupctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("groupctl");
    topicsPath_ = root_ + "-topics/brokers/topics";
    // The topics path does not exist yet: `topic create` must make it, and
    // the server must find the topic there, so the topic comes first.
    CtlRun t = groupctl({"topic", "create", "alpha", "--partitions", "3", "--zookeeper", zkConnect(), "--topics-path",
                      topicsPath_, "--output", "json"});
    ASSERT_EQ(t.exit, 0) << t.err;
    json tj = json::parse(t.out);
    EXPECT_EQ(tj["topic"], "alpha");
    EXPECT_EQ(tj["partitions"], 3);
    EXPECT_EQ(tj["path"], topicsPath_ + "/alpha");
    // With a topic id, in the znode as Kafka 2.8 and later write one.
    ASSERT_TRUE(tj["topic_id"].is_string());
    auto zk = openTestSession();
    ASSERT_NE(zk, nullptr);
    auto written = zk->getSync(topicsPath_ + "/alpha");
    ASSERT_EQ(written.error, zk::Error::Ok);
    const auto id = layout::decodeTopicId(written.data);
    ASSERT_TRUE(id.has_value()) << written.data;
    EXPECT_EQ(layout::topicIdText(*id), tj["topic_id"].get<std::string>());
    EXPECT_EQ(layout::decodeTopicPartitions(written.data), std::optional<int32_t>(3));

    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=1", "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_, "--zk-session-timeout-ms=4000"});
    ASSERT_TRUE(server_->start());
    bootstrap_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  CtlRun ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--bootstrap", bootstrap_, "--output", "json"});
    return groupctl(args);
  }

  json offsetsOf(const std::string& group) {
    CtlRun r = ctl({"offsets", group});
    EXPECT_EQ(r.exit, 0) << r.err;
    json j = json::parse(r.out);
    json out = json::object();
    for (auto& o : j["offsets"]) out[o["topic"].get<std::string>() + "/" + std::to_string(o["partition"].get<int>())] = o["offset"];
    return out;
  }

  // A session of the test's own, to read what groupcoordd wrote.
  zk::Session& zookeeper() {
    if (!zk_) {
      zk::SessionConfig zc;
      zc.connect = zkConnect();
      zc.sessionTimeout = 10000ms;
      zk_ = std::make_unique<zk::Session>(zc);
      EXPECT_EQ(zk_->start(), zk::Error::Ok);
      EXPECT_EQ(zk_->waitConnected(10s), zk::Error::Ok);
    }
    return *zk_;
  }

  std::string root_;
  std::string topicsPath_;
  std::unique_ptr<ServerProcess> server_;
  std::string bootstrap_;
  std::unique_ptr<zk::Session> zk_;
};

TEST_F(GroupctlTest, TopicCreateRefusesAnExistingTopic) {
  CtlRun again = groupctl({"topic", "create", "alpha", "--partitions", "3", "--zookeeper", zkConnect(), "--topics-path",
                        topicsPath_});
  EXPECT_EQ(again.exit, 1);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  EXPECT_TRUE(again.out.empty());
}

// `topic grow`: more partitions, the same id and the existing partitions'
// replicas; new partition p takes partition p % (the old count)'s.
TEST_F(GroupctlTest, TopicGrowKeepsTheIdAndTheReplicas) {
  auto zk = openTestSession();
  ASSERT_NE(zk, nullptr);
  const std::string before = zk->getSync(topicsPath_ + "/alpha").data;
  const auto alphaId = layout::decodeTopicId(before);
  ASSERT_TRUE(alphaId.has_value()) << before;

  CtlRun grown = groupctl({"topic", "grow", "alpha", "--partitions", "5", "--zookeeper", zkConnect(), "--topics-path",
                         topicsPath_});
  ASSERT_EQ(grown.exit, 0) << grown.err;
  EXPECT_EQ(grown.out, "grew topic alpha from 3 to 5 partitions at " + topicsPath_ + "/alpha (topic id " +
                           layout::topicIdText(*alphaId) + ")\n");
  const std::string after = zk->getSync(topicsPath_ + "/alpha").data;
  EXPECT_EQ(layout::decodeTopicPartitions(after), std::optional<int32_t>(5)) << after;
  EXPECT_EQ(layout::decodeTopicId(after), alphaId) << after;

  // A topic as a Kafka cluster writes it: replicas on several brokers, the
  // fields groupctl does not know kept as they were.
  const std::string kafka = R"({"version":3,"topic_id":"_____________________w","partitions":)"
                            R"({"0":[1,2],"1":[2,3],"2":[3,1]},"adding_replicas":{},"removing_replicas":{},)"
                            R"("extra":"kept"})";
  ASSERT_EQ(zk->createSync(topicsPath_ + "/beta", kafka, zk::CreateMode::Persistent).error, zk::Error::Ok);
  CtlRun beta = groupctl({"--output", "json", "topic", "grow", "beta", "--partitions", "7", "--zookeeper", zkConnect(),
                         "--topics-path", topicsPath_});
  ASSERT_EQ(beta.exit, 0) << beta.err;
  json bj = json::parse(beta.out);
  EXPECT_EQ(bj["topic"], "beta");
  EXPECT_EQ(bj["partitions"], 7);
  EXPECT_EQ(bj["previous_partitions"], 3);
  EXPECT_EQ(bj["path"], topicsPath_ + "/beta");
  EXPECT_EQ(bj["topic_id"], "_____________________w");
  const auto betaData = zk->getSync(topicsPath_ + "/beta");
  using Replicas = std::vector<std::vector<int32_t>>;
  EXPECT_EQ(layout::decodeTopicReplicas(betaData.data),
            (Replicas{{1, 2}, {2, 3}, {3, 1}, {1, 2}, {2, 3}, {3, 1}, {1, 2}}))
      << betaData.data;
  json written = json::parse(betaData.data);
  EXPECT_EQ(written["version"], 3);
  EXPECT_EQ(written["topic_id"], "_____________________w");
  EXPECT_EQ(written["extra"], "kept");
  EXPECT_EQ(betaData.stat.version, 1) << "one write";

  // A topic written before ids: still none in its znode, so the id derived
  // from its name stays its id.
  ASSERT_EQ(zk->createSync(topicsPath_ + "/legacy", layout::encodeTopic(2), zk::CreateMode::Persistent).error,
            zk::Error::Ok);
  CtlRun legacy = groupctl({"--output", "json", "topic", "grow", "legacy", "--partitions", "4", "--zookeeper",
                           zkConnect(), "--topics-path", topicsPath_});
  ASSERT_EQ(legacy.exit, 0) << legacy.err;
  EXPECT_EQ(json::parse(legacy.out)["topic_id"], layout::topicIdText(layout::derivedTopicId("legacy")));
  const std::string legacyData = zk->getSync(topicsPath_ + "/legacy").data;
  EXPECT_EQ(layout::decodeTopicPartitions(legacyData), std::optional<int32_t>(4)) << legacyData;
  EXPECT_FALSE(json::parse(legacyData).contains("topic_id")) << legacyData;
}

TEST_F(GroupctlTest, TopicGrowRefusesFewerPartitionsAMissingTopicAndBadCounts) {
  auto zk = openTestSession();
  ASSERT_NE(zk, nullptr);
  const auto before = zk->getSync(topicsPath_ + "/alpha");
  auto grow = [&](const std::string& topic, const std::string& n) {
    return groupctl({"topic", "grow", topic, "--partitions", n, "--zookeeper", zkConnect(), "--topics-path",
                     topicsPath_});
  };
  for (const char* n : {"3", "2", "1"}) {
    CtlRun same = grow("alpha", n);
    EXPECT_EQ(same.exit, 1) << n;
    EXPECT_NE(same.err.find("INVALID_PARTITIONS: topic 'alpha' has 3 partitions"), std::string::npos) << same.err;
    EXPECT_TRUE(same.out.empty());
  }
  CtlRun missing = grow("nosuch", "10");
  EXPECT_EQ(missing.exit, 1);
  EXPECT_NE(missing.err.find("topic 'nosuch' does not exist at " + topicsPath_ + "/nosuch"), std::string::npos)
      << missing.err;
  for (const char* n : {"0", "-4", "abc", "99999999999"}) {
    CtlRun bad = grow("alpha", n);
    EXPECT_EQ(bad.exit, 2) << n << ": " << bad.err;
  }
  CtlRun noCount = groupctl({"topic", "grow", "alpha", "--zookeeper", zkConnect()});
  EXPECT_EQ(noCount.exit, 2);
  EXPECT_NE(noCount.err.find("topic grow needs --partitions N"), std::string::npos) << noCount.err;
  CtlRun unknown = groupctl({"topic", "shrink", "alpha", "--partitions", "1", "--zookeeper", zkConnect()});
  EXPECT_EQ(unknown.exit, 2);
  // Nothing was written by any of them.
  const auto after = zk->getSync(topicsPath_ + "/alpha");
  EXPECT_EQ(after.stat.version, before.stat.version);
  EXPECT_EQ(after.data, before.data);
}

// `config`: a group's own settings at <root>/config/groups/<group>, merged
// setting by setting, within the options' bounds, and removed by --reset.
TEST_F(GroupctlTest, ConfigSetsShowsAndResetsAGroupsOwnSettings) {
  auto zk = openTestSession();
  ASSERT_NE(zk, nullptr);
  const layout::Layout l(root_);
  auto config = [&](std::vector<std::string> more) {
    std::vector<std::string> args{"config", "payments", "--zookeeper", zkConnect(), "--zk-root", root_};
    args.insert(args.end(), more.begin(), more.end());
    return groupctl(args);
  };
  CtlRun none = config({});
  ASSERT_EQ(none.exit, 0) << none.err;
  EXPECT_NE(none.out.find("session timeout the server's, heartbeat interval the server's"), std::string::npos)
      << none.out;
  EXPECT_EQ(zk->getSync(l.groupConfigPath("payments")).error, zk::Error::NoNode) << "showing writes nothing";

  CtlRun interval = config({"--heartbeat-interval", "2s"});
  ASSERT_EQ(interval.exit, 0) << interval.err;
  CtlRun session = config({"--session-timeout", "20000"});
  ASSERT_EQ(session.exit, 0) << session.err;
  auto stored = zk->getSync(l.groupConfigPath("payments"));
  ASSERT_EQ(stored.error, zk::Error::Ok);
  layout::GroupConfig want;
  want.consumerHeartbeatIntervalMs = 2000;
  want.consumerSessionTimeoutMs = 20000;
  EXPECT_EQ(layout::decodeGroupConfig(stored.data), std::optional<layout::GroupConfig>(want))
      << "the second setting kept the first: " << stored.data;
  CtlRun shown = groupctl({"--output", "json", "config", "payments", "--zookeeper", zkConnect(), "--zk-root", root_});
  ASSERT_EQ(shown.exit, 0) << shown.err;
  json j = json::parse(shown.out);
  EXPECT_EQ(j["consumer.heartbeat.interval.ms"], 2000);
  EXPECT_EQ(j["consumer.session.timeout.ms"], 20000);
  EXPECT_EQ(j["path"], l.groupConfigPath("payments"));

  // Refused, with nothing written: out of the options' bounds, an interval
  // over half the session, --reset with a setting, a hostile name.
  for (std::vector<std::string> bad : {std::vector<std::string>{"--heartbeat-interval", "50ms"},
                                       {"--session-timeout", "31m"},
                                       {"--heartbeat-interval", "11s"},
                                       {"--reset", "--session-timeout", "10s"},
                                       {"--heartbeat-interval", "soon"}}) {
    CtlRun r = config(bad);
    EXPECT_EQ(r.exit, 2) << bad[0] << " " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  CtlRun hostile = groupctl({"config", "../servers", "--zookeeper", zkConnect(), "--zk-root", root_,
                             "--heartbeat-interval", "1s"});
  EXPECT_EQ(hostile.exit, 2) << hostile.err;
  EXPECT_EQ(zk->getSync(l.groupConfigPath("payments")).stat.version, stored.stat.version);

  CtlRun reset = config({"--reset"});
  ASSERT_EQ(reset.exit, 0) << reset.err;
  EXPECT_EQ(zk->getSync(l.groupConfigPath("payments")).error, zk::Error::NoNode);
  CtlRun again = config({"--reset"});
  EXPECT_EQ(again.exit, 0) << "nothing to remove is no error: " << again.err;
}

// The write is at the version read: a change in between fails it and
// writes nothing (what `topic grow` reports as CONCURRENT_CHANGE).
TEST_F(GroupctlTest, TopicGrowWritesOnlyOverWhatItRead) {
  topics::TopicWriter writer(zkConnect());
  ASSERT_TRUE(writer.start().ok());
  ASSERT_TRUE(writer.waitConnected(10s).ok());
  std::string data;
  int32_t version = -1;
  ASSERT_TRUE(writer.read(topicsPath_ + "/alpha", &data, &version).ok());
  EXPECT_EQ(layout::decodeTopicPartitions(data), std::optional<int32_t>(3));
  auto zk = openTestSession();
  ASSERT_NE(zk, nullptr);
  const std::string other = *layout::growTopic(data, 4);
  ASSERT_EQ(zk->setSync(topicsPath_ + "/alpha", other).error, zk::Error::Ok);
  const auto lost = writer.setIfVersion(topicsPath_ + "/alpha", *layout::growTopic(data, 6), version);
  EXPECT_TRUE(lost.badVersion()) << lost.name();
  EXPECT_EQ(zk->getSync(topicsPath_ + "/alpha").data, other);
  std::string none;
  EXPECT_TRUE(writer.read(topicsPath_ + "/nosuch", &none, &version).noNode());
}

// `create --assignment M` and `describe --history N`, as their --help
// texts give them, are accepted and do what they say.
TEST_F(GroupctlTest, CreateTakesAnAssignmentModeAndDescribeAHistoryLength) {
  CtlRun created = ctl({"create", "shards", "--assignment", "client", "--session-timeout", "4s"});
  ASSERT_EQ(created.exit, 0) << created.err;
  CtlRun listed = ctl({"list"});
  ASSERT_EQ(listed.exit, 0) << listed.err;
  EXPECT_EQ(json::parse(listed.out)["groups"][0]["assignment"], "client");

  CtlRun weird = ctl({"create", "other", "--assignment", "weird", "--session-timeout", "4s"});
  EXPECT_EQ(weird.exit, 2);
  EXPECT_NE(weird.err.find("--assignment must be server or client"), std::string::npos) << weird.err;

  // The group's controller may still be claiming or loading it: ask until it
  // answers (claimed at once, at the latest after the claim fallback).
  CtlRun described;
  eventuallyWithin(designBound(kClaimFallback), [&] {
    described = groupctl({"--bootstrap", bootstrap_, "describe", "shards", "--history", "0"});
    return described.exit == 0;
  }, 200ms);
  ASSERT_EQ(described.exit, 0) << described.err;
  EXPECT_NE(described.out.find("assignment:      client"), std::string::npos) << described.out;
  EXPECT_EQ(described.out.find("history ("), std::string::npos) << described.out;
  EXPECT_EQ(described.out.find("no rebalance recorded"), std::string::npos) << described.out;

  CtlRun negative = groupctl({"--bootstrap", bootstrap_, "describe", "shards", "--history", "-1"});
  EXPECT_EQ(negative.exit, 2);
  EXPECT_NE(negative.err.find("--history must be 0 or more"), std::string::npos) << negative.err;
}

TEST_F(GroupctlTest, GroupLifeAndRewind) {
  const std::string group = "orders";
  CtlRun created = ctl({"create", group, "--topics", "alpha", "--session-timeout", "4s"});
  ASSERT_EQ(created.exit, 0) << created.err;
  EXPECT_EQ(json::parse(created.out)["group"], group);

  CtlRun listed = ctl({"list"});
  ASSERT_EQ(listed.exit, 0) << listed.err;
  json lj = json::parse(listed.out);
  ASSERT_EQ(lj["groups"].size(), 1u);
  EXPECT_EQ(lj["groups"][0]["name"], group);
  EXPECT_EQ(lj["groups"][0]["session_timeout_ms"], 4000);
  EXPECT_EQ(lj["groups"][0]["topics"], json::array({"alpha"}));

  // A consumer that joins and commits, so that there are offsets to show and move.
  {
    client::ConsumerConfig cc;
    cc.bootstrap = {{"127.0.0.1", server_->port()}};
    cc.group = group;
    cc.clientId = "committer";
    client::Consumer consumer(cc, {});
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (consumer.assignment().size() < 3 && std::chrono::steady_clock::now() < deadline) consumer.poll(50ms);
    ASSERT_EQ(consumer.assignment().size(), 3u);

    CtlRun described = ctl({"describe", group});
    ASSERT_EQ(described.exit, 0) << described.err;
    json dj = json::parse(described.out);
    EXPECT_EQ(dj["group"]["name"], group);
    EXPECT_EQ(dj["group"]["members"].size(), 1u);
    EXPECT_FALSE(dj["group"]["controller"].is_null());
    EXPECT_GE(dj["group"]["generation"].get<int64_t>(), 0);

    auto s = consumer.commitSync({{"alpha", 0, 10}, {"alpha", 1, 20}, {"alpha", 2, 3}});
    ASSERT_TRUE(s.ok()) << s.toString();
    ASSERT_TRUE(consumer.close().ok());
  }

  json before = offsetsOf(group);
  EXPECT_EQ(before, json({{"alpha/0", 10}, {"alpha/1", 20}, {"alpha/2", 3}}));

  CtlRun described = ctl({"describe", group});
  ASSERT_EQ(described.exit, 0) << described.err;
  EXPECT_EQ(json::parse(described.out)["offsets"].size(), 3u);

  // Dry run is the default: a plan, nothing changed.
  CtlRun plan = ctl({"rewind", group, "--topic", "alpha", "--shift-by", "-5"});
  ASSERT_EQ(plan.exit, 0) << plan.err;
  json pj = json::parse(plan.out);
  EXPECT_EQ(pj["executed"], false);
  ASSERT_EQ(pj["partitions"].size(), 3u);
  EXPECT_EQ(pj["partitions"][0]["current"], 10);
  EXPECT_EQ(pj["partitions"][0]["new"], 5);
  EXPECT_EQ(pj["partitions"][2]["new"], 0);  // 3 - 5 clamps to 0
  EXPECT_TRUE(pj["partitions"][0]["error"].is_null());
  EXPECT_EQ(offsetsOf(group), before);
  CtlRun explicitDry = ctl({"rewind", group, "--topic", "alpha", "--to-earliest", "--dry-run"});
  ASSERT_EQ(explicitDry.exit, 0) << explicitDry.err;
  EXPECT_EQ(offsetsOf(group), before);

  // A member that is in the group while the rewind executes receives the
  // rewound offsets with its next assignment.
  std::map<int32_t, int64_t> received;
  client::ConsumerConfig rc;
  rc.bootstrap = {{"127.0.0.1", server_->port()}};
  rc.group = group;
  rc.clientId = "reader";
  client::ConsumerCallbacks rcb;
  rcb.onAssigned = [&received](const std::vector<protocol::PartitionOffset>& ps) {
    for (auto& p : ps) received[p.partition] = p.offset;
  };
  client::Consumer reader(rc, rcb);
  auto until = std::chrono::steady_clock::now() + 20s;
  while (reader.assignment().size() < 3 && std::chrono::steady_clock::now() < until) reader.poll(50ms);
  ASSERT_EQ(reader.assignment().size(), 3u);
  EXPECT_EQ(received, (std::map<int32_t, int64_t>{{0, 10}, {1, 20}, {2, 3}}));

  CtlRun executed = ctl({"rewind", group, "--topic", "alpha", "--shift-by", "-5", "--execute"});
  ASSERT_EQ(executed.exit, 0) << executed.err;
  json ej = json::parse(executed.out);
  EXPECT_EQ(ej["executed"], true);
  for (auto& p : ej["partitions"]) EXPECT_EQ(p["error"], "NONE");
  EXPECT_EQ(offsetsOf(group), json({{"alpha/0", 5}, {"alpha/1", 15}, {"alpha/2", 0}}));
  const std::map<int32_t, int64_t> rewound{{0, 5}, {1, 15}, {2, 0}};
  until = std::chrono::steady_clock::now() + 20s;
  while (received != rewound && std::chrono::steady_clock::now() < until) reader.poll(50ms);
  EXPECT_EQ(received, rewound) << "the member did not receive the rewound offsets";
  ASSERT_TRUE(reader.close().ok());

  CtlRun one = ctl({"rewind", group, "--topic", "alpha", "--partition", "1", "--to-offset", "7", "--execute"});
  ASSERT_EQ(one.exit, 0) << one.err;
  EXPECT_EQ(offsetsOf(group), json({{"alpha/0", 5}, {"alpha/1", 7}, {"alpha/2", 0}}));

  CtlRun deleted = ctl({"delete", group});
  ASSERT_EQ(deleted.exit, 0) << deleted.err;
  EXPECT_EQ(json::parse(deleted.out)["deleted"], true);
  CtlRun after = ctl({"list"});
  ASSERT_EQ(after.exit, 0) << after.err;
  EXPECT_TRUE(json::parse(after.out)["groups"].empty());
}

// Whether `path` exists as `want` says, looked for until this test's
// session sees it. The server writes and removes znodes through its own
// session; this test's session reads from its own ZooKeeper node, which may
// apply the change a little later: a follower is within syncLimit ticks of
// the leader (5 of GROUPCOORD_ZK_TICK_MS, scripts/zk-ensemble.sh). So a look
// waits up to that, plus the scheduling allowance.
bool znodeIs(zk::Session& zookeeper, const std::string& path, zk::Error want) {
  const char* tickEnv = std::getenv("GROUPCOORD_ZK_TICK_MS");
  const std::chrono::milliseconds followerLag(5 * (tickEnv != nullptr ? std::atoll(tickEnv) : 500));
  return eventuallyWithin(designBound(followerLag), [&] { return zookeeper.existsSync(path).error == want; });
}

// The drain mark is all of DrainServer that is not the other servers' work:
// written by drain, removed by undrain, and either done twice is a success.
TEST_F(GroupctlTest, DrainAndUndrainWriteAndRemoveTheMark) {
  const std::string mark = root_ + "/draining/1";
  EXPECT_EQ(zookeeper().existsSync(mark).error, zk::Error::NoNode);

  CtlRun drained = ctl({"drain", "1"});
  ASSERT_EQ(drained.exit, 0) << drained.err;
  EXPECT_EQ(json::parse(drained.out), json({{"server", 1}, {"draining", true}, {"waited", false}}));
  EXPECT_TRUE(znodeIs(zookeeper(), mark, zk::Error::Ok)) << mark;

  // Again, and in the table form: a success that says what happens next.
  CtlRun again = groupctl({"--bootstrap", bootstrap_, "drain", "1"});
  ASSERT_EQ(again.exit, 0) << again.err;
  EXPECT_NE(again.out.find("server 1 is marked drained"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("next seconds"), std::string::npos) << again.out;
  EXPECT_TRUE(znodeIs(zookeeper(), mark, zk::Error::Ok)) << mark;

  CtlRun undrained = ctl({"undrain", "1"});
  ASSERT_EQ(undrained.exit, 0) << undrained.err;
  EXPECT_EQ(json::parse(undrained.out), json({{"server", 1}, {"draining", false}}));
  EXPECT_TRUE(znodeIs(zookeeper(), mark, zk::Error::NoNode)) << mark;

  CtlRun undrainedAgain = groupctl({"--bootstrap", bootstrap_, "undrain", "1"});
  ASSERT_EQ(undrainedAgain.exit, 0) << undrainedAgain.err;
  EXPECT_NE(undrainedAgain.out.find("no longer drained"), std::string::npos) << undrainedAgain.out;
  EXPECT_TRUE(znodeIs(zookeeper(), mark, zk::Error::NoNode)) << mark;

  // A server that is not running can be marked too: the mark is only data.
  CtlRun other = ctl({"drain", "7"});
  ASSERT_EQ(other.exit, 0) << other.err;
  EXPECT_TRUE(znodeIs(zookeeper(), root_ + "/draining/7", zk::Error::Ok));
  ASSERT_EQ(ctl({"undrain", "7"}).exit, 0);
  EXPECT_TRUE(znodeIs(zookeeper(), root_ + "/draining/7", zk::Error::NoNode));
}

TEST_F(GroupctlTest, DrainWaitReturnsAtOnceWhenTheServerControlsNoGroup) {
  CtlRun waited = ctl({"drain", "1", "--wait", "10s"});
  ASSERT_EQ(waited.exit, 0) << waited.err;
  EXPECT_EQ(json::parse(waited.out), json({{"server", 1}, {"draining", true}, {"waited", true}}));
  EXPECT_TRUE(znodeIs(zookeeper(), root_ + "/draining/1", zk::Error::Ok));
  ASSERT_EQ(ctl({"undrain", "1"}).exit, 0);
}

// groupctl refuses a negative id itself (usage); a client that sends one
// anyway gets the API's own answer, INVALID_REQUEST, and nothing is written.
TEST_F(GroupctlTest, ANegativeServerIdIsRefused) {
  CtlRun negative = ctl({"drain", "-1"});
  EXPECT_EQ(negative.exit, 2);
  EXPECT_NE(negative.err.find("SERVER_ID must be a groupcoordd --server-id, 0 to 2147483647"), std::string::npos)
      << negative.err;

  client::Connection c;
  ASSERT_TRUE(c.connect("127.0.0.1", server_->port(), 10s)) << c.lastError();
  const protocol::DecodedResponse r = c.call(protocol::DrainServerRequest{-1, true}, 10s);
  ASSERT_TRUE(r.ok) << r.detail;
  ASSERT_TRUE(std::holds_alternative<protocol::DrainServerResponse>(r.response));
  EXPECT_EQ(std::get<protocol::DrainServerResponse>(r.response).error, protocol::ErrorCode::INVALID_REQUEST);
  EXPECT_EQ(zookeeper().existsSync(root_ + "/draining/-1").error, zk::Error::NoNode);
}

TEST_F(GroupctlTest, ServersListsTheControllerOfEachGroup) {
  CtlRun created = ctl({"create", "orders", "--topics", "alpha", "--session-timeout", "4s"});
  ASSERT_EQ(created.exit, 0) << created.err;
  // CreateGroup waits for a controller, but may answer before one claimed
  // it; the server's view of the placement follows once it has read it.
  json listed;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  do {
    CtlRun r = ctl({"servers"});
    ASSERT_EQ(r.exit, 0) << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;  // the server knows DescribeServers: no note
    listed = json::parse(r.out);
    if (listed["servers"].size() == 1 && listed["servers"][0]["groups"] == json::array({"orders"}) &&
        listed["servers"][0]["group_count"] == 1 && listed["complete"] == true) {
      break;
    }
    std::this_thread::sleep_for(200ms);
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(listed["servers"].size(), 1u) << listed.dump();
  const json& s = listed["servers"][0];
  // The keys `groupctl servers` always printed...
  EXPECT_EQ(s["id"], 1);
  EXPECT_EQ(s["host"], "127.0.0.1");
  EXPECT_EQ(s["port"], server_->port());
  EXPECT_EQ(s["groups"], json::array({"orders"}));
  EXPECT_EQ(listed["without_controller"], json::array());
  // ...and the placement (DescribeServers): one candidate carrying the one
  // group, nothing to move.
  EXPECT_EQ(s["state"], "candidate") << listed.dump();
  EXPECT_EQ(s["live"], true);
  EXPECT_EQ(s["group_count"], 1);
  EXPECT_EQ(s["load"], s["placed"]) << listed.dump();
  EXPECT_EQ(s["bound"], listed["bound"]);
  EXPECT_EQ(listed["server"], 1);
  EXPECT_EQ(listed["candidates"], 1);
  EXPECT_EQ(listed["complete"], true);
  EXPECT_EQ(listed["total"], s["load"]);
  EXPECT_EQ(listed["moves"], json::array());
  EXPECT_EQ(listed["weighting"], "members");

  CtlRun table = groupctl({"--bootstrap", bootstrap_, "servers"});
  ASSERT_EQ(table.exit, 0) << table.err;
  const std::string load = std::to_string(s["load"].get<int64_t>());
  const std::string bound = std::to_string(listed["bound"].get<int64_t>());
  auto cell = [](const std::string& text, size_t width) { return text + std::string(width - text.size(), ' '); };
  const size_t address = std::max<size_t>(bootstrap_.size(), 15) + 2;
  const std::string rule =
      "bound B = ceil((1+eps) x total / candidates): eps 0.10, margin 0.05, weight = members + 10\n";
  EXPECT_EQ(table.out, cell("SERVER", 8) + cell("ADDRESS", address) + "STATE      GROUPS  " +
                           cell("LOAD", std::max<size_t>(load.size(), 4) + 2) +
                           cell("BOUND", std::max<size_t>(bound.size(), 5) + 2) + "AFTER\n" + cell("1", 8) +
                           cell(bootstrap_, address) + "candidate  1       " +
                           cell(load, std::max<size_t>(load.size(), 4) + 2) +
                           cell(bound, std::max<size_t>(bound.size(), 5) + 2) + load + "\n" + cell("-", 8) +
                           cell("(no controller)", address) + "-          0       " +
                           cell("-", std::max<size_t>(load.size(), 4) + 2) +
                           cell("-", std::max<size_t>(bound.size(), 5) + 2) + "-\n" + rule +
                           "view of server 1: total " + load + " over 1 candidate(s)\n")
      << table.out;
}

// A server older than DescribeServers answers it UNKNOWN_API (an error-only
// answer): `groupctl servers` says so on standard error and shows what it
// showed before the call existed, from ListGroups. No ensemble needed.
TEST(GroupctlServersTest, AnOlderServerGetsTheControllersOnly) {
  client::testing::FakeServer older([](const protocol::DecodedRequest& r) {
    if (r.status != protocol::DecodeStatus::Ok || std::holds_alternative<protocol::DescribeServersRequest>(r.request)) {
      return client::testing::FakeServer::frame(r, protocol::ErrorOnlyResponse{protocol::ErrorCode::UNKNOWN_API});
    }
    if (!std::holds_alternative<protocol::ListGroupsRequest>(r.request)) {
      return client::testing::FakeServer::frame(r, protocol::ErrorOnlyResponse{protocol::ErrorCode::INVALID_REQUEST});
    }
    protocol::GroupInfo orders;
    orders.name = "orders";
    orders.controller = protocol::Broker{7, "10.0.0.7", 7400};
    protocol::GroupInfo idle;
    idle.name = "idle";
    return client::testing::FakeServer::frame(r, protocol::ListGroupsResponse{{orders, idle}, protocol::ErrorCode::NONE});
  });
  const std::string bootstrap = "127.0.0.1:" + std::to_string(older.port());
  CtlRun table = groupctl({"--bootstrap", bootstrap, "servers"});
  ASSERT_EQ(table.exit, 0) << table.err;
  EXPECT_EQ(table.out,
            "SERVER  ADDRESS          GROUPS\n"
            "7       10.0.0.7:7400    1\n"
            "-       (no controller)  1\n");
  EXPECT_NE(table.err.find("older than this groupctl"), std::string::npos) << table.err;
  EXPECT_EQ(std::count(table.err.begin(), table.err.end(), '\n'), 1) << table.err;

  CtlRun j = groupctl({"--bootstrap", bootstrap, "--output", "json", "servers"});
  ASSERT_EQ(j.exit, 0) << j.err;
  EXPECT_EQ(json::parse(j.out),
            (json{{"servers", json::array({{{"id", 7}, {"host", "10.0.0.7"}, {"port", 7400}, {"groups", {"orders"}}}})},
                  {"without_controller", {"idle"}}}));
}

TEST_F(GroupctlTest, ExitCodes) {
  CtlRun unknown = ctl({"describe", "no-such-group"});
  EXPECT_EQ(unknown.exit, 1);
  EXPECT_NE(unknown.err.find("UNKNOWN_GROUP"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("groupctl list"), std::string::npos) << unknown.err;
  EXPECT_TRUE(unknown.out.empty());

  CtlRun badFlag = ctl({"list", "--no-such-flag"});
  EXPECT_EQ(badFlag.exit, 2);
  EXPECT_FALSE(badFlag.err.empty());
  CtlRun badDuration = ctl({"create", "g", "--topics", "alpha", "--session-timeout", "10h"});
  EXPECT_EQ(badDuration.exit, 2);

  const std::string dead = "127.0.0.1:" + std::to_string(closedLoopbackPort());
  CtlRun unreachable = groupctl({"--bootstrap", dead, "list"});
  EXPECT_EQ(unreachable.exit, 3);
  EXPECT_NE(unreachable.err.find(dead), std::string::npos) << unreachable.err;

  CtlRun help = groupctl({"--help"});
  EXPECT_EQ(help.exit, 0);
  EXPECT_NE(help.out.find("rewind"), std::string::npos);
  for (const char* command : {"drain", "undrain", "servers"}) {
    EXPECT_NE(help.out.find(std::string("  ") + command + " "), std::string::npos) << command;
    CtlRun one = groupctl({command, "--help"});
    EXPECT_EQ(one.exit, 0) << command;
    EXPECT_EQ(one.out.rfind(std::string("usage: groupctl ") + command, 0), 0u) << one.out;
  }
  EXPECT_NE(groupctl({"drain", "--help"}).out.find("--wait"), std::string::npos);

  // Usage errors of the server commands: exit code 2 and the command's help.
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"drain"},
                                             {"drain", "abc"},
                                             {"drain", "1x"},
                                             {"drain", "-3"},
                                             {"drain", "4294967296"},
                                             {"drain", "1", "2"},
                                             {"drain", "1", "--wait", "10h"},
                                             {"undrain"},
                                             {"undrain", "1", "--wait", "5s"},
                                             {"servers", "extra"},
                                             {"servers", "--wait", "5s"}}) {
    std::string line;
    for (auto& a : args) line += " " + a;
    SCOPED_TRACE("groupctl" + line);
    CtlRun bad = ctl(args);
    EXPECT_EQ(bad.exit, 2);
    EXPECT_NE(bad.err.find("usage: groupctl " + args[0]), std::string::npos) << bad.err;
    EXPECT_TRUE(bad.out.empty()) << bad.out;
  }
  EXPECT_EQ(ctl({"drain", "1", "--wait"}).exit, 2);
  EXPECT_EQ(zookeeper().getChildrenSync(root_ + "/draining").children, std::vector<std::string>{});

  CtlRun drainUnreachable = groupctl({"--bootstrap", dead, "drain", "1"});
  EXPECT_EQ(drainUnreachable.exit, 3);
  EXPECT_NE(drainUnreachable.err.find(dead), std::string::npos) << drainUnreachable.err;
  CtlRun serversUnreachable = groupctl({"--bootstrap", dead, "servers"});
  EXPECT_EQ(serversUnreachable.exit, 3);
}

}  // namespace
}  // namespace groupcoord::testing
