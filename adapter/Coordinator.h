#pragma once

// The coordinator: groupcoord's translation from the wire protocol's group
// calls to state in ZooKeeper, with liveness kept in memory. One per server
// process; the composition root of the parts below (docs/design.md,
// "The parts of the coordinator"):
//
//   ServerRegistry    this server's registration, the live servers, the
//                     candidates groups may be placed on
//   ControllerClaims  known groups and their controllers, claims, the
//                     fallback claim, CreateGroup waiting for a controller
//   GroupTable        the groups controlled here, by name
//   GroupController   one controlled group: members, generation,
//                     ownership, batched writes, commits
//   OffsetStore       committed offsets in ZooKeeper
//   TopicWatcher      partition counts and replicas of subscribed topics
//   BrokerRacks       brokers' racks (rack-aware assignment)
//   GroupDirectory    ListGroups and FetchOffsets, read from ZooKeeper
//   StallGuard        the stall rule
//   SessionLease      the session lease: answers from memory only while
//                     the ZooKeeper session is certainly alive
//   LoadBoard         every group's weight, as its controller published it
//   FleetPlacement    where each group should be controlled: bounded
//                     loads over the candidate servers, cached
//   Handovers         groups handed over to the server that should
//                     control them, a few at a time
//   KafkaGroups       the Kafka port's requests: Kafka groups' state on
//                     their controller, their offsets, Metadata
//
// The coordinator itself routes requests (one overload per request type),
// follows the ZooKeeper session, runs the ticker and creates groups.
//
// Threads: handle() runs on server I/O threads; ZooKeeper completions and
// watches on the zk::Client's completion thread; tick() on the ticker
// thread (or a test's thread). None of them blocks on ZooKeeper. Each part
// has its own lock (or none); no part calls another while holding its own
// lock, except a group's lock held while asking TopicWatcher (which asks
// BrokerRacks with its own lock released), and answers
// run after every lock is released.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/Options.h"
#include "adapter/BrokerRacks.h"
#include "adapter/Clock.h"
#include "adapter/ControllerClaims.h"
#include "adapter/GroupController.h"
#include "adapter/GroupDirectory.h"
#include "adapter/GroupTable.h"
#include "adapter/FleetPlacement.h"
#include "adapter/Handovers.h"
#include "adapter/KafkaGroups.h"
#include "adapter/LoadBoard.h"
#include "adapter/MemberIds.h"
#include "adapter/OffsetStore.h"
#include "adapter/ServerRegistry.h"
#include "adapter/SessionEpoch.h"
#include "adapter/SessionLease.h"
#include "adapter/StallGuard.h"
#include "adapter/TopicWatcher.h"
#include "common/Layout.h"
#include "common/Sync.h"
#include "protocol/Handler.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

using layout::GroupSettings;

struct CoordinatorConfig {
  int32_t serverId = 1;
  std::string advertisedHost = "127.0.0.1";
  uint16_t advertisedPort = options::defaultInt("listen.port");
  // The internal listener's address (docs/design.md, "Two addresses");
  // empty / 0 without one.
  std::string internalHost;
  uint16_t internalPort = 0;
  // The Kafka port's advertised port (at advertisedHost); 0 without one.
  uint16_t kafkaPort = 0;
  std::string root{options::defaultText("zk.root")};
  std::string topicsPath{options::defaultText("zk.topics.path")};
  // Kafka's broker registrations, whose "rack" fields rack-aware assignment
  // reads.
  std::string brokersPath{options::defaultText("zk.brokers.path")};
  int64_t minSessionTimeoutMs = options::defaultInt("group.min.session.timeout.ms");
  int64_t maxSessionTimeoutMs = options::defaultInt("group.max.session.timeout.ms");
  // How often liveness, claims and deadlines are checked: bounds how late an
  // eviction can be.
  Millis tickInterval{10};
  // Membership changes of one group go to ZooKeeper at most once per
  // interval; what arrives meanwhile joins the next transaction.
  Millis batchInterval{10};
  // CreateGroup waits this long for the new group's controller to appear.
  Millis createWaitForController{5000};
  // A group without a controller whose preferred server has not claimed it
  // within this time is claimed by any server.
  Millis claimFallback{3000};
  // Upper bound of membership changes in one ZooKeeper transaction.
  size_t maxChangesPerTransaction = 1000;
  // Joins coalesce (GroupConfig, docs/design.md "Coalesced joins"); 0:
  // no wait.
  Millis joinWindow{0};
  Millis joinWindowMax{0};
  // The newest RegisterConsumer version answered; a newer one gets the
  // error-only UNSUPPORTED_VERSION a server of an older release gives.
  int16_t registerMaxVersion = protocol::maxVersion(protocol::ApiKey::RegisterConsumer);
  // Longest a heartbeat with a wait is held (docs/design.md, "Held
  // heartbeats"); 0: none is.
  Millis heartbeatMaxWait{options::defaultInt("heartbeat.max.wait.ms")};
  // A server is preferred for groups (and receives them by handover) only
  // once it has been live this long.
  Millis handoverSettleDelay{options::defaultInt("handover.settle.ms")};
  // Groups this server hands over at once.
  size_t handoverMaxInFlight = options::defaultInt("handover.max.in.flight");
  // The fleet's placement by load (docs/design.md, "Placement"): the bound,
  // the margin, the weights, and how often a server over its bound hands
  // groups over.
  FleetPlacementConfig placement;
  Millis placementInterval{options::defaultInt("placement.interval.ms")};
  // Largest member metadata a registration may carry (RegisterConsumer v1).
  size_t maxMetadataBytes = options::defaultInt("group.max.metadata.bytes");
  // The session lease ends this long before ZooKeeper could expire the
  // session (docs/design.md, "The session lease"); 0: a fifth of the
  // session timeout, at least 200 ms.
  Millis leaseMargin{0};
  // Kafka groups (docs/kafka.md): their rules, under the classic protocol
  // and under the consumer protocol.
  kafka::GroupRules kafkaRules;
  kafka::ConsumerRules kafkaConsumerRules;
};

