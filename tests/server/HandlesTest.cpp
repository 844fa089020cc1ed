// The owning handles of server/Handles.h: UniqueFd closes exactly what it
// owns, once (on destruction, reset() or assignment over it), hands it back
// with release(), and moves ownership; freeing an SslPtr leaves its socket open.

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include "server/Handles.h"

namespace groupcoord::server {
namespace {

bool isOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// A pipe whose ends are plain ints; the test decides who owns them.
struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read = fds[0];
    write = fds[1];
  }
};

TEST(UniqueFd, EmptyByDefaultAndForNegativeValues) {
  UniqueFd none;
  EXPECT_FALSE(none.valid());
  EXPECT_FALSE(static_cast<bool>(none));
  EXPECT_EQ(none.get(), -1);
  UniqueFd failed(-7);  // e.g. the result of a failed ::socket()
  EXPECT_EQ(failed.get(), -1);
}

TEST(UniqueFd, ClosesOnDestruction) {
  Pipe p;
  {
    UniqueFd r(p.read);
    EXPECT_TRUE(r.valid());
    EXPECT_EQ(r.get(), p.read);
    EXPECT_TRUE(isOpen(p.read));
  }
  EXPECT_FALSE(isOpen(p.read));
  UniqueFd w(p.write);
}

TEST(UniqueFd, ReleaseGivesUpOwnershipWithoutClosing) {
  Pipe p;
  UniqueFd w(p.write);
  int raw = -1;
  {
    UniqueFd r(p.read);
    raw = r.release();
    EXPECT_FALSE(r.valid());
    EXPECT_EQ(r.get(), -1);
  }
  EXPECT_EQ(raw, p.read);
  EXPECT_TRUE(isOpen(raw));
  EXPECT_EQ(::close(raw), 0);
}

TEST(UniqueFd, ResetClosesTheOldAndOwnsTheNew) {
  Pipe p;
  UniqueFd h(p.read);
  h.reset(p.write);
  EXPECT_FALSE(isOpen(p.read));
  EXPECT_TRUE(isOpen(p.write));
  EXPECT_EQ(h.get(), p.write);
  h.reset(p.write);  // the same descriptor again: kept, not closed
  EXPECT_TRUE(isOpen(p.write));
  h.reset();
  EXPECT_FALSE(h.valid());
  EXPECT_FALSE(isOpen(p.write));
}

TEST(UniqueFd, ResetOfAnEmptyHandleLeavesErrnoAlone) {
  UniqueFd h;
  errno = EMFILE;
  h.reset(::open("/nonexistent/dir/file", O_RDONLY | O_CLOEXEC));
  EXPECT_FALSE(h.valid());
  EXPECT_EQ(errno, ENOENT);
}

TEST(UniqueFd, MoveTransfersOwnership) {
  Pipe p;
  UniqueFd a(p.read);
  UniqueFd b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(b.get(), p.read);
  EXPECT_TRUE(isOpen(p.read));

  UniqueFd c(p.write);
  c = std::move(b);  // closes what c owned, takes b's
  EXPECT_FALSE(isOpen(p.write));
  EXPECT_TRUE(isOpen(p.read));
  EXPECT_EQ(c.get(), p.read);
  EXPECT_FALSE(b.valid());  // NOLINT(bugprone-use-after-move)

  auto& self = c;
  c = std::move(self);  // self-move keeps it
  EXPECT_EQ(c.get(), p.read);
  EXPECT_TRUE(isOpen(p.read));
}

TEST(UniqueFd, ClosesEachDescriptorOnce) {
  Pipe p;
  {
    UniqueFd a(p.read);
    UniqueFd b(std::move(a));
    UniqueFd c;
    c = std::move(b);
  }
  EXPECT_FALSE(isOpen(p.read));
  // A descriptor opened now may reuse the number; nothing may close it.
  const int again = ::dup(p.write);
  ASSERT_GE(again, 0);
  EXPECT_TRUE(isOpen(again));
  EXPECT_EQ(::close(again), 0);
  EXPECT_EQ(::close(p.write), 0);
}

TEST(SslPtr, FreesTheSslObjectButNotItsSocket) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  UniqueFd mine(fds[0]);
  UniqueFd peer(fds[1]);
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  ASSERT_NE(ctx, nullptr);
  SslPtr ssl(SSL_new(ctx.get()));
  ASSERT_NE(ssl, nullptr);
  ASSERT_EQ(SSL_set_fd(ssl.get(), mine.get()), 1);
  ssl.reset();
  EXPECT_TRUE(isOpen(mine.get()));
  ctx.reset();
  EXPECT_TRUE(isOpen(mine.get()));
}

}  // namespace
}  // namespace groupcoord::server
