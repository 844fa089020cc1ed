#include "server/Config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "server/OptionDocs.h"


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

// Binds an option of common/Options.h to its field of ServerConfig.
template <typename T>
OptionSpec bindNumber(std::string_view key, T ServerConfig::*field) {
  OptionSpec spec;
  spec.key = std::string(key);
  spec.set = [field](ServerConfig& c, std::string_view text) { return parseNumber(text, c.*field); };
  spec.get = [field](const ServerConfig& c) { return std::to_string(c.*field); };
  return spec;
}

OptionSpec bindText(std::string_view key, std::string ServerConfig::*field) {
  OptionSpec spec;
  spec.key = std::string(key);
  spec.set = [field](ServerConfig& c, std::string_view text) {
    c.*field = std::string(trim(text));
    return std::string();
  };
  spec.get = [field](const ServerConfig& c) { return c.*field; };
  return spec;
}

// Which field each option sets; the order, the help and the rest come from
// the table (makeSpecs).
std::vector<OptionSpec> bindings() {
  using C = ServerConfig;
  return {
      bindText("listen.address", &C::listenAddress),
      bindNumber("listen.port", &C::listenPort),
      bindText("advertised.host", &C::advertisedHost),
      bindNumber("advertised.port", &C::advertisedPort),
      bindNumber("internal.listen.port", &C::internalListenPort),
      bindText("internal.advertised.host", &C::internalAdvertisedHost),
      bindNumber("internal.advertised.port", &C::internalAdvertisedPort),
      bindText("port.file", &C::portFile),
      bindNumber("kafka.listen.port", &C::kafkaListenPort),
      bindNumber("kafka.advertised.port", &C::kafkaAdvertisedPort),
      bindText("kafka.port.file", &C::kafkaPortFile),
      bindNumber("kafka.group.initial.rebalance.delay.ms", &C::kafkaInitialRebalanceDelayMs),
      bindNumber("kafka.group.min.session.timeout.ms", &C::kafkaMinSessionTimeoutMs),
      bindNumber("kafka.group.max.session.timeout.ms", &C::kafkaMaxSessionTimeoutMs),
      bindNumber("kafka.group.consumer.session.timeout.ms", &C::kafkaConsumerSessionTimeoutMs),
      bindNumber("kafka.group.consumer.heartbeat.interval.ms", &C::kafkaConsumerHeartbeatIntervalMs),
      bindNumber("kafka.group.consumer.waiting.heartbeat.interval.ms", &C::kafkaConsumerWaitingHeartbeatIntervalMs),
      bindText("http.address", &C::httpAddress),
      bindNumber("http.port", &C::httpPort),
      bindText("http.port.file", &C::httpPortFile),
      bindNumber("http.max.connections", &C::httpMaxConnections),
      bindNumber("http.max.connections.per.source", &C::httpMaxConnectionsPerSource),
      bindNumber("http.head.timeout.ms", &C::httpHeadTimeoutMs),
      bindNumber("http.idle.timeout.ms", &C::httpIdleTimeoutMs),
      bindNumber("http.write.timeout.ms", &C::httpWriteTimeoutMs),
      bindNumber("http.status.threads", &C::httpStatusThreads),
      bindNumber("http.status.queue", &C::httpStatusQueue),
      bindText("auth.credentials.file", &C::authCredentialsFile),
      bindText("auth.plain", &C::authPlain),
      bindText("auth.permissions.file", &C::authPermissionsFile),
      bindText("tls.certificate.file", &C::tlsCertificateFile),
      bindText("tls.key.file", &C::tlsKeyFile),
      bindText("tls.ca.file", &C::tlsCaFile),
      bindText("peer.tls.ca.file", &C::peerTlsCaFile),
      bindNumber("server.id", &C::serverId),
      bindText("zk.connect", &C::zkConnect),
      bindText("zk.root", &C::rootPath),
      bindText("zk.topics.path", &C::topicsPath),
      bindText("zk.brokers.path", &C::brokersPath),
      bindNumber("zk.session.timeout.ms", &C::zkSessionTimeoutMs),
      bindNumber("zk.connect.wait.ms", &C::zkConnectWaitMs),
      bindNumber("zk.lease.margin.ms", &C::zkLeaseMarginMs),
      bindText("zk.digest.user", &C::zkDigestUser),
      bindText("zk.digest.password", &C::zkDigestPassword),
      bindNumber("group.min.session.timeout.ms", &C::minSessionTimeoutMs),
      bindNumber("group.max.session.timeout.ms", &C::maxSessionTimeoutMs),
      bindNumber("group.join.window.ms", &C::joinWindowMs),
      bindNumber("group.join.window.max.ms", &C::joinWindowMaxMs),
      bindNumber("protocol.register.max.version", &C::registerMaxVersion),
      bindNumber("heartbeat.max.wait.ms", &C::heartbeatMaxWaitMs),
      bindNumber("group.max.metadata.bytes", &C::maxMetadataBytes),
      bindNumber("handover.settle.ms", &C::handoverSettleMs),
      bindNumber("handover.max.in.flight", &C::handoverMaxInFlight),
      bindNumber("placement.epsilon.percent", &C::placementEpsilonPercent),
      bindNumber("placement.margin.percent", &C::placementMarginPercent),
      bindNumber("placement.interval.ms", &C::placementIntervalMs),
      bindText("placement.weight", &C::placementWeight),
      bindNumber("placement.group.weight", &C::placementGroupWeight),
      bindNumber("max.frame.bytes", &C::maxFrameBytes),
      bindNumber("max.connections", &C::maxConnections),
      bindNumber("max.inflight.per.connection", &C::maxInFlightPerConnection),
      bindNumber("idle.timeout.ms", &C::idleTimeoutMs),
      bindNumber("max.output.buffer.bytes", &C::maxOutputBufferBytes),
      bindNumber("io.threads", &C::ioThreads),
      bindNumber("shutdown.grace.ms", &C::shutdownGraceMs),
      bindText("log.level", &C::logLevel),
      bindText("log.file", &C::logFile),
  };
}

