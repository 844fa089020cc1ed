// Every malformed input of docs/protocol.md, one case each, with the exact
// answer: the DecodeStatus (and so the ErrorOnlyResponse) and the header
// fields that let the server answer with the right correlation id.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <string>

#include "AllocationProbe.h"
#include "Samples.h"
#include "TestBytes.h"
#include "protocol/Codec.h"
#include "support/Timing.h"

namespace groupcoord::protocol::testing {
namespace {

DecodedRequest decode(const Bytes& b) { return decodeRequest(b.body()); }

// A header every test below can start from.
Bytes header(int apiKey, int64_t correlationId = 77) { return Bytes().requestHeader(apiKey, 0, correlationId, "cli"); }

void expectInvalid(const DecodedRequest& d, int64_t correlationId, std::string_view detailMentions) {
  EXPECT_EQ(d.status, DecodeStatus::InvalidRequest);
  EXPECT_EQ(d.header.correlationId, correlationId);
  EXPECT_NE(d.detail.find(detailMentions), std::string::npos) << "detail: " << d.detail;
}

// ---- Too short, truncated, trailing ------------------------------------------

TEST(Malformed, BodyShorterThanTheHeaderKeepsWhatIsReadable) {
  // ApiKey, Version, CorrelationId and one byte of the ClientId length.
  const auto body13 = Bytes().int16(3).int16(0).int64(0x1122334455667788).int8(0).body();
  DecodedRequest d = decodeRequest(body13);
  EXPECT_EQ(d.status, DecodeStatus::InvalidRequest);
  EXPECT_EQ(d.header.apiKey, ApiKey::RegisterConsumer);
  EXPECT_EQ(d.header.version, 0);
  EXPECT_EQ(d.header.correlationId, 0x1122334455667788);
  EXPECT_NE(d.detail.find("shorter"), std::string::npos) << d.detail;

  // Five bytes: ApiKey and Version only.
  const auto body5 = Bytes().int16(1).int16(9).int8(1).body();
  d = decodeRequest(body5);
  EXPECT_EQ(d.status, DecodeStatus::InvalidRequest);
  EXPECT_EQ(d.header.apiKey, ApiKey::CreateGroup);
  EXPECT_EQ(d.header.version, 9);
  EXPECT_EQ(d.header.correlationId, 0);

  EXPECT_EQ(decodeRequest({}).status, DecodeStatus::InvalidRequest);
}

TEST(Malformed, EveryTruncationOfEveryRequestIsInvalid) {
  for (const auto& s : requestSamples()) {
    SCOPED_TRACE(s.name);
    std::vector<uint8_t> frame;
    encodeRequest(s.header, s.request, frame);
    const auto body = bodyOf(frame);
    for (size_t cut = 0; cut < body.size(); ++cut) {
      const DecodedRequest d = decodeRequest(body.first(cut));
      ASSERT_EQ(d.status, DecodeStatus::InvalidRequest) << "cut at " << cut << " of " << body.size();
      ASSERT_FALSE(d.detail.empty());
      if (cut >= 12) {
        ASSERT_EQ(d.header.correlationId, s.header.correlationId);
      }
    }
  }
}

TEST(Malformed, TruncatedFieldIsNamedInTheDetail) {
  // Heartbeat cut inside Generation.
  const auto full = header(0).str("orders").str("m-1").int64(5).body();
  const DecodedRequest d = decodeRequest(std::span(full).first(full.size() - 3));
  expectInvalid(d, 77, "Generation");
  EXPECT_NE(d.detail.find("truncated"), std::string::npos) << d.detail;
}

TEST(Malformed, TrailingBytesAfterTheLastFieldOfEveryRequest) {
  for (const auto& s : requestSamples()) {
    SCOPED_TRACE(s.name);
    std::vector<uint8_t> frame;
    encodeRequest(s.header, s.request, frame);
    frame.push_back(0);
    const DecodedRequest d = decodeRequest(bodyOf(frame));
    expectInvalid(d, s.header.correlationId, "after the last field");
  }
}

// ---- Strings -----------------------------------------------------------------

TEST(Malformed, NegativeStringLengthOtherThanMinusOne) {
  for (int len : {-2, -100, -32768}) {
    expectInvalid(decode(header(2).int16(len).raw(std::vector<uint8_t>(8, 'x'))), 77, "negative string length");
  }
}

TEST(Malformed, NegativeClientIdLengthOtherThanMinusOne) {
  const DecodedRequest d = decode(Bytes().int16(2).int16(0).int64(5).int16(-2).str("orders"));
  expectInvalid(d, 5, "ClientId");
  EXPECT_FALSE(d.header.clientId.has_value());
}

TEST(Malformed, StringLengthBeyondTheFrame) {
  expectInvalid(decode(header(2).int16(7).raw(std::vector<uint8_t>{'o', 'r', 'd'})), 77, "beyond");
}

TEST(Malformed, NullStringWhereNotNullable) {
  expectInvalid(decode(header(2).nullStr()), 77, "not nullable");                   // ConsumerGroup
  expectInvalid(decode(header(0).str("g").nullStr().int64(1)), 77, "ConsumerId");  // ConsumerId
  expectInvalid(decode(header(4).count(2).str("a").nullStr()), 77, "not nullable");  // element of [string]
  expectInvalid(decode(header(6).str("g").str("c").int64(1).count(1).nullStr().int32(0).int64(0)), 77, "Topic");
}

TEST(Malformed, NullClientIdIsFine) {
  const DecodedRequest d = decode(Bytes().requestHeader(2, 0, 9, std::nullopt).str("orders"));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_FALSE(d.header.clientId.has_value());
}

TEST(Malformed, ClientIdLongerThan255Bytes) {
  const DecodedRequest d = decode(Bytes().requestHeader(2, 0, 31, std::string(256, 'c')).str("orders"));
  expectInvalid(d, 31, "ClientId");
  EXPECT_FALSE(d.header.clientId.has_value()) << "an over-long ClientId is not kept";

  const DecodedRequest ok = decode(Bytes().requestHeader(2, 0, 31, std::string(255, 'c')).str("orders"));
  ASSERT_EQ(ok.status, DecodeStatus::Ok) << ok.detail;
  EXPECT_EQ(ok.header.clientId, std::string(255, 'c'));
}

// ---- Arrays ------------------------------------------------------------------

TEST(Malformed, CountMinusOneReadsAsEmpty) {
  DecodedRequest d = decode(header(4).count(-1));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_TRUE(std::get<ListGroupsRequest>(d.request).groups.empty());

  d = decode(header(1).str("g").int64(1000).count(-1).boolean(true));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(std::get<CreateGroupRequest>(d.request), (CreateGroupRequest{"g", 1000, {}, true}));

  d = decode(header(3).str("g").str("").count(-1));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_TRUE(std::get<RegisterConsumerRequest>(d.request).owned.empty());

  // It re-encodes as count 0: the codec writes -1 nowhere.
  std::vector<uint8_t> again;
  encodeRequest(d.header, d.request, again);
  EXPECT_EQ(toHex(std::span(again).last(4)), "00000000");
}

TEST(Malformed, NegativeCountOtherThanMinusOne) {
  for (int64_t n : std::initializer_list<int64_t>{-2, -1000, INT32_MIN}) {
    expectInvalid(decode(header(4).count(n)), 77, "negative array count");
  }
  expectInvalid(decode(header(8).str("g").count(-2)), 77, "Offsets");
}

// The sender's count is checked against the bytes that remain before any
// reserve: a count of 2^31-1 in a small frame costs nothing.
TEST(Malformed, CountBeyondTheFrameAllocatesNothingSizedByIt) {
  struct Case {
    const char* name;
    Bytes bytes;
  };
  const Case cases[] = {
      {"ListGroups names", header(4).count(0x7fffffff).str("a")},
      {"CreateGroup topics", header(1).str("g").int64(1).count(0x7fffffff).boolean(false)},
      {"RegisterConsumer owned", header(3).str("g").str("c").count(0x7fffffff).str("t").int32(0)},
      {"CommitOffsets offsets", header(6).str("g").str("c").int64(1).count(0x7fffffff)},
      {"FetchOffsets topics", header(7).str("g").count(0x7fffffff)},
      {"RewindConsumer offsets", header(8).str("g").count(0x7fffffff).str("t").int32(0).int64(0)},
  };
  double slowestMs = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto body = c.bytes.body();
    const auto start = std::chrono::steady_clock::now();
    DecodedRequest d;
    size_t largest = 0;
    {
      AllocationProbe probe;
      d = decodeRequest(body);
      largest = probe.largest();
    }
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    slowestMs = std::max(slowestMs, took.count());
    EXPECT_EQ(d.status, DecodeStatus::InvalidRequest);
    EXPECT_NE(d.detail.find("cannot fit"), std::string::npos) << d.detail;
    // What shows that the count cost nothing: no allocation sized by it.
    EXPECT_LT(largest, 4096u) << "an allocation sized by the sender's count";
  }
  // A measure of speed: reported, not asserted (tests/README.md, Time in tests).
  groupcoord::testing::figure("malformed counts of 2^31-1: the slowest of " + std::to_string(std::size(cases)) +
                              " decodes took " + std::to_string(slowestMs) + " ms");
}

TEST(Malformed, CountIsCheckedAgainstTheSmallestElement) {
  // Three empty strings take exactly 6 bytes: a count of 3 fits, 4 does not.
  DecodedRequest d = decode(header(4).count(3).str("").str("").str(""));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(std::get<ListGroupsRequest>(d.request).groups.size(), 3u);
  expectInvalid(decode(header(4).count(4).str("").str("").str("")), 77, "cannot fit");

  // PartitionOffset takes at least 14 bytes: 13 left is not enough for one.
  expectInvalid(decode(header(8).str("g").count(1).raw(std::vector<uint8_t>(13, 0))), 77, "cannot fit");
  // A count that passes the bound but whose elements run out is truncated.
  expectInvalid(decode(header(4).count(3).str("abcdef")), 77, "truncated");
}

// Where the probe's own test leaves its buffer, so the compiler cannot
// elide the allocation (clang removes new/delete pairs whose memory never escapes).
std::vector<uint8_t>* volatile gEscaped = nullptr;

TEST(Malformed, ProbeSeesALargeAllocation) {
  // The allocation probe itself works: the tests that rely on it could fail.
  AllocationProbe probe;
  void* raw = ::operator new(size_t{1} << 21);
  EXPECT_GE(probe.largest(), size_t{1} << 21);
  ::operator delete(raw);

  AllocationProbe again;
  std::vector<uint8_t> big;
  big.reserve(size_t{1} << 20);
  gEscaped = &big;
  EXPECT_GE(again.largest(), size_t{1} << 20);
  EXPECT_GE(again.count(), 1u);
  gEscaped = nullptr;
}

// ---- ApiKey and Version --------------------------------------------------------

TEST(Malformed, UnknownApiKeyKeepsCorrelationAndClientId) {
  for (int key : {13, 42, -1, 0x7fff}) {
    // Whatever follows the header is not looked at.
    const DecodedRequest d = decode(Bytes().requestHeader(key, 0, 12, "svc-1").int8(0x99));
    EXPECT_EQ(d.status, DecodeStatus::UnknownApi) << key;
    EXPECT_EQ(static_cast<int>(d.header.apiKey), key);
    EXPECT_EQ(d.header.correlationId, 12);
    EXPECT_EQ(d.header.clientId, "svc-1");
    EXPECT_NE(d.detail.find(std::to_string(key)), std::string::npos) << d.detail;
  }
}

TEST(Malformed, UnknownApiKeyWinsOverABadClientId) {
  const DecodedRequest d = decode(Bytes().int16(42).int16(0).int64(12).int16(500).int8(1));
  EXPECT_EQ(d.status, DecodeStatus::UnknownApi);
  EXPECT_EQ(d.header.correlationId, 12);
  EXPECT_FALSE(d.header.clientId.has_value());
}

TEST(Malformed, UnknownApiKeyWinsOverAnUnknownVersion) {
  // Versions belong to a key: an unknown key has no versions to compare.
  const DecodedRequest d = decode(Bytes().requestHeader(42, 5, 12, "svc-1"));
  EXPECT_EQ(d.status, DecodeStatus::UnknownApi);
  EXPECT_EQ(d.header.version, 5);
  EXPECT_EQ(d.header.correlationId, 12);
}

TEST(Malformed, UnsupportedVersionKeepsCorrelationId) {
  for (int version : {3, 4, -1}) {
    const DecodedRequest d = decode(Bytes().requestHeader(0, version, 13, "svc-1").str("g").str("c").int64(1));
    EXPECT_EQ(d.status, DecodeStatus::UnsupportedVersion) << version;
    EXPECT_EQ(d.header.apiKey, ApiKey::Heartbeat);
    EXPECT_EQ(d.header.version, version);
    EXPECT_EQ(d.header.correlationId, 13);
    EXPECT_EQ(d.header.clientId, "svc-1");
  }
  // The body of an unknown version is not judged by version 0's layout.
  const DecodedRequest d = decode(Bytes().requestHeader(4, 3, 14, std::nullopt).int8(1));
  EXPECT_EQ(d.status, DecodeStatus::UnsupportedVersion);
  EXPECT_EQ(d.header.correlationId, 14);
}

// ---- Bool ----------------------------------------------------------------------

// ---- Authenticate ---------------------------------------------------------------

TEST(Malformed, AuthenticateWithoutItsSecret) {
  expectInvalid(decode(header(9).str("alice")), 77, "Secret");
  expectInvalid(decode(header(9)), 77, "User");
}

TEST(Malformed, AuthenticateWithANullOrNegativeOrOversizedLength) {
  expectInvalid(decode(header(9).nullStr().str("s")), 77, "not nullable");
  expectInvalid(decode(header(9).str("alice").nullStr()), 77, "Secret");
  expectInvalid(decode(header(9).str("alice").int16(-7).raw(std::vector<uint8_t>(8, 'x'))), 77,
                "negative string length");
  expectInvalid(decode(header(9).str("alice").int16(0x7fff).raw(std::vector<uint8_t>{'a', 'b'})), 77, "beyond");
}

TEST(Malformed, AuthenticateWithTrailingBytes) {
  expectInvalid(decode(header(9).str("alice").str("s").int8(0)), 77, "after the last field");
}

TEST(MalformedResponse, AuthenticateResponseWithMoreThanItsErrorCode) {
  const auto body = Bytes().responseHeader(0, 1).int16(0).int16(0).body();
  EXPECT_FALSE(decodeResponse(ApiKey::Authenticate, body).ok);
  const auto shortBody = Bytes().responseHeader(0, 1).int8(0).body();
  EXPECT_FALSE(decodeResponse(ApiKey::Authenticate, shortBody).ok);
}

// ---- DrainServer ------------------------------------------------------------------

TEST(Malformed, DrainServerTruncated) {
  // The documented example without its last byte (Drain), and cut inside ServerId.
  const auto example = fromHex("0000001b000a00000000000000000016000867726f757063746c0000000201");
  ASSERT_TRUE(example);
  const auto body = bodyOf(*example);
  expectInvalid(decodeRequest(body.first(body.size() - 1)), 22, "Drain");
  expectInvalid(decodeRequest(body.first(body.size() - 3)), 22, "ServerId");
  expectInvalid(decode(header(10)), 77, "ServerId");
  expectInvalid(decode(header(10).int32(2)), 77, "Drain");
}

TEST(Malformed, DrainServerDrainOtherThanZeroOrOne) {
  // Drain is a bool: only 0 (undrain) and 1 (drain) are well-formed.
  for (int b : {2, 0x7f, 0x80, 0xff}) {
    const DecodedRequest d = decode(header(10).int32(2).int8(b));
    expectInvalid(d, 77, "Drain");
    EXPECT_EQ(d.header.apiKey, ApiKey::DrainServer);
  }
}

TEST(Malformed, DrainServerWithTrailingBytes) {
  expectInvalid(decode(header(10).int32(2).int8(1).int8(0)), 77, "after the last field");
}

TEST(Malformed, DrainServerNegativeServerIdIsWellFormedAndRefusedByValidateNames) {
  // A negative ServerId decodes (the bytes are sound) and is answered with
  // the API's full response, INVALID_REQUEST, not with an error-only body.
  for (int64_t id : std::initializer_list<int64_t>{-1, INT32_MIN}) {
    const DecodedRequest d = decode(header(10).int32(id).int8(1));
    ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
    EXPECT_EQ(validateNames(d.request), ErrorCode::INVALID_REQUEST);
    EXPECT_EQ(errorResponse(d.request, validateNames(d.request)),
              Response(DrainServerResponse{ErrorCode::INVALID_REQUEST}));
  }
}

TEST(MalformedResponse, DrainServerResponseWithMoreThanItsErrorCode) {
  EXPECT_FALSE(decodeResponse(ApiKey::DrainServer, Bytes().responseHeader(0, 1).int16(0).int16(0).body()).ok);
  EXPECT_FALSE(decodeResponse(ApiKey::DrainServer, Bytes().responseHeader(0, 1).int8(0).body()).ok);
}

TEST(Malformed, BoolOtherThanZeroOrOne) {
  for (int b : {2, 0x7f, 0xff}) {
    expectInvalid(decode(header(1).str("g").int64(1000).count(0).int8(b)), 77, "Ephemeral");
  }
}

// ---- Responses -----------------------------------------------------------------

TEST(MalformedResponse, ShorterThanTheHeader) {
  const auto body = Bytes().int16(0).int32(0).body();
  const DecodedResponse d = decodeResponse(ApiKey::Heartbeat, body);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("shorter"), std::string::npos) << d.detail;
}

