// One groupcoordd against the live ensemble, 100 well-behaved members of a
// group heartbeating and committing, and at the same time every kind of bad
// client docs/protocol.md (section 8) describes:
//
// - 150 connections sending each malformed case, some in lock-step, some
//   pipelined, then a frame that cannot be trusted (too small, too large,
//   negative); 50 sending random garbage, then half-closing;
// - slowloris: 30 connections that send part of a frame one byte at a time
//   and stop, 10 that trickle a whole frame one byte at a time, too slowly
//   for it to arrive whole within the idle timeout;
// - one client that pipelines large answers and never reads them;
// - 300 connections opened at once past the server's connection limit.
//
// The members must see nothing of it (every heartbeat NONE at the same
// generation, every commit acknowledged and fetched back equal, nobody
// evicted), the server's RSS stays under a stated bound, and each bad
// client gets what the contract says. Figures go to [figure] lines. Time is
// asserted only against the design's bounds (the idle timeout) plus the
// scheduling allowance (tests/README.md, "Time in tests"); how much the
// members got done in the window is a figure, and the window lasts until
// they did enough for the checks to mean something.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/Layout.h"
#include "client/Connection.h"
#include "protocol/Codec.h"
#include "protocol/TestBytes.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using client::Connection;
using client::IoStatus;
using protocol::ApiKey;
using protocol::ErrorCode;
using protocol::testing::Bytes;
using Clock = std::chrono::steady_clock;

constexpr int kMembers = 100;
constexpr int kPartitions = 100;
constexpr int kMalformedClients = 150;
constexpr int kGarbageClients = 50;
constexpr int kStallers = 30;
constexpr int kTricklers = 10;
constexpr int kFlood = 300;
constexpr int kMaxConnections = 400;
constexpr int kIdleTimeoutMs = 1000;
constexpr std::chrono::milliseconds kIdleTimeout{kIdleTimeoutMs};
constexpr int kMaxFrameBytes = 65536;
constexpr int kMaxOutputBytes = 65536;
constexpr auto kWindow = 15s;  // how long the members keep going under attack (at least)
// The rounds each member driver completes at least, however slow the
// machine (the window lasts until then): 10 rounds are 10 heartbeats and 3
// commits per member.
constexpr int kMinRounds = 10;
// The server's ZooKeeper session: groupcoordd's default, the longest the
// test ensemble grants (20 ticks of 500 ms). Nothing here is about the
// session; a long one keeps the stall rule (a server that did not run for a
// third of it answers CONTROLLER_NOT_AVAILABLE, docs/design.md) from
// answering heartbeats for a server that a busy machine held back a moment.
constexpr std::chrono::milliseconds kZkSessionTimeout{10000};
// The members' group's session timeout: a driver held back that long would
// see its members evicted, a margin of seconds over its 300 ms pace.
constexpr int64_t kGroupSessionTimeoutMs = 10000;
// group.join.window.max.ms, the default: the longest a join waits in the
// group's batch.
constexpr std::chrono::milliseconds kJoinWindowMax{3000};
// 100 members joining one group settle within a join window and a round or
// two of registrations; this is room for that, polled.
constexpr auto kSettle = 40s;
// The stated bound: the attack may grow the server's RSS by at most this.
constexpr long kRssGrowthBoundKiB = 64 * 1024;

// How long a call is waited for: an answer, even one that needs ZooKeeper,
// comes within the server's ZooKeeper session (past it the server answers
// CONTROLLER_NOT_AVAILABLE), plus the scheduling allowance.
std::chrono::milliseconds answerWait() { return designBound(kZkSessionTimeout); }

// A raw blocking TCP connection to 127.0.0.1:port, or -1.
int rawConnect(uint16_t port, int receiveBuffer = 0) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (receiveBuffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, sizeof(receiveBuffer));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Waits up to `wait` for the peer to close fd: true on EOF or reset.
// Frames that arrive first are counted in *frames (when given).
bool waitClosed(int fd, std::chrono::milliseconds wait, int* frames = nullptr) {
  const auto deadline = Clock::now() + wait;
  std::vector<uint8_t> buf(65536);
  std::vector<uint8_t> in;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (::poll(&p, 1, static_cast<int>(std::max<long>(left, 1))) <= 0) continue;
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return true;  // reset
    }
    if (frames) {
      in.insert(in.end(), buf.begin(), buf.begin() + n);
      while (in.size() >= 4) {
        int32_t size = -1;
        const auto st = protocol::peekFrame(in, INT32_MAX, 10, &size);
        if (st != protocol::FrameStatus::Ready) break;
        ++*frames;
        in.erase(in.begin(), in.begin() + 4 + size);
      }
    }
  }
  return false;
}

// ---- The members -------------------------------------------------------------

struct Member {
  Connection conn;
  std::string id;
  int64_t generation = -1;
  std::vector<protocol::TopicPartition> held;
};

struct MemberStats {
  std::atomic<int> heartbeats{0};
  std::atomic<int> commits{0};
  std::atomic<int> errors{0};
  std::atomic<long> maxLatencyUs{0};
  std::mutex mu;
  std::vector<std::string> firstErrors;
  std::map<std::pair<std::string, int32_t>, int64_t> acked;  // last acknowledged offset per partition

