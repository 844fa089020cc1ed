// ServerConfig: defaults, sources and their precedence, validation messages.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "server/Config.h"

namespace groupcoord::server {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    char name[] = "/tmp/groupcoord-config-XXXXXX";
    const int fd = ::mkstemp(name);
    EXPECT_GE(fd, 0);
    ::close(fd);
    path_ = name;
    std::ofstream(path_) << content;
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ConfigTest, DefaultsAreValidAndAsDocumented) {
  const auto result = loadConfig({});
  ASSERT_TRUE(result.ok()) << result.error;
  const ServerConfig& c = result.config;
  EXPECT_EQ(c.listenAddress, "0.0.0.0");
  EXPECT_EQ(c.listenPort, 7400);
  EXPECT_EQ(c.serverId, 1);
  EXPECT_EQ(c.zkConnect, "127.0.0.1:2181");
  EXPECT_EQ(c.rootPath, "/groupcoord");
  EXPECT_EQ(c.topicsPath, "/brokers/topics");
  EXPECT_EQ(c.brokersPath, "/brokers/ids");
  EXPECT_EQ(c.zkSessionTimeoutMs, 10000);
  EXPECT_EQ(c.minSessionTimeoutMs, 1000);
  EXPECT_EQ(c.maxSessionTimeoutMs, 300000);
  EXPECT_EQ(c.maxFrameBytes, 1 << 20);
  EXPECT_EQ(c.logLevel, "info");
  const auto tcp = c.tcpOptions();
  EXPECT_EQ(tcp.port, 7400);
  EXPECT_EQ(tcp.maxFrameBytes, 1 << 20);
  EXPECT_EQ(tcp.idleTimeout, std::chrono::milliseconds(30000));
  EXPECT_EQ(tcp.maxOutputBytes, size_t{4} << 20);
}

TEST(ConfigTest, NamesFollowFromTheKey) {
  EXPECT_EQ(cliName("zk.session.timeout.ms"), "zk-session-timeout-ms");
  EXPECT_EQ(envName("zk.connect"), "GROUPCOORDD_ZK_CONNECT");
  EXPECT_EQ(keyFromCliName("listen-port"), "listen.port");
  std::set<std::string> keys;
  for (const auto& spec : optionSpecs()) {
    EXPECT_TRUE(keys.insert(spec.key).second) << "duplicate key " << spec.key;
    EXPECT_FALSE(spec.description.empty()) << spec.key;
    EXPECT_NE(findOption(spec.key), nullptr);
  }
  for (const char* expected :
       {"listen.address", "listen.port", "advertised.host", "advertised.port", "server.id", "zk.connect", "zk.root",
        "zk.topics.path", "zk.brokers.path", "zk.session.timeout.ms", "zk.lease.margin.ms", "zk.digest.user", "zk.digest.password",
        "group.min.session.timeout.ms", "group.max.session.timeout.ms", "handover.settle.ms",
        "handover.max.in.flight", "max.frame.bytes", "max.connections",
        "max.inflight.per.connection", "idle.timeout.ms", "max.output.buffer.bytes", "io.threads", "log.level",
        "log.file", "shutdown.grace.ms", "port.file"}) {
    EXPECT_EQ(keys.count(expected), 1u) << expected;
  }
}

TEST(ConfigTest, CommandLineBeatsEnvironmentBeatsFileBeatsDefault) {
  TempFile file(
      "# a comment\n"
      "listen.port = 7001\n"
      "zk.connect=file:1\n"
      "server.id: 5\n"
      "\n"
      "! another comment\n"
      "log.level=debug\n");
  ConfigSources sources;
  sources.propertiesFile = file.path();
  sources.environment = {{"GROUPCOORDD_LISTEN_PORT", "7002"},
                         {"GROUPCOORDD_ZK_CONNECT", "env:1"},
                         {"PATH", "/usr/bin"},
                         {"GROUPCOORDD_NO_SUCH_THING", "x"}};
  sources.commandLine = {{"listen.port", "7003"}};
  const auto result = loadConfig(sources);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(result.config.listenPort, 7003);      // command line
  EXPECT_EQ(result.config.zkConnect, "env:1");    // environment over file
  EXPECT_EQ(result.config.serverId, 5);           // file
  EXPECT_EQ(result.config.logLevel, "debug");     // file
  EXPECT_EQ(result.config.rootPath, "/groupcoord");  // default
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("GROUPCOORDD_NO_SUCH_THING"), std::string::npos);
}

