// Names, the error answer of each API, and the small tables of Messages.h.

#include <gtest/gtest.h>

#include "Samples.h"
#include "protocol/Codec.h"

namespace groupcoord::protocol::testing {
namespace {

// ---- isValidName ------------------------------------------------------------------

TEST(Names, ValidNames) {
  for (const std::string& n : {std::string("orders"), std::string("a"), std::string("A-Z_a.z-0.9"), std::string("..."),
                               std::string(".hidden"), std::string("-"), std::string(249, 'x')}) {
    EXPECT_TRUE(isValidName(n)) << n;
  }
}

TEST(Names, InvalidNames) {
  const std::string withNul("ab\0cd", 5);
  for (const std::string& n : {std::string(""), std::string("."), std::string(".."), std::string("a/b"),
                               std::string("/"), withNul, std::string(250, 'x'), std::string("grüppe"),
                               std::string("группа"), std::string("a b"), std::string("a:b"), std::string("a\\b"),
                               std::string("tab\t")}) {
    EXPECT_FALSE(isValidName(n)) << n;
  }
}

// ---- validateNames: which error, in which order -----------------------------------------

const std::string kBadNames[] = {"", ".", "..", "a/b", std::string("a\0b", 3), std::string(250, 'g'), "grüppe"};

TEST(ValidateNames, BadGroupIsInvalidGroupNameForEveryApiButListGroups) {
  for (const std::string& bad : kBadNames) {
    SCOPED_TRACE(bad);
    const std::vector<Request> requests{
        HeartbeatRequest{bad, "m", 1},
        CreateGroupRequest{bad, 1000, {}, false},
        DeleteGroupRequest{bad},
        RegisterConsumerRequest{bad, "", {}},
        LeaveGroupRequest{bad, "m"},
        CommitOffsetsRequest{bad, "m", 1, {}},
        FetchOffsetsRequest{bad, {}},
        RewindConsumerRequest{bad, {}},
    };
    for (const auto& r : requests) EXPECT_EQ(validateNames(r), ErrorCode::INVALID_GROUP_NAME) << r.index();
    EXPECT_EQ(validateNames(ListGroupsRequest{{bad}}), ErrorCode::NONE);
  }
}

TEST(ValidateNames, BadConsumerIdIsInvalidConsumerId) {
  for (const std::string& bad : kBadNames) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(validateNames(HeartbeatRequest{"g", bad, 1}), ErrorCode::INVALID_CONSUMER_ID);
    EXPECT_EQ(validateNames(LeaveGroupRequest{"g", bad}), ErrorCode::INVALID_CONSUMER_ID);
    EXPECT_EQ(validateNames(CommitOffsetsRequest{"g", bad, 1, {}}), ErrorCode::INVALID_CONSUMER_ID);
    // An empty ConsumerId asks RegisterConsumer for a new member.
    EXPECT_EQ(validateNames(RegisterConsumerRequest{"g", bad, {}}),
              bad.empty() ? ErrorCode::NONE : ErrorCode::INVALID_CONSUMER_ID);
  }
}

TEST(ValidateNames, BadTopicIsInvalidGroupName) {
  for (const std::string& bad : kBadNames) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(validateNames(CreateGroupRequest{"g", 1000, {"ok", bad}, true}), ErrorCode::INVALID_GROUP_NAME);
    EXPECT_EQ(validateNames(CommitOffsetsRequest{"g", "m", 1, {{"ok", 0, 1}, {bad, 1, 1}}}),
              ErrorCode::INVALID_GROUP_NAME);
    EXPECT_EQ(validateNames(FetchOffsetsRequest{"g", {bad}}), ErrorCode::INVALID_GROUP_NAME);
    EXPECT_EQ(validateNames(RewindConsumerRequest{"g", {{bad, 0, 0}}}), ErrorCode::INVALID_GROUP_NAME);
    EXPECT_EQ(validateNames(RegisterConsumerRequest{"g", "m", {{bad, 0}}}), ErrorCode::INVALID_GROUP_NAME);
  }
}

TEST(ValidateNames, GroupIsCheckedFirstThenConsumerThenTopics) {
  EXPECT_EQ(validateNames(CommitOffsetsRequest{"a/b", "c/d", 1, {{"e/f", 0, 0}}}), ErrorCode::INVALID_GROUP_NAME);
  EXPECT_EQ(validateNames(CommitOffsetsRequest{"g", "c/d", 1, {{"e/f", 0, 0}}}), ErrorCode::INVALID_CONSUMER_ID);
  EXPECT_EQ(validateNames(HeartbeatRequest{"..", "", 1}), ErrorCode::INVALID_GROUP_NAME);
  EXPECT_EQ(validateNames(RegisterConsumerRequest{"g", "c/d", {{"e/f", 0}}}), ErrorCode::INVALID_CONSUMER_ID);
}

