#include "server/KafkaPort.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/LogRateLimiter.h"
#include "common/Scram.h"
#include "protocol/kafka/Codec.h"
#include "server/Metrics.h"

namespace groupcoord::server {

namespace {

namespace kafka = protocol::kafka;

LogRateLimiter gRefusedLog{std::chrono::seconds(1)};
LogRateLimiter gHandlerLog{std::chrono::seconds(1)};
LogRateLimiter gSaslLog{std::chrono::seconds(1)};

constexpr std::string_view kPlain = "PLAIN";

std::string suppressedNote(uint64_t n) {
  return n ? fmt::format(" ({} similar lines suppressed)", n) : std::string();
}

// Where a connection stands in its SASL exchange (authentication on). Set
// by the I/O thread and, when a check ends, by whoever answers it (the
// gate's worker), before the answer goes out: the client's next frame is
// judged by it.
struct SaslState {
  enum class Phase : uint8_t {
    Open,       // nothing yet: SaslHandshake expected
    Mechanism,  // the mechanism chosen: its next token expected
    Checking,   // a token is with the gate
    Done,       // authenticated
    Failed,     // refused; the connection closes
  };
  std::atomic<Phase> phase{Phase::Open};
  // Chosen by the handshake, on the I/O thread, before any token.
  bool plain = false;  // PLAIN, else SCRAM-SHA-256
  bool bare = false;   // handshake version 0: tokens as bare frames, no Kafka header
};

std::string_view mechanismName(const SaslState& sasl) { return sasl.plain ? kPlain : scram::kMechanism; }

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
  PendingAnswer(net::Reply reply, const kafka::RequestHeader& h, KafkaRequestMetrics* metrics)
      : reply_(std::move(reply)),
        api_(h.apiKey),
        version_(h.apiVersion),
        correlationId_(h.correlationId),
        metrics_(metrics) {}
  ~PendingAnswer() {
    if (answered_.load(std::memory_order_acquire) || reply_.connectionClosed()) return;
    spdlog::error("the Kafka handler dropped {} (correlation id {}) without answering; answering UNKNOWN_SERVER_ERROR",
                  kafka::apiName(api_), correlationId_);
    if (metrics_ != nullptr) metrics_->answered(api_, kafka::ErrorCode::UNKNOWN_SERVER_ERROR);
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
    if (metrics_ != nullptr) metrics_->answered(api_, KafkaRequestMetrics::errorOf(response));
    send(reply_, correlationId_, version_, response);
  }

 private:
  net::Reply reply_;
  const int16_t api_;
  const int16_t version_;
  const int32_t correlationId_;
  KafkaRequestMetrics* const metrics_;
  std::atomic<bool> answered_{false};
};

}  // namespace

struct KafkaProtocol::Session final : net::ProtocolSession {
  protocol::Caller caller;  // `user` set once SASL has completed
  std::string peer;         // "host:port", for the logs
  // With authentication on: the gate's session and where SASL stands.
  std::shared_ptr<AuthSession> auth;
  std::shared_ptr<SaslState> sasl;
};

int32_t KafkaProtocol::minRequestBody() const { return kafka::kMinRequestBody; }

void KafkaProtocol::count(int16_t api, kafka::ErrorCode error) const {
  if (metrics_ != nullptr) metrics_->answered(api, error);
}

std::unique_ptr<net::ProtocolSession> KafkaProtocol::open(const net::Peer& peer) {
  auto s = std::make_unique<Session>();
  s->caller.host = peer.host;
  s->caller.port = peer.port;
  s->caller.connection = peer.serial;
  s->caller.internal = peer.internal;
  s->caller.tls = peer.tls;
  s->peer = peer.address();
  if (auth_) {
    s->auth = std::make_shared<AuthSession>();
    s->sasl = std::make_shared<SaslState>();
  }
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
  auto& s = static_cast<Session&>(session);
  if (s.sasl) {
    // With authentication on, only an authenticated connection's heartbeat
    // that the gate allows is answered here; the general path refuses (and
    // logs) the rest.
    if (s.sasl->phase.load(std::memory_order_acquire) != SaslState::Phase::Done) return false;
    if (s.caller.user.empty()) s.caller.user = AuthGate::authenticatedUser(*s.auth).value_or("");
    if (!auth_->judge(*s.auth, protocol::ApiKey::Heartbeat, r.groupId).allowed) return false;
  }
  kafka::ErrorCode error = kafka::ErrorCode::NONE;
  try {
    if (!handler_.heartbeatNow(s.caller, r, &error)) return false;
  } catch (...) {
    return false;  // the general path answers it, and logs what goes wrong
  }
  kafka::appendHeartbeatResponse(r.correlationId, r.apiVersion, error, out);
  count(static_cast<int16_t>(kafka::ApiKey::Heartbeat), error);
  return true;
}

