// Groups moving to the server that should control them, on the in-memory
// ZooKeeper with a hand-driven clock: a server that joins receives, once it
// has settled, what the placement's bound forces off the others, one that
// comes and goes receives none, a drained server hands everything over,
// handovers are paced, and a handover keeps members, generation and
// partitions where they are.

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>

#include "adapter/Placement.h"
#include "tests/adapter/CoordinatorFixture.h"

namespace groupcoord::adapter {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;
using protocol::TopicPartition;

constexpr auto kSettle = 1000ms;

class HandoverTest : public testsupport::CoordinatorFixture {
 protected:
  testsupport::Node& server(int32_t id, size_t maxInFlight = 8) {
    return addServer(id, 0ms, [maxInFlight](CoordinatorConfig& c) {
      c.handoverSettleDelay = kSettle;
      c.handoverMaxInFlight = maxInFlight;
    });
  }
  Coordinator& coordinatorOf(int32_t id) {
    for (auto& n : nodes_)
      if (n->coordinator && n->zk && serverIdOf(*n) == id) return *n->coordinator;
    ADD_FAILURE() << "no server " << id;
    return *nodes_.front()->coordinator;
  }
  void removeServer(int32_t id) {
    for (auto it = nodes_.begin(); it != nodes_.end(); ++it) {
      if (serverIdOf(**it) == id) {
        nodes_.erase(it);  // stops it and closes its session
        settle();
        return;
      }
    }
    ADD_FAILURE() << "no server " << id;
  }
  int64_t sessionOf(int32_t id) {
    auto s = ensemble_.stat("/gc/servers/" + std::to_string(id));
    return s ? s->ephemeralOwner : -1;
  }
  int32_t serverIdOf(testsupport::Node& n) {
    // Each server's registration is its only ephemeral znode under servers/.
    for (auto& child : ensemble_.children("/gc/servers")) {
      auto s = ensemble_.stat("/gc/servers/" + child);
      if (s && s->ephemeralOwner == n.zk->sessionId()) return std::stoi(child);
    }
    return -1;
  }
  // Advances the clock in steps of 100 ms, ticking every server each step.
  void runFor(std::chrono::milliseconds total) {
    for (auto t = 0ms; t < total; t += 100ms) advance(100ms);
  }
  std::optional<int> controllerOf(const std::string& group) {
    auto d = ensemble_.data("/gc/groups/" + group + "/controller");
    if (!d) return std::nullopt;
    return std::stoi(*d);
  }
  std::map<std::string, int> controllers(const std::vector<std::string>& groups) {
    std::map<std::string, int> out;
    for (auto& g : groups) {
      auto c = controllerOf(g);
      EXPECT_TRUE(c.has_value()) << "group " << g << " has no controller";
      out[g] = c.value_or(-1);
    }
    return out;
  }
  // Every group controlled by exactly one coordinator, the one its
  // controller znode names.
  void expectOneControllerEach(const std::vector<std::string>& groups) {
    std::map<std::string, int> seen;
    for (auto& n : nodes_) {
      for (auto& g : n->coordinator->controlledGroups()) {
        EXPECT_EQ(seen.count(g), 0u) << "group " << g << " controlled twice";
        seen[g] = serverIdOf(*n);
      }
    }
    for (auto& g : groups) {
      ASSERT_TRUE(seen.count(g)) << "group " << g << " controlled nowhere";
      EXPECT_EQ(controllerOf(g), seen[g]) << "group " << g;
    }
  }
  std::vector<std::string> createGroups(Coordinator& c, int count) {
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) {
      names.push_back("g" + std::to_string(i));
      EXPECT_EQ(create(c, names.back()).error, ErrorCode::NONE);
    }
    return names;
  }
  ErrorCode drain(Coordinator& via, int32_t id, bool on) {
    auto r = call(via, protocol::DrainServerRequest{id, on});
    return std::get<protocol::DrainServerResponse>(r).error;
  }
};

TEST_F(HandoverTest, AServerThatJoinsReceivesOnlyItsGroupsOnceSettled) {
  auto& a = server(1);
  server(2);
  runFor(kSettle + 100ms);
  auto groups = createGroups(*a.coordinator, 40);
  runFor(200ms);
  const auto before = controllers(groups);
  server(3);
  runFor(kSettle - 200ms);
  EXPECT_EQ(controllers(groups), before) << "nothing moves before the new server has settled";
  runFor(1500ms);
  const auto after = controllers(groups);
  size_t moved = 0;
  for (auto& g : groups) {
    if (after.at(g) == before.at(g)) continue;
    ++moved;
    EXPECT_EQ(after.at(g), 3) << "group " << g << " moved, but not to the new server";
  }
  // 40 groups of the same weight: the bound over three servers is 14 groups
  // (ceil(1.1 x 40 / 3) of them), so each of the two others gives up what
  // it holds over 14.
  std::vector<PlacementGroup> placed;
  for (auto& g : groups) placed.push_back(PlacementGroup{g, 10, before.at(g)});
  const uint64_t bound = place({1, 2, 3}, placed, PlacementConfig{}).bound;
  EXPECT_EQ(moved, minimumMoves({1, 2, 3}, placed, bound));
  EXPECT_GE(moved, 5u);
  EXPECT_EQ(coordinatorOf(3).controlledGroups().size(), moved);
  expectOneControllerEach(groups);
}

