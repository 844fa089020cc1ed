#pragma once

// Where groupcoord keeps its state in ZooKeeper (docs/design.md):
//
//   <root>/servers/<server-id>                    EPHEMERAL   {"host":..,"port":..}
//   <root>/groups/<group>                         PERSISTENT  GroupSettings JSON; Stat.version = generation
//   <root>/groups/<group>/controller              EPHEMERAL   server id of the group's controller
//   <root>/groups/<group>/history                 PERSISTENT  HistoryRecord JSON: the last rebalance reasons
//   <root>/groups/<group>/members/<consumer-id>   EPHEMERAL   {"client_id":..} (a Kafka group's: its Kafka members)
//   <root>/groups/<group>/offsets/<topic>/<part>  PERSISTENT  committed offset, decimal text
//                                                             (then "\n" and a Kafka commit's metadata,
//                                                             when any: adapter/OffsetStore.h)
//   <root>/kafka/<group>                          PERSISTENT  a Kafka group's last stable generation
//                                                             (adapter/KafkaGroups.h)
//   <root>/config/groups/<group>                  PERSISTENT  GroupConfig JSON: a group's own settings
//                                                             (`groupctl config`), read by its controller
//
// Names reaching these functions have passed protocol::isValidName: they
// hold no '/', so they cannot escape their parent.

#include <array>
#include <cstdint>
#include <map>
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
  // Persistent markers of drained servers: a server with a marker takes no
  // group and hands over those it controls (`groupctl drain`).
  std::string drainingPath() const { return root_ + "/draining"; }
  std::string drainingPath(int32_t id) const { return drainingPath() + "/" + std::to_string(id); }
  // Persistent: the weight of each group a server controls, as it last
  // published them (docs/design.md, "Placement"). They outlive the server,
  // so a crashed server's groups are placed by their real weight.
  std::string loadsPath() const { return root_ + "/loads"; }
  std::string loadsPath(int32_t id) const { return loadsPath() + "/" + std::to_string(id); }
  std::string groupsPath() const { return root_ + "/groups"; }
  std::string groupPath(std::string_view group) const { return groupsPath() + "/" + std::string(group); }
  std::string controllerPath(std::string_view group) const { return groupPath(group) + "/controller"; }
  std::string membersPath(std::string_view group) const { return groupPath(group) + "/members"; }
  std::string memberPath(std::string_view group, std::string_view member) const {
    return membersPath(group) + "/" + std::string(member);
  }
  std::string offsetsPath(std::string_view group) const { return groupPath(group) + "/offsets"; }
  std::string historyPath(std::string_view group) const { return groupPath(group) + "/history"; }
  // Kafka groups' last stable generations (adapter/KafkaGroups.h).
  std::string kafkaPath() const { return root_ + "/kafka"; }
  std::string kafkaGroupPath(std::string_view group) const { return kafkaPath() + "/" + std::string(group); }
  // Groups' own settings (GroupConfig below), apart from the group znode,
  // whose version is the group's generation: setting one moves nothing.
  std::string groupConfigsPath() const { return root_ + "/config/groups"; }
  std::string groupConfigPath(std::string_view group) const { return groupConfigsPath() + "/" + std::string(group); }

 private:
  std::string root_;
};

// The group znode's data.
struct GroupSettings {
  int64_t sessionTimeoutMs = 10000;
  std::vector<std::string> topics;
  bool ephemeral = false;
  // Written only for client mode ("assignment":"client"), so a server-mode
  // group's data is what it always was.
  protocol::AssignmentMode mode = protocol::AssignmentMode::SERVER;
  // A Kafka group (docs/kafka.md), created by the Kafka port: written only
  // when set ("protocol":"kafka").
  bool kafka = false;
  bool operator==(const GroupSettings&) const = default;
};

std::string encodeSettings(const GroupSettings& s);
// nullopt when the data is not a settings document this version understands.
std::optional<GroupSettings> decodeSettings(std::string_view data);

// A group's own settings (docs/kafka.md, "The consumer protocol"), under
// Kafka's names: {"consumer.session.timeout.ms":N,
// "consumer.heartbeat.interval.ms":M}. Unset: the server's option
// (kafka.group.consumer.session.timeout.ms, ...heartbeat.interval.ms).
struct GroupConfig {
  std::optional<int64_t> consumerSessionTimeoutMs;
  std::optional<int64_t> consumerHeartbeatIntervalMs;
  bool operator==(const GroupConfig&) const = default;
};
inline constexpr std::string_view kConsumerSessionTimeoutKey = "consumer.session.timeout.ms";
inline constexpr std::string_view kConsumerHeartbeatIntervalKey = "consumer.heartbeat.interval.ms";
std::string encodeGroupConfig(const GroupConfig& c);
// nullopt when the data is not a JSON object; keys this version does not
// know are skipped, and a known key with a value that is not a whole number
// is nullopt (so `why` can say which).
std::optional<GroupConfig> decodeGroupConfig(std::string_view data, std::string* why = nullptr);

// A server's registration: where clients reach it (advertised.host/port)
// and, when it has an internal listener, where peers and clients inside its
// own network reach it (internal_host/internal_port; docs/design.md, "Two
// addresses"). An older server reads the first two and ignores the rest.
std::string encodeServer(const std::string& host, uint16_t port, const std::string& internalHost = "",
                         uint16_t internalPort = 0, uint16_t kafkaPort = 0);
