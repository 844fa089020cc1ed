// Brokers' racks on the in-memory ZooKeeper, wired to TopicWatcher as the
// Coordinator wires them: racks read from Kafka's broker JSON, replica racks
// of a group's topics, `changed(topic)` when a replica broker's rack or a
// topic's replicas move, brokers without a rack, and broker JSON that cannot
// be read (a log line, not fatal).

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "adapter/BrokerRacks.h"
#include "adapter/TopicWatcher.h"
#include "tests/adapter/FakeZkTestSupport.h"

namespace groupcoord::adapter {
namespace {

constexpr const char* kTopics = "/brokers/topics";
constexpr const char* kBrokers = "/brokers/ids";

// Warnings of the default logger, while it lives.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::warn);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() {
    spdlog::default_logger()->flush();
    return out_.str();
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream out_;
};

class BrokerRacksTest : public ::testing::Test {
 protected:
  BrokerRacksTest() : admin_(ensemble_), zk_(ensemble_) {
    testsupport::quietLogs();
    EXPECT_EQ(admin_.ensurePathSync(kTopics), zk::Error::Ok);
    EXPECT_EQ(admin_.ensurePathSync(kBrokers), zk::Error::Ok);
    brokers_ = std::make_unique<BrokerRacks>(zk_, kBrokers, epoch_, [this](int32_t id) { topics_->brokerChanged(id); });
    topics_ = std::make_unique<TopicWatcher>(
        zk_, kTopics, epoch_,
        [this](const std::string& t) {
          std::lock_guard<std::mutex> lock(mu_);
          changed_.push_back(t);
        },
        brokers_.get());
  }
  ~BrokerRacksTest() override {
    zk_.close();
    settle();
  }

  void settle() { testsupport::settle(ensemble_); }
  void write(const std::string& path, const std::string& data) {
    if (admin_.existsSync(path).error == zk::Error::Ok) {
      ASSERT_EQ(admin_.setSync(path, data).error, zk::Error::Ok);
    } else {
      ASSERT_EQ(admin_.createSync(path, data, zk::CreateMode::Persistent).error, zk::Error::Ok);
    }
    settle();
  }
  void writeBroker(int32_t id, const std::string& rack) {
    write(std::string(kBrokers) + "/" + std::to_string(id), layout::encodeBroker("kafka-" + std::to_string(id), 9092, rack));
  }
  void writeTopic(const std::string& topic, const std::vector<std::vector<int32_t>>& replicas) {
    write(std::string(kTopics) + "/" + topic, layout::encodeTopicReplicas(replicas));
  }
  std::vector<std::string> takeChanged() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(changed_, {});
  }
  ReplicaRacks racksOf(std::vector<std::string> topics) {
    layout::GroupSettings s;
    s.topics = std::move(topics);
    return topics_->replicaRacks(s);
  }

  zk::FakeEnsemble ensemble_;
  zk::FakeClient admin_;
  zk::FakeClient zk_;
  SessionEpoch epoch_;
  std::unique_ptr<BrokerRacks> brokers_;
  std::unique_ptr<TopicWatcher> topics_;
  std::mutex mu_;
  std::vector<std::string> changed_;
};

using Sets = std::vector<std::set<std::string>>;

TEST_F(BrokerRacksTest, ReadsEachBrokersRackFromKafkasBrokerJson) {
  writeBroker(1, "eu-1a");
  writeBroker(2, "eu-1b");
  writeBroker(3, "");  // "rack": null
  write(std::string(kBrokers) + "/4", R"({"version":5,"host":"kafka-4","port":9092})");  // no "rack" at all
  write(std::string(kBrokers) + "/5", R"({"version":5,"host":"kafka-5","port":9092,"rack":"eu-1c"})");
  brokers_->watch();
  settle();
  EXPECT_EQ(brokers_->racksOf({1, 2, 3, 4, 5, 6}),
            (std::map<int32_t, std::string>{{1, "eu-1a"}, {2, "eu-1b"}, {5, "eu-1c"}}));
}

