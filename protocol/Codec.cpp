#include "protocol/Codec.h"

#include <array>
#include <bit>
#include <cstring>
#include <type_traits>
#include <utility>
#include <variant>

#include "protocol/Wire.h"

namespace groupcoord::protocol {

namespace {

using wire::Reader;
using wire::Writer;

// A response header: Version int16 + CorrelationId int64.
constexpr size_t kResponseHeaderBytes = 10;

// ---- Reading structures ------------------------------------------------------
// Each reader reads every field and reports only at the end: the Reader's
// failure is sticky, so a field after a failed one does nothing.

bool readErrorCode(Reader& r, ErrorCode& e, const char* field) {
  // Any int16 is kept: a newer server may answer a code this build does not
  // name, and the caller still sees a non-NONE error.
  int16_t v = 0;
  if (!r.readInt16(v, field)) return false;
  e = static_cast<ErrorCode>(v);
  return true;
}

bool readName(Reader& r, std::string& s) { return r.readString(s, "Name"); }

bool readBroker(Reader& r, Broker& b) {
  r.readInt32(b.brokerId, "BrokerId");
  r.readString(b.host, "Host");
  return r.readUint16(b.port, "Port");
}

bool readTopicPartition(Reader& r, TopicPartition& tp) {
  r.readString(tp.topic, "Topic");
  return r.readInt32(tp.partition, "Partition");
}

bool readPartitionOffset(Reader& r, PartitionOffset& po) {
  r.readString(po.topic, "Topic");
  r.readInt32(po.partition, "Partition");
  return r.readInt64(po.offset, "Offset");
}

bool readPartitionError(Reader& r, PartitionError& pe) {
  r.readString(pe.topic, "Topic");
  r.readInt32(pe.partition, "Partition");
  return readErrorCode(r, pe.error, "ErrorCode");
}

bool readNames(Reader& r, std::vector<std::string>& v, const char* field) {
  return wire::readArray(r, v, wire::kMinStringBytes, field, readName);
}

bool readMode(Reader& r, AssignmentMode& m) {
  int8_t v = 0;
  if (!r.readEnum8(v, static_cast<int8_t>(AssignmentMode::CLIENT), "AssignmentMode")) return false;
  m = static_cast<AssignmentMode>(v);
  return true;
}

bool readGroupInfo(Reader& r, GroupInfo& g) {
  r.readString(g.name, "GroupName");
  readErrorCode(r, g.error, "ErrorCode");
  readNames(r, g.members, "GroupMembers");
  readNames(r, g.topics, "Topics");
  readBroker(r, g.controller);
  r.readInt64(g.sessionTimeoutMs, "SessionTimeout");
  r.readInt64(g.generation, "Generation");
  return r.readBool(g.ephemeral, "Ephemeral");
}

bool readGroupInfoV1(Reader& r, GroupInfo& g) {
  readGroupInfo(r, g);
  return readMode(r, g.mode);
}

bool readMemberMetadata(Reader& r, MemberMetadata& m) {
  r.readString(m.consumerId, "ConsumerId");
  r.readBytes(m.metadata, "Metadata");
  return r.readString(m.rack, "Rack");
}

bool readTopicState(Reader& r, TopicState& t) {
  r.readString(t.topic, "Topic");
  return r.readInt32(t.partitions, "Partitions");
}

bool readMemberState(Reader& r, MemberState& m) {
  r.readString(m.consumerId, "ConsumerId");
  r.readString(m.clientId, "ClientId");
  r.readString(m.host, "Host");
  r.readUint16(m.port, "Port");
  r.readInt64(m.joinedAtMs, "JoinedAt");
  r.readInt64(m.lastHeardMs, "LastHeard");
  wire::readArray(r, m.held, wire::kMinTopicPartitionBytes, "Held", readTopicPartition);
  return wire::readArray(r, m.waiting, wire::kMinTopicPartitionBytes, "Waiting", readTopicPartition);
}

bool readMemberStateV1(Reader& r, MemberState& m) {
  readMemberState(r, m);
  r.readBytes(m.metadata, "Metadata");
  return r.readString(m.rack, "Rack");
}

bool readRebalanceEvent(Reader& r, RebalanceEvent& e) {
  r.readInt64(e.timeMs, "Time");
  r.readInt64(e.generation, "Generation");
  int16_t reason = 0;
  // Any int16 is kept, as for ErrorCode: a newer server may know more reasons.
  if (r.readInt16(reason, "Reason")) e.reason = static_cast<RebalanceReason>(reason);
  r.readInt32(e.count, "Count");
  r.readString(e.consumerId, "ConsumerId");
  r.readString(e.clientId, "ClientId");
  r.readString(e.host, "Host");
  r.readString(e.subject, "Subject");
  r.readInt64(e.value, "Value");
  return r.readString(e.detail, "Detail");
}

bool readServerPlacement(Reader& r, ServerPlacement& s) {
  r.readInt32(s.id, "ServerId");
  r.readString(s.host, "Host");
  r.readInt32(s.port, "Port");
  r.readBool(s.drained, "Drained");
  r.readBool(s.settled, "Settled");
  r.readBool(s.candidate, "Candidate");
  r.readInt64(s.load, "Load");
  r.readInt32(s.groups, "Groups");
  return r.readInt64(s.placed, "Placed");
}

bool readGroupMove(Reader& r, GroupMove& m) {
  r.readString(m.group, "ConsumerGroup");
  r.readInt64(m.weight, "Weight");
  r.readInt32(m.controller, "Controller");
  return r.readInt32(m.target, "Target");
}

// ---- Request bodies ------------------------------------------------------------

bool readBody(Reader& r, HeartbeatRequest& m) {
  r.readString(m.group, "ConsumerGroup");
  r.readString(m.consumerId, "ConsumerId");
  return r.readInt64(m.generation, "Generation");
}

bool readBody(Reader& r, CreateGroupRequest& m) {
  r.readString(m.group, "ConsumerGroup");
  r.readInt64(m.sessionTimeoutMs, "SessionTimeout");
  readNames(r, m.topics, "Topics");
  return r.readBool(m.ephemeral, "Ephemeral");
}

// Version 1 adds AssignmentMode (int8: 0 server, 1 client).
bool readBody(Reader& r, CreateGroupRequest& m, int16_t version) {
  readBody(r, m);
  return version < 1 || readMode(r, m.mode);
}

bool readBody(Reader& r, DeleteGroupRequest& m) { return r.readString(m.group, "ConsumerGroup"); }

bool readBody(Reader& r, RegisterConsumerRequest& m) {
  r.readString(m.group, "ConsumerGroup");
  r.readString(m.consumerId, "ConsumerId");
  return wire::readArray(r, m.owned, wire::kMinTopicPartitionBytes, "OwnedPartitions", readTopicPartition);
}

// Version 1 adds Metadata (bytes) and Rack (string).
bool readBody(Reader& r, RegisterConsumerRequest& m, int16_t version) {
  readBody(r, m);
  if (version < 1) return r.ok();
  r.readBytes(m.metadata, "Metadata");
  r.readString(m.rack, "Rack");
  if (version < 2) return r.ok();
  return r.readInt64(m.knownGeneration, "KnownGeneration");
}

bool readBody(Reader& r, ListGroupsRequest& m) { return readNames(r, m.groups, "ConsumerGroups"); }

bool readBody(Reader& r, LeaveGroupRequest& m) {
  r.readString(m.group, "ConsumerGroup");
  return r.readString(m.consumerId, "ConsumerId");
}

bool readBody(Reader& r, CommitOffsetsRequest& m) {
  r.readString(m.group, "ConsumerGroup");
  r.readString(m.consumerId, "ConsumerId");
  r.readInt64(m.generation, "Generation");
  return wire::readArray(r, m.offsets, wire::kMinPartitionOffsetBytes, "Offsets", readPartitionOffset);
}

bool readBody(Reader& r, FetchOffsetsRequest& m) {
  r.readString(m.group, "ConsumerGroup");
  return readNames(r, m.topics, "Topics");
}

bool readBody(Reader& r, RewindConsumerRequest& m) {
  r.readString(m.group, "ConsumerGroup");
  return wire::readArray(r, m.offsets, wire::kMinPartitionOffsetBytes, "Offsets", readPartitionOffset);
}

// Version 1: Mechanism (string) and Message (bytes) instead of User and Secret.
bool readBody(Reader& r, AuthenticateRequest& m, int16_t version) {
  if (version >= 1) {
    r.readString(m.mechanism, "Mechanism");
    return r.readBytes(m.message, "Message");
  }
  r.readString(m.user, "User");
  return r.readString(m.secret, "Secret");
}

// Drain is a bool on the wire: a byte other than 0 or 1 is malformed.
bool readBody(Reader& r, DrainServerRequest& m) {
  r.readInt32(m.serverId, "ServerId");
  return r.readBool(m.drain, "Drain");
}

bool readBody(Reader& r, DescribeGroupRequest& m) { return r.readString(m.group, "ConsumerGroup"); }

// No field: the header is the whole request.
bool readBody(Reader& r, DescribeServersRequest&) { return r.ok(); }

// ---- Response bodies -----------------------------------------------------------

bool readBody(Reader& r, HeartbeatResponse& m) {
  r.readInt64(m.generation, "ControllerGeneration");
  return readErrorCode(r, m.error, "ErrorCode");
}

bool readBody(Reader& r, CreateGroupResponse& m) {
  r.readString(m.group, "ConsumerGroup");
  readErrorCode(r, m.error, "ErrorCode");
  return readBroker(r, m.controller);
}

bool readBody(Reader& r, DeleteGroupResponse& m) {
  r.readString(m.group, "ConsumerGroup");
  return readErrorCode(r, m.error, "ErrorCode");
}

bool readBody(Reader& r, RegisterConsumerResponse& m) {
  r.readString(m.group, "ConsumerGroup");
  r.readString(m.consumerId, "ConsumerId");
  r.readInt64(m.generation, "Generation");
  readNames(r, m.members, "GroupMembers");
  wire::readArray(r, m.partitions, wire::kMinPartitionOffsetBytes, "PartitionsToOwn", readPartitionOffset);
  return readErrorCode(r, m.error, "ErrorCode");
}

// Version 1 adds AssignmentMode and MemberData ([MemberMetadata]).
bool readBody(Reader& r, RegisterConsumerResponse& m, int16_t version) {
  readBody(r, m);
  if (version < 1) return r.ok();
  readMode(r, m.mode);
  wire::readArray(r, m.memberData, wire::kMinMemberMetadataBytes, "MemberData", readMemberMetadata);
  if (version < 2) return r.ok();
  r.readInt32(m.memberCount, "MemberCount");
  r.readInt64(m.listBase, "ListBase");
  return readNames(r, m.removedMembers, "RemovedMembers");
}

// Version 1: each GroupInfo ends with AssignmentMode.
bool readBody(Reader& r, ListGroupsResponse& m, int16_t version) {
  if (version >= 1) {
    wire::readArray(r, m.groups, wire::kMinGroupInfoBytes + 1, "GroupsInfo", readGroupInfoV1);
  } else {
    wire::readArray(r, m.groups, wire::kMinGroupInfoBytes, "GroupsInfo", readGroupInfo);
  }
  return readErrorCode(r, m.error, "ErrorCode");
}

bool readBody(Reader& r, LeaveGroupResponse& m) { return readErrorCode(r, m.error, "ErrorCode"); }

bool readBody(Reader& r, CommitOffsetsResponse& m) {
  wire::readArray(r, m.results, wire::kMinPartitionErrorBytes, "Results", readPartitionError);
  return readErrorCode(r, m.error, "ErrorCode");
}

bool readBody(Reader& r, FetchOffsetsResponse& m) {
  wire::readArray(r, m.offsets, wire::kMinPartitionOffsetBytes, "Offsets", readPartitionOffset);
  return readErrorCode(r, m.error, "ErrorCode");
}

bool readBody(Reader& r, RewindConsumerResponse& m) {
  wire::readArray(r, m.results, wire::kMinPartitionErrorBytes, "Results", readPartitionError);
  return readErrorCode(r, m.error, "ErrorCode");
}

// Version 1 adds Message (bytes).
bool readBody(Reader& r, AuthenticateResponse& m, int16_t version) {
  readErrorCode(r, m.error, "ErrorCode");
  return version < 1 || r.readBytes(m.message, "Message");
}

bool readBody(Reader& r, DrainServerResponse& m) { return readErrorCode(r, m.error, "ErrorCode"); }

bool readBody(Reader& r, DescribeGroupResponse& m, int16_t version) {
  r.readString(m.group, "ConsumerGroup");
  readErrorCode(r, m.error, "ErrorCode");
  readBroker(r, m.controller);
  int8_t state = 0;
  if (r.readInt8(state, "State")) m.state = static_cast<GroupState>(state);
  r.readInt64(m.sessionTimeoutMs, "SessionTimeout");
  r.readBool(m.ephemeral, "Ephemeral");
  r.readInt64(m.generation, "Generation");
  wire::readArray(r, m.topics, wire::kMinTopicStateBytes, "Topics", readTopicState);
  // Version 1: each MemberState ends with Metadata and Rack; the answer with AssignmentMode.
  if (version >= 1) {
    wire::readArray(r, m.members, wire::kMinMemberStateBytes + 6, "Members", readMemberStateV1);
  } else {
    wire::readArray(r, m.members, wire::kMinMemberStateBytes, "Members", readMemberState);
  }
  wire::readArray(r, m.offsets, wire::kMinPartitionOffsetBytes, "Offsets", readPartitionOffset);
  wire::readArray(r, m.history, wire::kMinRebalanceEventBytes, "History", readRebalanceEvent);
  return version < 1 || readMode(r, m.mode);
}

bool readBody(Reader& r, DescribeServersResponse& m) {
  readErrorCode(r, m.error, "ErrorCode");
  r.readInt32(m.server, "ServerId");
  r.readInt32(m.epsilonPermille, "EpsilonPermille");
  r.readInt32(m.marginPermille, "MarginPermille");
  r.readString(m.weighting, "Weighting");
  r.readInt64(m.groupWeight, "GroupWeight");
  r.readInt64(m.total, "Total");
  r.readInt64(m.bound, "Bound");
  r.readBool(m.complete, "Complete");
  wire::readArray(r, m.servers, wire::kMinServerPlacementBytes, "Servers", readServerPlacement);
  return wire::readArray(r, m.moves, wire::kMinGroupMoveBytes, "Moves", readGroupMove);
}

bool readBody(Reader& r, ErrorOnlyResponse& m) { return readErrorCode(r, m.error, "ErrorCode"); }

// The bodies that are the same in every version.
template <typename T>
bool readBody(Reader& r, T& m, int16_t /*version*/) {
  return readBody(r, m);
}

// Decodes a `T` of `version` into `v` from r, strictly (no trailing bytes).
template <typename T, typename Variant>
bool decodeAs(Reader& r, Variant& v, int16_t version = 0) {
  auto& m = v.template emplace<T>();
  readBody(r, m, version);
  return r.expectEnd();
}

// The alternative of Variant whose kApi is K (Messages.h asserts there is
// exactly one).
template <typename Variant, ApiKey K, size_t I = 0>
struct AlternativeFor {
  using Candidate = std::variant_alternative_t<I, Variant>;
  static constexpr bool kMatch = [] {
    if constexpr (ApiMessage<Candidate>) {
      return Candidate::kApi == K;
    } else {
      return false;
    }
  }();
  using type =
      typename std::conditional_t<kMatch, std::type_identity<Candidate>, AlternativeFor<Variant, K, I + 1>>::type;
};

template <ApiKey K, typename Variant>
bool decodeApi(Reader& r, Variant& v, int16_t version) {
  return decodeAs<typename AlternativeFor<Variant, K>::type>(r, v, version);
}

// Decodes the alternative of `v` (a Request or a Response) that belongs to
// the ApiKey `key` (0 .. kApiCount-1).
template <typename Variant>
bool decodeByKey(Reader& r, Variant& v, int16_t key, int16_t version) {
  switch (static_cast<ApiKey>(key)) {
    case ApiKey::Heartbeat:
      return decodeApi<ApiKey::Heartbeat>(r, v, version);
    case ApiKey::CreateGroup:
      return decodeApi<ApiKey::CreateGroup>(r, v, version);
    case ApiKey::DeleteGroup:
      return decodeApi<ApiKey::DeleteGroup>(r, v, version);
    case ApiKey::RegisterConsumer:
      return decodeApi<ApiKey::RegisterConsumer>(r, v, version);
    case ApiKey::ListGroups:
      return decodeApi<ApiKey::ListGroups>(r, v, version);
    case ApiKey::LeaveGroup:
      return decodeApi<ApiKey::LeaveGroup>(r, v, version);
    case ApiKey::CommitOffsets:
      return decodeApi<ApiKey::CommitOffsets>(r, v, version);
    case ApiKey::FetchOffsets:
      return decodeApi<ApiKey::FetchOffsets>(r, v, version);
    case ApiKey::RewindConsumer:
      return decodeApi<ApiKey::RewindConsumer>(r, v, version);
    case ApiKey::Authenticate:
      return decodeApi<ApiKey::Authenticate>(r, v, version);
    case ApiKey::DrainServer:
      return decodeApi<ApiKey::DrainServer>(r, v, version);
    case ApiKey::DescribeGroup:
      return decodeApi<ApiKey::DescribeGroup>(r, v, version);
    case ApiKey::DescribeServers:
      return decodeApi<ApiKey::DescribeServers>(r, v, version);
  }
  return false;
}
static_assert(kApiCount == 13, "decodeByKey covers every ApiKey");

// ---- Writing -------------------------------------------------------------------

void writeErrorCode(Writer& w, ErrorCode e) { w.writeInt16(static_cast<int16_t>(e)); }

void writeName(Writer& w, const std::string& s) { w.writeString(s); }

void writeBroker(Writer& w, const Broker& b) {
  w.writeInt32(b.brokerId);
  w.writeString(b.host);
  w.writeUint16(b.port);
}

void writeTopicPartition(Writer& w, const TopicPartition& tp) {
  w.writeString(tp.topic);
  w.writeInt32(tp.partition);
}

void writePartitionOffset(Writer& w, const PartitionOffset& po) {
  w.writeString(po.topic);
  w.writeInt32(po.partition);
  w.writeInt64(po.offset);
}

void writePartitionError(Writer& w, const PartitionError& pe) {
  w.writeString(pe.topic);
  w.writeInt32(pe.partition);
  writeErrorCode(w, pe.error);
}

void writeNames(Writer& w, const std::vector<std::string>& v) { wire::writeArray(w, v, writeName); }

void writeMode(Writer& w, AssignmentMode m) { w.writeInt8(static_cast<int8_t>(m)); }

void writeMemberMetadata(Writer& w, const MemberMetadata& m) {
  w.writeString(m.consumerId);
  w.writeBytes(m.metadata);
  w.writeString(m.rack);
}

void writeGroupInfo(Writer& w, const GroupInfo& g) {
  w.writeString(g.name);
  writeErrorCode(w, g.error);
  writeNames(w, g.members);
  writeNames(w, g.topics);
  writeBroker(w, g.controller);
  w.writeInt64(g.sessionTimeoutMs);
  w.writeInt64(g.generation);
  w.writeBool(g.ephemeral);
}

void writeTopicState(Writer& w, const TopicState& t) {
  w.writeString(t.topic);
  w.writeInt32(t.partitions);
}

void writeMemberStateV1(Writer& w, const MemberState& m);

void writeMemberState(Writer& w, const MemberState& m) {
  w.writeString(m.consumerId);
  w.writeString(m.clientId);
  w.writeString(m.host);
  w.writeUint16(m.port);
  w.writeInt64(m.joinedAtMs);
  w.writeInt64(m.lastHeardMs);
  wire::writeArray(w, m.held, writeTopicPartition);
  wire::writeArray(w, m.waiting, writeTopicPartition);
}

void writeMemberStateV1(Writer& w, const MemberState& m) {
  writeMemberState(w, m);
  w.writeBytes(m.metadata);
  w.writeString(m.rack);
}

void writeRebalanceEvent(Writer& w, const RebalanceEvent& e) {
  w.writeInt64(e.timeMs);
  w.writeInt64(e.generation);
  w.writeInt16(static_cast<int16_t>(e.reason));
  w.writeInt32(e.count);
  w.writeString(e.consumerId);
  w.writeString(e.clientId);
  w.writeString(e.host);
  w.writeString(e.subject);
  w.writeInt64(e.value);
  w.writeString(e.detail);
}

void writeServerPlacement(Writer& w, const ServerPlacement& s) {
  w.writeInt32(s.id);
  w.writeString(s.host);
  w.writeInt32(s.port);
  w.writeBool(s.drained);
  w.writeBool(s.settled);
  w.writeBool(s.candidate);
  w.writeInt64(s.load);
  w.writeInt32(s.groups);
  w.writeInt64(s.placed);
}

void writeGroupMove(Writer& w, const GroupMove& m) {
  w.writeString(m.group);
  w.writeInt64(m.weight);
  w.writeInt32(m.controller);
  w.writeInt32(m.target);
}

void writeBody(Writer& w, const HeartbeatRequest& m) {
  w.writeString(m.group);
  w.writeString(m.consumerId);
  w.writeInt64(m.generation);
}

void writeBody(Writer& w, const CreateGroupRequest& m) {
  w.writeString(m.group);
  w.writeInt64(m.sessionTimeoutMs);
  writeNames(w, m.topics);
  w.writeBool(m.ephemeral);
}

void writeBody(Writer& w, const CreateGroupRequest& m, int16_t version) {
  writeBody(w, m);
  if (version >= 1) writeMode(w, m.mode);
}

void writeBody(Writer& w, const DeleteGroupRequest& m) { w.writeString(m.group); }

void writeBody(Writer& w, const RegisterConsumerRequest& m) {
  w.writeString(m.group);
  w.writeString(m.consumerId);
  wire::writeArray(w, m.owned, writeTopicPartition);
}

void writeBody(Writer& w, const RegisterConsumerRequest& m, int16_t version) {
  writeBody(w, m);
  if (version < 1) return;
  w.writeBytes(m.metadata);
  w.writeString(m.rack);
  if (version >= 2) w.writeInt64(m.knownGeneration);
}

void writeBody(Writer& w, const ListGroupsRequest& m) { writeNames(w, m.groups); }

void writeBody(Writer& w, const LeaveGroupRequest& m) {
  w.writeString(m.group);
  w.writeString(m.consumerId);
}

void writeBody(Writer& w, const CommitOffsetsRequest& m) {
  w.writeString(m.group);
  w.writeString(m.consumerId);
  w.writeInt64(m.generation);
  wire::writeArray(w, m.offsets, writePartitionOffset);
}

void writeBody(Writer& w, const FetchOffsetsRequest& m) {
  w.writeString(m.group);
  writeNames(w, m.topics);
}

void writeBody(Writer& w, const RewindConsumerRequest& m) {
  w.writeString(m.group);
  wire::writeArray(w, m.offsets, writePartitionOffset);
}

void writeBody(Writer& w, const AuthenticateRequest& m, int16_t version) {
  if (version >= 1) {
    w.writeString(m.mechanism);
    w.writeBytes(m.message);
    return;
  }
  w.writeString(m.user);
  w.writeString(m.secret);
}

void writeBody(Writer& w, const DrainServerRequest& m) {
  w.writeInt32(m.serverId);
  w.writeBool(m.drain);
}

void writeBody(Writer& w, const DescribeGroupRequest& m) { w.writeString(m.group); }

void writeBody(Writer&, const DescribeServersRequest&) {}

void writeBody(Writer& w, const HeartbeatResponse& m) {
  w.writeInt64(m.generation);
  writeErrorCode(w, m.error);
}

void writeBody(Writer& w, const CreateGroupResponse& m) {
  w.writeString(m.group);
  writeErrorCode(w, m.error);
  writeBroker(w, m.controller);
}

void writeBody(Writer& w, const DeleteGroupResponse& m) {
  w.writeString(m.group);
  writeErrorCode(w, m.error);
}

void writeBody(Writer& w, const RegisterConsumerResponse& m) {
  w.writeString(m.group);
  w.writeString(m.consumerId);
  w.writeInt64(m.generation);
  writeNames(w, m.members);
  wire::writeArray(w, m.partitions, writePartitionOffset);
  writeErrorCode(w, m.error);
}

void writeBody(Writer& w, const RegisterConsumerResponse& m, int16_t version) {
  writeBody(w, m);
  if (version < 1) return;
  writeMode(w, m.mode);
  wire::writeArray(w, m.memberData, writeMemberMetadata);
  if (version < 2) return;
  w.writeInt32(m.memberCount);
  w.writeInt64(m.listBase);
  writeNames(w, m.removedMembers);
}

void writeBody(Writer& w, const ListGroupsResponse& m, int16_t version) {
  if (version >= 1) {
    wire::writeArray(w, m.groups, [](Writer& out, const GroupInfo& g) {
      writeGroupInfo(out, g);
      writeMode(out, g.mode);
    });
  } else {
    wire::writeArray(w, m.groups, writeGroupInfo);
  }
  writeErrorCode(w, m.error);
}

void writeBody(Writer& w, const LeaveGroupResponse& m) { writeErrorCode(w, m.error); }

void writeBody(Writer& w, const CommitOffsetsResponse& m) {
  wire::writeArray(w, m.results, writePartitionError);
  writeErrorCode(w, m.error);
}

void writeBody(Writer& w, const FetchOffsetsResponse& m) {
  wire::writeArray(w, m.offsets, writePartitionOffset);
  writeErrorCode(w, m.error);
}

void writeBody(Writer& w, const RewindConsumerResponse& m) {
  wire::writeArray(w, m.results, writePartitionError);
  writeErrorCode(w, m.error);
}

// At a version this codec does not speak, an answer can only be the
// error-only one (decodeResponse's 2-byte path): it is written back as such.
void writeBody(Writer& w, const AuthenticateResponse& m, int16_t version) {
  writeErrorCode(w, m.error);
  if (version >= 1 && version <= maxVersion(ApiKey::Authenticate)) w.writeBytes(m.message);
}

void writeBody(Writer& w, const DrainServerResponse& m) { writeErrorCode(w, m.error); }

void writeBody(Writer& w, const DescribeGroupResponse& m, int16_t version) {
  w.writeString(m.group);
  writeErrorCode(w, m.error);
  writeBroker(w, m.controller);
  w.writeInt8(static_cast<int8_t>(m.state));
  w.writeInt64(m.sessionTimeoutMs);
  w.writeBool(m.ephemeral);
  w.writeInt64(m.generation);
  wire::writeArray(w, m.topics, writeTopicState);
  wire::writeArray(w, m.members, version >= 1 ? writeMemberStateV1 : writeMemberState);
  wire::writeArray(w, m.offsets, writePartitionOffset);
  wire::writeArray(w, m.history, writeRebalanceEvent);
  if (version >= 1) writeMode(w, m.mode);
}

void writeBody(Writer& w, const DescribeServersResponse& m) {
  writeErrorCode(w, m.error);
  w.writeInt32(m.server);
  w.writeInt32(m.epsilonPermille);
  w.writeInt32(m.marginPermille);
  w.writeString(m.weighting);
  w.writeInt64(m.groupWeight);
  w.writeInt64(m.total);
  w.writeInt64(m.bound);
  w.writeBool(m.complete);
  wire::writeArray(w, m.servers, writeServerPlacement);
  wire::writeArray(w, m.moves, writeGroupMove);
}

void writeBody(Writer& w, const ErrorOnlyResponse& m) { writeErrorCode(w, m.error); }

// The bodies that are the same in every version.
template <typename T>
void writeBody(Writer& w, const T& m, int16_t /*version*/) {
  writeBody(w, m);
}

// ---- Names ---------------------------------------------------------------------

constexpr size_t kMaxNameBytes = 249;

// [a-zA-Z0-9._-] as a table: names are checked on every request.
constexpr std::array<bool, 256> kNameChars = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[static_cast<size_t>(c)] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                                c == '.' || c == '_' || c == '-';
  }
  return t;
}();

