#include "protocol/ServersJson.h"

#include <algorithm>
#include <map>

namespace groupcoord::protocol {

namespace {

using nlohmann::json;

json serverIdJson(int32_t id) {
  if (id < 0) return nullptr;
  return id;
}

}  // namespace

ServerTable serverTable(const std::vector<GroupInfo>& groups, const DescribeServersResponse* placement) {
  std::map<int32_t, ServerRow> byId;
  if (placement != nullptr) {
    for (const auto& s : placement->servers) {
      ServerRow& row = byId[s.id];
      row.id = s.id;
      row.host = s.host;
      row.port = s.port;
      row.placement = s;
    }
  }
  ServerTable out;
  for (const auto& g : groups) {
    // Listed, then deleted before it could be read: it is nowhere now.
    if (g.error == ErrorCode::UNKNOWN_GROUP) continue;
    if (g.controller.isNone()) {
      out.withoutController.push_back(g.name);
      continue;
    }
    ServerRow& row = byId[g.controller.brokerId];
    row.id = g.controller.brokerId;
    if (row.host.empty()) {
      // Not live in the placement (or its address not read there yet).
      row.host = g.controller.host;
      row.port = g.controller.port;
    }
    row.groups.push_back(g.name);
  }
  std::sort(out.withoutController.begin(), out.withoutController.end());
  for (auto& [id, row] : byId) {
    std::sort(row.groups.begin(), row.groups.end());
    out.servers.push_back(std::move(row));
  }
  return out;
}

std::string_view serverStateName(const std::optional<ServerPlacement>& placement) {
  if (!placement) return "not live";
  if (placement->candidate) return "candidate";
  if (placement->drained) return "drained";
  return "settling";
}

std::string permilleText(int32_t permille) {
  if (permille < 0) return "?";
  std::string frac = std::to_string(1000 + permille % 1000).substr(1);  // three digits
  while (frac.size() > 2 && frac.back() == '0') frac.pop_back();
  return std::to_string(permille / 1000) + "." + frac;
}

std::string weightRuleText(const DescribeServersResponse& placement) {
  const std::string w = std::to_string(placement.groupWeight);
  if (placement.weighting == "members") return "weight = members + " + w;
  if (placement.weighting == "groups") return "weight = " + w + " per group";
  return "weight by " + (placement.weighting.empty() ? std::string("?") : placement.weighting);
}

std::string boundRuleText(const DescribeServersResponse& placement) {
  return "bound B = ceil((1+eps) x total / candidates): eps " + permilleText(placement.epsilonPermille) +
         ", margin " + permilleText(placement.marginPermille) + ", " + weightRuleText(placement);
}

size_t candidateCount(const DescribeServersResponse& placement) {
  return static_cast<size_t>(
      std::count_if(placement.servers.begin(), placement.servers.end(), [](const auto& s) { return s.candidate; }));
}

json serversJson(const std::vector<GroupInfo>& groups, const DescribeServersResponse* placement) {
  const ServerTable table = serverTable(groups, placement);
  json servers = json::array();
  for (const auto& row : table.servers) {
    json s = {{"id", row.id}, {"host", row.host}, {"port", row.port}, {"groups", row.groups}};
    if (placement != nullptr) {
      const auto& p = row.placement;
      s["live"] = p.has_value();
      s["state"] = std::string(serverStateName(p));
      s["drained"] = p && p->drained;
      s["settled"] = p && p->settled;
      s["candidate"] = p && p->candidate;
      s["load"] = p ? json(p->load) : json(nullptr);
      s["group_count"] = p ? json(p->groups) : json(nullptr);
      s["bound"] = p && p->candidate ? json(placement->bound) : json(nullptr);
      s["placed"] = p ? json(p->placed) : json(nullptr);
    }
    servers.push_back(std::move(s));
  }
  json out = {{"servers", servers}, {"without_controller", table.withoutController}};
  if (placement == nullptr) return out;
  json moves = json::array();
  for (const auto& m : placement->moves) {
    moves.push_back({{"group", m.group},
                     {"weight", m.weight},
                     {"from", serverIdJson(m.controller)},
                     {"to", serverIdJson(m.target)}});
  }
  out["server"] = placement->server;
  out["complete"] = placement->complete;
  out["total"] = placement->total;
  out["bound"] = placement->bound;
  out["candidates"] = candidateCount(*placement);
  out["epsilon_permille"] = placement->epsilonPermille;
  out["margin_permille"] = placement->marginPermille;
  out["weighting"] = placement->weighting;
  out["group_weight"] = placement->groupWeight;
  out["moves"] = moves;
  return out;
}

}  // namespace groupcoord::protocol
