// groupcoordd with authentication and with TLS, as processes against the
// live ensemble, driven by raw connections and by the client library.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/Layout.h"
#include "client/Admin.h"
#include "client/Connection.h"
#include "client/Consumer.h"
#include "protocol/Codec.h"
#include "server/Auth.h"
#include "support/ServerProcess.h"
#include "support/TestCertificates.h"
#include "support/TestEnv.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using client::Admin;
using client::AdminOptions;
using client::Connection;
using client::Consumer;
using client::ConsumerConfig;
using client::IoStatus;
using client::SecurityOptions;
using protocol::ErrorCode;

constexpr const char* kAdminSecret = "ops secret: 7f3a";
constexpr const char* kMemberSecret = "app-secret-09bc";

// The server's ZooKeeper session timeout, as configured below.
constexpr std::chrono::milliseconds kZkSessionTimeout{4000};
// group.join.window.max.ms, the default: the longest a join waits in the
// group's batch.
constexpr std::chrono::milliseconds kJoinWindowMax{3000};
// A consumer is assigned its partitions once its join has left the batch
// and been written; it polls, and may register twice. Room for that, polled.
constexpr auto kAssignedWithin = 20s;

// How long a call is waited for: a registration leaves the batch within the
// join window, and an answer that needs ZooKeeper comes within the server's
// ZooKeeper session (past it the server answers CONTROLLER_NOT_AVAILABLE);
// plus the scheduling allowance (tests/README.md, "Time in tests").
std::chrono::milliseconds answerWait() { return designBound(kJoinWindowMax + kZkSessionTimeout); }

// The client library's Admin, waiting answerWait() for each request.
AdminOptions adminOptions() {
  AdminOptions o;
  o.requestTimeout = answerWait();
  return o;
}