bool isNameChar(char c) { return kNameChars[static_cast<unsigned char>(c)]; }

// Group first, then the member, then topics: the first that fails is the answer.
ErrorCode groupError(const std::string& group) {
  return isValidName(group) ? ErrorCode::NONE : ErrorCode::INVALID_GROUP_NAME;
}

ErrorCode groupAndMemberError(const std::string& group, const std::string& consumerId) {
  if (!isValidName(group)) return ErrorCode::INVALID_GROUP_NAME;
  if (!isValidName(consumerId)) return ErrorCode::INVALID_CONSUMER_ID;
  return ErrorCode::NONE;
}

const std::string& topicOf(const std::string& topic) { return topic; }
const std::string& topicOf(const TopicPartition& tp) { return tp.topic; }
const std::string& topicOf(const PartitionOffset& po) { return po.topic; }

template <typename Item>
ErrorCode topicsError(const std::vector<Item>& items) {
  for (const auto& item : items) {
    if (!isValidName(topicOf(item))) return ErrorCode::INVALID_GROUP_NAME;
  }
  return ErrorCode::NONE;
}

ErrorCode namesError(const HeartbeatRequest& m) { return groupAndMemberError(m.group, m.consumerId); }

ErrorCode namesError(const CreateGroupRequest& m) {
  const ErrorCode e = groupError(m.group);
  return e != ErrorCode::NONE ? e : topicsError(m.topics);
}

