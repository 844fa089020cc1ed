#include "server/TcpServer.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "server/BinaryPort.h"
#include "server/Chain.h"
#include "server/IoLoop.h"
#include "common/LogRateLimiter.h"
#include "server/net/Listener.h"
#include "server/net/Reactor.h"

namespace groupcoord::server {

namespace {
LogRateLimiter gRejectLog{std::chrono::seconds(1)};
LogRateLimiter gAcceptErrorLog{std::chrono::seconds(1)};
}  // namespace

namespace detail {

// The acceptor thread: the listeners on a reactor of their own, accepting
// under max.connections (refusing the newcomer past it: the binary port
// closes no connection to make room) and handing each connection to the
// I/O threads in turn.
class Acceptor final : net::Turns, net::AcceptPolicy {
 public:
  Acceptor(const TcpServerOptions& options, SharedCounters& counters, std::vector<std::unique_ptr<IoLoop>>& loops)
      : options_(options), counters_(counters), loops_(loops) {
    limits_.maxConnections = static_cast<uint64_t>(options_.maxConnections);
  }
  ~Acceptor() { stop(); }

  // Watches the listeners (`internalFd` -1: none) and starts the thread.
  bool start(int listenFd, int internalFd, std::string* error) {
    if (!reactor_.open(error)) return false;
    listener_ = Listener(this, listenFd);
    internal_ = Listener(this, internalFd);
    if (!reactor_.add(listenFd, EPOLLIN, &listener_) ||
        (internalFd >= 0 && !reactor_.add(internalFd, EPOLLIN, &internal_))) {
      *error = std::string("epoll_ctl(listener): ") + std::strerror(errno);
      return false;
    }
    reserveFd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    thread_ = std::thread([this] { run(); });
    return true;
  }

  // Any thread: stops accepting and joins the thread. Idempotent.
  void stop() {
    stopping_.store(true);
    reactor_.wake();
    if (thread_.joinable()) thread_.join();
    reserveFd_.reset();
  }

 private:
  struct Listener final : net::EventSource {
    Listener() = default;
    Listener(Acceptor* a, int listenFd) : owner(a), fd(listenFd) {}
    void onEvent(uint32_t) override {
      // Once stop() asked, nothing more is accepted.
      if (!owner->stopping_.load(std::memory_order_relaxed)) net::acceptAll(fd, owner->limits_, *owner);
    }
    Acceptor* owner = nullptr;
    int fd = -1;
  };

  void run() {
    ::pthread_setname_np(::pthread_self(), "gc-accept");
    std::string error;
    if (!reactor_.run(*this, &error)) {
      spdlog::critical("acceptor: {}; no new connections will be accepted", error);
    }
  }

  // net::Turns: no deadline; after each turn, whether stop() asked.
  net::Clock::time_point nextWake() override { return net::Clock::time_point::max(); }
  void turnBegins(net::Clock::time_point) override {}
  bool turnEnds() override { return !stopping_.load(); }

  // net::AcceptPolicy
  uint64_t openConnections() override { return counters_.connectionsOpen.load(std::memory_order_relaxed); }
  int openFrom(const std::string&) override { return 0; }
  bool makeRoom(const std::string&, bool) override { return false; }
  void refused(const std::string&) override {
    counters_.connectionsRejected.fetch_add(1, std::memory_order_relaxed);
    uint64_t suppressed = 0;
    if (gRejectLog.allow(&suppressed)) {
      spdlog::warn("refusing a new connection: max connections ({}) reached{}", options_.maxConnections,
                   suppressed ? fmt::format(" ({} more refused since the last line)", suppressed) : std::string());
    }
  }
  void admitted(UniqueFd fd, const std::string&) override {
    counters_.connectionsOpen.fetch_add(1, std::memory_order_relaxed);
    counters_.connectionsAccepted.fetch_add(1, std::memory_order_relaxed);
    loops_[nextLoop_]->adopt(std::move(fd));
    nextLoop_ = (nextLoop_ + 1) % loops_.size();
  }
  bool acceptFailed(int listenFd, int err) override {
    if (err == EPROTO) return true;
    uint64_t suppressed = 0;
    if (gAcceptErrorLog.allow(&suppressed)) {
      spdlog::warn("acceptor: accept failed: {} (open connections: {}){}", std::strerror(err),
                   counters_.connectionsOpen.load(std::memory_order_relaxed),
                   suppressed ? fmt::format(" ({} similar lines suppressed)", suppressed) : std::string());
    }
    if ((err == EMFILE || err == ENFILE) && reserveFd_.valid()) {
      // Out of descriptors: the pending connection would keep the listening
      // socket readable forever. Free the spare descriptor, take the
      // connection and close it, and keep the spare again.
      reserveFd_.reset();
      UniqueFd dropped(::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC));
      if (dropped.valid()) {
        dropped.reset();
        counters_.connectionsRejected.fetch_add(1, std::memory_order_relaxed);
      }
      reserveFd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      return true;
    }
    // Anything else: wait a little instead of spinning on it.
    ::poll(nullptr, 0, 10);
    return false;
  }

