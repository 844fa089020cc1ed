#include <gtest/gtest.h>

#include "common/Layout.h"

namespace groupcoord::layout {
namespace {

TEST(Layout, PathsFollowTheDesign) {
  Layout l("/gc");
  EXPECT_EQ(l.serverPath(3), "/gc/servers/3");
  EXPECT_EQ(l.groupPath("orders"), "/gc/groups/orders");
  EXPECT_EQ(l.controllerPath("orders"), "/gc/groups/orders/controller");
  EXPECT_EQ(l.memberPath("orders", "m-1"), "/gc/groups/orders/members/m-1");
  EXPECT_EQ(l.offsetsPath("orders"), "/gc/groups/orders/offsets");
}

TEST(Layout, KafkasTopicReplicasAndBrokerRacks) {
  using Replicas = std::vector<std::vector<int32_t>>;
  EXPECT_EQ(decodeTopicReplicas(R"({"version":2,"partitions":{"1":[2,3],"0":[1,"x",2]}})"), (Replicas{{1, 2}, {2, 3}}))
      << "by partition number; an id that is not an integer is skipped";
  EXPECT_EQ(decodeTopicReplicas(R"({"version":1,"partitions":{"0":[1],"2":[2]}})"), std::nullopt) << "a gap";
  EXPECT_EQ(decodeTopicReplicas(encodeTopicReplicas({{4, 5}, {}})), (Replicas{{4, 5}, {}}));
  EXPECT_EQ(decodeTopicPartitions(encodeTopicReplicas({{4, 5}, {6}})), 2);

  EXPECT_EQ(decodeBrokerRack(R"({"host":"k1","port":9092,"rack":"eu-1a"})"), "eu-1a");
  EXPECT_EQ(decodeBrokerRack(R"({"host":"k1","rack":null})"), "");
  EXPECT_EQ(decodeBrokerRack(R"({"host":"k1"})"), "");
  EXPECT_EQ(decodeBrokerRack(R"({"rack":3})"), std::nullopt);
  EXPECT_EQ(decodeBrokerRack("[1,2]"), std::nullopt);
  EXPECT_EQ(decodeBrokerRack("not json"), std::nullopt);
  EXPECT_EQ(decodeBrokerRack(encodeBroker("k1", 9092, "eu-1b")), "eu-1b");
  EXPECT_EQ(decodeBrokerRack(encodeBroker("k1", 9092, "")), "");

  EXPECT_EQ(parseNodeId("17"), 17);
  EXPECT_EQ(parseNodeId("17a"), std::nullopt);
  EXPECT_EQ(parseNodeId(""), std::nullopt);
}

TEST(Layout, SettingsRoundTrip) {
  GroupSettings s{2500, {"clicks", "views"}, true};
  auto back = decodeSettings(encodeSettings(s));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, s);
}

TEST(Layout, GroupConfigRoundTripsAndSaysWhyItIsUnreadable) {
  EXPECT_EQ(Layout("/gc").groupConfigPath("g"), "/gc/config/groups/g");
  GroupConfig c;
  EXPECT_EQ(encodeGroupConfig(c), "{}");
  EXPECT_EQ(decodeGroupConfig("{}"), std::optional<GroupConfig>(c));
  c.consumerHeartbeatIntervalMs = 1500;
  EXPECT_EQ(encodeGroupConfig(c), R"({"consumer.heartbeat.interval.ms":1500})");
  c.consumerSessionTimeoutMs = 30000;
  EXPECT_EQ(decodeGroupConfig(encodeGroupConfig(c)), std::optional<GroupConfig>(c));
  // Keys this version does not know are skipped.
  EXPECT_EQ(decodeGroupConfig(R"({"consumer.session.timeout.ms":30000,"consumer.heartbeat.interval.ms":1500,)"
                              R"("consumer.assignors":"uniform"})"),
            std::optional<GroupConfig>(c));
  std::string why;
  EXPECT_FALSE(decodeGroupConfig(R"({"consumer.session.timeout.ms":"30s"})", &why).has_value());
  EXPECT_EQ(why, "consumer.session.timeout.ms is not a whole number");
  EXPECT_FALSE(decodeGroupConfig(R"({"consumer.heartbeat.interval.ms":1.5})", &why).has_value());
  EXPECT_EQ(why, "consumer.heartbeat.interval.ms is not a whole number");
  for (const char* bad : {"", "[]", "{", "7"}) {
    EXPECT_FALSE(decodeGroupConfig(bad, &why).has_value()) << bad;
    EXPECT_EQ(why, "not a JSON object");
  }
}

TEST(Layout, UnreadableSettingsAreRefusedNotThrown) {
  EXPECT_FALSE(decodeSettings("").has_value());
  EXPECT_FALSE(decodeSettings("{").has_value());
  EXPECT_FALSE(decodeSettings("[]").has_value());
  EXPECT_FALSE(decodeSettings(R"({"session_timeout_ms":"x"})").has_value());
  EXPECT_FALSE(decodeSettings(R"({"session_timeout_ms":1000,"topics":[1]})").has_value());
  EXPECT_FALSE(decodeSettings(R"({"session_timeout_ms":1000,"ephemeral":"yes"})").has_value());
}

TEST(Layout, ServerDataRoundTrip) {
  auto b = decodeServer(7, encodeServer("10.0.0.7", 40001));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->brokerId, 7);
  EXPECT_EQ(b->host, "10.0.0.7");
  EXPECT_EQ(b->port, 40001);
  EXPECT_FALSE(decodeServer(1, R"({"host":"h","port":70000})").has_value());
  EXPECT_FALSE(decodeServer(1, "garbage").has_value());
}