  void error(std::string what) {
    ++errors;
    std::lock_guard lock(mu);
    if (firstErrors.size() < 10) firstErrors.push_back(std::move(what));
  }
  void latency(Clock::duration d) {
    const long us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    long seen = maxLatencyUs.load();
    while (us > seen && !maxLatencyUs.compare_exchange_weak(seen, us)) {
    }
  }
};

// ---- Malformed requests ------------------------------------------------------------

struct Case {
  std::string name;
  std::vector<uint8_t> frame;
  ApiKey api;                // what the answer is decoded as
  bool errorOnly;            // an error-only answer is due
  ErrorCode expected;        // NONE: any error but NONE is right
};

Bytes hdr(int key, int64_t corr, int version = 0) { return Bytes().requestHeader(key, version, corr, "hostile"); }

// Every malformed input of docs/protocol.md section 8 whose frame boundary is
// sound (the connection stays open), and well-formed requests that a member's
// group must shrug off. Correlation ids start at `corr`.
std::vector<Case> malformedCases(const std::string& group, const std::string& topic, int64_t generation, int64_t corr) {
  std::vector<Case> c;
  auto add = [&](std::string name, const Bytes& b, ApiKey api, bool errorOnly, ErrorCode e) {
    c.push_back({std::move(name), b.frame(), api, errorOnly, e});
  };
  add("unknown ApiKey", hdr(42, corr++).int8(0x99), ApiKey::Heartbeat, true, ErrorCode::UNKNOWN_API);
  add("unsupported version", hdr(0, corr++, 3).str("g").str("c").int64(1), ApiKey::Heartbeat, true,
      ErrorCode::UNSUPPORTED_VERSION);
  add("ClientId of 256 bytes", Bytes().requestHeader(2, 0, corr++, std::string(256, 'c')).str("g"),
      ApiKey::DeleteGroup, true, ErrorCode::INVALID_REQUEST);
  add("ClientId length -2", Bytes().int16(2).int16(0).int64(corr++).int16(-2).str("g"), ApiKey::DeleteGroup, true,
      ErrorCode::INVALID_REQUEST);
  add("field past the end", hdr(0, corr++).str(group).str("m").int32(5), ApiKey::Heartbeat, true,
      ErrorCode::INVALID_REQUEST);
  add("trailing bytes", hdr(2, corr++).str("g").int8(0), ApiKey::DeleteGroup, true, ErrorCode::INVALID_REQUEST);
  add("string length -2", hdr(2, corr++).int16(-2).raw(std::vector<uint8_t>(8, 'x')), ApiKey::DeleteGroup, true,
      ErrorCode::INVALID_REQUEST);
  add("string beyond the frame", hdr(2, corr++).int16(300).str("abc"), ApiKey::DeleteGroup, true,
      ErrorCode::INVALID_REQUEST);
  add("null group", hdr(0, corr++).nullStr().str("c").int64(1), ApiKey::Heartbeat, true, ErrorCode::INVALID_REQUEST);
  add("count -2", hdr(4, corr++).count(-2), ApiKey::ListGroups, true, ErrorCode::INVALID_REQUEST);
  add("count 2^31-1 of names", hdr(4, corr++).count(0x7fffffff).str("a"), ApiKey::ListGroups, true,
      ErrorCode::INVALID_REQUEST);
  add("count 2^31-1 of offsets", hdr(6, corr++).str(group).str("m").int64(generation).count(0x7fffffff),
      ApiKey::CommitOffsets, true, ErrorCode::INVALID_REQUEST);
  add("bool 2", hdr(1, corr++).str("g").int64(10000).count(0).int8(2), ApiKey::CreateGroup, true,
      ErrorCode::INVALID_REQUEST);
  add("group ../x", hdr(0, corr++).str("../x").str("c").int64(1), ApiKey::Heartbeat, false,
      ErrorCode::INVALID_GROUP_NAME);
  add("consumer a/b", hdr(0, corr++).str(group).str("a/b").int64(generation), ApiKey::Heartbeat, false,
      ErrorCode::INVALID_CONSUMER_ID);
  add("topic with a NUL", hdr(1, corr++).str("g").int64(10000).count(1).str(std::string("t\0x", 3)).boolean(false),
      ApiKey::CreateGroup, false, ErrorCode::INVALID_GROUP_NAME);
  add("ListGroups naming 10,001 groups",
      [&] {
        Bytes b = hdr(4, corr++);
        b.count(10001);
        for (int i = 0; i < 10001; ++i) b.str("g");
        return b;
      }(),
      ApiKey::ListGroups, false, ErrorCode::INVALID_REQUEST);
  // Well-formed, aimed at the members' group by a stranger.
  add("intruder heartbeat", hdr(0, corr++).str(group).str("intruder").int64(generation), ApiKey::Heartbeat, false,
      ErrorCode::NONE);
  add("intruder commit", hdr(6, corr++).str(group).str("intruder").int64(generation).count(1).str(topic).int32(0).int64(
                             424242),
      ApiKey::CommitOffsets, false, ErrorCode::NONE);
  add("intruder leave", hdr(5, corr++).str(group).str("intruder"), ApiKey::LeaveGroup, false, ErrorCode::NONE);
  return c;
}

