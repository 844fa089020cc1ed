#pragma once

// A groupcoordd process for integration and fault tests: started from the
// build tree on 127.0.0.1 port 0, with its log in a file of its own.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace groupcoord::testing {

class ServerProcess {
 public:
  // args: extra groupcoordd options, e.g. {"--server-id=2"}. The process
  // gets --listen-address=127.0.0.1 --listen-port=0 --port-file=... and
  // --zk-connect=<the test ensemble> unless args set them.
  explicit ServerProcess(std::vector<std::string> args);
  // Ends the process (SIGKILL) if it still runs.
  ~ServerProcess();

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Runs it under this uid (and the gid of the same number) from the next
  // start() on, so that a firewall rule matching the uid can cut its
  // traffic alone (tests/fault/PartitionTest.cpp). The test runs as root.
  void runAs(uid_t uid) { uid_ = uid; }

  // Starts it and waits until it listens; false (and the log is printed) if
  // it did not within `wait`.
  bool start(std::chrono::milliseconds wait = std::chrono::seconds(20));
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running();

  // SIGTERM, then waits; returns the exit code, or -1 if it did not exit
  // within `wait` (it is then killed), or 128+signal when a signal ended it.
  int terminate(std::chrono::milliseconds wait = std::chrono::seconds(15));
  // SIGKILL and reap.
  void kill9();
  // SIGSTOP / SIGCONT.
  void pause();
  void resume();

  std::string log() const;
  const std::string& logPath() const { return logPath_; }

 private:
  int waitExit(std::chrono::milliseconds wait);

  std::vector<std::string> args_;
  std::string dir_;
  std::string logPath_;
  std::string portFile_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  uid_t uid_ = 0;  // 0: as the test
};

}  // namespace groupcoord::testing