ErrorCode namesError(const DeleteGroupRequest& m) { return groupError(m.group); }

ErrorCode namesError(const RegisterConsumerRequest& m) {
  // An empty ConsumerId asks for a new member.
  const ErrorCode e = m.consumerId.empty() ? groupError(m.group) : groupAndMemberError(m.group, m.consumerId);
  return e != ErrorCode::NONE ? e : topicsError(m.owned);
}

// Each named group is answered in its own GroupInfo, by the server.
ErrorCode namesError(const ListGroupsRequest&) { return ErrorCode::NONE; }

ErrorCode namesError(const LeaveGroupRequest& m) { return groupAndMemberError(m.group, m.consumerId); }

ErrorCode namesError(const CommitOffsetsRequest& m) {
  const ErrorCode e = groupAndMemberError(m.group, m.consumerId);
  return e != ErrorCode::NONE ? e : topicsError(m.offsets);
}

ErrorCode namesError(const FetchOffsetsRequest& m) {
  const ErrorCode e = groupError(m.group);
  return e != ErrorCode::NONE ? e : topicsError(m.topics);
}

ErrorCode namesError(const RewindConsumerRequest& m) {
  const ErrorCode e = groupError(m.group);
  return e != ErrorCode::NONE ? e : topicsError(m.offsets);
}

