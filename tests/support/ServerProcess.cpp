#include "support/ServerProcess.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "support/TestEnv.h"

namespace groupcoord::testing {

namespace {
bool hasOption(const std::vector<std::string>& args, const std::string& name) {
  for (auto& a : args)
    if (a == name || a.rfind(name + "=", 0) == 0) return true;
  return false;
}
}  // namespace

ServerProcess::ServerProcess(std::vector<std::string> args) : args_(std::move(args)) {
  char tmpl[] = "/tmp/groupcoordd-test-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  dir_ = d ? d : "/tmp";
  logPath_ = dir_ + "/groupcoordd.log";
  portFile_ = dir_ + "/port";
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) kill9();
}

bool ServerProcess::start(std::chrono::milliseconds wait) {
  std::vector<std::string> argv{binaryPath("server/groupcoordd")};
  if (!hasOption(args_, "--listen-address")) argv.push_back("--listen-address=127.0.0.1");
  if (!hasOption(args_, "--listen-port")) argv.push_back("--listen-port=0");
  if (!hasOption(args_, "--zk-connect")) argv.push_back("--zk-connect=" + zkConnect());
  argv.push_back("--port-file=" + portFile_);
  for (auto& a : args_) argv.push_back(a);
  ::unlink(portFile_.c_str());

  pid_ = ::fork();
  if (pid_ == 0) {
    int fd = ::open(logPath_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    if (!netnsPath_.empty()) {
      int ns = ::open(netnsPath_.c_str(), O_RDONLY | O_CLOEXEC);
      if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) {
        std::fprintf(stderr, "groupcoordd test: cannot enter %s: %s\n", netnsPath_.c_str(), std::strerror(errno));
        ::_exit(126);
      }
      ::close(ns);
    }
    // Several servers run side by side: each takes a free port for its HTTP
    // endpoints (the environment loses to a --http-port a test gives, and a
    // server without the option only warns about it).
    ::setenv("GROUPCOORDD_HTTP_PORT", "0", 0);
    std::vector<char*> cargs;
    for (auto& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
    cargs.push_back(nullptr);
    ::execv(cargs[0], cargs.data());
    std::fprintf(stderr, "groupcoordd test: cannot run %s: %s\n", cargs[0], std::strerror(errno));
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(portFile_);
    int p = 0;
    if (in >> p && p > 0) {
      port_ = static_cast<uint16_t>(p);
      return true;
    }
    if (!running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::cerr << "groupcoordd did not start listening; its log:\n" << log() << std::endl;
  return false;
}

bool ServerProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return false;
  }
  return r == 0;
}

int ServerProcess::waitExit(std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (pid_ > 0) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -1;
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

int ServerProcess::terminate(std::chrono::milliseconds wait) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int rc = waitExit(wait);
  if (pid_ > 0) kill9();
  return rc;
}

void ServerProcess::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void ServerProcess::pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void ServerProcess::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

std::string ServerProcess::log() const {
  std::ifstream in(logPath_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace groupcoord::testing
