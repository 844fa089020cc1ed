// The seam where groupcoordd gets what serves its requests: the adapter's
// Service (one ZooKeeper session and the Coordinator on it).

#include "adapter/Service.h"
#include "server/Backend.h"

namespace groupcoord::server {

namespace {

class AdapterBackend final : public Backend {
 public:
  explicit AdapterBackend(adapter::ServiceConfig config) : service_(std::move(config)) {}

  protocol::Handler& handler() override { return service_.handler(); }

  bool start(const AdvertisedEndpoint& self, std::string* error) override {
    return service_.start(self.host, self.port, error);
  }

  void shutdown() override { service_.stop(); }

 private:
  adapter::Service service_;
};

}  // namespace

std::unique_ptr<Backend> makeBackend(const ServerConfig& config) {
  adapter::ServiceConfig s;
  s.coordinator.serverId = config.serverId;
  s.coordinator.root = config.rootPath;
  s.coordinator.topicsPath = config.topicsPath;
  s.coordinator.minSessionTimeoutMs = config.minSessionTimeoutMs;
  s.coordinator.maxSessionTimeoutMs = config.maxSessionTimeoutMs;
  s.zkConnect = config.zkConnect;
  s.zkSessionTimeout = std::chrono::milliseconds(config.zkSessionTimeoutMs);
  s.zkDigestUser = config.zkDigestUser;
  s.zkDigestPassword = config.zkDigestPassword;
  return std::make_unique<AdapterBackend>(std::move(s));
}

}  // namespace groupcoord::server