TEST(MalformedResponse, EveryTruncationIsRefusedExceptTheErrorOnlyLength) {
  for (const auto& s : responseSamples()) {
    if (std::holds_alternative<ErrorOnlyResponse>(s.response)) continue;
    SCOPED_TRACE(s.name);
    std::vector<uint8_t> frame;
    encodeResponse(s.header, s.response, frame);
    const auto body = bodyOf(frame);
    for (size_t cut = 0; cut < body.size(); ++cut) {
      const DecodedResponse d = decodeResponse(s.api, body.first(cut));
      if (cut == 12) {
        // Two bytes after the header: an error-only answer by definition.
        ASSERT_TRUE(d.ok) << d.detail;
        ASSERT_TRUE(std::holds_alternative<ErrorOnlyResponse>(d.response));
      } else {
        ASSERT_FALSE(d.ok) << "cut at " << cut << " of " << body.size();
        ASSERT_FALSE(d.detail.empty());
      }
    }
  }
}

TEST(MalformedResponse, TrailingBytes) {
  const auto body = Bytes().responseHeader(0, 1).int64(6).int16(0).int8(0).body();
  const DecodedResponse d = decodeResponse(ApiKey::Heartbeat, body);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("after the last field"), std::string::npos) << d.detail;
}

TEST(MalformedResponse, BadBoolInGroupInfo) {
  const auto body = Bytes()
                        .responseHeader(0, 1)
                        .count(1)
                        .str("g")
                        .int16(0)
                        .count(0)
                        .count(0)
                        .int32(-1)
                        .str("")
                        .uint16(0)
                        .int64(-1)
                        .int64(-1)
                        .int8(2)
                        .int16(0)
                        .body();
  const DecodedResponse d = decodeResponse(ApiKey::ListGroups, body);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("Ephemeral"), std::string::npos) << d.detail;
}

