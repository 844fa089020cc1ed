// Byte vectors for every served Kafka API at every served version, and for
// the APIs coded but not served at their flexible versions
// (docs/protocol.md, "The Kafka port"): one request and one response each,
// written out as hex from Kafka's field layouts, never by the codec under
// test. Each request is the API's sample (KafkaSamples.h) and each response
// the API's sample below; at every version the codec must write exactly the
// vector's bytes, and read them back to a message that writes them again.

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "KafkaSamples.h"
#include "TestBytes.h"
#include "protocol/kafka/Codec.h"

namespace groupcoord::protocol::kafka {
namespace {

using protocol::testing::bodyOf;
using protocol::testing::fromHex;
using protocol::testing::toHex;

constexpr int32_t kCorrelationId = 7;
constexpr std::string_view kClientId = "c";

// One response per served API; a field a version does not carry is left out
// of that version's bytes.
std::vector<Response> responseSamples() {
  MetadataResponse metadata;
  metadata.throttleTimeMs = 16;
  metadata.brokers = {{1, "gc-1", 9092, std::nullopt}};
  metadata.clusterId = "cl";
  metadata.controllerId = 1;
  metadata.topics = {{ErrorCode::NONE, "orders", false, {{ErrorCode::NONE, 0, 1, {1}, {1}}}}};
  OffsetFetchResponse offsetFetch;
  offsetFetch.topics = {{"orders", {{0, 42, 5, "", ErrorCode::NONE}}}};
  DescribeGroupsResponse describe;
  describe.groups = {{ErrorCode::NONE, "g1", "Stable", "consumer", "range",
                      {{"m-1", std::nullopt, "c-1", "/127.0.0.1", "md", "as"}}, kNoAuthorizedOperations}};
  FetchResponse fetch;  // groupcoord's answer: no records, every offset 0
  fetch.topics = {{"orders", {FetchResponse::Partition{}}}};
  ListOffsetsResponse listOffsets;  // offset 0; version 0 as OldStyleOffsets
  listOffsets.topics = {{"orders", {{0, ErrorCode::NONE, {0}, -1, 0}}}};
  return {
      ApiVersionsResponse{ErrorCode::NONE, {{18, 0, 2}}, 10},
      metadata,
      FindCoordinatorResponse{5, ErrorCode::NONE, std::nullopt, 1, "gc-1", 9092},
      JoinGroupResponse{0, ErrorCode::NONE, 3, "range", "m-1", "m-1", {{"m-1", "i-1", "md"}}},
      SyncGroupResponse{0, ErrorCode::NONE, "as"},
      HeartbeatResponse{0, ErrorCode::REBALANCE_IN_PROGRESS},
      LeaveGroupResponse{0, ErrorCode::NONE},
      OffsetCommitResponse{0, {{"orders", {{0, ErrorCode::NONE}, {1, ErrorCode::ILLEGAL_GENERATION}}}}},
      offsetFetch,
      ListGroupsResponse{0, ErrorCode::NONE, {{"g1", "consumer"}}},
      describe,
      DeleteGroupsResponse{0, {{"g1", ErrorCode::NONE}}},
      SaslHandshakeResponse{ErrorCode::NONE, {"PLAIN", "SCRAM-SHA-256"}},
      SaslAuthenticateResponse{ErrorCode::NONE, std::nullopt, "ok", 3600000},
      fetch,
      listOffsets,
  };
}

int16_t keyOf(const auto& variant) {
  return std::visit([](const auto& m) { return static_cast<int16_t>(m.kApiKey); }, variant);
}

template <typename Variant>
const Variant& sampleFor(const std::vector<Variant>& samples, ApiKey api) {
  for (const auto& s : samples) {
    if (keyOf(s) == static_cast<int16_t>(api)) return s;
  }
  ADD_FAILURE() << "no sample for " << apiName(static_cast<int16_t>(api));
  return samples.front();
}

struct Vector {
  ApiKey api;
  int16_t version;
  std::string_view request;   // the whole frame: Size, request header version 1 (CorrelationId 7, ClientId "c"), body
  std::string_view response;  // the whole frame: Size, response header version 0 (CorrelationId 7), body
};

// clang-format off
const std::vector<Vector> kVectors{
    {ApiKey::ApiVersions, 0,
         "0000000b0012000000000007000163",
         "0000001000000007000000000001001200000002"},
    {ApiKey::ApiVersions, 1,
         "0000000b0012000100000007000163",
         "00000014000000070000000000010012000000020000000a"},
    {ApiKey::ApiVersions, 2,
         "0000000b0012000200000007000163",
         "00000014000000070000000000010012000000020000000a"},
    {ApiKey::Metadata, 0,
         "0000002100030000000000070001630000000200066f72646572730008706179"
         "6d656e7473",
         "00000042000000070000000100000001000467632d3100002384000000010000"
         "00066f7264657273000000010000000000000000000100000001000000010000"
         "000100000001"},
    {ApiKey::Metadata, 1,
         "0000002100030001000000070001630000000200066f72646572730008706179"
         "6d656e7473",
         "00000049000000070000000100000001000467632d3100002384ffff00000001"
         "00000001000000066f7264657273000000000100000000000000000001000000"
         "01000000010000000100000001"},
    {ApiKey::Metadata, 2,
         "0000002100030002000000070001630000000200066f72646572730008706179"
         "6d656e7473",
         "0000004d000000070000000100000001000467632d3100002384ffff0002636c"
         "0000000100000001000000066f72646572730000000001000000000000000000"
         "0100000001000000010000000100000001"},
    {ApiKey::Metadata, 3,
         "0000002100030003000000070001630000000200066f72646572730008706179"
         "6d656e7473",
         "0000005100000007000000100000000100000001000467632d3100002384ffff"
         "0002636c0000000100000001000000066f726465727300000000010000000000"
         "000000000100000001000000010000000100000001"},
    {ApiKey::Metadata, 4,
         "0000002200030004000000070001630000000200066f72646572730008706179"
         "6d656e747301",
         "0000005100000007000000100000000100000001000467632d3100002384ffff"
         "0002636c0000000100000001000000066f726465727300000000010000000000"
         "000000000100000001000000010000000100000001"},
    {ApiKey::FindCoordinator, 0,
         "0000000f000a00000000000700016300026731",
         "0000001400000007000000000001000467632d3100002384"},
    {ApiKey::FindCoordinator, 1,
         "00000010000a0001000000070001630002673100",
         "0000001a00000007000000050000ffff00000001000467632d3100002384"},
    {ApiKey::FindCoordinator, 2,
         "00000010000a0002000000070001630002673100",
         "0000001a00000007000000050000ffff00000001000467632d3100002384"},
    {ApiKey::JoinGroup, 0,
         "00000045000b000000000007000163000267310000271000036d2d310008636f"
         "6e73756d657200000002000572616e6765000000026d64000a726f756e64726f"
         "62696e000000026d64",
         "0000002a00000007000000000003000572616e676500036d2d3100036d2d3100"
         "00000100036d2d31000000026d64"},
    {ApiKey::JoinGroup, 1,
         "00000049000b0001000000070001630002673100002710000493e000036d2d31"
         "0008636f6e73756d657200000002000572616e6765000000026d64000a726f75"
         "6e64726f62696e000000026d64",
         "0000002a00000007000000000003000572616e676500036d2d3100036d2d3100"
         "00000100036d2d31000000026d64"},
    {ApiKey::JoinGroup, 2,
         "00000049000b0002000000070001630002673100002710000493e000036d2d31"
         "0008636f6e73756d657200000002000572616e6765000000026d64000a726f75"
         "6e64726f62696e000000026d64",
         "0000002e0000000700000000000000000003000572616e676500036d2d310003"
         "6d2d310000000100036d2d31000000026d64"},
    {ApiKey::JoinGroup, 3,
         "00000049000b0003000000070001630002673100002710000493e000036d2d31"
         "0008636f6e73756d657200000002000572616e6765000000026d64000a726f75"
         "6e64726f62696e000000026d64",
         "0000002e0000000700000000000000000003000572616e676500036d2d310003"
         "6d2d310000000100036d2d31000000026d64"},
    {ApiKey::JoinGroup, 4,
         "00000049000b0004000000070001630002673100002710000493e000036d2d31"
         "0008636f6e73756d657200000002000572616e6765000000026d64000a726f75"
         "6e64726f62696e000000026d64",
         "0000002e0000000700000000000000000003000572616e676500036d2d310003"
         "6d2d310000000100036d2d31000000026d64"},
    {ApiKey::JoinGroup, 5,
         "0000004e000b0005000000070001630002673100002710000493e000036d2d31"
         "0003692d310008636f6e73756d657200000002000572616e6765000000026d64"
         "000a726f756e64726f62696e000000026d64",
         "000000330000000700000000000000000003000572616e676500036d2d310003"
         "6d2d310000000100036d2d310003692d31000000026d64"},
    {ApiKey::SyncGroup, 0,
         "00000032000e000000000007000163000267310000000300036d2d3100000002"
         "00036d2d3100000002617300036d2d32000000026173",
         "0000000c000000070000000000026173"},
    {ApiKey::SyncGroup, 1,
         "00000032000e000100000007000163000267310000000300036d2d3100000002"
         "00036d2d3100000002617300036d2d32000000026173",
         "0000001000000007000000000000000000026173"},
    {ApiKey::SyncGroup, 2,
         "00000032000e000200000007000163000267310000000300036d2d3100000002"
         "00036d2d3100000002617300036d2d32000000026173",
         "0000001000000007000000000000000000026173"},
    {ApiKey::SyncGroup, 3,
         "00000037000e000300000007000163000267310000000300036d2d310003692d"
         "310000000200036d2d3100000002617300036d2d32000000026173",
         "0000001000000007000000000000000000026173"},
    {ApiKey::Heartbeat, 0,
         "00000018000c000000000007000163000267310000000300036d2d31",
         "0000000600000007001b"},
    {ApiKey::Heartbeat, 1,
         "00000018000c000100000007000163000267310000000300036d2d31",
         "0000000a0000000700000000001b"},
    {ApiKey::Heartbeat, 2,
         "00000018000c000200000007000163000267310000000300036d2d31",
         "0000000a0000000700000000001b"},
    {ApiKey::Heartbeat, 3,
         "0000001d000c000300000007000163000267310000000300036d2d310003692d"
         "31",
         "0000000a0000000700000000001b"},
    {ApiKey::LeaveGroup, 0,
         "00000014000d0000000000070001630002673100036d2d31",
         "00000006000000070000"},
    {ApiKey::LeaveGroup, 1,
         "00000014000d0001000000070001630002673100036d2d31",
         "0000000a00000007000000000000"},
    {ApiKey::OffsetCommit, 0,
         "0000003c0008000000000007000163000267310000000100066f726465727300"
         "00000200000000000000000000002a00017800000001000000000000002bffff",
         "00000020000000070000000100066f7264657273000000020000000000000000"
         "00010016"},
    {ApiKey::OffsetCommit, 1,
         "000000550008000100000007000163000267310000000300036d2d3100000001"
         "00066f72646572730000000200000000000000000000002a0000000000000007"
         "00017800000001000000000000002b0000000000000007ffff",
         "00000020000000070000000100066f7264657273000000020000000000000000"
         "00010016"},
    {ApiKey::OffsetCommit, 2,
         "0000004d0008000200000007000163000267310000000300036d2d3100000000"
         "000003e80000000100066f72646572730000000200000000000000000000002a"
         "00017800000001000000000000002bffff",
         "00000020000000070000000100066f7264657273000000020000000000000000"
         "00010016"},
    {ApiKey::OffsetCommit, 3,
         "0000004d0008000300000007000163000267310000000300036d2d3100000000"
         "000003e80000000100066f72646572730000000200000000000000000000002a"
         "00017800000001000000000000002bffff",
         "0000002400000007000000000000000100066f72646572730000000200000000"
         "0000000000010016"},
    {ApiKey::OffsetCommit, 4,
         "0000004d0008000400000007000163000267310000000300036d2d3100000000"
         "000003e80000000100066f72646572730000000200000000000000000000002a"
         "00017800000001000000000000002bffff",
         "0000002400000007000000000000000100066f72646572730000000200000000"
         "0000000000010016"},
    {ApiKey::OffsetCommit, 5,
         "000000450008000500000007000163000267310000000300036d2d3100000001"
         "00066f72646572730000000200000000000000000000002a0001780000000100"
         "0000000000002bffff",
         "0000002400000007000000000000000100066f72646572730000000200000000"
         "0000000000010016"},
    {ApiKey::OffsetCommit, 6,
         "0000004d0008000600000007000163000267310000000300036d2d3100000001"
         "00066f72646572730000000200000000000000000000002a0000000500017800"
         "000001000000000000002b00000005ffff",
         "0000002400000007000000000000000100066f72646572730000000200000000"
         "0000000000010016"},
    {ApiKey::OffsetCommit, 7,
         "000000520008000700000007000163000267310000000300036d2d310003692d"
         "310000000100066f72646572730000000200000000000000000000002a000000"
         "0500017800000001000000000000002b00000005ffff",
         "0000002400000007000000000000000100066f72646572730000000200000000"
         "0000000000010016"},
    {ApiKey::OffsetFetch, 0,
         "0000002b0009000000000007000163000267310000000100066f726465727300"
         "000003000000000000000100000002",
         "00000024000000070000000100066f7264657273000000010000000000000000"
         "0000002a00000000"},
    {ApiKey::OffsetFetch, 1,
         "0000002b0009000100000007000163000267310000000100066f726465727300"
         "000003000000000000000100000002",
         "00000024000000070000000100066f7264657273000000010000000000000000"
         "0000002a00000000"},
    {ApiKey::OffsetFetch, 2,
         "0000002b0009000200000007000163000267310000000100066f726465727300"
         "000003000000000000000100000002",
         "00000026000000070000000100066f7264657273000000010000000000000000"
         "0000002a000000000000"},
    {ApiKey::OffsetFetch, 3,
         "0000002b0009000300000007000163000267310000000100066f726465727300"
         "000003000000000000000100000002",
         "0000002a00000007000000000000000100066f72646572730000000100000000"
         "000000000000002a000000000000"},
    {ApiKey::OffsetFetch, 4,
         "0000002b0009000400000007000163000267310000000100066f726465727300"
         "000003000000000000000100000002",
         "0000002a00000007000000000000000100066f72646572730000000100000000"
         "000000000000002a000000000000"},
    {ApiKey::OffsetFetch, 5,
         "0000002b0009000500000007000163000267310000000100066f726465727300"
         "000003000000000000000100000002",
         "0000002e00000007000000000000000100066f72646572730000000100000000"
         "000000000000002a00000005000000000000"},
    {ApiKey::ListGroups, 0,
         "0000000b0010000000000007000163",
         "0000001800000007000000000001000267310008636f6e73756d6572"},
    {ApiKey::ListGroups, 1,
         "0000000b0010000100000007000163",
         "0000001c0000000700000000000000000001000267310008636f6e73756d6572"},
    {ApiKey::ListGroups, 2,
         "0000000b0010000200000007000163",
         "0000001c0000000700000000000000000001000267310008636f6e73756d6572"},
    {ApiKey::DescribeGroups, 0,
         "00000017000f000000000007000163000000020002673100026732",
         "0000004d00000007000000010000000267310006537461626c650008636f6e73"
         "756d6572000572616e67650000000100036d2d310003632d31000a2f3132372e"
         "302e302e31000000026d64000000026173"},
    {ApiKey::DescribeGroups, 1,
         "00000017000f000100000007000163000000020002673100026732",
         "000000510000000700000000000000010000000267310006537461626c650008"
         "636f6e73756d6572000572616e67650000000100036d2d310003632d31000a2f"
         "3132372e302e302e31000000026d64000000026173"},
    {ApiKey::DescribeGroups, 2,
         "00000017000f000200000007000163000000020002673100026732",
         "000000510000000700000000000000010000000267310006537461626c650008"
         "636f6e73756d6572000572616e67650000000100036d2d310003632d31000a2f"
         "3132372e302e302e31000000026d64000000026173"},
    {ApiKey::DescribeGroups, 3,
         "00000018000f00030000000700016300000002000267310002673201",
         "000000550000000700000000000000010000000267310006537461626c650008"
         "636f6e73756d6572000572616e67650000000100036d2d310003632d31000a2f"
         "3132372e302e302e31000000026d6400000002617380000000"},
    {ApiKey::DescribeGroups, 4,
         "00000018000f00040000000700016300000002000267310002673201",
         "000000570000000700000000000000010000000267310006537461626c650008"
         "636f6e73756d6572000572616e67650000000100036d2d31ffff0003632d3100"
         "0a2f3132372e302e302e31000000026d6400000002617380000000"},
    {ApiKey::DeleteGroups, 0,
         "00000017002a000000000007000163000000020002673100026732",
         "00000012000000070000000000000001000267310000"},
    {ApiKey::DeleteGroups, 1,
         "00000017002a000100000007000163000000020002673100026732",
         "00000012000000070000000000000001000267310000"},
    {ApiKey::SaslHandshake, 0,
         "0000001a0011000000000007000163000d534352414d2d5348412d323536",
         "00000020000000070000000000020005504c41494e000d534352414d2d534841"
         "2d323536"},
    {ApiKey::SaslHandshake, 1,
         "0000001a0011000100000007000163000d534352414d2d5348412d323536",
         "00000020000000070000000000020005504c41494e000d534352414d2d534841"
         "2d323536"},
    {ApiKey::SaslAuthenticate, 0,
         "0000001f0024000000000007000163000000106e2c2c6e3d616c6963652c723d"
         "616263",
         "0000000e000000070000ffff000000026f6b"},
    {ApiKey::SaslAuthenticate, 1,
         "0000001f0024000100000007000163000000106e2c2c6e3d616c6963652c723d"
         "616263",
         "00000016000000070000ffff000000026f6b000000000036ee80"},
    {ApiKey::Fetch, 0,
         "000000470001000000000007000163ffffffff000001f4000000010000000100"
         "066f72646572730000000200000000000000000000002a000100000000000100"
         "0000000000000700010000",
         "00000026000000070000000100066f7264657273000000010000000000000000"
         "00000000000000000000"},
    {ApiKey::Fetch, 1,
         "000000470001000100000007000163ffffffff000001f4000000010000000100"
         "066f72646572730000000200000000000000000000002a000100000000000100"
         "0000000000000700010000",
         "0000002a00000007000000000000000100066f72646572730000000100000000"
         "0000000000000000000000000000"},
    {ApiKey::Fetch, 2,
         "000000470001000200000007000163ffffffff000001f4000000010000000100"
         "066f72646572730000000200000000000000000000002a000100000000000100"
         "0000000000000700010000",
         "0000002a00000007000000000000000100066f72646572730000000100000000"
         "0000000000000000000000000000"},
    {ApiKey::Fetch, 3,
         "0000004b0001000300000007000163ffffffff000001f4000000010010000000"
         "00000100066f72646572730000000200000000000000000000002a0001000000"
         "000001000000000000000700010000",
         "0000002a00000007000000000000000100066f72646572730000000100000000"
         "0000000000000000000000000000"},
    {ApiKey::Fetch, 4,
         "0000004c0001000400000007000163ffffffff000001f4000000010010000000"
         "0000000100066f72646572730000000200000000000000000000002a00010000"
         "00000001000000000000000700010000",
         "0000003600000007000000000000000100066f72646572730000000100000000"
         "0000000000000000000000000000000000000000000000000000"},
    {ApiKey::Fetch, 5,
         "0000005c0001000500000007000163ffffffff000001f4000000010010000000"
         "0000000100066f72646572730000000200000000000000000000002affffffff"
         "ffffffff00010000000000010000000000000007ffffffffffffffff00010000",
         "0000003e00000007000000000000000100066f72646572730000000100000000"
         "0000000000000000000000000000000000000000000000000000000000000000"
         "0000"},
    {ApiKey::Fetch, 6,
         "0000005c0001000600000007000163ffffffff000001f4000000010010000000"
         "0000000100066f72646572730000000200000000000000000000002affffffff"
         "ffffffff00010000000000010000000000000007ffffffffffffffff00010000",
         "0000003e00000007000000000000000100066f72646572730000000100000000"
         "0000000000000000000000000000000000000000000000000000000000000000"
         "0000"},
    {ApiKey::ListOffsets, 0,
         "0000003f0002000000000007000163ffffffff0000000100066f726465727300"
         "00000200000000fffffffffffffffe0000000100000001ffffffffffffffff00"
         "000001",
         "00000026000000070000000100066f7264657273000000010000000000000000"
         "00010000000000000000"},
    {ApiKey::ListOffsets, 1,
         "000000370002000100000007000163ffffffff0000000100066f726465727300"
         "00000200000000fffffffffffffffe00000001ffffffffffffffff",
         "0000002a000000070000000100066f726465727300000001000000000000ffff"
         "ffffffffffff0000000000000000"},
    {ApiKey::ListOffsets, 2,
         "000000380002000200000007000163ffffffff010000000100066f7264657273"
         "0000000200000000fffffffffffffffe00000001ffffffffffffffff",
         "0000002e00000007000000000000000100066f72646572730000000100000000"
         "0000ffffffffffffffff0000000000000000"},
    {ApiKey::ListOffsets, 3,
         "000000380002000300000007000163ffffffff010000000100066f7264657273"
         "0000000200000000fffffffffffffffe00000001ffffffffffffffff",
         "0000002e00000007000000000000000100066f72646572730000000100000000"
         "0000ffffffffffffffff0000000000000000"},
};
// clang-format on

TEST(KafkaVectors, EveryServedApiAndVersionHasAVector) {
  std::set<std::pair<int16_t, int16_t>> have;
  for (const Vector& v : kVectors) have.insert({static_cast<int16_t>(v.api), v.version});
  std::set<std::pair<int16_t, int16_t>> served;
  for (const auto& api : apiVersionsResponse().apiKeys) {
    for (int16_t v = api.minVersion; v <= api.maxVersion; ++v) served.insert({api.apiKey, v});
  }
  EXPECT_EQ(have, served);
  EXPECT_EQ(kVectors.size(), served.size());
}

TEST(KafkaVectors, RequestsAreWrittenAndReadAsTheVectorsSay) {
  const std::vector<Request> samples = samples::requestSamples();
  for (const Vector& v : kVectors) {
    SCOPED_TRACE(std::string(apiName(static_cast<int16_t>(v.api))) + " request version " + std::to_string(v.version));
    const auto frame = fromHex(v.request);
    ASSERT_TRUE(frame);
    const RequestHeader header{static_cast<int16_t>(v.api), v.version, kCorrelationId, std::string(kClientId)};
    std::vector<uint8_t> written;
    encodeRequest(header, sampleFor(samples, v.api), written);
    EXPECT_EQ(toHex(written), toHex(*frame));

    const DecodedRequest d = decodeRequest(bodyOf(*frame));
    ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
    EXPECT_EQ(d.header, header);
    std::vector<uint8_t> again;
    encodeRequest(d.header, d.request, again);
    EXPECT_EQ(toHex(again), toHex(*frame));
  }
}

TEST(KafkaVectors, ResponsesAreWrittenAndReadAsTheVectorsSay) {
  const std::vector<Response> samples = responseSamples();
  for (const Vector& v : kVectors) {
    SCOPED_TRACE(std::string(apiName(static_cast<int16_t>(v.api))) + " response version " + std::to_string(v.version));
    const auto frame = fromHex(v.response);
    ASSERT_TRUE(frame);
    std::vector<uint8_t> written;
    encodeResponse(kCorrelationId, v.version, sampleFor(samples, v.api), written);
    EXPECT_EQ(toHex(written), toHex(*frame));

    const DecodedResponse d = decodeResponse(v.api, v.version, bodyOf(*frame));
    ASSERT_TRUE(d.ok) << d.detail;
    EXPECT_EQ(d.correlationId, kCorrelationId);
    EXPECT_EQ(keyOf(d.response), static_cast<int16_t>(v.api));
    std::vector<uint8_t> again;
    encodeResponse(d.correlationId, v.version, d.response, again);
    EXPECT_EQ(toHex(again), toHex(*frame));
  }
}

// ---- The APIs coded but not served: flexible versions ----------------------------
// Request header version 2 (CorrelationId 7, ClientId "c" with its int16
// length, then no tagged fields), response header version 1 (CorrelationId
// 7, no tagged fields); compact strings and arrays (length or count + 1),
// every structure ending with an empty tagged-field section (00), topic ids
// 000102...0f. Written out from Kafka's message definitions, never by the
// codec under test.

std::vector<UnservedResponse> unservedResponseSamples() {
  const Uuid topic = samples::sampleTopicId();
  ConsumerGroupHeartbeatResponse heartbeat;
  heartbeat.memberId = "m-1";
  heartbeat.memberEpoch = 4;
  heartbeat.heartbeatIntervalMs = 5000;
  heartbeat.assignment = ConsumerGroupHeartbeatResponse::Assignment{{{topic, {0, 1}}}};
  const ConsumerGroupDescribeResponse::Assignment assignment{{{topic, "orders", {0, 1}}}};
  ConsumerGroupDescribeResponse describe;
  describe.groups = {{ErrorCode::NONE, std::nullopt, "g1", "Stable", 5, 5, "uniform",
                      {{"m-1", std::nullopt, "r1", 4, "c-1", "/127.0.0.1", {"orders"}, std::nullopt, assignment,
                        assignment}},
                      kNoAuthorizedOperations}};
  return {heartbeat, describe};
}

// clang-format off
const std::vector<Vector> kUnservedVectors{
    // GroupId "g1", MemberId "m-1", MemberEpoch 3, InstanceId "i-1", RackId
    // "r1", RebalanceTimeoutMs 300000, SubscribedTopicNames ["orders"],
    // ServerAssignor "uniform", TopicPartitions [{topic, [0, 1]}]. Answer:
    // ThrottleTimeMs 0, ErrorCode 0, ErrorMessage null, MemberId "m-1",
    // MemberEpoch 4, HeartbeatIntervalMs 5000, Assignment present (01) with
    // [{topic, [0, 1]}].
    {ApiKey::ConsumerGroupHeartbeat, 0,
         "0000004e004400000000000700016300036731046d2d310000000304692d3103"
         "7231000493e002076f726465727308756e69666f726d02000102030405060708"
         "090a0b0c0d0e0f0300000000000000010000",
         "00000036000000070000000000000000046d2d31000000040000138801020001"
         "02030405060708090a0b0c0d0e0f030000000000000001000000"},
    // GroupIds ["g1", "g2"], IncludeAuthorizedOperations true. Answer: one
    // group "g1", Stable, epochs 5 and 5, assignor "uniform", one member
    // "m-1" (no instance, rack "r1", epoch 4, client "c-1" at /127.0.0.1,
    // subscribed to "orders", no regex) whose assignment and target are
    // [{topic, "orders", [0, 1]}], AuthorizedOperations INT32_MIN.
    {ApiKey::ConsumerGroupDescribe, 0,
         "00000015004500000000000700016300030367310367320100",
         "000000990000000700000000000200000003673107537461626c650000000500"
         "00000508756e69666f726d02046d2d31000372310000000404632d310b2f3132"
         "372e302e302e3102076f72646572730002000102030405060708090a0b0c0d0e"
         "0f076f7264657273030000000000000001000002000102030405060708090a0b"
         "0c0d0e0f076f7264657273030000000000000001000000800000000000"},
};
// clang-format on

TEST(KafkaVectors, EveryUnservedApiAndVersionHasAVector) {
  std::set<std::pair<int16_t, int16_t>> have;
  for (const Vector& v : kUnservedVectors) have.insert({static_cast<int16_t>(v.api), v.version});
  std::set<std::pair<int16_t, int16_t>> coded;
  for (const UnservedRequest& q : samples::unservedRequestSamples()) {
    const auto [oldest, newest] = samples::versionRange(q);
    for (int16_t v = oldest; v <= newest; ++v) coded.insert({keyOf(q), v});
  }
  EXPECT_EQ(have, coded);
  EXPECT_EQ(kUnservedVectors.size(), std::variant_size_v<UnservedRequest>);
}

TEST(KafkaVectors, UnservedRequestsAreWrittenAndReadAsTheVectorsSay) {
  const std::vector<UnservedRequest> samples = samples::unservedRequestSamples();
  for (const Vector& v : kUnservedVectors) {
    SCOPED_TRACE(std::string(apiName(static_cast<int16_t>(v.api))) + " request version " + std::to_string(v.version));
    const auto frame = fromHex(v.request);
    ASSERT_TRUE(frame);
    EXPECT_EQ(requestHeaderVersion(v.api, v.version), 2);
    const RequestHeader header{static_cast<int16_t>(v.api), v.version, kCorrelationId, std::string(kClientId)};
    std::vector<uint8_t> written;
    encodeRequest(header, sampleFor(samples, v.api), written);
    EXPECT_EQ(toHex(written), toHex(*frame));

    const DecodedUnservedRequest d = decodeUnservedRequest(bodyOf(*frame));
    ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
    EXPECT_EQ(d.header, header);
    EXPECT_EQ(d.request, sampleFor(samples, v.api));
    std::vector<uint8_t> again;
    encodeRequest(d.header, d.request, again);
    EXPECT_EQ(toHex(again), toHex(*frame));

    // Not served: the port's decoder answers it as an unknown API.
    EXPECT_EQ(decodeRequest(bodyOf(*frame)).status, DecodeStatus::UnknownApi);
  }
}

TEST(KafkaVectors, UnservedResponsesAreWrittenAndReadAsTheVectorsSay) {
  const std::vector<UnservedResponse> samples = unservedResponseSamples();
  for (const Vector& v : kUnservedVectors) {
    SCOPED_TRACE(std::string(apiName(static_cast<int16_t>(v.api))) + " response version " + std::to_string(v.version));
    const auto frame = fromHex(v.response);
    ASSERT_TRUE(frame);
    EXPECT_EQ(responseHeaderVersion(v.api, v.version), 1);
    std::vector<uint8_t> written;
    encodeResponse(kCorrelationId, v.version, sampleFor(samples, v.api), written);
    EXPECT_EQ(toHex(written), toHex(*frame));

    const DecodedUnservedResponse d = decodeUnservedResponse(v.api, v.version, bodyOf(*frame));
    ASSERT_TRUE(d.ok) << d.detail;
    EXPECT_EQ(d.correlationId, kCorrelationId);
    EXPECT_EQ(d.response, sampleFor(samples, v.api));
    std::vector<uint8_t> again;
    encodeResponse(d.correlationId, v.version, d.response, again);
    EXPECT_EQ(toHex(again), toHex(*frame));
  }
}

}  // namespace
}  // namespace groupcoord::protocol::kafka
