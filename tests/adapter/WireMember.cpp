#include "WireMember.h"

#include <thread>

namespace groupcoord::testing {

using namespace std::chrono_literals;
using protocol::ErrorCode;

template <typename Resp>
std::optional<Resp> callOnce(uint16_t port, const protocol::Request& request, std::chrono::milliseconds timeout) {
  client::Connection c;
  if (!c.connect("127.0.0.1", port, timeout)) return std::nullopt;
  auto r = c.call(request, timeout);
  if (!r.ok) return std::nullopt;
  if (auto* typed = std::get_if<Resp>(&r.response)) return *typed;
  return std::nullopt;
}

template std::optional<protocol::CreateGroupResponse> callOnce(uint16_t, const protocol::Request&,
                                                               std::chrono::milliseconds);
template std::optional<protocol::ListGroupsResponse> callOnce(uint16_t, const protocol::Request&,
                                                              std::chrono::milliseconds);
template std::optional<protocol::DeleteGroupResponse> callOnce(uint16_t, const protocol::Request&,
                                                               std::chrono::milliseconds);
template std::optional<protocol::HeartbeatResponse> callOnce(uint16_t, const protocol::Request&,
                                                             std::chrono::milliseconds);
template std::optional<protocol::RegisterConsumerResponse> callOnce(uint16_t, const protocol::Request&,
                                                                    std::chrono::milliseconds);
template std::optional<protocol::FetchOffsetsResponse> callOnce(uint16_t, const protocol::Request&,
                                                                std::chrono::milliseconds);
template std::optional<protocol::LeaveGroupResponse> callOnce(uint16_t, const protocol::Request&,
                                                              std::chrono::milliseconds);

protocol::CreateGroupResponse createGroup(uint16_t port, const std::string& group, int64_t sessionTimeoutMs,
                                          bool ephemeral, std::vector<std::string> topics) {
  auto r = callOnce<protocol::CreateGroupResponse>(
      port, protocol::CreateGroupRequest{group, sessionTimeoutMs, std::move(topics), ephemeral});
  if (!r) return protocol::CreateGroupResponse{group, ErrorCode::UNKNOWN_SERVER_ERROR, {}};
  return *r;
}

protocol::GroupInfo describeGroup(uint16_t port, const std::string& group) {
  auto r = callOnce<protocol::ListGroupsResponse>(port, protocol::ListGroupsRequest{{group}});
  if (!r || r->groups.size() != 1) {
    protocol::GroupInfo info;
    info.name = group;
    info.error = ErrorCode::UNKNOWN_SERVER_ERROR;
    return info;
  }
  return r->groups[0];
}

WireMember::WireMember(std::string group, std::vector<uint16_t> servers, std::string clientId)
    : group_(std::move(group)), servers_(std::move(servers)), clientId_(std::move(clientId)) {}

bool WireMember::connectToController() {
  if (conn_.isOpen()) return true;
  // Ask any live server where the controller is.
  for (uint16_t port : servers_) {
    auto info =
        callOnce<protocol::ListGroupsResponse>(port, protocol::ListGroupsRequest{{group_}}, requestCallTimeout());
    if (!info || info->groups.size() != 1 || info->groups[0].controller.isNone()) continue;
    uint16_t target = info->groups[0].controller.port;
    conn_.setClientId(clientId_);
    if (conn_.connect("127.0.0.1", target, 3000ms)) {
      controllerPort_ = target;
      return true;
    }
  }
  return false;
}

protocol::RegisterConsumerResponse WireMember::join(std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  protocol::RegisterConsumerResponse last;
  last.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!connectToController()) {
      std::this_thread::sleep_for(100ms);
      continue;
    }
    auto r = conn_.call(protocol::RegisterConsumerRequest{group_, id_, {}}, registerCallTimeout());
    if (!r.ok) {
      conn_.close();
      continue;
    }
    last = std::get<protocol::RegisterConsumerResponse>(r.response);
    if (last.error == ErrorCode::NONE) {
      id_ = last.consumerId;
      generation_ = last.generation;
      return last;
    }
    if (last.error == ErrorCode::NOT_CONTROLLER) conn_.close();
    if (last.error != ErrorCode::NOT_CONTROLLER && last.error != ErrorCode::CONTROLLER_NOT_AVAILABLE) return last;
    std::this_thread::sleep_for(100ms);
  }
  return last;
}

protocol::HeartbeatResponse WireMember::heartbeat() {
  protocol::HeartbeatResponse out;
  out.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
  if (!conn_.isOpen() && !connectToController()) return out;
  auto r = conn_.call(protocol::HeartbeatRequest{group_, id_, generation_}, heartbeatCallTimeout());
  if (!r.ok) {
    conn_.close();
    return out;
  }
  return std::get<protocol::HeartbeatResponse>(r.response);
}

protocol::ErrorCode WireMember::leave() {
  if (!conn_.isOpen() && !connectToController()) return ErrorCode::CONTROLLER_NOT_AVAILABLE;
  auto r = conn_.call(protocol::LeaveGroupRequest{group_, id_}, requestCallTimeout());
  if (!r.ok) return ErrorCode::CONTROLLER_NOT_AVAILABLE;
  return std::get<protocol::LeaveGroupResponse>(r.response).error;
}

bool WireMember::settle(std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto hb = heartbeat();
    switch (hb.error) {
      case ErrorCode::NONE:
        return true;
      case ErrorCode::REBALANCE_NEEDED:
      case ErrorCode::UNKNOWN_CONSUMER:
        join(deadline - std::chrono::steady_clock::now() > 0ms
                 ? std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
                 : 1ms);
        break;
      case ErrorCode::NOT_CONTROLLER:
        conn_.close();
        break;
      default:
        conn_.close();
        std::this_thread::sleep_for(100ms);
        break;
    }
  }
  return false;
}

}  // namespace groupcoord::testing
