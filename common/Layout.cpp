#include "common/Layout.h"

#include <charconv>
#include <random>
#include <climits>

#include <nlohmann/json.hpp>

namespace groupcoord::layout {

using nlohmann::json;

std::string encodeSettings(const GroupSettings& s) {
  json j;
  j["session_timeout_ms"] = s.sessionTimeoutMs;
  j["topics"] = s.topics;
  j["ephemeral"] = s.ephemeral;
  if (s.mode == protocol::AssignmentMode::CLIENT) j["assignment"] = "client";
  if (s.kafka) j["protocol"] = "kafka";
  return j.dump();
}

std::optional<GroupSettings> decodeSettings(std::string_view data) {
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  GroupSettings s;
  auto timeout = j.find("session_timeout_ms");
  auto topics = j.find("topics");
  if (timeout == j.end() || !timeout->is_number_integer()) return std::nullopt;
  s.sessionTimeoutMs = timeout->get<int64_t>();
  if (topics != j.end()) {
    if (!topics->is_array()) return std::nullopt;
    for (const auto& t : *topics) {
      if (!t.is_string()) return std::nullopt;
      s.topics.push_back(t.get<std::string>());
    }
  }
  auto eph = j.find("ephemeral");
  if (eph != j.end()) {
    if (!eph->is_boolean()) return std::nullopt;
    s.ephemeral = eph->get<bool>();
  }
  if (auto mode = j.find("assignment"); mode != j.end()) {
    // A mode this version does not know: not a group it can serve.
    if (!mode->is_string()) return std::nullopt;
    if (*mode == "client") {
      s.mode = protocol::AssignmentMode::CLIENT;
    } else if (*mode != "server") {
      return std::nullopt;
    }
  }
  if (auto proto = j.find("protocol"); proto != j.end()) {
    // A protocol this version does not know: not a group it can serve.
    if (!proto->is_string() || *proto != "kafka") return std::nullopt;
    s.kafka = true;
  }
  return s;
}

std::string encodeGroupConfig(const GroupConfig& c) {
  json j = json::object();
  if (c.consumerSessionTimeoutMs) j[std::string(kConsumerSessionTimeoutKey)] = *c.consumerSessionTimeoutMs;
  if (c.consumerHeartbeatIntervalMs) j[std::string(kConsumerHeartbeatIntervalKey)] = *c.consumerHeartbeatIntervalMs;
  return j.dump();
}

std::optional<GroupConfig> decodeGroupConfig(std::string_view data, std::string* why) {
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    if (why != nullptr) *why = "not a JSON object";
    return std::nullopt;
  }
  GroupConfig c;
  auto take = [&](std::string_view key, std::optional<int64_t>& into) {
    auto it = j.find(std::string(key));
    if (it == j.end()) return true;
    if (!it->is_number_integer()) {
      if (why != nullptr) *why = std::string(key) + " is not a whole number";
      return false;
    }
    into = it->get<int64_t>();
    return true;
  };
  if (!take(kConsumerSessionTimeoutKey, c.consumerSessionTimeoutMs)) return std::nullopt;
  if (!take(kConsumerHeartbeatIntervalKey, c.consumerHeartbeatIntervalMs)) return std::nullopt;
  return c;
}

// {"handover":1,"from":1,"to":2,"generation":7,"cversion":12,"moved_members":true,
//  "members":{"m-1":{"client_id":"svc","held":[["orders",0]],"target":[["orders",0],["orders",3]]},...}}
std::string encodeHandover(const HandoverRecord& r) {
  json j;
  j["handover"] = 1;
  j["from"] = r.from;
  j["to"] = r.to;
  j["generation"] = r.generation;
  j["cversion"] = r.cversion;
  j["moved_members"] = r.movedMembers;
  json members = json::object();
  auto list = [](const std::vector<protocol::TopicPartition>& parts) {
    json out = json::array();
    for (const auto& p : parts) out.push_back(json::array({p.topic, p.partition}));
    return out;
  };
  for (const auto& [id, m] : r.members) {
    members[id] = json{{"client_id", m.clientId}, {"held", list(m.held)}, {"target", list(m.target)}};
  }
  j["members"] = std::move(members);
  return j.dump();
}

