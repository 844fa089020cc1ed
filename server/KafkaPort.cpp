#include "server/KafkaPort.h"

#include <atomic>
#include <exception>
#include <string>
#include <utility>
#include <variant>

#include <spdlog/spdlog.h>

#include "common/LogRateLimiter.h"
#include "protocol/kafka/Codec.h"

namespace groupcoord::server {

namespace {

namespace kafka = protocol::kafka;

LogRateLimiter gRefusedLog{std::chrono::seconds(1)};
LogRateLimiter gHandlerLog{std::chrono::seconds(1)};

struct KafkaSession final : net::ProtocolSession {
  protocol::Caller caller;
  std::string peer;  // "host:port", for the logs
};

// The answer of `api` with `error` at its top where it has one (and empty
// lists where it has none): what a request gets when its handler lost it.
kafka::Response errorAnswer(int16_t api, kafka::ErrorCode error) {
  kafka::Response out;
  bool found = false;
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((!found && std::variant_alternative_t<I, kafka::Response>::kApiKey == static_cast<kafka::ApiKey>(api)
          ? (out.emplace<I>(), found = true)
          : false),
     ...);
  }(std::make_index_sequence<std::variant_size_v<kafka::Response>>{});
  std::visit(
      [&](auto& r) {
        if constexpr (requires { r.error; }) r.error = error;
      },
      out);
  return out;
}

void send(net::Reply& reply, int32_t correlationId, int16_t version, const kafka::Response& response) {
  reply.send([&](std::vector<uint8_t>& out) { kafka::encodeResponse(correlationId, version, response, out); });
}

// The state behind one `done`: answers exactly once; a `done` destroyed
// unanswered answers UNKNOWN_SERVER_ERROR, so the connection's later
// answers are not held back by a lost callback.
class PendingAnswer {
 public:
  PendingAnswer(net::Reply reply, const kafka::RequestHeader& h)
      : reply_(std::move(reply)), api_(h.apiKey), version_(h.apiVersion), correlationId_(h.correlationId) {}
  ~PendingAnswer() {
    if (answered_.load(std::memory_order_acquire) || reply_.connectionClosed()) return;
    spdlog::error("the Kafka handler dropped {} (correlation id {}) without answering; answering UNKNOWN_SERVER_ERROR",
                  kafka::apiName(api_), correlationId_);
    send(reply_, correlationId_, version_, errorAnswer(api_, kafka::ErrorCode::UNKNOWN_SERVER_ERROR));
  }
  void answer(kafka::Response response) {
    if (answered_.exchange(true, std::memory_order_acq_rel)) {
      spdlog::error("the Kafka handler answered {} (correlation id {}) twice; the second answer is dropped",
                    kafka::apiName(api_), correlationId_);
      return;
    }
    const bool sameApi = std::visit([&](const auto& r) { return static_cast<int16_t>(r.kApiKey) == api_; }, response);
    if (!sameApi) {
      spdlog::error("the Kafka handler answered {} (correlation id {}) with another API's response",
                    kafka::apiName(api_), correlationId_);
      response = errorAnswer(api_, kafka::ErrorCode::UNKNOWN_SERVER_ERROR);
    }
    send(reply_, correlationId_, version_, response);
  }

 private:
  net::Reply reply_;
  const int16_t api_;
  const int16_t version_;
  const int32_t correlationId_;
  std::atomic<bool> answered_{false};
};

}  // namespace

int32_t KafkaProtocol::minRequestBody() const { return kafka::kMinRequestBody; }

std::unique_ptr<net::ProtocolSession> KafkaProtocol::open(const net::Peer& peer) {
  auto s = std::make_unique<KafkaSession>();
  s->caller.host = peer.host;
  s->caller.port = peer.port;
  s->caller.connection = peer.serial;
  s->caller.internal = peer.internal;
  s->caller.tls = peer.tls;
  s->peer = peer.address();
  return s;
}

