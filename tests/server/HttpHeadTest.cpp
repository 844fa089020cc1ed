// The HTTP port's request heads and answers as bytes (server/HttpHead.h).

#include "server/HttpHead.h"

#include <gtest/gtest.h>

#include <string>

namespace groupcoord::server {
namespace {

TEST(HttpHead, AWholeHeadIsParsedAndItsLengthExcludesWhatFollows) {
  const std::string bytes = "GET /api/groups/a%2Db?x=1 HTTP/1.1\r\nHost: h\r\nX-Thing:  spaced value \t\r\n\r\nGET /next";
  const HeadParse p = parseHead(bytes, {});
  ASSERT_EQ(p.state, HeadParse::Complete) << p.why;
  EXPECT_EQ(p.length, bytes.find("GET /next"));
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(p.head.target, "/api/groups/a%2Db?x=1");
  EXPECT_EQ(p.head.path(), "/api/groups/a%2Db");
  EXPECT_EQ(p.head.minorVersion, 1);
  ASSERT_TRUE(p.head.field("x-thing").has_value());
  EXPECT_EQ(*p.head.field("x-thing"), "spaced value");
  EXPECT_EQ(*p.head.field("host"), "h");
  EXPECT_FALSE(p.head.field("missing").has_value());
}

TEST(HttpHead, EveryPrefixOfAHeadIsIncompleteNotRefused) {
  const std::string bytes = "\r\nGET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(parseHead(bytes.substr(0, n), {}).state, HeadParse::Incomplete) << n;
  }
  const HeadParse p = parseHead(bytes, {});
  ASSERT_EQ(p.state, HeadParse::Complete);
  EXPECT_EQ(p.head.minorVersion, 0);
  EXPECT_TRUE(p.head.wantsKeepAlive());
}

TEST(HttpHead, KeepAliveFollowsTheVersionAndTheConnectionField) {
  auto keep = [](const std::string& head) { return parseHead(head + "\r\n", {}).head.wantsKeepAlive(); };
  EXPECT_TRUE(keep("GET / HTTP/1.1\r\n"));
  EXPECT_FALSE(keep("GET / HTTP/1.1\r\nConnection: Close\r\n"));
  EXPECT_FALSE(keep("GET / HTTP/1.1\r\nConnection: upgrade, close\r\n"));
  EXPECT_FALSE(keep("GET / HTTP/1.0\r\n"));
  EXPECT_TRUE(keep("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n"));
}

TEST(HttpHead, ABodyIsSeenByLengthOrTransferEncoding) {
  auto body = [](const std::string& fields) {
    return parseHead("GET / HTTP/1.1\r\n" + fields + "\r\n", {}).head.announcesBody();
  };
  EXPECT_FALSE(body(""));
  EXPECT_FALSE(body("Content-Length: 0\r\n"));
  EXPECT_TRUE(body("Content-Length: 5\r\n"));
  EXPECT_TRUE(body("Transfer-Encoding: chunked\r\n"));
}

TEST(HttpHead, MalformedAndOversizedHeadsAreRefusedWithAReason) {
  auto refused = [](const std::string& bytes, HttpHeadLimits limits = {}) {
    const HeadParse p = parseHead(bytes, limits);
    EXPECT_FALSE(p.state == HeadParse::Refused && p.why.empty());
    return p.state == HeadParse::Refused;
  };
  // Judged as soon as the request line is whole, blank line or not.
  EXPECT_TRUE(refused(std::string("\x01\x02\x03 nonsense\r\n", 14)));
  EXPECT_TRUE(refused("GET /\r\n"));
  EXPECT_TRUE(refused("GET / HTTP/2.0\r\n"));
  EXPECT_TRUE(refused("GET  / HTTP/1.1\r\n"));
  EXPECT_TRUE(refused("G(T / HTTP/1.1\r\n"));
  EXPECT_TRUE(refused(std::string("GET /a\x7f HTTP/1.1\r\n")));
  EXPECT_TRUE(refused("GET / HTTP/1.1\r\nNo colon here\r\n\r\n"));
  EXPECT_TRUE(refused("GET / HTTP/1.1\r\nName : v\r\n\r\n"));
  EXPECT_TRUE(refused("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n"));
  EXPECT_TRUE(refused(std::string("GET / HTTP/1.1\r\nA: b\x01\r\n\r\n")));
  // Limits: the head's bytes, with or without its end, and the field count.
  HttpHeadLimits small;
  small.maxHeadBytes = 64;
  EXPECT_TRUE(refused("GET /" + std::string(100, 'a'), small));
  EXPECT_TRUE(refused("GET / HTTP/1.1\r\nX: " + std::string(100, 'b'), small));
  EXPECT_TRUE(refused("GET / HTTP/1.1\r\nX: " + std::string(50, 'b') + "\r\n\r\n", small));
  EXPECT_FALSE(refused("GET / HTTP/1.1\r\nX: " + std::string(20, 'b'), small));
  HttpHeadLimits few;
  few.maxFields = 3;
  EXPECT_FALSE(refused("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", few));
  EXPECT_TRUE(refused("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", few));
}

TEST(HttpHead, AnAnswerCarriesItsLengthAndWhetherTheConnectionStays) {
  HttpAnswer a;
  a.status = 503;
  a.body = "busy\n";
  a.fields.emplace_back("Retry-After", "1");
  EXPECT_EQ(renderAnswer(a, true),
            "HTTP/1.1 503 Service Unavailable\r\nServer: groupcoordd\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: 5\r\nCache-Control: no-store\r\nRetry-After: 1\r\nConnection: keep-alive\r\n\r\nbusy\n");
  EXPECT_NE(renderAnswer(a, false).find("\r\nConnection: close\r\n\r\n"), std::string::npos);
}

TEST(HttpHead, BasicCredentialsDecode) {
  // RFC 7617 section 2's example.
  const auto c = basicCredentials("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->first, "Aladdin");
  EXPECT_EQ(c->second, "open sesame");
  const auto colon = basicCredentials("basic dTpwOnE=");  // "u:p:q": the secret may hold ':'
  ASSERT_TRUE(colon.has_value());
  EXPECT_EQ(colon->second, "p:q");
  EXPECT_FALSE(basicCredentials("Bearer QWxhZGRpbjpvcGVuIHNlc2FtZQ==").has_value());
  EXPECT_FALSE(basicCredentials("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=").has_value());  // bad length
  EXPECT_FALSE(basicCredentials("Basic QWxh=GRp").has_value());                      // '=' inside
  EXPECT_FALSE(basicCredentials("Basic dXNlcg==").has_value());                      // "user": no ':'
  EXPECT_FALSE(basicCredentials("Basic").has_value());
}

}  // namespace
}  // namespace groupcoord::server
