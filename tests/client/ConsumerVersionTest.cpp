// The C++ consumer against a scripted server (FakeServer.h): how it speaks
// RegisterConsumer's versions (docs/protocol.md §14 and §16), and
// Heartbeat's (§20, §21). It steps down
// one version at a time when a server of an older release refuses one, and
// in client mode it applies a version-2 answer's change to the list it
// holds, or asks for the whole list when the change does not add up, never
// starting on a list it cannot vouch for.

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "client/Consumer.h"
#include "protocol/Codec.h"
#include "support/Timing.h"
#include "tests/client/FakeServer.h"

namespace groupcoord::client {
namespace {

using namespace std::chrono_literals;
using protocol::AssignmentMode;
using protocol::ErrorCode;
using groupcoord::testing::designBound;
using groupcoord::testing::designBoundMs;
using protocol::MemberMetadata;
using testing::FakeServer;

// The fake server answers at once, but on a starved machine its thread (or
// the consumer's) may run seconds late. A request that timed out is sent
// again, and a lease that ran out makes the consumer register again: either
// would add a registration to the ones counted below. So the request
// timeout and the group's session timeout hold the scheduling allowance.
constexpr auto kRequestTimeout = 1000ms;
constexpr int32_t kSessionMs = 3000;
// A few round trips with the fake server: 10 s is already generous.
constexpr auto kExchangeWait = 10s;

// ListGroups naming the fake server itself as the group's controller.
protocol::ListGroupsResponse listed(uint16_t port, AssignmentMode mode) {
  protocol::GroupInfo g;
  g.name = "g";
  g.controller = protocol::Broker{1, "127.0.0.1", port};
  g.sessionTimeoutMs = static_cast<int32_t>(designBoundMs(kSessionMs));
  g.generation = 1;
  g.mode = mode;
  return protocol::ListGroupsResponse{{g}, ErrorCode::NONE};
}

ConsumerConfig configFor(uint16_t port) {
  ConsumerConfig c;
  c.bootstrap = {{"127.0.0.1", port}};
  c.group = "g";
  c.heartbeatInterval = 20ms;
  c.requestTimeout = designBound(kRequestTimeout);
  return c;
}

// What the server saw of each registration.
struct Seen {
  int16_t version;
  int64_t knownGeneration;
};

TEST(ConsumerVersion, StepsDownOneVersionPerRefusalAndRegistersAtTheFirstSpoken) {
  std::mutex mu;
  std::vector<Seen> seen;
  uint16_t port = 0;
  FakeServer server([&](const protocol::DecodedRequest& r) -> std::vector<uint8_t> {
    if (std::holds_alternative<protocol::ListGroupsRequest>(r.request)) {
      return FakeServer::frame(r, listed(port, AssignmentMode::SERVER));
    }
    if (auto* reg = std::get_if<protocol::RegisterConsumerRequest>(&r.request)) {
      std::lock_guard lock(mu);
      seen.push_back({r.header.version, reg->knownGeneration});
      // A server that speaks version 1 only.
      if (r.header.version > 1) return FakeServer::frame(r, protocol::ErrorOnlyResponse{ErrorCode::UNSUPPORTED_VERSION});
      protocol::RegisterConsumerResponse resp{"g", "me", 1, {"me"}, {{"t", 0, 7}}, ErrorCode::NONE};
      return FakeServer::frame(r, resp);
    }
    return FakeServer::frame(r, protocol::HeartbeatResponse{1, ErrorCode::NONE});
  });
  port = server.port();
  Consumer consumer(configFor(port), ConsumerCallbacks{});
  const auto deadline = std::chrono::steady_clock::now() + designBound(kExchangeWait);
  while (consumer.assignment().empty() && std::chrono::steady_clock::now() < deadline) consumer.poll(20ms);
  ASSERT_EQ(consumer.assignment().size(), 1u);
  EXPECT_EQ(consumer.registerVersion(), 1);
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].version, 2);
  EXPECT_EQ(seen[1].version, 1);
}