// A user name is never a path; an unknown or malformed one is NOT_AUTHORIZED.
ErrorCode namesError(const AuthenticateRequest&) { return ErrorCode::NONE; }

// No name, but one number the codec can judge alone: server ids are 0 or
// more (groupcoordd refuses a negative server.id), so a negative one names
// no server. Refused like a bad name: the API's full response, before
// anything reaches ZooKeeper.
ErrorCode namesError(const DrainServerRequest& m) {
  return m.serverId < 0 ? ErrorCode::INVALID_REQUEST : ErrorCode::NONE;
}

ErrorCode namesError(const DescribeGroupRequest& m) { return groupError(m.group); }

// No name, no value.
ErrorCode namesError(const DescribeServersRequest&) { return ErrorCode::NONE; }

}  // namespace

// ---- Framing -------------------------------------------------------------------

FrameStatus peekFrame(std::span<const uint8_t> buffered, int32_t maxFrameBytes, int32_t minBody, int32_t* bodySize) {
  if (buffered.size() < 4) return FrameStatus::NeedMore;
  const uint32_t raw = (uint32_t{buffered[0]} << 24) | (uint32_t{buffered[1]} << 16) | (uint32_t{buffered[2]} << 8) |
                       uint32_t{buffered[3]};
  const auto size = static_cast<int32_t>(raw);
  if (size < 0) return FrameStatus::TooLarge;
  if (size < minBody) return FrameStatus::TooSmall;
  if (size > maxFrameBytes) return FrameStatus::TooLarge;
  if (bodySize) *bodySize = size;
  if (buffered.size() - 4 < static_cast<size_t>(size)) return FrameStatus::NeedMore;
  return FrameStatus::Ready;
}

