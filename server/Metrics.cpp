#include "server/Metrics.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace groupcoord::server {

namespace {
using Clock = std::chrono::steady_clock;

std::string apiLabel(size_t api) { return std::string(protocol::apiName(static_cast<protocol::ApiKey>(api))); }
}  // namespace

RequestMetrics::RequestMetrics() {
  for (auto& h : latency_) h = std::make_unique<metrics::Histogram>(metrics::requestLatencyBoundsNs());
  for (auto& h : stages_) h = std::make_unique<metrics::Histogram>(metrics::stageBoundsNs());
  for (auto& h : heartbeatByGroupMotion_) h = std::make_unique<metrics::Histogram>(metrics::heartbeatLatencyBoundsNs());
  held_ = std::make_unique<metrics::Histogram>(metrics::handoverDurationBoundsNs());
}

void RequestMetrics::answeredHeld(protocol::ErrorCode error, uint64_t nanos) {
  held_->observe(nanos);
  const auto index = static_cast<size_t>(protocol::ApiKey::Heartbeat);
  if (error != protocol::ErrorCode::NONE) errors_[index][errorSlot(error)].fetch_add(1, std::memory_order_relaxed);
}

void RequestMetrics::heartbeatStages(const HeartbeatStages& s) {
  stages_[0]->observe(s.wakeToRead);
  stages_[1]->observe(s.decode);
  stages_[2]->observe(s.handle);
  stages_[3]->observe(s.encode);
  stages_[4]->observe(s.write);
  if (!s.arrivalToRead) return;
  // Bytes that arrived after the loop woke (read in the same turn) waited
  // for no wake-up.
  stages_[5]->observe(*s.arrivalToRead > s.wakeToRead ? *s.arrivalToRead - s.wakeToRead : 0);
  using Motion = protocol::Handler::GroupMotion;
  const size_t motion = !s.groupMotion ? 2 : *s.groupMotion == Motion::InStep ? 0 : 1;
  heartbeatByGroupMotion_[motion]->observe(*s.arrivalToRead + s.decode + s.handle + s.encode + s.write);
}

size_t RequestMetrics::errorSlot(protocol::ErrorCode error) {
  const int slot = static_cast<int>(error) + 1;
  return slot >= 0 && slot < static_cast<int>(kErrorSlots) - 1 ? static_cast<size_t>(slot) : kErrorSlots - 1;
}

void RequestMetrics::record(protocol::ApiKey api, protocol::ErrorCode error, uint64_t nanos) {
  const auto index = static_cast<size_t>(api);
  if (index >= latency_.size()) return;
  latency_[index]->observe(nanos);
  if (error != protocol::ErrorCode::NONE) errors_[index][errorSlot(error)].fetch_add(1, std::memory_order_relaxed);
}

uint64_t RequestMetrics::requests(protocol::ApiKey api) const {
  const auto index = static_cast<size_t>(api);
  if (index >= latency_.size()) return 0;
  return latency_[index]->snapshot().count + (api == protocol::ApiKey::Heartbeat ? held_->snapshot().count : 0);
}

uint64_t RequestMetrics::errors(protocol::ApiKey api, protocol::ErrorCode error) const {
  const auto index = static_cast<size_t>(api);
  return index < latency_.size() ? errors_[index][errorSlot(error)].load(std::memory_order_relaxed) : 0;
}

