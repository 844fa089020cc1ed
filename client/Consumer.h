#pragma once

// A member of a consumer group. Single-threaded and driven by poll(): every
// registration, heartbeat, rebalance, controller move and self-fence happens
// inside poll(), commitSync() or close(), and the callbacks run there, on the
// caller's thread.
//
// Ownership: the member reports what it holds when it registers again, tells
// the application what it lost (onRevoked) before the heartbeat that
// acknowledges the release, and stops using everything by itself (onLost)
// once no heartbeat has succeeded for the group's session timeout, measured
// from the send time of the last one that did: the controller cannot evict it
// and grant its partitions elsewhere sooner than that.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/Admin.h"
#include "client/Connection.h"
#include "client/Status.h"
#include "protocol/Messages.h"

namespace groupcoord::client {

struct ConsumerConfig {
  std::vector<Endpoint> bootstrap;
  std::string group;
  std::string clientId = "groupcoord-consumer";
  // Set: join under this id (a restart keeps its membership). Empty: the
  // server makes one, kept for the consumer's life.
  std::optional<std::string> consumerId;
  // Default: the group's session timeout / 3, as ListGroups reports it.
  std::optional<std::chrono::milliseconds> heartbeatInterval;
  // One request's wait for its answer; capped so that a stuck request cannot
  // outlive the self-fencing deadline by much.
  std::chrono::milliseconds requestTimeout{3000};
  // Credentials and TLS, applied on every (re)connect; a refused
  // Authenticate makes poll() return NOT_AUTHORIZED.
  SecurityOptions security;
  // Sent with every registration (RegisterConsumer version 1): opaque bytes
  // the other members of a client-mode group receive (at most the server's
  // group.max.metadata.bytes, 4 KiB by default), and this member's rack,
  // which server-side assignment prefers for partitions with a replica
  // there. A server that only speaks version 0 gets neither.
  std::string metadata;
  std::string rack;
};

struct ConsumerCallbacks {
  // Newly granted partitions, each with the group's committed offset (-1: none).
  std::function<void(const std::vector<protocol::PartitionOffset>&)> onAssigned;
  // Partitions to stop using; called before the release is acknowledged, so
  // the application can still commit them.
  std::function<void(const std::vector<protocol::TopicPartition>&)> onRevoked;
  // Partitions already lost (fenced or evicted): committing them will fail.
  std::function<void(const std::vector<protocol::TopicPartition>&)> onLost;

  // Client-mode groups (membership only, docs/protocol.md §14):
  // Generation `generation` is agreed: every member has registered at it and
  // received this same list (in this order, with each member's metadata).
  // Start on this member's share of it.
  std::function<void(int64_t generation, const std::vector<protocol::MemberMetadata>& members)> onMembers;
  // Stop using everything derived from `generation`: called before the
  // member registers at a later generation, before it leaves, and when it
  // fences itself (no heartbeat succeeded for the session timeout).
  std::function<void(int64_t generation)> onStop;
};

class Consumer {
 public:
  using Clock = std::chrono::steady_clock;

  Consumer(ConsumerConfig config, ConsumerCallbacks callbacks);
  ~Consumer();
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  // Does what is due until `timeout` has passed: registers, heartbeats,
  // follows rebalances and the controller. Never sleeps past the next
  // heartbeat. OK while the consumer is a member; a retriable status
  // (CONTROLLER_NOT_AVAILABLE, NOT_CONTROLLER) when it is not yet or no more
  // and keeps trying; any other error (UNKNOWN_GROUP, INVALID_*) returns at once.
  Status poll(std::chrono::milliseconds timeout);
  // Commits offsets of partitions this member holds; NONE once durable.
  // A partition-level refusal comes back as the first failing partition's code.
  Status commitSync(const std::vector<protocol::PartitionOffset>& offsets);
  // Leaves the group: onRevoked for what it holds, then LeaveGroup.
  Status close();

