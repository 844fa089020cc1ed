// The metrics module and the HTTP endpoints, without ZooKeeper: the text
// format (escaping, cumulative buckets, _sum and _count), the request
// metrics in front of a handler, and every endpoint and bad request scraped
// over a real HTTP connection on 127.0.0.1.

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "metrics/Coordination.h"
#include "metrics/Metrics.h"
#include "metrics/Registry.h"
#include "protocol/Codec.h"
#include "server/Chain.h"
#include "server/Config.h"
#include "server/HttpServer.h"
#include "server/Metrics.h"
#include "tests/server/HttpTestUtil.h"

namespace groupcoord::servertest {
namespace {

using namespace server;

using metrics::FamilyWriter;
using metrics::Histogram;
using metrics::Registry;
using metrics::Type;
using protocol::ApiKey;
using protocol::ErrorCode;

TEST(MetricsText, HelpAndLabelValuesAreEscaped) {
  EXPECT_EQ(metrics::escapeHelp("a\\b\nc\"d"), "a\\\\b\\nc\"d");
  EXPECT_EQ(metrics::escapeLabelValue("a\\b\nc\"d"), "a\\\\b\\nc\\\"d");

  Registry r;
  ASSERT_TRUE(r.add("groupcoord_test_total", "line one\nback\\slash", Type::Counter, [](FamilyWriter& w) {
    w.value({{"api", "He said \"hi\"\n"}, {"path", "C:\\x"}}, 3);
  }));
  EXPECT_EQ(r.render(),
            "# HELP groupcoord_test_total line one\\nback\\\\slash\n"
            "# TYPE groupcoord_test_total counter\n"
            "groupcoord_test_total{api=\"He said \\\"hi\\\"\\n\",path=\"C:\\\\x\"} 3\n");
}

TEST(MetricsText, ValuesPrintAsPrometheusReadsThem) {
  EXPECT_EQ(metrics::formatValue(0), "0");
  EXPECT_EQ(metrics::formatValue(1000000), "1000000");
  EXPECT_EQ(metrics::formatValue(-7), "-7");
  EXPECT_EQ(metrics::formatValue(0.0001), "0.0001");
  EXPECT_EQ(metrics::formatValue(0.00025), "0.00025");
  EXPECT_EQ(metrics::formatValue(2.5), "2.5");
  EXPECT_EQ(metrics::formatValue(HUGE_VAL), "+Inf");
  EXPECT_EQ(metrics::formatValue(-HUGE_VAL), "-Inf");
  EXPECT_EQ(metrics::formatValue(std::nan("")), "NaN");
}

TEST(MetricsText, NamesAreCheckedAndAFamilyIsRegisteredOnce) {
  EXPECT_TRUE(metrics::validMetricName("groupcoord_requests_total"));
  EXPECT_TRUE(metrics::validMetricName("a:b_c9"));
  EXPECT_FALSE(metrics::validMetricName(""));
  EXPECT_FALSE(metrics::validMetricName("9lives"));
  EXPECT_FALSE(metrics::validMetricName("has-dash"));
  EXPECT_FALSE(metrics::validMetricName("has space"));
  EXPECT_TRUE(metrics::validLabelName("api"));
  EXPECT_FALSE(metrics::validLabelName("__reserved"));
  EXPECT_FALSE(metrics::validLabelName("a:b"));

  Registry r;
  metrics::Counter c;
  EXPECT_TRUE(r.addCounter("groupcoord_once_total", "x", c));
  EXPECT_FALSE(r.addCounter("groupcoord_once_total", "again", c));
  EXPECT_FALSE(r.addCounter("bad name", "x", c));
  EXPECT_FALSE(r.addGauge("groupcoord_no_reader", "x", nullptr));
  // A label name the format cannot carry is left out of the line.
  ASSERT_TRUE(r.add("groupcoord_odd", "x", Type::Gauge, [](FamilyWriter& w) { w.value({{"bad-label", "v"}}, 1); }));
  EXPECT_NE(r.render().find("\ngroupcoord_odd{} 1\n"), std::string::npos) << r.render();
}

TEST(MetricsText, HistogramBucketsAreCumulativeWithSumAndCount) {
  Histogram h({10, 100, 1000});
  for (uint64_t v : {0, 10, 11, 100, 500, 5000}) h.observe(v);
  const auto s = h.snapshot();
  EXPECT_EQ(s.buckets, (std::vector<uint64_t>{2, 2, 1, 1}));
  EXPECT_EQ(s.count, 6u);
  EXPECT_EQ(s.sum, 0u + 10 + 11 + 100 + 500 + 5000);

  Registry r;
  ASSERT_TRUE(r.add("groupcoord_lat_seconds", "latency", Type::Histogram,
                    [&h](FamilyWriter& w) { w.histogram({{"api", "Heartbeat"}}, h.snapshot(), 1000.0); }));
  EXPECT_EQ(r.render(),
            "# HELP groupcoord_lat_seconds latency\n"
            "# TYPE groupcoord_lat_seconds histogram\n"
            "groupcoord_lat_seconds_bucket{api=\"Heartbeat\",le=\"0.01\"} 2\n"
            "groupcoord_lat_seconds_bucket{api=\"Heartbeat\",le=\"0.1\"} 4\n"
            "groupcoord_lat_seconds_bucket{api=\"Heartbeat\",le=\"1\"} 5\n"
            "groupcoord_lat_seconds_bucket{api=\"Heartbeat\",le=\"+Inf\"} 6\n"
            "groupcoord_lat_seconds_sum{api=\"Heartbeat\"} 5.621\n"
            "groupcoord_lat_seconds_count{api=\"Heartbeat\"} 6\n");
}

TEST(MetricsText, CountersAddUpAcrossThreads) {
  metrics::Counter c;
  Histogram h({5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.add();
        h.observe(static_cast<uint64_t>(i % 10));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 80000u);
  const auto s = h.snapshot();
  EXPECT_EQ(s.count, 80000u);
  EXPECT_EQ(s.buckets[0], 48000u);  // 0..5 of every ten
  EXPECT_EQ(s.sum, 8u * 1000 * 45);
}

TEST(MetricsText, TheDefaultBucketsSpanWhatTheIssueAsks) {
  const auto req = metrics::requestLatencyBoundsNs();
  EXPECT_EQ(req.front(), 5'000u);          // 5 us: a heartbeat's time inside the server
  EXPECT_EQ(metrics::stageBoundsNs().front(), 250u);
  EXPECT_EQ(req.back(), 1'000'000'000u);   // 1 s
  EXPECT_TRUE(std::is_sorted(req.begin(), req.end()));
}

TEST(MetricsText, SessionStatesCountReconnectsAndExpiries) {
  metrics::CoordinationMetrics m;
  m.sessionState(metrics::ZkState::Connected);
  m.sessionState(metrics::ZkState::Reconnecting);
  m.sessionState(metrics::ZkState::Connected);
  m.sessionState(metrics::ZkState::Expired);
  m.sessionState(metrics::ZkState::Connecting);
  m.sessionState(metrics::ZkState::Connected);
  EXPECT_EQ(m.zkReconnects.value(), 1u);
  EXPECT_EQ(m.zkExpiries.value(), 1u);
}

// A handler that answers at once with a set error, or holds `done`.
class ScriptedHandler : public protocol::Handler {
 public:
  ErrorCode answer = ErrorCode::NONE;
  bool hold = false;
  protocol::ResponseCallback held;
  void handle(const protocol::RequestHeader&, protocol::Request request, protocol::ResponseCallback done) override {
    if (hold) {
      held = std::move(done);
      return;
    }
    done(protocol::errorResponse(request, answer));
  }
};

TEST(RequestMetrics, EveryAnswerIsCountedByApiAndError) {
  ScriptedHandler inner;
  RequestMetrics m;
  CoordinatorStage coordinator(inner);
  MetricsStage<CoordinatorStage> metered(m, coordinator);
  int answered = 0;
  auto count = [&](protocol::Response) { ++answered; };
  protocol::RequestHeader hb;
  hb.apiKey = ApiKey::Heartbeat;
  metered.handle(protocol::Caller{}, nullptr, hb, protocol::HeartbeatRequest{"g", "m", 1}, count);
  inner.answer = ErrorCode::NOT_CONTROLLER;
  metered.handle(protocol::Caller{}, nullptr, hb, protocol::HeartbeatRequest{"g", "m", 1}, count);
  metered.handle(protocol::Caller{}, nullptr, hb, protocol::HeartbeatRequest{"g", "m", 1}, count);
  protocol::RequestHeader reg;
  reg.apiKey = ApiKey::RegisterConsumer;
  inner.hold = true;
  metered.handle(protocol::Caller{}, nullptr, reg, protocol::RegisterConsumerRequest{"g", "", {}}, count);
  EXPECT_EQ(m.requests(ApiKey::RegisterConsumer), 0u) << "counted before it was answered";
  inner.held(protocol::RegisterConsumerResponse{});
  EXPECT_EQ(answered, 4);
  EXPECT_EQ(m.requests(ApiKey::Heartbeat), 3u);
  EXPECT_EQ(m.errors(ApiKey::Heartbeat, ErrorCode::NOT_CONTROLLER), 2u);
  EXPECT_EQ(m.errors(ApiKey::Heartbeat, ErrorCode::NONE), 0u);
  EXPECT_EQ(m.requests(ApiKey::RegisterConsumer), 1u);
  // A code no slot is made for is still counted, and never out of bounds.
  m.record(ApiKey::Heartbeat, static_cast<ErrorCode>(32000), 5);
  m.record(ApiKey::Heartbeat, static_cast<ErrorCode>(-300), 5);
  m.record(static_cast<ApiKey>(999), ErrorCode::NOT_CONTROLLER, 5);  // ignored
  EXPECT_EQ(m.requests(ApiKey::Heartbeat), 5u);

  Registry r;
  m.registerWith(r);
  const auto samples = parseSamples(r.render());
  EXPECT_EQ(sample(samples, "groupcoord_requests_total{api=\"Heartbeat\"}"), 5.0);
  EXPECT_EQ(sample(samples, "groupcoord_requests_total{api=\"CreateGroup\"}"), 0.0);
  EXPECT_EQ(sample(samples, "groupcoord_request_errors_total{api=\"Heartbeat\",error=\"NOT_CONTROLLER\"}"), 2.0);
  EXPECT_EQ(sample(samples, "groupcoord_request_errors_total{api=\"Heartbeat\",error=\"OTHER\"}"), 2.0);
  EXPECT_FALSE(sample(samples, "groupcoord_request_errors_total{api=\"Heartbeat\",error=\"NONE\"}"));
  EXPECT_EQ(sample(samples, "groupcoord_request_duration_seconds_count{api=\"RegisterConsumer\"}"), 1.0);
  EXPECT_EQ(sample(samples, "groupcoord_request_duration_seconds_bucket{api=\"Heartbeat\",le=\"+Inf\"}"), 5.0);
}

// Answers inline heartbeats of generation 1 or more (NOT_CONTROLLER from
// generation 2 on); declines the others.
class InlineHandler : public ScriptedHandler {
 public:
  bool heartbeatNow(const protocol::Caller&, protocol::ConnectionSlot&, const protocol::HeartbeatView& r,
                    protocol::HeartbeatResponse& out, std::chrono::steady_clock::time_point readAt,
                    std::optional<GroupMotion>*) override {
    sawReadAt = readAt != std::chrono::steady_clock::time_point{};
    if (r.generation < 1) return false;
    out = protocol::HeartbeatResponse{r.generation, r.generation >= 2 ? ErrorCode::NOT_CONTROLLER : ErrorCode::NONE};
    return true;
  }
  bool sawReadAt = false;
};

TEST(RequestMetrics, TheMetricsStageCountsHeartbeatsAnsweredInlineOnceAndNotThoseDeclined) {
  InlineHandler inner;
  RequestMetrics m;
  CoordinatorStage coordinator(inner);
  MetricsStage<CoordinatorStage> metered(m, coordinator);
  EXPECT_TRUE(metered.recordsHeartbeatStages());
  EXPECT_FALSE(coordinator.recordsHeartbeatStages());
  ConnectionContext ctx;
  protocol::HeartbeatView hb;
  protocol::HeartbeatResponse out;
  hb.generation = 0;
  EXPECT_FALSE(metered.heartbeatNow(ctx, hb, out, {}, nullptr));
  EXPECT_EQ(m.requests(ApiKey::Heartbeat), 0u) << "declined: the general call counts it";
  hb.generation = 1;
  EXPECT_TRUE(metered.heartbeatNow(ctx, hb, out, {}, nullptr));
  EXPECT_TRUE(inner.sawReadAt) << "the handler is given the stage's clock reading";
  hb.generation = 2;
  EXPECT_TRUE(metered.heartbeatNow(ctx, hb, out, std::chrono::steady_clock::now(), nullptr));
  EXPECT_EQ(out.error, ErrorCode::NOT_CONTROLLER);
  EXPECT_EQ(m.requests(ApiKey::Heartbeat), 2u);
  EXPECT_EQ(m.errors(ApiKey::Heartbeat, ErrorCode::NOT_CONTROLLER), 1u);
}

TEST(RequestMetrics, HeartbeatStagesHaveAHistogramEach) {
  RequestMetrics m;
  // 300 ns to read, 2 us to decode, 40 us in the handler, 1 us to encode,
  // 7 us to send.
  m.heartbeatStages(server::HeartbeatStages{300, 2000, 40000, 1000, 7000});
  m.heartbeatStages(server::HeartbeatStages{300, 2000, 3000, 1000, 7000});
  Registry r;
  m.registerWith(r);
  const auto samples = parseSamples(r.render());
  for (const char* stage : {"wake_to_read", "decode", "handle", "encode", "write"}) {
    EXPECT_EQ(sample(samples, std::string("groupcoord_heartbeat_stage_seconds_count{stage=\"") + stage + "\"}"), 2.0)
        << stage;
  }
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_stage_seconds_bucket{stage=\"handle\",le=\"5e-06\"}"), 1.0);
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_stage_seconds_bucket{stage=\"handle\",le=\"5e-05\"}"), 2.0);
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_stage_seconds_bucket{stage=\"wake_to_read\",le=\"2.5e-07\"}"),
            0.0);
  EXPECT_NEAR(*sample(samples, "groupcoord_heartbeat_stage_seconds_sum{stage=\"handle\"}"), 43e-6, 1e-9);
}

TEST(RequestMetrics, StampedHeartbeatsAreTimedFromTheirArrivalByTheirGroupsMotion) {
  RequestMetrics m;
  using Motion = protocol::Handler::GroupMotion;
  // 300 ns to read, 2 us to decode, 3 us in the handler, 1 us to encode,
  // 7 us to send; the bytes waited 3 ms in the socket (arrival to read).
  server::HeartbeatStages inStep{300, 2000, 3000, 1000, 7000};
  inStep.arrivalToRead = 3'000'000;
  inStep.groupMotion = Motion::InStep;
  server::HeartbeatStages moving = inStep;
  moving.groupMotion = Motion::Moving;
  moving.arrivalToRead = 100;  // arrived after the loop woke: no wait for a wake-up
  server::HeartbeatStages unstamped = inStep;
  unstamped.arrivalToRead.reset();  // TLS: only the stages
  m.heartbeatStages(inStep);
  m.heartbeatStages(moving);
  m.heartbeatStages(unstamped);
  Registry r;
  m.registerWith(r);
  const auto samples = parseSamples(r.render());
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_stage_seconds_count{stage=\"handle\"}"), 3.0);
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_stage_seconds_count{stage=\"arrival_to_wake\"}"), 2.0);
  EXPECT_NEAR(*sample(samples, "groupcoord_heartbeat_stage_seconds_sum{stage=\"arrival_to_wake\"}"), 2'999'700e-9,
              1e-12);
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_latency_seconds_count{group=\"in_step\"}"), 1.0);
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_latency_seconds_count{group=\"moving\"}"), 1.0);
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_latency_seconds_count{group=\"unknown\"}"), 0.0);
  // Arrival to answer sent: 3 ms + 2 + 3 + 1 + 7 us.
  EXPECT_NEAR(*sample(samples, "groupcoord_heartbeat_latency_seconds_sum{group=\"in_step\"}"), 3.013e-3, 1e-12);
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_latency_seconds_bucket{group=\"in_step\",le=\"0.00251\"}"), 0.0);
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_latency_seconds_bucket{group=\"in_step\",le=\"0.00316\"}"), 1.0);
  EXPECT_EQ(sample(samples, "groupcoord_heartbeat_latency_seconds_bucket{group=\"moving\",le=\"1.58e-05\"}"), 1.0);
}

