#include "bench/KafkaScenario.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "bench/Loop.h"
#include "protocol/kafka/Codec.h"
#include "protocol/kafka/Messages.h"

namespace groupcoord::bench {
namespace {

namespace k = protocol::kafka;
using k::ErrorCode;

// The members speak the newest served version of every API (JoinGroup 5:
// MEMBER_ID_REQUIRED from version 4 on, as librdkafka and the Java client
// ask).
// Kafka's client defaults: session.timeout.ms of the 2.x clients, and
// max.poll.interval.ms, which is the rebalance timeout.
constexpr int32_t kSessionMs = 10000;
constexpr int32_t kRebalanceMs = 300000;
// How long a member waits before it asks again after an answer that says
// "not now" (COORDINATOR_LOAD_IN_PROGRESS and the like).
constexpr uint64_t kRetryNs = 100 * kMs;

// ---- Kafka's consumer protocol ---------------------------------------------
// The subscription a consumer sends in JoinGroup and the assignment its
// leader sends in SyncGroup (version 0 of both, as the "range" assignor
// writes them). The server passes them through untouched; the members read
// their own assignment back.

void put16(std::string& out, int16_t v) {
  out.push_back(static_cast<char>((v >> 8) & 0xff));
  out.push_back(static_cast<char>(v & 0xff));
}

void put32(std::string& out, int32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void putString(std::string& out, const std::string& s) {
  put16(out, static_cast<int16_t>(s.size()));
  out += s;
}

std::string subscription(const std::string& topic) {
  std::string out;
  put16(out, 0);
  put32(out, 1);
  putString(out, topic);
  put32(out, -1);  // no user data
  return out;
}

std::string assignmentBytes(const std::string& topic, const std::vector<int32_t>& partitions) {
  std::string out;
  put16(out, 0);
  put32(out, 1);
  putString(out, topic);
  put32(out, static_cast<int32_t>(partitions.size()));
  for (int32_t p : partitions) put32(out, p);
  put32(out, -1);  // no user data
  return out;
}

// The partitions of an assignment written as above; nullopt when it is not.
std::optional<std::vector<int32_t>> partitionsIn(const std::string& bytes) {
  size_t at = 0;
  auto take = [&](size_t n, int64_t& v) {
    if (bytes.size() - at < n) return false;
    uint32_t u = 0;
    for (size_t i = 0; i < n; ++i) u = (u << 8) | static_cast<uint8_t>(bytes[at + i]);
    v = n == 2 ? static_cast<int16_t>(u) : static_cast<int32_t>(u);
    at += n;
    return true;
  };
  int64_t version = 0, topics = 0, nameLength = 0, count = 0;
  if (!take(2, version) || !take(4, topics) || topics != 1 || !take(2, nameLength) || nameLength < 0 ||
      bytes.size() - at < static_cast<size_t>(nameLength)) {
    return std::nullopt;
  }
  at += static_cast<size_t>(nameLength);
  if (!take(4, count) || count < 0) return std::nullopt;
  std::vector<int32_t> out;
  for (int64_t i = 0; i < count; ++i) {
    int64_t p = 0;
    if (!take(4, p)) return std::nullopt;
    out.push_back(static_cast<int32_t>(p));
  }
  return out;
}

// ---- Requests over a Loop ----------------------------------------------------

// The error of an answer of type T; UNKNOWN_SERVER_ERROR when there is
// none (the connection failed) or it is another API's.
template <class T>
ErrorCode errorIn(const k::Response* r) {
  const T* t = r != nullptr ? std::get_if<T>(r) : nullptr;
  return t != nullptr ? t->error : ErrorCode::UNKNOWN_SERVER_ERROR;
}

// Kafka requests on a Loop's connections: written by the codec, answers
// read at the request's version.
class KafkaWire {
 public:
  // nullptr: the connection failed, or the answer did not decode.
  using Done = std::function<void(const k::Response*)>;

  explicit KafkaWire(Loop& loop) : loop_(loop) {}

  static std::vector<uint8_t> encode(const k::Request& request, int16_t version, int32_t correlationId) {
    std::vector<uint8_t> out;
    k::encodeRequest(k::RequestHeader{0, version, correlationId, "bench"}, request, out);
    return out;
  }

  static k::ApiKey apiOf(const k::Request& request) {
    return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::kApiKey; }, request);
  }

