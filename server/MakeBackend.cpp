// The seam where groupcoordd gets what serves its requests: the adapter's
// Service (one ZooKeeper session and the Coordinator on it), and what the
// status page shows (docs/design.md, "The HTTP side").

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>

#include "adapter/Service.h"
#include "client/Admin.h"
#include "metrics/Coordination.h"
#include "server/Backend.h"

namespace groupcoord::server {

namespace {

using protocol::ErrorCode;
using namespace std::chrono_literals;

// How long the status page waits for ZooKeeper (ListGroups), and for a
// group's controller elsewhere.
constexpr std::chrono::milliseconds kLocalWait = 3000ms;
constexpr std::chrono::milliseconds kPeerRequestTimeout = 2000ms;
constexpr std::chrono::milliseconds kPeerRetryBudget = 3000ms;

// How the status page reaches another server: as the browser's user, over
// TLS when this server speaks it.
struct PeerSecurity {
  bool tls = false;
  std::string caFile;           // verifies the peer's certificate
  std::string certificateFile;  // presented to peers that ask for a client certificate
  std::string keyFile;
};

// The status page's data: the coordinator for what this server knows,
// ListGroups (read fresh from ZooKeeper) for the groups, DescribeGroup of
// the controller, over the binary protocol, for a group controlled
// elsewhere. Runs on the HTTP threads, which may block.
class AdapterStatus final : public StatusSource {
 public:
  AdapterStatus(adapter::Coordinator& coordinator, PeerSecurity peer)
      : coordinator_(coordinator), peer_(std::move(peer)) {}

  StatusAnswer<FleetView> fleet() override {
    StatusAnswer<FleetView> out;
    auto listed = listGroups({});
    if (!listed.ok()) {
      out.error = listed.error;
      return out;
    }
    FleetView& view = out.value;
    view.selfId = coordinator_.self().brokerId;
    view.groups = std::move(listed.value);
    std::sort(view.groups.begin(), view.groups.end(), [](auto& a, auto& b) { return a.name < b.name; });
    std::map<int32_t, FleetServer> servers;
    for (const auto& s : coordinator_.fleetServers()) {
      servers[s.broker.brokerId] = FleetServer{s.broker.brokerId, s.broker.host, s.broker.port, s.drained,
                                               s.broker.brokerId == view.selfId, {}};
    }
    for (const auto& g : view.groups) {
      if (g.controller.isNone()) continue;
      auto& s = servers[g.controller.brokerId];
      if (s.id < 0) s = FleetServer{g.controller.brokerId, g.controller.host, g.controller.port, false, false, {}};
      s.groups.push_back(g.name);
    }
    for (auto& [_, s] : servers) view.servers.push_back(std::move(s));
    view.placement = describeServers();
    return out;
  }

  StatusAnswer<protocol::DescribeGroupResponse> group(const std::string& name, const Viewer& viewer) override {
    StatusAnswer<protocol::DescribeGroupResponse> out;
    if (auto local = coordinator_.describeLocal(name)) {
      out.value = std::move(*local);
      return out;
    }
    auto listed = listGroups({name});
    if (!listed.ok() || listed.value.size() != 1) {
      out.error = listed.ok() ? StatusError{ErrorCode::UNKNOWN_SERVER_ERROR, "ListGroups answered no group"}
                              : listed.error;
      return out;
    }
    const protocol::GroupInfo& info = listed.value[0];
    if (info.error != ErrorCode::NONE) {
      out.error = {info.error, "group " + name + ": " + std::string(protocol::errorMessage(info.error))};
      return out;
    }
    const protocol::Broker controller = info.controller;
    if (controller.isNone() || controller.brokerId == coordinator_.self().brokerId) {
      // Between two controllers (or just claimed or given up here).
      if (auto local = coordinator_.describeLocal(name)) {
        out.value = std::move(*local);
      } else {
        out.error = {ErrorCode::CONTROLLER_NOT_AVAILABLE,
                     "group " + name + " has no controller right now; the page refreshes by itself"};
      }
      return out;
    }
    return askController(name, controller, viewer);
  }

