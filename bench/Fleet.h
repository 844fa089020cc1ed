#pragma once

// Simulated group members for the benchmarks, all driven by one Loop: they
// register, heartbeat, register again when told (REBALANCE_NEEDED or
// UNKNOWN_CONSUMER) with what they hold, and follow their group's
// controller between servers (NOT_CONTROLLER, CONTROLLER_NOT_AVAILABLE or a
// lost connection send them to ListGroups). Many members share a
// connection, as members of one process would.

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/Loop.h"
#include "protocol/Messages.h"

namespace groupcoord::bench {

struct Member {
  std::string group;
  std::string id;
  int64_t generation = -1;
  std::vector<protocol::TopicPartition> owned;
  uint16_t port = 0;   // the server it talks to (its group's controller, as far as it knows)
  size_t slot = 0;     // which of that server's shared connections it uses
  bool inSync = false; // its last heartbeat answered NONE
  bool busy = false;   // a request of its own is in flight
  bool crashed = false;
  uint64_t lastAckedHeartbeatSentNs = 0;
  std::vector<uint8_t> heartbeatFrame;  // pre-encoded for `generation`
  int64_t listGeneration = -1;          // client mode, version 2: the generation whose member list it was sent
  std::string metadata;                 // sent with every registration (version 1+): what the others see of it
  // Due times of beats that fell due while the previous was still out:
  // sent one after another as answers come, each measured from its due time.
  std::deque<uint64_t> deferred;
};

// What a heartbeat schedule measures. Beat k of member i is due at
// start + phase(i) + k * interval, whatever happened to earlier beats (an
// absolute schedule); only beats due in [fromNs, untilNs) are recorded.
struct BeatMeasure {
  // Answered NONE: from the beat's due time to its answer, so that a beat
  // held up behind a slow one counts the wait too (coordinated omission
  // corrected, as wrk2 measures).
  Histogram* latency = nullptr;
  // How late the generator itself fired each beat against its due time.
  Histogram* lateness = nullptr;
  uint64_t fromNs = 0;
  uint64_t untilNs = std::numeric_limits<uint64_t>::max();
  bool covers(uint64_t dueNs) const { return dueNs >= fromNs && dueNs < untilNs; }
};

struct FleetStats {
  uint64_t heartbeats = 0;
  std::map<std::string, uint64_t> errors;  // by error name; "CONNECTION" for a failed request
  uint64_t beatsDropped = 0;  // due while 64 earlier ones of the same member were still waiting
  uint64_t registrations = 0;
};

class Fleet {
 public:
  // connsPerServer: how many connections each server's members share.
  Fleet(Loop& loop, std::vector<uint16_t> servers, size_t connsPerServer);

  size_t add(std::string group, uint16_t port);
  Member& at(size_t i) { return members_[i]; }
  size_t size() const { return members_.size(); }
  std::vector<Member>& members() { return members_; }
  FleetStats& stats() { return stats_; }

  // Closes every connection the members use (their sessions then run out).
  void closeAll();
  // The connection member i uses (opened, or reopened, on demand); -1 when
  // its server refuses connections.
  int connFor(size_t i);

  // RegisterConsumer with what the member holds; done(ok).
  void registerMember(size_t i, std::function<void(bool)> done);
  // One heartbeat, and whatever it calls for (registering again, finding
  // the controller). done(the heartbeat's answer, its latency).
  void heartbeat(size_t i, std::function<void(protocol::ErrorCode, uint64_t)> done);
  // Every member not crashed heartbeats every `intervalNs` on an absolute
  // schedule, phases spread evenly, from now until stopBeating(); a member
  // not registered yet skips its beats until it is.
  void startBeating(uint64_t intervalNs, BeatMeasure measure);
  // latency (optional) gets each heartbeat answered NONE, from its due time.
  void startBeating(uint64_t intervalNs, Histogram* latency = nullptr) {
    startBeating(intervalNs, BeatMeasure{latency});
  }
  // What the running schedule records from now on (a new window).
  void setMeasure(BeatMeasure measure) { measure_ = measure; }
  void stopBeating();
  // Held heartbeats (Heartbeat version 1, docs/protocol.md §20) instead of
  // a schedule: every member not crashed keeps one heartbeat at its
  // controller with WaitMs = intervalNs and sends the next when that one is
  // answered: at once after a hold that ran its course or news
  // (REBALANCE_NEEDED, and the registration it leads to, is acknowledged at
  // once), otherwise an interval after the last was sent. Until
  // stopBeating(). Each member needs a connection of its own
  // (connsPerServer at least the members): any request on a connection
  // answers the heartbeat held on it.
  void startHeldBeating(uint64_t intervalNs);
  // Member i (registered, not crashed) keeps a held heartbeat too.
  void joinHeldBeating(size_t i);
  // Member i (not crashed) takes its place in the running schedule, its
  // first beat within one interval (a member that joined late, or came back).
  void joinSchedule(size_t i);
  // Closes the connection that slot `slot`'s members use at `port`, as a
  // killed process's connections close; members marked crashed first stay
  // silent, the others reopen it on their next request.
  void killConnection(uint16_t port, size_t slot);