std::optional<HandoverRecord> decodeHandover(std::string_view data) {
  if (data.empty()) return std::nullopt;
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto version = j.find("handover");
  if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 1) return std::nullopt;
  HandoverRecord r;
  for (auto [key, field] : {std::pair{"from", &r.from}, std::pair{"to", &r.to}, std::pair{"generation", &r.generation},
                            std::pair{"cversion", &r.cversion}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return std::nullopt;
    int64_t v = it->get<int64_t>();
    if (v < INT32_MIN || v > INT32_MAX) return std::nullopt;
    *field = static_cast<int32_t>(v);
  }
  auto moved = j.find("moved_members");
  if (moved == j.end() || !moved->is_boolean()) return std::nullopt;
  r.movedMembers = moved->get<bool>();
  auto members = j.find("members");
  if (members == j.end() || !members->is_object()) return std::nullopt;
  for (const auto& [id, m] : members->items()) {
    if (!m.is_object()) return std::nullopt;
    auto client = m.find("client_id");
    if (client == m.end() || !client->is_string()) return std::nullopt;
    HandedMember& out = r.members[id];
    out.clientId = client->get<std::string>();
    for (auto [key, parts] : {std::pair{"held", &out.held}, std::pair{"target", &out.target}}) {
      auto list = m.find(key);
      if (list == m.end() || !list->is_array()) return std::nullopt;
      for (const auto& p : *list) {
        if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_number_integer()) return std::nullopt;
        int64_t n = p[1].get<int64_t>();
        if (n < 0 || n > INT32_MAX) return std::nullopt;
        parts->push_back(protocol::TopicPartition{p[0].get<std::string>(), static_cast<int32_t>(n)});
      }
    }
  }
  return r;
}

std::string encodeHistory(const HistoryRecord& r) {
  json events = json::array();
  for (const auto& e : r.events) {
    events.push_back(json{{"t", e.timeMs},
                          {"g", e.generation},
                          {"r", static_cast<int>(e.reason)},
                          {"n", e.count},
                          {"m", e.consumerId},
                          {"c", e.clientId},
                          {"h", e.host},
                          {"s", e.subject},
                          {"v", e.value},
                          {"d", e.detail}});
  }
  json j{{"history", 1}, {"controller", r.controller}, {"events", std::move(events)}};
  // Client ids and hosts are free text from the wire: invalid UTF-8 is replaced, never thrown on.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<HistoryRecord> decodeHistory(std::string_view data) {
  if (data.empty()) return std::nullopt;
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto version = j.find("history");
  if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 1) return std::nullopt;
  HistoryRecord r;
  if (auto c = j.find("controller"); c != j.end() && c->is_number_integer()) {
    const int64_t v = c->get<int64_t>();
    if (v >= -1 && v <= INT32_MAX) r.controller = static_cast<int32_t>(v);
  }
  auto events = j.find("events");
  if (events == j.end() || !events->is_array()) return r;
  auto integer = [](const json& e, const char* key, int64_t fallback) {
    auto it = e.find(key);
    return it != e.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
  };
  auto text = [](const json& e, const char* key) {
    auto it = e.find(key);
    return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  for (const auto& e : *events) {
    if (!e.is_object() || !e.contains("t") || !e.contains("g") || !e.contains("r")) continue;
    protocol::RebalanceEvent out;
    out.timeMs = integer(e, "t", 0);
    out.generation = integer(e, "g", -1);
    const int64_t reason = integer(e, "r", 0);
    out.reason = static_cast<protocol::RebalanceReason>(reason >= INT16_MIN && reason <= INT16_MAX ? reason : 0);
    const int64_t count = integer(e, "n", 1);
    out.count = static_cast<int32_t>(count >= 1 && count <= INT32_MAX ? count : 1);
    out.consumerId = text(e, "m");
    out.clientId = text(e, "c");
    out.host = text(e, "h");
    out.subject = text(e, "s");
    out.value = integer(e, "v", -1);
    out.detail = text(e, "d");
    r.events.push_back(std::move(out));
  }
  return r;
}

