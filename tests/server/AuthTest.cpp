// The credentials file (parser, hash check) and the authentication gate in
// front of a protocol::Handler, without sockets.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "protocol/Codec.h"
#include "server/Auth.h"
#include "server/AuthGate.h"
#include "server/AuthThrottle.h"
#include "server/Config.h"

namespace groupcoord::server {
namespace {

using protocol::ApiKey;
using protocol::ErrorCode;

// The smallest legal count keeps the tests quick; the cost is the same code.
constexpr uint32_t kIterations = kMinIterations;

std::string line(const std::string& user, Role role, const std::string& secret) {
  std::string error;
  std::string l = makeCredentialLine(user, role, secret, kIterations, &error);
  EXPECT_FALSE(l.empty()) << error;
  return l;
}

std::shared_ptr<CredentialStore> parseOk(const std::string& text) {
  std::string error;
  auto store = CredentialStore::parse(text, "credentials file 't'", &error);
  EXPECT_NE(store, nullptr) << error;
  return store;
}

std::string parseError(const std::string& text) {
  std::string error;
  auto store = CredentialStore::parse(text, "credentials file 't'", &error);
  EXPECT_EQ(store, nullptr) << text;
  return error;
}

// ---- The credentials file --------------------------------------------------

TEST(Credentials, AGeneratedLineParsesAndVerifies) {
  const std::string alice = line("alice", Role::Admin, "correct horse");
  const std::string bob = line("bob.svc@prod", Role::Member, "battery staple");
  auto store = parseOk("# users\n\n" + alice + "\n  " + bob + "  \n");
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->size(), 2u);
  EXPECT_EQ(store->verify("alice", "correct horse"), Role::Admin);
  EXPECT_EQ(store->verify("bob.svc@prod", "battery staple"), Role::Member);
  // Again: the remembered success gives the same answer.
  EXPECT_EQ(store->verify("alice", "correct horse"), Role::Admin);
}

TEST(Credentials, WrongSecretUnknownUserAndSwappedSecretsAreRefused) {
  auto store = parseOk(line("alice", Role::Admin, "a-secret") + "\n" + line("bob", Role::Member, "b-secret"));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->verify("alice", "a-secret"), Role::Admin);
  EXPECT_FALSE(store->verify("alice", "a-secreT"));
  EXPECT_FALSE(store->verify("alice", "a-secret "));
  EXPECT_FALSE(store->verify("alice", ""));
  EXPECT_FALSE(store->verify("alice", "b-secret"));
  EXPECT_FALSE(store->verify("carol", "a-secret"));
  EXPECT_FALSE(store->verify("", ""));
  // A refusal after a remembered success does not wipe the success either way.
  EXPECT_EQ(store->verify("alice", "a-secret"), Role::Admin);
}

TEST(Credentials, TheSameSecretGetsADifferentSaltEachTime) {
  const std::string a = line("alice", Role::Member, "same");
  const std::string b = line("alice", Role::Member, "same");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("alice:member:scram-sha-256:10000:", 0), 0u) << a;
}

TEST(Credentials, BothSchemesVerifyTheSameSecretAndKeepTheSameKeys) {
  // A pbkdf2-sha256 line keeps SaltedPassword; the scram-sha-256 line of
  // the same salt keeps only the keys derived from it.
  const std::vector<uint8_t> salt(16, 0x11);
  const std::vector<uint8_t> salted = hashSecret("s3cret", salt, kIterations);
  auto hex = [](const std::vector<uint8_t>& b) {
    std::string out;
    char buf[3];
    for (uint8_t x : b) {
      std::snprintf(buf, sizeof buf, "%02x", x);
      out += buf;
    }
    return out;
  };
  const std::string older = "old:member:pbkdf2-sha256:10000:" + hex(salt) + ":" + hex(salted);
  const std::string newer = "new:admin:scram-sha-256:10000:" + hex(salt) + ":" +
                            hex(credentials::storedKeyOf(salted)) + ":" + hex(credentials::serverKeyOf(salted));
  auto store = parseOk(older + "\n" + newer + "\n");
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->verify("old", "s3cret"), Role::Member);
  EXPECT_EQ(store->verify("new", "s3cret"), Role::Admin);
  EXPECT_EQ(store->verify("new", "s3cret!"), std::nullopt);
  EXPECT_EQ(store->find("old")->storedKey, store->find("new")->storedKey);
  EXPECT_EQ(store->find("old")->serverKey, store->find("new")->serverKey);
  // The secret cannot be read back from a scram-sha-256 line: it holds
  // neither the secret nor SaltedPassword.
  EXPECT_EQ(newer.find(hex(salted)), std::string::npos);
}

