// The team's shared fixture, vectors/protocol-v0.json: every frame decodes to
// exactly the fields the file gives (compared as JSON, key by key), and those
// fields, read from the file, encode back to the same hex.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "TestBytes.h"
#include "protocol/Codec.h"

#ifndef GROUPCOORD_PROTOCOL_VECTORS
#error "GROUPCOORD_PROTOCOL_VECTORS must name the vectors file"
#endif

namespace groupcoord::protocol::testing {
namespace {

using nlohmann::json;

// ---- Messages to JSON, in the vectors' vocabulary --------------------------------

json errorJson(ErrorCode e) {
  const std::string_view name = errorName(e);
  // An unnamed code stays a number so that a mismatch is visible.
  if (name == "UNKNOWN_ERROR_CODE") return static_cast<int>(e);
  return std::string(name);
}

json toJson(const Broker& b) { return {{"id", b.brokerId}, {"host", b.host}, {"port", b.port}}; }
json toJson(const TopicPartition& tp) { return json::array({tp.topic, tp.partition}); }
json toJson(const PartitionOffset& po) { return json::array({po.topic, po.partition, po.offset}); }
json toJson(const PartitionError& pe) { return json::array({pe.topic, pe.partition, errorJson(pe.error)}); }

json toJson(const GroupInfo& g);
json toJson(const ServerPlacement& s);
json toJson(const GroupMove& m);
json toJson(const TopicState& t);
json toJson(const MemberState& m);
json toJson(const RebalanceEvent& e);

template <typename T>
json arrayJson(const std::vector<T>& items) {
  json out = json::array();
  for (const auto& item : items) {
    if constexpr (std::is_same_v<T, std::string>) {
      out.push_back(item);
    } else {
      out.push_back(toJson(item));
    }
  }
  return out;
}

json toJson(const GroupInfo& g) {
  return {{"name", g.name},
          {"error", errorJson(g.error)},
          {"members", arrayJson(g.members)},
          {"topics", arrayJson(g.topics)},
          {"controller", toJson(g.controller)},
          {"session_timeout", g.sessionTimeoutMs},
          {"generation", g.generation},
          {"ephemeral", g.ephemeral}};
}

json toJson(const HeartbeatRequest& m) {
  return {{"group", m.group}, {"consumer", m.consumerId}, {"generation", m.generation}};
}
json toJson(const CreateGroupRequest& m) {
  return {{"group", m.group},
          {"session_timeout", m.sessionTimeoutMs},
          {"topics", arrayJson(m.topics)},
          {"ephemeral", m.ephemeral}};
}
json toJson(const DeleteGroupRequest& m) { return {{"group", m.group}}; }
json toJson(const RegisterConsumerRequest& m) {
  return {{"group", m.group}, {"consumer", m.consumerId}, {"owned", arrayJson(m.owned)}};
}
json toJson(const ListGroupsRequest& m) { return {{"groups", arrayJson(m.groups)}}; }
json toJson(const LeaveGroupRequest& m) { return {{"group", m.group}, {"consumer", m.consumerId}}; }
json toJson(const CommitOffsetsRequest& m) {
  return {{"group", m.group},
          {"consumer", m.consumerId},
          {"generation", m.generation},
          {"offsets", arrayJson(m.offsets)}};
}
json toJson(const FetchOffsetsRequest& m) { return {{"group", m.group}, {"topics", arrayJson(m.topics)}}; }
json toJson(const RewindConsumerRequest& m) { return {{"group", m.group}, {"offsets", arrayJson(m.offsets)}}; }
json toJson(const AuthenticateRequest& m) { return {{"user", m.user}, {"secret", m.secret}}; }
json toJson(const DrainServerRequest& m) { return {{"server_id", m.serverId}, {"drain", m.drain}}; }

json toJson(const HeartbeatResponse& m) { return {{"generation", m.generation}, {"error", errorJson(m.error)}}; }
json toJson(const CreateGroupResponse& m) {
  return {{"group", m.group}, {"error", errorJson(m.error)}, {"controller", toJson(m.controller)}};
}
json toJson(const DeleteGroupResponse& m) { return {{"group", m.group}, {"error", errorJson(m.error)}}; }
json toJson(const RegisterConsumerResponse& m) {
  return {{"group", m.group},
          {"consumer", m.consumerId},
          {"generation", m.generation},
          {"members", arrayJson(m.members)},
          {"partitions", arrayJson(m.partitions)},
          {"error", errorJson(m.error)}};
}
json toJson(const ListGroupsResponse& m) { return {{"groups", arrayJson(m.groups)}, {"error", errorJson(m.error)}}; }
json toJson(const LeaveGroupResponse& m) { return {{"error", errorJson(m.error)}}; }
json toJson(const CommitOffsetsResponse& m) {
  return {{"results", arrayJson(m.results)}, {"error", errorJson(m.error)}};
}
json toJson(const FetchOffsetsResponse& m) {
  return {{"offsets", arrayJson(m.offsets)}, {"error", errorJson(m.error)}};
}
json toJson(const RewindConsumerResponse& m) {
  return {{"results", arrayJson(m.results)}, {"error", errorJson(m.error)}};
}
json toJson(const AuthenticateResponse& m) { return {{"error", errorJson(m.error)}}; }
json toJson(const DrainServerResponse& m) { return {{"error", errorJson(m.error)}}; }
json toJson(const DescribeGroupRequest& m) { return {{"group", m.group}}; }
json toJson(const TopicState& t) { return json::array({t.topic, t.partitions}); }
json toJson(const MemberState& m) {
  return {{"consumer", m.consumerId},     {"client_id", m.clientId},       {"host", m.host},
          {"port", m.port},               {"joined_at", m.joinedAtMs},     {"last_heard", m.lastHeardMs},
          {"held", arrayJson(m.held)},    {"waiting", arrayJson(m.waiting)}};
}
json toJson(const RebalanceEvent& e) {
  return {{"time", e.timeMs},        {"generation", e.generation},
          {"reason", std::string(rebalanceReasonName(e.reason))},
          {"count", e.count},        {"consumer", e.consumerId},
          {"client_id", e.clientId}, {"host", e.host},
          {"subject", e.subject},    {"value", e.value},
          {"detail", e.detail}};
}
json toJson(const DescribeGroupResponse& m) {
  return {{"group", m.group},
          {"error", errorJson(m.error)},
          {"controller", toJson(m.controller)},
          {"state", std::string(groupStateName(m.state))},
          {"session_timeout", m.sessionTimeoutMs},
          {"ephemeral", m.ephemeral},
          {"generation", m.generation},
          {"topics", arrayJson(m.topics)},
          {"members", arrayJson(m.members)},
          {"offsets", arrayJson(m.offsets)},
          {"history", arrayJson(m.history)}};
}
json toJson(const DescribeServersRequest&) { return json::object(); }
json toJson(const ServerPlacement& s) {
  return {{"id", s.id},         {"host", s.host},           {"port", s.port},       {"drained", s.drained},
          {"settled", s.settled}, {"candidate", s.candidate}, {"load", s.load},       {"groups", s.groups},
          {"placed", s.placed}};
}
json toJson(const GroupMove& m) {
  return {{"group", m.group}, {"weight", m.weight}, {"controller", m.controller}, {"target", m.target}};
}
json toJson(const DescribeServersResponse& m) {
  return {{"error", errorJson(m.error)},
          {"server", m.server},
          {"epsilon_permille", m.epsilonPermille},
          {"margin_permille", m.marginPermille},
          {"weighting", m.weighting},
          {"group_weight", m.groupWeight},
          {"total", m.total},
          {"bound", m.bound},
          {"complete", m.complete},
          {"servers", arrayJson(m.servers)},
          {"moves", arrayJson(m.moves)}};
}
json toJson(const ErrorOnlyResponse& m) { return {{"error", errorJson(m.error)}}; }

// ---- JSON to messages ----------------------------------------------------------
// .at() throws on a missing key: the test catches it and fails with the key.

ErrorCode errorFrom(const json& j) {
  if (j.is_number_integer()) return static_cast<ErrorCode>(j.get<int>());
  const auto e = errorFromName(j.get<std::string>());
  if (!e) throw std::runtime_error("unknown error name " + j.dump());
  return *e;
}

Broker brokerFrom(const json& j) {
  return Broker{j.at("id").get<int32_t>(), j.at("host").get<std::string>(), j.at("port").get<uint16_t>()};
}

std::vector<std::string> namesFrom(const json& j) { return j.get<std::vector<std::string>>(); }

std::vector<TopicPartition> topicPartitionsFrom(const json& j) {
  std::vector<TopicPartition> out;
  for (const auto& e : j) out.push_back({e.at(0).get<std::string>(), e.at(1).get<int32_t>()});
  return out;
}

std::vector<PartitionOffset> partitionOffsetsFrom(const json& j) {
  std::vector<PartitionOffset> out;
  for (const auto& e : j) out.push_back({e.at(0).get<std::string>(), e.at(1).get<int32_t>(), e.at(2).get<int64_t>()});
  return out;
}

std::vector<PartitionError> partitionErrorsFrom(const json& j) {
  std::vector<PartitionError> out;
  for (const auto& e : j) out.push_back({e.at(0).get<std::string>(), e.at(1).get<int32_t>(), errorFrom(e.at(2))});
  return out;
}

Request requestFrom(int api, const json& f) {
  switch (static_cast<ApiKey>(api)) {
    case ApiKey::Heartbeat:
      return HeartbeatRequest{f.at("group"), f.at("consumer"), f.at("generation")};
    case ApiKey::CreateGroup:
      return CreateGroupRequest{f.at("group"), f.at("session_timeout"), namesFrom(f.at("topics")), f.at("ephemeral")};
    case ApiKey::DeleteGroup:
      return DeleteGroupRequest{f.at("group")};
    case ApiKey::RegisterConsumer:
      return RegisterConsumerRequest{f.at("group"), f.at("consumer"), topicPartitionsFrom(f.at("owned"))};
    case ApiKey::ListGroups:
      return ListGroupsRequest{namesFrom(f.at("groups"))};
    case ApiKey::LeaveGroup:
      return LeaveGroupRequest{f.at("group"), f.at("consumer")};
    case ApiKey::CommitOffsets:
      return CommitOffsetsRequest{f.at("group"), f.at("consumer"), f.at("generation"),
                                  partitionOffsetsFrom(f.at("offsets"))};
    case ApiKey::FetchOffsets:
      return FetchOffsetsRequest{f.at("group"), namesFrom(f.at("topics"))};
    case ApiKey::RewindConsumer:
      return RewindConsumerRequest{f.at("group"), partitionOffsetsFrom(f.at("offsets"))};
    case ApiKey::Authenticate:
      return AuthenticateRequest{f.at("user"), f.at("secret")};
    case ApiKey::DrainServer:
      return DrainServerRequest{f.at("server_id"), f.at("drain")};
    case ApiKey::DescribeGroup:
      return DescribeGroupRequest{f.at("group")};
    case ApiKey::DescribeServers:
      if (!f.empty()) throw std::runtime_error("a DescribeServers request has no field");
      return DescribeServersRequest{};
  }
  throw std::runtime_error("no request layout for api " + std::to_string(api));
}

// A vector whose only field is "error" is an error-only answer, except for
// LeaveGroup, Authenticate and DrainServer, whose own responses are that
// shape (see docs/protocol.md).
bool isErrorOnly(int api, const json& f) {
  return f.size() == 1 && f.contains("error") && api != static_cast<int>(ApiKey::LeaveGroup) &&
         api != static_cast<int>(ApiKey::Authenticate) && api != static_cast<int>(ApiKey::DrainServer);
}

GroupState stateFrom(const json& j) {
  for (int v = 0; v < 4; ++v) {
    if (groupStateName(static_cast<GroupState>(v)) == j.get<std::string>()) return static_cast<GroupState>(v);
  }
  throw std::runtime_error("unknown state " + j.dump());
}

DescribeGroupResponse describeGroupFrom(const json& f) {
  DescribeGroupResponse r;
  r.group = f.at("group");
  r.error = errorFrom(f.at("error"));
  r.controller = brokerFrom(f.at("controller"));
  r.state = stateFrom(f.at("state"));
  r.sessionTimeoutMs = f.at("session_timeout");
  r.ephemeral = f.at("ephemeral");
  r.generation = f.at("generation");
  for (const auto& t : f.at("topics")) r.topics.push_back(TopicState{t.at(0), t.at(1)});
  for (const auto& m : f.at("members")) {
    r.members.push_back(MemberState{m.at("consumer"), m.at("client_id"), m.at("host"), m.at("port"),
                                    m.at("joined_at"), m.at("last_heard"), topicPartitionsFrom(m.at("held")),
                                    topicPartitionsFrom(m.at("waiting"))});
  }
  r.offsets = partitionOffsetsFrom(f.at("offsets"));
  for (const auto& e : f.at("history")) {
    auto reason = rebalanceReasonFromName(e.at("reason").get<std::string>());
    if (!reason) throw std::runtime_error("unknown reason " + e.at("reason").dump());
    r.history.push_back(RebalanceEvent{e.at("time"), e.at("generation"), *reason, e.at("count"), e.at("consumer"),
                                       e.at("client_id"), e.at("host"), e.at("subject"), e.at("value"),
                                       e.at("detail")});
  }
  return r;
}

DescribeServersResponse describeServersFrom(const json& f) {
  DescribeServersResponse r;
  r.error = errorFrom(f.at("error"));
  r.server = f.at("server");
  r.epsilonPermille = f.at("epsilon_permille");
  r.marginPermille = f.at("margin_permille");
  r.weighting = f.at("weighting");
  r.groupWeight = f.at("group_weight");
  r.total = f.at("total");
  r.bound = f.at("bound");
  r.complete = f.at("complete");
  for (const auto& s : f.at("servers")) {
    r.servers.push_back(ServerPlacement{s.at("id"), s.at("host"), s.at("port"), s.at("drained"), s.at("settled"),
                                        s.at("candidate"), s.at("load"), s.at("groups"), s.at("placed")});
  }
  for (const auto& m : f.at("moves")) {
    r.moves.push_back(GroupMove{m.at("group"), m.at("weight"), m.at("controller"), m.at("target")});
  }
  return r;
}

Response responseFrom(int api, const json& f) {
  if (isErrorOnly(api, f)) return ErrorOnlyResponse{errorFrom(f.at("error"))};
  switch (static_cast<ApiKey>(api)) {
    case ApiKey::Heartbeat:
      return HeartbeatResponse{f.at("generation"), errorFrom(f.at("error"))};
    case ApiKey::CreateGroup:
      return CreateGroupResponse{f.at("group"), errorFrom(f.at("error")), brokerFrom(f.at("controller"))};
    case ApiKey::DeleteGroup:
      return DeleteGroupResponse{f.at("group"), errorFrom(f.at("error"))};
    case ApiKey::RegisterConsumer:
      return RegisterConsumerResponse{f.at("group"),
                                      f.at("consumer"),
                                      f.at("generation"),
                                      namesFrom(f.at("members")),
                                      partitionOffsetsFrom(f.at("partitions")),
                                      errorFrom(f.at("error"))};
    case ApiKey::ListGroups: {
      ListGroupsResponse r;
      for (const auto& g : f.at("groups")) {
        r.groups.push_back(GroupInfo{g.at("name"), errorFrom(g.at("error")), namesFrom(g.at("members")),
                                     namesFrom(g.at("topics")), brokerFrom(g.at("controller")),
                                     g.at("session_timeout"), g.at("generation"), g.at("ephemeral")});
      }
      r.error = errorFrom(f.at("error"));
      return r;
    }
    case ApiKey::LeaveGroup:
      return LeaveGroupResponse{errorFrom(f.at("error"))};
    case ApiKey::CommitOffsets:
      return CommitOffsetsResponse{partitionErrorsFrom(f.at("results")), errorFrom(f.at("error"))};
    case ApiKey::FetchOffsets:
      return FetchOffsetsResponse{partitionOffsetsFrom(f.at("offsets")), errorFrom(f.at("error"))};
    case ApiKey::RewindConsumer:
      return RewindConsumerResponse{partitionErrorsFrom(f.at("results")), errorFrom(f.at("error"))};
    case ApiKey::Authenticate:
      return AuthenticateResponse{errorFrom(f.at("error"))};
    case ApiKey::DrainServer:
      return DrainServerResponse{errorFrom(f.at("error"))};
    case ApiKey::DescribeGroup:
      return describeGroupFrom(f);
    case ApiKey::DescribeServers:
      return describeServersFrom(f);
  }
  throw std::runtime_error("no response layout for api " + std::to_string(api));
}

// ---- The test --------------------------------------------------------------------

json loadVectors() {
  std::ifstream in(GROUPCOORD_PROTOCOL_VECTORS);
  if (!in) return json();
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::optional<std::string> clientIdFrom(const json& v) {
  if (v.at("client_id").is_null()) return std::nullopt;
  return v.at("client_id").get<std::string>();
}

void checkRequestVector(const json& v, const std::vector<uint8_t>& frame) {
  const int api = v.at("api");
  const DecodedRequest d = decodeRequest(bodyOf(frame));
  EXPECT_EQ(static_cast<int>(d.header.apiKey), api);
  EXPECT_EQ(d.header.version, v.at("version").get<int16_t>());
  EXPECT_EQ(d.header.correlationId, v.at("correlation_id").get<int64_t>());
  EXPECT_EQ(d.header.clientId, clientIdFrom(v));

  if (!isKnownApi(static_cast<int16_t>(api))) {
    EXPECT_EQ(d.status, DecodeStatus::UnknownApi) << d.detail;
    EXPECT_TRUE(v.at("fields").empty());
    // The Request variant has no unknown API to encode; rebuild the header
    // by hand to confirm the fields above are the whole frame.
    Bytes again;
    again.requestHeader(api, v.at("version"), v.at("correlation_id"), d.header.clientId);
    EXPECT_EQ(toHex(again.frame()), v.at("hex").get<std::string>());
    return;
  }
  ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
  EXPECT_EQ(std::visit([](const auto& m) { return toJson(m); }, d.request), v.at("fields"));

  RequestHeader header;
  header.apiKey = static_cast<ApiKey>(api);
  header.version = v.at("version");
  header.correlationId = v.at("correlation_id");
  header.clientId = clientIdFrom(v);
  std::vector<uint8_t> encoded;
  encodeRequest(header, requestFrom(api, v.at("fields")), encoded);
  EXPECT_EQ(toHex(encoded), v.at("hex").get<std::string>());
}

void checkResponseVector(const json& v, const std::vector<uint8_t>& frame) {
  const int api = v.at("api");
  const DecodedResponse d = decodeResponse(static_cast<ApiKey>(api), bodyOf(frame));
  ASSERT_TRUE(d.ok) << d.detail;
  EXPECT_EQ(d.header.version, v.at("version").get<int16_t>());
  EXPECT_EQ(d.header.correlationId, v.at("correlation_id").get<int64_t>());
  EXPECT_EQ(std::holds_alternative<ErrorOnlyResponse>(d.response), isErrorOnly(api, v.at("fields")));
  EXPECT_EQ(std::visit([](const auto& m) { return toJson(m); }, d.response), v.at("fields"));

  ResponseHeader header{v.at("version"), v.at("correlation_id")};
  std::vector<uint8_t> encoded;
  encodeResponse(header, responseFrom(api, v.at("fields")), encoded);
  EXPECT_EQ(toHex(encoded), v.at("hex").get<std::string>());
}

TEST(Vectors, EveryVectorDecodesToItsFieldsAndEncodesBack) {
  const json doc = loadVectors();
  ASSERT_TRUE(doc.is_object()) << "cannot read " << GROUPCOORD_PROTOCOL_VECTORS;
  const json& vectors = doc.at("vectors");
  ASSERT_TRUE(vectors.is_array());

  std::set<std::pair<std::string, int>> covered;
  for (const json& v : vectors) {
    const std::string name = v.value("name", "?");
    SCOPED_TRACE(name);
    try {
      const auto frame = fromHex(v.at("hex").get<std::string>());
      ASSERT_TRUE(frame) << "bad hex";
      const std::string kind = v.at("kind");
      int32_t bodySize = -1;
      const int32_t minBody = kind == "request" ? kMinRequestBody : 10;
      ASSERT_EQ(peekFrame(*frame, kDefaultMaxFrameBytes, minBody, &bodySize), FrameStatus::Ready);
      ASSERT_EQ(static_cast<size_t>(bodySize) + 4, frame->size()) << "Size disagrees with the frame's length";
      covered.insert({kind, v.at("api").get<int>()});
      if (kind == "request") {
        checkRequestVector(v, *frame);
      } else {
        ASSERT_EQ(kind, "response");
        checkResponseVector(v, *frame);
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "vector does not have the expected shape: " << e.what();
    }
  }
  // The file covers every API both ways; a fixture that lost entries fails here.
  for (int api = 0; api < kApiCount; ++api) {
    EXPECT_TRUE(covered.count({"request", api})) << "no request vector for api " << api;
    EXPECT_TRUE(covered.count({"response", api})) << "no response vector for api " << api;
  }
  EXPECT_GE(vectors.size(), 26u);
}

// Version 1: every example decodes, at its version, to a message that
// encodes back to the same bytes; field values are checked by the
// hand-built tests (HandBytesV1).
TEST(Vectors, EveryVersionOneVectorDecodesAndEncodesBack) {
  std::ifstream in(GROUPCOORD_PROTOCOL_VECTORS_V1);
  ASSERT_TRUE(in) << "cannot read " << GROUPCOORD_PROTOCOL_VECTORS_V1;
  const json doc = json::parse(in, nullptr, false);
  ASSERT_TRUE(doc.is_object());
  std::set<std::pair<std::string, int>> covered;
  for (const json& v : doc.at("vectors")) {
    SCOPED_TRACE(v.value("name", "?"));
    const auto frame = fromHex(v.at("hex").get<std::string>());
    ASSERT_TRUE(frame);
    const int api = v.at("api");
    EXPECT_EQ(v.at("version"), 1);
    covered.insert({v.at("kind"), api});
    std::vector<uint8_t> again;
    if (v.at("kind") == "request") {
      const DecodedRequest d = decodeRequest(bodyOf(*frame));
      ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
      EXPECT_EQ(d.header.version, 1);
      EXPECT_EQ(static_cast<int>(apiKeyOf(d.request)), api);
      encodeRequest(d.header, d.request, again);
    } else {
      const DecodedResponse d = decodeResponse(static_cast<ApiKey>(api), bodyOf(*frame));
      ASSERT_TRUE(d.ok) << d.detail;
      EXPECT_EQ(d.header.version, 1);
      EXPECT_EQ(apiKeyOf(d.response), static_cast<ApiKey>(api));
      encodeResponse(d.header, d.response, again);
    }
    EXPECT_EQ(toHex(again), v.at("hex").get<std::string>());
  }
  for (ApiKey api : {ApiKey::CreateGroup, ApiKey::RegisterConsumer, ApiKey::ListGroups, ApiKey::DescribeGroup}) {
    EXPECT_TRUE(covered.count({"request", static_cast<int>(api)})) << apiName(api);
    EXPECT_TRUE(covered.count({"response", static_cast<int>(api)})) << apiName(api);
  }
}

// Version 2 (RegisterConsumer; ListGroups and DescribeGroup): the same, at
// version 2; the field values are checked by HandBytesV2, and here the
// Kafka protocol of the group answers.
TEST(Vectors, EveryVersionTwoVectorDecodesAndEncodesBack) {
  std::ifstream in(GROUPCOORD_PROTOCOL_VECTORS_V2);
  ASSERT_TRUE(in) << "cannot read " << GROUPCOORD_PROTOCOL_VECTORS_V2;
  const json doc = json::parse(in, nullptr, false);
  ASSERT_TRUE(doc.is_object());
  std::map<std::pair<std::string, int>, int> covered;
  for (const json& v : doc.at("vectors")) {
    SCOPED_TRACE(v.value("name", "?"));
    const auto frame = fromHex(v.at("hex").get<std::string>());
    ASSERT_TRUE(frame);
    const int api = v.at("api");
    EXPECT_EQ(v.at("version"), 2);
    ++covered[std::make_pair(v.at("kind").get<std::string>(), api)];
    std::vector<uint8_t> again;
    if (v.at("kind") == "request") {
      const DecodedRequest d = decodeRequest(bodyOf(*frame));
      ASSERT_EQ(d.status, DecodeStatus::Ok) << d.detail;
      EXPECT_EQ(d.header.version, 2);
      EXPECT_EQ(static_cast<int>(apiKeyOf(d.request)), api);
      encodeRequest(d.header, d.request, again);
    } else {
      const DecodedResponse d = decodeResponse(static_cast<ApiKey>(api), bodyOf(*frame));
      ASSERT_TRUE(d.ok) << d.detail;
      EXPECT_EQ(d.header.version, 2);
      if (const auto* list = std::get_if<ListGroupsResponse>(&d.response)) {
        ASSERT_EQ(list->groups.size(), 2u);
        EXPECT_TRUE(list->groups[0].kafka);
        EXPECT_EQ(list->groups[0].protocolType, "consumer");
        EXPECT_EQ(list->groups[0].protocolName, "cooperative-sticky");
        EXPECT_FALSE(list->groups[1].kafka);
        EXPECT_EQ(list->groups[1].protocolName, "");
      }
      if (const auto* described = std::get_if<DescribeGroupResponse>(&d.response)) {
        EXPECT_TRUE(described->kafka);
        EXPECT_EQ(described->protocolType, "consumer");
        EXPECT_EQ(described->protocolName, "range");
        ASSERT_EQ(described->members.size(), 1u);
        EXPECT_EQ(described->members[0].held.size(), 2u);
      }
      encodeResponse(d.header, d.response, again);
    }
    EXPECT_EQ(toHex(again), v.at("hex").get<std::string>());
  }
  auto seen = [&](const std::string& kind, ApiKey api) { return covered[std::make_pair(kind, static_cast<int>(api))]; };
  for (ApiKey api : {ApiKey::ListGroups, ApiKey::DescribeGroup}) {
    EXPECT_EQ(seen("request", api), 1) << apiName(api);
    EXPECT_EQ(seen("response", api), 1) << apiName(api);
  }
  EXPECT_EQ(seen("request", ApiKey::RegisterConsumer), 2);
  EXPECT_EQ(seen("response", ApiKey::RegisterConsumer), 2);
}

}  // namespace
}  // namespace groupcoord::protocol::testing
