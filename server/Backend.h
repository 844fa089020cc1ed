#pragma once

// What groupcoordd serves requests with, and the hooks around the TCP
// server's life. groupcoordd builds exactly one, through makeBackend() in
// server/MakeBackend.cpp: the one place where the adapter plugs in.
//
// Order, all on the main thread: makeBackend(config); the TCP server binds;
// start(self); the TCP server starts; ... SIGTERM/SIGINT ...; the TCP server
// stops (no new requests, in-flight ones answered or the grace passed, every
// connection closed); shutdown(); the Backend is destroyed.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "metrics/Registry.h"
#include "protocol/Handler.h"
#include "protocol/kafka/Handler.h"
#include "server/Config.h"
#include "server/StatusSource.h"
#include "server/UnservedHandler.h"

namespace groupcoord::server {

// Where clients are told to reach this server, and where peers and
// clients inside its network reach it (the internal listener; empty / 0
// without one).
struct AdvertisedEndpoint {
  int32_t serverId = 0;
  std::string host;
  uint16_t port = 0;
  std::string internalHost;
  uint16_t internalPort = 0;
  uint16_t kafkaPort = 0;  // the Kafka port's advertised port (at `host`); 0 without one
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The handler the TCP server calls (on its I/O threads); lives as long as
  // the Backend.
  virtual protocol::Handler& handler() = 0;
  // What the Kafka port calls (docs/kafka.md); null: this backend serves
  // no Kafka port.
  virtual protocol::kafka::Handler* kafkaHandler() { return nullptr; }
  // Once the port is bound, before requests are served. false with *error
  // set: groupcoordd exits non-zero.
  // `stopRequested` is polled while it waits (for ZooKeeper): true ends the
  // wait, and start() returns false with *error saying so.
  virtual bool start(const AdvertisedEndpoint& self, const std::function<bool()>& stopRequested,
                     std::string* error) = 0;
  // Before the TCP server drains at shutdown: answers the requests the
  // backend holds by design (heartbeats held until something changes,
  // docs/design.md "Held heartbeats") and holds nothing more, so that the
  // drain does not wait out their holds.
  virtual void releaseHeld() {}
  // After the TCP server stopped and no request is in flight any more:
  // release what lives outside the process (the adapter closes its
  // ZooKeeper session here, so its ephemeral znodes go at once). Bounded.
  virtual void shutdown() = 0;
  // For GET /health/ready, from the HTTP threads: "" when the backend can
  // serve (the adapter: ZooKeeper connected and this server registered),
  // else one line saying why not.
  virtual std::string notReadyReason() const { return ""; }
  // Start-up, before serving: adds the backend's own metrics (groups,
  // members, ZooKeeper) to the registry; they are read at each scrape, so
  // the Backend must outlive the registry's scrapes.
  virtual void registerMetrics(metrics::Registry&) {}
  // What the status page on the HTTP port shows (server/StatusSource.h);
  // null: no status page. Called once at start-up; the source lives as
  // long as the Backend.
  virtual std::shared_ptr<StatusSource> statusSource() { return nullptr; }
};

// Answers every API with UNKNOWN_SERVER_ERROR (see UnservedHandler).
class UnservedBackend : public Backend {
 public:
  protocol::Handler& handler() override { return handler_; }
  bool start(const AdvertisedEndpoint&, const std::function<bool()>&, std::string*) override { return true; }
  void shutdown() override {}

 private:
  UnservedHandler handler_;
};

// Defined in server/MakeBackend.cpp (linked into groupcoordd only, so that
// groupcoord_server stays free of the adapter). Start-up code: may throw;
// groupcoordd then logs the message and exits non-zero.
std::unique_ptr<Backend> makeBackend(const ServerConfig& config);

}  // namespace groupcoord::server
