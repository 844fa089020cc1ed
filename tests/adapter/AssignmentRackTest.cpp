// Rack-aware assignment (docs/design.md, "Assignment"): the in-rack share with
// racks against without, the balance rules and stickiness exactly as without
// racks, inputs without racks exactly as the overload without RackInfo, and
// determinism.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <tuple>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "adapter/Assignment.h"

namespace groupcoord::adapter {
namespace {

using protocol::TopicPartition;
using Topics = std::map<std::string, int32_t>;

// Complete, disjoint, balanced per topic and in total; "" when all hold.
std::string balanceViolation(const std::vector<std::string>& members, const Topics& topics, const Assignment& a) {
  const std::set<std::string> ids(members.begin(), members.end());
  if (a.size() != ids.size()) return "not one entry per member";
  std::set<TopicPartition> seen;
  std::map<std::string, std::map<std::string, int>> perTopic;
  size_t lo = SIZE_MAX, hi = 0;
  for (const auto& [member, held] : a) {
    if (!ids.count(member)) return "unknown member " + member;
    lo = std::min(lo, held.size());
    hi = std::max(hi, held.size());
    for (const auto& tp : held) {
      auto t = topics.find(tp.topic);
      if (t == topics.end() || tp.partition < 0 || tp.partition >= t->second) return "partition that does not exist";
      if (!seen.insert(tp).second) return "assigned twice: " + tp.topic + "/" + std::to_string(tp.partition);
      ++perTopic[tp.topic][member];
    }
  }
  size_t total = 0;
  for (const auto& [_, count] : topics) total += count > 0 ? static_cast<size_t>(count) : 0;
  if (seen.size() != total) return "incomplete";
  if (hi - lo > 1) return "totals unbalanced";
  for (const auto& [topic, holders] : perTopic) {
    int tlo = holders.size() < ids.size() ? 0 : INT32_MAX, thi = 0;
    for (const auto& [_, c] : holders) {
      tlo = std::min(tlo, c);
      thi = std::max(thi, c);
    }
    if (thi - tlo > 1) return "topic " + topic + " unbalanced";
  }
  return "";
}

// Each member's count of each topic, sorted per topic, and the totals
// sorted: the shape the balance rules fix, whoever the members are.
std::map<std::string, std::vector<size_t>> countShape(const Assignment& a) {
  std::map<std::string, std::map<std::string, size_t>> perTopic;
  std::vector<size_t> totals;
  for (const auto& [member, held] : a) {
    totals.push_back(held.size());
    for (const auto& tp : held) ++perTopic[tp.topic][member];
  }
  std::map<std::string, std::vector<size_t>> shape;
  for (auto& [topic, holders] : perTopic) {
    auto& v = shape[topic];
    for (auto& [_, c] : holders) v.push_back(c);
    v.resize(a.size(), 0);  // members holding none of the topic
    std::sort(v.begin(), v.end());
  }
  std::sort(totals.begin(), totals.end());
  shape[""] = totals;
  return shape;
}

// Three racks, three members in each: member-0 to member-2 in eu-1a, and so on.
const std::vector<std::string> kRacks = {"eu-1a", "eu-1b", "eu-1c"};

std::vector<std::string> nineMembers() {
  std::vector<std::string> m;
  for (int i = 0; i < 9; ++i) m.push_back("member-" + std::to_string(i));
  return m;
}

std::map<std::string, std::string> rackOfEach(const std::vector<std::string>& members) {
  std::map<std::string, std::string> racks;
  for (size_t i = 0; i < members.size(); ++i) racks[members[i]] = kRacks[(i / 3) % kRacks.size()];
  return racks;
}

// Replicas as Kafka places them, round robin over brokers one per rack in
// turn: partition p of a topic with offset s and replication factor rf sits
// in racks s+p, s+p+1, ... (mod 3).
std::vector<std::set<std::string>> roundRobin(int32_t partitions, int offset, int rf) {
  std::vector<std::set<std::string>> out(static_cast<size_t>(partitions));
  for (int32_t p = 0; p < partitions; ++p) {
    for (int i = 0; i < rf; ++i) out[p].insert(kRacks[static_cast<size_t>(offset + p + i) % kRacks.size()]);
  }
  return out;
}

struct RandomInput {
  std::vector<std::string> members;
  Topics topics;
  Assignment previous;
  RackInfo racks;
};

// Members and topics drawn at random; previous is the assignment of an
// earlier membership (some members gone, some new) with some noise, so
// stickiness has something to keep; racks on some members and partitions.
RandomInput randomInput(std::mt19937& rng, bool withRacks) {
  RandomInput in;
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int nTopics = pick(1, 6);
  for (int t = 0; t < nTopics; ++t) in.topics["t" + std::to_string(t)] = pick(0, 25);
  std::vector<std::string> before;
  for (int i = 0; i < 12; ++i) {
    const std::string id = "m" + std::to_string(i);
    if (pick(0, 3) > 0) in.members.push_back(id);
    if (pick(0, 3) > 0) before.push_back(id);
  }
  if (in.members.empty()) in.members.push_back("m0");
  if (!before.empty()) in.previous = assignPartitions(before, in.topics, {});
  if (pick(0, 2) == 0 && !in.previous.empty()) {
    auto it = in.previous.begin();
    std::advance(it, pick(0, static_cast<int>(in.previous.size()) - 1));
    it->second.push_back({"t0", pick(0, 30)});  // a claim that may be out of range or doubled
  }
  if (!withRacks) return in;
  for (const auto& m : in.members) {
    const int r = pick(0, 3);
    if (r < 3) in.racks.members[m] = kRacks[r];  // 3: no rack
  }
  for (const auto& [topic, count] : in.topics) {
    if (pick(0, 4) == 0) continue;  // a topic without replica racks
    in.racks.replicas[topic] = roundRobin(std::max(0, count - pick(0, 2)), pick(0, 2), pick(1, 2));
  }
  return in;
}

// ---------------------------------------------------------------- the figure

TEST(AssignmentRacks, InRackShareIsClearlyHigherWithRacks) {
  const auto members = nineMembers();
  RackInfo racks;
  racks.members = rackOfEach(members);
  // Topics of different sizes, replication factor 1 or 2, replicas placed
  // round robin over the racks from different offsets.
  const std::vector<std::tuple<std::string, int32_t, int, int>> spec = {
      {"orders", 12, 0, 2}, {"clicks", 30, 1, 1}, {"payments", 5, 2, 2}, {"audit", 3, 0, 1},
      {"metrics", 16, 1, 2}, {"logs", 40, 2, 1},  {"sessions", 7, 0, 1}, {"emails", 1, 1, 1}};
  Topics topics;
  size_t total = 0;
  for (const auto& [name, count, offset, rf] : spec) {
    topics[name] = count;
    racks.replicas[name] = roundRobin(count, offset, rf);
    total += static_cast<size_t>(count);
  }

  const Assignment without = assignPartitions(members, topics, {});
  const Assignment with = assignPartitions(members, topics, {}, racks);
  ASSERT_EQ(balanceViolation(members, topics, with), "");
  EXPECT_EQ(countShape(with), countShape(without)) << "racks change who gets what, never how many";

  const size_t inWith = countInRack(with, racks);
  const size_t inWithout = countInRack(without, racks);
  const double shareWith = 100.0 * static_cast<double>(inWith) / static_cast<double>(total);
  const double shareWithout = 100.0 * static_cast<double>(inWithout) / static_cast<double>(total);
  std::cout << std::fixed << std::setprecision(1) << "[figure] in-rack share with racks: " << shareWith << "% (" << inWith << " of " << total
            << "); without racks: " << shareWithout << "% (" << inWithout << " of " << total << ")\n";
  EXPECT_GE(shareWith, shareWithout + 20.0);

  // A member joins and one leaves: no more moves than without racks, and
  // the share stays clearly higher.
  std::vector<std::string> next(members.begin() + 1, members.end());
  next.push_back("member-9");
  racks.members["member-9"] = kRacks[0];
  const Assignment nextWith = assignPartitions(next, topics, with, racks);
  const Assignment nextWithout = assignPartitions(next, topics, with);
  ASSERT_EQ(balanceViolation(next, topics, nextWith), "");
  EXPECT_EQ(countMoves(with, nextWith), countMoves(with, nextWithout));
  EXPECT_GE(countInRack(nextWith, racks), countInRack(nextWithout, racks));
  const size_t inNext = countInRack(nextWith, racks);
  EXPECT_GE(100.0 * static_cast<double>(inNext) / static_cast<double>(total), shareWithout + 20.0);
  const size_t freshWithout = countInRack(assignPartitions(next, topics, {}), racks);
  std::cout << "[figure] after a join and a leave: " << inNext << " of " << total << " in-rack, "
            << countMoves(with, nextWith) << " moves (without racks from scratch: " << freshWithout << " of "
            << total << ")\n";
}

TEST(AssignmentRacks, EveryPartitionInRackWhenTheRacksAllowIt) {
  // Nine partitions, replication factor 1, three in each rack; three members
  // in each rack: each member gets one partition of its own rack.
  const auto members = nineMembers();
  RackInfo racks;
  racks.members = rackOfEach(members);
  racks.replicas["t"] = roundRobin(9, 0, 1);
  const Assignment a = assignPartitions(members, {{"t", 9}}, {}, racks);
  ASSERT_EQ(balanceViolation(members, {{"t", 9}}, a), "");
  EXPECT_EQ(countInRack(a, racks), 9u);
  // Without racks the same input places only some of them in-rack.
  EXPECT_LT(countInRack(assignPartitions(members, {{"t", 9}}, {}), racks), 9u);
}

TEST(AssignmentRacks, ExtrasGoToTheRackHoldingTheReplicas) {
  // One partition for nine members: the extra decides who gets it.
  const auto members = nineMembers();
  RackInfo racks;
  racks.members = rackOfEach(members);
  for (const auto& rack : kRacks) {
    racks.replicas["single"] = {{rack}};
    const Assignment a = assignPartitions(members, {{"single", 1}}, {}, racks);
    EXPECT_EQ(countInRack(a, racks), 1u) << rack;
  }
}

// ---------------------------------------------------------------- stickiness first

TEST(AssignmentRacks, AHeldPartitionIsNeverMovedForLocality) {
  // member-0 (rack eu-1a) holds partition 0, whose only replica is in
  // eu-1b; member-1 (eu-1b) holds nothing yet. Moving it would be in-rack
  // and still balanced, but stickiness comes first.
  const std::vector<std::string> members = {"member-0", "member-1"};
  RackInfo racks;
  racks.members = {{"member-0", "eu-1a"}, {"member-1", "eu-1b"}};
  racks.replicas["t"] = {{"eu-1b"}, {"eu-1a"}};
  const Assignment previous = {{"member-0", {{"t", 0}}}};
  const Assignment a = assignPartitions(members, {{"t", 2}}, previous, racks);
  EXPECT_EQ(a.at("member-0"), (std::vector<TopicPartition>{{"t", 0}}));
  EXPECT_EQ(a.at("member-1"), (std::vector<TopicPartition>{{"t", 1}}));
  EXPECT_EQ(countInRack(a, racks), 0u);
}

TEST(AssignmentRacks, OfWhatMustGoAMemberKeepsItsInRackPartitionsFirst) {
  // member-0 (eu-1a) held all four partitions; with a second member it keeps
  // two: those whose replicas are in eu-1a, not the lowest numbers.
  const std::vector<std::string> members = {"member-0", "member-1"};
  RackInfo racks;
  racks.members = {{"member-0", "eu-1a"}, {"member-1", "eu-1b"}};
  racks.replicas["t"] = {{"eu-1b"}, {"eu-1b"}, {"eu-1a"}, {"eu-1a"}};
  const Assignment previous = {{"member-0", {{"t", 0}, {"t", 1}, {"t", 2}, {"t", 3}}}};
  const Assignment a = assignPartitions(members, {{"t", 4}}, previous, racks);
  EXPECT_EQ(a.at("member-0"), (std::vector<TopicPartition>{{"t", 2}, {"t", 3}}));
  EXPECT_EQ(a.at("member-1"), (std::vector<TopicPartition>{{"t", 0}, {"t", 1}}));
  EXPECT_EQ(countMoves(previous, a), 2u);
  // Without racks: the same number of moves, the lowest numbers kept.
  const Assignment plain = assignPartitions(members, {{"t", 4}}, previous);
  EXPECT_EQ(plain.at("member-0"), (std::vector<TopicPartition>{{"t", 0}, {"t", 1}}));
  EXPECT_EQ(countMoves(previous, plain), 2u);
}

// countMoves walks both assignments once; here it is checked against the
// plain definition (an index of every partition's first claimer), over
// inputs with doubled and out-of-range claims, from scratch and sticky.
size_t movesByIndex(const Assignment& before, const Assignment& after) {
  std::map<TopicPartition, std::string> owner;
  for (const auto& [member, held] : before) {
    for (const auto& tp : held) owner.emplace(tp, member);  // map order: the smallest id
  }
  size_t moves = 0;
  for (const auto& [member, held] : after) {
    for (const auto& tp : held) {
      auto it = owner.find(tp);
      if (it != owner.end() && it->second != member) ++moves;
    }
  }
  return moves;
}

TEST(AssignmentRacks, CountMovesIsThePlainDefinition) {
  std::mt19937 rng(20261207);
  size_t nonZero = 0;
  for (int i = 0; i < 2000; ++i) {
    const RandomInput in = randomInput(rng, i % 2 == 0);
    const Assignment sticky = assignPartitions(in.members, in.topics, in.previous, in.racks);
    const Assignment fresh = assignPartitions(in.members, in.topics, {});
    ASSERT_EQ(countMoves(in.previous, sticky), movesByIndex(in.previous, sticky)) << "input " << i;
    ASSERT_EQ(countMoves(in.previous, fresh), movesByIndex(in.previous, fresh)) << "input " << i;
    nonZero += movesByIndex(in.previous, fresh) > 0 ? 1 : 0;
  }
  EXPECT_GT(nonZero, 100u);  // the inputs do move partitions
}

TEST(AssignmentRacks, RandomInputsKeepBalanceAndExactStickiness) {
  std::mt19937 rng(17);
  size_t inWith = 0, inWithout = 0;
  for (int i = 0; i < 3000; ++i) {
    const RandomInput in = randomInput(rng, true);
    const Assignment with = assignPartitions(in.members, in.topics, in.previous, in.racks);
    const Assignment without = assignPartitions(in.members, in.topics, in.previous);
    ASSERT_EQ(balanceViolation(in.members, in.topics, with), "") << "input " << i;
    ASSERT_EQ(countShape(with), countShape(without)) << "input " << i;
    ASSERT_EQ(countMoves(in.previous, with), countMoves(in.previous, without)) << "input " << i;
    inWith += countInRack(with, in.racks);
    inWithout += countInRack(without, in.racks);
  }
  EXPECT_GT(inWith, inWithout);
}

// ---------------------------------------------------------------- without racks, as before

TEST(AssignmentRacks, InputsWithoutRacksGiveTheOldAssignment) {
  std::mt19937 rng(4711);
  for (int i = 0; i < 3000; ++i) {
    const RandomInput in = randomInput(rng, true);
    const Assignment old = assignPartitions(in.members, in.topics, in.previous);
    ASSERT_EQ(assignPartitions(in.members, in.topics, in.previous, RackInfo{}), old) << "input " << i;
    // Members with racks, partitions without.
    RackInfo membersOnly;
    membersOnly.members = in.racks.members;
    ASSERT_EQ(assignPartitions(in.members, in.topics, in.previous, membersOnly), old) << "input " << i;
    // Partitions with racks, members without (or with "").
    RackInfo replicasOnly;
    replicasOnly.replicas = in.racks.replicas;
    for (const auto& m : in.members) replicasOnly.members[m] = "";
    ASSERT_EQ(assignPartitions(in.members, in.topics, in.previous, replicasOnly), old) << "input " << i;
    // Racks on both sides, but none in common.
    RackInfo disjoint = in.racks;
    for (auto& [_, rack] : disjoint.members) rack = "elsewhere-" + rack;
    ASSERT_EQ(assignPartitions(in.members, in.topics, in.previous, disjoint), old) << "input " << i;
  }
}

TEST(AssignmentRacks, Deterministic) {
  std::mt19937 rng(99);
  for (int i = 0; i < 500; ++i) {
    RandomInput in = randomInput(rng, true);
    const Assignment first = assignPartitions(in.members, in.topics, in.previous, in.racks);
    ASSERT_EQ(assignPartitions(in.members, in.topics, in.previous, in.racks), first) << "input " << i;
    std::shuffle(in.members.begin(), in.members.end(), rng);
    ASSERT_EQ(assignPartitions(in.members, in.topics, in.previous, in.racks), first)
        << "member order changed the result, input " << i;
  }
}

TEST(AssignmentRacks, CountInRack) {
  RackInfo racks;
  racks.members = {{"a", "r1"}, {"b", ""}, {"c", "r2"}};
  racks.replicas["t"] = {{"r1", "r2"}, {"r2"}};
  const Assignment a = {{"a", {{"t", 0}, {"t", 1}, {"u", 0}}}, {"b", {{"t", 0}}}, {"c", {{"t", 1}, {"t", 7}}}};
  EXPECT_EQ(countInRack(a, racks), 2u);  // a's t/0 and c's t/1
}

TEST(AssignmentRacks, ThousandMembersInThreeRacksIsFast) {
  struct Shape {
    const char* name;
    int topics;
    int partitions;
  };
  std::vector<std::string> members;
  RackInfo racks;
  for (int i = 0; i < 1000; ++i) {
    members.push_back("member-" + std::to_string(i));
    racks.members[members.back()] = kRacks[static_cast<size_t>(i) % kRacks.size()];
  }
  for (const Shape& s : {Shape{"8 topics x 1250", 8, 1250}, Shape{"1000 topics x 10", 1000, 10},
                         Shape{"10000 topics x 1", 10000, 1}}) {
    Topics topics;
    racks.replicas.clear();
    for (int t = 0; t < s.topics; ++t) {
      const std::string name = "topic-" + std::to_string(t);
      topics[name] = s.partitions;
      racks.replicas[name] = roundRobin(s.partitions, t % 3, 1 + t % 2);
    }
    const auto start = std::chrono::steady_clock::now();
    const Assignment fresh = assignPartitions(members, topics, {}, racks);
    std::vector<std::string> rest(members.begin() + 1, members.end());
    const Assignment left = assignPartitions(rest, topics, fresh, racks);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(balanceViolation(members, topics, fresh), "") << s.name;
    ASSERT_EQ(balanceViolation(rest, topics, left), "") << s.name;
    EXPECT_EQ(countMoves(fresh, left), countMoves(fresh, assignPartitions(rest, topics, fresh))) << s.name;
    size_t total = 0;
    for (const auto& [_, n] : topics) total += static_cast<size_t>(n);
    // A measure of speed: reported, not asserted (tests/README.md, Time in
    // tests); bench/ measures the targets.
    std::cout << "[figure] speed with racks, 1000 members, " << s.name << ": fresh + leave " << ms << " ms; in-rack "
              << countInRack(fresh, racks) << " of " << total << " (without racks "
              << countInRack(assignPartitions(members, topics, {}), racks) << ")\n";
  }
}

}  // namespace
}  // namespace groupcoord::adapter
