#pragma once

// groupctl's subcommands, one class each. A command checks its own
// arguments (a UsageError for a mistake), makes its calls through the
// Context's Admin, prints a table or --output json, and answers the exit
// code (Context.h). The JSON shapes are listed in main.cpp; DescribeGroup's
// and GroupInfo's are docs/protocol.md, "DescribeGroup as JSON".

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/groupctl/Args.h"
#include "client/groupctl/Context.h"
#include "common/Permissions.h"

namespace groupcoord::topics {
class TopicWriter;
}

namespace groupcoord::groupctl {

class Command {
 public:
  explicit Command(Context& context) : context_(context), args_(context.args()), json_(context.json()) {}
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  virtual int run() = 0;

 protected:
  client::Admin& admin() { return context_.admin(); }
  int fail(const client::Status& status, const std::string& group) { return context_.fail(status, group); }
  int failWith(const client::Status& status, const std::string& hint) { return context_.failWith(status, hint); }
  // Starts `writer`'s ZooKeeper session on --zookeeper `connect` and waits
  // for it: kExitOk, or kExitUnreachable (said on stderr); a connect string
  // the client refuses is a UsageError. For the commands that write
  // ZooKeeper themselves (topic, config).
  static int openZooKeeper(topics::TopicWriter& writer, const std::string& connect);
  // The one positional after the command's name.
  const std::string& groupArg(const std::string& command) {
    expectPositionals(args_, 2, "GROUP (`groupctl " + command + " GROUP`)");
    return args_.positional[1];
  }

  Context& context_;
  Args& args_;
  const bool json_;
};

// `list`: every group with its controller, generation and member count.
class ListCommand final : public Command {
 public:
  using Command::Command;
  int run() override;
};

// `describe GROUP [--history N]`: everything the group's controller knows.
class DescribeCommand final : public Command {
 public:
  using Command::Command;
  int run() override;

 private:
  static std::string isoTime(int64_t ms);
};

// `create GROUP --topics a,b --session-timeout D [--ephemeral] [--assignment M]`.
class CreateCommand final : public Command {
 public:
  using Command::Command;
  int run() override;
};

// `delete GROUP`: a group without members.
class DeleteCommand final : public Command {
 public:
  using Command::Command;
  int run() override;
};

// `offsets GROUP`: the committed offsets.
class OffsetsCommand final : public Command {
 public:
  using Command::Command;
  int run() override;

 private:
  static void printOffsetsTable(const std::vector<protocol::PartitionOffset>& offsets);
};

// `rewind GROUP --topic T ...`: a plan of moved offsets, applied with --execute.
class RewindCommand final : public Command {
 public:
  using Command::Command;
  int run() override;
};

// `servers`: the live servers with their load and the bound (DescribeServers),
// the groups each controls, the groups without a controller, and the groups
// that should move.
class ServersCommand final : public Command {
 public:
  using Command::Command;
  int run() override;
};

// `drain SERVER_ID [--wait D]` (mark true) and `undrain SERVER_ID`.
class DrainCommand final : public Command {
 public:
  DrainCommand(Context& context, bool mark);
  int run() override;

 private:
  int32_t serverIdArg(const std::string& command);
  // Polls ListGroups every 500 ms until no group names `id` as its
  // controller. Progress goes to standard error, so that standard output
  // holds only the result.
  int awaitDrained(int32_t id, std::chrono::milliseconds wait, const std::string& waitText);

  bool mark_;
};

// `topic create T --partitions N --zookeeper CONNECT [--topics-path P]` and
// `topic grow T --partitions N ...` (more partitions for an existing topic).
class TopicCommand final : public Command {
 public:
  using Command::Command;
  int run() override;

 private:
  int grow(topics::TopicWriter& writer, const std::string& name, const std::string& path, int32_t partitions);
};

// `config GROUP --zookeeper CONNECT [--session-timeout D]
// [--heartbeat-interval D] | [--reset]`: a group's own settings.
class ConfigCommand final : public Command {
 public:
  using Command::Command;
  int run() override;
};

// `auth hash --user U --role R [--iterations N]`: a credentials-file line.
class AuthCommand final : public Command {
 public:
  using Command::Command;
  int run() override;
};

// `acl list | add | remove --file PATH ...`: the rules of groupcoordd's
// permissions file (auth.permissions.file), in the manner of kafka-acls.sh.
class AclCommand final : public Command {
 public:
  using Command::Command;
  int run() override;

 private:
  permissions::Rule ruleFromOptions(const std::string& command);
};

}  // namespace groupcoord::groupctl