net::Dispatched KafkaProtocol::dispatch(net::ProtocolSession& session, std::span<const uint8_t> body,
                                        net::Reply reply) {
  auto& s = static_cast<Session&>(session);
  using Phase = SaslState::Phase;
  const Phase phase = s.sasl ? s.sasl->phase.load(std::memory_order_acquire) : Phase::Done;
  if (phase == Phase::Mechanism && s.sasl->bare) {
    // After a version-0 handshake the token is the whole frame.
    return saslStep(s, nullptr, std::string(reinterpret_cast<const char*>(body.data()), body.size()),
                    std::move(reply));
  }
  kafka::DecodedRequest decoded = kafka::decodeRequest(body);
  const kafka::RequestHeader& h = decoded.header;
  if (decoded.status == kafka::DecodeStatus::UnsupportedVersion &&
      h.apiKey == static_cast<int16_t>(kafka::ApiKey::ApiVersions)) {
    // A client trying its newest ApiVersions first: the served range, at
    // version 0, so it asks again at a version both speak.
    count(h.apiKey, kafka::ErrorCode::UNSUPPORTED_VERSION);
    reply.send([&](std::vector<uint8_t>& out) { kafka::encodeApiVersionsFallback(h.correlationId, out); });
    return net::Dispatched::Answered;
  }
  if (decoded.status != kafka::DecodeStatus::Ok) {
    if (metrics_ != nullptr) {
      using Refusal = KafkaRequestMetrics::Refusal;
      metrics_->refused(decoded.status == kafka::DecodeStatus::UnknownApi           ? Refusal::UnknownApi
                        : decoded.status == kafka::DecodeStatus::UnsupportedVersion ? Refusal::UnsupportedVersion
                                                                                    : Refusal::Malformed);
    }
    uint64_t suppressed = 0;
    if (gRefusedLog.allow(&suppressed)) {
      spdlog::warn("closing the Kafka connection from {} (client id \"{}\"): {} {} version {} (correlation id {}): "
                   "{}{}{}",
                   s.peer, h.clientId.value_or(""), kafka::decodeStatusName(decoded.status),
                   kafka::apiName(h.apiKey), h.apiVersion, h.correlationId, decoded.detail,
                   decoded.status == kafka::DecodeStatus::Ok ? "" : "; served APIs and versions: docs/kafka.md",
                   suppressedNote(suppressed));
    }
    return net::Dispatched::Refused;
  }
  if (std::holds_alternative<kafka::ApiVersionsRequest>(decoded.request)) {
    const kafka::Response answer = kafka::apiVersionsResponse();
    count(h.apiKey, kafka::ErrorCode::NONE);
    send(reply, h.correlationId, h.apiVersion, answer);
    return net::Dispatched::Answered;
  }
  if (s.sasl) {
    if (const auto* r = std::get_if<kafka::SaslHandshakeRequest>(&decoded.request)) return handshake(s, h, *r, reply);
    if (auto* r = std::get_if<kafka::SaslAuthenticateRequest>(&decoded.request)) {
      if (phase == Phase::Mechanism) return saslStep(s, &h, std::move(r->authBytes), std::move(reply));
      kafka::SaslAuthenticateResponse out;
      out.error = kafka::ErrorCode::ILLEGAL_SASL_STATE;
      out.errorMessage = phase == Phase::Done ? "already authenticated" : "SaslHandshake first";
      count(h.apiKey, out.error);
      reply.sendThenClose(
          [&](std::vector<uint8_t>& o) { kafka::encodeResponse(h.correlationId, h.apiVersion, out, o); });
      return net::Dispatched::Answered;
    }
    if (phase != Phase::Done) {
      if (metrics_ != nullptr) metrics_->refused(KafkaRequestMetrics::Refusal::BeforeSasl);
      // A Kafka broker closes a connection that asks for anything else
      // before SASL has completed; so does this port.
      uint64_t suppressed = 0;
      if (gSaslLog.allow(&suppressed)) {
        spdlog::warn("closing the Kafka connection from {} (client id \"{}\"): {} before SASL authentication; "
                     "with auth.credentials.file set only ApiVersions, SaslHandshake and SaslAuthenticate are "
                     "answered first (docs/protocol.md, \"Security on the Kafka port\"){}",
                     s.peer, h.clientId.value_or(""), kafka::apiName(h.apiKey), suppressedNote(suppressed));
      }
      return net::Dispatched::Refused;
    }
    if (s.caller.user.empty()) s.caller.user = AuthGate::authenticatedUser(*s.auth).value_or("");
  }
  auto pending = std::make_shared<PendingAnswer>(std::move(reply), h, metrics_);
  kafka::ResponseCallback done = [pending](kafka::Response r) { pending->answer(std::move(r)); };
  if (s.sasl) {
    admit(s, h, std::move(decoded.request), std::move(done));
  } else {
    callHandler(s, h, std::move(decoded.request), std::move(done));
  }
  return net::Dispatched::Handler;
}

