// Status::unreachable(): set when no connection to a server could be made
// (a closed port on 127.0.0.1), never when a server answered, be it with an
// error code, a refused Authenticate or a frame that cannot be trusted.
// A fake server on 127.0.0.1 stands in for groupcoordd; no ensemble needed.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "client/Admin.h"
#include "client/Connection.h"
#include "client/Consumer.h"
#include "client/Status.h"
#include "protocol/Codec.h"
#include "support/TestEnv.h"
#include "support/Timing.h"
#include "tests/client/FakeServer.h"

namespace groupcoord::client {
namespace {

using namespace std::chrono_literals;
using groupcoord::testing::designBound;
using protocol::ErrorCode;
using testing::FakeServer;

// The fake server answers at once, but on a starved machine its thread may
// run seconds late: a request that timed out would be answered as
// CONTROLLER_NOT_AVAILABLE (or a connect fail) instead of the answer under
// test. So every wait for it holds the scheduling allowance.
constexpr auto kFakeAnswers = 1000ms;

// Every request answered with its API's response carrying `code`.
FakeServer::Answer answerAll(ErrorCode code) {
  return [code](const protocol::DecodedRequest& r) {
    return FakeServer::frame(r, protocol::errorResponse(r.request, code));
  };
}

AdminOptions quickAdmin() {
  AdminOptions o;
  o.requestTimeout = designBound(kFakeAnswers);
  o.retryBudget = 200ms;
  return o;
}

TEST(Unreachable, StatusKinds) {
  EXPECT_FALSE(Status::success().unreachable());
  EXPECT_FALSE(Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE, "group g has no controller yet").unreachable());
  const Status s = Status::unreachableError("cannot connect to 127.0.0.1:1: Connection refused");
  EXPECT_TRUE(s.unreachable());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_EQ(s.toString(), "CONTROLLER_NOT_AVAILABLE: cannot connect to 127.0.0.1:1: Connection refused");
}

TEST(Unreachable, ConnectionToClosedPort) {
  Connection c;
  EXPECT_FALSE(c.connect("127.0.0.1", groupcoord::testing::closedLoopbackPort(), 2000ms));
  EXPECT_TRUE(c.unreachable()) << c.lastError();
  EXPECT_FALSE(c.authRefused());
  EXPECT_NE(c.lastError().find("connect to 127.0.0.1:"), std::string::npos) << c.lastError();
}

TEST(Unreachable, ConnectionThatSucceedsIsNot) {
  FakeServer server(answerAll(ErrorCode::NONE));
  Connection c;
  // A failed connect first: its flag must not outlive the next, successful one.
  EXPECT_FALSE(c.connect("127.0.0.1", groupcoord::testing::closedLoopbackPort(), 2000ms));
  ASSERT_TRUE(c.connect("127.0.0.1", server.port(), designBound(kFakeAnswers))) << c.lastError();
  EXPECT_FALSE(c.unreachable());
}

TEST(Unreachable, RefusedAuthenticateIsNot) {
  FakeServer server(answerAll(ErrorCode::NOT_AUTHORIZED));
  Connection c;
  SecurityOptions security;
  security.user = "ops";
  security.secret = "wrong";
  c.setSecurity(security);
  EXPECT_FALSE(c.connect("127.0.0.1", server.port(), designBound(kFakeAnswers)));
  EXPECT_TRUE(c.authRefused()) << c.lastError();
  EXPECT_FALSE(c.unreachable());
}

TEST(Unreachable, AdminWithNoServerListening) {
  const uint16_t port = groupcoord::testing::closedLoopbackPort();
  Admin admin({{"127.0.0.1", port}}, quickAdmin());
  auto r = admin.listGroups();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status.unreachable()) << r.status.toString();
  EXPECT_EQ(r.status.code, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  // The message is what it always was.
  EXPECT_EQ(r.status.message.rfind("cannot connect to 127.0.0.1:" + std::to_string(port) + ": ", 0), 0u)
      << r.status.message;
}

TEST(Unreachable, AdminProtocolErrorIsNot) {
  FakeServer server(answerAll(ErrorCode::UNKNOWN_GROUP));
  Admin admin({{"127.0.0.1", server.port()}}, quickAdmin());
  auto r = admin.fetchOffsets("orders");
  EXPECT_EQ(r.status.code, ErrorCode::UNKNOWN_GROUP) << r.status.toString();
  EXPECT_FALSE(r.status.unreachable());
}

TEST(Unreachable, AdminControllerNotAvailableAnswerIsNot) {
  // The same code as an unreachable server, but answered by one.
  FakeServer server(answerAll(ErrorCode::CONTROLLER_NOT_AVAILABLE));
  Admin admin({{"127.0.0.1", server.port()}}, quickAdmin());
  auto r = admin.fetchOffsets("orders");
  EXPECT_EQ(r.status.code, ErrorCode::CONTROLLER_NOT_AVAILABLE) << r.status.toString();
  EXPECT_FALSE(r.status.unreachable());
}

TEST(Unreachable, AdminUntrustworthyFrameIsNot) {
  // A response frame of Size 2, below any response header.
  FakeServer server([](const protocol::DecodedRequest&) { return std::vector<uint8_t>{0, 0, 0, 2, 0, 0}; });
  Admin admin({{"127.0.0.1", server.port()}}, quickAdmin());
  auto r = admin.listGroups();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status.code, ErrorCode::CONTROLLER_NOT_AVAILABLE) << r.status.toString();
  EXPECT_FALSE(r.status.unreachable()) << r.status.toString();
}

TEST(Unreachable, AdminRefusedAuthenticateIsNot) {
  FakeServer server(answerAll(ErrorCode::NOT_AUTHORIZED));
  AdminOptions options = quickAdmin();
  options.security.user = "ops";
  options.security.secret = "wrong";
  Admin admin({{"127.0.0.1", server.port()}}, options);
  auto r = admin.listGroups();
  EXPECT_EQ(r.status.code, ErrorCode::NOT_AUTHORIZED) << r.status.toString();
  EXPECT_FALSE(r.status.unreachable());
}

TEST(Unreachable, ConsumerWithNoServerListening) {
  ConsumerConfig config;
  config.bootstrap = {{"127.0.0.1", groupcoord::testing::closedLoopbackPort()}};
  config.group = "orders";
  config.requestTimeout = 1000ms;
  Consumer consumer(config, {});
  const Status s = consumer.poll(100ms);
  EXPECT_EQ(s.code, ErrorCode::CONTROLLER_NOT_AVAILABLE) << s.toString();
  EXPECT_TRUE(s.unreachable()) << s.toString();
}

}  // namespace
}  // namespace groupcoord::client
