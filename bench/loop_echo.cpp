// groupcoord-loop-echo: the fair control for groupcoordd's heartbeat cost.
// groupcoordd's own TCP server (server/TcpServer, server/IoLoop: the same
// framing, I/O threads, decoding, fast path and write path) in front of a
// handler that does nothing: a heartbeat is answered NONE at its own
// generation on the I/O thread, anything else with an error-only NONE.
// Beside groupcoord-echo (no IoLoop, no decoding), the two show what the
// loop costs and what groupcoordd's handler costs.
//
//   groupcoord-loop-echo --port-file PATH [--port N] [--io-threads N]
//
// Runs until SIGTERM or SIGINT.

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "protocol/Handler.h"
#include "server/TcpServer.h"

namespace {

using namespace groupcoord;

class NothingHandler final : public protocol::Handler {
 public:
  void handle(const protocol::RequestHeader&, protocol::Request request, protocol::ResponseCallback done) override {
    if (auto* hb = std::get_if<protocol::HeartbeatRequest>(&request)) {
      return done(protocol::HeartbeatResponse{hb->generation, protocol::ErrorCode::NONE});
    }
    done(protocol::errorResponse(request, protocol::ErrorCode::NONE));
  }
  bool heartbeatNow(const protocol::Caller&, protocol::ConnectionSlot&, const protocol::HeartbeatView& r,
                    protocol::HeartbeatResponse& out, std::chrono::steady_clock::time_point,
                    std::optional<GroupMotion>*) override {
    out = protocol::HeartbeatResponse{r.generation, protocol::ErrorCode::NONE};
    return true;
  }
};

std::string option(int argc, char** argv, const std::string& name, const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (prefix.compare(0, prefix.size(), argv[i], prefix.size()) == 0) return argv[i] + prefix.size();
    if (name == argv[i] + 2 && std::strncmp(argv[i], "--", 2) == 0 && i + 1 < argc) return argv[i + 1];
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("groupcoord-loop-echo --port-file PATH [--port N] [--io-threads N]\n"
                  "  groupcoordd's TCP server with a handler that does nothing: the benchmarks' fair control.\n");
      return 0;
    }
  }
  const std::string portFile = option(argc, argv, "port-file", "");
  if (portFile.empty()) {
    std::fprintf(stderr, "groupcoord-loop-echo: --port-file is required (see --help)\n");
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // the server's threads inherit the mask

  NothingHandler handler;
  server::TcpServerOptions o;
  o.listenAddress = "127.0.0.1";
  o.port = static_cast<uint16_t>(std::atoi(option(argc, argv, "port", "0").c_str()));
  o.ioThreads = std::atoi(option(argc, argv, "io-threads", "0").c_str());
  server::TcpServer srv(o, handler);
  std::string error;
  if (!srv.start(&error)) {
    std::fprintf(stderr, "groupcoord-loop-echo: %s\n", error.c_str());
    return 1;
  }
  {
    std::ofstream out(portFile + ".tmp");
    out << srv.port() << "\n";
  }
  std::rename((portFile + ".tmp").c_str(), portFile.c_str());
  int sig = 0;
  sigwait(&stop, &sig);
  srv.stop();
  return 0;
}
