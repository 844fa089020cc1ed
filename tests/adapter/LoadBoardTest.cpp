// Published group weights on the in-memory ZooKeeper: the znode format,
// what each server reads, the rule that picks a group's weight, and the
// pacing of writes.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "adapter/LoadBoard.h"
#include "tests/adapter/FakeZkTestSupport.h"

namespace groupcoord::adapter {
namespace {

using namespace std::chrono_literals;
using Weights = std::vector<std::pair<std::string, uint64_t>>;

class LoadBoardTest : public ::testing::Test {
 protected:
  LoadBoardTest() {
    testsupport::quietLogs();
    zk::FakeClient admin(ensemble_);
    EXPECT_EQ(admin.ensurePathSync(layout_.loadsPath()), zk::Error::Ok);
  }
  ~LoadBoardTest() override {
    for (auto& [_, s] : servers_) s.zk->close();
    servers_.clear();
  }

  struct Server {
    SessionEpoch epoch;
    std::unique_ptr<zk::FakeClient> zk;
    std::unique_ptr<LoadBoard> board;
  };

  LoadBoard& add(int32_t id) {
    Server& s = servers_[id];
    s.zk = std::make_unique<zk::FakeClient>(ensemble_);
    s.board = std::make_unique<LoadBoard>(*s.zk, layout_, time_, s.epoch, id);
    s.board->watch();
    settle();
    return *s.board;
  }
  void settle() { testsupport::settle(ensemble_); }
  // Weights as `board` fills them for groups with these controllers.
  static std::map<std::string, uint64_t> fill(LoadBoard& board, std::vector<PlacementGroup> groups) {
    board.fillWeights(groups, 7);
    std::map<std::string, uint64_t> out;
    for (auto& g : groups) out[g.name] = g.weight;
    return out;
  }

