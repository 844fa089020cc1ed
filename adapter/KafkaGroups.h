#pragma once

// Kafka groups as groupcoord groups (docs/kafka.md): what answers the Kafka
// port's requests (protocol/kafka/Handler.h). One per server, owned by the
// Coordinator, which gives it the parts it asks (the hooks below).
//
// A Kafka group is a groupcoord group in ZooKeeper, created by the first
// FindCoordinator that names it, with one controller chosen by the claims
// and placement like every group. Its controller keeps the group's Kafka
// state (adapter/kafka/ClassicGroup.h: members, join barrier, leader,
// generation, assignments) in memory; every other server answers
// NOT_COORDINATOR. Its members are ephemeral znodes under the group's
// members znode and its generation is the group znode's version, as a
// native group's: a rebalance's JoinGroup answers go out once the
// transaction that writes the member znodes and moves the version is
// applied (the group's controller writes it: GroupController::writeKafka).
// A generation that becomes stable is written to <root>/kafka/<group>
// before the SyncGroup answers go out, so that a new controller resumes it
// without a rebalance when the group znode's version is still that
// generation. Committed offsets live in the group's offsets znodes, where
// `groupctl offsets` and native clients see them.
//
// Threads: handle() on server I/O threads, ZooKeeper completions on the
// completion thread, tick() on the coordinator's ticker. mu_ guards the
// table and every group's state; answers run after it is released.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adapter/Clock.h"
#include "adapter/OffsetStore.h"
#include "adapter/kafka/ClassicGroup.h"
#include "adapter/kafka/ConsumerGroup.h"
#include "common/Layout.h"
#include "common/Sync.h"
#include "protocol/kafka/Handler.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

// What KafkaGroups asks of the coordinator.
struct KafkaHooks {
  int32_t selfId = 0;
  // Whether this server controls the group now (it is loaded and served).
  std::function<bool(const std::string& group)> controlsHere;
  // Whether a group controlled here is a Kafka group; nullopt while its
  // settings are read.
  std::function<std::optional<bool>(const std::string& group)> isKafkaGroup;
  // The group's controller as the claims know it; -1 when none is known.
  std::function<int32_t(const std::string& group)> controllerOf;
  // Creates the group as a Kafka group when it does not exist, and waits
  // (bounded) for its controller: the controller's id, or -1 with `error`
  // saying why not.
  std::function<void(const std::string& group, std::function<void(int32_t controller, std::string error)>)> ensure;
  // The server that would control the group (-1: none known): the
  // placement's target, or for a group it does not know yet the
  // rendezvous choice among the live servers. Where FindCoordinator sends
  // a group that does not exist yet.
  std::function<int32_t(const std::string& group)> placementOf;
  // The groups controlled here.
  std::function<std::vector<std::string>()> controlled;
  // Deletes a group controlled here (its members must have left): "" or
  // why not; `notEmpty` when native members remain.
  std::function<void(const std::string& group, std::function<void(bool ok, bool notEmpty, std::string why)>)>
      deleteGroup;
  // The session lease holds: heartbeats may be answered from memory.
  std::function<bool(TimePoint now)> answersFromMemory;
  // Every live server with a Kafka port, and one server's Kafka address.
  std::function<std::vector<protocol::Broker>()> brokers;
  std::function<protocol::Broker(int32_t id)> brokerOf;
  // A group's generation: the group znode's version as its controller
  // knows it; nullopt while it is not known to match ZooKeeper.
  std::function<std::optional<int32_t>(const std::string& group)> generationOf;
  // Writes member znode ops with `moves` generation moves from `version`
  // (0: a check of `version`) in one transaction
  // (GroupController::writeKafka); `done` gets the version after it, or
  // nullopt with `busy` (try again) or why it failed.
  using Written = std::function<void(std::optional<int32_t> version, bool busy, std::string why)>;
  std::function<void(const std::string& group, std::vector<zk::Op> ops, int32_t version, int moves, Written done)>
      writeMembers;
  // A fresh member id (adapter/MemberIds.h): a znode name.
  std::function<std::string(const std::string& clientId)> newMemberId;
  // Brokers' racks (adapter/BrokerRacks.h), for rack-aware assignment of
  // consumer-protocol groups; unset: no racks.
  std::function<std::map<int32_t, std::string>(const std::set<int32_t>& brokers)> brokerRacks;
};

