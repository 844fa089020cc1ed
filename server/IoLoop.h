#pragma once

// Internals of TcpServer (server/TcpServer.h): one I/O thread, running a
// port's framed connections on a reactor (server/net/Reactor.h), and the
// state it shares with the acceptor and with the replies of in-flight
// requests (net::Reply). What the frames mean is the port's protocol's
// (server/FrameProtocol.h); the loop knows no request type. Included by
// TcpServer.cpp and IoLoop.cpp only.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "common/Sync.h"
#include "server/FrameProtocol.h"
#include "server/Handles.h"
#include "server/TcpOptions.h"
#include "server/net/Reactor.h"

namespace groupcoord::server::detail {

using Clock = std::chrono::steady_clock;

// Counters behind TcpServer::stats() that the acceptor and every loop touch.
struct SharedCounters {
  std::atomic<uint64_t> connectionsOpen{0};
  std::atomic<uint64_t> connectionsAccepted{0};
  std::atomic<uint64_t> connectionsRejected{0};
};

// A loop's own counters: written by its thread only (no read-modify-write
// across cores on the data path), read by stats() from any thread.
struct alignas(64) LoopCounters {
  std::atomic<uint64_t> requestsReceived{0};
  std::atomic<uint64_t> responsesQueued{0};
  std::atomic<uint64_t> handlerCalls{0};
  std::atomic<uint64_t> pendingOutputBytesMax{0};
  std::array<std::atomic<uint64_t>, kCloseReasonCount> closedByReason{};

  static void add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void closed(CloseReason reason) { add(closedByReason[static_cast<size_t>(reason)], 1); }
  void notePending(uint64_t bytes) {
    if (bytes > pendingOutputBytesMax.load(std::memory_order_relaxed)) {
      pendingOutputBytesMax.store(bytes, std::memory_order_relaxed);
    }
  }
};

class Inbox;
class IoLoop;
struct Connection;

// One response slot per request read, in request order. The ring grows by
// doubling and holds no memory while the connection has nothing in flight.
class SlotRing {
 public:
  struct Slot {
    std::vector<uint8_t> frame;
    bool ready = false;
    bool closeAfter = false;  // the connection closes once this answer is written (net::Reply::sendThenClose)
  };
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Slot& operator[](size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  Slot& front() { return (*this)[0]; }
  void pushBack();
  void popFront();
  void clear();

 private:
  std::vector<Slot> slots_;  // capacity a power of two, or empty
  size_t head_ = 0;
  size_t size_ = 0;
};

// The response slots of one connection. Shared by the connection (owned by
// its I/O thread) and the `done` callbacks of its in-flight requests, which
// may outlive the connection, its loop and the server: once `closed` is set
// they drop what they complete.
struct Completions : std::enable_shared_from_this<Completions> {
  Mutex mutex;
  bool closed GUARDED_BY(mutex) = false;
  bool queued GUARDED_BY(mutex) = false;   // on the inbox's ready list
  uint64_t headSeq GUARDED_BY(mutex) = 0;  // request sequence number of slots.front()
  SlotRing slots GUARDED_BY(mutex);
  std::shared_ptr<Inbox> inbox;
  Connection* connection = nullptr;  // dereferenced only by the owning I/O thread, only while !closed
  IoLoop* loop = nullptr;            // the owner; same rule

