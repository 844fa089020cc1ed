#pragma once

// A minimal HTTP/1.1 client over a plain socket, for scraping groupcoordd's
// /metrics and /health endpoints in tests, and a parser of the Prometheus
// text format that keys each sample by its full series text.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "metrics/Registry.h"
#include "support/Timing.h"

namespace groupcoord::servertest {

// The longest groupcoordd's HTTP port takes to answer a whole request by
// design: a status page may wait for another server, 3 s in all
// (docs/design.md, "The HTTP side"); health and /metrics answer at once.
inline constexpr std::chrono::milliseconds kHttpAnswerBound{3000};

struct HttpReply {
  int status = 0;  // 0: no answer (connection failed, closed, or timed out)
  std::string headers;
  std::string body;
};

// Sends `raw` as it is to 127.0.0.1:port and reads until the server closes
// or `timeout` passes (by default the design's bound for an answer, plus the
// scheduling allowance).
inline HttpReply httpRaw(uint16_t port, const std::string& raw,
                         std::chrono::milliseconds timeout = groupcoord::testing::designBound(kHttpAnswerBound)) {
  HttpReply reply;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return reply;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return reply;
  }
  size_t sent = 0;
  while (sent < raw.size()) {
    const ssize_t n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer and close before reading it all
    sent += static_cast<size_t>(n);
  }
  std::string in;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[8192];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t headerEnd = in.find("\r\n\r\n");
  if (in.rfind("HTTP/1.", 0) != 0 || headerEnd == std::string::npos) return reply;
  reply.status = std::atoi(in.substr(9, 3).c_str());
  reply.headers = in.substr(0, headerEnd);
  reply.body = in.substr(headerEnd + 4);
  return reply;
}

inline HttpReply httpRequest(uint16_t port, const std::string& method, const std::string& path) {
  return httpRaw(port, method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

inline HttpReply httpGet(uint16_t port, const std::string& path) { return httpRequest(port, "GET", path); }

// Sample lines of a scrape: "name{labels}" -> value.
using metrics::parseSamples;

// The value of `series` in a scrape, or nullopt when it is not there.
inline std::optional<double> sample(const std::map<std::string, double>& samples, const std::string& series) {
  const auto it = samples.find(series);
  if (it == samples.end()) return std::nullopt;
  return it->second;
}

// A port a process wrote to `path`, waiting up to `wait` for it (by default
// the scheduling allowance: a server writes its port file as it starts).
inline uint16_t readPortFile(const std::string& path,
                             std::chrono::milliseconds wait = groupcoord::testing::schedulingAllowance()) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    int port = 0;
    if (in >> port && port > 0 && port < 65536) return static_cast<uint16_t>(port);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

}  // namespace groupcoord::servertest
