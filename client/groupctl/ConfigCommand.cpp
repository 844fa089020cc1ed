#include "client/groupctl/Commands.h"

#include <chrono>
#include <iostream>

#include "common/Options.h"
#include "common/TopicWriter.h"
#include "protocol/Codec.h"

namespace groupcoord::groupctl {

using nlohmann::json;

namespace {

// A setting's value in milliseconds, within the bounds of the server option
// it overrides for the group.
int64_t settingMs(Args& args, const std::string& flag, std::string_view option) {
  const int64_t ms = parseDuration(args.options[flag]).count();
  const auto& o = options::find(option);
  if (ms < o.min || ms > o.max) {
    throw UsageError{flag + " must be " + std::to_string(o.min) + "ms to " + std::to_string(o.max) + "ms (as " +
                     std::string(option) + "), got " + std::to_string(ms) + "ms"};
  }
  return ms;
}

std::string shown(const std::optional<int64_t>& v) { return v ? std::to_string(*v) + " ms" : "the server's"; }

}  // namespace

// `config GROUP --zookeeper CONNECT [--zk-root PATH] [--session-timeout D]
// [--heartbeat-interval D] | [--reset]`: a group's own settings
// (layout::GroupConfig) at <root>/config/groups/<group>; its controller
// watches them and applies a change at once.
int ConfigCommand::run() {
  allowOnly(args_, "config",
            {"--zookeeper", "--zk-root", "--session-timeout", "--heartbeat-interval", "--reset"});
  const std::string& group = groupArg("config");
  if (!protocol::isValidName(group)) throw UsageError{"'" + group + "' is not a valid group name"};
  if (!args_.options.count("--zookeeper")) throw UsageError{"config needs --zookeeper HOST:PORT[,..]"};
  std::string root = args_.options.count("--zk-root") ? args_.options["--zk-root"] : "/groupcoord";
  if (root.empty() || root[0] != '/') throw UsageError{"--zk-root must be an absolute znode path (zk.root)"};
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  const bool reset = args_.flags.count("--reset") > 0;
  std::optional<int64_t> session, interval;
  if (args_.options.count("--session-timeout"))
    session = settingMs(args_, "--session-timeout", "kafka.group.consumer.session.timeout.ms");
  if (args_.options.count("--heartbeat-interval"))
    interval = settingMs(args_, "--heartbeat-interval", "kafka.group.consumer.heartbeat.interval.ms");
  if (reset && (session || interval)) throw UsageError{"--reset removes every setting: give it alone"};

  const layout::Layout layout(root == "/" ? "" : root);
  const std::string path = layout.groupConfigPath(group);
  const std::string connect = args_.options["--zookeeper"];
  topics::TopicWriter writer(connect, std::chrono::milliseconds(10000));
  if (int opened = openZooKeeper(writer, connect); opened != kExitOk) return opened;
  std::string data;
  int32_t version = -1;
  auto read = writer.read(path, &data, &version);
  if (!read.ok() && !read.noNode()) {
    std::cerr << "groupctl: " << read.name() << ": could not read " << path << "; check --zk-root and the ensemble\n";
    return kExitServer;
  }
  layout::GroupConfig config;
  if (read.ok()) {
    std::string why;
    auto decoded = layout::decodeGroupConfig(data, &why);
    if (!decoded && (session || interval)) {
      std::cerr << "groupctl: INVALID_CONFIG: " << path << " is unreadable (" << why
                << "); nothing was written; `groupctl config " << group << " --reset` removes it\n";
      return kExitServer;
    }
    if (decoded) config = *decoded;
  }
  const bool change = reset || session || interval;
  if (session) config.consumerSessionTimeoutMs = session;
  if (interval) config.consumerHeartbeatIntervalMs = interval;
  if (config.consumerSessionTimeoutMs && config.consumerHeartbeatIntervalMs &&
      *config.consumerHeartbeatIntervalMs * 2 > *config.consumerSessionTimeoutMs) {
    throw UsageError{"the heartbeat interval (" + std::to_string(*config.consumerHeartbeatIntervalMs) +
                     "ms) must be at most half the session timeout (" +
                     std::to_string(*config.consumerSessionTimeoutMs) +
                     "ms), so that a member beats twice within its session"};
  }
  if (change) {
    topics::ZkCode wrote;
    if (reset) {
      config = {};
      wrote = read.noNode() ? topics::ZkCode{} : writer.removeIfVersion(path, version);
    } else if (read.noNode()) {
      if (auto e = writer.ensurePath(layout.groupConfigsPath()); !e.ok()) {
        std::cerr << "groupctl: " << e.name() << ": could not create " << layout.groupConfigsPath() << "\n";
        return kExitServer;
      }
      wrote = writer.create(path, layout::encodeGroupConfig(config));
    } else {
      wrote = writer.setIfVersion(path, layout::encodeGroupConfig(config), version);
    }
    if (wrote.badVersion() || wrote.nodeExists() || (wrote.noNode() && !reset)) {
      std::cerr << "groupctl: CONCURRENT_CHANGE: " << path << " was changed by someone else between this command's "
                << "read and its write (" << wrote.name() << "); nothing was written; run the command again\n";
      return kExitServer;
    }
    if (!wrote.ok() && !wrote.noNode()) {
      std::cerr << "groupctl: " << wrote.name() << ": could not write " << path << "; check the ensemble's health\n";
      return kExitServer;
    }
  }
  auto value = [](const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); };
  if (json_) {
    std::cout << json{{"group", group},
                      {"path", path},
                      {std::string(layout::kConsumerSessionTimeoutKey), value(config.consumerSessionTimeoutMs)},
                      {std::string(layout::kConsumerHeartbeatIntervalKey), value(config.consumerHeartbeatIntervalMs)}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << "group " << group << (change ? " now has" : " has") << ": consumer-protocol session timeout "
              << shown(config.consumerSessionTimeoutMs) << ", heartbeat interval "
              << shown(config.consumerHeartbeatIntervalMs) << " (" << path << ")\n";
    if (change) {
      std::cout << "its controller applies it at once: members hear the interval in their next heartbeat's answer\n";
    }
  }
  return kExitOk;
}

}  // namespace groupcoord::groupctl
