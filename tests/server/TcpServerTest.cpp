// TcpServer over real sockets on 127.0.0.1: framing, ordering, limits,
// shutdown. Every wait is bounded: what the design does at once is waited for
// up to the scheduling allowance (answerWait()), what it does after a timeout
// up to that timeout plus the allowance (tests/README.md, "Time in tests").

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "client/Connection.h"
#include "server/Auth.h"
#include "server/AuthGate.h"
#include "server/TcpServer.h"
#include "server/UnservedHandler.h"
#include "tests/server/ServerTestUtil.h"

namespace groupcoord::servertest {
namespace {

using client::Connection;
using client::ConnectOptions;
using client::IoStatus;
using protocol::ApiKey;
using protocol::ErrorCode;
using server::CloseReason;
using server::TcpServer;
using server::TcpServerOptions;
using groupcoord::testing::designBound;
using groupcoord::testing::schedulingAllowance;

// How long an answer (or a close) the server gives at once is waited for: no
// design delay, so the scheduling allowance.
std::chrono::milliseconds answerWait() { return schedulingAllowance(); }

// Holds the kernel's receive timestamps on for as long as it lives. The
// kernel turns them on for the whole machine a moment after the first socket
// asks (from a deferred work item), and a TCP segment that arrived before
// then carries no stamp: on a busy machine every heartbeat of a short test
// can. This pair of loopback TCP sockets asks, and its receiving end is seen
// to read a stamped segment, before the server under test starts. (A UDP
// socket would not tell: it is given the time of the read when its datagram
// carries no stamp.)
class KernelStampsOn {
 public:
  KernelStampsOn() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(at);
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0 ||
        ::listen(listener_, 1) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&at), &len) != 0)
      return;
    sender_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sender_ < 0 || ::connect(sender_, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0) return;
    receiver_ = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (receiver_ < 0) return;
    const int one = 1;
    ::setsockopt(receiver_, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
    on_ = groupcoord::testing::eventuallyWithin(schedulingAllowance(), [&] {
      const char byte = 's';
      if (::send(sender_, &byte, 1, MSG_NOSIGNAL) != 1) return false;
      char got = 0;
      iovec iov{&got, 1};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      if (::recvmsg(receiver_, &msg, 0) != 1) return false;
      for (cmsghdr* m = CMSG_FIRSTHDR(&msg); m != nullptr; m = CMSG_NXTHDR(&msg, m)) {
        if (m->cmsg_level == SOL_SOCKET && m->cmsg_type == SCM_TIMESTAMPNS) return true;
      }
      return false;
    });
  }
  ~KernelStampsOn() {
    for (int fd : {receiver_, sender_, listener_})
      if (fd >= 0) ::close(fd);
  }
  KernelStampsOn(const KernelStampsOn&) = delete;
  KernelStampsOn& operator=(const KernelStampsOn&) = delete;
  bool on() const { return on_; }

 private:
  int listener_ = -1, sender_ = -1, receiver_ = -1;
  bool on_ = false;
};

// A handler that answers heartbeats on the I/O thread (heartbeatNow) and
// holds everything else until the test answers it.
class FastHeartbeatHandler : public DeferredHandler {
 public:
  // A group named "moving..." is moving; any other is in step.
  bool heartbeatNow(const protocol::Caller&, protocol::ConnectionSlot&, const protocol::HeartbeatView& r,
                    protocol::HeartbeatResponse& out, std::chrono::steady_clock::time_point,
                    std::optional<GroupMotion>* motion) override {
    fast.fetch_add(1);
    out = protocol::HeartbeatResponse{r.generation, ErrorCode::NONE};
    if (motion != nullptr) *motion = r.group.rfind("moving", 0) == 0 ? GroupMotion::Moving : GroupMotion::InStep;
    return true;
  }
  std::atomic<int> fast{0};
};

