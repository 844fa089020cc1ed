// The servers as `groupctl servers` and the status page show them
// (protocol/ServersJson.h; docs/protocol.md, "DescribeServers as JSON"):
// ListGroups' controllers and the DescribeServers answer merged, the rule's
// text, and the JSON document with and without the placement.

#include <gtest/gtest.h>

#include "protocol/ServersJson.h"

namespace groupcoord::protocol {
namespace {

using nlohmann::json;

GroupInfo group(std::string name, Broker controller, ErrorCode error = ErrorCode::NONE) {
  GroupInfo g;
  g.name = std::move(name);
  g.controller = std::move(controller);
  g.error = error;
  return g;
}

std::vector<GroupInfo> listed() {
  return {group("orders", Broker{1, "10.0.0.1", 7400}), group("clicks", Broker{1, "10.0.0.1", 7400}),
          group("audit", Broker{4, "10.0.0.4", 7400}),  // a controller not among the live servers
          group("zeta", Broker{}), group("alpha", Broker{}),
          group("gone", Broker{1, "10.0.0.1", 7400}, ErrorCode::UNKNOWN_GROUP)};
}

DescribeServersResponse placement() {
  DescribeServersResponse p;
  p.server = 2;
  p.epsilonPermille = 125;
  p.marginPermille = 50;
  p.weighting = "members";
  p.groupWeight = 10;
  p.total = 46;
  p.bound = 29;
  p.complete = false;
  p.servers = {ServerPlacement{1, "10.0.0.1", 7400, false, true, true, 24, 2, 24},
               ServerPlacement{2, "", 0, false, true, true, 0, 0, 22},
               ServerPlacement{3, "10.0.0.3", 7400, true, true, false, 0, 0, 0}};
  p.moves = {GroupMove{"audit", 11, 4, 2}, GroupMove{"alpha", 11, -1, 2}};
  return p;
}

TEST(ServerTable, WithoutThePlacementOnlyTheControllers) {
  const ServerTable t = serverTable(listed(), nullptr);
  ASSERT_EQ(t.servers.size(), 2u);
  EXPECT_EQ(t.servers[0].id, 1);
  EXPECT_EQ(t.servers[0].groups, (std::vector<std::string>{"clicks", "orders"}));
  EXPECT_FALSE(t.servers[0].placement);
  EXPECT_EQ(t.servers[1].id, 4);
  EXPECT_EQ(t.withoutController, (std::vector<std::string>{"alpha", "zeta"}));
}

TEST(ServerTable, WithThePlacementEveryLiveServerAndEveryController) {
  const DescribeServersResponse p = placement();
  const ServerTable t = serverTable(listed(), &p);
  ASSERT_EQ(t.servers.size(), 4u);
  EXPECT_EQ(t.servers[1].id, 2);
  EXPECT_TRUE(t.servers[1].groups.empty());
  EXPECT_EQ(serverStateName(t.servers[1].placement), "candidate");
  EXPECT_EQ(serverStateName(t.servers[2].placement), "drained");
  EXPECT_EQ(t.servers[3].id, 4);
  EXPECT_EQ(t.servers[3].host, "10.0.0.4");  // from ListGroups: not live here
  EXPECT_EQ(serverStateName(t.servers[3].placement), "not live");
  ServerPlacement settling;
  EXPECT_EQ(serverStateName(settling), "settling");
}

TEST(ServerTable, RuleText) {
  EXPECT_EQ(permilleText(100), "0.10");
  EXPECT_EQ(permilleText(50), "0.05");
  EXPECT_EQ(permilleText(125), "0.125");
  EXPECT_EQ(permilleText(1000), "1.00");
  EXPECT_EQ(permilleText(2505), "2.505");
  EXPECT_EQ(permilleText(-1), "?");
  DescribeServersResponse p = placement();
  p.epsilonPermille = 100;
  EXPECT_EQ(boundRuleText(p), "bound B = ceil((1+eps) x total / candidates): eps 0.10, margin 0.05, weight = members + 10");
  p.weighting = "groups";
  EXPECT_EQ(weightRuleText(p), "weight = 10 per group");
  EXPECT_EQ(candidateCount(p), 2u);
}

TEST(ServersJson, WithoutThePlacementTheKeysGroupctlAlwaysPrinted) {
  const json doc = serversJson(listed(), nullptr);
  EXPECT_EQ(doc, (json{{"servers", json::array({{{"id", 1}, {"host", "10.0.0.1"}, {"port", 7400},
                                                  {"groups", {"clicks", "orders"}}},
                                                 {{"id", 4}, {"host", "10.0.0.4"}, {"port", 7400},
                                                  {"groups", {"audit"}}}})},
                       {"without_controller", {"alpha", "zeta"}}}));
}

TEST(ServersJson, WithThePlacementKeysAreAdded) {
  const DescribeServersResponse p = placement();
  const json doc = serversJson(listed(), &p);
  for (const char* key : {"servers", "without_controller", "server", "complete", "total", "bound", "candidates",
                          "epsilon_permille", "margin_permille", "weighting", "group_weight", "moves"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  EXPECT_EQ(doc["server"], 2);
  EXPECT_EQ(doc["complete"], false);
  EXPECT_EQ(doc["candidates"], 2);
  EXPECT_EQ(doc["epsilon_permille"], 125);
  const json& one = doc["servers"][0];
  EXPECT_EQ(one, (json{{"id", 1},         {"host", "10.0.0.1"}, {"port", 7400},      {"groups", {"clicks", "orders"}},
                       {"live", true},    {"state", "candidate"}, {"drained", false}, {"settled", true},
                       {"candidate", true}, {"load", 24},         {"group_count", 2}, {"bound", 29},
                       {"placed", 24}}));
  EXPECT_EQ(doc["servers"][1]["host"], "");
  EXPECT_TRUE(doc["servers"][2]["bound"].is_null());  // drained: no bound
  EXPECT_EQ(doc["servers"][2]["state"], "drained");
  const json& gone = doc["servers"][3];
  EXPECT_EQ(gone["live"], false);
  EXPECT_EQ(gone["state"], "not live");
  EXPECT_TRUE(gone["load"].is_null());
  EXPECT_TRUE(gone["placed"].is_null());
  EXPECT_EQ(doc["moves"], json::array({{{"group", "audit"}, {"weight", 11}, {"from", 4}, {"to", 2}},
                                       {{"group", "alpha"}, {"weight", 11}, {"from", nullptr}, {"to", 2}}}));
}

}  // namespace
}  // namespace groupcoord::protocol
