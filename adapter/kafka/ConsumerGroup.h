#pragma once

// One Kafka group under the consumer protocol (KIP-848; docs/kafka.md, "The
// consumer protocol"), as its controller keeps it: the members with their
// subscriptions and epochs, the target assignment computed here by
// groupcoord's optimiser (adapter/Assignment.h), and who holds which
// partition. Pure: no I/O, no clock, no lock. The caller passes the time
// and the subscribed topics as it read them, makes durable what Effects
// says before it answers, and writes the member znodes.
//
// The rules, as groupcoord's server mode (docs/design.md, "Ownership"):
//   - The group epoch moves on every change of membership, subscription or
//     topics; the target assignment is computed at once for that epoch.
//   - A member holds a partition from the answer that gives it until a
//     heartbeat of its own no longer lists it, or until it leaves or is
//     removed. A partition is given only when no member holds it, so no
//     partition ever has two holders.
//   - A member whose target takes partitions away is told to give them up
//     first (its epoch stays); once its heartbeat shows them gone it moves
//     to the target's epoch and is given what of its target nobody holds;
//     the rest comes in later heartbeats, as the holders let it go.
//   - A member silent for the session timeout is removed; one that keeps
//     partitions it was told to give up for its rebalance timeout is
//     removed too (fenced: FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID).
//
// States, as Kafka names them (ConsumerGroupDescribe): Empty, Reconciling
// (a member is not yet at the target), Stable.
//
// Threads: none of its own; the caller serialises every call.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/kafka/Messages.h"

namespace groupcoord::adapter::kafka {

namespace cwire = protocol::kafka;
using ConsumerTime = std::chrono::steady_clock::time_point;

struct ConsumerRules {
  // Set by the group, not the client: a member silent this long is removed,
  // and members heartbeat this often
  // (kafka.group.consumer.session.timeout.ms, ...heartbeat.interval.ms).
  std::chrono::milliseconds sessionTimeout{45000};
  std::chrono::milliseconds heartbeatInterval{5000};
  // Most members a group may have (GROUP_MAX_SIZE_REACHED past it).
  size_t maxSize = 10000;
  // The interval told to a member waiting for partitions of its target
  // that others still hold (kafka.group.consumer.waiting.heartbeat.interval.ms;
  // at most heartbeatInterval): it asks again soon, so a partition is given
  // to it soon after its holder lets it go. Only while it waits.
  std::chrono::milliseconds waitingHeartbeatInterval{100};
};

// A subscribed topic as the controller read it.
struct TopicInfo {
  protocol::Uuid id;
  int32_t partitions = 0;  // 0: the topic does not exist (yet)
  // Per partition, the racks of its replicas ("" entries not kept); empty
  // when not known.
  std::vector<std::set<std::string>> replicaRacks;
  bool operator==(const TopicInfo&) const = default;
};
using TopicTable = std::map<std::string, TopicInfo, std::less<>>;

// Partitions by topic name.
using TopicSets = std::map<std::string, std::set<int32_t>>;

struct ConsumerMember {
  std::string memberId;
  std::optional<std::string> instanceId;
  std::string rackId;  // "" : none
  std::string clientId;
  std::string clientHost;
  int32_t rebalanceTimeoutMs = 300000;
  std::vector<std::string> topics;  // subscribed, sorted, unique
  std::string assignor;             // "" : the server's
  int32_t epoch = 0;
  int32_t previousEpoch = -1;
  TopicSets assigned;  // what it holds: given, and not yet seen given up
  TopicSets revoking;  // of `assigned`, what it was told to give up
  TopicSets target;    // what the group's target gives it
  // A static member that left with epoch -2: kept, with what it holds,
  // until it comes back (under any member id) or its session runs out.
  bool away = false;
  ConsumerTime lastHeard{};
  ConsumerTime revokingSince{};
  // What the last answer told it (for the assignment delta): nullopt until
  // an answer carried an assignment.
  std::optional<TopicSets> told;
  // For groupctl describe, not saved: its source port, and when it joined
  // (nullopt for a member a new controller resumed).
  uint16_t clientPort = 0;
  std::optional<ConsumerTime> joinedAt;
  bool operator==(const ConsumerMember&) const = default;
};

struct HeartbeatArgs {
  cwire::ConsumerGroupHeartbeatRequest request;
  int16_t version = 0;
  std::string clientId;     // the request header's
  std::string clientHost;   // the peer's address
  uint16_t clientPort = 0;  // the peer's port
  std::string freshMemberId;  // version 0: the id a joining member without one gets
};

struct ConsumerEffects {
  // Epochs or holdings changed: the caller saves the group (snapshot())
  // before it sends the answer, so that a new controller never gives a
  // partition a member may still hold, and knows every epoch it told.
  bool durable = false;
  // Members came or went: the caller writes the member znodes and moves
  // the group znode's version to groupEpoch().
  bool membership = false;
  std::vector<std::pair<std::string, std::string>> removed;  // member, why: for logs
  std::vector<std::string> joined;
};

// What a new controller resumes (encodeConsumerSnapshot below).
struct ConsumerSnapshot {
  int32_t groupEpoch = 0;
  std::vector<ConsumerMember> members;  // lastHeard, revokingSince, told, clientPort, joinedAt not kept
  bool operator==(const ConsumerSnapshot&) const = default;
};
// A versioned byte string that never reads as a classic snapshot
// (ClassicGroup.h's decodeSnapshot gives nullopt for it); decode gives
// nullopt for anything else, without exceptions.
std::string encodeConsumerSnapshot(const ConsumerSnapshot& s);
std::optional<ConsumerSnapshot> decodeConsumerSnapshot(std::string_view bytes);

class ConsumerGroup {
 public:
  ConsumerGroup(std::string groupId, ConsumerRules rules, int32_t groupEpoch);
  // A new controller's copy: every member's session starts afresh at
  // `now`; the targets are the saved ones, so nothing moves.
  static ConsumerGroup resume(std::string groupId, ConsumerRules rules, ConsumerSnapshot s, ConsumerTime now);

