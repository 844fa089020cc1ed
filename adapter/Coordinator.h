#pragma once

// The coordinator: groupcoord's translation from the wire protocol's group
// calls to state in ZooKeeper (Layout.h), with liveness kept in memory.
//
// One Coordinator per server process. It registers the server, watches the
// groups, claims the groups it should control (rendezvous hashing over the
// live servers, with a fallback so that an unclaimed group never stays
// unclaimed), and serves the controller-only calls for the groups it holds.
//
// Threads: handle() runs on server I/O threads; ZooKeeper completions and
// watches run on the zk::Client's completion thread; tick() runs on the
// ticker thread (or a test's thread). None of them blocks on ZooKeeper.
// Locks: registryMu_ and groupsMu_ are never held while a Group's mutex is
// taken, and responses are sent after every lock is released.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "adapter/Clock.h"
#include "adapter/Layout.h"
#include "adapter/Ownership.h"
#include "protocol/Handler.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

struct CoordinatorConfig {
  int32_t serverId = 1;
  std::string advertisedHost = "127.0.0.1";
  uint16_t advertisedPort = 7400;
  std::string root = "/groupcoord";
  std::string topicsPath = "/brokers/topics";
  int64_t minSessionTimeoutMs = 1000;
  int64_t maxSessionTimeoutMs = 300000;
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
};

enum class GroupState {
  Loading,    // just claimed, or needs to re-read ZooKeeper: writes wait
  Active,
  Deleting,   // its subtree is being removed
};
std::string_view toString(GroupState s);

class Coordinator final : public protocol::Handler, private zk::SessionListener {
 public:
  // A ListGroups naming more groups than this answers INVALID_REQUEST.
  static constexpr size_t kMaxListedGroups = 10000;

  Coordinator(zk::Client& zk, CoordinatorConfig config, const TimeSource& time);
  ~Coordinator() override;

  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Creates the root paths if missing and starts registration and the
  // watches. Call once, with the session connected (or connecting). Returns
  // the error of creating the root paths; registration itself completes
  // asynchronously (see registered()).
  zk::Error start(Millis wait = Millis(10000));

  // Where clients reach this server, when known only after the port is
  // bound. Before start() only.
  void setAdvertised(std::string host, uint16_t port);

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

  // ---- Introspection (tests, health, metrics) ----
  bool registered() const { return registered_.load(); }
  bool zkConnected() const { return connected_.load(); }
  std::vector<std::string> controlledGroups() const;
  size_t memberCount() const;
  // Generation of a controlled group, -1 if not controlled here.
  int64_t generationOf(const std::string& group) const;
  std::vector<std::string> membersOf(const std::string& group) const;
  std::vector<int32_t> liveServers() const;

 private:
  struct Member {
    std::string clientId;
    TimePoint lastSeen;
  };
  struct Join {
    std::string clientId;
    std::vector<protocol::ResponseCallback> waiters;
  };
  struct Removal {
    bool evicted = false;
    int64_t silentMs = 0;
    std::vector<protocol::ResponseCallback> waiters;
  };
  struct Rejoin {
    std::string memberId;
    protocol::ResponseCallback done;
  };
  // A CommitOffsets or RewindConsumer waiting for its offsets to be durable.
  struct OffsetWrite {
    std::vector<protocol::PartitionOffset> accepted;  // to write
    std::vector<protocol::PartitionError> results;    // one per offset asked for
    protocol::ResponseCallback done;
  };
  // Work to do once every lock is released: responses, mostly.
  using Outbox = std::vector<std::function<void()>>;

