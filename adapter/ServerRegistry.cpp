#include "adapter/ServerRegistry.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "adapter/Hash.h"
#include "adapter/ZkErrors.h"

namespace groupcoord::adapter {

ServerRegistry::ServerRegistry(zk::Client& zk, const layout::Layout& layout, const TimeSource& time,
                               const SessionEpoch& epoch, Events events, Millis settleDelay)
    : zk_(zk), layout_(layout), time_(time), epoch_(epoch), events_(std::move(events)), settleDelay_(settleDelay) {}

void ServerRegistry::retryRegistrationLater() {
  MutexLock lock(mu_);
  nextRegisterAttempt_ = time_.now() + Millis(500);
  registering_ = false;
}

void ServerRegistry::registerSelf() {
  if (registered_ || registering_.exchange(true)) return;
  {
    // Sent before any other server can see it: this server counts itself
    // settled no later than they do.
    MutexLock lock(mu_);
    selfSince_ = time_.now();
  }
  std::string path = layout_.serverPath(self_.id);
  zk_.create(
      path, layout::encodeServer(self_.host, self_.port, self_.internalHost, self_.internalPort, self_.kafkaPort), zk::CreateMode::Ephemeral,
      epoch_.bind([this, path](zk::CreateResult r) {
        if (r.error == zk::Error::Ok) {
          registered_ = true;
          registering_ = false;
          if (const int64_t since = idTakenSince_.exchange(0); since != 0) {
            const int64_t now = std::chrono::duration_cast<Millis>(time_.now().time_since_epoch()).count();
            spdlog::info("server id {} was free again after {} ms", self_.id, now - since);
          }
          if (self_.internalPort != 0) {
            spdlog::info("server {} registered at {} as {}:{} (inside its network {}:{})", self_.id, path, self_.host,
                         self_.port, self_.internalHost, self_.internalPort);
          } else {
            spdlog::info("server {} registered at {} as {}:{}", self_.id, path, self_.host, self_.port);
          }
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
          // Said once: after a crash the previous run's session lives on
          // until ZooKeeper expires it, and the retries until then are
          // expected. The line of the registration says how long it took.
          if (idTakenSince_.load() == 0) {
            idTakenSince_ =
                std::max<int64_t>(1, std::chrono::duration_cast<Millis>(time_.now().time_since_epoch()).count());
            spdlog::warn(
                "server id {} is already registered by ZooKeeper session 0x{:x}: another groupcoordd with the same "
                "server id, or this server's previous run whose session has not expired yet; retrying until it "
                "goes",
                self_.id, e.stat.ephemeralOwner);
          }
          retryRegistrationLater();
        }));
      }));
}

void ServerRegistry::watch() {
  watchServers();
  watchDraining();
}

// Each list re-arms only its own watch: one watch per list, however often
// the other changes.
void ServerRegistry::watchServers() {
  zk_.getChildren(
      layout_.serversPath(),
      epoch_.bind([this](zk::ChildrenResult r) {
        if (r.error != zk::Error::Ok) {
          spdlog::warn("listing servers failed: {}", r.error);
          MutexLock lock(mu_);
          relistServers_ = true;
          return;
        }
        onListed(std::move(r.children));
      }),
      epoch_.bind([this](const zk::WatchEvent& ev) {
        if (ev.type != zk::WatchEvent::Type::Session) watchServers();
      }));
}

void ServerRegistry::watchDraining() {
  zk_.getChildren(
      layout_.drainingPath(),
      epoch_.bind([this](zk::ChildrenResult r) {
        if (r.error == zk::Error::NoNode) return onDrainingListed({});  // the watch tells when it appears
        if (r.error != zk::Error::Ok) {
          spdlog::warn("listing drained servers failed: {}", r.error);
          MutexLock lock(mu_);
          relistDraining_ = true;
          return;
        }
        onDrainingListed(std::move(r.children));
      }),
      epoch_.bind([this](const zk::WatchEvent& ev) {
        if (ev.type != zk::WatchEvent::Type::Session) watchDraining();
      }));
}

void ServerRegistry::onDrainingListed(std::vector<std::string> children) {
  std::set<int32_t> ids;
  for (auto& c : children)
    if (auto id = layout::parseNodeId(c)) ids.insert(*id);
  {
    MutexLock lock(mu_);
    if (ids == draining_) return;
    for (int32_t id : ids)
      if (!draining_.count(id)) spdlog::info("server {} is drained: it takes no group", id);
    for (int32_t id : draining_)
      if (!ids.count(id)) spdlog::info("server {} is no longer drained", id);
    draining_ = std::move(ids);
  }
  events_.changed();
}

