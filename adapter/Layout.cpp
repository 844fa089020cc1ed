#include "adapter/Layout.h"

#include <nlohmann/json.hpp>

namespace groupcoord::adapter {

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

}  // namespace groupcoord::adapter