TEST(KafkaRequestMetrics, AnAnswerCountsWithItsFirstErrorCodeWhereverItIs) {
  namespace k = protocol::kafka;
  using K = KafkaRequestMetrics;
  EXPECT_EQ(K::errorOf(k::Response(k::HeartbeatResponse{})), k::ErrorCode::NONE);
  k::HeartbeatResponse hb;
  hb.error = k::ErrorCode::REBALANCE_IN_PROGRESS;
  EXPECT_EQ(K::errorOf(k::Response(hb)), k::ErrorCode::REBALANCE_IN_PROGRESS);
  // No error of its own: a partition's.
  k::OffsetCommitResponse commit;
  commit.topics.push_back({"t", {{0, k::ErrorCode::NONE}, {1, k::ErrorCode::OFFSET_METADATA_TOO_LARGE}}});
  EXPECT_EQ(K::errorOf(k::Response(commit)), k::ErrorCode::OFFSET_METADATA_TOO_LARGE);
  commit.topics[0].partitions[1].error = k::ErrorCode::NONE;
  EXPECT_EQ(K::errorOf(k::Response(commit)), k::ErrorCode::NONE);
  // A group's, in a list of groups.
  k::DescribeGroupsResponse groups;
  groups.groups.resize(2);
  groups.groups[1].error = k::ErrorCode::GROUP_AUTHORIZATION_FAILED;
  EXPECT_EQ(K::errorOf(k::Response(groups)), k::ErrorCode::GROUP_AUTHORIZATION_FAILED);
}

