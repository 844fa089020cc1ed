#pragma once

// A stand-in for groupcoordd in the client's unit tests: accepts
// connections on 127.0.0.1 (one at a time) and answers every request with
// the bytes a function makes of it. No ensemble needed.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "protocol/Codec.h"

namespace groupcoord::client::testing {

// Accepts connections on 127.0.0.1 and answers every request with the bytes
// `answer` makes of it (a whole frame, Size included).
class FakeServer {
 public:
  using Answer = std::function<std::vector<uint8_t>(const protocol::DecodedRequest&)>;

  explicit FakeServer(Answer answer) : answer_(std::move(answer)) {
    listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
    EXPECT_EQ(::listen(listenFd_, 16), 0) << std::strerror(errno);
    socklen_t len = sizeof addr;
    ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    ::close(listenFd_);
  }

  uint16_t port() const { return port_; }

  // The whole frame of `response` to the request, at the request's version.
  static std::vector<uint8_t> frame(const protocol::DecodedRequest& request, const protocol::Response& response) {
    std::vector<uint8_t> out;
    protocol::encodeResponse({request.header.version, request.header.correlationId}, response, out);
    return out;
  }

 private:
  bool wait(int fd) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }

  bool readAll(int fd, uint8_t* data, size_t size) {
    size_t done = 0;
    while (done < size) {
      if (!wait(fd)) return false;
      const ssize_t n = ::recv(fd, data + done, size - done, 0);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  void serve(int fd) {
    for (;;) {
      uint8_t size[4];
      if (!readAll(fd, size, 4)) return;
      const uint32_t n = uint32_t{size[0]} << 24 | uint32_t{size[1]} << 16 | uint32_t{size[2]} << 8 | size[3];
      if (n > (1u << 20)) return;
      std::vector<uint8_t> body(n);
      if (!readAll(fd, body.data(), body.size())) return;
      const std::vector<uint8_t> out = answer_(protocol::decodeRequest(body));
      if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) return;
    }
  }

  void run() {
    while (wait(listenFd_)) {
      const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      serve(fd);  // one connection at a time is enough here
      ::close(fd);
    }
  }

  Answer answer_;
  int listenFd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace groupcoord::client::testing
