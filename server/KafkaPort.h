#pragma once

// The Kafka port's protocol (docs/kafka.md; the bytes: docs/protocol.md,
// "The Kafka port") on the framed-connection loop (server/FrameProtocol.h):
// Kafka's framing is groupcoord's (a 4-byte big-endian length, then the
// body), so the same loop runs it with its limits, deadlines and TLS.
//
// Heartbeats take the inline path (answerNow): read in place and answered
// on the I/O thread by the handler's heartbeatNow, straight into the output,
// when the handler can; otherwise the general path below.
//
// What the port answers itself: ApiVersions (the served set), and an
// ApiVersions above the served maximum with a version-0 answer naming the
// served range. A request of an API or version it does not serve, or one
// that does not decode, cannot be answered in a shape its client reads, so
// the connection is closed once what came before it is answered, as a Kafka
// broker does. Everything else goes to the protocol::kafka::Handler.
//
// With authentication on (an AuthGate: auth.credentials.file), a connection
// speaks SASL first (docs/protocol.md, "Security on the Kafka port"):
// ApiVersions, SaslHandshake and SaslAuthenticate are answered before it has
// authenticated, anything else closes it. PLAIN and SCRAM-SHA-256 are
// checked by the gate, against the binary port's credentials, with its
// auth.plain rule and its throttle; after a v0 handshake the tokens come as
// bare frames, without a Kafka header. Once authenticated, every call naming
// a group is decided by the gate as the binary port's call for that group
// (AuthGate::judge: its permissions file, or the role), and a refused group
// is answered GROUP_AUTHORIZATION_FAILED.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "protocol/kafka/Handler.h"
#include "server/AuthGate.h"
#include "server/FrameProtocol.h"

namespace groupcoord::server {

class KafkaRequestMetrics;

class KafkaProtocol final : public net::FrameProtocol {
 public:
  // `handler` must outlive every connection. `auth`: authentication on
  // (null: off, every client may make every call). `metrics`: where every
  // answer and every refused request is counted (server/Metrics.h); null:
  // not counted. It must outlive every connection too.
  explicit KafkaProtocol(protocol::kafka::Handler& handler, std::shared_ptr<AuthGate> auth = nullptr,
                         KafkaRequestMetrics* metrics = nullptr)
      : handler_(handler), auth_(std::move(auth)), metrics_(metrics) {}

  int32_t minRequestBody() const override;
  std::unique_ptr<net::ProtocolSession> open(const net::Peer& peer) override;
  bool answerNow(net::ProtocolSession& session, std::span<const uint8_t> body, std::vector<uint8_t>& out,
                 net::InlineSample* sample) override;
  bool urgent(std::span<const uint8_t> body) const override;
  net::Dispatched dispatch(net::ProtocolSession& session, std::span<const uint8_t> body, net::Reply reply) override;
  bool recordsStages() const override { return false; }
  void stages(const HeartbeatStages&) override {}

 private:
  struct Session;
  net::Dispatched handshake(Session& s, const protocol::kafka::RequestHeader& h,
                            const protocol::kafka::SaslHandshakeRequest& r, net::Reply& reply);
  // One SASL token (a SaslAuthenticate's, or a bare frame's: h null), to the gate.
  net::Dispatched saslStep(Session& s, const protocol::kafka::RequestHeader* h, std::string token,
                           net::Reply reply);
  // Calls the handler with the request as the gate allows it for the user:
  // refused groups answered GROUP_AUTHORIZATION_FAILED.
  void admit(Session& s, const protocol::kafka::RequestHeader& h, protocol::kafka::Request request,
             protocol::kafka::ResponseCallback done);
  void callHandler(Session& s, const protocol::kafka::RequestHeader& h, protocol::kafka::Request request,
                   protocol::kafka::ResponseCallback done);

  // Counts an answer of `api` / a refused request, when metrics are on.
  void count(int16_t api, protocol::kafka::ErrorCode error) const;

  protocol::kafka::Handler& handler_;
  std::shared_ptr<AuthGate> auth_;
  KafkaRequestMetrics* const metrics_;
};

}  // namespace groupcoord::server