TEST(KafkaRequestMetrics, AnswersAreCountedByApiAndErrorAndRefusalsByReason) {
  namespace k = protocol::kafka;
  KafkaRequestMetrics m;
  const auto key = [](k::ApiKey a) { return static_cast<int16_t>(a); };
  m.answered(key(k::ApiKey::Heartbeat), k::ErrorCode::NONE);
  m.answered(key(k::ApiKey::Heartbeat), k::ErrorCode::REBALANCE_IN_PROGRESS);
  m.answered(key(k::ApiKey::Heartbeat), k::ErrorCode::REBALANCE_IN_PROGRESS);
  m.answered(key(k::ApiKey::OffsetCommit), k::ErrorCode::OFFSET_METADATA_TOO_LARGE);
  m.answered(key(k::ApiKey::OffsetCommit), static_cast<k::ErrorCode>(31000));  // no slot of its own
  m.answered(-1, k::ErrorCode::NONE);                                          // ignored
  m.answered(500, k::ErrorCode::NONE);                                         // ignored
  m.refused(KafkaRequestMetrics::Refusal::UnknownApi);
  m.refused(KafkaRequestMetrics::Refusal::BeforeSasl);
  m.refused(KafkaRequestMetrics::Refusal::BeforeSasl);
  EXPECT_EQ(m.requests(k::ApiKey::Heartbeat), 3u);
  EXPECT_EQ(m.errors(k::ApiKey::Heartbeat, k::ErrorCode::REBALANCE_IN_PROGRESS), 2u);
  EXPECT_EQ(m.errors(k::ApiKey::Heartbeat, k::ErrorCode::NONE), 0u);
  EXPECT_EQ(m.requests(k::ApiKey::OffsetCommit), 2u);
  EXPECT_EQ(m.refusals(KafkaRequestMetrics::Refusal::BeforeSasl), 2u);

  Registry r;
  m.registerWith(r);
  const auto samples = parseSamples(r.render());
  EXPECT_EQ(sample(samples, "groupcoord_kafka_requests_total{api=\"Heartbeat\"}"), 3.0);
  EXPECT_EQ(sample(samples, "groupcoord_kafka_requests_total{api=\"OffsetCommit\"}"), 2.0);
  EXPECT_EQ(sample(samples, "groupcoord_kafka_requests_total{api=\"JoinGroup\"}"), 0.0);
  EXPECT_FALSE(sample(samples, "groupcoord_kafka_requests_total{api=\"Unknown\"}")) << "only served APIs";
  EXPECT_EQ(sample(samples, "groupcoord_kafka_request_errors_total{api=\"Heartbeat\",error=\"REBALANCE_IN_PROGRESS\"}"),
            2.0);
  EXPECT_EQ(
      sample(samples, "groupcoord_kafka_request_errors_total{api=\"OffsetCommit\",error=\"OFFSET_METADATA_TOO_LARGE\"}"),
      1.0);
  EXPECT_EQ(sample(samples, "groupcoord_kafka_request_errors_total{api=\"OffsetCommit\",error=\"OTHER\"}"), 1.0);
  EXPECT_FALSE(sample(samples, "groupcoord_kafka_request_errors_total{api=\"Heartbeat\",error=\"NONE\"}"));
  EXPECT_EQ(sample(samples, "groupcoord_kafka_requests_refused_total{reason=\"unknown_api\"}"), 1.0);
  EXPECT_EQ(sample(samples, "groupcoord_kafka_requests_refused_total{reason=\"before_sasl\"}"), 2.0);
  EXPECT_EQ(sample(samples, "groupcoord_kafka_requests_refused_total{reason=\"malformed\"}"), 0.0);
}

