// MemberLists: the shared member list of a generation, and the change
// from an older one (docs/protocol.md §16).

#include "adapter/MemberLists.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace groupcoord::adapter {
namespace {

using List = MemberLists::List;

List listOf(std::initializer_list<std::pair<const char*, const char*>> members) {
  List l;
  for (auto& [id, meta] : members) l.push_back(protocol::MemberMetadata{id, meta, ""});
  return l;
}

// The list a member holding `from` has after applying `d`.
List applied(const List& from, const MemberLists::Delta& d) {
  std::map<std::string, protocol::MemberMetadata> m;
  for (auto& x : from) m[x.consumerId] = x;
  for (auto& id : d.removed) m.erase(id);
  for (auto& x : d.added) m[x.consumerId] = x;
  List out;
  for (auto& [_, x] : m) out.push_back(x);
  return out;
}

TEST(MemberListsTest, OneListPerGenerationSharedByEveryAnswer) {
  MemberLists lists;
  int builds = 0;
  auto build = [&] {
    ++builds;
    return listOf({{"a", ""}, {"b", ""}});
  };
  auto first = lists.current(3, {1, 0}, build);
  auto second = lists.current(3, {1, 0}, build);
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(builds, 1);
  // Another stamp at the same generation: built again.
  auto third = lists.current(3, {2, 0}, build);
  EXPECT_NE(first.get(), third.get());
  EXPECT_EQ(builds, 2);
}

TEST(MemberListsTest, TheChangeSinceAKeptGenerationIsComputedOnce) {
  MemberLists lists;
  lists.current(4, {1, 0}, [] { return listOf({{"m-1", ""}, {"m-2", "x"}}); });
  lists.current(5, {2, 0}, [] { return listOf({{"m-2", "y"}, {"m-3", "w=1"}}); });
  auto d = lists.since(4);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->removed, std::vector<std::string>{"m-1"});
  ASSERT_EQ(d->added.size(), 2u);  // m-2's metadata changed, m-3 is new
  EXPECT_EQ(d->added[0], (protocol::MemberMetadata{"m-2", "y", ""}));
  EXPECT_EQ(d->added[1], (protocol::MemberMetadata{"m-3", "w=1", ""}));
  EXPECT_EQ(lists.since(4).get(), d.get());
  // The current generation itself: nothing changed.
  auto none = lists.since(5);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->added.empty());
  EXPECT_TRUE(none->removed.empty());
  // Never kept: no change can be given.
  EXPECT_FALSE(lists.since(3));
}

TEST(MemberListsTest, AGenerationWithTwoListsIsNoBase) {
  MemberLists lists;
  lists.current(4, {1, 0}, [] { return listOf({{"a", "1"}}); });
  lists.current(4, {2, 0}, [] { return listOf({{"a", "2"}}); });  // metadata changed without a move
  lists.current(5, {3, 0}, [] { return listOf({{"a", "2"}, {"b", ""}}); });
  EXPECT_FALSE(lists.since(4)) << "members may hold either list of generation 4";
  lists.current(5, {4, 0}, [] { return listOf({{"a", "2"}}); });
  EXPECT_FALSE(lists.since(5));
}

TEST(MemberListsTest, AGenerationReadFromZooKeeperIsNoBase) {
  MemberLists lists;
  lists.current(7, {1, 0}, [] { return listOf({{"a", ""}}); }, /*base=*/false);
  lists.current(8, {2, 0}, [] { return listOf({{"a", "x"}}); });
  EXPECT_FALSE(lists.since(7));
  EXPECT_TRUE(lists.since(8));
}

TEST(MemberListsTest, OnlyTheLatestGenerationsAreKept) {
  MemberLists lists;
  for (int g = 1; g <= 20; ++g) lists.current(g, {static_cast<uint64_t>(g), 0}, [] { return List{}; });
  EXPECT_EQ(lists.kept(), MemberLists::kKept);
  EXPECT_FALSE(lists.since(20 - static_cast<int>(MemberLists::kKept)));
  EXPECT_TRUE(lists.since(21 - static_cast<int>(MemberLists::kKept)));
}

TEST(MemberListsTest, ApplyingTheChangeGivesTheCurrentListForRandomGenerations) {
  std::mt19937 rng(7);
  MemberLists lists;
  std::vector<List> history;
  std::set<std::string> ids;
  std::map<std::string, std::string> meta;
  for (int g = 0; g < 200; ++g) {
    for (int k = 0; k < 5; ++k) {
      std::string id = "m-" + std::to_string(rng() % 40);
      switch (rng() % 3) {
        case 0: ids.insert(id); break;
        case 1: ids.erase(id); break;
        default: meta[id] = std::to_string(rng() % 4);
      }
    }
    List now;
    for (auto& id : ids) now.push_back(protocol::MemberMetadata{id, meta[id], ""});
    history.push_back(now);
    lists.current(g, {static_cast<uint64_t>(g), 0}, [&] { return now; });
    for (int back = 0; back < static_cast<int>(MemberLists::kKept) && back <= g; ++back) {
      auto d = lists.since(g - back);
      ASSERT_TRUE(d) << g << " since " << g - back;
      EXPECT_EQ(applied(history[static_cast<size_t>(g - back)], *d), now) << g << " since " << g - back;
    }
  }
}

}  // namespace
}  // namespace groupcoord::adapter
