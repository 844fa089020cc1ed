#include "adapter/Coordinator.h"

#include <algorithm>
#include <random>

#include <spdlog/spdlog.h>

#include "metrics/Coordination.h"
#include "protocol/Codec.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;
using protocol::Response;
using protocol::ResponseCallback;

std::string_view toString(GroupState s) {
  switch (s) {
    case GroupState::Loading: return "Loading";
    case GroupState::Active: return "Active";
    case GroupState::Deleting: return "Deleting";
  }
  return "?";
}

namespace {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// Same settings for CreateGroup's idempotence: topics compared as sets.
bool sameSettings(GroupSettings a, GroupSettings b) {
  std::sort(a.topics.begin(), a.topics.end());
  std::sort(b.topics.begin(), b.topics.end());
  a.topics.erase(std::unique(a.topics.begin(), a.topics.end()), a.topics.end());
  b.topics.erase(std::unique(b.topics.begin(), b.topics.end()), b.topics.end());
  return a == b;
}

}  // namespace

ErrorCode Coordinator::fromZk(zk::Error e) {
  if (e == zk::Error::Ok) return ErrorCode::NONE;
  if (zk::isConnectionProblem(e)) return ErrorCode::CONTROLLER_NOT_AVAILABLE;
  return ErrorCode::UNKNOWN_SERVER_ERROR;
}

// A CreateGroup waiting for its group's controller to be known.
struct Coordinator::ControllerWaiter {
  std::string group;
  TimePoint deadline;
  uint64_t epoch = 0;
  std::atomic<bool> answered{false};
  ResponseCallback done;
};

Coordinator::Coordinator(zk::Client& zk, CoordinatorConfig config, const TimeSource& time)
    : zk_(zk), config_(std::move(config)), layout_(config_.root), time_(time) {
  std::random_device rd;
  idState_ = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(config_.serverId);
  zk_.setListener(this);
}

Coordinator::~Coordinator() {
  stop();
  detach();
}

void Coordinator::detach() {
  if (!detached_.exchange(true)) zk_.setListener(nullptr);
}

void Coordinator::run(Outbox& out) {
  for (auto& f : out) f();
  out.clear();
}

// ---------------------------------------------------------------------------
// Start, stop, session

void Coordinator::setAdvertised(std::string host, uint16_t port) {
  config_.advertisedHost = std::move(host);
  config_.advertisedPort = port;
}

zk::Error Coordinator::start(Millis wait) {
  for (const auto& p : {layout_.serversPath(), layout_.groupsPath()}) {
    zk::Error e = zk_.ensurePathSync(p, wait);
    if (e != zk::Error::Ok) {
      spdlog::error("cannot create {} in ZooKeeper: {}", p, e);
      return e;
    }
  }
  sessionId_ = zk_.sessionId();
  connected_ = zk_.state() == zk::SessionState::Connected;
  started_ = true;
  spdlog::info("server {} starting in ZooKeeper session 0x{:x} under {}", config_.serverId, zk_.sessionId(),
               layout_.root());
  registerServer();
  watchServers();
  watchGroups();
  return zk::Error::Ok;
}

void Coordinator::startTicker() {
  ticker_ = std::thread([this] {
    std::unique_lock lock(tickerMu_);
    while (!stopped_) {
      lock.unlock();
      tick();
      lock.lock();
      tickerCv_.wait_for(lock, config_.tickInterval, [this] { return stopped_.load(); });
    }
  });
}

void Coordinator::stop() {
  {
    std::lock_guard lock(tickerMu_);
    if (stopped_.exchange(true)) return;
  }
  tickerCv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  Outbox out;
  std::vector<GroupPtr> all;
  {
    std::shared_lock lock(groupsMu_);
    for (auto& [_, g] : groups_) all.push_back(g);
  }
  for (auto& g : all) {
    std::lock_guard lock(g->mu);
    answerAllWaiting(*g, ErrorCode::CONTROLLER_NOT_AVAILABLE, out);
  }
  {
    std::lock_guard lock(registryMu_);
    for (auto& w : controllerWaiters_) {
      if (!w->answered.exchange(true)) {
        out.push_back([w] {
          w->done(protocol::CreateGroupResponse{w->group, ErrorCode::NONE, protocol::Broker{}});
        });
      }
    }
    controllerWaiters_.clear();
  }
  run(out);
  spdlog::info("coordinator stopped; {} groups were controlled here", all.size());
}

void Coordinator::onSessionState(zk::SessionState state) {
  switch (state) {
    case zk::SessionState::Connected: {
      int64_t id = zk_.sessionId();
      int64_t before = sessionId_.exchange(id);
      connected_ = true;
      if (!started_) break;
      if (id != before) {
        spdlog::info("ZooKeeper session 0x{:x} established: registering server {} and claiming groups again", id,
                     config_.serverId);
        registerServer();
        watchServers();
        watchGroups();
      } else {
        spdlog::info("ZooKeeper connection restored, session 0x{:x} kept: evictions resume", id);
        std::lock_guard lock(registryMu_);
        rewatchNeeded_ = true;
      }
      break;
    }
    case zk::SessionState::Reconnecting: {
      connected_ = false;
      // Commits accepted but not sent yet (queued behind a transaction in
      // flight) would otherwise wait as long as the outage lasts, and their
      // members would give up on this server: they are refused now, as a
      // commit arriving now is. Nothing of them reached ZooKeeper.
      std::vector<GroupPtr> all;
      {
        std::shared_lock lock(groupsMu_);
        for (auto& [_, g] : groups_) all.push_back(g);
      }
      Outbox out;
      size_t refused = 0;
      for (auto& g : all) {
        std::lock_guard lock(g->mu);
        refused += g->commits.size();
        for (auto& c : g->commits)
          out.push_back([done = std::move(c.done)] {
            done(protocol::CommitOffsetsResponse{{}, ErrorCode::CONTROLLER_NOT_AVAILABLE});
          });
        g->commits.clear();
      }
      spdlog::warn(
          "lost the connection to ZooKeeper (session 0x{:x} may still come back): heartbeats are still answered, "
          "evictions wait, writes answer CONTROLLER_NOT_AVAILABLE{}",
          sessionId_.load(),
          refused > 0 ? fmt::format(" ({} queued commits refused)", refused) : std::string());
      run(out);
      break;
    }
    case zk::SessionState::Expired:
    case zk::SessionState::AuthFailed: {
      connected_ = false;
      registered_ = false;
      registering_ = false;
      epoch_++;
      std::vector<GroupPtr> lost;
      {
        std::unique_lock lock(groupsMu_);
        for (auto& [_, g] : groups_) lost.push_back(g);
        groups_.clear();
      }
      Outbox out;
      for (auto& g : lost) {
        std::lock_guard lock(g->mu);
        answerAllWaiting(*g, ErrorCode::CONTROLLER_NOT_AVAILABLE, out);
        g->members.clear();
      }
      {
        std::lock_guard lock(registryMu_);
        known_.clear();
        servers_.clear();
        topics_.clear();  // their watches went with the session
      }
      spdlog::error(
          "ZooKeeper session 0x{:x} {}: gave up control of {} groups (their members must register again); "
          "opening a new session",
          sessionId_.load(), state == zk::SessionState::Expired ? "expired" : "failed authentication", lost.size());
      run(out);
      renewNeeded_ = true;
      break;
    }
    case zk::SessionState::Connecting:
      connected_ = false;
      break;
    case zk::SessionState::Closed:
      connected_ = false;
      break;
  }
}

// ---------------------------------------------------------------------------
// Registration, watches, claims

