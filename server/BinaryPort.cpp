#include "server/BinaryPort.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/LogRateLimiter.h"
#include "protocol/Codec.h"

namespace groupcoord::server {

namespace {

using Clock = std::chrono::steady_clock;

LogRateLimiter gHandlerLog{std::chrono::seconds(1)};

// What the binary protocol keeps per connection: the chain's context.
struct BinarySession final : net::ProtocolSession {
  ConnectionContext ctx;
  std::string peer;  // "host:port", for the logs
};

// A request of the given API with every field at its default, so that
// protocol::errorResponse can shape an error answer for an API whose
// request is gone.
protocol::Request blankRequest(protocol::ApiKey api) {
  using protocol::ApiKey;
  switch (api) {
    case ApiKey::Heartbeat: return protocol::HeartbeatRequest{};
    case ApiKey::CreateGroup: return protocol::CreateGroupRequest{};
    case ApiKey::DeleteGroup: return protocol::DeleteGroupRequest{};
    case ApiKey::RegisterConsumer: return protocol::RegisterConsumerRequest{};
    case ApiKey::ListGroups: return protocol::ListGroupsRequest{};
    case ApiKey::LeaveGroup: return protocol::LeaveGroupRequest{};
    case ApiKey::CommitOffsets: return protocol::CommitOffsetsRequest{};
    case ApiKey::FetchOffsets: return protocol::FetchOffsetsRequest{};
    case ApiKey::RewindConsumer: return protocol::RewindConsumerRequest{};
    case ApiKey::Authenticate: return protocol::AuthenticateRequest{};
    case ApiKey::DrainServer: return protocol::DrainServerRequest{};
    case ApiKey::DescribeGroup: return protocol::DescribeGroupRequest{};
    case ApiKey::DescribeServers: return protocol::DescribeServersRequest{};
  }
  return protocol::HeartbeatRequest{};
}

void send(net::Reply& reply, int16_t version, int64_t correlationId, const protocol::Response& response) {
  reply.send([&](std::vector<uint8_t>& out) {
    protocol::encodeResponse(protocol::ResponseHeader{version, correlationId}, response, out);
  });
}

// The state behind one `done` callback. Owned by the callback (a shared_ptr
// in the std::function, so copies of `done` share it). Answers exactly once:
// a second call is logged and ignored, and a `done` destroyed without being
// called answers UNKNOWN_SERVER_ERROR, so the connection's later responses
// are not held back forever by a lost callback.
class PendingResponse {
 public:
  PendingResponse(net::Reply reply, const protocol::RequestHeader& header)
      : reply_(std::move(reply)), api_(header.apiKey), version_(header.version), correlationId_(header.correlationId) {}

  ~PendingResponse() {
    // After the connection closed nobody waits for the answer (the server
    // may be shutting down with the handler still holding callbacks).
    if (answered_.load(std::memory_order_acquire) || reply_.connectionClosed()) return;
    spdlog::error("the handler dropped the completion of {} (correlation id {}) without answering; answering {}",
                  protocol::apiName(api_), correlationId_, protocol::errorName(protocol::ErrorCode::UNKNOWN_SERVER_ERROR));
    send(reply_, version_, correlationId_,
         protocol::errorResponse(blankRequest(api_), protocol::ErrorCode::UNKNOWN_SERVER_ERROR));
  }

  void answer(protocol::Response response) {
    if (answered_.exchange(true, std::memory_order_acq_rel)) {
      spdlog::error("the handler answered {} (correlation id {}) twice; the second answer is dropped",
                    protocol::apiName(api_), correlationId_);
      return;
    }
    // An error-only answer (no API of its own) fits every request.
    const std::optional<protocol::ApiKey> answered = protocol::apiKeyOf(response);
    if (answered.has_value() && *answered != api_) {
      spdlog::error("the handler answered {} (correlation id {}) with a response of another API; answering {}",
                    protocol::apiName(api_), correlationId_, protocol::errorName(protocol::ErrorCode::UNKNOWN_SERVER_ERROR));
      response = protocol::errorResponse(blankRequest(api_), protocol::ErrorCode::UNKNOWN_SERVER_ERROR);
    }
    send(reply_, version_, correlationId_, response);
  }

