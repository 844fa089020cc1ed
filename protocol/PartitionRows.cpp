#include "protocol/PartitionRows.h"

#include <map>

#include "protocol/Handler.h"

namespace groupcoord::protocol {

std::vector<PartitionRow> partitionRows(const DescribeGroupResponse& group) {
  std::map<TopicPartition, PartitionRow> rows;
  auto row = [&rows](const TopicPartition& tp) -> PartitionRow& {
    PartitionRow& r = rows[tp];
    r.partition = tp;
    return r;
  };
  for (const auto& t : group.topics)
    for (int32_t p = 0; p < t.partitions; ++p) row({t.topic, p});
  for (const auto& o : group.offsets) row({o.topic, o.partition}).committed = o.offset;
  for (const auto& m : group.members) {
    for (const auto& tp : m.held) row(tp).owner = &m;
    for (const auto& tp : m.waiting) row(tp).waiting = &m;
  }
  std::vector<PartitionRow> out;
  out.reserve(rows.size());
  for (auto& [tp, r] : rows) out.push_back(r);
  return out;
}

std::string hostPort(const std::string& host, uint16_t port) {
  if (host.empty()) return "";
  return Caller{host, port, ""}.address();
}

std::string memberAddress(const MemberState& m) {
  std::string address = hostPort(m.host, m.port);
  return address.empty() ? "-" : address;
}

}  // namespace groupcoord::protocol