class Coordinator final : public protocol::Handler, private zk::SessionListener {
 public:
  Coordinator(zk::Client& zk, CoordinatorConfig config, const TimeSource& time);
  ~Coordinator() override;

  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Creates the root paths if missing and starts registration and the
  // watches. Call once, with the session connected (or connecting). Returns
  // the error of creating the root paths; registration itself completes
  // asynchronously (see registered()).
  zk::Error start(Millis wait = Millis(10000));

  // Where clients reach this server (and, with an internal listener, where
  // peers and clients inside its network do), when known only after the
  // ports are bound. Before start() only.
  void setAdvertised(std::string host, uint16_t port, std::string internalHost = "", uint16_t internalPort = 0,
                     uint16_t kafkaPort = 0);

  // Runs tick() every config.tickInterval on a thread of its own, until stop().
  void startTicker();

  // Stops the ticker and answers every waiting request with
  // CONTROLLER_NOT_AVAILABLE. The owner then closes the ZooKeeper session,
  // which removes this server's ephemeral znodes at once.
  void stop();

  // Stops being the session's listener. The owner calls it before it
  // destroys the session; the session's last callbacks (delivered by its
  // destructor) may still reach this object, so it must outlive them.
  void detach();

  // Evicts silent members, claims groups, enforces deadlines, renews an
  // expired session. Called by the ticker, or directly by tests.
  void tick();

  void handle(const protocol::RequestHeader& header, protocol::Request request,
              protocol::ResponseCallback done) override;
  void handleFrom(const protocol::Caller& caller, const protocol::RequestHeader& header, protocol::Request request,
                  protocol::ResponseCallback done) override;
  bool heartbeatNow(const protocol::Caller& caller, protocol::ConnectionSlot& slot,
                    const protocol::HeartbeatView& request, protocol::HeartbeatResponse& out,
                    std::chrono::steady_clock::time_point readAt, std::optional<GroupMotion>* motion) override;

  // What answers the Kafka port (docs/kafka.md).
  KafkaGroups& kafka() { return *kafka_; }

  // ---- Introspection (tests, health, metrics) ----
  bool registered() const { return servers_.registered(); }
  bool zkConnected() const { return connected_.load(); }
  // The groups have been listed once: from now on a group this server has
  // not seen is unknown, not unavailable (docs/protocol.md §13).
  bool groupsListed() const { return claims_.listedOnce(); }
  // Heartbeats and registrations are answered from memory now: the session
  // lease holds and no stall is suspected.
  bool answersFromMemory(TimePoint now) const { return lease_.valid(now) && !stall_.stalled(now); }
  std::vector<std::string> controlledGroups() const;
  size_t memberCount() const;
  // Generation of a controlled group, -1 if not controlled here.
  int64_t generationOf(const std::string& group) const;
  std::vector<std::string> membersOf(const std::string& group) const;
  std::vector<int32_t> liveServers() const { return servers_.liveServers(); }

  // ---- For the status page (server/StatusPage.h); any thread ----
  // The DescribeGroup answer of a group controlled here; nullopt when it is
  // not (then its controller answers).
  std::optional<protocol::DescribeGroupResponse> describeLocal(const std::string& group) const;
  struct ServerView {
    protocol::Broker broker;  // where clients reach it
    bool drained = false;
  };
  // The live servers as this server sees them, by id; this one included
  // once registered.
  std::vector<ServerView> fleetServers() const;
  // This server's id and where clients reach it.
  protocol::Broker self() const;
  // The fleet's placement as this server computes it: each live server's
  // load and bound, and the groups that should move (docs/design.md,
  // "Placement").
  PlacementView placementView();
  // Where this server dials another one (the status page asking a group's
  // controller): its internal address when it has one, else the advertised
  // one; an empty Broker when not known.
  protocol::Broker peerAddressOf(int32_t serverId) const { return servers_.brokerOf(serverId, Reach::Internal); }