TEST(Credentials, HashIsPbkdf2HmacSha256) {
  // RFC 7914 section 11, PBKDF2-HMAC-SHA256 test vector ("passwd", "salt", 1 iteration, first 32 bytes).
  const std::vector<uint8_t> salt{'s', 'a', 'l', 't'};
  const std::vector<uint8_t> expected{0x55, 0xac, 0x04, 0x6e, 0x56, 0xe3, 0x08, 0x9f, 0xec, 0x16, 0x91,
                                      0xc2, 0x25, 0x44, 0xb6, 0x05, 0xf9, 0x41, 0x85, 0x21, 0x6d, 0xde,
                                      0x04, 0x65, 0xe6, 0x8b, 0x9d, 0x57, 0xc2, 0x0d, 0xac, 0xbc};
  EXPECT_EQ(hashSecret("passwd", salt, 1), expected);
}

TEST(Credentials, ConstantTimeEquals) {
  EXPECT_TRUE(constantTimeEquals({1, 2, 3}, {1, 2, 3}));
  EXPECT_FALSE(constantTimeEquals({1, 2, 3}, {1, 2, 4}));
  EXPECT_FALSE(constantTimeEquals({1, 2, 3}, {1, 2}));
  EXPECT_FALSE(constantTimeEquals({}, {}));
}

TEST(Credentials, EachBadLineIsNamedByItsNumber) {
  const std::string good = line("alice", Role::Admin, "s");
  const std::string salt(32, 'a');
  const std::string hash(64, 'b');
  struct Case {
    std::string bad;
    std::string mentions;
  };
  const std::vector<Case> cases{
      {"alice:admin:pbkdf2-sha256:10000:" + salt, "6 fields"},
      {"alice:admin:pbkdf2-sha256:10000:" + salt + ":" + hash + ":extra", "6 fields"},
      {"al ice:admin:pbkdf2-sha256:10000:" + salt + ":" + hash, "user name"},
      {":admin:pbkdf2-sha256:10000:" + salt + ":" + hash, "user name"},
      {"carol:root:pbkdf2-sha256:10000:" + salt + ":" + hash, "role 'root'"},
      {"carol:admin:sha1:10000:" + salt + ":" + hash, "hash scheme"},
      {"carol:admin:pbkdf2-sha256:999:" + salt + ":" + hash, "iteration count"},
      {"carol:admin:pbkdf2-sha256:ten:" + salt + ":" + hash, "iteration count"},
      {"carol:admin:pbkdf2-sha256:99999999999:" + salt + ":" + hash, "iteration count"},
      {"carol:admin:pbkdf2-sha256:10000:abcd:" + hash, "salt"},
      {"carol:admin:pbkdf2-sha256:10000:" + std::string(32, 'z') + ":" + hash, "salt"},
      {"carol:admin:pbkdf2-sha256:10000:" + salt + ":" + std::string(62, 'b'), "hash"},
      {"carol:admin:pbkdf2-sha256:10000:" + salt + ":" + std::string(63, 'b'), "hash"},
      {"alice:member:pbkdf2-sha256:10000:" + salt + ":" + hash, "second time"},
      {"carol:admin:scram-sha-256:10000:" + salt + ":" + hash, "7 fields"},
      {"carol:admin:scram-sha-256:10000:" + salt + ":" + hash + ":" + std::string(62, 'c'), "server key"},
      {"carol:admin:scram-sha-256:10000:" + salt + ":x" + hash + ":" + hash, "stored key"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.bad);
    // The bad line is line 4: a comment, the good line, a blank line before it.
    const std::string error = parseError("# comment\n" + good + "\n\n" + c.bad + "\n");
    EXPECT_NE(error.find("credentials file 't' line 4: "), std::string::npos) << error;
    EXPECT_NE(error.find(c.mentions), std::string::npos) << error;
  }
}

