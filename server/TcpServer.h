#pragma once

// groupcoordd's TCP server: an acceptor thread and N I/O threads, each
// running a reactor (server/net/Reactor.h), that frame and decode requests
// (docs/protocol.md), hand them to a chain of stages ending in a
// protocol::Handler (server/Chain.h: metrics, authentication, the handler,
// as the options ask) and write the
// responses back in request order per connection.
//
// Threads: bind(), start(), stop() and the destructor are called from one
// owning thread. stats() and port() from any thread. The Handler is called on
// the I/O threads; its `done` callbacks may run on any thread, in any order,
// also after the connection or the whole server is gone (they are dropped
// then).

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "protocol/Handler.h"
#include "server/Handles.h"
#include "server/TcpOptions.h"

namespace groupcoord::server {

class Chain;
namespace net {
class FrameProtocol;
}

namespace detail {
class Acceptor;
class IoLoop;
struct SharedCounters;
}  // namespace detail

class TcpServer {
 public:
  // `handler` must outlive the server's I/O threads (i.e. until stop() returns).
  TcpServer(TcpServerOptions options, protocol::Handler& handler);
  // A port of another protocol on the same loops (the Kafka port,
  // server/KafkaPort.h): options.auth is not consulted.
  TcpServer(TcpServerOptions options, std::unique_ptr<net::FrameProtocol> protocol);
  ~TcpServer();  // stop()
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  // Creates, binds and listens on the socket (connections queue in the
  // backlog until start()). false with *error set when that fails.
  bool bind(std::string* error);
  // Starts the acceptor and the I/O threads; bind() first (start() binds
  // itself when it was not). false with *error set when that fails.
  bool start(std::string* error);
  // Stops accepting, stops reading requests, waits up to shutdownGrace for
  // in-flight requests to be answered and flushed, closes every connection,
  // joins the threads. Idempotent.
  void stop();

  // The bound port (after bind()), else 0.
  uint16_t port() const;
  // The internal listener's bound port (after bind()); 0 without one.
  uint16_t internalPort() const { return internalPort_; }
  const TcpServerOptions& options() const { return options_; }
  TcpServerStats stats() const;
  // The I/O threads running (after start()), else 0.
  int ioThreads() const { return static_cast<int>(loops_.size()); }

  // The I/O threads that options.ioThreads 0 asks for: one per core the
  // calling thread may run on (its CPU affinity, which taskset, numactl and
  // a container's cpuset narrow), at least one.
  static int defaultIoThreads();

 private:
  TcpServerOptions options_;
  // The binary port's handler chain (server/Chain.h), built from options_
  // around the handler; outlives the loops, which call it. Null on a port
  // of another protocol.
  std::unique_ptr<Chain> chain_;
  // What the loops run on their connections: the binary protocol
  // (server/BinaryPort.h) in front of the chain, or the port's own.
  std::unique_ptr<net::FrameProtocol> protocol_;
  std::shared_ptr<detail::SharedCounters> counters_;
  std::vector<std::unique_ptr<detail::IoLoop>> loops_;
  UniqueFd listenFd_;
  UniqueFd internalListenFd_;  // options_.internalPort set: the internal listener
  uint16_t port_ = 0;
  uint16_t internalPort_ = 0;
  bool started_ = false;
  bool stopped_ = false;
  std::unique_ptr<detail::Acceptor> acceptor_;  // after start()
};

// Raises the soft RLIMIT_NOFILE to the hard limit (10,000 idle connections
// need more than the usual 1024). Returns the soft limit now in force.
uint64_t raiseOpenFileLimit();

}  // namespace groupcoord::server