TEST(ConfigTest, TheFileCanComeFromTheEnvironment) {
  TempFile file("zk.root=/from/env/file\n");
  ConfigSources sources;
  sources.environment = {{kConfigFileEnv, file.path()}};
  const auto result = loadConfig(sources);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(result.config.rootPath, "/from/env/file");
}

// Loads with one command-line value and expects an error naming the option and the value.
void expectRejected(const std::string& key, const std::string& value, const std::string& alsoMentions = "") {
  SCOPED_TRACE(key + "=" + value);
  ConfigSources sources;
  sources.commandLine = {{key, value}};
  const auto result = loadConfig(sources);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error.find(key), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("'" + value + "'"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("--" + cliName(key)), std::string::npos) << result.error;
  if (!alsoMentions.empty()) {
    EXPECT_NE(result.error.find(alsoMentions), std::string::npos) << result.error;
  }
}

TEST(ConfigTest, BadValuesAreRefusedNamingTheOptionAndTheValue) {
  expectRejected("listen.port", "70000");
  expectRejected("listen.port", "-1");
  expectRejected("listen.port", "80x", "not an integer");
  expectRejected("listen.port", "");
  expectRejected("advertised.port", "65536");
  expectRejected("server.id", "-1");
  expectRejected("server.id", "99999999999", "out of range");
  expectRejected("zk.root", "groupcoord", "absolute");
  expectRejected("zk.root", "/groupcoord/", "'/'");
  expectRejected("zk.root", "/");
  expectRejected("zk.root", "/a//b");
  expectRejected("zk.root", "/a/../b");
  expectRejected("zk.topics.path", "brokers/topics");
  expectRejected("zk.brokers.path", "brokers/ids");
  expectRejected("zk.session.timeout.ms", "0");
  expectRejected("zk.lease.margin.ms", "-1");
  expectRejected("zk.lease.margin.ms", "10000");  // not below the session timeout (10000)
  expectRejected("group.min.session.timeout.ms", "0");
  expectRejected("group.max.session.timeout.ms", "999", "group.min.session.timeout.ms");
  expectRejected("handover.settle.ms", "-1");
  expectRejected("handover.max.in.flight", "0");
  expectRejected("max.frame.bytes", "10");
  expectRejected("max.connections", "0");
  expectRejected("max.inflight.per.connection", "0");
  expectRejected("idle.timeout.ms", "0");
  expectRejected("max.output.buffer.bytes", "100");
  expectRejected("io.threads", "-2");
  expectRejected("shutdown.grace.ms", "-5");
  expectRejected("log.level", "loud");
  expectRejected("listen.address", "");
}

TEST(ConfigTest, ErrorsSayWhereTheBadValueCameFrom) {
  TempFile file("max.connections=abc\n");
  ConfigSources sources;
  sources.propertiesFile = file.path();
  auto result = loadConfig(sources);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error.find("max.connections"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find(file.path()), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("line 1"), std::string::npos) << result.error;

  ConfigSources env;
  env.environment = {{"GROUPCOORDD_IDLE_TIMEOUT_MS", "soon"}};
  result = loadConfig(env);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error.find("GROUPCOORDD_IDLE_TIMEOUT_MS"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("'soon'"), std::string::npos) << result.error;
}