  zk::FakeEnsemble ensemble_;
  ManualTimeSource time_;
  layout::Layout layout_{"/gc"};
  std::map<int32_t, Server> servers_;
};

TEST(LoadBoardFormat, EncodesHeaviestFirstAndDecodesBack) {
  const std::string text = LoadBoard::encode({{"a", 5}, {"b", 500}, {"c", 50}}, 1 << 20);
  EXPECT_EQ(text, "groupcoord-loads 1\n500 b\n50 c\n5 a\n");
  auto back = LoadBoard::decode(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->at("a"), 5u);
  EXPECT_EQ(back->at("b"), 500u);
  EXPECT_EQ(back->size(), 3u);
}

TEST(LoadBoardFormat, ACutKeepsTheHeaviestAndCountsTheRest) {
  size_t left = 0;
  const std::string text = LoadBoard::encode({{"light", 1}, {"heavy", 900}, {"mid", 40}}, 40, &left);
  EXPECT_EQ(text, "groupcoord-loads 1\n900 heavy\n40 mid\n");
  EXPECT_EQ(left, 1u);
}

TEST(LoadBoardFormat, RejectsWhatItDidNotWrite) {
  EXPECT_FALSE(LoadBoard::decode("").has_value());
  EXPECT_FALSE(LoadBoard::decode("groupcoord-loads 2\n1 a\n").has_value());
  EXPECT_FALSE(LoadBoard::decode("groupcoord-loads 1\n1a\n").has_value());
  EXPECT_FALSE(LoadBoard::decode("groupcoord-loads 1\nx a\n").has_value());
  EXPECT_FALSE(LoadBoard::decode("groupcoord-loads 1\n1 a").has_value());
  EXPECT_FALSE(LoadBoard::decode("groupcoord-loads 1\n 1\n").has_value());
  EXPECT_TRUE(LoadBoard::decode("groupcoord-loads 1\n").has_value());
}

TEST_F(LoadBoardTest, EveryServerReadsWhatEachPublished) {
  LoadBoard& one = add(1);
  LoadBoard& two = add(2);
  one.publish(time_.now(), Weights{{"g1", 120}, {"g2", 30}});
  two.publish(time_.now(), Weights{{"g3", 5000}});
  settle();
  EXPECT_TRUE(one.complete());
  EXPECT_TRUE(two.complete());
  for (LoadBoard* b : {&one, &two}) {
    auto w = fill(*b, {{"g1", 0, 1}, {"g2", 0, 1}, {"g3", 0, 2}, {"g4", 0, -1}});
    EXPECT_EQ(w["g1"], 120u);
    EXPECT_EQ(w["g2"], 30u);
    EXPECT_EQ(w["g3"], 5000u);
    EXPECT_EQ(w["g4"], 7u) << "a group nobody published weighs the constant";
  }
  auto data = ensemble_.data("/gc/loads/1");
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(*data, "groupcoord-loads 1\n120 g1\n30 g2\n");
}

TEST_F(LoadBoardTest, TheControllersWeightWinsElseTheLargestKnown) {
  LoadBoard& one = add(1);
  LoadBoard& two = add(2);
  two.publish(time_.now(), Weights{{"g", 40}});
  settle();
  one.publish(time_.now(), Weights{{"g", 900}});
  settle();
  // Both list it: its controller's entry counts, whoever reads.
  EXPECT_EQ(fill(one, {{"g", 0, 2}})["g"], 40u);
  EXPECT_EQ(fill(two, {{"g", 0, 1}})["g"], 900u);
  // Without a controller (a handover half done): the largest.
  EXPECT_EQ(fill(two, {{"g", 0, -1}})["g"], 900u);
}

TEST_F(LoadBoardTest, AGroupJustTakenKeepsItsKnownWeightWhileItsMembersComeBack) {
  LoadBoard& one = add(1);
  LoadBoard& two = add(2);
  one.publish(time_.now(), Weights{{"g", 3000}});
  settle();
  // Server 2 takes it (server 1 died): its members have not come back yet.
  two.publish(time_.now(), Weights{{"g", 10}});
  settle();
  EXPECT_EQ(fill(two, {{"g", 0, 2}})["g"], 3000u);
  // Once the grace is over, what it counts is what it publishes.
  time_.advance(31s);
  two.publish(time_.now(), Weights{{"g", 1200}});
  settle();
  EXPECT_EQ(fill(two, {{"g", 0, 2}})["g"], 1200u);
}

TEST_F(LoadBoardTest, SmallChangesAreNotWrittenAndBigOnesArePaced) {
  LoadBoard& one = add(1);
  one.publish(time_.now(), Weights{{"g", 100}});
  settle();
  time_.advance(40s);
  servers_[1].zk->resetCounters();
  one.publish(time_.now(), Weights{{"g", 105}});  // within a tenth
  settle();
  EXPECT_EQ(servers_[1].zk->counters().sets, 0u);
  one.publish(time_.now(), Weights{{"g", 300}});
  settle();
  EXPECT_EQ(servers_[1].zk->counters().sets, 1u);
  time_.advance(1s);
  one.publish(time_.now(), Weights{{"g", 600}});  // too soon after the last write
  settle();
  EXPECT_EQ(servers_[1].zk->counters().sets, 1u);
  time_.advance(5s);
  one.publish(time_.now(), Weights{{"g", 600}});
  settle();
  EXPECT_EQ(servers_[1].zk->counters().sets, 2u);
  EXPECT_EQ(fill(one, {{"g", 0, 1}})["g"], 600u);
}

TEST_F(LoadBoardTest, AGroupGoneIsDroppedOnlyLater) {
  LoadBoard& one = add(1);
  one.publish(time_.now(), Weights{{"a", 50}, {"b", 60}});
  settle();
  time_.advance(2s);
  one.publish(time_.now(), Weights{{"a", 50}});
  settle();
  EXPECT_EQ(*ensemble_.data("/gc/loads/1"), "groupcoord-loads 1\n60 b\n50 a\n")
      << "a handed-over group's weight stays until its new controller has published it";
  time_.advance(31s);
  one.publish(time_.now(), Weights{{"a", 50}});
  settle();
  EXPECT_EQ(*ensemble_.data("/gc/loads/1"), "groupcoord-loads 1\n50 a\n");
}

TEST_F(LoadBoardTest, AfterARestartItKnowsWhatItHadPublished) {
  {
    LoadBoard& one = add(1);
    one.publish(time_.now(), Weights{{"a", 50}});
    settle();
    servers_[1].zk->close();
    servers_.erase(1);
  }
  LoadBoard& again = add(1);
  EXPECT_TRUE(again.complete());
  EXPECT_EQ(fill(again, {{"a", 0, -1}})["a"], 50u) << "the znode is persistent";
}

}  // namespace
}  // namespace groupcoord::adapter
