#pragma once

// The status page and the JSON API of the HTTP port, rendered from a
// StatusSource's answers (server/StatusSource.h): plain HTML tables with
// inline CSS, no script and nothing loaded from elsewhere; every string
// that came from a client or another server is escaped. Pure functions of
// their input (and of `nowMs`, the time the page is rendered at).

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/Messages.h"
#include "server/StatusSource.h"

namespace groupcoord::server {

// Seconds between the page's refreshes (<meta http-equiv="refresh">).
inline constexpr int kStatusRefreshSeconds = 5;

// &, <, >, " and ' as character references.
std::string htmlEscape(std::string_view text);
// Every byte but [A-Za-z0-9._~-] as %XX.
std::string urlEncode(std::string_view text);

// GET /: the servers (with their load, the bound and the groups that should
// move, when the placement is known), the groups each controls, and every
// group.
std::string renderFleetPage(const FleetView& fleet, int64_t nowMs);
// GET /groups/<name>: members, partitions, offsets, the rebalance history.
std::string renderGroupPage(const protocol::DescribeGroupResponse& group, int64_t nowMs);
// An error page: the HTTP status line's text, the error's name and sentence.
std::string renderErrorPage(int httpStatus, const StatusError& error);

// GET /api/fleet, /api/groups, /api/groups/<name>, /api/servers. The
// groups, the group and the servers are in the JSON encoding groupctl
// prints too (protocol/DescribeJson.h, docs/protocol.md "DescribeGroup as
// JSON"; protocol/ServersJson.h, "DescribeServers as JSON").
std::string fleetJson(const FleetView& fleet);
std::string serversJson(const FleetView& fleet);
std::string groupsJson(const FleetView& fleet);
std::string groupJson(const protocol::DescribeGroupResponse& group);
// {"error": NAME, "message": SENTENCE}
std::string errorJson(const StatusError& error);

// The HTTP status an error is answered with: 404 for an unknown group,
// 503 for an unavailable controller, 502 for other failures.
int httpStatusOf(const StatusError& error);

}  // namespace groupcoord::server
