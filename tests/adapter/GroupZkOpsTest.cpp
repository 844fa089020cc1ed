// The ZooKeeper operations of a controlled group, built from data, and the
// one reading of a transaction's answer (docs/design.md, "The group model").
// Pure: no ZooKeeper is asked anything here.

#include "adapter/GroupZkOps.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "zk/FakeClient.h"

namespace groupcoord::adapter {
namespace {

using zkops::TxnOutcome;

const layout::Layout kLayout("/gc");
const std::string kGroup = "orders";
zkops::GroupPaths paths() { return {kLayout, kGroup}; }

template <class T>
const T& as(const zk::Op& op) {
  EXPECT_TRUE(std::holds_alternative<T>(op));
  return std::get<T>(op);
}

std::string pathOf(const zk::Op& op) {
  return std::visit([](const auto& o) { return o.path; }, op);
}

protocol::RebalanceEvent event(int64_t generation, std::string detail) {
  protocol::RebalanceEvent e;
  e.generation = generation;
  e.detail = std::move(detail);
  return e;
}

struct Offsets {
  zk::FakeEnsemble ensemble;
  zk::FakeClient client{ensemble};
  OffsetStore store{client, kLayout};
};

TEST(GroupZkOps, ABatchRemovesCreatesRewindsWritesTheHistoryAndMovesTheVersionLast) {
  Offsets o;
  const std::vector<std::string> removed{"m-old"};
  const std::vector<std::pair<std::string, std::string>> joined{{"m-1", "client-a"}, {"m-2", "client-b"}};
  const std::vector<protocol::PartitionOffset> rewound{{"t", 0, 42}};
  CommittedOffsets committed;  // offsets/t does not exist yet
  const std::string settings = "{\"sessionTimeoutMs\":10000}";
  const auto ops = zkops::batchOps(paths(), o.store,
                                   {removed, joined, rewound, committed, {7, {event(4, "joined")}}, false, settings, 3});

  ASSERT_GE(ops.size(), 6u);
  EXPECT_EQ(as<zk::RemoveOp>(ops[0]).path, "/gc/groups/orders/members/m-old");
  const auto& c1 = as<zk::CreateOp>(ops[1]);
  EXPECT_EQ(c1.path, "/gc/groups/orders/members/m-1");
  EXPECT_EQ(c1.mode, zk::CreateMode::Ephemeral);
  EXPECT_EQ(c1.data, layout::encodeMember("client-a"));
  EXPECT_EQ(as<zk::CreateOp>(ops[2]).path, "/gc/groups/orders/members/m-2");
  // The rewound offset, with the topic znode it needs, before the history.
  ASSERT_EQ(ops.size(), 7u);
  EXPECT_EQ(as<zk::CreateOp>(ops[3]).path, "/gc/groups/orders/offsets/t");
  const auto& offset = as<zk::CreateOp>(ops[4]);
  EXPECT_EQ(offset.path, "/gc/groups/orders/offsets/t/0");
  EXPECT_EQ(offset.data, "42");
  const auto& history = as<zk::CreateOp>(ops[ops.size() - 2]);
  EXPECT_EQ(history.path, "/gc/groups/orders/history");
  const auto decoded = layout::decodeHistory(history.data);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->controller, 7);
  ASSERT_EQ(decoded->events.size(), 1u);
  EXPECT_EQ(decoded->events[0].detail, "joined");
  const auto& group = as<zk::SetDataOp>(ops.back());
  EXPECT_EQ(group.path, "/gc/groups/orders");
  EXPECT_EQ(group.data, settings) << "the settings are rewritten as they are, to move the version";
  EXPECT_EQ(group.version, 3);
}

TEST(GroupZkOps, TheHistoryIsASetDataOnceItExistsAndDropsItsOldestEventsPastAQuarterOfTheLimit) {
  layout::HistoryRecord record{1, {}};
  const std::string big(zk::kMaxDataSize / 16, 'x');
  for (int i = 0; i < 8; ++i) record.events.push_back(event(i, big));
  const auto op = zkops::historyOp(paths(), record, true);
  const auto& set = as<zk::SetDataOp>(op);
  EXPECT_EQ(set.path, "/gc/groups/orders/history");
  EXPECT_LE(set.data.size(), zk::kMaxDataSize / 4);
  const auto decoded = layout::decodeHistory(set.data);
  ASSERT_TRUE(decoded.has_value());
  ASSERT_FALSE(decoded->events.empty());
  EXPECT_LT(decoded->events.size(), 8u);
  EXPECT_EQ(decoded->events.back().generation, 7) << "the newest events are kept";
}

TEST(GroupZkOps, ADeletionRemovesTheSubtreeLeavesFirstAndTheGroupAtItsVersion) {
  OffsetsListing listing;
  listing.leaves = {"/gc/groups/orders/offsets/t/0", "/gc/groups/orders/offsets/t/1"};
  listing.topics = {"/gc/groups/orders/offsets/t"};
  const auto ops = zkops::deleteOps(paths(), listing, true, 9);
  std::vector<std::string> got;
  for (auto& op : ops) got.push_back(pathOf(op));
  const std::vector<std::string> want{"/gc/groups/orders/offsets/t/0", "/gc/groups/orders/offsets/t/1",
                                      "/gc/groups/orders/offsets/t",   "/gc/groups/orders/offsets",
                                      "/gc/groups/orders/members",     "/gc/groups/orders/history",
                                      "/gc/groups/orders/controller",  "/gc/groups/orders"};
  EXPECT_EQ(got, want);
  EXPECT_EQ(as<zk::RemoveOp>(ops.back()).version, 9);

  OffsetsListing none;
  none.error = zk::Error::NoNode;
  const auto bare = zkops::deleteOps(paths(), none, false, 2);
  ASSERT_EQ(bare.size(), 3u) << "no offsets znode, no history: members, controller, group";
  EXPECT_EQ(pathOf(bare[0]), "/gc/groups/orders/members");
}

layout::HandoverRecord handover(bool moved, size_t members, size_t clientIdBytes = 8) {
  layout::HandoverRecord r;
  r.from = 1;
  r.to = 2;
  r.generation = 5;
  r.cversion = 11;
  r.movedMembers = moved;
  for (size_t i = 0; i < members; ++i) {
    r.members["m-" + std::to_string(i)] = {std::string(clientIdBytes, 'c'), {{"t", static_cast<int32_t>(i)}}, {}};
  }
  return r;
}

TEST(GroupZkOps, AHandoverChecksTheVersionRecordsMovesTheMembersAndRemovesTheControllerLast) {
  const auto w = zkops::handoverOps(paths(), handover(true, 2), 5, layout::HistoryRecord{1, {event(5, "handover")}});
  EXPECT_TRUE(w.recorded);
  EXPECT_TRUE(w.movedMembers);
  EXPECT_GT(w.recordBytes, 0u);
  ASSERT_EQ(w.ops.size(), 6u);
  const auto& check = as<zk::CheckOp>(w.ops[0]);
  EXPECT_EQ(check.path, "/gc/groups/orders");
  EXPECT_EQ(check.version, 5);
  const auto& record = as<zk::SetDataOp>(w.ops[1]);
  EXPECT_EQ(record.path, "/gc/groups/orders/members");
  EXPECT_EQ(record.data, layout::encodeHandover(handover(true, 2)));
  EXPECT_EQ(as<zk::SetDataOp>(w.ops[2]).path, "/gc/groups/orders/history");
  EXPECT_EQ(as<zk::RemoveOp>(w.ops[3]).path, "/gc/groups/orders/members/m-0");
  EXPECT_EQ(as<zk::RemoveOp>(w.ops[4]).path, "/gc/groups/orders/members/m-1");
  EXPECT_EQ(as<zk::RemoveOp>(w.ops.back()).path, "/gc/groups/orders/controller");

  const auto kept = zkops::handoverOps(paths(), handover(false, 2), 5, std::nullopt);
  EXPECT_FALSE(kept.movedMembers);
  ASSERT_EQ(kept.ops.size(), 3u) << "members keep their znodes, no history write";
}

TEST(GroupZkOps, AHandoverRecordTooBigForAZnodeIsLeftOutAndTheMembersStay) {
  const auto w = zkops::handoverOps(paths(), handover(true, 64, zk::kMaxDataSize / 32), 5, std::nullopt);
  EXPECT_FALSE(w.recorded);
  EXPECT_FALSE(w.movedMembers);
  EXPECT_GT(w.recordBytes, zk::kMaxDataSize);
  ASSERT_EQ(w.ops.size(), 3u);
  EXPECT_TRUE(as<zk::SetDataOp>(w.ops[1]).data.empty());
}

TEST(GroupZkOps, AdoptingHandedOverMembersChecksTheVersionThenCreatesTheirEphemeralZnodes) {
  const auto ops = zkops::adoptOps(paths(), 5, {{"m-0", "a"}, {"m-1", "b"}});
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(as<zk::CheckOp>(ops[0]).version, 5);
  const auto& c = as<zk::CreateOp>(ops[2]);
  EXPECT_EQ(c.path, "/gc/groups/orders/members/m-1");
  EXPECT_EQ(c.mode, zk::CreateMode::Ephemeral);
  EXPECT_EQ(c.data, layout::encodeMember("b"));
}

zk::MultiResult result(zk::Error e, int failedOp = -1) {
  zk::MultiResult r;
  r.error = e;
  r.failedOp = failedOp;
  return r;
}

TEST(GroupZkOps, OneClassifierReadsEveryTransactionsAnswer) {
  EXPECT_EQ(zkops::classify(result(zk::Error::Ok), 4, 3), TxnOutcome::Applied);
  EXPECT_EQ(zkops::classify(result(zk::Error::ConnectionLoss), 4, 3), TxnOutcome::Unknown);
  EXPECT_EQ(zkops::classify(result(zk::Error::OperationTimeout), 4, 3), TxnOutcome::Unknown);
  EXPECT_EQ(zkops::classify(result(zk::Error::NoNode, 3), 5, 3), TxnOutcome::GroupGone);
  EXPECT_EQ(zkops::classify(result(zk::Error::NoNode, 4), 5, 0), TxnOutcome::LastGone);
  EXPECT_EQ(zkops::classify(result(zk::Error::NoNode, 1), 5, 0), TxnOutcome::Refused) << "a member znode missing";
  EXPECT_EQ(zkops::classify(result(zk::Error::BadVersion, 3), 4, 3), TxnOutcome::Refused);
  EXPECT_EQ(zkops::classify(result(zk::Error::NodeExists, 0), 4, 3), TxnOutcome::Refused);
}

}  // namespace
}  // namespace groupcoord::adapter