void KafkaProtocol::callHandler(Session& s, const kafka::RequestHeader& h, kafka::Request request,
                                kafka::ResponseCallback done) {
  try {
    handler_.handle(s.caller, h, std::move(request), std::move(done));
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
}

net::Dispatched KafkaProtocol::handshake(Session& s, const kafka::RequestHeader& h,
                                         const kafka::SaslHandshakeRequest& r, net::Reply& reply) {
  kafka::SaslHandshakeResponse out;
  out.mechanisms.emplace_back(scram::kMechanism);
  // The secret in the clear only where auth.plain lets the binary port take it.
  if (auth_->plainAllowed(s.caller.tls)) out.mechanisms.emplace_back(kPlain);
  auto encode = [&](std::vector<uint8_t>& o) { kafka::encodeResponse(h.correlationId, h.apiVersion, out, o); };
  if (s.sasl->phase.load(std::memory_order_acquire) != SaslState::Phase::Open) {
    // Re-authentication is not served: one exchange per connection.
    out.error = kafka::ErrorCode::ILLEGAL_SASL_STATE;
    count(h.apiKey, out.error);
    reply.sendThenClose(encode);
    return net::Dispatched::Answered;
  }
  if (std::find(out.mechanisms.begin(), out.mechanisms.end(), r.mechanism) == out.mechanisms.end()) {
    out.error = kafka::ErrorCode::UNSUPPORTED_SASL_MECHANISM;
    uint64_t suppressed = 0;
    if (gSaslLog.allow(&suppressed)) {
      spdlog::warn("Kafka connection from {} asked for SASL mechanism '{}': offered {}{}{}", s.peer,
                   printableForLog(r.mechanism), fmt::join(out.mechanisms, ", "),
                   r.mechanism == kPlain ? " (PLAIN is not, by auth.plain)" : "", suppressedNote(suppressed));
    }
    count(h.apiKey, out.error);
    reply.send(encode);
    return net::Dispatched::Answered;
  }
  s.sasl->plain = r.mechanism == kPlain;
  s.sasl->bare = h.apiVersion == 0;
  s.sasl->phase.store(SaslState::Phase::Mechanism, std::memory_order_release);
  count(h.apiKey, out.error);
  reply.send(encode);
  return net::Dispatched::Answered;
}

net::Dispatched KafkaProtocol::saslStep(Session& s, const kafka::RequestHeader* h, std::string token,
                                        net::Reply reply) {
  std::shared_ptr<SaslState> sasl = s.sasl;
  sasl->phase.store(SaslState::Phase::Checking, std::memory_order_release);
  protocol::AuthenticateRequest request;
  int16_t version = 1;
  if (sasl->plain) {
    // PLAIN (RFC 4616): authzid NUL authcid NUL passwd. An authzid other
    // than the user is not served; then the user is "", which never
    // authenticates (and is counted by the throttle as such).
    version = 0;
    const size_t first = token.find('\0');
    const size_t second = first == std::string::npos ? std::string::npos : token.find('\0', first + 1);
    if (second != std::string::npos) {
      const std::string authzid = token.substr(0, first);
      std::string user = token.substr(first + 1, second - first - 1);
      if (authzid.empty() || authzid == user) request.user = std::move(user);
      request.secret = token.substr(second + 1);
    }
  } else {
    request.mechanism = std::string(scram::kMechanism);
    request.message = std::move(token);
  }
  std::optional<kafka::RequestHeader> header;
  if (h != nullptr) header = *h;
  std::shared_ptr<AuthSession> auth = s.auth;
  auth_->authenticate(
      s.auth, s.caller, version, std::move(request),
      [sasl, auth, header = std::move(header), peer = s.peer, reply,
       metrics = metrics_](protocol::Response response) mutable {
        const auto* answer = std::get_if<protocol::AuthenticateResponse>(&response);
        const bool ok = answer != nullptr && answer->error == protocol::ErrorCode::NONE;
        // A bare token counts as the SaslAuthenticate it stands for.
        if (metrics != nullptr) {
          metrics->answered(static_cast<int16_t>(kafka::ApiKey::SaslAuthenticate),
                            ok ? kafka::ErrorCode::NONE : kafka::ErrorCode::SASL_AUTHENTICATION_FAILED);
        }
        const bool done = ok && AuthGate::authenticatedUser(*auth).has_value();
        const std::string message = answer != nullptr ? answer->message : std::string();
        sasl->phase.store(!ok ? SaslState::Phase::Failed : done ? SaslState::Phase::Done : SaslState::Phase::Mechanism,
                          std::memory_order_release);
        if (!header) {
          // A bare token is answered with a bare frame; a failure closes the
          // connection without one, as a Kafka broker does.
          if (!ok) return reply.sendThenClose([](std::vector<uint8_t>&) {});
          return reply.send([&](std::vector<uint8_t>& out) {
            const uint32_t n = static_cast<uint32_t>(message.size());
            for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(n >> shift));
            out.insert(out.end(), message.begin(), message.end());
          });
        }
        kafka::SaslAuthenticateResponse out;
        auto encode = [&](std::vector<uint8_t>& o) {
          kafka::encodeResponse(header->correlationId, header->apiVersion, out, o);
        };
        if (ok) {
          out.authBytes = message;
          return reply.send(encode);
        }
        out.error = kafka::ErrorCode::SASL_AUTHENTICATION_FAILED;
        out.errorMessage = fmt::format("Authentication failed: invalid credentials with SASL mechanism {}",
                                       mechanismName(*sasl));
        reply.sendThenClose(encode);
      });
  return net::Dispatched::Handler;
}

