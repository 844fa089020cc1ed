#pragma once

// Group weights, as every server publishes them for the groups it
// controls (docs/design.md, "Placement"): <root>/loads/<server-id>, a
// persistent znode of text lines "<weight> <group>" after a first line
// "groupcoord-loads 1". Every server watches every such znode, so all of
// them read the same weights.
//
// Publishing is paced: a group this server has just taken is published
// within a second (with the larger of its member count and the weight
// known for it, for `claimGrace`, while its members come back); a weight
// change only when it exceeds `minChange` and a tenth of the weight, at most
// every `changeEvery`; groups no longer controlled here are dropped from
// the znode only with the next write, or after `dropAfter`.
//
// Threads: publish() and tick() on the ticker; completions on the
// completion thread; readers anywhere. Lock: mu_, never held while calling
// out.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "adapter/Clock.h"
#include "adapter/Hash.h"
#include "adapter/Placement.h"
#include "adapter/SessionEpoch.h"
#include "common/Layout.h"
#include "common/Sync.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

struct LoadBoardConfig {
  Millis claimGrace{30000};
  Millis changeEvery{5000};
  Millis dropAfter{30000};
  uint64_t minChange = 2;
  // The largest znode written; the heaviest groups are kept beyond it.
  size_t maxBytes = 900 * 1024;

  // Whether a group's weight `now` is a change worth publishing over the
  // `published` one: by more than minChange and more than a tenth of it.
  bool changeWorthPublishing(uint64_t published, uint64_t now) const {
    const uint64_t d = now > published ? now - published : published - now;
    return d > std::max(minChange, published / 10);
  }
};

class LoadBoard {
 public:
  LoadBoard(zk::Client& zk, const layout::Layout& layout, const TimeSource& time, const SessionEpoch& epoch,
            int32_t self, LoadBoardConfig config = {});

  // Lists the published znodes and watches the list and each of them.
  void watch() EXCLUDES(mu_);
  // While connected: lists or reads again what failed.
  void tick(TimePoint now) EXCLUDES(mu_);
  void rewatchSoon() EXCLUDES(mu_);
  // The session ended: nothing is known any more.
  void reset() EXCLUDES(mu_);

  // The groups controlled here and their weights now; writes this
  // server's znode when due (at most one write in flight).
  void publish(TimePoint now, const std::vector<std::pair<std::string, uint64_t>>& mine) EXCLUDES(mu_);

  // Fills each group's weight: the one its controller published, else the
  // largest any server published, else `unknown`.
  void fillWeights(std::vector<PlacementGroup>& groups, uint64_t unknown) const EXCLUDES(mu_);
  // Changes whenever a published weight changes.
  uint64_t version() const { return version_.load(); }
  // The list and every znode in it have been read.
  bool complete() const EXCLUDES(mu_);

  // The rule every reader applies, over server id -> (group -> weight):
  // the weight the group's controller published, else the largest any
  // server published, else `unknown`; at least 1.
  template <typename Nodes, typename WeightsOf>
  static uint64_t pick(const Nodes& nodes, WeightsOf weightsOf, const std::string& group, int32_t controller,
                       uint64_t unknown) {
    if (auto n = nodes.find(controller); n != nodes.end()) {
      const auto& w = weightsOf(n->second);
      if (auto it = w.find(group); it != w.end()) return std::max<uint64_t>(1, it->second);
    }
    uint64_t most = 0;
    bool found = false;
    for (auto& [_, node] : nodes) {
      const auto& w = weightsOf(node);
      if (auto it = w.find(group); it != w.end()) most = std::max(most, it->second), found = true;
    }
    return std::max<uint64_t>(1, found ? most : unknown);
  }

  static std::string encode(const std::vector<std::pair<std::string, uint64_t>>& weights, size_t maxBytes,
                            size_t* left = nullptr);
  static std::optional<std::unordered_map<std::string, uint64_t>> decode(const std::string& data);

 private:
  using Weights = std::unordered_map<std::string, uint64_t, NameHash, std::equal_to<>>;
  void watchList() EXCLUDES(mu_);
  void onListed(std::vector<std::string> children) EXCLUDES(mu_);
  void read(int32_t id) EXCLUDES(mu_);
  void written(zk::Error e, Weights sent, TimePoint at) EXCLUDES(mu_);

  zk::Client& zk_;
  const layout::Layout& layout_;
  const TimeSource& time_;
  const SessionEpoch& epoch_;
  const int32_t self_;
  const LoadBoardConfig config_;
  std::atomic<uint64_t> version_{0};

  mutable Mutex mu_;
  struct Node {
    Weights weights;
    bool read = false;
  };
  std::map<int32_t, Node> nodes_ GUARDED_BY(mu_);
  bool listed_ GUARDED_BY(mu_) = false;
  bool relist_ GUARDED_BY(mu_) = false;
  std::vector<int32_t> reread_ GUARDED_BY(mu_);
  // This server's side.
  bool writing_ GUARDED_BY(mu_) = false;
  bool warnedSize_ GUARDED_BY(mu_) = false;
  TimePoint lastWrite_ GUARDED_BY(mu_);
  TimePoint removedSince_ GUARDED_BY(mu_);  // groups published but no longer here; {}: none
  std::unordered_map<std::string, TimePoint, NameHash, std::equal_to<>> firstSeen_ GUARDED_BY(mu_);
};

}  // namespace groupcoord::adapter
