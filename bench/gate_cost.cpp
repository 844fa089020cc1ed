// What the authentication gate (server/AuthGate.h) adds to a heartbeat,
// with and without a permissions file: N heartbeats of an authenticated
// connection through AuthGate::handle into a handler that answers at once,
// in runHeartbeats(), which bench/run.sh (scenario `gate`) counts with
// callgrind (--toggle-collect) for two values of N: the difference over N
// is one heartbeat's instructions, a figure noise does not move.
//
//   groupcoord-gate-cost --mode none|roles|permissions [--heartbeats N]
//                        [--groups G] [--rules R] [--path handle|now]
//
// none: the handler called directly (the control); roles: the gate with
// credentials only; permissions: the gate with R rules (half naming one
// group each, half prefixes), the connection's groups allowed by one of the
// prefixes. The connection heartbeats for G groups in turn (a client
// multiplexing G members). --path now: each heartbeat is admitted by
// AuthGate::admitsNow, as the I/O thread's fast path asks, and then handed
// to the handler directly (handle, the default: through AuthGate::handle).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <future>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include "common/Permissions.h"
#include "protocol/Codec.h"
#include "server/Auth.h"
#include "server/AuthGate.h"

namespace {

using namespace groupcoord;

class Answering final : public protocol::Handler {
 public:
  void handle(const protocol::RequestHeader&, protocol::Request request, protocol::ResponseCallback done) override {
    ++calls;
    done(protocol::errorResponse(request, protocol::ErrorCode::NONE));
  }
  uint64_t calls = 0;
};

// Not inlined: callgrind counts what runs inside it.
__attribute__((noinline)) uint64_t runHeartbeats(server::AuthGate* gate,
                                                 const std::shared_ptr<server::AuthSession>& session,
                                                 protocol::Handler& handler, const std::vector<std::string>& groups,
                                                 uint64_t n, bool now) {
  uint64_t answered = 0;
  const protocol::Caller caller{"127.0.0.1", 40000, ""};
  protocol::RequestHeader h;
  h.apiKey = protocol::ApiKey::Heartbeat;
  for (uint64_t i = 0; i < n; ++i) {
    protocol::Request r = protocol::HeartbeatRequest{groups[i % groups.size()], "member-1", 7};
    protocol::ResponseCallback done = [&answered](protocol::Response) { ++answered; };
    if (gate != nullptr && now) {
      if (gate->admitsNow(*session, protocol::ApiKey::Heartbeat, groups[i % groups.size()])) {
        handler.handleFrom(caller, h, std::move(r), std::move(done));
      }
    } else if (gate != nullptr) {
      gate->handle(session, caller, handler, h, std::move(r), std::move(done));
    } else {
      handler.handleFrom(caller, h, std::move(r), std::move(done));
    }
  }
  return answered;
}

const char* arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = arg(argc, argv, "--mode", "permissions");
  const uint64_t n = std::strtoull(arg(argc, argv, "--heartbeats", "20000"), nullptr, 10);
  const int groupCount = std::atoi(arg(argc, argv, "--groups", "10"));
  const int rules = std::atoi(arg(argc, argv, "--rules", "1000"));
  const std::string path = arg(argc, argv, "--path", "handle");
  if ((mode != "none" && mode != "roles" && mode != "permissions") || n == 0 || groupCount <= 0 || rules < 1 ||
      (path != "handle" && path != "now")) {
    std::fprintf(stderr, "usage: groupcoord-gate-cost --mode none|roles|permissions [--heartbeats N] [--groups G] "
                         "[--rules R] [--path handle|now]\n");
    return 2;
  }
  std::vector<std::string> groups;
  for (int i = 0; i < groupCount; ++i) groups.push_back("team-a.orders-" + std::to_string(i));

  Answering handler;
  std::unique_ptr<server::AuthGate> gate;
  auto session = std::make_shared<server::AuthSession>();
  if (mode != "none") {
    std::string error;
    auto store = server::CredentialStore::parse(
        server::makeCredentialLine("a-svc", server::Role::Member, "a-secret", server::kMinIterations, &error) + "\n",
        "bench", &error);
    if (!store) {
      std::fprintf(stderr, "credentials: %s\n", error.c_str());
      return 1;
    }
    gate = std::make_unique<server::AuthGate>(std::move(store));
    if (mode == "permissions") {
      std::string text;
      for (int i = 0; i < rules; ++i) {
        text += i % 2 == 0 ? "allow user:svc-" + std::to_string(i) + " join group:team-" + std::to_string(i) + ".x\n"
                           : "allow user:svc-" + std::to_string(i) + " join,commit prefix:team-" + std::to_string(i) +
                                 ".\n";
      }
      text += "allow user:a-svc join,commit,fetch prefix:team-a.\n";
      auto policy = permissions::Policy::parse(text, "bench", &error);
      if (!policy) {
        std::fprintf(stderr, "permissions: %s\n", error.c_str());
        return 1;
      }
      gate->setPermissions(std::move(policy));
    }
    std::promise<protocol::ErrorCode> authenticated;
    protocol::RequestHeader h;
    h.apiKey = protocol::ApiKey::Authenticate;
    gate->handle(session, protocol::Caller{"127.0.0.1", 40000, ""}, handler, h,
                 protocol::AuthenticateRequest{"a-svc", "a-secret", {}, {}},
                 [&authenticated](protocol::Response r) { authenticated.set_value(protocol::responseError(r)); });
    if (authenticated.get_future().get() != protocol::ErrorCode::NONE) {
      std::fprintf(stderr, "the bench user could not authenticate\n");
      return 1;
    }
    // The gate's worker ends the check after answering it; until then a
    // call would wait in the session and be answered on the worker. Go on
    // once a call is answered on this thread, before handle() returns.
    for (int i = 0; i < 10000; ++i) {
      std::promise<void> listed;
      bool now = false;
      gate->handle(session, protocol::Caller{"127.0.0.1", 40000, ""}, handler, protocol::RequestHeader{},
                   protocol::DescribeServersRequest{}, [&listed](protocol::Response) { listed.set_value(); });
      auto f = listed.get_future();
      now = f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      f.wait();
      if (now) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    handler.calls = 0;
  }
  // Warm: the connection's remembered decisions, the allocator.
  runHeartbeats(gate.get(), session, handler, groups, 1000, path == "now");
  const uint64_t answered = runHeartbeats(gate.get(), session, handler, groups, n, path == "now");
  if (answered != n || handler.calls != n + 1000) {
    std::fprintf(stderr, "%llu of %llu heartbeats answered, %llu reached the handler\n",
                 static_cast<unsigned long long>(answered), static_cast<unsigned long long>(n),
                 static_cast<unsigned long long>(handler.calls));
    return 1;
  }
  std::printf("%s: %llu heartbeats over %d groups answered\n", mode.c_str(), static_cast<unsigned long long>(n),
              groupCount);
  return 0;
}
