#pragma once

// groupcoordd's configuration: every option with its default, where it can be
// set from, and how it is checked.
//
// Every option has one canonical key (the properties-file key, e.g.
// "listen.port"); from it follow the command-line name ("--listen-port") and
// the environment variable ("GROUPCOORDD_LISTEN_PORT"). Precedence, highest
// first: command line, environment, properties file (--config FILE), default.
//
// Start-up code only: loading reports problems as text naming the option and
// the bad value; nothing here runs on the data path.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/Options.h"
#include "server/HttpServer.h"
#include "server/TcpServer.h"

namespace groupcoord::server {

// Every field is an option of common/Options.h (bound to its key in
// Config.cpp), whose help says what it does, and starts at its default.
struct ServerConfig {
  // Network.
  std::string listenAddress{options::defaultText("listen.address")};
  int listenPort = options::defaultInt("listen.port");
  std::string advertisedHost{options::defaultText("advertised.host")};
  int advertisedPort = options::defaultInt("advertised.port");
  std::string portFile{options::defaultText("port.file")};
  // The internal listener (docs/design.md, "Two addresses").
  int internalListenPort = options::defaultInt("internal.listen.port");
  std::string internalAdvertisedHost{options::defaultText("internal.advertised.host")};
  int internalAdvertisedPort = options::defaultInt("internal.advertised.port");

  // The Kafka port (docs/kafka.md).
  int kafkaListenPort = options::defaultInt("kafka.listen.port");
  int kafkaAdvertisedPort = options::defaultInt("kafka.advertised.port");
  std::string kafkaPortFile{options::defaultText("kafka.port.file")};
  int64_t kafkaInitialRebalanceDelayMs = options::defaultInt("kafka.group.initial.rebalance.delay.ms");
  int64_t kafkaMinSessionTimeoutMs = options::defaultInt("kafka.group.min.session.timeout.ms");
  int64_t kafkaMaxSessionTimeoutMs = options::defaultInt("kafka.group.max.session.timeout.ms");
  int64_t kafkaConsumerSessionTimeoutMs = options::defaultInt("kafka.group.consumer.session.timeout.ms");
  int64_t kafkaConsumerHeartbeatIntervalMs = options::defaultInt("kafka.group.consumer.heartbeat.interval.ms");
  int64_t kafkaConsumerWaitingHeartbeatIntervalMs =
      options::defaultInt("kafka.group.consumer.waiting.heartbeat.interval.ms");

  // Metrics and health over HTTP (server/HttpServer.h).
  std::string httpAddress{options::defaultText("http.address")};
  int httpPort = options::defaultInt("http.port");
  std::string httpPortFile{options::defaultText("http.port.file")};
  // Its limits (docs/design.md, "The HTTP port").
  int64_t httpMaxConnections = options::defaultInt("http.max.connections");
  int64_t httpMaxConnectionsPerSource = options::defaultInt("http.max.connections.per.source");
  int64_t httpHeadTimeoutMs = options::defaultInt("http.head.timeout.ms");
  int64_t httpIdleTimeoutMs = options::defaultInt("http.idle.timeout.ms");
  int64_t httpWriteTimeoutMs = options::defaultInt("http.write.timeout.ms");
  int64_t httpStatusThreads = options::defaultInt("http.status.threads");
  int64_t httpStatusQueue = options::defaultInt("http.status.queue");

  // Identity. Every server in front of one ensemble needs a distinct id.
  int32_t serverId = options::defaultInt("server.id");

  // ZooKeeper.
  std::string zkConnect{options::defaultText("zk.connect")};
  std::string rootPath{options::defaultText("zk.root")};
  std::string topicsPath{options::defaultText("zk.topics.path")};
  std::string brokersPath{options::defaultText("zk.brokers.path")};
  int64_t zkSessionTimeoutMs = options::defaultInt("zk.session.timeout.ms");
  int64_t zkConnectWaitMs = options::defaultInt("zk.connect.wait.ms");
  int64_t zkLeaseMarginMs = options::defaultInt("zk.lease.margin.ms");
  std::string zkDigestUser{options::defaultText("zk.digest.user")};
  std::string zkDigestPassword{options::defaultText("zk.digest.password")};

  // Groups.
  int64_t minSessionTimeoutMs = options::defaultInt("group.min.session.timeout.ms");
  int64_t maxSessionTimeoutMs = options::defaultInt("group.max.session.timeout.ms");
  // Joins coalesce (docs/design.md, "Coalesced joins").
  int64_t joinWindowMs = options::defaultInt("group.join.window.ms");
  int64_t joinWindowMaxMs = options::defaultInt("group.join.window.max.ms");
  // The newest RegisterConsumer version answered (docs/protocol.md §16).
  int64_t registerMaxVersion = options::defaultInt("protocol.register.max.version");
  int64_t heartbeatMaxWaitMs = options::defaultInt("heartbeat.max.wait.ms");