namespace {

// The answer to a request whose group the user may not touch: GROUP_AUTHORIZATION_FAILED
// at its top, and on every partition of an offset call.
constexpr auto kRefused = kafka::ErrorCode::GROUP_AUTHORIZATION_FAILED;

// OffsetFetch's topics asked for, each partition refused.
std::vector<kafka::OffsetFetchResponse::Topic> refusedTopics(
    const std::optional<std::vector<kafka::OffsetFetchRequest::Topic>>& topics) {
  std::vector<kafka::OffsetFetchResponse::Topic> out;
  for (const auto& t : topics.value_or(std::vector<kafka::OffsetFetchRequest::Topic>{})) {
    kafka::OffsetFetchResponse::Topic topic{t.name, {}};
    for (int32_t p : t.partitionIndexes) {
      kafka::OffsetFetchResponse::Partition part;
      part.partitionIndex = p;
      part.error = kRefused;
      topic.partitions.push_back(std::move(part));
    }
    out.push_back(std::move(topic));
  }
  return out;
}

kafka::Response refusedAnswer(const kafka::Request& request, int16_t api) {
  if (const auto* r = std::get_if<kafka::OffsetCommitRequest>(&request)) return kafka::offsetCommitAnswer(*r, kRefused);
  if (const auto* r = std::get_if<kafka::OffsetFetchRequest>(&request)) {
    kafka::OffsetFetchResponse out;
    out.error = kRefused;
    out.topics = refusedTopics(r->topics);
    return out;
  }
  return errorAnswer(api, kRefused);
}

// The binary port's call that does to a group what a Kafka request does
// (docs/protocol.md, "Security on the Kafka port"), the group it names, and
// CreateGroup besides for the calls that make a missing group (JoinGroup,
// ConsumerGroupHeartbeat, OffsetCommit); nullopt for requests that name none.
struct GroupCall {
  protocol::ApiKey api;
  std::string_view group;
  bool makes = false;
};
std::optional<GroupCall> groupCallOf(const kafka::Request& request) {
  using protocol::ApiKey;
  return std::visit(
      [](const auto& r) -> std::optional<GroupCall> {
        using R = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<R, kafka::FindCoordinatorRequest>) {
          // Every member asks it first, and a missing group is made where
          // it answers: judged as CreateGroup.
          if (r.keyType == 0) return GroupCall{ApiKey::CreateGroup, r.key};
        } else if constexpr (std::is_same_v<R, kafka::JoinGroupRequest>) {
          return GroupCall{ApiKey::RegisterConsumer, r.groupId, true};
        } else if constexpr (std::is_same_v<R, kafka::SyncGroupRequest>) {
          return GroupCall{ApiKey::RegisterConsumer, r.groupId};
        } else if constexpr (std::is_same_v<R, kafka::HeartbeatRequest>) {
          return GroupCall{ApiKey::Heartbeat, r.groupId};
        } else if constexpr (std::is_same_v<R, kafka::LeaveGroupRequest>) {
          return GroupCall{ApiKey::LeaveGroup, r.groupId};
        } else if constexpr (std::is_same_v<R, kafka::OffsetCommitRequest>) {
          return GroupCall{ApiKey::CommitOffsets, r.groupId, true};
        } else if constexpr (std::is_same_v<R, kafka::OffsetFetchRequest>) {
          return GroupCall{ApiKey::FetchOffsets, r.groupId};
        } else if constexpr (std::is_same_v<R, kafka::ConsumerGroupHeartbeatRequest>) {
          // KIP-848's join and heartbeat in one: as JoinGroup.
          return GroupCall{ApiKey::RegisterConsumer, r.groupId, true};
        }
        return std::nullopt;
      },
      request);
}