  // Queues a pre-encoded frame of `api` at `version`.
  void sendFrame(int conn, const std::vector<uint8_t>& frame, k::ApiKey api, int16_t version, Done done) {
    loop_.sendRaw(conn, frame, [api, version, done = std::move(done)](bool ok, std::span<const uint8_t> body, uint64_t) {
      if (!ok) return done(nullptr);
      k::DecodedResponse d = k::decodeResponse(api, version, body);
      done(d.ok ? &d.response : nullptr);
    });
  }

  // At the newest served version of its API.
  void send(int conn, const k::Request& request, Done done) {
    const k::ApiKey api = apiOf(request);
    const int16_t version = k::maxVersion(api);
    sendFrame(conn, encode(request, version, ++correlation_), api, version, std::move(done));
  }

  // send(), then the loop runs until the answer: nullopt when the
  // connection failed or the answer did not decode. No answer within the
  // timeout fails the run.
  std::optional<k::Response> call(int conn, const k::Request& request, uint64_t timeoutNs = 30 * kSec) {
    std::optional<k::Response> out;
    bool answered = false;
    send(conn, request, [&](const k::Response* r) {
      answered = true;
      if (r != nullptr) out = *r;
    });
    if (!loop_.runUntil([&] { return answered; }, timeoutNs)) {
      fail(std::string(k::apiName(static_cast<int16_t>(apiOf(request)))) + " went unanswered for " +
           fmt(static_cast<double>(timeoutNs) / kSec) + " s");
    }
    return out;
  }