TEST(RequestMetrics, ConnectionFamiliesReadTheServerStats) {
  TcpServerStats stats;
  stats.connectionsOpen = 3;
  stats.connectionsAccepted = 10;
  stats.requestsReceived = 50;
  stats.handlerCalls = 46;
  stats.closedByReason[static_cast<size_t>(CloseReason::FrameTooLarge)] = 2;
  Registry r;
  registerConnectionMetrics(r, [&stats] { return stats; });
  const auto samples = parseSamples(r.render());
  EXPECT_EQ(sample(samples, "groupcoord_connections_open"), 3.0);
  EXPECT_EQ(sample(samples, "groupcoord_connections_accepted_total"), 10.0);
  EXPECT_EQ(sample(samples, "groupcoord_connections_closed_total{reason=\"frame too large\"}"), 2.0);
  EXPECT_EQ(sample(samples, "groupcoord_requests_refused_total"), 4.0);
}

TEST(HttpOptions, ThePortCanBeAnyFreeOneOrOff) {
  auto load = [](const std::string& port) {
    return loadConfig(ConfigSources{{{"http.port", port}}, {}, ""});
  };
  EXPECT_TRUE(load("0").ok());
  EXPECT_TRUE(load("-1").ok());
  EXPECT_EQ(load("7401").config.httpPort, 7401);
  EXPECT_FALSE(load("-2").ok());
  EXPECT_FALSE(load("65536").ok());
  EXPECT_NE(load("seven").error.find("http.port"), std::string::npos);
  const ConfigResult fromEnv =
      loadConfig(ConfigSources{{}, {{"GROUPCOORDD_HTTP_ADDRESS", "127.0.0.2"}, {"GROUPCOORDD_HTTP_PORT", "9"}}, ""});
  ASSERT_TRUE(fromEnv.ok()) << fromEnv.error;
  EXPECT_EQ(fromEnv.config.effectiveHttpAddress(), "127.0.0.2");
  EXPECT_EQ(fromEnv.config.httpPort, 9);
  ServerConfig defaults;
  EXPECT_EQ(defaults.httpPort, 7401);
  defaults.listenAddress = "10.1.2.3";
  EXPECT_EQ(defaults.effectiveHttpAddress(), "10.1.2.3");
}