std::string encodeServer(const std::string& host, uint16_t port, const std::string& internalHost,
                         uint16_t internalPort, uint16_t kafkaPort) {
  json j;
  j["host"] = host;
  j["port"] = port;
  if (!internalHost.empty() && internalPort != 0) {
    j["internal_host"] = internalHost;
    j["internal_port"] = internalPort;
  }
  if (kafkaPort != 0) j["kafka_port"] = kafkaPort;
  return j.dump();
}

namespace {
std::optional<protocol::Broker> decodeAddress(int32_t id, std::string_view data, const char* hostKey,
                                              const char* portKey) {
  json j = json::parse(data, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto host = j.find(hostKey);
  auto port = j.find(portKey);
  if (host == j.end() || !host->is_string() || port == j.end() || !port->is_number_unsigned()) return std::nullopt;
  auto p = port->get<uint64_t>();
  if (p > 65535) return std::nullopt;
  return protocol::Broker{id, host->get<std::string>(), static_cast<uint16_t>(p)};
}
}  // namespace

std::optional<protocol::Broker> decodeServer(int32_t id, std::string_view data) {
  return decodeAddress(id, data, "host", "port");
}

std::optional<protocol::Broker> decodeServerInternal(int32_t id, std::string_view data) {
  auto b = decodeAddress(id, data, "internal_host", "internal_port");
  if (b && (b->host.empty() || b->port == 0)) return std::nullopt;
  return b;
}

std::optional<protocol::Broker> decodeServerKafka(int32_t id, std::string_view data) {
  auto b = decodeAddress(id, data, "host", "kafka_port");
  if (b && (b->host.empty() || b->port == 0)) return std::nullopt;
  return b;
}

std::string encodeMember(std::string_view clientId) {
  json j;
  j["client_id"] = std::string(clientId);
  // ClientId is free text from the wire: invalid UTF-8 is replaced, never thrown on.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<int32_t> parseNodeId(std::string_view name) {
  int32_t v = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return v;
}

std::optional<int32_t> decodeTopicPartitions(std::string_view data) {
  json j = json::parse(data, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto parts = j.find("partitions");
  if (parts == j.end() || !parts->is_object()) return std::nullopt;
  // Partitions are numbered 0..N-1; a gap means the metadata is not usable.
  int32_t n = static_cast<int32_t>(parts->size());
  for (int32_t i = 0; i < n; ++i)
    if (!parts->contains(std::to_string(i))) return std::nullopt;
  return n;
}

std::string encodeTopic(int32_t partitions) {
  json parts = json::object();
  for (int32_t i = 0; i < partitions; ++i) parts[std::to_string(i)] = json::array({0});
  json j;
  j["version"] = 1;
  j["partitions"] = parts;
  return j.dump();
}

std::optional<std::vector<std::vector<int32_t>>> decodeTopicReplicas(std::string_view data) {
  auto n = decodeTopicPartitions(data);
  if (!n) return std::nullopt;
  const json j = json::parse(data, nullptr, false);
  const json& parts = j.at("partitions");
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(*n));
  for (int32_t i = 0; i < *n; ++i) {
    const json& ids = parts.at(std::to_string(i));
    if (!ids.is_array()) continue;
    for (const json& id : ids) {
      if (id.is_number_integer() && id.get<int64_t>() >= INT32_MIN && id.get<int64_t>() <= INT32_MAX)
        out[static_cast<size_t>(i)].push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  }
  return out;
}

std::string encodeTopicReplicas(const std::vector<std::vector<int32_t>>& replicas) {
  json parts = json::object();
  for (size_t i = 0; i < replicas.size(); ++i) parts[std::to_string(i)] = replicas[i];
  json j;
  j["version"] = 1;
  j["partitions"] = parts;
  return j.dump();
}

std::optional<std::string> growTopic(std::string_view data, int32_t partitions) {
  const auto n = decodeTopicPartitions(data);
  if (!n || partitions <= *n) return std::nullopt;
  json j = json::parse(data, nullptr, false);
  json& parts = j.at("partitions");
  for (int32_t p = *n; p < partitions; ++p)
    parts[std::to_string(p)] = *n > 0 ? json(parts.at(std::to_string(p % *n))) : json::array({0});
  return j.dump();
}

namespace {
constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int base64UrlValue(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

bool reservedTopicId(const TopicId& id) {
  for (size_t i = 0; i + 1 < id.size(); ++i) {
    if (id[i] != 0) return false;
  }
  return id.back() <= 1;  // zero, and Kafka's 0...01
}

// Not reserved, and its text does not start with '-' (the top six bits 62).
TopicId usable(TopicId id) {
  if ((id[0] >> 2) == 62) id[0] ^= 0x80;
  if (reservedTopicId(id)) id[0] = 0x40;
  return id;
}
}  // namespace

std::string topicIdText(const TopicId& id) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : id) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kBase64Url[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kBase64Url[(acc << (6 - bits)) & 0x3f]);
  return out;
}

std::optional<TopicId> parseTopicId(std::string_view text) {
  // 16 bytes are 22 characters, the last carrying 2 bits and 4 zeros.
  if (text.size() != 22) return std::nullopt;
  TopicId id{};
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;
  for (char c : text) {
    const int v = base64UrlValue(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      id[n++] = static_cast<uint8_t>((acc >> bits) & 0xff);
    }
  }
  if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;  // not the canonical text
  return id;
}

std::optional<TopicId> decodeTopicId(std::string_view data) {
  const json j = json::parse(data, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto id = j.find("topic_id");
  if (id == j.end() || !id->is_string()) return std::nullopt;
  return parseTopicId(id->get<std::string>());
}

TopicId derivedTopicId(std::string_view topic) {
  // Two chained 64-bit FNV-1a hashes of the name: the same on every server,
  // and 128 bits, so two topics of a cluster sharing one is no concern.
  auto fnv = [&](uint64_t h) {
    for (char c : topic) {
      h ^= static_cast<uint8_t>(c);
      h *= 1099511628211ull;
    }
    return h;
  };
  const uint64_t a = fnv(14695981039346656037ull);
  const uint64_t b = fnv(a ^ 0x9e3779b97f4a7c15ull);
  TopicId id{};
  for (int i = 0; i < 8; ++i) {
    id[static_cast<size_t>(i)] = static_cast<uint8_t>(a >> (56 - 8 * i));
    id[static_cast<size_t>(8 + i)] = static_cast<uint8_t>(b >> (56 - 8 * i));
  }
  return usable(id);
}

TopicId topicIdOf(std::string_view topic, std::string_view data) {
  if (auto id = decodeTopicId(data); id && !reservedTopicId(*id)) return *id;
  return derivedTopicId(topic);
}

TopicId randomTopicId() {
  std::random_device rd;
  TopicId id{};
  for (size_t i = 0; i < id.size(); i += 4) {
    const uint32_t r = rd();
    for (size_t k = 0; k < 4; ++k) id[i + k] = static_cast<uint8_t>(r >> (8 * k));
  }
  return usable(id);
}

std::string encodeTopic(int32_t partitions, const TopicId& id) {
  json parts = json::object();
  for (int32_t i = 0; i < partitions; ++i) parts[std::to_string(i)] = json::array({0});
  json j;
  j["version"] = 3;
  j["topic_id"] = topicIdText(id);
  j["partitions"] = parts;
  j["adding_replicas"] = json::object();
  j["removing_replicas"] = json::object();
  return j.dump();
}

std::optional<std::string> decodeBrokerRack(std::string_view data) {
  const json j = json::parse(data, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto rack = j.find("rack");
  if (rack == j.end() || rack->is_null()) return std::string();
  if (!rack->is_string()) return std::nullopt;
  return rack->get<std::string>();
}

std::string encodeBroker(const std::string& host, int32_t port, const std::string& rack) {
  json j;
  j["version"] = 5;
  j["host"] = host;
  j["port"] = port;
  j["endpoints"] = json::array({"PLAINTEXT://" + host + ":" + std::to_string(port)});
  j["rack"] = rack.empty() ? json(nullptr) : json(rack);
  return j.dump();
}

}  // namespace groupcoord::layout