TEST(MalformedResponse, GroupInfoCountBoundedByItsSmallestSize) {
  // 40 bytes follow the count: enough for 20 empty strings but not for two GroupInfos.
  const auto body = Bytes().responseHeader(0, 1).count(2).raw(std::vector<uint8_t>(40, 0)).body();
  const DecodedResponse d = decodeResponse(ApiKey::ListGroups, body);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("cannot fit"), std::string::npos) << d.detail;
}

// ---- DescribeGroup -----------------------------------------------------------------

TEST(Malformed, DescribeGroupWithoutItsGroupOrWithMore) {
  expectInvalid(decode(header(11)), 77, "ConsumerGroup");
  expectInvalid(decode(header(11).nullStr()), 77, "ConsumerGroup");
  expectInvalid(decode(header(11).str("g").int8(0)), 77, "after the last field");
}

TEST(Malformed, DescribeGroupBadNameIsWellFormedAndRefusedByValidateNames) {
  const DecodedRequest d = decode(header(11).str("a/b"));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(validateNames(d.request), ErrorCode::INVALID_GROUP_NAME);
  const Response r = errorResponse(d.request, ErrorCode::INVALID_GROUP_NAME);
  ASSERT_TRUE(std::holds_alternative<DescribeGroupResponse>(r));
  EXPECT_EQ(std::get<DescribeGroupResponse>(r).group, "a/b");
  EXPECT_EQ(std::get<DescribeGroupResponse>(r).generation, -1);
}