  std::vector<protocol::TopicPartition> assignment() const;
  int64_t generation() const { return generation_; }
  const std::string& memberId() const { return memberId_; }
  protocol::AssignmentMode assignmentMode() const { return mode_; }
  // Client mode: the generation this member has started on (onMembers), -1 when none.
  int64_t startedGeneration() const { return started_; }
  // Client mode: the member list of the last registration.
  const std::vector<protocol::MemberMetadata>& members() const { return memberList_; }
  // The RegisterConsumer version spoken to the current controller (the
  // newest, or an older one that controller said it speaks).
  int16_t registerVersion() const { return registerVersion_; }
  // The instant by which this member stops using its partitions unless a
  // heartbeat succeeds first (last successful send + session timeout).
  Clock::time_point leaseExpiry() const { return lastSuccessSent_ + sessionTimeout_; }
  std::chrono::milliseconds sessionTimeout() const { return sessionTimeout_; }

 private:
  enum class Step { Done, Retry, Fatal };

  Status loadGroup();
  bool connectToController(Status& why);
  std::optional<protocol::Response> call(const protocol::Request& request, Status& why,
                                         int16_t version = protocol::kProtocolVersion);
  Step registerNow(Status& why);
  // Sends the next heartbeat. To a controller that speaks version 1 it goes
  // with a wait of one heartbeat interval and is not waited for here: the
  // controller holds it until something changes for this member (its
  // answer then comes at once) or the wait runs out (docs/design.md, "Held
  // heartbeats"); poll() and every other call take its answer. To one that
  // does not, version 0, answered at once.
  Step heartbeatNow(Status& why);
  // The held heartbeat's answer, if it comes within `timeout` (Done with
  // the heartbeat still held when it does not).
  Step awaitHeld(std::chrono::milliseconds timeout, Status& why);
  // What an answer to a heartbeat sent at `sent` means for the member.
  // version: the request's (2: a NONE answer may bring a new generation).
  Step takeHeartbeat(const protocol::Response& response, Clock::time_point sent, Status& why, int16_t version = 0);
  // The longest a held heartbeat's answer may take before the connection
  // counts as failed: its wait and one request's timeout.
  std::chrono::milliseconds heldLimit() const;
  void fenceIfOverdue();
  void loseAll();
  // Client mode: onStop for the generation started on, if any.
  void stopStarted();
  // Client mode: the member list of a registration's answer, whole or as a
  // change to the one held; false when it cannot be trusted.
  bool takeMemberList(protocol::RegisterConsumerResponse& reg);
  void scheduleBackoff();
  Clock::time_point nextWake() const;

  ConsumerConfig config_;
  ConsumerCallbacks callbacks_;
  Connection conn_;
  std::optional<Endpoint> controller_;
  size_t nextBootstrap_ = 0;

  std::string memberId_;
  int64_t generation_ = -1;
  bool needRegister_ = true;
  bool closed_ = false;
  std::map<protocol::TopicPartition, int64_t> held_;  // partition -> offset granted with it

  bool groupLoaded_ = false;
  // The newest RegisterConsumer version until the controller answers that
  // it does not speak it (then one older); a new controller is asked the
  // newest again, so a group moved to an upgraded server speaks it again.
  int16_t registerVersion_ = protocol::maxVersion(protocol::ApiKey::RegisterConsumer);
  std::optional<Endpoint> versionSpokenTo_;  // the controller registerVersion_ is for
  protocol::AssignmentMode mode_ = protocol::AssignmentMode::SERVER;
  std::vector<protocol::MemberMetadata> memberList_;
  // The generation memberList_ is of (version 2 sends it, and is answered
  // with what changed since); -1 when it holds none it can vouch for.
  int64_t memberListGeneration_ = -1;
  int64_t started_ = -1;
  std::chrono::milliseconds sessionTimeout_{0};
  std::chrono::milliseconds heartbeatInterval_{0};
  Clock::time_point lastSuccessSent_{};
  Clock::time_point nextHeartbeat_{};
  // The heartbeat sent with a wait and not answered yet.
  struct HeldBeat {
    int64_t correlationId = -1;
    Clock::time_point sent;
    int64_t generation = -1;  // the member's when it was sent
    int16_t version = 1;      // the request's
  };
  std::optional<HeldBeat> heldBeat_;
  // The newest (2: held, and a NONE answer may bring a new generation),
  // one version lower per UNSUPPORTED_VERSION; a new controller is asked
  // the newest again.
  int16_t heartbeatVersion_ = protocol::maxVersion(protocol::ApiKey::Heartbeat);
  Clock::time_point backoffUntil_{};
  std::chrono::milliseconds backoffStep_{0};
};

}  // namespace groupcoord::client