// A request naming several groups (DescribeGroups, ConsumerGroupDescribe,
// DeleteGroups): the refused ones answered `refused(name)` here, the others
// asked of the handler in one request (`names` of it), the answers merged
// back in the request's order (`results` of the response).
template <class Request, class Response, class Names, class Results, class Allowed, class Refused, class Ask>
void splitByGroup(Request request, Names Request::*names, Results Response::*results, Allowed allowed,
                  Refused refused, Ask ask, kafka::ResponseCallback done) {
  std::vector<bool> refusedAt;
  Names asked;
  for (const auto& name : request.*names) {
    refusedAt.push_back(!allowed(name));
    if (!refusedAt.back()) asked.push_back(name);
  }
  if (asked.size() == (request.*names).size()) return ask(std::move(request), std::move(done));
  Names all = std::move(request.*names);
  auto merge = [all, refusedAt, results, refused, done = std::move(done)](kafka::Response response) {
    auto* answer = std::get_if<Response>(&response);
    if (answer == nullptr) return done(std::move(response));
    auto got = std::move(answer->*results);
    (answer->*results).clear();
    size_t next = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      if (refusedAt[i]) {
        (answer->*results).push_back(refused(all[i]));
      } else if (next < got.size()) {
        (answer->*results).push_back(std::move(got[next++]));
      }
    }
    done(std::move(response));
  };
  if (asked.empty()) return merge(Response{});
  request.*names = std::move(asked);
  ask(std::move(request), std::move(merge));
}

}  // namespace

