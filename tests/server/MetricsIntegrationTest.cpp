// groupcoordd's /metrics and /health endpoints against the live ensemble:
// requests driven over TCP move the counters a scrape over HTTP shows, and
// readiness follows ZooKeeper.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>

#include "WireMember.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/Timing.h"
#include "tests/server/HttpTestUtil.h"

namespace groupcoord::servertest {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;
using testing::ServerProcess;
using testing::WireMember;
using testing::designBound;
using testing::eventuallyWithin;

// The server's ZooKeeper session timeout, as configured below.
constexpr std::chrono::milliseconds kZkSessionTimeout{4000};
// The group's session timeout: b is evicted that long after it goes silent.
// It is also the margin the test has, on a busy machine, to scrape the two
// members before b is evicted, and for a to keep heartbeating meanwhile:
// seconds, not a fraction of one.
constexpr int64_t kGroupSessionTimeoutMs = 6000;
// group.join.window.max.ms, the default: the longest a join waits in the
// group's batch.
constexpr std::chrono::milliseconds kJoinWindowMax{3000};
// shutdown.grace.ms, the default.
constexpr std::chrono::milliseconds kShutdownGrace{5000};

std::string tempDir() {
  char tmpl[] = "/tmp/groupcoord-metrics-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  return d ? d : "/tmp";
}

class MetricsIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::requireEnsemble();
    root_ = "/" + testing::uniqueName("metricsit");
    dir_ = tempDir();
  }
  void TearDown() override {
    if (server_ && HasFailure()) std::cerr << "---- groupcoordd log\n" << server_->log() << std::endl;
  }

  // Starts groupcoordd with an ephemeral HTTP port; returns that port.
  uint16_t start(std::vector<std::string> extra = {}, bool expectListening = true) {
    const std::string portFile = dir_ + "/http-port";
    std::vector<std::string> args{"--zk-root=" + root_,
                                  "--io-threads=2",
                                  "--zk-session-timeout-ms=" + std::to_string(kZkSessionTimeout.count()),
                                  "--http-address=127.0.0.1",
                                  "--http-port=0",
                                  "--http-port-file=" + portFile};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<ServerProcess>(args);
    // Not listening is shown by a second without it: a server that cannot
    // reach ZooKeeper never listens, however long one waits.
    const bool listening = expectListening ? server_->start() : server_->start(1s);
    EXPECT_EQ(listening, expectListening);
    return readPortFile(portFile);
  }

  std::map<std::string, double> scrape(uint16_t httpPort) {
    const HttpReply r = httpGet(httpPort, "/metrics");
    EXPECT_EQ(r.status, 200);
    return parseSamples(r.body);
  }

  std::string root_;
  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
};

double valueOr(const std::map<std::string, double>& s, const std::string& series, double fallback = -1) {
  return sample(s, series).value_or(fallback);
}

