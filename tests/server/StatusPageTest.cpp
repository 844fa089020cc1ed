// The status page's rendering (escaping, nothing loaded from elsewhere, the
// JSON documents) and its routes on a real HTTP server with a fake source:
// bad names, authentication, methods. No ensemble needed.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "metrics/Registry.h"
#include "protocol/DescribeJson.h"
#include "protocol/ServersJson.h"
#include "server/Auth.h"
#include "server/HttpServer.h"
#include "server/StatusPage.h"
#include "tests/server/HttpTestUtil.h"

namespace groupcoord::server {
namespace {

using protocol::DescribeGroupResponse;
using protocol::ErrorCode;

constexpr const char* kHostile = "<script>alert('x')</script>\"&<img src=x onerror=alert(1)>";
constexpr int64_t kNow = 1'790'000'000'000;

DescribeGroupResponse hostileGroup() {
  DescribeGroupResponse g;
  g.group = "orders.v2_eu-1";
  g.controller = protocol::Broker{3, kHostile, 7400};
  g.state = protocol::GroupState::REBALANCING;
  g.sessionTimeoutMs = 10000;
  g.generation = 7;
  g.topics = {{"orders", 2}, {"payments", -1}};
  protocol::MemberState a;
  a.consumerId = "m-1";
  a.clientId = kHostile;
  a.host = kHostile;
  a.port = 5000;
  a.joinedAtMs = kNow - 60'000;
  a.lastHeardMs = kNow - 1'000;
  a.held = {{"orders", 0}, {"orders", 1}};
  protocol::MemberState b;
  b.consumerId = "m-2";
  b.clientId = "billing";
  b.waiting = {{"orders", 1}};
  g.members = {a, b};
  g.offsets = {{"orders", 0, 42}};
  protocol::RebalanceEvent joined;
  joined.timeMs = kNow - 60'000;
  joined.generation = 6;
  joined.reason = protocol::RebalanceReason::MEMBER_JOINED;
  joined.consumerId = "m-1";
  joined.clientId = kHostile;
  joined.host = kHostile;
  joined.detail = kHostile;
  protocol::RebalanceEvent grew = joined;
  grew.timeMs = kNow - 5'000;
  grew.generation = 7;
  grew.reason = protocol::RebalanceReason::TOPIC_RESIZED;
  grew.subject = kHostile;
  grew.detail = "topic orders grew to 2 partitions";
  g.history = {joined, grew};
  return g;
}

FleetView hostileFleet() {
  FleetView f;
  f.selfId = 1;
  f.servers = {FleetServer{1, kHostile, 7400, false, true, {"orders.v2_eu-1"}},
               FleetServer{2, "10.0.0.2", 7400, true, false, {}}};
  protocol::GroupInfo g;
  g.name = "orders.v2_eu-1";
  g.members = {"m-1", "m-2"};
  g.topics = {kHostile};
  g.controller = protocol::Broker{1, kHostile, 7400};
  g.generation = 7;
  f.groups = {g};
  return f;
}

// The same fleet with the placement server 1 computes: server 1 over the
// bound gives a group to server 2, and a group without a controller goes to
// server 2 too; server 3 has just started and controls a group.
FleetView placedFleet() {
  FleetView f = hostileFleet();
  f.servers[1].drained = false;
  f.servers.push_back(FleetServer{3, "10.0.0.3", 7400, false, false, {}});
  protocol::GroupInfo orphan;
  orphan.name = "orphan";
  f.groups.push_back(orphan);
  protocol::DescribeServersResponse p;
  p.server = 1;
  p.epsilonPermille = 100;
  p.marginPermille = 50;
  p.weighting = "members";
  p.groupWeight = 10;
  p.total = 34;
  p.bound = 19;
  p.complete = true;
  p.servers = {protocol::ServerPlacement{1, kHostile, 7400, false, true, true, 24, 2, 12},
               protocol::ServerPlacement{2, "10.0.0.2", 7400, false, true, true, 0, 0, 22},
               protocol::ServerPlacement{3, "10.0.0.3", 7400, false, false, false, 10, 1, 0}};
  p.moves = {protocol::GroupMove{"orders.v2_eu-1", 12, 1, 2}, protocol::GroupMove{"orphan", 10, -1, 2}};
  f.placement = p;
  return f;
}

// Nothing that makes a browser fetch from another place: no script, image,
// frame or stylesheet element, no URL in the CSS, no absolute URL at all
// (the hostile strings' "src=x" survives only as escaped text).
void expectSelfContained(const std::string& html) {
  for (const char* bad : {"http://", "https://", "<script", "<img", "src=\"", "@import", "url(", "<link", "//cdn",
                          "<iframe", "<object", "<embed"}) {
    EXPECT_EQ(html.find(bad), std::string::npos) << "found '" << bad << "' in the page";
  }
}

TEST(StatusPageTest, HtmlEscapeReplacesEveryMarkupCharacter) {
  EXPECT_EQ(htmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(htmlEscape("plain-name_1.2"), "plain-name_1.2");
}

TEST(StatusPageTest, UrlEncodeKeepsOnlyUnreservedBytes) {
  EXPECT_EQ(urlEncode("orders.v2_eu-1~"), "orders.v2_eu-1~");
  EXPECT_EQ(urlEncode("a/b c\"<"), "a%2Fb%20c%22%3C");
}

TEST(StatusPageTest, GroupPageEscapesHostileStringsAndLoadsNothingFromElsewhere) {
  const std::string html = renderGroupPage(hostileGroup(), kNow);
  EXPECT_EQ(html.find(kHostile), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find(htmlEscape(kHostile)), std::string::npos);
  expectSelfContained(html);
  EXPECT_NE(html.find("http-equiv=\"refresh\""), std::string::npos);
}

TEST(StatusPageTest, GroupPageShowsOwnersWaitingPartitionsOffsetsAndNewestEventFirst) {
  const std::string html = renderGroupPage(hostileGroup(), kNow);
  EXPECT_NE(html.find("m-1"), std::string::npos);
  EXPECT_NE(html.find("moving"), std::string::npos);  // orders-1: held by m-1, assigned to m-2
  EXPECT_NE(html.find(">42<"), std::string::npos);     // orders-0's committed offset
  EXPECT_NE(html.find("rebalancing"), std::string::npos);
  const size_t resized = html.find("TOPIC_RESIZED");
  const size_t joined = html.find("MEMBER_JOINED");
  ASSERT_NE(resized, std::string::npos);
  ASSERT_NE(joined, std::string::npos);
  EXPECT_LT(resized, joined);  // generation 7 above generation 6
}

TEST(StatusPageTest, BothPagesShowAGroupsProtocol) {
  DescribeGroupResponse kafka = hostileGroup();
  kafka.kafka = true;
  kafka.protocolType = "consumer";
  kafka.protocolName = "range";
  const std::string group = renderGroupPage(kafka, kNow);
  EXPECT_NE(group.find(">Protocol<"), std::string::npos);
  EXPECT_NE(group.find("kafka consumer (range)"), std::string::npos);
  EXPECT_NE(renderGroupPage(hostileGroup(), kNow).find("<div class=\"v\">groupcoord</div>"), std::string::npos);
  FleetView fleet = hostileFleet();
  ASSERT_FALSE(fleet.groups.empty());
  fleet.groups[0].kafka = true;
  fleet.groups[0].protocolType = "consumer";
  fleet.groups[0].protocolName = "cooperative-sticky";
  const std::string page = renderFleetPage(fleet, kNow);
  EXPECT_NE(page.find("<th>Protocol</th>"), std::string::npos);
  EXPECT_NE(page.find("kafka consumer (cooperative-sticky)"), std::string::npos);
}

TEST(StatusPageTest, FleetPageEscapesAndLinksEachGroup) {
  const std::string html = renderFleetPage(hostileFleet(), kNow);
  EXPECT_EQ(html.find(kHostile), std::string::npos);
  EXPECT_NE(html.find("href=\"/groups/orders.v2_eu-1\""), std::string::npos);
  EXPECT_NE(html.find("drained"), std::string::npos);
  expectSelfContained(html);
}

TEST(StatusPageTest, FleetPageShowsEachServersLoadTheBoundAndTheGroupsThatShouldMove) {
  const std::string html = renderFleetPage(placedFleet(), kNow);
  EXPECT_EQ(html.find(kHostile), std::string::npos);
  expectSelfContained(html);
  for (const char* column : {">Load<", ">Bound<", ">After<"}) EXPECT_NE(html.find(column), std::string::npos) << column;
  EXPECT_NE(html.find("<td class=\"num load\">24</td><td class=\"num bound\">19</td><td class=\"num placed\">12</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"num load\">0</td><td class=\"num bound\">19</td><td class=\"num placed\">22</td>"),
            std::string::npos);
  EXPECT_NE(html.find("settling"), std::string::npos);  // server 3
  EXPECT_NE(html.find("candidate"), std::string::npos);
  EXPECT_NE(html.find("bound B = ceil((1+eps) x total / candidates): eps 0.10, margin 0.05, weight = members + 10"),
            std::string::npos);
  EXPECT_NE(html.find("view of server 1"), std::string::npos);
  const size_t moves = html.find("Groups that should move");
  ASSERT_NE(moves, std::string::npos);
  EXPECT_NE(html.find("href=\"/groups/orphan\"", moves), std::string::npos);
  EXPECT_NE(html.find("<span class=\"muted\">none</span></td><td>server 2</td>", moves), std::string::npos);
  EXPECT_EQ(html.find("still reading the fleet"), std::string::npos);
  EXPECT_NE(html.find("href=\"/api/servers\""), std::string::npos);

  FleetView reading = placedFleet();
  reading.placement->complete = false;
  reading.placement->moves.clear();
  const std::string early = renderFleetPage(reading, kNow);
  EXPECT_NE(early.find("still reading the fleet: no group moves for load yet"), std::string::npos);
  EXPECT_EQ(early.find("Groups that should move"), std::string::npos);

  // Without the placement (an older source), the servers' table as before.
  const std::string plain = renderFleetPage(hostileFleet(), kNow);
  EXPECT_EQ(plain.find(">Load<"), std::string::npos);
  EXPECT_EQ(plain.find("Groups that should move"), std::string::npos);
}

// /api/servers is the document `groupctl servers --output json` prints
// (docs/protocol.md, "DescribeServers as JSON").
TEST(StatusPageTest, ServersJsonIsTheDocumentGroupctlPrints) {
  const FleetView fleet = placedFleet();
  const auto doc = nlohmann::json::parse(serversJson(fleet));
  EXPECT_EQ(doc, protocol::serversJson(fleet.groups, &*fleet.placement));
  ASSERT_EQ(doc["servers"].size(), 3u);
  const auto& one = doc["servers"][0];
  EXPECT_EQ(one["id"], 1);
  EXPECT_EQ(one["host"], kHostile);
  EXPECT_EQ(one["port"], 7400);
  EXPECT_EQ(one["groups"], nlohmann::json::array({"orders.v2_eu-1"}));
  EXPECT_EQ(one["state"], "candidate");
  EXPECT_EQ(one["load"], 24);
  EXPECT_EQ(one["bound"], 19);
  EXPECT_EQ(one["placed"], 12);
  EXPECT_EQ(one["group_count"], 2);
  EXPECT_EQ(doc["servers"][1]["groups"], nlohmann::json::array());
  EXPECT_EQ(doc["servers"][1]["placed"], 22);
  EXPECT_EQ(doc["servers"][2]["state"], "settling");
  EXPECT_TRUE(doc["servers"][2]["bound"].is_null());
  EXPECT_EQ(doc["without_controller"], nlohmann::json::array({"orphan"}));
  EXPECT_EQ(doc["server"], 1);
  EXPECT_EQ(doc["bound"], 19);
  EXPECT_EQ(doc["total"], 34);
  EXPECT_EQ(doc["candidates"], 2);
  EXPECT_EQ(doc["complete"], true);
  EXPECT_EQ(doc["weighting"], "members");
  ASSERT_EQ(doc["moves"].size(), 2u);
  EXPECT_EQ(doc["moves"][0], (nlohmann::json{{"group", "orders.v2_eu-1"}, {"weight", 12}, {"from", 1}, {"to", 2}}));
  EXPECT_TRUE(doc["moves"][1]["from"].is_null());

  // Without the placement: the keys groupctl servers always printed, and only those.
  const auto plain = nlohmann::json::parse(serversJson(hostileFleet()));
  EXPECT_EQ(plain, (nlohmann::json{{"servers", nlohmann::json::array({{{"id", 1},
                                                                        {"host", kHostile},
                                                                        {"port", 7400},
                                                                        {"groups", {"orders.v2_eu-1"}}}})},
                                   {"without_controller", nlohmann::json::array()}}));
}

TEST(StatusPageTest, ErrorPageEscapesTheMessage) {
  const std::string html = renderErrorPage(404, StatusError{ErrorCode::UNKNOWN_GROUP, kHostile});
  EXPECT_EQ(html.find(kHostile), std::string::npos);
  EXPECT_NE(html.find("UNKNOWN_GROUP"), std::string::npos);
  expectSelfContained(html);
}

TEST(StatusPageTest, JsonDocumentsCarryTheHostileStringsIntact) {
  auto group = nlohmann::json::parse(groupJson(hostileGroup()));
  EXPECT_EQ(group["members"][0]["client_id"], kHostile);
  EXPECT_EQ(group["members"][1]["waiting"][0]["partition"], 1);
  EXPECT_EQ(group["history"][1]["reason"], "TOPIC_RESIZED");
  EXPECT_EQ(group["state"], "REBALANCING");
  auto fleet = nlohmann::json::parse(fleetJson(hostileFleet()));
  EXPECT_EQ(fleet["servers"][0]["host"], kHostile);
  EXPECT_EQ(fleet["servers"][1]["drained"], true);
  auto groups = nlohmann::json::parse(groupsJson(hostileFleet()));
  EXPECT_EQ(groups["groups"][0]["member_count"], 2);
  auto error = nlohmann::json::parse(errorJson(StatusError{ErrorCode::UNKNOWN_GROUP, "no such group"}));
  EXPECT_EQ(error["error"], "UNKNOWN_GROUP");
}

// /api/groups/NAME and /api/groups speak the one encoding groupctl prints
// (docs/protocol.md, "DescribeGroup as JSON").
TEST(StatusPageTest, TheApiUsesTheSharedJsonEncoding) {
  EXPECT_EQ(nlohmann::json::parse(groupJson(hostileGroup())), protocol::describeGroupJson(hostileGroup()));
  auto groups = nlohmann::json::parse(groupsJson(hostileFleet()));
  EXPECT_EQ(groups["groups"][0], protocol::groupInfoJson(hostileFleet().groups[0]));
  EXPECT_EQ(groups["server"], 1);
}

TEST(StatusPageTest, InvalidUtf8FromAClientStillMakesValidJson) {
  auto g = hostileGroup();
  g.members[0].clientId = std::string("bad\xff\xfe");
  EXPECT_NO_THROW(nlohmann::json::parse(groupJson(g)));
}

// ---- Routes on a real server --------------------------------------------

class FakeSource final : public StatusSource {
 public:
  StatusAnswer<FleetView> fleet() override { return {{}, placedFleet()}; }
  StatusAnswer<DescribeGroupResponse> group(const std::string& name, const Viewer& viewer) override {
    asked = name;
    lastViewer = viewer;
    if (name != "orders.v2_eu-1") return {{ErrorCode::UNKNOWN_GROUP, "group " + name + " does not exist"}, {}};
    return {{}, hostileGroup()};
  }
  std::string asked;
  Viewer lastViewer;
};

constexpr const char* kAdminSecret = "admin secret 1";
constexpr const char* kMemberSecret = "member secret 2";

std::string basic(const std::string& user, const std::string& secret) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string in = user + ":" + secret;
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<uint8_t>(in[i + 2]);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? k[v & 63] : '=';
  }
  return "Basic " + out;
}

servertest::HttpReply get(uint16_t port, const std::string& path, const std::string& authorization = "") {
  std::string raw = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!authorization.empty()) raw += "Authorization: " + authorization + "\r\n";
  return servertest::httpRaw(port, raw + "\r\n");
}