// The table's rows, in its order, each with its field. A row without a
// field, or a field without a row, is a programming error caught by the
// first call (ConfigTest makes it).
std::vector<OptionSpec> makeSpecs() {
  std::vector<OptionSpec> bound = bindings();
  std::vector<OptionSpec> specs;
  for (const options::Option& row : options::kOptions) {
    auto it = std::find_if(bound.begin(), bound.end(), [&](const OptionSpec& b) { return b.key == row.key; });
    if (it == bound.end()) throw std::logic_error("option " + std::string(row.key) + " has no field (server/Config.cpp)");
    OptionSpec spec = std::move(*it);
    bound.erase(it);
    spec.row = &row;
    spec.valueName = std::string(row.valueName);
    spec.description = std::string(row.help);
    spec.secret = row.kind == options::Kind::Secret;
    specs.push_back(std::move(spec));
  }
  if (!bound.empty()) {
    throw std::logic_error("field bound to " + bound.front().key + ", which is no option of common/Options.h");
  }
  return specs;
}

bool isChoice(std::string_view choices, std::string_view value) {
  const std::vector<std::string_view> words = choiceList(choices);
  return std::find(words.begin(), words.end(), value) != words.end();
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

TcpServerOptions ServerConfig::kafkaTcpOptions() const {
  TcpServerOptions o = tcpOptions();
  o.port = static_cast<uint16_t>(kafkaListenPort < 0 ? 0 : kafkaListenPort);
  o.internalPort.reset();
  return o;
}

uint16_t ServerConfig::effectiveKafkaAdvertisedPort(uint16_t boundPort) const {
  return kafkaAdvertisedPort != 0 ? static_cast<uint16_t>(kafkaAdvertisedPort) : boundPort;
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

// The table's own rules: an integer within its bounds, a choice among its
// words. "" or the first option that breaks one.
static std::string checkRows(const ServerConfig& c) {
  for (const OptionSpec& spec : optionSpecs()) {
    const options::Option& row = *spec.row;
    const std::string value = spec.get(c);
    if (row.kind == options::Kind::Integer) {
      int64_t n = 0;
      std::from_chars(value.data(), value.data() + value.size(), n);
      if (n >= row.min && n <= row.max) continue;
      return badValue(spec.key, value, "must be " + allowedValues(row));
    }
    if (row.kind == options::Kind::Choice && !isChoice(row.valueName, value)) {
      return badValue(spec.key, value, "must be " + allowedValues(row));
    }
  }
  return "";
}

std::string validateConfig(const ServerConfig& c) {
  if (auto why = checkRows(c); !why.empty()) return why;
  // The rules between options, and those on text.
  auto num = [](auto v) { return std::to_string(v); };
  if (c.listenAddress.empty()) return badValue("listen.address", c.listenAddress, "must not be empty");
  if (c.internalListenPort > 0 && c.internalListenPort == c.listenPort) {
    return badValue("internal.listen.port", num(c.internalListenPort), "must differ from listen.port");
  }
  if (c.kafkaListenPort > 0 && (c.kafkaListenPort == c.listenPort || c.kafkaListenPort == c.internalListenPort)) {
    return badValue("kafka.listen.port", num(c.kafkaListenPort), "must differ from listen.port and internal.listen.port");
  }
  if (c.kafkaConsumerHeartbeatIntervalMs * 2 > c.kafkaConsumerSessionTimeoutMs) {
    return badValue("kafka.group.consumer.heartbeat.interval.ms", num(c.kafkaConsumerHeartbeatIntervalMs),
                    "must be at most half of kafka.group.consumer.session.timeout.ms (" +
                        num(c.kafkaConsumerSessionTimeoutMs) + "), so that a member beats twice within its session");
  }
  if (c.kafkaMaxSessionTimeoutMs < c.kafkaMinSessionTimeoutMs) {
    return badValue("kafka.group.max.session.timeout.ms", num(c.kafkaMaxSessionTimeoutMs),
                    "must be at least kafka.group.min.session.timeout.ms (" + num(c.kafkaMinSessionTimeoutMs) + ")");
  }
  if (c.httpMaxConnectionsPerSource > c.httpMaxConnections) {
    return badValue("http.max.connections.per.source", num(c.httpMaxConnectionsPerSource),
                    "must be 1..http.max.connections (" + num(c.httpMaxConnections) + ")");
  }
  if (trim(c.zkConnect).empty()) return badValue("zk.connect", c.zkConnect, "must not be empty");
  if (auto why = checkZkPath(c.rootPath); !why.empty()) return badValue("zk.root", c.rootPath, why);
  if (auto why = checkZkPath(c.topicsPath); !why.empty()) return badValue("zk.topics.path", c.topicsPath, why);
  if (auto why = checkZkPath(c.brokersPath); !why.empty()) return badValue("zk.brokers.path", c.brokersPath, why);
  if (c.zkLeaseMarginMs > 0 && c.zkLeaseMarginMs >= c.zkSessionTimeoutMs) {
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
  if (c.maxSessionTimeoutMs < c.minSessionTimeoutMs) {
    return badValue("group.max.session.timeout.ms", num(c.maxSessionTimeoutMs),
                    "must be >= group.min.session.timeout.ms (" + num(c.minSessionTimeoutMs) + ")");
  }
  if (c.joinWindowMaxMs < c.joinWindowMs) {
    return badValue("group.join.window.max.ms", num(c.joinWindowMaxMs),
                    "must be group.join.window.ms (" + num(c.joinWindowMs) + ") .. 300000");
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
