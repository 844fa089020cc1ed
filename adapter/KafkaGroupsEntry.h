#pragma once

// KafkaGroups' state of one group controlled here (KafkaGroups.h), shared
// by the classic protocol's code (KafkaGroups.cpp) and the consumer
// protocol's (KafkaConsumerGroups.cpp). Guarded by KafkaGroups::mu_.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "adapter/KafkaGroups.h"

namespace groupcoord::adapter {

// A ConsumerGroupHeartbeat answer held until the group is saved.
struct KafkaGroups::HeldBeat {
  protocol::kafka::ResponseCallback done;
  protocol::kafka::ConsumerGroupHeartbeatResponse response;
};

struct KafkaGroups::Entry {
  struct Parked {
    protocol::kafka::ResponseCallback done;
  };
  uint64_t serial = 0;
  bool loading = true;
  // Being forgotten: nothing more is written for it.
  bool closing = false;
  std::optional<kafka::ClassicGroup> model;
  std::map<kafka::Ticket, Parked> parked;
  CommittedOffsets offsets;
  // The saved generation (<root>/kafka/<group>) names members: it is
  // removed when the last one leaves, so that a later controller does not
  // wait out their sessions.
  bool savedMembers = false;
  // The group znode's version as last written or read: the generation
  // ZooKeeper has. The model's runs ahead of it while a rebalance's
  // transaction is on its way.
  int32_t version = -1;
  // Member znodes this controller wrote, and those found when it loaded the
  // group (another session's, after a handover): replaced by its own.
  std::set<std::string> inZk;
  std::set<std::string> found;
  bool writing = false;
  // A write the group's controller was too busy for: tried again by tick().
  bool retry = false;
  // JoinGroup answers of a generation ZooKeeper does not have yet: sent
  // once it has.
  std::vector<std::pair<protocol::kafka::ResponseCallback, protocol::kafka::JoinGroupResponse>> held;

  // The consumer protocol's session timeout and heartbeat interval for this
  // group: the server's options, or the group's own settings
  // (<root>/config/groups/<group>, read when the group is loaded and
  // watched).
  kafka::ConsumerRules rules;
  // The group under the consumer protocol, once a member of it joined (or
  // a saved one was found). A group has members of one protocol at a time.
  std::optional<kafka::ConsumerGroup> consumer;
  // The topics its heartbeats are judged against (KafkaGroups::topicTable),
  // built for `topicNames` (every topic a member subscribes to, and those a
  // request named) when those change or one of them is read again, not on
  // every heartbeat; `topicsComplete` once every one of them was read.
  kafka::TopicTable topics;
  std::set<std::string> topicNames;
  bool topicsComplete = false;
  // Heartbeat answers waiting for the group to be saved: those of the next
  // save, and those of the save in flight.
  std::vector<HeldBeat> unsaved;
  std::vector<HeldBeat> saving;
  bool saveInFlight = false;
  // The saved group's znode version (<root>/kafka/<group>); -1: none.
  int32_t savedVersion = -1;
};

}  // namespace groupcoord::adapter