void ServerRegistry::onListed(std::vector<std::string> children) {
  std::set<int32_t> ids;
  for (auto& c : children)
    if (auto id = layout::parseNodeId(c)) ids.insert(*id);
  std::vector<int32_t> unknown;
  const TimePoint now = time_.now();
  {
    MutexLock lock(mu_);
    // The servers already there when this one (re)started have been live
    // for as long as anybody can tell: settled, as the others see them. A
    // server that finds nobody else is the fleet: settled itself.
    const bool first = std::exchange(firstListing_, false);
    const TimePoint seen = first ? TimePoint{} : now;
    if (first && (ids.empty() || (ids.size() == 1 && ids.count(self_.id)))) selfSince_ = TimePoint{};
    for (auto it = servers_.begin(); it != servers_.end();) {
      if (!ids.count(it->first)) {
        spdlog::info("server {} left", it->first);
        it = servers_.erase(it);
      } else {
        ++it;
      }
    }
    for (int32_t id : ids) {
      if (servers_.try_emplace(id, Known{protocol::Broker{id, "", 0}, id == self_.id ? now : seen}).second) {
        unknown.push_back(id);
      }
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
      auto internal = layout::decodeServerInternal(id, g.data);
      if (internal) {
        spdlog::info("server {} is live at {}:{} (inside its network {}:{})", id, b->host, b->port, internal->host,
                     internal->port);
      } else {
        spdlog::info("server {} is live at {}:{}", id, b->host, b->port);
      }
      MutexLock lock(mu_);
      if (auto it = servers_.find(id); it != servers_.end()) {
        it->second.broker = *b;
        it->second.internal = internal.value_or(protocol::Broker{});
        it->second.kafka = layout::decodeServerKafka(id, g.data).value_or(protocol::Broker{});
      }
    }));
  }
  // The set of live servers decides who should claim what.
  events_.changed();
}

void ServerRegistry::tick(TimePoint now) {
  bool registerNow, servers, draining;
  {
    MutexLock lock(mu_);
    registerNow = !registered_ && !registering_ && now >= nextRegisterAttempt_;
    servers = std::exchange(relistServers_, false);
    draining = std::exchange(relistDraining_, false);
  }
  if (registerNow) registerSelf();
  if (servers) watchServers();
  if (draining) watchDraining();
}

void ServerRegistry::rewatchSoon() {
  MutexLock lock(mu_);
  relistServers_ = relistDraining_ = true;
}

void ServerRegistry::reset() {
  registered_ = false;
  registering_ = false;
  MutexLock lock(mu_);
  servers_.clear();
  draining_.clear();
  firstListing_ = true;
}

int32_t ServerRegistry::preferredServer(const std::string& group) const {
  // Rendezvous hashing: each group goes to the candidate with the highest
  // score; when a server leaves, only its groups move, and when one joins
  // (and settles), only the groups it now scores highest for.
  const uint64_t h = fnv1a(group);
  const TimePoint now = time_.now();
  RendezvousChoice settled, undrained, any;
  struct Candidate {
    int32_t id;
    TimePoint since;
    bool drained;
  };
  std::vector<Candidate> candidates;
  {
    MutexLock lock(mu_);
    candidates.reserve(servers_.size() + 1);
    candidates.push_back({self_.id, selfSince_, draining_.count(self_.id) > 0});
    for (auto& [id, known] : servers_) {
      if (id != self_.id) candidates.push_back({id, known.since, draining_.count(id) > 0});
    }
  }
  for (const Candidate& c : candidates) {
    const uint64_t s = rendezvousScore(h, c.id);
    any.offer(c.id, s);
    if (c.drained) continue;
    undrained.offer(c.id, s);
    if (now - c.since >= settleDelay_) settled.offer(c.id, s);
  }
  if (settled.id >= 0) return settled.id;
  if (undrained.id >= 0) return undrained.id;
  return any.id;
}