// ---- Requests ------------------------------------------------------------------

DecodedRequest decodeRequest(std::span<const uint8_t> body) {
  DecodedRequest out;
  Reader r(body);
  int16_t key = 0;
  // Every status carries ApiKey, Version and CorrelationId: read them even
  // from a body too short to be a request, as far as it goes.
  if (r.readInt16(key, "ApiKey")) out.header.apiKey = static_cast<ApiKey>(key);
  r.readInt16(out.header.version, "Version");
  r.readInt64(out.header.correlationId, "CorrelationId");
  if (body.size() < static_cast<size_t>(kMinRequestBody)) {
    out.status = DecodeStatus::InvalidRequest;
    out.detail = "request body of " + std::to_string(body.size()) + " bytes, shorter than the " +
                 std::to_string(kMinRequestBody) + "-byte request header";
    return out;
  }
  // The ClientId is only for the log: keep it when it is well-formed and
  // within bounds, whatever the rest of the request turns out to be.
  std::optional<std::string> clientId;
  const bool clientIdRead = r.readNullableString(clientId, "ClientId");
  const bool clientIdFits = clientIdRead && (!clientId || clientId->size() <= kMaxClientIdBytes);
  if (clientIdFits) out.header.clientId = std::move(clientId);

  if (!isKnownApi(key)) {
    out.status = DecodeStatus::UnknownApi;
    out.detail = "unknown ApiKey " + std::to_string(key);
    return out;
  }
  if (out.header.version < 0 || out.header.version > maxVersion(out.header.apiKey)) {
    out.status = DecodeStatus::UnsupportedVersion;
    out.detail = std::string(apiName(out.header.apiKey)) + " version " + std::to_string(out.header.version) +
                 " is not supported (this codec speaks 0 to " + std::to_string(maxVersion(out.header.apiKey)) + ")";
    return out;
  }
  if (!clientIdRead) {
    out.status = DecodeStatus::InvalidRequest;
    out.detail = r.describeFailure();
    return out;
  }
  if (!clientIdFits) {
    out.status = DecodeStatus::InvalidRequest;
    out.detail = "ClientId of " + std::to_string(clientId->size()) + " bytes, longer than " +
                 std::to_string(kMaxClientIdBytes);
    return out;
  }
  if (!decodeByKey(r, out.request, key, out.header.version)) {
    out.status = DecodeStatus::InvalidRequest;
    out.detail = std::string(apiName(out.header.apiKey)) + " request: " + r.describeFailure();
    return out;
  }
  out.status = DecodeStatus::Ok;
  return out;
}

