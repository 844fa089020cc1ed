#pragma once

// A fleet of coordinators on the in-memory ZooKeeper with one hand-driven
// clock, and the calls tests make to them.

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "adapter/Coordinator.h"
#include "protocol/Codec.h"
#include "zk/FakeClient.h"

namespace groupcoord::adapter::testsupport {

using namespace std::chrono_literals;
using protocol::ErrorCode;

inline constexpr const char* kRoot = "/gc";

struct Node {
  std::unique_ptr<zk::FakeClient> zk;
  std::unique_ptr<Coordinator> coordinator;
  // The order a server shuts down in: stop the coordinator, close the
  // session (its last callbacks still reach the stopped coordinator), then
  // let both go.
  ~Node() {
    if (coordinator) coordinator->stop();
    if (zk) zk->close();
    if (coordinator) coordinator->detach();
    zk.reset();
    coordinator.reset();
  }
};

inline const bool kQuietLogs = [] {
  const char* level = std::getenv("GROUPCOORD_TEST_LOG");
  spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
  return true;
}();

class CoordinatorFixture : public ::testing::Test {
 protected:
  void TearDown() override { nodes_.clear(); }

  // batchInterval 0: every change goes out at once, so tests that join one
  // member after another need no clock movement between them.
  // tune: changes to the configuration (settle delay, pacing) before start.
  Node& addServer(int32_t id, std::chrono::milliseconds batchInterval = 0ms,
                  const std::function<void(CoordinatorConfig&)>& tune = {}) {
    auto n = std::make_unique<Node>();
    zk::FakeClientOptions o;
    o.name = "server-" + std::to_string(id);
    n->zk = std::make_unique<zk::FakeClient>(ensemble_, o);
    CoordinatorConfig c;
    c.serverId = id;
    c.advertisedHost = "127.0.0.1";
    c.advertisedPort = static_cast<uint16_t>(7400 + id);
    c.root = kRoot;
    c.batchInterval = batchInterval;
    c.handoverSettleDelay = 0ms;  // every server may take groups at once (HandoverTest sets its own)
    if (tune) tune(c);
    n->coordinator = std::make_unique<Coordinator>(*n->zk, c, time_);
    EXPECT_EQ(n->coordinator->start(), zk::Error::Ok);
    settle();
    EXPECT_TRUE(n->coordinator->registered());
    nodes_.push_back(std::move(n));
    return *nodes_.back();
  }

  // Lets every completion and watch, and what they trigger, run out.
  void settle() {
    for (int i = 0; i < 5; ++i) ensemble_.waitIdle();
  }

  // Advances the clock and runs one tick on every server.
  void advance(std::chrono::milliseconds d) {
    time_.advance(d);
    for (auto& n : nodes_) n->coordinator->tick();
    settle();
  }

  protocol::Response call(Coordinator& c, protocol::Request req, std::string clientId = "svc") {
    auto p = std::make_shared<std::promise<protocol::Response>>();
    auto f = p->get_future();
    protocol::RequestHeader h;
    h.apiKey = protocol::apiKeyOf(req);
    h.clientId = clientId;
    c.handle(h, std::move(req), [p](protocol::Response r) { p->set_value(std::move(r)); });
    for (int i = 0; i < 50 && f.wait_for(0ms) != std::future_status::ready; ++i) {
      settle();
      if (f.wait_for(20ms) == std::future_status::ready) break;
    }
    if (f.wait_for(0ms) != std::future_status::ready) {
      ADD_FAILURE() << "no response to " << protocol::apiName(h.apiKey);
      return protocol::ErrorOnlyResponse{ErrorCode::UNKNOWN_SERVER_ERROR};
    }
    return f.get();
  }

  protocol::CreateGroupResponse create(Coordinator& c, const std::string& group, int64_t timeoutMs = 2000,
                                       bool ephemeral = false, std::vector<std::string> topics = {}) {
    return std::get<protocol::CreateGroupResponse>(
        call(c, protocol::CreateGroupRequest{group, timeoutMs, std::move(topics), ephemeral}));
  }
  protocol::RegisterConsumerResponse join(Coordinator& c, const std::string& group, const std::string& id = "") {
    return std::get<protocol::RegisterConsumerResponse>(call(c, protocol::RegisterConsumerRequest{group, id, {}}));
  }
  protocol::HeartbeatResponse heartbeat(Coordinator& c, const std::string& group, const std::string& id,
                                        int64_t gen) {
    return std::get<protocol::HeartbeatResponse>(call(c, protocol::HeartbeatRequest{group, id, gen}));
  }
  ErrorCode leave(Coordinator& c, const std::string& group, const std::string& id) {
    return std::get<protocol::LeaveGroupResponse>(call(c, protocol::LeaveGroupRequest{group, id})).error;
  }
  protocol::GroupInfo describe(Coordinator& c, const std::string& group) {
    auto r = std::get<protocol::ListGroupsResponse>(call(c, protocol::ListGroupsRequest{{group}}));
    EXPECT_EQ(r.error, ErrorCode::NONE);
    EXPECT_EQ(r.groups.size(), 1u);
    return r.groups.empty() ? protocol::GroupInfo{} : r.groups[0];
  }
  int32_t zkVersion(const std::string& group) {
    auto s = ensemble_.stat(std::string(kRoot) + "/groups/" + group);
    return s ? s->version : -100;
  }

  void makeTopic(const std::string& topic, int32_t partitions) {
    zk::FakeClient admin(ensemble_);
    admin.ensurePathSync("/brokers/topics");
    std::string path = "/brokers/topics/" + topic;
    if (admin.existsSync(path).error == zk::Error::Ok) {
      admin.setSync(path, layout::encodeTopic(partitions));
    } else {
      admin.createSync(path, layout::encodeTopic(partitions), zk::CreateMode::Persistent);
    }
    admin.waitIdle();
    settle();
  }
  protocol::RegisterConsumerResponse joinOwning(Coordinator& c, const std::string& group, const std::string& id,
                                                std::vector<protocol::TopicPartition> owned) {
    return std::get<protocol::RegisterConsumerResponse>(
        call(c, protocol::RegisterConsumerRequest{group, id, std::move(owned)}));
  }
  static std::vector<protocol::TopicPartition> parts(const protocol::RegisterConsumerResponse& r) {
    std::vector<protocol::TopicPartition> out;
    for (auto& p : r.partitions) out.push_back({p.topic, p.partition});
    return out;
  }
  protocol::CommitOffsetsResponse commit(Coordinator& c, const std::string& group, const std::string& id,
                                         int64_t gen, std::vector<protocol::PartitionOffset> offsets) {
    return std::get<protocol::CommitOffsetsResponse>(
        call(c, protocol::CommitOffsetsRequest{group, id, gen, std::move(offsets)}));
  }

  zk::FakeEnsemble ensemble_;
  ManualTimeSource time_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace groupcoord::adapter::testsupport