std::vector<ServerRegistry::ServerState> ServerRegistry::serverStates() const {
  const TimePoint now = time_.now();
  std::vector<ServerState> out;
  MutexLock lock(mu_);
  out.reserve(servers_.size() + 1);
  out.push_back({self_.id, draining_.count(self_.id) > 0, now - selfSince_ >= settleDelay_});
  for (auto& [id, known] : servers_) {
    if (id != self_.id) out.push_back({id, draining_.count(id) > 0, now - known.since >= settleDelay_});
  }
  std::sort(out.begin(), out.end(), [](const ServerState& a, const ServerState& b) { return a.id < b.id; });
  return out;
}

std::vector<int32_t> ServerRegistry::candidates() const {
  std::vector<int32_t> settled, undrained, any;
  for (const ServerState& s : serverStates()) {
    any.push_back(s.id);
    if (s.drained) continue;
    undrained.push_back(s.id);
    if (s.settled) settled.push_back(s.id);
  }
  if (!settled.empty()) return settled;
  if (!undrained.empty()) return undrained;
  return any;
}

bool ServerRegistry::mayTakeGroups() const {
  MutexLock lock(mu_);
  if (!draining_.count(self_.id)) return true;
  for (auto& [id, _] : servers_)
    if (!draining_.count(id)) return false;
  return true;
}

bool ServerRegistry::draining(int32_t serverId) const {
  MutexLock lock(mu_);
  return draining_.count(serverId) > 0;
}

protocol::Broker ServerRegistry::brokerOf(int32_t serverId, Reach reach) const {
  if (serverId == self_.id) {
    if (reach == Reach::Internal && self_.internalPort != 0) {
      return protocol::Broker{serverId, self_.internalHost, self_.internalPort};
    }
    return protocol::Broker{serverId, self_.host, self_.port};
  }
  MutexLock lock(mu_);
  auto it = servers_.find(serverId);
  if (it == servers_.end() || it->second.broker.host.empty()) return protocol::Broker{};
  if (reach == Reach::Internal && !it->second.internal.isNone()) return it->second.internal;
  return it->second.broker;
}

std::vector<protocol::Broker> ServerRegistry::kafkaBrokers() const {
  std::vector<protocol::Broker> out;
  MutexLock lock(mu_);
  bool self = false;
  for (auto& [id, k] : servers_) {
    if (id == self_.id) {
      self = true;
      if (self_.kafkaPort != 0) out.push_back(protocol::Broker{id, self_.host, self_.kafkaPort});
    } else if (!k.kafka.isNone()) {
      out.push_back(k.kafka);
    }
  }
  if (!self && registered_ && self_.kafkaPort != 0) {
    out.push_back(protocol::Broker{self_.id, self_.host, self_.kafkaPort});
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.brokerId < b.brokerId; });
  }
  return out;
}

protocol::Broker ServerRegistry::kafkaBrokerOf(int32_t serverId) const {
  if (serverId == self_.id) {
    return self_.kafkaPort != 0 ? protocol::Broker{serverId, self_.host, self_.kafkaPort} : protocol::Broker{};
  }
  MutexLock lock(mu_);
  auto it = servers_.find(serverId);
  return it == servers_.end() ? protocol::Broker{} : it->second.kafka;
}

std::vector<int32_t> ServerRegistry::liveServers() const {
  MutexLock lock(mu_);
  std::vector<int32_t> ids;
  for (auto& [id, _] : servers_) ids.push_back(id);
  return ids;
}

void ServerRegistry::requestDrain(int32_t serverId, bool drain, std::function<void(protocol::ErrorCode)> done) {
  const std::string path = layout_.drainingPath(serverId);
  // Not bound to the session: the caller is answered whatever happens to it.
  auto answer = [serverId, drain, done = std::move(done)](zk::Error e) {
    if (e == zk::Error::Ok || e == (drain ? zk::Error::NodeExists : zk::Error::NoNode)) {
      spdlog::info("server {} {}", serverId, drain ? "marked drained: it hands over its groups and takes no new ones"
                                                   : "no longer drained: it takes groups again");
      return done(protocol::ErrorCode::NONE);
    }
    spdlog::warn("{} server {} failed: {}", drain ? "draining" : "undraining", serverId, e);
    done(fromZk(e));
  };
  if (drain) {
    zk_.create(path, "", zk::CreateMode::Persistent, [answer](zk::CreateResult r) { answer(r.error); });
  } else {
    zk_.remove(path, zk::kAnyVersion, answer);
  }
}

}  // namespace groupcoord::adapter