// Frames after which the server closes the connection.
std::vector<uint8_t> untrustedFrame(int which) {
  switch (which % 4) {
    case 0: return Bytes().int32(5).raw(std::vector<uint8_t>(5, 0)).body();            // Size below 14
    case 1: return Bytes().int32(0x7fffffff).raw(std::vector<uint8_t>(16, 0)).body();  // far too large
    case 2: return Bytes().int32(-1).raw(std::vector<uint8_t>(16, 0)).body();          // negative
    default: return Bytes().int32(kMaxFrameBytes + 1).raw(std::vector<uint8_t>(16, 0)).body();  // just too large
  }
}

// The answer to `c` in `body` is what the contract says.
bool answerIsRight(const Case& c, int64_t corr, const std::vector<uint8_t>& body, std::string* why) {
  const protocol::DecodedResponse d = protocol::decodeResponse(c.api, body);
  if (!d.ok) return *why = "undecodable answer: " + d.detail, false;
  if (d.header.correlationId != corr) return *why = "correlation id " + std::to_string(d.header.correlationId), false;
  const bool isErrorOnly = std::holds_alternative<protocol::ErrorOnlyResponse>(d.response);
  if (c.errorOnly != isErrorOnly && c.api != ApiKey::LeaveGroup) {
    return *why = isErrorOnly ? "error-only answer" : "full answer", false;
  }
  const ErrorCode e = protocol::responseError(d.response);
  if (c.api == ApiKey::CommitOffsets && c.expected == ErrorCode::NONE && e == ErrorCode::NONE) {
    // Refused per partition is as good as refused as a whole.
    const auto& r = std::get<protocol::CommitOffsetsResponse>(d.response);
    for (auto& pe : r.results) {
      if (pe.error == ErrorCode::NONE) return *why = "the intruder's commit was accepted", false;
    }
    return !r.results.empty() || (*why = "NONE with no results", false);
  }
  if (c.expected == ErrorCode::NONE) return e != ErrorCode::NONE || (*why = "NONE", false);
  return e == c.expected || (*why = std::string(protocol::errorName(e)), false);
}

struct BadStats {
  std::atomic<int> answeredRight{0}, answeredWrong{0}, closedAfterUntrusted{0}, notClosedAfterUntrusted{0};
  std::atomic<int> garbageClosed{0}, garbageNotClosed{0}, garbageFrames{0};
  std::atomic<int> stallersClosed{0}, stallersNotClosed{0};
  std::atomic<long> stallerCloseMaxMs{0};
  std::atomic<long> tricklerCloseMaxMs{0};
  std::atomic<int> tricklersCut{0}, tricklersNotCut{0};
  std::atomic<int> floodRefused{0}, floodAccepted{0}, floodConnectFailed{0};
  std::atomic<int> connectFailed{0};
  std::mutex mu;
  std::vector<std::string> firstProblems;
  void problem(std::string what) {
    std::lock_guard lock(mu);
    if (firstProblems.size() < 15) firstProblems.push_back(std::move(what));
  }
};

class HostileLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    raiseOpenFileLimit();
    root_ = "/" + uniqueName("hostile");
    topicsPath_ = root_ + "-topics";
    zk::SessionConfig zc;
    zc.connect = zkConnect();
    zk_ = std::make_unique<zk::Session>(zc);
    ASSERT_EQ(zk_->start(), zk::Error::Ok);
    ASSERT_EQ(zk_->waitConnected(designBound(zc.sessionTimeout)), zk::Error::Ok);
    ASSERT_EQ(zk_->ensurePathSync(topicsPath_), zk::Error::Ok);
    ASSERT_EQ(
        zk_->createSync(topicsPath_ + "/" + topic_, layout::encodeTopic(kPartitions), zk::CreateMode::Persistent).error,
        zk::Error::Ok);
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=1", "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_,
        "--zk-session-timeout-ms=" + std::to_string(kZkSessionTimeout.count()),
        "--http-port=-1", "--max-connections=" + std::to_string(kMaxConnections),
        "--idle-timeout-ms=" + std::to_string(kIdleTimeoutMs),
        "--max-frame-bytes=" + std::to_string(kMaxFrameBytes),
        "--max-output-buffer-bytes=" + std::to_string(kMaxOutputBytes)});
    ASSERT_TRUE(server_->start());
    port_ = server_->port();
  }

  template <typename Resp>
  std::optional<Resp> call(Connection& c, const protocol::Request& r, std::chrono::milliseconds wait = answerWait()) {
    auto d = c.call(r, wait);
    if (!d.ok) return std::nullopt;
    if (auto* typed = std::get_if<Resp>(&d.response)) return *typed;
    return std::nullopt;
  }

  // Heartbeats every member (pipelined: all sent, then all read) and
  // registers again those told to; true once every heartbeat answered NONE
  // at one generation with every partition held.
  bool settleRound(std::vector<Member>& members) {
    std::vector<int64_t> sent(members.size(), -1);
    for (size_t i = 0; i < members.size(); ++i) {
      sent[i] = members[i].conn.send(protocol::HeartbeatRequest{group_, members[i].id, members[i].generation});
    }
    std::vector<size_t> again;
    bool allNone = true;
    for (size_t i = 0; i < members.size(); ++i) {
      auto d = members[i].conn.receive(ApiKey::Heartbeat, answerWait());
      auto* hb = d.ok ? std::get_if<protocol::HeartbeatResponse>(&d.response) : nullptr;
      if (!hb || d.header.correlationId != sent[i]) {
        allNone = false;
        continue;
      }
      if (hb->error != ErrorCode::NONE) {
        allNone = false;
        again.push_back(i);
      }
    }
    for (size_t i : again) {
      auto r = call<protocol::RegisterConsumerResponse>(
          members[i].conn, protocol::RegisterConsumerRequest{group_, members[i].id, members[i].held});
      if (!r || r->error != ErrorCode::NONE) continue;
      members[i].generation = r->generation;
      members[i].held.clear();
      for (auto& p : r->partitions) members[i].held.push_back({p.topic, p.partition});
    }
    if (!allNone) return false;
    size_t held = 0;
    for (auto& m : members) {
      held += m.held.size();
      if (m.generation != members[0].generation) return false;
    }
    return held == static_cast<size_t>(kPartitions);
  }

  std::string root_;
  std::string topicsPath_;
  std::string group_ = "hostile-load";
  std::string topic_ = "load";
  std::unique_ptr<zk::Session> zk_;
  std::unique_ptr<ServerProcess> server_;
  uint16_t port_ = 0;
};