  struct Group {
    std::mutex mu;
    const std::string name;
    GroupState state = GroupState::Loading;
    GroupSettings settings;
    std::string settingsData;  // the group znode's data, rewritten as is to move the version
    int32_t version = -1;      // the generation
    std::map<std::string, Member> members;  // sorted: GroupMembers comes straight from it
    // No member can time out before this: the liveness scan skips the
    // group until then (heartbeats only move lastSeen later; members join
    // with lastSeen = now), or until the member count changes.
    TimePoint nextLivenessScan;
    size_t membersAtScan = 0;
    TimePoint claimedAt;
    TimePoint emptySince;
    bool busy = false;         // a transaction or a re-read is in flight
    bool needsReload = true;   // memory must be re-read from ZooKeeper before the next write
    int failedBatches = 0;
    // Changes waiting for the next transaction, and the ones in flight.
    std::map<std::string, Join> joins, flightJoins;
    std::map<std::string, Removal> removals, flightRemovals;
    std::vector<Rejoin> rejoins, flightRejoins;
    std::vector<protocol::ResponseCallback> deleteWaiters;
    bool deleteRequested = false;
    bool hadMembers = false;  // a member joined since this server took the group
    TimePoint lastBatchAt;
    // Partitions.
    Ownership ownership;
    std::map<protocol::TopicPartition, int64_t> committed;  // as durable in ZooKeeper
    std::set<std::string> offsetTopics;                     // offsets/<topic> znodes that exist
    bool offsetsLoaded = false;
    bool bumpRequested = false;    // move the generation (a subscribed topic changed)
    bool flightBump = false;
    int32_t rewoundAt = -1;        // generation of the last rewind: older commits are fenced
    std::vector<OffsetWrite> rewinds, flightRewinds;
    std::vector<OffsetWrite> commits, flightCommits;
    bool committing = false;
    explicit Group(std::string n) : name(std::move(n)) {}
  };
  using GroupPtr = std::shared_ptr<Group>;

  // What this server knows of every group, controlled here or not.
  struct KnownGroup {
    bool hasController = false;
    bool claiming = false;
    bool watching = false;
    TimePoint noControllerSince;
  };

  struct ControllerWaiter;

  struct TopicInfo {
    int32_t partitions = 0;  // 0 while the topic does not exist
    bool watching = false;
  };
  // Committed offsets read from ZooKeeper, and the offsets/<topic> znodes seen.
  struct OffsetsRead {
    zk::Error error = zk::Error::Ok;
    std::map<protocol::TopicPartition, int64_t> offsets;
    std::set<std::string> topics;
  };

  // zk::SessionListener
  void onSessionState(zk::SessionState state) override;

  // Registration and watches.
  void registerServer();
  void watchServers();
  void watchGroups();
  void watchController(const std::string& group);
  void onGroupsListed(std::vector<std::string> names);
  void maybeClaim(const std::string& group, TimePoint now);
  void claim(const std::string& group);
  void onClaimed(const std::string& group);
  int32_t preferredServer(const std::string& group) const;  // registryMu_ held

  // Groups controlled here.
  GroupPtr findGroup(const std::string& name) const;
  // The group when controlled here; else the error for the caller.
  GroupPtr controlledGroup(const std::string& name, protocol::ErrorCode* error) const;
  void dropGroup(const std::string& name, protocol::ErrorCode answer, const char* why);
  void setState(Group& g, GroupState s);
  void reload(const GroupPtr& g);
  void flush(const GroupPtr& g, Outbox& out);  // g->mu held
  void onBatchDone(const GroupPtr& g, uint64_t epoch, size_t opCount, zk::MultiResult r);
  void deleteGroup(const GroupPtr& g);  // g->mu held
  void answerAllWaiting(Group& g, protocol::ErrorCode error, Outbox& out);  // g->mu held
  void checkGroup(const GroupPtr& g, TimePoint now);
  protocol::RegisterConsumerResponse registration(Group& g, const std::string& member);

  // Partitions (Partitions.cpp).
  void watchTopic(const std::string& topic);
  void onTopicCount(const std::string& topic, int32_t partitions);
  std::map<std::string, int32_t> partitionCounts(const GroupSettings& s) const;
  bool partitionExists(const GroupSettings& s, const protocol::TopicPartition& p) const;
  void retarget(Group& g);  // g.mu held: the assignment of the generation just reached
  void readOffsets(const std::string& group, const std::vector<std::string>& topics,
                   std::function<void(OffsetsRead)> done);
  void loadOffsets(const GroupPtr& g);  // g->mu held
  // Adds the writes of `offsets` to ops, creating offsets/<topic> znodes the
  // group lacks (and noting them in *newTopics).
  void offsetOps(const Group& g, const std::vector<protocol::PartitionOffset>& offsets, std::vector<zk::Op>& ops,
                 std::set<std::string>* newTopics) const;
  // Why a write to the group cannot proceed now (NONE when it can):
  // UNKNOWN_GROUP while it is being deleted, CONTROLLER_NOT_AVAILABLE while
  // it loads or ZooKeeper is away.
  protocol::ErrorCode writeRefusal(const Group& g) const;
  // Checks each offset (partition exists, offset >= 0, and, when owner is
  // given, held by that member) into accepted and results.
  OffsetWrite checkOffsets(const Group& g, const std::vector<protocol::PartitionOffset>& offsets,
                           const std::string* owner) const;
  void flushCommits(const GroupPtr& g, Outbox& out);  // g->mu held
  void onCommitsDone(const GroupPtr& g, uint64_t epoch, zk::MultiResult r);
  void onCommit(const protocol::CommitOffsetsRequest& r, protocol::ResponseCallback done);
  void onFetch(const protocol::FetchOffsetsRequest& r, protocol::ResponseCallback done);
  void onRewind(const protocol::RewindConsumerRequest& r, protocol::ResponseCallback done);

