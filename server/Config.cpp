#include "server/Config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include "protocol/Messages.h"

extern char** environ;

namespace groupcoord::server {

namespace {

constexpr std::string_view kEnvPrefix = "GROUPCOORDD_";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

template <typename T>
std::string parseNumber(std::string_view text, T& out) {
  text = trim(text);
  if (text.empty()) return "empty, a number is expected";
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) return "out of range";
  if (ec != std::errc() || end != text.data() + text.size()) return "not an integer";
  out = value;
  return "";
}

template <typename T>
OptionSpec numberOption(std::string key, std::string valueName, std::string description, T ServerConfig::*field) {
  OptionSpec spec;
  spec.key = std::move(key);
  spec.valueName = std::move(valueName);
  spec.description = std::move(description);
  spec.set = [field](ServerConfig& c, std::string_view text) { return parseNumber(text, c.*field); };
  spec.get = [field](const ServerConfig& c) { return std::to_string(c.*field); };
  return spec;
}

OptionSpec stringOption(std::string key, std::string valueName, std::string description,
                        std::string ServerConfig::*field, bool secret = false) {
  OptionSpec spec;
  spec.key = std::move(key);
  spec.valueName = std::move(valueName);
  spec.description = std::move(description);
  spec.secret = secret;
  spec.set = [field](ServerConfig& c, std::string_view text) {
    c.*field = std::string(trim(text));
    return std::string();
  };
  spec.get = [field](const ServerConfig& c) { return c.*field; };
  return spec;
}

std::vector<OptionSpec> makeSpecs() {
  std::vector<OptionSpec> s;
  s.push_back(stringOption("listen.address", "ADDRESS", "address to listen on (IPv4 or IPv6 literal, or a name)",
                           &ServerConfig::listenAddress));
  s.push_back(numberOption("listen.port", "PORT", "TCP port to listen on; 0 takes any free port (see port.file)",
                           &ServerConfig::listenPort));
  s.push_back(stringOption("advertised.host", "HOST",
                           "host clients are told to reach this server at; empty: the listen address, or this "
                           "machine's hostname when listening on every address",
                           &ServerConfig::advertisedHost));
  s.push_back(numberOption("advertised.port", "PORT", "port clients are told to reach this server at; 0: the bound port",
                           &ServerConfig::advertisedPort));
  s.push_back(numberOption("internal.listen.port", "PORT",
                           "a second protocol port, on the listen address, for peers and clients inside this "
                           "server's network (a container network): answers through it name the servers' internal "
                           "addresses, and the other servers dial this one there; -1: none; 0: any free port",
                           &ServerConfig::internalListenPort));
  s.push_back(stringOption("internal.advertised.host", "HOST",
                           "host the internal port is reached at (in a compose file: the service name); empty: as "
                           "advertised.host defaults",
                           &ServerConfig::internalAdvertisedHost));
  s.push_back(numberOption("internal.advertised.port", "PORT",
                           "port the internal port is reached at; 0: the bound internal port",
                           &ServerConfig::internalAdvertisedPort));
  s.push_back(stringOption("port.file", "PATH", "once listening, write the bound port to this file; empty: none",
                           &ServerConfig::portFile));
  s.push_back(stringOption("http.address", "ADDRESS",
                           "address of the HTTP server for /metrics and /health/*; empty: the listen address",
                           &ServerConfig::httpAddress));
  s.push_back(numberOption("http.port", "PORT",
                           "port of the HTTP server for /metrics and /health/*; 0 takes any free port (see "
                           "http.port.file); -1 turns the HTTP server off",
                           &ServerConfig::httpPort));
  s.push_back(stringOption("http.port.file", "PATH",
                           "once the HTTP server listens, write its bound port to this file; empty: none",
                           &ServerConfig::httpPortFile));
  s.push_back(numberOption("http.max.connections", "N",
                           "open HTTP connections, all addresses together; past it a new connection takes the place "
                           "of the one that has waited longest for a request, or is refused when every one is busy",
                           &ServerConfig::httpMaxConnections));
  s.push_back(numberOption("http.max.connections.per.source", "N",
                           "open HTTP connections from one source address; past it a new one takes the place of "
                           "that address's connection that has waited longest for a request",
                           &ServerConfig::httpMaxConnectionsPerSource));
  s.push_back(numberOption("http.head.timeout.ms", "MS",
                           "a whole HTTP request head must arrive within this long of its first byte (for HTTPS, "
                           "of the connection's accept: the handshake counts), else the connection is closed",
                           &ServerConfig::httpHeadTimeoutMs));
  s.push_back(numberOption("http.idle.timeout.ms", "MS",
                           "an HTTP connection with no request under way is closed after this long",
                           &ServerConfig::httpIdleTimeoutMs));
  s.push_back(numberOption("http.write.timeout.ms", "MS",
                           "an HTTP answer that makes no progress for this long (the client does not read it) "
                           "closes its connection",
                           &ServerConfig::httpWriteTimeoutMs));
  s.push_back(numberOption("http.status.threads", "N",
                           "threads answering the status page and /api/ (each may wait for another server); "
                           "/health/* and /metrics never wait for them",
                           &ServerConfig::httpStatusThreads));
  s.push_back(numberOption("http.status.queue", "N",
                           "status page and /api/ requests waiting for a thread; past it they are answered 503 "
                           "with Retry-After",
                           &ServerConfig::httpStatusQueue));
  s.push_back(numberOption("server.id", "ID",
                           "this server's id, >= 0; every server in front of one ZooKeeper ensemble needs a distinct id",
                           &ServerConfig::serverId));
  s.push_back(stringOption("zk.connect", "HOSTS", "ZooKeeper connect string, host:port[,host:port...]",
                           &ServerConfig::zkConnect));
  s.push_back(stringOption("zk.root", "PATH", "ZooKeeper path below which groupcoord keeps everything",
                           &ServerConfig::rootPath));
  s.push_back(stringOption("zk.topics.path", "PATH", "ZooKeeper path of topic metadata (Kafka's layout)",
                           &ServerConfig::topicsPath));
  s.push_back(stringOption("zk.brokers.path", "PATH",
                           "ZooKeeper path of broker registrations (Kafka's layout), whose \"rack\" fields "
                           "rack-aware assignment reads",
                           &ServerConfig::brokersPath));
  s.push_back(numberOption("zk.session.timeout.ms", "MS", "ZooKeeper session timeout asked for, in milliseconds",
                           &ServerConfig::zkSessionTimeoutMs));
  s.push_back(numberOption("zk.connect.wait.ms", "MS",
                           "at start, how long to wait for a first ZooKeeper session before exiting non-zero; "
                           "0: as long as it takes (/health/ready says why meanwhile)",
                           &ServerConfig::zkConnectWaitMs));
  s.push_back(numberOption("zk.lease.margin.ms", "MS",
                           "heartbeats stop being answered from memory this long before ZooKeeper could expire "
                           "the session; 0: a fifth of the session timeout, at least 200 ms",
                           &ServerConfig::zkLeaseMarginMs));
  s.push_back(stringOption("zk.digest.user", "USER", "ZooKeeper digest auth user; empty: no auth",
                           &ServerConfig::zkDigestUser));
  s.push_back(stringOption("zk.digest.password", "PASSWORD", "ZooKeeper digest auth password (never logged)",
                           &ServerConfig::zkDigestPassword, true));
  s.push_back(numberOption("group.min.session.timeout.ms", "MS", "smallest session timeout a group may ask for",
                           &ServerConfig::minSessionTimeoutMs));
  s.push_back(numberOption("group.max.session.timeout.ms", "MS", "largest session timeout a group may ask for",
                           &ServerConfig::maxSessionTimeoutMs));
  s.push_back(numberOption("group.join.window.ms", "MS",
                           "while a group's membership is moving, its new members wait this long after the latest "
                           "join for more, so that joins arriving together move the generation once; 0: no wait",
                           &ServerConfig::joinWindowMs));
  s.push_back(numberOption("group.join.window.max.ms", "MS",
                           "the longest a join waits for others (group.join.window.ms restarts with every join: "
                           "this caps it, so a steady trickle of joins still moves the generation)",
                           &ServerConfig::joinWindowMaxMs));
  s.push_back(numberOption("protocol.register.max.version", "V",
                           "the newest RegisterConsumer version this server answers (1 or 2); a newer one is "
                           "answered UNSUPPORTED_VERSION, as a server of an older release answers it, and clients "
                           "speak the one before: for a fleet rolled back, or to try clients against an older server",
                           &ServerConfig::registerMaxVersion));
  s.push_back(numberOption("handover.settle.ms", "MS",
                           "a server is given groups (it becomes their preferred controller, and their current "
                           "controllers hand them over) only once it has been live this long, so a server that comes "
                           "and goes draws no group",
                           &ServerConfig::handoverSettleMs));
  s.push_back(numberOption("handover.max.in.flight", "N",
                           "groups this server hands over to other servers at once (after a server joins, or while "
                           "this one is drained)",
                           &ServerConfig::handoverMaxInFlight));
  s.push_back(numberOption("placement.epsilon.percent", "PCT",
                           "no server is placed more than this much over the fleet's mean load: its bound is "
                           "ceil((1 + PCT/100) x total weight / servers); a group whose preferred server is full "
                           "goes to the next in its own hash order",
                           &ServerConfig::placementEpsilonPercent));
  s.push_back(numberOption("placement.margin.percent", "PCT",
                           "a server hands groups over for load only when it is over its bound by more than this "
                           "(of the bound), so small changes of weight move nothing",
                           &ServerConfig::placementMarginPercent));
  s.push_back(numberOption("placement.interval.ms", "MS",
                           "a server over its bound starts handing groups over for load at most this often",
                           &ServerConfig::placementIntervalMs));
  s.push_back(stringOption("placement.weight", "members|groups",
                           "what a group weighs in the placement: its member count plus placement.group.weight "
                           "(members), or placement.group.weight alone, so that servers count groups (groups)",
                           &ServerConfig::placementWeight));
  s.push_back(numberOption("placement.group.weight", "N",
                           "the weight every group has besides its members (so that empty groups count), >= 1",
                           &ServerConfig::placementGroupWeight));
  s.push_back(numberOption("group.max.metadata.bytes", "BYTES",
                           "largest member metadata a registration may carry (RegisterConsumer version 1); a "
                           "larger one is answered INVALID_REQUEST",
                           &ServerConfig::maxMetadataBytes));
  s.push_back(numberOption("max.frame.bytes", "BYTES", "largest request frame; a larger one closes its connection",
                           &ServerConfig::maxFrameBytes));
  s.push_back(numberOption("max.connections", "N", "most client connections; past it new ones are closed at once",
                           &ServerConfig::maxConnections));
  s.push_back(numberOption("max.inflight.per.connection", "N",
                           "most requests in flight on one connection; past it the server stops reading that "
                           "connection until responses drain",
                           &ServerConfig::maxInFlightPerConnection));
  s.push_back(numberOption("idle.timeout.ms", "MS",
                           "a frame must arrive whole within this long of its first byte, else its connection "
                           "is closed (a connection with nothing pending is never closed for idleness)",
                           &ServerConfig::idleTimeoutMs));
  s.push_back(numberOption("max.output.buffer.bytes", "BYTES",
                           "a connection whose unread responses pass this many bytes is closed",
                           &ServerConfig::maxOutputBufferBytes));
  s.push_back(numberOption("io.threads", "N", "I/O threads; 0: one per core the process may run on (its CPU affinity)", &ServerConfig::ioThreads));
  s.push_back(numberOption("shutdown.grace.ms", "MS",
                           "on SIGTERM/SIGINT, how long in-flight requests may take to be answered",
                           &ServerConfig::shutdownGraceMs));
  s.push_back(stringOption("auth.credentials.file", "PATH",
                           "file of users, roles and salted secret hashes (make lines with `groupctl auth hash`); "
                           "set: clients must Authenticate; empty: no authentication",
                           &ServerConfig::authCredentialsFile));
  s.push_back(stringOption("auth.plain", "allow|tls|never",
                           "Authenticate version 0, whose secret crosses the wire as it is: allow it, allow it only "
                           "on TLS connections, or never (version 1, SCRAM-SHA-256, never sends the secret)",
                           &ServerConfig::authPlain));
  s.push_back(stringOption("auth.permissions.file", "PATH",
                           "file of per-group rules (`allow user:NAME join,commit prefix:team-a.`; manage it with "
                           "`groupctl acl`), read again on SIGHUP; set: a call on a group needs a rule allowing it; "
                           "empty: members may use every group, admins may do everything",
                           &ServerConfig::authPermissionsFile));
  s.push_back(stringOption("tls.certificate.file", "PATH",
                           "PEM certificate chain of this server; set (with tls.key.file): clients speak TLS 1.2+",
                           &ServerConfig::tlsCertificateFile));
  s.push_back(stringOption("tls.key.file", "PATH", "PEM private key of tls.certificate.file", &ServerConfig::tlsKeyFile));
  s.push_back(stringOption("tls.ca.file", "PATH",
                           "PEM CA certificates; set: clients must present a certificate signed by one of them",
                           &ServerConfig::tlsCaFile));
  s.push_back(stringOption("peer.tls.ca.file", "PATH",
                           "PEM CA certificates the status page trusts for other servers' certificates when it asks "
                           "a group's controller (TLS on); empty: tls.ca.file",
                           &ServerConfig::peerTlsCaFile));
  s.push_back(stringOption("log.level", "LEVEL", "trace, debug, info, warn, error, critical or off",
                           &ServerConfig::logLevel));
  s.push_back(stringOption("log.file", "PATH", "log to this file; empty: standard error", &ServerConfig::logFile));
  return s;
}

std::string optionLabel(std::string_view key) {
  return std::string(key) + " (--" + cliName(key) + ", " + envName(key) + ")";
}

std::string badValue(std::string_view key, const std::string& value, std::string_view why) {
  return "invalid value '" + value + "' for " + optionLabel(key) + ": " + std::string(why);
}

// "" when `path` is an absolute ZooKeeper path without a trailing slash.
std::string checkZkPath(const std::string& path) {
  if (path.empty() || path.front() != '/') return "must be an absolute path (start with '/')";
  if (path.size() == 1) return "must not be the ZooKeeper root itself";
  if (path.back() == '/') return "must not end with '/'";
  if (path.find("//") != std::string::npos) return "must not contain an empty component ('//')";
  std::string_view rest(path);
  while (!rest.empty()) {
    rest.remove_prefix(1);
    const size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    if (part == "." || part == "..") return "must not contain '.' or '..' components";
    if (part == "zookeeper" && rest.data() == path.data() + 1) return "must not be below /zookeeper (reserved)";
    for (char ch : part) {
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) return "must not contain control characters";
    }
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  }
  return "";
}