TEST(Credentials, AFileWithNoUserIsAnError) {
  EXPECT_NE(parseError("").find("holds no user"), std::string::npos);
  EXPECT_NE(parseError("# only a comment\n\n").find("holds no user"), std::string::npos);
}

TEST(Credentials, AMissingFileIsAnError) {
  std::string error;
  EXPECT_EQ(CredentialStore::load("/nonexistent/groupcoord-credentials", &error), nullptr);
  EXPECT_NE(error.find("cannot read the credentials file '/nonexistent/groupcoord-credentials'"), std::string::npos)
      << error;
}

TEST(Credentials, MakeLineRefusesWhatTheFileWouldRefuse) {
  std::string error;
  EXPECT_TRUE(makeCredentialLine("a:b", Role::Admin, "s", kIterations, &error).empty());
  EXPECT_NE(error.find("user name"), std::string::npos);
  EXPECT_TRUE(makeCredentialLine("ok", Role::Admin, "s", 5, &error).empty());
  EXPECT_NE(error.find("iteration count"), std::string::npos);
  EXPECT_TRUE(makeCredentialLine("ok", Role::Admin, "", kIterations, &error).empty());
  EXPECT_NE(error.find("empty"), std::string::npos);
}

TEST(Roles, MembersMayNotDeleteRewindOrDrain) {
  for (int k = 0; k < protocol::kApiCount; ++k) {
    const auto api = static_cast<ApiKey>(k);
    EXPECT_TRUE(roleAllows(Role::Admin, api)) << protocol::apiName(api);
    const bool adminOnly =
        api == ApiKey::DeleteGroup || api == ApiKey::RewindConsumer || api == ApiKey::DrainServer;
    EXPECT_EQ(roleAllows(Role::Member, api), !adminOnly) << protocol::apiName(api);
  }
  EXPECT_EQ(roleFromName("admin"), Role::Admin);
  EXPECT_EQ(roleFromName("member"), Role::Member);
  EXPECT_FALSE(roleFromName("Admin"));
}

// ---- Options ------------------------------------------------------------------

TEST(AuthOptions, OffByDefaultAndSetFromEachSource) {
  EXPECT_TRUE(ServerConfig{}.authCredentialsFile.empty());
  EXPECT_TRUE(ServerConfig{}.tlsCertificateFile.empty());
  ConfigSources env;
  env.environment["GROUPCOORDD_AUTH_CREDENTIALS_FILE"] = "/etc/groupcoord/credentials";
  auto fromEnv = loadConfig(env);
  ASSERT_TRUE(fromEnv.ok()) << fromEnv.error;
  EXPECT_EQ(fromEnv.config.authCredentialsFile, "/etc/groupcoord/credentials");
  ConfigSources cli;
  cli.commandLine["tls.certificate.file"] = "/c.pem";
  cli.commandLine["tls.key.file"] = "/k.pem";
  cli.commandLine["tls.ca.file"] = "/ca.pem";
  auto fromCli = loadConfig(cli);
  ASSERT_TRUE(fromCli.ok()) << fromCli.error;
  EXPECT_EQ(fromCli.config.tlsCaFile, "/ca.pem");
  EXPECT_EQ(cliName("auth.credentials.file"), "auth-credentials-file");
}

TEST(AuthOptions, TlsFilesMustComeTogether) {
  ConfigSources keyOnly;
  keyOnly.commandLine["tls.key.file"] = "/k.pem";
  auto r = loadConfig(keyOnly);
  EXPECT_NE(r.error.find("tls.certificate.file"), std::string::npos) << r.error;
  ConfigSources caOnly;
  caOnly.commandLine["tls.ca.file"] = "/ca.pem";
  r = loadConfig(caOnly);
  EXPECT_NE(r.error.find("tls.ca.file"), std::string::npos) << r.error;
}

