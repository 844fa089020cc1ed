#include "bench/Ensemble.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "metrics/Registry.h"

namespace groupcoord::bench {

std::string fourLetter(uint16_t port, const std::string& word) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, word.data(), word.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(word.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string EnsembleProbe::connectString() const {
  std::string s;
  for (int n = 1; n <= 3; ++n) {
    if (!s.empty()) s += ",";
    s += "127.0.0.1:" + std::to_string(basePort + n);
  }
  return s;
}

std::map<std::string, std::string> EnsembleProbe::mntr(int node) const {
  std::map<std::string, std::string> out;
  std::istringstream in(fourLetter(static_cast<uint16_t>(basePort + node), "mntr"));
  std::string line;
  while (std::getline(in, line)) {
    auto tab = line.find('\t');
    if (tab != std::string::npos) out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return out;
}

double EnsembleProbe::sum(const std::string& key) const {
  double total = 0;
  for (int n = 1; n <= 3; ++n) {
    auto m = mntr(n);
    auto it = m.find(key);
    if (it != m.end()) total += std::strtod(it->second.c_str(), nullptr);
  }
  return total;
}

double EnsembleProbe::clientConnections() const {
  double total = 0;
  for (int n = 1; n <= 3; ++n) {
    auto m = mntr(n);
    auto it = m.find("zk_num_alive_connections");
    if (it != m.end()) total += std::strtod(it->second.c_str(), nullptr) - 1;
  }
  return total;
}

int64_t EnsembleProbe::zxid() const {
  int64_t best = -1;
  for (int n = 1; n <= 3; ++n) {
    std::istringstream in(fourLetter(static_cast<uint16_t>(basePort + n), "srvr"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("Zxid: ", 0) == 0) best = std::max<int64_t>(best, std::stoll(line.substr(6), nullptr, 16));
    }
  }
  return best;
}

std::vector<int> EnsembleProbe::pids() const {
  std::vector<int> out;
  for (int n = 1; n <= 3; ++n) {
    std::ifstream f("/tmp/groupcoord-zk-" + std::to_string(basePort) + "/node" + std::to_string(n) + "/pid");
    int pid = 0;
    if (f >> pid && pid > 0) out.push_back(pid);
  }
  return out;
}

double EnsembleProbe::cpuSeconds() const {
  double total = 0;
  for (int pid : pids()) {
    double s = bench::cpuSeconds(pid);
    if (s > 0) total += s;
  }
  return total;
}

int64_t rssKiB(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

double cpuSeconds(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return -1;
  // Fields after the command name (which may contain spaces) start at ')'.
  auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::map<std::string, double> scrapeMetrics(uint16_t httpPort) {
  // fourLetter() writes a request and reads until the peer closes: enough
  // for one HTTP/1.1 request with "Connection: close".
  const std::string reply =
      fourLetter(httpPort, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  const size_t body = reply.find("\r\n\r\n");
  if (reply.rfind("HTTP/1.1 200", 0) != 0 || body == std::string::npos) return {};
  return metrics::parseSamples(std::string_view(reply).substr(body + 4));
}

}  // namespace groupcoord::bench