// The fixed part of a DescribeGroup answer, up to and including Generation.
Bytes describeHead(int ephemeral = 0) {
  Bytes b;
  b.responseHeader(0, 1).str("g").int16(0).int32(1).str("h").uint16(1).int8(1).int64(1000).int8(ephemeral).int64(4);
  return b;
}

TEST(MalformedResponse, DescribeGroupBadEphemeral) {
  const auto body = describeHead(2).count(0).count(0).count(0).count(0).body();
  const DecodedResponse d = decodeResponse(ApiKey::DescribeGroup, body);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("Ephemeral"), std::string::npos) << d.detail;
}

TEST(MalformedResponse, DescribeGroupCountsBoundedByTheirSmallestElements) {
  // 31 bytes after a Members count of 1: one byte short of the smallest MemberState (32).
  auto members = describeHead().count(0).count(1).raw(std::vector<uint8_t>(31, 0)).body();
  DecodedResponse d = decodeResponse(ApiKey::DescribeGroup, members);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("Members"), std::string::npos) << d.detail;
  // 39 bytes after a History count of 1: one short of the smallest RebalanceEvent (40).
  auto history = describeHead().count(0).count(0).count(0).count(1).raw(std::vector<uint8_t>(39, 0)).body();
  d = decodeResponse(ApiKey::DescribeGroup, history);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("History"), std::string::npos) << d.detail;
  // A count of 2^31-1 members is refused before anything is reserved.
  auto huge = describeHead().count(0).count(0x7fffffff).body();
  size_t allocations = 0;
  {
    AllocationProbe probe;
    d = decodeResponse(ApiKey::DescribeGroup, huge);
    allocations = probe.largest();
  }
  EXPECT_FALSE(d.ok);
  EXPECT_LT(allocations, 4096u);
}

