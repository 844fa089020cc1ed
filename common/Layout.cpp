#include "common/Layout.h"

#include <nlohmann/json.hpp>

namespace groupcoord::layout {

using nlohmann::json;

std::string encodeSettings(const GroupSettings& s) {
  json j;
  j["session_timeout_ms"] = s.sessionTimeoutMs;
  j["topics"] = s.topics;
  j["ephemeral"] = s.ephemeral;
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
  return s;
}

std::string encodeServer(const std::string& host, uint16_t port) {
  json j;
  j["host"] = host;
  j["port"] = port;
  return j.dump();
}

std::optional<protocol::Broker> decodeServer(int32_t id, std::string_view data) {
  json j = json::parse(data, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto host = j.find("host");
  auto port = j.find("port");
  if (host == j.end() || !host->is_string() || port == j.end() || !port->is_number_unsigned()) return std::nullopt;
  auto p = port->get<uint64_t>();
  if (p > 65535) return std::nullopt;
  return protocol::Broker{id, host->get<std::string>(), static_cast<uint16_t>(p)};
}

std::string encodeMember(std::string_view clientId) {
  json j;
  j["client_id"] = std::string(clientId);
  // ClientId is free text from the wire: invalid UTF-8 is replaced, never thrown on.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
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

}  // namespace groupcoord::layout