bool isLogLevel(const std::string& level) {
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  return std::any_of(std::begin(kLevels), std::end(kLevels), [&](const char* l) { return level == l; });
}

struct FileEntry {
  std::string key;
  std::string value;
  int line = 0;
};

// Reads `key=value` (or `key: value`) lines; '#' and '!' start comments.
std::string readPropertiesFile(const std::string& path, std::vector<FileEntry>& out) {
  std::ifstream in(path);
  if (!in) return "cannot read the configuration file '" + path + "'";
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    const std::string_view text = trim(line);
    if (text.empty() || text.front() == '#' || text.front() == '!') continue;
    const size_t sep = text.find_first_of("=:");
    if (sep == std::string_view::npos) {
      return "configuration file '" + path + "' line " + std::to_string(lineNo) + ": expected key=value, got '" +
             std::string(text) + "'";
    }
    out.push_back({std::string(trim(text.substr(0, sep))), std::string(trim(text.substr(sep + 1))), lineNo});
  }
  return "";
}

}  // namespace

const std::vector<OptionSpec>& optionSpecs() {
  static const std::vector<OptionSpec> specs = makeSpecs();
  return specs;
}

const OptionSpec* findOption(std::string_view key) {
  for (const auto& spec : optionSpecs()) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

std::string cliName(std::string_view key) {
  std::string s(key);
  std::replace(s.begin(), s.end(), '.', '-');
  return s;
}

std::string envName(std::string_view key) {
  std::string s(kEnvPrefix);
  for (char ch : key) s += ch == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

std::string keyFromCliName(std::string_view cli) {
  std::string s(cli);
  std::replace(s.begin(), s.end(), '-', '.');
  return s;
}

TcpServerOptions ServerConfig::tcpOptions() const {
  TcpServerOptions o;
  o.listenAddress = listenAddress;
  o.port = static_cast<uint16_t>(listenPort);
  if (internalListenPort >= 0) o.internalPort = static_cast<uint16_t>(internalListenPort);
  o.ioThreads = static_cast<int>(ioThreads);
  o.maxFrameBytes = static_cast<int32_t>(maxFrameBytes);
  o.maxConnections = static_cast<int>(maxConnections);
  o.maxInFlightPerConnection = static_cast<int>(maxInFlightPerConnection);
  o.idleTimeout = std::chrono::milliseconds(idleTimeoutMs);
  o.maxOutputBytes = static_cast<size_t>(maxOutputBufferBytes);
  o.shutdownGrace = std::chrono::milliseconds(shutdownGraceMs);
  return o;
}

HttpOptions ServerConfig::httpOptions() const {
  HttpOptions o;
  o.address = effectiveHttpAddress();
  o.port = static_cast<uint16_t>(httpPort < 0 ? 0 : httpPort);
  o.maxConnections = static_cast<int>(httpMaxConnections);
  o.maxConnectionsPerSource = static_cast<int>(httpMaxConnectionsPerSource);
  o.headTimeout = std::chrono::milliseconds(httpHeadTimeoutMs);
  o.idleTimeout = std::chrono::milliseconds(httpIdleTimeoutMs);
  o.writeTimeout = std::chrono::milliseconds(httpWriteTimeoutMs);
  o.statusThreads = static_cast<int>(httpStatusThreads);
  o.statusQueue = static_cast<int>(httpStatusQueue);
  return o;
}

std::string ServerConfig::listenHost() const {
  if (listenAddress == "0.0.0.0" || listenAddress == "::" || listenAddress.empty()) {
    char name[256] = {0};
    if (::gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0') return name;
    return "localhost";
  }
  return listenAddress;
}

std::string ServerConfig::effectiveAdvertisedHost() const {
  return advertisedHost.empty() ? listenHost() : advertisedHost;
}

uint16_t ServerConfig::effectiveAdvertisedPort(uint16_t boundPort) const {
  return advertisedPort != 0 ? static_cast<uint16_t>(advertisedPort) : boundPort;
}

std::string ServerConfig::effectiveInternalAdvertisedHost() const {
  return internalAdvertisedHost.empty() ? listenHost() : internalAdvertisedHost;
}

uint16_t ServerConfig::effectiveInternalAdvertisedPort(uint16_t boundPort) const {
  return internalAdvertisedPort != 0 ? static_cast<uint16_t>(internalAdvertisedPort) : boundPort;
}

std::string validateConfig(const ServerConfig& c) {
  auto num = [](auto v) { return std::to_string(v); };
  if (c.listenAddress.empty()) return badValue("listen.address", c.listenAddress, "must not be empty");
  if (c.listenPort < 0 || c.listenPort > 65535) return badValue("listen.port", num(c.listenPort), "must be 0..65535");
  if (c.advertisedPort < 0 || c.advertisedPort > 65535) {
    return badValue("advertised.port", num(c.advertisedPort), "must be 0..65535 (0: the bound port)");
  }
  if (c.internalListenPort < -1 || c.internalListenPort > 65535) {
    return badValue("internal.listen.port", num(c.internalListenPort), "must be -1 (none), 0 (any free port) or a port");
  }
  if (c.internalListenPort > 0 && c.internalListenPort == c.listenPort) {
    return badValue("internal.listen.port", num(c.internalListenPort), "must differ from listen.port");
  }
  if (c.internalAdvertisedPort < 0 || c.internalAdvertisedPort > 65535) {
    return badValue("internal.advertised.port", num(c.internalAdvertisedPort),
                    "must be 0..65535 (0: the bound internal port)");
  }
  if (c.zkConnectWaitMs < 0 || c.zkConnectWaitMs > 86'400'000) {
    return badValue("zk.connect.wait.ms", num(c.zkConnectWaitMs), "must be 0 (no limit) .. 86400000");
  }
  if (c.httpPort < -1 || c.httpPort > 65535) {
    return badValue("http.port", num(c.httpPort), "must be 0..65535, or -1 for no HTTP server");
  }
  if (c.httpMaxConnections < 1 || c.httpMaxConnections > 100'000) {
    return badValue("http.max.connections", num(c.httpMaxConnections), "must be 1..100000");
  }
  if (c.httpMaxConnectionsPerSource < 1 || c.httpMaxConnectionsPerSource > c.httpMaxConnections) {
    return badValue("http.max.connections.per.source", num(c.httpMaxConnectionsPerSource),
                    "must be 1..http.max.connections (" + num(c.httpMaxConnections) + ")");
  }
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"http.head.timeout.ms", c.httpHeadTimeoutMs},
                                   {"http.idle.timeout.ms", c.httpIdleTimeoutMs},
                                   {"http.write.timeout.ms", c.httpWriteTimeoutMs}}) {
    if (value < 100 || value > 600'000) return badValue(key, num(value), "must be 100..600000");
  }
  if (c.httpStatusThreads < 1 || c.httpStatusThreads > 64) {
    return badValue("http.status.threads", num(c.httpStatusThreads), "must be 1..64");
  }
  if (c.httpStatusQueue < 1 || c.httpStatusQueue > 10'000) {
    return badValue("http.status.queue", num(c.httpStatusQueue), "must be 1..10000");
  }
  if (c.serverId < 0) return badValue("server.id", num(c.serverId), "must be >= 0");
  if (trim(c.zkConnect).empty()) return badValue("zk.connect", c.zkConnect, "must not be empty");
  if (auto why = checkZkPath(c.rootPath); !why.empty()) return badValue("zk.root", c.rootPath, why);
  if (auto why = checkZkPath(c.topicsPath); !why.empty()) return badValue("zk.topics.path", c.topicsPath, why);
  if (auto why = checkZkPath(c.brokersPath); !why.empty()) return badValue("zk.brokers.path", c.brokersPath, why);
  if (c.zkSessionTimeoutMs <= 0 || c.zkSessionTimeoutMs > 3'600'000) {
    return badValue("zk.session.timeout.ms", num(c.zkSessionTimeoutMs), "must be 1..3600000");
  }
  if (c.zkLeaseMarginMs < 0 || (c.zkLeaseMarginMs > 0 && c.zkLeaseMarginMs >= c.zkSessionTimeoutMs)) {
    return badValue("zk.lease.margin.ms", num(c.zkLeaseMarginMs),
                    "must be 0 (the default) or less than zk.session.timeout.ms");
  }
  if (c.zkDigestUser.empty() != c.zkDigestPassword.empty()) {
    return c.zkDigestUser.empty()
               ? badValue("zk.digest.user", c.zkDigestUser, "must be set when zk.digest.password is")
               : badValue("zk.digest.password", "****", "must be set when zk.digest.user is");
  }
  if (c.zkDigestUser.find(':') != std::string::npos) {
    return badValue("zk.digest.user", c.zkDigestUser, "must not contain ':'");
  }
  if (c.minSessionTimeoutMs <= 0) {
    return badValue("group.min.session.timeout.ms", num(c.minSessionTimeoutMs), "must be > 0");
  }
  if (c.maxSessionTimeoutMs < c.minSessionTimeoutMs) {
    return badValue("group.max.session.timeout.ms", num(c.maxSessionTimeoutMs),
                    "must be >= group.min.session.timeout.ms (" + num(c.minSessionTimeoutMs) + ")");
  }
  if (c.joinWindowMs < 0 || c.joinWindowMs > 60'000) {
    return badValue("group.join.window.ms", num(c.joinWindowMs), "must be 0..60000");
  }
  if (c.joinWindowMaxMs < c.joinWindowMs || c.joinWindowMaxMs > 300'000) {
    return badValue("group.join.window.max.ms", num(c.joinWindowMaxMs),
                    "must be group.join.window.ms (" + num(c.joinWindowMs) + ") .. 300000");
  }
  if (c.registerMaxVersion < 1 || c.registerMaxVersion > protocol::maxVersion(protocol::ApiKey::RegisterConsumer)) {
    return badValue("protocol.register.max.version", num(c.registerMaxVersion),
                    "must be 1.." + num(protocol::maxVersion(protocol::ApiKey::RegisterConsumer)));
  }
  if (c.handoverSettleMs < 0 || c.handoverSettleMs > 3'600'000) {
    return badValue("handover.settle.ms", num(c.handoverSettleMs), "must be 0..3600000");
  }
  if (c.handoverMaxInFlight < 1 || c.handoverMaxInFlight > 10'000) {
    return badValue("handover.max.in.flight", num(c.handoverMaxInFlight), "must be 1..10000");
  }
  if (c.placementEpsilonPercent < 1 || c.placementEpsilonPercent > 1000) {
    return badValue("placement.epsilon.percent", num(c.placementEpsilonPercent), "must be 1..1000");
  }
  if (c.placementMarginPercent < 0 || c.placementMarginPercent > 1000) {
    return badValue("placement.margin.percent", num(c.placementMarginPercent), "must be 0..1000");
  }
  if (c.placementIntervalMs < 0 || c.placementIntervalMs > 86'400'000) {
    return badValue("placement.interval.ms", num(c.placementIntervalMs), "must be 0..86400000");
  }
  if (c.placementWeight != "members" && c.placementWeight != "groups") {
    return badValue("placement.weight", c.placementWeight, "must be members or groups");
  }
  if (c.placementGroupWeight < 1 || c.placementGroupWeight > 1'000'000) {
    return badValue("placement.group.weight", num(c.placementGroupWeight), "must be 1..1000000");
  }
  if (c.maxMetadataBytes < 0 || c.maxMetadataBytes > 65'536) {
    return badValue("group.max.metadata.bytes", num(c.maxMetadataBytes), "must be 0..65536");
  }
  if (c.maxFrameBytes < 64 || c.maxFrameBytes > (int64_t{1} << 30)) {
    return badValue("max.frame.bytes", num(c.maxFrameBytes), "must be 64..1073741824");
  }
  if (c.maxConnections < 1 || c.maxConnections > 10'000'000) {
    return badValue("max.connections", num(c.maxConnections), "must be 1..10000000");
  }
  if (c.maxInFlightPerConnection < 1 || c.maxInFlightPerConnection > 1'000'000) {
    return badValue("max.inflight.per.connection", num(c.maxInFlightPerConnection), "must be 1..1000000");
  }
  if (c.idleTimeoutMs < 1) return badValue("idle.timeout.ms", num(c.idleTimeoutMs), "must be > 0");
  if (c.maxOutputBufferBytes < 1024) {
    return badValue("max.output.buffer.bytes", num(c.maxOutputBufferBytes), "must be >= 1024");
  }
  if (c.ioThreads < 0 || c.ioThreads > 1024) {
    return badValue("io.threads", num(c.ioThreads), "must be 0..1024 (0: one per core the process may run on)");
  }
  if (c.shutdownGraceMs < 0 || c.shutdownGraceMs > 3'600'000) {
    return badValue("shutdown.grace.ms", num(c.shutdownGraceMs), "must be 0..3600000");
  }
  if (c.authPlain != "allow" && c.authPlain != "tls" && c.authPlain != "never") {
    return badValue("auth.plain", c.authPlain, "must be allow, tls or never");
  }
  if (c.authPlain == "tls" && !c.authCredentialsFile.empty() && c.tlsCertificateFile.empty()) {
    return badValue("auth.plain", c.authPlain,
                    "allows plain Authenticate only on TLS connections, but tls.certificate.file is not set: "
                    "say never to refuse it on every connection");
  }
  if (!c.authPermissionsFile.empty() && c.authCredentialsFile.empty()) {
    return badValue("auth.permissions.file", c.authPermissionsFile,
                    "needs auth.credentials.file: permissions name users, who must authenticate");
  }
  if (c.tlsCertificateFile.empty() != c.tlsKeyFile.empty()) {
    return c.tlsCertificateFile.empty()
               ? badValue("tls.certificate.file", c.tlsCertificateFile, "must be set when tls.key.file is")
               : badValue("tls.key.file", c.tlsKeyFile, "must be set when tls.certificate.file is");
  }
  if (!c.peerTlsCaFile.empty() && c.tlsCertificateFile.empty()) {
    return badValue("peer.tls.ca.file", c.peerTlsCaFile,
                    "needs tls.certificate.file and tls.key.file (TLS is off without them)");
  }
  if (!c.tlsCaFile.empty() && c.tlsCertificateFile.empty()) {
    return badValue("tls.ca.file", c.tlsCaFile, "needs tls.certificate.file and tls.key.file (TLS is off without them)");
  }
  if (!isLogLevel(c.logLevel)) {
    return badValue("log.level", c.logLevel, "must be one of trace, debug, info, warn, error, critical, off");
  }
  return "";
}

ConfigResult loadConfig(const ConfigSources& sources) {
  ConfigResult result;
  ServerConfig& config = result.config;

  auto apply = [&](const std::string& key, const std::string& value, const std::string& where) -> bool {
    const OptionSpec* spec = findOption(key);
    if (spec == nullptr) {
      result.error = where + ": unknown option '" + key + "'";
      return false;
    }
    if (auto why = spec->set(config, value); !why.empty()) {
      result.error = badValue(key, spec->secret ? "****" : value, why) + " (from " + where + ")";
      return false;
    }
    return true;
  };

  std::string file = sources.propertiesFile;
  if (file.empty()) {
    if (auto it = sources.environment.find(kConfigFileEnv); it != sources.environment.end()) file = it->second;
  }
  if (!file.empty()) {
    std::vector<FileEntry> entries;
    if (auto err = readPropertiesFile(file, entries); !err.empty()) {
      result.error = err;
      return result;
    }
    for (const auto& e : entries) {
      if (!apply(e.key, e.value, "configuration file '" + file + "' line " + std::to_string(e.line))) return result;
    }
  }

  for (const auto& [name, value] : sources.environment) {
    if (name.rfind(kEnvPrefix, 0) != 0 || name == kConfigFileEnv) continue;
    const OptionSpec* match = nullptr;
    for (const auto& spec : optionSpecs()) {
      if (envName(spec.key) == name) match = &spec;
    }
    if (match == nullptr) {
      result.warnings.push_back("ignoring environment variable " + name + ": no such option");
      continue;
    }
    if (!apply(match->key, value, "environment variable " + name)) return result;
  }

  for (const auto& [key, value] : sources.commandLine) {
    if (!apply(key, value, "command line option --" + cliName(key))) return result;
  }

  result.error = validateConfig(config);
  return result;
}

std::string describeConfig(const ServerConfig& config) {
  std::ostringstream out;
  for (const auto& spec : optionSpecs()) {
    std::string value = spec.get(config);
    if (spec.secret && !value.empty()) value = "****";
    out << spec.key << '=' << value << '\n';
  }
  return out.str();
}

std::map<std::string, std::string> processEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

}  // namespace groupcoord::server
