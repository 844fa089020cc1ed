// groupcoordd: the consumer-group coordination server.
//
// Shape (Poco's ServerApplication): options are defined and collected by
// Poco, the configuration is resolved and validated by server/Config, then
// main() binds, serves until SIGTERM/SIGINT and shuts down in order: stop
// accepting and reading, answer what is in flight, close connections, then
// Backend::shutdown() (the adapter closes its ZooKeeper session there).
// What serves requests comes from makeBackend() in server/MakeBackend.cpp.

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <Poco/Util/Option.h>
#include <Poco/Util/OptionSet.h>
#include <Poco/Util/ServerApplication.h>
#include <spdlog/spdlog.h>

#include "server/AuthGate.h"
#include "server/Backend.h"
#include "server/Config.h"
#include "server/HttpServer.h"
#include "server/KafkaPort.h"
#include "server/Logging.h"
#include "server/Metrics.h"
#include "server/OptionDocs.h"
#include "server/TcpServer.h"
#include "server/Tls.h"

#ifndef GROUPCOORD_VERSION
#define GROUPCOORD_VERSION "unknown"
#endif

namespace groupcoord::server {
namespace {

// Writes atomically (temporary file, then rename), so that a reader polling
// for the file never sees it half written.
bool writePortFile(const std::string& path, uint16_t port, std::string* error) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << '\n';
    if (!out) {
      *error = "cannot write '" + tmp + "'";
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename '" + tmp + "' to '" + path + "'";
    return false;
  }
  return true;
}

class GroupcoorddApp : public Poco::Util::ServerApplication {
 protected:
  void defineOptions(Poco::Util::OptionSet& options) override {
    ServerApplication::defineOptions(options);
    options.addOption(Poco::Util::Option("help", "h", "print every option with its default and exit")
                          .required(false)
                          .repeatable(false));
    options.addOption(
        Poco::Util::Option("version", "", "print the version and exit").required(false).repeatable(false));
    options.addOption(Poco::Util::Option("print-properties", "",
                                         "print a properties file of every option at its default, each with its help, "
                                         "and exit")
                          .required(false)
                          .repeatable(false));
    options.addOption(Poco::Util::Option("config", "c",
                                         std::string("read options from a properties file (key=value lines, keys as "
                                                     "below) [env: ") +
                                             kConfigFileEnv + "]")
                          .required(false)
                          .repeatable(false)
                          .argument("FILE"));
    for (const auto& spec : optionSpecs()) {
      options.addOption(Poco::Util::Option(cliName(spec.key), "", spec.description)
                            .required(false)
                            .repeatable(false)
                            .argument(spec.valueName));
    }
  }

  void handleOption(const std::string& name, const std::string& value) override {
    ServerApplication::handleOption(name, value);
    if (name == "help") {
      helpRequested_ = true;
      stopOptionsProcessing();
    } else if (name == "version") {
      versionRequested_ = true;
      stopOptionsProcessing();
    } else if (name == "print-properties") {
      propertiesRequested_ = true;
      stopOptionsProcessing();
    } else if (name == "config") {
      configFile_ = value;
    } else if (findOption(keyFromCliName(name)) != nullptr) {
      commandLine_[keyFromCliName(name)] = value;
    }
  }