bool peekHeartbeat(std::span<const uint8_t> body, HeartbeatView& out) {
  const uint8_t* p = body.data();
  const size_t size = body.size();
  if (size < static_cast<size_t>(kMinRequestBody)) return false;
  auto be16 = [p](size_t at) { return static_cast<int16_t>((p[at] << 8) | p[at + 1]); };
  auto be64 = [p](size_t at) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v = (v << 8) | p[at + i];
    return static_cast<int64_t>(v);
  };
  if (be16(0) != static_cast<int16_t>(ApiKey::Heartbeat)) return false;
  out.version = be16(2);
  if (out.version < 0 || out.version > maxVersion(ApiKey::Heartbeat)) return false;
  out.correlationId = be64(4);
  size_t pos = 12;
  // ClientId: nullable, at most kMaxClientIdBytes; skipped (a heartbeat's
  // answer does not depend on it).
  const int16_t clientId = be16(pos);
  pos += 2;
  if (clientId < -1 || clientId > static_cast<int16_t>(kMaxClientIdBytes)) return false;
  if (clientId > 0) {
    if (size - pos < static_cast<size_t>(clientId)) return false;
    pos += static_cast<size_t>(clientId);
  }
  auto name = [&](std::string_view& v) {
    if (size - pos < 2) return false;
    const int16_t len = be16(pos);
    pos += 2;
    if (len < 0 || size - pos < static_cast<size_t>(len)) return false;
    v = std::string_view(reinterpret_cast<const char*>(p + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
    return isValidName(v);
  };
  if (!name(out.group) || !name(out.consumerId)) return false;
  if (size - pos != 8) return false;  // the Generation, and nothing after it
  out.generation = be64(pos);
  return true;
}

void encodeRequest(const RequestHeader& header, const Request& request, std::vector<uint8_t>& out) {
  Writer w(out);
  const size_t frame = w.beginFrame();
  w.writeInt16(static_cast<int16_t>(apiKeyOf(request)));
  w.writeInt16(header.version);
  w.writeInt64(header.correlationId);
  w.writeNullableString(header.clientId);
  std::visit([&w, version = header.version](const auto& m) { writeBody(w, m, version); }, request);
  w.endFrame(frame);
}

// ---- Responses -----------------------------------------------------------------

void appendHeartbeatResponse(int16_t version, int64_t correlationId, const HeartbeatResponse& response,
                             std::vector<uint8_t>& out) {
  // Size int32 (20), Version int16, CorrelationId int64, Generation int64,
  // ErrorCode int16: docs/protocol.md, Heartbeat.
  static_assert(std::endian::native == std::endian::little, "the byte swaps below assume a little-endian host");
  constexpr size_t kBytes = 24;
  uint8_t frame[kBytes];
  const uint32_t size = __builtin_bswap32(static_cast<uint32_t>(kBytes - 4));
  const uint16_t ver = __builtin_bswap16(static_cast<uint16_t>(version));
  const uint64_t corr = __builtin_bswap64(static_cast<uint64_t>(correlationId));
  const uint64_t gen = __builtin_bswap64(static_cast<uint64_t>(response.generation));
  const uint16_t err = __builtin_bswap16(static_cast<uint16_t>(static_cast<int16_t>(response.error)));
  std::memcpy(frame, &size, 4);
  std::memcpy(frame + 4, &ver, 2);
  std::memcpy(frame + 6, &corr, 8);
  std::memcpy(frame + 14, &gen, 8);
  std::memcpy(frame + 22, &err, 2);
  out.insert(out.end(), frame, frame + kBytes);
}

void encodeResponse(const ResponseHeader& header, const Response& response, std::vector<uint8_t>& out) {
  Writer w(out);
  const size_t frame = w.beginFrame();
  w.writeInt16(header.version);
  w.writeInt64(header.correlationId);
  std::visit([&w, version = header.version](const auto& m) { writeBody(w, m, version); }, response);
  w.endFrame(frame);
}

DecodedResponse decodeResponse(ApiKey api, std::span<const uint8_t> body) {
  DecodedResponse out;
  Reader r(body);
  r.readInt16(out.header.version, "Version");
  if (!r.readInt64(out.header.correlationId, "CorrelationId")) {
    out.detail = "response body of " + std::to_string(body.size()) + " bytes, shorter than the " +
                 std::to_string(kResponseHeaderBytes) + "-byte response header";
    return out;
  }
  const auto key = static_cast<int16_t>(api);
  if (r.remaining() == 2) {
    // UNKNOWN_API, UNSUPPORTED_VERSION and INVALID_REQUEST answers. LeaveGroup,
    // Authenticate and DrainServer responses are byte for byte the same
    // shape, so for them it is read as the API's own response: the caller
    // gets the type it expects and the same ErrorCode either way.
    if (api == ApiKey::LeaveGroup) {
      out.ok = decodeAs<LeaveGroupResponse>(r, out.response);
    } else if (api == ApiKey::Authenticate) {
      out.ok = decodeAs<AuthenticateResponse>(r, out.response);
    } else if (api == ApiKey::DrainServer) {
      out.ok = decodeAs<DrainServerResponse>(r, out.response);
    } else {
      out.ok = decodeAs<ErrorOnlyResponse>(r, out.response);
    }
    return out;
  }
  if (!isKnownApi(key)) {
    out.detail = "response to unknown ApiKey " + std::to_string(key) + " with " + std::to_string(r.remaining()) +
                 " bytes after the header, not an error-only answer";
    return out;
  }
  if (out.header.version < 0 || out.header.version > maxVersion(api)) {
    out.detail = std::string(apiName(api)) + " response of version " + std::to_string(out.header.version) +
                 ", this codec reads versions 0 to " + std::to_string(maxVersion(api));
    return out;
  }
  if (!decodeByKey(r, out.response, key, out.header.version)) {
    out.detail = std::string(apiName(api)) + " response: " + r.describeFailure();
    return out;
  }
  out.ok = true;
  return out;
}

// ---- Semantics -----------------------------------------------------------------

bool isValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  if (name == "." || name == "..") return false;
  for (const char c : name) {
    if (!isNameChar(c)) return false;
  }
  return true;
}

