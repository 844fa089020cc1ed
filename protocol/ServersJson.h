#pragma once

// The servers of the fleet as `groupctl servers` and the status page show
// them: every server that is live or that ListGroups names as a group's
// controller, the groups each controls, and, from a DescribeServers answer
// (docs/protocol.md, "12 DescribeServers"), its state, load and load once
// the groups that should move have moved. The JSON document is the one of
// `groupctl servers --output json` and of the status page's /api/servers
// (docs/protocol.md, "DescribeServers as JSON"); keys are only ever added.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/Messages.h"

namespace groupcoord::protocol {

struct ServerRow {
  int32_t id = -1;
  std::string host;  // where clients reach it ("" when not known)
  int32_t port = 0;
  std::vector<std::string> groups;  // the groups ListGroups names it the controller of, sorted
  // Its entry in the DescribeServers answer; none when there was no answer
  // (an older server), or when it is not among the live servers there.
  std::optional<ServerPlacement> placement;
};

struct ServerTable {
  std::vector<ServerRow> servers;              // by id
  std::vector<std::string> withoutController;  // sorted
};

// Without `placement`, the servers that control a group, as ListGroups
// names them; with it, the live servers of `placement` as well. A group
// ListGroups answered UNKNOWN_GROUP for (deleted since it was listed) is
// left out.
ServerTable serverTable(const std::vector<GroupInfo>& groups, const DescribeServersResponse* placement);

// "candidate" (groups are placed on it), "drained", "settling" (live, not
// yet settled), or "not live" for a row without placement.
std::string_view serverStateName(const std::optional<ServerPlacement>& placement);

// A share in thousandths as a decimal: 100 is "0.10", 125 "0.125"; "?" when negative.
std::string permilleText(int32_t permille);

// "weight = members + 10" (or "weight = 10 per group").
std::string weightRuleText(const DescribeServersResponse& placement);

// "bound B = ceil((1+eps) x total / candidates): eps 0.10, margin 0.05, weight = members + 10"
std::string boundRuleText(const DescribeServersResponse& placement);

// How many servers of `placement` are candidates.
size_t candidateCount(const DescribeServersResponse& placement);

// The document (docs/protocol.md, "DescribeServers as JSON"): without
// `placement`, the keys `groupctl servers` always printed.
nlohmann::json serversJson(const std::vector<GroupInfo>& groups, const DescribeServersResponse* placement);

}  // namespace groupcoord::protocol