TEST(MalformedResponse, DescribeGroupMemberWithANegativeHeldCount) {
  const auto body = describeHead()
                        .count(0)
                        .count(1)
                        .str("m").str("c").str("h").uint16(1).int64(1).int64(2)
                        .count(-2)
                        .count(0)
                        .count(0)
                        .count(0)
                        .body();
  const DecodedResponse d = decodeResponse(ApiKey::DescribeGroup, body);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("Held"), std::string::npos) << d.detail;
}

// ---- DescribeServers ---------------------------------------------------------------

TEST(Malformed, DescribeServersWithAnyBody) {
  // Nothing follows the header; a byte more is trailing.
  EXPECT_EQ(decode(header(12)).status, DecodeStatus::Ok);
  expectInvalid(decode(header(12).int8(0)), 77, "after the last field");
  expectInvalid(decode(header(12).str("orders")), 77, "after the last field");
  EXPECT_EQ(decode(Bytes().requestHeader(12, 1, 78, "cli")).status, DecodeStatus::UnsupportedVersion);
}

// The fixed part of a DescribeServers answer, up to and including Complete.
Bytes serversHead(int complete = 1) {
  Bytes b;
  b.responseHeader(0, 1).int16(0).int32(1).int32(100).int32(50).str("members").int64(10).int64(24).int64(14).int8(
      complete);
  return b;
}

