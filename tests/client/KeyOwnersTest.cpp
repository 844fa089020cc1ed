// client::KeyOwners: rendezvous hashing of keys over a member list.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "client/KeyOwners.h"

namespace groupcoord::client {
namespace {

std::vector<std::string> keys(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("tenant-" + std::to_string(i));
  return out;
}

TEST(KeyOwners, TheSameListGivesTheSameOwnersWhateverItsOrder) {
  KeyOwners a({"m-1", "m-2", "m-3"});
  KeyOwners b({"m-3", "m-1", "m-2", "m-1"});
  EXPECT_EQ(a.members(), b.members());
  for (auto& k : keys(500)) EXPECT_EQ(a.owner(k), b.owner(k)) << k;
  std::vector<protocol::MemberMetadata> listed{{"m-2", "x", ""}, {"m-3", "", "r1"}, {"m-1", "", ""}};
  KeyOwners c(listed);
  for (auto& k : keys(500)) EXPECT_EQ(a.owner(k), c.owner(k)) << k;
}

TEST(KeyOwners, KeysSpreadOverTheMembers) {
  KeyOwners owners({"a", "b", "c", "d"});
  std::map<std::string, int> count;
  for (auto& k : keys(4000)) ++count[owners.owner(k)];
  ASSERT_EQ(count.size(), 4u);
  for (auto& [m, n] : count) {
    EXPECT_GT(n, 800) << m;  // 1000 expected each; far from it would be a broken hash
    EXPECT_LT(n, 1200) << m;
  }
}

TEST(KeyOwners, OnlyTheKeysOfTheMemberThatGoesOrComesMove) {
  KeyOwners before({"a", "b", "c", "d"});
  KeyOwners without({"a", "b", "d"});
  KeyOwners with({"a", "b", "c", "d", "e"});
  int movedToE = 0;
  for (auto& k : keys(2000)) {
    if (before.owner(k) != "c") {
      EXPECT_EQ(without.owner(k), before.owner(k)) << k << " moved though its owner stayed";
    }
    if (with.owner(k) != before.owner(k)) {
      EXPECT_EQ(with.owner(k), "e") << k << " moved between members that stayed";
      ++movedToE;
    }
  }
  EXPECT_GT(movedToE, 250);  // about a fifth of 2000
  EXPECT_LT(movedToE, 550);
}

TEST(KeyOwners, ScoresAreStableAndNobodyOwnsWithoutMembers) {
  EXPECT_EQ(KeyOwners().owner("k"), "");
  // Pinned values: members of one group built from different versions must
  // compute the same owners, so the score may never change.
  EXPECT_EQ(KeyOwners::score("m-1", "tenant-0"), 4528910735786043844ULL);
  EXPECT_EQ(KeyOwners::score("", ""), 11549774816140213323ULL);
  EXPECT_NE(KeyOwners::score("ab", "c"), KeyOwners::score("a", "bc"));
  const KeyOwners one({"only"});
  EXPECT_EQ(one.owner(""), "only");
}

}  // namespace
}  // namespace groupcoord::client
