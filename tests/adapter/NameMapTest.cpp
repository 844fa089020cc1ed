// NameMap: the ordered map and its hash index stay in step through every
// change, and its version moves exactly when an element comes or goes.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "adapter/NameMap.h"

namespace groupcoord::adapter {
namespace {

TEST(NameMapTest, FindsByViewAndIteratesInNameOrder) {
  NameMap<int> m;
  EXPECT_TRUE(m.emplace("b", 2).second);
  EXPECT_TRUE(m.emplace("a", 1).second);
  EXPECT_TRUE(m.emplace("c", 3).second);
  EXPECT_FALSE(m.emplace("a", 10).second) << "an element already there is kept";
  std::vector<std::string> order;
  for (auto& [k, v] : m) order.push_back(k + "=" + std::to_string(v));
  EXPECT_EQ(order, (std::vector<std::string>{"a=1", "b=2", "c=3"}));
  const std::string text = "xbx";
  auto it = m.find(std::string_view(text).substr(1, 1));
  ASSERT_NE(it, m.end());
  EXPECT_EQ(it->second, 2);
  EXPECT_EQ(m.find("d"), m.end());
  EXPECT_EQ(m.count("c"), 1u);
  EXPECT_EQ(m.count(""), 0u);
}

TEST(NameMapTest, TheVersionMovesWhenAnElementComesOrGoesOnly) {
  NameMap<int> m;
  const uint64_t v0 = m.version();
  m.emplace("a", 1);
  const uint64_t v1 = m.version();
  EXPECT_GT(v1, v0);
  m["a"] = 5;  // replaced in place: the element is where it was
  m.emplace("a", 7);
  EXPECT_EQ(m.version(), v1);
  EXPECT_EQ(m.find("a")->second, 5);
  m["b"];  // inserted with a default value
  EXPECT_GT(m.version(), v1);
  const uint64_t v2 = m.version();
  EXPECT_EQ(m.erase("zz"), 0u);
  EXPECT_EQ(m.version(), v2) << "nothing erased";
  EXPECT_EQ(m.erase("a"), 1u);
  EXPECT_GT(m.version(), v2);
  const uint64_t v3 = m.version();
  m.clear();
  EXPECT_GT(m.version(), v3);
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.find("b"), m.end());
}

// Random inserts and erases, by key and by iterator, against std::map: the
// same elements in the same order, and every key found through the index.
TEST(NameMapTest, AgreesWithAnOrderedMapThroughRandomChanges) {
  NameMap<int> m;
  std::map<std::string, int> reference;
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    const std::string key = "member-" + std::to_string(rng() % 500);
    switch (rng() % 4) {
      case 0:
      case 1:
        EXPECT_EQ(m.emplace(key, step).second, reference.emplace(key, step).second);
        break;
      case 2:
        EXPECT_EQ(m.erase(key), reference.erase(key));
        break;
      case 3:
        if (auto it = m.find(key); it != m.end()) {
          m.erase(it);
          reference.erase(key);
        }
        break;
    }
    if (step % 1000 == 999) m.clear(), reference.clear();
  }
  ASSERT_EQ(m.size(), reference.size());
  auto r = reference.begin();
  for (auto& [k, v] : m) {
    ASSERT_EQ(k, r->first);
    EXPECT_EQ(v, r->second);
    auto found = m.find(k);
    ASSERT_NE(found, m.end());
    EXPECT_EQ(&found->second, &v) << "the index points at the map's own element";
    ++r;
  }
  for (int i = 0; i < 500; ++i) {
    const std::string key = "member-" + std::to_string(i);
    EXPECT_EQ(m.count(key), reference.count(key)) << key;
  }
}

TEST(NameMapTest, TheNameHashUsesEveryByte) {
  // Names that differ in one byte anywhere, short and long, hash apart.
  for (const std::string& base : {std::string("g"), std::string("group-7"), std::string("consumer-0123456789abcdef-x")}) {
    for (size_t i = 0; i < base.size(); ++i) {
      std::string other = base;
      other[i] ^= 1;
      EXPECT_NE(nameHash(base), nameHash(other)) << base << " at " << i;
    }
    EXPECT_NE(nameHash(base), nameHash(base + '\0')) << "the length counts";
  }
  EXPECT_EQ(nameHash("same"), nameHash(std::string("same")));
}

}  // namespace
}  // namespace groupcoord::adapter
