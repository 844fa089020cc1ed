#pragma once

// Sample messages for the codec tests: every API, typical and edge values.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "protocol/Messages.h"

namespace groupcoord::protocol::testing {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
inline constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();

struct RequestSample {
  std::string name;
  RequestHeader header;
  Request request;
};

struct ResponseSample {
  std::string name;
  ApiKey api;
  ResponseHeader header;
  Response response;
};

inline RequestHeader headerFor(ApiKey api, int64_t correlationId, std::optional<std::string> clientId,
                               int16_t version = kProtocolVersion) {
  RequestHeader h;
  h.apiKey = api;
  h.version = version;
  h.correlationId = correlationId;
  h.clientId = std::move(clientId);
  return h;
}

// At least one sample per API; several use the edges of their types.
inline std::vector<RequestSample> requestSamples() {
  const std::string longName(249, 'n');
  const std::string clientId255(255, 'c');
  std::vector<RequestSample> s;
  s.push_back({"Heartbeat", headerFor(ApiKey::Heartbeat, 1, "svc-1"), HeartbeatRequest{"orders", "svc-1-7f3a", 5}});
  s.push_back({"Heartbeat edges", headerFor(ApiKey::Heartbeat, kInt64Max, std::nullopt),
               HeartbeatRequest{longName, longName, kInt64Max}});
  s.push_back({"Heartbeat negative generation", headerFor(ApiKey::Heartbeat, kInt64Min, ""),
               HeartbeatRequest{"g", "c", kInt64Min}});
  s.push_back({"Heartbeat v1, held", headerFor(ApiKey::Heartbeat, 3, "svc-1", 1),
               HeartbeatRequest{"orders", "svc-1-7f3a", 5, 1000}});
  s.push_back({"Heartbeat v1 edges", headerFor(ApiKey::Heartbeat, 4, std::nullopt, 1),
               HeartbeatRequest{longName, longName, kInt64Max, std::numeric_limits<int32_t>::min()}});
  s.push_back({"CreateGroup", headerFor(ApiKey::CreateGroup, 2, "svc-1"),
               CreateGroupRequest{"orders", 10000, {"clicks", "views"}, true}});
  s.push_back({"CreateGroup no topics", headerFor(ApiKey::CreateGroup, 0, clientId255),
               CreateGroupRequest{"pure", kInt64Max, {}, false}});
  s.push_back({"DeleteGroup", headerFor(ApiKey::DeleteGroup, 3, "admin"), DeleteGroupRequest{"orders"}});
  s.push_back({"RegisterConsumer new", headerFor(ApiKey::RegisterConsumer, 4, std::nullopt),
               RegisterConsumerRequest{"orders", "", {}}});
  s.push_back({"RegisterConsumer rejoin", headerFor(ApiKey::RegisterConsumer, 5, "svc-1"),
               RegisterConsumerRequest{"orders", "svc-1-7f3a", {{"clicks", 0}, {"clicks", kInt32Max}, {"views", 7}}}});
  s.push_back({"ListGroups all", headerFor(ApiKey::ListGroups, 6, std::nullopt), ListGroupsRequest{}});
  s.push_back({"ListGroups named", headerFor(ApiKey::ListGroups, 7, "grüße ✓"),
               ListGroupsRequest{{"orders", "nope", longName}}});
  s.push_back({"LeaveGroup", headerFor(ApiKey::LeaveGroup, 8, "svc-1"), LeaveGroupRequest{"orders", "svc-1-7f3a"}});
  s.push_back({"CommitOffsets", headerFor(ApiKey::CommitOffsets, 9, "svc-1"),
               CommitOffsetsRequest{"orders", "svc-1-7f3a", 6, {{"clicks", 0, 1250}, {"clicks", 1, kInt64Max}}}});
  s.push_back({"CommitOffsets empty", headerFor(ApiKey::CommitOffsets, 10, "svc-1"),
               CommitOffsetsRequest{"orders", "m", -1, {}}});
  s.push_back({"FetchOffsets", headerFor(ApiKey::FetchOffsets, 11, "svc-1"), FetchOffsetsRequest{"orders", {"clicks"}}});
  s.push_back({"FetchOffsets every topic", headerFor(ApiKey::FetchOffsets, 12, std::nullopt),
               FetchOffsetsRequest{"orders", {}}});
  s.push_back({"RewindConsumer", headerFor(ApiKey::RewindConsumer, 13, "ops"),
               RewindConsumerRequest{"orders", {{"clicks", 0, 0}, {"views", 3, -1}}}});
  s.push_back({"Authenticate", headerFor(ApiKey::Authenticate, 14, "svc-1"), AuthenticateRequest{"svc-1", "s3cr3t:✓"}});
  // Any bytes are a secret (a NUL, too); an empty user is well-formed and refused by the server.
  s.push_back({"Authenticate edges", headerFor(ApiKey::Authenticate, kInt64Max, std::nullopt),
               AuthenticateRequest{"", std::string("a\0b", 3) + std::string(1000, 'z')}});
  s.push_back({"DrainServer", headerFor(ApiKey::DrainServer, 15, "groupctl"), DrainServerRequest{2, true}});
  s.push_back({"DrainServer undrain, edges", headerFor(ApiKey::DrainServer, kInt64Min, std::nullopt),
               DrainServerRequest{kInt32Max, false}});
  s.push_back({"DrainServer server 0", headerFor(ApiKey::DrainServer, 0, ""), DrainServerRequest{0, true}});
  s.push_back({"DescribeGroup", headerFor(ApiKey::DescribeGroup, 16, "groupctl"), DescribeGroupRequest{"orders"}});
  s.push_back({"DescribeGroup long name", headerFor(ApiKey::DescribeGroup, kInt64Max, std::nullopt),
               DescribeGroupRequest{longName}});
  s.push_back({"DescribeServers", headerFor(ApiKey::DescribeServers, 24, "groupctl"), DescribeServersRequest{}});
  s.push_back({"DescribeServers edges", headerFor(ApiKey::DescribeServers, kInt64Min, std::nullopt),
               DescribeServersRequest{}});
  // Version 1 of the four APIs that have one.
  s.push_back({"CreateGroup v1 client mode", headerFor(ApiKey::CreateGroup, 17, "svc-1", 1),
               CreateGroupRequest{"shards", 10000, {}, false, AssignmentMode::CLIENT}});
  s.push_back({"CreateGroup v1 server mode", headerFor(ApiKey::CreateGroup, 18, std::nullopt, 1),
               CreateGroupRequest{"orders", 30000, {"clicks"}, true, AssignmentMode::SERVER}});
  s.push_back({"RegisterConsumer v1 metadata and rack", headerFor(ApiKey::RegisterConsumer, 19, "svc-1", 1),
               RegisterConsumerRequest{"shards", "", {{"clicks", 1}}, std::string("w=3\0\xff", 5), "eu-west-1a"}});
  s.push_back({"RegisterConsumer v1 big metadata", headerFor(ApiKey::RegisterConsumer, 20, "svc-1", 1),
               RegisterConsumerRequest{"shards", "m-1", {}, std::string(70000, 'x'), ""}});
  RegisterConsumerRequest v2{"shards", "m-1", {}, "w=1", "r1"};
  v2.knownGeneration = kInt64Max;
  s.push_back({"RegisterConsumer v2 known generation", headerFor(ApiKey::RegisterConsumer, 23, "svc-1", 2), v2});
  s.push_back({"ListGroups v1", headerFor(ApiKey::ListGroups, 21, "groupctl", 1), ListGroupsRequest{{"shards"}}});
  s.push_back({"DescribeGroup v1", headerFor(ApiKey::DescribeGroup, 22, "groupctl", 1), DescribeGroupRequest{"s"}});
  return s;
}

inline Broker broker(int32_t id, std::string host, uint16_t port) { return Broker{id, std::move(host), port}; }

// A DescribeGroup answer with every field away from its default, two
// members (one waiting for a partition the other still holds) and history
// entries of several reasons.
inline DescribeGroupResponse describedGroup() {
  DescribeGroupResponse r;
  r.group = "orders";
  r.error = ErrorCode::NONE;
  r.controller = broker(3, "10.0.0.9", 40003);
  r.state = GroupState::REBALANCING;
  r.sessionTimeoutMs = 10000;
  r.ephemeral = true;
  r.generation = kInt64Max;
  r.topics = {{"clicks", 2}, {"views", -1}};
  r.members = {MemberState{"svc-1-7f3a", "svc-1", "10.1.2.3", 65535, 1767225600000, 1767225605123,
                           {{"clicks", 0}, {"clicks", 1}}, {}},
               MemberState{"svc-2-09bc", "", "", 0, -1, kInt64Max, {}, {{"clicks", 1}}}};
  r.offsets = {{"clicks", 0, 1250}, {"clicks", 1, kInt64Max}};
  r.history = {RebalanceEvent{1767225600000, 6, RebalanceReason::MEMBER_JOINED, 1, "svc-2-09bc", "", "10.1.2.4", "",
                              -1, "member svc-2-09bc joined"},
               RebalanceEvent{kInt64Max, 7, RebalanceReason::MEMBER_EVICTED, kInt32Max, "svc-3", "svc", "", "",
                              30012, "1000 members evicted"},
               RebalanceEvent{0, 7, RebalanceReason::TOPIC_RESIZED, 1, "", "", "", "clicks", 2,
                              "topic clicks grew from 1 to 2 partitions ✓"}};
  return r;
}

// A DescribeServers answer with every field away from its default: three
// live servers (a candidate, a drained one, one still settling) and two
// groups that should move, one of them without a controller.
inline DescribeServersResponse describedServers() {
  DescribeServersResponse r;
  r.error = ErrorCode::NONE;
  r.server = 2;
  r.epsilonPermille = 100;
  r.marginPermille = 50;
  r.weighting = "members";
  r.groupWeight = 10;
  r.total = 73;
  r.bound = 81;
  r.complete = true;
  // id, host, port, drained, settled, candidate, load, groups, placed
  r.servers = {ServerPlacement{1, "10.0.0.7", 7400, false, true, true, 52, 4, 73},
               ServerPlacement{2, "groupcoord-2.example", 65535, true, true, false, 21, 2, 0},
               ServerPlacement{kInt32Max, "", 0, false, false, false, kInt64Max, kInt32Max, 0}};
  r.moves = {GroupMove{"orders", 13, 2, 1}, GroupMove{"new-group", kInt64Max, -1, 1}};
  return r;
}

inline std::vector<ResponseSample> responseSamples() {
  const std::string longName(249, 'n');
  GroupInfo full{"orders",
                 ErrorCode::NONE,
                 {"svc-1-7f3a", "svc-2-09bc"},
                 {"clicks", "views"},
                 broker(kInt32Max, "groupcoord-2.example", 65535),
                 10000,
                 kInt64Max,
                 true};
  GroupInfo missing{"nope", ErrorCode::UNKNOWN_GROUP, {}, {}, Broker{}, -1, -1, false};
  std::vector<ResponseSample> s;
  s.push_back({"Heartbeat", ApiKey::Heartbeat, {0, 1}, HeartbeatResponse{6, ErrorCode::REBALANCE_NEEDED}});
  s.push_back({"Heartbeat edges", ApiKey::Heartbeat, {0, kInt64Min}, HeartbeatResponse{kInt64Max, ErrorCode::NONE}});
  s.push_back({"CreateGroup", ApiKey::CreateGroup, {0, 2},
               CreateGroupResponse{"orders", ErrorCode::NONE, broker(2, "10.0.0.7", 40001)}});
  s.push_back({"CreateGroup no controller", ApiKey::CreateGroup, {0, 3},
               CreateGroupResponse{"orders", ErrorCode::CONTROLLER_NOT_AVAILABLE, Broker{}}});
  s.push_back({"DeleteGroup", ApiKey::DeleteGroup, {0, 4}, DeleteGroupResponse{"orders", ErrorCode::GROUP_NOT_EMPTY}});
  s.push_back({"RegisterConsumer", ApiKey::RegisterConsumer, {0, 5},
               RegisterConsumerResponse{"orders",
                                        "svc-1-7f3a",
                                        6,
                                        {"svc-1-7f3a", "svc-2-09bc"},
                                        {{"clicks", 0, 1200}, {"views", 2, -1}},
                                        ErrorCode::NONE}});
  s.push_back({"RegisterConsumer error", ApiKey::RegisterConsumer, {0, 6},
               RegisterConsumerResponse{"orders", "", -1, {}, {}, ErrorCode::NOT_CONTROLLER}});
  s.push_back({"ListGroups", ApiKey::ListGroups, {0, 7}, ListGroupsResponse{{full, missing}, ErrorCode::NONE}});
  s.push_back({"ListGroups empty", ApiKey::ListGroups, {0, 8},
               ListGroupsResponse{{}, ErrorCode::UNKNOWN_SERVER_ERROR}});
  s.push_back({"LeaveGroup", ApiKey::LeaveGroup, {0, 9}, LeaveGroupResponse{ErrorCode::UNKNOWN_CONSUMER}});
  s.push_back({"CommitOffsets", ApiKey::CommitOffsets, {0, 10},
               CommitOffsetsResponse{{{"clicks", 0, ErrorCode::NOT_OWNER}, {"clicks", 1, ErrorCode::NONE}},
                                     ErrorCode::NONE}});
  s.push_back({"FetchOffsets", ApiKey::FetchOffsets, {0, 11},
               FetchOffsetsResponse{{{"clicks", 0, 1250}, {longName, kInt32Max, kInt64Max}}, ErrorCode::NONE}});
  s.push_back({"FetchOffsets unknown code", ApiKey::FetchOffsets, {0, 12},
               FetchOffsetsResponse{{}, static_cast<ErrorCode>(999)}});
  s.push_back({"RewindConsumer", ApiKey::RewindConsumer, {0, 13},
               RewindConsumerResponse{{{"clicks", 0, ErrorCode::INVALID_OFFSET}}, ErrorCode::NONE}});
  s.push_back({"Authenticate", ApiKey::Authenticate, {0, 17}, AuthenticateResponse{ErrorCode::NONE}});
  s.push_back({"Authenticate refused", ApiKey::Authenticate, {0, 18}, AuthenticateResponse{ErrorCode::NOT_AUTHORIZED}});
  s.push_back({"DrainServer", ApiKey::DrainServer, {0, 19}, DrainServerResponse{ErrorCode::NONE}});
  s.push_back({"DrainServer refused", ApiKey::DrainServer, {0, 20},
               DrainServerResponse{ErrorCode::CONTROLLER_NOT_AVAILABLE}});
  s.push_back({"DescribeGroup", ApiKey::DescribeGroup, {0, 21}, describedGroup()});
  DescribeGroupResponse odd = describedGroup();
  odd.state = static_cast<GroupState>(99);  // a state a newer server may send
  odd.history.front().reason = static_cast<RebalanceReason>(-7);
  odd.members.front().held.clear();
  s.push_back({"DescribeGroup unknown state and reason", ApiKey::DescribeGroup, {0, kInt64Max}, odd});
  DescribeGroupResponse refused;
  refused.group = "orders";
  refused.error = ErrorCode::NOT_CONTROLLER;
  s.push_back({"DescribeGroup refused", ApiKey::DescribeGroup, {0, 22}, refused});
  s.push_back({"DescribeServers", ApiKey::DescribeServers, {0, 29}, describedServers()});
  DescribeServersResponse reading = describedServers();
  reading.complete = false;
  reading.weighting = "groups";
  reading.moves.clear();
  s.push_back({"DescribeServers still reading", ApiKey::DescribeServers, {0, kInt64Min}, reading});
  DescribeServersResponse unavailable;
  unavailable.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
  s.push_back({"DescribeServers refused", ApiKey::DescribeServers, {0, 30}, unavailable});
  // Version 1.
  RegisterConsumerResponse client{"shards", "m-2", 4, {"m-1", "m-2"}, {}, ErrorCode::NONE, AssignmentMode::CLIENT,
                                  {{"m-1", std::string("\0\1", 2), "r1"}, {"m-2", "", ""}}};
  s.push_back({"RegisterConsumer v1 client mode", ApiKey::RegisterConsumer, {1, 23}, client});
  s.push_back({"RegisterConsumer v1 server mode", ApiKey::RegisterConsumer, {1, 24},
               RegisterConsumerResponse{"orders", "m", 2, {"m"}, {{"clicks", 0, 5}}, ErrorCode::NONE,
                                        AssignmentMode::SERVER, {{"m", "meta", "r2"}}}});
  // Version 2.
  RegisterConsumerResponse share{"orders", "m", 2, {}, {{"clicks", 0, 5}}, ErrorCode::NONE, AssignmentMode::SERVER, {}};
  share.memberCount = 10000;
  s.push_back({"RegisterConsumer v2 server mode", ApiKey::RegisterConsumer, {2, 27}, share});
  RegisterConsumerResponse delta{"shards", "m-2", 9, {}, {}, ErrorCode::NONE, AssignmentMode::CLIENT,
                                 {{"m-3", std::string("\0\1", 2), "r1"}}};
  delta.memberCount = 2;
  delta.listBase = 8;
  delta.removedMembers = {"m-1", "m-4"};
  s.push_back({"RegisterConsumer v2 client mode change", ApiKey::RegisterConsumer, {2, 28}, delta});
  GroupInfo clientGroup = full;
  clientGroup.mode = AssignmentMode::CLIENT;
  s.push_back({"ListGroups v1", ApiKey::ListGroups, {1, 25}, ListGroupsResponse{{clientGroup, missing}, ErrorCode::NONE}});
  DescribeGroupResponse v1 = describedGroup();
  v1.mode = AssignmentMode::CLIENT;
  v1.members.front().metadata = std::string("k\0v", 3);
  v1.members.front().rack = "r1";
  s.push_back({"DescribeGroup v1", ApiKey::DescribeGroup, {1, 26}, v1});
  s.push_back({"error-only UNKNOWN_API", ApiKey::Heartbeat, {0, 14}, ErrorOnlyResponse{ErrorCode::UNKNOWN_API}});
  s.push_back({"error-only UNSUPPORTED_VERSION", ApiKey::ListGroups, {7, 15},
               ErrorOnlyResponse{ErrorCode::UNSUPPORTED_VERSION}});
  s.push_back({"error-only INVALID_REQUEST", ApiKey::RegisterConsumer, {0, 16},
               ErrorOnlyResponse{ErrorCode::INVALID_REQUEST}});
  return s;
}

}  // namespace groupcoord::protocol::testing