void RequestMetrics::registerWith(metrics::Registry& r) const {
  r.add("groupcoord_requests_total", "Requests answered by the coordinator, by API", metrics::Type::Counter,
        [this](metrics::FamilyWriter& w) {
          for (size_t api = 0; api < latency_.size(); ++api) {
            w.value({{"api", apiLabel(api)}}, static_cast<double>(requests(static_cast<protocol::ApiKey>(api))));
          }
        });
  r.add("groupcoord_request_errors_total",
        "Requests answered with an error code, by API and error (only pairs seen so far)", metrics::Type::Counter,
        [this](metrics::FamilyWriter& w) {
          for (size_t api = 0; api < latency_.size(); ++api) {
            for (size_t slot = 0; slot < kErrorSlots; ++slot) {
              const uint64_t n = errors_[api][slot].load(std::memory_order_relaxed);
              if (n == 0) continue;
              std::string name = "OTHER";
              if (slot < kErrorSlots - 1) {
                const auto code = static_cast<protocol::ErrorCode>(static_cast<int>(slot) - 1);
                name = std::string(protocol::errorName(code));
                if (name == "UNKNOWN_ERROR_CODE") name = std::to_string(static_cast<int>(code));
              }
              w.value({{"api", apiLabel(api)}, {"error", name}}, static_cast<double>(n));
            }
          }
        });
  r.add("groupcoord_request_duration_seconds",
        "Time from a request being read to its answer, by API", metrics::Type::Histogram,
        [this](metrics::FamilyWriter& w) {
          for (size_t api = 0; api < latency_.size(); ++api) {
            w.histogram({{"api", apiLabel(api)}}, latency_[api]->snapshot(), 1e9);
          }
        });
  r.add("groupcoord_heartbeat_stage_seconds",
        "Where a heartbeat answered on its I/O thread spends its time, sampled (one read in 8): from the loop's "
        "wake-up to the read, decoding, the handler (lock waits included), encoding, and until its last byte is "
        "sent",
        metrics::Type::Histogram, [this](metrics::FamilyWriter& w) {
          for (size_t i = 0; i < stages_.size(); ++i) w.histogram({{"stage", kStageNames[i]}}, stages_[i]->snapshot(), 1e9);
        });
  r.add("groupcoord_heartbeat_held_seconds",
        "Heartbeats with a wait (version 1), from their read to their answer: held at the controller until "
        "something changed for their member or their wait ran out (docs/design.md, \"Held heartbeats\"); not in "
        "groupcoord_request_duration_seconds",
        metrics::Type::Histogram, [this](metrics::FamilyWriter& w) { w.histogram({}, held_->snapshot(), 1e9); });
  r.add("groupcoord_heartbeat_latency_seconds",
        "The sampled heartbeats of groupcoord_heartbeat_stage_seconds whose arrival the kernel stamped (plain TCP), "
        "from the kernel's receipt of the last packet read with them until their answer's last byte is sent, by "
        "their group's motion: in_step (every member heard at the current generation and holding what it gives "
        "it, no membership change waiting), moving, or unknown (a group not served here)",
        metrics::Type::Histogram, [this](metrics::FamilyWriter& w) {
          for (size_t i = 0; i < heartbeatByGroupMotion_.size(); ++i) {
            w.histogram({{"group", kGroupMotions[i]}}, heartbeatByGroupMotion_[i]->snapshot(), 1e9);
          }
        });
}

namespace {

namespace kafka = protocol::kafka;

// Walks a Kafka response's fields (their `fields` lists) in wire order and
// keeps the first error code that is not NONE.
struct FirstKafkaError {
  kafka::ErrorCode found = kafka::ErrorCode::NONE;
  template <class T, class... Extra>
  void operator()(const T& value, std::string_view, std::string_view, const Extra&...) {
    look(value);
  }
  void look(const kafka::ErrorCode& e) {
    if (found == kafka::ErrorCode::NONE) found = e;
  }
  template <class T>
  void look(const std::vector<T>& values) {
    for (const auto& v : values) look(v);
  }
  template <class T>
  void look(const std::optional<T>& value) {
    if (value) look(*value);
  }
  template <class T>
  void look(const T& m) {
    if constexpr (requires { T::fields(*this, m); }) T::fields(*this, m);
  }
};

}  // namespace

std::string_view KafkaRequestMetrics::refusalName(Refusal r) {
  switch (r) {
    case Refusal::UnknownApi:
      return "unknown_api";
    case Refusal::UnsupportedVersion:
      return "unsupported_version";
    case Refusal::Malformed:
      return "malformed";
    case Refusal::BeforeSasl:
      return "before_sasl";
  }
  return "other";
}

kafka::ErrorCode KafkaRequestMetrics::errorOf(const kafka::Response& response) {
  FirstKafkaError walk;
  std::visit([&](const auto& r) { walk.look(r); }, response);
  return walk.found;
}

size_t KafkaRequestMetrics::errorSlot(kafka::ErrorCode error) {
  const int slot = static_cast<int>(error) + 1;
  return slot >= 0 && slot < static_cast<int>(kErrorSlots) - 1 ? static_cast<size_t>(slot) : kErrorSlots - 1;
}

void KafkaRequestMetrics::answered(int16_t api, kafka::ErrorCode error) {
  static_assert(
      []<size_t... I>(std::index_sequence<I...>) {
        return ((static_cast<size_t>(std::variant_alternative_t<I, kafka::Request>::kApiKey) < kApiSlots) && ...);
      }(std::make_index_sequence<std::variant_size_v<kafka::Request>>{}),
      "every served Kafka API has a slot");
  if (api < 0 || static_cast<size_t>(api) >= kApiSlots) return;
  const auto index = static_cast<size_t>(api);
  requests_[index].fetch_add(1, std::memory_order_relaxed);
  if (error != kafka::ErrorCode::NONE) errors_[index][errorSlot(error)].fetch_add(1, std::memory_order_relaxed);
}

