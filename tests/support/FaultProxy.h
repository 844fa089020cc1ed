#pragma once

// A TCP proxy inside the test process that adds the network faults the test
// machine's kernel cannot (it has no netem): delay, a direction that drops
// everything, cuts for one client, refused connections and resets.
// Network-partition tests run groupcoordd servers and ZooKeeper nodes in
// network namespaces and point a peer at a proxy instead of at the node it
// should degrade.
//
// The proxy ends TCP on both sides, so it can only approximate a network:
// the client's handshake completes in the proxy's kernel whatever the faults,
// and a cut drops bytes the proxy has already acknowledged rather than
// segments a peer would retransmit. The notes at each setter say what that
// changes.
//
// Threads: one thread of its own owns every socket. The setters and stats()
// may be called from any thread; each setter returns once that thread has
// taken the new setting, so whatever a test sends after a setter returns is
// handled under it.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace groupcoord::testing {

class FaultProxy {
 public:
  // Listens on listenAddress:listenPort (0: any free port) and forwards every
  // accepted connection to targetHost:targetPort (a numeric IPv4 address).
  // Starts its thread at once. Throws std::system_error when it cannot
  // listen, std::invalid_argument for an address that is not numeric IPv4.
  FaultProxy(std::string listenAddress, uint16_t listenPort, std::string targetHost, uint16_t targetPort);
  // Stops the thread and closes every socket, open connections with RST: the
  // peers see the proxy die, not a clean shutdown.
  ~FaultProxy();

  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // The bound listening port.
  uint16_t port() const { return port_; }

  // Each chunk read from one side is delivered to the other no sooner than
  // this after it was read, in order per direction (a chunk never overtakes
  // an earlier one, even when the delay shrinks). upstream = client->target,
  // downstream = target->client. Applies to what is read from now on.
  void setDelay(std::chrono::milliseconds upstream, std::chrono::milliseconds downstream);

  // A cut direction is not read: what its sender writes waits in the
  // kernel's buffers (and, once they fill, in the sender's), and arrives in
  // order when the cut is lifted, as unacknowledged segments arrive once a
  // partition heals. Meanwhile the connection stays open: no RST, no FIN (a
  // FIN sent across the cut is read after it, too). Bytes read before the cut
  // (waiting out a delay) are still delivered: they were past the break.
  // Applies to existing and new connections.
  //
  // While either direction is cut, a new connection is accepted and left
  // hanging: the proxy does not connect to the target, reads nothing and
  // closes nothing. A partitioned node does not answer SYNs with RST, but the
  // proxy cannot hold a SYN unanswered (its kernel completes the handshake
  // before accept), so a connection that goes nowhere is the closest it can
  // come. The proxy connects to the target once both directions are free
  // again, as a retried SYN would get through after the partition, and what
  // the client sent meanwhile follows.
  void setCut(bool upstream, bool downstream);
  // The same, for the connections whose client side (the peer of the
  // accepted socket) has this local port only, on top of setCut.
  // cutClient(port, false, false) lifts it.
  void cutClient(uint16_t clientPort, bool upstream, bool downstream);

  // Each new connection is closed at once, with RST (SO_LINGER 0), with this
  // probability: the client's connect() succeeds and its first read fails.
  // The draws come from a generator seeded with `seed`, one per accepted
  // connection, so the pattern is the same for a given seed and connection
  // order. A cut wins over a refusal (a partitioned node sends no RST), but
  // the draw is still made so the pattern does not shift.
  void setRefuse(double probability, uint64_t seed);

  // Closes every open connection pair with RST, both sides; returns once it
  // is done.
  void resetAll();

  struct Stats {
    uint64_t accepted = 0;       // taken from the listen queue, refused ones too
    uint64_t refused = 0;        // closed at once by setRefuse
    uint64_t open = 0;           // connection pairs held now, hanging ones too
    uint64_t bytesUp = 0;        // read from clients and kept for the target
    uint64_t bytesDown = 0;      // read from the target and kept for clients
  };
  // Bytes count when the proxy reads them, so by the time a peer has
  // received something it is in the counters.
  Stats stats() const;

 private:
  struct Cut {
    bool up = false;
    bool down = false;
  };
  struct Settings {
    std::chrono::milliseconds delayUp{0};
    std::chrono::milliseconds delayDown{0};
    Cut cut;
    std::map<uint16_t, Cut> clientCuts;
    double refuseProbability = 0;
    uint64_t refuseSeed = 0;
    uint64_t refuseEpoch = 0;  // bumped by setRefuse: the thread reseeds
  };
  struct Counters {
    std::atomic<uint64_t> accepted{0}, refused{0}, open{0};
    std::atomic<uint64_t> bytesUp{0}, bytesDown{0};
  };
  // The thread's side: the connection pairs and the loop over them (FaultProxy.cpp).
  struct Engine;

  // Called with mu_ held after a change to settings_: wakes the thread and
  // waits until it has taken the change.
  void publish(std::unique_lock<std::mutex>& lock);
  void wake();

  int listenFd_ = -1;
  int wakeFd_ = -1;  // an eventfd: a setter or the destructor wants the thread's attention
  uint16_t port_ = 0;
  uint32_t targetAddr_ = 0;  // network byte order
  uint16_t targetPort_ = 0;

  mutable std::mutex mu_;
  std::condition_variable applied_;
  Settings settings_;
  uint64_t version_ = 0;         // bumped by every change
  uint64_t appliedVersion_ = 0;  // the last version the thread took
  bool resetPending_ = false;
  bool stopping_ = false;
  bool exited_ = false;  // the thread is gone: nobody will take a change

  Counters counters_;
  std::unique_ptr<Engine> engine_;
  std::thread thread_;
};

}  // namespace groupcoord::testing