struct KafkaGroupsConfig {
  kafka::GroupRules rules;
  std::string topicsPath{"/brokers/topics"};
  // Groups under the consumer protocol (KIP-848): the session timeout and
  // heartbeat interval the group sets for its members.
  kafka::ConsumerRules consumer;
};

class KafkaGroups final : public protocol::kafka::Handler {
 public:
  KafkaGroups(zk::Client& zk, const layout::Layout& layout, OffsetStore& offsets, const TimeSource& time,
              KafkaGroupsConfig config, KafkaHooks hooks);
  ~KafkaGroups() override;

  void handle(const protocol::Caller& caller, const protocol::kafka::RequestHeader& header,
              protocol::kafka::Request request, protocol::kafka::ResponseCallback done) override;
  // A heartbeat of a group loaded here, while this server controls it and
  // its session lease holds: answered from memory as route() would.
  // Anything else is left to handle().
  bool heartbeatNow(const protocol::Caller& caller, const protocol::kafka::HeartbeatView& request,
                    protocol::kafka::ErrorCode* error) override EXCLUDES(mu_);

  // Deadlines of every group (sessions, barriers), and the groups no
  // longer controlled here forgotten (their waiting requests answered
  // NOT_COORDINATOR). The coordinator's ticker.
  void tick(TimePoint now) EXCLUDES(mu_);
  // RewindConsumer (groupctl rewind) of a Kafka group controlled here: the
  // offsets written and the generation moved in one transaction; then the
  // group's Kafka state is forgotten, so its members join again and fetch
  // the rewound offsets.
  void rewind(const protocol::RewindConsumerRequest& r, protocol::ResponseCallback done) EXCLUDES(mu_);
  // Every waiting request answered NOT_COORDINATOR; the table emptied.
  void stop() EXCLUDES(mu_);

  // For describe, the status page and tests: the group's Kafka state when
  // it is controlled here.
  std::optional<kafka::Snapshot> snapshotOf(const std::string& group) const EXCLUDES(mu_);
  // Consumer-protocol groups loaded here with members, and their members
  // (the metrics).
  std::pair<size_t, size_t> consumerProtocolCounts() const EXCLUDES(mu_);
  // A consumer-protocol group's state when it is controlled here.
  std::optional<kafka::ConsumerSnapshot> consumerSnapshotOf(const std::string& group) const EXCLUDES(mu_);
  std::optional<protocol::kafka::DescribeGroupsResponse::Group> describeLocal(const std::string& group) const
      EXCLUDES(mu_);
  // A Kafka group's members, generation, assignments and protocol (type
  // and chosen protocol), in groupcoord's
  // DescribeGroup answer of the group (groupctl describe, the status page);
  // left as it is for any other group.
  void describeInto(protocol::DescribeGroupResponse& d) const EXCLUDES(mu_);
  void describeClassicInto(const kafka::ClassicGroup& g, protocol::DescribeGroupResponse& d) const REQUIRES(mu_);
  void describeConsumerInto(const kafka::ConsumerGroup& g, protocol::DescribeGroupResponse& d) const REQUIRES(mu_);

 private:
  struct Entry;
  using Answers = std::vector<std::function<void()>>;