// ---- The gate ---------------------------------------------------------------

// Records what reached it and answers NONE at once.
class RecordingHandler : public protocol::Handler {
 public:
  void handle(const protocol::RequestHeader& header, protocol::Request request,
              protocol::ResponseCallback done) override {
    {
      std::lock_guard lock(mutex_);
      seen_.push_back(header.correlationId);
    }
    done(protocol::errorResponse(request, ErrorCode::NONE));
  }
  void handleFrom(const protocol::Caller& caller, const protocol::RequestHeader& header, protocol::Request request,
                  protocol::ResponseCallback done) override {
    {
      std::lock_guard lock(mutex_);
      callers_.push_back(caller.address() + " " + caller.user);
    }
    handle(header, std::move(request), std::move(done));
  }
  std::vector<int64_t> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  // "address user" of each request forwarded with its caller.
  std::vector<std::string> callers() {
    std::lock_guard lock(mutex_);
    return callers_;
  }

 private:
  std::mutex mutex_;
  std::vector<int64_t> seen_;
  std::vector<std::string> callers_;
};

// Collects answers in the order they are given.
struct Answers {
  std::mutex mutex;
  std::vector<std::pair<int64_t, ErrorCode>> got;
  std::promise<void> all;
  size_t expected = 0;

  protocol::ResponseCallback callback(int64_t id) {
    return [this, id](protocol::Response r) {
      std::lock_guard lock(mutex);
      got.emplace_back(id, protocol::responseError(r));
      if (got.size() == expected) all.set_value();
    };
  }
};

protocol::RequestHeader header(ApiKey api, int64_t id) {
  protocol::RequestHeader h;
  h.apiKey = api;
  h.correlationId = id;
  return h;
}

class AuthGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = parseOk(line("ops", Role::Admin, "ops-secret") + "\n" + line("app", Role::Member, "app-secret"));
    ASSERT_NE(store_, nullptr);
    gate_ = std::make_unique<AuthGate>(store_);
  }

  void send(const std::shared_ptr<AuthSession>& session, ApiKey api, int64_t id, protocol::Request request,
            Answers& answers) {
    gate_->handle(session, protocol::Caller{"127.0.0.1", 5555, ""}, handler_, header(api, id), std::move(request), answers.callback(id));
  }

  // Waits (a hang guard, not a timing assertion) for every answer.
  static void wait(Answers& answers) {
    ASSERT_EQ(answers.all.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  }

  std::shared_ptr<CredentialStore> store_;
  RecordingHandler handler_;
  std::unique_ptr<AuthGate> gate_;
};

TEST_F(AuthGateTest, CallsBeforeAuthenticateAreRefusedAndNeverReachTheHandler) {
  auto session = std::make_shared<AuthSession>();
  Answers answers;
  answers.expected = 2;
  send(session, ApiKey::Heartbeat, 1, protocol::HeartbeatRequest{"g", "m", 1}, answers);
  send(session, ApiKey::ListGroups, 2, protocol::ListGroupsRequest{}, answers);
  wait(answers);
  EXPECT_EQ(answers.got, (std::vector<std::pair<int64_t, ErrorCode>>{{1, ErrorCode::NOT_AUTHORIZED},
                                                                     {2, ErrorCode::NOT_AUTHORIZED}}));
  EXPECT_TRUE(handler_.seen().empty());
}

