#include "client/groupctl/Commands.h"

#include <algorithm>
#include <iostream>

#include "protocol/DescribeJson.h"

namespace groupcoord::groupctl {

using nlohmann::json;

int ListCommand::run() {
  allowOnly(args_, "list", {});
  expectPositionals(args_, 1, "");
  auto r = admin().listGroups();
  if (!r.ok()) return fail(r.status, "");
  auto groups = r.value;
  std::sort(groups.begin(), groups.end(), [](auto& a, auto& b) { return a.name < b.name; });
  if (json_) {
    json out = {{"groups", json::array()}};
    for (auto& g : groups) out["groups"].push_back(protocol::groupInfoJson(g));
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  if (groups.empty()) {
    std::cout << "(no groups)\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows{{"GROUP", "PROTOCOL", "CONTROLLER", "GENERATION", "MEMBERS", "TOPICS"}};
  for (auto& g : groups)
    rows.push_back({g.name, protocol::protocolText(g.kafka, g.protocolType, g.protocolName), brokerText(g.controller),
                    std::to_string(g.generation), std::to_string(g.members.size()), joinList(g.topics)});
  printTable(rows);
  return kExitOk;
}

}  // namespace groupcoord::groupctl
