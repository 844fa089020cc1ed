#include "adapter/LoadBoard.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <spdlog/spdlog.h>

namespace groupcoord::adapter {

namespace {

constexpr std::string_view kHeader = "groupcoord-loads 1\n";
constexpr Millis kAddedEvery{1000};

}  // namespace

LoadBoard::LoadBoard(zk::Client& zk, const layout::Layout& layout, const TimeSource& time, const SessionEpoch& epoch,
                     int32_t self, LoadBoardConfig config)
    : zk_(zk), layout_(layout), time_(time), epoch_(epoch), self_(self), config_(config) {}

std::string LoadBoard::encode(const std::vector<std::pair<std::string, uint64_t>>& weights, size_t maxBytes,
                              size_t* left) {
  // Heaviest first, so that a cut keeps the groups that weigh most.
  std::vector<const std::pair<std::string, uint64_t>*> order;
  order.reserve(weights.size());
  for (auto& w : weights) order.push_back(&w);
  std::sort(order.begin(), order.end(),
            [](auto* a, auto* b) { return a->second != b->second ? a->second > b->second : a->first < b->first; });
  std::string out(kHeader);
  size_t cut = 0;
  for (auto* w : order) {
    std::string line = std::to_string(w->second) + " " + w->first + "\n";
    if (out.size() + line.size() > maxBytes) {
      ++cut;
      continue;
    }
    out += line;
  }
  if (left) *left = cut;
  return out;
}

std::optional<std::unordered_map<std::string, uint64_t>> LoadBoard::decode(const std::string& data) {
  if (data.compare(0, kHeader.size(), kHeader) != 0) return std::nullopt;
  std::unordered_map<std::string, uint64_t> out;
  size_t at = kHeader.size();
  while (at < data.size()) {
    size_t end = data.find('\n', at);
    if (end == std::string::npos) return std::nullopt;
    const size_t space = data.find(' ', at);
    if (space == std::string::npos || space >= end || space == at || space + 1 == end) return std::nullopt;
    uint64_t w = 0;
    auto [p, ec] = std::from_chars(data.data() + at, data.data() + space, w);
    if (ec != std::errc() || p != data.data() + space) return std::nullopt;
    out[data.substr(space + 1, end - space - 1)] = w;
    at = end + 1;
  }
  return out;
}

void LoadBoard::watch() { watchList(); }

void LoadBoard::watchList() {
  zk_.getChildren(
      layout_.loadsPath(),
      epoch_.bind([this](zk::ChildrenResult r) {
        if (r.error == zk::Error::NoNode) return onListed({});
        if (r.error != zk::Error::Ok) {
          spdlog::warn("listing published group weights failed: {}", r.error);
          MutexLock lock(mu_);
          relist_ = true;
          return;
        }
        onListed(std::move(r.children));
      }),
      epoch_.bind([this](const zk::WatchEvent& ev) {
        if (ev.type != zk::WatchEvent::Type::Session) watchList();
      }));
}

void LoadBoard::onListed(std::vector<std::string> children) {
  std::set<int32_t> ids;
  for (auto& c : children)
    if (auto id = layout::parseNodeId(c)) ids.insert(*id);
  std::vector<int32_t> added;
  bool removed = false;
  {
    MutexLock lock(mu_);
    listed_ = true;
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      if (!ids.count(it->first)) {
        it = nodes_.erase(it);
        removed = true;
      } else {
        ++it;
      }
    }
    for (int32_t id : ids)
      if (nodes_.try_emplace(id).second) added.push_back(id);
  }
  if (removed) ++version_;
  for (int32_t id : added) read(id);
}

void LoadBoard::read(int32_t id) {
  zk_.get(
      layout_.loadsPath(id),
      epoch_.bind([this, id](zk::GetResult g) {
        {
          MutexLock lock(mu_);
          auto it = nodes_.find(id);
          if (it == nodes_.end()) return;
          if (g.error == zk::Error::NoNode) {
            nodes_.erase(it);  // the list's watch says so too
          } else if (g.error != zk::Error::Ok) {
            spdlog::warn("reading the group weights server {} published failed: {}", id, g.error);
            reread_.push_back(id);
            return;
          } else if (auto w = decode(g.data)) {
            it->second.weights = Weights(w->begin(), w->end());
            it->second.read = true;
          } else {
            spdlog::warn("server {} published group weights this server cannot read; ignoring them", id);
            it->second.weights.clear();
            it->second.read = true;
          }
        }
        ++version_;
      }),
      epoch_.bind([this, id](const zk::WatchEvent& ev) {
        if (ev.type == zk::WatchEvent::Type::Session) return;
        if (ev.type == zk::WatchEvent::Type::Deleted) return;  // the list's watch removes it
        read(id);
      }));
}

