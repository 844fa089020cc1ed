// The seam where groupcoordd gets what serves its requests: the adapter's
// Service (one ZooKeeper session and the Coordinator on it).

#include "adapter/Service.h"
#include "metrics/Coordination.h"
#include "server/Backend.h"

namespace groupcoord::server {

namespace {

class AdapterBackend final : public Backend {
 public:
  explicit AdapterBackend(adapter::ServiceConfig config)
      : service_(std::move(config)), coordinator_(service_.coordinator()) {}

  protocol::Handler& handler() override { return service_.handler(); }

  bool start(const AdvertisedEndpoint& self, std::string* error) override {
    return service_.start(self.host, self.port, error);
  }

  void shutdown() override { service_.stop(); }

  std::string notReadyReason() const override {
    if (!coordinator_.zkConnected()) return "not connected to ZooKeeper";
    if (!coordinator_.registered()) return "connected to ZooKeeper but not registered as a server yet";
    return "";
  }

  void registerMetrics(metrics::Registry& registry) override {
    metrics::registerCoordinationMetrics(registry);
    registry.addGauge("groupcoord_groups_controlled", "Groups this server controls now",
                      [this] { return static_cast<double>(coordinator_.controlledGroups().size()); });
    registry.addGauge("groupcoord_members", "Members of the groups this server controls",
                      [this] { return static_cast<double>(coordinator_.memberCount()); });
  }

 private:
  adapter::Service service_;
  adapter::Coordinator& coordinator_;  // service_'s, for readiness and metrics
};

}  // namespace

std::unique_ptr<Backend> makeBackend(const ServerConfig& config) {
  adapter::ServiceConfig s;
  s.coordinator.serverId = config.serverId;
  s.coordinator.root = config.rootPath;
  s.coordinator.topicsPath = config.topicsPath;
  s.coordinator.brokersPath = config.brokersPath;
  s.coordinator.minSessionTimeoutMs = config.minSessionTimeoutMs;
  s.coordinator.maxSessionTimeoutMs = config.maxSessionTimeoutMs;
  s.coordinator.handoverSettleDelay = std::chrono::milliseconds(config.handoverSettleMs);
  s.coordinator.handoverMaxInFlight = static_cast<size_t>(config.handoverMaxInFlight);
  s.coordinator.maxMetadataBytes = static_cast<size_t>(config.maxMetadataBytes);
  s.zkConnect = config.zkConnect;
  s.zkSessionTimeout = std::chrono::milliseconds(config.zkSessionTimeoutMs);
  s.zkDigestUser = config.zkDigestUser;
  s.zkDigestPassword = config.zkDigestPassword;
  return std::make_unique<AdapterBackend>(std::move(s));
}

}  // namespace groupcoord::server
