#pragma once

// The seam between the server (sockets, framing) and the adapter (groups in
// ZooKeeper). The server decodes a frame, checks names, and hands the
// request to a Handler; the Handler answers through `done`.

#include <functional>

#include "protocol/Messages.h"

namespace groupcoord::protocol {

using ResponseCallback = std::function<void(Response)>;

class Handler {
 public:
  virtual ~Handler() = default;
  // Called on a server I/O thread: must not block. `done` must be called
  // exactly once, from any thread, with a response of the request's API.
  virtual void handle(const RequestHeader& header, Request request, ResponseCallback done) = 0;
};

}  // namespace groupcoord::protocol