class CountingObserver : public server::RequestObserver {
 public:
  void answered(ApiKey api, ErrorCode, uint64_t) override {
    if (api == ApiKey::Heartbeat) heartbeats.fetch_add(1);
  }
  void heartbeatStages(const server::HeartbeatStages& s) override {
    samples.fetch_add(1);
    // Every stage is measured on one monotonic clock; their sum is a
    // request's time inside the server, which is far below a minute.
    const uint64_t total = s.wakeToRead + s.decode + s.handle + s.encode + s.write;
    if (total < 60'000'000'000ull) plausible.fetch_add(1);
    // The kernel's stamp of the bytes' arrival, on the wall clock.
    if (s.arrivalToRead && *s.arrivalToRead < 60'000'000'000ull) stamped.fetch_add(1);
    if (s.groupMotion == protocol::Handler::GroupMotion::InStep) inStep.fetch_add(1);
  }
  std::atomic<int> heartbeats{0}, samples{0}, plausible{0}, stamped{0}, inStep{0};
};

class TcpServerTest : public ::testing::Test {
 protected:
  void startServer(protocol::Handler& handler, TcpServerOptions options = {}) {
    options.listenAddress = "127.0.0.1";
    options.port = 0;
    if (options.ioThreads == 0) options.ioThreads = 2;
    server_ = std::make_unique<TcpServer>(options, handler);
    std::string error;
    ASSERT_TRUE(server_->start(&error)) << error;
    ASSERT_NE(server_->port(), 0);
  }

  Connection connect(const ConnectOptions& options = {}) {
    Connection c;
    EXPECT_TRUE(c.connect("127.0.0.1", server_->port(), answerWait(), options)) << c.lastError();
    return c;
  }

  // One heartbeat round trip; true when answered with its own generation.
  static bool heartbeatWorks(Connection& c, int64_t generation) {
    auto r = c.call(heartbeat(generation), answerWait());
    if (!r.ok) return false;
    auto* hb = std::get_if<protocol::HeartbeatResponse>(&r.response);
    return hb != nullptr && hb->generation == generation && hb->error == ErrorCode::NONE;
  }

  // Handlers first: they must outlive the server, which is declared last.
  EchoHandler echo_;
  DeferredHandler deferred_;
  FastHeartbeatHandler fast_;
  CountingObserver observer_;
  std::unique_ptr<TcpServer> server_;
};

// ErrorOnlyResponse body: Version int16, CorrelationId int64, ErrorCode int16.
std::vector<uint8_t> errorOnlyBody(int16_t version, int64_t correlationId, ErrorCode code) {
  return Bytes().i16(version).i64(correlationId).i16(static_cast<int16_t>(code)).bytes();
}

TEST_F(TcpServerTest, PipelinedResponsesFollowRequestOrderWhateverOrderTheHandlerAnswers) {
  startServer(deferred_);
  Connection c = connect();
  constexpr int kRequests = 100;
  std::vector<uint8_t> burst;
  for (int i = 1; i <= kRequests; ++i) {
    auto f = requestFrame(i, heartbeat(1000 + i));
    burst.insert(burst.end(), f.begin(), f.end());
  }
  ASSERT_EQ(c.sendRaw(burst), IoStatus::Ok);
  ASSERT_TRUE(waitUntil([&] { return deferred_.heldCount() == kRequests; }));

  auto held = deferred_.takeAll();
  // Answer everything but the first request, in a shuffled order, from two
  // other threads: nothing may come out while the head of the line waits.
  std::vector<size_t> order;
  for (size_t i = 1; i < held.size(); ++i) order.push_back(i);
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  {
    std::thread a([&] {
      for (size_t k = 0; k < order.size(); k += 2) held[order[k]].done(DeferredHandler::echo(held[order[k]]));
    });
    std::thread b([&] {
      for (size_t k = 1; k < order.size(); k += 2) held[order[k]].done(DeferredHandler::echo(held[order[k]]));
    });
    a.join();
    b.join();
  }
  std::vector<uint8_t> body;
  EXPECT_EQ(c.receiveFrame(body, 300ms), IoStatus::Timeout) << "a response overtook the head of the line";

  std::thread last([&] { held[0].done(DeferredHandler::echo(held[0])); });
  last.join();
  for (int i = 1; i <= kRequests; ++i) {
    auto r = c.receive(ApiKey::Heartbeat, answerWait());
    ASSERT_TRUE(r.ok) << "response " << i << ": " << r.detail;
    EXPECT_EQ(r.header.correlationId, i);
    auto* hb = std::get_if<protocol::HeartbeatResponse>(&r.response);
    ASSERT_NE(hb, nullptr);
    EXPECT_EQ(hb->generation, 1000 + i);
  }
}

TEST_F(TcpServerTest, UnknownApiAndUnknownVersionAreAnsweredExactlyAndTheConnectionIsKept) {
  startServer(echo_);
  Connection c = connect();

  // ApiKey 99, Version 0, CorrelationId 77, ClientId null.
  ASSERT_EQ(c.sendRaw(Bytes().i16(99).i16(0).i64(77).i16(-1).frame()), IoStatus::Ok);
  std::vector<uint8_t> body;
  ASSERT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Ok) << c.lastError();
  EXPECT_EQ(body, errorOnlyBody(0, 77, ErrorCode::UNKNOWN_API));

  // A known ApiKey (Heartbeat) at Version 7: the version is echoed.
  ASSERT_EQ(c.sendRaw(Bytes().i16(0).i16(7).i64(78).i16(-1).str("g").str("c").i64(1).frame()), IoStatus::Ok);
  ASSERT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Ok) << c.lastError();
  EXPECT_EQ(body, errorOnlyBody(7, 78, ErrorCode::UNSUPPORTED_VERSION));

  EXPECT_TRUE(heartbeatWorks(c, 5));
  EXPECT_EQ(echo_.calls.load(), 1);
}

TEST_F(TcpServerTest, MalformedBodyIsAnsweredInvalidRequestAndTheConnectionIsKept) {
  startServer(echo_);
  Connection c = connect();
  std::vector<uint8_t> body;

  // Heartbeat whose group string claims 40 bytes where 3 follow.
  ASSERT_EQ(c.sendRaw(Bytes().i16(0).i16(0).i64(90).i16(-1).i16(40).i8('a').i8('b').i8('c').frame()), IoStatus::Ok);
  ASSERT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Ok) << c.lastError();
  EXPECT_EQ(body, errorOnlyBody(0, 90, ErrorCode::INVALID_REQUEST));

  // A whole Heartbeat followed by a stray byte.
  ASSERT_EQ(c.sendRaw(Bytes().i16(0).i16(0).i64(91).i16(-1).str("g").str("c").i64(1).i8(0).frame()), IoStatus::Ok);
  ASSERT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Ok) << c.lastError();
  EXPECT_EQ(body, errorOnlyBody(0, 91, ErrorCode::INVALID_REQUEST));

  // A ClientId of 256 bytes.
  ASSERT_EQ(c.sendRaw(Bytes().i16(0).i16(0).i64(92).str(std::string(256, 'x')).str("g").str("c").i64(1).frame()),
            IoStatus::Ok);
  ASSERT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Ok) << c.lastError();
  EXPECT_EQ(body, errorOnlyBody(0, 92, ErrorCode::INVALID_REQUEST));

  EXPECT_EQ(echo_.calls.load(), 0);
  EXPECT_TRUE(heartbeatWorks(c, 6));
}

