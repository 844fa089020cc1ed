#include "adapter/ServerRegistry.h"

#include <charconv>
#include <set>

#include <spdlog/spdlog.h>

#include "adapter/Hash.h"

namespace groupcoord::adapter {

ServerRegistry::ServerRegistry(zk::Client& zk, const layout::Layout& layout, const TimeSource& time,
                               const SessionEpoch& epoch, Events events)
    : zk_(zk), layout_(layout), time_(time), epoch_(epoch), events_(std::move(events)) {}

void ServerRegistry::retryRegistrationLater() {
  MutexLock lock(mu_);
  nextRegisterAttempt_ = time_.now() + Millis(500);
  registering_ = false;
}

void ServerRegistry::registerSelf() {
  if (registered_ || registering_.exchange(true)) return;
  std::string path = layout_.serverPath(self_.id);
  zk_.create(
      path, layout::encodeServer(self_.host, self_.port), zk::CreateMode::Ephemeral,
      epoch_.bind([this, path](zk::CreateResult r) {
        if (r.error == zk::Error::Ok) {
          registered_ = true;
          registering_ = false;
          spdlog::info("server {} registered at {} as {}:{}", self_.id, path, self_.host, self_.port);
          events_.registeredNow();
          return;
        }
        if (r.error != zk::Error::NodeExists) {
          spdlog::warn("registering server {} failed: {}; retrying", self_.id, r.error);
          return retryRegistrationLater();
        }
        // Ours from this session (a retry after connection loss), or
        // another live session holds this id.
        zk_.exists(path, epoch_.bind([this, path](zk::ExistsResult e) {
          if (e.error == zk::Error::Ok && e.stat.ephemeralOwner == zk_.sessionId()) {
            registered_ = true;
            registering_ = false;
            spdlog::info("server {} registered at {}", self_.id, path);
            return;
          }
          spdlog::warn(
              "server id {} is already registered by ZooKeeper session 0x{:x}: another groupcoordd with the same "
              "server id, or this server's previous run whose session has not expired yet; retrying",
              self_.id, e.stat.ephemeralOwner);
          retryRegistrationLater();
        }));
      }));
}

void ServerRegistry::watch() {
  zk_.getChildren(
      layout_.serversPath(),
      epoch_.bind([this](zk::ChildrenResult r) {
        if (r.error != zk::Error::Ok) {
          spdlog::warn("listing servers failed: {}", r.error);
          MutexLock lock(mu_);
          rewatchNeeded_ = true;
          return;
        }
        onListed(std::move(r.children));
      }),
      epoch_.bind([this](const zk::WatchEvent& ev) {
        if (ev.type != zk::WatchEvent::Type::Session) watch();
      }));
}

void ServerRegistry::onListed(std::vector<std::string> children) {
  std::set<int32_t> ids;
  for (auto& c : children) {
    int32_t v = 0;
    auto [end, ec] = std::from_chars(c.data(), c.data() + c.size(), v);
    if (ec == std::errc() && end == c.data() + c.size()) ids.insert(v);
  }
  std::vector<int32_t> unknown;
  {
    MutexLock lock(mu_);
    for (auto it = servers_.begin(); it != servers_.end();) {
      if (!ids.count(it->first)) {
        spdlog::info("server {} left", it->first);
        it = servers_.erase(it);
      } else {
        ++it;
      }
    }
    for (int32_t id : ids) {
      if (servers_.try_emplace(id, protocol::Broker{id, "", 0}).second) unknown.push_back(id);
    }
  }
  for (int32_t id : unknown) {
    zk_.get(layout_.serverPath(id), epoch_.bind([this, id](zk::GetResult g) {
      if (g.error != zk::Error::Ok) return;
      auto b = layout::decodeServer(id, g.data);
      if (!b) {
        spdlog::warn("server {} registered unreadable data: {}", id, g.data);
        return;
      }
      spdlog::info("server {} is live at {}:{}", id, b->host, b->port);
      MutexLock lock(mu_);
      if (auto it = servers_.find(id); it != servers_.end()) it->second = *b;
    }));
  }
  // The set of live servers decides who should claim what.
  events_.changed();
}

void ServerRegistry::tick(TimePoint now) {
  bool registerNow, rewatch;
  {
    MutexLock lock(mu_);
    registerNow = !registered_ && !registering_ && now >= nextRegisterAttempt_;
    rewatch = std::exchange(rewatchNeeded_, false);
  }
  if (registerNow) registerSelf();
  if (rewatch) watch();
}

void ServerRegistry::rewatchSoon() {
  MutexLock lock(mu_);
  rewatchNeeded_ = true;
}

void ServerRegistry::reset() {
  registered_ = false;
  registering_ = false;
  MutexLock lock(mu_);
  servers_.clear();
}

int32_t ServerRegistry::preferredServer(const std::string& group) const {
  // Rendezvous hashing: each group goes to the live server with the highest
  // score; when a server leaves, only its groups move.
  uint64_t h = fnv1a(group);
  int32_t best = self_.id;
  uint64_t bestScore = mix64(h ^ mix64(static_cast<uint64_t>(self_.id)));
  MutexLock lock(mu_);
  for (auto& [id, _] : servers_) {
    uint64_t s = mix64(h ^ mix64(static_cast<uint64_t>(id)));
    if (s > bestScore || (s == bestScore && id < best)) {
      best = id;
      bestScore = s;
    }
  }
  return best;
}

protocol::Broker ServerRegistry::brokerOf(int32_t serverId) const {
  if (serverId == self_.id) return protocol::Broker{serverId, self_.host, self_.port};
  MutexLock lock(mu_);
  auto it = servers_.find(serverId);
  if (it == servers_.end() || it->second.host.empty()) return protocol::Broker{};
  return it->second;
}

std::vector<int32_t> ServerRegistry::liveServers() const {
  MutexLock lock(mu_);
  std::vector<int32_t> ids;
  for (auto& [id, _] : servers_) ids.push_back(id);
  return ids;
}

}  // namespace groupcoord::adapter