  // Requests.
  void onHeartbeat(const protocol::HeartbeatRequest& r, protocol::ResponseCallback& done);
  void onRegister(const protocol::RequestHeader& h, protocol::RegisterConsumerRequest r,
                  protocol::ResponseCallback done);
  // The group znode write that moves the generation, plus what rides along.
  bool hasPendingWrites(const Group& g) const;
  void onLeave(const protocol::LeaveGroupRequest& r, protocol::ResponseCallback done);
  void onCreateGroup(protocol::CreateGroupRequest r, protocol::ResponseCallback done);
  void onDeleteGroup(const protocol::DeleteGroupRequest& r, protocol::ResponseCallback done);
  void onListGroups(const protocol::ListGroupsRequest& r, protocol::ResponseCallback done);
  void awaitController(const std::shared_ptr<ControllerWaiter>& w);
  void answerController(const std::shared_ptr<ControllerWaiter>& w, int32_t controllerId);
  protocol::Broker brokerOf(int32_t serverId) const;
  std::string newMemberId(const std::optional<std::string>& clientId);

  static void run(Outbox& out);
  // The one mapping of a ZooKeeper error to the wire: a connection problem
  // is CONTROLLER_NOT_AVAILABLE (retry), anything else unexpected
  // UNKNOWN_SERVER_ERROR. A ZooKeeper code never goes on the wire.
  static protocol::ErrorCode fromZk(zk::Error e);

  zk::Client& zk_;
  CoordinatorConfig config_;  // fixed once start() ran
  const Layout layout_;
  const TimeSource& time_;

  std::atomic<bool> connected_{false};
  std::atomic<bool> registered_{false};
  std::atomic<bool> registering_{false};
  std::atomic<bool> renewNeeded_{false};
  // Stall guard. A process frozen or starved past a third of its ZooKeeper
  // session timeout cannot know whether its session (and with it control of
  // its groups) survived: another server may already have taken over. Until
  // a ZooKeeper round trip succeeds again, heartbeats and registrations
  // answer CONTROLLER_NOT_AVAILABLE rather than from memory, which would
  // extend a member's lease on partitions someone else may be granted.
  std::atomic<int64_t> lastTickNs_{0};  // time_.now() of the last tick, since its epoch
  // The last tick's time plus a third of the ZooKeeper session timeout:
  // past it, this server has stalled. Kept by the tick so that the request
  // path reads one atomic (the session timeout is behind the session's lock).
  std::atomic<int64_t> stallDeadlineNs_{std::numeric_limits<int64_t>::max()};
  std::atomic<bool> stallSuspect_{false};
  std::atomic<bool> stallProbeInFlight_{false};
  bool stalledNow(TimePoint now) const;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> started_{false};
  std::atomic<bool> detached_{false};
  // Moves when the ZooKeeper session is lost: callbacks of an older epoch
  // are ignored, since what they refer to is gone.
  std::atomic<uint64_t> epoch_{1};
  std::atomic<int64_t> sessionId_{0};

  mutable std::mutex registryMu_;
  std::map<int32_t, protocol::Broker> servers_;
  std::map<std::string, KnownGroup> known_;
  std::vector<std::shared_ptr<ControllerWaiter>> controllerWaiters_;
  std::map<std::string, TopicInfo> topics_;
  TimePoint nextRegisterAttempt_;
  bool rewatchNeeded_ = false;

  mutable std::shared_mutex groupsMu_;
  std::unordered_map<std::string, GroupPtr> groups_;

  std::mutex tickerMu_;
  std::condition_variable tickerCv_;
  std::thread ticker_;

  std::mutex idMu_;
  uint64_t idState_;
  std::atomic<uint32_t> unservedLogged_{0};
};

}  // namespace groupcoord::adapter