class StatusRoutesTest : public ::testing::Test {
 protected:
  void start(bool withAuth, std::shared_ptr<const permissions::Policy> policy = nullptr) {
    HttpOptions options;
    options.status = source_;
    if (policy) options.permissions = [policy] { return policy; };
    if (withAuth) {
      std::string error;
      const std::string text =
          makeCredentialLine("ops", Role::Admin, kAdminSecret, kMinIterations, &error) + "\n" +
          makeCredentialLine("app", Role::Member, kMemberSecret, kMinIterations, &error) + "\n";
      options.credentials = CredentialStore::parse(text, "test", &error);
      ASSERT_TRUE(options.credentials) << error;
    }
    server_ = std::make_unique<HttpServer>(options, registry_, nullptr);
    std::string error;
    ASSERT_TRUE(server_->start(&error)) << error;
  }
  uint16_t port() const { return server_->port(); }

  std::shared_ptr<FakeSource> source_ = std::make_shared<FakeSource>();
  metrics::Registry registry_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(StatusRoutesTest, ServesThePagesAndTheApi) {
  start(false);
  auto fleet = get(port(), "/");
  EXPECT_EQ(fleet.status, 200);
  EXPECT_NE(fleet.headers.find("text/html"), std::string::npos);
  EXPECT_NE(fleet.body.find("orders.v2_eu-1"), std::string::npos);
  auto page = get(port(), "/groups/orders.v2_eu-1");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("TOPIC_RESIZED"), std::string::npos);
  auto api = get(port(), "/api/groups/orders.v2_eu-1");
  EXPECT_EQ(api.status, 200);
  EXPECT_NE(api.headers.find("application/json"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(api.body)["generation"], 7);
  EXPECT_EQ(nlohmann::json::parse(get(port(), "/api/fleet").body)["servers"].size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(get(port(), "/api/groups").body)["groups"].size(), 2u);
  auto servers = get(port(), "/api/servers");
  EXPECT_EQ(servers.status, 200);
  EXPECT_NE(servers.headers.find("application/json"), std::string::npos);
  const auto doc = nlohmann::json::parse(servers.body);
  const FleetView placed = placedFleet();
  EXPECT_EQ(doc, protocol::serversJson(placed.groups, &*placed.placement));
  EXPECT_EQ(doc["moves"].size(), 2u);
  EXPECT_NE(fleet.body.find("Groups that should move"), std::string::npos);
}

TEST_F(StatusRoutesTest, BadNamesAnswer404WithoutReachingTheSource) {
  start(false);
  for (const char* path : {"/groups/", "/groups/..", "/groups/a%2Fb", "/groups/%3Cscript%3E", "/groups/a/b",
                           "/groups/%zz", "/api/groups/", "/api/groups/a%20b", "/groups/x%00y"}) {
    auto r = get(port(), path);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.body.find("<script>"), std::string::npos) << path;
  }
  EXPECT_EQ(source_->asked, "");
  auto api = get(port(), "/api/groups/..");
  EXPECT_EQ(nlohmann::json::parse(api.body)["error"], "INVALID_GROUP_NAME");
  auto unknown = get(port(), "/api/groups/nope");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(nlohmann::json::parse(unknown.body)["error"], "UNKNOWN_GROUP");
  EXPECT_EQ(get(port(), "/groups/nope").status, 404);
}

