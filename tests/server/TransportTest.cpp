// server/Transport.h: how each step of the plain and the TLS transport
// reports what happened, over socket pairs (no network, no server).

#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "server/Tls.h"
#include "server/Transport.h"
#include "support/TestCertificates.h"

namespace groupcoord::server {
namespace {

struct Pair {
  UniqueFd a, b;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};

TEST(TransportTest, PlainSaysWhatToWaitForWhatMovedAndHowItEnded) {
  Pair p;
  auto t = plainTransport(p.a.get());
  EXPECT_FALSE(t->secure());
  EXPECT_EQ(t->handshake().status, IoStatus::Progress);
  char buf[64];
  EXPECT_EQ(t->read(buf, sizeof(buf)).status, IoStatus::WantRead);

  ASSERT_EQ(::write(p.b.get(), "hello", 5), 5);
  IoResult r = t->read(buf, sizeof(buf));
  EXPECT_EQ(r.status, IoStatus::Progress);
  EXPECT_EQ(std::string(buf, r.bytes), "hello");

  r = t->write("abc", 3);
  EXPECT_EQ(r.status, IoStatus::Progress);
  EXPECT_EQ(r.bytes, 3u);
  ASSERT_EQ(::read(p.b.get(), buf, sizeof(buf)), 3);

  // A full socket buffer: wait until writable.
  const std::string chunk(65536, 'x');
  size_t written = 0;
  for (int i = 0; i < 1000; ++i) {
    r = t->write(chunk.data(), chunk.size());
    if (r.status != IoStatus::Progress) break;
    written += r.bytes;
  }
  EXPECT_EQ(r.status, IoStatus::WantWrite);
  EXPECT_GT(written, 0u);

  // The peer ends in order: Eof once what it sent is read.
  ::shutdown(p.b.get(), SHUT_WR);
  EXPECT_EQ(t->read(buf, sizeof(buf)).status, IoStatus::Eof);
  // The peer gone: a write is a reset, not a failure with a reason.
  p.b.reset();
  r = t->write("x", 1);
  EXPECT_EQ(r.status, IoStatus::Reset);
}

TEST(TransportTest, PlainFailsWithTheReasonOnABadSocket) {
  Pair p;
  const int fd = p.a.release();
  ::close(fd);
  auto t = plainTransport(fd);
  char buf[8];
  EXPECT_EQ(t->read(buf, sizeof(buf)).status, IoStatus::Failed);
  EXPECT_FALSE(t->error().empty());
}

class TlsTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/groupcoord-transport-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    ASSERT_EQ(testing::makeTestCertificates(dir_), "");
    std::string error;
    context_ = TlsServerContext::create(dir_ + "/server.pem", dir_ + "/server.key", "", &error);
    ASSERT_NE(context_, nullptr) << error;
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string dir_;
  std::shared_ptr<TlsServerContext> context_;
};

TEST_F(TlsTransportTest, AHandshakeThenBytesBothWaysThenCloseNotifyIsEof) {
  Pair p;
  auto server = tlsTransport(context_->accept(p.a.get()));
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->secure());
  // A client that trusts nothing in particular (the test checks the
  // transport, not the certificate).
  SslCtxPtr clientCtx(SSL_CTX_new(TLS_client_method()));
  SslPtr client(SSL_new(clientCtx.get()));
  SSL_set_fd(client.get(), p.b.get());
  SSL_set_connect_state(client.get());

  IoResult r = server->handshake();
  EXPECT_EQ(r.status, IoStatus::WantRead);
  for (int i = 0; i < 20 && r.status != IoStatus::Progress; ++i) {
    SSL_do_handshake(client.get());
    r = server->handshake();
  }
  ASSERT_EQ(r.status, IoStatus::Progress);
  int done = 0;
  for (int i = 0; i < 20 && done != 1; ++i) done = SSL_do_handshake(client.get());
  ASSERT_EQ(done, 1);

  char buf[64];
  EXPECT_EQ(server->read(buf, sizeof(buf)).status, IoStatus::WantRead);
  ASSERT_EQ(SSL_write(client.get(), "ping", 4), 4);
  r = server->read(buf, sizeof(buf));
  ASSERT_EQ(r.status, IoStatus::Progress);
  EXPECT_EQ(std::string(buf, r.bytes), "ping");
  r = server->write("pong", 4);
  EXPECT_EQ(r.status, IoStatus::Progress);
  int n = -1;
  for (int i = 0; i < 20 && n <= 0; ++i) n = SSL_read(client.get(), buf, sizeof(buf));
  ASSERT_EQ(n, 4);
  EXPECT_EQ(std::string(buf, 4), "pong");

  SSL_shutdown(client.get());
  EXPECT_EQ(server->read(buf, sizeof(buf)).status, IoStatus::Eof);
}

TEST_F(TlsTransportTest, PlainBytesFailTheHandshakeWithAReason) {
  Pair p;
  auto server = tlsTransport(context_->accept(p.a.get()));
  ASSERT_NE(server, nullptr);
  const std::string notTls = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::write(p.b.get(), notTls.data(), notTls.size()), static_cast<ssize_t>(notTls.size()));
  const IoResult r = server->handshake();
  EXPECT_EQ(r.status, IoStatus::Failed);
  EXPECT_FALSE(server->error().empty());
}

TEST_F(TlsTransportTest, APeerThatClosesBeforeTheHandshakeEndsIt) {
  Pair p;
  auto server = tlsTransport(context_->accept(p.a.get()));
  ASSERT_NE(server, nullptr);
  p.b.reset();  // FIN before any TLS record: an orderly end, nothing to wait for
  const IoResult r = server->handshake();
  EXPECT_EQ(r.status, IoStatus::Eof);
}

}  // namespace
}  // namespace groupcoord::server
