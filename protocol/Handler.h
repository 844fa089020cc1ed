#pragma once

// The seam between the server (sockets, framing) and the adapter (groups in
// ZooKeeper). The server decodes a frame, checks names, and hands the
// request to a Handler; the Handler answers through `done`.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/Codec.h"
#include "protocol/Messages.h"

namespace groupcoord::protocol {

using ResponseCallback = std::function<void(Response)>;

// Who sent a request, as the server saw it. The coordinator records it for
// DescribeGroup (where a member connects from, who rewound a group); it
// never decides anything by it, except which of a server's addresses to
// answer with.
struct Caller {
  std::string host;  // the peer's address as text; "" when not known
  uint16_t port = 0;
  std::string user;  // the authenticated user; "" with authentication off
  // Came through the internal listener (docs/design.md, "Two addresses"):
  // controller addresses in its answers are the internal ones.
  bool internal = false;
  // The connection speaks TLS (the server's listener does).
  bool tls = false;
  // The server's serial number of the connection, rising with each one it
  // accepts; 0 when not known (calls made inside the server). A controller
  // refuses a member's registration sent on an older connection than the
  // one it last registered on (docs/design.md, "Stale registrations").
  uint64_t connection = 0;

  // "host:port" ("[host]:port" for IPv6), or "?" when not known: for logs.
  std::string address() const {
    if (host.empty()) return "?";
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }
};

// What a handler keeps for one connection between its heartbeats (the
// coordinator: the group the last one named, so that the next one of the
// same group skips the table's lock and hash). The server holds one slot
// per connection, touches it only on that connection's I/O thread, and
// frees it when the connection closes.
struct ConnectionState {
  virtual ~ConnectionState() = default;
};
using ConnectionSlot = std::unique_ptr<ConnectionState>;

class Handler {
 public:
  virtual ~Handler() = default;
  // Called on a server I/O thread: must not block. `done` must be called
  // exactly once, from any thread, with a response of the request's API.
  virtual void handle(const RequestHeader& header, Request request, ResponseCallback done) = 0;
  // The same, knowing who sent it. The default forgets the caller; a
  // handler that records callers overrides both.
  virtual void handleFrom(const Caller& caller, const RequestHeader& header, Request request,
                          ResponseCallback done) {
    (void)caller;
    handle(header, std::move(request), std::move(done));
  }
  // Where a heartbeat's group stands, for the heartbeats whose time the
  // server samples (docs/design.md, "Heartbeats"): in step (every member
  // heard at the current generation, registered at it or heartbeated with
  // it, every partition with the member it is assigned to, and no
  // membership change waiting) or moving.
  enum class GroupMotion : uint8_t { InStep, Moving };
  // A heartbeat answered at once, on the calling thread, without a
  // callback: the server's fast path for the request that dominates its
  // traffic (docs/design.md, "Heartbeats"). True when `out` holds the
  // answer; false (the default) when this handler answers heartbeats
  // through handleFrom() only, which the server then calls. `slot` is the
  // connection's (empty at first): the handler may keep what it likes there.
  // `readAt` is the server's own steady-clock reading just before the call
  // (it times its handlers), or a default time_point when it took none: a
  // handler on the same clock may use it instead of reading the clock again.
  // `motion`: null, or (a sampled heartbeat) where the handler writes how
  // the group stands when it answers; left empty when it does not say or
  // does not serve the group.
  virtual bool heartbeatNow(const Caller& caller, ConnectionSlot& slot, const HeartbeatView& request,
                            HeartbeatResponse& out, std::chrono::steady_clock::time_point readAt,
                            std::optional<GroupMotion>* motion) {
    (void)caller;
    (void)slot;
    (void)readAt;
    (void)request;
    (void)out;
    (void)motion;
    return false;
  }
};

}  // namespace groupcoord::protocol
