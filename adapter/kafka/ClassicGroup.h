#pragma once

// One Kafka group under the classic group protocol, as its controller keeps
// it (docs/protocol.md, "The Kafka port"): the members, the join barrier,
// the leader, the generation, the chosen protocol, the assignments and the
// deadlines. Pure: no I/O, no clock, no lock, no callback. The caller
// passes the time, keeps the requests that wait (JoinGroup until the
// barrier, SyncGroup until the leader's assignment) under tickets of its
// own, and delivers the answers returned in Effects.
//
// States, as Kafka names them (DescribeGroups shows these names):
//   Empty               no member (offsets may remain)
//   PreparingRebalance  the join barrier: waiting for every known member to
//                       join again, until the rebalance timeout
//   CompletingRebalance the joins are answered; waiting for the leader's
//                       SyncGroup
//   Stable              every member has its assignment
//   Dead                deleted
//
// Threads: none of its own; the caller serialises every call.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/kafka/Messages.h"

namespace groupcoord::adapter::kafka {

namespace wire = protocol::kafka;
using TimePoint = std::chrono::steady_clock::time_point;
using Millis = std::chrono::milliseconds;

// The caller's name for a request that waits for its answer.
using Ticket = uint64_t;

struct GroupRules {
  // JoinGroup's session timeout must lie within these
  // (group.min.session.timeout.ms, group.max.session.timeout.ms).
  Millis minSessionTimeout{6000};
  Millis maxSessionTimeout{300000};
  // A group with no member waits this long after its first join for more
  // (extended by each join, never past the rebalance timeout), so that
  // members starting together form one generation
  // (group.initial.rebalance.delay.ms); 0: no wait.
  Millis initialRebalanceDelay{3000};
  // Most members a group may have (GROUP_MAX_SIZE_REACHED past it).
  size_t maxSize = 10000;
};

enum class State : uint8_t { Empty, PreparingRebalance, CompletingRebalance, Stable, Dead };
std::string_view stateName(State s);  // "Empty", "PreparingRebalance", ...

struct JoinArgs {
  wire::JoinGroupRequest request;
  int16_t version = 0;       // the request's; decides MEMBER_ID_REQUIRED (4 and later)
  std::string clientId;      // the request header's client id ("" when null)
  std::string clientHost;    // the peer's address, for DescribeGroups
  uint16_t clientPort = 0;   // the peer's source port (0: not known), for groupctl describe
  std::string freshMemberId; // the id a new member gets, made unique by the caller
};

struct SyncArgs {
  wire::SyncGroupRequest request;
  int16_t version = 0;
};

// What a call decided beyond its own return value.
struct Effects {
  std::vector<std::pair<Ticket, wire::JoinGroupResponse>> joins;  // parked joins answered now
  std::vector<std::pair<Ticket, wire::SyncGroupResponse>> syncs;  // parked syncs answered now
  // A generation became stable (every assignment known): what the caller
  // makes durable so that another controller can go on without a rebalance.
  bool becameStable = false;
  // The members that left the group by this call, with why ("left",
  // "session timeout", "did not rejoin", "replaced", "deleted"): for logs.
  std::vector<std::pair<std::string, std::string>> removed;
};

// A member as DescribeGroups and the durable snapshot show it.
struct MemberView {
  std::string memberId;
  std::optional<std::string> groupInstanceId;
  std::string clientId;
  std::string clientHost;
  int32_t sessionTimeoutMs = 0;
  int32_t rebalanceTimeoutMs = 0;
  std::vector<wire::JoinGroupRequest::Protocol> protocols;  // as the member last sent them
  std::string assignment;                                    // "" until the leader's sync
  bool operator==(const MemberView&) const = default;
};

// What groupctl describe shows of a member beyond its MemberView: where it
// connects from and when it was last heard. Not made durable: a member a
// new controller resumed has no join time here.
struct MemberActivity {
  std::string memberId;
  uint16_t clientPort = 0;
  std::optional<TimePoint> joinedAt;
  TimePoint lastHeard{};  // its last join, sync, heartbeat or commit
};

// A stable generation, as made durable (encode/decode below) and as a new
// controller resumes it.
struct Snapshot {
  int32_t generation = 0;
  std::string protocolType;
  std::string protocolName;
  std::string leader;
  std::vector<MemberView> members;
  bool operator==(const Snapshot&) const = default;
};
// A versioned byte string; decode gives nullopt for anything else (no
// exception, no allocation sized by the input beyond its own length).
std::string encodeSnapshot(const Snapshot& s);
std::optional<Snapshot> decodeSnapshot(std::string_view bytes);

class ClassicGroup {
 public:
  // An empty group at `generation` (its next rebalance makes generation + 1).
  ClassicGroup(std::string groupId, GroupRules rules, int32_t generation = 0);
  // A new controller's copy of a stable generation: every member's session
  // starts afresh at `now`, the state is Stable (Empty with no member).
  static ClassicGroup resume(std::string groupId, GroupRules rules, const Snapshot& s, TimePoint now);

