#include "client/groupctl/Commands.h"

#include <algorithm>
#include <climits>
#include <iostream>
#include <optional>

namespace groupcoord::groupctl {

using nlohmann::json;
using protocol::ErrorCode;

int RewindCommand::run() {
  allowOnly(args_, "rewind",
            {"--topic", "--partition", "--to-offset", "--shift-by", "--to-earliest", "--dry-run", "--execute"});
  const std::string group = groupArg("rewind");
  if (!args_.options.count("--topic")) throw UsageError{"rewind needs --topic T"};
  const std::string topic = args_.options["--topic"];
  int targets = static_cast<int>(args_.options.count("--to-offset") + args_.options.count("--shift-by") +
                                 args_.flags.count("--to-earliest"));
  if (targets != 1) throw UsageError{"rewind needs exactly one of --to-offset N, --shift-by N, --to-earliest"};
  if (args_.flags.count("--dry-run") && args_.flags.count("--execute"))
    throw UsageError{"--dry-run and --execute exclude each other"};
  const bool execute = args_.flags.count("--execute") > 0;
  std::optional<int32_t> partition;
  if (args_.options.count("--partition")) {
    int64_t p = parseInt(args_.options["--partition"], "--partition");
    if (p < 0 || p > INT32_MAX) throw UsageError{"--partition must be 0 or more"};
    partition = static_cast<int32_t>(p);
  }
  std::optional<int64_t> toOffset, shiftBy;
  if (args_.options.count("--to-offset")) {
    toOffset = parseInt(args_.options["--to-offset"], "--to-offset");
    if (*toOffset < 0) throw UsageError{"--to-offset must be 0 or more"};
  }
  if (args_.options.count("--shift-by")) shiftBy = parseInt(args_.options["--shift-by"], "--shift-by");
  if (args_.flags.count("--to-earliest")) toOffset = 0;

  auto current = admin().fetchOffsets(group, {topic});
  if (!current.ok()) return fail(current.status, group);
  std::vector<protocol::PartitionOffset> now;
  for (auto& o : current.value)
    if (o.topic == topic && (!partition || o.partition == *partition)) now.push_back(o);
  // A named partition without a commit yet can still be set.
  if (partition && now.empty()) now.push_back({topic, *partition, -1});
  sortOffsets(now);

  std::vector<protocol::PartitionOffset> plan;
  for (auto& o : now) {
    int64_t next = toOffset ? *toOffset : std::max<int64_t>(0, std::max<int64_t>(0, o.offset) + *shiftBy);
    plan.push_back({o.topic, o.partition, next});
  }

  std::vector<ErrorCode> results(plan.size(), ErrorCode::NONE);
  bool anyFailed = false;
  if (execute && !plan.empty()) {
    auto r = admin().rewind(group, plan);
    if (!r.ok()) return fail(r.status, group);
    for (size_t i = 0; i < plan.size(); ++i)
      for (auto& e : r.value)
        if (e.topic == plan[i].topic && e.partition == plan[i].partition) results[i] = e.error;
    anyFailed = std::any_of(results.begin(), results.end(), [](ErrorCode c) { return c != ErrorCode::NONE; });
  }

  if (json_) {
    json rows = json::array();
    for (size_t i = 0; i < plan.size(); ++i)
      rows.push_back({{"topic", plan[i].topic},
                      {"partition", plan[i].partition},
                      {"current", now[i].offset},
                      {"new", plan[i].offset},
                      {"error", execute ? json(std::string(protocol::errorName(results[i]))) : json(nullptr)}});
    std::cout << json{{"group", group}, {"topic", topic}, {"executed", execute}, {"partitions", rows}}.dump(2)
              << "\n";
  } else {
    if (plan.empty()) {
      std::cout << "(group " << group << " has no committed offsets for topic " << topic
                << "; name a partition with --partition to set one)\n";
    } else {
      std::vector<std::vector<std::string>> rows{{"TOPIC", "PARTITION", "CURRENT", "NEW", execute ? "RESULT" : ""}};
      for (size_t i = 0; i < plan.size(); ++i)
        rows.push_back({plan[i].topic, std::to_string(plan[i].partition),
                        now[i].offset < 0 ? "-" : std::to_string(now[i].offset), std::to_string(plan[i].offset),
                        execute ? std::string(protocol::errorName(results[i])) : ""});
      printTable(rows);
    }
    if (!execute) std::cout << "dry run: nothing changed; add --execute to apply\n";
  }
  if (anyFailed) {
    for (size_t i = 0; i < plan.size(); ++i)
      if (results[i] != ErrorCode::NONE)
        std::cerr << "groupctl: " << protocol::errorName(results[i]) << ": " << topic << "/" << plan[i].partition
                  << ": " << hintFor(results[i], group) << "\n";
    return kExitServer;
  }
  return kExitOk;
}

}  // namespace groupcoord::groupctl