 private:
  Loop& loop_;
  int32_t correlation_ = 0;
};

// FindCoordinator for `group` until it names a coordinator (for a new group,
// the server its first JoinGroup or OffsetCommit makes it on); fails the run
// after 30 s.
void findCoordinator(Loop& loop, KafkaWire& wire, int conn, const std::string& group) {
  const uint64_t until = nowNs() + 30 * kSec;
  std::string last = "no answer";
  while (nowNs() < until) {
    auto r = wire.call(conn, k::FindCoordinatorRequest{group, 0});
    if (r && std::holds_alternative<k::FindCoordinatorResponse>(*r)) {
      const auto& f = std::get<k::FindCoordinatorResponse>(*r);
      if (f.error == ErrorCode::NONE) return;
      last = std::string(k::errorName(f.error)) + (f.errorMessage ? ": " + *f.errorMessage : std::string());
    }
    loop.runFor(kRetryNs);
  }
  fail("FindCoordinator for " + group + ": " + last);
}

// The group is made by a standalone commit (offset 0 of `topic`'s partition
// 0, as a tool resetting offsets commits), and the controller reads its
// saved generation on the group's first request (answered
// COORDINATOR_LOAD_IN_PROGRESS meanwhile): both done here, the second with
// a heartbeat of no member, before anything is timed, so that the figures
// are those of a group the controller already serves.
void makeGroup(Loop& loop, KafkaWire& wire, int conn, const std::string& group, const std::string& topic) {
  ErrorCode committed = ErrorCode::UNKNOWN_SERVER_ERROR;
  for (int attempt = 0; attempt < 100 && committed != ErrorCode::NONE; ++attempt) {
    k::OffsetCommitRequest c;
    c.groupId = group;
    c.generationId = -1;
    c.topics.push_back({topic, {{0, 0, -1, -1, std::string()}}});
    auto r = wire.call(conn, c);
    if (r && std::holds_alternative<k::OffsetCommitResponse>(*r)) {
      const auto& a = std::get<k::OffsetCommitResponse>(*r);
      if (a.topics.size() == 1 && a.topics[0].partitions.size() == 1) committed = a.topics[0].partitions[0].error;
    }
    if (committed != ErrorCode::NONE) loop.runFor(kRetryNs);
  }
  if (committed != ErrorCode::NONE) {
    fail("a standalone commit did not make Kafka group " + group + ": " + std::string(k::errorName(committed)));
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto r = wire.call(conn, k::HeartbeatRequest{group, -1, "none", std::nullopt});
    if (errorIn<k::HeartbeatResponse>(r ? &*r : nullptr) == ErrorCode::UNKNOWN_MEMBER_ID) return;
    loop.runFor(kRetryNs);
  }
  fail("the controller did not load Kafka group " + group);
}

// ---- Members -------------------------------------------------------------------

struct KafkaMember {
  int conn = -1;
  std::string id;
  int32_t generation = -1;
  bool busy = false;     // its JoinGroup or SyncGroup is out
  bool beatOut = false;  // its heartbeat is out
  bool stable = false;   // holds the SyncGroup answer of `generation`
  bool left = false;
  std::vector<int32_t> partitions;
  uint64_t joinedNs = 0;  // its last JoinGroup answered NONE
  uint64_t stableNs = 0;  // when it took its assignment
  uint64_t noticeNs = 0;  // its last heartbeat answered REBALANCE_IN_PROGRESS
};

// The members of one Kafka group, as consumers run them: JoinGroup (again
// with the id MEMBER_ID_REQUIRED hands out), SyncGroup (the leader with an
// assignment for every member of its JoinGroup answer: the topic's
// partitions dealt round in the answer's order), heartbeats on an absolute
// schedule once they hold an assignment, and JoinGroup again when a
// heartbeat or SyncGroup answers REBALANCE_IN_PROGRESS.
class KafkaGroupMembers {
 public:
  KafkaGroupMembers(Loop& loop, KafkaWire& wire, uint16_t port, std::string group, std::string topic,
                    int32_t partitions)
      : loop_(loop), wire_(wire), port_(port), group_(std::move(group)), topic_(std::move(topic)),
        partitions_(partitions) {
    protocols_.push_back({"range", subscription(topic_)});
  }

  // n members, a connection each.
  void connect(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      KafkaMember m;
      m.conn = loop_.connect(port_);
      if (m.conn < 0) fail("cannot connect to the Kafka port (member " + std::to_string(i) + ")");
      members_.push_back(std::move(m));
    }
  }

  // Every member's first JoinGroup, back to back.
  void joinAll() {
    for (size_t i = 0; i < members_.size(); ++i) join(i);
  }

  // Every member heartbeats every `intervalNs` from now, phases spread
  // evenly over the interval, when it holds an assignment and nothing of
  // its own is out (as a consumer's heartbeat thread does).
  void startBeating(uint64_t intervalNs) {
    const uint64_t epoch = ++beatEpoch_;
    const uint64_t start = nowNs();
    for (size_t i = 0; i < members_.size(); ++i) {
      beatAt(i, start + intervalNs * i / members_.size(), intervalNs, epoch);
    }
  }
  void stopBeating() { ++beatEpoch_; }

  // LeaveGroup for member i, which stays silent from then on.
  void leave(size_t i) {
    KafkaMember& m = members_[i];
    m.left = true;
    m.stable = false;
    wire_.send(m.conn, k::LeaveGroupRequest{group_, m.id}, [this](const k::Response* r) {
      if (const ErrorCode e = errorIn<k::LeaveGroupResponse>(r); e != ErrorCode::NONE) tally(e, "LeaveGroup");
    });
  }

