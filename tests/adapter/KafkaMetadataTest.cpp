// KafkaGroups' answers that need no group (adapter/KafkaGroups.h) on the
// in-memory ZooKeeper: Metadata's topic ids (version 10 on) and topics
// found by id alone (version 12), as a KIP-848 consumer asks for them, and
// OffsetFetch by groups (version 8 on), each group answered on its own in
// the request's order.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "adapter/KafkaGroups.h"
#include "adapter/OffsetStore.h"
#include "common/Layout.h"
#include "tests/adapter/FakeZkTestSupport.h"

namespace groupcoord::adapter {
namespace {

namespace k = protocol::kafka;
using testsupport::Answer;

constexpr const char* kRoot = "/groupcoord";
constexpr const char* kTopics = "/brokers/topics";

protocol::Uuid uuidOf(const layout::TopicId& id) {
  protocol::Uuid out;
  out.bytes = id;
  return out;
}

class KafkaMetadataTest : public ::testing::Test {
 protected:
  KafkaMetadataTest() : admin_(ensemble_), zk_(ensemble_), offsets_(zk_, layout_) {
    testsupport::quietLogs();
    EXPECT_EQ(admin_.ensurePathSync(kTopics), zk::Error::Ok);
    EXPECT_EQ(admin_.ensurePathSync(layout_.groupsPath()), zk::Error::Ok);
    KafkaHooks hooks;
    hooks.selfId = 1;
    hooks.brokers = [] { return std::vector<protocol::Broker>{{1, "gc-1", 9092}}; };
    hooks.controlsHere = [](const std::string&) { return false; };
    hooks.controllerOf = [](const std::string&) { return -1; };
    groups_ = std::make_unique<KafkaGroups>(zk_, layout_, offsets_, time_, KafkaGroupsConfig{{}, kTopics},
                                            std::move(hooks));
  }
  ~KafkaMetadataTest() override {
    groups_->stop();
    groups_.reset();
    zk_.close();
    testsupport::settle(ensemble_);
  }

  void create(const std::string& path, const std::string& data) {
    ASSERT_EQ(admin_.createSync(path, data, zk::CreateMode::Persistent).error, zk::Error::Ok);
  }

  template <class Response>
  Response ask(int16_t version, k::Request request) {
    Answer<k::Response> answer;
    const k::RequestHeader header{
        std::visit([](const auto& r) { return static_cast<int16_t>(r.kApiKey); }, request), version, 1, "c"};
    groups_->handle(protocol::Caller{}, header, std::move(request), answer.callback());
    testsupport::settle(ensemble_);
    EXPECT_TRUE(answer.ready());
    k::Response r = answer.get();
    EXPECT_TRUE(std::holds_alternative<Response>(r));
    return std::get<Response>(r);
  }

  k::MetadataResponse metadata(std::optional<std::vector<k::MetadataRequest::Topic>> topics) {
    k::MetadataRequest r;
    r.topics = std::move(topics);
    r.allowAutoTopicCreation = false;
    return ask<k::MetadataResponse>(12, r);
  }

