// Two teams on one groupcoordd with a permissions file, against the live
// ensemble: what team A's credentials may and may not do to team B's group,
// call by call; the file read again on SIGHUP with connections kept; a bad
// file refused at start and on reload; `groupctl acl` editing the file.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/Connection.h"
#include "common/Layout.h"
#include "common/Permissions.h"
#include "common/Scram.h"
#include "protocol/Codec.h"
#include "server/Auth.h"
#include "server/AuthThrottle.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using client::Connection;
using client::SecurityOptions;
using protocol::ErrorCode;

// The server's ZooKeeper session: groupcoordd's default, the longest the
// test ensemble grants (20 ticks of 500 ms). Nothing here is about the
// session; a long one keeps the stall rule (a server that did not run for a
// third of it answers heartbeats and registrations CONTROLLER_NOT_AVAILABLE,
// docs/design.md) from answering for a server a busy machine held back.
constexpr std::chrono::milliseconds kZkSessionTimeout{10000};
// The session of team B's group: b-1 is heartbeated a few calls apart, and a
// busy machine may stretch those calls by seconds.
constexpr int64_t kGroupSessionTimeoutMs = 10000;
// group.join.window.max.ms, the default: the longest a join waits in the
// group's batch.
constexpr std::chrono::milliseconds kJoinWindowMax{3000};

// How long a call is waited for: a registration leaves the batch within the
// join window, and an answer that needs ZooKeeper comes within the server's
// ZooKeeper session (past it the server answers CONTROLLER_NOT_AVAILABLE);
// plus the scheduling allowance.
std::chrono::milliseconds answerWait() { return designBound(kJoinWindowMax + kZkSessionTimeout); }

const std::string kRules =
    "# team A: a-svc and its members' prefix; team B: b-svc\n"
    "allow user:a-svc join,commit,fetch,describe,create prefix:team-a.\n"
    "allow user:b-svc join,commit,fetch,describe,create prefix:team-b.\n"
    "allow role:admin all group:*\n";

ErrorCode errorOf(const protocol::DecodedResponse& r) {
  return r.ok ? protocol::responseError(r.response) : ErrorCode::UNKNOWN_SERVER_ERROR;
}

int run(const std::string& command, std::string* out = nullptr) {
  const std::string file = "/tmp/groupcoord-tenants-out-" + std::to_string(::getpid());
  const int rc = std::system((command + " > " + file + " 2>&1").c_str());
  if (out) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    *out = s.str();
  }
  std::remove(file.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class TenantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("tenants");
    topicsPath_ = root_ + "-topics";
    char tmpl[] = "/tmp/groupcoord-tenants-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    ASSERT_NE(d, nullptr);
    dir_ = d;
    zk::SessionConfig zc;
    zc.connect = zkConnect();
    zc.sessionTimeout = 10000ms;
    zk_ = std::make_unique<zk::Session>(zc);
    ASSERT_EQ(zk_->start(), zk::Error::Ok);
    ASSERT_EQ(zk_->waitConnected(designBound(zc.sessionTimeout)), zk::Error::Ok);
    ASSERT_EQ(zk_->ensurePathSync(topicsPath_), zk::Error::Ok);
    ASSERT_EQ(zk_->createSync(topicsPath_ + "/alpha", layout::encodeTopic(2), zk::CreateMode::Persistent).error,
              zk::Error::Ok);
    std::string error, lines;
    for (auto [user, role] : {std::pair{"a-svc", server::Role::Member}, std::pair{"b-svc", server::Role::Member},
                              std::pair{"ops", server::Role::Admin}}) {
      const std::string l = server::makeCredentialLine(user, role, std::string(user) + "-secret", 10000, &error);
      ASSERT_FALSE(l.empty()) << error;
      lines += l + "\n";
    }
    write(credentials(), lines);
    write(permissionsFile(), kRules);
  }

  void TearDown() override {
    std::error_code ignored;
    if (dir_.rfind("/tmp/groupcoord-tenants-", 0) == 0) std::filesystem::remove_all(dir_, ignored);
  }

  std::string credentials() const { return dir_ + "/credentials"; }
  std::string permissionsFile() const { return dir_ + "/permissions"; }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::trunc);
    out << text;
  }

  std::unique_ptr<ServerProcess> startServer() {
    auto s = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_,
        "--zk-session-timeout-ms=" + std::to_string(kZkSessionTimeout.count()), "--io-threads=2",
        "--auth-credentials-file=" + credentials(), "--auth-permissions-file=" + permissionsFile()});
    EXPECT_TRUE(s->start());
    return s;
  }

  Connection as(uint16_t port, const std::string& user) {
    Connection c;
    SecurityOptions s;
    s.user = user;
    s.secret = user + "-secret";
    c.setSecurity(s);
    EXPECT_TRUE(c.connect("127.0.0.1", port, answerWait())) << c.lastError();
    return c;
  }

  // Waits until the server's log holds `text` (a hang guard: SIGHUP is
  // handled on another thread than the one the test talks to). The server
  // logs it at once: waited for up to the scheduling allowance.
  static bool logShows(ServerProcess& s, const std::string& text) {
    return eventuallyWithin(schedulingAllowance(), [&] { return s.log().find(text) != std::string::npos; }, 50ms);
  }

  std::string root_;
  std::string topicsPath_;
  std::string dir_;
  std::unique_ptr<zk::Session> zk_;
};