// Heartbeats go as version 2 with a wait of one interval (docs/protocol.md
// §20, §21); a server of an older release refuses it, and the consumer steps
// down one version at a time to version 0, answered at once, at its interval.
TEST(ConsumerVersion, HeartbeatsAskToBeHeldAndStepDownOneVersionPerRefusal) {
  std::mutex mu;
  std::vector<std::pair<int16_t, int32_t>> beats;  // version, wait
  uint16_t port = 0;
  FakeServer server([&](const protocol::DecodedRequest& r) -> std::vector<uint8_t> {
    if (std::holds_alternative<protocol::ListGroupsRequest>(r.request)) {
      return FakeServer::frame(r, listed(port, AssignmentMode::SERVER));
    }
    if (std::holds_alternative<protocol::RegisterConsumerRequest>(r.request)) {
      protocol::RegisterConsumerResponse resp{"g", "me", 1, {"me"}, {{"t", 0, 7}}, ErrorCode::NONE};
      return FakeServer::frame(r, resp);
    }
    auto* hb = std::get_if<protocol::HeartbeatRequest>(&r.request);
    if (hb == nullptr) return FakeServer::frame(r, protocol::ErrorOnlyResponse{ErrorCode::INVALID_REQUEST});
    std::lock_guard lock(mu);
    beats.emplace_back(r.header.version, hb->waitMs);
    if (r.header.version > 0) return FakeServer::frame(r, protocol::ErrorOnlyResponse{ErrorCode::UNSUPPORTED_VERSION});
    return FakeServer::frame(r, protocol::HeartbeatResponse{1, ErrorCode::NONE});
  });
  port = server.port();
  Consumer consumer(configFor(port), ConsumerCallbacks{});
  const auto deadline = std::chrono::steady_clock::now() + designBound(kExchangeWait);
  auto count = [&] {
    std::lock_guard lock(mu);
    return beats.size();
  };
  while (count() < 4 && std::chrono::steady_clock::now() < deadline) consumer.poll(20ms);
  std::lock_guard lock(mu);
  ASSERT_GE(beats.size(), 4u);
  EXPECT_EQ(beats[0], (std::pair<int16_t, int32_t>{2, 20})) << "version 2, waiting one interval";
  EXPECT_EQ(beats[1], (std::pair<int16_t, int32_t>{1, 20})) << "refused: version 1, still held";
  EXPECT_EQ(beats[2], (std::pair<int16_t, int32_t>{0, 0})) << "refused again: version 0";
  EXPECT_EQ(beats[3], (std::pair<int16_t, int32_t>{0, 0})) << "and version 0 from then on";
  EXPECT_EQ(consumer.assignment().size(), 1u);
}

// A version-2 heartbeat answered NONE at a newer generation (a move that
// left the member as it was, docs/protocol.md §21): the consumer takes the
// generation and keeps its partitions, without registering again.
TEST(ConsumerVersion, AVersion2AnswerAtANewGenerationIsTakenWithoutRegisteringAgain) {
  std::mutex mu;
  int registrations = 0;
  std::vector<int64_t> generations;  // of the heartbeats, in order
  uint16_t port = 0;
  FakeServer server([&](const protocol::DecodedRequest& r) -> std::vector<uint8_t> {
    if (std::holds_alternative<protocol::ListGroupsRequest>(r.request)) {
      return FakeServer::frame(r, listed(port, AssignmentMode::SERVER));
    }
    std::lock_guard lock(mu);
    if (std::holds_alternative<protocol::RegisterConsumerRequest>(r.request)) {
      ++registrations;
      protocol::RegisterConsumerResponse resp{"g", "me", 1, {"me"}, {{"t", 0, 7}}, ErrorCode::NONE};
      return FakeServer::frame(r, resp);
    }
    auto* hb = std::get_if<protocol::HeartbeatRequest>(&r.request);
    if (hb == nullptr) return FakeServer::frame(r, protocol::ErrorOnlyResponse{ErrorCode::INVALID_REQUEST});
    generations.push_back(hb->generation);
    // The group has moved on to generation 3, and the move left "me" as it
    // was: a version-2 heartbeat from generation 1 is answered NONE at 3.
    if (r.header.version >= 2) return FakeServer::frame(r, protocol::HeartbeatResponse{3, ErrorCode::NONE});
    return FakeServer::frame(r, protocol::HeartbeatResponse{3, ErrorCode::REBALANCE_NEEDED});
  });
  port = server.port();
  Consumer consumer(configFor(port), ConsumerCallbacks{});
  const auto deadline = std::chrono::steady_clock::now() + designBound(kExchangeWait);
  auto beats = [&] {
    std::lock_guard lock(mu);
    return generations.size();
  };
  while (beats() < 3 && std::chrono::steady_clock::now() < deadline) consumer.poll(20ms);
  std::lock_guard lock(mu);
  ASSERT_GE(generations.size(), 3u);
  EXPECT_EQ(generations[0], 1) << "its registration's generation";
  EXPECT_EQ(generations[1], 3) << "the answer's generation, taken";
  EXPECT_EQ(generations[2], 3);
  EXPECT_EQ(registrations, 1) << "no registration for a move that asked nothing of it";
  EXPECT_EQ(consumer.assignment().size(), 1u) << "it keeps its partition";
}

