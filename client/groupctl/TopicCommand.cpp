#include "client/groupctl/Commands.h"

#include <chrono>
#include <climits>
#include <iostream>

#include "common/TopicWriter.h"

namespace groupcoord::groupctl {

using nlohmann::json;

int TopicCommand::run() {
  if (args_.positional.size() < 2 || args_.positional[1] != "create")
    throw UsageError{"`groupctl topic` knows one subcommand: create"};
  allowOnly(args_, "topic create", {"--partitions", "--zookeeper", "--topics-path"});
  expectPositionals(args_, 3, "topic name (`groupctl topic create T ...`)");
  const std::string name = args_.positional[2];
  if (name.find('/') != std::string::npos || name == "." || name == "..")
    throw UsageError{"'" + name + "' is not a valid topic name"};
  if (!args_.options.count("--partitions")) throw UsageError{"topic create needs --partitions N"};
  if (!args_.options.count("--zookeeper")) throw UsageError{"topic create needs --zookeeper HOST:PORT[,..]"};
  int64_t partitions = parseInt(args_.options["--partitions"], "--partitions");
  if (partitions < 1 || partitions > INT32_MAX) throw UsageError{"--partitions must be 1 or more"};
  std::string topicsPath = args_.options.count("--topics-path") ? args_.options["--topics-path"] : "/brokers/topics";
  if (topicsPath.empty() || topicsPath[0] != '/') throw UsageError{"--topics-path must be an absolute znode path"};
  while (topicsPath.size() > 1 && topicsPath.back() == '/') topicsPath.pop_back();
  const std::string path = (topicsPath == "/" ? "" : topicsPath) + "/" + name;
  const std::string connect = args_.options["--zookeeper"];

  topics::TopicWriter writer(connect, std::chrono::milliseconds(10000));
  if (!writer.start().ok()) throw UsageError{"bad --zookeeper connect string '" + connect + "'"};
  if (!writer.waitConnected(std::chrono::milliseconds(10000)).ok()) {
    std::cerr << "groupctl: cannot reach ZooKeeper; is the ensemble running? tried " << connect << "\n";
    return kExitUnreachable;
  }
  if (auto e = writer.ensurePath(topicsPath); !e.ok()) {
    std::cerr << "groupctl: " << e.name() << ": could not create " << topicsPath
              << "; check the path and the ensemble's health\n";
    return kExitServer;
  }
  const layout::TopicId id = layout::randomTopicId();
  auto created = writer.createTopic(path, static_cast<int32_t>(partitions), id);
  if (created.nodeExists()) {
    std::cerr << "groupctl: TOPIC_ALREADY_EXISTS: topic '" << name << "' already exists at " << path
              << "; choose another name or use the existing topic\n";
    return kExitServer;
  }
  if (!created.ok()) {
    std::cerr << "groupctl: " << created.name() << ": could not create " << path
              << "; check the path and the ensemble's health\n";
    return kExitServer;
  }
  const std::string idText = layout::topicIdText(id);
  if (json_)
    std::cout << json{{"topic", name}, {"partitions", partitions}, {"path", path}, {"topic_id", idText}}.dump(2) << "\n";
  else
    std::cout << "created topic " << name << " with " << partitions << " partitions at " << path << " (topic id "
              << idText << ")\n";
  return kExitOk;
}

}  // namespace groupcoord::groupctl