TEST_F(StatusRoutesTest, OtherMethodsAnswer405) {
  start(false);
  auto r = servertest::httpRaw(port(), "POST /api/groups HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_EQ(r.status, 405);
}

TEST_F(StatusRoutesTest, WithCredentialsOnlyAnAdminGetsIn) {
  start(true);
  for (const char* path :
       {"/", "/groups/orders.v2_eu-1", "/api/fleet", "/api/groups", "/api/groups/orders.v2_eu-1", "/api/servers"}) {
    auto none = get(port(), path);
    EXPECT_EQ(none.status, 401) << path;
    EXPECT_NE(none.headers.find("WWW-Authenticate: Basic realm=\"groupcoord\""), std::string::npos) << path;
    EXPECT_EQ(get(port(), path, basic("app", kMemberSecret)).status, 401) << path;
    EXPECT_EQ(get(port(), path, basic("ops", "wrong")).status, 401) << path;
    EXPECT_EQ(get(port(), path, "Bearer abc").status, 401) << path;
    EXPECT_EQ(get(port(), path, basic("ops", kAdminSecret)).status, 200) << path;
  }
  EXPECT_EQ(source_->lastViewer.user, "ops");
  EXPECT_EQ(source_->lastViewer.secret, kAdminSecret);
  EXPECT_EQ(get(port(), "/metrics").status, 200);
  EXPECT_EQ(get(port(), "/health/live").status, 200);
}

TEST_F(StatusRoutesTest, WithPermissionsEachUserSeesOnlyTheGroupsItMayDescribe) {
  std::string error;
  auto policy = permissions::Policy::parse("allow user:app describe group:orphan\nallow role:admin all group:*\n",
                                           "permissions file 't'", &error);
  ASSERT_TRUE(policy) << error;
  start(true, policy);
  const auto app = basic("app", kMemberSecret);
  // A member gets in, and sees its group only: in the list, on each
  // server, and among the moves.
  auto groups = nlohmann::json::parse(get(port(), "/api/groups", app).body)["groups"];
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0]["name"], "orphan");
  auto fleet = get(port(), "/", app);
  EXPECT_EQ(fleet.status, 200);
  EXPECT_EQ(fleet.body.find("orders.v2_eu-1"), std::string::npos);
  EXPECT_NE(fleet.body.find("orphan"), std::string::npos);
  auto moves = nlohmann::json::parse(get(port(), "/api/servers", app).body)["moves"];
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0]["group"], "orphan");
  // Another tenant's group page: refused before the source is asked.
  source_->asked.clear();
  auto other = get(port(), "/api/groups/orders.v2_eu-1", app);
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(nlohmann::json::parse(other.body)["error"], "NOT_AUTHORIZED");
  EXPECT_EQ(get(port(), "/groups/orders.v2_eu-1", app).status, 403);
  EXPECT_EQ(source_->asked, "");
  // The admin's rule shows everything; a wrong secret still gets nothing.
  EXPECT_EQ(nlohmann::json::parse(get(port(), "/api/groups", basic("ops", kAdminSecret)).body)["groups"].size(), 2u);
  EXPECT_EQ(get(port(), "/", basic("app", "wrong")).status, 401);
}

TEST(StatusRoutesOffTest, WithoutASourceThePageIsNotServed) {
  metrics::Registry registry;
  HttpServer server(HttpOptions{}, registry, nullptr);
  std::string error;
  ASSERT_TRUE(server.start(&error)) << error;
  EXPECT_EQ(get(server.port(), "/").status, 404);
  EXPECT_EQ(get(server.port(), "/api/groups").status, 404);
  EXPECT_EQ(get(server.port(), "/api/servers").status, 404);
}

}  // namespace
}  // namespace groupcoord::server