TEST(MalformedResponse, DescribeServersBadBools) {
  DecodedResponse d = decodeResponse(ApiKey::DescribeServers, serversHead(2).count(0).count(0).body());
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("Complete"), std::string::npos) << d.detail;
  const auto badDrained = serversHead()
                              .count(1)
                              .int32(1).str("h").int32(7400).int8(7).int8(1).int8(1).int64(1).int32(1).int64(1)
                              .count(0)
                              .body();
  d = decodeResponse(ApiKey::DescribeServers, badDrained);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("Drained"), std::string::npos) << d.detail;
  // The same bytes with a 1 read well.
  const auto good = serversHead()
                        .count(1)
                        .int32(1).str("h").int32(7400).int8(1).int8(1).int8(1).int64(1).int32(1).int64(1)
                        .count(0)
                        .body();
  d = decodeResponse(ApiKey::DescribeServers, good);
  ASSERT_TRUE(d.ok) << d.detail;
}

TEST(MalformedResponse, DescribeServersCountsBoundedByTheirSmallestElements) {
  // 36 bytes after a Servers count of 1: the Moves count (4) and one byte
  // short of the smallest ServerPlacement (33).
  auto servers = serversHead().count(1).raw(std::vector<uint8_t>(36, 0)).body();
  DecodedResponse d = decodeResponse(ApiKey::DescribeServers, servers);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("Servers"), std::string::npos) << d.detail;
  // 17 bytes after a Moves count of 1: one short of the smallest GroupMove (18).
  auto moves = serversHead().count(0).count(1).raw(std::vector<uint8_t>(17, 0)).body();
  d = decodeResponse(ApiKey::DescribeServers, moves);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("Moves"), std::string::npos) << d.detail;
  // Two moves in 36 bytes read; so does -1 as an empty array.
  auto two = serversHead().count(-1).count(2).raw(std::vector<uint8_t>(36, 0)).body();
  d = decodeResponse(ApiKey::DescribeServers, two);
  ASSERT_TRUE(d.ok) << d.detail;
  EXPECT_EQ(std::get<DescribeServersResponse>(d.response).moves.size(), 2u);
  // Counts below -1 are malformed.
  d = decodeResponse(ApiKey::DescribeServers, serversHead().count(-2).count(0).body());
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("Servers"), std::string::npos) << d.detail;
  // A count of 2^31-1 servers, or moves, is refused before anything is reserved.
  for (const auto& huge : {serversHead().count(0x7fffffff).body(), serversHead().count(0).count(0x7fffffff).body()}) {
    size_t allocations = 0;
    {
      AllocationProbe probe;
      d = decodeResponse(ApiKey::DescribeServers, huge);
      allocations = probe.largest();
    }
    EXPECT_FALSE(d.ok);
    EXPECT_NE(d.detail.find("cannot fit"), std::string::npos) << d.detail;
    EXPECT_LT(allocations, 4096u);
  }
}

