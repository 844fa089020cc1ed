// SCRAM-SHA-256 (common/Scram.h): both halves against RFC 7677's example,
// tampered and replayed exchanges, Authenticate version 1 on the wire, and
// the authentication gate speaking it, without sockets.

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <chrono>
#include <future>
#include <random>
#include <string>
#include <vector>

#include "common/Scram.h"
#include "protocol/Codec.h"
#include "server/Auth.h"
#include "server/AuthGate.h"

namespace groupcoord::server {
namespace {

using protocol::ErrorCode;

// RFC 7677, section 3.
constexpr const char* kUser = "user";
constexpr const char* kPassword = "pencil";
constexpr const char* kClientNonce = "rOprNGfwEbeRWgbNEkqO";
constexpr const char* kServerNonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
constexpr const char* kClientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
constexpr const char* kServerFirst =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
constexpr const char* kClientFinal =
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
constexpr const char* kServerFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

scram::ServerExchange::User rfcUser() {
  scram::ServerExchange::User u;
  u.salt = *scram::fromBase64("W22ZaJ0SNY7soEsUEjb6gQ==");
  u.iterations = 4096;
  u.keys = scram::keysFromSaltedPassword(hashSecret(kPassword, u.salt, 4096));
  u.known = true;
  return u;
}

TEST(Scram, TheClientWritesRfc7677sExampleByteForByte) {
  scram::ClientExchange c(kUser, kPassword, kClientNonce);
  EXPECT_EQ(c.first(), kClientFirst);
  std::string error;
  auto final = c.final(kServerFirst, &error, 4096);
  ASSERT_TRUE(final) << error;
  EXPECT_EQ(*final, kClientFinal);
  EXPECT_TRUE(c.verifyServer(kServerFinal, &error)) << error;
  // A server that does not hold the keys cannot forge the last message.
  EXPECT_FALSE(c.verifyServer("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G5=", &error))
      << "bits past the 32 bytes are not the signature's: a canonical decoder refuses them";
  EXPECT_FALSE(c.verifyServer("v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", &error));
  EXPECT_NE(error.find("signature is wrong"), std::string::npos) << error;
  EXPECT_FALSE(c.verifyServer("e=invalid-proof", &error));
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
}

TEST(Scram, TheServerAnswersRfc7677sExampleByteForByte) {
  scram::ServerExchange s;
  std::string error;
  auto user = s.start(kClientFirst, &error);
  ASSERT_TRUE(user) << error;
  EXPECT_EQ(*user, kUser);
  EXPECT_EQ(s.challenge(rfcUser(), kServerNonce), kServerFirst);
  std::string serverFinal;
  EXPECT_TRUE(s.finish(kClientFinal, &serverFinal, &error)) << error;
  EXPECT_EQ(serverFinal, kServerFinal);
}

TEST(Scram, ACapturedExchangeReplayedAgainstANewNonceIsRefused) {
  // The client's two messages of a successful exchange, sent again: the
  // server's fresh nonce is not the one the proof covers.
  scram::ServerExchange again;
  std::string error;
  ASSERT_TRUE(again.start(kClientFirst, &error));
  const std::string challenge = again.challenge(rfcUser());  // a random server nonce
  EXPECT_NE(challenge, kServerFirst);
  std::string serverFinal;
  EXPECT_FALSE(again.finish(kClientFinal, &serverFinal, &error));
  EXPECT_EQ(serverFinal, "e=invalid-proof");
  EXPECT_NE(error.find("nonce is not this exchange's"), std::string::npos) << error;
}

// The client-final message for `nonce` with the right proof for RFC 7677's
// exchange: what a client writes that puts another r= there.
std::string clientFinalWithNonce(const std::string& nonce) {
  const scram::Bytes salted = hashSecret(kPassword, *scram::fromBase64("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096);
  const scram::Bytes clientKey = scram::hmacSha256(salted, "Client Key");
  const std::string withoutProof = "c=biws,r=" + nonce;
  const std::string authMessage =
      std::string(kClientFirst).substr(3) + "," + kServerFirst + "," + withoutProof;
  scram::Bytes proof = scram::hmacSha256(scram::sha256(clientKey), authMessage);
  for (size_t i = 0; i < proof.size(); ++i) proof[i] ^= clientKey[i];
  return withoutProof + ",p=" + scram::base64(proof);
}

TEST(Scram, LibrdkafkasFinalNonceWithTheClientNonceTwiceIsTakenAndNoOtherPrefix) {
  // librdkafka 2.0.2 writes r=CLIENT CLIENT SERVER; Kafka's brokers take it.
  const std::string exchangeNonce = std::string(kClientNonce) + kServerNonce;
  for (const std::string& nonce : {std::string(kClientNonce) + exchangeNonce, "x" + exchangeNonce}) {
    scram::ServerExchange s;
    std::string error, serverFinal;
    ASSERT_TRUE(s.start(kClientFirst, &error));
    s.challenge(rfcUser(), kServerNonce);
    const bool librdkafkas = nonce.front() != 'x';
    EXPECT_EQ(s.finish(clientFinalWithNonce(nonce), &serverFinal, &error), librdkafkas) << nonce << ": " << error;
    if (!librdkafkas) {
      EXPECT_NE(error.find("nonce is not this exchange's"), std::string::npos) << error;
    }
  }
}

TEST(Scram, TamperedAndMalformedMessagesAreRefused) {
  std::string error, serverFinal;
  // A proof changed by one bit; a channel-binding header that is not the first's.
  {
    scram::ServerExchange s;
    ASSERT_TRUE(s.start(kClientFirst, &error));
    s.challenge(rfcUser(), kServerNonce);
    std::string tampered = kClientFinal;
    tampered[tampered.size() - 3] = tampered[tampered.size() - 3] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(s.finish(tampered, &serverFinal, &error));
    EXPECT_NE(error.find("wrong secret"), std::string::npos) << error;
  }
  {
    scram::ServerExchange s;
    ASSERT_TRUE(s.start(kClientFirst, &error));
    s.challenge(rfcUser(), kServerNonce);
    std::string other = kClientFinal;
    other.replace(2, 4, "eSws");  // "y,," instead of "n,,"
    EXPECT_FALSE(s.finish(other, &serverFinal, &error));
  }
  // The right proof for a user the server does not know (a decoy) fails too.
  {
    scram::ServerExchange s;
    ASSERT_TRUE(s.start(kClientFirst, &error));
    auto decoy = rfcUser();
    decoy.known = false;
    s.challenge(decoy, kServerNonce);
    EXPECT_FALSE(s.finish(kClientFinal, &serverFinal, &error));
  }
  // First messages the server does not speak.
  for (const char* bad : {"p=tls-unique,,n=user,r=abc", "n,a=admin,n=user,r=abc", "n,,n=user", "n,,r=abc,n=user",
                          "n,,n=us=er,r=abc", "n,,n=user,r=abc,x=ext", "", "n,,n=user,r=a,b"}) {
    scram::ServerExchange s;
    EXPECT_FALSE(s.start(bad, &error)) << bad;
  }
  scram::ServerExchange s;
  EXPECT_FALSE(s.start(std::string(2000, 'n'), &error));
  // A final message before any first one.
  scram::ServerExchange none;
  EXPECT_FALSE(none.finish(kClientFinal, &serverFinal, &error));
  // The client refuses a server nonce that does not extend its own, and too
  // few iterations (a server downgrading the work).
  scram::ClientExchange c(kUser, kPassword, kClientNonce);
  EXPECT_FALSE(c.final("r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", &error, 4096));
  EXPECT_FALSE(c.final(kServerFirst, &error, 10000));
  EXPECT_NE(error.find("4096"), std::string::npos) << error;
}

TEST(Scram, Base64RoundTripsAndRefusesWhatIsNotBase64) {
  std::mt19937 rng(7677);
  for (int n = 0; n < 200; ++n) {
    scram::Bytes b(n % 40);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    auto back = scram::fromBase64(scram::base64(b));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, b);
  }
  // Not base64, or not canonical (bits set past the last byte).
  for (const char* bad : {"abc", "ab=c", "a===", "ab!d", "=abc", "QR==", "QUJ="}) {
    EXPECT_FALSE(scram::fromBase64(bad)) << bad;
  }
  EXPECT_EQ(*scram::fromBase64("QQ=="), scram::Bytes{'A'});
}

TEST(Scram, AuthenticateVersionOneOnTheWire) {
  // Request: Mechanism (string), Message (bytes); response: ErrorCode, Message (bytes).
  protocol::RequestHeader h;
  h.apiKey = protocol::ApiKey::Authenticate;
  h.version = 1;
  h.correlationId = 7;
  h.clientId = "c";
  std::vector<uint8_t> frame;
  protocol::encodeRequest(h, protocol::AuthenticateRequest{{}, {}, "SCRAM-SHA-256", "n,,n=u,r=x"}, frame);
  // Size, ApiKey, Version, CorrelationId, ClientId, then the body.
  const std::vector<uint8_t> body(frame.end() - (2 + 13 + 4 + 10), frame.end());  // the body's 29 bytes
  const std::string expected = std::string("\x00\x0dSCRAM-SHA-256", 15) + std::string("\x00\x00\x00\x0an,,n=u,r=x", 14);
  EXPECT_EQ(std::string(body.begin(), body.end()), expected);
  auto decoded = protocol::decodeRequest(std::span<const uint8_t>(frame.data() + 4, frame.size() - 4));
  ASSERT_EQ(decoded.status, protocol::DecodeStatus::Ok) << decoded.detail;
  const auto& r = std::get<protocol::AuthenticateRequest>(decoded.request);
  EXPECT_EQ(r.mechanism, "SCRAM-SHA-256");
  EXPECT_EQ(r.message, "n,,n=u,r=x");

  std::vector<uint8_t> answer;
  protocol::encodeResponse(protocol::ResponseHeader{1, 7}, protocol::AuthenticateResponse{ErrorCode::NONE, "r=xy"},
                           answer);
  auto back = protocol::decodeResponse(protocol::ApiKey::Authenticate,
                                       std::span<const uint8_t>(answer.data() + 4, answer.size() - 4));
  ASSERT_TRUE(back.ok) << back.detail;
  EXPECT_EQ(std::get<protocol::AuthenticateResponse>(back.response).message, "r=xy");
  // The frame docs/protocol.md gives for step 1 of RFC 7677's example.
  std::vector<uint8_t> vectorFrame;
  h.version = 1;
  h.correlationId = 1;
  protocol::encodeRequest(h, protocol::AuthenticateRequest{{}, {}, "SCRAM-SHA-256", kClientFirst}, vectorFrame);
  const std::string head("\x00\x00\x00\x42\x00\x09\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01" "c"
                         "\x00\x0dSCRAM-SHA-256\x00\x00\x00\x20",
                         4 + 2 + 2 + 8 + 3 + 15 + 4);
  EXPECT_EQ(std::string(vectorFrame.begin(), vectorFrame.end()), head + kClientFirst);
  // Version 0 is byte for byte what it was: User, Secret; ErrorCode.
  h.version = 0;
  std::vector<uint8_t> old;
  protocol::encodeRequest(h, protocol::AuthenticateRequest{"u", "s", {}, {}}, old);
  EXPECT_EQ(std::string(old.end() - 6, old.end()), std::string("\x00\x01u\x00\x01s", 6));
  std::vector<uint8_t> oldAnswer;
  protocol::encodeResponse(protocol::ResponseHeader{0, 7},
                           protocol::AuthenticateResponse{ErrorCode::NOT_AUTHORIZED, "x"}, oldAnswer);
  EXPECT_EQ(oldAnswer.size(), 4u + 10u + 2u);
}

// ---- The gate speaking SCRAM --------------------------------------------------

class ScramGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    auto store = CredentialStore::parse(
        makeCredentialLine("app", Role::Member, "app-secret", kMinIterations, &error) + "\n" +
            makeCredentialLine("ops", Role::Admin, "ops-secret", 20000, &error) + "\n",
        "credentials file 't'", &error);
    ASSERT_NE(store, nullptr) << error;
    gate_ = std::make_unique<AuthGate>(std::move(store));
  }

