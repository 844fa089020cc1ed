#include "server/HttpRoutes.h"

#include <chrono>
#include <optional>

#include "protocol/Codec.h"
#include "server/Auth.h"
#include "server/StatusPage.h"

namespace groupcoord::server {

namespace {

constexpr const char* kText = "text/plain; charset=utf-8";
constexpr const char* kHtml = "text/html; charset=utf-8";
constexpr const char* kJson = "application/json";

HttpAnswer answer(int status, const std::string& contentType, std::string body) {
  HttpAnswer a;
  a.status = status;
  a.contentType = contentType;
  a.body = std::move(body);
  return a;
}

// Percent-decoding (RFC 3986 section 2.1); nullopt for a malformed escape.
std::optional<std::string> percentDecode(const std::string& s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0) return std::nullopt;
    out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
    i += 2;
  }
  return out;
}

// What the status routes are asked for.
struct StatusRoute {
  enum Kind { Fleet, Group, ApiFleet, ApiGroups, ApiGroup, ApiServers, BadGroup, None } kind = None;
  std::string group;
  bool api() const { return kind == ApiFleet || kind == ApiGroups || kind == ApiGroup || kind == ApiServers; }
};

// A group's name from the rest of the path: percent-decoded, then held to
// the protocol's rule for names. Empty when it is not a valid name.
std::string groupFromPath(const std::string& rest) {
  const auto name = percentDecode(rest);
  return name && protocol::isValidName(*name) ? *name : "";
}

