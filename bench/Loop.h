#pragma once

// The benchmarks' load generator: one thread, one epoll set, many
// non-blocking connections to 127.0.0.1, each carrying pipelined requests
// whose answers come back in order. Requests are pre-encoded frames or
// protocol messages; every answer is decoded (so the generator does the same
// work whichever server it talks to) and handed to the request's callback
// with its latency. A connection that closes fails its pending requests
// with a null response. Timers run on the same thread.

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <span>
#include <string>
#include <vector>

#include "protocol/Messages.h"

namespace groupcoord::bench {

uint64_t nowNs();

// Called with the decoded response (nullptr when the connection failed or
// the answer could not be decoded) and the time since the request was sent.
using ResponseFn = std::function<void(const protocol::Response* response, uint64_t latencyNs)>;
// Called with the answer frame's body (after its 4-byte size; empty with
// `ok` false when the connection failed): for another protocol on the same
// framing, which the caller decodes itself (the Kafka port).
using FrameFn = std::function<void(bool ok, std::span<const uint8_t> body, uint64_t latencyNs)>;
// A byte-stream connection's reader (connectStream): called with all the
// bytes received and not yet consumed; returns how many it consumed (the
// rest is handed again, with more, next time). Called once with `ok` false
// and nothing when the connection fails or is closed by the peer (not after
// close()).
using StreamFn = std::function<size_t(bool ok, std::span<const uint8_t> data)>;

class Loop {
 public:
  Loop();
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // A new connection to 127.0.0.1:port; -1 when the connect failed. With
  // credentials set (authenticateAs), its first request is an Authenticate.
  int connect(uint16_t port);

  // Every connection any Loop makes from now on authenticates first: an
  // Authenticate of version 0 with this user and secret, pipelined ahead of
  // the connection's first request (groupcoordd holds what follows an
  // Authenticate until it is answered). Answers other than NONE are counted.
  // A new connection to 127.0.0.1:port carrying any protocol: what it
  // receives goes to `reader` as it comes (no framing, no pending requests;
  // send with write()). For other systems' protocols (ZooKeeper's, HTTP/2).
  // -1 when the connect failed.
  int connectStream(uint16_t port, StreamFn reader);
  // Queues bytes on a connection; written when the loop next runs.
  void write(int conn, std::span<const uint8_t> bytes);

  static void authenticateAs(std::string user, std::string secret);
  static uint64_t authFailures();
  bool isOpen(int conn) const;
  uint16_t portOf(int conn) const;
  size_t pendingOn(int conn) const;
  void close(int conn);

  // Queues a request (at `version`); the frame is written when the loop next runs.
  void send(int conn, const protocol::Request& request, ResponseFn done, int16_t version = 0);
  // Queues a frame encoded with encodeFrame(); `api` decodes its answer.
  void sendFrame(int conn, const std::vector<uint8_t>& frame, protocol::ApiKey api, ResponseFn done);
  // Queues a whole frame of any protocol with 4-byte size framing; its
  // answer's body goes to `done` undecoded.
  void sendRaw(int conn, const std::vector<uint8_t>& frame, FrameFn done);

  // Runs `fn` once `delayNs` from now, on the loop's thread.
  void after(uint64_t delayNs, std::function<void()> fn);

  // Runs until `done()` holds (checked after every event batch) or the
  // deadline passes; returns done().
  bool runUntil(const std::function<bool()>& done, uint64_t timeoutNs);
  void runFor(uint64_t durationNs);
  // runUntil, with `done()` asked at most every `everyNs` (a check that
  // walks thousands of members must not starve the schedule it checks).
  bool runUntilEvery(uint64_t everyNs, const std::function<bool()>& done, uint64_t timeoutNs);
  // Sends `count` requests, each by `send(answered)`, which queues one and
  // calls `answered()` from its callback; at most `depth` unanswered at a
  // time. Runs until all are answered or the deadline passes; whether all were.
  bool pipelined(size_t count, int depth, const std::function<void(const std::function<void()>& answered)>& send,
                 uint64_t timeoutNs);

  uint64_t failedConnects() const { return failedConnects_; }
  // Bytes of the answers received so far to calls of `api`, frames whole.
  uint64_t bytesReceived(protocol::ApiKey api) const { return bytesIn_[static_cast<size_t>(api)]; }
  // Connections that were open and failed (closed by the peer, or unreadable).
  uint64_t connectionsLost() const { return connectionsLost_; }

 private:
  struct Pending {
    protocol::ApiKey api;
    uint64_t sentNs;
    ResponseFn done;
    FrameFn raw;  // set: the answer goes to it undecoded
  };
  struct Conn {
    int fd = -1;
    uint16_t port = 0;
    std::vector<uint8_t> in;
    std::vector<uint8_t> out;
    size_t outOff = 0;
    bool wantWrite = false;
    std::deque<Pending> pending;
    StreamFn stream;  // set: a byte-stream connection (connectStream)
  };
  struct Timer {
    uint64_t at;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Timer& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  int openSocket(uint16_t port);  // a connected socket in the epoll set; its id, or -1
  void queue(int conn, const uint8_t* data, size_t size, protocol::ApiKey api, ResponseFn done, FrameFn raw = {});
  void flush(int conn);
  void onReadable(int conn);
  // Closes the connection and fails what waits on it; `lost`: the peer
  // closed it or it could not be read (not a close() of our own).
  void fail(int conn, bool lost = true);
  void runTimers();
  // A request's callback told that its connection failed.
  static void failPending(const Pending& p);

  int epfd_ = -1;
  bool pwait2_ = true;  // epoll_pwait2 (nanosecond timeouts) is there
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<int> dirty_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t timerSeq_ = 0;
  int64_t correlation_ = 0;
  uint64_t failedConnects_ = 0;
  std::array<uint64_t, protocol::kApiCount + 1> bytesIn_{};
  uint64_t connectionsLost_ = 0;
};

// A whole request frame (size prefix included).
std::vector<uint8_t> encodeFrame(const protocol::Request& request, int64_t correlationId = 0, int16_t version = 0);

// Latency samples in nanoseconds; percentiles by sorting a copy.
class Histogram {
 public:
  void add(uint64_t ns) { samples_.push_back(ns); }
  size_t count() const { return samples_.size(); }
  // q in [0, 1]; 0 when empty.
  double quantileMs(double q) const;
  void clear() { samples_.clear(); }
  void merge(const Histogram& other) { samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end()); }

 private:
  std::vector<uint64_t> samples_;
};

}  // namespace groupcoord::bench
