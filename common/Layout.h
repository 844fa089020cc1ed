#pragma once

// Where groupcoord keeps its state in ZooKeeper (docs/design.md):
//
//   <root>/servers/<server-id>                    EPHEMERAL   {"host":..,"port":..}
//   <root>/groups/<group>                         PERSISTENT  GroupSettings JSON; Stat.version = generation
//   <root>/groups/<group>/controller              EPHEMERAL   server id of the group's controller
//   <root>/groups/<group>/members/<consumer-id>   EPHEMERAL   {"client_id":..}
//   <root>/groups/<group>/offsets/<topic>/<part>  PERSISTENT  committed offset, decimal text
//
// Names reaching these functions have passed protocol::isValidName: they
// hold no '/', so they cannot escape their parent.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/Messages.h"

namespace groupcoord::layout {

class Layout {
 public:
  explicit Layout(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string serversPath() const { return root_ + "/servers"; }
  std::string serverPath(int32_t id) const { return serversPath() + "/" + std::to_string(id); }
  std::string groupsPath() const { return root_ + "/groups"; }
  std::string groupPath(std::string_view group) const { return groupsPath() + "/" + std::string(group); }
  std::string controllerPath(std::string_view group) const { return groupPath(group) + "/controller"; }
  std::string membersPath(std::string_view group) const { return groupPath(group) + "/members"; }
  std::string memberPath(std::string_view group, std::string_view member) const {
    return membersPath(group) + "/" + std::string(member);
  }
  std::string offsetsPath(std::string_view group) const { return groupPath(group) + "/offsets"; }

 private:
  std::string root_;
};

// The group znode's data.
struct GroupSettings {
  int64_t sessionTimeoutMs = 10000;
  std::vector<std::string> topics;
  bool ephemeral = false;
  bool operator==(const GroupSettings&) const = default;
};

std::string encodeSettings(const GroupSettings& s);
// nullopt when the data is not a settings document this version understands.
std::optional<GroupSettings> decodeSettings(std::string_view data);

std::string encodeServer(const std::string& host, uint16_t port);
std::optional<protocol::Broker> decodeServer(int32_t id, std::string_view data);

std::string encodeMember(std::string_view clientId);

// Kafka's topic metadata, {"version":1,"partitions":{"0":[..],"1":[..]}}:
// the number of partitions, or nullopt when the data is not that.
std::optional<int32_t> decodeTopicPartitions(std::string_view data);
std::string encodeTopic(int32_t partitions);

}  // namespace groupcoord::layout