TEST_F(AuthGateTest, PipelinedCallsWaitForTheirAuthenticateAndKeepTheirOrder) {
  auto session = std::make_shared<AuthSession>();
  Answers answers;
  answers.expected = 6;
  send(session, ApiKey::Authenticate, 1, protocol::AuthenticateRequest{"app", "app-secret"}, answers);
  send(session, ApiKey::Heartbeat, 2, protocol::HeartbeatRequest{"g", "m", 1}, answers);
  send(session, ApiKey::DeleteGroup, 3, protocol::DeleteGroupRequest{"g"}, answers);
  // A wrong secret next: what follows it is refused.
  send(session, ApiKey::Authenticate, 4, protocol::AuthenticateRequest{"app", "wrong"}, answers);
  send(session, ApiKey::Heartbeat, 5, protocol::HeartbeatRequest{"g", "m", 1}, answers);
  send(session, ApiKey::ListGroups, 6, protocol::ListGroupsRequest{}, answers);
  wait(answers);
  EXPECT_EQ(answers.got, (std::vector<std::pair<int64_t, ErrorCode>>{{1, ErrorCode::NONE},
                                                                     {2, ErrorCode::NONE},
                                                                     {3, ErrorCode::NOT_AUTHORIZED},
                                                                     {4, ErrorCode::NOT_AUTHORIZED},
                                                                     {5, ErrorCode::NOT_AUTHORIZED},
                                                                     {6, ErrorCode::NOT_AUTHORIZED}}));
  EXPECT_EQ(handler_.seen(), std::vector<int64_t>{2});
}

