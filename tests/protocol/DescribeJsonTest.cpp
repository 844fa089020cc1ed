// The one JSON encoding of the DescribeGroup answer and of GroupInfo
// (protocol/DescribeJson.h, docs/protocol.md "DescribeGroup as JSON"):
// every key there, snake_case, the values right, and client strings with
// quotes, control characters, non-ASCII or invalid UTF-8 encoded safely.

#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "protocol/DescribeJson.h"

namespace groupcoord::protocol {
namespace {

using nlohmann::json;

// Quotes, a backslash, a line end, a control character, markup and
// non-ASCII (two- and four-byte UTF-8).
const std::string kAwkward = "a \"quoted\" \\ name\n\t\x01 <b>& Zürich 日本 \xF0\x9F\x98\x80";

DescribeGroupResponse fullAnswer() {
  DescribeGroupResponse d;
  d.group = "orders";
  d.controller = Broker{3, "10.0.0.3", 7400};
  d.state = GroupState::REBALANCING;
  d.sessionTimeoutMs = 10000;
  d.ephemeral = true;
  d.generation = 7;
  d.mode = AssignmentMode::CLIENT;
  d.topics = {{"orders", 2}, {"gone", -1}};
  MemberState a;
  a.consumerId = "m-1";
  a.clientId = kAwkward;
  a.host = "127.0.0.1";
  a.port = 5000;
  a.joinedAtMs = 1'790'000'000'000;
  a.lastHeardMs = 1'790'000'001'000;
  a.held = {{"orders", 0}, {"orders", 1}};
  a.metadata = std::string("w=3\0\xff", 5);
  a.rack = "eu-1a";
  MemberState b;
  b.consumerId = "m-2";
  b.clientId = "billing";
  b.waiting = {{"orders", 1}};
  d.members = {a, b};
  d.offsets = {{"orders", 1, 9}, {"orders", 0, 42}};
  RebalanceEvent e;
  e.timeMs = 1'790'000'000'500;
  e.generation = 7;
  e.reason = RebalanceReason::TOPIC_RESIZED;
  e.count = 2;
  e.consumerId = "m-1";
  e.clientId = kAwkward;
  e.host = "127.0.0.1";
  e.subject = "orders";
  e.value = 2;
  e.detail = "topic orders grew to 2 partitions";
  d.history = {e};
  return d;
}

std::set<std::string> keysOf(const json& object) {
  std::set<std::string> out;
  for (auto it = object.begin(); it != object.end(); ++it) out.insert(it.key());
  return out;
}

bool snakeCase(const std::string& key) {
  if (key.empty() || !std::islower(static_cast<unsigned char>(key[0]))) return false;
  for (unsigned char c : key)
    if (!(std::islower(c) || std::isdigit(c) || c == '_')) return false;
  return key.back() != '_' && key.find("__") == std::string::npos;
}

void expectSnakeCase(const json& j, const std::string& where) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      EXPECT_TRUE(snakeCase(it.key())) << where << "." << it.key();
      expectSnakeCase(it.value(), where + "." + it.key());
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) expectSnakeCase(j[i], where + "[" + std::to_string(i) + "]");
  }
}

const std::set<std::string> kGroupInfoKeys = {"name",       "error",      "members",       "member_count",
                                              "topics",     "controller", "session_timeout_ms",
                                              "generation", "ephemeral",  "assignment",    "kafka",
                                              "protocol_type", "protocol_name"};

TEST(DescribeJsonTest, EveryKeyOfTheDocumentIsThereAndSnakeCase) {
  const json j = describeGroupJson(fullAnswer());
  EXPECT_EQ(keysOf(j), (std::set<std::string>{"group", "error", "state", "generation", "controller",
                                              "session_timeout_ms", "ephemeral", "assignment", "kafka",
                                              "protocol_type", "protocol_name", "topics", "members",
                                              "offsets", "partitions", "history"}));
  EXPECT_EQ(keysOf(j["group"]), kGroupInfoKeys);
  EXPECT_EQ(keysOf(j["controller"]), (std::set<std::string>{"id", "host", "port"}));
  EXPECT_EQ(keysOf(j["topics"][0]), (std::set<std::string>{"topic", "partitions"}));
  for (const auto& m : j["members"]) {
    EXPECT_EQ(keysOf(m), (std::set<std::string>{"id", "client_id", "host", "port", "joined_at", "last_heard", "held",
                                                "waiting", "rack", "metadata_hex"}));
  }
  EXPECT_EQ(keysOf(j["members"][0]["held"][0]), (std::set<std::string>{"topic", "partition"}));
  EXPECT_EQ(keysOf(j["offsets"][0]), (std::set<std::string>{"topic", "partition", "offset"}));
  EXPECT_EQ(keysOf(j["partitions"][0]), (std::set<std::string>{"topic", "partition", "committed_offset", "owner",
                                                               "host", "client_id", "waiting"}));
  EXPECT_EQ(keysOf(j["history"][0]), (std::set<std::string>{"time", "generation", "reason", "count", "member",
                                                            "client_id", "host", "subject", "value", "detail"}));
  expectSnakeCase(j, "$");
}