void KafkaRequestMetrics::refused(Refusal why) {
  refused_[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
}

uint64_t KafkaRequestMetrics::requests(kafka::ApiKey api) const {
  const auto index = static_cast<size_t>(api);
  return index < kApiSlots ? requests_[index].load(std::memory_order_relaxed) : 0;
}

uint64_t KafkaRequestMetrics::errors(kafka::ApiKey api, kafka::ErrorCode error) const {
  const auto index = static_cast<size_t>(api);
  return index < kApiSlots ? errors_[index][errorSlot(error)].load(std::memory_order_relaxed) : 0;
}

uint64_t KafkaRequestMetrics::refusals(Refusal why) const {
  return refused_[static_cast<size_t>(why)].load(std::memory_order_relaxed);
}

void KafkaRequestMetrics::registerWith(metrics::Registry& r) const {
  r.add("groupcoord_kafka_requests_total", "Requests answered on the Kafka port, by API", metrics::Type::Counter,
        [this](metrics::FamilyWriter& w) {
          for (size_t api = 0; api < kApiSlots; ++api) {
            const std::string_view name = kafka::apiName(static_cast<int16_t>(api));
            if (name == "Unknown") continue;
            w.value({{"api", std::string(name)}}, static_cast<double>(requests_[api].load(std::memory_order_relaxed)));
          }
        });
  r.add("groupcoord_kafka_request_errors_total",
        "Requests answered on the Kafka port with an error code (the answer's first one: its own, or a "
        "partition's or a group's), by API and error (only pairs seen so far)",
        metrics::Type::Counter, [this](metrics::FamilyWriter& w) {
          for (size_t api = 0; api < kApiSlots; ++api) {
            for (size_t slot = 0; slot < kErrorSlots; ++slot) {
              const uint64_t n = errors_[api][slot].load(std::memory_order_relaxed);
              if (n == 0) continue;
              std::string name = "OTHER";
              if (slot < kErrorSlots - 1) {
                const auto code = static_cast<kafka::ErrorCode>(static_cast<int>(slot) - 1);
                name = std::string(kafka::errorName(code));
                if (name == "UNKNOWN_ERROR_CODE") name = std::to_string(static_cast<int>(code));
              }
              w.value({{"api", std::string(kafka::apiName(static_cast<int16_t>(api)))}, {"error", name}},
                      static_cast<double>(n));
            }
          }
        });
  r.add("groupcoord_kafka_requests_refused_total",
        "Kafka port requests answered by closing the connection, by reason: an API or a version the port does not "
        "serve, a body that does not decode, a request before SASL authentication",
        metrics::Type::Counter, [this](metrics::FamilyWriter& w) {
          for (size_t i = 0; i < kRefusalCount; ++i) {
            w.value({{"reason", std::string(refusalName(static_cast<Refusal>(i)))}},
                    static_cast<double>(refused_[i].load(std::memory_order_relaxed)));
          }
        });
}

void registerConnectionMetrics(metrics::Registry& r, std::function<TcpServerStats()> stats) {
  r.addGauge("groupcoord_connections_open", "Client connections open now",
             [stats] { return static_cast<double>(stats().connectionsOpen); });
  r.add("groupcoord_connections_accepted_total", "Client connections accepted and served", metrics::Type::Counter,
        [stats](metrics::FamilyWriter& w) { w.value(static_cast<double>(stats().connectionsAccepted)); });
  r.add("groupcoord_connections_rejected_total",
        "Client connections closed at once because max.connections was reached", metrics::Type::Counter,
        [stats](metrics::FamilyWriter& w) { w.value(static_cast<double>(stats().connectionsRejected)); });
  r.add("groupcoord_connections_closed_total", "Client connections closed, by reason", metrics::Type::Counter,
        [stats](metrics::FamilyWriter& w) {
          const TcpServerStats s = stats();
          for (size_t i = 0; i < kCloseReasonCount; ++i) {
            const auto reason = static_cast<CloseReason>(i);
            w.value({{"reason", std::string(closeReasonName(reason))}}, static_cast<double>(s.closed(reason)));
          }
        });
  r.add("groupcoord_requests_refused_total",
        "Request frames the server answered itself without reaching the coordinator (undecodable, unknown API or "
        "version, invalid names)",
        metrics::Type::Counter, [stats](metrics::FamilyWriter& w) {
          const TcpServerStats s = stats();
          w.value(static_cast<double>(s.requestsReceived >= s.handlerCalls ? s.requestsReceived - s.handlerCalls : 0));
        });
}

}  // namespace groupcoord::server
