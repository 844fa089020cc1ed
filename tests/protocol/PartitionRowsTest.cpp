// The one builder of a DescribeGroup answer's partition rows
// (protocol/PartitionRows.h): every partition once, sorted, with its
// holder, the member waiting for it and its committed offset.

#include <gtest/gtest.h>

#include "protocol/PartitionRows.h"

namespace groupcoord::protocol {
namespace {

DescribeGroupResponse answer() {
  DescribeGroupResponse d;
  d.group = "orders";
  d.topics = {{"payments", 1}, {"orders", 3}, {"gone", -1}};
  MemberState a;
  a.consumerId = "m-1";
  a.held = {{"orders", 2}, {"orders", 0}};
  MemberState b;
  b.consumerId = "m-2";
  b.held = {{"payments", 0}};
  b.waiting = {{"orders", 2}};
  // A partition outside the topics' counts (the topic shrank meanwhile).
  b.waiting.push_back({"orders", 5});
  d.members = {a, b};
  d.offsets = {{"orders", 0, 42}, {"archive", 0, 7}};
  return d;
}

TEST(PartitionRowsTest, OneRowPerPartitionSortedByTopicThenPartition) {
  const auto d = answer();
  const auto rows = partitionRows(d);
  std::vector<TopicPartition> order;
  for (const auto& r : rows) order.push_back(r.partition);
  EXPECT_EQ(order, (std::vector<TopicPartition>{
                       {"archive", 0}, {"orders", 0}, {"orders", 1}, {"orders", 2}, {"orders", 5}, {"payments", 0}}));
}

TEST(PartitionRowsTest, EachRowHasItsHolderWaitingMemberAndOffset) {
  const auto d = answer();
  const auto rows = partitionRows(d);
  ASSERT_EQ(rows.size(), 6u);
  const PartitionRow& archive = rows[0];  // only an offset
  EXPECT_EQ(archive.committed, 7);
  EXPECT_EQ(archive.owner, nullptr);
  EXPECT_EQ(archive.waiting, nullptr);
  const PartitionRow& o0 = rows[1];
  EXPECT_EQ(o0.committed, 42);
  EXPECT_EQ(o0.owner, &d.members[0]);
  EXPECT_EQ(o0.waiting, nullptr);
  const PartitionRow& o1 = rows[2];  // nobody's, nothing committed
  EXPECT_EQ(o1.committed, -1);
  EXPECT_EQ(o1.owner, nullptr);
  EXPECT_EQ(o1.waiting, nullptr);
  const PartitionRow& o2 = rows[3];  // moving from m-1 to m-2
  EXPECT_EQ(o2.owner, &d.members[0]);
  EXPECT_EQ(o2.waiting, &d.members[1]);
  const PartitionRow& o5 = rows[4];
  EXPECT_EQ(o5.owner, nullptr);
  EXPECT_EQ(o5.waiting, &d.members[1]);
  const PartitionRow& p0 = rows[5];
  EXPECT_EQ(p0.owner, &d.members[1]);
  EXPECT_EQ(p0.committed, -1);
}

TEST(PartitionRowsTest, AnEmptyGroupHasNoRows) {
  DescribeGroupResponse d;
  d.topics = {{"gone", -1}, {"empty", 0}};
  EXPECT_TRUE(partitionRows(d).empty());
}

TEST(PartitionRowsTest, HostPortBracketsAnIpv6Host) {
  EXPECT_EQ(hostPort("10.0.0.1", 5000), "10.0.0.1:5000");
  EXPECT_EQ(hostPort("::1", 5000), "[::1]:5000");
  EXPECT_EQ(hostPort("", 5000), "");
}

}  // namespace
}  // namespace groupcoord::protocol
