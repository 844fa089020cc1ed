#include "client/groupctl/Commands.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "protocol/DescribeJson.h"
#include "protocol/PartitionRows.h"

namespace groupcoord::groupctl {

// "2026-12-02T14:40:01.123Z"; "-" for -1.
std::string DescribeCommand::isoTime(int64_t ms) {
  if (ms < 0) return "-";
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[40];
  std::snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

int DescribeCommand::run() {
  allowOnly(args_, "describe", {"--history"});
  const std::string group = groupArg("describe");
  int64_t historyRows = 10;
  if (args_.options.count("--history")) {
    historyRows = parseInt(args_.options["--history"], "--history");
    if (historyRows < 0) throw UsageError{"--history must be 0 or more"};
  }
  auto described = admin().describeGroup(group);
  if (!described.ok()) return fail(described.status, group);
  auto& d = described.value;
  sortOffsets(d.offsets);
  if (json_) {
    std::cout << protocol::dumpJson(protocol::describeGroupJson(d));
    return kExitOk;
  }
  std::vector<std::string> topics;
  for (auto& t : d.topics)
    topics.push_back(t.topic + " (" + (t.partitions < 0 ? "not found" : std::to_string(t.partitions)) + ")");
  std::cout << "group:           " << d.group << "\n"
            << "state:           " << protocol::groupStateName(d.state) << "\n"
            << "generation:      " << d.generation << "\n"
            << "controller:      " << brokerText(d.controller) << "\n"
            << "session timeout: " << d.sessionTimeoutMs << " ms" << (d.ephemeral ? " (ephemeral)" : "") << "\n"
            << "assignment:      " << protocol::assignmentModeName(d.mode)
            << (d.mode == protocol::AssignmentMode::CLIENT ? " (the members assign)" : "") << "\n"
            << "protocol:        " << protocol::protocolText(d.kafka, d.protocolType, d.protocolName) << "\n"
            << "topics:          " << (topics.empty() ? "-" : joinList(topics)) << "\n\n";
  auto rows = protocol::partitionRows(d);
  if (rows.empty()) {
    std::cout << "(no partitions)\n";
  } else {
    std::vector<std::vector<std::string>> table{
        {"TOPIC", "PARTITION", "COMMITTED-OFFSET", "OWNER", "HOST", "CLIENT-ID", "WAITING-FOR-IT"}};
    for (auto& r : rows) {
      table.push_back({r.partition.topic, std::to_string(r.partition.partition),
                       r.committed < 0 ? "-" : std::to_string(r.committed), r.owner ? r.owner->consumerId : "-",
                       r.owner ? protocol::memberAddress(*r.owner) : "-", r.owner ? r.owner->clientId : "-",
                       r.waiting ? r.waiting->consumerId : ""});
    }
    printTable(table);
  }
  std::cout << "\n";
  if (d.members.empty()) {
    std::cout << "(no members)\n";
  } else {
    std::vector<std::vector<std::string>> table{
        {"MEMBER", "CLIENT-ID", "HOST", "PARTITIONS", "WAITING", "JOINED", "LAST-HEARD"}};
    for (auto& m : d.members) {
      table.push_back({m.consumerId, m.clientId.empty() ? "-" : m.clientId, protocol::memberAddress(m),
                       std::to_string(m.held.size()), std::to_string(m.waiting.size()), isoTime(m.joinedAtMs),
                       isoTime(m.lastHeardMs)});
    }
    printTable(table);
  }
  if (historyRows == 0) return kExitOk;
  std::cout << "\n";
  if (d.history.empty()) {
    std::cout << "(no rebalance recorded)\n";
    return kExitOk;
  }
  const size_t shown = std::min(d.history.size(), static_cast<size_t>(historyRows));
  std::cout << "history (the last " << shown << " of " << d.history.size() << "):\n";
  std::vector<std::vector<std::string>> table{{"TIME", "GENERATION", "REASON", "DETAIL"}};
  for (size_t i = d.history.size() - shown; i < d.history.size(); ++i) {
    auto& e = d.history[i];
    table.push_back({isoTime(e.timeMs), std::to_string(e.generation), std::string(protocol::rebalanceReasonName(e.reason)),
                     e.detail});
  }
  printTable(table);
  return kExitOk;
}

}  // namespace groupcoord::groupctl