TEST_F(TenantsTest, TeamACannotTouchTeamBsGroupByAnyCallWhileTeamBCan) {
  auto server = startServer();
  Connection b = as(server->port(), "b-svc");
  Connection a = as(server->port(), "a-svc");
  const std::string g = "team-b.orders";

  // Team B on its own group: every call it was granted works.
  ASSERT_EQ(errorOf(b.call(protocol::CreateGroupRequest{g, kGroupSessionTimeoutMs, {"alpha"}, false}, answerWait())),
            ErrorCode::NONE)
      << server->log();
  auto joined = b.call(protocol::RegisterConsumerRequest{g, "b-1", {}}, answerWait());
  ASSERT_EQ(errorOf(joined), ErrorCode::NONE);
  const auto& reg = std::get<protocol::RegisterConsumerResponse>(joined.response);
  EXPECT_EQ(reg.partitions.size(), 2u);
  EXPECT_EQ(errorOf(b.call(protocol::HeartbeatRequest{g, "b-1", reg.generation}, answerWait())), ErrorCode::NONE);
  EXPECT_EQ(errorOf(b.call(protocol::CommitOffsetsRequest{g, "b-1", reg.generation, {{"alpha", 0, 42}}}, answerWait())),
            ErrorCode::NONE);
  auto fetched = b.call(protocol::FetchOffsetsRequest{g, {}}, answerWait());
  ASSERT_EQ(errorOf(fetched), ErrorCode::NONE);
  EXPECT_EQ(std::get<protocol::FetchOffsetsResponse>(fetched.response).offsets.size(), 1u);
  EXPECT_EQ(errorOf(b.call(protocol::DescribeGroupRequest{g}, answerWait())), ErrorCode::NONE);

  // Team A, a member like B, on B's group: refused, call by call.
  struct Case {
    const char* what;
    protocol::Request request;
  };
  const std::vector<Case> cases = {
      {"create", protocol::CreateGroupRequest{g, 4000, {"alpha"}, false}},
      {"join", protocol::RegisterConsumerRequest{g, "a-intruder", {}}},
      {"join as B's member", protocol::RegisterConsumerRequest{g, "b-1", {{"alpha", 0}, {"alpha", 1}}}},
      {"heartbeat", protocol::HeartbeatRequest{g, "b-1", reg.generation}},
      {"leave", protocol::LeaveGroupRequest{g, "b-1"}},
      {"commit", protocol::CommitOffsetsRequest{g, "b-1", reg.generation, {{"alpha", 0, 0}}}},
      {"fetch", protocol::FetchOffsetsRequest{g, {}}},
      {"describe", protocol::DescribeGroupRequest{g}},
      {"delete", protocol::DeleteGroupRequest{g}},
      {"rewind", protocol::RewindConsumerRequest{g, {{"alpha", 0, 0}}}},
  };
  int performed = 0;
  for (auto& c : cases) {
    const ErrorCode e = errorOf(a.call(c.request, answerWait()));
    EXPECT_EQ(e, ErrorCode::NOT_AUTHORIZED) << c.what;
    if (e != ErrorCode::NOT_AUTHORIZED) ++performed;
  }
  // ListGroups: B's group is not listed for A; asked by name it is refused.
  auto listed = a.call(protocol::ListGroupsRequest{}, answerWait());
  ASSERT_EQ(errorOf(listed), ErrorCode::NONE);
  for (auto& info : std::get<protocol::ListGroupsResponse>(listed.response).groups) {
    EXPECT_NE(info.name, g) << "A sees B's group";
    if (info.name == g) ++performed;
  }
  auto named = a.call(protocol::ListGroupsRequest{{g}}, answerWait());
  ASSERT_EQ(errorOf(named), ErrorCode::NONE);
  const auto& namedGroups = std::get<protocol::ListGroupsResponse>(named.response).groups;
  ASSERT_EQ(namedGroups.size(), 1u);
  EXPECT_EQ(namedGroups[0].error, ErrorCode::NOT_AUTHORIZED);
  EXPECT_TRUE(namedGroups[0].members.empty());
  std::printf("[figure] operations tenant A performed on tenant B's group with member credentials: %d of %zu\n",
              performed, cases.size() + 1);

  // B's group is as B left it: its member, its partitions, its offset.
  auto still = b.call(protocol::HeartbeatRequest{g, "b-1", reg.generation}, answerWait());
  EXPECT_EQ(errorOf(still), ErrorCode::NONE);
  auto offsets = b.call(protocol::FetchOffsetsRequest{g, {}}, answerWait());
  ASSERT_EQ(errorOf(offsets), ErrorCode::NONE);
  const auto& o = std::get<protocol::FetchOffsetsResponse>(offsets.response).offsets;
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].offset, 42);

  // A's own prefix works for A; an admin may do everything.
  EXPECT_EQ(errorOf(a.call(protocol::CreateGroupRequest{"team-a.orders", kGroupSessionTimeoutMs, {"alpha"}, false},
                           answerWait())),
            ErrorCode::NONE);
  Connection ops = as(server->port(), "ops");
  EXPECT_EQ(errorOf(ops.call(protocol::DescribeGroupRequest{g}, answerWait())), ErrorCode::NONE);

  const std::string log = server->log();
  EXPECT_NE(log.find("permissions on: 3 rule(s)"), std::string::npos) << log;
  EXPECT_NE(log.find("of group 'team-b.orders' from 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("(user 'a-svc')"), std::string::npos) << log;
}

TEST_F(TenantsTest, SighupAppliesNewRulesToOpenConnectionsAndRefusesABadFile) {
  auto server = startServer();
  Connection b = as(server->port(), "b-svc");
  Connection a = as(server->port(), "a-svc");
  ASSERT_EQ(errorOf(b.call(protocol::CreateGroupRequest{"team-b.shared", kGroupSessionTimeoutMs, {"alpha"}, false},
                           answerWait())),
            ErrorCode::NONE);
  EXPECT_EQ(errorOf(a.call(protocol::FetchOffsetsRequest{"team-b.shared", {}}, answerWait())),
            ErrorCode::NOT_AUTHORIZED);

  // B shares one group with A: read-only offsets.
  write(permissionsFile(), kRules + "allow user:a-svc fetch,describe group:team-b.shared\n");
  ASSERT_EQ(::kill(server->pid(), SIGHUP), 0);
  ASSERT_TRUE(logShows(*server, "4 rule(s) in force (were 3)")) << server->log();
  // The same connections, still open: A now may fetch, and still not commit.
  EXPECT_EQ(errorOf(a.call(protocol::FetchOffsetsRequest{"team-b.shared", {}}, answerWait())), ErrorCode::NONE);
  EXPECT_EQ(errorOf(a.call(protocol::CommitOffsetsRequest{"team-b.shared", "x", 1, {{"alpha", 0, 1}}}, answerWait())),
            ErrorCode::NOT_AUTHORIZED);

  // A broken file: refused with its line, the 4 rules stay in force.
  write(permissionsFile(), kRules + "allow user:a-svc fetch,descibe group:team-b.shared\n");
  ASSERT_EQ(::kill(server->pid(), SIGHUP), 0);
  ASSERT_TRUE(logShows(*server, "line 5: operation 'descibe'")) << server->log();
  EXPECT_NE(server->log().find("refused, the 4 rule(s) in force stay"), std::string::npos) << server->log();
  EXPECT_EQ(errorOf(a.call(protocol::FetchOffsetsRequest{"team-b.shared", {}}, answerWait())), ErrorCode::NONE);
  EXPECT_TRUE(server->running());

  // Both connections were kept throughout: the server still answers on them.
  EXPECT_EQ(errorOf(b.call(protocol::DescribeGroupRequest{"team-b.shared"}, answerWait())), ErrorCode::NONE);
  EXPECT_EQ(errorOf(a.call(protocol::DescribeGroupRequest{"team-b.shared"}, answerWait())), ErrorCode::NONE);
  EXPECT_EQ(server->terminate(), 0);
}

TEST_F(TenantsTest, ABadFileStopsTheServerAtStartWithTheLineNumber) {
  write(permissionsFile(), "# rules\nallow user:a-svc join team-a\n");
  ServerProcess server({"--zk-root=" + root_, "--auth-credentials-file=" + credentials(),
                        "--auth-permissions-file=" + permissionsFile()});
  // It stops at once, before any ZooKeeper: start() sees it end.
  EXPECT_FALSE(server.start(schedulingAllowance()));
  EXPECT_NE(server.log().find("permissions file '" + permissionsFile() + "' line 2: "), std::string::npos)
      << server.log();
  // Permissions without credentials: nobody could be named.
  ServerProcess alone({"--zk-root=" + root_, "--auth-permissions-file=" + permissionsFile()});
  EXPECT_FALSE(alone.start(schedulingAllowance()));
  EXPECT_NE(alone.log().find("needs auth.credentials.file"), std::string::npos) << alone.log();
}

TEST_F(TenantsTest, GroupctlAclEditsTheFileTheServerThenApplies) {
  const std::string groupctl = binaryPath("client/groupctl");
  const std::string file = dir_ + "/edited";
  std::string out;
  ASSERT_EQ(run(groupctl + " acl add --file " + file +
                    " --allow --principal user:a-svc --operation join,commit --prefix team-a."),
            0);
  ASSERT_EQ(run(groupctl + " acl add --file " + file + " --deny --principal '*' --operation delete --group '*'"), 0);
  // The same rule again changes nothing.
  ASSERT_EQ(run(groupctl + " acl add --file " + file +
                    " --allow --principal user:a-svc --operation commit,join --prefix team-a.",
                &out),
            0);
  EXPECT_NE(out.find("already there"), std::string::npos) << out;
  ASSERT_EQ(run(groupctl + " --output json acl list --file " + file, &out), 0);
  EXPECT_NE(out.find("\"rule\": \"allow user:a-svc join,commit prefix:team-a.\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"rule\": \"deny * delete group:*\""), std::string::npos) << out;
  // Only the rules that apply to a group.
  ASSERT_EQ(run(groupctl + " --output json acl list --file " + file + " --group team-b.x", &out), 0);
  EXPECT_EQ(out.find("team-a."), std::string::npos) << out;
  EXPECT_NE(out.find("deny * delete"), std::string::npos) << out;
  // Remove: the rule goes; a rule that is not there exits 1.
  ASSERT_EQ(run(groupctl + " acl remove --file " + file + " --deny --principal '*' --operation delete --group '*'"),
            0);
  EXPECT_EQ(run(groupctl + " acl remove --file " + file + " --deny --principal '*' --operation delete --group '*'"),
            1);
  // Mistakes are usage errors and change nothing.
  EXPECT_EQ(run(groupctl + " acl add --file " + file + " --allow --principal user:a-svc --operation read --group g",
                &out),
            2);
  EXPECT_NE(out.find("operation 'read'"), std::string::npos) << out;
  // The file the server reads is the one groupctl wrote.
  std::string error;
  auto policy = permissions::Policy::load(file, &error);
  ASSERT_NE(policy, nullptr) << error;
  ASSERT_EQ(policy->rules().size(), 1u);
  EXPECT_TRUE(policy->allows("a-svc", server::Role::Member, "team-a.x", permissions::Operation::Commit));
  // A file broken by hand is named and left alone.
  write(file, "allow user:a-svc join\n");
  EXPECT_EQ(run(groupctl + " acl add --file " + file + " --allow --principal '*' --operation describe --group '*'",
                &out),
            2);
  EXPECT_NE(out.find("line 1:"), std::string::npos) << out;
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "allow user:a-svc join\n");
}