 private:
  // A request answered by this server's coordinator, as a client's would
  // be; nullopt when no answer came within kLocalWait.
  std::optional<protocol::Response> askLocal(protocol::Request request) {
    struct Wait {
      std::mutex mu;
      std::condition_variable cv;
      std::optional<protocol::Response> answer;
    };
    auto wait = std::make_shared<Wait>();
    protocol::RequestHeader header;
    header.apiKey = protocol::apiKeyOf(request);
    header.clientId = "groupcoordd-status";
    // The answer may come after the wait ended: it then goes to `wait` alone.
    coordinator_.handle(header, std::move(request), [wait](protocol::Response r) {
      std::lock_guard<std::mutex> lock(wait->mu);
      wait->answer = std::move(r);
      wait->cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(wait->mu);
    if (!wait->cv.wait_for(lock, kLocalWait, [&] { return wait->answer.has_value(); })) return std::nullopt;
    return std::move(wait->answer);
  }

  // The fleet's placement as this server computes it (DescribeServers);
  // nullopt when it has none to give (not connected to ZooKeeper).
  std::optional<protocol::DescribeServersResponse> describeServers() {
    auto answer = askLocal(protocol::DescribeServersRequest{});
    auto* described = answer ? std::get_if<protocol::DescribeServersResponse>(&*answer) : nullptr;
    if (described == nullptr || described->error != ErrorCode::NONE) return std::nullopt;
    return std::move(*described);
  }

  StatusAnswer<std::vector<protocol::GroupInfo>> listGroups(std::vector<std::string> names) {
    auto answer = askLocal(protocol::ListGroupsRequest{std::move(names)});
    StatusAnswer<std::vector<protocol::GroupInfo>> out;
    if (!answer) {
      out.error = {ErrorCode::CONTROLLER_NOT_AVAILABLE, "ZooKeeper did not answer the listing of the groups in time"};
      return out;
    }
    auto* listed = std::get_if<protocol::ListGroupsResponse>(&*answer);
    if (listed == nullptr || listed->error != ErrorCode::NONE) {
      const ErrorCode e = listed ? listed->error : ErrorCode::UNKNOWN_SERVER_ERROR;
      out.error = {e, "listing the groups failed: " + std::string(protocol::errorMessage(e))};
      return out;
    }
    out.value = std::move(listed->groups);
    return out;
  }

  StatusAnswer<protocol::DescribeGroupResponse> askController(const std::string& name,
                                                              const protocol::Broker& controller,
                                                              const Viewer& viewer) {
    StatusAnswer<protocol::DescribeGroupResponse> out;
    // Dialled at its internal address when it has one: the advertised one
    // is for clients, and from inside this server's network (a container)
    // may lead back to this server itself.
    protocol::Broker dial = coordinator_.peerAddressOf(controller.brokerId);
    if (dial.isNone()) dial = controller;
    const std::string where =
        "server " + std::to_string(dial.brokerId) + " at " + dial.host + ":" + std::to_string(dial.port);
    client::AdminOptions options;
    options.clientId = "groupcoordd-status";
    options.requestTimeout = kPeerRequestTimeout;
    options.retryBudget = kPeerRetryBudget;
    options.security.user = viewer.user;
    options.security.secret = viewer.secret;
    if (peer_.tls) {
      if (peer_.caFile.empty()) {
        out.error = {ErrorCode::CONTROLLER_NOT_AVAILABLE,
                     "group " + name + " is controlled by " + where +
                         ", and no CA is configured to verify it over TLS (set peer.tls.ca.file)"};
        return out;
      }
      options.security.tlsCaFile = peer_.caFile;
      options.security.tlsCertificateFile = peer_.certificateFile;
      options.security.tlsKeyFile = peer_.keyFile;
    }
    client::Admin admin({client::Endpoint{dial.host, dial.port}}, options);
    auto described = admin.describeGroup(name);
    if (!described.ok()) {
      out.error = {described.status.code, "asking the controller (" + where + "): " + described.status.toString()};
      return out;
    }
    out.value = std::move(described.value);
    // Asked through its internal address, it named itself by that one: the
    // page shows the address clients are told, as for every other group.
    out.value.controller = controller;
    return out;
  }

  adapter::Coordinator& coordinator_;
  const PeerSecurity peer_;
};

class AdapterBackend final : public Backend {
 public:
  AdapterBackend(adapter::ServiceConfig config, PeerSecurity peer)
      : service_(std::move(config)),
        coordinator_(service_.coordinator()),
        status_(std::make_shared<AdapterStatus>(coordinator_, std::move(peer))) {}

  protocol::Handler& handler() override { return service_.handler(); }
  protocol::kafka::Handler* kafkaHandler() override { return &coordinator_.kafka(); }

  bool start(const AdvertisedEndpoint& self, const std::function<bool()>& stopRequested,
             std::string* error) override {
    service_.setStopCheck(stopRequested);
    return service_.start(self.host, self.port, self.internalHost, self.internalPort, error, self.kafkaPort);
  }

  void shutdown() override { service_.stop(); }
  void releaseHeld() override { coordinator_.releaseAllHeld(); }

  std::string notReadyReason() const override {
    if (!coordinator_.zkConnected()) return "not connected to ZooKeeper";
    if (!coordinator_.registered()) return "connected to ZooKeeper but not registered as a server yet";
    if (!coordinator_.groupsListed()) return "registered but the groups are not listed yet";
    return "";
  }

  void registerMetrics(metrics::Registry& registry) override {
    metrics::registerCoordinationMetrics(registry);
    registry.addGauge("groupcoord_groups_controlled", "Groups this server controls now",
                      [this] { return static_cast<double>(coordinator_.controlledGroups().size()); });
    registry.addGauge("groupcoord_members", "Members of the groups this server controls",
                      [this] { return static_cast<double>(coordinator_.memberCount()); });
    registry.addGauge("groupcoord_kafka_consumer_protocol_groups",
                      "Groups this server controls whose members use Kafka's consumer protocol (KIP-848)",
                      [this] { return static_cast<double>(coordinator_.kafka().consumerProtocolCounts().first); });
    registry.addGauge("groupcoord_kafka_consumer_protocol_members",
                      "Members of those groups (a static member away until its session ends counts)",
                      [this] { return static_cast<double>(coordinator_.kafka().consumerProtocolCounts().second); });
  }

  std::shared_ptr<StatusSource> statusSource() override { return status_; }

 private:
  adapter::Service service_;
  adapter::Coordinator& coordinator_;  // service_'s, for readiness, metrics and the status page
  std::shared_ptr<AdapterStatus> status_;
};

}  // namespace

std::unique_ptr<Backend> makeBackend(const ServerConfig& config) {
  adapter::ServiceConfig s;
  s.coordinator.serverId = config.serverId;
  s.coordinator.root = config.rootPath;
  s.coordinator.topicsPath = config.topicsPath;
  s.coordinator.brokersPath = config.brokersPath;
  s.coordinator.minSessionTimeoutMs = config.minSessionTimeoutMs;
  s.coordinator.kafkaRules.minSessionTimeout = adapter::Millis(config.kafkaMinSessionTimeoutMs);
  s.coordinator.kafkaRules.maxSessionTimeout = adapter::Millis(config.kafkaMaxSessionTimeoutMs);
  s.coordinator.kafkaRules.initialRebalanceDelay = adapter::Millis(config.kafkaInitialRebalanceDelayMs);
  s.coordinator.kafkaConsumerRules.sessionTimeout = adapter::Millis(config.kafkaConsumerSessionTimeoutMs);
  s.coordinator.kafkaConsumerRules.heartbeatInterval = adapter::Millis(config.kafkaConsumerHeartbeatIntervalMs);
  s.coordinator.kafkaConsumerRules.waitingHeartbeatInterval =
      adapter::Millis(config.kafkaConsumerWaitingHeartbeatIntervalMs);
  s.coordinator.maxSessionTimeoutMs = config.maxSessionTimeoutMs;
  s.coordinator.joinWindow = std::chrono::milliseconds(config.joinWindowMs);
  s.coordinator.joinWindowMax = std::chrono::milliseconds(config.joinWindowMaxMs);
  s.coordinator.registerMaxVersion = static_cast<int16_t>(config.registerMaxVersion);
  s.coordinator.heartbeatMaxWait = std::chrono::milliseconds(config.heartbeatMaxWaitMs);
  s.coordinator.handoverSettleDelay = std::chrono::milliseconds(config.handoverSettleMs);
  s.coordinator.leaseMargin = std::chrono::milliseconds(config.zkLeaseMarginMs);
  s.coordinator.handoverMaxInFlight = static_cast<size_t>(config.handoverMaxInFlight);
  s.coordinator.placement.placement.epsilonPermille = static_cast<uint32_t>(config.placementEpsilonPercent * 10);
  s.coordinator.placement.placement.marginPermille = static_cast<uint32_t>(config.placementMarginPercent * 10);
  s.coordinator.placement.weighting =
      config.placementWeight == "groups" ? adapter::Weighting::Groups : adapter::Weighting::Members;
  s.coordinator.placement.groupWeight = static_cast<uint64_t>(config.placementGroupWeight);
  s.coordinator.placementInterval = std::chrono::milliseconds(config.placementIntervalMs);
  s.coordinator.maxMetadataBytes = static_cast<size_t>(config.maxMetadataBytes);
  s.zkConnect = config.zkConnect;
  s.zkSessionTimeout = std::chrono::milliseconds(config.zkSessionTimeoutMs);
  s.connectWait = std::chrono::milliseconds(config.zkConnectWaitMs);
  s.zkDigestUser = config.zkDigestUser;
  s.zkDigestPassword = config.zkDigestPassword;
  PeerSecurity peer;
  peer.tls = !config.tlsCertificateFile.empty();
  peer.caFile = config.peerTlsCaFile.empty() ? config.tlsCaFile : config.peerTlsCaFile;
  peer.certificateFile = config.tlsCertificateFile;
  peer.keyFile = config.tlsKeyFile;
  return std::make_unique<AdapterBackend>(std::move(s), std::move(peer));
}

}  // namespace groupcoord::server
