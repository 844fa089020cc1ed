#include "client/groupctl/Commands.h"

#include <algorithm>
#include <iostream>
#include <map>

namespace groupcoord::groupctl {

using nlohmann::json;
using protocol::ErrorCode;

int ServersCommand::run() {
  allowOnly(args_, "servers", {});
  expectPositionals(args_, 1, "");
  auto r = admin().listGroups();
  if (!r.ok()) return fail(r.status, "");
  struct Server {
    protocol::Broker broker;
    std::vector<std::string> groups;
  };
  std::map<int32_t, Server> byId;
  std::vector<std::string> without;
  for (auto& g : r.value) {
    // Listed, then deleted before it could be read: it is nowhere now.
    if (g.error == ErrorCode::UNKNOWN_GROUP) continue;
    if (g.controller.isNone()) {
      without.push_back(g.name);
      continue;
    }
    auto& s = byId[g.controller.brokerId];
    if (s.groups.empty()) s.broker = g.controller;
    s.groups.push_back(g.name);
  }
  std::sort(without.begin(), without.end());
  for (auto& [id, s] : byId) std::sort(s.groups.begin(), s.groups.end());
  if (json_) {
    json out = {{"servers", json::array()}, {"without_controller", without}};
    for (auto& [id, s] : byId)
      out["servers"].push_back({{"id", id}, {"host", s.broker.host}, {"port", s.broker.port}, {"groups", s.groups}});
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows{{"SERVER", "ADDRESS", "GROUPS"}};
  for (auto& [id, s] : byId)
    rows.push_back({std::to_string(id), s.broker.host + ":" + std::to_string(s.broker.port),
                    std::to_string(s.groups.size())});
  rows.push_back({"-", "(no controller)", std::to_string(without.size())});
  printTable(rows);
  return kExitOk;
}

}  // namespace groupcoord::groupctl
