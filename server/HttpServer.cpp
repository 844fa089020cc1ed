#include "server/HttpServer.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <thread>
#include <unordered_map>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/Sync.h"
#include "server/Handles.h"
#include "server/HttpRoutes.h"
#include "common/LogRateLimiter.h"
#include "server/Tls.h"
#include "server/Transport.h"
#include "server/net/Listener.h"
#include "server/net/Reactor.h"

namespace groupcoord::server {

const char* httpCloseName(HttpClose reason) {
  switch (reason) {
    case HttpClose::HeadTimeout: return "head_timeout";
    case HttpClose::IdleTimeout: return "idle_timeout";
    case HttpClose::WriteTimeout: return "write_timeout";
    case HttpClose::Displaced: return "displaced";
    case HttpClose::Refused: return "refused";
    case HttpClose::BadRequest: return "bad_request";
    case HttpClose::TlsFailed: return "tls_failed";
    case HttpClose::kCount: break;
  }
  return "unknown";
}

void registerHttpMetrics(metrics::Registry& r, std::function<HttpStats()> stats) {
  r.addGauge("groupcoord_http_connections_open", "HTTP connections open now",
             [stats] { return static_cast<double>(stats().connectionsOpen); });
  r.add("groupcoord_http_connections_accepted_total", "HTTP connections accepted", metrics::Type::Counter,
        [stats](metrics::FamilyWriter& w) { w.value(static_cast<double>(stats().connectionsAccepted)); });
  r.add("groupcoord_http_requests_total", "HTTP requests read (whole heads)", metrics::Type::Counter,
        [stats](metrics::FamilyWriter& w) { w.value(static_cast<double>(stats().requests)); });
  r.add("groupcoord_http_busy_total", "HTTP requests answered 503 because their queue was full",
        metrics::Type::Counter, [stats](metrics::FamilyWriter& w) { w.value(static_cast<double>(stats().statusBusy)); });
  r.add("groupcoord_http_connections_closed_total",
        "HTTP connections the server closed for a limit or a refused request, by reason", metrics::Type::Counter,
        [stats](metrics::FamilyWriter& w) {
          const HttpStats s = stats();
          for (int i = 0; i < static_cast<int>(HttpClose::kCount); ++i) {
            w.value({{"reason", httpCloseName(static_cast<HttpClose>(i))}}, static_cast<double>(s.closed[i]));
          }
        });
}

namespace {

using Clock = std::chrono::steady_clock;

// What a close for a limit says in the log.
const char* closeSentence(HttpClose reason) {
  switch (reason) {
    case HttpClose::HeadTimeout: return "no whole request head within http.head.timeout.ms";
    case HttpClose::IdleTimeout: return "idle past http.idle.timeout.ms";
    case HttpClose::WriteTimeout: return "its answer made no progress within http.write.timeout.ms";
    case HttpClose::Displaced:
      return "a newer connection took its place (http.max.connections or http.max.connections.per.source)";
    case HttpClose::Refused:
      return "over http.max.connections or http.max.connections.per.source, every connection busy";
    case HttpClose::BadRequest: return "a request refused with 400 or 405";
    case HttpClose::TlsFailed: return "the TLS handshake failed";
    case HttpClose::kCount: break;
  }
  return "";
}

// A request handed to a lane, and its answer handed back.
struct Job {
  uint64_t connection = 0;
  HttpRequestHead head;
  bool keepAlive = false;
};
struct Done {
  uint64_t connection = 0;
  HttpAnswer answer;
  bool keepAlive = false;
};

// Threads answering requests from a bounded queue.
class Lane {
 public:
  Lane(const char* name, int threads, size_t capacity, std::function<void(Job&)> work)
      : name_(name), capacity_(capacity), work_(std::move(work)) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  ~Lane() { stop(); }

  // False when the queue is full (the job is not taken).
  bool post(Job&& job) EXCLUDES(mutex_) {
    {
      MutexLock lock(mutex_);
      if (stopping_ || queue_.size() >= capacity_) return false;
      queue_.push_back(std::move(job));
    }
    ready_.notify_one();
    return true;
  }