TEST_F(TcpServerTest, BadFrameSizesCloseOnlyTheirOwnConnection) {
  TcpServerOptions options;
  options.maxFrameBytes = 4096;
  startServer(echo_, options);
  Connection bystander = connect();
  ASSERT_TRUE(heartbeatWorks(bystander, 1));

  struct Case {
    const char* what;
    int32_t size;
    CloseReason reason;
  };
  const Case cases[] = {
      {"above max frame bytes", 4097, CloseReason::FrameTooLarge},
      {"negative", -1, CloseReason::FrameTooLarge},
      {"below the request header", 5, CloseReason::FrameTooSmall},
      {"zero", 0, CloseReason::FrameTooSmall},
  };
  int64_t generation = 2;
  for (const auto& bad : cases) {
    SCOPED_TRACE(bad.what);
    const auto before = server_->stats().closed(bad.reason);
    Connection c = connect();
    // The size alone, and for the small ones the few bytes it announces.
    Bytes frame;
    frame.i32(bad.size);
    for (int i = 0; i < std::clamp(bad.size, 0, 16); ++i) frame.i8(0);
    ASSERT_EQ(c.sendRaw(frame.bytes()), IoStatus::Ok);
    std::vector<uint8_t> body;
    EXPECT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Closed) << c.lastError();
    EXPECT_TRUE(waitUntil([&] { return server_->stats().closed(bad.reason) == before + 1; }));
    EXPECT_TRUE(heartbeatWorks(bystander, generation++));
  }
  // A frame of exactly the limit is fine: ListGroups names padded to 4096 body bytes.
  protocol::ListGroupsRequest list;
  auto frameSize = [&] { return requestFrame(1, list).size(); };
  while (frameSize() + 102 <= 4100) list.groups.push_back(std::string(100, 'g'));
  while (4100 - frameSize() < 3) list.groups.pop_back();
  list.groups.push_back(std::string(4100 - frameSize() - 2, 'h'));
  const auto exact = requestFrame(1, list);
  ASSERT_EQ(exact.size(), 4100u);
  Connection big = connect();
  ASSERT_EQ(big.sendRaw(exact), IoStatus::Ok);
  auto r = big.receive(ApiKey::ListGroups, answerWait());
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(server_->stats().closed(CloseReason::FrameTooLarge), 2u);
  EXPECT_EQ(server_->stats().closed(CloseReason::FrameTooSmall), 2u);
}

TEST_F(TcpServerTest, BadNamesAreRefusedWithoutReachingTheHandler) {
  startServer(echo_);
  Connection c = connect();

  auto hb = c.call(heartbeat(1, "bad/group"), answerWait());
  ASSERT_TRUE(hb.ok) << hb.detail;
  EXPECT_EQ(protocol::responseError(hb.response), ErrorCode::INVALID_GROUP_NAME);

  auto hb2 = c.call(heartbeat(1, "g", ".."), answerWait());
  ASSERT_TRUE(hb2.ok) << hb2.detail;
  EXPECT_EQ(protocol::responseError(hb2.response), ErrorCode::INVALID_CONSUMER_ID);

  protocol::CreateGroupRequest create;
  create.group = "fine";
  create.sessionTimeoutMs = 10000;
  create.topics = {"ok-topic", std::string(250, 't')};
  auto cr = c.call(create, answerWait());
  ASSERT_TRUE(cr.ok) << cr.detail;
  auto* created = std::get_if<protocol::CreateGroupResponse>(&cr.response);
  ASSERT_NE(created, nullptr);
  EXPECT_EQ(created->error, ErrorCode::INVALID_GROUP_NAME);
  EXPECT_EQ(created->group, "fine");
  EXPECT_TRUE(created->controller.isNone());

  protocol::RegisterConsumerRequest reg;
  reg.group = std::string("nul\0byte", 8);
  auto rr = c.call(reg, answerWait());
  ASSERT_TRUE(rr.ok) << rr.detail;
  EXPECT_EQ(protocol::responseError(rr.response), ErrorCode::INVALID_GROUP_NAME);

  EXPECT_EQ(echo_.calls.load(), 0);
  EXPECT_EQ(server_->stats().handlerCalls, 0u);
  EXPECT_TRUE(heartbeatWorks(c, 3));
  EXPECT_EQ(echo_.calls.load(), 1);
}

TEST_F(TcpServerTest, AThousandConnectionsAtOnceAreAllServed) {
  startServer(echo_);
  constexpr int kConnections = 1000;
  std::vector<Connection> conns;
  conns.reserve(kConnections);
  for (int i = 0; i < kConnections; ++i) {
    conns.push_back(connect());
    ASSERT_TRUE(conns.back().isOpen()) << "connection " << i;
  }
  for (int i = 0; i < kConnections; ++i) ASSERT_GT(conns[i].send(heartbeat(i)), 0) << "connection " << i;
  for (int i = 0; i < kConnections; ++i) {
    auto r = conns[i].receive(ApiKey::Heartbeat, answerWait());
    ASSERT_TRUE(r.ok) << "connection " << i << ": " << r.detail;
    EXPECT_EQ(std::get<protocol::HeartbeatResponse>(r.response).generation, i);
  }
  EXPECT_EQ(server_->stats().connectionsOpen, static_cast<uint64_t>(kConnections));
  EXPECT_EQ(server_->stats().connectionsAccepted, static_cast<uint64_t>(kConnections));
  EXPECT_EQ(echo_.calls.load(), kConnections);
}

