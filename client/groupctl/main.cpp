// groupctl: the operator's command line for groupcoord, in the manner of
// kafka-consumer-groups.sh. Tables for people by default, --output json for
// scripts. Exit codes: 0 success, 1 the server refused the operation,
// 2 usage error, 3 no server could be reached.
//
// JSON shapes (stable; fields are only ever added):
//   list          {"groups":[GroupInfo...]}
//   describe      the DescribeGroup answer as JSON, the same document as the status page's
//                 /api/groups/NAME (docs/protocol.md, "DescribeGroup as JSON")
//   create        {"group":NAME,"controller":Broker|null}
//   delete        {"group":NAME,"deleted":true}
//   offsets       {"group":NAME,"offsets":[Offset...]}
//   rewind        {"group":NAME,"topic":T,"executed":BOOL,
//                  "partitions":[{"topic","partition","current","new","error"}]}
//                 ("error" is the protocol error name, "NONE" when applied, null in a dry run)
//   topic create  {"topic":T,"partitions":N,"path":ZNODE,"topic_id":ID}
//   topic grow    {"topic":T,"partitions":N,"previous_partitions":M,"path":ZNODE,"topic_id":ID}
//   config        {"group":NAME,"path":ZNODE,"consumer.session.timeout.ms":N|null,
//                  "consumer.heartbeat.interval.ms":N|null}
//   drain         {"server":ID,"draining":true,"waited":BOOL}
//                 ("waited": --wait was given and no group names ID as its controller any more)
//   undrain       {"server":ID,"draining":false}
//   servers       {"servers":[{"id","host","port","groups":[NAME...],"state","load","bound","placed",...}],
//                  "without_controller":[NAME...],"server","bound","total","moves":[...],...}
//                 (the same document as the status page's /api/servers; every key: docs/protocol.md,
//                 "DescribeServers as JSON"; without DescribeServers, an older server, the first line's
//                 first four keys and "without_controller" only)
//   acl list      {"file":PATH,"rules":[{"line","effect","principal","operations":[...],
//                  "resource":"group"|"prefix"|"any","pattern","rule"}]}
//   acl add/remove {"file":PATH,"added"|"removed":BOOL,"rule":LINE,"rules":COUNT}
//   GroupInfo, Broker, Offset: as in docs/protocol.md, "DescribeGroup as JSON"
//
// This file only dispatches: each command is a class of its own
// (Commands.h, one .cpp each), sharing the Context (Context.h): the
// connection options, the Admin client, failures and exit codes, tables.

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "client/groupctl/Args.h"
#include "client/groupctl/Commands.h"
#include "client/groupctl/Context.h"
#include "client/groupctl/Help.h"

namespace {

using namespace groupcoord::groupctl;

// The class of each command; kCommandHelp (Help.cpp) has their usage.
std::unique_ptr<Command> commandNamed(const std::string& name, Context& context) {
  if (name == "list") return std::make_unique<ListCommand>(context);
  if (name == "describe") return std::make_unique<DescribeCommand>(context);
  if (name == "create") return std::make_unique<CreateCommand>(context);
  if (name == "delete") return std::make_unique<DeleteCommand>(context);
  if (name == "offsets") return std::make_unique<OffsetsCommand>(context);
  if (name == "rewind") return std::make_unique<RewindCommand>(context);
  if (name == "topic") return std::make_unique<TopicCommand>(context);
  if (name == "config") return std::make_unique<ConfigCommand>(context);
  if (name == "servers") return std::make_unique<ServersCommand>(context);
  if (name == "drain") return std::make_unique<DrainCommand>(context, true);
  if (name == "undrain") return std::make_unique<DrainCommand>(context, false);
  if (name == "auth") return std::make_unique<AuthCommand>(context);
  if (name == "acl") return std::make_unique<AclCommand>(context);
  throw UsageError{"unknown command '" + name + "'"};
}

}  // namespace

int main(int argc, char** argv) {
  // stdout is for data (scripts parse it). The libraries groupctl links do
  // not log; the ZooKeeper C client (topic create) writes its error lines to
  // stderr.
  Args args;
  try {
    args = parseArgs(argc, argv);
    if (args.positional.empty()) {
      if (args.flags.count("--help")) {
        std::cout << kOverallHelp;
        return kExitOk;
      }
      throw UsageError{"no command given"};
    }
    if (args.flags.count("--help")) {
      auto it = kCommandHelp.find(args.positional[0]);
      if (it == kCommandHelp.end()) throw UsageError{"unknown command '" + args.positional[0] + "'"};
      std::cout << it->second;
      return kExitOk;
    }
    std::string output = args.options.count("--output") ? args.options["--output"] : "table";
    if (output != "table" && output != "json") throw UsageError{"--output must be table or json"};
    std::string bootstrapText = "127.0.0.1:7400";
    if (const char* env = std::getenv("GROUPCTL_BOOTSTRAP"); env && *env) bootstrapText = env;
    if (args.options.count("--bootstrap")) bootstrapText = args.options["--bootstrap"];
    auto bootstrap = parseBootstrap(bootstrapText);
    Context context(args, std::move(bootstrap), bootstrapText, output == "json");
    return commandNamed(args.positional[0], context)->run();
  } catch (const UsageError& e) {
    std::cerr << "groupctl: " << e.message << "\n";
    std::string command = args.positional.empty() ? "" : args.positional[0];
    if (kCommandHelp.count(command))
      std::cerr << kCommandHelp.at(command);
    else
      std::cerr << "run `groupctl --help` for the commands\n";
    return kExitUsage;
  }
}
