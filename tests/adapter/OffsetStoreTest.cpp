// Committed offsets in the in-memory ZooKeeper: reading, listing, the
// writes of a commit, and the parsing of what the znodes hold.

#include <gtest/gtest.h>

#include <algorithm>

#include "adapter/OffsetStore.h"
#include "tests/adapter/FakeZkTestSupport.h"

namespace groupcoord::adapter {
namespace {

using protocol::ErrorCode;
using protocol::TopicPartition;
using testsupport::Answer;

constexpr const char* kRoot = "/gc";

class OffsetStoreTest : public ::testing::Test {
 protected:
  OffsetStoreTest() : admin_(ensemble_), zk_(ensemble_), store_(zk_, layout_) { testsupport::quietLogs(); }

  void settle() { testsupport::settle(ensemble_); }
  void put(const std::string& path, const std::string& data = "") {
    ASSERT_EQ(admin_.ensurePathSync(path), zk::Error::Ok) << path;
    ASSERT_EQ(admin_.setSync(path, data).error, zk::Error::Ok) << path;
  }
  // Group g with offsets t/0=12, t/1=7, u/0=3, and znodes that are not offsets.
  void makeGroup() {
    put(layout_.groupPath("g"));
    put(layout_.membersPath("g"));
    put(layout_.offsetsPath("g"));
    put("/gc/groups/g/offsets/t/0", "12");
    put("/gc/groups/g/offsets/t/1", "7");
    put("/gc/groups/g/offsets/u/0", "3");
    put("/gc/groups/g/offsets/u/x", "5");   // not a partition
    put("/gc/groups/g/offsets/u/1", "-4");  // not an offset
    put("/gc/groups/g/offsets/empty");      // a topic znode without offsets
  }
  OffsetsRead read(const std::vector<std::string>& topics) {
    Answer<OffsetsRead> a;
    store_.read("g", topics, a.callback());
    settle();
    EXPECT_TRUE(a.ready());
    return a.ready() ? a.get() : OffsetsRead{zk::Error::OperationTimeout, {}, {}};
  }
  OffsetsListing list(const std::string& group) {
    Answer<OffsetsListing> a;
    store_.list(group, a.callback());
    settle();
    EXPECT_TRUE(a.ready());
    return a.ready() ? a.get() : OffsetsListing{zk::Error::OperationTimeout, {}, {}};
  }
  protocol::FetchOffsetsResponse fetch(const std::string& group, std::vector<std::string> topics = {}) {
    Answer<protocol::FetchOffsetsResponse> a;
    store_.fetch(protocol::FetchOffsetsRequest{group, std::move(topics)}, a.callback());
    settle();
    EXPECT_TRUE(a.ready());
    return a.ready() ? a.get() : protocol::FetchOffsetsResponse{{}, ErrorCode::UNKNOWN_SERVER_ERROR};
  }

