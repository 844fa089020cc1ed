#pragma once

// What the status page and the JSON API on the HTTP port show, and where
// they get it (docs/design.md, "The HTTP side"). The HTTP server asks a
// StatusSource; groupcoordd's comes from server/MakeBackend.cpp (the
// coordinator for what this server knows, its DescribeServers answer for
// the placement, ListGroups read fresh from ZooKeeper for the groups, and
// DescribeGroup asked of the group's controller for one group). Tests give
// their own.
//
// Threads: called on the HTTP threads, which may block (bounded by the
// source's own timeouts).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/Permissions.h"
#include "protocol/Messages.h"

namespace groupcoord::server {

struct FleetServer {
  int32_t id = -1;
  std::string host;
  uint16_t port = 0;
  bool drained = false;
  bool self = false;                // the server that answers
  std::vector<std::string> groups;  // the groups it controls, sorted
};

struct FleetView {
  int32_t selfId = -1;
  std::vector<FleetServer> servers;        // by id
  std::vector<protocol::GroupInfo> groups;  // every group of the fleet, by name
  // The fleet's placement as this server computes it (DescribeServers,
  // docs/protocol.md "12 DescribeServers"): each live server's load, the
  // bound, the groups that should move. None when it could not be had.
  std::optional<protocol::DescribeServersResponse> placement;
};

// Why an answer could not be given: the protocol's error and a sentence.
struct StatusError {
  protocol::ErrorCode code = protocol::ErrorCode::NONE;
  std::string message;
  bool ok() const { return code == protocol::ErrorCode::NONE; }
};

template <typename T>
struct StatusAnswer {
  StatusError error;
  T value{};
  bool ok() const { return error.ok(); }
};

// Who asks, as the browser authenticated (empty without authentication):
// a group controlled elsewhere is asked of its controller as this user.
struct Viewer {
  std::string user;
  std::string secret;
  // With a permissions file: the rules the page shows the groups by, and
  // the viewer's role (null: every group is shown).
  std::shared_ptr<const permissions::Policy> policy;
  credentials::Role role = credentials::Role::Admin;
  bool mayDescribe(const std::string& group) const {
    return !policy || policy->allows(user, role, group, permissions::Operation::Describe);
  }
};

class StatusSource {
 public:
  virtual ~StatusSource() = default;
  virtual StatusAnswer<FleetView> fleet() = 0;
  // A name that is not a valid group name never reaches it.
  virtual StatusAnswer<protocol::DescribeGroupResponse> group(const std::string& name, const Viewer& viewer) = 0;
};

}  // namespace groupcoord::server
