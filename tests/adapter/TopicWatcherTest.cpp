// Topic metadata on the in-memory ZooKeeper: partition counts read from
// Kafka's topic JSON, and `changed` when a count moves.

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "adapter/TopicWatcher.h"
#include "tests/adapter/FakeZkTestSupport.h"

namespace groupcoord::adapter {
namespace {

constexpr const char* kTopics = "/brokers/topics";

class TopicWatcherTest : public ::testing::Test {
 protected:
  TopicWatcherTest() : admin_(ensemble_), zk_(ensemble_) {
    testsupport::quietLogs();
    EXPECT_EQ(admin_.ensurePathSync(kTopics), zk::Error::Ok);
    watcher_ = std::make_unique<TopicWatcher>(zk_, kTopics, epoch_, [this](const std::string& t) {
      std::lock_guard<std::mutex> lock(mu_);
      changed_.push_back(t);
    });
  }
  ~TopicWatcherTest() override {
    zk_.close();
    settle();
  }

  void settle() { testsupport::settle(ensemble_); }
  void writeTopic(const std::string& topic, const std::string& data) {
    const std::string path = std::string(kTopics) + "/" + topic;
    if (admin_.existsSync(path).error == zk::Error::Ok) {
      ASSERT_EQ(admin_.setSync(path, data).error, zk::Error::Ok);
    } else {
      ASSERT_EQ(admin_.createSync(path, data, zk::CreateMode::Persistent).error, zk::Error::Ok);
    }
    settle();
  }
  std::vector<std::string> changed() {
    std::lock_guard<std::mutex> lock(mu_);
    return changed_;
  }
  std::map<std::string, int32_t> counts(std::vector<std::string> topics) {
    layout::GroupSettings s;
    s.topics = std::move(topics);
    return watcher_->partitionCounts(s);
  }