StatusRoute statusRoute(const std::string& path) {
  StatusRoute r;
  auto group = [&](size_t prefix, StatusRoute::Kind kind) {
    r.group = groupFromPath(path.substr(prefix));
    r.kind = r.group.empty() ? StatusRoute::BadGroup : kind;
  };
  static const std::string kGroups = "/groups/";
  static const std::string kApiGroups = "/api/groups/";
  if (path == "/") {
    r.kind = StatusRoute::Fleet;
  } else if (path == "/api/fleet") {
    r.kind = StatusRoute::ApiFleet;
  } else if (path == "/api/groups") {
    r.kind = StatusRoute::ApiGroups;
  } else if (path == "/api/servers") {
    r.kind = StatusRoute::ApiServers;
  } else if (path.rfind(kGroups, 0) == 0) {
    group(kGroups.size(), StatusRoute::Group);
  } else if (path.rfind(kApiGroups, 0) == 0) {
    group(kApiGroups.size(), StatusRoute::ApiGroup);
    if (r.kind == StatusRoute::BadGroup) r.group = "api";
  }
  return r;
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A request that is not a plain GET: its answer, which closes the
// connection (its body, if any, is never read).
std::optional<HttpAnswer> refusal(const HttpRequestHead& head) {
  if (head.method != "GET") {
    HttpAnswer a = answer(405, kText, "method not allowed: only GET is served\n");
    a.fields.emplace_back("Allow", "GET");
    a.close = true;
    return a;
  }
  if (head.announcesBody()) {
    HttpAnswer a = answer(400, kText, "a GET request carries no body\n");
    a.close = true;
    return a;
  }
  return std::nullopt;
}

// The admin's credentials when the request carries them (or when no
// credentials are configured); otherwise the 401 answer.
std::optional<Viewer> authorize(const HttpRequestHead& head, const HttpOptions& options, bool api,
                                HttpAnswer* denied) {
  if (!options.credentials) return Viewer{};
  // With permissions, every user may look, at what the rules let it describe.
  auto policy = options.permissions ? options.permissions() : nullptr;
  std::string why = policy ? "credentials are needed (HTTP Basic)" : "credentials of an admin are needed (HTTP Basic)";
  if (const auto authorization = head.field("authorization")) {
    if (const auto basic = basicCredentials(*authorization)) {
      const auto role = options.credentials->verify(basic->first, basic->second);
      if (role && (policy || role == Role::Admin)) return Viewer{basic->first, basic->second, policy, *role};
      why = role ? "this user is not an admin" : "unknown user or wrong secret";
    } else {
      why = "only HTTP Basic credentials are accepted";
    }
  }
  const StatusError error{protocol::ErrorCode::NOT_AUTHORIZED, why};
  *denied = answer(401, api ? kJson : kHtml, api ? errorJson(error) : renderErrorPage(401, error));
  denied->fields.emplace_back("WWW-Authenticate", "Basic realm=\"groupcoord\"");
  return std::nullopt;
}

// Leaves in `fleet` only the groups the viewer may describe: the list, each
// server's, and the placement's moves.
void keepDescribable(FleetView& fleet, const Viewer& viewer) {
  std::erase_if(fleet.groups, [&](const protocol::GroupInfo& g) { return !viewer.mayDescribe(g.name); });
  for (auto& s : fleet.servers) {
    std::erase_if(s.groups, [&](const std::string& g) { return !viewer.mayDescribe(g); });
  }
  if (fleet.placement) {
    std::erase_if(fleet.placement->moves, [&](const protocol::GroupMove& m) { return !viewer.mayDescribe(m.group); });
  }
}

HttpAnswer answerStatus(const HttpRequestHead& head, const HttpOptions& options, const StatusRoute& route) {
  const bool api = route.api() || (route.kind == StatusRoute::BadGroup && route.group == "api");
  HttpAnswer denied;
  const auto viewer = authorize(head, options, api, &denied);
  if (!viewer) return denied;
  auto fail = [&](const StatusError& error, int status) {
    return answer(status, api ? kJson : kHtml, api ? errorJson(error) : renderErrorPage(status, error));
  };
  switch (route.kind) {
    case StatusRoute::BadGroup:
      return fail({protocol::ErrorCode::INVALID_GROUP_NAME,
                   "no such group: a group's name is 1 to 249 of A-Z, a-z, 0-9, '.', '_' and '-'"},
                  404);
    case StatusRoute::Fleet:
    case StatusRoute::ApiFleet:
    case StatusRoute::ApiGroups:
    case StatusRoute::ApiServers: {
      auto fleet = options.status->fleet();
      if (!fleet.ok()) return fail(fleet.error, httpStatusOf(fleet.error));
      if (viewer->policy) keepDescribable(fleet.value, *viewer);
      switch (route.kind) {
        case StatusRoute::Fleet: return answer(200, kHtml, renderFleetPage(fleet.value, nowMs()));
        case StatusRoute::ApiFleet: return answer(200, kJson, fleetJson(fleet.value));
        case StatusRoute::ApiServers: return answer(200, kJson, serversJson(fleet.value));
        default: return answer(200, kJson, groupsJson(fleet.value));
      }
    }
    case StatusRoute::Group:
    case StatusRoute::ApiGroup: {
      if (!viewer->mayDescribe(route.group)) {
        return fail({protocol::ErrorCode::NOT_AUTHORIZED,
                     "no rule of the permissions file lets user '" + viewer->user + "' describe this group"},
                    403);
      }
      auto group = options.status->group(route.group, *viewer);
      if (!group.ok()) return fail(group.error, httpStatusOf(group.error));
      return answer(200, api ? kJson : kHtml, api ? groupJson(group.value) : renderGroupPage(group.value, nowMs()));
    }
    case StatusRoute::None:
      break;
  }
  return answer(404, kText, "not found\n");
}

}  // namespace

HttpLane laneOf(const HttpRequestHead& head, bool statusPage) {
  if (refusal(head)) return HttpLane::Now;
  const std::string path = head.path();
  if (path == "/metrics") return HttpLane::Metrics;
  if (statusPage && statusRoute(path).kind != StatusRoute::None) return HttpLane::Status;
  return HttpLane::Now;
}

HttpAnswer answerRequest(const HttpRequestHead& head, const HttpContext& context) {
  if (auto refused = refusal(head)) return *refused;
  const std::string path = head.path();
  if (path == "/metrics") return answer(200, metrics::kTextContentType, context.registry.render());
  if (path == "/health/live") return answer(200, kText, "live\n");
  if (path == "/health/ready") {
    const std::string why = context.readiness();
    return why.empty() ? answer(200, kText, "ready\n") : answer(503, kText, "not ready: " + why + "\n");
  }
  if (context.options.status) {
    if (const StatusRoute route = statusRoute(path); route.kind != StatusRoute::None) {
      return answerStatus(head, context.options, route);
    }
  }
  return answer(404, kText,
                context.options.status
                    ? "not found: serving /, /groups/NAME, /api/fleet, /api/groups, /api/groups/NAME, /api/servers, "
                      "/metrics, /health/live, /health/ready\n"
                    : "not found: serving /metrics, /health/live, /health/ready\n");
}

}  // namespace groupcoord::server
