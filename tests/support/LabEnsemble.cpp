#include "support/LabEnsemble.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace groupcoord::testing {

namespace {

constexpr uint16_t kClientPort = 2181;

std::string tail(const std::string& path, size_t n) {
  std::ifstream in(path);
  std::vector<std::string> all;
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > n ? all.size() - n : 0; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

}  // namespace

std::string fourLetterWord(const std::string& host, uint16_t port, const std::string& word,
                           std::chrono::milliseconds wait) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    return "";
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  auto left = [&] {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    return static_cast<int>(ms < 0 ? 0 : ms);
  };
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return "";
  }
  pollfd p{fd, POLLOUT, 0};
  if (::poll(&p, 1, left()) != 1 || (p.revents & (POLLERR | POLLHUP))) {
    ::close(fd);
    return "";
  }
  if (::send(fd, word.data(), word.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(word.size())) {
    ::close(fd);
    return "";
  }
  char buf[4096];
  for (;;) {
    p = {fd, POLLIN, 0};
    if (::poll(&p, 1, left()) != 1) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return answer;
}

LabEnsemble::LabEnsemble(NetLab& lab, std::vector<int> where, int tickMs)
    : lab_(lab), where_(std::move(where)), tickMs_(tickMs), pids_(where_.size(), -1) {
  char tmpl[] = "/tmp/groupcoord-labzk-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  dir_ = d ? d : "";
  for (size_t i = 0; i < where_.size() && !dir_.empty(); ++i) {
    const std::string nd = dir_ + "/node" + std::to_string(i + 1);
    std::filesystem::create_directories(nd + "/data");
    std::ofstream(nd + "/data/myid") << i + 1 << "\n";
    std::ofstream cfg(nd + "/zoo.cfg");
    cfg << "tickTime=" << tickMs_ << "\ninitLimit=10\nsyncLimit=" << kSyncLimitTicks << "\ndataDir=" << nd << "/data\n"
        << "clientPort=" << kClientPort << "\nclientPortAddress=" << lab_.address(where_[i]) << "\n"
        << "maxClientCnxns=0\n4lw.commands.whitelist=*\nadmin.enableServer=false\nstandaloneEnabled=false\n"
        << "reconfigEnabled=false\nautopurge.purgeInterval=0\n"
        // Each node binds its quorum ports on its own address only.
        << "quorumListenOnAllIPs=false\n";
    for (size_t j = 0; j < where_.size(); ++j)
      cfg << "server." << j + 1 << "=" << lab_.address(where_[j]) << ":2888:3888\n";
    std::ofstream log4j(nd + "/log4j.properties");
    log4j << "log4j.rootLogger=INFO, FILE\nlog4j.appender.FILE=org.apache.log4j.FileAppender\n"
          << "log4j.appender.FILE.File=" << nd << "/zookeeper.log\n"
          << "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
          << "log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] %-5p [%t] %c{1}@%L - %m%n\n";
  }
}

LabEnsemble::~LabEnsemble() {
  for (size_t i = 0; i < pids_.size(); ++i) killNode(static_cast<int>(i));
  if (!dir_.empty() && std::getenv("GROUPCOORD_KEEP_LAB_LOGS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

bool LabEnsemble::startNode(int i) {
  if (dir_.empty()) return false;
  if (running(i)) return true;
  const std::string nd = dir_ + "/node" + std::to_string(i + 1);
  const std::string netnsPath = lab_.netnsPath(where_.at(static_cast<size_t>(i)));
  const std::string log4j = "-Dlog4j.configuration=file:" + nd + "/log4j.properties";
  const std::string cfg = nd + "/zoo.cfg";
  const std::string out = nd + "/stdout.log";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    ::setsid();
    // Gone with the test, even when it is killed: nothing else would stop a
    // JVM left in a namespace nobody can name any more.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
    int ns = ::open(netnsPath.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) {
      std::fprintf(stderr, "lab ensemble: cannot enter %s: %s\n", netnsPath.c_str(), std::strerror(errno));
      ::_exit(126);
    }
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    const char* argv[] = {"java",
                          "-Xmx256m",
                          "-XX:+UseSerialGC",
                          "-XX:TieredStopAtLevel=1",
                          log4j.c_str(),
                          "-Dzookeeper.jmx.log4j.disable=true",
                          "-cp",
                          "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar",
                          "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                          cfg.c_str(),
                          nullptr};
    ::execvp("java", const_cast<char* const*>(argv));
    std::fprintf(stderr, "lab ensemble: cannot run java: %s\n", std::strerror(errno));
    ::_exit(127);
  }
  pids_.at(static_cast<size_t>(i)) = pid;
  return true;
}

bool LabEnsemble::running(int i) {
  pid_t& pid = pids_.at(static_cast<size_t>(i));
  if (pid <= 0) return false;
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid) {
    pid = -1;
    return false;
  }
  return true;
}

void LabEnsemble::killNode(int i) {
  pid_t& pid = pids_.at(static_cast<size_t>(i));
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  pid = -1;
}

bool LabEnsemble::start(std::chrono::milliseconds wait, std::string* why) {
  if (dir_.empty()) {
    if (why) *why = "cannot make a folder for the lab ensemble";
    return false;
  }
  for (size_t i = 0; i < where_.size(); ++i) {
    if (!startNode(static_cast<int>(i))) {
      if (why) *why = "cannot start ZooKeeper node " + std::to_string(i + 1);
      return false;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::string modes;
  while (std::chrono::steady_clock::now() < deadline) {
    int leaders = 0, followers = 0;
    modes.clear();
    for (size_t i = 0; i < where_.size(); ++i) {
      const std::string m = mode(static_cast<int>(i));
      modes += " zk" + std::to_string(i + 1) + "=" + m;
      leaders += m == "leader";
      followers += m == "follower";
      if (!running(static_cast<int>(i))) {
        if (why) *why = "ZooKeeper node " + std::to_string(i + 1) + " exited; its log ends:\n" + logTail(static_cast<int>(i));
        return false;
      }
    }
    if (leaders == 1 && followers + 1 == static_cast<int>(where_.size())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (why) {
    *why = "the lab ensemble did not form within " + std::to_string(wait.count()) + " ms:" + modes;
    for (size_t i = 0; i < where_.size(); ++i) *why += "\nzk" + std::to_string(i + 1) + ":\n" + logTail(static_cast<int>(i), 8);
  }
  return false;
}

std::string LabEnsemble::connectString() const {
  std::string s;
  for (int n : where_) s += (s.empty() ? "" : ",") + lab_.address(n) + ":" + std::to_string(kClientPort);
  return s;
}

std::string LabEnsemble::mode(int i) const {
  const std::string answer = fourLetterWord(lab_.address(where_.at(static_cast<size_t>(i))), kClientPort, "srvr");
  auto at = answer.find("Mode: ");
  if (at == std::string::npos) return "none";
  auto end = answer.find_first_of("\r\n", at);
  return answer.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
}

int LabEnsemble::leader() const {
  for (size_t i = 0; i < where_.size(); ++i)
    if (mode(static_cast<int>(i)) == "leader") return static_cast<int>(i);
  return -1;
}

std::string LabEnsemble::logTail(int i, size_t lines) const {
  const std::string nd = dir_ + "/node" + std::to_string(i + 1);
  return tail(nd + "/zookeeper.log", lines) + tail(nd + "/stdout.log", 5);
}

}  // namespace groupcoord::testing