TEST(ValidateNames, EveryValidSampleIsAccepted) {
  for (const auto& s : requestSamples()) {
    EXPECT_EQ(validateNames(s.request), ErrorCode::NONE) << s.name;
  }
  EXPECT_EQ(validateNames(HeartbeatRequest{std::string(249, 'g'), std::string(249, 'c'), 1}), ErrorCode::NONE);
}

// ---- errorResponse / responseError ----------------------------------------------------

TEST(ErrorResponse, EachApiCarriesTheContractsFields) {
  const ErrorCode e = ErrorCode::NOT_CONTROLLER;
  EXPECT_EQ(errorResponse(HeartbeatRequest{"g", "m", 7}, e), Response(HeartbeatResponse{-1, e}));

  const Response created = errorResponse(CreateGroupRequest{"g", 1000, {"t"}, true}, e);
  ASSERT_TRUE(std::holds_alternative<CreateGroupResponse>(created));
  EXPECT_EQ(std::get<CreateGroupResponse>(created).group, "g");
  EXPECT_TRUE(std::get<CreateGroupResponse>(created).controller.isNone());
  EXPECT_EQ(std::get<CreateGroupResponse>(created).controller, (Broker{-1, "", 0}));
  EXPECT_EQ(std::get<CreateGroupResponse>(created).error, e);

  EXPECT_EQ(errorResponse(DeleteGroupRequest{"g"}, e), Response(DeleteGroupResponse{"g", e}));
  EXPECT_EQ(errorResponse(RegisterConsumerRequest{"g", "m", {{"t", 0}}}, e),
            Response(RegisterConsumerResponse{"g", "m", -1, {}, {}, e}));
  EXPECT_EQ(errorResponse(ListGroupsRequest{{"a", "b"}}, e), Response(ListGroupsResponse{{}, e}));
  EXPECT_EQ(errorResponse(LeaveGroupRequest{"g", "m"}, e), Response(LeaveGroupResponse{e}));
  EXPECT_EQ(errorResponse(CommitOffsetsRequest{"g", "m", 1, {{"t", 0, 5}}}, e), Response(CommitOffsetsResponse{{}, e}));
  EXPECT_EQ(errorResponse(FetchOffsetsRequest{"g", {"t"}}, e), Response(FetchOffsetsResponse{{}, e}));
  EXPECT_EQ(errorResponse(RewindConsumerRequest{"g", {{"t", 0, 0}}}, e), Response(RewindConsumerResponse{{}, e}));
  EXPECT_EQ(errorResponse(AuthenticateRequest{"u", "s"}, ErrorCode::NOT_AUTHORIZED),
            Response(AuthenticateResponse{ErrorCode::NOT_AUTHORIZED}));
  EXPECT_EQ(errorResponse(DrainServerRequest{2, true}, e), Response(DrainServerResponse{e}));

  // DescribeServers: numbers -1, Weighting "", Complete false, no server, no move.
  const Response servers = errorResponse(DescribeServersRequest{}, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  ASSERT_TRUE(std::holds_alternative<DescribeServersResponse>(servers));
  const auto& s = std::get<DescribeServersResponse>(servers);
  EXPECT_EQ(s.error, ErrorCode::CONTROLLER_NOT_AVAILABLE);
  EXPECT_EQ(s.server, -1);
  EXPECT_EQ(s.epsilonPermille, -1);
  EXPECT_EQ(s.marginPermille, -1);
  EXPECT_EQ(s.weighting, "");
  EXPECT_EQ(s.groupWeight, -1);
  EXPECT_EQ(s.total, -1);
  EXPECT_EQ(s.bound, -1);
  EXPECT_FALSE(s.complete);
  EXPECT_TRUE(s.servers.empty());
  EXPECT_TRUE(s.moves.empty());
}

// DescribeServers carries nothing to judge.
TEST(ValidateNames, DescribeServersIsNeverANameError) {
  EXPECT_EQ(validateNames(DescribeServersRequest{}), ErrorCode::NONE);
}

// A user name is not a path: any user name passes the name check, and the
// server answers an unknown or odd one NOT_AUTHORIZED.
TEST(ValidateNames, AuthenticateIsNeverANameError) {
  for (const std::string& bad : kBadNames) {
    EXPECT_EQ(validateNames(AuthenticateRequest{bad, "secret"}), ErrorCode::NONE);
  }
}

// DrainServer carries no name; a negative ServerId names no server and is
// refused the way a bad name is, in the API's full response.
TEST(ValidateNames, DrainServerRefusesANegativeServerIdOnly) {
  for (int32_t id : {-1, -2, INT32_MIN}) {
    EXPECT_EQ(validateNames(DrainServerRequest{id, true}), ErrorCode::INVALID_REQUEST) << id;
    EXPECT_EQ(validateNames(DrainServerRequest{id, false}), ErrorCode::INVALID_REQUEST) << id;
  }
  for (int32_t id : {0, 1, INT32_MAX}) {
    EXPECT_EQ(validateNames(DrainServerRequest{id, true}), ErrorCode::NONE) << id;
    EXPECT_EQ(validateNames(DrainServerRequest{id, false}), ErrorCode::NONE) << id;
  }
}

TEST(ErrorResponse, AlwaysTheRequestsApi) {
  for (const auto& s : requestSamples()) {
    const Response r = errorResponse(s.request, ErrorCode::INVALID_GROUP_NAME);
    EXPECT_EQ(apiKeyOf(r), std::optional<ApiKey>(apiKeyOf(s.request))) << s.name;
    EXPECT_EQ(responseError(r), ErrorCode::INVALID_GROUP_NAME) << s.name;
  }
}

TEST(ResponseError, EveryAlternative) {
  for (const auto& s : responseSamples()) {
    const ErrorCode expected = std::visit([](const auto& m) { return m.error; }, s.response);
    EXPECT_EQ(responseError(s.response), expected) << s.name;
  }
  EXPECT_EQ(responseError(ErrorOnlyResponse{ErrorCode::UNKNOWN_API}), ErrorCode::UNKNOWN_API);
  EXPECT_EQ(responseError(HeartbeatResponse{3, ErrorCode::REBALANCE_NEEDED}), ErrorCode::REBALANCE_NEEDED);
}

// ---- Tables -----------------------------------------------------------------------------

TEST(Tables, ErrorNamesMatchTheContractAndRoundTrip) {
  const std::pair<int, const char*> table[] = {
      {0, "NONE"},
      {-1, "UNKNOWN_SERVER_ERROR"},
      {1, "INVALID_REQUEST"},
      {2, "UNSUPPORTED_VERSION"},
      {3, "UNKNOWN_API"},
      {10, "UNKNOWN_GROUP"},
      {11, "GROUP_ALREADY_EXISTS"},
      {12, "GROUP_NOT_EMPTY"},
      {13, "INVALID_GROUP_NAME"},
      {14, "INVALID_SESSION_TIMEOUT"},
      {15, "NOT_CONTROLLER"},
      {16, "CONTROLLER_NOT_AVAILABLE"},
      {17, "UNKNOWN_CONSUMER"},
      {18, "REBALANCE_NEEDED"},
      {19, "NOT_OWNER"},
      {20, "UNKNOWN_TOPIC_OR_PARTITION"},
      {21, "INVALID_OFFSET"},
      {22, "NOT_AUTHORIZED"},
      {23, "INVALID_CONSUMER_ID"},
  };
  for (const auto& [code, name] : table) {
    const auto e = static_cast<ErrorCode>(code);
    EXPECT_EQ(errorName(e), name);
    EXPECT_EQ(errorFromName(name), e);
    EXPECT_FALSE(errorMessage(e).empty());
  }
  EXPECT_EQ(errorName(static_cast<ErrorCode>(4)), "UNKNOWN_ERROR_CODE");
  EXPECT_EQ(errorName(static_cast<ErrorCode>(999)), "UNKNOWN_ERROR_CODE");
  EXPECT_FALSE(errorFromName("UNKNOWN_ERROR_CODE").has_value());
  EXPECT_FALSE(errorFromName("none").has_value());
}

TEST(Tables, ApiNamesAndWhereToSend) {
  const std::tuple<ApiKey, const char*, bool> table[] = {
      {ApiKey::Heartbeat, "Heartbeat", true},
      {ApiKey::CreateGroup, "CreateGroup", false},
      {ApiKey::DeleteGroup, "DeleteGroup", true},
      {ApiKey::RegisterConsumer, "RegisterConsumer", true},
      {ApiKey::ListGroups, "ListGroups", false},
      {ApiKey::LeaveGroup, "LeaveGroup", true},
      {ApiKey::CommitOffsets, "CommitOffsets", true},
      {ApiKey::FetchOffsets, "FetchOffsets", false},
      {ApiKey::RewindConsumer, "RewindConsumer", true},
      {ApiKey::Authenticate, "Authenticate", false},
      {ApiKey::DrainServer, "DrainServer", false},
      {ApiKey::DescribeGroup, "DescribeGroup", true},
      {ApiKey::DescribeServers, "DescribeServers", false},
  };
  for (const auto& [key, name, controllerOnly] : table) {
    EXPECT_EQ(apiName(key), name);
    EXPECT_EQ(isControllerOnly(key), controllerOnly) << name;
    EXPECT_TRUE(isKnownApi(static_cast<int16_t>(key)));
  }
  EXPECT_EQ(apiName(static_cast<ApiKey>(13)), "Unknown");
  EXPECT_EQ(apiName(static_cast<ApiKey>(-1)), "Unknown");
  EXPECT_TRUE(isKnownApi(12));
  EXPECT_FALSE(isKnownApi(13));
  EXPECT_FALSE(isKnownApi(-1));
}

TEST(Tables, ApiKeyOfEveryMessageType) {
  EXPECT_EQ(apiKeyOf(HeartbeatRequest{}), ApiKey::Heartbeat);
  EXPECT_EQ(apiKeyOf(CreateGroupRequest{}), ApiKey::CreateGroup);
  EXPECT_EQ(apiKeyOf(DeleteGroupRequest{}), ApiKey::DeleteGroup);
  EXPECT_EQ(apiKeyOf(RegisterConsumerRequest{}), ApiKey::RegisterConsumer);
  EXPECT_EQ(apiKeyOf(ListGroupsRequest{}), ApiKey::ListGroups);
  EXPECT_EQ(apiKeyOf(LeaveGroupRequest{}), ApiKey::LeaveGroup);
  EXPECT_EQ(apiKeyOf(CommitOffsetsRequest{}), ApiKey::CommitOffsets);
  EXPECT_EQ(apiKeyOf(FetchOffsetsRequest{}), ApiKey::FetchOffsets);
  EXPECT_EQ(apiKeyOf(RewindConsumerRequest{}), ApiKey::RewindConsumer);
  EXPECT_EQ(apiKeyOf(AuthenticateRequest{}), ApiKey::Authenticate);
  EXPECT_EQ(apiKeyOf(DrainServerRequest{}), ApiKey::DrainServer);
  EXPECT_EQ(apiKeyOf(Response(HeartbeatResponse{})), ApiKey::Heartbeat);
  EXPECT_EQ(apiKeyOf(Response(AuthenticateResponse{})), ApiKey::Authenticate);
  EXPECT_EQ(apiKeyOf(Response(DrainServerResponse{})), ApiKey::DrainServer);
  EXPECT_EQ(apiKeyOf(DescribeGroupRequest{}), ApiKey::DescribeGroup);
  EXPECT_EQ(apiKeyOf(Response(DescribeGroupResponse{})), ApiKey::DescribeGroup);
  EXPECT_EQ(apiKeyOf(DescribeServersRequest{}), ApiKey::DescribeServers);
  EXPECT_EQ(apiKeyOf(Response(DescribeServersResponse{})), ApiKey::DescribeServers);
  EXPECT_EQ(apiKeyOf(Response(ErrorOnlyResponse{})), std::nullopt);
}

TEST(Tables, StateAndReasonNames) {
  EXPECT_EQ(groupStateName(GroupState::LOADING), "LOADING");
  EXPECT_EQ(groupStateName(GroupState::STABLE), "STABLE");
  EXPECT_EQ(groupStateName(GroupState::REBALANCING), "REBALANCING");
  EXPECT_EQ(groupStateName(GroupState::HANDING_OVER), "HANDING_OVER");
  EXPECT_EQ(groupStateName(static_cast<GroupState>(4)), "UNKNOWN_STATE");
  EXPECT_EQ(groupStateName(static_cast<GroupState>(-1)), "UNKNOWN_STATE");
  for (int v = 0; v <= 10; ++v) {
    const auto reason = static_cast<RebalanceReason>(v);
    const std::string_view name = rebalanceReasonName(reason);
    EXPECT_NE(name, "UNKNOWN_REASON") << v;
    EXPECT_EQ(rebalanceReasonFromName(name), reason) << name;
  }
  EXPECT_EQ(rebalanceReasonName(RebalanceReason::MEMBER_EVICTED), "MEMBER_EVICTED");
  EXPECT_EQ(rebalanceReasonName(RebalanceReason::CONTROLLER_TAKEOVER), "CONTROLLER_TAKEOVER");
  EXPECT_EQ(rebalanceReasonName(static_cast<RebalanceReason>(11)), "UNKNOWN_REASON");
  EXPECT_FALSE(rebalanceReasonFromName("member_joined"));
}

}  // namespace
}  // namespace groupcoord::protocol::testing
