#include "server/TcpServer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "server/IoLoop.h"
#include "common/LogRateLimiter.h"

namespace groupcoord::server {

namespace {
LogRateLimiter gRejectLog{std::chrono::seconds(1)};
LogRateLimiter gAcceptErrorLog{std::chrono::seconds(1)};

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }
}  // namespace

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
    : options_(std::move(options)), handler_(handler), counters_(std::make_shared<detail::SharedCounters>()) {}

TcpServer::~TcpServer() {
  stop();
  listenFd_.reset();
}

uint16_t TcpServer::port() const { return port_; }

bool listenOn(const std::string& address, uint16_t port, UniqueFd* out, uint16_t* bound, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    *error = std::string("cannot resolve '") + address + "': " + ::gai_strerror(rc);
    return false;
  }
  std::string lastError = "no address";
  UniqueFd listening;
  for (addrinfo* ai = found; ai != nullptr && !listening.valid(); ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      lastError = errnoText("socket");
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      lastError = errnoText("bind");
      continue;
    }
    if (::listen(fd.get(), SOMAXCONN) != 0) {
      lastError = errnoText("listen");
      continue;
    }
    listening = std::move(fd);
  }
  ::freeaddrinfo(found);
  if (!listening.valid()) {
    *error = lastError;
    return false;
  }
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  ::getsockname(listening.get(), reinterpret_cast<sockaddr*>(&local), &len);
  *bound = local.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  *out = std::move(listening);
  return true;
}

bool TcpServer::bind(std::string* error) {
  if (listenFd_.valid()) return true;
  std::string why;
  if (!listenOn(options_.listenAddress, options_.port, &listenFd_, &port_, &why)) {
    *error = "cannot listen on " + options_.listenAddress + ":" + std::to_string(options_.port) + ": " + why;
    return false;
  }
  if (options_.internalPort) {
    if (!listenOn(options_.listenAddress, *options_.internalPort, &internalListenFd_, &internalPort_, &why)) {
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
    loops_.push_back(std::make_unique<detail::IoLoop>(i, options_, handler_, *counters_));
  }
  for (auto& loop : loops_) {
    if (!loop->start(error)) {
      for (auto& started : loops_) started->beginStop(detail::Clock::now());
      loops_.clear();  // joins
      return false;
    }
  }
  acceptWakeFd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!acceptWakeFd_.valid()) {
    *error = errnoText("eventfd");
    for (auto& loop : loops_) loop->beginStop(detail::Clock::now());
    loops_.clear();
    return false;
  }
  reserveFd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  started_ = true;
  acceptor_ = std::thread([this] { acceptLoop(); });
  return true;
}

void TcpServer::acceptLoop() {
  ::pthread_setname_np(::pthread_self(), "gc-accept");
  // The internal listener last; without one poll() skips its negative fd.
  pollfd fds[3] = {{acceptWakeFd_.get(), POLLIN, 0},
                   {listenFd_.get(), POLLIN, 0},
                   {internalListenFd_.valid() ? internalListenFd_.get() : -1, POLLIN, 0}};
  for (;;) {
    const int n = ::poll(fds, 3, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::critical("acceptor: poll failed: {}; no new connections will be accepted", std::strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;  // stop()
    if (fds[1].revents != 0) acceptReady(listenFd_.get());
    if (fds[2].revents != 0) acceptReady(internalListenFd_.get());
  }
}

void TcpServer::acceptReady(int listenFd) {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    UniqueFd fd(::accept4(listenFd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      const int err = errno;
      uint64_t suppressed = 0;
      if (gAcceptErrorLog.allow(&suppressed)) {
        spdlog::warn("acceptor: accept failed: {} (open connections: {}){}", std::strerror(err),
                     counters_->connectionsOpen.load(std::memory_order_relaxed),
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
          counters_->connectionsRejected.fetch_add(1, std::memory_order_relaxed);
        }
        reserveFd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        continue;
      }
      // Anything else: wait a little instead of spinning on it.
      ::poll(nullptr, 0, 10);
      return;
    }
    if (counters_->connectionsOpen.load(std::memory_order_relaxed) >= static_cast<uint64_t>(options_.maxConnections)) {
      fd.reset();
      counters_->connectionsRejected.fetch_add(1, std::memory_order_relaxed);
      uint64_t suppressed = 0;
      if (gRejectLog.allow(&suppressed)) {
        spdlog::warn("refusing a new connection: max connections ({}) reached{}", options_.maxConnections,
                     suppressed ? fmt::format(" ({} more refused since the last line)", suppressed) : std::string());
      }
      continue;
    }
    counters_->connectionsOpen.fetch_add(1, std::memory_order_relaxed);
    counters_->connectionsAccepted.fetch_add(1, std::memory_order_relaxed);
    const int one = 1;
    // Responses are small and latency matters more than packet count.
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    loops_[nextLoop_]->adopt(std::move(fd));
    nextLoop_ = (nextLoop_ + 1) % loops_.size();
  }
}

void TcpServer::stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(acceptWakeFd_.get(), &one, sizeof(one));
  if (acceptor_.joinable()) acceptor_.join();
  listenFd_.reset();
  internalListenFd_.reset();
  acceptWakeFd_.reset();
  reserveFd_.reset();
  spdlog::info("stopped accepting; answering what is in flight on {} connection(s) (up to {} ms)",
               counters_->connectionsOpen.load(std::memory_order_relaxed), options_.shutdownGrace.count());
  const auto deadline = detail::Clock::now() + options_.shutdownGrace;
  for (auto& loop : loops_) loop->beginStop(deadline);
  for (auto& loop : loops_) loop->join();
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