TEST(ConsumerVersion, AClientModeChangeThatDoesNotAddUpIsRefusedAndTheWholeListAskedFor) {
  std::mutex mu;
  std::vector<Seen> seen;
  uint16_t port = 0;
  int64_t generation = 4;
  FakeServer server([&](const protocol::DecodedRequest& r) -> std::vector<uint8_t> {
    std::lock_guard lock(mu);
    if (std::holds_alternative<protocol::ListGroupsRequest>(r.request)) {
      return FakeServer::frame(r, listed(port, AssignmentMode::CLIENT));
    }
    if (auto* reg = std::get_if<protocol::RegisterConsumerRequest>(&r.request)) {
      seen.push_back({r.header.version, reg->knownGeneration});
      protocol::RegisterConsumerResponse resp{"g", "me", generation, {}, {}, ErrorCode::NONE, AssignmentMode::CLIENT};
      if (seen.size() == 1) {
        // Generation 4, whole: a and me.
        resp.memberData = {{"a", "", ""}, {"me", "", ""}};
        resp.memberCount = 2;
      } else if (seen.size() == 2) {
        // Generation 5, as a change since 4 that does not add up: b joined,
        // but the count says 5.
        resp.memberData = {{"b", "", ""}};
        resp.memberCount = 5;
        resp.listBase = 4;
      } else {
        resp.memberData = {{"a", "", ""}, {"b", "", ""}, {"me", "", ""}};
        resp.memberCount = 3;
      }
      return FakeServer::frame(r, resp);
    }
    auto* hb = std::get_if<protocol::HeartbeatRequest>(&r.request);
    if (hb != nullptr && generation == 4 && hb->generation == 4) {
      generation = 5;  // somebody joined: register again
      return FakeServer::frame(r, protocol::HeartbeatResponse{5, ErrorCode::REBALANCE_NEEDED});
    }
    return FakeServer::frame(r, protocol::HeartbeatResponse{generation, ErrorCode::NONE});
  });
  port = server.port();
  std::vector<std::pair<int64_t, size_t>> starts;
  ConsumerCallbacks cb;
  cb.onMembers = [&](int64_t g, const std::vector<MemberMetadata>& list) { starts.push_back({g, list.size()}); };
  Consumer consumer(configFor(port), cb);
  const auto deadline = std::chrono::steady_clock::now() + designBound(kExchangeWait);
  while ((starts.empty() || starts.back().first != 5) && std::chrono::steady_clock::now() < deadline) {
    consumer.poll(20ms);
  }
  ASSERT_FALSE(starts.empty());
  EXPECT_EQ(starts.back(), (std::pair<int64_t, size_t>{5, 3}));
  for (auto& [g, size] : starts) EXPECT_EQ(size, g == 4 ? 2u : 3u) << "started on generation " << g;
  std::vector<std::string> ids;
  for (auto& m : consumer.members()) ids.push_back(m.consumerId);
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b", "me"}));
  std::lock_guard lock(mu);
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen[0].knownGeneration, -1) << "a new member holds no list";
  EXPECT_EQ(seen[1].knownGeneration, 4) << "it holds generation 4's list";
  EXPECT_EQ(seen[2].knownGeneration, -1) << "the change did not add up: the whole list";
  for (auto& s : seen) EXPECT_EQ(s.version, 2);
}

}  // namespace
}  // namespace groupcoord::client