  protocol::Response call(const std::shared_ptr<AuthSession>& session, protocol::Request request, int16_t version,
                          bool tls = false) {
    std::promise<protocol::Response> p;
    auto f = p.get_future();
    protocol::RequestHeader h;
    h.apiKey = protocol::apiKeyOf(request);
    h.version = version;
    protocol::Caller caller{"127.0.0.1", 5555, ""};
    caller.tls = tls;
    gate_->handle(session, caller, handler_, h, std::move(request),
                  [&p](protocol::Response r) { p.set_value(std::move(r)); });
    EXPECT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);  // a hang guard
    return f.get();
  }
  protocol::AuthenticateResponse sasl(const std::shared_ptr<AuthSession>& s, const std::string& message) {
    return std::get<protocol::AuthenticateResponse>(
        call(s, protocol::AuthenticateRequest{{}, {}, "SCRAM-SHA-256", message}, 1));
  }
  // A whole exchange; the error of its last answer.
  ErrorCode exchange(const std::shared_ptr<AuthSession>& s, const std::string& user, const std::string& secret) {
    scram::ClientExchange c(user, secret);
    auto first = sasl(s, c.first());
    if (first.error != ErrorCode::NONE) return first.error;
    std::string error;
    auto final = c.final(first.message, &error);
    EXPECT_TRUE(final) << error;
    auto last = sasl(s, final.value_or(""));
    if (last.error == ErrorCode::NONE) {
      EXPECT_TRUE(c.verifyServer(last.message, &error)) << error;
    }
    return last.error;
  }
  ErrorCode listGroups(const std::shared_ptr<AuthSession>& s) {
    return protocol::responseError(call(s, protocol::ListGroupsRequest{}, 0));
  }