TEST_F(HandoverTest, AServerThatComesAndGoesWithinTheSettleDelayMovesNoGroup) {
  auto& a = server(1);
  server(2);
  runFor(kSettle + 100ms);
  auto groups = createGroups(*a.coordinator, 30);
  runFor(200ms);
  const auto before = controllers(groups);
  for (int i = 0; i < 3; ++i) {
    server(3);
    runFor(kSettle / 2);
    EXPECT_TRUE(coordinatorOf(3).controlledGroups().empty());
    removeServer(3);
    runFor(200ms);
    EXPECT_EQ(controllers(groups), before) << "round " << i;
  }
  runFor(2 * kSettle);
  EXPECT_EQ(controllers(groups), before);
  expectOneControllerEach(groups);
}

TEST_F(HandoverTest, ADrainedServerHandsOverEverythingAndTakesNothingUntilUndrained) {
  auto& a = server(1);
  server(2);
  server(3);
  runFor(kSettle + 100ms);
  auto groups = createGroups(*a.coordinator, 30);
  runFor(200ms);
  const auto before = controllers(groups);
  ASSERT_FALSE(coordinatorOf(2).controlledGroups().empty());
  EXPECT_EQ(drain(*a.coordinator, 2, true), ErrorCode::NONE);
  EXPECT_EQ(drain(*a.coordinator, 2, true), ErrorCode::NONE) << "draining twice is no error";
  EXPECT_TRUE(ensemble_.stat("/gc/draining/2").has_value());
  runFor(1000ms);
  EXPECT_TRUE(coordinatorOf(2).controlledGroups().empty());
  for (auto& [g, was] : controllers(groups)) {
    if (before.at(g) != 2) {
      EXPECT_EQ(was, before.at(g)) << "group " << g << " was not server 2's: it stays";
    }
  }
  // A new group is not given to the drained server either.
  EXPECT_EQ(create(*a.coordinator, "late").error, ErrorCode::NONE);
  runFor(200ms);
  EXPECT_NE(controllerOf("late"), 2);
  groups.push_back("late");
  expectOneControllerEach(groups);
  // Undrained, it takes what the bound forces off the others, and nothing
  // moves between them (docs/design.md, "Placement").
  const auto whileDrained = controllers(groups);
  EXPECT_EQ(drain(*a.coordinator, 2, false), ErrorCode::NONE);
  EXPECT_FALSE(ensemble_.stat("/gc/draining/2").has_value());
  runFor(2000ms);
  auto after = controllers(groups);
  size_t moved = 0;
  std::vector<PlacementGroup> placed;
  for (auto& [g, was] : whileDrained) {
    placed.push_back(PlacementGroup{g, 10, was});  // no members: every group weighs the constant
    if (after.at(g) == was) continue;
    ++moved;
    EXPECT_EQ(after.at(g), 2) << "group " << g << " moved, but not to the undrained server";
  }
  const uint64_t bound = place({1, 2, 3}, placed, PlacementConfig{}).bound;
  EXPECT_EQ(moved, minimumMoves({1, 2, 3}, placed, bound)) << "the bound " << bound << " forces exactly that many";
  EXPECT_GT(moved, 0u);
  expectOneControllerEach(groups);
}

TEST_F(HandoverTest, HandoversArePaced) {
  auto& a = server(1, /*maxInFlight=*/2);
  runFor(kSettle + 100ms);
  auto groups = createGroups(*a.coordinator, 20);
  runFor(200ms);
  ASSERT_EQ(a.coordinator->controlledGroups().size(), 20u);
  server(2);
  runFor(kSettle);
  size_t last = coordinatorOf(2).controlledGroups().size();
  size_t steps = 0;
  for (int i = 0; i < 40; ++i) {
    advance(10ms);
    const size_t now = coordinatorOf(2).controlledGroups().size();
    EXPECT_LE(now - last, 2u) << "at most two handovers at a time";
    if (now != last) ++steps;
    last = now;
  }
  EXPECT_GE(last, 4u) << "rendezvous hashing gives the second server about half";
  EXPECT_GE(steps, (last + 1) / 2 - 1);
  expectOneControllerEach(groups);
}

class HandoverPartitionsTest : public HandoverTest {};

