#pragma once

// Helpers for the server tests: hand-built frames, test handlers, bounded waits.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "protocol/Codec.h"
#include "protocol/Handler.h"
#include "protocol/Messages.h"
#include "support/Timing.h"

namespace groupcoord::servertest {

using namespace std::chrono_literals;

// Big-endian byte builder for frames the codec would refuse to write.
class Bytes {
 public:
  Bytes& i8(int8_t v) {
    bytes_.push_back(static_cast<uint8_t>(v));
    return *this;
  }
  Bytes& i16(int16_t v) { return put(static_cast<uint16_t>(v), 2); }
  Bytes& i32(int32_t v) { return put(static_cast<uint32_t>(v), 4); }
  Bytes& i64(int64_t v) { return put(static_cast<uint64_t>(v), 8); }
  Bytes& str(const std::string& s) {
    i16(static_cast<int16_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& raw(const std::vector<uint8_t>& b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  // These bytes as a frame body: a 4-byte size first.
  std::vector<uint8_t> frame() const {
    Bytes f;
    f.i32(static_cast<int32_t>(bytes_.size()));
    f.raw(bytes_);
    return f.bytes_;
  }

 private:
  Bytes& put(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

inline std::vector<uint8_t> requestFrame(int64_t correlationId, const protocol::Request& request,
                                         int16_t version = protocol::kProtocolVersion) {
  protocol::RequestHeader header;
  header.apiKey = protocol::apiKeyOf(request);
  header.version = version;
  header.correlationId = correlationId;
  header.clientId = "servertest";
  std::vector<uint8_t> out;
  protocol::encodeRequest(header, request, out);
  return out;
}

inline protocol::HeartbeatRequest heartbeat(int64_t generation, std::string group = "g1",
                                            std::string consumer = "c1") {
  protocol::HeartbeatRequest r;
  r.group = std::move(group);
  r.consumerId = std::move(consumer);
  r.generation = generation;
  return r;
}

// Polls `condition` every few milliseconds until it holds or `timeout` passes.
// By default the condition is one the design makes true at once (an answer, a
// close, a count the server keeps): waited for up to the scheduling allowance
// (tests/README.md, "Time in tests"). A wait on a design bound passes
// designBound(bound).
inline bool waitUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds timeout = groupcoord::testing::schedulingAllowance()) {
  return groupcoord::testing::eventuallyWithin(timeout, condition, 5ms);
}

// Answers at once: a Heartbeat with its own generation (so a test can tell
// which request a response belongs to), anything else with the API's
// response carrying NONE.
class EchoHandler : public protocol::Handler {
 public:
  void handle(const protocol::RequestHeader&, protocol::Request request, protocol::ResponseCallback done) override {
    calls.fetch_add(1);
    if (auto* hb = std::get_if<protocol::HeartbeatRequest>(&request)) {
      done(protocol::HeartbeatResponse{hb->generation, protocol::ErrorCode::NONE});
      return;
    }
    done(protocol::errorResponse(request, protocol::ErrorCode::NONE));
  }
  std::atomic<int> calls{0};
};

// Holds every request with its `done` until the test answers it.
class DeferredHandler : public protocol::Handler {
 public:
  struct Held {
    protocol::RequestHeader header;
    protocol::Request request;
    protocol::ResponseCallback done;
  };

  void handle(const protocol::RequestHeader& header, protocol::Request request,
              protocol::ResponseCallback done) override {
    std::lock_guard lock(mutex_);
    held_.push_back(Held{header, std::move(request), std::move(done)});
    ++total_;
  }

  size_t heldCount() {
    std::lock_guard lock(mutex_);
    return held_.size();
  }
  size_t totalCount() {
    std::lock_guard lock(mutex_);
    return total_;
  }
  std::vector<Held> takeAll() {
    std::lock_guard lock(mutex_);
    return std::exchange(held_, {});
  }

  // The answer EchoHandler would give.
  static protocol::Response echo(const Held& h) {
    if (auto* hb = std::get_if<protocol::HeartbeatRequest>(&h.request)) {
      return protocol::HeartbeatResponse{hb->generation, protocol::ErrorCode::NONE};
    }
    return protocol::errorResponse(h.request, protocol::ErrorCode::NONE);
  }

 private:
  std::mutex mutex_;
  std::vector<Held> held_;
  size_t total_ = 0;
};

}  // namespace groupcoord::servertest