// Another port's steps (the Kafka port's SASL): the same check, and the
// same decisions afterwards, by the role here (no permissions file).
TEST_F(AuthGateTest, AnotherPortsStepsAreCheckedAndItsCallsJudgedAsTheBinaryPorts) {
  const protocol::Caller caller{"127.0.0.1", 5556, ""};
  auto step = [&](const std::shared_ptr<AuthSession>& session, protocol::AuthenticateRequest request) {
    std::promise<ErrorCode> answered;
    gate_->authenticate(session, caller, 0, std::move(request),
                        [&](protocol::Response r) { answered.set_value(protocol::responseError(r)); });
    auto f = answered.get_future();
    EXPECT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    return f.get();
  };
  auto refused = std::make_shared<AuthSession>();
  EXPECT_EQ(gate_->judge(*refused, ApiKey::RegisterConsumer, "g").authenticated, false);
  EXPECT_EQ(step(refused, protocol::AuthenticateRequest{"app", "wrong"}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_FALSE(AuthGate::authenticatedUser(*refused).has_value());
  EXPECT_FALSE(gate_->judge(*refused, ApiKey::RegisterConsumer, "g").allowed);

  auto app = std::make_shared<AuthSession>();
  EXPECT_EQ(step(app, protocol::AuthenticateRequest{"app", "app-secret"}), ErrorCode::NONE);
  EXPECT_EQ(AuthGate::authenticatedUser(*app), std::optional<std::string>("app"));
  const AuthGate::Verdict join = gate_->judge(*app, ApiKey::RegisterConsumer, "g");
  EXPECT_TRUE(join.allowed);
  EXPECT_EQ(join.user, "app");
  EXPECT_FALSE(gate_->judge(*app, ApiKey::DeleteGroup, "g").allowed) << "a member may not delete";
  EXPECT_TRUE(gate_->judge(*app, ApiKey::ListGroups, "").shows("any")) << "no rules: every group is listed";

  gate_->setPlainAuth(PlainAuth::TlsOnly);
  EXPECT_FALSE(gate_->plainAllowed(false));
  EXPECT_TRUE(gate_->plainAllowed(true));
  EXPECT_EQ(step(std::make_shared<AuthSession>(), protocol::AuthenticateRequest{"app", "app-secret"}),
            ErrorCode::NOT_AUTHORIZED)
      << "the secret in the clear is refused off TLS by auth.plain=tls";
}

TEST_F(AuthGateTest, AnAdminMayDoEverythingAndSessionsAreSeparate) {
  auto admin = std::make_shared<AuthSession>();
  auto other = std::make_shared<AuthSession>();
  Answers answers;
  answers.expected = 3;
  send(admin, ApiKey::Authenticate, 1, protocol::AuthenticateRequest{"ops", "ops-secret"}, answers);
  send(admin, ApiKey::DeleteGroup, 2, protocol::DeleteGroupRequest{"g"}, answers);
  send(admin, ApiKey::RewindConsumer, 3, protocol::RewindConsumerRequest{"g", {}}, answers);
  wait(answers);
  // Another connection is not authenticated by the first one's success.
  Answers later;
  later.expected = 1;
  send(other, ApiKey::DeleteGroup, 4, protocol::DeleteGroupRequest{"g"}, later);
  wait(later);
  EXPECT_EQ(answers.got.size(), 3u);
  EXPECT_EQ(answers.got[1], std::make_pair(int64_t{2}, ErrorCode::NONE));
  EXPECT_EQ(answers.got[2], std::make_pair(int64_t{3}, ErrorCode::NONE));
  EXPECT_EQ(later.got[0], std::make_pair(int64_t{4}, ErrorCode::NOT_AUTHORIZED));
  EXPECT_EQ(handler_.seen(), (std::vector<int64_t>{2, 3}));
  // Forwarded with the connection's address and the user it proved.
  EXPECT_EQ(handler_.callers(), (std::vector<std::string>{"127.0.0.1:5555 ops", "127.0.0.1:5555 ops"}));
}

TEST_F(AuthGateTest, AReauthenticationAsAnotherUserTakesItsRole) {
  auto session = std::make_shared<AuthSession>();
  Answers answers;
  answers.expected = 4;
  send(session, ApiKey::Authenticate, 1, protocol::AuthenticateRequest{"ops", "ops-secret"}, answers);
  send(session, ApiKey::Authenticate, 2, protocol::AuthenticateRequest{"app", "app-secret"}, answers);
  send(session, ApiKey::DeleteGroup, 3, protocol::DeleteGroupRequest{"g"}, answers);
  send(session, ApiKey::CommitOffsets, 4, protocol::CommitOffsetsRequest{"g", "m", 1, {}}, answers);
  wait(answers);
  EXPECT_EQ(answers.got, (std::vector<std::pair<int64_t, ErrorCode>>{{1, ErrorCode::NONE},
                                                                     {2, ErrorCode::NONE},
                                                                     {3, ErrorCode::NOT_AUTHORIZED},
                                                                     {4, ErrorCode::NONE}}));
}


// ---- The throttle -----------------------------------------------------------

TEST(AuthThrottle, FreeFailuresThenDoublingWaitsUpToTheCap) {
  using ms = std::chrono::milliseconds;
  EXPECT_EQ(AuthThrottle::delayAfter(0), ms(0));
  EXPECT_EQ(AuthThrottle::delayAfter(AuthThrottle::kFreeFailures - 1), ms(0));
  EXPECT_EQ(AuthThrottle::delayAfter(AuthThrottle::kFreeFailures), AuthThrottle::kFirstDelay);
  EXPECT_EQ(AuthThrottle::delayAfter(AuthThrottle::kFreeFailures + 1), AuthThrottle::kFirstDelay * 2);
  EXPECT_EQ(AuthThrottle::delayAfter(AuthThrottle::kFreeFailures + 40), AuthThrottle::kMaxDelay);
  // A guesser who always waits its turn on one connection: how many checks
  // fit in 10 s.
  AuthThrottle t;
  auto now = AuthThrottle::Clock::time_point{} + std::chrono::hours(1);
  const auto end = now + std::chrono::seconds(10);
  int checks = 0;
  for (;;) {
    now = std::max(now, t.notBefore("10.0.0.1", "app", now));
    if (now >= end) break;
    t.failed("10.0.0.1", "app", now);
    ++checks;
  }
  std::printf("[figure] wrong secrets checked in 10 s for one user from one address: %d\n", checks);
  EXPECT_LE(checks, 20);
  EXPECT_GE(checks, static_cast<int>(AuthThrottle::kFreeFailures));
}

TEST(AuthThrottle, AnAddressOrAUserAloneIsEnoughAndASuccessClearsBoth) {
  AuthThrottle t;
  const auto now = AuthThrottle::Clock::time_point{} + std::chrono::hours(1);
  for (uint32_t i = 0; i < AuthThrottle::kFreeFailures + 2; ++i) t.failed("10.0.0.1", "app", now);
  // Another user from that address, and that user from another address, wait too.
  EXPECT_GT(t.notBefore("10.0.0.1", "other", now), now);
  EXPECT_GT(t.notBefore("10.0.0.2", "app", now), now);
  EXPECT_LE(t.notBefore("10.0.0.2", "other", now), now);
  t.succeeded("10.0.0.1", "app");
  EXPECT_LE(t.notBefore("10.0.0.1", "app", now), now);
  // Forgotten after a quiet while.
  for (uint32_t i = 0; i < AuthThrottle::kFreeFailures + 2; ++i) t.failed("10.0.0.3", "x", now);
  EXPECT_GT(t.notBefore("10.0.0.3", "y", now), now);
  EXPECT_LE(t.notBefore("10.0.0.3", "y", now + AuthThrottle::kForgetAfter), now + AuthThrottle::kForgetAfter);
}

TEST(AuthThrottle, MemoryIsBoundedHoweverManyAddressesTryAndTheBusiestGuesserStays) {
  AuthThrottle t;
  auto now = AuthThrottle::Clock::time_point{} + std::chrono::hours(1);
  for (uint32_t i = 0; i < AuthThrottle::kFreeFailures + 2; ++i) t.failed("10.9.9.9", "target", now);
  for (size_t i = 0; i < AuthThrottle::kMaxKeys * 3; ++i) {
    now += std::chrono::microseconds(1);
    t.failed("10." + std::to_string(i / 65536) + "." + std::to_string(i / 256 % 256) + "." + std::to_string(i % 256),
             "u" + std::to_string(i), now);
    // The target keeps being guessed.
    if (i % 1000 == 0) t.failed("10.9.9.9", "target", now);
  }
  EXPECT_LE(t.addresses(), AuthThrottle::kMaxKeys);
  EXPECT_LE(t.users(), AuthThrottle::kMaxKeys);
  EXPECT_GT(t.notBefore("10.200.0.1", "target", now), now) << "the guessed user was forgotten";
}

TEST_F(AuthGateTest, AThrottledGuesserWaitsWhileOtherConnectionsGoOn) {
  auto admin = std::make_shared<AuthSession>();
  Answers first;
  first.expected = 1;
  send(admin, ApiKey::Authenticate, 1, protocol::AuthenticateRequest{"ops", "ops-secret"}, first);
  wait(first);
  auto guesser = std::make_shared<AuthSession>();
  Answers guesses;
  // Four guesses past the free ones: the last is checked no sooner than
  // 200 + 400 + 800 + 1600 ms after the free ones failed (a lower bound of
  // the throttle, which a busy machine cannot shorten). That is the margin
  // this thread has, held back on a busy machine, to make the admin's call
  // below while a guess still waits.
  constexpr uint32_t kGuesses = AuthThrottle::kFreeFailures + 4;
  guesses.expected = kGuesses;
  for (uint32_t i = 0; i < kGuesses; ++i) {
    send(guesser, ApiKey::Authenticate, 10 + i, protocol::AuthenticateRequest{"app", "guess"}, guesses);
  }
  // The guesser's last checks wait (at least kFirstDelay); the admin's
  // calls meanwhile are answered at once, on this thread.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Answers other;
  other.expected = 1;
  send(admin, ApiKey::DeleteGroup, 2, protocol::DeleteGroupRequest{"g"}, other);
  ASSERT_EQ(other.all.get_future().wait_for(std::chrono::seconds(0)), std::future_status::ready);
  {
    std::lock_guard lock(guesses.mutex);
    EXPECT_LT(guesses.got.size(), guesses.expected) << "every guess was answered before the admin's call";
  }
  wait(guesses);
  for (auto& [id, e] : guesses.got) EXPECT_EQ(e, ErrorCode::NOT_AUTHORIZED) << id;
}

}  // namespace
}  // namespace groupcoord::server