void LoadBoard::tick(TimePoint) {
  bool relist;
  std::vector<int32_t> reread;
  {
    MutexLock lock(mu_);
    relist = std::exchange(relist_, false);
    reread.swap(reread_);
  }
  if (relist) watchList();
  for (int32_t id : reread) read(id);
}

void LoadBoard::rewatchSoon() {
  MutexLock lock(mu_);
  relist_ = true;
}

void LoadBoard::reset() {
  {
    MutexLock lock(mu_);
    nodes_.clear();
    listed_ = false;
    relist_ = false;
    reread_.clear();
    writing_ = false;
    firstSeen_.clear();
    removedSince_ = TimePoint{};
  }
  ++version_;
}

void LoadBoard::fillWeights(std::vector<PlacementGroup>& groups, uint64_t unknown) const {
  MutexLock lock(mu_);
  auto weightsOf = [](const Node& n) -> const Weights& { return n.weights; };
  for (auto& g : groups) g.weight = pick(nodes_, weightsOf, g.name, g.controller, unknown);
}

bool LoadBoard::complete() const {
  MutexLock lock(mu_);
  if (!listed_) return false;
  for (auto& [_, n] : nodes_)
    if (!n.read) return false;
  return true;
}

void LoadBoard::publish(TimePoint now, const std::vector<std::pair<std::string, uint64_t>>& mine) {
  std::vector<std::pair<std::string, uint64_t>> next;
  Weights sent;
  {
    MutexLock lock(mu_);
    if (writing_ || !listed_) return;
    static const Weights kNone;
    auto self = nodes_.find(self_);
    // What this server's znode holds must be known before it is replaced.
    if (self != nodes_.end() && !self->second.read) return;
    const Weights& before = self != nodes_.end() ? self->second.weights : kNone;

    bool added = false, changed = false;
    std::set<std::string_view> here;
    next.reserve(mine.size());
    for (auto& [name, count] : mine) {
      uint64_t w = count;
      auto [seen, _] = firstSeen_.try_emplace(name, now);
      if (now - seen->second < config_.claimGrace) {
        // Just taken: its members may not have come back yet.
        for (auto& [id, n] : nodes_)
          if (auto it = n.weights.find(name); it != n.weights.end()) w = std::max(w, it->second);
      }
      next.emplace_back(name, w);
      here.insert(name);
      auto old = before.find(name);
      if (old == before.end()) {
        added = true;
      } else if (config_.changeWorthPublishing(old->second, w)) {
        changed = true;
      }
    }
    for (auto it = firstSeen_.begin(); it != firstSeen_.end();) {
      it = here.count(it->first) ? std::next(it) : firstSeen_.erase(it);
    }
    bool removed = false;
    for (auto& [name, _] : before)
      if (!here.count(name)) removed = true;
    if (!removed) {
      removedSince_ = TimePoint{};
    } else if (removedSince_ == TimePoint{}) {
      removedSince_ = now;
    }
    const bool due = (added && now - lastWrite_ >= kAddedEvery) || (changed && now - lastWrite_ >= config_.changeEvery) ||
                     (removed && now - removedSince_ >= config_.dropAfter);
    if (!due) return;
    writing_ = true;
  }
  size_t cut = 0;
  std::string data = encode(next, config_.maxBytes, &cut);
  if (cut > 0) {
    MutexLock lock(mu_);
    if (!std::exchange(warnedSize_, true)) {
      spdlog::warn("the weights of {} lighter groups controlled here do not fit their znode ({} bytes); they count "
                   "as unknown in the placement",
                   cut, config_.maxBytes);
    }
  }
  for (auto& [name, w] : next) sent.emplace(name, w);
  const std::string path = layout_.loadsPath(self_);
  zk_.set(path, data, zk::kAnyVersion,
          epoch_.bind([this, path, data, sent = std::move(sent), now](zk::SetResult r) mutable {
            if (r.error != zk::Error::NoNode) return written(r.error, std::move(sent), now);
            zk_.create(path, data, zk::CreateMode::Persistent,
                       epoch_.bind([this, sent = std::move(sent), now](zk::CreateResult c) mutable {
                         written(c.error, std::move(sent), now);
                       }));
          }));
}

void LoadBoard::written(zk::Error e, Weights sent, TimePoint at) {
  {
    MutexLock lock(mu_);
    writing_ = false;
    if (e != zk::Error::Ok) {
      lastWrite_ = at;  // tried again after the pacing interval
      spdlog::warn("publishing the weights of the groups controlled here failed: {}", e);
      return;
    }
    lastWrite_ = at;
    Node& n = nodes_[self_];
    n.weights = std::move(sent);
    n.read = true;
  }
  ++version_;
}

}  // namespace groupcoord::adapter