  // Placement of groups across servers.
  int64_t handoverSettleMs = options::defaultInt("handover.settle.ms");
  int64_t handoverMaxInFlight = options::defaultInt("handover.max.in.flight");
  // Bounded-load placement (docs/design.md, "Placement").
  int64_t placementEpsilonPercent = options::defaultInt("placement.epsilon.percent");
  int64_t placementMarginPercent = options::defaultInt("placement.margin.percent");
  int64_t placementIntervalMs = options::defaultInt("placement.interval.ms");
  std::string placementWeight{options::defaultText("placement.weight")};
  int64_t placementGroupWeight = options::defaultInt("placement.group.weight");
  int64_t maxMetadataBytes = options::defaultInt("group.max.metadata.bytes");

  // Limits of the TCP server.
  int64_t maxFrameBytes = options::defaultInt("max.frame.bytes");
  int64_t maxConnections = options::defaultInt("max.connections");
  int64_t maxInFlightPerConnection = options::defaultInt("max.inflight.per.connection");
  int64_t idleTimeoutMs = options::defaultInt("idle.timeout.ms");
  int64_t maxOutputBufferBytes = options::defaultInt("max.output.buffer.bytes");
  int64_t ioThreads = options::defaultInt("io.threads");
  int64_t shutdownGraceMs = options::defaultInt("shutdown.grace.ms");

  // Clients: authentication (server/Auth.h) and TLS (server/Tls.h); each is
  // off while its file options are empty.
  std::string authCredentialsFile{options::defaultText("auth.credentials.file")};
  std::string authPlain{options::defaultText("auth.plain")};
  std::string authPermissionsFile{options::defaultText("auth.permissions.file")};
  std::string tlsCertificateFile{options::defaultText("tls.certificate.file")};
  std::string tlsKeyFile{options::defaultText("tls.key.file")};
  std::string tlsCaFile{options::defaultText("tls.ca.file")};
  std::string peerTlsCaFile{options::defaultText("peer.tls.ca.file")};

  // Logging.
  std::string logLevel{options::defaultText("log.level")};
  std::string logFile{options::defaultText("log.file")};

  // The TCP server's part of this configuration.
  TcpServerOptions tcpOptions() const;
  // The Kafka port's: the binary port's limits, its own port, no internal
  // listener (docs/kafka.md).
  TcpServerOptions kafkaTcpOptions() const;
  // The HTTP server's limits (its other fields are set by the caller).
  HttpOptions httpOptions() const;
  // httpAddress, or the listen address when it is empty.
  std::string effectiveHttpAddress() const { return httpAddress.empty() ? listenAddress : httpAddress; }
  // The host both advertised addresses default to: the listen address, or
  // this machine's name when that is a wildcard.
  std::string listenHost() const;
  // advertisedHost, or listenHost().
  std::string effectiveAdvertisedHost() const;
  // advertisedPort, or the bound port when it is 0.
  uint16_t effectiveAdvertisedPort(uint16_t boundPort) const;
  // internalAdvertisedHost, or listenHost().
  std::string effectiveInternalAdvertisedHost() const;
  // internalAdvertisedPort, or the bound internal port when it is 0.
  uint16_t effectiveInternalAdvertisedPort(uint16_t boundPort) const;
  uint16_t effectiveKafkaAdvertisedPort(uint16_t boundPort) const;
};

// One option: its row of common/Options.h and the field it sets.
struct OptionSpec {
  std::string key;          // properties key, "listen.port"
  std::string valueName;    // for --help, "PORT"
  std::string description;  // its help (common/Options.h)
  bool secret = false;      // masked when the configuration is logged
  // Parses text into the field; returns "" or why the text is not a value
  // of this option ("not an integer").
  std::function<std::string(ServerConfig&, std::string_view)> set;
  std::function<std::string(const ServerConfig&)> get;
  // Its row of common/Options.h: kind, default, bounds.
  const options::Option* row = nullptr;
};

// Every option, in --help order.
const std::vector<OptionSpec>& optionSpecs();
const OptionSpec* findOption(std::string_view key);

// "listen.port" -> "listen-port"
std::string cliName(std::string_view key);
// "listen.port" -> "GROUPCOORDD_LISTEN_PORT"
std::string envName(std::string_view key);
// "listen-port" -> "listen.port" (no check that such an option exists).
std::string keyFromCliName(std::string_view cli);

// The properties file itself can come from the environment too.
inline constexpr const char* kConfigFileEnv = "GROUPCOORDD_CONFIG";

struct ConfigSources {
  std::map<std::string, std::string> commandLine;  // key -> value
  std::map<std::string, std::string> environment;  // variable name -> value (the whole environment is fine)
  std::string propertiesFile;                       // empty: none (GROUPCOORDD_CONFIG is consulted then)
};

struct ConfigResult {
  ServerConfig config;
  std::string error;                  // empty when the configuration is usable
  std::vector<std::string> warnings;  // e.g. an unknown GROUPCOORDD_ variable; log them
  bool ok() const { return error.empty(); }
};

// Applies defaults, then the file, the environment, the command line, then
// validates. On error, `error` names the option, its source and the bad value.
ConfigResult loadConfig(const ConfigSources& sources);

// "" when every value is usable, else a message naming the option and value.
std::string validateConfig(const ServerConfig& config);

// The effective configuration, one "key=value" per line, secrets masked.
std::string describeConfig(const ServerConfig& config);

// The process environment as a map.
std::map<std::string, std::string> processEnvironment();

}  // namespace groupcoord::server