TEST(Layout, ServerDataCarriesTheInternalAddressOnlyWhenThereIsOne) {
  // Without an internal listener the registration is what it always was.
  EXPECT_EQ(encodeServer("10.0.0.7", 40001), R"({"host":"10.0.0.7","port":40001})");
  EXPECT_FALSE(decodeServerInternal(7, encodeServer("10.0.0.7", 40001)).has_value());

  const std::string both = encodeServer("127.0.0.1", 7410, "groupcoordd-2", 7402);
  auto client = decodeServer(2, both);
  ASSERT_TRUE(client.has_value());
  EXPECT_EQ(client->host, "127.0.0.1");
  EXPECT_EQ(client->port, 7410);
  auto internal = decodeServerInternal(2, both);
  ASSERT_TRUE(internal.has_value());
  EXPECT_EQ(internal->brokerId, 2);
  EXPECT_EQ(internal->host, "groupcoordd-2");
  EXPECT_EQ(internal->port, 7402);

  EXPECT_FALSE(decodeServerInternal(2, R"({"host":"h","port":1,"internal_host":"","internal_port":7402})"));
  EXPECT_FALSE(decodeServerInternal(2, R"({"host":"h","port":1,"internal_host":"i","internal_port":70000})"));
}

TEST(Layout, MemberDataSurvivesInvalidUtf8) {
  std::string bad("\xff\xfe client", 9);
  std::string data = encodeMember(bad);
  EXPECT_NE(data.find("client_id"), std::string::npos);
}