  class Accepting : public protocol::Handler {
   public:
    void handle(const protocol::RequestHeader&, protocol::Request request, protocol::ResponseCallback done) override {
      done(protocol::errorResponse(request, ErrorCode::NONE));
    }
  } handler_;
  std::unique_ptr<AuthGate> gate_;
};

TEST_F(ScramGateTest, ASuccessfulExchangeAuthenticatesAndAWrongSecretDoesNot) {
  auto s = std::make_shared<AuthSession>();
  EXPECT_EQ(exchange(s, "app", "app-secret"), ErrorCode::NONE);
  EXPECT_EQ(listGroups(s), ErrorCode::NONE);
  // A failed exchange leaves the connection unauthenticated.
  EXPECT_EQ(exchange(s, "app", "wrong"), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(listGroups(s), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(exchange(s, "ops", "ops-secret"), ErrorCode::NONE);
  EXPECT_EQ(protocol::responseError(call(s, protocol::DeleteGroupRequest{"g"}, 0)), ErrorCode::NONE);
}

TEST_F(ScramGateTest, AnUnknownUserGetsAChallengeLikeAKnownOneAndFailsAtTheEnd) {
  auto s = std::make_shared<AuthSession>();
  scram::ClientExchange known("app", "x", "n1");
  scram::ClientExchange unknown("mallory", "x", "n2");
  const auto a = sasl(s, known.first());
  const auto b = sasl(s, unknown.first());
  const auto b2 = sasl(s, scram::ClientExchange("mallory", "x", "n3").first());
  EXPECT_EQ(a.error, ErrorCode::NONE);
  EXPECT_EQ(b.error, ErrorCode::NONE);
  // Same shape: a 16-byte salt, the dearest iteration count of the file;
  // the same salt each time for the same name.
  auto salt = [](const std::string& m) { return m.substr(m.find(",s=") + 3, m.find(",i=") - m.find(",s=") - 3); };
  EXPECT_EQ(scram::fromBase64(salt(b.message))->size(), 16u);
  EXPECT_NE(b.message.find(",i=20000"), std::string::npos) << b.message;
  EXPECT_EQ(salt(b.message), salt(b2.message));
  EXPECT_EQ(exchange(s, "mallory", "anything"), ErrorCode::NOT_AUTHORIZED);
}

TEST_F(ScramGateTest, AFinalMessageWithoutAFirstAndAnotherMechanismAreRefused) {
  auto s = std::make_shared<AuthSession>();
  EXPECT_EQ(sasl(s, kClientFinal).error, ErrorCode::NOT_AUTHORIZED);
  auto other = std::get<protocol::AuthenticateResponse>(
      call(s, protocol::AuthenticateRequest{{}, {}, "PLAIN", "\0app\0app-secret"}, 1));
  EXPECT_EQ(other.error, ErrorCode::INVALID_REQUEST);
  EXPECT_EQ(other.message, "SCRAM-SHA-256");  // what the server speaks
  EXPECT_EQ(listGroups(s), ErrorCode::NOT_AUTHORIZED);
}

TEST_F(ScramGateTest, PlainAuthenticateCanBeRefusedOrAllowedOnlyOverTls) {
  auto plain = [&](bool tls) {
    auto s = std::make_shared<AuthSession>();
    return protocol::responseError(call(s, protocol::AuthenticateRequest{"app", "app-secret", {}, {}}, 0, tls));
  };
  EXPECT_EQ(plain(false), ErrorCode::NONE);
  gate_->setPlainAuth(PlainAuth::TlsOnly);
  EXPECT_EQ(plain(false), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(plain(true), ErrorCode::NONE);
  gate_->setPlainAuth(PlainAuth::Never);
  EXPECT_EQ(plain(true), ErrorCode::NOT_AUTHORIZED);
  // SCRAM is answered whatever auth.plain says.
  auto s = std::make_shared<AuthSession>();
  EXPECT_EQ(exchange(s, "app", "app-secret"), ErrorCode::NONE);
}

}  // namespace
}  // namespace groupcoord::server
