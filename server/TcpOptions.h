#pragma once

// What TcpServer (server/TcpServer.h) is configured with and reports, apart
// from the server itself: its options, the observer told of every answer,
// why connections close, and the counters of stats(). The I/O loops
// (server/IoLoop.h) read these too, so they live here rather than in
// TcpServer.h, which includes the loops.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/Options.h"
#include "protocol/Handler.h"

namespace groupcoord::server {

class AuthGate;
class TlsServerContext;

// Told of every request a Handler answered: its API, the error at the top
// of the answer and the time from dispatch to answer. Called on whichever
// thread answers, once per request: it must be cheap and thread-safe.
// Where the time of one heartbeat answered on its I/O thread went, in
// nanoseconds (docs/design.md, "Heartbeats"). Sampled: the first such
// heartbeat of one read in kHeartbeatStageSampleEvery.
struct HeartbeatStages {
  uint64_t wakeToRead = 0;  // the reactor's wait returned -> the read that brought the frame returned
  uint64_t decode = 0;      // the frame read in place (peekHeartbeat)
  uint64_t handle = 0;      // the handler, lock waits included
  uint64_t encode = 0;      // the answer encoded into the output buffer
  uint64_t write = 0;       // encoded -> the send() that handed its last byte to the kernel returned
  // The kernel's receipt of the last packet that read brought -> the read
  // returned (SO_TIMESTAMPNS): the time the bytes waited in the socket,
  // which the loop's own clock cannot see. Plain TCP only; empty with TLS
  // or when the kernel gave no timestamp.
  std::optional<uint64_t> arrivalToRead;
  // Whether the heartbeat's group was in step or moving, when the handler
  // says (protocol::Handler::heartbeatNow's `motion`).
  std::optional<protocol::Handler::GroupMotion> groupMotion;
};
inline constexpr uint32_t kHeartbeatStageSampleEvery = 8;

class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  virtual void answered(protocol::ApiKey api, protocol::ErrorCode error, uint64_t nanos) = 0;
  // A heartbeat with a wait (version 1), answered `nanos` after it was
  // read: most of that it was held (docs/design.md, "Held heartbeats"), so
  // it is kept apart from the answer times of everything else.
  virtual void answeredHeld(protocol::ErrorCode error, uint64_t nanos) {
    answered(protocol::ApiKey::Heartbeat, error, nanos);
  }
  // A sampled heartbeat's stages; same threads as answered().
  virtual void heartbeatStages(const HeartbeatStages& stages) { (void)stages; }
};

struct TcpServerOptions {
  std::string listenAddress = "127.0.0.1";  // numeric IPv4 or IPv6, or a resolvable name
  uint16_t port = 0;                        // 0: any free port; port() tells which
  // Set: a second listener on the same address (0: any free port) whose
  // connections the handler sees as internal (protocol::Caller::internal;
  // docs/design.md, "Two addresses"). After bind(): the bound port.
  std::optional<uint16_t> internalPort;
  int ioThreads = options::defaultInt("io.threads");  // 0: TcpServer::defaultIoThreads()
  int32_t maxFrameBytes = options::defaultInt("max.frame.bytes");  // larger frames close their connection
  int maxConnections = options::defaultInt("max.connections");  // past it, new connections are closed at once
  int maxInFlightPerConnection = options::defaultInt("max.inflight.per.connection");  // past it, the socket is not read until responses drain
  std::chrono::milliseconds idleTimeout{options::defaultInt("idle.timeout.ms")};  // a connection holding part of a frame this long is closed
  size_t maxOutputBytes = options::defaultInt("max.output.buffer.bytes");  // a connection whose unsent output passes this is closed
  std::chrono::milliseconds shutdownGrace{options::defaultInt("shutdown.grace.ms")};  // stop() waits this long for in-flight requests
  // Set: every request passes this authentication and role check
  // (server/AuthGate.h). Unset: Authenticate answers NONE, nothing is checked.
  std::shared_ptr<AuthGate> auth;
  // Set: every connection speaks TLS (server/Tls.h). Unset: plain TCP.
  std::shared_ptr<TlsServerContext> tls;
  // Set: told of every answered request (groupcoordd's request metrics).
  // Must outlive the server and every answer still pending.
  RequestObserver* observer = nullptr;
};

// Why the server closed a connection (or the peer did).
enum class CloseReason : uint8_t {
  PeerClosed,      // EOF or reset from the client
  FrameTooSmall,   // a request Size below the minimum
  FrameTooLarge,   // a Size above maxFrameBytes, or negative
  IdleTimeout,     // part of a frame, then nothing for idleTimeout
  OutputOverflow,  // unsent responses passed maxOutputBytes
  IoError,         // a socket error other than a reset
  Shutdown,        // stop()
  Refused,         // the port's protocol refused a request it cannot answer (FrameProtocol::dispatch)
};
inline constexpr size_t kCloseReasonCount = 8;
std::string_view closeReasonName(CloseReason reason);

// A snapshot; each counter is read on its own (not one atomic picture).
struct TcpServerStats {
  uint64_t connectionsOpen = 0;
  uint64_t connectionsAccepted = 0;  // served connections, total
  uint64_t connectionsRejected = 0;  // closed at accept because of maxConnections
  uint64_t requestsReceived = 0;     // whole frames read
  uint64_t responsesQueued = 0;      // responses moved, in request order, to their connection's output
  uint64_t handlerCalls = 0;         // requests that reached the Handler
  uint64_t pendingOutputBytesMax = 0;  // high-water mark of one connection's unsent output
  std::array<uint64_t, kCloseReasonCount> closedByReason{};
  uint64_t closed(CloseReason r) const { return closedByReason[static_cast<size_t>(r)]; }
};

}  // namespace groupcoord::server
