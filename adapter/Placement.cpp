#include "adapter/Placement.h"

#include <algorithm>
#include <tuple>

#include "adapter/Hash.h"

namespace groupcoord::adapter {

namespace {

uint64_t weightOf(const PlacementGroup& g) { return std::max<uint64_t>(1, g.weight); }

// The slot of `id` in the sorted candidate list; -1 when not a candidate.
int slotOf(const std::vector<int32_t>& ids, int32_t id) {
  auto it = std::lower_bound(ids.begin(), ids.end(), id);
  return it != ids.end() && *it == id ? static_cast<int>(it - ids.begin()) : -1;
}

std::vector<int32_t> sortedUnique(std::vector<int32_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

std::vector<int32_t> rendezvousOrder(const std::string& group, const std::vector<int32_t>& candidates) {
  const uint64_t h = fnv1a(group);
  std::vector<std::pair<uint64_t, int32_t>> scored;
  scored.reserve(candidates.size());
  for (int32_t id : candidates) scored.emplace_back(rendezvousScore(h, id), id);
  // Highest score first; the lower id on a tie (as RendezvousChoice).
  std::sort(scored.begin(), scored.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<int32_t> out;
  out.reserve(scored.size());
  for (auto& [_, id] : scored) out.push_back(id);
  return out;
}

PlacementResult place(const std::vector<int32_t>& candidateList, const std::vector<PlacementGroup>& groups,
                      const PlacementConfig& config) {
  PlacementResult r;
  const std::vector<int32_t> ids = sortedUnique(candidateList);
  r.target.assign(groups.size(), -1);
  for (auto& g : groups) r.total += weightOf(g);
  if (ids.empty()) {
    for (size_t i = 0; i < groups.size(); ++i) r.target[i] = groups[i].controller;
    return r;
  }
  const uint64_t n = ids.size();
  // ceil(total x (1000 + eps) / (1000 x n)), in integers so that every
  // server rounds alike.
  const uint64_t scaled = r.total * (1000 + config.epsilonPermille);
  r.bound = std::max<uint64_t>(1, (scaled + 1000 * n - 1) / (1000 * n));
  const uint64_t threshold = r.bound + r.bound * config.marginPermille / 1000;

  std::vector<uint64_t> load(ids.size(), 0);
  std::vector<std::vector<size_t>> held(ids.size());
  std::vector<size_t> movable;
  for (size_t i = 0; i < groups.size(); ++i) {
    const int s = groups[i].controller >= 0 ? slotOf(ids, groups[i].controller) : -1;
    if (s < 0) {
      movable.push_back(i);
      continue;
    }
    r.target[i] = groups[i].controller;
    load[static_cast<size_t>(s)] += weightOf(groups[i]);
    held[static_cast<size_t>(s)].push_back(i);
  }
  r.servers.resize(ids.size());
  for (size_t s = 0; s < ids.size(); ++s) {
    r.servers[s].id = ids[s];
    r.servers[s].load = load[s];
    r.servers[s].groups = static_cast<uint32_t>(held[s].size());
  }

  // 2. Servers over the bound by more than the margin give groups up.
  for (size_t s = 0; s < ids.size(); ++s) {
    if (load[s] <= threshold) continue;
    struct Key {
      uint64_t weight;
      size_t rank;  // of this server in the group's own order: higher goes first
      uint64_t hash;
      size_t index;
    };
    std::vector<Key> keys;
    keys.reserve(held[s].size());
    for (size_t i : held[s]) {
      const auto order = rendezvousOrder(groups[i].name, ids);
      const size_t rank = static_cast<size_t>(std::find(order.begin(), order.end(), ids[s]) - order.begin());
      keys.push_back({weightOf(groups[i]), rank, fnv1a(groups[i].name), i});
    }
    std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
      if (a.weight != b.weight) return a.weight > b.weight;
      if (a.rank != b.rank) return a.rank > b.rank;
      if (a.hash != b.hash) return a.hash < b.hash;
      return groups[a.index].name < groups[b.index].name;
    });
    for (const Key& k : keys) {
      if (load[s] <= r.bound) break;
      load[s] -= k.weight;
      movable.push_back(k.index);
    }
  }

  // The fixed order of steps 3 and 4: heaviest first, then by name hash.
  auto heavierFirst = [&](size_t a, size_t b) {
    const uint64_t wa = weightOf(groups[a]), wb = weightOf(groups[b]);
    if (wa != wb) return wa > wb;
    const uint64_t ha = fnv1a(groups[a].name), hb = fnv1a(groups[b].name);
    if (ha != hb) return ha < hb;
    return groups[a].name < groups[b].name;
  };
  // 3. Placed in that order.
  std::sort(movable.begin(), movable.end(), heavierFirst);
  for (size_t i : movable) {
    const uint64_t w = weightOf(groups[i]);
    const auto order = rendezvousOrder(groups[i].name, ids);
    int chosen = -1;
    int lightest = -1;
    const int current = groups[i].controller >= 0 ? slotOf(ids, groups[i].controller) : -1;
    for (int32_t id : order) {
      const int s = slotOf(ids, id);
      if (load[static_cast<size_t>(s)] + w <= r.bound) {
        chosen = s;
        break;
      }
      // No room anywhere: the least loaded, and among equals the group's
      // own controller. A server left over the bound by a group that fits
      // nowhere gives up its heaviest group on the next computation, which
      // then comes back to it: so computing again moves nothing.
      const uint64_t l = load[static_cast<size_t>(s)];
      if (lightest < 0 || l < load[static_cast<size_t>(lightest)] ||
          (l == load[static_cast<size_t>(lightest)] && s == current)) {
        lightest = s;
      }
    }
    if (chosen < 0) chosen = lightest;
    load[static_cast<size_t>(chosen)] += w;
    r.target[i] = ids[static_cast<size_t>(chosen)];
  }
  // 4. A server still over the bound by the margin (its heaviest group fit
  // nowhere, and came back to it as the least loaded) gives up lighter
  // groups that do fit elsewhere: heaviest first, each to the first server
  // of its own order with room.
  for (size_t s = 0; s < ids.size(); ++s) {
    if (load[s] <= threshold) continue;
    std::vector<size_t> mine;
    for (size_t i = 0; i < groups.size(); ++i)
      if (r.target[i] == ids[s]) mine.push_back(i);
    std::sort(mine.begin(), mine.end(), heavierFirst);
    for (size_t i : mine) {
      if (load[s] <= r.bound) break;
      const uint64_t w = weightOf(groups[i]);
      for (int32_t id : rendezvousOrder(groups[i].name, ids)) {
        const int d = slotOf(ids, id);
        if (static_cast<size_t>(d) == s || load[static_cast<size_t>(d)] + w > r.bound) continue;
        load[s] -= w;
        load[static_cast<size_t>(d)] += w;
        r.target[i] = id;
        break;
      }
    }
  }
  for (size_t s = 0; s < ids.size(); ++s) r.servers[s].placed = load[s];
  for (size_t i = 0; i < groups.size(); ++i) r.moves += r.target[i] != groups[i].controller ? 1 : 0;
  return r;
}

size_t minimumMoves(const std::vector<int32_t>& candidateList, const std::vector<PlacementGroup>& groups,
                    uint64_t bound) {
  const std::vector<int32_t> ids = sortedUnique(candidateList);
  std::vector<std::vector<uint64_t>> held(ids.size());
  size_t moves = 0;
  for (auto& g : groups) {
    const int s = g.controller >= 0 ? slotOf(ids, g.controller) : -1;
    if (s < 0) {
      ++moves;  // its controller is no candidate: it moves whatever happens
    } else {
      held[static_cast<size_t>(s)].push_back(weightOf(g));
    }
  }
  for (auto& ws : held) {
    uint64_t load = 0;
    for (uint64_t w : ws) load += w;
    std::sort(ws.rbegin(), ws.rend());
    for (uint64_t w : ws) {
      if (load <= bound) break;
      load -= w;
      ++moves;
    }
  }
  return moves;
}

}  // namespace groupcoord::adapter
