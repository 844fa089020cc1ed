#include "adapter/Coordinator.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "adapter/ZkErrors.h"
#include "protocol/Codec.h"

namespace groupcoord::adapter {

using protocol::Caller;
using protocol::ErrorCode;
using protocol::ResponseCallback;

namespace {

// Same settings for CreateGroup's idempotence: topics compared as sets.
bool sameSettings(GroupSettings a, GroupSettings b) {
  for (auto* s : {&a, &b}) {
    std::sort(s->topics.begin(), s->topics.end());
    s->topics.erase(std::unique(s->topics.begin(), s->topics.end()), s->topics.end());
  }
  return a == b;
}

}  // namespace

Coordinator::Coordinator(zk::Client& zk, CoordinatorConfig config, const TimeSource& time)
    : zk_(zk),
      config_(std::move(config)),
      layout_(config_.root),
      time_(time),
      systemTime_(dynamic_cast<const SystemTimeSource*>(&time) != nullptr),
      servers_(zk_, layout_, time_, epoch_,
               ServerRegistry::Events{[this] { serversChanged(); }, [this] { claims_.reconsider(); }},
               config_.handoverSettleDelay),
      brokers_(zk_, config_.brokersPath, epoch_, [this](int32_t broker) { topics_.brokerChanged(broker); }),
      topics_(
          zk_, config_.topicsPath, epoch_,
          [this](const std::string& topic) { groups_.forEach([&](GroupController& g) { g.topicChanged(topic); }); },
          &brokers_),
      offsets_(zk_, layout_),
      claims_(zk_, layout_, time_, epoch_, servers_,
              ClaimsConfig{config_.claimFallback, config_.createWaitForController},
              ControllerClaims::Events{
                  [this](const std::string& g) { onClaimed(g); },
                  [this](const std::string& g, ErrorCode answer, const char* why) { dropGroup(g, answer, why); },
                  [this] { return mayClaim(); },
                  [this](const std::string& g) { return placement_.target(g); }}),
      board_(zk_, layout_, time_, epoch_, config_.serverId),
      placement_(servers_, claims_, board_, config_.placement),
      directory_(zk_, layout_, servers_, offsets_, connected_),
      stall_(zk_, layout_.root(), time_, epoch_),
      lease_(zk_, layout_.root(), epoch_, config_.leaseMargin),
      memberIds_(config_.serverId),
      groupContext_{config_.serverId,
                    zk_,
                    layout_,
                    GroupConfig{config_.batchInterval, config_.maxChangesPerTransaction, config_.joinWindow,
                                config_.joinWindowMax, config_.maxMetadataBytes},
                    time_,
                    epoch_,
                    connected_,
                    topics_,
                    offsets_,
                    [this](const std::string& g, ErrorCode answer, const char* why) { dropGroup(g, answer, why); },
                    [this](const std::optional<std::string>& clientId) { return memberIds_.next(clientId); }},
      handovers_(servers_, placement_, groups_, time_,
                 HandoverConfig{config_.handoverMaxInFlight, Millis(1000), config_.placementInterval}) {
  groupContext_.answersFromMemory = [this](TimePoint now) { return answersFromMemory(now); };
  servers_.setIdentity(ServerIdentity{config_.serverId, config_.advertisedHost, config_.advertisedPort,
                                      config_.internalHost, config_.internalPort, config_.kafkaPort});
  KafkaHooks hooks;
  hooks.selfId = config_.serverId;
  hooks.controlsHere = [this](const std::string& g) { return groups_.find(g) != nullptr; };
  hooks.controllerOf = [this](const std::string& g) { return claims_.controllerOf(g); };
  hooks.isKafkaGroup = [this](const std::string& g) -> std::optional<bool> {
    auto group = groups_.find(g);
    return group ? group->kafkaGroup() : std::nullopt;
  };
  hooks.ensure = [this](const std::string& g, std::function<void(int32_t, std::string)> done) {
    ensureKafkaGroup(g, std::move(done));
  };
  hooks.placementOf = [this](const std::string& g) {
    const int32_t target = placement_.target(g);
    return target >= 0 ? target : servers_.preferredServer(g);
  };
  hooks.controlled = [this] { return controlledGroups(); };
  hooks.deleteGroup = [this](const std::string& g, std::function<void(bool, bool, std::string)> done) {
    auto group = groups_.find(g);
    if (!group) return done(false, false, "not controlled here");
    group->deleteGroup(protocol::DeleteGroupRequest{g}, [done = std::move(done)](protocol::Response r) {
      const ErrorCode e = std::visit(
          [](const auto& x) {
            if constexpr (requires { x.error; }) {
              return x.error;
            } else {
              return ErrorCode::NONE;
            }
          },
          r);
      done(e == ErrorCode::NONE, e == ErrorCode::GROUP_NOT_EMPTY, std::string(protocol::errorName(e)));
    });
  };
  hooks.answersFromMemory = [this](TimePoint now) { return answersFromMemory(now); };
  hooks.brokers = [this] { return servers_.kafkaBrokers(); };
  hooks.brokerOf = [this](int32_t id) { return servers_.kafkaBrokerOf(id); };
  hooks.generationOf = [this](const std::string& g) -> std::optional<int32_t> {
    auto group = groups_.find(g);
    return group ? group->kafkaGeneration() : std::nullopt;
  };
  hooks.writeMembers = [this](const std::string& g, std::vector<zk::Op> ops, int32_t version, int moves,
                              KafkaHooks::Written done) {
    auto group = groups_.find(g);
    if (!group) return done(std::nullopt, false, "the group is no longer controlled here");
    group->writeKafka(std::move(ops), version, moves, std::move(done));
  };
  hooks.newMemberId = [this](const std::string& clientId) { return memberIds_.next(clientId); };
  hooks.brokerRacks = [this](const std::set<int32_t>& brokers) { return brokers_.racksOf(brokers); };
  kafka_ = std::make_unique<KafkaGroups>(
      zk_, layout_, offsets_, time_,
      KafkaGroupsConfig{config_.kafkaRules, config_.topicsPath, config_.kafkaConsumerRules}, std::move(hooks));
  zk_.setListener(this);
}

Coordinator::~Coordinator() {
  stop();
  detach();
}

void Coordinator::detach() {
  if (!detached_.exchange(true)) zk_.setListener(nullptr);
}

// ---------------------------------------------------------------------------
// Start, stop, ticker

void Coordinator::setAdvertised(std::string host, uint16_t port, std::string internalHost, uint16_t internalPort,
                                uint16_t kafkaPort) {
  config_.kafkaPort = kafkaPort;
  config_.advertisedHost = std::move(host);
  config_.advertisedPort = port;
  config_.internalHost = std::move(internalHost);
  config_.internalPort = internalPort;
  servers_.setIdentity(ServerIdentity{config_.serverId, config_.advertisedHost, config_.advertisedPort,
                                      config_.internalHost, config_.internalPort, config_.kafkaPort});
}

zk::Error Coordinator::start(Millis wait) {
  for (const auto& p : {layout_.serversPath(), layout_.groupsPath(), layout_.drainingPath(), layout_.loadsPath(),
                        layout_.kafkaPath()}) {
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
  lease_.probeNow(time_.now());
  servers_.registerSelf();
  servers_.watch();
  claims_.watchGroups();
  board_.watch();
  brokers_.watch();
  return zk::Error::Ok;
}

void Coordinator::startTicker() {
  ticker_ = std::thread([this] {
    MutexLock lock(tickerMu_);
    while (!stopped_) {
      tickerMu_.unlock();
      tick();
      tickerMu_.lock();
      tickerCv_.wait_for(tickerMu_, config_.tickInterval, [this] { return stopped_.load(); });
    }
  });
}

void Coordinator::stop() {
  {
    MutexLock lock(tickerMu_);
    if (stopped_.exchange(true)) return;
  }
  tickerCv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  stall_.stop();
  lease_.stop();
  kafka_->stop();
  auto all = groups_.snapshot();
  for (auto& g : all) g->answerAllWaiting(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  {
    Outbox out;
    claims_.answerWaiters(out);
  }
  spdlog::info("coordinator stopped; {} groups were controlled here", all.size());
}

void Coordinator::tick() {
  if (stopped_) return;
  if (renewNeeded_.exchange(false)) {
    spdlog::info("opening a new ZooKeeper session");
    zk_.renew();
  }
  const TimePoint now = time_.now();
  stall_.onTick(now);
  lease_.onTick(now);
  claims_.expireWaiters(now, connected_);
  if (connected_) {
    servers_.tick(now);
    claims_.tick(now);
    board_.tick(now);
    if (servers_.registered()) publishWeights(now);
    topics_.rewatch();
    brokers_.rewatch();
  }
  groups_.forEach([now](GroupController& g) { g.tick(now); });
  kafka_->tick(now);
  if (connected_ && servers_.registered() && answersFromMemory(now)) handovers_.tick(now);
}

// ---------------------------------------------------------------------------
// The ZooKeeper session

void Coordinator::onSessionState(zk::SessionState state) {
  switch (state) {
    case zk::SessionState::Connected:
      onNewSession(zk_.sessionId());
      break;
    case zk::SessionState::Reconnecting: {
      connected_ = false;
      // Commits accepted but not sent yet (queued behind a transaction in
      // flight) would otherwise wait as long as the outage lasts, and their
      // members would give up on this server: they are refused now, as a
      // commit arriving now is. Nothing of them reached ZooKeeper.
      size_t refused = 0;
      groups_.forEach([&](GroupController& g) { refused += g.refuseQueuedCommits(); });
      spdlog::warn(
          "lost the connection to ZooKeeper (session 0x{:x} may still come back): heartbeats are still answered, "
          "evictions wait, writes answer CONTROLLER_NOT_AVAILABLE{}",
          sessionId_.load(), refused > 0 ? fmt::format(" ({} queued commits refused)", refused) : std::string());
      break;
    }
    case zk::SessionState::Expired:
    case zk::SessionState::AuthFailed:
      onSessionLost(state);
      break;
    case zk::SessionState::Connecting:
    case zk::SessionState::Closed:
      connected_ = false;
      break;
  }
}

void Coordinator::onNewSession(int64_t id) {
  const int64_t before = sessionId_.exchange(id);
  connected_ = true;
  lease_.probeNow(time_.now());
  if (!started_) return;
  if (id != before) {
    spdlog::info("ZooKeeper session 0x{:x} established: registering server {} and claiming groups again", id,
                 config_.serverId);
    servers_.registerSelf();
    servers_.watch();
    claims_.watchGroups();
    board_.watch();
    brokers_.watch();
  } else {
    spdlog::info("ZooKeeper connection restored, session 0x{:x} kept: evictions resume", id);
    servers_.rewatchSoon();
    claims_.rewatchSoon();
    board_.rewatchSoon();
  }
}

void Coordinator::onSessionLost(zk::SessionState state) {
  connected_ = false;
  epoch_.advance();  // what the old session sent is answered for nothing now
  lease_.reset();
  servers_.reset();
  auto lost = groups_.removeAll();
  for (auto& g : lost) g->drop(ErrorCode::CONTROLLER_NOT_AVAILABLE, "the ZooKeeper session ended");
  claims_.reset();
  board_.reset();
  topics_.clear();  // their watches went with the session
  brokers_.clear();
  spdlog::error(
      "ZooKeeper session 0x{:x} {}: gave up control of {} groups (their members must register again); opening a new "
      "session",
      sessionId_.load(), state == zk::SessionState::Expired ? "expired" : "failed authentication", lost.size());
  renewNeeded_ = true;
}

// ---------------------------------------------------------------------------
// Groups controlled here

bool Coordinator::mayClaim() const {
  return servers_.registered() && connected_ && !stopped_ && servers_.mayTakeGroups();
}

void Coordinator::serversChanged() {
  claims_.reconsider();
  handovers_.recheckSoon();
}

void Coordinator::publishWeights(TimePoint now) {
  if (now < nextWeightsCheck_) return;
  nextWeightsCheck_ = now + Millis(1000);
  std::vector<std::pair<std::string, uint64_t>> mine;
  for (auto& g : groups_.snapshot()) mine.emplace_back(g->name(), placement_.weightOf(g->memberCount()));
  board_.publish(now, mine);
}

PlacementView Coordinator::placementView() { return placement_.view(); }

void Coordinator::onClaimed(const std::string& group) {
  auto g = std::make_shared<GroupController>(groupContext_, group);
  groups_.insert(g);
  spdlog::info("group {}: controller claimed by server {}; loading it from ZooKeeper", group, config_.serverId);
  g->load();
}

void Coordinator::dropGroup(const std::string& group, ErrorCode answer, const char* why) {
  if (auto g = groups_.remove(group)) g->drop(answer, why);
}

// ---------------------------------------------------------------------------
// Requests

void Coordinator::handle(const protocol::RequestHeader& header, protocol::Request request, ResponseCallback done) {
  handleFrom(protocol::Caller{}, header, std::move(request), std::move(done));
}

void Coordinator::handleFrom(const protocol::Caller& caller, const protocol::RequestHeader& header,
                             protocol::Request request, ResponseCallback done) {
  // The server checks names before calling; checking again keeps a hostile
  // name away from ZooKeeper whoever calls. A heartbeat never reaches
  // ZooKeeper (its names are only looked up in memory), so the hot path
  // skips the second check.
  // A heartbeat held from this connection is answered first, whatever this
  // request gets: its answer comes before this one's on the connection.
  if (caller.connection != 0) releaseHeldOn(caller.connection);
  const bool heartbeat = std::holds_alternative<protocol::HeartbeatRequest>(request);
  if (ErrorCode e = heartbeat ? ErrorCode::NONE : protocol::validateNames(request); e != ErrorCode::NONE) {
    return done(protocol::errorResponse(request, e));
  }
  if (stopped_) return done(protocol::errorResponse(request, ErrorCode::CONTROLLER_NOT_AVAILABLE));
  // A re-registration is answered from memory and extends a member's hold
  // on its partitions, as a heartbeat does (answerHeartbeat): only while the
  // lease holds and no stall is suspected.
  if (std::holds_alternative<protocol::RegisterConsumerRequest>(request) && !answersFromMemory(time_.now())) {
    return done(protocol::errorResponse(request, ErrorCode::CONTROLLER_NOT_AVAILABLE));
  }
  if (caller.internal) {
    // Came through the internal listener: the caller is inside this
    // server's network, where the advertised addresses may lead nowhere.
    done = [this, next = std::move(done)](protocol::Response r) {
      toInternalAddresses(r);
      next(std::move(r));
    };
  }
  std::visit([&](auto& r) { route(caller, header, std::move(r), done); }, request);
}

void Coordinator::toInternalAddresses(protocol::Response& response) const {
  auto swap = [this](protocol::Broker& b) {
    if (b.isNone()) return;
    protocol::Broker internal = servers_.brokerOf(b.brokerId, Reach::Internal);
    if (!internal.isNone()) b = std::move(internal);
  };
  if (auto* r = std::get_if<protocol::CreateGroupResponse>(&response)) swap(r->controller);
  if (auto* r = std::get_if<protocol::DescribeGroupResponse>(&response)) swap(r->controller);
  if (auto* r = std::get_if<protocol::ListGroupsResponse>(&response)) {
    for (auto& g : r->groups) swap(g.controller);
  }
}

namespace {
// What a connection keeps between its heartbeats: the group the last one
// named and the member found there (GroupTable::find with a cache).
struct HeartbeatSlot final : protocol::ConnectionState {
  GroupTable::Cached group;
};
}  // namespace

// Both paths of a heartbeat come here: handleFrom() (route) and the I/O
// thread's heartbeatNow(). Inlined into both: as a call of its own it cost
// about 20 instructions per heartbeat (bench/run.sh instructions).
[[gnu::always_inline]] inline protocol::HeartbeatResponse Coordinator::answerHeartbeat(const protocol::Caller& caller,
                                                         const protocol::HeartbeatView& r, TimePoint now,
                                                         GroupTable::Cached& kept) {
  protocol::HeartbeatResponse out;
  if (stopped_) {
    out.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    return out;
  }
  // Heartbeats are answered from memory, and extend a member's hold on its
  // partitions: only while the session is certainly alive (the lease) and
  // not after a stall, until ZooKeeper has confirmed this server still
  // controls anything.
  if (!answersFromMemory(now)) {
    // Not answered, but heard: the member is alive, and once ZooKeeper
    // answers again in the same session it must not be evicted for a
    // silence that was this server's.
    if (GroupController* g = groups_.find(r.group, kept)) g->heard(r.consumerId, now);
    out.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
    return out;
  }
  if (GroupController* g = groups_.find(r.group, kept)) return g->heartbeat(r, caller, now, &kept.member);
  out.error = claims_.notHere(std::string(r.group), connected_);
  return out;
}

bool Coordinator::heartbeatNow(const protocol::Caller& caller, protocol::ConnectionSlot& slot,
                               const protocol::HeartbeatView& r, protocol::HeartbeatResponse& out,
                               std::chrono::steady_clock::time_point readAt, std::optional<GroupMotion>* motion) {
  // One clock read for the whole heartbeat: the lease, the stall rule and
  // the member's last-seen time; the server's own when it took one.
  const TimePoint now = systemTime_ && readAt != TimePoint{} ? readAt : time_.now();
  // The slot is this coordinator's own: nothing else fills it.
  if (!slot) slot = std::make_unique<HeartbeatSlot>();
  GroupTable::Cached& kept = static_cast<HeartbeatSlot&>(*slot).group;
  // A heartbeat that may be held takes the general path (route), which has
  // a callback to answer it with later.
  if (r.waitMs > 0 && config_.heartbeatMaxWait.count() > 0 && !holdNothing_) return false;
  out = answerHeartbeat(caller, r, now, kept);
  if (motion != nullptr) {
    // A sampled heartbeat: the group is the one just looked up (the cache hits).
    if (GroupController* g = groups_.find(r.group, kept)) {
      *motion = g->inStep() ? GroupMotion::InStep : GroupMotion::Moving;
    }
  }
  return true;
}

template <class Request, class F>
void Coordinator::toController(const Request& r, ResponseCallback& done, F&& f) {
  if (auto g = groups_.find(r.group)) return f(*g);
  done(protocol::errorResponse(protocol::Request(r), claims_.notHere(r.group, connected_)));
}

void Coordinator::route(const Caller& caller, const protocol::RequestHeader& h, protocol::HeartbeatRequest r,
                        ResponseCallback& done) {
  GroupTable::Cached kept;
  const protocol::HeartbeatView view{h.version, h.correlationId, r.group, r.consumerId, r.generation, r.waitMs};
  const TimePoint now = time_.now();
  const Millis wait = std::min(Millis(std::max(r.waitMs, 0)), config_.heartbeatMaxWait);
  if (wait.count() > 0 && caller.connection != 0 && !holdNothing_ && answersFromMemory(now)) {
    if (auto g = groups_.find(r.group)) {
      // Held (docs/design.md, "Held heartbeats"): its connection is noted,
      // so that another request on it answers this one first.
      uint64_t ticket = 0;
      {
        MutexLock lock(heldMu_);
        ticket = nextHeldTicket_++;
        heldOn_[caller.connection] = {r.group, ticket};
      }
      auto answered = [this, connection = caller.connection, ticket, done = std::move(done)](protocol::Response a) {
        {
          MutexLock lock(heldMu_);
          auto it = heldOn_.find(connection);
          if (it != heldOn_.end() && it->second.second == ticket) heldOn_.erase(it);
        }
        done(std::move(a));
      };
      return g->heartbeatHeld(view, caller, now, wait, std::move(answered));
    }
  }
  done(answerHeartbeat(caller, view, now, kept));
}

void Coordinator::releaseAllHeld() {
  holdNothing_ = true;
  groups_.forEach([](GroupController& g) { g.releaseAllHeld(); });
}

void Coordinator::releaseHeldOn(uint64_t connection) {
  std::string group;
  {
    MutexLock lock(heldMu_);
    auto it = heldOn_.find(connection);
    if (it == heldOn_.end()) return;
    group = it->second.first;
  }
  if (auto g = groups_.find(group)) g->releaseHeld(connection);
}

void Coordinator::route(const Caller& caller, const protocol::RequestHeader& h, protocol::RegisterConsumerRequest r,
                        ResponseCallback& done) {
  if (h.version > config_.registerMaxVersion) return done(protocol::ErrorOnlyResponse{ErrorCode::UNSUPPORTED_VERSION});
  toController(r, done, [&](GroupController& g) { g.registerMember(h, std::move(r), std::move(done), caller); });
}

void Coordinator::route(const Caller&, const protocol::RequestHeader&, protocol::LeaveGroupRequest r, ResponseCallback& done) {
  toController(r, done, [&](GroupController& g) { g.leave(r, std::move(done)); });
}

void Coordinator::route(const Caller&, const protocol::RequestHeader&, protocol::DeleteGroupRequest r, ResponseCallback& done) {
  toController(r, done, [&](GroupController& g) { g.deleteGroup(r, std::move(done)); });
}

void Coordinator::route(const Caller&, const protocol::RequestHeader&, protocol::CommitOffsetsRequest r, ResponseCallback& done) {
  toController(r, done, [&](GroupController& g) { g.commit(r, std::move(done)); });
}

void Coordinator::route(const Caller& caller, const protocol::RequestHeader&, protocol::RewindConsumerRequest r,
                        ResponseCallback& done) {
  toController(r, done, [&](GroupController& g) {
    if (g.kafkaGroup() == std::optional<bool>(true)) return kafka_->rewind(r, std::move(done));
    g.rewind(r, std::move(done), caller);
  });
}

void Coordinator::route(const Caller&, const protocol::RequestHeader&, protocol::DescribeGroupRequest r,
                        ResponseCallback& done) {
  toController(r, done, [&](GroupController& g) {
    auto d = g.describe(self());
    kafka_->describeInto(d);
    done(std::move(d));
  });
}

void Coordinator::route(const Caller&, const protocol::RequestHeader&, protocol::ListGroupsRequest r, ResponseCallback& done) {
  directory_.listGroups(r, std::move(done));
}

void Coordinator::route(const Caller&, const protocol::RequestHeader&, protocol::FetchOffsetsRequest r, ResponseCallback& done) {
  directory_.fetchOffsets(r, std::move(done));
}

void Coordinator::route(const Caller&, const protocol::RequestHeader&, protocol::AuthenticateRequest r, ResponseCallback& done) {
  // The server's authentication gate answers these; none reaches the
  // coordinator in a correct server.
  done(protocol::errorResponse(protocol::Request(std::move(r)), ErrorCode::UNKNOWN_SERVER_ERROR));
}

void Coordinator::route(const Caller&, const protocol::RequestHeader&, protocol::DrainServerRequest r, ResponseCallback& done) {
  // Only the marker is written here; every server watches the markers and
  // moves groups by them. Without ZooKeeper the write could not be
  // confirmed, so the caller is told to retry rather than left waiting.
  if (!connected_) return done(protocol::DrainServerResponse{ErrorCode::CONTROLLER_NOT_AVAILABLE});
  servers_.requestDrain(r.serverId, r.drain,
                        [done = std::move(done)](ErrorCode e) { done(protocol::DrainServerResponse{e}); });
}

void Coordinator::route(const Caller&, const protocol::RequestHeader&, protocol::CreateGroupRequest r, ResponseCallback& done) {
  auto fail = [&](ErrorCode e) { done(protocol::CreateGroupResponse{r.group, e, protocol::Broker{}}); };
  if (r.sessionTimeoutMs < config_.minSessionTimeoutMs || r.sessionTimeoutMs > config_.maxSessionTimeoutMs) {
    return fail(ErrorCode::INVALID_SESSION_TIMEOUT);
  }
  if (!connected_) return fail(ErrorCode::CONTROLLER_NOT_AVAILABLE);
  GroupSettings s;
  s.sessionTimeoutMs = r.sessionTimeoutMs;
  s.topics = r.topics;
  s.ephemeral = r.ephemeral;
  s.mode = r.mode;
  // Creating a group again with the same settings succeeds.
  createGroup(r.group, s, [s](const GroupSettings& existing) { return sameSettings(existing, s); }, std::move(done));
}

void Coordinator::createGroup(const std::string& group, const GroupSettings& s,
                              std::function<bool(const GroupSettings& existing)> acceptExisting,
                              ResponseCallback done) {
  std::vector<zk::Op> ops{zk::makeCreate(layout_.groupPath(group), layout::encodeSettings(s)),
                          zk::makeCreate(layout_.membersPath(group), ""),
                          zk::makeCreate(layout_.offsetsPath(group), "")};
  // Answered once: by the controller's arrival (or the wait's end), or by
  // the failure here.
  zk_.multi(std::move(ops), [this, group, s, accept = std::move(acceptExisting),
                             done = std::move(done)](zk::MultiResult res) mutable {
    if (res.error == zk::Error::Ok) {
      spdlog::info("group {}: created{} (session timeout {} ms, topics [{}]{})", group,
                   s.kafka ? " by the Kafka port" : "", s.sessionTimeoutMs, fmt::join(s.topics, ","),
                   s.ephemeral ? ", ephemeral" : "");
      return claims_.awaitController(group, std::move(done));
    }
    if (res.error != zk::Error::NodeExists || res.failedOp != 0) {
      spdlog::warn("group {}: creating it failed: {}", group, res.error);
      return done(protocol::CreateGroupResponse{group, fromZk(res.error), protocol::Broker{}});
    }
    if (!accept) return claims_.awaitController(group, std::move(done));  // whatever it is
    zk_.get(layout_.groupPath(group), [this, group, accept = std::move(accept), done = std::move(done)](
                                          zk::GetResult g) mutable {
      if (g.error != zk::Error::Ok) return done(protocol::CreateGroupResponse{group, fromZk(g.error), {}});
      auto existing = layout::decodeSettings(g.data);
      if (!existing || !accept(*existing)) {
        return done(protocol::CreateGroupResponse{group, ErrorCode::GROUP_ALREADY_EXISTS, {}});
      }
      claims_.awaitController(group, std::move(done));
    });
  });
}

void Coordinator::ensureKafkaGroup(const std::string& group, std::function<void(int32_t, std::string)> done) {
  if (!connected_) return done(-1, "this server is not connected to ZooKeeper");
  GroupSettings s;
  // A Kafka member brings its own session timeout; the group's only
  // bounds how long an empty group waits, as a native one's does.
  s.sessionTimeoutMs = std::clamp<int64_t>(10000, config_.minSessionTimeoutMs, config_.maxSessionTimeoutMs);
  s.mode = protocol::AssignmentMode::CLIENT;
  s.kafka = true;
  // An existing group of any kind is found, not created: a native one
  // answers the Kafka members' joins INCONSISTENT_GROUP_PROTOCOL.
  createGroup(group, s, nullptr, [done = std::move(done)](protocol::Response r) {
    const auto* c = std::get_if<protocol::CreateGroupResponse>(&r);
    if (c != nullptr && c->error == ErrorCode::NONE && !c->controller.isNone()) return done(c->controller.brokerId, "");
    const ErrorCode e = c != nullptr ? c->error : ErrorCode::UNKNOWN_SERVER_ERROR;
    done(-1, fmt::format("the group has no controller yet ({}); ask again", protocol::errorName(e)));
  });
}

// ---------------------------------------------------------------------------
// Introspection

std::vector<std::string> Coordinator::controlledGroups() const {
  std::vector<std::string> names;
  groups_.forEach([&](GroupController& g) { names.push_back(g.name()); });
  std::sort(names.begin(), names.end());
  return names;
}

size_t Coordinator::memberCount() const {
  size_t n = 0;
  groups_.forEach([&](GroupController& g) { n += g.memberCount(); });
  return n;
}

int64_t Coordinator::generationOf(const std::string& group) const {
  auto g = groups_.find(group);
  return g ? g->generation() : -1;
}

std::optional<protocol::DescribeGroupResponse> Coordinator::describeLocal(const std::string& group) const {
  auto g = groups_.find(group);
  if (!g) return std::nullopt;
  auto d = g->describe(self());
  kafka_->describeInto(d);
  return d;
}

std::vector<Coordinator::ServerView> Coordinator::fleetServers() const {
  std::vector<ServerView> out;
  for (int32_t id : servers_.liveServers()) {
    ServerView v{servers_.brokerOf(id), servers_.draining(id)};
    if (v.broker.isNone()) v.broker.brokerId = id;  // live, its address not read yet
    out.push_back(std::move(v));
  }
  return out;
}

protocol::Broker Coordinator::self() const {
  const ServerIdentity& s = servers_.self();
  return protocol::Broker{s.id, s.host, s.port};
}

std::vector<std::string> Coordinator::membersOf(const std::string& group) const {
  auto g = groups_.find(group);
  return g ? g->memberIds() : std::vector<std::string>{};
}

}  // namespace groupcoord::adapter
