#include "client/groupctl/Commands.h"

#include <iostream>
#include <optional>

#include "protocol/PartitionRows.h"
#include "protocol/ServersJson.h"

namespace groupcoord::groupctl {

using nlohmann::json;
using protocol::ErrorCode;

namespace {

std::string serverIdText(int32_t id) { return id < 0 ? "-" : std::to_string(id); }

std::string addressText(const protocol::ServerRow& row) {
  return row.host.empty() ? "-" : protocol::hostPort(row.host, row.port);
}

}  // namespace

// The servers as the bootstrap server sees them (DescribeServers, docs/
// protocol.md "12 DescribeServers"), with the groups ListGroups names each
// the controller of. A server older than DescribeServers answers
// UNKNOWN_API: then only the servers that control groups are shown, as
// before the call existed.
int ServersCommand::run() {
  allowOnly(args_, "servers", {});
  expectPositionals(args_, 1, "");
  std::optional<protocol::DescribeServersResponse> placement;
  auto described = admin().describeServers();
  if (described.ok()) {
    placement = std::move(described.value);
  } else if (described.status.code == ErrorCode::UNKNOWN_API) {
    std::cerr << "groupctl: the server does not describe the placement (DescribeServers: it is older than this "
                 "groupctl); showing the controllers only\n";
  } else {
    return fail(described.status, "");
  }
  auto listed = admin().listGroups();
  if (!listed.ok()) return fail(listed.status, "");
  const protocol::DescribeServersResponse* view = placement ? &*placement : nullptr;

  if (json_) {
    std::cout << protocol::serversJson(listed.value, view).dump(2) << "\n";
    return kExitOk;
  }
  const protocol::ServerTable table = protocol::serverTable(listed.value, view);
  if (!view) {
    std::vector<std::vector<std::string>> rows{{"SERVER", "ADDRESS", "GROUPS"}};
    for (const auto& s : table.servers)
      rows.push_back({std::to_string(s.id), addressText(s), std::to_string(s.groups.size())});
    rows.push_back({"-", "(no controller)", std::to_string(table.withoutController.size())});
    printTable(rows);
    return kExitOk;
  }

  std::vector<std::vector<std::string>> rows{{"SERVER", "ADDRESS", "STATE", "GROUPS", "LOAD", "BOUND", "AFTER"}};
  for (const auto& s : table.servers) {
    const auto& p = s.placement;
    rows.push_back({std::to_string(s.id), addressText(s), std::string(protocol::serverStateName(p)),
                    p ? std::to_string(p->groups) : std::to_string(s.groups.size()), p ? std::to_string(p->load) : "-",
                    p && p->candidate ? std::to_string(view->bound) : "-", p ? std::to_string(p->placed) : "-"});
  }
  rows.push_back({"-", "(no controller)", "-", std::to_string(table.withoutController.size()), "-", "-", "-"});
  printTable(rows);
  std::cout << protocol::boundRuleText(*view) << "\n";
  if (!view->moves.empty()) {
    std::cout << "\n" << view->moves.size() << " group(s) should move:\n";
    std::vector<std::vector<std::string>> moves{{"GROUP", "WEIGHT", "FROM", "TO"}};
    for (const auto& m : view->moves)
      moves.push_back({m.group, std::to_string(m.weight), serverIdText(m.controller), serverIdText(m.target)});
    printTable(moves);
  }
  std::cout << "view of server " << view->server << ": total " << view->total << " over "
            << protocol::candidateCount(*view) << " candidate(s)\n";
  if (!view->complete) std::cout << "still reading the fleet: no group moves for load yet\n";
  return kExitOk;
}

}  // namespace groupcoord::groupctl
