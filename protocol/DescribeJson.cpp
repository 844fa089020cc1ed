#include "protocol/DescribeJson.h"

#include <algorithm>
#include <tuple>

#include "protocol/PartitionRows.h"

namespace groupcoord::protocol {

namespace {

using nlohmann::json;

json errorJson(ErrorCode error) {
  if (error == ErrorCode::NONE) return nullptr;
  return std::string(errorName(error));
}

json memberJson(const MemberState& m) {
  return {{"id", m.consumerId},
          {"client_id", m.clientId},
          {"host", m.host},
          {"port", m.port},
          {"joined_at", m.joinedAtMs},
          {"last_heard", m.lastHeardMs},
          {"held", topicPartitionsJson(m.held)},
          {"waiting", topicPartitionsJson(m.waiting)},
          {"rack", m.rack},
          {"metadata_hex", hexBytes(m.metadata)}};
}

json eventJson(const RebalanceEvent& e) {
  return {{"time", e.timeMs},
          {"generation", e.generation},
          {"reason", std::string(rebalanceReasonName(e.reason))},
          {"count", e.count},
          {"member", e.consumerId},
          {"client_id", e.clientId},
          {"host", e.host},
          {"subject", e.subject},
          {"value", e.value},
          {"detail", e.detail}};
}

json partitionRowJson(const PartitionRow& r) {
  return {{"topic", r.partition.topic},
          {"partition", r.partition.partition},
          {"committed_offset", r.committed},
          {"owner", r.owner ? json(r.owner->consumerId) : json(nullptr)},
          {"host", r.owner ? json(memberAddress(*r.owner)) : json(nullptr)},
          {"client_id", r.owner ? json(r.owner->clientId) : json(nullptr)},
          {"waiting", r.waiting ? json(r.waiting->consumerId) : json(nullptr)}};
}

}  // namespace

json brokerJson(const Broker& broker) {
  if (broker.isNone()) return nullptr;
  return {{"id", broker.brokerId}, {"host", broker.host}, {"port", broker.port}};
}

json topicPartitionsJson(const std::vector<TopicPartition>& partitions) {
  json out = json::array();
  for (const auto& tp : partitions) out.push_back({{"topic", tp.topic}, {"partition", tp.partition}});
  return out;
}

json offsetsJson(const std::vector<PartitionOffset>& offsets) {
  json out = json::array();
  for (const auto& o : offsets) out.push_back({{"topic", o.topic}, {"partition", o.partition}, {"offset", o.offset}});
  return out;
}

json groupInfoJson(const GroupInfo& g) {
  return {{"name", g.name},
          {"error", errorJson(g.error)},
          {"members", g.members},
          {"member_count", g.members.size()},
          {"topics", g.topics},
          {"controller", brokerJson(g.controller)},
          {"session_timeout_ms", g.sessionTimeoutMs},
          {"generation", g.generation},
          {"ephemeral", g.ephemeral},
          {"assignment", std::string(assignmentModeName(g.mode))},
          {"kafka", g.kafka},
          {"protocol_type", g.protocolType},
          {"protocol_name", g.protocolName}};
}

json describeGroupJson(const DescribeGroupResponse& d) {
  GroupInfo info;
  info.name = d.group;
  info.error = d.error;
  for (const auto& m : d.members) info.members.push_back(m.consumerId);
  for (const auto& t : d.topics) info.topics.push_back(t.topic);
  info.controller = d.controller;
  info.sessionTimeoutMs = d.sessionTimeoutMs;
  info.generation = d.generation;
  info.ephemeral = d.ephemeral;
  info.mode = d.mode;
  info.kafka = d.kafka;
  info.protocolType = d.protocolType;
  info.protocolName = d.protocolName;

  json topics = json::array();
  for (const auto& t : d.topics) topics.push_back({{"topic", t.topic}, {"partitions", t.partitions}});
  json members = json::array();
  for (const auto& m : d.members) members.push_back(memberJson(m));
  json partitions = json::array();
  for (const auto& r : partitionRows(d)) partitions.push_back(partitionRowJson(r));
  json history = json::array();
  for (const auto& e : d.history) history.push_back(eventJson(e));
  // The answer's offsets come in no particular order; the document's are sorted.
  std::vector<PartitionOffset> offsets = d.offsets;
  std::sort(offsets.begin(), offsets.end(),
            [](const auto& a, const auto& b) { return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition); });
  return {{"group", groupInfoJson(info)},
          {"error", errorJson(d.error)},
          {"state", std::string(groupStateName(d.state))},
          {"generation", d.generation},
          {"controller", brokerJson(d.controller)},
          {"session_timeout_ms", d.sessionTimeoutMs},
          {"ephemeral", d.ephemeral},
          {"assignment", std::string(assignmentModeName(d.mode))},
          {"kafka", d.kafka},
          {"protocol_type", d.protocolType},
          {"protocol_name", d.protocolName},
          {"topics", topics},
          {"members", members},
          {"offsets", offsetsJson(offsets)},
          {"partitions", partitions},
          {"history", history}};
}

std::string protocolText(bool kafka, std::string_view protocolType, std::string_view protocolName) {
  if (!kafka) return "groupcoord";
  std::string out = "kafka";
  if (!protocolType.empty()) {
    out += " ";
    out += protocolType;
  }
  if (!protocolName.empty()) {
    out += " (";
    out += protocolName;
    out += ")";
  }
  return out;
}

std::string hexBytes(std::string_view bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string dumpJson(const json& document) {
  return document.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace groupcoord::protocol
