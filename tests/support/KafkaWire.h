#pragma once

// One blocking connection to groupcoordd's Kafka port (docs/kafka.md) for
// tests: whole frames out, whole frames in, through the Kafka codec. A
// test's own client, so that what it checks does not depend on any Kafka
// library.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "protocol/kafka/Codec.h"

namespace groupcoord::testing {

class KafkaWire {
 public:
  // Connects to 127.0.0.1:port; connected() says whether it did.
  explicit KafkaWire(uint16_t port, std::string clientId = "groupcoord-test");
  ~KafkaWire();
  KafkaWire(const KafkaWire&) = delete;
  KafkaWire& operator=(const KafkaWire&) = delete;
  bool connected() const { return fd_ >= 0; }

  bool sendBytes(const std::vector<uint8_t>& bytes);
  // A bare frame: the length, then `token` (a SASL token after handshake
  // version 0).
  bool sendBare(const std::string& token);
  // A request at `version`, under the next correlation id.
  bool send(const protocol::kafka::Request& request, int16_t version);
  // The next frame's body (without its length); nullopt when the server
  // closed the connection or nothing came within `wait`.
  std::optional<std::vector<uint8_t>> readFrame(std::chrono::milliseconds wait = std::chrono::seconds(10));

  // Sends `request` at `version` and reads its answer; nullopt when none
  // came within `wait` or it did not decode as the answer to it (why in
  // lastError()).
  template <class Response>
  std::optional<Response> call(const protocol::kafka::Request& request, int16_t version,
                               std::chrono::milliseconds wait = std::chrono::seconds(10)) {
    if (!send(request, version)) return fail("the request could not be sent");
    auto body = readFrame(wait);
    if (!body) return fail("no answer (the connection closed, or nothing came in time)");
    protocol::kafka::DecodedResponse d = protocol::kafka::decodeResponse(Response::kApiKey, version, *body);
    if (!d.ok) return fail("undecodable answer: " + d.detail);
    if (d.correlationId != correlationId_) return fail("the answer is to another request");
    return std::get<Response>(std::move(d.response));
  }
  const std::string& lastError() const { return lastError_; }

  // Whether the server closes the connection within `wait` (reading and
  // dropping whatever it sends first).
  bool closedByServer(std::chrono::milliseconds wait);

 private:
  std::nullopt_t fail(std::string why) {
    lastError_ = std::move(why);
    return std::nullopt;
  }
  bool readExactly(size_t n, std::chrono::milliseconds wait, std::vector<uint8_t>* out);

  int fd_ = -1;
  std::string clientId_;
  int32_t correlationId_ = 0;
  std::string lastError_;
};

}  // namespace groupcoord::testing
