#include "client/groupctl/Commands.h"

#include <iostream>

#include "protocol/DescribeJson.h"

namespace groupcoord::groupctl {

using nlohmann::json;

void OffsetsCommand::printOffsetsTable(const std::vector<protocol::PartitionOffset>& offsets) {
  if (offsets.empty()) {
    std::cout << "(no committed offsets)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows{{"TOPIC", "PARTITION", "OFFSET"}};
  for (auto& o : offsets) rows.push_back({o.topic, std::to_string(o.partition), std::to_string(o.offset)});
  printTable(rows);
}

int OffsetsCommand::run() {
  allowOnly(args_, "offsets", {});
  const std::string group = groupArg("offsets");
  auto r = admin().fetchOffsets(group);
  if (!r.ok()) return fail(r.status, group);
  sortOffsets(r.value);
  if (json_)
    std::cout << json{{"group", group}, {"offsets", protocol::offsetsJson(r.value)}}.dump(2) << "\n";
  else
    printOffsetsTable(r.value);
  return kExitOk;
}

}  // namespace groupcoord::groupctl
