#include "client/Admin.h"

#include <algorithm>
#include <thread>

#include "protocol/Codec.h"

namespace groupcoord::client {

using protocol::ErrorCode;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

protocol::ErrorCode responseErrorOf(const protocol::Response& response) { return protocol::responseError(response); }

std::string describeError(ErrorCode code, std::string_view api, const Endpoint& server, std::string_view group) {
  std::string where = server.first + ":" + std::to_string(server.second);
  switch (code) {
    case ErrorCode::NOT_CONTROLLER:
      return "server at " + where + " is not the controller of group " + std::string(group);
    case ErrorCode::CONTROLLER_NOT_AVAILABLE:
      return "group " + std::string(group) + " has no reachable controller (last tried " + where + ")";
    default:
      return std::string(api) + " of group " + std::string(group) + " at " + where + ": " +
             std::string(protocol::errorMessage(code));
  }
}

namespace {

bool retriable(ErrorCode code) {
  return code == ErrorCode::NOT_CONTROLLER || code == ErrorCode::CONTROLLER_NOT_AVAILABLE;
}

std::string groupOf(const protocol::Request& request) {
  return std::visit(
      [](const auto& r) -> std::string {
        if constexpr (requires { r.group; }) return r.group;
        return {};
      },
      request);
}

// DrainServer names a server, not a group: its refusals say so.
std::string describeDrainError(ErrorCode code, const protocol::DrainServerRequest& r, const Endpoint& server) {
  const std::string what = std::string(r.drain ? "draining" : "undraining") + " server " + std::to_string(r.serverId);
  const std::string where = server.first + ":" + std::to_string(server.second);
  switch (code) {
    case ErrorCode::INVALID_REQUEST:
      return what + " refused by " + where + ": server ids are 0 or more";
    case ErrorCode::NOT_AUTHORIZED:
      return what + " refused by " + where + ": only an admin may drain or undrain servers";
    case ErrorCode::CONTROLLER_NOT_AVAILABLE:
      return what + ": the server at " + where + " could not write the marker to ZooKeeper; retry";
    default:
      return what + " at " + where + ": " + std::string(protocol::errorMessage(code));
  }
}

// DescribeServers names no group either.
std::string describeServersError(ErrorCode code, const Endpoint& server) {
  const std::string where = server.first + ":" + std::to_string(server.second);
  switch (code) {
    case ErrorCode::UNKNOWN_API:
      return "the server at " + where + " does not know DescribeServers (it is older than this client)";
    case ErrorCode::CONTROLLER_NOT_AVAILABLE:
      return "the server at " + where + " is not connected to ZooKeeper; retry";
    default:
      return "DescribeServers at " + where + ": " + std::string(protocol::errorMessage(code));
  }
}

// Sleeps the next step of a bounded exponential backoff; false when the
// budget would be exceeded.
bool backoff(std::chrono::milliseconds& step, Clock::time_point deadline) {
  auto now = Clock::now();
  if (now >= deadline) return false;
  std::this_thread::sleep_for(std::min<Clock::duration>(step, deadline - now));
  step = std::min<std::chrono::milliseconds>(step * 2, 1000ms);
  return true;
}

}  // namespace

Admin::Admin(std::vector<Endpoint> bootstrap, AdminOptions options)
    : bootstrap_(std::move(bootstrap)), options_(std::move(options)) {
  conn_.setClientId(options_.clientId);
  conn_.setSecurity(options_.security);
}

Result<protocol::Response> Admin::callOn(const Endpoint& server, const protocol::Request& request) {
  Result<protocol::Response> out;
  const std::string group = groupOf(request);
  if (!conn_.isOpen() || connectedTo_ != server) {
    connectedTo_.reset();
    if (!conn_.connect(server.first, server.second, options_.requestTimeout)) {
      std::string why =
          "cannot connect to " + server.first + ":" + std::to_string(server.second) + ": " + conn_.lastError();
      out.status = conn_.unreachable() ? Status::unreachableError(std::move(why))
                                       : Status::error(ErrorCode::NOT_AUTHORIZED, std::move(why));
      return out;
    }
    connectedTo_ = server;
  }
  // The newest version of the API, one less each time a server says it
  // does not speak it (an older server), down to version 0; a client-mode
  // CreateGroup cannot be said below version 1.
  const protocol::ApiKey api = protocol::apiKeyOf(request);
  const auto* create = std::get_if<protocol::CreateGroupRequest>(&request);
  const int16_t floor = create && create->mode != protocol::AssignmentMode::SERVER ? 1 : 0;
  auto ceiling = ceiling_.find(api);
  int16_t version = ceiling == ceiling_.end() ? protocol::maxVersion(api) : ceiling->second;
  auto r = conn_.call(request, options_.requestTimeout, version);
  while (r.ok && version > floor && std::holds_alternative<protocol::ErrorOnlyResponse>(r.response) &&
         protocol::responseError(r.response) == ErrorCode::UNSUPPORTED_VERSION) {
    ceiling_[api] = --version;
    r = conn_.call(request, options_.requestTimeout, version);
  }
  if (!r.ok) {
    // A connection that timed out may still deliver the late answer: never reuse it.
    conn_.close();
    connectedTo_.reset();
    out.status = Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE,
                               std::string(protocol::apiName(protocol::apiKeyOf(request))) + " to " + server.first +
                                   ":" + std::to_string(server.second) + " failed: " +
                                   std::string(ioStatusName(conn_.lastStatus())) + " " + r.detail);
    return out;
  }
  out.value = std::move(r.response);
  ErrorCode code = responseErrorOf(out.value);
  if (code != ErrorCode::NONE) {
    const auto* drain = std::get_if<protocol::DrainServerRequest>(&request);
    if (drain) {
      out.status = Status::error(code, describeDrainError(code, *drain, server));
    } else if (std::holds_alternative<protocol::DescribeServersRequest>(request)) {
      out.status = Status::error(code, describeServersError(code, server));
    } else {
      out.status =
          Status::error(code, describeError(code, protocol::apiName(protocol::apiKeyOf(request)), server, group));
    }
  }
  return out;
}