TEST_F(BrokerRacksTest, ReplicaRacksOfTheGroupsTopics) {
  writeBroker(1, "eu-1a");
  writeBroker(2, "eu-1b");
  writeBroker(3, "");
  writeTopic("clicks", {{1, 2}, {2, 3}, {3}});
  writeTopic("norack", {{3}, {3}});
  writeTopic("other", {{1}});
  brokers_->watch();
  topics_->watch("clicks");
  topics_->watch("norack");
  topics_->watch("other");
  settle();
  EXPECT_EQ(racksOf({"clicks", "norack", "absent"}),
            (ReplicaRacks{{"clicks", Sets{{"eu-1a", "eu-1b"}, {"eu-1b"}, {}}}}))
      << "a topic without any replica rack, and one not known, are absent; topics not subscribed too";
}

TEST_F(BrokerRacksTest, ARackChangeTellsTheTopicsOnThatBroker) {
  writeBroker(1, "eu-1a");
  writeBroker(2, "eu-1b");
  writeTopic("t", {{1}, {1, 2}});
  writeTopic("u", {{2}});
  brokers_->watch();
  topics_->watch("t");
  topics_->watch("u");
  settle();
  takeChanged();

  writeBroker(1, "eu-1c");
  EXPECT_EQ(takeChanged(), (std::vector<std::string>{"t"}));
  EXPECT_EQ(racksOf({"t"}), (ReplicaRacks{{"t", Sets{{"eu-1c"}, {"eu-1b", "eu-1c"}}}}));

  writeBroker(1, "eu-1c");  // rewritten, same rack
  EXPECT_TRUE(takeChanged().empty());

  writeBroker(2, "");  // the rack removed
  EXPECT_EQ(takeChanged(), (std::vector<std::string>{"t", "u"}));
  EXPECT_EQ(racksOf({"t", "u"}), (ReplicaRacks{{"t", Sets{{"eu-1c"}, {"eu-1c"}}}}));
}

TEST_F(BrokerRacksTest, BrokersThatAppearAndGoAreFollowed) {
  writeBroker(1, "eu-1a");
  writeTopic("t", {{1, 7}});
  brokers_->watch();
  topics_->watch("t");
  settle();
  takeChanged();

  writeBroker(7, "eu-1b");
  EXPECT_EQ(takeChanged(), (std::vector<std::string>{"t"}));
  EXPECT_EQ(racksOf({"t"}), (ReplicaRacks{{"t", Sets{{"eu-1a", "eu-1b"}}}}));

  ASSERT_EQ(admin_.removeSync(std::string(kBrokers) + "/1"), zk::Error::Ok);
  settle();
  EXPECT_EQ(takeChanged(), (std::vector<std::string>{"t"}));
  EXPECT_EQ(racksOf({"t"}), (ReplicaRacks{{"t", Sets{{"eu-1b"}}}}));
  EXPECT_TRUE(brokers_->racksOf({1}).empty());
}

TEST_F(BrokerRacksTest, MovedReplicasTellTheTopic) {
  writeBroker(1, "eu-1a");
  writeBroker(2, "eu-1b");
  writeTopic("t", {{1}, {1}});
  brokers_->watch();
  topics_->watch("t");
  settle();
  takeChanged();
  writeTopic("t", {{1}, {2}});  // same partition count, a replica moved
  EXPECT_EQ(takeChanged(), (std::vector<std::string>{"t"}));
  EXPECT_EQ(racksOf({"t"}), (ReplicaRacks{{"t", Sets{{"eu-1a"}, {"eu-1b"}}}}));
}