  zk::FakeEnsemble ensemble_;
  zk::FakeClient admin_;
  zk::FakeClient zk_;
  layout::Layout layout_{kRoot};
  OffsetStore offsets_;
  ManualTimeSource time_;
  std::unique_ptr<KafkaGroups> groups_;
};

// "kafka" was written by Kafka 2.8 or later (its id in the znode), "old"
// before ids (an id derived from its name).
TEST_F(KafkaMetadataTest, EveryTopicCarriesItsId) {
  layout::TopicId kafkaId{};
  kafkaId.fill(0x11);
  create(std::string(kTopics) + "/kafka", layout::encodeTopic(2, kafkaId));
  create(std::string(kTopics) + "/old", layout::encodeTopic(1));

  const k::MetadataResponse all = metadata(std::nullopt);
  ASSERT_EQ(all.topics.size(), 2u);
  EXPECT_EQ(all.topics[0].name, std::optional<std::string>("kafka"));
  EXPECT_EQ(all.topics[0].topicId, uuidOf(kafkaId));
  EXPECT_EQ(all.topics[0].partitions.size(), 2u);
  EXPECT_EQ(all.topics[1].name, std::optional<std::string>("old"));
  EXPECT_EQ(all.topics[1].topicId, uuidOf(layout::derivedTopicId("old")));
  for (const auto& t : all.topics) {
    for (const auto& p : t.partitions) EXPECT_EQ(p.leaderEpoch, -1) << "unknown: no position validation";
  }

  // By name: a topic that does not exist has the zero id.
  const k::MetadataResponse named = metadata(std::vector<k::MetadataRequest::Topic>{{"old"}, {"missing"}});
  ASSERT_EQ(named.topics.size(), 2u);
  EXPECT_EQ(named.topics[0].name, std::optional<std::string>("missing"));
  EXPECT_EQ(named.topics[0].error, k::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
  EXPECT_EQ(named.topics[0].topicId, protocol::Uuid{});
  EXPECT_EQ(named.topics[1].topicId, uuidOf(layout::derivedTopicId("old")));
}

// librdkafka 2.15.1 asks for the topics of a KIP-848 assignment by id
// alone: each is answered with its name; an id that names no topic is
// UNKNOWN_TOPIC_ID with a null name; ids and names may be mixed.
TEST_F(KafkaMetadataTest, TopicsFoundByTheirIdAlone) {
  layout::TopicId kafkaId{};
  kafkaId.fill(0x22);
  create(std::string(kTopics) + "/kafka", layout::encodeTopic(3, kafkaId));
  create(std::string(kTopics) + "/old", layout::encodeTopic(1));
  create(std::string(kTopics) + "/other", layout::encodeTopic(1));
  protocol::Uuid unknown;
  unknown.bytes.fill(0xee);

  const k::MetadataResponse m = metadata(std::vector<k::MetadataRequest::Topic>{
      {std::nullopt, uuidOf(kafkaId)},
      {std::nullopt, unknown},
      {std::nullopt, uuidOf(layout::derivedTopicId("old"))},
      {std::nullopt, uuidOf(kafkaId)},  // asked twice, answered once
      {"other", {}},
  });
  ASSERT_EQ(m.topics.size(), 4u);
  EXPECT_EQ(m.topics[0].name, std::optional<std::string>("kafka"));
  EXPECT_EQ(m.topics[0].topicId, uuidOf(kafkaId));
  EXPECT_EQ(m.topics[0].partitions.size(), 3u);
  EXPECT_EQ(m.topics[1].name, std::optional<std::string>("old"));
  EXPECT_EQ(m.topics[2].name, std::optional<std::string>("other"));
  EXPECT_EQ(m.topics[3].error, k::ErrorCode::UNKNOWN_TOPIC_ID);
  EXPECT_EQ(m.topics[3].name, std::nullopt);
  EXPECT_EQ(m.topics[3].topicId, unknown);
  EXPECT_TRUE(m.topics[3].partitions.empty());
}

// OffsetFetch 8 on: each group on its own, in the request's order. Here
// no group is controlled by this server: one that does not exist has no
// offsets (NONE, -1 for each partition asked), one that exists is
// NOT_COORDINATOR.
TEST_F(KafkaMetadataTest, OffsetFetchAnswersEachGroupInOrder) {
  create(layout_.groupPath("there"), "");
  k::OffsetFetchRequest r;
  r.groups = {{"gone", std::nullopt, -1, std::vector<k::OffsetFetchRequest::Topic>{{"t", {0, 1}}}},
              {"there", std::nullopt, -1, std::nullopt},
              {"bad name!", std::nullopt, -1, std::nullopt}};
  for (const int16_t version : {int16_t{8}, int16_t{9}}) {
    const k::OffsetFetchResponse a = ask<k::OffsetFetchResponse>(version, r);
    ASSERT_EQ(a.groups.size(), 3u);
    EXPECT_EQ(a.groups[0].groupId, "gone");
    EXPECT_EQ(a.groups[0].error, k::ErrorCode::NONE);
    ASSERT_EQ(a.groups[0].topics.size(), 1u);
    ASSERT_EQ(a.groups[0].topics[0].partitions.size(), 2u);
    EXPECT_EQ(a.groups[0].topics[0].partitions[1].committedOffset, -1);
    EXPECT_EQ(a.groups[1].groupId, "there");
    EXPECT_EQ(a.groups[1].error, k::ErrorCode::NOT_COORDINATOR);
    EXPECT_EQ(a.groups[2].groupId, "bad name!");
    EXPECT_EQ(a.groups[2].error, k::ErrorCode::INVALID_GROUP_ID);
    EXPECT_TRUE(a.topics.empty());
  }
}

}  // namespace
}  // namespace groupcoord::adapter