Result<protocol::Response> Admin::callAny(const protocol::Request& request) {
  auto deadline = Clock::now() + options_.retryBudget;
  auto step = 50ms;
  Result<protocol::Response> last;
  last.status = Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE, "no bootstrap server given");
  if (bootstrap_.empty()) return last;
  for (;;) {
    // One pass over every server, starting with the one that answered last.
    for (size_t i = 0; i < bootstrap_.size(); ++i) {
      const Endpoint& server = bootstrap_[(nextBootstrap_ + i) % bootstrap_.size()];
      last = callOn(server, request);
      if (last.status.code != ErrorCode::CONTROLLER_NOT_AVAILABLE) {
        nextBootstrap_ = (nextBootstrap_ + i) % bootstrap_.size();
        return last;
      }
    }
    if (!backoff(step, deadline)) return last;
  }
}

Result<protocol::Response> Admin::callController(const std::string& group, const protocol::Request& request) {
  auto deadline = Clock::now() + options_.retryBudget;
  auto step = 50ms;
  Result<protocol::Response> last;
  for (;;) {
    auto listed = callAny(protocol::ListGroupsRequest{{group}});
    if (!listed.ok()) return listed;
    auto& groups = std::get<protocol::ListGroupsResponse>(listed.value).groups;
    if (groups.size() != 1) {
      last.status = Status::error(ErrorCode::UNKNOWN_SERVER_ERROR, "ListGroups answered no GroupInfo for " + group);
      return last;
    }
    const auto& info = groups[0];
    if (info.error != ErrorCode::NONE) {
      last.status = Status::error(info.error, "group " + group + ": " + std::string(protocol::errorMessage(info.error)));
      return last;
    }
    if (info.controller.isNone()) {
      last.status = Status::error(ErrorCode::CONTROLLER_NOT_AVAILABLE, "group " + group + " has no controller yet");
    } else {
      Endpoint controller{info.controller.host.empty() ? "127.0.0.1" : info.controller.host, info.controller.port};
      last = callOn(controller, request);
      if (!retriable(last.status.code)) return last;
    }
    if (!backoff(step, deadline)) return last;
  }
}

