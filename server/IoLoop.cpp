#include "server/IoLoop.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <span>
#include <utility>
#include <variant>

#include <spdlog/spdlog.h>

#include "protocol/Codec.h"
#include "common/LogRateLimiter.h"
#include "server/Tls.h"
#include "server/Transport.h"

namespace groupcoord::server::detail {

namespace {

constexpr size_t kScratchBytes = 64 * 1024;
// Buffers larger than this are released once empty, so that a burst (the
// registration answers of a process's members, each listing the group) does
// not pin memory on a connection that then only carries heartbeats, whose
// answers are 16 bytes each. Measured with bench/ at 10,000 members on 1,000
// connections: 64 KiB kept about 26 KiB per connection after the joins.
constexpr size_t kKeepBufferBytes = 4 * 1024;
// A loop turn's time for requests other than heartbeats, and the least each
// turn gives to what earlier turns deferred (IoLoop::overBudget). A storm
// of 10,000 registrations over 1,000 connections took 25 to 37 ms a turn
// without it (256 connections of ten registrations each), and as long to
// answer them, while other groups' heartbeats waited in their sockets.
constexpr auto kTurnBudget = std::chrono::microseconds(1000);
constexpr auto kTurnSlice = std::chrono::microseconds(250);

// Set by each loop thread on itself: a post from the thread that will drain
// the inbox anyway needs no wake-up.
thread_local const Inbox* tCurrentInbox = nullptr;

LogRateLimiter gFrameLog{std::chrono::seconds(1)};
LogRateLimiter gOverflowLog{std::chrono::seconds(1)};
LogRateLimiter gIdleLog{std::chrono::seconds(1)};
LogRateLimiter gTlsLog{std::chrono::seconds(1)};

// Caller::connection: one count for every loop of the process.
std::atomic<uint64_t> gConnectionSerial{0};

// The peer's address and port; host "" when getpeername fails.
net::Peer peerOf(int fd) {
  net::Peer caller;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return caller;
  char host[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    caller.host = host;
    caller.port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    caller.host = host;
    caller.port = ntohs(a->sin6_port);
  }
  return caller;
}

// The port a connection arrived at (its local port); 0 when not known.
uint16_t localPortOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

}  // namespace

// One client connection. Owned by its loop's connections_ vector; touched
// only by the loop thread. Registered with the loop's reactor, which hands
// it its socket's events.
struct Connection final : net::EventSource {
  explicit Connection(IoLoop& owner) : loop(owner) {}
  // A connection closed earlier in this turn (it lives on in the graveyard
  // until the turn ends) ignores what the same batch still reports.
  void onEvent(uint32_t events) override {
    if (!closed) loop.onEvent(*this, events);
  }

  IoLoop& loop;
  UniqueFd fd;  // closed by IoLoop::close(), after `ssl` is freed
  size_t index = 0;  // position in IoLoop::connections_
  std::string peer;          // "host:port", for the logs
  std::unique_ptr<net::ProtocolSession> session;  // the protocol's (FrameProtocol::open)
  std::vector<uint8_t> in;   // bytes of frames not yet dispatched (empty when idle)
  std::vector<uint8_t> out;  // responses not yet written, from outOffset on
  size_t outOffset = 0;
  uint64_t nextSeq = 0;     // sequence number of the next request read
  uint64_t flushedSeq = 0;  // requests whose response moved to `out`
  uint32_t interest = 0;    // the epoll mask registered now
  bool paused = false;      // too many requests in flight: not reading
  bool deferred = false;    // frames in `in` wait on IoLoop::deferred_ for a later turn: not read meanwhile
  bool peerEof = false;     // the client closed its side: answer what is in flight, then close
  bool closed = false;
  bool scheduled = false;  // on IoLoop::scheduled_ for a flush at the end of this turn
  bool writeBlocked = false;  // the last send hit a full socket buffer: wait for EPOLLOUT
  Clock::time_point lastReadAt{};
  // When the first byte of the frame now buffered in `in` arrived: the
  // frame must be whole within the idle timeout (a client dripping a byte
  // at a time does not keep a connection forever).
  Clock::time_point frameStartedAt{};
  // A frame of an impossible size arrived: nothing after it can be framed.
  // What came before it is answered, later bytes are read and dropped, and
  // the connection closes once the answers are out.
  bool untrusted = false;
  CloseReason untrustedReason = CloseReason::FrameTooLarge;
  Clock::time_point untrustedAt{};
  std::shared_ptr<Completions> completions;
  std::unique_ptr<Transport> tls;     // set when the listener speaks TLS; freed before `fd`
  bool tlsReady = false;              // the TLS handshake is done