// a and b share four partitions; b leaves, and before a registers again
// the group is handed over. The next controller keeps a's two partitions
// with a, keeps a as a member at the same generation (no re-registration
// for a member in sync), and grants the two b released at once: it knows
// from the handover that nobody holds them.
TEST_F(HandoverPartitionsTest, AHandoverKeepsMembersGenerationAndPartitionsAndFreesWhatWasFree) {
  makeTopic("t", 4);
  auto& one = server(1);
  server(2);
  runFor(kSettle + 100ms);
  auto created = create(*one.coordinator, "g", 2000, false, {"t"});
  ASSERT_EQ(created.error, ErrorCode::NONE);
  const int32_t first = created.controller.brokerId;
  const int32_t second = first == 1 ? 2 : 1;
  Coordinator& x = coordinatorOf(first);
  Coordinator& y = coordinatorOf(second);
  auto a = join(x, "g", "a");
  auto b = join(x, "g", "b");
  auto a2 = joinOwning(x, "g", "a", parts(a));
  ASSERT_EQ(heartbeat(x, "g", "a", a2.generation).error, ErrorCode::NONE);
  auto b2 = joinOwning(x, "g", "b", {});
  ASSERT_EQ(a2.partitions.size(), 2u);
  ASSERT_EQ(b2.partitions.size(), 2u);
  // A commit acknowledged before the handover.
  auto c = commit(x, "g", "a", a2.generation, {{parts(a2)[0].topic, parts(a2)[0].partition, 42}});
  ASSERT_EQ(c.error, ErrorCode::NONE);
  ASSERT_EQ(leave(x, "g", "b"), ErrorCode::NONE);
  const int64_t generation = x.generationOf("g");
  ASSERT_EQ(drain(x, first, true), ErrorCode::NONE);
  runFor(500ms);
  ASSERT_EQ(controllerOf("g"), second);
  EXPECT_EQ(heartbeat(x, "g", "a", generation).error, ErrorCode::NOT_CONTROLLER);
  EXPECT_EQ(y.generationOf("g"), generation) << "a handover does not move the generation";
  EXPECT_EQ(y.membersOf("g"), (std::vector<std::string>{"a"}));
  auto member = ensemble_.stat("/gc/groups/g/members/a");
  ASSERT_TRUE(member.has_value());
  EXPECT_EQ(member->ephemeralOwner, sessionOf(second)) << "the member znode now lives in the new controller's session";
  // a registers again (its generation is older than b's leave) and gets all
  // four at once.
  EXPECT_EQ(heartbeat(y, "g", "a", a2.generation).error, ErrorCode::REBALANCE_NEEDED);
  auto a3 = joinOwning(y, "g", "a", parts(a2));
  ASSERT_EQ(a3.error, ErrorCode::NONE);
  EXPECT_EQ(a3.generation, generation);
  EXPECT_EQ(a3.partitions.size(), 4u) << "what nobody held is granted without waiting a session timeout";
  for (auto& p : a3.partitions) {
    if (p.topic == parts(a2)[0].topic && p.partition == parts(a2)[0].partition) {
      EXPECT_EQ(p.offset, 42);
    }
  }
  EXPECT_EQ(heartbeat(y, "g", "a", a3.generation).error, ErrorCode::NONE);
}

// A record left by an earlier handover is not trusted by a controller that
// is not the first claim after it: here the group's next controller died
// after granting what the record says is free.
TEST_F(HandoverPartitionsTest, AStaleHandoverRecordIsNotTrusted) {
  makeTopic("t", 2);
  server(1);
  server(2);
  server(3);
  runFor(kSettle + 100ms);
  auto created = create(coordinatorOf(1), "g", 2000, false, {"t"});
  const int32_t first = created.controller.brokerId;
  auto a = join(coordinatorOf(first), "g", "a");
  ASSERT_EQ(a.partitions.size(), 2u);
  auto b = join(coordinatorOf(first), "g", "b");
  auto a2 = joinOwning(coordinatorOf(first), "g", "a", parts(a));
  heartbeat(coordinatorOf(first), "g", "a", a2.generation);
  auto b2 = joinOwning(coordinatorOf(first), "g", "b", {});
  ASSERT_EQ(b2.partitions.size(), 1u);
  // Handed over while a and b hold one partition each.
  ASSERT_EQ(drain(coordinatorOf(1), first, true), ErrorCode::NONE);
  runFor(500ms);
  const int32_t second = *controllerOf("g");
  ASSERT_NE(second, first);
  // At the second controller b leaves and a takes both.
  ASSERT_EQ(leave(coordinatorOf(second), "g", "b"), ErrorCode::NONE);
  auto a3 = joinOwning(coordinatorOf(second), "g", "a", parts(a2));
  ASSERT_EQ(a3.partitions.size(), 2u);
  // The second controller dies. The third finds the first handover's
  // record; trusting it would grant b's old partition to a newcomer while a
  // holds it.
  removeServer(second);
  runFor(300ms);  // the only undrained server left claims it at once
  const auto third = controllerOf("g");
  ASSERT_TRUE(third.has_value());
  ASSERT_NE(*third, second);
  auto c = join(coordinatorOf(*third), "g", "c");
  ASSERT_EQ(c.error, ErrorCode::NONE);
  EXPECT_TRUE(c.partitions.empty()) << "nothing nobody reported is granted within a session timeout of a takeover";
}

}  // namespace
}  // namespace groupcoord::adapter
