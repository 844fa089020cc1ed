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

#include "server/HttpServer.h"
#include "server/TcpServer.h"

namespace groupcoord::server {

struct ServerConfig {
  // Network.
  std::string listenAddress = "0.0.0.0";
  int listenPort = 7400;  // 0: any free port (see portFile)
  std::string advertisedHost;  // empty: the listen address, or the hostname when listening on 0.0.0.0 / ::
  int advertisedPort = 0;      // 0: the bound port
  std::string portFile;        // empty: none; else the bound port is written there once listening
  // The internal listener (docs/design.md, "Two addresses").
  int internalListenPort = -1;         // -1: none; 0: any free port
  std::string internalAdvertisedHost;  // empty: as advertised.host defaults
  int internalAdvertisedPort = 0;      // 0: the bound internal port

  // Metrics and health over HTTP (server/HttpServer.h).
  std::string httpAddress;     // empty: the listen address
  int httpPort = 7401;         // 0: any free port (see httpPortFile); -1: no HTTP server
  std::string httpPortFile;    // empty: none; else the bound HTTP port is written there once listening
  // Its limits (docs/design.md, "The HTTP port").
  int64_t httpMaxConnections = 1024;
  int64_t httpMaxConnectionsPerSource = 64;
  int64_t httpHeadTimeoutMs = 5000;
  int64_t httpIdleTimeoutMs = 5000;
  int64_t httpWriteTimeoutMs = 10000;
  int64_t httpStatusThreads = 4;  // the status page may wait for another server
  int64_t httpStatusQueue = 32;

  // Identity. Every server in front of one ensemble needs a distinct id.
  int32_t serverId = 1;

  // ZooKeeper.
  std::string zkConnect = "127.0.0.1:2181";
  std::string rootPath = "/groupcoord";
  std::string topicsPath = "/brokers/topics";
  std::string brokersPath = "/brokers/ids";
  int64_t zkSessionTimeoutMs = 10000;
  int64_t zkConnectWaitMs = 30000;  // 0: wait as long as it takes
  int64_t zkLeaseMarginMs = 0;  // 0: a fifth of the granted session timeout, at least 200 ms
  std::string zkDigestUser;      // empty: no digest auth
  std::string zkDigestPassword;  // secret: masked in every log line

  // Groups.
  int64_t minSessionTimeoutMs = 1000;
  int64_t maxSessionTimeoutMs = 300000;
  // Joins coalesce (docs/design.md, "Coalesced joins").
  int64_t joinWindowMs = 100;
  int64_t joinWindowMaxMs = 3000;
  // The newest RegisterConsumer version answered (docs/protocol.md §16).
  int64_t registerMaxVersion = 2;

  // Placement of groups across servers.
  int64_t handoverSettleMs = 10000;
  int64_t handoverMaxInFlight = 8;
  // Bounded-load placement (docs/design.md, "Placement").
  int64_t placementEpsilonPercent = 10;
  int64_t placementMarginPercent = 5;
  int64_t placementIntervalMs = 30000;
  std::string placementWeight = "members";
  int64_t placementGroupWeight = 10;
  int64_t maxMetadataBytes = 4096;

  // Limits of the TCP server.
  int64_t maxFrameBytes = 1 << 20;
  int64_t maxConnections = 20000;
  int64_t maxInFlightPerConnection = 1024;
  int64_t idleTimeoutMs = 30000;
  int64_t maxOutputBufferBytes = 4 << 20;
  int64_t ioThreads = 0;  // 0: one per core the process may run on
  int64_t shutdownGraceMs = 5000;

  // Clients: authentication (server/Auth.h) and TLS (server/Tls.h); each is
  // off while its file options are empty.
  std::string authCredentialsFile;
  std::string authPlain = "allow";  // Authenticate v0: allow, tls (only on TLS connections), never
  std::string authPermissionsFile;  // empty: the roles alone decide (server/AuthGate.h)
  std::string tlsCertificateFile;
  std::string tlsKeyFile;
  std::string tlsCaFile;  // set: clients must present a certificate signed by this CA
  // The status page's calls to other servers over TLS verify them with this
  // CA; empty: tlsCaFile.
  std::string peerTlsCaFile;

  // Logging.
  std::string logLevel = "info";  // trace, debug, info, warn, error, critical, off
  std::string logFile;            // empty: stderr

  // The TCP server's part of this configuration.
  TcpServerOptions tcpOptions() const;
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
};

// One option: its key and how to read and print it.
struct OptionSpec {
  std::string key;          // properties key, "listen.port"
  std::string valueName;    // for --help, "PORT"
  std::string description;  // one line for --help
  bool secret = false;      // masked when the configuration is logged
  // Parses text into the field; returns "" or why the text is not a value
  // of this option ("not an integer").
  std::function<std::string(ServerConfig&, std::string_view)> set;
  std::function<std::string(const ServerConfig&)> get;
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
