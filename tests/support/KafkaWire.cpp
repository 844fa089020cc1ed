#include "support/KafkaWire.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace groupcoord::testing {

namespace k = protocol::kafka;
using Clock = std::chrono::steady_clock;

KafkaWire::KafkaWire(uint16_t port, std::string clientId) : clientId_(std::move(clientId)) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

KafkaWire::~KafkaWire() {
  if (fd_ >= 0) ::close(fd_);
}

bool KafkaWire::sendBytes(const std::vector<uint8_t>& bytes) {
  if (fd_ < 0) return false;
  size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

bool KafkaWire::sendBare(const std::string& token) {
  std::vector<uint8_t> out;
  const uint32_t n = static_cast<uint32_t>(token.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(n >> shift));
  out.insert(out.end(), token.begin(), token.end());
  return sendBytes(out);
}

bool KafkaWire::send(const k::Request& request, int16_t version) {
  k::RequestHeader h;
  h.apiKey = static_cast<int16_t>(std::visit([](const auto& r) { return r.kApiKey; }, request));
  h.apiVersion = version;
  h.correlationId = ++correlationId_;
  h.clientId = clientId_;
  std::vector<uint8_t> out;
  k::encodeRequest(h, request, out);
  return sendBytes(out);
}

std::optional<std::vector<uint8_t>> KafkaWire::readFrame(std::chrono::milliseconds wait) {
  std::vector<uint8_t> size;
  if (!readExactly(4, wait, &size)) return std::nullopt;
  const uint32_t n = (uint32_t{size[0]} << 24) | (uint32_t{size[1]} << 16) | (uint32_t{size[2]} << 8) | size[3];
  std::vector<uint8_t> body;
  if (!readExactly(n, wait, &body)) return std::nullopt;
  return body;
}

bool KafkaWire::closedByServer(std::chrono::milliseconds wait) {
  const auto end = Clock::now() + wait;
  uint8_t buf[512];
  while (Clock::now() < end) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
  return false;
}

bool KafkaWire::readExactly(size_t n, std::chrono::milliseconds wait, std::vector<uint8_t>* out) {
  if (fd_ < 0) return false;
  const auto end = Clock::now() + wait;
  out->resize(n);
  size_t at = 0;
  while (at < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t got = ::recv(fd_, out->data() + at, n - at, 0);
    if (got <= 0) return false;
    at += static_cast<size_t>(got);
  }
  return true;
}

}  // namespace groupcoord::testing