void KafkaProtocol::admit(Session& s, const kafka::RequestHeader& h, kafka::Request request,
                          kafka::ResponseCallback done) {
  // Each group is decided by the gate as the binary port's call for it.
  auto allows = [&](protocol::ApiKey api, std::string_view group) {
    const AuthGate::Verdict verdict = auth_->judge(*s.auth, api, group);
    if (!verdict.allowed) {
      AuthGate::logRefusal(verdict, kafka::apiName(h.apiKey), group, permissions::operationOf(api), s.peer,
                           "GROUP_AUTHORIZATION_FAILED");
    }
    return verdict.allowed;
  };
  auto ask = [&](auto r, kafka::ResponseCallback d) { callHandler(s, h, kafka::Request(std::move(r)), std::move(d)); };
  // OffsetFetch from version 8 names its groups in Groups: each is judged
  // on its own (its GroupId is not carried).
  if (auto* r = std::get_if<kafka::OffsetFetchRequest>(&request);
      r != nullptr && h.apiVersion >= kafka::OffsetFetchRequest::kGroupsSince) {
    return splitByGroup(
        std::move(*r), &kafka::OffsetFetchRequest::groups, &kafka::OffsetFetchResponse::groups,
        [&](const kafka::OffsetFetchRequest::Group& g) { return allows(protocol::ApiKey::FetchOffsets, g.groupId); },
        [](const kafka::OffsetFetchRequest::Group& g) {
          return kafka::OffsetFetchResponse::Group{g.groupId, refusedTopics(g.topics), kRefused};
        },
        ask, std::move(done));
  }
  if (auto call = groupCallOf(request)) {
    if (allows(call->api, call->group) && (!call->makes || allows(protocol::ApiKey::CreateGroup, call->group))) {
      return callHandler(s, h, std::move(request), std::move(done));
    }
    return done(refusedAnswer(request, h.apiKey));
  }
  if (auto* r = std::get_if<kafka::DescribeGroupsRequest>(&request)) {
    return splitByGroup(
        std::move(*r), &kafka::DescribeGroupsRequest::groups, &kafka::DescribeGroupsResponse::groups,
        [&](const std::string& g) { return allows(protocol::ApiKey::DescribeGroup, g); },
        [](const std::string& g) {
          kafka::DescribeGroupsResponse::Group out;
          out.groupId = g;
          out.error = kafka::ErrorCode::GROUP_AUTHORIZATION_FAILED;
          return out;
        },
        ask, std::move(done));
  }
  if (auto* r = std::get_if<kafka::ConsumerGroupDescribeRequest>(&request)) {
    return splitByGroup(
        std::move(*r), &kafka::ConsumerGroupDescribeRequest::groupIds, &kafka::ConsumerGroupDescribeResponse::groups,
        [&](const std::string& g) { return allows(protocol::ApiKey::DescribeGroup, g); },
        [](const std::string& g) {
          kafka::ConsumerGroupDescribeResponse::Group out;
          out.groupId = g;
          out.error = kafka::ErrorCode::GROUP_AUTHORIZATION_FAILED;
          return out;
        },
        ask, std::move(done));
  }
  if (auto* r = std::get_if<kafka::DeleteGroupsRequest>(&request)) {
    return splitByGroup(
        std::move(*r), &kafka::DeleteGroupsRequest::groupsNames, &kafka::DeleteGroupsResponse::results,
        [&](const std::string& g) { return allows(protocol::ApiKey::DeleteGroup, g); },
        [](const std::string& g) {
          return kafka::DeleteGroupsResponse::Result{g, kafka::ErrorCode::GROUP_AUTHORIZATION_FAILED};
        },
        ask, std::move(done));
  }
  if (std::holds_alternative<kafka::ListGroupsRequest>(request)) {
    // Only the groups the user may describe, as on the binary port.
    AuthGate::Verdict verdict = auth_->judge(*s.auth, protocol::ApiKey::ListGroups, "");
    if (verdict.listing) {
      done = [verdict = std::move(verdict), done = std::move(done)](kafka::Response response) {
        if (auto* list = std::get_if<kafka::ListGroupsResponse>(&response)) {
          std::erase_if(list->groups, [&](const auto& g) { return !verdict.shows(g.groupId); });
        }
        done(std::move(response));
      };
    }
  }
  callHandler(s, h, std::move(request), std::move(done));
}

}  // namespace groupcoord::server