  // Any thread: stores the encoded response of request `seq`, and asks the
  // loop to flush when it completes the head of the line.
  // closeAfter: nothing after it is read, and the connection closes once
  // it is written (CloseReason::Refused).
  void fill(uint64_t seq, std::vector<uint8_t> frame, bool closeAfter = false) EXCLUDES(mutex);
  bool isClosed() EXCLUDES(mutex);
  // Owning loop thread only: when `seq` is the head of the line and the
  // connection's output is within its bound, takes the slot out of the ring
  // and returns the connection, so that the caller encodes the response
  // straight into its output (no frame buffer, no hand-over). nullptr: use fill().
  Connection* takeHeadForDirectWrite(uint64_t seq, size_t maxPendingOutput) EXCLUDES(mutex);
};

// What other threads hand to a loop: new sockets, completed responses, stop.
// Shared with the Completions, and holds the loop's reactor's waker, so
// that a post after the loop is gone still writes to an open eventfd.
class Inbox {
 public:
  explicit Inbox(std::shared_ptr<net::Waker> waker);
  ~Inbox();
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // Any thread.
  void postSocket(UniqueFd fd) EXCLUDES(mutex_);
  void postReady(std::shared_ptr<Completions> completions) EXCLUDES(mutex_);
  void postStop(Clock::time_point deadline) EXCLUDES(mutex_);

  struct Batch {
    std::vector<UniqueFd> sockets;
    std::vector<std::shared_ptr<Completions>> ready;
    bool stop = false;
    Clock::time_point deadline{};
    bool empty() const { return sockets.empty() && ready.empty() && !stop; }
  };
  // Loop thread: takes what was posted (swapping into `batch`).
  void take(Batch& batch) EXCLUDES(mutex_);
  // Loop thread: marks the calling thread as this inbox's owner, so posts
  // made on it skip the eventfd (the loop drains its inbox every turn).
  void bindToCurrentThread();
 private:
  void wakeLocked() REQUIRES(mutex_);
  Mutex mutex_;
  std::shared_ptr<net::Waker> waker_;  // set by the constructor
  bool wakePending_ GUARDED_BY(mutex_) = false;
  bool stop_ GUARDED_BY(mutex_) = false;
  Clock::time_point deadline_ GUARDED_BY(mutex_){};
  std::vector<UniqueFd> sockets_ GUARDED_BY(mutex_);
  std::vector<std::shared_ptr<Completions>> ready_ GUARDED_BY(mutex_);
};

class IoLoop : private net::Turns {
 public:
  // `protocol`: the port's (server/FrameProtocol.h), which must outlive the loop.
  IoLoop(int index, const TcpServerOptions& options, net::FrameProtocol& protocol, SharedCounters& counters);
  ~IoLoop();
  IoLoop(const IoLoop&) = delete;
  IoLoop& operator=(const IoLoop&) = delete;

  bool start(std::string* error);
  // Acceptor thread: the loop owns `fd` from now on.
  void adopt(UniqueFd fd);
  // Owner thread: stop reading requests, answer what is in flight until
  // `deadline`, then close everything and let the thread end.
  void beginStop(Clock::time_point deadline);
  void join();
  size_t maxOutputBytes() const { return options_.maxOutputBytes; }
  // Any thread: adds this loop's counters to `stats`.
  void addStats(TcpServerStats& stats) const;
  // Loop thread only: `c` gave up its head slot through
  // Completions::takeHeadForDirectWrite; encodes the response into its
  // output, to be written at the end of this loop turn.
  // `encode(arg, out)` appends the answer frame.
  void writeDirect(Connection& c, void (*encode)(const void*, std::vector<uint8_t>&), const void* arg);

 private:
  friend struct Connection;  // its onEvent() hands the reactor's events to onEvent() below

  void flushScheduled();