  // JoinGroup. Answers at once (in `out.joins` under `t`) or parks the
  // request until the barrier completes; either way exactly one answer for
  // `t` comes out of this call, a later call, or abandon().
  void join(Ticket t, const JoinArgs& a, TimePoint now, Effects& out);
  // SyncGroup, the same way.
  void sync(Ticket t, const SyncArgs& a, TimePoint now, Effects& out);
  // Heartbeat: renews the member's session; the error to answer.
  wire::ErrorCode heartbeat(const wire::HeartbeatRequest& r, TimePoint now, Effects& out);
  // The same read in place (the Kafka port's inline heartbeats); a
  // heartbeat has no effects.
  wire::ErrorCode heartbeat(int32_t generationId, std::string_view memberId,
                            const std::optional<std::string_view>& groupInstanceId, TimePoint now);
  // LeaveGroup (versions 0 and 1: one member).
  wire::ErrorCode leave(const std::string& memberId, TimePoint now, Effects& out);
  // OffsetCommit's fence (also renews the member's session): NONE when the
  // commit may be written. Generation -1 with an empty member id is a
  // standalone commit, accepted only while the group has no member.
  wire::ErrorCode commitCheck(int32_t generation, const std::string& memberId,
                              const std::optional<std::string>& groupInstanceId, TimePoint now);
  // Expires sessions, ends the barrier at its deadline (members that did not
  // join again leave), ends the initial delay.
  void tick(TimePoint now, Effects& out);
  // The earliest time tick() has something to do; nullopt: nothing.
  std::optional<TimePoint> nextDeadline() const;
  // Every parked request answered with `answer` (the controller lost the
  // group, or it was deleted); the group is Dead with `deleted`.
  void abandon(wire::ErrorCode answer, bool deleted, Effects& out);

  const std::string& groupId() const { return groupId_; }
  State state() const { return state_; }
  int32_t generation() const { return generation_; }
  const std::string& protocolType() const { return protocolType_; }
  const std::string& protocolName() const { return protocolName_; }
  const std::string& leader() const { return leader_; }
  size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty(); }
  // DescribeGroups' entry (error NONE): metadata of the chosen protocol,
  // assignments once stable.
  wire::DescribeGroupsResponse::Group describe() const;
  // The current generation as Snapshot (meaningful when Stable).
  Snapshot snapshot() const;
  std::vector<MemberView> members() const;
  std::vector<MemberActivity> activity() const;

 private:
  struct Member {
    MemberView view;
    TimePoint sessionDeadline{};
    std::optional<Ticket> pendingJoin;
    int16_t joinVersion = 0;
    std::optional<Ticket> pendingSync;
    int16_t syncVersion = 0;
    uint64_t joinOrder = 0;  // when it first joined: the leader falls to the earliest
    uint16_t clientPort = 0;
    std::optional<TimePoint> joinedAt;  // not known for a member resumed from a snapshot
  };

  // The join paths (ClassicGroup.cpp): a member id the group does not know
  // yet, one handed out with MEMBER_ID_REQUIRED, a static member coming
  // back under a new id, and a member of the group.
  void joinNew(Ticket t, const JoinArgs& a, TimePoint now, Effects& out);
  void joinReplacing(Ticket t, const JoinArgs& a, const std::string& oldId, TimePoint now, Effects& out);
  void joinKnown(Ticket t, const JoinArgs& a, Member& m, TimePoint now, Effects& out);
  Member& addMember(Ticket t, const JoinArgs& a, const std::string& id, TimePoint now);
  // What a join says about its member (client, timeouts, protocols), and its session renewed.
  static void takeJoin(Member& m, const JoinArgs& a, TimePoint now);
  // The member's answer of the current generation (the member list for the leader only).
  wire::JoinGroupResponse joinAnswer(const Member& m) const;
  bool protocolsCompatible(const wire::JoinGroupRequest& r, const std::string& except) const;
  bool fenced(std::string_view memberId, const std::optional<std::string_view>& instanceId) const;

  // The barrier: entered from Stable, CompletingRebalance or Empty (with the
  // initial delay), completed when every member waits in JoinGroup or at
  // its deadline.
  void prepareRebalance(TimePoint now, Effects& out);
  void maybeCompleteBarrier(TimePoint now, Effects& out);
  void completeBarrier(TimePoint now, Effects& out);
  std::string voteProtocol() const;
  // Removes the member (its parked requests answered with `answer`); the
  // caller then calls afterRemoval() once for all it removed.
  void removeMember(const std::string& id, const char* why, wire::ErrorCode answer, Effects& out);
  void afterRemoval(TimePoint now, Effects& out);
  std::vector<const Member*> byJoinOrder() const;
  int32_t maxRebalanceTimeoutMs() const;
  // A member waiting in a request is kept alive until it is answered, as
  // Kafka does: its session only runs while nothing of it is parked.
  bool sessionRuns(const Member& m) const;

  std::string groupId_;
  GroupRules rules_;
  State state_ = State::Empty;
  int32_t generation_ = 0;
  std::string protocolType_;
  std::string protocolName_;
  std::string leader_;
  std::map<std::string, Member, std::less<>> members_;
  // Member ids handed out with MEMBER_ID_REQUIRED, not joined yet, and
  // when they lapse.
  std::map<std::string, TimePoint> pending_;
  // group.instance.id -> member id
  std::map<std::string, std::string, std::less<>> instances_;
  TimePoint barrierDeadline_{};
  // The initial delay: its current end, what remains of the rebalance
  // timeout past it, and whether a new member joined since it was last set.
  TimePoint initialDelayEnd_{};
  Millis initialRemaining_{0};
  bool initialDelay_ = false;
  bool newMemberAdded_ = false;
  uint64_t joins_ = 0;
};

}  // namespace groupcoord::adapter::kafka
