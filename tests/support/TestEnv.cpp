#include "support/TestEnv.h"

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "support/Timing.h"

namespace groupcoord::testing {

namespace {
std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

// Whether a node of the ensemble accepts connections on its client port: it
// runs, however slowly it answers. Only a refused connection says no.
bool anyNodeListens() {
  for (int n = 1; n <= 3; ++n) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return true;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(zkBasePort() + n));
    bool refused = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      if (errno == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        int err = 0;
        socklen_t len = sizeof err;
        if (::poll(&p, 1, 1000) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0)
          refused = err == ECONNREFUSED;
      } else {
        refused = errno == ECONNREFUSED;
      }
    }
    ::close(fd);
    if (!refused) return true;
  }
  return false;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

int zkBasePort() { return std::stoi(envOr("GROUPCOORD_ZK_BASE_PORT", "21800")); }

std::string zkConnect() {
  int b = zkBasePort();
  return envOr("GROUPCOORD_TEST_ZK", "127.0.0.1:" + std::to_string(b + 1) + ",127.0.0.1:" +
                                         std::to_string(b + 2) + ",127.0.0.1:" + std::to_string(b + 3));
}

std::string sourceDir() { return GROUPCOORD_SOURCE_DIR; }

std::string lastLines(const std::string& text, size_t lines) {
  size_t pos = text.size();
  for (size_t i = 0; i < lines && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos);
}

std::string binaryPath(const std::string& relative) {
  return std::string(GROUPCOORD_BINARY_DIR) + "/" + relative;
}

int ensemble(const std::string& args, std::string* out) {
  std::string cmd = "bash '" + sourceDir() + "/scripts/zk-ensemble.sh' --base-port " +
                    std::to_string(zkBasePort()) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  std::string text;
  std::array<char, 512> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) text.append(buf.data(), n);
  int status = ::pclose(p);
  if (out) *out = trim(text);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int ensembleLeader() {
  std::string out;
  if (ensemble("leader", &out) != 0) return -1;
  try {
    return std::stoi(out);
  } catch (...) {
    return -1;
  }
}

int awaitEnsembleLeader() {
  long long tickMs = std::strtoll(envOr("GROUPCOORD_ZK_TICK_MS", "500").c_str(), nullptr, 10);
  if (tickMs <= 0) tickMs = 500;
  const std::chrono::milliseconds electionAndSync(10 * tickMs);  // initLimit=10 ticks
  int leader = -1;
  eventuallyWithin(
      designBound(electionAndSync), [&] { return (leader = ensembleLeader()) > 0 || !anyNodeListens(); },
      std::chrono::milliseconds(200));
  return leader;
}

bool ensembleServing() { return awaitEnsembleLeader() > 0; }

void requireEnsemble() {
  ASSERT_TRUE(ensembleServing())
      << "no ZooKeeper ensemble serves at " << zkConnect()
      << "; start one with scripts/zk-ensemble.sh start, or run the tests with scripts/dev.sh test";
}

std::string uniqueName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(now % 1000000007) + "-" +
         std::to_string(counter++);
}

uint16_t closedLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

long rssKiB(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

void raiseOpenFileLimit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  const int n = v ? std::atoi(v) : 0;
  return n > 0 ? n : fallback;
}

}  // namespace groupcoord::testing
