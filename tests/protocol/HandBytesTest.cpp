// For every message: bytes written out by hand from the layouts in
// docs/protocol.md decode to the expected struct, and that struct encodes to
// exactly those bytes. The expected bytes never pass through the codec's
// own writer.

#include <gtest/gtest.h>

#include "Samples.h"
#include "TestBytes.h"
#include "protocol/Codec.h"

namespace groupcoord::protocol::testing {
namespace {

void expectRequest(const std::vector<uint8_t>& frame, const RequestHeader& header, const Request& request) {
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(d.header, header);
  EXPECT_EQ(d.request, request);

  std::vector<uint8_t> encoded;
  encodeRequest(header, request, encoded);
  EXPECT_EQ(toHex(encoded), toHex(frame));
}

void expectResponse(ApiKey api, const std::vector<uint8_t>& frame, const ResponseHeader& header,
                    const Response& response) {
  const DecodedResponse d = decodeResponse(api, bodyOf(frame));
  ASSERT_TRUE(d.ok) << d.detail;
  EXPECT_EQ(d.header, header);
  EXPECT_EQ(d.response, response);

  std::vector<uint8_t> encoded;
  encodeResponse(header, response, encoded);
  EXPECT_EQ(toHex(encoded), toHex(frame));
}

// The helpers themselves checked against bytes typed out in full, so a
// wrong shift in TestBytes.h cannot hide a wrong shift in the codec.
TEST(HandBytes, HelpersAgreeWithLiteralBytes) {
  const std::vector<uint8_t> literal{
      0x00, 0x00, 0x00, 0x1d,                          // Size 29
      0x00, 0x00,                                      // ApiKey 0
      0x00, 0x00,                                      // Version 0
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // CorrelationId
      0xff, 0xff,                                      // ClientId null
      0x00, 0x01, 'g',                                 // ConsumerGroup "g"
      0x00, 0x02, 'm', '1',                            // ConsumerId "m1"
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,  // Generation -2
  };
  const auto built = Bytes().requestHeader(0, 0, 0x0102030405060708, std::nullopt).str("g").str("m1").int64(-2).frame();
  EXPECT_EQ(toHex(built), toHex(literal));
  expectRequest(literal, headerFor(ApiKey::Heartbeat, 0x0102030405060708, std::nullopt),
                HeartbeatRequest{"g", "m1", -2});
}

// ---- Requests ----------------------------------------------------------------

TEST(HandBytes, HeartbeatRequest) {
  expectRequest(Bytes().requestHeader(0, 0, 41, "svc-1").str("orders").str("svc-1-7f3a").int64(kInt64Max).frame(),
                headerFor(ApiKey::Heartbeat, 41, "svc-1"), HeartbeatRequest{"orders", "svc-1-7f3a", kInt64Max});
}

TEST(HandBytes, CreateGroupRequest) {
  expectRequest(Bytes()
                    .requestHeader(1, 0, -7, "")
                    .str("orders")
                    .int64(30000)
                    .count(3)
                    .str("a")
                    .str("b.c")
                    .str("d_e-f")
                    .boolean(true)
                    .frame(),
                headerFor(ApiKey::CreateGroup, -7, ""), CreateGroupRequest{"orders", 30000, {"a", "b.c", "d_e-f"}, true});
  expectRequest(Bytes().requestHeader(1, 0, 8, std::nullopt).str("g").int64(1000).count(0).boolean(false).frame(),
                headerFor(ApiKey::CreateGroup, 8, std::nullopt), CreateGroupRequest{"g", 1000, {}, false});
}

TEST(HandBytes, DeleteGroupRequest) {
  expectRequest(Bytes().requestHeader(2, 0, 3, "admin").str("orders").frame(), headerFor(ApiKey::DeleteGroup, 3, "admin"),
                DeleteGroupRequest{"orders"});
}

TEST(HandBytes, RegisterConsumerRequest) {
  expectRequest(Bytes()
                    .requestHeader(3, 0, 4, "svc-1")
                    .str("orders")
                    .str("")
                    .count(2)
                    .str("clicks")
                    .int32(0)
                    .str("views")
                    .int32(kInt32Max)
                    .frame(),
                headerFor(ApiKey::RegisterConsumer, 4, "svc-1"),
                RegisterConsumerRequest{"orders", "", {{"clicks", 0}, {"views", kInt32Max}}});
}

TEST(HandBytes, ListGroupsRequest) {
  expectRequest(Bytes().requestHeader(4, 0, 6, std::nullopt).count(0).frame(),
                headerFor(ApiKey::ListGroups, 6, std::nullopt), ListGroupsRequest{});
  expectRequest(Bytes().requestHeader(4, 0, 7, "x").count(2).str("orders").str("nope").frame(),
                headerFor(ApiKey::ListGroups, 7, "x"), ListGroupsRequest{{"orders", "nope"}});
}

TEST(HandBytes, LeaveGroupRequest) {
  expectRequest(Bytes().requestHeader(5, 0, 8, "svc-1").str("orders").str("svc-1-7f3a").frame(),
                headerFor(ApiKey::LeaveGroup, 8, "svc-1"), LeaveGroupRequest{"orders", "svc-1-7f3a"});
}

TEST(HandBytes, CommitOffsetsRequest) {
  expectRequest(Bytes()
                    .requestHeader(6, 0, 9, "svc-1")
                    .str("orders")
                    .str("svc-1-7f3a")
                    .int64(6)
                    .count(2)
                    .str("clicks")
                    .int32(0)
                    .int64(1250)
                    .str("clicks")
                    .int32(1)
                    .int64(kInt64Max)
                    .frame(),
                headerFor(ApiKey::CommitOffsets, 9, "svc-1"),
                CommitOffsetsRequest{"orders", "svc-1-7f3a", 6, {{"clicks", 0, 1250}, {"clicks", 1, kInt64Max}}});
}

TEST(HandBytes, FetchOffsetsRequest) {
  expectRequest(Bytes().requestHeader(7, 0, 10, "svc-1").str("orders").count(1).str("clicks").frame(),
                headerFor(ApiKey::FetchOffsets, 10, "svc-1"), FetchOffsetsRequest{"orders", {"clicks"}});
}

TEST(HandBytes, RewindConsumerRequest) {
  expectRequest(
      Bytes().requestHeader(8, 0, 11, "ops").str("orders").count(1).str("clicks").int32(2).int64(0).frame(),
      headerFor(ApiKey::RewindConsumer, 11, "ops"), RewindConsumerRequest{"orders", {{"clicks", 2, 0}}});
}

// ---- Responses ---------------------------------------------------------------

TEST(HandBytes, HeartbeatResponse) {
  expectResponse(ApiKey::Heartbeat, Bytes().responseHeader(0, 1).int64(6).int16(18).frame(), {0, 1},
                 HeartbeatResponse{6, ErrorCode::REBALANCE_NEEDED});
}

TEST(HandBytes, CreateGroupResponse) {
  expectResponse(ApiKey::CreateGroup,
                 Bytes().responseHeader(0, 2).str("orders").int16(0).int32(2).str("10.0.0.7").uint16(65535).frame(),
                 {0, 2}, CreateGroupResponse{"orders", ErrorCode::NONE, Broker{2, "10.0.0.7", 65535}});
  // No controller: BrokerId -1, Host "", Port 0.
  expectResponse(ApiKey::CreateGroup,
                 Bytes().responseHeader(0, 3).str("orders").int16(16).int32(-1).str("").uint16(0).frame(), {0, 3},
                 CreateGroupResponse{"orders", ErrorCode::CONTROLLER_NOT_AVAILABLE, Broker{}});
}

TEST(HandBytes, DeleteGroupResponse) {
  expectResponse(ApiKey::DeleteGroup, Bytes().responseHeader(0, 3).str("orders").int16(12).frame(), {0, 3},
                 DeleteGroupResponse{"orders", ErrorCode::GROUP_NOT_EMPTY});
}

TEST(HandBytes, RegisterConsumerResponse) {
  expectResponse(ApiKey::RegisterConsumer,
                 Bytes()
                     .responseHeader(0, 5)
                     .str("orders")
                     .str("m-1")
                     .int64(6)
                     .count(2)
                     .str("m-1")
                     .str("m-2")
                     .count(2)
                     .str("clicks")
                     .int32(0)
                     .int64(1200)
                     .str("views")
                     .int32(2)
                     .int64(-1)
                     .int16(0)
                     .frame(),
                 {0, 5},
                 RegisterConsumerResponse{
                     "orders", "m-1", 6, {"m-1", "m-2"}, {{"clicks", 0, 1200}, {"views", 2, -1}}, ErrorCode::NONE});
}

TEST(HandBytes, ListGroupsResponse) {
  expectResponse(ApiKey::ListGroups,
                 Bytes()
                     .responseHeader(0, 7)
                     .count(2)
                     // GroupInfo 1
                     .str("orders")
                     .int16(0)
                     .count(1)
                     .str("m-1")
                     .count(1)
                     .str("clicks")
                     .int32(1)
                     .str("127.0.0.1")
                     .uint16(7400)
                     .int64(10000)
                     .int64(6)
                     .boolean(true)
                     // GroupInfo 2: unknown group
                     .str("nope")
                     .int16(10)
                     .count(0)
                     .count(0)
                     .int32(-1)
                     .str("")
                     .uint16(0)
                     .int64(-1)
                     .int64(-1)
                     .boolean(false)
                     .int16(0)
                     .frame(),
                 {0, 7},
                 ListGroupsResponse{{GroupInfo{"orders", ErrorCode::NONE, {"m-1"}, {"clicks"},
                                               Broker{1, "127.0.0.1", 7400}, 10000, 6, true},
                                     GroupInfo{"nope", ErrorCode::UNKNOWN_GROUP, {}, {}, Broker{}, -1, -1, false}},
                                    ErrorCode::NONE});
}

TEST(HandBytes, LeaveGroupResponse) {
  expectResponse(ApiKey::LeaveGroup, Bytes().responseHeader(0, 8).int16(17).frame(), {0, 8},
                 LeaveGroupResponse{ErrorCode::UNKNOWN_CONSUMER});
}

TEST(HandBytes, CommitOffsetsResponse) {
  expectResponse(ApiKey::CommitOffsets,
                 Bytes().responseHeader(0, 9).count(1).str("clicks").int32(0).int16(19).int16(0).frame(), {0, 9},
                 CommitOffsetsResponse{{{"clicks", 0, ErrorCode::NOT_OWNER}}, ErrorCode::NONE});
}

TEST(HandBytes, FetchOffsetsResponse) {
  expectResponse(ApiKey::FetchOffsets,
                 Bytes()
                     .responseHeader(0, 10)
                     .count(2)
                     .str("clicks")
                     .int32(0)
                     .int64(1250)
                     .str("clicks")
                     .int32(1)
                     .int64(77)
                     .int16(0)
                     .frame(),
                 {0, 10}, FetchOffsetsResponse{{{"clicks", 0, 1250}, {"clicks", 1, 77}}, ErrorCode::NONE});
}

TEST(HandBytes, RewindConsumerResponse) {
  expectResponse(ApiKey::RewindConsumer,
                 Bytes().responseHeader(0, 11).count(1).str("clicks").int32(0).int16(21).int16(-1).frame(), {0, 11},
                 RewindConsumerResponse{{{"clicks", 0, ErrorCode::INVALID_OFFSET}}, ErrorCode::UNKNOWN_SERVER_ERROR});
}

TEST(HandBytes, AuthenticateRequest) {
  // ApiKey 9, then User string, Secret string.
  expectRequest(Bytes().requestHeader(9, 0, 44, "svc-1").str("alice").str("pa:ss").frame(),
                headerFor(ApiKey::Authenticate, 44, "svc-1"), AuthenticateRequest{"alice", "pa:ss"});
}

TEST(HandBytes, AuthenticateResponse) {
  // The same shape as an error-only answer; read as the API's own response.
  expectResponse(ApiKey::Authenticate, Bytes().responseHeader(0, 44).int16(22).frame(), {0, 44},
                 AuthenticateResponse{ErrorCode::NOT_AUTHORIZED});
  expectResponse(ApiKey::Authenticate, Bytes().responseHeader(0, 45).int16(0).frame(), {0, 45},
                 AuthenticateResponse{ErrorCode::NONE});
}

TEST(HandBytes, DrainServerRequest) {
  // ApiKey 10, then ServerId int32, Drain as one byte (1 drain, 0 undrain).
  expectRequest(Bytes().requestHeader(10, 0, 46, "ops").int32(3).int8(1).frame(),
                headerFor(ApiKey::DrainServer, 46, "ops"), DrainServerRequest{3, true});
  expectRequest(Bytes().requestHeader(10, 0, 47, std::nullopt).int32(kInt32Max).int8(0).frame(),
                headerFor(ApiKey::DrainServer, 47, std::nullopt), DrainServerRequest{kInt32Max, false});
}

TEST(HandBytes, DrainServerResponse) {
  // The same shape as an error-only answer; read as the API's own response.
  expectResponse(ApiKey::DrainServer, Bytes().responseHeader(0, 46).int16(0).frame(), {0, 46},
                 DrainServerResponse{ErrorCode::NONE});
  expectResponse(ApiKey::DrainServer, Bytes().responseHeader(0, 47).int16(22).frame(), {0, 47},
                 DrainServerResponse{ErrorCode::NOT_AUTHORIZED});
  expectResponse(ApiKey::DrainServer, Bytes().responseHeader(0, 48).int16(1).frame(), {0, 48},
                 DrainServerResponse{ErrorCode::INVALID_REQUEST});
}

// The example of docs/protocol.md ("10 DrainServer"), as it is printed there:
// if the page and the codec ever disagree, this fails.
TEST(HandBytes, DrainServerDocumentedExample) {
  const auto request = fromHex("0000001b000a00000000000000000016000867726f757063746c0000000201");
  ASSERT_TRUE(request);
  expectRequest(*request, headerFor(ApiKey::DrainServer, 22, "groupctl"), DrainServerRequest{2, true});
  const auto response = fromHex("0000000c000000000000000000160000");
  ASSERT_TRUE(response);
  expectResponse(ApiKey::DrainServer, *response, {0, 22}, DrainServerResponse{ErrorCode::NONE});
}

TEST(HandBytes, DescribeGroupRequest) {
  // ApiKey 11, then ConsumerGroup.
  expectRequest(Bytes().requestHeader(11, 0, 50, "groupctl").str("orders").frame(),
                headerFor(ApiKey::DescribeGroup, 50, "groupctl"), DescribeGroupRequest{"orders"});
}

TEST(HandBytes, DescribeGroupResponse) {
  // Field by field as docs/protocol.md lists them: the group, ErrorCode,
  // Controller, State (int8), SessionTimeout, Ephemeral, Generation, then
  // Topics, Members (each with Held and Waiting), Offsets and History.
  auto frame = Bytes()
                   .responseHeader(0, 51)
                   .str("orders")
                   .int16(0)
                   .int32(3).str("10.0.0.9").uint16(40003)
                   .int8(2)
                   .int64(10000)
                   .boolean(false)
                   .int64(12)
                   .count(2).str("clicks").int32(2).str("gone").int32(-1)
                   .count(1)
                   .str("m-1").str("svc").str("10.1.2.3").uint16(51234).int64(1000).int64(2000)
                   .count(1).str("clicks").int32(0)
                   .count(1).str("clicks").int32(1)
                   .count(1).str("clicks").int32(0).int64(77)
                   .count(1)
                   .int64(1500).int64(12).int16(3).int32(1).str("m-2").str("svc").str("10.1.2.4").str("")
                   .int64(30001).str("member m-2 evicted after 30001 ms of silence")
                   .frame();
  DescribeGroupResponse want;
  want.group = "orders";
  want.controller = Broker{3, "10.0.0.9", 40003};
  want.state = GroupState::REBALANCING;
  want.sessionTimeoutMs = 10000;
  want.generation = 12;
  want.topics = {{"clicks", 2}, {"gone", -1}};
  want.members = {MemberState{"m-1", "svc", "10.1.2.3", 51234, 1000, 2000, {{"clicks", 0}}, {{"clicks", 1}}}};
  want.offsets = {{"clicks", 0, 77}};
  want.history = {RebalanceEvent{1500, 12, RebalanceReason::MEMBER_EVICTED, 1, "m-2", "svc", "10.1.2.4", "", 30001,
                                 "member m-2 evicted after 30001 ms of silence"}};
  expectResponse(ApiKey::DescribeGroup, frame, {0, 51}, want);
}

// The example of docs/protocol.md ("11 DescribeGroup"), as it is printed
// there.
TEST(HandBytes, DescribeGroupDocumentedExample) {
  const auto request = fromHex("0000001e000b00000000000000000007000867726f757063746c00066f7264657273");
  ASSERT_TRUE(request);
  expectRequest(*request, headerFor(ApiKey::DescribeGroup, 7, "groupctl"), DescribeGroupRequest{"orders"});
  const auto response = fromHex(
      "0000003e0000000000000000000800066f7264657273000fffffffff0000000000ffffffffffffffff00ffffffffffffffff"
      "00000000000000000000000000000000");
  ASSERT_TRUE(response);
  DescribeGroupResponse refused;
  refused.group = "orders";
  refused.error = ErrorCode::NOT_CONTROLLER;
  expectResponse(ApiKey::DescribeGroup, *response, {0, 8}, refused);
}

TEST(HandBytes, DescribeServersRequest) {
  // ApiKey 12, and nothing after the header.
  expectRequest(Bytes().requestHeader(12, 0, 52, "groupctl").frame(), headerFor(ApiKey::DescribeServers, 52, "groupctl"),
                DescribeServersRequest{});
  expectRequest(Bytes().requestHeader(12, 0, 53, std::nullopt).frame(),
                headerFor(ApiKey::DescribeServers, 53, std::nullopt), DescribeServersRequest{});
}

TEST(HandBytes, DescribeServersResponse) {
  // Field by field as docs/protocol.md lists them: ErrorCode, ServerId,
  // EpsilonPermille, MarginPermille, Weighting, GroupWeight, Total, Bound,
  // Complete, then Servers (Id, Host, Port int32, Drained, Settled,
  // Candidate, Load, Groups, Placed) and Moves (Group, Weight, Controller,
  // Target).
  auto frame = Bytes()
                   .responseHeader(0, 54)
                   .int16(0)
                   .int32(3)
                   .int32(100)
                   .int32(50)
                   .str("groups")
                   .int64(10)
                   .int64(30)
                   .int64(17)
                   .boolean(false)
                   .count(2)
                   .int32(3).str("10.0.0.3").int32(7400).boolean(false).boolean(true).boolean(true)
                   .int64(30).int32(3).int64(20)
                   .int32(4).str("").int32(0).boolean(true).boolean(false).boolean(false)
                   .int64(0).int32(0).int64(kInt64Max)
                   .count(1)
                   .str("orders").int64(10).int32(-1).int32(4)
                   .frame();
  DescribeServersResponse want;
  want.server = 3;
  want.epsilonPermille = 100;
  want.marginPermille = 50;
  want.weighting = "groups";
  want.groupWeight = 10;
  want.total = 30;
  want.bound = 17;
  want.complete = false;
  want.servers = {ServerPlacement{3, "10.0.0.3", 7400, false, true, true, 30, 3, 20},
                  ServerPlacement{4, "", 0, true, false, false, 0, 0, kInt64Max}};
  want.moves = {GroupMove{"orders", 10, -1, 4}};
  expectResponse(ApiKey::DescribeServers, frame, {0, 54}, want);
}

// The example of docs/protocol.md ("12 DescribeServers"), as it is printed
// there.
TEST(HandBytes, DescribeServersDocumentedExample) {
  const auto request = fromHex("00000016000c00000000000000000017000867726f757063746c");
  ASSERT_TRUE(request);
  expectRequest(*request, headerFor(ApiKey::DescribeServers, 23, "groupctl"), DescribeServersRequest{});
  const auto response = fromHex(
      "000000ac00000000000000000017000000000001000000640000003200076d656d62657273000000000000000a"
      "0000000000000018000000000000000e01"
      "00000002"
      "00000001000831302e302e302e3100001ce8000101000000000000001800000002000000000000000c"
      "00000002000831302e302e302e3200001ce8000101000000000000000000000000000000000000000c"
      "00000001"
      "0006636c69636b73000000000000000c0000000100000002");
  ASSERT_TRUE(response);
  DescribeServersResponse want;
  want.server = 1;
  want.epsilonPermille = 100;
  want.marginPermille = 50;
  want.weighting = "members";
  want.groupWeight = 10;
  want.total = 24;
  want.bound = 14;
  want.complete = true;
  want.servers = {ServerPlacement{1, "10.0.0.1", 7400, false, true, true, 24, 2, 12},
                  ServerPlacement{2, "10.0.0.2", 7400, false, true, true, 0, 0, 12}};
  want.moves = {GroupMove{"clicks", 12, 1, 2}};
  expectResponse(ApiKey::DescribeServers, *response, {0, 23}, want);

  // The answer of a server without ZooKeeper, CorrelationId 24.
  const auto refused = fromHex(
      "0000003b000000000000000000180010ffffffffffffffffffffffff0000ffffffffffffffffffffffffffffffffffffffffffffffff"
      "000000000000000000");
  ASSERT_TRUE(refused);
  expectResponse(ApiKey::DescribeServers, *refused, {0, 24},
                 errorResponse(DescribeServersRequest{}, ErrorCode::CONTROLLER_NOT_AVAILABLE));
}

TEST(HandBytes, ErrorOnlyResponses) {
  expectResponse(ApiKey::Heartbeat, Bytes().responseHeader(3, 13).int16(2).frame(), {3, 13},
                 ErrorOnlyResponse{ErrorCode::UNSUPPORTED_VERSION});
  expectResponse(static_cast<ApiKey>(42), Bytes().responseHeader(0, 12).int16(3).frame(), {0, 12},
                 ErrorOnlyResponse{ErrorCode::UNKNOWN_API});
  expectResponse(ApiKey::ListGroups, Bytes().responseHeader(0, 14).int16(1).frame(), {0, 14},
                 ErrorOnlyResponse{ErrorCode::INVALID_REQUEST});
}

}  // namespace
}  // namespace groupcoord::protocol::testing