TEST(DescribeJsonTest, TheGroupItsSettingsAndStateHaveTheAnswersValues) {
  const json j = describeGroupJson(fullAnswer());
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_EQ(j["state"], "REBALANCING");
  EXPECT_EQ(j["generation"], 7);
  EXPECT_EQ(j["controller"], (json{{"id", 3}, {"host", "10.0.0.3"}, {"port", 7400}}));
  EXPECT_EQ(j["session_timeout_ms"], 10000);
  EXPECT_EQ(j["ephemeral"], true);
  EXPECT_EQ(j["assignment"], "client");
  EXPECT_EQ(j["topics"], json::parse(R"([{"topic":"orders","partitions":2},{"topic":"gone","partitions":-1}])"));
  // The summary, as ListGroups would list the group.
  const json& g = j["group"];
  EXPECT_EQ(g["name"], "orders");
  EXPECT_TRUE(g["error"].is_null());
  EXPECT_EQ(g["members"], json::array({"m-1", "m-2"}));
  EXPECT_EQ(g["member_count"], 2);
  EXPECT_EQ(g["topics"], json::array({"orders", "gone"}));
  EXPECT_EQ(g["controller"], j["controller"]);
  EXPECT_EQ(g["session_timeout_ms"], 10000);
  EXPECT_EQ(g["generation"], 7);
  EXPECT_EQ(g["ephemeral"], true);
  EXPECT_EQ(g["assignment"], "client");
}

TEST(DescribeJsonTest, MembersOffsetsPartitionsAndHistoryHaveTheAnswersValues) {
  const json j = describeGroupJson(fullAnswer());
  const json& a = j["members"][0];
  EXPECT_EQ(a["id"], "m-1");
  EXPECT_EQ(a["client_id"], kAwkward);
  EXPECT_EQ(a["host"], "127.0.0.1");
  EXPECT_EQ(a["port"], 5000);
  EXPECT_EQ(a["joined_at"], 1'790'000'000'000);
  EXPECT_EQ(a["last_heard"], 1'790'000'001'000);
  EXPECT_EQ(a["held"], json::parse(R"([{"topic":"orders","partition":0},{"topic":"orders","partition":1}])"));
  EXPECT_EQ(a["waiting"], json::array());
  EXPECT_EQ(a["rack"], "eu-1a");
  EXPECT_EQ(a["metadata_hex"], "773d3300ff");
  const json& b = j["members"][1];
  EXPECT_EQ(b["host"], "");
  EXPECT_EQ(b["port"], 0);
  EXPECT_EQ(b["joined_at"], -1);
  EXPECT_EQ(b["rack"], "");
  EXPECT_EQ(b["metadata_hex"], "");
  EXPECT_EQ(b["waiting"], json::parse(R"([{"topic":"orders","partition":1}])"));

  // Sorted by topic and partition, whatever order the answer had.
  EXPECT_EQ(j["offsets"], json::parse(R"([{"topic":"orders","partition":0,"offset":42},
                                          {"topic":"orders","partition":1,"offset":9}])"));

  ASSERT_EQ(j["partitions"].size(), 2u);  // "gone" has no partitions
  EXPECT_EQ(j["partitions"][0], (json{{"topic", "orders"}, {"partition", 0}, {"committed_offset", 42},
                                      {"owner", "m-1"}, {"host", "127.0.0.1:5000"}, {"client_id", kAwkward},
                                      {"waiting", nullptr}}));
  EXPECT_EQ(j["partitions"][1]["waiting"], "m-2");  // held by m-1, assigned to m-2

  const json& e = j["history"][0];
  EXPECT_EQ(e, (json{{"time", 1'790'000'000'500}, {"generation", 7}, {"reason", "TOPIC_RESIZED"}, {"count", 2},
                     {"member", "m-1"}, {"client_id", kAwkward}, {"host", "127.0.0.1"}, {"subject", "orders"},
                     {"value", 2}, {"detail", "topic orders grew to 2 partitions"}}));
}

TEST(DescribeJsonTest, AnErrorAnswerHasNullsWhereNothingIsKnown) {
  DescribeGroupResponse d;
  d.group = "orders";
  d.error = ErrorCode::NOT_CONTROLLER;
  const json j = describeGroupJson(d);
  EXPECT_EQ(j["error"], "NOT_CONTROLLER");
  EXPECT_EQ(j["group"]["error"], "NOT_CONTROLLER");
  EXPECT_TRUE(j["controller"].is_null());
  EXPECT_TRUE(j["group"]["controller"].is_null());
  EXPECT_EQ(j["state"], "LOADING");
  EXPECT_EQ(j["generation"], -1);
  EXPECT_EQ(j["assignment"], "server");
  for (const char* array : {"topics", "members", "offsets", "partitions", "history"})
    EXPECT_EQ(j[array], json::array()) << array;
}

