#pragma once

// The binary port's protocol (docs/protocol.md) on the framed-connection
// loop (server/FrameProtocol.h): how a request body is read, which
// requests are answered inline (heartbeats, through the chain's
// Stage::heartbeatNow), and how everything else is decoded, checked,
// handed to the chain's head and answered.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "server/Chain.h"
#include "server/FrameProtocol.h"

namespace groupcoord::server {

class BinaryProtocol final : public net::FrameProtocol {
 public:
  // `head`: the binary port's chain (server/Chain.h), which must outlive
  // every connection.
  explicit BinaryProtocol(Stage& head) : head_(head), recordsStages_(head.recordsHeartbeatStages()) {}

  int32_t minRequestBody() const override;
  std::unique_ptr<net::ProtocolSession> open(const net::Peer& peer) override;
  bool answerNow(net::ProtocolSession& session, std::span<const uint8_t> body, std::vector<uint8_t>& out,
                 net::InlineSample* sample) override;
  bool urgent(std::span<const uint8_t> body) const override;
  net::Dispatched dispatch(net::ProtocolSession& session, std::span<const uint8_t> body, net::Reply reply) override;
  bool recordsStages() const override { return recordsStages_; }
  void stages(const HeartbeatStages& stages) override { head_.heartbeatStages(stages); }

 private:
  Stage& head_;
  const bool recordsStages_;
};

}  // namespace groupcoord::server