  // Every member still in holds its assignment of one generation, at least
  // `minGeneration`, and together they hold every partition exactly once.
  bool stable(int32_t minGeneration) const {
    int32_t generation = -1;
    std::vector<uint8_t> held(static_cast<size_t>(partitions_), 0);
    size_t total = 0;
    for (const auto& m : members_) {
      if (m.left) continue;
      if (!m.stable || m.generation < minGeneration) return false;
      if (generation >= 0 && m.generation != generation) return false;
      generation = m.generation;
      for (int32_t p : m.partitions) {
        if (p < 0 || p >= partitions_ || held[static_cast<size_t>(p)]++) return false;
        ++total;
      }
    }
    return generation >= 0 && total == static_cast<size_t>(partitions_);
  }

  // Runs the loop until stable(minGeneration) (checked every 2 ms); fails
  // the run past the timeout.
  void waitStable(int32_t minGeneration, uint64_t timeoutNs, const std::string& what) {
    const bool ok = loop_.runUntilEvery(2 * kMs, [&] { return stable(minGeneration); }, timeoutNs);
    if (!ok) {
      size_t waiting = 0;
      for (const auto& m : members_) waiting += !m.left && !m.stable;
      fail(what + ": not stable within " + fmt(static_cast<double>(timeoutNs) / kSec) + " s (" +
           std::to_string(waiting) + " members without an assignment; " + errorsText() + ")");
    }
  }

  // The latest of the members' times still in: when the last took its
  // assignment, the last JoinGroup answer, the last REBALANCE_IN_PROGRESS.
  uint64_t latest(uint64_t KafkaMember::*field) const {
    uint64_t out = 0;
    for (const auto& m : members_) {
      if (!m.left) out = std::max(out, m.*field);
    }
    return out;
  }

  int32_t generation() const {
    for (const auto& m : members_) {
      if (!m.left) return m.generation;
    }
    return -1;
  }

  // A member still in that is not the leader (the last such).
  size_t follower() const {
    for (size_t i = members_.size(); i-- > 0;) {
      if (!members_[i].left && members_[i].id != leader_) return i;
    }
    fail("no member but the leader remains");
  }

  // Every member still in leaves, and the loop runs until all are answered;
  // the connections close.
  void leaveAll() {
    stopBeating();
    for (size_t i = 0; i < members_.size(); ++i) {
      if (!members_[i].left) leave(i);
    }
    loop_.runUntil(
        [&] { return std::all_of(members_.begin(), members_.end(), [&](const KafkaMember& m) {
                return loop_.pendingOn(m.conn) == 0; }); },
        30 * kSec);
    for (auto& m : members_) loop_.close(m.conn);
  }

  std::string errorsText() const {
    std::string out;
    for (const auto& [what, n] : errors_) out += (out.empty() ? "" : ", ") + what + " " + std::to_string(n);
    return out.empty() ? "no unexpected answer" : out;
  }
  const std::map<std::string, uint64_t>& errors() const { return errors_; }
  uint64_t memberIdRequired() const { return memberIdRequired_; }
  uint64_t rebalanceNotices() const { return rebalanceNotices_; }
  uint64_t joins() const { return joins_; }
  size_t size() const { return members_.size(); }

 private:
  void tally(ErrorCode e, const std::string& api) { ++errors_[api + " " + std::string(k::errorName(e))]; }

  // After an answer other than NONE: JoinGroup again at once
  // (REBALANCE_IN_PROGRESS; ILLEGAL_GENERATION; UNKNOWN_MEMBER_ID, as a new
  // member), or after a pause (anything else, counted).
  void rejoin(size_t i, ErrorCode e, const std::string& api) {
    if (e == ErrorCode::REBALANCE_IN_PROGRESS) return join(i);
    tally(e, api);
    if (e == ErrorCode::UNKNOWN_MEMBER_ID) members_[i].id.clear();
    if (e == ErrorCode::UNKNOWN_MEMBER_ID || e == ErrorCode::ILLEGAL_GENERATION) return join(i);
    loop_.after(kRetryNs, [this, i] { join(i); });
  }