 private:
  // zk::SessionListener
  void onSessionState(zk::SessionState state) override;
  void onNewSession(int64_t id);
  void onSessionLost(zk::SessionState state);

  // From the parts.
  void onClaimed(const std::string& group);
  // Publishes the weights of the groups controlled here (at most once a
  // second; LoadBoard paces the writes).
  void publishWeights(TimePoint now);
  TimePoint nextWeightsCheck_;
  void dropGroup(const std::string& group, protocol::ErrorCode answer, const char* why);
  bool mayClaim() const;
  // A Kafka group's first JoinGroup or OffsetCommit, and FindCoordinator
  // for a group with no controller yet: creates it as a Kafka group (or
  // finds it) and waits for its controller.
  void ensureKafkaGroup(const std::string& group, std::function<void(int32_t controller, std::string why)> done);
  // Creates the group's znodes with settings `s`, then waits for its
  // controller. A group that exists already is accepted when
  // `acceptExisting` (null: always) says so of its settings, and answered
  // GROUP_ALREADY_EXISTS otherwise.
  void createGroup(const std::string& group, const GroupSettings& s,
                   std::function<bool(const GroupSettings& existing)> acceptExisting,
                   protocol::ResponseCallback done);
  void serversChanged();

  // Every controller address in an answer, as reached inside the servers'
  // network (for a caller that came through the internal listener).
  void toInternalAddresses(protocol::Response& response) const;
  // One route per request type: a new request type that has none does not
  // compile.
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::HeartbeatRequest r, protocol::ResponseCallback& done);
  // Another request came on `connection`: a heartbeat held from it is
  // answered first (GroupController::releaseHeld).
  void releaseHeldOn(uint64_t connection) EXCLUDES(heldMu_);

 public:
  // Shutting down: every held heartbeat answered now, and none held from
  // now on (the server's drain does not wait out their holds).
  void releaseAllHeld();

 private:
  // A heartbeat's answer, whichever way it came (route, heartbeatNow); the
  // lease rule is here and nowhere else.
  protocol::HeartbeatResponse answerHeartbeat(const protocol::Caller& caller, const protocol::HeartbeatView& r,
                                              TimePoint now, GroupTable::Cached& kept);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::CreateGroupRequest r, protocol::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::DeleteGroupRequest r, protocol::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::RegisterConsumerRequest r,
             protocol::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::ListGroupsRequest r, protocol::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::LeaveGroupRequest r, protocol::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::CommitOffsetsRequest r, protocol::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::FetchOffsetsRequest r, protocol::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::RewindConsumerRequest r, protocol::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::AuthenticateRequest r, protocol::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::DrainServerRequest r, protocol::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::RequestHeader& h, protocol::DescribeGroupRequest r,
             protocol::ResponseCallback& done);
  // adapter/CoordinatorServers.cpp
  void route(const protocol::Caller&, const protocol::RequestHeader&, protocol::DescribeServersRequest r,
             protocol::ResponseCallback& done);
  // A controller-only request: f(GroupController&) when the group is
  // controlled here, else the error saying where to go.
  template <class Request, class F>
  void toController(const Request& r, protocol::ResponseCallback& done, F&& f);

  zk::Client& zk_;
  CoordinatorConfig config_;  // fixed once start() ran
  const layout::Layout layout_;
  const TimeSource& time_;
  // time_ is the steady clock itself: the server's reading before a
  // heartbeat (heartbeatNow's readAt) is this clock's too.
  const bool systemTime_;
  SessionEpoch epoch_;
  // The group of each connection's held heartbeat, with a ticket so that a
  // later one on the same connection is not forgotten by an earlier one's
  // answer (docs/design.md, "Held heartbeats").
  mutable Mutex heldMu_;
  std::atomic<bool> holdNothing_{false};
  std::map<uint64_t, std::pair<std::string, uint64_t>> heldOn_ GUARDED_BY(heldMu_);
  uint64_t nextHeldTicket_ GUARDED_BY(heldMu_) = 1;

  std::atomic<bool> connected_{false};
  std::atomic<bool> renewNeeded_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> started_{false};
  std::atomic<bool> detached_{false};
  std::atomic<int64_t> sessionId_{0};

  ServerRegistry servers_;
  BrokerRacks brokers_;
  TopicWatcher topics_;
  OffsetStore offsets_;
  ControllerClaims claims_;
  LoadBoard board_;
  FleetPlacement placement_;
  GroupDirectory directory_;
  StallGuard stall_;
  SessionLease lease_;
  MemberIds memberIds_;
  GroupContext groupContext_;
  GroupTable groups_;
  Handovers handovers_;

  // Built last: its hooks reach the parts above.
  std::unique_ptr<KafkaGroups> kafka_;

  Mutex tickerMu_;
  std::condition_variable_any tickerCv_;
  std::thread ticker_;
};

}  // namespace groupcoord::adapter