TEST_F(TcpServerTest, AStalledHalfFrameIsClosedAfterTheIdleTimeoutAndAnIdleConnectionIsKept) {
  TcpServerOptions options;
  options.idleTimeout = 300ms;
  startServer(echo_, options);
  const auto start = std::chrono::steady_clock::now();

  Connection idle = connect();   // never sends anything
  Connection active = connect();  // one request, then quiet
  ASSERT_TRUE(heartbeatWorks(active, 1));
  Connection stalled = connect();
  auto frame = requestFrame(9, heartbeat(9));
  ASSERT_EQ(stalled.sendRaw(std::span<const uint8_t>(frame.data(), 6)), IoStatus::Ok);

  // Closed after the idle timeout: waited for up to it plus the scheduling
  // allowance.
  ASSERT_TRUE(waitUntil([&] { return server_->stats().closed(CloseReason::IdleTimeout) == 1; },
                        designBound(options.idleTimeout)));
  std::vector<uint8_t> body;
  EXPECT_EQ(stalled.receiveFrame(body, answerWait()), IoStatus::Closed);

  // Well past several idle timeouts, the connections with nothing partial
  // are still there and still served (a sleep of the scenario: a busy
  // machine only makes it longer).
  std::this_thread::sleep_until(start + 1200ms);
  EXPECT_EQ(server_->stats().closed(CloseReason::IdleTimeout), 1u);
  EXPECT_TRUE(heartbeatWorks(idle, 2));
  EXPECT_TRUE(heartbeatWorks(active, 3));
}

TEST_F(TcpServerTest, AFrameMustArriveWholeWithinTheIdleTimeoutOfItsFirstByte) {
  auto frame = requestFrame(1, heartbeat(7));
  ASSERT_GT(frame.size(), 20u);
  {
    // A byte every 20 ms for 12 bytes, then the rest: a frame that comes in
    // pieces and is whole within the timeout is served. The pieces take
    // 240 ms; the timeout is that plus the scheduling allowance, so that a
    // sender held back on a busy machine does not make "within" "past".
    constexpr auto kPieces = 12 * 20ms;
    TcpServerOptions options;
    options.idleTimeout = designBound(kPieces);
    startServer(echo_, options);
    Connection quick = connect();
    for (size_t i = 0; i < frame.size(); ++i) {
      ASSERT_EQ(quick.sendRaw(std::span<const uint8_t>(&frame[i], 1)), IoStatus::Ok) << "byte " << i;
      if (i < 12) std::this_thread::sleep_for(20ms);
    }
    auto r = quick.receive(ApiKey::Heartbeat, answerWait());
    ASSERT_TRUE(r.ok) << r.detail;
    EXPECT_EQ(server_->stats().closed(CloseReason::IdleTimeout), 0u);
  }
  // A byte every 100 ms: the connection is never silent for the timeout,
  // but the frame is not whole within it of its first byte, so the
  // connection goes (a client dripping bytes cannot hold it forever). A
  // server that only closed silent connections would answer the frame once
  // whole (after 4 s) and never close it.
  TcpServerOptions options;
  options.idleTimeout = 500ms;
  server_.reset();
  startServer(echo_, options);
  Connection other = connect();  // served before and after
  ASSERT_TRUE(heartbeatWorks(other, 6));
  Connection drip = connect();
  const auto start = std::chrono::steady_clock::now();
  bool closed = false;
  for (size_t i = 0; i < frame.size() && !closed; ++i) {
    if (drip.sendRaw(std::span<const uint8_t>(&frame[i], 1)) != IoStatus::Ok) break;
    std::this_thread::sleep_for(100ms);
    closed = server_->stats().closed(CloseReason::IdleTimeout) == 1;
  }
  // Closed at the idle timeout after its first byte: a design bound, plus
  // the scheduling allowance.
  ASSERT_TRUE(waitUntil([&] { return server_->stats().closed(CloseReason::IdleTimeout) == 1; },
                        designBound(options.idleTimeout)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, designBound(options.idleTimeout));
  std::vector<uint8_t> body;
  EXPECT_EQ(drip.receiveFrame(body, answerWait()), IoStatus::Closed);
  EXPECT_TRUE(heartbeatWorks(other, 8));
}

TEST_F(TcpServerTest, RequestsBeforeAFrameOfImpossibleSizeAreAnsweredBeforeTheClose) {
  TcpServerOptions options;
  options.maxFrameBytes = 4096;
  startServer(echo_, options);
  Connection c = connect();
  // Two requests and an oversized frame's size in one write: one read.
  auto bytes = requestFrame(1, heartbeat(11));
  auto second = requestFrame(2, heartbeat(12));
  bytes.insert(bytes.end(), second.begin(), second.end());
  const auto tail = Bytes().i32(1 << 20).i64(0).bytes();
  bytes.insert(bytes.end(), tail.begin(), tail.end());
  ASSERT_EQ(c.sendRaw(bytes), IoStatus::Ok);
  for (int64_t generation : {11, 12}) {
    auto r = c.receive(ApiKey::Heartbeat, answerWait());
    ASSERT_TRUE(r.ok) << r.detail;
    auto* hb = std::get_if<protocol::HeartbeatResponse>(&r.response);
    ASSERT_NE(hb, nullptr);
    EXPECT_EQ(hb->generation, generation);
  }
  std::vector<uint8_t> body;
  EXPECT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Closed);
  EXPECT_TRUE(waitUntil([&] { return server_->stats().closed(CloseReason::FrameTooLarge) == 1; }));
}

// Answers ListGroups with a large response.
class BigResponseHandler : public protocol::Handler {
 public:
  static protocol::ListGroupsResponse bigResponse() {
    protocol::ListGroupsResponse resp;
    protocol::GroupInfo info;
    info.name = "g";
    for (int i = 0; i < 100; ++i) info.members.push_back("member-" + std::string(90, 'm') + std::to_string(i));
    resp.groups.push_back(info);
    return resp;
  }
  void handle(const protocol::RequestHeader&, protocol::Request, protocol::ResponseCallback done) override {
    done(bigResponse());
  }
};

