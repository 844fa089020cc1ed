#pragma once

// The seam between the Kafka port (server/KafkaPort.h: sockets, framing,
// the codec) and what answers Kafka requests (adapter/KafkaGroups.h: Kafka
// groups as groupcoord groups in ZooKeeper). The port decodes a frame and
// hands the request to a Handler, which answers through `done`.

#include <functional>

#include "protocol/Handler.h"
#include "protocol/kafka/Codec.h"
#include "protocol/kafka/Messages.h"

namespace groupcoord::protocol::kafka {

using ResponseCallback = std::function<void(Response)>;

class Handler {
 public:
  virtual ~Handler() = default;
  // Called on a server I/O thread: must not block. `done` must be called
  // exactly once, from any thread, with a response of the request's API.
  // `caller`: who sent it (protocol::Caller; `user` is the SASL user once
  // authenticated).
  virtual void handle(const protocol::Caller& caller, const RequestHeader& header, Request request,
                      ResponseCallback done) = 0;
  // Called on a server I/O thread with a Heartbeat read in place, before
  // handle() would be: answers it now when it can (its error in *error;
  // true), without blocking, or leaves it to handle() (false). The port
  // writes the answer straight into the connection's output.
  virtual bool heartbeatNow(const protocol::Caller& caller, const HeartbeatView& request, ErrorCode* error) {
    return false;
  }
};

}  // namespace groupcoord::protocol::kafka
