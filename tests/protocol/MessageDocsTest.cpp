// The messages' descriptions (protocol/Schema.h) and what is printed from
// them: the files in the repository must be what they print, the smallest
// encodings must be those docs/protocol.md has always quoted, and every
// field of an API must exist in a version the API speaks.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/GeneratedFiles.h"
#include "protocol/MessageDocs.h"
#include "protocol/Messages.h"

namespace groupcoord::protocol::docs {
namespace {

using generated::fileText;

const std::string kRoot = GROUPCOORD_SOURCE_DIR;

TEST(MessageDocsTest, ThePythonTableInTheRepositoryIsWhatTheDescriptionsPrint) {
  EXPECT_TRUE(fileText(kRoot + "/python/groupcoord/_layouts.py") == pythonLayouts())
      << "python/groupcoord/_layouts.py is not what protocol/Messages.h describes: run scripts/dev.sh generate";
}

TEST(MessageDocsTest, TheFieldTablesOfTheProtocolDocAreWhatTheDescriptionsPrint) {
  const std::string have = fileText(kRoot + "/docs/protocol.md");
  std::string error;
  const std::string want = withFieldBlocks(have, &error);
  ASSERT_FALSE(want.empty()) << error;
  EXPECT_TRUE(have == want) << "docs/protocol.md's field tables are not what protocol/Messages.h describes: run "
                               "scripts/dev.sh generate";
}

TEST(MessageDocsTest, AMissingOrUnknownBlockIsRefusedWithItsName) {
  const std::string have = fileText(kRoot + "/docs/protocol.md");
  std::string error;
  std::string without = have;
  const std::string begin = beginMarker("Heartbeat");
  without.erase(without.find(begin), begin.size());
  EXPECT_EQ(withFieldBlocks(without, &error), "");
  EXPECT_NE(error.find("Heartbeat"), std::string::npos) << error;

  error.clear();
  const std::string unknown = have + "\n" + beginMarker("NoSuchMessage") + "\n" + endMarker("NoSuchMessage") + "\n";
  EXPECT_EQ(withFieldBlocks(unknown, &error), "");
  EXPECT_NE(error.find("NoSuchMessage"), std::string::npos) << error;

  error.clear();
  const std::string twice = have + "\n" + beginMarker("GroupMove") + "\n" + endMarker("GroupMove") + "\n" +
                            beginMarker("GroupMove") + "\n" + endMarker("GroupMove") + "\n";
  EXPECT_EQ(withFieldBlocks(twice, &error), "");
  EXPECT_NE(error.find("GroupMove"), std::string::npos) << error;
}

// The sizes every earlier version of docs/protocol.md (§5) quoted, and which
// the decoders have always multiplied array counts by.
TEST(MessageDocsTest, SmallestEncodingsAreThoseTheProtocolHasAlwaysHad) {
  const std::map<std::string, std::vector<size_t>> quoted{
      {"Broker", {8, 8, 8}},          {"TopicPartition", {6, 6, 6}}, {"PartitionOffset", {14, 14, 14}},
      {"PartitionError", {8, 8, 8}},  {"MemberMetadata", {8, 8, 8}}, {"GroupInfo", {37, 38, 43}},
      {"TopicState", {6, 6, 6}},      {"MemberState", {32, 38, 38}}, {"RebalanceEvent", {40, 40, 40}},
      {"ServerPlacement", {33, 33, 33}}, {"GroupMove", {18, 18, 18}},
  };
  size_t structures = 0;
  for (const auto& s : describeAll()) {
    if (s.api) continue;
    ++structures;
    auto it = quoted.find(s.name);
    ASSERT_NE(it, quoted.end()) << s.name;
    EXPECT_EQ(s.smallest, it->second) << s.name;
  }
  EXPECT_EQ(structures, quoted.size());
  EXPECT_EQ(schema::smallest<GroupInfo>(0), 37u);
  EXPECT_EQ(schema::smallest<GroupInfo>(2), 43u);  // Kafka bool and two empty strings
  EXPECT_EQ(schema::smallest<MemberState>(1), 38u);
  EXPECT_EQ(schema::smallest<MemberState>(-1), 32u);  // a version no API speaks: version 0's
}

TEST(MessageDocsTest, EveryApiFieldIsInAVersionTheApiSpeaksAndNamedOnce) {
  std::map<std::string, int> newest;
  for (int k = 0; k < kApiCount; ++k) {
    const auto key = static_cast<ApiKey>(k);
    newest[std::string(apiName(key)) + "Request"] = maxVersion(key);
    newest[std::string(apiName(key)) + "Response"] = maxVersion(key);
  }
  size_t apis = 0;
  for (const auto& s : describeAll()) {
    std::set<std::string> wire, python;
    for (const auto& f : s.fields) {
      EXPECT_TRUE(wire.insert(f.wire).second) << s.name << "." << f.wire << " named twice";
      EXPECT_TRUE(python.insert(f.python).second) << s.name << "." << f.python << " named twice";
      EXPECT_FALSE(f.python.empty()) << s.name << "." << f.wire;
      if (f.until >= 0) {
        EXPECT_LE(f.since, f.until) << s.name << "." << f.wire;
      }
    }
    if (!s.api || s.name == "ErrorOnlyResponse") continue;
    ++apis;
    ASSERT_TRUE(newest.count(s.name)) << s.name;
    for (const auto& f : s.fields) {
      EXPECT_LE(f.since, newest[s.name]) << s.name << "." << f.wire << " exists in no version the API speaks";
    }
  }
  EXPECT_EQ(apis, 2u * kApiCount);
}

TEST(MessageDocsTest, VersionsAreWrittenAsTheTablesShowThem) {
  EXPECT_EQ(versionsText(0, -1), "0+");
  EXPECT_EQ(versionsText(2, -1), "2+");
  EXPECT_EQ(versionsText(0, 0), "0");
  EXPECT_EQ(versionsText(1, 3), "1-3");
}

}  // namespace
}  // namespace groupcoord::protocol::docs