std::optional<protocol::Broker> decodeServer(int32_t id, std::string_view data);
// The internal address of a registration; nullopt when it has none (or it
// is unreadable).
std::optional<protocol::Broker> decodeServerInternal(int32_t id, std::string_view data);
// Where Kafka clients reach a server's Kafka port (docs/kafka.md): its
// advertised host and "kafka_port"; nullopt when it has none.
std::optional<protocol::Broker> decodeServerKafka(int32_t id, std::string_view data);

std::string encodeMember(std::string_view clientId);

// What a controller handing a group over knew about its members and who
// holds which partition (docs/design.md, "Handover"), kept in the data of
// the group's members znode. The next controller trusts it only if it is
// the first to claim the group after it: the group znode's child version
// (cversion) is then `cversion + 1` (the handover removed the controller
// znode, leaving `cversion`; the claim created it again) and the generation
// is unchanged.
struct HandedMember {
  std::string clientId;
  std::vector<protocol::TopicPartition> held;
  // Its partitions in the generation's assignment: the next controller
  // keeps that assignment (members heartbeating at this generation release
  // what it does not give them).
  std::vector<protocol::TopicPartition> target;
  bool operator==(const HandedMember&) const = default;
};
struct HandoverRecord {
  int32_t from = -1;        // the server that handed the group over
  int32_t to = -1;          // the server it was meant for
  int32_t generation = -1;  // the group znode's version at the handover
  int32_t cversion = -1;    // the group znode's cversion just after it
  // The handover removed the member znodes (they belonged to the old
  // controller's session): the next controller creates them again. False
  // for a group too large to move in one transaction: its member znodes
  // stayed.
  bool movedMembers = false;
  std::map<std::string, HandedMember> members;
  bool operator==(const HandoverRecord&) const = default;
};

std::string encodeHandover(const HandoverRecord& r);
// nullopt for anything else (the empty data CreateGroup writes, or data of
// a format this version does not know).
std::optional<HandoverRecord> decodeHandover(std::string_view data);

// The group's last rebalance reasons (docs/design.md, "Rebalance history"),
// in the history znode: written by the controller in each membership
// transaction, read by the next controller when it takes the group over.
struct HistoryRecord {
  int32_t controller = -1;  // the server that wrote it
  std::vector<protocol::RebalanceEvent> events;  // oldest first
  bool operator==(const HistoryRecord&) const = default;
};

std::string encodeHistory(const HistoryRecord& r);
// nullopt for data of another format (or none). Events that are not
// objects of the known fields are skipped, not fatal: the history is for
// people, and a partly readable one is better than none.
std::optional<HistoryRecord> decodeHistory(std::string_view data);

// A znode name that is a whole decimal number (a server's or a broker's id).
std::optional<int32_t> parseNodeId(std::string_view name);

// Kafka's topic metadata, {"version":1,"partitions":{"0":[..],"1":[..]}}:
// the number of partitions, or nullopt when the data is not that.
std::optional<int32_t> decodeTopicPartitions(std::string_view data);
std::string encodeTopic(int32_t partitions);
// The same document's replicas: the broker ids of each partition, by
// partition number; nullopt when decodeTopicPartitions would say nullopt.
// Replica ids that are not integers are skipped.
std::optional<std::vector<std::vector<int32_t>>> decodeTopicReplicas(std::string_view data);
std::string encodeTopicReplicas(const std::vector<std::vector<int32_t>>& replicas);
// The same document with `partitions` partitions (`groupctl topic grow`):
// every other field as it was (the version, "topic_id" when present and
// none when absent, so that the topic's id stays the same either way), the
// existing partitions' replicas as they were, and new partition p with the
// replicas of partition p % (the old count), as Kafka spreads new
// partitions over the brokers of the old ones ([0] when there were none).
// nullopt when decodeTopicPartitions would say nullopt or `partitions` is
// not more than the current count (partitions are never removed).
std::optional<std::string> growTopic(std::string_view data, int32_t partitions);

// A topic's id, as Kafka keeps it in the topic's znode since 2.8:
// "topic_id", 16 bytes written as unpadded base64url (22 characters).
// Kafka clients of the new consumer protocol name topics by it.
using TopicId = std::array<uint8_t, 16>;
// The id in a topic's znode; nullopt when it has none (a topic written
// before ids) or "topic_id" is not 16 bytes of base64url.
std::optional<TopicId> decodeTopicId(std::string_view data);
// The id of a topic whose znode has none: derived from its name alone, so
// that every server (and every restart) gives it the same one. Never the
// zero id or the other id Kafka reserves (0...01).
TopicId derivedTopicId(std::string_view topic);
// The topic's id: the one in its znode, else derivedTopicId().
TopicId topicIdOf(std::string_view topic, std::string_view data);
// A fresh random id for a new topic, as Kafka makes one: not a reserved id,
// and its text does not start with '-' (it would read as an option).
TopicId randomTopicId();
// The id as Kafka writes it (unpadded base64url), and back.
std::string topicIdText(const TopicId& id);
std::optional<TopicId> parseTopicId(std::string_view text);
// A topic's znode as Kafka 2.8 and later write it: version 3, with its id.
std::string encodeTopic(int32_t partitions, const TopicId& id);

// Kafka's broker registration, <brokers-path>/<id>, a JSON object with
// "rack": the rack, "" when the field is absent, null or empty; nullopt
// when the data is not a JSON object or "rack" is neither string nor null.
std::optional<std::string> decodeBrokerRack(std::string_view data);
// A broker registration as Kafka writes it (the fields groupcoord reads and
// a few it does not); an empty rack writes null.
std::string encodeBroker(const std::string& host, int32_t port, const std::string& rack);

}  // namespace groupcoord::layout
