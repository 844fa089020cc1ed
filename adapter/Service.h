#pragma once

// What groupcoordd runs: one ZooKeeper session and the Coordinator on it.
// The server builds one from its configuration and knows nothing of
// ZooKeeper beyond the connect string it passes on.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "adapter/Coordinator.h"

namespace groupcoord::zk {
class Session;
}

namespace groupcoord::adapter {

struct ServiceConfig {
  CoordinatorConfig coordinator;
  std::string zkConnect = "127.0.0.1:2181";
  Millis zkSessionTimeout{10000};
  std::string zkDigestUser;
  std::string zkDigestPassword;
  // How long start() waits for the first ZooKeeper connection.
  Millis connectWait{30000};  // 0: no limit
};

class Service {
 public:
  explicit Service(ServiceConfig config);
  ~Service();

  // Connects to ZooKeeper, creates the root paths, starts registration,
  // claims and the ticker. false with *error set when ZooKeeper could not
  // be reached within connectWait or refused the root paths.
  bool start(std::string* error);
  // The same, once the advertised endpoints are known (the bound ports).
  // internalHost / internalPort: the internal listener's, empty / 0 without;
  // kafkaPort: the Kafka port's advertised port, 0 without one.
  bool start(const std::string& advertisedHost, uint16_t advertisedPort, const std::string& internalHost,
             uint16_t internalPort, std::string* error, uint16_t kafkaPort = 0);

  // Polled while start() waits for ZooKeeper: true ends the wait (start()
  // then fails saying so). Before start() only.
  void setStopCheck(std::function<bool()> stopRequested) { stopRequested_ = std::move(stopRequested); }

  // Stops the coordinator and closes the ZooKeeper session, so this
  // server's ephemeral znodes (registration, controllers, members) go at
  // once and the other servers take its groups over. Idempotent.
  void stop();

  Coordinator& coordinator() { return *coordinator_; }
  protocol::Handler& handler() { return *coordinator_; }

 private:
  ServiceConfig config_;
  SystemTimeSource time_;
  std::unique_ptr<zk::Session> session_;
  // The session as the coordinator sees it: every operation timed for the
  // metrics (metrics/TimedZkClient.h).
  std::unique_ptr<zk::Client> timedSession_;
  std::unique_ptr<Coordinator> coordinator_;
  bool stopped_ = false;
  std::function<bool()> stopRequested_;
};

}  // namespace groupcoord::adapter
