#include "client/groupctl/Commands.h"

#include <chrono>
#include <climits>
#include <iostream>

#include "common/TopicWriter.h"

namespace groupcoord::groupctl {

using nlohmann::json;

int Command::openZooKeeper(topics::TopicWriter& writer, const std::string& connect) {
  if (!writer.start().ok()) throw UsageError{"bad --zookeeper connect string '" + connect + "'"};
  if (!writer.waitConnected(std::chrono::milliseconds(10000)).ok()) {
    std::cerr << "groupctl: cannot reach ZooKeeper; is the ensemble running? tried " << connect << "\n";
    return kExitUnreachable;
  }
  return kExitOk;
}

int TopicCommand::run() {
  if (args_.positional.size() < 2 || (args_.positional[1] != "create" && args_.positional[1] != "grow"))
    throw UsageError{"`groupctl topic` knows two subcommands: create, grow"};
  const std::string sub = args_.positional[1];
  const std::string what = "topic " + sub;
  allowOnly(args_, what, {"--partitions", "--zookeeper", "--topics-path"});
  expectPositionals(args_, 3, "topic name (`groupctl " + what + " T ...`)");
  const std::string name = args_.positional[2];
  if (name.find('/') != std::string::npos || name == "." || name == "..")
    throw UsageError{"'" + name + "' is not a valid topic name"};
  if (!args_.options.count("--partitions")) throw UsageError{what + " needs --partitions N"};
  if (!args_.options.count("--zookeeper")) throw UsageError{what + " needs --zookeeper HOST:PORT[,..]"};
  int64_t partitions = parseInt(args_.options["--partitions"], "--partitions");
  if (partitions < 1 || partitions > INT32_MAX) throw UsageError{"--partitions must be 1 or more"};
  std::string topicsPath = args_.options.count("--topics-path") ? args_.options["--topics-path"] : "/brokers/topics";
  if (topicsPath.empty() || topicsPath[0] != '/') throw UsageError{"--topics-path must be an absolute znode path"};
  while (topicsPath.size() > 1 && topicsPath.back() == '/') topicsPath.pop_back();
  const std::string path = (topicsPath == "/" ? "" : topicsPath) + "/" + name;
  const std::string connect = args_.options["--zookeeper"];

  topics::TopicWriter writer(connect, std::chrono::milliseconds(10000));
  if (int opened = openZooKeeper(writer, connect); opened != kExitOk) return opened;
  if (sub == "grow") return grow(writer, name, path, static_cast<int32_t>(partitions));
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

// `topic grow`: read the topic's znode, write it back with more partitions
// at the version read. Its id (the znode's "topic_id", or the one derived
// from its name when it has none) and the existing partitions' replicas stay
// as they were (layout::growTopic).
int TopicCommand::grow(topics::TopicWriter& writer, const std::string& name, const std::string& path,
                       int32_t partitions) {
  std::string data;
  int32_t version = 0;
  auto read = writer.read(path, &data, &version);
  if (read.noNode()) {
    std::cerr << "groupctl: UNKNOWN_TOPIC_OR_PARTITION: topic '" << name << "' does not exist at " << path
              << "; create it with `groupctl topic create`\n";
    return kExitServer;
  }
  if (!read.ok()) {
    std::cerr << "groupctl: " << read.name() << ": could not read " << path
              << "; check the path and the ensemble's health\n";
    return kExitServer;
  }
  const auto current = layout::decodeTopicPartitions(data);
  if (!current) {
    std::cerr << "groupctl: INVALID_TOPIC: " << path
              << " does not hold Kafka topic metadata ({\"partitions\":{\"0\":[..],..}}); nothing was written\n";
    return kExitServer;
  }
  if (partitions <= *current) {
    std::cerr << "groupctl: INVALID_PARTITIONS: topic '" << name << "' has " << *current
              << " partitions; --partitions must be more than that (partitions cannot be removed, as in Kafka)\n";
    return kExitServer;
  }
  const auto grown = layout::growTopic(data, partitions);
  if (!grown) {  // decodeTopicPartitions said yes, so this does not happen
    std::cerr << "groupctl: INVALID_TOPIC: could not grow the metadata at " << path << "\n";
    return kExitServer;
  }
  auto set = writer.setIfVersion(path, *grown, version);
  if (set.badVersion() || set.noNode()) {
    std::cerr << "groupctl: CONCURRENT_CHANGE: topic '" << name << "' at " << path
              << (set.noNode() ? " was deleted" : " was changed by someone else")
              << " between this command's read and its write (" << set.name()
              << "); nothing was written; run the command again\n";
    return kExitServer;
  }
  if (!set.ok()) {
    std::cerr << "groupctl: " << set.name() << ": could not write " << path
              << "; check the path and the ensemble's health\n";
    return kExitServer;
  }
  const std::string idText = layout::topicIdText(layout::topicIdOf(name, *grown));
  if (json_)
    std::cout << json{{"topic", name},
                      {"partitions", partitions},
                      {"previous_partitions", *current},
                      {"path", path},
                      {"topic_id", idText}}
                     .dump(2)
              << "\n";
  else
    std::cout << "grew topic " << name << " from " << *current << " to " << partitions << " partitions at " << path
              << " (topic id " << idText << ")\n";
  return kExitOk;
}

}  // namespace groupcoord::groupctl