  // Every live member registers (each at most `parallel` at a time per
  // fleet); true when all did within the timeout.
  bool joinAll(uint64_t timeoutNs);
  // Every live member in sync, and the members of each group at one
  // generation (*generation: the last group's).
  bool allInSync(int64_t* generation = nullptr) const;
  // The holdings of the live members of `group` (every group when empty)
  // cover `partitions` exactly, each once. *why says what is wrong.
  bool assignmentExact(const std::vector<protocol::TopicPartition>& partitions, std::string* why = nullptr,
                       const std::string& group = {}) const;

  // assignmentExact() for every group of `partitions` (group -> its
  // partitions) in one pass over the members; false with *why (naming the
  // group) at the first that is not exact.
  bool assignmentExactAll(const std::map<std::string, std::vector<protocol::TopicPartition>>& partitions,
                          std::string* why = nullptr) const;

  // Called after each successful registration: (member, generation).
  std::function<void(size_t, int64_t)> onRegistered;
  // Called with each successful registration's answer, before
  // onRegistered (client mode: the member list, whole or as a change).
  std::function<void(size_t, const protocol::RegisterConsumerResponse&)> onRegisterAnswer;
  // The RegisterConsumer version the members speak (docs/protocol.md §16).
  int16_t registerVersion = 2;
  // The Heartbeat version of held heartbeats (startHeldBeating): 1, or 2,
  // whose members take the generation of a NONE answer instead of
  // registering again (docs/protocol.md §21).
  int16_t heldVersion = 2;
  // Called with every heartbeat's answer (retries included): the member,
  // the server it was sent to, and the answer (UNKNOWN_SERVER_ERROR with
  // connectionFailed when the connection failed).
  std::function<void(size_t member, uint16_t port, protocol::ErrorCode e, bool connectionFailed)> onHeartbeatAnswer;
  // How a member follows its group to another controller. false (the
  // default): NOT_CONTROLLER or CONTROLLER_NOT_AVAILABLE to a heartbeat
  // sends it to ListGroups and then to RegisterConsumer. true: as the
  // client library does (client/Consumer.cpp), it finds the controller and
  // heartbeats again after a backoff (50 ms, doubling, at most 5 tries),
  // keeping its id, generation and partitions; it registers only when told
  // (REBALANCE_NEEDED, UNKNOWN_CONSUMER) or when the connection fails.
  bool followWithoutRegistering = false;

 private:
  void relocate(size_t i, std::function<void()> done, int attempt = 0);
  void heartbeatTry(size_t i, int attempt, std::function<void(protocol::ErrorCode, uint64_t)> done);
  void encodeHeartbeat(Member& m);
  void beatAt(size_t i, uint64_t dueNs, uint64_t intervalNs, uint64_t epoch);
  // Sends member i's beat due at dueNs now, or after the one still out.
  void beatOrDefer(size_t i, uint64_t dueNs, uint64_t epoch);
  void sendBeat(size_t i, uint64_t dueNs, uint64_t epoch);
  void countError(protocol::ErrorCode e);
  void heldBeat(size_t i, uint64_t epoch);

  Loop& loop_;
  std::vector<uint16_t> servers_;
  size_t connsPerServer_;
  std::map<uint16_t, std::vector<int>> conns_;
  std::vector<Member> members_;
  FleetStats stats_;
  uint64_t beatEpoch_ = 0;
  uint64_t beatIntervalNs_ = 0;
  uint64_t heldWaitNs_ = 0;  // startHeldBeating's interval; 0: version 0 heartbeats
  BeatMeasure measure_;
};

// Blocking helpers over a Loop (they run it until the answer arrives).
std::optional<protocol::Response> call(Loop& loop, uint16_t port, const protocol::Request& request,
                                       uint64_t timeoutNs = 10'000'000'000ull, int16_t version = 0);
protocol::ErrorCode createGroup(Loop& loop, uint16_t port, const std::string& group, int64_t sessionTimeoutMs,
                                std::vector<std::string> topics, protocol::Broker* controller = nullptr,
                                protocol::AssignmentMode mode = protocol::AssignmentMode::SERVER);
std::optional<protocol::GroupInfo> describe(Loop& loop, uint16_t port, const std::string& group);

}  // namespace groupcoord::bench