  int main(const ArgVec& args) override {
    if (helpRequested_) {
      printHelp(std::cout);
      return EXIT_OK;
    }
    if (propertiesRequested_) {
      std::cout << propertiesFile();
      return EXIT_OK;
    }
    if (versionRequested_) {
      std::cout << "groupcoordd " << GROUPCOORD_VERSION << '\n';
      return EXIT_OK;
    }
    if (!args.empty()) {
      std::cerr << "groupcoordd: unexpected argument '" << args.front() << "' (see --help)\n";
      return EXIT_USAGE;
    }

    // Before any thread exists: every thread inherits the mask, so SIGTERM
    // and SIGINT reach only waitForStopSignal() and never kill the
    // process from an I/O thread. A client that goes away mid-write must not
    // kill it either.
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGINT);
    sigaddset(&stopSignals, SIGTERM);
    sigaddset(&stopSignals, SIGQUIT);
    sigaddset(&stopSignals, SIGHUP);  // reads the permissions file again (waitForStopSignal)
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    ConfigResult loaded = loadConfig(ConfigSources{commandLine_, processEnvironment(), configFile_});
    if (!loaded.ok()) {
      std::cerr << "groupcoordd: " << loaded.error << '\n';
      return EXIT_CONFIG;
    }
    const ServerConfig& config = loaded.config;
    if (auto err = setupLogging(config); !err.empty()) {
      std::cerr << "groupcoordd: " << err << '\n';
      return EXIT_CANTCREAT;
    }
    const int rc = serve(config, loaded.warnings);
    spdlog::shutdown();
    return rc;
  }

 private:
  // Poco's HelpFormatter wraps lines wherever a space falls; this layout
  // keeps each option's default, variable and key whole, one per line.
  void printHelp(std::ostream& out) const {
    out << "usage: " << commandName() << " [OPTION]...\n\n"
        << "Consumer-group coordination server in front of a ZooKeeper ensemble.\n"
        << "Every server option can be set on the command line, by its environment variable, or by its key in the\n"
        << "--config file; the command line wins over the environment, which wins over the file.\n\n"
        << "General options:\n";
    for (const auto& option : options()) {
      if (findOption(keyFromCliName(option.fullName())) != nullptr) continue;
      out << "  ";
      if (!option.shortName().empty()) out << '-' << option.shortName() << ", ";
      out << "--" << option.fullName();
      if (option.takesArgument()) out << '=' << option.argumentName();
      out << "\n      " << option.description() << '\n';
    }
    out << "\nServer options:\n";
    const ServerConfig defaults;
    for (const auto& spec : optionSpecs()) {
      std::string def = spec.get(defaults);
      if (def.empty()) def = "(empty)";
      out << "  --" << cliName(spec.key) << '=' << spec.valueName << "\n      " << helpWithAllowed(*spec.row)
          << "\n      default: " << def << "    env: " << envName(spec.key) << "    key: " << spec.key << '\n';
    }
  }

  // Loads the credentials file and the TLS files when they are configured;
  // the credentials go to *store too (the status page checks them).
  static bool setUpClientSecurity(const ServerConfig& config, TcpServerOptions& options,
                                  std::shared_ptr<const CredentialStore>* store, std::string* error) {
    if (!config.authCredentialsFile.empty()) {
      auto credentials = CredentialStore::load(config.authCredentialsFile, error);
      if (!credentials) return false;
      spdlog::info("authentication on: {} user(s) from '{}'; calls before Authenticate answer NOT_AUTHORIZED",
                   credentials->size(), config.authCredentialsFile);
      *store = credentials;
      options.auth = std::make_shared<AuthGate>(std::move(credentials));
      if (config.authPlain == "never") {
        options.auth->setPlainAuth(PlainAuth::Never);
        spdlog::info("auth.plain=never: Authenticate version 0 (the secret in the clear) is refused; clients use "
                     "SCRAM-SHA-256");
      } else if (config.authPlain == "tls") {
        options.auth->setPlainAuth(PlainAuth::TlsOnly);
        spdlog::info("auth.plain=tls: Authenticate version 0 (the secret in the clear) only on TLS connections");
      }
      if (!config.authPermissionsFile.empty()) {
        auto policy = permissions::Policy::load(config.authPermissionsFile, error);
        if (!policy) return false;
        spdlog::info("permissions on: {} rule(s) from '{}' decide every call on a group (SIGHUP reads the file "
                     "again)",
                     policy->rules().size(), config.authPermissionsFile);
        options.auth->setPermissions(std::move(policy));
      }
    } else {
      spdlog::info("authentication off (auth.credentials.file is not set): every client may make every call");
    }
    if (!config.tlsCertificateFile.empty()) {
      options.tls = TlsServerContext::create(config.tlsCertificateFile, config.tlsKeyFile, config.tlsCaFile, error);
      if (!options.tls) return false;
      spdlog::info("TLS on: certificate '{}'{}", config.tlsCertificateFile,
                   options.tls->requiresClientCertificate() ? ", client certificates required" : "");
    }
    return true;
  }