std::string makeTempDir() {
  char tmpl[] = "/tmp/groupcoord-authtls-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  return d ? d : "/tmp";
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// Runs a shell command, its output discarded unless it redirects standard
// output itself; its exit code.
int run(const std::string& command, bool ownsStdout = false) {
  const int rc = std::system((command + (ownsStdout ? " 2>/dev/null" : " >/dev/null 2>&1")).c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

ErrorCode errorOf(const protocol::DecodedResponse& r) {
  return r.ok ? protocol::responseError(r.response) : ErrorCode::UNKNOWN_SERVER_ERROR;
}

// A root and a topics path of its own (topic "alpha", 2 partitions), and a
// scratch directory for credentials and certificates.
class SecuredServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("authtls");
    topicsPath_ = root_ + "-topics";
    dir_ = makeTempDir();
    zk::SessionConfig zc;
    zc.connect = zkConnect();
    zc.sessionTimeout = 10000ms;
    zk_ = std::make_unique<zk::Session>(zc);
    ASSERT_EQ(zk_->start(), zk::Error::Ok);
    ASSERT_EQ(zk_->waitConnected(designBound(zc.sessionTimeout)), zk::Error::Ok);
    ASSERT_EQ(zk_->ensurePathSync(topicsPath_), zk::Error::Ok);
    ASSERT_EQ(zk_->createSync(topicsPath_ + "/alpha", layout::encodeTopic(2), zk::CreateMode::Persistent).error,
              zk::Error::Ok);
  }

  // The scratch directory holds keys and secrets: it goes with the test.
  void TearDown() override {
    std::error_code ignored;
    if (dir_.rfind("/tmp/groupcoord-authtls-", 0) == 0) std::filesystem::remove_all(dir_, ignored);
  }

  std::string credentialsFile() {
    std::string error;
    const std::string admin = server::makeCredentialLine("ops", server::Role::Admin, kAdminSecret, 10000, &error);
    const std::string member = server::makeCredentialLine("app", server::Role::Member, kMemberSecret, 10000, &error);
    EXPECT_FALSE(admin.empty() || member.empty()) << error;
    const std::string path = dir_ + "/credentials";
    writeFile(path, "# test users\n" + admin + "\n" + member + "\n");
    return path;
  }

  std::unique_ptr<ServerProcess> startServer(std::vector<std::string> extra) {
    std::vector<std::string> args{"--zk-root=" + root_, "--zk-topics-path=" + topicsPath_,
                                  "--zk-session-timeout-ms=" + std::to_string(kZkSessionTimeout.count()),
                                  "--io-threads=2"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto s = std::make_unique<ServerProcess>(args);
    EXPECT_TRUE(s->start());
    return s;
  }

  Connection connect(uint16_t port, const SecurityOptions& security = {}) {
    Connection c;
    c.setSecurity(security);
    EXPECT_TRUE(c.connect("127.0.0.1", port, answerWait())) << c.lastError();
    return c;
  }

  static SecurityOptions user(const std::string& name, const std::string& secret) {
    SecurityOptions s;
    s.user = name;
    s.secret = secret;
    return s;
  }

  std::string root_;
  std::string topicsPath_;
  std::string dir_;
  std::unique_ptr<zk::Session> zk_;
};

// ---- Authentication -------------------------------------------------------------

TEST_F(SecuredServerTest, WithoutAuthConfiguredEverythingIsAsBeforeAndAuthenticateAnswersNone) {
  auto server = startServer({});
  Connection c = connect(server->port());
  auto listed = c.call(protocol::ListGroupsRequest{}, answerWait());
  ASSERT_TRUE(listed.ok) << listed.detail;
  EXPECT_EQ(errorOf(listed), ErrorCode::NONE);
  auto created = c.call(protocol::CreateGroupRequest{"g1", 4000, {"alpha"}, false}, answerWait());
  EXPECT_EQ(errorOf(created), ErrorCode::NONE) << server->log();
  auto auth = c.call(protocol::AuthenticateRequest{"nobody", "anything"}, answerWait());
  ASSERT_TRUE(auth.ok) << auth.detail;
  ASSERT_TRUE(std::holds_alternative<protocol::AuthenticateResponse>(auth.response));
  EXPECT_EQ(errorOf(auth), ErrorCode::NONE);
  // Deleting needs no role without authentication.
  Admin admin({{"127.0.0.1", server->port()}}, adminOptions());
  EXPECT_TRUE(admin.deleteGroup("g1").ok());
}

TEST_F(SecuredServerTest, CallsBeforeAuthenticateAndAfterAWrongSecretAreNotAuthorizedAndLogged) {
  auto server = startServer({"--auth-credentials-file=" + credentialsFile()});
  Connection c = connect(server->port());
  EXPECT_EQ(errorOf(c.call(protocol::ListGroupsRequest{}, answerWait())), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(errorOf(c.call(protocol::HeartbeatRequest{"g", "m", 0}, answerWait())), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(errorOf(c.call(protocol::CreateGroupRequest{"g", 4000, {}, false}, answerWait())),
            ErrorCode::NOT_AUTHORIZED);

  // A wrong secret, and an unknown user: refused, and the connection stays unauthenticated.
  EXPECT_EQ(errorOf(c.call(protocol::AuthenticateRequest{"app", "not-the-secret"}, answerWait())),
            ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(errorOf(c.call(protocol::ListGroupsRequest{}, answerWait())), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(errorOf(c.call(protocol::AuthenticateRequest{"mallory", kMemberSecret}, answerWait())),
            ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(errorOf(c.call(protocol::ListGroupsRequest{}, answerWait())), ErrorCode::NOT_AUTHORIZED);
  // The connection is still served: the right secret works on it.
  EXPECT_EQ(errorOf(c.call(protocol::AuthenticateRequest{"app", kMemberSecret}, answerWait())), ErrorCode::NONE);
  EXPECT_EQ(errorOf(c.call(protocol::ListGroupsRequest{}, answerWait())), ErrorCode::NONE);
  // A failed re-authentication drops what the connection had.
  EXPECT_EQ(errorOf(c.call(protocol::AuthenticateRequest{"app", "wrong"}, answerWait())), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(errorOf(c.call(protocol::ListGroupsRequest{}, answerWait())), ErrorCode::NOT_AUTHORIZED);

  const std::string log = server->log();
  EXPECT_NE(log.find("authentication on: 2 user(s)"), std::string::npos) << log;
  EXPECT_NE(log.find("refused ListGroups from 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("(not authenticated)"), std::string::npos) << log;
  EXPECT_NE(log.find("authentication of user 'app' from 127.0.0.1:"), std::string::npos) << log;
  EXPECT_EQ(log.find(kMemberSecret), std::string::npos) << "a secret reached the log";
  EXPECT_EQ(log.find("not-the-secret"), std::string::npos) << "a secret reached the log";

  // The client library reports a refused Authenticate as NOT_AUTHORIZED, not as an unreachable server.
  AdminOptions options = adminOptions();
  options.security = user("app", "wrong");
  Admin admin({{"127.0.0.1", server->port()}}, options);
  auto listed = admin.listGroups();
  EXPECT_EQ(listed.status.code, ErrorCode::NOT_AUTHORIZED) << listed.status.message;
}

TEST_F(SecuredServerTest, AMemberJoinsHeartbeatsAndCommitsButOnlyAnAdminDeletesAndRewinds) {
  auto server = startServer({"--auth-credentials-file=" + credentialsFile()});
  const std::vector<client::Endpoint> bootstrap{{"127.0.0.1", server->port()}};

  AdminOptions memberOptions = adminOptions();
  memberOptions.security = user("app", kMemberSecret);
  Admin asMember(bootstrap, memberOptions);
  // Members may create groups: creating destroys nothing and is idempotent.
  ASSERT_TRUE(asMember.createGroup("orders", 4000ms, {"alpha"}, false).ok());

  ConsumerConfig cc;
  cc.bootstrap = bootstrap;
  cc.group = "orders";
  cc.clientId = "member-1";
  cc.security = user("app", kMemberSecret);
  Consumer consumer(cc, {});
  const auto deadline = std::chrono::steady_clock::now() + designBound(kAssignedWithin);
  while (consumer.assignment().size() < 2 && std::chrono::steady_clock::now() < deadline) consumer.poll(200ms);
  ASSERT_EQ(consumer.assignment().size(), 2u) << server->log();
  ASSERT_TRUE(consumer.poll(300ms).ok());  // heartbeats
  // A commit the library gave up on (its requests are capped at half the
  // group's session) is made again, as a client would: the same offsets.
  ASSERT_TRUE(eventuallyWithin(answerWait(),
                               [&] { return consumer.commitSync({{"alpha", 0, 42}, {"alpha", 1, 7}}).ok(); }));
  auto offsets = asMember.fetchOffsets("orders");
  ASSERT_TRUE(offsets.ok()) << offsets.status.message;
  EXPECT_EQ(offsets.value.size(), 2u);

  auto rewound = asMember.rewind("orders", {{"alpha", 0, 0}});
  EXPECT_EQ(rewound.status.code, ErrorCode::NOT_AUTHORIZED) << rewound.status.message;
  EXPECT_EQ(asMember.deleteGroup("orders").code, ErrorCode::NOT_AUTHORIZED);

  AdminOptions asAdminOptions = adminOptions();
  asAdminOptions.security = user("ops", kAdminSecret);
  Admin asAdmin(bootstrap, asAdminOptions);
  auto adminRewind = asAdmin.rewind("orders", {{"alpha", 0, 5}});
  ASSERT_TRUE(adminRewind.ok()) << adminRewind.status.message;
  auto after = asAdmin.fetchOffsets("orders", {"alpha"});
  ASSERT_TRUE(after.ok());
  bool sawRewound = false;
  for (const auto& po : after.value) sawRewound |= po.partition == 0 && po.offset == 5;
  EXPECT_TRUE(sawRewound);

  EXPECT_TRUE(consumer.close().ok());
  // The leave is written with the next transaction: until then the group is
  // not empty. Polled up to answerWait().
  auto deleted = asAdmin.deleteGroup("orders");
  eventuallyWithin(answerWait(), [&] {
    if (deleted.code != ErrorCode::GROUP_NOT_EMPTY) return true;
    deleted = asAdmin.deleteGroup("orders");
    return deleted.code != ErrorCode::GROUP_NOT_EMPTY;
  }, 100ms);
  EXPECT_TRUE(deleted.ok()) << deleted.message;

  const std::string log = server->log();
  EXPECT_NE(log.find("refused RewindConsumer from 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("(user 'app', role member)"), std::string::npos) << log;
}

TEST_F(SecuredServerTest, ABadCredentialsFileStopsTheServerAtStartWithTheLineNumber) {
  const std::string path = dir_ + "/bad-credentials";
  writeFile(path, "# first\nalice:admin:pbkdf2-sha256:10000:00\n");
  ServerProcess server({"--zk-root=" + root_, "--auth-credentials-file=" + path});
  // It stops at once, before any ZooKeeper: start() sees it end.
  EXPECT_FALSE(server.start(schedulingAllowance()));
  const std::string log = server.log();
  EXPECT_NE(log.find("credentials file '" + path + "' line 2:"), std::string::npos) << log;
}

TEST_F(SecuredServerTest, GroupctlMakesACredentialLineAndAuthenticatesFromASecretFile) {
  const std::string groupctl = binaryPath("client/groupctl");
  const std::string out = dir_ + "/line";
  ASSERT_EQ(run("printf '%s\\n' 'from stdin' | " + groupctl + " auth hash --user cli --role admin --iterations 20000 > " +
                    out,
                true),
            0);
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("cli:admin:scram-sha-256:20000:", 0), 0u) << line;
  std::string error;
  auto store = server::CredentialStore::parse(line, "groupctl output", &error);
  ASSERT_NE(store, nullptr) << error;
  EXPECT_EQ(store->verify("cli", "from stdin"), server::Role::Admin);
  // No secret on standard input: a usage error, nothing printed.
  EXPECT_EQ(run("printf '' | " + groupctl + " auth hash --user cli --role admin"), 2);

  const std::string credentials = dir_ + "/cli-credentials";
  writeFile(credentials, line + "\n");
  auto server = startServer({"--auth-credentials-file=" + credentials});
  const std::string secretFile = dir_ + "/secret";
  writeFile(secretFile, "from stdin\n");
  const std::string bootstrap = " --bootstrap 127.0.0.1:" + std::to_string(server->port());
  EXPECT_EQ(run(groupctl + bootstrap + " --user cli --secret-file " + secretFile + " list"), 0) << server->log();
  EXPECT_EQ(run(groupctl + bootstrap + " list"), 1);
  writeFile(secretFile, "not it\n");
  EXPECT_EQ(run(groupctl + bootstrap + " --user cli --secret-file " + secretFile + " list"), 1);
}

// ---- TLS --------------------------------------------------------------------------

// A CA and a server certificate for localhost / 127.0.0.1, a second CA that
// signed nothing of the server's, and a client certificate
// (support/TestCertificates.h).
class TlsServerTest : public SecuredServerTest {
 protected:
  void SetUp() override {
    SecuredServerTest::SetUp();
    if (HasFatalFailure()) return;
    const std::string failed = makeTestCertificates(dir_);
    ASSERT_EQ(failed, "") << "could not make the test certificates";
  }

  std::unique_ptr<ServerProcess> startTlsServer(std::vector<std::string> extra = {}) {
    extra.push_back("--tls-certificate-file=" + dir_ + "/server.pem");
    extra.push_back("--tls-key-file=" + dir_ + "/server.key");
    return startServer(extra);
  }

  SecurityOptions tls(const std::string& ca) const {
    SecurityOptions s;
    s.tlsCaFile = ca;
    return s;
  }
};

TEST_F(TlsServerTest, AConsumerJoinsHeartbeatsAndCommitsOverTls) {
  auto server = startTlsServer();
  const std::vector<client::Endpoint> bootstrap{{"127.0.0.1", server->port()}};
  AdminOptions options = adminOptions();
  options.security = tls(dir_ + "/ca.pem");
  Admin admin(bootstrap, options);
  ASSERT_TRUE(admin.createGroup("tls-group", 4000ms, {"alpha"}, false).ok()) << server->log();

  ConsumerConfig cc;
  cc.bootstrap = bootstrap;
  cc.group = "tls-group";
  cc.clientId = "tls-member";
  cc.security = tls(dir_ + "/ca.pem");
  Consumer consumer(cc, {});
  const auto deadline = std::chrono::steady_clock::now() + designBound(kAssignedWithin);
  while (consumer.assignment().size() < 2 && std::chrono::steady_clock::now() < deadline) consumer.poll(200ms);
  ASSERT_EQ(consumer.assignment().size(), 2u) << server->log();
  ASSERT_TRUE(consumer.poll(300ms).ok());
  // Made again if the library gave up on it (see above).
  ASSERT_TRUE(eventuallyWithin(answerWait(), [&] { return consumer.commitSync({{"alpha", 1, 99}}).ok(); }));
  auto offsets = admin.fetchOffsets("tls-group", {"alpha"});
  ASSERT_TRUE(offsets.ok());
  bool saw = false;
  for (const auto& po : offsets.value) saw |= po.partition == 1 && po.offset == 99;
  EXPECT_TRUE(saw);

  // A raw connection by name (hostname checked against DNS:localhost) pipelines over TLS.
  Connection c;
  c.setSecurity(tls(dir_ + "/ca.pem"));
  ASSERT_TRUE(c.connect("localhost", server->port(), answerWait())) << c.lastError();
  EXPECT_TRUE(c.isTls());
  for (int i = 0; i < 50; ++i) ASSERT_GT(c.send(protocol::ListGroupsRequest{{"tls-group"}}), 0);
  for (int i = 0; i < 50; ++i) {
    auto r = c.receive(protocol::ApiKey::ListGroups, answerWait());
    ASSERT_TRUE(r.ok) << r.detail;
    EXPECT_EQ(r.header.correlationId, i + 1);
  }
  EXPECT_TRUE(consumer.close().ok());
  EXPECT_NE(server->log().find("TLS on: certificate"), std::string::npos);
}

TEST_F(TlsServerTest, APlainClientIsClosedCleanlyAndOthersAreUnaffected) {
  auto server = startTlsServer();
  Connection secure;
  secure.setSecurity(tls(dir_ + "/ca.pem"));
  ASSERT_TRUE(secure.connect("127.0.0.1", server->port(), answerWait())) << secure.lastError();

  Connection plain;
  ASSERT_TRUE(plain.connect("127.0.0.1", server->port(), answerWait()));
  plain.send(protocol::ListGroupsRequest{});
  std::vector<uint8_t> body;
  const IoStatus status = plain.receiveFrame(body, answerWait());
  EXPECT_TRUE(status == IoStatus::Closed || status == IoStatus::Error) << client::ioStatusName(status);

  // The TLS client is served as before, and the server still runs.
  auto r = secure.call(protocol::ListGroupsRequest{}, answerWait());
  ASSERT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(errorOf(r), ErrorCode::NONE);
  EXPECT_TRUE(server->running());
  EXPECT_NE(server->log().find("TLS handshake failed"), std::string::npos) << server->log();
}

TEST_F(TlsServerTest, AClientRefusesAServerItsCaDidNotSignOrOfAnotherName) {
  auto server = startTlsServer();
  Connection wrongCa;
  wrongCa.setSecurity(tls(dir_ + "/other.pem"));
  EXPECT_FALSE(wrongCa.connect("127.0.0.1", server->port(), answerWait()));
  EXPECT_NE(wrongCa.lastError().find("certificate"), std::string::npos) << wrongCa.lastError();

  SecurityOptions otherName = tls(dir_ + "/ca.pem");
  otherName.tlsServerName = "groupcoord.example";
  Connection misnamed;
  misnamed.setSecurity(otherName);
  EXPECT_FALSE(misnamed.connect("127.0.0.1", server->port(), answerWait()));

  // With name checks off, the right CA is enough.
  otherName.tlsVerifyHostname = false;
  Connection unnamed;
  unnamed.setSecurity(otherName);
  EXPECT_TRUE(unnamed.connect("127.0.0.1", server->port(), answerWait())) << unnamed.lastError();
  EXPECT_TRUE(server->running());
}

TEST_F(TlsServerTest, WithACaFileTheServerServesOnlyClientsWithACertificateItSigned) {
  auto server = startTlsServer({"--tls-ca-file=" + dir_ + "/ca.pem"});
  EXPECT_NE(server->log().find("client certificates required"), std::string::npos) << server->log();

  SecurityOptions withCert = tls(dir_ + "/ca.pem");
  withCert.tlsCertificateFile = dir_ + "/client.pem";
  withCert.tlsKeyFile = dir_ + "/client.key";
  Connection good;
  good.setSecurity(withCert);
  ASSERT_TRUE(good.connect("127.0.0.1", server->port(), answerWait())) << good.lastError();
  EXPECT_EQ(errorOf(good.call(protocol::ListGroupsRequest{}, answerWait())), ErrorCode::NONE);

  // Without a certificate: with TLS 1.3 the client may finish its side of
  // the handshake before the server refuses it, so the refusal shows on the
  // first call at the latest.
  Connection anonymous;
  anonymous.setSecurity(tls(dir_ + "/ca.pem"));
  bool served = false;
  if (anonymous.connect("127.0.0.1", server->port(), answerWait())) {
    auto r = anonymous.call(protocol::ListGroupsRequest{}, answerWait());
    served = r.ok;
    EXPECT_NE(anonymous.lastStatus(), IoStatus::Timeout) << anonymous.lastError();
  }
  EXPECT_FALSE(served) << "a client without a certificate was served";
  // The refused client cost nobody else anything.
  EXPECT_EQ(errorOf(good.call(protocol::ListGroupsRequest{}, answerWait())), ErrorCode::NONE);
  EXPECT_TRUE(server->running());
}

TEST_F(TlsServerTest, AuthenticationOverTls) {
  auto server = startTlsServer({"--auth-credentials-file=" + credentialsFile()});
  SecurityOptions s = tls(dir_ + "/ca.pem");
  s.user = "ops";
  s.secret = kAdminSecret;
  Connection c = connect(server->port(), s);
  ASSERT_TRUE(c.isOpen());
  EXPECT_EQ(errorOf(c.call(protocol::CreateGroupRequest{"tls-auth", 4000, {}, false}, answerWait())), ErrorCode::NONE);
  EXPECT_EQ(errorOf(c.call(protocol::DeleteGroupRequest{"tls-auth"}, answerWait())), ErrorCode::NONE) << server->log();

  s.secret = "wrong";
  Connection refused;
  refused.setSecurity(s);
  EXPECT_FALSE(refused.connect("127.0.0.1", server->port(), answerWait()));
  EXPECT_TRUE(refused.authRefused()) << refused.lastError();
}

}  // namespace
}  // namespace groupcoord::testing