Result<protocol::Broker> Admin::createGroup(const std::string& group, std::chrono::milliseconds sessionTimeout,
                                            const std::vector<std::string>& topics, bool ephemeral,
                                            protocol::AssignmentMode mode) {
  Result<protocol::Broker> out;
  auto r = callAny(protocol::CreateGroupRequest{group, sessionTimeout.count(), topics, ephemeral, mode});
  out.status = r.status;
  if (auto* resp = std::get_if<protocol::CreateGroupResponse>(&r.value)) out.value = resp->controller;
  return out;
}

Status Admin::deleteGroup(const std::string& group) {
  return callController(group, protocol::DeleteGroupRequest{group}).status;
}

Result<std::vector<protocol::GroupInfo>> Admin::listGroups(const std::vector<std::string>& names) {
  Result<std::vector<protocol::GroupInfo>> out;
  auto r = callAny(protocol::ListGroupsRequest{names});
  out.status = r.status;
  if (auto* resp = std::get_if<protocol::ListGroupsResponse>(&r.value)) out.value = std::move(resp->groups);
  return out;
}

Result<protocol::DescribeGroupResponse> Admin::describeGroup(const std::string& group) {
  Result<protocol::DescribeGroupResponse> out;
  auto r = callController(group, protocol::DescribeGroupRequest{group});
  out.status = r.status;
  if (auto* resp = std::get_if<protocol::DescribeGroupResponse>(&r.value)) out.value = std::move(*resp);
  return out;
}

Result<protocol::GroupInfo> Admin::groupInfo(const std::string& group) {
  Result<protocol::GroupInfo> out;
  auto listed = listGroups({group});
  out.status = listed.status;
  if (!listed.ok()) return out;
  if (listed.value.size() != 1) {
    out.status = Status::error(ErrorCode::UNKNOWN_SERVER_ERROR, "ListGroups answered no GroupInfo for " + group);
    return out;
  }
  out.value = std::move(listed.value[0]);
  if (out.value.error != ErrorCode::NONE)
    out.status =
        Status::error(out.value.error, "group " + group + ": " + std::string(protocol::errorMessage(out.value.error)));
  return out;
}

Result<std::vector<protocol::PartitionOffset>> Admin::fetchOffsets(const std::string& group,
                                                                   const std::vector<std::string>& topics) {
  Result<std::vector<protocol::PartitionOffset>> out;
  auto r = callAny(protocol::FetchOffsetsRequest{group, topics});
  out.status = r.status;
  if (auto* resp = std::get_if<protocol::FetchOffsetsResponse>(&r.value)) out.value = std::move(resp->offsets);
  return out;
}

Result<std::vector<protocol::PartitionError>> Admin::rewind(const std::string& group,
                                                            const std::vector<protocol::PartitionOffset>& offsets) {
  Result<std::vector<protocol::PartitionError>> out;
  auto r = callController(group, protocol::RewindConsumerRequest{group, offsets});
  out.status = r.status;
  if (auto* resp = std::get_if<protocol::RewindConsumerResponse>(&r.value)) out.value = std::move(resp->results);
  return out;
}

Result<protocol::DescribeServersResponse> Admin::describeServers() {
  Result<protocol::DescribeServersResponse> out;
  auto r = callAny(protocol::DescribeServersRequest{});
  out.status = r.status;
  if (auto* resp = std::get_if<protocol::DescribeServersResponse>(&r.value)) out.value = std::move(*resp);
  return out;
}

Status Admin::drainServer(int32_t serverId, bool drain) {
  // Any server writes the marker; writing it again is a success, so the
  // retries of callAny are safe.
  return callAny(protocol::DrainServerRequest{serverId, drain}).status;
}

}  // namespace groupcoord::client