TEST_F(HostileLoadTest, MembersSeeNothingOfBadClientsAndEachBadClientGetsItsAnswer) {
  // ---- 100 members, settled at one generation ------------------------------------
  {
    Connection admin;
    ASSERT_TRUE(admin.connect("127.0.0.1", port_, answerWait()));
    auto created = call<protocol::CreateGroupResponse>(
        admin, protocol::CreateGroupRequest{group_, kGroupSessionTimeoutMs, {topic_}, false});
    ASSERT_TRUE(created.has_value());
    ASSERT_EQ(created->error, ErrorCode::NONE);
  }
  std::vector<Member> members(kMembers);
  for (int i = 0; i < kMembers; ++i) {
    members[i].conn.setClientId("member-" + std::to_string(i));
    ASSERT_TRUE(members[i].conn.connect("127.0.0.1", port_, answerWait())) << members[i].conn.lastError();
  }
  const auto joinStart = Clock::now();
  std::vector<int64_t> joinCorr(kMembers);
  for (int i = 0; i < kMembers; ++i) members[i].conn.send(protocol::RegisterConsumerRequest{group_, "", {}});
  for (int i = 0; i < kMembers; ++i) {
    // A join waits in the batch (the join window) and then for ZooKeeper.
    auto d = members[i].conn.receive(ApiKey::RegisterConsumer, designBound(kJoinWindowMax + kZkSessionTimeout));
    ASSERT_TRUE(d.ok) << "member " << i << ": " << members[i].conn.lastError();
    auto& r = std::get<protocol::RegisterConsumerResponse>(d.response);
    ASSERT_EQ(r.error, ErrorCode::NONE) << "member " << i;
    members[i].id = r.consumerId;
    members[i].generation = r.generation;
    for (auto& p : r.partitions) members[i].held.push_back({p.topic, p.partition});
  }
  // Settled: every heartbeat NONE at one generation, every partition held,
  // and still so a second later (a registration batch or a topic watch may
  // still move the generation right after the first quiet round). The time it
  // took is a figure.
  bool settled = false;
  while (!settled && Clock::now() - joinStart < designBound(kSettle)) {
    if (!settleRound(members)) {
      std::this_thread::sleep_for(50ms);
      continue;
    }
    const int64_t quiet = members[0].generation;
    std::this_thread::sleep_for(1s);
    settled = settleRound(members) && members[0].generation == quiet;
  }
  ASSERT_TRUE(settled) << "the 100 members did not settle";
  const int64_t generation = members[0].generation;
  std::set<std::string> ids;
  for (auto& m : members) ids.insert(m.id);
  std::printf("[figure] 100 members settled at generation %lld in %lld ms\n", static_cast<long long>(generation),
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - joinStart).count()));

  const pid_t pid = server_->pid();
  const long rssBefore = rssKiB(pid);
  ASSERT_GT(rssBefore, 0);
  std::atomic<long> rssPeak{rssBefore};
  std::atomic<bool> stop{false};
  std::thread sampler([&] {
    while (!stop) {
      const long r = rssKiB(pid);
      if (r > rssPeak) rssPeak = r;
      std::this_thread::sleep_for(50ms);
    }
  });

  // ---- The members' traffic through the whole window -----------------------------
  MemberStats ms;
  std::atomic<bool> membersStop{false};
  std::atomic<int> roundsDone[2] = {{0}, {0}};  // per driver
  std::vector<std::thread> drivers;
  for (int t = 0; t < 2; ++t) {
    drivers.emplace_back([&, t] {
      const size_t begin = static_cast<size_t>(t) * kMembers / 2, end = begin + kMembers / 2;
      for (int round = 1; !membersStop; ++round) {
        std::vector<int64_t> corr(end - begin);
        const auto sentAt = Clock::now();
        for (size_t i = begin; i < end; ++i) {
          corr[i - begin] = members[i].conn.send(protocol::HeartbeatRequest{group_, members[i].id, generation});
        }
        for (size_t i = begin; i < end; ++i) {
          auto d = members[i].conn.receive(ApiKey::Heartbeat, answerWait());
          auto* hb = d.ok ? std::get_if<protocol::HeartbeatResponse>(&d.response) : nullptr;
          if (!hb || d.header.correlationId != corr[i - begin]) {
            ms.error("member " + std::to_string(i) + " heartbeat: " + members[i].conn.lastError());
            continue;
          }
          ms.latency(Clock::now() - sentAt);
          ++ms.heartbeats;
          if (hb->error != ErrorCode::NONE || hb->generation != generation) {
            ms.error("member " + std::to_string(i) + " heartbeat answered " +
                     std::string(protocol::errorName(hb->error)) + " at generation " + std::to_string(hb->generation));
          }
        }
        if (round % 3 == 0) {
          for (size_t i = begin; i < end; ++i) {
            std::vector<protocol::PartitionOffset> offsets;
            for (auto& p : members[i].held) offsets.push_back({p.topic, p.partition, round * 1000L + p.partition});
            corr[i - begin] = members[i].conn.send(protocol::CommitOffsetsRequest{group_, members[i].id, generation, offsets});
          }
          for (size_t i = begin; i < end; ++i) {
            auto d = members[i].conn.receive(ApiKey::CommitOffsets, answerWait());
            auto* cr = d.ok ? std::get_if<protocol::CommitOffsetsResponse>(&d.response) : nullptr;
            if (!cr || d.header.correlationId != corr[i - begin]) {
              ms.error("member " + std::to_string(i) + " commit: " + members[i].conn.lastError());
              continue;
            }
            bool good = cr->error == ErrorCode::NONE && cr->results.size() == members[i].held.size();
            for (auto& pe : cr->results) good = good && pe.error == ErrorCode::NONE;
            if (!good) {
              ms.error("member " + std::to_string(i) + " commit answered " + std::string(protocol::errorName(cr->error)));
              continue;
            }
            ++ms.commits;
            std::lock_guard lock(ms.mu);
            for (auto& p : members[i].held) ms.acked[{p.topic, p.partition}] = round * 1000L + p.partition;
          }
        }
        ++roundsDone[t];
        std::this_thread::sleep_for(300ms);  // pacing
      }
    });
  }

  BadStats bs;
  const auto windowStart = Clock::now();

  // ---- Connect every bad client first, so the flood cannot shut them out --------
  std::vector<std::unique_ptr<Connection>> malformed(kMalformedClients);
  for (auto& c : malformed) {
    c = std::make_unique<Connection>();
    if (!c->connect("127.0.0.1", port_, answerWait())) ++bs.connectFailed;
  }
  std::vector<int> garbage(kGarbageClients, -1);
  for (auto& fd : garbage) {
    fd = rawConnect(port_);
    if (fd < 0) ++bs.connectFailed;
  }
  std::vector<int> slow(kStallers + kTricklers, -1);
  for (auto& fd : slow) {
    fd = rawConnect(port_);
    if (fd < 0) ++bs.connectFailed;
  }
  const int piper = rawConnect(port_, 4096);
  if (piper < 0) ++bs.connectFailed;
  ASSERT_EQ(bs.connectFailed.load(), 0) << "bad clients could not even connect";

  std::vector<std::thread> bad;
  // Malformed cases: even clients in lock-step, odd ones pipelined.
  for (int t = 0; t < 3; ++t) {
    bad.emplace_back([&, t] {
      for (int k = t; k < kMalformedClients; k += 3) {
        Connection& c = *malformed[k];
        const auto cases = malformedCases(group_, topic_, generation, 1000);
        std::vector<std::vector<uint8_t>> answers(cases.size());
        bool lost = false;
        if (k % 2 == 0) {
          for (size_t i = 0; i < cases.size() && !lost; ++i) {
            lost = c.sendRaw(cases[i].frame) != IoStatus::Ok ||
                   c.receiveFrame(answers[i], answerWait()) != IoStatus::Ok;
          }
        } else {
          std::vector<uint8_t> all;
          for (auto& cs : cases) all.insert(all.end(), cs.frame.begin(), cs.frame.end());
          lost = c.sendRaw(all) != IoStatus::Ok;
          for (size_t i = 0; i < cases.size() && !lost; ++i) {
            lost = c.receiveFrame(answers[i], answerWait()) != IoStatus::Ok;
          }
        }
        if (lost) {
          bs.answeredWrong += 1;
          bs.problem("malformed client " + std::to_string(k) + " lost its connection: " + c.lastError());
          continue;
        }
        for (size_t i = 0; i < cases.size(); ++i) {
          std::string why;
          if (answerIsRight(cases[i], 1000 + static_cast<int64_t>(i), answers[i], &why)) {
            ++bs.answeredRight;
          } else {
            ++bs.answeredWrong;
            bs.problem("malformed client " + std::to_string(k) + ", " + cases[i].name + ": " + why);
          }
        }
        // Then a frame that cannot be trusted: the server closes the
        // connection once it has read it (after the answers above), at once,
        // so waited for up to the scheduling allowance.
        c.sendRaw(untrustedFrame(k));
        if (waitClosed(c.nativeHandle(), schedulingAllowance())) {
          ++bs.closedAfterUntrusted;
        } else {
          ++bs.notClosedAfterUntrusted;
          bs.problem("malformed client " + std::to_string(k) + " not closed after an untrusted frame");
        }
        c.close();
      }
    });
  }
  // Random garbage, then a half-close: the server answers what it can and
  // closes. All are sent first, then all are waited for against one deadline.
  bad.emplace_back([&] {
    for (int k = 0; k < kGarbageClients; ++k) {
      std::mt19937 rng(static_cast<uint32_t>(k) * 7919u + 17u);
      std::vector<uint8_t> bytes(8 + rng() % 4096);
      for (auto& b : bytes) b = static_cast<uint8_t>(rng());
      if (k % 2 == 1) {
        // A plausible start: a Size within bounds, a known ApiKey, version 0.
        const uint32_t size = 14 + rng() % 2000;
        bytes[0] = 0, bytes[1] = 0, bytes[2] = static_cast<uint8_t>(size >> 8), bytes[3] = static_cast<uint8_t>(size);
        bytes[4] = 0, bytes[5] = static_cast<uint8_t>(rng() % 9), bytes[6] = 0, bytes[7] = 0;
      }
      ::send(garbage[k], bytes.data(), bytes.size(), MSG_NOSIGNAL);
      ::shutdown(garbage[k], SHUT_WR);
    }
    // Closed at the latest by the idle timeout (a partial frame left at the
    // end): waited for up to that plus the scheduling allowance.
    const auto deadline = Clock::now() + designBound(kIdleTimeout);
    for (int k = 0; k < kGarbageClients; ++k) {
      int frames = 0;
      const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()), 1ms);
      if (waitClosed(garbage[k], left, &frames)) {
        ++bs.garbageClosed;
      } else {
        ++bs.garbageNotClosed;
        bs.problem("garbage client " + std::to_string(k) + " not closed");
      }
      bs.garbageFrames += frames;
      ::close(garbage[k]);
    }
  });
  // Slowloris: stallers send 10 bytes of a heartbeat one at a time, then
  // stop, and must be closed by the idle timeout; tricklers keep sending, a
  // byte every 150 ms, and must be closed too: a frame has the idle timeout,
  // from its first byte, to arrive whole. The frame (a ClientId of 200
  // bytes) takes over 35 s to trickle whole, longer than the idle timeout
  // plus the (default) scheduling allowance: a server that only closed
  // connections silent for the idle timeout would answer the tricklers'
  // frames instead of cutting them within that bound. The loop ends once
  // every slow connection is closed.
  bad.emplace_back([&] {
    const std::vector<uint8_t> frame =
        Bytes().requestHeader(0, 0, 7, std::string(200, 's')).str(group_).str("slow").int64(1).frame();
    const size_t stallAt = 10;
    std::vector<Clock::time_point> lastByte(slow.size()), firstByte(slow.size());
    std::vector<long> closedAfterMs(slow.size(), -1);  // stallers: since the last byte; tricklers: the first
    auto noticeCloses = [&] {
      for (size_t k = 0; k < slow.size(); ++k) {
        if (closedAfterMs[k] >= 0 || lastByte[k] == Clock::time_point{}) continue;
        char byte;
        const ssize_t n = ::recv(slow[k], &byte, 1, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
          const auto since = k < static_cast<size_t>(kStallers) ? lastByte[k] : firstByte[k];
          closedAfterMs[k] = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
        }
      }
    };
    const auto allClosed = [&] {
      return std::all_of(closedAfterMs.begin(), closedAfterMs.end(), [](long v) { return v >= 0; });
    };
    for (size_t sent = 0; sent < frame.size() && !allClosed(); ++sent) {
      for (size_t k = 0; k < slow.size(); ++k) {
        const bool trickler = k >= static_cast<size_t>(kStallers);
        if (!trickler && sent >= stallAt) continue;
        if (closedAfterMs[k] >= 0) continue;
        ::send(slow[k], &frame[sent], 1, MSG_NOSIGNAL);
        lastByte[k] = Clock::now();
        if (sent == 0) firstByte[k] = lastByte[k];
      }
      for (int i = 0; i < 15; ++i) {
        std::this_thread::sleep_for(10ms);
        noticeCloses();
      }
    }
    // The stallers' last bytes went out at most a moment ago: their idle
    // timeout, plus the scheduling allowance.
    eventuallyWithin(designBound(kIdleTimeout), [&] {
      noticeCloses();
      return allClosed();
    }, 10ms);
    for (size_t k = 0; k < slow.size(); ++k) {
      const bool trickler = k >= static_cast<size_t>(kStallers);
      if (trickler) {
        // Cut off: its frame did not arrive whole within the idle timeout of
        // its first byte (a design bound, plus the scheduling allowance).
        const bool cut = closedAfterMs[k] >= 0 && closedAfterMs[k] <= designBoundMs(kIdleTimeoutMs);
        cut ? ++bs.tricklersCut : ++bs.tricklersNotCut;
        if (closedAfterMs[k] > bs.tricklerCloseMaxMs) bs.tricklerCloseMaxMs = closedAfterMs[k];
        if (!cut) {
          bs.problem("trickler " + std::to_string(k) + " not closed within the idle timeout of its first byte (" +
                     std::to_string(closedAfterMs[k]) + " ms)");
        }
      } else if (closedAfterMs[k] >= 0) {
        ++bs.stallersClosed;
        if (closedAfterMs[k] > bs.stallerCloseMaxMs) bs.stallerCloseMaxMs = closedAfterMs[k];
      } else {
        ++bs.stallersNotClosed;
        bs.problem("staller " + std::to_string(k) + " still open after its last byte");
      }
      ::close(slow[k]);
    }
  });
  // The client that never reads: large answers pipelined until the server
  // closes it for its unread output (or stops reading from it).
  std::atomic<int> piperSent{0};
  std::string piperOutcome = "still open";
  bad.emplace_back([&] {
    Bytes b = hdr(4, 0);
    b.count(100);
    for (int i = 0; i < 100; ++i) b.str(std::string(239, 'x') + "/");  // invalid: answered without ZooKeeper
    const std::vector<uint8_t> request = b.frame();
    const auto deadline = Clock::now() + 10s;
    while (Clock::now() < deadline) {
      size_t off = 0;
      bool blocked = false;
      while (off < request.size()) {
        pollfd p{piper, POLLOUT, 0};
        if (::poll(&p, 1, 2000) != 1) {
          blocked = true;
          break;
        }
        const ssize_t n = ::send(piper, request.data() + off, request.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n <= 0) {
          piperOutcome = "closed by the server";
          return;
        }
        off += static_cast<size_t>(n);
      }
      if (blocked) {
        piperOutcome = "the server stopped reading it";
        break;
      }
      ++piperSent;
    }
    // A client whose answers go unread is closed within the idle timeout
    // (or at once, when its output passes the bound): waited for up to that
    // plus the scheduling allowance.
    if (piperOutcome == "still open" || piperOutcome == "the server stopped reading it") {
      if (waitClosed(piper, designBound(kIdleTimeout))) piperOutcome = "closed by the server";
    }
  });

  // ---- The flood past the connection limit --------------------------------------
  std::vector<int> flood;
  for (int i = 0; i < kFlood; ++i) {
    const int fd = rawConnect(port_);
    if (fd < 0) {
      ++bs.floodConnectFailed;
      continue;
    }
    flood.push_back(fd);
  }
  {
    // Watched for 2 s, and on a slow machine until the first refusal: the
    // server refuses past the limit at the accept, so waited for up to the
    // scheduling allowance.
    std::vector<bool> refused(flood.size(), false);
    const auto watchStart = Clock::now();
    const auto until = watchStart + 2s;
    const auto latest = watchStart + std::max<std::chrono::milliseconds>(2s, schedulingAllowance());
    auto anyRefused = [&] { return std::find(refused.begin(), refused.end(), true) != refused.end(); };
    while (Clock::now() < until || (!anyRefused() && Clock::now() < latest)) {
      std::vector<pollfd> fds;
      for (size_t i = 0; i < flood.size(); ++i)
        if (!refused[i]) fds.push_back({flood[i], POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 200) <= 0) continue;
      for (auto& p : fds) {
        if (!p.revents) continue;
        char byte;
        const ssize_t n = ::recv(p.fd, &byte, 1, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN)) {
          for (size_t i = 0; i < flood.size(); ++i)
            if (flood[i] == p.fd) refused[i] = true;
        }
      }
    }
    for (bool r : refused) r ? ++bs.floodRefused : ++bs.floodAccepted;
  }

  for (auto& t : bad) t.join();
  // Let the members run the rest of the window, and on a slow machine until
  // each driver has done kMinRounds rounds (a member error ends it: the test
  // fails on it; every round ends within its calls' deadlines).
  while (Clock::now() - windowStart < kWindow ||
         (std::min(roundsDone[0].load(), roundsDone[1].load()) < kMinRounds && ms.errors.load() == 0)) {
    std::this_thread::sleep_for(100ms);
  }
  const double windowSeconds = std::chrono::duration<double>(Clock::now() - windowStart).count();
  membersStop = true;
  for (auto& t : drivers) t.join();
  for (int fd : flood) ::close(fd);
  ::close(piper);
  std::this_thread::sleep_for(1500ms);  // the server sees the closes before the RSS is read (a memory check)
  stop = true;
  sampler.join();
  const long rssAfter = rssKiB(pid);

  // ---- What everyone saw ------------------------------------------------------------
  std::printf("[figure] members in %.1f s: %d heartbeats, %d commits acknowledged, %d errors, slowest heartbeat round "
              "%ld ms\n",
              windowSeconds, ms.heartbeats.load(), ms.commits.load(), ms.errors.load(), ms.maxLatencyUs.load() / 1000);
  std::printf("[figure] malformed: %d answers as the contract says, %d not; %d closed after an untrusted frame, %d not\n",
              bs.answeredRight.load(), bs.answeredWrong.load(), bs.closedAfterUntrusted.load(),
              bs.notClosedAfterUntrusted.load());
  std::printf("[figure] garbage: %d closed, %d not, %d answers received before the close\n", bs.garbageClosed.load(),
              bs.garbageNotClosed.load(), bs.garbageFrames.load());
  std::printf("[figure] slowloris: %d stallers closed (slowest %ld ms after its last byte, idle timeout %d ms), %d "
              "not; %d tricklers closed (slowest %ld ms after its first byte), %d not\n",
              bs.stallersClosed.load(), bs.stallerCloseMaxMs.load(), kIdleTimeoutMs, bs.stallersNotClosed.load(),
              bs.tricklersCut.load(), bs.tricklerCloseMaxMs.load(), bs.tricklersNotCut.load());
  std::printf("[figure] non-reader: %d requests of %d KiB answers sent, then %s\n", piperSent.load(), 28,
              piperOutcome.c_str());
  std::printf("[figure] flood: %d connections past a limit of %d: %d refused, %d accepted, %d connect failures\n",
              kFlood, kMaxConnections, bs.floodRefused.load(), bs.floodAccepted.load(), bs.floodConnectFailed.load());
  std::printf("[figure] server RSS: before %ld KiB, peak %ld KiB, after %ld KiB (bound: before + %ld KiB)\n", rssBefore,
              rssPeak.load(), rssAfter, kRssGrowthBoundKiB);
  for (auto& p : bs.firstProblems) std::printf("  bad-client problem: %s\n", p.c_str());
  for (auto& e : ms.firstErrors) std::printf("  member error: %s\n", e.c_str());

  EXPECT_TRUE(server_->running()) << server_->log();
  // The members.
  EXPECT_EQ(ms.errors.load(), 0);
  // kMinRounds rounds per driver: 10 heartbeats and 3 commits per member.
  EXPECT_GE(ms.heartbeats.load(), kMembers * 10);
  EXPECT_GE(ms.commits.load(), kMembers * 2);
  {
    Connection admin;
    ASSERT_TRUE(admin.connect("127.0.0.1", port_, answerWait()));
    auto info = call<protocol::ListGroupsResponse>(admin, protocol::ListGroupsRequest{{group_}});
    ASSERT_TRUE(info.has_value());
    ASSERT_EQ(info->groups.size(), 1u);
    EXPECT_EQ(info->groups[0].generation, generation) << "the group rebalanced";
    EXPECT_EQ(std::set<std::string>(info->groups[0].members.begin(), info->groups[0].members.end()), ids)
        << "a member was evicted or an intruder joined";
    auto fetched = call<protocol::FetchOffsetsResponse>(admin, protocol::FetchOffsetsRequest{group_, {}});
    ASSERT_TRUE(fetched.has_value());
    ASSERT_EQ(fetched->error, ErrorCode::NONE);
    std::map<std::pair<std::string, int32_t>, int64_t> got;
    for (auto& po : fetched->offsets) got[{po.topic, po.partition}] = po.offset;
    EXPECT_EQ(got.size(), static_cast<size_t>(kPartitions));
    EXPECT_EQ(got, ms.acked) << "committed offsets fetched back differ from what was acknowledged";
  }
  // Each bad client.
  EXPECT_EQ(bs.answeredWrong.load(), 0);
  EXPECT_EQ(bs.answeredRight.load(), kMalformedClients * static_cast<int>(malformedCases("g", "t", 0, 0).size()));
  EXPECT_EQ(bs.closedAfterUntrusted.load(), kMalformedClients);
  EXPECT_EQ(bs.garbageClosed.load(), kGarbageClients);
  EXPECT_EQ(bs.stallersClosed.load(), kStallers);
  // Closed by the idle timeout: a design bound, plus the scheduling
  // allowance (how close to the timeout it came is the figure above).
  EXPECT_LE(bs.stallerCloseMaxMs.load(), designBoundMs(kIdleTimeoutMs));
  EXPECT_EQ(bs.tricklersCut.load(), kTricklers);
  EXPECT_EQ(piperOutcome, "closed by the server");
  EXPECT_GE(bs.floodRefused.load(), 1) << "nothing was refused past the connection limit";
  EXPECT_LE(bs.floodAccepted.load(), kMaxConnections - kMembers)
      << "more connections were served than the limit leaves room for";
  // Memory.
  EXPECT_LT(rssPeak.load() - rssBefore, kRssGrowthBoundKiB);
  EXPECT_LT(rssAfter - rssBefore, kRssGrowthBoundKiB);
  if (HasFailure()) {
    // What the server said about the group, for the failure's reader.
    std::istringstream log(server_->log());
    std::string line;
    int shown = 0;
    while (std::getline(log, line) && shown < 60) {
      if ((line.find(group_) != std::string::npos && line.find(" joined ") == std::string::npos) ||
          line.find("warn") != std::string::npos || line.find("error") != std::string::npos) {
        std::printf("  server: %s\n", line.c_str());
        ++shown;
      }
    }
  }
}

}  // namespace
}  // namespace groupcoord::testing
