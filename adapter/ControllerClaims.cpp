#include "adapter/ControllerClaims.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <spdlog/spdlog.h>

#include "protocol/Codec.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;

namespace {

std::optional<int32_t> parseServerId(std::string_view text) {
  int32_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

bool ControllerClaims::Waiter::answer(protocol::Broker controller) {
  if (answered.exchange(true)) return false;
  done(protocol::CreateGroupResponse{group, ErrorCode::NONE, std::move(controller)});
  return true;
}

ControllerClaims::ControllerClaims(zk::Client& zk, const layout::Layout& layout, const TimeSource& time,
                                   const SessionEpoch& epoch, const ServerRegistry& servers, ClaimsConfig config,
                                   Events events)
    : zk_(zk),
      layout_(layout),
      time_(time),
      epoch_(epoch),
      servers_(servers),
      config_(config),
      events_(std::move(events)) {}

void ControllerClaims::watchGroups() {
  zk_.getChildren(
      layout_.groupsPath(),
      epoch_.bind([this](zk::ChildrenResult r) {
        if (r.error != zk::Error::Ok) {
          spdlog::warn("listing groups failed: {}", r.error);
          MutexLock lock(mu_);
          rewatchNeeded_ = true;
          return;
        }
        onGroupsListed(std::move(r.children));
      }),
      epoch_.bind([this](const zk::WatchEvent& ev) {
        if (ev.type != zk::WatchEvent::Type::Session) watchGroups();
      }));
}

void ControllerClaims::onGroupsListed(std::vector<std::string> names) {
  std::set<std::string> listed(names.begin(), names.end());
  std::vector<std::string> added, removed;
  {
    MutexLock lock(mu_);
    listedOnce_ = true;
    for (auto it = known_.begin(); it != known_.end();) {
      if (!listed.count(it->first)) {
        removed.push_back(it->first);
        unclaimed_.erase(it->first);
        it = known_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& n : listed) {
      if (!protocol::isValidName(n)) continue;  // not ours to touch
      auto [it, inserted] = known_.try_emplace(n);
      if (inserted) {
        it->second.watching = true;
        attention_.insert(n);
        added.push_back(n);
      }
    }
  }
  if (!added.empty() || !removed.empty()) ++version_;
  for (auto& n : removed) events_.lost(n, ErrorCode::UNKNOWN_GROUP, "its znode was deleted");
  for (auto& n : added) watchController(n);
}

void ControllerClaims::watchController(const std::string& group) {
  zk_.exists(
      layout_.controllerPath(group),
      epoch_.bind([this, group](zk::ExistsResult r) {
        TimePoint now = time_.now();
        {
          MutexLock lock(mu_);
          auto it = known_.find(group);
          if (it == known_.end()) return;
          KnownGroup& k = it->second;
          if (r.error == zk::Error::Ok) {
            k.hasController = true;
            unclaimed_.erase(group);
          } else if (r.error != zk::Error::NoNode) {
            k.watching = false;  // watched again by the tick
            attention_.insert(group);
            rewatchNeeded_ = true;
            return;
          } else {
            if (k.hasController || k.noControllerSince == TimePoint{}) k.noControllerSince = now;
            k.hasController = false;
            unclaimed_.insert(group);
            k.controller = -1;
            k.controllerRead = true;
            attention_.insert(group);
          }
        }
        if (r.error == zk::Error::Ok) return readController(group);
        ++version_;
        // A group that lost its controller here (our own znode vanished
        // without our session expiring) is no longer ours.
        events_.lost(group, ErrorCode::NOT_CONTROLLER, "its controller znode vanished");
        maybeClaim(group, now);
      }),
      epoch_.bind([this, group](const zk::WatchEvent& ev) {
        if (ev.type == zk::WatchEvent::Type::Session) return;
        if (ev.type == zk::WatchEvent::Type::Deleted) {
          {
            MutexLock lock(mu_);
            auto it = known_.find(group);
            if (it != known_.end() && it->second.hasController) {
              it->second.hasController = false;
              it->second.noControllerSince = time_.now();
              unclaimed_.insert(group);
              attention_.insert(group);
            }
            if (it != known_.end()) {
              it->second.controller = -1;
              it->second.controllerRead = false;  // until the watch set again says
            }
          }
          ++version_;
        }
        watchController(group);
      }));
}

// Which server the controller znode names. Not watched: the exists watch
// above tells when it changes, and reads it again.
void ControllerClaims::readController(const std::string& group) {
  zk_.get(layout_.controllerPath(group), epoch_.bind([this, group](zk::GetResult g) {
    {
      MutexLock lock(mu_);
      auto it = known_.find(group);
      if (it == known_.end() || !it->second.hasController) return;
      if (g.error == zk::Error::Ok) {
        auto id = parseServerId(g.data);
        if (!id) spdlog::warn("group {}: controller znode holds '{}', not a server id", group, g.data);
        it->second.controller = id.value_or(-1);
        it->second.controllerRead = true;
      } else if (g.error != zk::Error::NoNode) {
        // Read again with the next watch; counted as unread until then.
        it->second.watching = false;
        attention_.insert(group);
        rewatchNeeded_ = true;
        return;
      } else {
        return;  // gone again: the exists watch follows
      }
    }
    ++version_;
    claimWaiting();
  }));
}

void ControllerClaims::reconsider() {
  std::vector<std::string> names;
  {
    MutexLock lock(mu_);
    for (auto& [n, k] : known_)
      if (!k.hasController) names.push_back(n);
  }
  TimePoint now = time_.now();
  for (auto& n : names) maybeClaim(n, now);
}

void ControllerClaims::maybeClaim(const std::string& group, TimePoint now) {
  if (!events_.mayClaim()) return;
  // Asked before the lock: the registry has a lock of its own.
  const int32_t want = events_.preferred ? events_.preferred(group) : servers_.preferredServer(group);
  const bool preferred = want == servers_.self().id;
  {
    MutexLock lock(mu_);
    auto it = known_.find(group);
    if (it == known_.end() || it->second.hasController || it->second.claiming) return;
    // Not yet read whether it has a controller (the watch's first answer
    // sets the time): nothing is overdue yet.
    if (it->second.noControllerSince == TimePoint{}) return;
    bool overdue = now - it->second.noControllerSince >= config_.claimFallback;
    if (!preferred && !overdue) return;
    if (!preferred) {
      spdlog::info("group {} has had no controller for {} ms: claiming it", group,
                   millisBetween(it->second.noControllerSince, now));
    }
    it->second.claiming = true;
  }
  claim(group);
}

void ControllerClaims::claim(const std::string& group) {
  zk_.create(layout_.controllerPath(group), std::to_string(servers_.self().id), zk::CreateMode::Ephemeral,
             epoch_.bind([this, group](zk::CreateResult r) {
               {
                 MutexLock lock(mu_);
                 auto it = known_.find(group);
                 if (it != known_.end()) {
                   it->second.claiming = false;
                   if (r.error == zk::Error::Ok || r.error == zk::Error::NodeExists) {
                     it->second.hasController = true;
                     unclaimed_.erase(group);
                   }
                   if (r.error == zk::Error::Ok) {
                     it->second.controller = servers_.self().id;
                     it->second.controllerRead = true;
                   }
                   if (!it->second.hasController) attention_.insert(group);
                 }
               }
               if (r.error == zk::Error::Ok) ++version_;
               if (r.error == zk::Error::Ok) {
                 events_.claimed(group);
                 claimWaiting();
               } else if (r.error != zk::Error::NodeExists && r.error != zk::Error::NoNode) {
                 spdlog::warn("claiming group {} failed: {}; will retry", group, r.error);
               }
             }));
}

// Two servers whose views of the fleet differ for a moment (one has read a
// claim the other has not) may each name the other as a new group's
// target, and neither claims it. Every read of a controller brings this
// server's view closer to the others', so the groups waiting for a
// controller are asked about again then, not only at the next tick: once
// the views agree, the target claims. A CreateGroup is answered without a
// tick in between. Many groups waiting at once (a server's groups after it
// died) are left to the tick: asking about each at every read would cost
// the square of their number.
void ControllerClaims::claimWaiting() {
  std::vector<std::string> waiting;
  {
    MutexLock lock(mu_);
    if (unclaimed_.empty() || unclaimed_.size() > kClaimWaitingMax) return;
    for (auto& n : unclaimed_) {
      auto k = known_.find(n);
      if (k == known_.end()) continue;
      const KnownGroup& g = k->second;
      if (g.watching && !g.hasController && !g.claiming && g.noControllerSince != TimePoint{}) waiting.push_back(n);
    }
  }
  if (waiting.empty()) return;
  const TimePoint now = time_.now();
  for (auto& n : waiting) maybeClaim(n, now);
}

void ControllerClaims::tick(TimePoint now) {
  std::vector<std::string> unclaimed, unwatched;
  bool rewatch;
  {
    MutexLock lock(mu_);
    rewatch = std::exchange(rewatchNeeded_, false);
    for (auto n = attention_.begin(); n != attention_.end();) {
      auto k = known_.find(*n);
      if (k != known_.end() && !k->second.watching) {
        k->second.watching = true;
        unwatched.push_back(*n);
        ++n;  // until the watch says it has a controller
      } else if (k != known_.end() && !k->second.hasController && !k->second.claiming) {
        unclaimed.push_back(*n);
        ++n;
      } else {
        n = attention_.erase(n);  // gone, controlled, or being claimed (its answer puts it back)
      }
    }
  }
  if (rewatch) watchGroups();
  for (auto& n : unwatched) watchController(n);
  for (auto& n : unclaimed) maybeClaim(n, now);
}

void ControllerClaims::expireWaiters(TimePoint now, bool connected) {
  std::vector<std::shared_ptr<Waiter>> expired, rewatch;
  {
    MutexLock lock(mu_);
    auto end = std::remove_if(waiters_.begin(), waiters_.end(), [&](const std::shared_ptr<Waiter>& w) {
      if (w->answered) return true;
      if (now < w->deadline) {
        if (connected && w->rewatch.exchange(false)) rewatch.push_back(w);
        return false;
      }
      expired.push_back(w);
      return true;
    });
    waiters_.erase(end, waiters_.end());
  }
  for (auto& w : rewatch) watchForController(w);
  for (auto& w : expired) {
    if (w->answer(protocol::Broker{})) {
      spdlog::warn("group {} was created but no controller claimed it within {} ms", w->group,
                   config_.createWaitForController.count());
    }
  }
}

void ControllerClaims::answerWaiters(Outbox& out) {
  MutexLock lock(mu_);
  for (auto& w : waiters_) out.push([w] { w->answer(protocol::Broker{}); });
  waiters_.clear();
}

void ControllerClaims::rewatchSoon() {
  MutexLock lock(mu_);
  rewatchNeeded_ = true;
}

void ControllerClaims::reset() {
  {
    MutexLock lock(mu_);
    known_.clear();
    unclaimed_.clear();
    attention_.clear();
  }
  ++version_;
}

int32_t ControllerClaims::controllerOf(const std::string& group) const {
  MutexLock lock(mu_);
  auto it = known_.find(group);
  if (it == known_.end()) return -1;
  return it->second.hasController && it->second.controllerRead ? it->second.controller : -1;
}

std::vector<std::pair<std::string, int32_t>> ControllerClaims::controllers(bool* complete) const {
  std::vector<std::pair<std::string, int32_t>> out;
  bool all = true;
  MutexLock lock(mu_);
  out.reserve(known_.size());
  for (auto& [name, k] : known_) {
    out.emplace_back(name, k.hasController && k.controllerRead ? k.controller : -1);
    if (!k.controllerRead) all = false;
  }
  if (complete) *complete = all;
  return out;
}

ErrorCode ControllerClaims::notHere(const std::string& group, bool connected) const {
  MutexLock lock(mu_);
  auto it = known_.find(group);
  // Unknown here. While ZooKeeper is away, or before this server has
  // listed the groups once (it has just started), it cannot tell.
  if (it == known_.end()) {
    return connected && listedOnce_ ? ErrorCode::UNKNOWN_GROUP : ErrorCode::CONTROLLER_NOT_AVAILABLE;
  }
  return it->second.hasController ? ErrorCode::NOT_CONTROLLER : ErrorCode::CONTROLLER_NOT_AVAILABLE;
}

bool ControllerClaims::listedOnce() const {
  MutexLock lock(mu_);
  return listedOnce_;
}

void ControllerClaims::awaitController(const std::string& group, protocol::ResponseCallback done) {
  auto w = std::make_shared<Waiter>();
  w->group = group;
  w->deadline = time_.now() + config_.createWaitForController;
  w->done = std::move(done);
  {
    MutexLock lock(mu_);
    waiters_.push_back(w);
  }
  watchForController(w);
}

void ControllerClaims::watchForController(const std::shared_ptr<Waiter>& w) {
  if (w->answered) return;
  // Not bound to the session: a CreateGroup is answered whatever happens
  // to it, here or by the tick.
  zk_.exists(
      layout_.controllerPath(w->group),
      [this, w](zk::ExistsResult r) {
        if (w->answered) return;
        // NoNode: the watch tells when it appears. Any other failure set no
        // watch: the tick tries again (expireWaiters) until the deadline.
        if (r.error != zk::Error::Ok && r.error != zk::Error::NoNode) w->rewatch = true;
        if (r.error != zk::Error::Ok) return;
        zk_.get(layout_.controllerPath(w->group), [this, w](zk::GetResult g) {
          if (g.error != zk::Error::Ok) return;
          if (auto id = parseServerId(g.data)) {
            w->answer(servers_.brokerOf(*id));
          } else {
            spdlog::warn("group {}: controller znode holds '{}', not a server id", w->group, g.data);
          }
        });
      },
      [this, w](const zk::WatchEvent& ev) {
        if (!w->answered && ev.type != zk::WatchEvent::Type::Session) watchForController(w);
      });
}

}  // namespace groupcoord::adapter