TEST_F(MetricsIntegration, RequestsMoveTheCountersAndReadyIsServedWhenRegistered) {
  const uint16_t http = start();
  ASSERT_NE(http, 0) << server_->log();
  const uint16_t port = server_->port();

  // Ready once ZooKeeper is connected and the server registered (at most a
  // moment after it listens): polled up to the ZooKeeper session plus the
  // scheduling allowance.
  HttpReply ready;
  eventuallyWithin(designBound(kZkSessionTimeout), [&] {
    ready = httpGet(http, "/health/ready");
    return ready.status == 200;
  }, 50ms);
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.body, "ready\n");
  EXPECT_EQ(httpGet(http, "/health/live").status, 200);

  const auto before = scrape(http);
  EXPECT_EQ(valueOr(before, "groupcoord_zookeeper_session_state{state=\"connected\"}"), 1.0);
  EXPECT_EQ(valueOr(before, "groupcoord_zookeeper_session_state{state=\"reconnecting\"}"), 0.0);
  EXPECT_EQ(valueOr(before, "groupcoord_requests_total{api=\"Heartbeat\"}"), 0.0);
  EXPECT_EQ(valueOr(before, "groupcoord_build_info{version=\"0.1.0\"}"), 1.0);

  // A group with two members (one of which goes silent), heartbeats, and a
  // failing heartbeat for a group nobody created.
  ASSERT_EQ(testing::createGroup(port, "metered", kGroupSessionTimeoutMs).error, ErrorCode::NONE);
  WireMember a("metered", {port}, "a"), b("metered", {port}, "b");
  ASSERT_EQ(a.join().error, ErrorCode::NONE);
  ASSERT_EQ(b.join().error, ErrorCode::NONE);
  // a registers again at b's generation: a join window, then ZooKeeper.
  ASSERT_TRUE(a.settle(designBound(kJoinWindowMax + kZkSessionTimeout)));
  EXPECT_EQ(a.heartbeat().error, ErrorCode::NONE);
  auto bad = testing::callOnce<protocol::HeartbeatResponse>(port, protocol::HeartbeatRequest{"no-such-group", "x-1", 1});
  ASSERT_TRUE(bad);
  ASSERT_NE(bad->error, ErrorCode::NONE);
  const std::string badError(protocol::errorName(bad->error));

  auto mid = scrape(http);
  EXPECT_GE(valueOr(mid, "groupcoord_requests_total{api=\"Heartbeat\"}"), 3.0);
  EXPECT_GE(valueOr(mid, "groupcoord_requests_total{api=\"RegisterConsumer\"}"), 2.0);
  EXPECT_GE(valueOr(mid, "groupcoord_requests_total{api=\"CreateGroup\"}"), 1.0);
  EXPECT_EQ(valueOr(mid, "groupcoord_request_errors_total{api=\"Heartbeat\",error=\"" + badError + "\"}"), 1.0)
      << "the failing heartbeat answered " << badError;
  EXPECT_GE(valueOr(mid, "groupcoord_request_duration_seconds_count{api=\"RegisterConsumer\"}"), 2.0);
  EXPECT_EQ(valueOr(mid, "groupcoord_request_duration_seconds_bucket{api=\"Heartbeat\",le=\"+Inf\"}"),
            valueOr(mid, "groupcoord_request_duration_seconds_count{api=\"Heartbeat\"}"));
  EXPECT_GE(valueOr(mid, "groupcoord_connections_accepted_total"), 4.0);
  EXPECT_GE(valueOr(mid, "groupcoord_connections_open"), 2.0);  // a and b keep theirs
  EXPECT_EQ(valueOr(mid, "groupcoord_groups_controlled"), 1.0);
  EXPECT_EQ(valueOr(mid, "groupcoord_members"), 2.0);
  EXPECT_GE(valueOr(mid, "groupcoord_generation_moves_total"), 1.0);
  EXPECT_GE(valueOr(mid, "groupcoord_zookeeper_transaction_changes_count"), 1.0);
  EXPECT_GE(valueOr(mid, "groupcoord_zookeeper_operation_duration_seconds_count{op=\"multi\"}"), 2.0);
  EXPECT_GE(valueOr(mid, "groupcoord_zookeeper_operation_duration_seconds_count{op=\"create\"}"), 1.0);
  EXPECT_EQ(valueOr(mid, "groupcoord_evictions_total"), 0.0);
  // One server: nothing to hand over, and the families are there at zero.
  EXPECT_EQ(valueOr(mid, "groupcoord_handovers_total{reason=\"rebalance\"}", -1.0), 0.0);
  EXPECT_EQ(valueOr(mid, "groupcoord_handovers_total{reason=\"drain\"}", -1.0), 0.0);
  EXPECT_EQ(valueOr(mid, "groupcoord_handover_failures_total", -1.0), 0.0);
  EXPECT_EQ(valueOr(mid, "groupcoord_handover_duration_seconds_count", -1.0), 0.0);
  // Rebalance reasons by reason: two joins (in one move or two), nothing else yet.
  EXPECT_EQ(valueOr(mid, "groupcoord_rebalances_total{reason=\"member_joined\"}"), 2.0);
  EXPECT_EQ(valueOr(mid, "groupcoord_rebalances_total{reason=\"member_evicted\"}"), 0.0);
  EXPECT_EQ(valueOr(mid, "groupcoord_rebalances_total{reason=\"topic_resized\"}"), 0.0);

  // b goes silent past the group's session timeout: evicted, waited for up
  // to that timeout plus the scheduling allowance (b has been silent since
  // its join already).
  b.dropConnection();
  const auto silentSince = std::chrono::steady_clock::now();
  double evictions = 0;
  while (std::chrono::steady_clock::now() - silentSince <
         designBound(std::chrono::milliseconds(kGroupSessionTimeoutMs))) {
    a.settle(2s);
    evictions = valueOr(scrape(http), "groupcoord_evictions_total");
    if (evictions >= 1) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(evictions, 1.0);
  const auto after = scrape(http);
  EXPECT_EQ(valueOr(after, "groupcoord_members"), 1.0);
  EXPECT_GT(valueOr(after, "groupcoord_generation_moves_total"), valueOr(mid, "groupcoord_generation_moves_total"));
  EXPECT_EQ(valueOr(after, "groupcoord_rebalances_total{reason=\"member_evicted\"}"), 1.0);

  EXPECT_EQ(server_->terminate(designBound(kShutdownGrace)), 0) << server_->log();
  EXPECT_EQ(httpGet(http, "/health/live").status, 0) << "the HTTP server outlived the process";
}

TEST_F(MetricsIntegration, NotReadyWhileZooKeeperCannotBeReachedButLive) {
  // Nothing listens on the ensemble's base port itself: the server keeps
  // trying to connect (for up to 30 s), serving HTTP meanwhile.
  const uint16_t http =
      start({"--zk-connect=127.0.0.1:" + std::to_string(testing::zkBasePort())}, /*expectListening=*/false);
  ASSERT_NE(http, 0) << server_->log();
  EXPECT_EQ(httpGet(http, "/health/live").status, 200);
  const HttpReply ready = httpGet(http, "/health/ready");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.body, "not ready: not connected to ZooKeeper\n");
  const auto samples = scrape(http);
  EXPECT_EQ(valueOr(samples, "groupcoord_zookeeper_session_state{state=\"connected\"}"), 0.0);
  server_->kill9();
}

}  // namespace
}  // namespace groupcoord::servertest
