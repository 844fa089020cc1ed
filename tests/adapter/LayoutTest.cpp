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

TEST(Layout, SettingsRoundTrip) {
  GroupSettings s{2500, {"clicks", "views"}, true};
  auto back = decodeSettings(encodeSettings(s));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, s);
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

TEST(Layout, MemberDataSurvivesInvalidUtf8) {
  std::string bad("\xff\xfe client", 9);
  std::string data = encodeMember(bad);
  EXPECT_NE(data.find("client_id"), std::string::npos);
}

}  // namespace
}  // namespace groupcoord::adapter
