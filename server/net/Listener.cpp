#include "server/net/Listener.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace groupcoord::server::net {

namespace {
std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }
}  // namespace

bool listenOn(const std::string& address, uint16_t port, UniqueFd* out, uint16_t* bound, std::string* error,
              std::chrono::seconds deferAccept) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    *error = std::string("cannot resolve '") + address + "': " + ::gai_strerror(rc);
    return false;
  }
  std::string lastError = "no address";
  UniqueFd listening;
  for (addrinfo* ai = found; ai != nullptr && !listening.valid(); ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      lastError = errnoText("socket");
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      lastError = errnoText("bind");
      continue;
    }
    if (deferAccept.count() > 0) {
      const int seconds = static_cast<int>(deferAccept.count());
      if (::setsockopt(fd.get(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof(seconds)) != 0) {
        lastError = errnoText("setsockopt(TCP_DEFER_ACCEPT)");
        continue;
      }
    }
    if (::listen(fd.get(), SOMAXCONN) != 0) {
      lastError = errnoText("listen");
      continue;
    }
    listening = std::move(fd);
  }
  ::freeaddrinfo(found);
  if (!listening.valid()) {
    *error = lastError;
    return false;
  }
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  ::getsockname(listening.get(), reinterpret_cast<sockaddr*>(&local), &len);
  *bound = local.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  *out = std::move(listening);
  return true;
}

std::string addressText(const sockaddr_storage& sa) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (sa.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&sa)->sin_addr, text, sizeof(text));
  } else if (sa.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&sa)->sin6_addr, text, sizeof(text));
  }
  return text;
}

void acceptAll(int listenFd, const AcceptLimits& limits, AcceptPolicy& policy) {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    UniqueFd fd(::accept4(listenFd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (err == EINTR || err == ECONNABORTED) continue;
      if (policy.acceptFailed(listenFd, err)) continue;
      return;
    }
    const std::string source = addressText(peer);
    bool room = true;
    if (limits.maxPerSource && policy.openFrom(source) >= *limits.maxPerSource) room = policy.makeRoom(source, true);
    if (room && policy.openConnections() >= limits.maxConnections) room = policy.makeRoom(source, false);
    if (!room) {
      policy.refused(source);
      continue;  // `fd` closes here
    }
    const int one = 1;
    // Answers are small and latency matters more than packet count.
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    policy.admitted(std::move(fd), source);
  }
}

}  // namespace groupcoord::server::net