class HttpEndpoints : public ::testing::Test {
 protected:
  void SetUp() override {
    counter_.add(41);
    registry_.addCounter("groupcoord_things_total", "Things", counter_);
    HttpOptions o;
    o.address = "127.0.0.1";
    o.port = 0;
    server_ = std::make_unique<HttpServer>(o, registry_, [this] { return std::string(notReady_ ? "no ZooKeeper" : ""); });
    std::string error;
    ASSERT_TRUE(server_->start(&error)) << error;
    ASSERT_NE(server_->port(), 0);
  }

  metrics::Counter counter_;
  Registry registry_;
  std::atomic<bool> notReady_{false};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpEndpoints, MetricsAreServedInTheTextFormat) {
  counter_.add();
  const HttpReply r = httpGet(server_->port(), "/metrics");
  ASSERT_EQ(r.status, 200) << r.headers;
  EXPECT_NE(r.headers.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"), std::string::npos) << r.headers;
  EXPECT_EQ(r.body, "# HELP groupcoord_things_total Things\n# TYPE groupcoord_things_total counter\n"
                    "groupcoord_things_total 42\n");
  // A query string does not change the path.
  EXPECT_EQ(httpGet(server_->port(), "/metrics?name[]=x").status, 200);
}

TEST_F(HttpEndpoints, LiveAlwaysReadyOnlyWhenTheBackendSaysSo) {
  EXPECT_EQ(httpGet(server_->port(), "/health/live").status, 200);
  HttpReply ready = httpGet(server_->port(), "/health/ready");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "ready\n");
  notReady_ = true;
  ready = httpGet(server_->port(), "/health/ready");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.body, "not ready: no ZooKeeper\n");
  EXPECT_EQ(httpGet(server_->port(), "/health/live").status, 200);
}

