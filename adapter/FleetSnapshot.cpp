#include "adapter/FleetSnapshot.h"

#include <charconv>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "adapter/LoadBoard.h"

namespace groupcoord::adapter {

FleetSnapshot readFleet(zk::Client& zk, const layout::Layout& layout, const std::vector<std::string>& groups,
                        Weighting weighting, uint64_t groupWeight, std::chrono::milliseconds wait) {
  FleetSnapshot out;
  std::map<int32_t, std::unordered_map<std::string, uint64_t>> loads;
  if (weighting == Weighting::Members) {
    auto list = zk.getChildrenSync(layout.loadsPath());
    if (list.error != zk::Error::Ok && list.error != zk::Error::NoNode) {
      out.error = "listing " + layout.loadsPath() + ": " + std::string(zk::errorName(list.error));
      return out;
    }
    for (auto& c : list.children) {
      auto id = layout::parseNodeId(c);
      if (!id) continue;
      auto g = zk.getSync(layout.loadsPath(*id));
      if (g.error == zk::Error::NoNode) continue;
      if (g.error != zk::Error::Ok) {
        out.error = "reading " + layout.loadsPath(*id) + ": " + std::string(zk::errorName(g.error));
        return out;
      }
      if (auto w = LoadBoard::decode(g.data)) loads[*id] = std::move(*w);
    }
  }
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;
    std::vector<int32_t> ids;
    bool failed = false;
  };
  auto sh = std::make_shared<Shared>();
  sh->left = groups.size();
  sh->ids.assign(groups.size(), -1);
  for (size_t i = 0; i < groups.size(); ++i) {
    zk.get(layout.controllerPath(groups[i]), [sh, i](zk::GetResult r) {
      int32_t id = -1;
      bool failed = false;
      if (r.error == zk::Error::Ok) {
        auto [p, ec] = std::from_chars(r.data.data(), r.data.data() + r.data.size(), id);
        if (ec != std::errc()) id = -1;
      } else if (r.error != zk::Error::NoNode) {
        failed = true;
      }
      std::lock_guard lock(sh->mu);
      sh->ids[i] = id;
      sh->failed = sh->failed || failed;
      if (--sh->left == 0) sh->cv.notify_all();
    });
  }
  {
    std::unique_lock lock(sh->mu);
    if (!sh->cv.wait_for(lock, wait, [&] { return sh->left == 0; })) {
      out.error = "controller znodes not all read in time";
      return out;
    }
    if (sh->failed) {
      out.error = "a controller znode could not be read";
      return out;
    }
    for (size_t i = 0; i < groups.size(); ++i) out.groups.push_back(PlacementGroup{groups[i], groupWeight, sh->ids[i]});
  }
  if (weighting == Weighting::Members) {
    // The rule the servers apply (LoadBoard::pick).
    auto weightsOf = [](const std::unordered_map<std::string, uint64_t>& w) -> const auto& { return w; };
    for (auto& g : out.groups) g.weight = LoadBoard::pick(loads, weightsOf, g.name, g.controller, groupWeight);
  }
  out.ok = true;
  return out;
}

}  // namespace groupcoord::adapter
