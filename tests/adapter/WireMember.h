#pragma once

// Test clients that speak the wire protocol to groupcoordd processes: an
// admin helper and a member that registers, heartbeats and follows its
// group's controller from server to server.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/Connection.h"
#include "protocol/Messages.h"
#include "support/ServerProcess.h"
#include "support/Timing.h"

namespace groupcoord::testing {

// Design bounds (docs/design.md) that the helpers below wait for, with
// schedulingAllowance() added; kLongestServerZkSessionTimeout is in
// support/ServerProcess.h.
//
// A group without a controller is claimed by any server after the claim
// fallback (3 s by default).
inline constexpr std::chrono::milliseconds kClaimFallback{3000};
// A join waits in the group's batch at most group.join.window.max.ms (3 s).
inline constexpr std::chrono::milliseconds kJoinWindowCap{3000};

// Deadlines of one request. Heartbeats are answered from memory (no design
// delay); the others may wait for ZooKeeper, a registration also for its
// batch.
inline std::chrono::milliseconds heartbeatCallTimeout() { return designBound(std::chrono::milliseconds(0)); }
inline std::chrono::milliseconds requestCallTimeout() { return designBound(kLongestServerZkSessionTimeout); }
inline std::chrono::milliseconds registerCallTimeout() {
  return designBound(kJoinWindowCap + kLongestServerZkSessionTimeout);
}

// One request on a fresh connection to 127.0.0.1:port; nullopt when no
// response of the right API came back.
template <typename Resp>
std::optional<Resp> callOnce(uint16_t port, const protocol::Request& request,
                             std::chrono::milliseconds timeout = requestCallTimeout());

protocol::CreateGroupResponse createGroup(uint16_t port, const std::string& group, int64_t sessionTimeoutMs,
                                          bool ephemeral = false, std::vector<std::string> topics = {});
protocol::GroupInfo describeGroup(uint16_t port, const std::string& group);

class WireMember {
 public:
  // servers: the ports of every groupcoordd the member may be sent to.
  WireMember(std::string group, std::vector<uint16_t> servers, std::string clientId = "it-member");

  // Registers with the group's controller (found with ListGroups when not
  // known), keeping the member id it gets. Retries NOT_CONTROLLER and
  // CONTROLLER_NOT_AVAILABLE until `wait` passes: by default until a group
  // without a controller has been claimed (the claim fallback) and the join
  // has left its batch (the join window's cap).
  protocol::RegisterConsumerResponse join(
      std::chrono::milliseconds wait = designBound(kClaimFallback + kJoinWindowCap));
  // One heartbeat at the member's generation; CONTROLLER_NOT_AVAILABLE when
  // the controller cannot be reached.
  protocol::HeartbeatResponse heartbeat();
  protocol::ErrorCode leave();
  // Heartbeats; registers again on REBALANCE_NEEDED / UNKNOWN_CONSUMER and
  // goes to the new controller on NOT_CONTROLLER or a lost connection.
  // Returns true once a heartbeat answers NONE.
  bool settle(std::chrono::milliseconds wait = std::chrono::seconds(30));
  // Forgets the connection (as a process restart would) but keeps the id.
  void dropConnection() { conn_.close(); }

  const std::string& id() const { return id_; }
  void setId(std::string id) { id_ = std::move(id); }
  int64_t generation() const { return generation_; }
  uint16_t controllerPort() const { return controllerPort_; }

 private:
  bool connectToController();

  std::string group_;
  std::vector<uint16_t> servers_;
  std::string clientId_;
  std::string id_;
  int64_t generation_ = -1;
  uint16_t controllerPort_ = 0;
  client::Connection conn_;
};

}  // namespace groupcoord::testing
