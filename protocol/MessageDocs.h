#pragma once

// What is printed from the messages' descriptions (protocol/Schema.h) for
// people and for the Python codec: the field tables of docs/protocol.md and
// python/groupcoord/_layouts.py. `groupcoord-messages` writes them into a
// checkout and checks them (protocol_message_docs_test fails while one is
// stale); scripts/dev.sh generate runs it.

#include <string>
#include <string_view>
#include <vector>

namespace groupcoord::protocol::docs {

// One field of a structure as the docs and the Python table show it.
struct FieldDoc {
  std::string wire;    // "ConsumerGroup"
  std::string python;  // "group"
  std::string type;    // for people: "string", "[TopicPartition]", "Broker"
  std::string pythonType;  // for the Python codec: "str", "('array', 'TopicPartition')", "'enum8:1'"
  int since = 0;
  int until = -1;  // -1: every later version too
  std::string note;
};

struct StructDoc {
  std::string name;  // "HeartbeatRequest", "Broker"
  bool api = false;  // a request or a response
  std::vector<FieldDoc> fields;
  // The smallest encoding at versions 0 .. newest of the API it is used in
  // (structures: as far as any API's newest version goes).
  std::vector<size_t> smallest;
};

// Every described structure: the shared ones first (in the order of
// Messages.h), then each API's request and response, by ApiKey, then the
// error-only answer.
std::vector<StructDoc> describeAll();

// "0+", "1+", "0", "1-2".
std::string versionsText(int since, int until);

// The whole of python/groupcoord/_layouts.py.
std::string pythonLayouts();

// The markdown block that stands between the markers of `name` in
// docs/protocol.md: an API's request and response tables ("Heartbeat"), a
// structure's table ("MemberState"), kStructuresBlock, or a Kafka API's
// request, response and nested structures (kafkaBlockName("Heartbeat"),
// from protocol/kafka/Messages.h).
std::string fieldsBlock(std::string_view name);
inline constexpr std::string_view kStructuresBlock = "shared structures";
inline constexpr std::string_view kKafkaBlockPrefix = "Kafka ";
std::string kafkaBlockName(std::string_view api);

// docs/protocol.md with every marked block replaced by what it must hold.
// Sets *error (and returns "") when a required block is missing, a block's
// markers are repeated or out of order, or a block names nothing described.
std::string withFieldBlocks(const std::string& protocolMd, std::string* error);

// The markers around a block.
std::string beginMarker(std::string_view name);
std::string endMarker(std::string_view name);

// The blocks docs/protocol.md must have: every API, kStructuresBlock
// (which lists every structure's fields), and every Kafka API. A structure
// may have a block of its own as well.
std::vector<std::string> requiredBlocks();

}  // namespace groupcoord::protocol::docs