TEST(MalformedResponse, UnknownApiWithAFullBody) {
  const auto body = Bytes().responseHeader(0, 1).int64(6).int16(0).body();
  const DecodedResponse d = decodeResponse(static_cast<ApiKey>(42), body);
  EXPECT_FALSE(d.ok);
}

TEST(MalformedResponse, FullResponseOfAnotherVersion) {
  const auto body = Bytes().responseHeader(3, 1).int64(6).int16(0).body();
  const DecodedResponse d = decodeResponse(ApiKey::Heartbeat, body);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("version"), std::string::npos) << d.detail;
}

// ---- The hot path ----------------------------------------------------------------

TEST(HotPath, HeartbeatWithShortNamesDecodesWithoutTouchingTheHeap) {
  // Names of up to 15 bytes fit in std::string's inline buffer (libstdc++):
  // a heartbeat then costs no allocation at all.
  const auto body = Bytes().requestHeader(0, 0, 1, "svc-1").str("orders").str("svc-1-7f3a").int64(5).body();
  size_t allocations = 0;
  DecodedRequest d;
  {
    AllocationProbe probe;
    d = decodeRequest(body);
    allocations = probe.count();
  }
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(allocations, 0u);
}

}  // namespace
}  // namespace groupcoord::protocol::testing

namespace groupcoord::protocol::testing {
namespace {

// ---- Version 1 --------------------------------------------------------------------

TEST(MalformedV1, VersionsAboveAnApisNewestAreUnsupported) {
  // Heartbeat has no version 3; CreateGroup has no version 2.
  EXPECT_EQ(decode(Bytes().requestHeader(0, 3, 12, "svc").str("g").str("m").int64(1).int32(0)).status,
            DecodeStatus::UnsupportedVersion);
  EXPECT_EQ(decode(Bytes().requestHeader(1, 2, 12, "svc").str("g").int64(1).count(0).boolean(false).int8(0)).status,
            DecodeStatus::UnsupportedVersion);
  EXPECT_EQ(decode(Bytes().requestHeader(3, -1, 12, "svc").str("g").str("").count(0)).status,
            DecodeStatus::UnsupportedVersion);
}

TEST(MalformedV1, AVersionOneBodyWithoutItsNewFieldsIsTruncated) {
  const DecodedRequest create = decode(Bytes().requestHeader(1, 1, 13, "svc").str("g").int64(1).count(0).boolean(false));
  expectInvalid(create, 13, "AssignmentMode");
  const DecodedRequest reg = decode(Bytes().requestHeader(3, 1, 14, "svc").str("g").str("").count(0));
  expectInvalid(reg, 14, "Metadata");
  const DecodedRequest noRack = decode(Bytes().requestHeader(3, 1, 15, "svc").str("g").str("").count(0).int32(0));
  expectInvalid(noRack, 15, "Rack");
}

TEST(MalformedV1, AnUnknownAssignmentModeIsMalformed) {
  for (int b : {2, 0x7f, 0x80, 0xff}) {
    expectInvalid(decode(Bytes().requestHeader(1, 1, 16, "svc").str("g").int64(1).count(0).boolean(false).int8(b)), 16,
                  "AssignmentMode");
  }
}

TEST(MalformedV1, MetadataLengthsBeyondTheFrameOrNegative) {
  expectInvalid(decode(Bytes().requestHeader(3, 1, 17, "svc").str("g").str("").count(0).int32(1000).str("")), 17,
                "Metadata");
  expectInvalid(decode(Bytes().requestHeader(3, 1, 18, "svc").str("g").str("").count(0).int32(-2).str("")), 18,
                "Metadata");
  expectInvalid(decode(Bytes().requestHeader(3, 1, 19, "svc").str("g").str("").count(0).int32(0x7fffffff)), 19,
                "Metadata");
}

TEST(MalformedV1, AVersionZeroBodyWithVersionOneFieldsHasTrailingBytes) {
  expectInvalid(decode(Bytes().requestHeader(1, 0, 20, "svc").str("g").int64(1).count(0).boolean(false).int8(1)), 20,
                "after the last field");
}

TEST(MalformedResponseV1, RegisterConsumerMemberDataBoundedAndModeChecked) {
  auto head = [] {
    Bytes b;
    b.responseHeader(1, 1).str("g").str("m").int64(1).count(0).count(0).int16(0);
    return b;
  };
  EXPECT_FALSE(decodeResponse(ApiKey::RegisterConsumer, head().int8(5).count(0).body()).ok);
  // 7 bytes after a count of 1: one short of the smallest MemberMetadata (8).
  auto d = decodeResponse(ApiKey::RegisterConsumer, head().int8(1).count(1).raw(std::vector<uint8_t>(7, 0)).body());
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.detail.find("MemberData"), std::string::npos) << d.detail;
  // A version-1 answer read as version 0 is refused (the header says 1, so
  // the codec reads it as 1: the same bytes with version 0 have trailing bytes).
  std::vector<uint8_t> frame;
  encodeResponse({0, 2}, RegisterConsumerResponse{"g", "m", 1, {}, {}, ErrorCode::NONE}, frame);
  frame.push_back(1);
  frame.insert(frame.end(), {0, 0, 0, 0});
  frame[3] = static_cast<uint8_t>(frame.size() - 4);
  EXPECT_FALSE(decodeResponse(ApiKey::RegisterConsumer, bodyOf(frame)).ok);
}

}  // namespace
}  // namespace groupcoord::protocol::testing