// `groupctl topic grow`'s new document: more partitions, the rest as it was.
TEST(Layout, GrowingATopicKeepsItsIdAndReplicas) {
  using Replicas = std::vector<std::vector<int32_t>>;
  const std::string kafka = R"({"version":3,"topic_id":"_____________________w","partitions":{"0":[1,2],"1":[3]},)"
                            R"("adding_replicas":{},"removing_replicas":{}})";
  const auto grown = growTopic(kafka, 5);
  ASSERT_TRUE(grown.has_value());
  EXPECT_EQ(decodeTopicReplicas(*grown), (Replicas{{1, 2}, {3}, {1, 2}, {3}, {1, 2}}));
  EXPECT_EQ(decodeTopicId(*grown), decodeTopicId(kafka));
  EXPECT_NE(grown->find(R"("version":3)"), std::string::npos) << *grown;
  EXPECT_NE(grown->find(R"("adding_replicas":{})"), std::string::npos) << *grown;
  // No id before, none after: the derived one stays the topic's id.
  const auto old = growTopic(encodeTopic(2), 3);
  ASSERT_TRUE(old.has_value());
  EXPECT_FALSE(decodeTopicId(*old));
  EXPECT_EQ(topicIdOf("orders", *old), derivedTopicId("orders"));
  EXPECT_EQ(decodeTopicPartitions(*old), 3);
  // Never fewer or as many, never from data that is not a topic.
  EXPECT_FALSE(growTopic(kafka, 2));
  EXPECT_FALSE(growTopic(kafka, 1));
  EXPECT_FALSE(growTopic(R"({"version":1,"partitions":{"0":[1],"2":[2]}})", 5)) << "a gap";
  EXPECT_FALSE(growTopic("not json", 5));
  EXPECT_EQ(decodeTopicReplicas(*growTopic(R"({"version":1,"partitions":{}})", 2)), (Replicas{{0}, {0}}));
}

// Topic ids as Kafka keeps them in a topic's znode (since 2.8): 16 bytes
// as unpadded base64url; groupcoord writes one with every topic it makes
// and derives a stable one for a topic that has none.
TEST(Layout, TopicIdsAreKafkasTextAndEveryTopicHasOne) {
  TopicId ones;
  ones.fill(0xff);
  EXPECT_EQ(topicIdText(ones), "_____________________w");
  EXPECT_EQ(parseTopicId("_____________________w"), std::optional<TopicId>(ones));
  TopicId counting{};
  for (size_t i = 0; i < counting.size(); ++i) counting[i] = static_cast<uint8_t>(i * 17);
  EXPECT_EQ(parseTopicId(topicIdText(counting)), std::optional<TopicId>(counting));
  EXPECT_FALSE(parseTopicId("_____________________x")) << "bits past the 16 bytes";
  EXPECT_FALSE(parseTopicId("____________________w")) << "too short";
  EXPECT_FALSE(parseTopicId("_____________________w=")) << "padded";
  EXPECT_FALSE(parseTopicId("____________________+w")) << "not base64url";

  // A topic as Kafka 2.8 and later write it.
  const std::string kafka = R"({"partitions":{"0":[1],"1":[2]},"topic_id":"_____________________w",)"
                            R"("adding_replicas":{},"removing_replicas":{},"version":3})";
  EXPECT_EQ(decodeTopicPartitions(kafka), std::optional<int32_t>(2));
  EXPECT_EQ(decodeTopicId(kafka), std::optional<TopicId>(ones));
  EXPECT_EQ(topicIdOf("orders", kafka), ones);
  // One written before ids: none in the znode, the same derived one every time.
  const std::string old = encodeTopic(3);
  EXPECT_FALSE(decodeTopicId(old));
  EXPECT_EQ(topicIdOf("orders", old), derivedTopicId("orders"));
  EXPECT_EQ(derivedTopicId("orders"), derivedTopicId("orders"));
  EXPECT_NE(derivedTopicId("orders"), derivedTopicId("orders2"));
  EXPECT_NE(derivedTopicId(""), TopicId{});
  // A zero id in a znode is Kafka's "none": the derived one stands in.
  EXPECT_EQ(topicIdOf("orders", R"({"version":3,"partitions":{"0":[1]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAA"})"),
            derivedTopicId("orders"));
  EXPECT_FALSE(decodeTopicId(R"({"version":3,"partitions":{"0":[1]},"topic_id":7})"));
  EXPECT_FALSE(decodeTopicId("not json"));

  // A new topic's: random, never reserved, its text never an option.
  for (int i = 0; i < 1000; ++i) {
    const TopicId id = randomTopicId();
    EXPECT_NE(topicIdText(id).front(), '-');
    const std::string data = encodeTopic(4, id);
    EXPECT_EQ(decodeTopicPartitions(data), std::optional<int32_t>(4));
    EXPECT_EQ(decodeTopicId(data), std::optional<TopicId>(id));
  }
}

}  // namespace
}  // namespace groupcoord::adapter