// Heartbeats are answered even past the loop turn's budget, as on the
// binary port (docs/design.md, "Heartbeats").
bool KafkaProtocol::urgent(std::span<const uint8_t> body) const {
  return body.size() >= 2 && body[0] == 0 && body[1] == static_cast<uint8_t>(kafka::ApiKey::Heartbeat);
}

// A heartbeat the handler answers now (Handler::heartbeatNow): no decoded
// request, no reply slot, no callback. Anything peekHeartbeat does not
// accept, and a heartbeat the handler leaves, takes the general path.
bool KafkaProtocol::answerNow(net::ProtocolSession& session, std::span<const uint8_t> body, std::vector<uint8_t>& out,
                              net::InlineSample*) {
  kafka::HeartbeatView r;
  if (!kafka::peekHeartbeat(body, r)) return false;
  kafka::ErrorCode error = kafka::ErrorCode::NONE;
  try {
    if (!handler_.heartbeatNow(static_cast<KafkaSession&>(session).caller, r, &error)) return false;
  } catch (...) {
    return false;  // the general path answers it, and logs what goes wrong
  }
  kafka::appendHeartbeatResponse(r.correlationId, r.apiVersion, error, out);
  return true;
}

net::Dispatched KafkaProtocol::dispatch(net::ProtocolSession& session, std::span<const uint8_t> body,
                                        net::Reply reply) {
  auto& s = static_cast<KafkaSession&>(session);
  kafka::DecodedRequest decoded = kafka::decodeRequest(body);
  const kafka::RequestHeader& h = decoded.header;
  if (decoded.status == kafka::DecodeStatus::UnsupportedVersion && h.apiKey == static_cast<int16_t>(kafka::ApiKey::ApiVersions)) {
    // A client trying its newest ApiVersions first: the served range, at
    // version 0, so it asks again at a version both speak.
    reply.send([&](std::vector<uint8_t>& out) { kafka::encodeApiVersionsFallback(h.correlationId, out); });
    return net::Dispatched::Answered;
  }
  if (decoded.status != kafka::DecodeStatus::Ok) {
    uint64_t suppressed = 0;
    if (gRefusedLog.allow(&suppressed)) {
      spdlog::warn("closing the Kafka connection from {} (client id \"{}\"): {} {} version {} (correlation id {}): "
                   "{}{}{}",
                   s.peer, h.clientId.value_or(""), kafka::decodeStatusName(decoded.status),
                   kafka::apiName(h.apiKey), h.apiVersion, h.correlationId, decoded.detail,
                   decoded.status == kafka::DecodeStatus::Ok ? "" : "; served APIs and versions: docs/kafka.md",
                   suppressed ? fmt::format(" ({} similar lines suppressed)", suppressed) : std::string());
    }
    return net::Dispatched::Refused;
  }
  if (std::holds_alternative<kafka::ApiVersionsRequest>(decoded.request)) {
    const kafka::Response answer = kafka::apiVersionsResponse();
    send(reply, h.correlationId, h.apiVersion, answer);
    return net::Dispatched::Answered;
  }
  auto pending = std::make_shared<PendingAnswer>(std::move(reply), h);
  kafka::ResponseCallback done = [pending](kafka::Response r) { pending->answer(std::move(r)); };
  try {
    handler_.handle(s.caller, h, std::move(decoded.request), std::move(done));
  } catch (const std::exception& e) {
    uint64_t suppressed = 0;
    if (gHandlerLog.allow(&suppressed)) {
      spdlog::error("the Kafka handler threw on {} (correlation id {}): {}", kafka::apiName(h.apiKey),
                    h.correlationId, e.what());
    }
  } catch (...) {
    uint64_t suppressed = 0;
    if (gHandlerLog.allow(&suppressed)) {
      spdlog::error("the Kafka handler threw on {} (correlation id {})", kafka::apiName(h.apiKey), h.correlationId);
    }
  }
  return net::Dispatched::Handler;
}

}  // namespace groupcoord::server
