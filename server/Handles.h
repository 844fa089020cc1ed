#pragma once

// Owning handles for the server's file descriptors and OpenSSL objects.
//
// Contract: each handle owns at most one resource and releases it exactly
// once, when it is destroyed, reset() or assigned over. They are move-only;
// a moved-from handle is empty. No code in server/ calls ::close(), SSL_free()
// or SSL_CTX_free() on something a handle owns; where the order of closing
// matters (IoLoop::close: SSL object, then socket), the code says so with
// explicit reset() calls. release() hands the resource back unclosed.
// Errors of close() are ignored (on Linux the descriptor is gone either way).

#include <unistd.h>

#include <memory>
#include <utility>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace groupcoord::server {

// One file descriptor, or none (-1).
class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  // Takes ownership of `fd` (a negative value: none).
  explicit UniqueFd(int fd) noexcept : fd_(fd < 0 ? -1 : fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }

  // Gives up ownership without closing; the handle is empty afterwards.
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
  // Closes what is owned (if anything), then owns `fd`. errno is left alone
  // when nothing was owned, so `h.reset(::socket(...))` may report errno.
  void reset(int fd = -1) noexcept {
    const int old = std::exchange(fd_, fd < 0 ? -1 : fd);
    if (old >= 0 && old != fd_) ::close(old);
  }

 private:
  int fd_ = -1;
};

// SSL_free / SSL_CTX_free (defined in Tls.cpp, so this header needs no
// OpenSSL headers).
struct SslFree {
  void operator()(SSL* ssl) const noexcept;
};
struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const noexcept;
};

// One SSL object; freeing it leaves its socket open (SSL_set_fd does not
// hand the descriptor over), so a connection holds a UniqueFd beside it.
using SslPtr = std::unique_ptr<SSL, SslFree>;
// One SSL_CTX.
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

}  // namespace groupcoord::server
