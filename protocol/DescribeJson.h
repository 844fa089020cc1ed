#pragma once

// The one JSON encoding of the DescribeGroup answer and of ListGroups'
// GroupInfo, shared by the status page's /api and `groupctl --output json`.
// Every key is snake_case; the keys, their types and their meaning are in
// docs/protocol.md, "DescribeGroup as JSON". Fields are only ever added.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/Messages.h"

namespace groupcoord::protocol {

// {"id","host","port"}; null for no broker (Broker::isNone()).
nlohmann::json brokerJson(const Broker& broker);
// [{"topic","partition"}...]
nlohmann::json topicPartitionsJson(const std::vector<TopicPartition>& partitions);
// [{"topic","partition","offset"}...] (offset -1: nothing committed)
nlohmann::json offsetsJson(const std::vector<PartitionOffset>& offsets);
// One group as ListGroups lists it.
nlohmann::json groupInfoJson(const GroupInfo& group);
// The whole DescribeGroup answer, with its partition rows (PartitionRows.h).
nlohmann::json describeGroupJson(const DescribeGroupResponse& group);

// A group's protocol in a few words, as groupctl and the status page show
// it: "groupcoord" for a native group, "kafka" for a Kafka group, with its
// protocol type and chosen protocol (the assignor) once it has had a
// stable generation: "kafka consumer (range)".
std::string protocolText(bool kafka, std::string_view protocolType, std::string_view protocolName);

// Two lowercase hex digits per byte ("" for none).
std::string hexBytes(std::string_view bytes);

// The document as text: indented by 2, one line end after it. Invalid
// UTF-8 (a client id a hostile client sent) becomes U+FFFD instead of
// failing.
std::string dumpJson(const nlohmann::json& document);

}  // namespace groupcoord::protocol
