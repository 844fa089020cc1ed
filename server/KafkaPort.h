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

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "protocol/kafka/Handler.h"
#include "server/FrameProtocol.h"

namespace groupcoord::server {

class KafkaProtocol final : public net::FrameProtocol {
 public:
  // `handler` must outlive every connection.
  explicit KafkaProtocol(protocol::kafka::Handler& handler) : handler_(handler) {}

  int32_t minRequestBody() const override;
  std::unique_ptr<net::ProtocolSession> open(const net::Peer& peer) override;
  bool answerNow(net::ProtocolSession& session, std::span<const uint8_t> body, std::vector<uint8_t>& out,
                 net::InlineSample* sample) override;
  bool urgent(std::span<const uint8_t> body) const override;
  net::Dispatched dispatch(net::ProtocolSession& session, std::span<const uint8_t> body, net::Reply reply) override;
  bool recordsStages() const override { return false; }
  void stages(const HeartbeatStages&) override {}

 private:
  protocol::kafka::Handler& handler_;
};

}  // namespace groupcoord::server