TEST_F(TcpServerTest, AClientThatNeverReadsIsDisconnectedOnceItsOutputPassesTheBound) {
  BigResponseHandler big;
  TcpServerOptions options;
  options.maxOutputBytes = 64 * 1024;
  startServer(big, options);
  std::vector<uint8_t> one;
  protocol::encodeResponse(protocol::ResponseHeader{0, 1}, BigResponseHandler::bigResponse(), one);
  ASSERT_GT(one.size(), 9000u);

  Connection reader = connect();
  Connection sink = connect(ConnectOptions{.receiveBufferBytes = 4096});
  // 4000 responses of ~10 KB: far more than any socket buffers hold.
  const auto request = requestFrame(1, protocol::ListGroupsRequest{});
  std::vector<uint8_t> burst;
  for (int i = 0; i < 100; ++i) burst.insert(burst.end(), request.begin(), request.end());
  for (int i = 0; i < 40; ++i) {
    if (sink.sendRaw(burst) != IoStatus::Ok) break;  // closed by the server already
  }
  ASSERT_TRUE(waitUntil([&] { return server_->stats().closed(CloseReason::OutputOverflow) == 1; }))
      << "pending max " << server_->stats().pendingOutputBytesMax;
  const auto stats = server_->stats();
  EXPECT_GT(stats.pendingOutputBytesMax, options.maxOutputBytes);
  EXPECT_LE(stats.pendingOutputBytesMax, options.maxOutputBytes + one.size());

  // The server still serves others.
  auto r = reader.call(protocol::ListGroupsRequest{}, answerWait());
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_TRUE(waitUntil([&] { return server_->stats().connectionsOpen == 1; }));
}

TEST_F(TcpServerTest, ConnectionsPastTheLimitAreRefusedAndTheOthersKeepBeingServed) {
  TcpServerOptions options;
  options.maxConnections = 3;
  startServer(echo_, options);
  std::vector<Connection> conns;
  for (int i = 0; i < 3; ++i) {
    conns.push_back(connect());
    ASSERT_TRUE(heartbeatWorks(conns.back(), i));
  }
  Connection extra = connect();  // the kernel completes the handshake; the server closes it
  auto r = extra.call(heartbeat(10), answerWait());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(extra.lastStatus(), IoStatus::Closed) << extra.lastError();
  // Counted once the acceptor is done with it, which may be just after the
  // client saw the close.
  EXPECT_TRUE(waitUntil([&] { return server_->stats().connectionsRejected >= 1; }));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(heartbeatWorks(conns[i], 20 + i));

  // Once one leaves, a newcomer fits again.
  conns.pop_back();
  ASSERT_TRUE(waitUntil([&] { return server_->stats().connectionsOpen == 2; }));
  Connection late = connect();
  EXPECT_TRUE(heartbeatWorks(late, 30));
}

