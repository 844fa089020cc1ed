// groupcoordd as a process against the live ensemble: it listens on a port
// it picked, answers over TCP, and on SIGTERM in the middle of a load exits
// with code 0 within seconds, with every request sent before the shutdown
// either answered (in order) or its connection closed: no crash, no hang.

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <thread>

#include "client/Connection.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "tests/server/ServerTestUtil.h"

namespace groupcoord::servertest {
namespace {

using client::Connection;
using client::IoStatus;
using protocol::ApiKey;
using protocol::ErrorCode;
using testing::ServerProcess;
using groupcoord::testing::designBound;

// The server's ZooKeeper session timeout, as configured below.
constexpr std::chrono::milliseconds kZkSessionTimeout{4000};
// shutdown.grace.ms, the default: on SIGTERM what is in flight is answered
// within it, then the process exits.
constexpr std::chrono::milliseconds kShutdownGrace{5000};
// Room for the load to reach 2,000 answered heartbeats (a count, not a
// speed check: polled).
constexpr auto kLoadRunsWithin = 20s;

// How long a call is waited for: an answer, even one that needs ZooKeeper,
// comes within the server's ZooKeeper session (past it the server answers
// CONTROLLER_NOT_AVAILABLE), plus the scheduling allowance.
std::chrono::milliseconds answerWait() { return designBound(kZkSessionTimeout); }

class GroupcoorddServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::requireEnsemble();
    root_ = "/" + testing::uniqueName("servertest");
  }

  std::unique_ptr<ServerProcess> startServer() {
    auto s = std::make_unique<ServerProcess>(
        std::vector<std::string>{"--zk-root=" + root_, "--io-threads=2",
                                 "--zk-session-timeout-ms=" + std::to_string(kZkSessionTimeout.count())});
    EXPECT_TRUE(s->start());
    return s;
  }

  std::string root_;
};

TEST_F(GroupcoorddServeTest, ListensOnThePickedPortAnswersAndExitsZeroOnSigterm) {
  auto server = startServer();
  ASSERT_NE(server->port(), 0);
  Connection c;
  ASSERT_TRUE(c.connect("127.0.0.1", server->port(), answerWait())) << c.lastError();
  protocol::ListGroupsRequest list;
  list.groups = {"no-such-group"};
  auto r = c.call(list, answerWait());
  ASSERT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(r.header.correlationId, 1);
  auto* groups = std::get_if<protocol::ListGroupsResponse>(&r.response);
  ASSERT_NE(groups, nullptr);
  ASSERT_EQ(groups->groups.size(), 1u) << server->log();
  EXPECT_EQ(groups->groups[0].name, "no-such-group");
  EXPECT_EQ(groups->groups[0].error, ErrorCode::UNKNOWN_GROUP);

  const std::string log = server->log();
  EXPECT_NE(log.find("groupcoordd listening on 127.0.0.1:" + std::to_string(server->port())), std::string::npos)
      << log;

  EXPECT_EQ(server->terminate(designBound(kShutdownGrace)), 0) << server->log();
  std::vector<uint8_t> body;
  EXPECT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Closed);
}

TEST_F(GroupcoorddServeTest, SigtermUnderLoadExitsZeroAndEverySentRequestIsAnsweredOrItsConnectionClosed) {
  auto server = startServer();
  const uint16_t port = server->port();
  ASSERT_NE(port, 0);

  constexpr int kClients = 4;
  constexpr int kWindow = 16;  // requests in flight per connection
  struct Outcome {
    int64_t sent = 0;
    int64_t answered = 0;
    IoStatus end = IoStatus::Ok;
    std::string problem;
  };
  std::vector<Outcome> outcomes(kClients);
  std::atomic<int64_t> totalAnswered{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      Outcome& o = outcomes[i];
      Connection c;
      if (!c.connect("127.0.0.1", port, answerWait())) {
        o.end = IoStatus::Error;
        o.problem = "connect: " + c.lastError();
        return;
      }
      bool sending = true;
      for (;;) {
        while (sending && o.sent - o.answered < kWindow) {
          if (c.send(heartbeat(o.sent + 1, "load-" + std::to_string(i), "member")) < 0) {
            if (c.lastStatus() != IoStatus::Closed) {
              o.end = c.lastStatus();
              o.problem = "send: " + c.lastError();
              return;
            }
            sending = false;  // the server is going; read what it still sent
            break;
          }
          ++o.sent;
        }
        if (o.answered == o.sent && !sending) {
          // Everything sent was answered; the close must still come.
          std::vector<uint8_t> body;
          o.end = c.receiveFrame(body, designBound(kShutdownGrace));
          if (o.end == IoStatus::Ok) o.problem = "a response to no request";
          return;
        }
        // Answered at once, or after SIGTERM within the grace.
        auto r = c.receive(ApiKey::Heartbeat, designBound(kShutdownGrace));
        if (!r.ok) {
          o.end = c.lastStatus();
          if (o.end != IoStatus::Closed) o.problem = r.detail;
          return;
        }
        ++o.answered;
        totalAnswered.fetch_add(1);
        if (r.header.correlationId != o.answered) {
          o.problem = "correlation id " + std::to_string(r.header.correlationId) + " where " +
                      std::to_string(o.answered) + " was due";
          o.end = IoStatus::Error;
          return;
        }
      }
    });
  }
  // Let the load run, then stop the server in the middle of it.
  EXPECT_TRUE(waitUntil([&] { return totalAnswered.load() >= 2000; }, designBound(kLoadRunsWithin)));
  const auto signalled = std::chrono::steady_clock::now();
  const int rc = server->terminate(designBound(kShutdownGrace));
  const auto took = std::chrono::steady_clock::now() - signalled;
  for (auto& t : clients) t.join();

  EXPECT_EQ(rc, 0) << "exit code (-1: still running after the grace plus the scheduling allowance)\n"
                   << server->log();
  // Exits within the shutdown grace: a design bound, plus the scheduling
  // allowance (the time it took is the figure).
  groupcoord::testing::figure("groupcoordd exited " +
                              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) +
                              " ms after SIGTERM under load (shutdown grace " +
                              std::to_string(kShutdownGrace.count()) + " ms)");
  EXPECT_LT(took, designBound(kShutdownGrace));
  for (int i = 0; i < kClients; ++i) {
    SCOPED_TRACE("client " + std::to_string(i));
    EXPECT_GT(outcomes[i].answered, 0);
    EXPECT_EQ(outcomes[i].end, IoStatus::Closed) << outcomes[i].problem;
    EXPECT_TRUE(outcomes[i].problem.empty()) << outcomes[i].problem;
    EXPECT_LE(outcomes[i].answered, outcomes[i].sent);
  }
}

}  // namespace
}  // namespace groupcoord::servertest