TEST(ConfigTest, UnknownKeysInTheFileAndUnreadableFilesAreErrors) {
  TempFile file("listen.prot=7400\n");
  ConfigSources sources;
  sources.propertiesFile = file.path();
  auto result = loadConfig(sources);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error.find("listen.prot"), std::string::npos) << result.error;

  sources.propertiesFile = "/nonexistent/groupcoordd.properties";
  result = loadConfig(sources);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error.find("/nonexistent/groupcoordd.properties"), std::string::npos) << result.error;

  TempFile noEquals("just some words\n");
  sources.propertiesFile = noEquals.path();
  result = loadConfig(sources);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error.find("key=value"), std::string::npos) << result.error;
}

TEST(ConfigTest, DigestUserAndPasswordGoTogetherAndThePasswordIsNeverShown) {
  ConfigSources sources;
  sources.commandLine = {{"zk.digest.user", "svc"}};
  auto result = loadConfig(sources);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error.find("zk.digest.password"), std::string::npos) << result.error;

  sources.commandLine = {{"zk.digest.user", "svc"}, {"zk.digest.password", "hunter2"}};
  result = loadConfig(sources);
  ASSERT_TRUE(result.ok()) << result.error;
  const std::string described = describeConfig(result.config);
  EXPECT_EQ(described.find("hunter2"), std::string::npos) << described;
  EXPECT_NE(described.find("zk.digest.password=****"), std::string::npos) << described;
  EXPECT_NE(described.find("zk.digest.user=svc"), std::string::npos) << described;
}

TEST(ConfigTest, AdvertisedEndpointDefaults) {
  ServerConfig c;
  c.listenAddress = "127.0.0.1";
  EXPECT_EQ(c.effectiveAdvertisedHost(), "127.0.0.1");
  EXPECT_EQ(c.effectiveAdvertisedPort(4321), 4321);
  c.listenAddress = "0.0.0.0";
  char host[256] = {0};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(c.effectiveAdvertisedHost(), std::string(host));
  c.advertisedHost = "gc1.example";
  c.advertisedPort = 9000;
  EXPECT_EQ(c.effectiveAdvertisedHost(), "gc1.example");
  EXPECT_EQ(c.effectiveAdvertisedPort(4321), 9000);
}

TEST(ConfigTest, TheInternalListenerIsOffUnlessAsked) {
  ServerConfig c;
  EXPECT_FALSE(c.tcpOptions().internalPort.has_value());
  c.internalListenPort = 0;
  ASSERT_TRUE(c.tcpOptions().internalPort.has_value());
  EXPECT_EQ(*c.tcpOptions().internalPort, 0);

  // Named after the machine as advertised.host would be, not after it.
  c.listenAddress = "0.0.0.0";
  c.advertisedHost = "127.0.0.1";
  char host[256] = {0};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(c.effectiveInternalAdvertisedHost(), std::string(host));
  EXPECT_EQ(c.effectiveInternalAdvertisedPort(7402), 7402);
  c.internalAdvertisedHost = "groupcoordd-1";
  c.internalAdvertisedPort = 17402;
  EXPECT_EQ(c.effectiveInternalAdvertisedHost(), "groupcoordd-1");
  EXPECT_EQ(c.effectiveInternalAdvertisedPort(7402), 17402);

  ConfigSources sources;
  sources.environment = {{"GROUPCOORDD_INTERNAL_LISTEN_PORT", "7402"},
                         {"GROUPCOORDD_INTERNAL_ADVERTISED_HOST", "groupcoordd-2"},
                         {"GROUPCOORDD_ZK_CONNECT_WAIT_MS", "0"}};
  const auto result = loadConfig(sources);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(result.config.internalListenPort, 7402);
  EXPECT_EQ(result.config.internalAdvertisedHost, "groupcoordd-2");
  EXPECT_EQ(result.config.zkConnectWaitMs, 0);
}

TEST(ConfigTest, TheInternalListenerNeedsAPortOfItsOwn) {
  expectRejected("internal.listen.port", "-2", "-1 (none)");
  expectRejected("internal.listen.port", "65536");
  expectRejected("internal.listen.port", "7400", "must differ from listen.port");
  expectRejected("internal.advertised.port", "70000");
  expectRejected("zk.connect.wait.ms", "-1", "no limit");
}

}  // namespace
}  // namespace groupcoord::server