  uint64_t inFlight() const { return nextSeq - flushedSeq; }
  size_t pendingOut() const { return out.size() - outOffset; }
};

// ---- SlotRing -------------------------------------------------------------

void SlotRing::pushBack() {
  if (size_ == slots_.size()) {
    std::vector<Slot> grown(slots_.empty() ? 4 : slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) grown[i] = std::move((*this)[i]);
    slots_ = std::move(grown);
    head_ = 0;
  }
  Slot& s = (*this)[size_];
  s.frame.clear();
  s.ready = false;
  s.closeAfter = false;
  ++size_;
}

void SlotRing::popFront() {
  Slot& s = front();
  std::vector<uint8_t>().swap(s.frame);
  s.ready = false;
  head_ = (head_ + 1) & (slots_.size() - 1);
  --size_;
  if (size_ == 0) {
    head_ = 0;
    // Idle connections should not hold a grown ring.
    if (slots_.size() > 16) std::vector<Slot>().swap(slots_);
  }
}

void SlotRing::clear() {
  std::vector<Slot>().swap(slots_);
  head_ = 0;
  size_ = 0;
}

// ---- Completions ----------------------------------------------------------

Connection* Completions::takeHeadForDirectWrite(uint64_t seq, size_t maxPendingOutput) {
  bool post = false;
  Connection* c = nullptr;
  {
    MutexLock lock(mutex);
    if (closed || connection == nullptr || slots.empty() || seq != headSeq) return nullptr;
    // Past the output bound the slow path goes through flush(), which
    // enforces the bound (pending output never exceeds it by more than one response).
    if (connection->pendingOut() > maxPendingOutput) return nullptr;
    c = connection;
    slots.popFront();
    ++headSeq;
    // A later response that was answered first becomes the head now: it
    // needs a flush, which nobody asked for while it waited behind us.
    if (!slots.empty() && slots.front().ready && !queued) {
      queued = true;
      post = true;
    }
  }
  if (post) inbox->postReady(shared_from_this());
  return c;
}

bool Completions::isClosed() {
  MutexLock lock(mutex);
  return closed;
}

void Completions::fill(uint64_t seq, std::vector<uint8_t> frame, bool closeAfter) {
  std::shared_ptr<Inbox> wake;
  {
    MutexLock lock(mutex);
    if (closed) return;
    if (seq < headSeq || seq - headSeq >= slots.size()) return;  // cannot happen: each seq is answered once
    const size_t i = seq - headSeq;
    auto& slot = slots[i];
    slot.frame = std::move(frame);
    slot.ready = true;
    slot.closeAfter = closeAfter;
    // Only the head of the line makes output possible; a later slot is
    // flushed together with the head when that one completes.
    if (i == 0 && !queued) {
      queued = true;
      wake = inbox;
    }
  }
  if (wake) wake->postReady(shared_from_this());
}

// ---- Inbox ----------------------------------------------------------------

Inbox::Inbox(std::shared_ptr<net::Waker> waker) : waker_(std::move(waker)) {}

Inbox::~Inbox() {
  // The waker first, then the sockets never adopted (the order of before).
  waker_.reset();
  sockets_.clear();
}

void Inbox::wakeLocked() {
  if (wakePending_ || tCurrentInbox == this) return;
  wakePending_ = true;
  waker_->wake();
}

void Inbox::postSocket(UniqueFd fd) {
  MutexLock lock(mutex_);
  sockets_.push_back(std::move(fd));
  wakeLocked();
}

void Inbox::postReady(std::shared_ptr<Completions> completions) {
  MutexLock lock(mutex_);
  ready_.push_back(std::move(completions));
  wakeLocked();
}

void Inbox::postStop(Clock::time_point deadline) {
  MutexLock lock(mutex_);
  stop_ = true;
  deadline_ = deadline;
  wakeLocked();
}

void Inbox::take(Batch& batch) {
  batch.sockets.clear();
  batch.ready.clear();
  MutexLock lock(mutex_);
  batch.sockets.swap(sockets_);
  batch.ready.swap(ready_);
  batch.stop = stop_;
  batch.deadline = deadline_;
  stop_ = false;
  wakePending_ = false;
}

void Inbox::bindToCurrentThread() { tCurrentInbox = this; }

// ---- IoLoop ---------------------------------------------------------------

IoLoop::IoLoop(int index, const TcpServerOptions& options, net::FrameProtocol& protocol, SharedCounters& counters)
    : index_(index),
      options_(options),
      protocol_(protocol),
      timesStages_(protocol.recordsStages()),
      shared_(counters),
      inbox_(std::make_shared<Inbox>(reactor_.waker())) {
  scratch_.resize(kScratchBytes);
  // The idle timeout is enforced to within about a quarter of itself.
  tickInterval_ = std::clamp<std::chrono::milliseconds>(options_.idleTimeout / 4, std::chrono::milliseconds(10),
                                                        std::chrono::milliseconds(250));
}

IoLoop::~IoLoop() { join(); }

bool IoLoop::start(std::string* error) {
  // Posts to the inbox wake the reactor; every other event is a connection's.
  if (!reactor_.open(error)) return false;
  thread_ = std::thread([this] { run(); });
  return true;
}

void IoLoop::adopt(UniqueFd fd) { inbox_->postSocket(std::move(fd)); }

void IoLoop::beginStop(Clock::time_point deadline) { inbox_->postStop(deadline); }

void IoLoop::join() {
  if (thread_.joinable()) thread_.join();
}

Clock::time_point IoLoop::nextWake() {
  if (busy_) return Clock::time_point::min();
  auto until = nextTick_;
  if (draining_ && deadline_ < until) until = deadline_;
  return until;
}

void IoLoop::turnBegins(Clock::time_point now) {
  now_ = now;
  turnDeadline_ = now_ + kTurnBudget;
  budgetSpent_ = false;
}

bool IoLoop::turnEnds() {
  flushScheduled();
  busy_ = runDeferred();
  busy_ = drainInbox() || busy_;
  flushScheduled();
  busy_ = busy_ || !scheduled_.empty();
  graveyard_.clear();
  if (now_ >= nextTick_) {
    tick();
    nextTick_ = now_ + tickInterval_;
    graveyard_.clear();
  }
  return !(draining_ && (connections_.empty() || now_ >= deadline_));
}

void IoLoop::run() {
  // Named for top -H, perf and gdb: "gc-io-0", "gc-io-1", ...
  ::pthread_setname_np(::pthread_self(), ("gc-io-" + std::to_string(index_)).c_str());
  inbox_->bindToCurrentThread();
  now_ = Clock::now();
  nextTick_ = now_ + tickInterval_;
  busy_ = false;
  std::string error;
  if (!reactor_.run(*this, &error)) {
    spdlog::critical("I/O thread {}: {}; closing its connections", index_, error);
  }
  if (!connections_.empty()) {
    size_t inFlight = 0;
    for (auto& c : connections_) inFlight += (c->inFlight() > 0 || c->pendingOut() > 0) ? 1 : 0;
    if (inFlight > 0) {
      spdlog::warn("I/O thread {}: closing {} connection(s) with responses still due after the shutdown grace", index_,
                   inFlight);
    }
  }
  while (!connections_.empty()) close(*connections_.back(), CloseReason::Shutdown);
  scheduled_.clear();
  deferred_.clear();
  graveyard_.clear();
  flushDeferred_.clear();  // the Completions hold the Inbox too
  // Every connection is closed, so no completion posts any more; drop what
  // was posted (the Completions hold the Inbox: a cycle otherwise).
  inbox_->take(batch_);
  batch_.ready.clear();
  for (UniqueFd& fd : batch_.sockets) {
    fd.reset();
    shared_.connectionsOpen.fetch_sub(1, std::memory_order_relaxed);
    counters_.closed(CloseReason::Shutdown);
  }
  batch_.sockets.clear();
  tCurrentInbox = nullptr;
}

bool IoLoop::drainInbox() {
  // Completions made on this thread while draining (a handler that answers
  // at once) land in the inbox again; a few rounds settle them, and whatever
  // is left makes the reactor's next wait return at once.
  // Answers left by an earlier turn go first; past the turn's budget the
  // rest wait for the next turn. Each turn flushes at least 16 connections,
  // and only past those does it read the clock.
  auto flushAll = [&](std::vector<std::shared_ptr<Completions>>& ready) {
    size_t i = 0;
    for (; i < ready.size(); ++i) {
      if (i > 0 && (i & 15) == 0 && Clock::now() >= turnDeadline_) break;
      Connection* c = nullptr;
      {
        MutexLock lock(ready[i]->mutex);
        if (!ready[i]->closed) c = ready[i]->connection;
      }
      if (c != nullptr && !c->closed) flush(*c);
    }
    if (i == ready.size()) return true;
    // flushDeferred_ is empty here: it was taken before the first call, and
    // a call that leaves a remainder ends the turn.
    flushDeferred_.assign(std::make_move_iterator(ready.begin() + static_cast<ptrdiff_t>(i)),
                          std::make_move_iterator(ready.end()));
    return false;
  };
  if (!flushDeferred_.empty()) {
    std::vector<std::shared_ptr<Completions>> earlier;
    earlier.swap(flushDeferred_);
    if (!flushAll(earlier)) return true;
  }
  for (int round = 0; round < 4; ++round) {
    inbox_->take(batch_);
    if (batch_.empty()) return false;
    for (UniqueFd& fd : batch_.sockets) addConnection(std::move(fd));
    if (batch_.stop && !draining_) startDraining(batch_.deadline);
    const bool all = flushAll(batch_.ready);
    batch_.ready.clear();
    if (!all) return true;
  }
  return true;
}

bool IoLoop::overBudget() {
  if (!budgetSpent_ && Clock::now() >= turnDeadline_) budgetSpent_ = true;
  return budgetSpent_;
}

void IoLoop::defer(Connection& c) {
  if (c.deferred) return;
  c.deferred = true;
  deferred_.push_back(&c);
}

bool IoLoop::runDeferred() {
  if (deferred_.empty()) return false;
  // This turn's slice for what earlier turns (or this one) deferred, oldest
  // first; a connection deferred again goes to the back.
  turnDeadline_ = std::max(turnDeadline_, Clock::now() + kTurnSlice);
  budgetSpent_ = false;
  for (size_t left = deferred_.size(); left > 0 && !deferred_.empty() && !overBudget(); --left) {
    Connection& c = *deferred_.front();
    deferred_.pop_front();
    c.deferred = false;
    parseBuffered(c);
    if (c.closed || c.deferred) continue;
    if (c.in.empty() && c.in.capacity() > kKeepBufferBytes) std::vector<uint8_t>().swap(c.in);
    // TLS may hold decrypted bytes that no epoll event will announce.
    if (c.tls != nullptr && c.tlsReady && readingWanted(c)) onReadableTls(c);
    if (c.closed) continue;
    maybeFinish(c);
  }
  return !deferred_.empty();
}

void IoLoop::addConnection(UniqueFd fd) {
  if (draining_) {
    fd.reset();
    shared_.connectionsOpen.fetch_sub(1, std::memory_order_relaxed);
    counters_.closed(CloseReason::Shutdown);
    return;
  }
  auto owned = std::make_unique<Connection>(*this);
  Connection& c = *owned;
  c.fd = std::move(fd);
  net::Peer peer = peerOf(c.fd.get());
  peer.serial = gConnectionSerial.fetch_add(1, std::memory_order_relaxed) + 1;
  peer.internal = options_.internalPort && localPortOf(c.fd.get()) == *options_.internalPort;
  peer.tls = options_.tls != nullptr;
  c.peer = peer.address();
  c.session = protocol_.open(peer);
  c.lastReadAt = now_;
  c.completions = std::make_shared<Completions>();
  c.completions->inbox = inbox_;
  c.completions->connection = &c;
  c.completions->loop = this;
  c.interest = EPOLLIN;
  // The kernel stamps each packet's receipt, so that a sampled heartbeat's
  // time counts what it waited in the socket (HeartbeatStages::arrivalToRead).
  if (timesStages_ && !options_.tls) {
    const int one = 1;
    ::setsockopt(c.fd.get(), SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
  }
  if (options_.tls) {
    SslPtr ssl = options_.tls->accept(c.fd.get());
    if (ssl != nullptr) c.tls = tlsTransport(std::move(ssl));
    if (c.tls == nullptr) {
      spdlog::error("I/O thread {}: cannot start TLS for the connection from {}: {}", index_, c.peer, takeTlsError());
      c.fd.reset();
      shared_.connectionsOpen.fetch_sub(1, std::memory_order_relaxed);
      counters_.closed(CloseReason::IoError);
      return;
    }
  }
  if (!reactor_.add(c.fd.get(), c.interest, &c)) {
    spdlog::error("I/O thread {}: cannot watch the connection from {}: {}", index_, c.peer, std::strerror(errno));
    c.tls.reset();
    c.fd.reset();
    shared_.connectionsOpen.fetch_sub(1, std::memory_order_relaxed);
    counters_.closed(CloseReason::IoError);
    return;
  }
  c.index = connections_.size();
  connections_.push_back(std::move(owned));
  spdlog::debug("I/O thread {}: connection from {}", index_, c.peer);
}

void IoLoop::onEvent(Connection& c, uint32_t events) {
  if (c.tls != nullptr && !c.tlsReady) {
    tlsHandshake(c);
    if (c.closed) return;
    if (!c.tlsReady) {
      if (events & (EPOLLERR | EPOLLHUP)) close(c, CloseReason::PeerClosed);
      return;
    }
    // Requests may have come with the handshake's last flight.
    events |= EPOLLIN;
  }
  if (events & EPOLLIN) onReadable(c);
  if (c.closed) return;
  if (events & EPOLLOUT) {
    if (!writeOut(c)) return;
    maybeFinish(c);
    if (c.closed) return;
  }
  if (events & (EPOLLERR | EPOLLHUP)) {
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0 && err != ECONNRESET && err != EPIPE) {
      spdlog::info("closing the connection from {}: {}", c.peer, std::strerror(err));
      close(c, CloseReason::IoError);
    } else {
      close(c, CloseReason::PeerClosed);
    }
  }
}

// A deferred connection keeps its epoll interest (two epoll_ctl calls per
// deferral cost more than the events it may bring meanwhile); it is simply
// not read until its turn comes (onReadable, onReadableTls).
bool IoLoop::readingWanted(const Connection& c) const { return !c.paused && !c.peerEof; }

void IoLoop::onReadable(Connection& c) {
  if (c.tls != nullptr) return onReadableTls(c);
  if (!readingWanted(c) || c.deferred) return;
  ssize_t n;
  // The read whose heartbeat will be timed asks for the kernel's timestamp
  // of its bytes' arrival; every other read is a plain recv().
  std::optional<uint64_t> arrivalToRead;
  if (timesStages_ && stageReadSampled()) {
    n = recvStamped(c, arrivalToRead);
  } else {
    do {
      n = ::recv(c.fd.get(), scratch_.data(), scratch_.size(), 0);
    } while (n < 0 && errno == EINTR);
  }
  if (n == 0) {
    c.peerEof = true;
    updateInterest(c);
    maybeFinish(c);
    return;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    if (errno == ECONNRESET) {
      close(c, CloseReason::PeerClosed);
    } else {
      spdlog::info("closing the connection from {}: read failed: {}", c.peer, std::strerror(errno));
      close(c, CloseReason::IoError);
    }
    return;
  }
  c.lastReadAt = now_;
  if (timesStages_) stageRead(c, arrivalToRead);
  received(c, static_cast<size_t>(n));
  // The sampled read brought no heartbeat the fast path answered.
  if (sample_.conn == &c && sample_.state == StageSample::State::Armed) sample_ = StageSample{};
}

namespace {
uint64_t nanosBetween(Clock::time_point from, Clock::time_point to) {
  const auto d = std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
  return d > 0 ? static_cast<uint64_t>(d) : 0;
}
}  // namespace

bool IoLoop::stageReadSampled() const {
  return sample_.state == StageSample::State::Idle && (stageReads_ + 1) % kHeartbeatStageSampleEvery == 0;
}

ssize_t IoLoop::recvStamped(Connection& c, std::optional<uint64_t>& arrivalToRead) {
  iovec iov{scratch_.data(), scratch_.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(c.fd.get(), &msg, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return n;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  for (cmsghdr* m = CMSG_FIRSTHDR(&msg); m != nullptr; m = CMSG_NXTHDR(&msg, m)) {
    if (m->cmsg_level != SOL_SOCKET || m->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec at{};
    std::memcpy(&at, CMSG_DATA(m), sizeof(at));
    const int64_t waited = (static_cast<int64_t>(now.tv_sec) - at.tv_sec) * 1'000'000'000 + (now.tv_nsec - at.tv_nsec);
    // A stamp of 0, or one from a clock set back meanwhile, says nothing.
    if (at.tv_sec > 0 && waited >= 0) arrivalToRead = static_cast<uint64_t>(waited);
  }
  return n;
}

void IoLoop::stageRead(Connection& c, std::optional<uint64_t> arrivalToRead) {
  if (sample_.state != StageSample::State::Idle || ++stageReads_ % kHeartbeatStageSampleEvery != 0) return;
  sample_.state = StageSample::State::Armed;
  sample_.conn = &c;
  sample_.wake = now_;
  sample_.read = Clock::now();
  sample_.stages.arrivalToRead = arrivalToRead;
}

void IoLoop::stageSent(Connection& c) {
  if (sample_.conn != &c || sample_.state != StageSample::State::Encoded) return;
  sample_.stages.write = nanosBetween(sample_.encoded, Clock::now());
  protocol_.stages(sample_.stages);
  sample_ = StageSample{};
}

void IoLoop::received(Connection& c, size_t size) {
  // Shutting down, or past a frame that cannot be trusted: no new requests;
  // the bytes are dropped.
  if (draining_ || c.untrusted) return;
  const bool hadPartial = !c.in.empty();
  size_t used = 0;
  if (!hadPartial) {
    // The common case: whole frames straight from the scratch buffer, and
    // only the tail of a partial frame is kept on the connection.
    used = consume(c, scratch_.data(), size);
    if (!c.closed && !c.untrusted && used < size) c.in.assign(scratch_.data() + used, scratch_.data() + size);
  } else {
    c.in.insert(c.in.end(), scratch_.data(), scratch_.data() + size);
    used = consume(c, c.in.data(), c.in.size());
    if (!c.closed) c.in.erase(c.in.begin(), c.in.begin() + static_cast<ptrdiff_t>(used));
  }
  if (c.closed) return;
  if (c.untrusted) c.in.clear();
  // A new frame has begun unless the bytes only extended the one buffered.
  if (!c.in.empty() && (!hadPartial || used > 0)) c.frameStartedAt = now_;
  if (c.in.empty() && c.in.capacity() > kKeepBufferBytes) std::vector<uint8_t>().swap(c.in);
  updateInterest(c);
  if (c.untrusted) maybeFinish(c);
}

size_t IoLoop::consume(Connection& c, const uint8_t* data, size_t size) {
  const int32_t minBody = protocol_.minRequestBody();
  size_t pos = 0;
  while (!c.closed && !c.untrusted) {
    if (c.inFlight() >= static_cast<uint64_t>(options_.maxInFlightPerConnection)) {
      // Backpressure: stop reading until responses drain (see flush()).
      c.paused = true;
      break;
    }
    int32_t bodySize = -1;
    const std::span<const uint8_t> rest(data + pos, size - pos);
    const auto status = protocol::peekFrame(rest, options_.maxFrameBytes, minBody, &bodySize);
    // A partial frame's announced size is not trusted for an allocation:
    // c.in grows with the bytes that actually arrive.
    if (status == protocol::FrameStatus::NeedMore) break;
    if (status == protocol::FrameStatus::TooSmall || status == protocol::FrameStatus::TooLarge) {
      const int32_t declared = static_cast<int32_t>((uint32_t{rest[0]} << 24) | (uint32_t{rest[1]} << 16) |
                                                    (uint32_t{rest[2]} << 8) | uint32_t{rest[3]});
      const bool small = status == protocol::FrameStatus::TooSmall;
      uint64_t suppressed = 0;
      if (gFrameLog.allow(&suppressed)) {
        spdlog::warn("closing the connection from {}: frame size {} is {} (limits {}..{}); the {} request(s) "
                     "before it are answered first{}",
                     c.peer, declared, small ? "too small" : "too large", minBody,
                     options_.maxFrameBytes, c.inFlight(),
                     suppressed ? fmt::format(" ({} similar lines suppressed)", suppressed) : std::string());
      }
      c.untrusted = true;
      c.untrustedReason = small ? CloseReason::FrameTooSmall : CloseReason::FrameTooLarge;
      c.untrustedAt = now_;
      break;
    }
    const std::span<const uint8_t> body = rest.subspan(4, static_cast<size_t>(bodySize));
    if (!answerNow(c, body)) {
      // Past the turn's budget only heartbeats are answered now; anything
      // else (and what follows it on this connection) waits its turn.
      if (!protocol_.urgent(body) && overBudget()) {
        defer(c);
        break;
      }
      dispatch(c, body);
    }
    pos += 4 + body.size();
  }
  return pos;
}

void IoLoop::parseBuffered(Connection& c) {
  if (c.in.empty() || c.closed || draining_ || c.untrusted) return;
  const size_t used = consume(c, c.in.data(), c.in.size());
  if (c.closed) return;
  c.in.erase(c.in.begin(), c.in.begin() + static_cast<ptrdiff_t>(used));
  if (c.untrusted) c.in.clear();
  if (!c.in.empty() && used > 0) c.frameStartedAt = now_;
}

void IoLoop::dispatch(Connection& c, std::span<const uint8_t> body) {
  LoopCounters::add(counters_.requestsReceived, 1);
  const uint64_t seq = c.nextSeq++;
  {
    MutexLock lock(c.completions->mutex);
    c.completions->slots.pushBack();
  }
  switch (protocol_.dispatch(*c.session, body, net::Reply(c.completions, seq))) {
    case net::Dispatched::Handler: LoopCounters::add(counters_.handlerCalls, 1); break;
    case net::Dispatched::Answered: break;
    case net::Dispatched::Refused:
      // Nothing is sent for it: its slot completes empty, what came before
      // is answered, and the connection closes (maybeFinish).
      net::Reply(c.completions, seq).send([](std::vector<uint8_t>&) {});
      c.untrusted = true;
      c.untrustedReason = CloseReason::Refused;
      c.untrustedAt = now_;
      break;
  }
}

// A request with nothing ahead of it on its connection, answered by the
// protocol on this thread (FrameProtocol::answerNow; the binary port's
// heartbeats): answered straight into the output, with no response slot,
// no callback and no allocation. It takes no sequence number (nothing is in
// flight before or during it, so the order holds).
bool IoLoop::answerNow(Connection& c, std::span<const uint8_t> body) {
  if (c.inFlight() != 0 || c.pendingOut() > options_.maxOutputBytes) return false;
  // This request's stages are timed: the first the sampled read brought.
  const bool timed = sample_.conn == &c && sample_.state == StageSample::State::Armed;
  const Clock::time_point read = timed ? Clock::now() : Clock::time_point{};
  net::InlineSample inlineSample;
  compactOutput(c);
  if (!protocol_.answerNow(*c.session, body, c.out, timed ? &inlineSample : nullptr)) return false;
  LoopCounters::add(counters_.requestsReceived, 1);
  LoopCounters::add(counters_.handlerCalls, 1);
  if (timed) {
    sample_.encoded = Clock::now();
    sample_.stages.wakeToRead = nanosBetween(sample_.wake, sample_.read);
    sample_.stages.decode = nanosBetween(read, inlineSample.handleStart);
    sample_.stages.handle = nanosBetween(inlineSample.handleStart, inlineSample.handleEnd);
    sample_.stages.encode = nanosBetween(inlineSample.handleEnd, sample_.encoded);
    sample_.stages.groupMotion = inlineSample.groupMotion;
    sample_.state = StageSample::State::Encoded;
  }
  outputQueued(c);
  return true;
}

void IoLoop::writeDirect(Connection& c, void (*encode)(const void*, std::vector<uint8_t>&), const void* arg) {
  compactOutput(c);
  encode(arg, c.out);
  ++c.flushedSeq;
  outputQueued(c);
}

void IoLoop::flushScheduled() {
  // A flush may answer more at once (reading resumes past the in-flight
  // limit) and schedule again; a few rounds, the rest next turn.
  for (int round = 0; round < 4 && !scheduled_.empty(); ++round) {
    scheduledNow_.swap(scheduled_);
    for (Connection* c : scheduledNow_) {
      c->scheduled = false;
      if (!c->closed) flush(*c);
    }
    scheduledNow_.clear();
  }
}

void IoLoop::addStats(TcpServerStats& stats) const {
  stats.requestsReceived += counters_.requestsReceived.load(std::memory_order_relaxed);
  stats.responsesQueued += counters_.responsesQueued.load(std::memory_order_relaxed);
  stats.handlerCalls += counters_.handlerCalls.load(std::memory_order_relaxed);
  stats.pendingOutputBytesMax =
      std::max(stats.pendingOutputBytesMax, counters_.pendingOutputBytesMax.load(std::memory_order_relaxed));
  for (size_t i = 0; i < kCloseReasonCount; ++i) {
    stats.closedByReason[i] += counters_.closedByReason[i].load(std::memory_order_relaxed);
  }
}

void IoLoop::compactOutput(Connection& c) {
  if (c.outOffset > 0 && c.outOffset >= c.out.size() / 2) {
    c.out.erase(c.out.begin(), c.out.begin() + static_cast<ptrdiff_t>(c.outOffset));
    c.outOffset = 0;
  }
}

void IoLoop::outputQueued(Connection& c) {
  LoopCounters::add(counters_.responsesQueued, 1);
  counters_.notePending(c.pendingOut());
  if (!c.scheduled) {
    c.scheduled = true;
    scheduled_.push_back(&c);
  }
}

void IoLoop::appendOutput(Connection& c, const std::vector<uint8_t>& frame) {
  compactOutput(c);
  c.out.insert(c.out.end(), frame.begin(), frame.end());
}

void IoLoop::flush(Connection& c) {
  bool closing = false;  // an answer after which the connection closes
  {
    MutexLock lock(c.completions->mutex);
    auto& slots = c.completions->slots;
    while (!slots.empty() && slots.front().ready) {
      closing = closing || slots.front().closeAfter;
      flushFrames_.push_back(std::move(slots.front().frame));
      slots.popFront();
      ++c.completions->headSeq;
    }
    c.completions->queued = false;
  }
  if (closing && !c.untrusted) {
    // Read no further; what is in flight is answered, then maybeFinish closes.
    c.untrusted = true;
    c.untrustedReason = CloseReason::Refused;
    c.untrustedAt = now_;
    c.in.clear();
  }
  c.flushedSeq += flushFrames_.size();
  LoopCounters::add(counters_.responsesQueued, flushFrames_.size());
  // Output is appended only while it is within the bound, so it never
  // exceeds the bound by more than one response.
  for (const auto& frame : flushFrames_) {
    if (c.pendingOut() > options_.maxOutputBytes) {
      // Try the kernel before giving up on a client that is merely slow.
      if (!writeOut(c)) break;
      if (c.pendingOut() > options_.maxOutputBytes) {
        uint64_t suppressed = 0;
        if (gOverflowLog.allow(&suppressed)) {
          spdlog::warn("closing the connection from {}: {} bytes of responses unread, above the limit of {}{}", c.peer,
                       c.pendingOut(), options_.maxOutputBytes,
                       suppressed ? fmt::format(" ({} similar lines suppressed)", suppressed) : std::string());
        }
        close(c, CloseReason::OutputOverflow);
        break;
      }
    }
    appendOutput(c, frame);
    counters_.notePending(c.pendingOut());
  }
  flushFrames_.clear();
  if (c.closed) return;
  if (!writeOut(c)) return;
  // Resume reading once half of the in-flight window is free, so that a
  // client at the limit does not make the loop toggle its interest per response.
  if (c.paused && c.inFlight() <= static_cast<uint64_t>(options_.maxInFlightPerConnection) / 2) {
    c.paused = false;
    c.lastReadAt = now_;  // the stall was ours, not the client's
    c.frameStartedAt = now_;
    parseBuffered(c);
    if (c.closed) return;
    updateInterest(c);
  }
  maybeFinish(c);
}

bool IoLoop::writeOut(Connection& c) {
  if (c.tls != nullptr) return writeOutTls(c);
  while (c.pendingOut() > 0) {
    const ssize_t n = ::send(c.fd.get(), c.out.data() + c.outOffset, c.pendingOut(), MSG_NOSIGNAL);
    if (n > 0) {
      c.outOffset += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      c.writeBlocked = true;
      updateInterest(c);
      return true;
    }
    if (errno == EPIPE || errno == ECONNRESET) {
      close(c, CloseReason::PeerClosed);
    } else {
      spdlog::info("closing the connection from {}: write failed: {}", c.peer, std::strerror(errno));
      close(c, CloseReason::IoError);
    }
    return false;
  }
  if (sample_.conn == &c) stageSent(c);
  outputDrained(c);
  return true;
}

void IoLoop::outputDrained(Connection& c) {
  c.out.clear();
  c.outOffset = 0;
  if (c.out.capacity() > kKeepBufferBytes) std::vector<uint8_t>().swap(c.out);
  c.writeBlocked = false;
  updateInterest(c);
}

void IoLoop::updateInterest(Connection& c) {
  if (c.closed) return;
  uint32_t want = 0;
  // While draining, keep reading (and dropping) so that the final close
  // finds no unread bytes and ends with FIN rather than RST.
  if (readingWanted(c)) want |= EPOLLIN;
  // Output waiting for this turn's flush needs no EPOLLOUT; only output the
  // kernel refused does (so a busy connection costs no epoll_ctl per turn).
  if (c.writeBlocked) want |= EPOLLOUT;
  if (want == c.interest) return;
  if (!reactor_.modify(c.fd.get(), want, &c)) {
    spdlog::error("I/O thread {}: epoll_ctl for {} failed: {}", index_, c.peer, std::strerror(errno));
    close(c, CloseReason::IoError);
    return;
  }
  c.interest = want;
}

void IoLoop::maybeFinish(Connection& c) {
  if (c.closed || c.inFlight() > 0 || c.pendingOut() > 0 || c.deferred) return;
  if (c.untrusted) {
    close(c, c.untrustedReason);
  } else if (c.peerEof) {
    close(c, CloseReason::PeerClosed);
  } else if (draining_) {
    close(c, CloseReason::Shutdown);
  }
}

void IoLoop::close(Connection& c, CloseReason reason) {
  if (c.closed) return;
  c.closed = true;
  if (sample_.conn == &c) sample_ = StageSample{};
  if (c.scheduled) {
    // It must not outlive its graveyard turn on the schedule.
    if (auto it = std::find(scheduled_.begin(), scheduled_.end(), &c); it != scheduled_.end()) scheduled_.erase(it);
    c.scheduled = false;
  }
  if (c.deferred) {
    if (auto it = std::find(deferred_.begin(), deferred_.end(), &c); it != deferred_.end()) deferred_.erase(it);
    c.deferred = false;
  }
  {
    MutexLock lock(c.completions->mutex);
    c.completions->closed = true;
    c.completions->connection = nullptr;
    c.completions->loop = nullptr;
    c.completions->slots.clear();
  }
  reactor_.remove(c.fd.get());
  if (c.tls != nullptr) {
    // An orderly close tells the client with close_notify (best effort, never waited for).
    if (reason != CloseReason::PeerClosed && reason != CloseReason::IoError) c.tls->closeNotify();
    c.tls.reset();  // the SSL object before its socket
  }
  c.fd.reset();
  shared_.connectionsOpen.fetch_sub(1, std::memory_order_relaxed);
  counters_.closed(reason);
  spdlog::debug("I/O thread {}: closed the connection from {} ({})", index_, c.peer, closeReasonName(reason));
  // Swap-remove; the object itself lives until the end of this loop turn,
  // since callers up the stack still hold a reference.
  const size_t i = c.index;
  auto owned = std::move(connections_[i]);
  if (i + 1 != connections_.size()) {
    connections_[i] = std::move(connections_.back());
    connections_[i]->index = i;
  }
  connections_.pop_back();
  graveyard_.push_back(std::move(owned));
}

void IoLoop::startDraining(Clock::time_point deadline) {
  draining_ = true;
  deadline_ = deadline;
  // Connections with nothing due close now; the others once answered.
  std::vector<Connection*> idle;
  for (auto& c : connections_) {
    if (c->inFlight() == 0 && c->pendingOut() == 0) idle.push_back(c.get());
  }
  for (Connection* c : idle) close(*c, CloseReason::Shutdown);
}

void IoLoop::tick() {
  // Closes connections that hold part of a frame and went quiet. A
  // connection with nothing buffered is never idle-closed: consumers keep
  // idle connections between heartbeats.
  std::vector<Connection*> stalled, unread;
  for (auto& c : connections_) {
    if (c->untrusted) {
      // Its answers are not being read: it gets no longer than a frame would.
      if (now_ - c->untrustedAt >= options_.idleTimeout) unread.push_back(c.get());
    } else if (!c->in.empty() && readingWanted(*c) && !c->deferred && now_ - c->frameStartedAt >= options_.idleTimeout) {
      stalled.push_back(c.get());
    } else if (c->tls != nullptr && !c->tlsReady && now_ - c->lastReadAt >= options_.idleTimeout) {
      stalled.push_back(c.get());  // a TLS handshake begun and not finished
    }
  }
  for (Connection* c : stalled) {
    uint64_t suppressed = 0;
    if (gIdleLog.allow(&suppressed)) {
      spdlog::info("closing the connection from {}: a frame begun {} ms ago has not arrived whole ({} bytes so "
                   "far; idle timeout {} ms){}",
                   c->peer,
                   std::chrono::duration_cast<std::chrono::milliseconds>(now_ - c->frameStartedAt).count(),
                   c->in.size(), options_.idleTimeout.count(),
                   suppressed ? fmt::format(" ({} similar lines suppressed)", suppressed) : std::string());
    }
    close(*c, CloseReason::IdleTimeout);
  }
  for (Connection* c : unread) close(*c, c->untrustedReason);
}

}  // namespace groupcoord::server::detail

namespace groupcoord::server::net {

std::string Peer::address() const {
  if (host.empty()) return "?";
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool Reply::connectionClosed() const { return completions_->isClosed(); }

void Reply::sendWith(EncodeFn encode, const void* arg) {
  // On the connection's own loop thread (the handler answered at once),
  // at the head of the line: straight into the output buffer.
  if (detail::tCurrentInbox != nullptr && detail::tCurrentInbox == completions_->inbox.get()) {
    detail::IoLoop* loop = completions_->loop;  // null once the connection closed
    detail::Connection* c = loop ? completions_->takeHeadForDirectWrite(seq_, loop->maxOutputBytes()) : nullptr;
    if (c != nullptr) {
      loop->writeDirect(*c, encode, arg);
      return;
    }
  }
  std::vector<uint8_t> frame;
  frame.reserve(64);
  encode(arg, frame);
  completions_->fill(seq_, std::move(frame));
}

void Reply::sendThenCloseWith(EncodeFn encode, const void* arg) {
  // Always through the slot, so that the loop sees the close with the answer.
  std::vector<uint8_t> frame;
  encode(arg, frame);
  completions_->fill(seq_, std::move(frame), true);
}

}  // namespace groupcoord::server::net

// ---- TLS ------------------------------------------------------------------
// The same connection life as plain TCP, with the TLS transport
// (server/Transport.h) between the socket and the buffers.

namespace groupcoord::server::detail {

namespace {
constexpr int kTlsReadsPerEvent = 8;  // then the other connections get their turn
}  // namespace

void IoLoop::tlsHandshake(Connection& c) {
  const IoResult r = c.tls->handshake();
  if (r.status == IoStatus::Progress) {
    c.tlsReady = true;
    c.writeBlocked = false;
    c.lastReadAt = now_;
    updateInterest(c);
    return;
  }
  if (r.status == IoStatus::WantRead || r.status == IoStatus::WantWrite) {
    c.writeBlocked = r.status == IoStatus::WantWrite;
    updateInterest(c);
    return;
  }
  uint64_t suppressed = 0;
  if (gTlsLog.allow(&suppressed)) {
    spdlog::info("closing the connection from {}: TLS handshake failed (a client without TLS, or one that does not "
                 "trust this server): {}{}",
                 c.peer, c.tls->error().empty() ? "the peer went away" : c.tls->error(),
                 suppressed ? fmt::format(" ({} similar lines suppressed)", suppressed) : std::string());
  }
  close(c, CloseReason::IoError);
}

void IoLoop::onReadableTls(Connection& c) {
  for (int i = 0; i < kTlsReadsPerEvent; ++i) {
    if (c.closed || !readingWanted(c) || c.deferred) return;
    const IoResult r = c.tls->read(scratch_.data(), scratch_.size());
    switch (r.status) {
      case IoStatus::Progress:
        c.lastReadAt = now_;
        received(c, r.bytes);
        continue;
      case IoStatus::WantRead:
        return;
      case IoStatus::WantWrite:
        c.writeBlocked = true;
        updateInterest(c);
        return;
      case IoStatus::Eof:
        c.peerEof = true;
        updateInterest(c);
        maybeFinish(c);
        return;
      case IoStatus::Reset:
        close(c, CloseReason::PeerClosed);
        return;
      case IoStatus::Failed:
        spdlog::info("closing the connection from {}: TLS read failed: {}", c.peer, c.tls->error());
        close(c, CloseReason::IoError);
        return;
    }
  }
}

bool IoLoop::writeOutTls(Connection& c) {
  if (!c.tlsReady) return true;  // nothing is answered before the handshake: no request was read
  while (c.pendingOut() > 0) {
    const IoResult r = c.tls->write(c.out.data() + c.outOffset, c.pendingOut());
    switch (r.status) {
      case IoStatus::Progress:
        c.outOffset += r.bytes;
        continue;
      case IoStatus::WantWrite:
        c.writeBlocked = true;
        updateInterest(c);
        return true;
      case IoStatus::WantRead:
        return true;  // no renegotiation: reading goes on and the next flush retries
      case IoStatus::Eof:
      case IoStatus::Reset:
        close(c, CloseReason::PeerClosed);
        return false;
      case IoStatus::Failed:
        spdlog::info("closing the connection from {}: TLS write failed: {}", c.peer, c.tls->error());
        close(c, CloseReason::IoError);
        return false;
    }
  }
  outputDrained(c);
  return true;
}

}  // namespace groupcoord::server::detail