  void stop() EXCLUDES(mutex_) {
    {
      MutexLock lock(mutex_);
      stopping_ = true;
      queue_.clear();
    }
    ready_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void run() EXCLUDES(mutex_) {
    pthread_setname_np(pthread_self(), name_);
    for (;;) {
      Job job;
      {
        MutexLock lock(mutex_);
        while (!stopping_ && queue_.empty()) waitLocked(ready_, mutex_);
        if (stopping_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      work_(job);
    }
  }

  const char* name_;
  const size_t capacity_;
  std::function<void(Job&)> work_;
  Mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> queue_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace

// The connection thread runs a reactor (server/net/Reactor.h): its turns
// (net::Turns) take the lanes' answers and sweep the deadlines, and its
// accepting (net::acceptAll) makes room past a cap by displacing (this
// port's net::AcceptPolicy).
struct HttpServer::Impl final : net::Turns, net::AcceptPolicy {
  static constexpr size_t kReadChunk = 16384;
  static constexpr auto kLinger = std::chrono::seconds(1);
  static constexpr auto kSweep = std::chrono::milliseconds(100);

  struct Connection final : net::EventSource {
    explicit Connection(Impl& server) : owner(server) {}
    // Every event moves it on as far as it goes. One closed earlier in this
    // turn (it lives on in the graveyard until the turn ends) ignores what
    // the same batch still reports.
    void onEvent(uint32_t) override {
      if (!closed) owner.drive(*this, owner.turnNow);
    }
    enum State {
      Handshake,  // TLS handshake under way (deadline: headTimeout from the accept)
      Waiting,    // for a request head (idleTimeout until its first byte, then headTimeout)
      Working,    // a lane is answering it (no deadline: the lane's work is bounded)
      Writing,    // the answer going out (writeTimeout without progress)
      Lingering,  // answered with "Connection: close": unread input drained for a moment
    };
    Impl& owner;
    bool closed = false;
    uint64_t id = 0;
    UniqueFd fd;
    std::unique_ptr<Transport> io;  // before `fd` goes
    std::string peer;
    State state = Waiting;
    bool headStarted = false;
    std::string in;
    std::string out;
    size_t outSent = 0;
    bool closeAfterWrite = false;
    int served = 0;
    Clock::time_point deadline;
    bool inWaiting = false;
    std::list<Connection*>::iterator waitingPos;
    std::list<Connection*>::iterator addressPos;
  };
  // The listening socket's events.
  struct Listener final : net::EventSource {
    explicit Listener(Impl& server) : owner(server) {}
    void onEvent(uint32_t) override { owner.acceptAll(); }
    Impl& owner;
  };
  // The open connections of one source address.
  struct Address {
    int count = 0;
    std::list<Connection*> waiting;  // displaceable, longest waiting first
  };

  Impl(const HttpOptions& served, const metrics::Registry& registry, const std::function<std::string()>& readiness)
      : options(served), context{served, registry, readiness} {}

  ~Impl() { stop(); }

  bool start(std::string* error);
  uint16_t boundPort = 0;  // after start()
  void stop();

  // Connection thread.
  void run();
  // net::Turns: wake for the next sweep; after the events, the lanes'
  // answers and the sweep; run() ends once stop() asked.
  Clock::time_point nextWake() override { return nextSweep; }
  void turnBegins(Clock::time_point at) override { turnNow = at; }
  bool turnEnds() override;
  void acceptAll();
  // net::AcceptPolicy: past a cap, the connection (of that address, or of
  // any) that has waited longest for a head makes room (displace()).
  uint64_t openConnections() override { return connections.size(); }
  int openFrom(const std::string& source) override;
  bool makeRoom(const std::string& source, bool perSource) override;
  void refused(const std::string& source) override;
  void admitted(UniqueFd fd, const std::string& source) override;
  bool acceptFailed(int listenFd, int err) override;
  bool displace(std::list<Connection*>& waiting, Clock::time_point now);
  void drive(Connection& c, Clock::time_point now);
  void dispatch(Connection& c, HttpRequestHead head, Clock::time_point now);
  void answer(Connection& c, const HttpAnswer& a, bool keepAlive, Clock::time_point now);
  void takeDone(Clock::time_point now);
  void sweep(Clock::time_point now);
  // Closes and forgets `c`; kCount: an ordinary close (not for a limit).
  void close(Connection& c, HttpClose reason);
  void toWaiting(Connection& c);
  void fromWaiting(Connection& c);
  // Bytes read into c.in: > 0, 0 when none can be read now, -1 when the
  // connection ended or failed.
  long readSome(Connection& c);
  long writeSome(Connection& c);
  void finish(Job& job);
  void wake();

  const HttpOptions& options;
  HttpContext context;
  HttpHeadLimits limits;
  std::shared_ptr<TlsServerContext> tls;
  UniqueFd listenFd;
  net::Reactor reactor;
  Listener listener{*this};
  net::AcceptLimits acceptLimits;
  std::thread thread;
  std::unique_ptr<Lane> metricsLane;
  std::unique_ptr<Lane> statusLane;
  std::atomic<bool> stopping{false};

  Mutex doneMutex;
  std::vector<Done> done GUARDED_BY(doneMutex);

  // Connection thread only.
  Clock::time_point turnNow{};  // when this turn's wait returned
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections;
  std::vector<std::unique_ptr<Connection>> graveyard;  // closed this turn; freed at its end
  std::unordered_map<std::string, Address> addresses;
  std::list<Connection*> waiting;  // displaceable, longest waiting first
  uint64_t nextId = 16;
  bool acceptPaused = false;
  Clock::time_point nextSweep{};

  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> open{0};
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> statusBusy{0};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(HttpClose::kCount)> closed{};
  LogRateLimiter limitLog{std::chrono::seconds(5)};
};

bool HttpServer::Impl::start(std::string* error) {
  const std::string where = options.address + ":" + std::to_string(options.port);
  if (!options.tlsCertificateFile.empty()) {
    tls = TlsServerContext::create(options.tlsCertificateFile, options.tlsKeyFile, "", error);
    if (!tls) {
      *error = "cannot serve HTTPS on " + where + ": " + *error;
      return false;
    }
  }
  std::string why;
  // A client speaks first on this port (a request head, or a ClientHello):
  // the kernel keeps a connection that has sent nothing for up to the idle
  // timeout before handing it over, when the server's own idle deadline
  // starts.
  const auto defer = std::chrono::ceil<std::chrono::seconds>(options.idleTimeout);
  if (!net::listenOn(options.address, options.port, &listenFd, &boundPort, &why, defer)) {
    *error = "cannot serve HTTP on " + where + ": " + why;
    return false;
  }
  if (!reactor.open(&why)) {
    *error = "cannot serve HTTP on " + where + ": " + why;
    return false;
  }
  reactor.add(listenFd.get(), EPOLLIN, &listener);
  acceptLimits.maxConnections = static_cast<uint64_t>(std::max(0, options.maxConnections));
  acceptLimits.maxPerSource = options.maxConnectionsPerSource;

  metricsLane = std::make_unique<Lane>("gc-http-metrics", 1, 256, [this](Job& job) { finish(job); });
  statusLane = std::make_unique<Lane>("gc-http-status", std::max(1, options.statusThreads),
                                      static_cast<size_t>(std::max(1, options.statusQueue)),
                                      [this](Job& job) { finish(job); });
  thread = std::thread([this] { run(); });
  return true;
}

void HttpServer::Impl::stop() {
  if (thread.joinable()) {
    stopping = true;
    wake();
    thread.join();
  }
  if (statusLane) statusLane->stop();
  if (metricsLane) metricsLane->stop();
}

void HttpServer::Impl::wake() { reactor.wake(); }

// A lane's thread: answers the job and hands the answer to the connection
// thread. Nothing may escape into the lane.
void HttpServer::Impl::finish(Job& job) {
  Done d;
  d.connection = job.connection;
  d.keepAlive = job.keepAlive;
  try {
    d.answer = answerRequest(job.head, context);
  } catch (const std::exception& e) {
    spdlog::warn("HTTP: answering {} failed: {}", job.head.target, e.what());
    d.answer.status = 500;
    d.answer.body = std::string("internal error: ") + e.what() + "\n";
  }
  {
    MutexLock lock(doneMutex);
    done.push_back(std::move(d));
  }
  wake();
}

void HttpServer::Impl::run() {
  pthread_setname_np(pthread_self(), "gc-http");
  std::string error;
  if (!reactor.run(*this, &error)) spdlog::critical("HTTP: {}; the HTTP port stops serving", error);
  while (!connections.empty()) close(*connections.begin()->second, HttpClose::kCount);
  graveyard.clear();
}

bool HttpServer::Impl::turnEnds() {
  takeDone(turnNow);
  if (turnNow >= nextSweep) {
    sweep(turnNow);
    nextSweep = turnNow + kSweep;
  }
  graveyard.clear();
  return !stopping.load();
}

void HttpServer::Impl::acceptAll() { net::acceptAll(listenFd.get(), acceptLimits, *this); }

int HttpServer::Impl::openFrom(const std::string& source) {
  auto a = addresses.find(source);
  return a == addresses.end() ? 0 : a->second.count;
}

bool HttpServer::Impl::makeRoom(const std::string& source, bool perSource) {
  if (!perSource) return displace(waiting, turnNow);
  auto a = addresses.find(source);
  return a != addresses.end() && displace(a->second.waiting, turnNow);
}

void HttpServer::Impl::refused(const std::string& source) {
  closed[static_cast<size_t>(HttpClose::Refused)].fetch_add(1, std::memory_order_relaxed);
  uint64_t held = 0;
  if (limitLog.allow(&held)) {
    spdlog::info("HTTP: refused a connection from {}: {} ({} more closes for limits held back)", source,
                 closeSentence(HttpClose::Refused), held);
  }
}

bool HttpServer::Impl::acceptFailed(int, int err) {
  if (err != EMFILE && err != ENFILE) return false;
  // Out of descriptors: make room from the connections waiting longest;
  // with none, stop accepting until a connection closes.
  if (displace(waiting, turnNow)) return true;
  uint64_t held = 0;
  if (limitLog.allow(&held)) {
    spdlog::warn("HTTP: out of file descriptors with every connection busy; accepting again when one closes");
  }
  reactor.modify(listenFd.get(), 0, &listener);
  acceptPaused = true;
  return false;
}

void HttpServer::Impl::admitted(UniqueFd fd, const std::string& peer) {
  auto owned = std::make_unique<Connection>(*this);
  Connection& c = *owned;
  c.id = nextId++;
  c.fd = std::move(fd);
  c.peer = peer;
  if (tls) {
    SslPtr ssl = tls->accept(c.fd.get());
    if (!ssl) return;
    c.io = tlsTransport(std::move(ssl));
    c.state = Connection::Handshake;
    c.deadline = turnNow + options.headTimeout;
  } else {
    c.io = plainTransport(c.fd.get());
    c.state = Connection::Waiting;
    c.deadline = turnNow + options.idleTimeout;
  }
  if (!reactor.add(c.fd.get(), EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, &c)) return;
  ++addresses[peer].count;
  connections.emplace(c.id, std::move(owned));
  accepted.fetch_add(1, std::memory_order_relaxed);
  open.store(connections.size(), std::memory_order_relaxed);
  toWaiting(c);
  // The request is usually there already: answering it turnNow keeps a
  // quick client from being displaced before its next turn.
  drive(c, turnNow);
}

bool HttpServer::Impl::displace(std::list<Connection*>& list, Clock::time_point now) {
  // The connection that has waited longest for a head goes. But the server
  // may not have read it since its request arrived (accepting a burst of
  // connections comes first): it is driven once, and if that answers it (it
  // leaves the list) the next in line is looked at; if its peer had gone,
  // its room is free.
  while (!list.empty()) {
    Connection& c = *list.front();
    const uint64_t id = c.id;
    drive(c, now);
    auto it = connections.find(id);
    if (it == connections.end()) return true;
    if (!list.empty() && list.front() == it->second.get()) {
      close(*it->second, HttpClose::Displaced);
      return true;
    }
  }
  return false;
}

void HttpServer::Impl::toWaiting(Connection& c) {
  if (c.inWaiting) return;
  waiting.push_back(&c);
  c.waitingPos = std::prev(waiting.end());
  auto& a = addresses[c.peer].waiting;
  a.push_back(&c);
  c.addressPos = std::prev(a.end());
  c.inWaiting = true;
}

void HttpServer::Impl::fromWaiting(Connection& c) {
  if (!c.inWaiting) return;
  waiting.erase(c.waitingPos);
  addresses[c.peer].waiting.erase(c.addressPos);
  c.inWaiting = false;
}

void HttpServer::Impl::close(Connection& c, HttpClose reason) {
  if (reason != HttpClose::kCount) {
    closed[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
    uint64_t held = 0;
    if (reason != HttpClose::BadRequest && limitLog.allow(&held)) {
      spdlog::info("HTTP: closed the connection from {}: {} ({} more closes for limits held back)", c.peer,
                   closeSentence(reason), held);
    }
  }
  fromWaiting(c);
  if (auto a = addresses.find(c.peer); a != addresses.end() && --a->second.count <= 0) addresses.erase(a);
  reactor.remove(c.fd.get());
  // The transport first, then its socket.
  c.io.reset();
  c.fd.reset();
  c.closed = true;
  // The object itself lives until the end of the turn: callers up the
  // stack, and events later in the turn's batch, still point at it.
  if (auto it = connections.find(c.id); it != connections.end()) {
    graveyard.push_back(std::move(it->second));
    connections.erase(it);
  }
  open.store(connections.size(), std::memory_order_relaxed);
  if (acceptPaused) {
    reactor.modify(listenFd.get(), EPOLLIN, &listener);
    acceptPaused = false;
  }
}

long HttpServer::Impl::readSome(Connection& c) {
  char buf[kReadChunk];
  const IoResult r = c.io->read(buf, sizeof(buf));
  if (r.status == IoStatus::Progress) {
    c.in.append(buf, r.bytes);
    return static_cast<long>(r.bytes);
  }
  return r.status == IoStatus::WantRead || r.status == IoStatus::WantWrite ? 0 : -1;
}

long HttpServer::Impl::writeSome(Connection& c) {
  const IoResult r = c.io->write(c.out.data() + c.outSent, c.out.size() - c.outSent);
  if (r.status == IoStatus::Progress) return static_cast<long>(r.bytes);
  return r.status == IoStatus::WantRead || r.status == IoStatus::WantWrite ? 0 : -1;
}

// Moves the connection on as far as its socket lets it, without blocking.
// May close it: the caller must not touch `c` afterwards.
void HttpServer::Impl::drive(Connection& c, Clock::time_point now) {
  for (;;) {
    switch (c.state) {
      case Connection::Handshake: {
        const IoResult r = c.io->handshake();
        if (r.status == IoStatus::Progress) {
          // The head's deadline runs on from the accept.
          c.state = Connection::Waiting;
          c.headStarted = true;
          break;
        }
        if (r.status == IoStatus::WantRead || r.status == IoStatus::WantWrite) return;
        spdlog::debug("HTTP: TLS handshake with {} failed: {}", c.peer, c.io->error());
        return close(c, HttpClose::TlsFailed);
      }
      case Connection::Waiting: {
        if (!c.in.empty()) {
          HeadParse p = parseHead(c.in, limits);
          if (p.state == HeadParse::Complete) {
            c.in.erase(0, p.length);
            dispatch(c, std::move(p.head), now);
            break;
          }
          if (p.state == HeadParse::Refused) {
            closed[static_cast<size_t>(HttpClose::BadRequest)].fetch_add(1, std::memory_order_relaxed);
            HttpAnswer a;
            a.status = 400;
            a.body = "bad request: " + p.why + "\n";
            fromWaiting(c);
            answer(c, a, false, now);
            break;
          }
        }
        const long r = readSome(c);
        if (r < 0) return close(c, HttpClose::kCount);
        if (r == 0) return;
        if (!c.headStarted) {
          c.headStarted = true;
          c.deadline = now + options.headTimeout;
        }
        break;
      }
      case Connection::Working:
        return;
      case Connection::Writing: {
        const long r = c.outSent < c.out.size() ? writeSome(c) : 0;
        if (r < 0) return close(c, HttpClose::kCount);
        if (r > 0) {
          c.outSent += static_cast<size_t>(r);
          c.deadline = now + options.writeTimeout;
        }
        if (c.outSent < c.out.size()) {
          if (r == 0) return;
          break;
        }
        c.out.clear();
        c.out.shrink_to_fit();
        c.outSent = 0;
        if (c.closeAfterWrite) {
          // Unread input would turn the close into a reset that can destroy
          // the answer on its way: stop sending, read what still comes for
          // a moment, then close.
          c.io->closeNotify();
          ::shutdown(c.fd.get(), SHUT_WR);
          c.state = Connection::Lingering;
          c.deadline = now + kLinger;
          c.in.clear();
          toWaiting(c);
          break;
        }
        c.state = Connection::Waiting;
        c.headStarted = !c.in.empty();
        c.deadline = now + (c.headStarted ? options.headTimeout : options.idleTimeout);
        toWaiting(c);
        break;
      }
      case Connection::Lingering: {
        const long r = readSome(c);
        c.in.clear();
        if (r < 0) return close(c, HttpClose::kCount);
        if (r == 0) return;
        break;
      }
    }
  }
}

void HttpServer::Impl::dispatch(Connection& c, HttpRequestHead head, Clock::time_point now) {
  requests.fetch_add(1, std::memory_order_relaxed);
  fromWaiting(c);
  ++c.served;
  const bool keepAlive = head.wantsKeepAlive() && c.served < options.maxRequestsPerConnection;
  const HttpLane lane = laneOf(head, options.status != nullptr);
  if (lane == HttpLane::Now) {
    const HttpAnswer a = answerRequest(head, context);
    if (a.close) closed[static_cast<size_t>(HttpClose::BadRequest)].fetch_add(1, std::memory_order_relaxed);
    return answer(c, a, keepAlive, now);
  }
  c.state = Connection::Working;
  Job job{c.id, std::move(head), keepAlive};
  Lane& to = lane == HttpLane::Metrics ? *metricsLane : *statusLane;
  if (to.post(std::move(job))) return;
  statusBusy.fetch_add(1, std::memory_order_relaxed);
  HttpAnswer busy;
  busy.status = 503;
  busy.body = lane == HttpLane::Metrics ? "busy: scrapes are queued already; try again\n"
                                        : "busy: the status pages' queue (" + std::to_string(options.statusQueue) +
                                              " requests) is full; try again\n";
  busy.fields.emplace_back("Retry-After", "1");
  answer(c, busy, keepAlive, now);
}

void HttpServer::Impl::answer(Connection& c, const HttpAnswer& a, bool keepAlive, Clock::time_point now) {
  const bool keep = keepAlive && !a.close && !stopping.load(std::memory_order_relaxed);
  c.out = renderAnswer(a, keep);
  c.outSent = 0;
  c.closeAfterWrite = !keep;
  c.state = Connection::Writing;
  c.deadline = now + options.writeTimeout;
}

void HttpServer::Impl::takeDone(Clock::time_point now) {
  std::vector<Done> batch;
  {
    MutexLock lock(doneMutex);
    batch.swap(done);
  }
  for (auto& d : batch) {
    auto it = connections.find(d.connection);
    if (it == connections.end() || it->second->state != Connection::Working) continue;
    Connection& c = *it->second;
    answer(c, d.answer, d.keepAlive, now);
    drive(c, now);
  }
}

void HttpServer::Impl::sweep(Clock::time_point now) {
  std::vector<std::pair<uint64_t, HttpClose>> late;
  for (const auto& [id, c] : connections) {
    if (c->state == Connection::Working || now < c->deadline) continue;
    HttpClose reason = HttpClose::kCount;
    if (c->state == Connection::Handshake) reason = HttpClose::HeadTimeout;
    if (c->state == Connection::Waiting) reason = c->headStarted ? HttpClose::HeadTimeout : HttpClose::IdleTimeout;
    if (c->state == Connection::Writing) reason = HttpClose::WriteTimeout;
    late.emplace_back(id, reason);
  }
  for (const auto& [id, reason] : late) {
    if (auto it = connections.find(id); it != connections.end()) close(*it->second, reason);
  }
}

HttpServer::HttpServer(HttpOptions options, const metrics::Registry& registry, std::function<std::string()> readiness)
    : options_(std::move(options)), registry_(registry), readiness_(std::move(readiness)) {
  if (!readiness_) readiness_ = [] { return std::string(); };
}

HttpServer::~HttpServer() { stop(); }

bool HttpServer::start(std::string* error) {
  if (impl_) return true;
  auto impl = std::make_unique<Impl>(options_, registry_, readiness_);
  if (!impl->start(error)) return false;
  port_ = impl->boundPort;
  impl_ = std::move(impl);
  return true;
}

void HttpServer::stop() {
  if (!impl_) return;
  impl_->stop();
  impl_.reset();
}

HttpStats HttpServer::stats() const {
  HttpStats s;
  if (!impl_) return s;
  s.connectionsOpen = impl_->open.load(std::memory_order_relaxed);
  s.connectionsAccepted = impl_->accepted.load(std::memory_order_relaxed);
  s.requests = impl_->requests.load(std::memory_order_relaxed);
  s.statusBusy = impl_->statusBusy.load(std::memory_order_relaxed);
  for (size_t i = 0; i < impl_->closed.size(); ++i) s.closed[i] = impl_->closed[i].load(std::memory_order_relaxed);
  return s;
}

}  // namespace groupcoord::server
