#pragma once

// Administrative calls against a groupcoord cluster: create, list, delete
// groups, read and rewind committed offsets, drain and undrain servers, and
// see how groups are placed on the servers. Each
// call finds a server that answers among the bootstrap servers, and the
// group's controller (through ListGroups) for the calls only the controller
// serves. Blocking; one thread at a time per Admin.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/Connection.h"
#include "client/Status.h"
#include "protocol/Messages.h"

namespace groupcoord::client {

using Endpoint = std::pair<std::string, uint16_t>;

struct AdminOptions {
  std::string clientId = "groupcoord-admin";
  // One request's wait for its answer (and for a connect).
  std::chrono::milliseconds requestTimeout{5000};
  // Total time spent retrying NOT_CONTROLLER, CONTROLLER_NOT_AVAILABLE and
  // unreachable servers before the call gives up with that status (when no
  // server could be connected to, Status::unreachable() says so).
  std::chrono::milliseconds retryBudget{10000};
  // Credentials and TLS, applied on every (re)connect; a refused
  // Authenticate is NOT_AUTHORIZED and not retried.
  SecurityOptions security;
};

class Admin {
 public:
  explicit Admin(std::vector<Endpoint> bootstrap, AdminOptions options = {});

  // value: the group's controller when the answer was sent ("no controller"
  // Broker when none had claimed it yet; listGroups names it later).
  // mode CLIENT: a membership-only group (docs/protocol.md §14), which
  // needs servers that speak CreateGroup version 1.
  Result<protocol::Broker> createGroup(const std::string& group, std::chrono::milliseconds sessionTimeout,
                                       const std::vector<std::string>& topics, bool ephemeral,
                                       protocol::AssignmentMode mode = protocol::AssignmentMode::SERVER);
  Status deleteGroup(const std::string& group);
  // Empty names: every group. A named group that does not exist comes back
  // with UNKNOWN_GROUP in its own GroupInfo, not in the Status.
  Result<std::vector<protocol::GroupInfo>> listGroups(const std::vector<std::string>& names = {});
  // One group's info as ListGroups gives it (any server answers);
  // UNKNOWN_GROUP in the Status when it does not exist.
  Result<protocol::GroupInfo> groupInfo(const std::string& group);
  // Everything the group's controller knows (DescribeGroup): members with
  // where they connect from and what they hold, committed offsets, and the
  // recent rebalance history. UNKNOWN_GROUP in the Status when the group
  // does not exist.
  Result<protocol::DescribeGroupResponse> describeGroup(const std::string& group);
  // Empty topics: every committed offset of the group.
  Result<std::vector<protocol::PartitionOffset>> fetchOffsets(const std::string& group,
                                                              const std::vector<std::string>& topics = {});
  // Per-partition results; the Status is the top-level ErrorCode.
  Result<std::vector<protocol::PartitionError>> rewind(const std::string& group,
                                                       const std::vector<protocol::PartitionOffset>& offsets);
  // Marks server `serverId` drained (drain true: it hands over every group it
  // controls and takes no new one) or undrained. Any server answers; OK once
  // the marker is written (or removed), before any group has moved. Doing it
  // twice succeeds. Needs an admin when the servers authenticate
  // (NOT_AUTHORIZED otherwise); a negative id is INVALID_REQUEST.
  Status drainServer(int32_t serverId, bool drain = true);
  // The fleet's placement as the server that answers computes it
  // (DescribeServers, docs/protocol.md "12 DescribeServers"): each live
  // server with its state, load and load once the groups that should move
  // have moved, the bound, and those groups. Any server answers; a server
  // older than the call answers UNKNOWN_API, and one without ZooKeeper
  // CONTROLLER_NOT_AVAILABLE (retried on the others within the budget).
  Result<protocol::DescribeServersResponse> describeServers();

 private:
  // Sends to any bootstrap server, trying the next one when one cannot be
  // reached; retries CONTROLLER_NOT_AVAILABLE within the retry budget.
  Result<protocol::Response> callAny(const protocol::Request& request);
  // Sends to the group's controller, found again on NOT_CONTROLLER.
  Result<protocol::Response> callController(const std::string& group, const protocol::Request& request);
  // One request on conn_; connection failures become CONTROLLER_NOT_AVAILABLE,
  // of kind Unreachable when no connection could be made.
  Result<protocol::Response> callOn(const Endpoint& server, const protocol::Request& request);

  std::vector<Endpoint> bootstrap_;
  AdminOptions options_;
  Connection conn_;
  std::optional<Endpoint> connectedTo_;
  size_t nextBootstrap_ = 0;
  // The newest version of each API the servers are asked in: this codec's
  // (protocol::maxVersion) until one answers UNSUPPORTED_VERSION, then one
  // less each time (RegisterConsumer is the Consumer's).
  std::map<protocol::ApiKey, int16_t> ceiling_;
};

// ErrorCode of any response, and a sentence naming the call and the server.
protocol::ErrorCode responseErrorOf(const protocol::Response& response);
std::string describeError(protocol::ErrorCode code, std::string_view api, const Endpoint& server,
                          std::string_view group);

}  // namespace groupcoord::client
