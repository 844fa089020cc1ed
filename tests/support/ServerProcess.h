#pragma once

// A groupcoordd process for integration and fault tests: started from the
// build tree on 127.0.0.1 port 0, with its log in a file of its own.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/Timing.h"

namespace groupcoord::testing {

// Design bounds (docs/design.md) of the servers the suite starts; waits add
// schedulingAllowance() to them (support/Timing.h).
//
// groupcoordd's default ZooKeeper session timeout, the longest a server of
// the suite has. A server listens once it has a session, which a live
// ensemble grants within it; a request that needs ZooKeeper is answered
// within it (the ensemble answers, or the client declares the connection
// lost after two thirds of it and the server answers with an error).
inline constexpr std::chrono::milliseconds kLongestServerZkSessionTimeout{10000};
// SIGTERM: the requests in flight are answered within shutdown.grace.ms
// (5 s by default), then the session is closed.
inline constexpr std::chrono::milliseconds kServerShutdownGrace{5000};

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

  // Runs it in the network namespace of this file (/var/run/netns/NAME, a
  // NetLab node's) from the next start() on. Give it --listen-address (the
  // node's address) and --zk-connect too: 127.0.0.1 there is the node's own.
  void runInNetns(std::string path) { netnsPath_ = std::move(path); }

  // Starts it and waits until it listens; false (and the log is printed) if
  // it did not within `wait`.
  bool start(std::chrono::milliseconds wait = designBound(kLongestServerZkSessionTimeout));
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running();

  // SIGTERM, then waits; returns the exit code, or -1 if it did not exit
  // within `wait` (it is then killed), or 128+signal when a signal ended it.
  int terminate(std::chrono::milliseconds wait = designBound(kServerShutdownGrace));
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
  std::string netnsPath_;  // empty: the test's namespace
};

}  // namespace groupcoord::testing