  // Blocks until SIGTERM, SIGINT or SIGQUIT (blocked in every thread since
  // start). SIGHUP meanwhile reads the permissions file again: a good file
  // replaces the rules at once, for every connection, none dropped; a bad
  // one is refused, logged with its line, and the rules in force stay.
  static void waitForStopSignal(const ServerConfig& config, AuthGate* gate) {
    sigset_t signals;
    sigemptyset(&signals);
    for (int sig : {SIGINT, SIGTERM, SIGQUIT, SIGHUP}) sigaddset(&signals, sig);
    for (;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) continue;
      if (sig != SIGHUP) return;
      if (config.authPermissionsFile.empty() || gate == nullptr) {
        spdlog::info("SIGHUP: no auth.permissions.file is set; nothing to read again");
        continue;
      }
      std::string error;
      auto policy = permissions::Policy::load(config.authPermissionsFile, &error);
      auto old = gate->permissions();
      const size_t before = old ? old->rules().size() : 0;
      if (!policy) {
        spdlog::error("SIGHUP: {}; refused, the {} rule(s) in force stay", error, before);
        continue;
      }
      spdlog::info("SIGHUP: permissions read again from '{}': {} rule(s) in force (were {})",
                   config.authPermissionsFile, policy->rules().size(), before);
      gate->setPermissions(std::move(policy));
    }
  }

  // Registers every metric and starts the HTTP server unless http.port is
  // -1. EXIT_OK, or the exit code after logging why it could not start.
  static int startHttp(const ServerConfig& config, metrics::Registry& registry, const RequestMetrics& requestMetrics,
                       const TcpServer& server, Backend& backend, const std::atomic<bool>& stopping,
                       std::shared_ptr<const CredentialStore> credentials, std::shared_ptr<AuthGate> gate,
                       std::unique_ptr<HttpServer>& http) {
    requestMetrics.registerWith(registry);
    registerConnectionMetrics(registry, [&server] { return server.stats(); });
    backend.registerMetrics(registry);
    registry.add("groupcoord_build_info", "Always 1; the label says which groupcoordd runs", metrics::Type::Gauge,
                 [](metrics::FamilyWriter& w) { w.value({{"version", GROUPCOORD_VERSION}}, 1); });
    if (config.httpPort < 0) {
      spdlog::info("HTTP server off (http.port=-1): no status page, /metrics, /health/live or /health/ready");
      return EXIT_OK;
    }
    HttpOptions options = config.httpOptions();
    options.status = backend.statusSource();
    options.credentials = std::move(credentials);
    if (gate && !config.authPermissionsFile.empty()) {
      options.permissions = [gate] { return gate->permissions(); };
    }
    options.tlsCertificateFile = config.tlsCertificateFile;
    options.tlsKeyFile = config.tlsKeyFile;
    http = std::make_unique<HttpServer>(options, registry, [&stopping, &backend] {
      return stopping.load() ? std::string("shutting down") : backend.notReadyReason();
    });
    std::string error;
    if (!http->start(&error)) {
      spdlog::critical("{}", error);
      return EXIT_UNAVAILABLE;
    }
    registerHttpMetrics(registry, [server = http.get()] { return server->stats(); });
    if (!config.httpPortFile.empty() && !writePortFile(config.httpPortFile, http->port(), &error)) {
      spdlog::critical("{}", error);
      return EXIT_CANTCREAT;
    }
    spdlog::info("serving the status page (/, /api/{}), /metrics, /health/live and /health/ready over {} on {}:{}",
                 options.credentials ? ", admins only" : "", options.tlsCertificateFile.empty() ? "HTTP" : "HTTPS",
                 options.address, http->port());
    return EXIT_OK;
  }

  int serve(const ServerConfig& config, const std::vector<std::string>& warnings) {
    spdlog::info("groupcoordd {} starting", GROUPCOORD_VERSION);
    for (const auto& w : warnings) spdlog::warn("{}", w);
    {
      std::istringstream lines(describeConfig(config));
      for (std::string line; std::getline(lines, line);) spdlog::info("config {}", line);
    }
    const uint64_t fileLimit = raiseOpenFileLimit();
    if (fileLimit < static_cast<uint64_t>(config.maxConnections) + 64) {
      spdlog::warn("the open-file limit ({}) is below max.connections ({}) plus a margin: connections will fail at "
                   "accept before the limit is reached",
                   fileLimit, config.maxConnections);
    }

    // Both outlive the Backend: its last answers (at shutdown) are still
    // counted, and the registry reads the Backend's metrics.
    RequestMetrics requestMetrics;
    KafkaRequestMetrics kafkaMetrics;  // the Kafka port's, when it is on
    metrics::Registry registry;
    std::atomic<bool> stopping{false};

    std::unique_ptr<Backend> backend;
    try {
      backend = makeBackend(config);
    } catch (const std::exception& e) {
      spdlog::critical("cannot set up the request handler: {}", e.what());
      return EXIT_SOFTWARE;
    }

    std::string error;
    TcpServerOptions tcpOptions = config.tcpOptions();
    std::shared_ptr<const CredentialStore> credentials;
    if (!setUpClientSecurity(config, tcpOptions, &credentials, &error)) {
      spdlog::critical("{}", error);
      return EXIT_CONFIG;
    }
    tcpOptions.observer = &requestMetrics;
    TcpServer server(tcpOptions, backend->handler());
    if (!server.bind(&error)) {
      spdlog::critical("{}", error);
      return EXIT_UNAVAILABLE;
    }
    // The Kafka port (docs/kafka.md), bound now so that its port is in this
    // server's registration; it serves once the coordinator does.
    std::unique_ptr<TcpServer> kafkaServer;
    if (config.kafkaListenPort >= 0) {
      protocol::kafka::Handler* kafkaHandler = backend->kafkaHandler();
      if (kafkaHandler == nullptr) {
        spdlog::critical("kafka.listen.port is set but this server's backend answers no Kafka request");
        return EXIT_CONFIG;
      }
      TcpServerOptions kafkaOptions = config.kafkaTcpOptions();
      kafkaOptions.tls = tcpOptions.tls;
      // With authentication on, the binary port's gate: the same credentials,
      // auth.plain, throttle and permissions (docs/protocol.md, "Security on
      // the Kafka port").
      kafkaServer = std::make_unique<TcpServer>(
          kafkaOptions, std::make_unique<KafkaProtocol>(*kafkaHandler, tcpOptions.auth, &kafkaMetrics));
      kafkaMetrics.registerWith(registry);
      if (!kafkaServer->bind(&error)) {
        spdlog::critical("{} (kafka.listen.port)", error);
        return EXIT_UNAVAILABLE;
      }
    }
    // Up before ZooKeeper is reached: /health/live answers and /health/ready
    // says why it is not ready yet.
    std::unique_ptr<HttpServer> http;
    if (int rc = startHttp(config, registry, requestMetrics, server, *backend, stopping, credentials, tcpOptions.auth,
                           http); rc != EXIT_OK) {
      return rc;
    }
    AdvertisedEndpoint self{config.serverId, config.effectiveAdvertisedHost(),
                            config.effectiveAdvertisedPort(server.port())};
    if (server.internalPort() != 0) {
      self.internalHost = config.effectiveInternalAdvertisedHost();
      self.internalPort = config.effectiveInternalAdvertisedPort(server.internalPort());
    }
    if (kafkaServer) self.kafkaPort = config.effectiveKafkaAdvertisedPort(kafkaServer->port());
    // SIGTERM and SIGINT are blocked (above) and wait, pending, for
    // waitForStopSignal(); while the backend waits for ZooKeeper
    // they end that wait instead.
    const auto stopPending = [] {
      sigset_t pending;
      sigemptyset(&pending);
      if (sigpending(&pending) != 0) return false;
      for (int sig : {SIGINT, SIGTERM, SIGQUIT}) {
        if (sigismember(&pending, sig) == 1) return true;
      }
      return false;
    };
    if (!backend->start(self, stopPending, &error)) {
      if (stopPending()) {
        spdlog::info("termination requested while starting: {}; exiting", error);
        if (http) http->stop();
        return EXIT_OK;
      }
      spdlog::critical("cannot start serving: {}", error);
      return EXIT_UNAVAILABLE;
    }
    if (!server.start(&error)) {
      spdlog::critical("{}", error);
      backend->shutdown();
      return EXIT_UNAVAILABLE;
    }
    if (kafkaServer && !kafkaServer->start(&error)) {
      spdlog::critical("{} (kafka.listen.port)", error);
      server.stop();
      backend->shutdown();
      return EXIT_UNAVAILABLE;
    }
    if (kafkaServer && !config.kafkaPortFile.empty() &&
        !writePortFile(config.kafkaPortFile, kafkaServer->port(), &error)) {
      spdlog::critical("{}", error);
      kafkaServer->stop();
      server.stop();
      backend->shutdown();
      return EXIT_CANTCREAT;
    }
    if (!config.portFile.empty() && !writePortFile(config.portFile, server.port(), &error)) {
      spdlog::critical("{}", error);
      server.stop();
      backend->shutdown();
      return EXIT_CANTCREAT;
    }
    spdlog::info("groupcoordd listening on {}:{} (server id {}, advertised as {}:{}; {} I/O thread(s))",
                 config.listenAddress, server.port(), self.serverId, self.host, self.port, server.ioThreads());
    if (kafkaServer) {
      spdlog::info("Kafka port on {}:{} (advertised to Kafka clients as {}:{}; docs/kafka.md){}", config.listenAddress,
                   kafkaServer->port(), self.host, self.kafkaPort,
                   tcpOptions.auth ? "; SASL first: SCRAM-SHA-256, and PLAIN where auth.plain allows it" : "");
    }
    if (server.internalPort() != 0) {
      spdlog::info("internal listener on {}:{} (advertised inside the network as {}:{})", config.listenAddress,
                   server.internalPort(), self.internalHost, self.internalPort);
    }
    spdlog::default_logger()->flush();

    waitForStopSignal(config, tcpOptions.auth.get());

    spdlog::info("termination requested: shutting down");
    stopping = true;  // /health/ready answers 503 from now on
    const auto stopStarted = std::chrono::steady_clock::now();
    if (kafkaServer) kafkaServer->stop();
    backend->releaseHeld();
    server.stop();
    if (tcpOptions.auth) tcpOptions.auth->stop();
    const auto connectionsClosed = std::chrono::steady_clock::now();
    backend->shutdown();
    const auto backendStopped = std::chrono::steady_clock::now();
    auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
    spdlog::info("shutdown took {} ms: {} ms to answer what was in flight and close every connection, {} ms to stop "
                 "the coordinator and close the ZooKeeper session",
                 ms(backendStopped - stopStarted), ms(connectionsClosed - stopStarted),
                 ms(backendStopped - connectionsClosed));
    if (http) http->stop();
    const auto stats = server.stats();
    spdlog::info("groupcoordd stopped ({} connection(s) served, {} request(s) received)", stats.connectionsAccepted,
                 stats.requestsReceived);
    return EXIT_OK;
  }

  bool helpRequested_ = false;
  bool propertiesRequested_ = false;
  bool versionRequested_ = false;
  std::string configFile_;
  std::map<std::string, std::string> commandLine_;
};

}  // namespace
}  // namespace groupcoord::server

POCO_SERVER_MAIN(groupcoord::server::GroupcoorddApp)