  // The entry of a group controlled here, made (and its saved generation
  // read) on first use; null with `*error` set when it cannot serve yet.
  Entry* entryFor(const std::string& group, protocol::kafka::ErrorCode* error) REQUIRES(mu_);
  struct Loaded;
  void loaded(const std::string& group, uint64_t serial, int32_t version, Loaded read) EXCLUDES(mu_);
  // Makes ZooKeeper match the group's state: member znodes created and
  // removed, and the generation moved to the model's, in transactions of
  // at most kMaxOpsPerWrite member ops; one at a time per group.
  void reconcile(const std::string& group, Entry& e, Answers& out) REQUIRES(mu_);
  void written(const std::string& group, uint64_t serial, std::vector<std::string> removed,
               std::vector<std::string> created, std::optional<int32_t> version, bool busy, std::string why)
      EXCLUDES(mu_);
  // The group no longer served here: everything waiting answered
  // NOT_COORDINATOR. The caller erases the entry.
  void forget(const std::string& group, Entry& e, Answers& out) REQUIRES(mu_);
  // Turns a model call's effects into answers (run after mu_ is released);
  // a generation that became stable is written first.
  void deliver(const std::string& group, Entry& e, kafka::Effects& fx, Answers& out) REQUIRES(mu_);
  static void run(Answers& out);
  // Whether no server controls the group (and this one is not stopping).
  // A call that makes its group (JoinGroup, OffsetCommit, as Kafka makes a
  // group on either) then creates it as a Kafka group (made()), waiting for
  // its controller; FindCoordinator only names where a new group would be,
  // so that looking a group up (an admin client's describe or delete, a
  // typo) leaves nothing behind. Any other call asks absent(): whether
  // ZooKeeper has no such group.
  bool unclaimed(const std::string& group) EXCLUDES(mu_);
  void made(const std::string& group, std::function<void(bool ok)> then);
  void absent(const std::string& group, std::function<void(bool absent)> then);
  // A JoinGroup's or OffsetCommit's refusal `error` from entryFor(), but
  // COORDINATOR_LOAD_IN_PROGRESS for NOT_COORDINATOR when the group is
  // claimed here and not served yet (a group its first join just made):
  // the client asks here again rather than looking for another coordinator.
  protocol::kafka::ErrorCode notServedYet(const std::string& group, protocol::kafka::ErrorCode error) const;
  // JoinGroup and OffsetCommit once their group exists.
  void join(const protocol::Caller& c, const protocol::kafka::RequestHeader& h, protocol::kafka::JoinGroupRequest r,
            protocol::kafka::ResponseCallback& done) EXCLUDES(mu_);
  void commit(protocol::kafka::OffsetCommitRequest r, protocol::kafka::ResponseCallback& done) EXCLUDES(mu_);

  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::ApiVersionsRequest r, protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h, protocol::kafka::MetadataRequest r,
             protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::FindCoordinatorRequest r, protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h, protocol::kafka::JoinGroupRequest r,
             protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h, protocol::kafka::SyncGroupRequest r,
             protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h, protocol::kafka::HeartbeatRequest r,
             protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::LeaveGroupRequest r, protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::OffsetCommitRequest r, protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::OffsetFetchRequest r, protocol::kafka::ResponseCallback& done);
  // One group's committed offsets, `topics` null for every topic: the
  // answer of OffsetFetch versions 0 to 7, and of each group of version 8
  // on. `done` once, from any thread.
  void fetchGroupOffsets(std::string group,
                         std::optional<std::vector<protocol::kafka::OffsetFetchRequest::Topic>> topics,
                         std::function<void(protocol::kafka::OffsetFetchResponse)> done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::ListGroupsRequest r, protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::DescribeGroupsRequest r, protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::DeleteGroupsRequest r, protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::SaslHandshakeRequest r, protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h, protocol::kafka::FetchRequest r,
             protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::ListOffsetsRequest r, protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::SaslAuthenticateRequest r, protocol::kafka::ResponseCallback& done);
  // KIP-848's consumer protocol (KafkaConsumerGroups.cpp).
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::ConsumerGroupHeartbeatRequest r, protocol::kafka::ResponseCallback& done);
  void route(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
             protocol::kafka::ConsumerGroupDescribeRequest r, protocol::kafka::ResponseCallback& done);

  // ---- The consumer protocol (KIP-848; KafkaConsumerGroups.cpp) ----
  // A ConsumerGroupHeartbeat once its group exists; `retried` after its
  // subscribed topics were read.
  void consumerHeartbeat(const protocol::Caller& c, const protocol::kafka::RequestHeader& h,
                         protocol::kafka::ConsumerGroupHeartbeatRequest r, protocol::kafka::ResponseCallback done,
                         bool retried) EXCLUDES(mu_);
  // The effects of a consumer group's call: member znodes and the group
  // epoch written (reconcile()), the group saved before `answer` goes out
  // when epochs or holdings changed.
  struct HeldBeat;
  void deliverConsumer(const std::string& group, Entry& e, kafka::ConsumerEffects& fx,
                       std::optional<HeldBeat> answer, Answers& out) REQUIRES(mu_);
  void saveConsumer(const std::string& group, Entry& e, Answers& out) REQUIRES(mu_);
  void consumerSaved(const std::string& group, uint64_t serial, zk::Error error, int32_t savedVersion)
      EXCLUDES(mu_);
  // The subscribed topics as last read, with their ids, partition counts
  // and replicas' racks; `missing` gets the names never read yet (their
  // reads started here).
  kafka::TopicTable topicTable(const std::set<std::string>& names, std::vector<std::string>* missing)
      REQUIRES(mu_);
  // The group's table (Entry::topics) built again for `names` unless it
  // was built for them and complete; `missing` as topicTable's.
  void groupTopics(Entry& e, std::set<std::string> names, std::vector<std::string>* missing) REQUIRES(mu_);
  void readTopic(const std::string& name) REQUIRES(mu_);
  // Topics no loaded group subscribes to are dropped (names come from
  // clients: the cache does not grow with every name ever subscribed);
  // their watches, when they fire, read nothing.
  void forgetUnsubscribedTopics() REQUIRES(mu_);
  void topicRead(const std::string& name, zk::GetResult r) EXCLUDES(mu_);
  // The group's own settings (layout::GroupConfig), read and watched while
  // the group is loaded here (`serial`); `then` gets the read (NoNode: it
  // has none), and each later change reaches groupConfigChanged.
  void readGroupConfig(const std::string& group, uint64_t serial, std::function<void(zk::GetResult)> then);
  void groupConfigChanged(const std::string& group, uint64_t serial, zk::GetResult r) EXCLUDES(mu_);
  // The server's rules with the group's own settings over them; values out
  // of bounds are brought within them, with a warning in the log.
  kafka::ConsumerRules consumerRulesOf(const std::string& group, const zk::GetResult& config) const;

  // Writes offsets the group's fence let through; answers `done`.
  void writeOffsets(const std::string& group, protocol::kafka::OffsetCommitRequest r,
                    protocol::kafka::ResponseCallback done, bool retried) EXCLUDES(mu_);
  std::string snapshotPath(const std::string& group) const;

  zk::Client& zk_;
  const layout::Layout& layout_;
  OffsetStore& offsets_;
  const TimeSource& time_;
  const KafkaGroupsConfig config_;
  const KafkaHooks hooks_;

  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>, std::less<>> groups_ GUARDED_BY(mu_);
  uint64_t nextTicket_ GUARDED_BY(mu_) = 1;
  uint64_t nextSerial_ GUARDED_BY(mu_) = 1;
  bool stopped_ GUARDED_BY(mu_) = false;
  // Topics subscribed by consumer-protocol groups, read on first use and
  // watched; requests that wait for a first read.
  struct TopicCache {
    kafka::TopicInfo info;
    bool read = false;
    bool reading = false;
  };
  std::map<std::string, TopicCache, std::less<>> topics_ GUARDED_BY(mu_);
  std::multimap<std::string, std::function<void()>> topicWaiters_ GUARDED_BY(mu_);
  TimePoint nextTopicSweep_ GUARDED_BY(mu_){};

  // Fetches wait out their MaxWaitMs, then are answered empty (docs/kafka.md,
  // "Fetching"): by deadline.
  mutable Mutex fetchMu_;
  std::multimap<TimePoint, std::function<void()>> fetches_ GUARDED_BY(fetchMu_);
};

}  // namespace groupcoord::adapter
