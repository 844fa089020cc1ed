#pragma once

// The ownership checker: simulated members that speak the wire protocol to
// groupcoordd processes, and a record of everything they did, for tests that
// must show that no partition was ever held by two members at once and that
// no acknowledged commit was lost.
//
// Each simulated member is a correct client of the protocol: it holds a
// partition only between a grant (a RegisterConsumer answer) and its own
// release (a later answer that no longer gives it the partition, an
// UNKNOWN_CONSUMER, a leave, a crash, or self-fencing once no heartbeat has
// succeeded for the group's session timeout). Each grant and release is
// recorded with its time; overlapping holding intervals are the bug this
// checker looks for.
//
// Threads: every member runs on a thread of its own; the record and the
// server list are safe to use from the test's thread meanwhile.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/Connection.h"
#include "protocol/Messages.h"

namespace groupcoord::testing {

using CheckerClock = std::chrono::steady_clock;

// The ports of the groupcoordd servers the members may ask; a test updates
// it when a server comes back on another port.
class ServerPorts {
 public:
  explicit ServerPorts(std::vector<uint16_t> ports = {}) : ports_(std::move(ports)) {}
  std::vector<uint16_t> get() const;
  void set(std::vector<uint16_t> ports);

 private:
  mutable std::mutex mu_;
  std::vector<uint16_t> ports_;
};

// ListGroups for one group, asked of each server in turn until one answers;
// nullopt when none did.
std::optional<protocol::GroupInfo> describeGroupOnAny(const std::vector<uint16_t>& ports, const std::string& group);
// FetchOffsets of every topic of the group, from the first server that
// answers NONE; nullopt when none did.
std::optional<std::map<protocol::TopicPartition, int64_t>> fetchOffsetsOnAny(const std::vector<uint16_t>& ports,
                                                                              const std::string& group);

struct OwnershipEvent {
  CheckerClock::time_point at;
  std::string member;  // the process incarnation, "id#n"
  protocol::TopicPartition partition;
  bool grant = false;
  uint16_t server = 0;  // a grant: the port of the server that granted it
};

// An answer that renewed a member's lease: a heartbeat answered NONE or
// REBALANCE_NEEDED, or a registration answered NONE.
struct Renewal {
  CheckerClock::time_point at;  // when the answer arrived
  std::string member;           // "id#n"
  uint16_t server = 0;          // the port that answered
};

// Everything the members saw.
class OwnershipRecord {
 public:
  void add(const std::string& who, const protocol::TopicPartition& p, bool grant,
           CheckerClock::time_point at = CheckerClock::now(), uint16_t server = 0);
  void renewed(const std::string& who, uint16_t server, CheckerClock::time_point at = CheckerClock::now());
  // Copies of everything recorded so far, in the order it was recorded.
  std::vector<OwnershipEvent> events() const;
  std::vector<Renewal> renewals() const;
  // A commit answered NONE for this partition.
  void acked(const protocol::TopicPartition& p, int64_t offset);
  // A commit whose outcome the member cannot know (no answer, or an answer
  // such as CONTROLLER_NOT_AVAILABLE that a write may have preceded): the
  // offset may or may not be durable.
  void inDoubt(const protocol::TopicPartition& p, int64_t offset);
  // An answer other than NONE ("Heartbeat REBALANCE_NEEDED"), or a call
  // that got none ("Heartbeat no answer (timeout)", "no controller reachable").
  void sawError(const std::string& name);

  struct Counts {
    uint64_t grants = 0;
    uint64_t releases = 0;
    uint64_t commitsAcked = 0;
    std::map<std::string, uint64_t> errors;
  };
  Counts counts() const;

  // Every pair of holding intervals of one partition that intersect, over
  // everything recorded so far, one line each.
  std::vector<std::string> overlaps() const;

  struct CommitCheck {
    size_t partitions = 0;  // partitions with an acknowledged commit
    size_t lost = 0;        // ZooKeeper holds neither the last acknowledged offset nor a later in-doubt one
    size_t inDoubt = 0;     // ZooKeeper holds an offset written after the last acknowledgement but never acknowledged
    std::vector<std::string> problems;
  };
  // Compares the last acknowledged commit of each partition with `inZk`
  // (what FetchOffsets returned). Call while no commit is in flight.
  CommitCheck compareCommits(const std::map<protocol::TopicPartition, int64_t>& inZk) const;