  zk::FakeEnsemble ensemble_;
  zk::FakeClient admin_;
  zk::FakeClient zk_;
  layout::Layout layout_{kRoot};
  OffsetStore store_;
};

TEST_F(OffsetStoreTest, ReadReturnsTheOffsetsWrittenUnderTheGroup) {
  makeGroup();
  auto r = read({});
  EXPECT_EQ(r.error, zk::Error::Ok);
  EXPECT_EQ(r.offsets, (std::map<TopicPartition, int64_t>{{{"t", 0}, 12}, {{"t", 1}, 7}, {{"u", 0}, 3}}));
  EXPECT_EQ(r.topics, (std::set<std::string>{"empty", "t", "u"}));
}

TEST_F(OffsetStoreTest, ReadOfSomeTopicsReadsOnlyThose) {
  makeGroup();
  auto r = read({"t", "missing"});
  EXPECT_EQ(r.error, zk::Error::Ok);
  EXPECT_EQ(r.offsets, (std::map<TopicPartition, int64_t>{{{"t", 0}, 12}, {{"t", 1}, 7}}));
  EXPECT_EQ(r.topics, (std::set<std::string>{"t"}));
}

TEST_F(OffsetStoreTest, ReadOfAGroupWithoutOffsetsZnodeIsNoNode) {
  auto r = read({});
  EXPECT_EQ(r.error, zk::Error::NoNode);
  EXPECT_TRUE(r.offsets.empty());
}

TEST_F(OffsetStoreTest, ReadOfAGroupWithNoOffsetsYetIsEmpty) {
  put(layout_.offsetsPath("g"));
  auto r = read({});
  EXPECT_EQ(r.error, zk::Error::Ok);
  EXPECT_TRUE(r.offsets.empty());
  EXPECT_TRUE(r.topics.empty());
}

TEST_F(OffsetStoreTest, AFailedReadReportsItsError) {
  makeGroup();
  zk_.failNext(zk::Error::ConnectionLoss);
  auto r = read({});
  EXPECT_EQ(r.error, zk::Error::ConnectionLoss);
}

TEST_F(OffsetStoreTest, ListNamesEveryZnodeBelowTheOffsetsZnode) {
  makeGroup();
  auto l = list("g");
  EXPECT_EQ(l.error, zk::Error::Ok);
  std::sort(l.leaves.begin(), l.leaves.end());
  std::sort(l.topics.begin(), l.topics.end());
  EXPECT_EQ(l.leaves, (std::vector<std::string>{"/gc/groups/g/offsets/t/0", "/gc/groups/g/offsets/t/1",
                                                "/gc/groups/g/offsets/u/0", "/gc/groups/g/offsets/u/1",
                                                "/gc/groups/g/offsets/u/x"}));
  EXPECT_EQ(l.topics, (std::vector<std::string>{"/gc/groups/g/offsets/empty", "/gc/groups/g/offsets/t",
                                                "/gc/groups/g/offsets/u"}));
}

TEST_F(OffsetStoreTest, ListOfAGroupWithoutOffsetsZnodeIsNoNode) {
  EXPECT_EQ(list("g").error, zk::Error::NoNode);
}

TEST_F(OffsetStoreTest, WriteOpsCreateAMissingTopicZnodeOnceAndTheLastValueWins) {
  put(layout_.offsetsPath("g"));
  CommittedOffsets known;
  std::vector<zk::Op> ops;
  store_.writeOps("g", known, {{"t", 0, 5}, {"t", 1, 6}, {"t", 0, 9}}, ops);
  ASSERT_EQ(ops.size(), 3u);
  auto* dir = std::get_if<zk::CreateOp>(&ops[0]);
  ASSERT_NE(dir, nullptr);
  EXPECT_EQ(dir->path, "/gc/groups/g/offsets/t");
  size_t topicCreates = 0;
  for (auto& op : ops)
    if (auto* c = std::get_if<zk::CreateOp>(&op); c && c->path == "/gc/groups/g/offsets/t") ++topicCreates;
  EXPECT_EQ(topicCreates, 1u);
  ASSERT_EQ(admin_.multiSync(ops).error, zk::Error::Ok) << "the ops apply as one transaction";
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/t/0"), "9");
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/t/1"), "6");
  auto r = read({});
  EXPECT_EQ(r.offsets, (std::map<TopicPartition, int64_t>{{{"t", 0}, 9}, {{"t", 1}, 6}}));
}

TEST_F(OffsetStoreTest, WriteOpsOverwriteKnownOffsetsAndCreateNewOnes) {
  makeGroup();
  CommittedOffsets known;
  known.offsets = read({}).offsets;
  known.topics = {"t", "u", "empty"};
  known.loaded = true;
  std::vector<zk::Op> ops;
  store_.writeOps("g", known, {{"t", 0, 100}, {"t", 2, 1}, {"v", 0, 2}}, ops);
  // t/0 set, t/2 created, v created with v/0.
  ASSERT_EQ(ops.size(), 4u);
  size_t sets = 0, creates = 0;
  for (auto& op : ops) {
    sets += std::holds_alternative<zk::SetDataOp>(op);
    creates += std::holds_alternative<zk::CreateOp>(op);
  }
  EXPECT_EQ(sets, 1u);
  EXPECT_EQ(creates, 3u);
  ASSERT_EQ(admin_.multiSync(ops).error, zk::Error::Ok);
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/t/0"), "100");
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/t/2"), "1");
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/v/0"), "2");
}

TEST_F(OffsetStoreTest, FetchAnswersTheCommittedOffsets) {
  makeGroup();
  auto f = fetch("g");
  EXPECT_EQ(f.error, ErrorCode::NONE);
  EXPECT_EQ(f.offsets, (std::vector<protocol::PartitionOffset>{{"t", 0, 12}, {"t", 1, 7}, {"u", 0, 3}}));
  auto some = fetch("g", {"u"});
  EXPECT_EQ(some.offsets, (std::vector<protocol::PartitionOffset>{{"u", 0, 3}}));
}

TEST_F(OffsetStoreTest, WriteOpsStoreMetadataAfterTheOffsetAndReadsReturnIt) {
  makeGroup();
  CommittedOffsets known;
  known.offsets = read({}).offsets;
  known.topics = {"t", "u", "empty"};
  std::vector<zk::Op> ops;
  // t/0 overwritten with metadata, t/1 overwritten without, w/0 created with metadata.
  store_.writeOps("g", known, {{"t", 0, 13}, {"t", 1, 8}, {"w", 0, 4}}, ops,
                  {{{"t", 0}, "host-a\nline two"}, {{"w", 0}, "m"}});
  ASSERT_EQ(admin_.multiSync(ops).error, zk::Error::Ok);
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/t/0"), "13\nhost-a\nline two");
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/t/1"), "8");
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/w/0"), "4\nm");
  auto r = read({});
  EXPECT_EQ(r.offsets.at({"t", 0}), 13);
  EXPECT_EQ(r.offsets.at({"w", 0}), 4);
  EXPECT_EQ(r.metadata, (std::map<TopicPartition, std::string>{{{"t", 0}, "host-a\nline two"}, {{"w", 0}, "m"}}));
  // Native FetchOffsets answers the offsets only, as before.
  auto f = fetch("g", {"t", "w"});
  EXPECT_EQ(f.offsets, (std::vector<protocol::PartitionOffset>{{"t", 0, 13}, {"t", 1, 8}, {"w", 0, 4}}));
  // A later commit without metadata replaces it.
  known.offsets = r.offsets;
  known.topics.insert("w");
  ops.clear();
  store_.writeOps("g", known, {{"t", 0, 14}}, ops);
  ASSERT_EQ(admin_.multiSync(ops).error, zk::Error::Ok);
  EXPECT_EQ(ensemble_.data("/gc/groups/g/offsets/t/0"), "14");
  EXPECT_EQ(read({"t"}).metadata.count({"t", 0}), 0u);
}

TEST_F(OffsetStoreTest, FetchOfAMissingGroupIsUnknownGroup) {
  EXPECT_EQ(fetch("nope").error, ErrorCode::UNKNOWN_GROUP);
}

TEST_F(OffsetStoreTest, FetchOfAGroupWithoutOffsetsZnodeIsEmpty) {
  put(layout_.groupPath("old"));
  auto f = fetch("old");
  EXPECT_EQ(f.error, ErrorCode::NONE);
  EXPECT_TRUE(f.offsets.empty());
}

TEST_F(OffsetStoreTest, CommittedOffsetsRememberWhatWasWritten) {
  CommittedOffsets c;
  EXPECT_EQ(c.of({"t", 0}), -1);
  c.apply({{"t", 0, 5}, {"u", 3, 8}});
  c.apply({{"t", 0, 6}});
  EXPECT_EQ(c.of({"t", 0}), 6);
  EXPECT_EQ(c.of({"u", 3}), 8);
  EXPECT_EQ(c.of({"u", 0}), -1);
  EXPECT_EQ(c.topics, (std::set<std::string>{"t", "u"}));
}

TEST(OffsetParsing, AcceptsDecimalNonNegativeNumbers) {
  EXPECT_EQ(parseOffset("0"), 0);
  EXPECT_EQ(parseOffset("42"), 42);
  EXPECT_EQ(parseOffset("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(parsePartition("0"), 0);
  EXPECT_EQ(parsePartition("17"), 17);
}

TEST(OffsetParsing, RejectsNegativesTrailingJunkAndEmptyText) {
  for (const char* bad : {"-1", "1x", "", " 1", "1 ", "+1", "0x10", "9223372036854775808"}) {
    EXPECT_FALSE(parseOffset(bad).has_value()) << "'" << bad << "'";
  }
  for (const char* bad : {"-1", "1x", "", "2147483648", "x"}) {
    EXPECT_FALSE(parsePartition(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(OffsetParsing, AnOffsetMayBeFollowedByANewlineAndItsMetadata) {
  EXPECT_EQ(parseOffset("42\nsome metadata"), 42);
  EXPECT_EQ(parseOffset("42\n"), 42);
  EXPECT_EQ(parseStoredOffset("42"), (StoredOffset{42, ""}));
  EXPECT_EQ(parseStoredOffset("42\n"), (StoredOffset{42, ""}));
  EXPECT_EQ(parseStoredOffset("7\na\nb"), (StoredOffset{7, "a\nb"}));
  for (const char* bad : {"", "\nm", "-1\nm", "1x\nm", " 1\nm"}) {
    EXPECT_FALSE(parseOffset(bad).has_value()) << "'" << bad << "'";
    EXPECT_FALSE(parseStoredOffset(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(OffsetParsing, EncodingWritesTheNewlineOnlyForMetadata) {
  EXPECT_EQ(encodeOffset(5), "5");
  EXPECT_EQ(encodeOffset(5, ""), "5");
  EXPECT_EQ(encodeOffset(5, "m"), "5\nm");
  const std::string binaryish = std::string("x\0\ny", 4);
  for (const auto& m : {std::string(), std::string("meta"), std::string("a\nb\n"), binaryish,
                        std::string(kMaxOffsetMetadataBytes, 'z')}) {
    auto back = parseStoredOffset(encodeOffset(123456789012LL, m));
    ASSERT_TRUE(back.has_value()) << m;
    EXPECT_EQ(back->offset, 123456789012LL);
    EXPECT_EQ(back->metadata, m);
  }
}

}  // namespace
}  // namespace groupcoord::adapter
