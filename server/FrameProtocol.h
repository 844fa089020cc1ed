#pragma once

// What a port's protocol tells the framed-connection loop
// (server/IoLoop.h), and what the loop gives it back: docs/design.md,
// "Connections". The loop owns the sockets, the transport (plain or TLS),
// the framing (a 4-byte big-endian length, then the body; bodies below the
// protocol's least or above the frame cap close the connection once what
// came before is answered), the output bound, the in-flight window, the
// deadlines and the turn's budget. A protocol reads a frame's body and
// answers it; it knows no socket. The loop knows no request type.
//
// The binary port's protocol is server/BinaryPort.h; a port for another
// protocol implements FrameProtocol and runs on the same loop.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "server/TcpOptions.h"

namespace groupcoord::server {
namespace detail {
struct Completions;
}  // namespace detail

namespace net {

// Who is at the other end of a connection, as the loop saw it.
struct Peer {
  std::string host;  // "" when getpeername failed
  uint16_t port = 0;
  uint64_t serial = 0;    // one count for every connection of the process, from 1
  bool internal = false;  // came in through the internal listener
  bool tls = false;
  std::string address() const;  // "host:port", "[v6]:port"
};

// The answer to one request read through the general path: send() exactly
// once, from any thread. The loop keeps answers in request order per
// connection; on the connection's own thread, at the head of the line, the
// answer is encoded straight into the output. A Reply whose connection has
// closed drops what it is given.
class Reply {
 public:
  Reply(std::shared_ptr<detail::Completions> completions, uint64_t seq)
      : completions_(std::move(completions)), seq_(seq) {}
  // `encode(std::vector<uint8_t>& out)` appends the whole answer frame
  // (length prefix included) to `out`.
  template <class Encode>
  void send(const Encode& encode) {
    sendWith([](const void* f, std::vector<uint8_t>& out) { (*static_cast<const Encode*>(f))(out); }, &encode);
  }
  // As send(), and then the connection closes (CloseReason::Refused): once
  // the answer is written the loop reads no more, answers what was already
  // read, and closes. `encode` may append nothing: the connection closes
  // without an answer to this request. A Kafka broker closes so after a
  // failed SASL authentication.
  template <class Encode>
  void sendThenClose(const Encode& encode) {
    sendThenCloseWith([](const void* f, std::vector<uint8_t>& out) { (*static_cast<const Encode*>(f))(out); },
                      &encode);
  }
  // Whether the connection has closed (an answer would be dropped).
  bool connectionClosed() const;

 private:
  using EncodeFn = void (*)(const void*, std::vector<uint8_t>&);
  void sendWith(EncodeFn encode, const void* arg);
  void sendThenCloseWith(EncodeFn encode, const void* arg);
  std::shared_ptr<detail::Completions> completions_;
  uint64_t seq_;
};

// What a protocol keeps per connection (made by FrameProtocol::open).
class ProtocolSession {
 public:
  virtual ~ProtocolSession() = default;
};

// The clock readings a protocol takes for a sampled inline answer: when
// its handler began and ended (decoding before, encoding after), and where
// the request's group stands when the protocol says.
struct InlineSample {
  std::chrono::steady_clock::time_point handleStart{};
  std::chrono::steady_clock::time_point handleEnd{};
  std::optional<protocol::Handler::GroupMotion> groupMotion;
};

enum class Dispatched : uint8_t { Handler, Answered, Refused };

class FrameProtocol {
 public:
  virtual ~FrameProtocol() = default;
  // The smallest request body (after the length) the protocol can read.
  virtual int32_t minRequestBody() const = 0;
  // A connection's state, made when it is accepted.
  virtual std::unique_ptr<ProtocolSession> open(const Peer& peer) = 0;
  // Loop thread: answers the request in `body` at once, appending the
  // whole answer frame to `out`: no reply slot, no callback, no allocation.
  // false: the general path (dispatch) answers it. Called only with nothing
  // in flight before it on the connection. `sample`: non-null for the
  // request whose stages the loop times.
  virtual bool answerNow(ProtocolSession& session, std::span<const uint8_t> body, std::vector<uint8_t>& out,
                         InlineSample* sample) = 0;
  // Whether a request the inline path declined is answered even past the
  // loop turn's budget (docs/design.md, "Heartbeats").
  virtual bool urgent(std::span<const uint8_t> body) const = 0;
  // Loop thread: reads the request in `body` and answers it through
  // `reply`, now or later (Handler: it reached the handler, counted as a
  // handler call; Answered: the protocol answered it itself, an error), or
  // refuses it: no answer is sent, and the loop answers what came before
  // and closes the connection (a protocol whose errors cannot be framed
  // for every request, as Kafka's for an unknown API).
  virtual Dispatched dispatch(ProtocolSession& session, std::span<const uint8_t> body, Reply reply) = 0;
  // Whether the sampled stages of inline answers are recorded (the loop
  // times them only then), and where they go.
  virtual bool recordsStages() const = 0;
  virtual void stages(const HeartbeatStages& stages) = 0;
};

}  // namespace net
}  // namespace groupcoord::server