namespace groupcoord::protocol::testing {
namespace {

// ---- Version 1 (docs/protocol.md, "Version 1") ---------------------------------

TEST(HandBytesV1, CreateGroupAddsTheAssignmentMode) {
  expectRequest(
      Bytes().requestHeader(1, 1, 60, "svc").str("shards").int64(10000).count(0).boolean(false).int8(1).frame(),
      headerFor(ApiKey::CreateGroup, 60, "svc", 1), CreateGroupRequest{"shards", 10000, {}, false, AssignmentMode::CLIENT});
  // The same fields at version 0 end before the mode.
  expectRequest(Bytes().requestHeader(1, 0, 61, "svc").str("shards").int64(10000).count(0).boolean(false).frame(),
                headerFor(ApiKey::CreateGroup, 61, "svc"), CreateGroupRequest{"shards", 10000, {}, false});
}

TEST(HandBytesV1, RegisterConsumerAddsMetadataAndRack) {
  expectRequest(Bytes()
                    .requestHeader(3, 1, 62, "svc")
                    .str("shards")
                    .str("")
                    .count(0)
                    .int32(3)
                    .raw(std::vector<uint8_t>{0x00, 0x01, 0xff})
                    .str("r1")
                    .frame(),
                headerFor(ApiKey::RegisterConsumer, 62, "svc", 1),
                RegisterConsumerRequest{"shards", "", {}, std::string("\x00\x01\xff", 3), "r1"});
  // Metadata length -1 reads as empty (and is written back as length 0, like a count of -1).
  const DecodedRequest d =
      decodeRequest(Bytes().requestHeader(3, 1, 63, "svc").str("g").str("m").count(0).int32(-1).str("").body());
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(d.request, Request(RegisterConsumerRequest{"g", "m", {}, "", ""}));
}

TEST(HandBytesV1, RegisterConsumerResponseListsEveryMemberWithItsMetadata) {
  auto frame = Bytes()
                   .responseHeader(1, 64)
                   .str("shards")
                   .str("m-2")
                   .int64(4)
                   .count(2).str("m-1").str("m-2")
                   .count(0)
                   .int16(0)
                   .int8(1)
                   .count(2)
                   .str("m-1").int32(2).raw(std::vector<uint8_t>{'a', 'b'}).str("r1")
                   .str("m-2").int32(0).str("")
                   .frame();
  expectResponse(ApiKey::RegisterConsumer, frame, {1, 64},
                 RegisterConsumerResponse{"shards", "m-2", 4, {"m-1", "m-2"}, {}, ErrorCode::NONE,
                                          AssignmentMode::CLIENT, {{"m-1", "ab", "r1"}, {"m-2", "", ""}}});
}

TEST(HandBytesV1, ListGroupsResponseEndsEachGroupInfoWithTheMode) {
  auto frame = Bytes()
                   .responseHeader(1, 65)
                   .count(1)
                   .str("shards").int16(0).count(0).count(0).int32(1).str("h").uint16(7400).int64(10000).int64(3)
                   .boolean(false).int8(1)
                   .int16(0)
                   .frame();
  GroupInfo g{"shards", ErrorCode::NONE, {}, {}, Broker{1, "h", 7400}, 10000, 3, false, AssignmentMode::CLIENT};
  expectResponse(ApiKey::ListGroups, frame, {1, 65}, ListGroupsResponse{{g}, ErrorCode::NONE});
}

TEST(HandBytesV1, DescribeGroupResponseAddsMemberMetadataAndTheMode) {
  auto frame = Bytes()
                   .responseHeader(1, 66)
                   .str("shards").int16(0).int32(1).str("h").uint16(7400).int8(1).int64(10000).boolean(false)
                   .int64(3)
                   .count(0)
                   .count(1)
                   .str("m-1").str("svc").str("10.0.0.1").uint16(5000).int64(1).int64(2).count(0).count(0)
                   .int32(1).raw(std::vector<uint8_t>{'z'}).str("r9")
                   .count(0)
                   .count(0)
                   .int8(1)
                   .frame();
  DescribeGroupResponse want;
  want.group = "shards";
  want.controller = Broker{1, "h", 7400};
  want.state = GroupState::STABLE;
  want.sessionTimeoutMs = 10000;
  want.generation = 3;
  want.members = {MemberState{"m-1", "svc", "10.0.0.1", 5000, 1, 2, {}, {}, "z", "r9"}};
  want.mode = AssignmentMode::CLIENT;
  expectResponse(ApiKey::DescribeGroup, frame, {1, 66}, want);
}

TEST(HandBytesV1, AVersionZeroEncodingLeavesTheNewFieldsOut) {
  // An old client's bytes are what they always were, whatever the structs
  // hold: the encoder writes the fields of the header's version.
  std::vector<uint8_t> plain, withExtras;
  encodeRequest(headerFor(ApiKey::RegisterConsumer, 67, "svc"), RegisterConsumerRequest{"g", "m", {}}, plain);
  encodeRequest(headerFor(ApiKey::RegisterConsumer, 67, "svc"), RegisterConsumerRequest{"g", "m", {}, "meta", "r1"},
                withExtras);
  EXPECT_EQ(plain, withExtras);
  std::vector<uint8_t> v0, v0WithMode;
  encodeResponse({0, 68}, RegisterConsumerResponse{"g", "m", 1, {"m"}, {}, ErrorCode::NONE}, v0);
  encodeResponse({0, 68},
                 RegisterConsumerResponse{"g", "m", 1, {"m"}, {}, ErrorCode::NONE, AssignmentMode::CLIENT,
                                          {{"m", "x", "r"}}},
                 v0WithMode);
  EXPECT_EQ(v0, v0WithMode);
}

// ---- Version 2 (docs/protocol.md, "Version 2") ---------------------------------

TEST(HandBytesV2, RegisterConsumerAddsTheKnownGeneration) {
  // What versions 1 and 2 share: everything up to the Rack.
  auto throughRack = [](int16_t version, int64_t correlationId) {
    Bytes b;
    b.requestHeader(3, version, correlationId, "svc").str("shards").str("m-2").count(0).int32(3);
    b.raw(std::vector<uint8_t>{'w', '=', '3'}).str("r1");
    return b;
  };
  RegisterConsumerRequest want{"shards", "m-2", {}, "w=3", "r1"};
  want.knownGeneration = 4;
  expectRequest(throughRack(2, 34).int64(4).frame(), headerFor(ApiKey::RegisterConsumer, 34, "svc", 2), want);
  // Version 1 ends before it: a v1 request reads as holding no list.
  want.knownGeneration = -1;
  expectRequest(throughRack(1, 35).frame(), headerFor(ApiKey::RegisterConsumer, 35, "svc", 1), want);
  // A version-2 request without it is malformed.
  const DecodedRequest d = decodeRequest(
      Bytes().requestHeader(3, 2, 36, "svc").str("g").str("m").count(0).int32(0).str("").body());
  EXPECT_EQ(d.status, DecodeStatus::InvalidRequest);
}

TEST(HandBytesV2, RegisterConsumerResponseInServerModeListsNoMember) {
  auto frame = Bytes()
                   .responseHeader(2, 35)
                   .str("orders")
                   .str("m-1")
                   .int64(7)
                   .count(0)
                   .count(1).str("clicks").int32(0).int64(42)
                   .int16(0)
                   .int8(0)
                   .count(0)
                   .int32(3)
                   .int64(-1)
                   .count(0)
                   .frame();
  RegisterConsumerResponse want{"orders", "m-1", 7, {}, {{"clicks", 0, 42}}, ErrorCode::NONE,
                                AssignmentMode::SERVER, {}};
  want.memberCount = 3;
  expectResponse(ApiKey::RegisterConsumer, frame, {2, 35}, want);
}

TEST(HandBytesV2, RegisterConsumerResponseInClientModeCarriesTheChangeSinceAGeneration) {
  auto frame = Bytes()
                   .responseHeader(2, 34)
                   .str("shards")
                   .str("m-2")
                   .int64(5)
                   .count(0)
                   .count(0)
                   .int16(0)
                   .int8(1)
                   .count(1).str("m-3").int32(3).raw(std::vector<uint8_t>{'w', '=', '1'}).str("")
                   .int32(2)
                   .int64(4)
                   .count(1).str("m-1")
                   .frame();
  RegisterConsumerResponse want{"shards", "m-2", 5, {}, {}, ErrorCode::NONE, AssignmentMode::CLIENT,
                                {{"m-3", "w=1", ""}}};
  want.memberCount = 2;
  want.listBase = 4;
  want.removedMembers = {"m-1"};
  expectResponse(ApiKey::RegisterConsumer, frame, {2, 34}, want);
  // The same answer at version 1 ends after MemberData.
  std::vector<uint8_t> v1;
  encodeResponse(ResponseHeader{1, 34}, Response(want), v1);
  EXPECT_EQ(v1.size() + 4 + 8 + 4 + 2 + 3, frame.size());
}

// ---- Version 2 of ListGroups and DescribeGroup: a Kafka group's protocol ----------

TEST(HandBytesV2, ListGroupsResponseEndsEachGroupInfoWithTheKafkaProtocol) {
  auto frame = Bytes()
                   .responseHeader(2, 70)
                   .count(2)
                   .str("workers").int16(0).count(0).count(1).str("orders").int32(1).str("h").uint16(7400)
                   .int64(45000).int64(3).boolean(false).int8(0)
                   .boolean(true).str("consumer").str("cooperative-sticky")
                   .str("shards").int16(0).count(0).count(0).int32(-1).str("").uint16(0).int64(10000).int64(1)
                   .boolean(false).int8(1)
                   .boolean(false).str("").str("")
                   .int16(0)
                   .frame();
  GroupInfo kafka{"workers", ErrorCode::NONE, {}, {"orders"}, Broker{1, "h", 7400}, 45000, 3, false};
  kafka.kafka = true;
  kafka.protocolType = "consumer";
  kafka.protocolName = "cooperative-sticky";
  GroupInfo native{"shards", ErrorCode::NONE, {}, {}, Broker{}, 10000, 1, false, AssignmentMode::CLIENT};
  expectResponse(ApiKey::ListGroups, frame, {2, 70}, ListGroupsResponse{{kafka, native}, ErrorCode::NONE});
}

TEST(HandBytesV2, DescribeGroupResponseEndsWithTheKafkaProtocol) {
  auto frame = Bytes()
                   .responseHeader(2, 71)
                   .str("workers").int16(0).int32(1).str("h").uint16(7400).int8(1).int64(45000).boolean(false)
                   .int64(3)
                   .count(0)
                   .count(0)
                   .count(0)
                   .count(0)
                   .int8(0)
                   .boolean(true).str("consumer").str("range")
                   .frame();
  DescribeGroupResponse want;
  want.group = "workers";
  want.controller = Broker{1, "h", 7400};
  want.state = GroupState::STABLE;
  want.sessionTimeoutMs = 45000;
  want.generation = 3;
  want.kafka = true;
  want.protocolType = "consumer";
  want.protocolName = "range";
  expectResponse(ApiKey::DescribeGroup, frame, {2, 71}, want);
  // The requests carry nothing new: version 2 is the answer's.
  expectRequest(Bytes().requestHeader(11, 2, 72, "svc").str("workers").frame(),
                headerFor(ApiKey::DescribeGroup, 72, "svc", 2), DescribeGroupRequest{"workers"});
  expectRequest(Bytes().requestHeader(4, 2, 73, "svc").count(1).str("workers").frame(),
                headerFor(ApiKey::ListGroups, 73, "svc", 2), ListGroupsRequest{{"workers"}});
}

TEST(HandBytesV2, VersionsZeroAndOneOfTheGroupAnswersStayByteForByte) {
  // Whatever the structs hold, versions 0 and 1 end where they always did.
  GroupInfo plain{"workers", ErrorCode::NONE, {}, {"orders"}, Broker{1, "h", 7400}, 45000, 3, false};
  GroupInfo kafka = plain;
  kafka.kafka = true;
  kafka.protocolType = "consumer";
  kafka.protocolName = "range";
  DescribeGroupResponse d;
  d.group = "workers";
  DescribeGroupResponse dk = d;
  dk.kafka = true;
  dk.protocolType = "consumer";
  dk.protocolName = "range";
  for (int16_t version : {0, 1}) {
    SCOPED_TRACE(version);
    std::vector<uint8_t> a, b;
    encodeResponse({version, 74}, ListGroupsResponse{{plain}, ErrorCode::NONE}, a);
    encodeResponse({version, 74}, ListGroupsResponse{{kafka}, ErrorCode::NONE}, b);
    EXPECT_EQ(toHex(a), toHex(b));
    std::vector<uint8_t> c, e;
    encodeResponse({version, 75}, d, c);
    encodeResponse({version, 75}, dk, e);
    EXPECT_EQ(toHex(c), toHex(e));
  }
  // Version 2 adds exactly a bool and two strings to each.
  std::vector<uint8_t> v1, v2;
  encodeResponse({1, 76}, ListGroupsResponse{{kafka}, ErrorCode::NONE}, v1);
  encodeResponse({2, 76}, ListGroupsResponse{{kafka}, ErrorCode::NONE}, v2);
  EXPECT_EQ(v2.size() - v1.size(), 1u + (2 + 8) + (2 + 5));
  std::vector<uint8_t> d1, d2;
  encodeResponse({1, 77}, dk, d1);
  encodeResponse({2, 77}, dk, d2);
  EXPECT_EQ(d2.size() - d1.size(), 1u + (2 + 8) + (2 + 5));
}

}  // namespace
}  // namespace groupcoord::protocol::testing