 private:
  mutable std::mutex mu_;
  std::vector<OwnershipEvent> events_;
  std::vector<Renewal> renewals_;
  uint64_t grants_ = 0;
  uint64_t releases_ = 0;
  uint64_t commitsAcked_ = 0;
  std::map<std::string, uint64_t> errors_;
  struct CommitState {
    CheckerClock::time_point ackedAt;
    int64_t acked = -1;
    std::set<int64_t> doubtful;  // offsets sent after the last acknowledgement, never acknowledged
  };
  std::map<protocol::TopicPartition, CommitState> commits_;
};

struct SimMemberOptions {
  std::string group;
  int64_t sessionTimeoutMs = 2000;
  std::chrono::milliseconds callTimeout{3000};
  std::chrono::milliseconds loopInterval{200};
  // Members whose index is odd heartbeat with Heartbeat version 2 (held at
  // the controller up to loopInterval, docs/protocol.md §20 and §21), the others
  // with version 0 at loopInterval: every suite runs both clients at once.
  // False: all version 0.
  bool heldOnOddMembers = true;
  int commitPermille = 300;  // chance of a commit after each heartbeat
  // The port member `index` dials for the server known (listed, advertised)
  // by `port`: its own link to that server, e.g. a proxy a partition test
  // can cut for this member alone. Unset: the port itself.
  std::function<uint16_t(int index, uint16_t port)> route;
};

// One simulated consumer process.
class SimMember {
 public:
  SimMember(int index, const ServerPorts& ports, OwnershipRecord& record, SimMemberOptions options, uint64_t seed);
  ~SimMember();

  void start();
  void stop();
  // Random leaves, crashes, restarts and pauses while on.
  void setChurn(bool on) { churn_ = on; }
  // While off, no commit is sent; quiesceCommits() also waits for the one in flight.
  void setCommits(bool on) { commits_ = on; }
  void quiesceCommits();

  struct View {
    bool alive = false;
    int64_t generation = -1;
    std::vector<std::string> members;  // as of its last registration
    int64_t listGeneration = -1;        // that registration's generation
    std::set<protocol::TopicPartition> held;
    std::string id;
    CheckerClock::time_point lastNone;
  };
  View view() const;
  // RegisterConsumer requests this member has sent so far (answered or
  // not): a member that follows its group to another controller without
  // registering again adds none.
  uint64_t registrations() const { return registrations_.load(); }

 private:
  std::string incarnation() const { return id_ + "#" + std::to_string(incarnation_); }
  void releaseAll(CheckerClock::time_point at);
  bool connectToController();
  void fenceIfOverdue();
  void noAnswer(const char* api);
  bool registerNow();
  void commitSome();
  // True when its answer came after a hold (version 1): the loop does not
  // sleep after it.
  bool heartbeatOnce();
  void run();
  void goDown(int ms, bool keepId);
  void publish();

  int index_;
  const ServerPorts& ports_;
  OwnershipRecord& record_;
  const SimMemberOptions options_;
  std::mt19937_64 rng_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> churn_{false};
  std::atomic<bool> commits_{true};
  std::mutex commitMu_;  // held while a commit is in flight
  std::atomic<uint64_t> registrations_{0};

  client::Connection conn_;
  uint16_t connPort_ = 0;  // the server conn_ is connected to
  std::string id_;
  int incarnation_ = 0;
  int64_t generation_ = -1;
  std::set<protocol::TopicPartition> held_;
  std::map<protocol::TopicPartition, int64_t> nextOffset_;
  CheckerClock::time_point lastSuccessSent_ = CheckerClock::now();
  bool alive_ = true;
  bool needRegister_ = false;  // fenced itself: register again before the next heartbeat
  bool keepId_ = false;
  CheckerClock::time_point downUntil_;

  mutable std::mutex viewMu_;
  View view_;
};

// A group of simulated members and the checks over them.
class OwnershipChecker {
 public:
  OwnershipChecker(const ServerPorts& ports, SimMemberOptions options);
  ~OwnershipChecker();

  void start(int members, uint64_t seed);
  void stop();
  void setChurn(bool on);
  // Stops every member's commits and waits for those in flight (at most one
  // call timeout), so that FetchOffsets can be compared with what was
  // acknowledged. resumeCommits() lets them go on.
  void quiesceCommits();
  void resumeCommits();

  struct Settle {
    bool settled = false;
    int64_t ms = -1;                 // from `from` to the first settled observation (0 if settled before)
    CheckerClock::time_point at;     // that observation
    int64_t generation = -1;         // the group's generation then
    std::string reason;              // why it was not settled at the last look
  };
  // Waits until the group has every member, each one alive, at the group's
  // generation (at least minGeneration) with the group's member list, and
  // the partitions they hold are disjoint and cover `all`; gives up `limit`
  // after `from`.
  Settle waitSettled(const std::set<protocol::TopicPartition>& all, CheckerClock::time_point from,
                     std::chrono::milliseconds limit, int64_t minGeneration = -1);

  OwnershipRecord& record() { return record_; }
  const std::vector<std::unique_ptr<SimMember>>& members() const { return members_; }

 private:
  const ServerPorts& ports_;
  const SimMemberOptions options_;
  OwnershipRecord record_;
  std::vector<std::unique_ptr<SimMember>> members_;
};

}  // namespace groupcoord::testing