  void join(size_t i) {
    KafkaMember& m = members_[i];
    if (m.left) return;
    m.busy = true;
    m.stable = false;
    ++joins_;
    k::JoinGroupRequest req;
    req.groupId = group_;
    req.sessionTimeoutMs = kSessionMs;
    req.rebalanceTimeoutMs = kRebalanceMs;
    req.memberId = m.id;
    req.protocolType = "consumer";
    req.protocols = protocols_;
    wire_.send(m.conn, req, [this, i](const k::Response* r) { onJoin(i, r); });
  }

  // Member i's JoinGroup or SyncGroup answered: nullptr when the member
  // has left meanwhile. A connection lost fails the run.
  template <class T>
  const T* answerOf(size_t i, const k::Response* r) {
    members_[i].busy = false;
    if (members_[i].left) return nullptr;
    const T* t = r != nullptr ? std::get_if<T>(r) : nullptr;
    if (t == nullptr) fail(std::string(T::kName) + " of member " + std::to_string(i) + " went unanswered");
    return t;
  }

  void onJoin(size_t i, const k::Response* r) {
    const auto* j = answerOf<k::JoinGroupResponse>(i, r);
    if (j == nullptr) return;
    KafkaMember& m = members_[i];
    if (j->error == ErrorCode::MEMBER_ID_REQUIRED) {
      ++memberIdRequired_;
      m.id = j->memberId;
      return join(i);
    }
    if (j->error != ErrorCode::NONE) return rejoin(i, j->error, "JoinGroup");
    m.generation = j->generationId;
    m.joinedNs = nowNs();
    leader_ = j->leader;
    std::vector<k::SyncGroupRequest::Assignment> assignments;
    if (j->leader == m.id) {
      // The leader's assignor: partition p to the (p mod n)-th member of
      // the answer.
      std::vector<std::vector<int32_t>> dealt(j->members.size());
      for (int32_t p = 0; p < partitions_ && !dealt.empty(); ++p) dealt[static_cast<size_t>(p) % dealt.size()].push_back(p);
      for (size_t idx = 0; idx < j->members.size(); ++idx) {
        assignments.push_back({j->members[idx].memberId, assignmentBytes(topic_, dealt[idx])});
      }
    }
    sync(i, std::move(assignments));
  }

  void sync(size_t i, std::vector<k::SyncGroupRequest::Assignment> assignments) {
    KafkaMember& m = members_[i];
    m.busy = true;
    k::SyncGroupRequest req;
    req.groupId = group_;
    req.generationId = m.generation;
    req.memberId = m.id;
    req.assignments = std::move(assignments);
    wire_.send(m.conn, req, [this, i](const k::Response* r) { onSync(i, r); });
  }

  void onSync(size_t i, const k::Response* r) {
    const auto* s = answerOf<k::SyncGroupResponse>(i, r);
    if (s == nullptr) return;
    KafkaMember& m = members_[i];
    if (s->error != ErrorCode::NONE) return rejoin(i, s->error, "SyncGroup");
    auto partitions = partitionsIn(s->assignment);
    if (!partitions) fail("member " + std::to_string(i) + " got an assignment it cannot read");
    m.partitions = std::move(*partitions);
    m.stable = true;
    m.stableNs = nowNs();
  }

  void beatAt(size_t i, uint64_t dueNs, uint64_t intervalNs, uint64_t epoch) {
    const uint64_t now = nowNs();
    loop_.after(dueNs > now ? dueNs - now : 0, [this, i, dueNs, intervalNs, epoch] {
      if (epoch != beatEpoch_) return;
      beat(i);
      beatAt(i, dueNs + intervalNs, intervalNs, epoch);
    });
  }

  void beat(size_t i) {
    KafkaMember& m = members_[i];
    if (m.left || m.busy || m.beatOut || !m.stable) return;
    m.beatOut = true;
    wire_.send(m.conn, k::HeartbeatRequest{group_, m.generation, m.id, std::nullopt},
               [this, i](const k::Response* r) { onBeat(i, r); });
  }