 private:
  net::Reply reply_;
  const protocol::ApiKey api_;
  const int16_t version_;
  const int64_t correlationId_;
  std::atomic<bool> answered_{false};
};

}  // namespace

int32_t BinaryProtocol::minRequestBody() const { return protocol::kMinRequestBody; }

std::unique_ptr<net::ProtocolSession> BinaryProtocol::open(const net::Peer& peer) {
  auto s = std::make_unique<BinarySession>();
  s->ctx.caller.host = peer.host;
  s->ctx.caller.port = peer.port;
  s->ctx.caller.connection = peer.serial;
  s->ctx.caller.internal = peer.internal;
  s->ctx.caller.tls = peer.tls;
  s->peer = peer.address();
  return s;
}

// A request body whose header names Heartbeat (its first two bytes, the
// ApiKey: docs/protocol.md §3).
bool BinaryProtocol::urgent(std::span<const uint8_t> body) const {
  return body.size() >= 2 && body[0] == 0 && body[1] == static_cast<uint8_t>(protocol::ApiKey::Heartbeat);
}

// A heartbeat, answered by the chain on this thread (Stage::heartbeatNow):
// read in place (no copy of its names), answered straight into the output.
// What a stage declines (the auth stage, what the gate would refuse), and
// anything peekHeartbeat does not accept, takes the general path.
bool BinaryProtocol::answerNow(net::ProtocolSession& session, std::span<const uint8_t> body,
                               std::vector<uint8_t>& out, net::InlineSample* sample) {
  protocol::HeartbeatView r;
  if (!protocol::peekHeartbeat(body, r)) return false;
  auto& s = static_cast<BinarySession&>(session);
  protocol::HeartbeatResponse hb;
  // Only a sampled heartbeat's clock readings are ours; otherwise the
  // stages read the clock if they need it.
  const Clock::time_point start = sample != nullptr ? Clock::now() : Clock::time_point{};
  try {
    if (!head_.heartbeatNow(s.ctx, r, hb, start, sample != nullptr ? &sample->groupMotion : nullptr)) return false;
  } catch (...) {
    return false;  // the general path answers it, and logs what goes wrong
  }
  if (sample != nullptr) {
    sample->handleStart = start;
    sample->handleEnd = Clock::now();
  }
  protocol::appendHeartbeatResponse(r.version, r.correlationId, hb, out);
  return true;
}

net::Dispatched BinaryProtocol::dispatch(net::ProtocolSession& session, std::span<const uint8_t> body, net::Reply reply) {
  auto& s = static_cast<BinarySession&>(session);
  protocol::DecodedRequest decoded = protocol::decodeRequest(body);
  const auto& header = decoded.header;
  auto errorOnly = [&](protocol::ErrorCode code) {
    spdlog::debug("{} from {} (api {}, version {}, correlation id {}): {}", protocol::errorName(code), s.peer,
                  static_cast<int16_t>(header.apiKey), header.version, header.correlationId, decoded.detail);
    send(reply, header.version, header.correlationId, protocol::ErrorOnlyResponse{code});
    return net::Dispatched::Answered;
  };
  switch (decoded.status) {
    case protocol::DecodeStatus::UnknownApi: return errorOnly(protocol::ErrorCode::UNKNOWN_API);
    case protocol::DecodeStatus::UnsupportedVersion: return errorOnly(protocol::ErrorCode::UNSUPPORTED_VERSION);
    case protocol::DecodeStatus::InvalidRequest: return errorOnly(protocol::ErrorCode::INVALID_REQUEST);
    case protocol::DecodeStatus::Ok: break;
  }
  const protocol::ErrorCode nameError = protocol::validateNames(decoded.request);
  if (nameError != protocol::ErrorCode::NONE) {
    spdlog::debug("{} from {} for {} (correlation id {})", protocol::errorName(nameError), s.peer,
                  protocol::apiName(header.apiKey), header.correlationId);
    send(reply, header.version, header.correlationId, protocol::errorResponse(decoded.request, nameError));
    return net::Dispatched::Answered;
  }
  auto pending = std::make_shared<PendingResponse>(std::move(reply), header);
  protocol::ResponseCallback done = [pending](protocol::Response response) { pending->answer(std::move(response)); };
  try {
    head_.handle(s.ctx.caller, &s.ctx, header, std::move(decoded.request), std::move(done));
  } catch (const std::exception& e) {
    // A Handler must not throw; if one does, its `done` is gone with the
    // stack and PendingResponse answers UNKNOWN_SERVER_ERROR.
    uint64_t suppressed = 0;
    if (gHandlerLog.allow(&suppressed)) {
      spdlog::error("the handler threw on {} (correlation id {}): {}", protocol::apiName(header.apiKey),
                    header.correlationId, e.what());
    }
  } catch (...) {
    uint64_t suppressed = 0;
    if (gHandlerLog.allow(&suppressed)) {
      spdlog::error("the handler threw on {} (correlation id {})", protocol::apiName(header.apiKey),
                    header.correlationId);
    }
  }
  return net::Dispatched::Handler;
}

}  // namespace groupcoord::server
