#pragma once

// The listening side of every port: binding a listening socket, and
// accepting its connections under the port's limits (docs/design.md,
// "Connections"). What a port does at a limit (refuse the newcomer, or
// close another connection to make room) is the port's AcceptPolicy; the
// order of the checks is here, once.

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "server/Handles.h"

namespace groupcoord::server::net {

// A listening socket (non-blocking, close-on-exec, SO_REUSEADDR but never
// SO_REUSEPORT: a second server on a busy port must fail, not share it) on
// the first address `address` resolves to that takes it. `port` 0: any free
// port; *bound tells which. false with *error set (the reason alone, e.g.
// "bind: Address already in use") when no address could be used.
// `deferAccept` above zero: the kernel hands a connection over only once its
// first bytes have arrived, or that long after its handshake (TCP_DEFER_ACCEPT),
// so a connection is never admitted, and so never displaced, in the moment
// between a client's connect and its request (docs/design.md, "The HTTP port").
bool listenOn(const std::string& address, uint16_t port, UniqueFd* fd, uint16_t* bound, std::string* error,
              std::chrono::seconds deferAccept = std::chrono::seconds(0));

// The address of `peer` as text ("127.0.0.1", "::1"); "" for another family.
std::string addressText(const sockaddr_storage& peer);

// A port's caps on its open connections.
struct AcceptLimits {
  uint64_t maxConnections = 0;        // open connections, all sources
  std::optional<int> maxPerSource;    // from one source address; unset: no such cap
};

// What a port decides while its connections are accepted. Called on the
// accepting thread only.
class AcceptPolicy {
 public:
  // The port's open connections now, all sources.
  virtual uint64_t openConnections() = 0;
  // Its open connections from `source` (only asked with a per-source cap).
  virtual int openFrom(const std::string& source) = 0;
  // A newcomer from `source` is past a cap: past the per-source cap when
  // `perSource`, else past the overall one. The port may make room (close
  // a connection of its own); true when there is room now.
  virtual bool makeRoom(const std::string& source, bool perSource) = 0;
  // The newcomer had no room: it is closed once this returns.
  virtual void refused(const std::string& source) = 0;
  // The newcomer is the port's (non-blocking, close-on-exec, TCP_NODELAY).
  virtual void admitted(UniqueFd fd, const std::string& source) = 0;
  // accept() failed with `err`, other than "none waiting" (which ends
  // acceptAll), EINTR and ECONNABORTED (which are tried again). true: try
  // again now; false: stop until the listener is readable again.
  virtual bool acceptFailed(int listenFd, int err) = 0;

 public:
  virtual ~AcceptPolicy() = default;
};

// Accepts every connection waiting on `listenFd`, each under `limits`:
// past the per-source cap, then past the overall cap, the policy may make
// room; without room the newcomer is refused.
void acceptAll(int listenFd, const AcceptLimits& limits, AcceptPolicy& policy);

}  // namespace groupcoord::server::net