  void onBeat(size_t i, const k::Response* r) {
    KafkaMember& m = members_[i];
    m.beatOut = false;
    if (m.left || m.busy) return;
    const ErrorCode e = errorIn<k::HeartbeatResponse>(r);
    if (e == ErrorCode::NONE) return;
    if (e == ErrorCode::REBALANCE_IN_PROGRESS) {
      ++rebalanceNotices_;
      m.noticeNs = nowNs();
    }
    rejoin(i, e, "Heartbeat");
  }

  Loop& loop_;
  KafkaWire& wire_;
  const uint16_t port_;
  const std::string group_;
  const std::string topic_;
  const int32_t partitions_;
  std::vector<k::JoinGroupRequest::Protocol> protocols_;
  std::vector<KafkaMember> members_;
  std::string leader_;
  uint64_t beatEpoch_ = 0;
  std::map<std::string, uint64_t> errors_;
  uint64_t memberIdRequired_ = 0;
  uint64_t rebalanceNotices_ = 0;
  uint64_t joins_ = 0;
};

// A fresh topic of `partitions` in ZooKeeper and a fresh Kafka group made
// by a standalone commit, checked through the port's Metadata.
std::pair<std::string, std::string> freshGroup(const Args& args, Loop& loop, KafkaWire& wire, uint16_t port,
                                               const std::string& prefix, int32_t partitions) {
  const std::string topic = prefix + "-t-" + stamp();
  const std::string group = prefix + "-g-" + stamp();
  createTopic(EnsembleProbe{static_cast<int>(args.num("zk-base-port", 23800))},
              args.get("topics-path", "/brokers/topics"), topic, partitions);
  const int conn = loop.connect(port);
  if (conn < 0) fail("cannot connect to the Kafka port " + std::to_string(port));
  findCoordinator(loop, wire, conn, group);
  makeGroup(loop, wire, conn, group, topic);
  // The topic watch may take a moment to show a new topic.
  int32_t listed = -1;
  for (int attempt = 0; attempt < 50 && listed != partitions; ++attempt) {
    k::MetadataRequest req;
    req.topics = std::vector<k::MetadataRequest::Topic>{{topic}};
    auto r = wire.call(conn, req);
    if (r && std::holds_alternative<k::MetadataResponse>(*r)) {
      for (const auto& t : std::get<k::MetadataResponse>(*r).topics) {
        if (t.name == topic && t.error == ErrorCode::NONE) listed = static_cast<int32_t>(t.partitions.size());
      }
    }
    if (listed != partitions) loop.runFor(kRetryNs);
  }
  if (listed != partitions) {
    fail("the Kafka port's Metadata lists " + std::to_string(listed) + " partitions of " + topic + ", not " +
         std::to_string(partitions));
  }
  loop.close(conn);
  return {group, topic};
}

std::string ms(uint64_t ns) { return count(static_cast<double>(ns) / kMs); }

// "median (min .. max)" of durations, in ms.
std::string spreadMs(std::vector<uint64_t> v) {
  if (v.empty()) return "-";
  std::sort(v.begin(), v.end());
  if (v.size() == 1) return ms(v[0]);
  return ms(v[(v.size() - 1) / 2]) + " (" + ms(v.front()) + " .. " + ms(v.back()) + ")";
}

}  // namespace