  // ConsumerGroupHeartbeat: the answer (error NONE or why not).
  cwire::ConsumerGroupHeartbeatResponse heartbeat(const HeartbeatArgs& a, const TopicTable& topics, ConsumerTime now,
                                                  ConsumerEffects& fx);
  // Sessions and rebalance timeouts.
  void tick(ConsumerTime now, const TopicTable& topics, ConsumerEffects& fx);
  std::optional<ConsumerTime> nextDeadline() const;
  // A subscribed topic changed (partitions, replicas): a new target when it
  // differs.
  void topicsChanged(const TopicTable& topics, ConsumerEffects& fx);
  // OffsetCommit's fence: NONE when a commit of `memberId` at `epoch` may be
  // written. Epoch -1 with no member id is a standalone commit, accepted
  // only while the group has no member.
  cwire::ErrorCode commitCheck(const std::string& memberId, int32_t epoch) const;
  // Every member removed (the group is deleted).
  void clear(ConsumerEffects& fx);
  // Every member fenced (its next heartbeat FENCED_MEMBER_EPOCH: it gives
  // up everything and joins again), the group at `epoch`: the group's
  // epoch moved outside it (a rewind), so its members read their offsets
  // anew. What they hold stays held until they join again or time out.
  void fenceAll(int32_t epoch);
  // A heartbeat of the member heard while it cannot be answered (the
  // session lease): its session does not run out meanwhile.
  void heard(std::string_view memberId, ConsumerTime now);
  // The group's own settings changed (`groupctl config`): sessions are
  // judged by the new timeout from now on, and every answer from now on
  // tells the new interval. Nothing moves.
  void setRules(const ConsumerRules& rules) { rules_ = rules; }
  const ConsumerRules& rules() const { return rules_; }

  const std::string& groupId() const { return groupId_; }
  int32_t groupEpoch() const { return groupEpoch_; }
  bool empty() const { return members_.empty(); }
  size_t size() const { return members_.size(); }
  const std::map<std::string, ConsumerMember, std::less<>>& members() const { return members_; }
  std::string_view state() const;
  std::set<std::string> subscribedTopics() const;
  ConsumerSnapshot snapshot() const;
  cwire::ConsumerGroupDescribeResponse::Group describe(const TopicTable& topics) const;
  // For tests: the member holding each partition.
  std::map<std::pair<std::string, int32_t>, std::string> holders() const;

 private:
  cwire::ConsumerGroupHeartbeatResponse leave(const HeartbeatArgs& a, const TopicTable& topics, ConsumerEffects& fx);
  cwire::ConsumerGroupHeartbeatResponse join(const HeartbeatArgs& a, const TopicTable& topics, ConsumerTime now,
                                             ConsumerEffects& fx);
  // Takes what the request says of the member (subscription, rack,
  // timeouts, what it holds); true when the target must be recomputed.
  bool takeRequest(ConsumerMember& m, const HeartbeatArgs& a, const TopicTable& topics, ConsumerTime now,
                   ConsumerEffects& fx);
  // Moves the member along: revocations first, then the target's epoch,
  // then grants of what nobody holds.
  void reconcile(ConsumerMember& m, ConsumerTime now, ConsumerEffects& fx);
  cwire::ConsumerGroupHeartbeatResponse answer(ConsumerMember& m, const TopicTable& topics, bool full);
  void remove(const std::string& id, const char* why, ConsumerEffects& fx);
  // A new group epoch and its target.
  void retarget(const TopicTable& topics, ConsumerEffects& fx);

  std::string groupId_;
  ConsumerRules rules_;
  int32_t groupEpoch_ = 0;
  std::map<std::string, ConsumerMember, std::less<>> members_;
};

// How groupctl and the status page name the protocol of a consumer-protocol
// group ("kafka consumer (uniform, consumer protocol)").
inline constexpr std::string_view kConsumerProtocolName = "uniform, consumer protocol";

// Assignor names a member may ask for: "uniform" (and none) are
// groupcoord's optimiser; anything else is UNSUPPORTED_ASSIGNOR.
bool knownAssignor(std::string_view name);

}  // namespace groupcoord::adapter::kafka