TEST_F(BrokerRacksTest, MalformedBrokerJsonIsIgnoredWithALogLine) {
  LogCapture log;
  writeBroker(1, "eu-1a");
  write(std::string(kBrokers) + "/2", "not json");
  write(std::string(kBrokers) + "/3", R"({"rack":7})");
  write(std::string(kBrokers) + "/not-a-number", R"({"rack":"eu-1c"})");
  writeTopic("t", {{1, 2, 3}});
  brokers_->watch();
  topics_->watch("t");
  settle();
  EXPECT_EQ(brokers_->racksOf({1, 2, 3}), (std::map<int32_t, std::string>{{1, "eu-1a"}}));
  EXPECT_EQ(racksOf({"t"}), (ReplicaRacks{{"t", Sets{{"eu-1a"}}}}));
  const std::string text = log.text();
  EXPECT_NE(text.find("broker 2: registration is not Kafka's broker JSON"), std::string::npos) << text;
  EXPECT_NE(text.find("broker 3: registration is not Kafka's broker JSON"), std::string::npos) << text;

  // Fixed later: read again through its watch.
  writeBroker(2, "eu-1b");
  EXPECT_EQ(brokers_->racksOf({2}), (std::map<int32_t, std::string>{{2, "eu-1b"}}));
}

TEST_F(BrokerRacksTest, AMissingBrokersPathIsNoRacksUntilItAppears) {
  ASSERT_EQ(admin_.removeSync(kBrokers), zk::Error::Ok);
  brokers_->watch();
  settle();
  EXPECT_TRUE(brokers_->racksOf({1}).empty());
  ASSERT_EQ(admin_.ensurePathSync(kBrokers), zk::Error::Ok);
  settle();
  writeBroker(1, "eu-1a");
  EXPECT_EQ(brokers_->racksOf({1}), (std::map<int32_t, std::string>{{1, "eu-1a"}}));
}

TEST_F(BrokerRacksTest, AFailedListIsRetriedByRewatchAndClearForgets) {
  writeBroker(1, "eu-1a");
  zk_.failNext(zk::Error::ConnectionLoss);
  brokers_->watch();
  settle();
  EXPECT_TRUE(brokers_->racksOf({1}).empty());
  brokers_->rewatch();
  settle();
  EXPECT_EQ(brokers_->racksOf({1}), (std::map<int32_t, std::string>{{1, "eu-1a"}}));
  brokers_->clear();
  EXPECT_TRUE(brokers_->racksOf({1}).empty());
  brokers_->rewatch();  // not started in this session: nothing
  settle();
  EXPECT_TRUE(brokers_->racksOf({1}).empty());
}

TEST_F(BrokerRacksTest, ANewSessionWatchesAgainFromScratch) {
  // What the Coordinator does when its session ends and a new one starts:
  // the epoch moves, clear(), then watch() in the new session.
  writeBroker(1, "eu-1a");
  brokers_->watch();
  settle();
  ASSERT_EQ(brokers_->racksOf({1}), (std::map<int32_t, std::string>{{1, "eu-1a"}}));
  epoch_.advance();
  brokers_->clear();
  writeBroker(1, "eu-1b");  // the old session's watch fires for nothing
  EXPECT_TRUE(brokers_->racksOf({1}).empty());
  brokers_->watch();
  settle();
  EXPECT_EQ(brokers_->racksOf({1}), (std::map<int32_t, std::string>{{1, "eu-1b"}}));
  writeBroker(1, "eu-1c");  // and the new watches follow
  EXPECT_EQ(brokers_->racksOf({1}), (std::map<int32_t, std::string>{{1, "eu-1c"}}));
}

TEST_F(BrokerRacksTest, WithoutBrokerRacksThereAreNoReplicaRacks) {
  writeBroker(1, "eu-1a");
  writeTopic("t", {{1}});
  TopicWatcher alone(zk_, kTopics, epoch_, [](const std::string&) {});
  alone.watch("t");
  settle();
  layout::GroupSettings s;
  s.topics = {"t"};
  EXPECT_EQ(alone.partitionCounts(s).at("t"), 1);
  EXPECT_TRUE(alone.replicaRacks(s).empty());
}

}  // namespace
}  // namespace groupcoord::adapter