void Coordinator::registerServer() {
  if (registered_ || registering_.exchange(true)) return;
  uint64_t epoch = epoch_;
  std::string path = layout_.serverPath(config_.serverId);
  zk_.create(path, encodeServer(config_.advertisedHost, config_.advertisedPort), zk::CreateMode::Ephemeral,
             [this, epoch, path](zk::CreateResult r) {
               if (epoch != epoch_) return;
               if (r.error == zk::Error::Ok) {
                 registered_ = true;
                 registering_ = false;
                 spdlog::info("server {} registered at {} as {}:{}", config_.serverId, path, config_.advertisedHost,
                              config_.advertisedPort);
                 std::vector<std::string> names;
                 {
                   std::lock_guard lock(registryMu_);
                   for (auto& [n, _] : known_) names.push_back(n);
                 }
                 TimePoint now = time_.now();
                 for (auto& n : names) maybeClaim(n, now);
                 return;
               }
               if (r.error == zk::Error::NodeExists) {
                 // Ours from this session (a retry after connection loss), or
                 // another live session holds this id.
                 zk_.exists(path, [this, epoch, path](zk::ExistsResult e) {
                   if (epoch != epoch_) return;
                   if (e.error == zk::Error::Ok && e.stat.ephemeralOwner == zk_.sessionId()) {
                     registered_ = true;
                     registering_ = false;
                     spdlog::info("server {} registered at {}", config_.serverId, path);
                     return;
                   }
                   spdlog::warn(
                       "server id {} is already registered by ZooKeeper session 0x{:x}: another groupcoordd with the "
                       "same server id, or this server's previous run whose session has not expired yet; retrying",
                       config_.serverId, e.stat.ephemeralOwner);
                   std::lock_guard lock(registryMu_);
                   nextRegisterAttempt_ = time_.now() + Millis(500);
                   registering_ = false;
                 });
                 return;
               }
               spdlog::warn("registering server {} failed: {}; retrying", config_.serverId, r.error);
               std::lock_guard lock(registryMu_);
               nextRegisterAttempt_ = time_.now() + Millis(500);
               registering_ = false;
             });
}

void Coordinator::watchServers() {
  uint64_t epoch = epoch_;
  zk_.getChildren(
      layout_.serversPath(),
      [this, epoch](zk::ChildrenResult r) {
        if (epoch != epoch_) return;
        if (r.error != zk::Error::Ok) {
          spdlog::warn("listing servers failed: {}", r.error);
          std::lock_guard lock(registryMu_);
          rewatchNeeded_ = true;
          return;
        }
        std::set<int32_t> ids;
        for (auto& c : r.children) {
          try {
            size_t used = 0;
            int v = std::stoi(c, &used);
            if (used == c.size()) ids.insert(v);
          } catch (...) {
          }
        }
        std::vector<int32_t> unknown;
        {
          std::lock_guard lock(registryMu_);
          for (auto it = servers_.begin(); it != servers_.end();) {
            if (!ids.count(it->first)) {
              spdlog::info("server {} left", it->first);
              it = servers_.erase(it);
            } else {
              ++it;
            }
          }
          for (int32_t id : ids) {
            if (!servers_.count(id)) {
              servers_[id] = protocol::Broker{id, "", 0};
              unknown.push_back(id);
            }
          }
        }
        for (int32_t id : unknown) {
          zk_.get(layout_.serverPath(id), [this, epoch, id](zk::GetResult g) {
            if (epoch != epoch_ || g.error != zk::Error::Ok) return;
            auto b = decodeServer(id, g.data);
            if (!b) {
              spdlog::warn("server {} registered unreadable data: {}", id, g.data);
              return;
            }
            spdlog::info("server {} is live at {}:{}", id, b->host, b->port);
            std::lock_guard lock(registryMu_);
            auto it = servers_.find(id);
            if (it != servers_.end()) it->second = *b;
          });
        }
        // The set of live servers decides who should claim what.
        std::vector<std::string> names;
        {
          std::lock_guard lock(registryMu_);
          for (auto& [n, k] : known_)
            if (!k.hasController) names.push_back(n);
        }
        TimePoint now = time_.now();
        for (auto& n : names) maybeClaim(n, now);
      },
      [this, epoch](const zk::WatchEvent& ev) {
        if (epoch != epoch_ || ev.type == zk::WatchEvent::Type::Session) return;
        watchServers();
      });
}

void Coordinator::watchGroups() {
  uint64_t epoch = epoch_;
  zk_.getChildren(
      layout_.groupsPath(),
      [this, epoch](zk::ChildrenResult r) {
        if (epoch != epoch_) return;
        if (r.error != zk::Error::Ok) {
          spdlog::warn("listing groups failed: {}", r.error);
          std::lock_guard lock(registryMu_);
          rewatchNeeded_ = true;
          return;
        }
        onGroupsListed(std::move(r.children));
      },
      [this, epoch](const zk::WatchEvent& ev) {
        if (epoch != epoch_ || ev.type == zk::WatchEvent::Type::Session) return;
        watchGroups();
      });
}