double kafkaHeartbeatInstructions(uint16_t kafkaPort, int pid, const std::string& base, size_t n, int depth,
                                  uint64_t* notNone) {
  Loop loop;
  KafkaWire wire(loop);
  const std::string group = "ins-kafka-" + stamp();
  const int conn = loop.connect(kafkaPort);
  if (conn < 0) fail("cannot connect to the Kafka port " + std::to_string(kafkaPort));
  findCoordinator(loop, wire, conn, group);
  makeGroup(loop, wire, conn, group, group + "-t");
  // One member: MEMBER_ID_REQUIRED, JoinGroup again, SyncGroup as leader.
  k::JoinGroupRequest join;
  join.groupId = group;
  join.sessionTimeoutMs = 60000;  // callgrind slows the server some fiftyfold
  join.rebalanceTimeoutMs = 60000;
  join.protocolType = "consumer";
  join.protocols = {{"range", subscription("none")}};
  k::JoinGroupResponse joined;
  const uint64_t until = nowNs() + 120 * kSec;
  while (nowNs() < until) {
    auto r = wire.call(conn, join, 120 * kSec);
    const auto* j = r ? std::get_if<k::JoinGroupResponse>(&*r) : nullptr;
    if (j == nullptr) fail("JoinGroup went unanswered");
    if (j->error == ErrorCode::NONE) {
      joined = *j;
      break;
    }
    if (j->error == ErrorCode::MEMBER_ID_REQUIRED) {
      join.memberId = j->memberId;
    } else {
      loop.runFor(kRetryNs);
    }
  }
  if (joined.leader.empty() || joined.leader != joined.memberId) fail("the Kafka member did not lead its group");
  k::SyncGroupRequest sync{group, joined.generationId, joined.memberId, std::nullopt,
                           {{joined.memberId, assignmentBytes("none", {})}}};
  auto synced = wire.call(conn, sync, 120 * kSec);
  if (errorIn<k::SyncGroupResponse>(synced ? &*synced : nullptr) != ErrorCode::NONE) {
    fail("SyncGroup of the Kafka member failed");
  }

  const int16_t version = k::maxVersion(k::ApiKey::Heartbeat);
  const std::vector<uint8_t> frame =
      KafkaWire::encode(k::HeartbeatRequest{group, joined.generationId, joined.memberId, std::nullopt}, version, 7);
  *notNone = 0;
  auto drive = [&](size_t count) {
    auto send = [&](const std::function<void()>& answered) {
      wire.sendFrame(conn, frame, k::ApiKey::Heartbeat, version, [&](const k::Response* r) {
        if (errorIn<k::HeartbeatResponse>(r) != ErrorCode::NONE) ++*notNone;
        answered();
      });
    };
    if (!loop.pipelined(count, depth, send, 600 * kSec)) fail("Kafka heartbeats went unanswered");
  };
  const double per = perRequestInstructions(pid, base, n, drive);
  wire.call(conn, k::LeaveGroupRequest{group, joined.memberId}, 60 * kSec);
  loop.close(conn);
  return per;
}