ErrorCode validateNames(const Request& request) {
  return std::visit([](const auto& m) { return namesError(m); }, request);
}

Response errorResponse(const Request& request, ErrorCode error) {
  struct Visitor {
    ErrorCode error;
    Response operator()(const HeartbeatRequest&) const { return HeartbeatResponse{-1, error}; }
    Response operator()(const CreateGroupRequest& m) const { return CreateGroupResponse{m.group, error, Broker{}}; }
    Response operator()(const DeleteGroupRequest& m) const { return DeleteGroupResponse{m.group, error}; }
    Response operator()(const RegisterConsumerRequest& m) const {
      return RegisterConsumerResponse{m.group, m.consumerId, -1, {}, {}, error};
    }
    Response operator()(const ListGroupsRequest&) const { return ListGroupsResponse{{}, error}; }
    Response operator()(const LeaveGroupRequest&) const { return LeaveGroupResponse{error}; }
    Response operator()(const CommitOffsetsRequest&) const { return CommitOffsetsResponse{{}, error}; }
    Response operator()(const FetchOffsetsRequest&) const { return FetchOffsetsResponse{{}, error}; }
    Response operator()(const RewindConsumerRequest&) const { return RewindConsumerResponse{{}, error}; }
    Response operator()(const AuthenticateRequest&) const { return AuthenticateResponse{error}; }
    Response operator()(const DrainServerRequest&) const { return DrainServerResponse{error}; }
    Response operator()(const DescribeGroupRequest& m) const {
      DescribeGroupResponse r;
      r.group = m.group;
      r.error = error;
      return r;
    }
    Response operator()(const DescribeServersRequest&) const {
      DescribeServersResponse r;
      r.error = error;
      return r;
    }
  };
  return std::visit(Visitor{error}, request);
}

ErrorCode responseError(const Response& response) {
  return std::visit([](const auto& m) { return m.error; }, response);
}

}  // namespace groupcoord::protocol