void Coordinator::onGroupsListed(std::vector<std::string> names) {
  std::set<std::string> now(names.begin(), names.end());
  std::vector<std::string> added, removed;
  {
    std::lock_guard lock(registryMu_);
    for (auto it = known_.begin(); it != known_.end();) {
      if (!now.count(it->first)) {
        removed.push_back(it->first);
        it = known_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& n : now) {
      if (!protocol::isValidName(n)) continue;  // not ours to touch
      auto [it, inserted] = known_.try_emplace(n);
      if (inserted) {
        it->second.watching = true;
        added.push_back(n);
      }
    }
  }
  for (auto& n : removed) dropGroup(n, ErrorCode::UNKNOWN_GROUP, "its znode was deleted");
  for (auto& n : added) watchController(n);
}

void Coordinator::watchController(const std::string& group) {
  uint64_t epoch = epoch_;
  zk_.exists(
      layout_.controllerPath(group),
      [this, epoch, group](zk::ExistsResult r) {
        if (epoch != epoch_) return;
        TimePoint now = time_.now();
        {
          std::lock_guard lock(registryMu_);
          auto it = known_.find(group);
          if (it == known_.end()) return;
          if (r.error == zk::Error::Ok) {
            it->second.hasController = true;
            return;
          }
          if (r.error != zk::Error::NoNode) {
            it->second.watching = false;  // set again once connected
            rewatchNeeded_ = true;
            return;
          }
          if (it->second.hasController || it->second.noControllerSince == TimePoint{}) {
            it->second.noControllerSince = now;
          }
          it->second.hasController = false;
        }
        // A group that lost its controller here (our own znode vanished
        // without our session expiring) is no longer ours.
        if (findGroup(group)) dropGroup(group, ErrorCode::NOT_CONTROLLER, "its controller znode vanished");
        maybeClaim(group, now);
      },
      [this, epoch, group](const zk::WatchEvent& ev) {
        if (epoch != epoch_ || ev.type == zk::WatchEvent::Type::Session) return;
        if (ev.type == zk::WatchEvent::Type::Deleted) {
          std::lock_guard lock(registryMu_);
          auto it = known_.find(group);
          if (it != known_.end() && it->second.hasController) {
            it->second.hasController = false;
            it->second.noControllerSince = time_.now();
          }
        }
        watchController(group);
      });
}

int32_t Coordinator::preferredServer(const std::string& group) const {
  // Rendezvous hashing: each group goes to the live server with the highest
  // score; when a server leaves, only its groups move.
  uint64_t h = fnv1a(group);
  int32_t best = config_.serverId;
  uint64_t bestScore = mix64(h ^ mix64(static_cast<uint64_t>(config_.serverId)));
  for (auto& [id, _] : servers_) {
    uint64_t s = mix64(h ^ mix64(static_cast<uint64_t>(id)));
    if (s > bestScore || (s == bestScore && id < best)) {
      best = id;
      bestScore = s;
    }
  }
  return best;
}

void Coordinator::maybeClaim(const std::string& group, TimePoint now) {
  if (!registered_ || !connected_ || stopped_) return;
  {
    std::lock_guard lock(registryMu_);
    auto it = known_.find(group);
    if (it == known_.end() || it->second.hasController || it->second.claiming) return;
    // Not yet read whether it has a controller (the watch's first answer
    // sets the time): nothing is overdue yet.
    if (it->second.noControllerSince == TimePoint{}) return;
    bool preferred = preferredServer(group) == config_.serverId;
    bool overdue = now - it->second.noControllerSince >= config_.claimFallback;
    if (!preferred && !overdue) return;
    if (overdue && !preferred) {
      spdlog::info("group {} has had no controller for {} ms: claiming it", group,
                   millisBetween(it->second.noControllerSince, now));
    }
    it->second.claiming = true;
  }
  claim(group);
}

void Coordinator::claim(const std::string& group) {
  uint64_t epoch = epoch_;
  zk_.create(layout_.controllerPath(group), std::to_string(config_.serverId), zk::CreateMode::Ephemeral,
             [this, epoch, group](zk::CreateResult r) {
               if (epoch != epoch_) return;
               {
                 std::lock_guard lock(registryMu_);
                 auto it = known_.find(group);
                 if (it != known_.end()) {
                   it->second.claiming = false;
                   if (r.error == zk::Error::Ok || r.error == zk::Error::NodeExists) it->second.hasController = true;
                 }
               }
               if (r.error == zk::Error::Ok) {
                 onClaimed(group);
               } else if (r.error != zk::Error::NodeExists && r.error != zk::Error::NoNode) {
                 spdlog::warn("claiming group {} failed: {}; will retry", group, r.error);
               }
             });
}

void Coordinator::onClaimed(const std::string& group) {
  auto g = std::make_shared<Group>(group);
  g->claimedAt = time_.now();
  g->emptySince = g->claimedAt;
  {
    std::unique_lock lock(groupsMu_);
    groups_[group] = g;
  }
  spdlog::info("group {}: controller claimed by server {}; loading it from ZooKeeper", group, config_.serverId);
  std::lock_guard lock(g->mu);
  reload(g);
}

// ---------------------------------------------------------------------------
// Controlled groups

Coordinator::GroupPtr Coordinator::findGroup(const std::string& name) const {
  std::shared_lock lock(groupsMu_);
  auto it = groups_.find(name);
  return it == groups_.end() ? nullptr : it->second;
}

Coordinator::GroupPtr Coordinator::controlledGroup(const std::string& name, ErrorCode* error) const {
  if (auto g = findGroup(name)) {
    *error = ErrorCode::NONE;
    return g;
  }
  std::lock_guard lock(registryMu_);
  auto it = known_.find(name);
  if (it == known_.end()) {
    // Unknown here; while ZooKeeper is away this server cannot tell.
    *error = connected_ ? ErrorCode::UNKNOWN_GROUP : ErrorCode::CONTROLLER_NOT_AVAILABLE;
  } else {
    *error = it->second.hasController ? ErrorCode::NOT_CONTROLLER : ErrorCode::CONTROLLER_NOT_AVAILABLE;
  }
  return nullptr;
}

void Coordinator::setState(Group& g, GroupState s) {
  if (g.state == s) return;
  spdlog::debug("group {}: state {} -> {}", g.name, toString(g.state), toString(s));
  g.state = s;
}

void Coordinator::dropGroup(const std::string& name, ErrorCode answer, const char* why) {
  GroupPtr g;
  {
    std::unique_lock lock(groupsMu_);
    auto it = groups_.find(name);
    if (it == groups_.end()) return;
    g = it->second;
    groups_.erase(it);
  }
  Outbox out;
  {
    std::lock_guard lock(g->mu);
    answerAllWaiting(*g, answer, out);
    spdlog::info("group {}: no longer controlled here ({}); {} members dropped", name, why, g->members.size());
    g->members.clear();
  }
  run(out);
}

void Coordinator::answerAllWaiting(Group& g, ErrorCode error, Outbox& out) {
  auto answerRegistrations = [&](auto& joins) {
    for (auto& [id, j] : joins)
      for (auto& w : j.waiters) {
        protocol::RegisterConsumerResponse resp;
        resp.group = g.name;
        resp.consumerId = id;
        resp.error = error;
        out.push_back([w = std::move(w), resp = std::move(resp)]() mutable { w(std::move(resp)); });
      }
    joins.clear();
  };
  answerRegistrations(g.joins);
  answerRegistrations(g.flightJoins);
  for (auto* removals : {&g.removals, &g.flightRemovals}) {
    for (auto& [_, rm] : *removals)
      for (auto& w : rm.waiters) out.push_back([w = std::move(w), error] { w(protocol::LeaveGroupResponse{error}); });
    removals->clear();
  }
  for (auto* rejoins : {&g.rejoins, &g.flightRejoins}) {
    for (auto& rj : *rejoins) {
      protocol::RegisterConsumerResponse resp;
      resp.group = g.name;
      resp.consumerId = rj.memberId;
      resp.error = error;
      out.push_back([w = std::move(rj.done), resp = std::move(resp)]() mutable { w(std::move(resp)); });
    }
    rejoins->clear();
  }
  for (auto& w : g.deleteWaiters)
    out.push_back([w = std::move(w), error, name = g.name] { w(protocol::DeleteGroupResponse{name, error}); });
  g.deleteWaiters.clear();
  g.deleteRequested = false;
  for (auto* rewinds : {&g.rewinds, &g.flightRewinds}) {
    for (auto& w : *rewinds)
      out.push_back([done = std::move(w.done), error] { done(protocol::RewindConsumerResponse{{}, error}); });
    rewinds->clear();
  }
  for (auto* commits : {&g.commits, &g.flightCommits}) {
    for (auto& c : *commits)
      out.push_back([done = std::move(c.done), error] { done(protocol::CommitOffsetsResponse{{}, error}); });
    commits->clear();
  }
}

// The answer to a registration at the current generation: the members,
// and the member's assignment as far as it can be granted now (partitions
// another member still holds are left out until released).
protocol::RegisterConsumerResponse Coordinator::registration(Group& g, const std::string& member) {
  protocol::RegisterConsumerResponse r;
  r.group = g.name;
  r.consumerId = member;
  r.generation = g.version;
  r.members.reserve(g.members.size());
  for (auto& [id, _] : g.members) r.members.push_back(id);
  for (auto& p : g.ownership.grant(member, time_.now())) {
    auto c = g.committed.find(p);
    r.partitions.push_back(protocol::PartitionOffset{p.topic, p.partition, c == g.committed.end() ? -1 : c->second});
  }
  r.error = ErrorCode::NONE;
  return r;
}

bool Coordinator::hasPendingWrites(const Group& g) const {
  return !g.joins.empty() || !g.removals.empty() || !g.rewinds.empty() || g.bumpRequested;
}

// Re-reads the group's settings, version and members: after a claim, and
// whenever a write's outcome is unknown. Writes wait until it is done.
void Coordinator::reload(const GroupPtr& g) {
  if (g->busy || !connected_) return;
  g->busy = true;
  uint64_t epoch = epoch_;
  struct Reads {
    std::mutex mu;
    int left = 2;
    zk::GetResult group;
    zk::ChildrenResult members;
  };
  auto reads = std::make_shared<Reads>();
  auto finish = [this, g, epoch, reads] {
    if (epoch != epoch_) return;
    Outbox out;
    bool vanished = false;
    std::vector<std::string> topicsToWatch;
    {
      std::lock_guard lock(g->mu);
      g->busy = false;
      zk::Error e = reads->group.error != zk::Error::Ok ? reads->group.error : reads->members.error;
      if (reads->group.error == zk::Error::NoNode) {
        vanished = true;
      } else if (e != zk::Error::Ok) {
        spdlog::warn("group {}: reading it from ZooKeeper failed: {}; will retry", g->name, e);
        g->needsReload = true;
      } else if (auto s = decodeSettings(reads->group.data); !s) {
        spdlog::error("group {}: its znode holds data this server cannot read ({} bytes); not serving it", g->name,
                      reads->group.data.size());
        g->needsReload = true;
      } else {
        g->settings = *s;
        g->settingsData = reads->group.data;
        int32_t before = g->version;
        g->version = reads->group.stat.version;
        TimePoint now = time_.now();
        std::set<std::string> inZk(reads->members.children.begin(), reads->members.children.end());
        for (auto it = g->members.begin(); it != g->members.end();) {
          if (!inZk.count(it->first)) {
            spdlog::warn("group {}: member {} is not in ZooKeeper any more; it must register again", g->name,
                         it->first);
            it = g->members.erase(it);
          } else {
            ++it;
          }
        }
        for (auto& id : inZk) {
          if (g->members.emplace(id, Member{"", now}).second && g->state != GroupState::Loading) {
            spdlog::info("group {}: member {} found in ZooKeeper", g->name, id);
          }
        }
        // Registrations whose member now exists were applied by a
        // transaction whose answer was lost: they are members.
        for (auto it = g->joins.begin(); it != g->joins.end();) {
          if (inZk.count(it->first)) {
            for (auto& w : it->second.waiters) g->rejoins.push_back(Rejoin{it->first, std::move(w)});
            it = g->joins.erase(it);
          } else {
            ++it;
          }
        }
        for (auto it = g->removals.begin(); it != g->removals.end();) {
          if (!inZk.count(it->first)) {
            for (auto& w : it->second.waiters)
              out.push_back([w = std::move(w)] { w(protocol::LeaveGroupResponse{ErrorCode::NONE}); });
            it = g->removals.erase(it);
          } else {
            ++it;
          }
        }
        g->needsReload = false;
        if (g->state == GroupState::Loading) {
          // Members may still hold partitions granted by the previous
          // controller: nothing nobody reports is granted for one session
          // timeout. A group at generation 0 never had a member.
          g->ownership.clear();
          if (g->version > 0) g->ownership.holdUnclaimedUntil(now + Millis(g->settings.sessionTimeoutMs));
          spdlog::info("group {}: serving at generation {} with {} members (session timeout {} ms{}{})", g->name,
                       g->version, g->members.size(), g->settings.sessionTimeoutMs,
                       g->settings.ephemeral ? ", ephemeral" : "",
                       g->version > 0 ? "; partitions nobody reports wait one session timeout" : "");
          setState(*g, GroupState::Active);
          for (auto& t : g->settings.topics) topicsToWatch.push_back(t);
        } else if (before != g->version) {
          spdlog::info("group {}: generation {} -> {} found in ZooKeeper", g->name, before, g->version);
        }
        if (g->members.empty()) g->emptySince = now;
        retarget(*g);
        flush(g, out);
      }
    }
    run(out);
    for (auto& t : topicsToWatch) watchTopic(t);
    if (vanished) dropGroup(g->name, ErrorCode::UNKNOWN_GROUP, "its znode is gone");
  };
  zk_.get(layout_.groupPath(g->name), [reads, finish](zk::GetResult r) {
    bool last;
    {
      std::lock_guard lock(reads->mu);
      reads->group = std::move(r);
      last = --reads->left == 0;
    }
    if (last) finish();
  });
  zk_.getChildren(layout_.membersPath(g->name), [reads, finish](zk::ChildrenResult r) {
    bool last;
    {
      std::lock_guard lock(reads->mu);
      reads->members = std::move(r);
      last = --reads->left == 0;
    }
    if (last) finish();
  });
}

// Sends the changes waiting for the group as one transaction that also
// moves the generation, or answers waiting re-registrations when there is
// nothing to write.
void Coordinator::flush(const GroupPtr& g, Outbox& out) {
  if (g->busy || g->state != GroupState::Active || !connected_) return;
  if (g->needsReload) {
    reload(g);
    return;
  }
  if (!g->offsetsLoaded && (!g->rewinds.empty() || !g->rejoins.empty() || !g->joins.empty())) {
    loadOffsets(g);  // registrations carry committed offsets; rewinds need to know what exists
    return;
  }
  if (!hasPendingWrites(*g)) {
    for (auto& rj : g->rejoins) {
      out.push_back([w = std::move(rj.done), resp = registration(*g, rj.memberId)]() mutable { w(std::move(resp)); });
    }
    g->rejoins.clear();
    if (g->deleteRequested) {
      if (g->members.empty()) {
        deleteGroup(g);
      } else {
        for (auto& w : g->deleteWaiters)
          out.push_back([w = std::move(w), name = g->name] {
            w(protocol::DeleteGroupResponse{name, ErrorCode::GROUP_NOT_EMPTY});
          });
        g->deleteWaiters.clear();
        g->deleteRequested = false;
      }
    }
    return;
  }
  // At most one transaction per batch interval: changes arriving together
  // (a join storm) wait for the tick and go out as one.
  TimePoint now = time_.now();
  if (now - g->lastBatchAt < config_.batchInterval) return;
  g->lastBatchAt = now;
  std::vector<zk::Op> ops;
  size_t budget = config_.maxChangesPerTransaction;
  while (!g->removals.empty() && budget > 0) {
    auto node = g->removals.extract(g->removals.begin());
    ops.push_back(zk::makeRemove(layout_.memberPath(g->name, node.key())));
    g->flightRemovals.insert(std::move(node));
    --budget;
  }
  while (!g->joins.empty() && budget > 0) {
    auto node = g->joins.extract(g->joins.begin());
    ops.push_back(zk::makeCreate(layout_.memberPath(g->name, node.key()), encodeMember(node.mapped().clientId),
                                 zk::CreateMode::Ephemeral));
    g->flightJoins.insert(std::move(node));
    --budget;
  }
  g->flightRejoins = std::move(g->rejoins);
  g->rejoins.clear();
  std::vector<protocol::PartitionOffset> rewound;
  for (auto& w : g->rewinds) rewound.insert(rewound.end(), w.accepted.begin(), w.accepted.end());
  if (!rewound.empty()) {
    std::set<std::string> newTopics;
    offsetOps(*g, rewound, ops, &newTopics);
  }
  g->flightRewinds = std::move(g->rewinds);
  g->rewinds.clear();
  g->flightBump = std::exchange(g->bumpRequested, false);
  ops.push_back(zk::makeSetData(layout_.groupPath(g->name), g->settingsData, g->version));
  g->busy = true;
  metrics::coordination().transactionChanges.observe(config_.maxChangesPerTransaction - budget);
  uint64_t epoch = epoch_;
  size_t opCount = ops.size();
  zk_.multi(std::move(ops),
            [this, g, epoch, opCount](zk::MultiResult r) { onBatchDone(g, epoch, opCount, std::move(r)); });
}

void Coordinator::onBatchDone(const GroupPtr& g, uint64_t epoch, size_t opCount, zk::MultiResult r) {
  if (epoch != epoch_) return;
  Outbox out;
  bool vanished = false;
  {
    std::lock_guard lock(g->mu);
    g->busy = false;
    size_t changes = g->flightJoins.size() + g->flightRemovals.size();
    if (r.error == zk::Error::Ok) {
      int32_t before = g->version;
      g->version = r.results.empty() ? g->version + 1 : r.results.back().stat.version;
      g->failedBatches = 0;
      TimePoint now = time_.now();
      size_t evicted = 0, left = 0;
      for (auto& [id, rm] : g->flightRemovals) {
        g->members.erase(id);
        size_t freed = g->ownership.releaseAll(id);
        if (freed > 0) spdlog::info("group {}: {} partitions of member {} are free", g->name, freed, id);
        if (rm.evicted) {
          ++evicted;
          spdlog::info("group {}: evicted member {} after {} ms of silence (session timeout {} ms)", g->name, id,
                       rm.silentMs, g->settings.sessionTimeoutMs);
        } else {
          ++left;
          spdlog::info("group {}: member {} left", g->name, id);
        }
        for (auto& w : rm.waiters)
          out.push_back([w = std::move(w)] { w(protocol::LeaveGroupResponse{ErrorCode::NONE}); });
      }
      if (!g->flightJoins.empty()) g->hadMembers = true;
      for (auto& [id, j] : g->flightJoins) {
        g->members[id] = Member{j.clientId, now};
        spdlog::info("group {}: member {} joined (client id '{}')", g->name, id, j.clientId);
      }
      for (auto& w : g->flightRewinds) {
        for (auto& o : w.accepted) {
          g->committed[protocol::TopicPartition{o.topic, o.partition}] = o.offset;
          g->offsetTopics.insert(o.topic);
        }
        g->rewoundAt = g->version;
        spdlog::info("group {}: {} offsets rewound", g->name, w.accepted.size());
        out.push_back([done = std::move(w.done), results = std::move(w.results)]() mutable {
          done(protocol::RewindConsumerResponse{std::move(results), ErrorCode::NONE});
        });
      }
      metrics::coordination().generationMoves.add();
      if (evicted > 0) metrics::coordination().evictions.add(evicted);
      std::string why = g->flightRewinds.empty() && changes == 0 ? " (subscribed topics changed)" : "";
      g->flightRewinds.clear();
      g->flightBump = false;
      spdlog::info(
          "group {}: generation {} -> {} ({} joined, {} left, {} evicted; {} members) in one transaction{}",
          g->name, before, g->version, g->flightJoins.size(), left, evicted, g->members.size(), why);
      retarget(*g);
      for (auto& [id, j] : g->flightJoins)
        for (auto& w : j.waiters)
          out.push_back([w = std::move(w), resp = registration(*g, id)]() mutable { w(std::move(resp)); });
      for (auto& rj : g->flightRejoins)
        out.push_back([w = std::move(rj.done), resp = registration(*g, rj.memberId)]() mutable { w(std::move(resp)); });
      g->flightJoins.clear();
      g->flightRemovals.clear();
      g->flightRejoins.clear();
      if (g->members.empty()) g->emptySince = now;
    } else if (zk::isConnectionProblem(r.error)) {
      spdlog::warn("group {}: a transaction of {} membership changes failed with {}; its outcome is re-read when "
                   "ZooKeeper is back",
                   g->name, changes, r.error);
      // The outcome is unknown: the registrations and leaves in flight are
      // told to retry; evictions are found again if the members stay silent.
      Group scratch(g->name);
      std::swap(scratch.flightJoins, g->flightJoins);
      std::swap(scratch.flightRejoins, g->flightRejoins);
      std::swap(scratch.flightRewinds, g->flightRewinds);
      for (auto& [id, rm] : g->flightRemovals)
        if (!rm.evicted) scratch.flightRemovals.emplace(id, std::move(rm));
      g->flightRemovals.clear();
      g->bumpRequested = g->bumpRequested || g->flightBump;
      answerAllWaiting(scratch, ErrorCode::CONTROLLER_NOT_AVAILABLE, out);
      g->needsReload = true;
    } else if (r.error == zk::Error::NoNode && r.failedOp == static_cast<int>(opCount) - 1) {
      vanished = true;  // the group znode itself is gone
    } else {
      // Memory and ZooKeeper disagree (a member znode already there or
      // already gone, or the version moved): put the changes back, re-read,
      // and try again.
      ++g->failedBatches;
      spdlog::warn("group {}: transaction of {} changes refused at op {}: {}; re-reading the group (attempt {})",
                   g->name, changes, r.failedOp, r.error, g->failedBatches);
      if (g->failedBatches > 3) {
        spdlog::error("group {}: giving up on {} changes after {} refused transactions", g->name, changes,
                      g->failedBatches);
        Group scratch(g->name);
        std::swap(scratch.flightJoins, g->flightJoins);
        std::swap(scratch.flightRemovals, g->flightRemovals);
        std::swap(scratch.flightRejoins, g->flightRejoins);
        std::swap(scratch.flightRewinds, g->flightRewinds);
        answerAllWaiting(scratch, ErrorCode::CONTROLLER_NOT_AVAILABLE, out);
        g->failedBatches = 0;
      } else {
        for (auto& [id, j] : g->flightJoins) {
          auto& dst = g->joins[id];
          dst.clientId = j.clientId;
          for (auto& w : j.waiters) dst.waiters.push_back(std::move(w));
        }
        for (auto& [id, rm] : g->flightRemovals) g->removals.emplace(id, std::move(rm));
        for (auto& rj : g->flightRejoins) g->rejoins.push_back(std::move(rj));
        for (auto& w : g->flightRewinds) g->rewinds.push_back(std::move(w));
        g->flightRewinds.clear();
        g->bumpRequested = g->bumpRequested || g->flightBump;
        g->offsetsLoaded = false;  // a rewind may have met an offset znode it did not know
        g->flightJoins.clear();
        g->flightRemovals.clear();
        g->flightRejoins.clear();
      }
      g->needsReload = true;
    }
    if (vanished) {
    } else if (g->settings.ephemeral && g->hadMembers && g->members.empty() && !hasPendingWrites(*g)) {
      deleteGroup(g);  // its last member went: an ephemeral group goes with it
    } else {
      flush(g, out);
    }
  }
  run(out);
  if (vanished) dropGroup(g->name, ErrorCode::UNKNOWN_GROUP, "its znode is gone");
}

// Removes the group's whole subtree in one transaction: offsets, members
// (which must be empty), the controller znode and the group znode at the
// version this controller knows.
void Coordinator::deleteGroup(const GroupPtr& g) {
  if (g->busy || !connected_) return;
  g->busy = true;
  setState(*g, GroupState::Deleting);
  uint64_t epoch = epoch_;
  std::string offsets = layout_.offsetsPath(g->name);

  struct Walk {
    std::mutex mu;
    int pending = 1;
    zk::Error error = zk::Error::Ok;
    std::vector<std::string> leaves;  // offsets/<topic>/<partition>
    std::vector<std::string> topics;  // offsets/<topic>
  };
  auto walk = std::make_shared<Walk>();
  auto finish = [this, g, epoch, walk, offsets] {
    if (epoch != epoch_) return;
    if (walk->error != zk::Error::Ok && walk->error != zk::Error::NoNode) {
      // The offsets could not be listed: deleting now could leave them behind.
      Outbox out;
      {
        std::lock_guard lock(g->mu);
        g->busy = false;
        spdlog::warn("group {}: listing its offsets for deletion failed: {}", g->name, walk->error);
        for (auto& w : g->deleteWaiters)
          out.push_back([w = std::move(w), e = fromZk(walk->error), name = g->name] {
            w(protocol::DeleteGroupResponse{name, e});
          });
        g->deleteWaiters.clear();
        g->deleteRequested = false;
        g->needsReload = true;
        setState(*g, GroupState::Active);
      }
      run(out);
      return;
    }
    std::vector<zk::Op> ops;
    if (walk->error == zk::Error::Ok) {
      for (auto& p : walk->leaves) ops.push_back(zk::makeRemove(p));
      for (auto& p : walk->topics) ops.push_back(zk::makeRemove(p));
    }
    int32_t version;
    {
      std::lock_guard lock(g->mu);
      version = g->version;
    }
    bool hasOffsets = walk->error == zk::Error::Ok;
    if (hasOffsets) ops.push_back(zk::makeRemove(offsets));
    ops.push_back(zk::makeRemove(layout_.membersPath(g->name)));
    ops.push_back(zk::makeRemove(layout_.controllerPath(g->name)));
    ops.push_back(zk::makeRemove(layout_.groupPath(g->name), version));
    size_t nops = ops.size();
    zk_.multi(std::move(ops), [this, g, epoch, nops](zk::MultiResult r) {
      if (epoch != epoch_) return;
      Outbox out;
      bool gone = false;
      {
        std::lock_guard lock(g->mu);
        g->busy = false;
        ErrorCode answer;
        if (r.error == zk::Error::Ok) {
          answer = ErrorCode::NONE;
          gone = true;
          spdlog::info("group {}: deleted with its offsets at generation {} ({})", g->name, g->version,
                       g->settings.ephemeral && !g->deleteRequested ? "ephemeral group, no members left"
                                                                      : "on request");
        } else if (r.error == zk::Error::NotEmpty) {
          answer = ErrorCode::GROUP_NOT_EMPTY;
          g->needsReload = true;
        } else {
          spdlog::warn("group {}: deleting it failed at op {} of {}: {}", g->name, r.failedOp, nops, r.error);
          answer = fromZk(r.error);
          g->needsReload = true;
        }
        for (auto& w : g->deleteWaiters)
          out.push_back([w = std::move(w), answer, name = g->name] { w(protocol::DeleteGroupResponse{name, answer}); });
        g->deleteWaiters.clear();
        g->deleteRequested = false;
        if (!gone) {
          setState(*g, GroupState::Active);
          flush(g, out);
        }
      }
      run(out);
      if (gone) dropGroup(g->name, ErrorCode::UNKNOWN_GROUP, "deleted");
    });
  };

  // offsets/<topic>/<partition>: two levels below the offsets znode.
  auto listTopic = [this, walk, finish](const std::string& topicPath) {
    zk_.getChildren(topicPath, [walk, finish, topicPath](zk::ChildrenResult r) {
      bool last;
      {
        std::lock_guard lock(walk->mu);
        if (r.error == zk::Error::Ok) {
          for (auto& c : r.children) walk->leaves.push_back(topicPath + "/" + c);
          walk->topics.push_back(topicPath);
        } else if (r.error != zk::Error::NoNode) {
          walk->error = r.error;
        }
        last = --walk->pending == 0;
      }
      if (last) finish();
    });
  };
  zk_.getChildren(offsets, [walk, finish, listTopic, offsets](zk::ChildrenResult r) {
    bool last;
    {
      std::lock_guard lock(walk->mu);
      if (r.error == zk::Error::Ok) {
        walk->pending += static_cast<int>(r.children.size());
      } else {
        walk->error = r.error;  // NoNode: a group without an offsets znode
      }
      last = --walk->pending == 0;
    }
    if (r.error == zk::Error::Ok)
      for (auto& c : r.children) listTopic(offsets + "/" + c);
    if (last) finish();
  });
}

void Coordinator::checkGroup(const GroupPtr& g, TimePoint now) {
  Outbox out;
  {
    std::lock_guard lock(g->mu);
    if (g->state == GroupState::Active && connected_) {
      auto timeout = Millis(g->settings.sessionTimeoutMs);
      // Scanning every member on every tick would cost O(members) a tick
      // for nothing; the scan runs when the earliest possible timeout is
      // due. While a removal is pending it runs every tick, as the removal
      // may fail and leave the member in place.
      if (now >= g->nextLivenessScan || g->members.size() != g->membersAtScan) {
        TimePoint next = now + timeout;
        bool removing = false;
        for (auto& [id, m] : g->members) {
          if (g->removals.count(id) || g->flightRemovals.count(id)) {
            removing = true;
          } else if (now - m.lastSeen > timeout) {
            Removal rm;
            rm.evicted = true;
            rm.silentMs = millisBetween(m.lastSeen, now);
            g->removals.emplace(id, std::move(rm));
            removing = true;
          } else {
            next = std::min(next, m.lastSeen + timeout);
          }
        }
        g->nextLivenessScan = removing ? now : next;
        g->membersAtScan = g->members.size();
      }
      // An ephemeral group disappears when its last member goes, or when
      // nobody joined it within its session timeout after its creation or
      // after a takeover.
      if (g->settings.ephemeral && g->members.empty() && g->joins.empty() && !g->busy &&
          (g->hadMembers || now - g->emptySince >= timeout)) {
        deleteGroup(g);
      }
    }
    if (g->needsReload && !g->busy && connected_) {
      reload(g);
    } else {
      flush(g, out);
      flushCommits(g, out);
    }
  }
  run(out);
}

bool Coordinator::stalledNow(TimePoint now) const {
  if (stallSuspect_) return true;
  const int64_t nowNs = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  return nowNs > stallDeadlineNs_.load(std::memory_order_relaxed);
}

void Coordinator::tick() {
  if (stopped_) return;
  if (renewNeeded_.exchange(false)) {
    spdlog::info("opening a new ZooKeeper session");
    zk_.renew();
  }
  TimePoint now = time_.now();
  {
    const int64_t nowNs = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    const int64_t last = lastTickNs_.exchange(nowNs, std::memory_order_relaxed);
    const auto limit = std::chrono::duration_cast<std::chrono::nanoseconds>(zk_.sessionTimeout() / 3);
    stallDeadlineNs_.store(nowNs + limit.count(), std::memory_order_relaxed);
    if (last != 0 && std::chrono::nanoseconds(nowNs - last) > limit && !stallSuspect_.exchange(true)) {
      spdlog::warn("this server did not run for {} ms (more than a third of its {} ms ZooKeeper session): "
                   "heartbeats and registrations answer CONTROLLER_NOT_AVAILABLE until ZooKeeper confirms the session",
                   (nowNs - last) / 1000000, zk_.sessionTimeout().count());
    }
    if (stallSuspect_ && !stallProbeInFlight_.exchange(true)) {
      const uint64_t epoch = epoch_;
      zk_.exists(layout_.root(), [this, epoch, stalledAt = now](const zk::ExistsResult& r) {
        stallProbeInFlight_ = false;
        if (r.error == zk::Error::Ok && epoch == epoch_ && !stopped_) {
          stallSuspect_ = false;
          spdlog::info("ZooKeeper answered after the stall: the session is alive, heartbeats and registrations are "
                       "answered again ({} ms after the stall was seen)",
                       millisBetween(stalledAt, time_.now()));
        }
      });
    }
  }
  bool rewatch = false;
  std::vector<std::string> unclaimed, unwatched, topicsToWatch;
  bool registerNow = false;
  Outbox out;
  {
    std::lock_guard lock(registryMu_);
    if (connected_) {
      for (auto& [t, info] : topics_)
        if (!info.watching) topicsToWatch.push_back(t);
      rewatch = std::exchange(rewatchNeeded_, false);
      registerNow = !registered_ && !registering_ && now >= nextRegisterAttempt_;
      for (auto& [n, k] : known_) {
        if (!k.watching) {
          k.watching = true;
          unwatched.push_back(n);
        } else if (!k.hasController && !k.claiming) {
          unclaimed.push_back(n);
        }
      }
    }
    for (auto it = controllerWaiters_.begin(); it != controllerWaiters_.end();) {
      auto& w = *it;
      if (w->answered) {
        it = controllerWaiters_.erase(it);
      } else if (now >= w->deadline) {
        if (!w->answered.exchange(true)) {
          spdlog::warn("group {} was created but no controller claimed it within {} ms", w->group,
                       config_.createWaitForController.count());
          out.push_back([w] { w->done(protocol::CreateGroupResponse{w->group, ErrorCode::NONE, protocol::Broker{}}); });
        }
        it = controllerWaiters_.erase(it);
      } else {
        ++it;
      }
    }
  }
  run(out);
  if (registerNow) registerServer();
  if (rewatch) {
    watchServers();
    watchGroups();
  }
  for (auto& n : unwatched) watchController(n);
  for (auto& t : topicsToWatch) watchTopic(t);
  for (auto& n : unclaimed) maybeClaim(n, now);

  std::vector<GroupPtr> all;
  {
    std::shared_lock lock(groupsMu_);
    all.reserve(groups_.size());
    for (auto& [_, g] : groups_) all.push_back(g);
  }
  for (auto& g : all) checkGroup(g, now);
}

// ---------------------------------------------------------------------------
// Requests

void Coordinator::handle(const protocol::RequestHeader& header, protocol::Request request, ResponseCallback done) {
  // The server checks names before calling; checking again keeps a hostile
  // name away from ZooKeeper whoever calls. A heartbeat never reaches
  // ZooKeeper (its names are only looked up in memory), so the hot path
  // skips the second check.
  const bool heartbeat = std::holds_alternative<protocol::HeartbeatRequest>(request);
  if (ErrorCode e = heartbeat ? ErrorCode::NONE : protocol::validateNames(request); e != ErrorCode::NONE) {
    done(protocol::errorResponse(request, e));
    return;
  }
  if (stopped_) {
    done(protocol::errorResponse(request, ErrorCode::CONTROLLER_NOT_AVAILABLE));
    return;
  }
  // Heartbeats and re-registrations are answered from memory, and both
  // extend a member's hold on its partitions: not after a stall, until
  // ZooKeeper has confirmed this server still controls anything.
  if ((heartbeat || std::holds_alternative<protocol::RegisterConsumerRequest>(request)) && stalledNow(time_.now())) {
    done(protocol::errorResponse(request, ErrorCode::CONTROLLER_NOT_AVAILABLE));
    return;
  }
  switch (request.index()) {
    case 0: onHeartbeat(std::get<protocol::HeartbeatRequest>(request), done); return;
    case 1: onCreateGroup(std::move(std::get<protocol::CreateGroupRequest>(request)), std::move(done)); return;
    case 2: onDeleteGroup(std::get<protocol::DeleteGroupRequest>(request), std::move(done)); return;
    case 3:
      onRegister(header, std::move(std::get<protocol::RegisterConsumerRequest>(request)), std::move(done));
      return;
    case 4: onListGroups(std::get<protocol::ListGroupsRequest>(request), std::move(done)); return;
    case 5: onLeave(std::get<protocol::LeaveGroupRequest>(request), std::move(done)); return;
    case 6: onCommit(std::get<protocol::CommitOffsetsRequest>(request), std::move(done)); return;
    case 7: onFetch(std::get<protocol::FetchOffsetsRequest>(request), std::move(done)); return;
    case 8: onRewind(std::get<protocol::RewindConsumerRequest>(request), std::move(done)); return;
    default: done(protocol::errorResponse(request, ErrorCode::UNKNOWN_SERVER_ERROR)); return;
  }
}

void Coordinator::onHeartbeat(const protocol::HeartbeatRequest& r, ResponseCallback& done) {
  ErrorCode error;
  GroupPtr g = controlledGroup(r.group, &error);
  protocol::HeartbeatResponse resp;
  if (g) {
    std::lock_guard lock(g->mu);
    resp.generation = g->state == GroupState::Loading ? -1 : g->version;
    if (g->state == GroupState::Loading) {
      resp.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    } else if (g->state == GroupState::Deleting) {
      resp.error = ErrorCode::UNKNOWN_GROUP;
    } else {
      auto it = g->members.find(r.consumerId);
      if (it == g->members.end() && g->ownership.inGrace(time_.now())) {
        // This server has just taken the group over, and the member may
        // still hold partitions granted by the previous controller: it is
        // told to register again (reporting what it holds) rather than that
        // it is unknown, which would make it drop everything and leave its
        // partitions waiting out the grace.
        resp.error = ErrorCode::REBALANCE_NEEDED;
      } else if (it == g->members.end() || g->removals.count(r.consumerId) ||
                 g->flightRemovals.count(r.consumerId)) {
        resp.error = ErrorCode::UNKNOWN_CONSUMER;
      } else {
        TimePoint now = time_.now();
        it->second.lastSeen = now;
        if (r.generation != g->version) {
          resp.error = ErrorCode::REBALANCE_NEEDED;
        } else {
          // In sync: it has stopped using what this generation took from it.
          g->ownership.releaseUntargeted(r.consumerId);
          resp.error = g->ownership.due(r.consumerId, now) ? ErrorCode::REBALANCE_NEEDED : ErrorCode::NONE;
        }
      }
    }
  } else {
    resp.error = error;
  }
  done(std::move(resp));
}

std::string Coordinator::newMemberId(const std::optional<std::string>& clientId) {
  // <client id, reduced to name characters>-<16 hex digits>
  std::string prefix;
  if (clientId) {
    for (char c : *clientId) {
      if (prefix.size() >= 64) break;
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                c == '.';
      if (ok) prefix.push_back(c);
    }
  }
  if (prefix.empty() || prefix == "." || prefix == "..") prefix = "consumer";
  uint64_t x;
  {
    std::lock_guard lock(idMu_);
    idState_ += 0x9e3779b97f4a7c15ULL;
    x = mix64(idState_);
  }
  return fmt::format("{}-{:016x}", prefix, x);
}

void Coordinator::onRegister(const protocol::RequestHeader& h, protocol::RegisterConsumerRequest r,
                             ResponseCallback done) {
  ErrorCode error;
  GroupPtr g = controlledGroup(r.group, &error);
  auto fail = [&](ErrorCode e) {
    protocol::RegisterConsumerResponse resp;
    resp.group = r.group;
    resp.consumerId = r.consumerId;
    resp.error = e;
    done(std::move(resp));
  };
  if (!g) return fail(error);
  Outbox out;
  error = ErrorCode::NONE;
  {
    std::lock_guard lock(g->mu);
    std::string id = r.consumerId.empty() ? newMemberId(h.clientId) : r.consumerId;
    auto member = g->members.find(id);
    bool leaving = g->flightRemovals.count(id) > 0;
    // What the member says it holds: releases what it no longer reports and,
    // after a takeover, tells this controller who holds what.
    if (g->state == GroupState::Active) g->ownership.reportOwned(id, r.owned);
    if (g->state == GroupState::Deleting) {
      error = ErrorCode::UNKNOWN_GROUP;
    } else if (g->state == GroupState::Loading) {
      error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    } else if (member != g->members.end() && !leaving) {
      // Still a member: a restart within the session timeout costs no
      // rebalance. A queued eviction or leave is called off.
      member->second.lastSeen = time_.now();
      if (auto rm = g->removals.find(id); rm != g->removals.end()) {
        for (auto& w : rm->second.waiters)
          out.push_back([w = std::move(w)] { w(protocol::LeaveGroupResponse{ErrorCode::NONE}); });
        g->removals.erase(rm);
        spdlog::info("group {}: member {} registered again before its removal was written; it stays", g->name, id);
      }
      if (!g->busy && !hasPendingWrites(*g) && g->offsetsLoaded) {
        out.push_back([done = std::move(done), resp = registration(*g, id)]() mutable { done(std::move(resp)); });
      } else {
        g->rejoins.push_back(Rejoin{id, std::move(done)});
      }
    } else if (!connected_) {
      error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    } else {
      auto& j = g->joins[id];
      j.clientId = h.clientId.value_or("");
      j.waiters.push_back(std::move(done));
    }
    flush(g, out);
  }
  run(out);
  if (error != ErrorCode::NONE) fail(error);
}

void Coordinator::onLeave(const protocol::LeaveGroupRequest& r, ResponseCallback done) {
  ErrorCode error;
  GroupPtr g = controlledGroup(r.group, &error);
  if (!g) return done(protocol::LeaveGroupResponse{error});
  Outbox out;
  {
    std::lock_guard lock(g->mu);
    if (g->state == GroupState::Deleting) return done(protocol::LeaveGroupResponse{ErrorCode::UNKNOWN_GROUP});
    if (g->state == GroupState::Loading) return done(protocol::LeaveGroupResponse{ErrorCode::CONTROLLER_NOT_AVAILABLE});
    if (auto j = g->joins.find(r.consumerId); j != g->joins.end()) {
      // Left before its registration was written: nothing to write.
      for (auto& w : j->second.waiters) {
        protocol::RegisterConsumerResponse resp;
        resp.group = g->name;
        resp.consumerId = r.consumerId;
        resp.error = ErrorCode::UNKNOWN_CONSUMER;
        out.push_back([w = std::move(w), resp = std::move(resp)]() mutable { w(std::move(resp)); });
      }
      g->joins.erase(j);
      out.push_back([done = std::move(done)] { done(protocol::LeaveGroupResponse{ErrorCode::NONE}); });
    } else if (!g->members.count(r.consumerId) || g->flightRemovals.count(r.consumerId)) {
      out.push_back([done = std::move(done)] { done(protocol::LeaveGroupResponse{ErrorCode::UNKNOWN_CONSUMER}); });
    } else if (!connected_) {
      out.push_back(
          [done = std::move(done)] { done(protocol::LeaveGroupResponse{ErrorCode::CONTROLLER_NOT_AVAILABLE}); });
    } else {
      auto& rm = g->removals[r.consumerId];
      rm.evicted = false;
      rm.waiters.push_back(std::move(done));
      flush(g, out);
    }
  }
  run(out);
}

void Coordinator::onDeleteGroup(const protocol::DeleteGroupRequest& r, ResponseCallback done) {
  ErrorCode error;
  GroupPtr g = controlledGroup(r.group, &error);
  if (!g) return done(protocol::DeleteGroupResponse{r.group, error});
  Outbox out;
  {
    std::lock_guard lock(g->mu);
    ErrorCode e = ErrorCode::NONE;
    if (g->state == GroupState::Loading || !connected_) {
      e = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    } else if (!g->members.empty() || !g->joins.empty() || !g->flightJoins.empty()) {
      e = ErrorCode::GROUP_NOT_EMPTY;
    }
    if (e != ErrorCode::NONE) {
      out.push_back([done = std::move(done), e, name = r.group] { done(protocol::DeleteGroupResponse{name, e}); });
    } else {
      g->deleteWaiters.push_back(std::move(done));
      g->deleteRequested = true;
      if (g->state == GroupState::Active) flush(g, out);  // deletes once nothing else is in flight
    }
  }
  run(out);
}

void Coordinator::onCreateGroup(protocol::CreateGroupRequest r, ResponseCallback done) {
  auto fail = [&](ErrorCode e) { done(protocol::CreateGroupResponse{r.group, e, protocol::Broker{}}); };
  if (r.sessionTimeoutMs < config_.minSessionTimeoutMs || r.sessionTimeoutMs > config_.maxSessionTimeoutMs) {
    return fail(ErrorCode::INVALID_SESSION_TIMEOUT);
  }
  if (!connected_) return fail(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  GroupSettings s;
  s.sessionTimeoutMs = r.sessionTimeoutMs;
  s.topics = r.topics;
  s.ephemeral = r.ephemeral;
  auto w = std::make_shared<ControllerWaiter>();
  w->group = r.group;
  w->deadline = time_.now() + config_.createWaitForController;
  w->epoch = epoch_;
  w->done = std::move(done);
  std::vector<zk::Op> ops{zk::makeCreate(layout_.groupPath(r.group), encodeSettings(s)),
                          zk::makeCreate(layout_.membersPath(r.group), ""),
                          zk::makeCreate(layout_.offsetsPath(r.group), "")};
  zk_.multi(std::move(ops), [this, w, s](zk::MultiResult res) {
    auto answer = [w](ErrorCode e) {
      if (!w->answered.exchange(true)) w->done(protocol::CreateGroupResponse{w->group, e, protocol::Broker{}});
    };
    if (res.error == zk::Error::Ok) {
      spdlog::info("group {}: created (session timeout {} ms, topics [{}]{})", w->group, s.sessionTimeoutMs,
                   fmt::join(s.topics, ","), s.ephemeral ? ", ephemeral" : "");
      awaitController(w);
      return;
    }
    if (res.error == zk::Error::NodeExists && res.failedOp == 0) {
      zk_.get(layout_.groupPath(w->group), [this, w, s, answer](zk::GetResult g) {
        if (g.error != zk::Error::Ok) return answer(fromZk(g.error));
        auto existing = decodeSettings(g.data);
        if (!existing || !sameSettings(*existing, s)) return answer(ErrorCode::GROUP_ALREADY_EXISTS);
        awaitController(w);  // the same settings: creating it again succeeds
      });
      return;
    }
    spdlog::warn("group {}: creating it failed: {}", w->group, res.error);
    answer(fromZk(res.error));
  });
}

void Coordinator::awaitController(const std::shared_ptr<ControllerWaiter>& w) {
  {
    std::lock_guard lock(registryMu_);
    if (std::find(controllerWaiters_.begin(), controllerWaiters_.end(), w) == controllerWaiters_.end())
      controllerWaiters_.push_back(w);
  }
  if (w->answered) return;
  zk_.exists(
      layout_.controllerPath(w->group),
      [this, w](zk::ExistsResult r) {
        if (w->answered || r.error != zk::Error::Ok) return;  // NoNode: the watch tells when it appears
        zk_.get(layout_.controllerPath(w->group), [this, w](zk::GetResult g) {
          if (g.error != zk::Error::Ok) return;
          try {
            answerController(w, std::stoi(g.data));
          } catch (...) {
            spdlog::warn("group {}: controller znode holds '{}', not a server id", w->group, g.data);
          }
        });
      },
      [this, w](const zk::WatchEvent& ev) {
        if (!w->answered && ev.type != zk::WatchEvent::Type::Session) awaitController(w);
      });
}

void Coordinator::answerController(const std::shared_ptr<ControllerWaiter>& w, int32_t controllerId) {
  protocol::Broker b = brokerOf(controllerId);
  if (!w->answered.exchange(true)) w->done(protocol::CreateGroupResponse{w->group, ErrorCode::NONE, b});
}

protocol::Broker Coordinator::brokerOf(int32_t serverId) const {
  if (serverId == config_.serverId) return protocol::Broker{serverId, config_.advertisedHost, config_.advertisedPort};
  std::lock_guard lock(registryMu_);
  auto it = servers_.find(serverId);
  if (it == servers_.end() || it->second.host.empty()) return protocol::Broker{};
  return it->second;
}

void Coordinator::onListGroups(const protocol::ListGroupsRequest& r, ResponseCallback done) {
  if (!connected_) return done(protocol::ListGroupsResponse{{}, ErrorCode::CONTROLLER_NOT_AVAILABLE});
  // Each named group costs three ZooKeeper reads: a request naming more than
  // this is refused rather than fanned out.
  if (r.groups.size() > kMaxListedGroups) return done(protocol::ListGroupsResponse{{}, ErrorCode::INVALID_REQUEST});

  struct Listing {
    std::mutex mu;
    std::vector<protocol::GroupInfo> infos;
    size_t left = 0;
    ErrorCode error = ErrorCode::NONE;
    ResponseCallback done;
  };
  auto listing = std::make_shared<Listing>();
  listing->done = std::move(done);

  auto finishOne = [listing] {
    bool last;
    {
      std::lock_guard lock(listing->mu);
      last = --listing->left == 0;
    }
    if (!last) return;
    protocol::ListGroupsResponse resp;
    resp.error = listing->error;
    if (resp.error == ErrorCode::NONE) resp.groups = std::move(listing->infos);
    listing->done(std::move(resp));
  };

  // Reads one group's znode, members and controller; fills infos[i].
  auto describe = [this, listing, finishOne](size_t i) {
    std::string name = listing->infos[i].name;
    struct Parts {
      std::mutex mu;
      int left = 3;
    };
    auto parts = std::make_shared<Parts>();
    auto partDone = [parts, finishOne] {
      bool last;
      {
        std::lock_guard lock(parts->mu);
        last = --parts->left == 0;
      }
      if (last) finishOne();
    };
    auto noteError = [listing](zk::Error e) {
      std::lock_guard lock(listing->mu);
      if (zk::isConnectionProblem(e)) listing->error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    };
    zk_.get(layout_.groupPath(name), [listing, i, partDone, noteError](zk::GetResult g) {
      {
        std::lock_guard lock(listing->mu);
        auto& info = listing->infos[i];
        if (g.error == zk::Error::NoNode) {
          info.error = ErrorCode::UNKNOWN_GROUP;
        } else if (g.error == zk::Error::Ok) {
          if (auto s = decodeSettings(g.data)) {
            info.topics = s->topics;
            info.sessionTimeoutMs = s->sessionTimeoutMs;
            info.ephemeral = s->ephemeral;
            info.generation = g.stat.version;
          } else {
            info.error = ErrorCode::UNKNOWN_SERVER_ERROR;
          }
        }
      }
      if (g.error != zk::Error::Ok && g.error != zk::Error::NoNode) noteError(g.error);
      partDone();
    });
    zk_.getChildren(layout_.membersPath(name), [listing, i, partDone, noteError](zk::ChildrenResult c) {
      if (c.error == zk::Error::Ok) {
        std::sort(c.children.begin(), c.children.end());
        std::lock_guard lock(listing->mu);
        listing->infos[i].members = std::move(c.children);
      } else if (c.error != zk::Error::NoNode) {
        noteError(c.error);
      }
      partDone();
    });
    zk_.get(layout_.controllerPath(name), [this, listing, i, partDone, noteError](zk::GetResult g) {
      if (g.error == zk::Error::Ok) {
        int32_t id = -1;
        try {
          id = std::stoi(g.data);
        } catch (...) {
        }
        protocol::Broker b = id >= 0 ? brokerOf(id) : protocol::Broker{};
        std::lock_guard lock(listing->mu);
        listing->infos[i].controller = b;
      } else if (g.error != zk::Error::NoNode) {
        noteError(g.error);
      }
      partDone();
    });
  };

  auto start = [listing, describe, finishOne](std::vector<std::string> names) {
    std::vector<size_t> toRead;
    {
      std::lock_guard lock(listing->mu);
      listing->infos.resize(names.size());
      for (size_t i = 0; i < names.size(); ++i) {
        listing->infos[i].name = names[i];
        if (!protocol::isValidName(names[i])) {
          listing->infos[i].error = ErrorCode::INVALID_GROUP_NAME;
        } else {
          toRead.push_back(i);
        }
      }
      listing->left = toRead.size() + 1;  // +1: released below, so an empty list also finishes
    }
    for (size_t i : toRead) describe(i);
    finishOne();
  };

  if (!r.groups.empty()) return start(r.groups);
  zk_.getChildren(layout_.groupsPath(), [listing, start](zk::ChildrenResult c) {
    if (c.error != zk::Error::Ok) {
      listing->done(protocol::ListGroupsResponse{{}, fromZk(c.error)});
      return;
    }
    std::vector<std::string> names;
    for (auto& n : c.children)
      if (protocol::isValidName(n)) names.push_back(n);
    std::sort(names.begin(), names.end());
    start(std::move(names));
  });
}

// ---------------------------------------------------------------------------
// Introspection

std::vector<std::string> Coordinator::controlledGroups() const {
  std::vector<std::string> names;
  std::shared_lock lock(groupsMu_);
  for (auto& [n, g] : groups_) names.push_back(n);
  std::sort(names.begin(), names.end());
  return names;
}

size_t Coordinator::memberCount() const {
  std::vector<GroupPtr> all;
  {
    std::shared_lock lock(groupsMu_);
    for (auto& [_, g] : groups_) all.push_back(g);
  }
  size_t n = 0;
  for (auto& g : all) {
    std::lock_guard lock(g->mu);
    n += g->members.size();
  }
  return n;
}

int64_t Coordinator::generationOf(const std::string& group) const {
  auto g = findGroup(group);
  if (!g) return -1;
  std::lock_guard lock(g->mu);
  return g->version;
}

std::vector<std::string> Coordinator::membersOf(const std::string& group) const {
  auto g = findGroup(group);
  if (!g) return {};
  std::lock_guard lock(g->mu);
  std::vector<std::string> ids;
  for (auto& [id, _] : g->members) ids.push_back(id);
  return ids;
}

std::vector<int32_t> Coordinator::liveServers() const {
  std::lock_guard lock(registryMu_);
  std::vector<int32_t> ids;
  for (auto& [id, _] : servers_) ids.push_back(id);
  return ids;
}

}  // namespace groupcoord::adapter