TEST(DescribeJsonTest, AwkwardNamesSurviveTheTextIntactAndEscaped) {
  auto d = fullAnswer();
  d.group = kAwkward;
  d.topics = {{kAwkward, 1}};
  d.members[0].held = {{kAwkward, 0}};
  d.members[1].waiting.clear();
  d.offsets.clear();
  const std::string text = dumpJson(describeGroupJson(d));
  EXPECT_EQ(text.back(), '\n');
  // The control characters and the line end inside the name are escaped:
  // the only raw line ends are the indentation's.
  EXPECT_EQ(text.find('\x01'), std::string::npos);
  EXPECT_EQ(text.find('\t'), std::string::npos);
  EXPECT_NE(text.find("\\u0001"), std::string::npos);
  EXPECT_NE(text.find("\\\"quoted\\\""), std::string::npos);
  const json back = json::parse(text);
  EXPECT_EQ(back["group"]["name"], kAwkward);
  EXPECT_EQ(back["topics"][0]["topic"], kAwkward);
  EXPECT_EQ(back["members"][0]["held"][0]["topic"], kAwkward);
  EXPECT_EQ(back["partitions"][0]["topic"], kAwkward);
  EXPECT_EQ(back["partitions"][0]["client_id"], kAwkward);
  EXPECT_EQ(back["history"][0]["client_id"], kAwkward);
}

TEST(DescribeJsonTest, InvalidUtf8BecomesTheReplacementCharacter) {
  auto d = fullAnswer();
  d.members[0].clientId = std::string("bad\xff\xfe end");
  std::string text;
  ASSERT_NO_THROW(text = dumpJson(describeGroupJson(d)));
  const json back = json::parse(text);
  const std::string clientId = back["members"][0]["client_id"];
  EXPECT_EQ(clientId.rfind("bad", 0), 0u);
  EXPECT_NE(clientId.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD
  EXPECT_NE(clientId.find(" end"), std::string::npos);
}

TEST(DescribeJsonTest, GroupInfoAsListGroupsListsIt) {
  GroupInfo g;
  g.name = "payments";
  g.error = ErrorCode::NONE;
  g.members = {"m-1", "m-2", "m-3"};
  g.topics = {"payments"};
  g.controller = Broker{1, "::1", 7400};
  g.sessionTimeoutMs = 4000;
  g.generation = 12;
  g.mode = AssignmentMode::SERVER;
  const json j = groupInfoJson(g);
  EXPECT_EQ(keysOf(j), kGroupInfoKeys);
  EXPECT_EQ(j["name"], "payments");
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_EQ(j["members"], json::array({"m-1", "m-2", "m-3"}));
  EXPECT_EQ(j["member_count"], 3);
  EXPECT_EQ(j["topics"], json::array({"payments"}));
  EXPECT_EQ(j["controller"], (json{{"id", 1}, {"host", "::1"}, {"port", 7400}}));
  EXPECT_EQ(j["session_timeout_ms"], 4000);
  EXPECT_EQ(j["generation"], 12);
  EXPECT_EQ(j["ephemeral"], false);
  EXPECT_EQ(j["assignment"], "server");
  g.error = ErrorCode::UNKNOWN_GROUP;
  g.controller = Broker{};
  EXPECT_EQ(groupInfoJson(g)["error"], "UNKNOWN_GROUP");
  EXPECT_TRUE(groupInfoJson(g)["controller"].is_null());
  EXPECT_EQ(j["kafka"], false);
  EXPECT_EQ(j["protocol_type"], "");
  EXPECT_EQ(j["protocol_name"], "");
}

TEST(DescribeJsonTest, AKafkaGroupsProtocolIsInBothDocumentsAndInWords) {
  DescribeGroupResponse d;
  d.group = "workers";
  d.kafka = true;
  d.protocolType = "consumer";
  d.protocolName = "cooperative-sticky";
  const json j = describeGroupJson(d);
  EXPECT_EQ(j["kafka"], true);
  EXPECT_EQ(j["protocol_type"], "consumer");
  EXPECT_EQ(j["protocol_name"], "cooperative-sticky");
  EXPECT_EQ(j["group"]["kafka"], true) << "the GroupInfo part too";
  EXPECT_EQ(j["group"]["protocol_name"], "cooperative-sticky");
  EXPECT_EQ(protocolText(true, "consumer", "cooperative-sticky"), "kafka consumer (cooperative-sticky)");
  EXPECT_EQ(protocolText(true, "consumer", ""), "kafka consumer");
  EXPECT_EQ(protocolText(true, "", ""), "kafka");
  EXPECT_EQ(protocolText(false, "", ""), "groupcoord");
}

TEST(DescribeJsonTest, HexBytesIsTwoLowercaseDigitsPerByte) {
  EXPECT_EQ(hexBytes(""), "");
  EXPECT_EQ(hexBytes(std::string("\x00\x0f\xa0\xff", 4)), "000fa0ff");
}

}  // namespace
}  // namespace groupcoord::protocol
