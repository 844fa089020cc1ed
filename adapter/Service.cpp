#include "adapter/Service.h"

#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

#include "metrics/TimedZkClient.h"
#include "zk/Session.h"

namespace groupcoord::adapter {

Service::Service(ServiceConfig config) : config_(std::move(config)) {
  zk::SessionConfig zc;
  zc.connect = config_.zkConnect;
  zc.sessionTimeout = config_.zkSessionTimeout;
  zc.digestUser = config_.zkDigestUser;
  zc.digestPassword = config_.zkDigestPassword;
  session_ = std::make_unique<zk::Session>(zc);
  timedSession_ = std::make_unique<metrics::TimedZkClient>(*session_);
  coordinator_ = std::make_unique<Coordinator>(*timedSession_, config_.coordinator, time_);
}

Service::~Service() {
  stop();
  // The session goes first: its destructor delivers its last callbacks and
  // watch events, which still reach the coordinator.
  coordinator_->detach();
  session_.reset();
  coordinator_.reset();
  timedSession_.reset();
}

bool Service::start(const std::string& advertisedHost, uint16_t advertisedPort, const std::string& internalHost,
                    uint16_t internalPort, std::string* error, uint16_t kafkaPort) {
  coordinator_->setAdvertised(advertisedHost, advertisedPort, internalHost, internalPort, kafkaPort);
  return start(error);
}

bool Service::start(std::string* error) {
  if (zk::Error e = session_->start(); e != zk::Error::Ok) {
    *error = fmt::format("cannot open a ZooKeeper session to {}: {}", config_.zkConnect, e);
    return false;
  }
  spdlog::info("connecting to ZooKeeper at {} (session timeout {} ms)", config_.zkConnect,
               config_.zkSessionTimeout.count());
  // Waited for in short slices, so that a stop request ends the wait at
  // once, with a line every 10 s: a server started before its ensemble (a
  // container's) tells why it is not ready.
  const auto started = std::chrono::steady_clock::now();
  const bool unlimited = config_.connectWait.count() == 0;
  auto nextNotice = started + std::chrono::seconds(10);
  for (;;) {
    const auto waited = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - started);
    Millis slice = Millis(250);
    if (!unlimited) slice = std::min(slice, config_.connectWait - waited);
    zk::Error e = slice.count() > 0 ? session_->waitConnected(slice) : zk::Error::OperationTimeout;
    if (e == zk::Error::Ok) break;
    const auto now = std::chrono::steady_clock::now();
    const auto total = std::chrono::duration_cast<Millis>(now - started);
    if (e != zk::Error::OperationTimeout || (!unlimited && total >= config_.connectWait)) {
      *error = fmt::format("no ZooKeeper session with {} within {} ms: {}", config_.zkConnect, total.count(), e);
      return false;
    }
    if (stopRequested_ && stopRequested_()) {
      *error = fmt::format("asked to stop after {} ms of waiting for a ZooKeeper session with {}", total.count(),
                           config_.zkConnect);
      return false;
    }
    if (now >= nextNotice) {
      nextNotice += std::chrono::seconds(10);
      spdlog::warn("still no ZooKeeper session with {} after {} s; waiting{}", config_.zkConnect,
                   total.count() / 1000,
                   unlimited ? " (zk.connect.wait.ms is 0: as long as it takes)"
                             : fmt::format(" up to {} s (zk.connect.wait.ms)", config_.connectWait.count() / 1000));
    }
  }
  spdlog::info("ZooKeeper session 0x{:x} established with {} (timeout {} ms granted)", session_->sessionId(),
               session_->currentServer(), session_->sessionTimeout().count());
  if (zk::Error e = coordinator_->start(); e != zk::Error::Ok) {
    *error = fmt::format("cannot create {} in ZooKeeper: {}", config_.coordinator.root, e);
    return false;
  }
  coordinator_->startTicker();
  // Serving starts once the groups are listed, so that the first answers
  // tell an unknown group from one not seen yet (docs/protocol.md §13);
  // waited for up to the session timeout, then served anyway.
  const auto listStarted = std::chrono::steady_clock::now();
  while (!coordinator_->groupsListed() && std::chrono::steady_clock::now() - listStarted < config_.zkSessionTimeout) {
    if (stopRequested_ && stopRequested_()) break;
    std::this_thread::sleep_for(Millis(5));
  }
  if (!coordinator_->groupsListed()) {
    spdlog::warn("the groups are not listed yet after {} ms; serving meanwhile (a group not seen yet is answered "
                 "CONTROLLER_NOT_AVAILABLE, which clients retry)", config_.zkSessionTimeout.count());
  }
  return true;
}

void Service::stop() {
  if (stopped_) return;
  stopped_ = true;
  coordinator_->stop();
  // Closing the session removes this server's ephemeral znodes at once.
  session_->close();
  spdlog::info("ZooKeeper session closed: this server's registration, controllers and members are gone");
}

}  // namespace groupcoord::adapter
