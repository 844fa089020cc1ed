#include "client/groupctl/Commands.h"

#include <iostream>

#include "protocol/DescribeJson.h"

namespace groupcoord::groupctl {

using nlohmann::json;

int CreateCommand::run() {
  allowOnly(args_, "create", {"--topics", "--session-timeout", "--ephemeral", "--assignment"});
  const std::string group = groupArg("create");
  auto mode = protocol::AssignmentMode::SERVER;
  if (args_.options.count("--assignment")) {
    const std::string& m = args_.options["--assignment"];
    if (m == "client") {
      mode = protocol::AssignmentMode::CLIENT;
    } else if (m != "server") {
      throw UsageError{"--assignment must be server or client, not '" + m + "'"};
    }
  }
  const bool client = mode == protocol::AssignmentMode::CLIENT;
  if (!client && !args_.options.count("--topics")) throw UsageError{"create needs --topics a,b"};
  if (!args_.options.count("--session-timeout")) throw UsageError{"create needs --session-timeout (e.g. 10s)"};
  auto topics = args_.options.count("--topics") ? splitList(args_.options["--topics"]) : std::vector<std::string>{};
  if (!client && topics.empty()) throw UsageError{"--topics names no topic"};
  auto timeout = parseDuration(args_.options["--session-timeout"]);
  bool ephemeral = args_.flags.count("--ephemeral") > 0;
  auto r = admin().createGroup(group, timeout, topics, ephemeral, mode);
  if (!r.ok()) return fail(r.status, group);
  if (json_) {
    std::cout << json{{"group", group}, {"controller", protocol::brokerJson(r.value)}}.dump(2) << "\n";
  } else {
    std::cout << "created group " << group << " (topics " << joinList(topics) << ", session timeout "
              << timeout.count() << " ms" << (ephemeral ? ", ephemeral" : "") << "); controller "
              << brokerText(r.value) << "\n";
  }
  return kExitOk;
}

}  // namespace groupcoord::groupctl