TEST_F(HttpEndpoints, BadRequestsGetADefinedAnswerAndTheServerGoesOn) {
  const uint16_t port = server_->port();
  EXPECT_EQ(httpGet(port, "/").status, 404);
  EXPECT_EQ(httpGet(port, "/metricsx").status, 404);
  EXPECT_EQ(httpGet(port, "/health").status, 404);
  const HttpReply post = httpRequest(port, "POST", "/metrics");
  EXPECT_EQ(post.status, 405);
  EXPECT_NE(post.headers.find("Allow: GET"), std::string::npos) << post.headers;
  EXPECT_EQ(httpRequest(port, "DELETE", "/health/live").status, 405);
  EXPECT_EQ(httpRequest(port, "HEAD", "/health/live").status, 405);
  // A GET with a body.
  EXPECT_EQ(httpRaw(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello").status, 400);
  // A POST announcing a huge body is answered without reading it.
  EXPECT_EQ(httpRaw(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\nabc").status, 405);
  // Over-long URI and header, too many header fields, garbage: refused by the parser.
  EXPECT_EQ(httpRaw(port, "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n").status, 400);
  EXPECT_EQ(httpRaw(port, "GET /metrics HTTP/1.1\r\nX: " + std::string(20000, 'b') + "\r\n\r\n").status, 400);
  std::string many = "GET /metrics HTTP/1.1\r\n";
  for (int i = 0; i < 200; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(httpRaw(port, many + "\r\n").status, 400);
  const HttpReply garbage = httpRaw(port, std::string("\x01\x02\x03 nonsense\r\n\r\n", 17), std::chrono::seconds(3));
  EXPECT_TRUE(garbage.status == 400 || garbage.status == 0) << garbage.status;
  // Through all of it, it still serves.
  EXPECT_EQ(httpGet(port, "/metrics").status, 200);
  EXPECT_EQ(httpGet(port, "/health/live").status, 200);
}

TEST_F(HttpEndpoints, ManyClientsAtOnceAreAllAnsweredByTheBoundedPool) {
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 16; ++i) {
    clients.emplace_back([&] {
      for (int j = 0; j < 5; ++j) {
        if (httpGet(server_->port(), "/metrics").status == 200) ok.fetch_add(1);
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 80);
}

TEST_F(HttpEndpoints, StopEndsServingAndAnotherServerCannotTakeABusyPort) {
  HttpOptions clash;
  clash.address = "127.0.0.1";
  clash.port = server_->port();
  HttpServer second(clash, registry_, nullptr);
  std::string error;
  // SO_REUSEADDR does not let two listeners share a port.
  EXPECT_FALSE(second.start(&error));
  EXPECT_NE(error.find("cannot serve HTTP on 127.0.0.1:" + std::to_string(server_->port())), std::string::npos)
      << error;
  const uint16_t port = server_->port();
  server_->stop();
  server_->stop();  // idempotent
  EXPECT_EQ(httpGet(port, "/health/live").status, 0);
}

}  // namespace
}  // namespace groupcoord::servertest