void kafkaScenario(const Args& args) {
  const uint16_t port = static_cast<uint16_t>(args.num("kafka-port", 0));
  if (port == 0) fail("kafka needs --kafka-port (groupcoordd's kafka.listen.port)");
  const size_t members = static_cast<size_t>(args.num("members", 1000));
  const long delayMs = args.num("delay-ms", 3000);
  const long formIntervalMs = args.num("interval-ms", 1000);
  const auto leaveSizes = args.list("leave-sizes");
  const auto intervals = args.list("intervals-ms");
  const int rounds = static_cast<int>(args.num("rounds", 3));
  const std::string label = "10 kafka";

  // 1. N members form one group: from the first JoinGroup sent to every
  // member holding its SyncGroup answer, one partition each.
  if (members > 0) {
    // A loop of its own for each group: the members' timers and callbacks
    // end with it.
    Loop loop;
    KafkaWire wire(loop);
    const int32_t partitions = static_cast<int32_t>(members);
    auto [group, topic] = freshGroup(args, loop, wire, port, "kform", partitions);
    KafkaGroupMembers g(loop, wire, port, group, topic, partitions);
    g.connect(members);
    log("kafka: %zu members join %s (initial rebalance delay %ld ms)", members, group.c_str(), delayMs);
    const uint64_t t0 = nowNs();
    g.joinAll();
    g.startBeating(static_cast<uint64_t>(formIntervalMs) * kMs);
    g.waitStable(0, 120 * kSec, "forming the group");
    const uint64_t took = g.latest(&KafkaMember::stableNs) - t0;
    const uint64_t barrier = g.latest(&KafkaMember::joinedNs) - t0;
    const std::string shape = count(static_cast<double>(members)) + " members, " + count(partitions) +
                              " partitions, a connection each, heartbeats every " + std::to_string(formIntervalMs) +
                              " ms, kafka.group.initial.rebalance.delay.ms " + std::to_string(delayMs);
    row(label, "form one group (" + shape + "): first JoinGroup sent to every member holding its SyncGroup answer (ms)",
        ms(took));
    row(label, "form one group (" + shape + "): first JoinGroup sent to the last JoinGroup answer of the final "
                   "generation (ms); generations; JoinGroups sent (MEMBER_ID_REQUIRED); REBALANCE_IN_PROGRESS heartbeats",
        ms(barrier) + "; " + std::to_string(g.generation()) + "; " + count(static_cast<double>(g.joins())) + " (" +
            count(static_cast<double>(g.memberIdRequired())) + "); " +
            count(static_cast<double>(g.rebalanceNotices())));
    if (!g.errors().empty()) row(label, "form one group (" + shape + "): other answers", g.errorsText());
    g.leaveAll();
  }

  // 2. One member of a stable group leaves; the others hear it from their
  // next heartbeat, join again, the leader assigns, they sync.
  std::mt19937_64 rng(20261207);
  for (long size : leaveSizes) {
    for (long intervalMs : intervals) {
      const uint64_t interval = static_cast<uint64_t>(intervalMs) * kMs;
      const int32_t partitions = 1000;
      Loop loop;
      KafkaWire wire(loop);
      auto [group, topic] = freshGroup(args, loop, wire, port, "kleave", partitions);
      KafkaGroupMembers g(loop, wire, port, group, topic, partitions);
      g.connect(static_cast<size_t>(size));
      log("kafka: %ld members in %s, heartbeats every %ld ms: %d leave(s)", size, group.c_str(), intervalMs, rounds);
      g.joinAll();
      g.startBeating(interval);
      g.waitStable(0, 120 * kSec, "forming the group");
      std::vector<uint64_t> total, learned, after;
      for (int round = 0; round < rounds; ++round) {
        // Somewhere within the heartbeat schedule, not in step with it.
        loop.runFor(interval / 2 + rng() % interval);
        const int32_t before = g.generation();
        const size_t who = g.follower();
        const uint64_t t0 = nowNs();
        g.leave(who);
        g.waitStable(before + 1, 60 * kSec + 4 * interval, "resuming after a leave");
        const uint64_t done = g.latest(&KafkaMember::stableNs);
        const uint64_t notice = g.latest(&KafkaMember::noticeNs);
        total.push_back(done - t0);
        learned.push_back(notice > t0 ? notice - t0 : 0);
        after.push_back(notice > t0 ? done - notice : done - t0);
      }
      const std::string shape = count(static_cast<double>(size)) + " members, heartbeats every " +
                                count(static_cast<double>(intervalMs)) + " ms, " + std::to_string(rounds) +
                                " leave(s)";
      row(label,
          "resume after one leaves (" + shape + "): LeaveGroup sent to every remaining member holding its new "
          "assignment (ms, median (min .. max))",
          spreadMs(total), "<= " + count(static_cast<double>(intervalMs)) + " + the rejoin and sync round trips");
      row(label,
          "resume after one leaves (" + shape + "): LeaveGroup sent to the last member told REBALANCE_IN_PROGRESS "
          "by its heartbeat / from then to every assignment held (ms, median (min .. max))",
          spreadMs(learned) + " / " + spreadMs(after), "<= " + count(static_cast<double>(intervalMs)) + " / the round trips");
      if (!g.errors().empty()) row(label, "resume after one leaves (" + shape + "): other answers", g.errorsText());
      g.leaveAll();
    }
  }
}

}  // namespace groupcoord::bench