TEST_F(TcpServerTest, PastTheInFlightLimitTheServerStopsReadingAndDropsNothing) {
  TcpServerOptions options;
  options.maxInFlightPerConnection = 4;
  startServer(deferred_, options);
  Connection c = connect();
  constexpr int kRequests = 20;
  std::vector<uint8_t> burst;
  for (int i = 1; i <= kRequests; ++i) {
    auto f = requestFrame(i, heartbeat(i));
    burst.insert(burst.end(), f.begin(), f.end());
  }
  ASSERT_EQ(c.sendRaw(burst), IoStatus::Ok);
  ASSERT_TRUE(waitUntil([&] { return deferred_.heldCount() == 4; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(deferred_.totalCount(), 4u) << "the server read past its in-flight limit";

  // Answer whatever is held, from another thread, until all were handled.
  std::atomic<bool> stop{false};
  std::thread answerer([&] {
    while (!stop) {
      for (auto& h : deferred_.takeAll()) h.done(DeferredHandler::echo(h));
      std::this_thread::sleep_for(2ms);
    }
  });
  for (int i = 1; i <= kRequests; ++i) {
    auto r = c.receive(ApiKey::Heartbeat, answerWait());
    ASSERT_TRUE(r.ok) << "response " << i << ": " << r.detail;
    EXPECT_EQ(r.header.correlationId, i);
  }
  stop = true;
  answerer.join();
  EXPECT_EQ(deferred_.totalCount(), static_cast<size_t>(kRequests));
}

TEST_F(TcpServerTest, ResponsesToAClientThatHalfClosedAreStillDelivered) {
  startServer(deferred_);
  Connection c = connect();
  ASSERT_GT(c.send(heartbeat(1)), 0);
  ASSERT_GT(c.send(heartbeat(2)), 0);
  ASSERT_TRUE(waitUntil([&] { return deferred_.heldCount() == 2; }));
  ASSERT_EQ(::shutdown(c.nativeHandle(), SHUT_WR), 0);
  std::this_thread::sleep_for(50ms);
  for (auto& h : deferred_.takeAll()) h.done(DeferredHandler::echo(h));
  for (int i = 1; i <= 2; ++i) {
    auto r = c.receive(ApiKey::Heartbeat, answerWait());
    ASSERT_TRUE(r.ok) << r.detail;
    EXPECT_EQ(r.header.correlationId, i);
  }
  std::vector<uint8_t> body;
  EXPECT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Closed);
  EXPECT_TRUE(waitUntil([&] { return server_->stats().closed(CloseReason::PeerClosed) == 1; }));
}

// Drops Heartbeat completions unanswered and answers CreateGroup with the
// response of another API.
class MisbehavingHandler : public protocol::Handler {
 public:
  void handle(const protocol::RequestHeader&, protocol::Request request, protocol::ResponseCallback done) override {
    if (std::holds_alternative<protocol::CreateGroupRequest>(request)) {
      done(protocol::HeartbeatResponse{});
      done(protocol::HeartbeatResponse{});  // and twice
      return;
    }
    if (std::holds_alternative<protocol::HeartbeatRequest>(request)) return;  // `done` dropped
    done(protocol::errorResponse(request, ErrorCode::NONE));
  }
};

TEST_F(TcpServerTest, AMisbehavingHandlerCostsItsRequestsAnErrorButNotTheConnection) {
  MisbehavingHandler handler;
  startServer(handler);
  Connection c = connect();
  auto r = c.call(heartbeat(1), answerWait());
  ASSERT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(protocol::responseError(r.response), ErrorCode::UNKNOWN_SERVER_ERROR);

  protocol::CreateGroupRequest create;
  create.group = "g";
  create.sessionTimeoutMs = 5000;
  auto cr = c.call(create, answerWait());
  ASSERT_TRUE(cr.ok) << cr.detail;
  ASSERT_TRUE(std::holds_alternative<protocol::CreateGroupResponse>(cr.response));
  EXPECT_EQ(std::get<protocol::CreateGroupResponse>(cr.response).error, ErrorCode::UNKNOWN_SERVER_ERROR);
  EXPECT_EQ(std::get<protocol::CreateGroupResponse>(cr.response).group, "");

  auto lr = c.call(protocol::ListGroupsRequest{}, answerWait());
  ASSERT_TRUE(lr.ok) << lr.detail;
  EXPECT_EQ(protocol::responseError(lr.response), ErrorCode::NONE);
}

TEST_F(TcpServerTest, CompletionsAfterTheConnectionOrTheServerIsGoneAreHarmless) {
  TcpServerOptions options;
  options.shutdownGrace = 200ms;
  startServer(deferred_, options);
  {
    Connection c = connect();
    ASSERT_GT(c.send(heartbeat(1)), 0);
    ASSERT_TRUE(waitUntil([&] { return deferred_.heldCount() == 1; }));
    // Close with a reset: the server drops the connection at once (after a
    // plain FIN it would wait to deliver the answer still due).
    const linger abort{1, 0};
    ASSERT_EQ(::setsockopt(c.nativeHandle(), SOL_SOCKET, SO_LINGER, &abort, sizeof(abort)), 0);
  }
  ASSERT_TRUE(waitUntil([&] { return server_->stats().connectionsOpen == 0; }));
  for (auto& h : deferred_.takeAll()) h.done(DeferredHandler::echo(h));

  Connection c = connect();
  ASSERT_GT(c.send(heartbeat(2)), 0);
  ASSERT_TRUE(waitUntil([&] { return deferred_.heldCount() == 1; }));
  auto held = deferred_.takeAll();
  server_.reset();  // waits out the grace, closes, joins
  held[0].done(DeferredHandler::echo(held[0]));
  held.clear();  // the last reference to the completion state goes here
  std::vector<uint8_t> body;
  EXPECT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Closed);
}

TEST_F(TcpServerTest, StopAnswersWhatIsInFlightThenCloses) {
  TcpServerOptions options;
  // The grace must outlast this test's own steps below (answering what is
  // held) however long a busy machine holds the test back: 5 s plus the
  // scheduling allowance. Nothing waits for it when things go well.
  options.shutdownGrace = 5000ms + schedulingAllowance();
  startServer(deferred_, options);
  Connection busy = connect();
  Connection quiet = connect();
  ASSERT_GT(busy.send(heartbeat(1)), 0);
  ASSERT_GT(busy.send(heartbeat(2)), 0);
  ASSERT_TRUE(waitUntil([&] { return deferred_.heldCount() == 2; }));

  std::thread stopper([&] { server_->stop(); });
  // The quiet connection goes at once; the busy one waits for its answers.
  std::vector<uint8_t> body;
  EXPECT_EQ(quiet.receiveFrame(body, answerWait()), IoStatus::Closed);
  EXPECT_EQ(busy.receiveFrame(body, 200ms), IoStatus::Timeout);
  for (auto& h : deferred_.takeAll()) h.done(DeferredHandler::echo(h));
  for (int i = 1; i <= 2; ++i) {
    auto r = busy.receive(ApiKey::Heartbeat, answerWait());
    ASSERT_TRUE(r.ok) << r.detail;
    EXPECT_EQ(r.header.correlationId, i);
  }
  EXPECT_EQ(busy.receiveFrame(body, answerWait()), IoStatus::Closed);
  stopper.join();
  EXPECT_EQ(server_->stats().closed(CloseReason::Shutdown), 2u);
  EXPECT_EQ(server_->stats().connectionsOpen, 0u);

  Connection refused;
  EXPECT_FALSE(refused.connect("127.0.0.1", server_->port(), 2s));
}

TEST_F(TcpServerTest, StopGivesUpOnUnansweredRequestsAfterTheGrace) {
  TcpServerOptions options;
  options.shutdownGrace = 300ms;
  startServer(deferred_, options);
  Connection c = connect();
  ASSERT_GT(c.send(heartbeat(1)), 0);
  ASSERT_TRUE(waitUntil([&] { return deferred_.heldCount() == 1; }));
  const auto before = std::chrono::steady_clock::now();
  server_->stop();
  // Stop gives up after the grace: a design bound, plus the scheduling
  // allowance.
  EXPECT_LT(std::chrono::steady_clock::now() - before, designBound(options.shutdownGrace));
  std::vector<uint8_t> body;
  EXPECT_EQ(c.receiveFrame(body, answerWait()), IoStatus::Closed);
  for (auto& h : deferred_.takeAll()) h.done(DeferredHandler::echo(h));
}

TEST_F(TcpServerTest, TheUnservedHandlerAnswersEveryApiWithUnknownServerError) {
  server::UnservedHandler unserved;
  startServer(unserved);
  Connection c = connect();
  protocol::ListGroupsRequest list;
  list.groups = {"g"};
  auto r = c.call(list, answerWait());
  ASSERT_TRUE(r.ok) << r.detail;
  auto* groups = std::get_if<protocol::ListGroupsResponse>(&r.response);
  ASSERT_NE(groups, nullptr);
  EXPECT_EQ(groups->error, ErrorCode::UNKNOWN_SERVER_ERROR);
  EXPECT_TRUE(groups->groups.empty());

  auto hb = c.call(heartbeat(4), answerWait());
  ASSERT_TRUE(hb.ok) << hb.detail;
  ASSERT_TRUE(std::holds_alternative<protocol::HeartbeatResponse>(hb.response));
  EXPECT_EQ(std::get<protocol::HeartbeatResponse>(hb.response).error, ErrorCode::UNKNOWN_SERVER_ERROR);
  EXPECT_EQ(std::get<protocol::HeartbeatResponse>(hb.response).generation, -1);
  server_.reset();  // before `unserved` goes
}

TEST_F(TcpServerTest, AHeartbeatWithNothingAheadIsAnsweredOnItsIoThreadAndItsStagesAreSampled) {
  auto& handler = fast_;
  auto& observer = observer_;
  const KernelStampsOn stamps;
  ASSERT_TRUE(stamps.on()) << "the kernel stamped no segment of the test's own";
  TcpServerOptions options;
  options.observer = &observer;
  startServer(handler, options);
  Connection c = connect();
  constexpr int kBeats = 64;
  for (int i = 0; i < kBeats; ++i) ASSERT_TRUE(heartbeatWorks(c, 500 + i)) << "heartbeat " << i;
  EXPECT_EQ(handler.fast.load(), kBeats);
  EXPECT_EQ(handler.heldCount(), 0u) << "no heartbeat took the general path";
  EXPECT_EQ(observer.heartbeats.load(), kBeats) << "each one counted once in the request metrics";
  // One read in kHeartbeatStageSampleEvery is timed: each heartbeat came in
  // a read of its own here, so about one in eight.
  EXPECT_GE(observer.samples.load(), kBeats / static_cast<int>(server::kHeartbeatStageSampleEvery) / 2);
  EXPECT_LE(observer.samples.load(), kBeats / static_cast<int>(server::kHeartbeatStageSampleEvery));
  EXPECT_EQ(observer.plausible.load(), observer.samples.load());
  EXPECT_EQ(observer.stamped.load(), observer.samples.load()) << "each sample knows when its bytes arrived";
  EXPECT_EQ(observer.inStep.load(), observer.samples.load()) << "each sample says its group's motion";
}

TEST_F(TcpServerTest, WithAuthenticationOnAnAdmittedHeartbeatIsStillAnsweredOnItsIoThread) {
  auto& handler = fast_;
  std::string error;
  auto store = server::CredentialStore::parse(
      server::makeCredentialLine("app", server::Role::Member, "app-secret", credentials::kMinIterations, &error) +
          "\n",
      "credentials file 't'", &error);
  ASSERT_NE(store, nullptr) << error;
  TcpServerOptions options;
  options.auth = std::make_shared<server::AuthGate>(store);
  startServer(handler, options);
  Connection c = connect();
  // Not authenticated yet: the gate refuses it on the general path.
  auto refused = c.call(heartbeat(1), answerWait());
  ASSERT_TRUE(refused.ok) << refused.detail;
  EXPECT_EQ(protocol::responseError(refused.response), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(handler.fast.load(), 0);
  auto auth = c.call(protocol::AuthenticateRequest{"app", "app-secret"}, answerWait());
  ASSERT_TRUE(auth.ok) << auth.detail;
  ASSERT_EQ(protocol::responseError(auth.response), ErrorCode::NONE);
  // Authenticated: the gate admits its heartbeats on the I/O thread.
  constexpr int kBeats = 32;
  const int before = handler.fast.load();
  for (int i = 0; i < kBeats; ++i) ASSERT_TRUE(heartbeatWorks(c, 100 + i)) << "heartbeat " << i;
  EXPECT_EQ(handler.fast.load() - before, kBeats);
  EXPECT_EQ(handler.heldCount(), 0u) << "no heartbeat took the general path";
}

// A handler whose non-heartbeat requests each take `work` of the I/O
// thread (answered at once, as a registration that joins a batch is taken),
// and that notes the order of what it saw.
class SlowRequestsHandler : public protocol::Handler {
 public:
  explicit SlowRequestsHandler(std::chrono::microseconds work) : work_(work) {}
  void handle(const protocol::RequestHeader& header, protocol::Request request,
              protocol::ResponseCallback done) override {
    // Held asleep rather than spinning: the I/O thread is as much taken, and
    // a busy machine's cores are not spent on it.
    std::this_thread::sleep_for(work_);
    {
      std::lock_guard lock(mutex_);
      seen_.push_back("request " + std::to_string(header.correlationId));
    }
    done(protocol::errorResponse(request, ErrorCode::NONE));
  }
  bool heartbeatNow(const protocol::Caller&, protocol::ConnectionSlot&, const protocol::HeartbeatView& r,
                    protocol::HeartbeatResponse& out, std::chrono::steady_clock::time_point,
                    std::optional<GroupMotion>*) override {
    {
      std::lock_guard lock(mutex_);
      seen_.push_back("heartbeat");
    }
    out = protocol::HeartbeatResponse{r.generation, ErrorCode::NONE};
    return true;
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  const std::chrono::microseconds work_;
  std::mutex mutex_;
  std::vector<std::string> seen_;
};

TEST_F(TcpServerTest, ABurstOfSlowRequestsOnOneConnectionDoesNotHoldBackAnotherConnectionsHeartbeat) {
  // 200 requests of 15 ms each (3 s of the only I/O thread) in one write,
  // then a heartbeat on another connection: past its turn's budget the burst
  // waits for later turns, and the heartbeat is answered before the burst's
  // end, which is still answered whole and in order. Without the budget the
  // heartbeat would come after all 200. How early it came is a figure: it
  // depends on when this thread got to send it (tests/README.md, "Time in
  // tests"); the burst's 3 s are the margin for a thread held back.
  SlowRequestsHandler slow(std::chrono::microseconds(15000));
  TcpServerOptions options;
  options.ioThreads = 1;
  startServer(slow, options);
  Connection busy = connect();
  Connection other = connect();
  constexpr int kRequests = 200;
  std::vector<uint8_t> burst;
  for (int i = 1; i <= kRequests; ++i) {
    auto f = requestFrame(i, protocol::ListGroupsRequest{{}});
    burst.insert(burst.end(), f.begin(), f.end());
  }
  ASSERT_EQ(busy.sendRaw(burst), IoStatus::Ok);
  ASSERT_TRUE(waitUntil([&] { return !slow.seen().empty(); })) << "the burst is being handled";
  ASSERT_TRUE(heartbeatWorks(other, 9));
  for (int i = 1; i <= kRequests; ++i) {
    auto r = busy.receive(ApiKey::ListGroups, answerWait());
    ASSERT_TRUE(r.ok) << "request " << i << ": " << r.detail;
    ASSERT_EQ(r.header.correlationId, i);
  }
  const auto seen = slow.seen();
  ASSERT_EQ(seen.size(), static_cast<size_t>(kRequests) + 1);
  const auto at = static_cast<size_t>(std::find(seen.begin(), seen.end(), "heartbeat") - seen.begin());
  groupcoord::testing::figure("a heartbeat sent while a burst of " + std::to_string(kRequests) +
                              " slow requests was being handled came after " + std::to_string(at) + " of them");
  EXPECT_LT(at, static_cast<size_t>(kRequests))
      << "the heartbeat was handled after " << at << " of the burst's " << kRequests << " requests";
  server_.reset();  // before `slow` goes
}

TEST_F(TcpServerTest, AHeartbeatBehindAnUnansweredRequestWaitsItsTurn) {
  auto& handler = fast_;
  startServer(handler);
  Connection c = connect();
  std::vector<uint8_t> burst = requestFrame(1, protocol::ListGroupsRequest{{}});
  auto hb = requestFrame(2, heartbeat(77));
  burst.insert(burst.end(), hb.begin(), hb.end());
  ASSERT_EQ(c.sendRaw(burst), IoStatus::Ok);
  ASSERT_TRUE(waitUntil([&] { return handler.heldCount() == 2; })) << "both take the general path";
  EXPECT_EQ(handler.fast.load(), 0);
  auto held = handler.takeAll();
  held[1].done(DeferredHandler::echo(held[1]));  // the heartbeat first: it must still come second
  std::vector<uint8_t> body;
  EXPECT_EQ(c.receiveFrame(body, 200ms), IoStatus::Timeout) << "the heartbeat's answer overtook the request ahead";
  held[0].done(DeferredHandler::echo(held[0]));
  auto first = c.receive(ApiKey::ListGroups, answerWait());
  ASSERT_TRUE(first.ok) << first.detail;
  EXPECT_EQ(first.header.correlationId, 1);
  auto second = c.receive(ApiKey::Heartbeat, answerWait());
  ASSERT_TRUE(second.ok) << second.detail;
  EXPECT_EQ(second.header.correlationId, 2);
  // Nothing ahead any more: the next one is answered at once, on the loop.
  EXPECT_TRUE(heartbeatWorks(c, 78));
  EXPECT_EQ(handler.fast.load(), 1);
}

TEST(TcpServerThreads, ByDefaultOneIoThreadPerCoreTheProcessMayRunOn) {
  // Narrowed to one core (as taskset or a container's cpuset would), the
  // server starts one I/O thread, not one per core of the machine.
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(::sched_getaffinity(0, sizeof(all), &all), 0);
  const int allowed = CPU_COUNT(&all);
  EXPECT_EQ(TcpServer::defaultIoThreads(), allowed);
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);
  EchoHandler handler;
  TcpServerOptions options;
  options.listenAddress = "127.0.0.1";
  options.port = 0;
  int started = 0;
  {
    TcpServer server(options, handler);
    std::string error;
    const bool ok = server.start(&error);
    started = server.ioThreads();
    EXPECT_TRUE(ok) << error;
  }
  ASSERT_EQ(::sched_setaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(started, 1);
  EXPECT_EQ(TcpServer::defaultIoThreads(), allowed);
}

TEST(ConnectionTest, ConnectingWhereNothingListensFailsWithAReason) {
  // Bind a port, then close it, so that nothing listens there.
  TcpServerOptions options;
  EchoHandler handler;
  uint16_t port = 0;
  {
    TcpServer probe(options, handler);
    std::string error;
    ASSERT_TRUE(probe.bind(&error)) << error;
    port = probe.port();
  }
  Connection c;
  EXPECT_FALSE(c.connect("127.0.0.1", port, 2s));
  EXPECT_FALSE(c.isOpen());
  EXPECT_FALSE(c.lastError().empty());
  EXPECT_EQ(c.send(heartbeat(1)), -1);
}

}  // namespace
}  // namespace groupcoord::servertest
