// groupcoord-echo: the baseline of the heartbeat throughput benchmark. The
// smallest server that speaks groupcoord's framing: it reads size-prefixed
// frames and answers each one with the same pre-encoded Heartbeat response,
// doing no decoding and no work. Each I/O thread has its own epoll set and
// its own SO_REUSEPORT listener on the port.
//
//   groupcoord-echo --port-file PATH [--port N] [--threads N]

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "protocol/Codec.h"

namespace {

using namespace groupcoord;

struct Client {
  std::vector<uint8_t> in;
  std::vector<uint8_t> out;
  size_t outOff = 0;
};

int listenOn(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 4096) != 0) {
    std::fprintf(stderr, "groupcoord-echo: cannot listen on 127.0.0.1:%u: %s\n", port, std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

uint16_t boundPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

void closeClient(int ep, int fd, std::unordered_map<int, Client>& clients) {
  ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  clients.erase(fd);
}

void serve(int listener, const std::vector<uint8_t>& reply) {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listener;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
  std::unordered_map<int, Client> clients;
  epoll_event events[256];
  uint8_t buf[64 * 1024];
  for (;;) {
    int n = ::epoll_wait(ep, events, 256, -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listener) {
        for (;;) {
          int c = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) break;
          int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          epoll_event cev{};
          cev.events = EPOLLIN;
          cev.data.fd = c;
          ::epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
          clients.emplace(c, Client{});
        }
        continue;
      }
      auto it = clients.find(fd);
      if (it == clients.end()) continue;
      Client& cl = it->second;
      bool closed = false;
      if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        for (;;) {
          ssize_t r = ::recv(fd, buf, sizeof buf, 0);
          if (r > 0) {
            cl.in.insert(cl.in.end(), buf, buf + r);
            if (static_cast<size_t>(r) < sizeof buf) break;
            continue;
          }
          if (r < 0 && (errno == EAGAIN || errno == EINTR)) break;
          closed = true;
          break;
        }
        size_t off = 0;
        while (!closed) {
          int32_t size = 0;
          auto st = protocol::peekFrame(std::span<const uint8_t>(cl.in.data() + off, cl.in.size() - off),
                                        protocol::kDefaultMaxFrameBytes, protocol::kMinRequestBody, &size);
          if (st == protocol::FrameStatus::NeedMore) break;
          if (st != protocol::FrameStatus::Ready) {
            closed = true;
            break;
          }
          off += 4 + static_cast<size_t>(size);
          cl.out.insert(cl.out.end(), reply.begin(), reply.end());
        }
        if (off > 0 && !closed) cl.in.erase(cl.in.begin(), cl.in.begin() + static_cast<std::ptrdiff_t>(off));
      }
      if (!closed && cl.outOff < cl.out.size()) {
        ssize_t w = ::send(fd, cl.out.data() + cl.outOff, cl.out.size() - cl.outOff, MSG_NOSIGNAL);
        if (w > 0) cl.outOff += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) closed = true;
        if (cl.outOff == cl.out.size()) {
          cl.out.clear();
          cl.outOff = 0;
        }
        epoll_event cev{};
        cev.events = EPOLLIN | (cl.out.empty() ? 0u : EPOLLOUT);
        cev.data.fd = fd;
        ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &cev);
      }
      if (closed) closeClient(ep, fd, clients);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string portFile;
  uint16_t port = 0;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> std::string {
      std::string prefix = std::string(name) + "=";
      if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
      if (a == name && i + 1 < argc) return argv[++i];
      return {};
    };
    if (a == "--help" || a == "-h") {
      std::printf(
          "groupcoord-echo: answers every frame with a fixed Heartbeat response (benchmark baseline)\n"
          "  --port N        port on 127.0.0.1 (default 0: any free port)\n"
          "  --port-file P   write the bound port to P\n"
          "  --threads N     I/O threads (default: one per core, like groupcoordd)\n");
      return 0;
    } else if (a.rfind("--port-file", 0) == 0) {
      portFile = value("--port-file");
    } else if (a.rfind("--port", 0) == 0) {
      port = static_cast<uint16_t>(std::atoi(value("--port").c_str()));
    } else if (a.rfind("--threads", 0) == 0) {
      threads = static_cast<unsigned>(std::max(1, std::atoi(value("--threads").c_str())));
    } else {
      std::fprintf(stderr, "groupcoord-echo: unknown argument '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  ::signal(SIGPIPE, SIG_IGN);

  std::vector<uint8_t> reply;
  protocol::encodeResponse(protocol::ResponseHeader{}, protocol::HeartbeatResponse{1, protocol::ErrorCode::NONE},
                           reply);

  std::vector<int> listeners;
  listeners.push_back(listenOn(port));
  port = boundPort(listeners[0]);
  for (unsigned t = 1; t < threads; ++t) listeners.push_back(listenOn(port));
  if (!portFile.empty()) {
    std::ofstream(portFile + ".tmp") << port << '\n';
    std::rename((portFile + ".tmp").c_str(), portFile.c_str());
  }
  std::fprintf(stderr, "groupcoord-echo listening on 127.0.0.1:%u with %u threads\n", port, threads);
  std::vector<std::thread> workers;
  for (int fd : listeners) workers.emplace_back(serve, fd, std::cref(reply));
  for (auto& w : workers) w.join();
  return 0;
}