  void run();
  // The reactor's turn (net::Turns): wait until the next tick (or the end
  // of the shutdown grace), at once while work is left; after the events,
  // flush, run what was deferred, drain the inbox, tick.
  net::Clock::time_point nextWake() override;
  void turnBegins(net::Clock::time_point now) override;
  bool turnEnds() override;
  bool drainInbox();
  // Requests other than heartbeats get kTurnBudget of a loop turn: past it,
  // a connection's remaining frames wait (`deferred_`) for the next turns,
  // so that a storm of registrations or of their answers does not keep the
  // loop from reading other connections' heartbeats (docs/design.md,
  // "Heartbeats"). Each turn gives the deferred connections at least
  // kTurnSlice and flushes at least 16 connections' answers.
  bool overBudget();
  void defer(Connection& c);
  bool runDeferred();
  void addConnection(UniqueFd fd);
  void onEvent(Connection& c, uint32_t events);
  void onReadable(Connection& c);
  void received(Connection& c, size_t size);  // `size` new bytes of requests in scratch_
  void onReadableTls(Connection& c);
  void tlsHandshake(Connection& c);
  bool writeOutTls(Connection& c);
  size_t consume(Connection& c, const uint8_t* data, size_t size);
  void parseBuffered(Connection& c);
  void dispatch(Connection& c, std::span<const uint8_t> body);
  bool answerNow(Connection& c, std::span<const uint8_t> body);
  void flush(Connection& c);
  bool writeOut(Connection& c);
  // Reclaims the sent front of `out` once it is half of it (before appending).
  void compactOutput(Connection& c);
  // One answer was appended straight to `out`: counted, and the connection
  // flushed at the end of this turn.
  void outputQueued(Connection& c);
  void outputDrained(Connection& c);  // every byte of `out` written: reset it, stop waiting for EPOLLOUT
  void appendOutput(Connection& c, const std::vector<uint8_t>& frame);
  void updateInterest(Connection& c);
  void maybeFinish(Connection& c);
  void close(Connection& c, CloseReason reason);
  void startDraining(Clock::time_point deadline);
  void tick();
  bool readingWanted(const Connection& c) const;

  const int index_;
  const TcpServerOptions& options_;
  net::FrameProtocol& protocol_;  // the port's: reads and answers the frames
  const bool timesStages_;  // the protocol records sampled stages (protocol_.recordsStages())
  SharedCounters& shared_;
  LoopCounters counters_;
  net::Reactor reactor_;
  std::shared_ptr<Inbox> inbox_;  // holds reactor_'s waker
  std::thread thread_;

  // Loop thread only from here on.
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<std::unique_ptr<Connection>> graveyard_;  // closed this turn; freed at its end
  std::vector<uint8_t> scratch_;                        // one read's worth of bytes
  std::vector<std::vector<uint8_t>> flushFrames_;       // reused by flush()
  std::vector<Connection*> scheduled_;                  // written directly this turn; flushed at its end
  std::vector<Connection*> scheduledNow_;
  Inbox::Batch batch_;
  Clock::time_point turnDeadline_{};
  bool budgetSpent_ = false;                                 // this turn's: past turnDeadline_
  std::deque<Connection*> deferred_;                          // frames left for a later turn, oldest first
  std::vector<std::shared_ptr<Completions>> flushDeferred_;  // answers left for a later turn
  Clock::time_point now_{};
  // The inline answer (a heartbeat) whose stages are being timed (when
  // timesStages_): armed by one read in kHeartbeatStageSampleEvery, timed
  // through decode, handler and encode by the inline path, finished when
  // its bytes are sent.
  struct StageSample {
    enum class State : uint8_t { Idle, Armed, Encoded };
    State state = State::Idle;
    Connection* conn = nullptr;
    Clock::time_point wake, read, encoded;
    HeartbeatStages stages;
  };
  // The next read is the one stageRead() samples.
  bool stageReadSampled() const;
  // recv() that also takes the kernel's timestamp of the bytes' arrival.
  ssize_t recvStamped(Connection& c, std::optional<uint64_t>& arrivalToRead);
  void stageRead(Connection& c, std::optional<uint64_t> arrivalToRead);
  void stageSent(Connection& c);
  uint32_t stageReads_ = 0;
  StageSample sample_;
  Clock::time_point nextTick_{};
  std::chrono::milliseconds tickInterval_{250};
  bool draining_ = false;
  Clock::time_point deadline_{};
  bool busy_ = false;  // work left at the end of the last turn: the next wait returns at once
};

}  // namespace groupcoord::server::detail