  const TcpServerOptions& options_;
  SharedCounters& counters_;
  std::vector<std::unique_ptr<IoLoop>>& loops_;
  net::AcceptLimits limits_;
  net::Reactor reactor_;
  Listener listener_;
  Listener internal_;
  UniqueFd reserveFd_;  // kept open to be released when accept() hits EMFILE
  size_t nextLoop_ = 0;  // acceptor thread only
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace detail

uint64_t raiseOpenFileLimit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return static_cast<uint64_t>(lim.rlim_cur);
}

TcpServer::TcpServer(TcpServerOptions options, protocol::Handler& handler)
    : options_(std::move(options)),
      chain_(std::make_unique<Chain>(options_, handler)),
      protocol_(std::make_unique<BinaryProtocol>(chain_->head())),
      counters_(std::make_shared<detail::SharedCounters>()) {}

TcpServer::TcpServer(TcpServerOptions options, std::unique_ptr<net::FrameProtocol> protocol)
    : options_(std::move(options)),
      protocol_(std::move(protocol)),
      counters_(std::make_shared<detail::SharedCounters>()) {}

TcpServer::~TcpServer() {
  stop();
  listenFd_.reset();
}

uint16_t TcpServer::port() const { return port_; }

bool TcpServer::bind(std::string* error) {
  if (listenFd_.valid()) return true;
  std::string why;
  if (!net::listenOn(options_.listenAddress, options_.port, &listenFd_, &port_, &why)) {
    *error = "cannot listen on " + options_.listenAddress + ":" + std::to_string(options_.port) + ": " + why;
    return false;
  }
  if (options_.internalPort) {
    if (!net::listenOn(options_.listenAddress, *options_.internalPort, &internalListenFd_, &internalPort_, &why)) {
      *error = "cannot listen on " + options_.listenAddress + ":" + std::to_string(*options_.internalPort) +
               " (internal.listen.port): " + why;
      listenFd_.reset();
      port_ = 0;
      return false;
    }
    // The loops tell internal connections by the port they arrived at.
    options_.internalPort = internalPort_;
  }
  return true;
}

int TcpServer::defaultIoThreads() {
  // More I/O threads than cores the process may use only take turns on
  // them: a heartbeat on one thread's connection then waits out another
  // thread's time slice (milliseconds) while that one works through a
  // burst of registrations.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

bool TcpServer::start(std::string* error) {
  if (started_) return true;
  if (stopped_) {
    *error = "the server was stopped; make a new one";
    return false;
  }
  if (!bind(error)) return false;
  int threads = options_.ioThreads;
  if (threads <= 0) threads = defaultIoThreads();
  for (int i = 0; i < threads; ++i) {
    loops_.push_back(std::make_unique<detail::IoLoop>(i, options_, *protocol_, *counters_));
  }
  for (auto& loop : loops_) {
    if (!loop->start(error)) {
      for (auto& started : loops_) started->beginStop(detail::Clock::now());
      loops_.clear();  // joins
      return false;
    }
  }
  acceptor_ = std::make_unique<detail::Acceptor>(options_, *counters_, loops_);
  if (!acceptor_->start(listenFd_.get(), internalListenFd_.valid() ? internalListenFd_.get() : -1, error)) {
    acceptor_.reset();
    for (auto& loop : loops_) loop->beginStop(detail::Clock::now());
    loops_.clear();
    return false;
  }
  started_ = true;
  return true;
}

void TcpServer::stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  acceptor_->stop();
  acceptor_.reset();
  listenFd_.reset();
  internalListenFd_.reset();
  spdlog::info("stopped accepting; answering what is in flight on {} connection(s) (up to {} ms)",
               counters_->connectionsOpen.load(std::memory_order_relaxed), options_.shutdownGrace.count());
  const auto deadline = detail::Clock::now() + options_.shutdownGrace;
  for (auto& loop : loops_) loop->beginStop(deadline);
  for (auto& loop : loops_) loop->join();
  // The gate hands requests that waited behind an Authenticate to this
  // server's chain, which goes with the server: its worker ends here.
  if (chain_ && options_.auth) options_.auth->stop();
  spdlog::info("every connection closed");
}

TcpServerStats TcpServer::stats() const {
  TcpServerStats s;
  s.connectionsOpen = counters_->connectionsOpen.load(std::memory_order_relaxed);
  s.connectionsAccepted = counters_->connectionsAccepted.load(std::memory_order_relaxed);
  s.connectionsRejected = counters_->connectionsRejected.load(std::memory_order_relaxed);
  for (const auto& loop : loops_) loop->addStats(s);
  return s;
}

}  // namespace groupcoord::server