// ---- SCRAM, plain Authenticate, guessing ---------------------------------------

// The frame of an Authenticate v1 carrying `message`, as a client sends it.
std::vector<uint8_t> scramFrame(const std::string& message, int64_t correlationId) {
  protocol::RequestHeader h;
  h.apiKey = protocol::ApiKey::Authenticate;
  h.version = 1;
  h.correlationId = correlationId;
  h.clientId = "replayed";
  std::vector<uint8_t> frame;
  protocol::encodeRequest(h, protocol::AuthenticateRequest{{}, {}, std::string(scram::kMechanism), message}, frame);
  return frame;
}

protocol::AuthenticateResponse sendFrame(Connection& c, const std::vector<uint8_t>& frame) {
  EXPECT_EQ(c.sendRaw(frame), client::IoStatus::Ok);
  auto r = c.receive(protocol::ApiKey::Authenticate, answerWait());
  EXPECT_TRUE(r.ok) << r.detail;
  auto* a = r.ok ? std::get_if<protocol::AuthenticateResponse>(&r.response) : nullptr;
  return a ? *a : protocol::AuthenticateResponse{ErrorCode::UNKNOWN_SERVER_ERROR, ""};
}

TEST_F(TenantsTest, ACapturedScramExchangeResentOnANewConnectionIsNotAuthorized) {
  auto server = startServer();
  // A real exchange, its two client frames kept as they went on the wire.
  Connection first;
  ASSERT_TRUE(first.connect("127.0.0.1", server->port(), answerWait())) << first.lastError();
  scram::ClientExchange exchange("a-svc", "a-svc-secret");
  const auto frame1 = scramFrame(exchange.first(), 1);
  auto challenge = sendFrame(first, frame1);
  ASSERT_EQ(challenge.error, ErrorCode::NONE);
  std::string error;
  auto final = exchange.final(challenge.message, &error);
  ASSERT_TRUE(final) << error;
  const auto frame2 = scramFrame(*final, 2);
  auto done = sendFrame(first, frame2);
  ASSERT_EQ(done.error, ErrorCode::NONE);
  EXPECT_TRUE(exchange.verifyServer(done.message, &error)) << error;
  EXPECT_EQ(errorOf(first.call(protocol::DescribeGroupRequest{"team-a.x"}, answerWait())), ErrorCode::UNKNOWN_GROUP);
  // Neither frame holds the secret.
  EXPECT_EQ(std::string(frame1.begin(), frame1.end()).find("a-svc-secret"), std::string::npos);
  EXPECT_EQ(std::string(frame2.begin(), frame2.end()).find("a-svc-secret"), std::string::npos);

  // The same bytes again, on a new connection: the server's nonce is new,
  // the captured proof does not cover it.
  Connection replay;
  ASSERT_TRUE(replay.connect("127.0.0.1", server->port(), answerWait())) << replay.lastError();
  auto again = sendFrame(replay, frame1);
  EXPECT_EQ(again.error, ErrorCode::NONE);
  EXPECT_NE(again.message, challenge.message);
  auto replayed = sendFrame(replay, frame2);
  EXPECT_EQ(replayed.error, ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(replayed.message, "e=invalid-proof");
  EXPECT_EQ(errorOf(replay.call(protocol::DescribeGroupRequest{"team-a.x"}, answerWait())), ErrorCode::NOT_AUTHORIZED);
  std::printf("[figure] replayed SCRAM exchange: %s\n", protocol::errorName(replayed.error).data());
}

TEST_F(TenantsTest, PlainAuthenticateIsRefusedWhenTheServerSaysNeverAndClientsUseScram) {
  auto server = std::make_unique<ServerProcess>(std::vector<std::string>{
      "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_, "--io-threads=2",
      "--auth-credentials-file=" + credentials(), "--auth-plain=never"});
  ASSERT_TRUE(server->start());
  // The client library speaks SCRAM by default.
  Connection scramClient = as(server->port(), "a-svc");
  EXPECT_TRUE(scramClient.isOpen());
  EXPECT_EQ(errorOf(scramClient.call(protocol::ListGroupsRequest{}, answerWait())), ErrorCode::NONE);
  // Version 0, the secret on the wire: refused, and the log says why.
  Connection plain;
  SecurityOptions s;
  s.user = "a-svc";
  s.secret = "a-svc-secret";
  s.plainAuth = true;
  plain.setSecurity(s);
  EXPECT_FALSE(plain.connect("127.0.0.1", server->port(), answerWait()));
  EXPECT_TRUE(plain.authRefused()) << plain.lastError();
  EXPECT_TRUE(logShows(*server, "auth.plain is never")) << server->log();
  // groupctl: SCRAM by default, --plain-auth when told.
  write(dir_ + "/secret", "a-svc-secret\n");
  const std::string groupctl = binaryPath("client/groupctl") + " --bootstrap 127.0.0.1:" +
                               std::to_string(server->port()) + " --user a-svc --secret-file " + dir_ + "/secret";
  std::string out;
  EXPECT_EQ(run(groupctl + " list", &out), 0) << out;
  EXPECT_EQ(run(groupctl + " --plain-auth list", &out), 1) << out;
  EXPECT_NE(out.find("NOT_AUTHORIZED"), std::string::npos) << out;
}

TEST_F(TenantsTest, WrongSecretsOnOneConnectionAreSlowedWhileOtherConnectionsGoOn) {
  auto server = startServer();
  Connection ops = as(server->port(), "ops");
  Connection guesser;
  ASSERT_TRUE(guesser.connect("127.0.0.1", server->port(), answerWait())) << guesser.lastError();
  // As fast as the server answers, for 10 s: version 0 guesses (the
  // cheapest for a guesser: one round trip each). On a slow machine the
  // guessing goes on until the free guesses were answered and the other
  // connection made kMinOthers calls meanwhile: a count in a fixed time would
  // be a measure of speed (tests/README.md, "Time in tests").
  constexpr auto kGuessWindow = 10s;
  constexpr int kMinOthers = 20;
  constexpr int kFreeGuesses = static_cast<int>(server::AuthThrottle::kFreeFailures);
  std::atomic<bool> guessing{true};
  int64_t slowestOther = 0;
  std::atomic<int> others{0};
  std::thread other([&] {
    while (guessing) {
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_EQ(errorOf(ops.call(protocol::ListGroupsRequest{}, answerWait())), ErrorCode::NONE);
      slowestOther = std::max<int64_t>(slowestOther, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                         std::chrono::steady_clock::now() - t0)
                                                         .count());
      ++others;
      std::this_thread::sleep_for(50ms);
    }
  });
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + kGuessWindow;
  int answered = 0;
  int answeredInWindow = 0;  // answered by the end of the 10 s
  // Past the window, guessing goes on until the counts below are reached,
  // for at most the allowance (a guess waits up to 5 s, so a server that
  // held the other connection back would otherwise keep this loop going):
  // then the checks below say which count was missed.
  const auto giveUp = end + schedulingAllowance();
  while (std::chrono::steady_clock::now() < end ||
         ((answered < kFreeGuesses || others.load() <= kMinOthers) && std::chrono::steady_clock::now() < giveUp)) {
    // A guess waits at most the throttle's longest wait: waited for up to
    // that plus the scheduling allowance.
    auto r = guesser.call(protocol::AuthenticateRequest{"b-svc", "guess-" + std::to_string(answered), {}, {}},
                          designBound(server::AuthThrottle::kMaxDelay));
    if (!r.ok) break;  // not answered: the checks below fail
    EXPECT_EQ(errorOf(r), ErrorCode::NOT_AUTHORIZED);
    ++answered;
    if (std::chrono::steady_clock::now() <= end) ++answeredInWindow;
  }
  const double guessedSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  guessing = false;
  other.join();
  std::printf("[figure] wrong secrets answered in 10 s on one connection: %d (%d in %.1f s); meanwhile %d ListGroups "
              "on another connection, the slowest %lld ms\n",
              answeredInWindow, answered, guessedSeconds, others.load(), static_cast<long long>(slowestOther));
  // The throttle's rule: after the free guesses, waits that double up to 5 s.
  EXPECT_LE(answeredInWindow, 20);
  EXPECT_GE(answered, kFreeGuesses);
  // The other connection was answered NONE throughout the guessing (above).
  // That it was never made to wait for the guesser's turn (the throttle's
  // waits reach 5 s) is the slowest call in the figure line: a measure of
  // speed, not asserted.
  EXPECT_GT(others.load(), kMinOthers);
  EXPECT_TRUE(logShows(*server, "waits")) << server->log();
}

}  // namespace
}  // namespace groupcoord::testing
