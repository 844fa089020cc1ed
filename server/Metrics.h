#pragma once

// groupcoordd's request and connection metrics.
//
// RequestMetrics counts every request that reaches the Handler, by API, its
// answer's error code and its latency (from the request being read to its answer). It is
// updated on the I/O threads and wherever `done` runs, without a lock:
// one histogram observation (two relaxed additions on the thread's own
// stripe) per request, one more relaxed addition when the answer is an error.
//
// groupcoordd hands RequestMetrics to the TCP server as its RequestObserver
// (TcpServerOptions::observer); the server's handler chain puts a
// MetricsStage (server/Chain.h) at its head that reports to it.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "metrics/Metrics.h"
#include "metrics/Registry.h"
#include "protocol/Handler.h"
#include "protocol/kafka/Messages.h"
#include "server/TcpServer.h"

namespace groupcoord::server {

class RequestMetrics final : public RequestObserver {
 public:
  RequestMetrics();

  // Any thread. An api outside the protocol's range is ignored.
  void record(protocol::ApiKey api, protocol::ErrorCode error, uint64_t nanos);
  // RequestObserver: the TCP server reports each answered request here
  // (TcpServerOptions::observer), which is how groupcoordd records them.
  void answered(protocol::ApiKey api, protocol::ErrorCode error, uint64_t nanos) override { record(api, error, nanos); }
  // Counted as heartbeats; their time into groupcoord_heartbeat_held_seconds.
  void answeredHeld(protocol::ErrorCode error, uint64_t nanos) override;
  // The sampled stages of heartbeats answered on the I/O threads.
  void heartbeatStages(const HeartbeatStages& stages) override;

  uint64_t requests(protocol::ApiKey api) const;
  uint64_t errors(protocol::ApiKey api, protocol::ErrorCode error) const;

  // Adds groupcoord_requests_total, groupcoord_request_errors_total,
  // groupcoord_request_duration_seconds,
  // groupcoord_heartbeat_stage_seconds and
  // groupcoord_heartbeat_latency_seconds. Start-up; this object must
  // outlive the registry's scrapes.
  void registerWith(metrics::Registry& registry) const;

 private:
  // Error codes -1 .. kErrorSlots-3 have a slot of their own (code + 1);
  // any other value shares the last one.
  static constexpr size_t kErrorSlots = 66;
  static size_t errorSlot(protocol::ErrorCode error);

  std::array<std::unique_ptr<metrics::Histogram>, protocol::kApiCount> latency_;
  // wake_to_read, decode, handle, encode, write (HeartbeatStages's order),
  // then arrival_to_wake (only the samples whose arrival the kernel stamped).
  static constexpr std::array<const char*, 6> kStageNames{"wake_to_read", "decode", "handle",
                                                          "encode",       "write",  "arrival_to_wake"};
  std::array<std::unique_ptr<metrics::Histogram>, kStageNames.size()> stages_;
  // The same samples' whole time, from the kernel's receipt of their bytes
  // to their answer sent, by their group's motion (in step, moving, or not
  // said: protocol::Handler::heartbeatNow's `motion`).
  static constexpr std::array<const char*, 3> kGroupMotions{"in_step", "moving", "unknown"};
  std::array<std::unique_ptr<metrics::Histogram>, kGroupMotions.size()> heartbeatByGroupMotion_;
  std::array<std::array<std::atomic<uint64_t>, kErrorSlots>, protocol::kApiCount> errors_{};
  // Heartbeats with a wait: from their read to their answer.
  std::unique_ptr<metrics::Histogram> held_;
};

// The Kafka port's requests (server/KafkaPort.h), counted as RequestMetrics
// counts the binary port's: every answer by API and, when it carries an
// error code, by API and error (the answer's first code that is not NONE:
// its own, or a partition's, a group's); and the requests the port refused
// by closing the connection, by why. Any thread, relaxed atomic additions,
// no lock.
class KafkaRequestMetrics {
 public:
  enum class Refusal : uint8_t {
    UnknownApi,          // an API the port does not serve
    UnsupportedVersion,  // a served API at a version it does not
    Malformed,           // a body that does not decode
    BeforeSasl,          // anything but SASL before authentication
  };
  static constexpr size_t kRefusalCount = 4;
  static std::string_view refusalName(Refusal r);  // "unknown_api", ...

  // An answer of API `api` (a Kafka ApiKey); a key outside 0..63 is ignored.
  void answered(int16_t api, protocol::kafka::ErrorCode error);
  void refused(Refusal why);
  // The error code an answer is counted with (NONE when it has none).
  static protocol::kafka::ErrorCode errorOf(const protocol::kafka::Response& response);

  uint64_t requests(protocol::kafka::ApiKey api) const;
  uint64_t errors(protocol::kafka::ApiKey api, protocol::kafka::ErrorCode error) const;
  uint64_t refusals(Refusal why) const;

  // Adds groupcoord_kafka_requests_total (every served API, 0 included),
  // groupcoord_kafka_request_errors_total (the pairs seen) and
  // groupcoord_kafka_requests_refused_total (by reason). Start-up; this
  // object must outlive the registry's scrapes.
  void registerWith(metrics::Registry& registry) const;

 private:
  // Every served ApiKey has a slot (the highest: ConsumerGroupDescribe, 69).
  static constexpr size_t kApiSlots = 70;
  // Error codes -1 .. kErrorSlots-3 have a slot of their own (code + 1);
  // any other value shares the last one.
  static constexpr size_t kErrorSlots = 130;
  static size_t errorSlot(protocol::kafka::ErrorCode error);

  std::array<std::atomic<uint64_t>, kApiSlots> requests_{};
  std::array<std::array<std::atomic<uint64_t>, kErrorSlots>, kApiSlots> errors_{};
  std::array<std::atomic<uint64_t>, kRefusalCount> refused_{};
};

// Adds the connection metrics, read from `stats` at each scrape:
// groupcoord_connections_open, _accepted_total, _rejected_total,
// _closed_total{reason}, and groupcoord_requests_refused_total (frames the
// server answered itself: undecodable, unknown API or version, bad names).
void registerConnectionMetrics(metrics::Registry& registry, std::function<TcpServerStats()> stats);

}  // namespace groupcoord::server