  zk::FakeEnsemble ensemble_;
  zk::FakeClient admin_;
  zk::FakeClient zk_;
  SessionEpoch epoch_;
  std::unique_ptr<TopicWatcher> watcher_;
  std::mutex mu_;
  std::vector<std::string> changed_;
};

TEST_F(TopicWatcherTest, ReportsThePartitionCountOfKafkasTopicJson) {
  writeTopic("clicks", layout::encodeTopic(4));
  watcher_->watch("clicks");
  settle();
  EXPECT_EQ(counts({"clicks", "absent"}), (std::map<std::string, int32_t>{{"clicks", 4}, {"absent", 0}}));
  EXPECT_EQ(changed(), (std::vector<std::string>{"clicks"})) << "0 -> 4 is a change";
}

TEST_F(TopicWatcherTest, ReadsKafkasOwnTopicDocument) {
  writeTopic("kafka", R"({"version":2,"partitions":{"2":[3,1],"0":[1,2],"1":[2,3]},"adding_replicas":{}})");
  watcher_->watch("kafka");
  settle();
  EXPECT_EQ(counts({"kafka"}).at("kafka"), 3);
}

TEST_F(TopicWatcherTest, AGrowingTopicCallsChangedWithTheNewCount) {
  writeTopic("t", layout::encodeTopic(2));
  watcher_->watch("t");
  settle();
  writeTopic("t", layout::encodeTopic(5));
  EXPECT_EQ(counts({"t"}).at("t"), 5);
  EXPECT_EQ(changed(), (std::vector<std::string>{"t", "t"}));
  // And it keeps watching.
  writeTopic("t", layout::encodeTopic(6));
  EXPECT_EQ(counts({"t"}).at("t"), 6);
  EXPECT_EQ(changed().size(), 3u);
}

TEST_F(TopicWatcherTest, RewritingTheSameCountIsNoChange) {
  writeTopic("t", layout::encodeTopic(3));
  watcher_->watch("t");
  settle();
  writeTopic("t", layout::encodeTopic(3));
  EXPECT_EQ(changed(), (std::vector<std::string>{"t"}));
}

TEST_F(TopicWatcherTest, ATopicThatAppearsLaterIsReported) {
  watcher_->watch("late");
  settle();
  EXPECT_EQ(counts({"late"}).at("late"), 0);
  EXPECT_TRUE(changed().empty()) << "absent and still absent is no change";
  writeTopic("late", layout::encodeTopic(2));
  EXPECT_EQ(counts({"late"}).at("late"), 2);
  EXPECT_EQ(changed(), (std::vector<std::string>{"late"}));
}

TEST_F(TopicWatcherTest, ADeletedTopicCountsZero) {
  writeTopic("t", layout::encodeTopic(2));
  watcher_->watch("t");
  settle();
  ASSERT_EQ(admin_.removeSync(std::string(kTopics) + "/t"), zk::Error::Ok);
  settle();
  EXPECT_EQ(counts({"t"}).at("t"), 0);
  EXPECT_EQ(changed(), (std::vector<std::string>{"t", "t"}));
}

TEST_F(TopicWatcherTest, DataThatIsNotKafkasTopicJsonCountsAsAbsent) {
  writeTopic("t", layout::encodeTopic(2));
  watcher_->watch("t");
  settle();
  writeTopic("t", "not json");
  EXPECT_EQ(counts({"t"}).at("t"), 0);
  writeTopic("t", R"({"version":1,"partitions":{"0":[1],"2":[1]}})");  // a gap
  EXPECT_EQ(counts({"t"}).at("t"), 0);
}

TEST_F(TopicWatcherTest, WatchingTwiceReadsOnce) {
  writeTopic("t", layout::encodeTopic(1));
  zk_.resetCounters();
  watcher_->watch("t");
  watcher_->watch("t");
  settle();
  EXPECT_EQ(zk_.counters().watchesSet, 1u);
  watcher_->rewatch();  // nothing failed
  settle();
  EXPECT_EQ(zk_.counters().watchesSet, 1u);
}

TEST_F(TopicWatcherTest, AFailedWatchIsRetriedByRewatch) {
  writeTopic("t", layout::encodeTopic(2));
  zk_.failNext(zk::Error::ConnectionLoss);
  watcher_->watch("t");
  settle();
  EXPECT_EQ(counts({"t"}).at("t"), 0);
  watcher_->rewatch();
  settle();
  EXPECT_EQ(counts({"t"}).at("t"), 2);
}

TEST_F(TopicWatcherTest, PartitionExistsOnlyForSubscribedTopicsWithinTheCount) {
  writeTopic("t", layout::encodeTopic(2));
  writeTopic("other", layout::encodeTopic(2));
  watcher_->watch("t");
  watcher_->watch("other");
  settle();
  layout::GroupSettings s;
  s.topics = {"t"};
  EXPECT_TRUE(watcher_->partitionExists(s, {"t", 0}));
  EXPECT_TRUE(watcher_->partitionExists(s, {"t", 1}));
  EXPECT_FALSE(watcher_->partitionExists(s, {"t", 2}));
  EXPECT_FALSE(watcher_->partitionExists(s, {"t", -1}));
  EXPECT_FALSE(watcher_->partitionExists(s, {"other", 0})) << "not subscribed";
  s.topics = {"unknown"};
  EXPECT_FALSE(watcher_->partitionExists(s, {"unknown", 0}));
}

TEST_F(TopicWatcherTest, ClearForgetsEveryTopic) {
  writeTopic("t", layout::encodeTopic(2));
  watcher_->watch("t");
  settle();
  watcher_->clear();
  EXPECT_EQ(counts({"t"}).at("t"), 0);
  watcher_->watch("t");  // watched again from scratch
  settle();
  EXPECT_EQ(counts({"t"}).at("t"), 2);
}

TEST_F(TopicWatcherTest, AnswersOfAnEndedSessionAreIgnored) {
  writeTopic("t", layout::encodeTopic(2));
  {
    testsupport::CompletionGate hold(zk_);
    watcher_->watch("t");
    epoch_.advance();
    hold.open();
  }
  settle();
  EXPECT_EQ(counts({"t"}).at("t"), 0);
  EXPECT_TRUE(changed().empty());
}

}  // namespace
}  // namespace groupcoord::adapter
