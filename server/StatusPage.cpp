#include "server/StatusPage.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "protocol/DescribeJson.h"
#include "protocol/PartitionRows.h"
#include "protocol/ServersJson.h"

namespace groupcoord::server {

namespace {

using protocol::DescribeGroupResponse;
using protocol::ErrorCode;
using protocol::GroupState;
using protocol::MemberState;
using protocol::RebalanceEvent;
using protocol::RebalanceReason;
using protocol::TopicPartition;

// The page's whole style. System fonts only: nothing is fetched.
constexpr const char* kStyle = R"css(
:root{--ink:#1d2330;--soft:#5b6474;--line:#e3e6ec;--bg:#f4f6f9;--card:#fff;--accent:#2f5bd3}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,"Segoe UI","DejaVu Sans",sans-serif}
header{background:#172033;color:#e8ecf4;padding:14px 32px;display:flex;align-items:baseline;gap:18px}
header .brand{font-weight:700;font-size:17px;letter-spacing:.02em;color:#fff;text-decoration:none}
header .crumbs{color:#aab4c8}
header .crumbs a{color:#cdd6ea;text-decoration:none}
header .meta{margin-left:auto;color:#8f9ab0;font-size:12.5px}
main{max-width:1320px;margin:0 auto;padding:22px 32px 40px}
h1{font-size:22px;margin:4px 0 14px;font-weight:650;display:flex;align-items:center;gap:12px}
h2{font-size:15px;margin:0 0 10px;font-weight:650}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;margin-bottom:18px}
.card,.panel{background:var(--card);border:1px solid var(--line);border-radius:10px}
.card{padding:10px 14px}
.card .k{color:var(--soft);font-size:11.5px;text-transform:uppercase;letter-spacing:.06em}
.card .v{font-size:18px;font-weight:600;margin-top:2px;overflow-wrap:anywhere}
.panel{padding:14px 16px;margin-bottom:18px;overflow-x:auto}
.grid2{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:18px}
@media (max-width:1100px){.grid2{grid-template-columns:1fr}}
table{border-collapse:collapse;width:100%}
th{text-align:left;font-weight:600;color:var(--soft);font-size:12px;text-transform:uppercase;letter-spacing:.04em;border-bottom:1px solid var(--line);padding:6px 10px}
td{padding:6px 10px;border-bottom:1px solid #eef0f4;vertical-align:top}
tr:last-child td{border-bottom:0}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12.5px}
a{color:var(--accent)}
.muted{color:var(--soft)}
.badge{display:inline-block;padding:1px 9px;border-radius:999px;font-size:11.5px;font-weight:600;letter-spacing:.03em;white-space:nowrap}
.b-green{background:#dcf5e6;color:#17683a}.b-amber{background:#fdf0d5;color:#8a5a00}
.b-blue{background:#dfe8fd;color:#2446a6}.b-violet{background:#ece3fb;color:#5b2fa8}
.b-red{background:#fde2e1;color:#a12a25}.b-gray{background:#eceef2;color:#4f5869}
.tags span{display:inline-block;margin:0 4px 2px 0}
ol.timeline{list-style:none;margin:0;padding:0}
ol.timeline li{position:relative;padding:0 0 12px 22px;border-left:2px solid var(--line);margin-left:6px}
ol.timeline li:last-child{border-left-color:transparent}
ol.timeline li::before{content:"";position:absolute;left:-7px;top:3px;width:12px;height:12px;border-radius:50%;background:#fff;border:2px solid var(--accent)}
.when{color:var(--soft);font-size:12px}
.right{float:right;margin-left:12px}
.nowrap{white-space:nowrap}
.detail{margin-top:2px}
footer{color:var(--soft);font-size:12px;margin-top:8px}
)css";

void appendEscaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
}

std::string esc(std::string_view text) { return htmlEscape(text); }

std::string utcTime(int64_t ms, bool withDate) {
  if (ms < 0) return "—";
  const time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, withDate ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
  return std::string(buf) + " UTC";
}

// "12 s ago", "4 min ago", "3 h ago".
std::string ago(int64_t ms, int64_t nowMs) {
  if (ms < 0) return "";
  const int64_t s = std::max<int64_t>(0, (nowMs - ms) / 1000);
  if (s < 120) return std::to_string(s) + " s ago";
  if (s < 7200) return std::to_string(s / 60) + " min ago";
  if (s < 172800) return std::to_string(s / 3600) + " h ago";
  return std::to_string(s / 86400) + " d ago";
}

std::string badge(std::string_view text, const char* colour) {
  return std::string("<span class=\"badge b-") + colour + "\">" + esc(text) + "</span>";
}

std::string stateBadge(GroupState s) {
  switch (s) {
    case GroupState::STABLE: return badge("stable", "green");
    case GroupState::REBALANCING: return badge("rebalancing", "amber");
    case GroupState::LOADING: return badge("loading", "blue");
    case GroupState::HANDING_OVER: return badge("handing over", "violet");
  }
  return badge(protocol::groupStateName(s), "gray");
}

const char* reasonColour(RebalanceReason r) {
  switch (r) {
    case RebalanceReason::MEMBER_JOINED: return "green";
    case RebalanceReason::MEMBER_LEFT:
    case RebalanceReason::MEMBER_REPLACED: return "blue";
    case RebalanceReason::MEMBER_EVICTED:
    case RebalanceReason::TOPIC_GONE: return "red";
    case RebalanceReason::TOPIC_APPEARED:
    case RebalanceReason::TOPIC_RESIZED:
    case RebalanceReason::REWIND: return "amber";
    case RebalanceReason::CONTROLLER_TAKEOVER:
    case RebalanceReason::HANDOVER: return "violet";
    case RebalanceReason::OTHER: break;
  }
  return "gray";
}

std::string groupLink(const std::string& name) {
  return "<a href=\"/groups/" + esc(urlEncode(name)) + "\">" + esc(name) + "</a>";
}

std::string brokerText(const protocol::Broker& b) {
  if (b.isNone()) return "<span class=\"muted\">none</span>";
  return "server " + std::to_string(b.brokerId) + " <span class=\"muted mono\">" + esc(b.host) + ":" +
         std::to_string(b.port) + "</span>";
}

std::string card(std::string_view key, const std::string& valueHtml) {
  return "<div class=\"card\"><div class=\"k\">" + esc(key) + "</div><div class=\"v\">" + valueHtml + "</div></div>";
}

// The document around a page's body.
std::string page(const std::string& title, const std::string& crumbsHtml, const std::string& metaHtml,
                 const std::string& body, bool refresh) {
  std::string out;
  out.reserve(body.size() + 4096);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  if (refresh) out += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(kStatusRefreshSeconds) + "\">";
  out += "<title>" + esc(title) + "</title><style>";
  out += kStyle;
  out += "</style></head><body><header><a class=\"brand\" href=\"/\">groupcoord</a><span class=\"crumbs\">";
  out += crumbsHtml;
  out += "</span><span class=\"meta\">" + metaHtml + "</span></header><main>";
  out += body;
  out += "</main></body></html>\n";
  return out;
}

std::string refreshedAt(int64_t nowMs) {
  return "rendered " + esc(utcTime(nowMs, true)) + " · refreshes every " + std::to_string(kStatusRefreshSeconds) + " s";
}

std::string partitionText(const TopicPartition& tp) { return tp.topic + "-" + std::to_string(tp.partition); }

std::string memberCell(const MemberState& m) { return "<code>" + esc(m.consumerId) + "</code>"; }

std::string hostText(const std::string& host, uint16_t port) {
  if (host.empty()) return "<span class=\"muted\">not known yet</span>";
  return "<span class=\"mono\">" + esc(host) + (port ? ":" + std::to_string(port) : std::string()) + "</span>";
}

std::string partitionsTable(const DescribeGroupResponse& g) {
  const auto rows = protocol::partitionRows(g);
  std::string out = "<div class=\"panel\"><h2>Partitions</h2>";
  if (rows.empty()) return out + "<p class=\"muted\">The group's topics have no partitions yet.</p></div>";
  out += "<table><thead><tr><th>Topic</th><th class=\"num\">Partition</th><th>Owner</th><th>Host</th>"
         "<th>Client id</th><th>State</th><th class=\"num\">Committed offset</th></tr></thead><tbody>";
  for (const auto& row : rows) {
    const TopicPartition& tp = row.partition;
    const MemberState* shown = row.owner ? row.owner : row.waiting;
    out += "<tr><td>" + esc(tp.topic) + "</td><td class=\"num\">" + std::to_string(tp.partition) + "</td><td>";
    out += shown ? memberCell(*shown) : "<span class=\"muted\">—</span>";
    out += "</td><td>" + (shown ? hostText(shown->host, shown->port) : std::string()) + "</td><td>";
    out += shown ? esc(shown->clientId) : std::string();
    out += "</td><td>";
    if (row.owner && row.waiting) {
      out += badge("moving", "amber") + " <span class=\"muted\">to</span> " + memberCell(*row.waiting) +
             " <span class=\"muted\">once released</span>";
    } else if (row.owner) {
      out += badge("owned", "green");
    } else if (row.waiting) {
      out += badge("waiting", "amber") + " <span class=\"muted\">for its previous holder to release it</span>";
    } else {
      out += badge("unassigned", "gray");
    }
    out += "</td><td class=\"num\">";
    out += row.committed >= 0 ? std::to_string(row.committed) : "<span class=\"muted\">none</span>";
    out += "</td></tr>";
  }
  return out + "</tbody></table></div>";
}

std::string partitionTags(const std::vector<TopicPartition>& tps, const char* colour) {
  std::string out = "<span class=\"tags\">";
  for (const auto& tp : tps) out += "<span class=\"badge b-" + std::string(colour) + "\">" + esc(partitionText(tp)) + "</span>";
  return out + "</span>";
}

std::string membersTable(const DescribeGroupResponse& g, int64_t nowMs) {
  std::string out = "<div class=\"panel\"><h2>Members</h2>";
  if (g.members.empty()) return out + "<p class=\"muted\">No members.</p></div>";
  out += "<table><thead><tr><th>Member</th><th>Host</th><th>Joined</th><th>Holds</th><th>Waits for</th></tr>"
         "</thead><tbody>";
  for (const auto& m : g.members) {
    out += "<tr><td>" + memberCell(m) + "<div class=\"when\">" + esc(m.clientId) + "</div></td><td>" +
           hostText(m.host, m.port) + "</td><td class=\"nowrap\">" + esc(utcTime(m.joinedAtMs, false)) +
           "<div class=\"when\">heard " + esc(ago(m.lastHeardMs, nowMs)) + "</div></td><td>" +
           partitionTags(m.held, "gray") + "</td><td>" +
           (m.waiting.empty() ? std::string("<span class=\"muted\">—</span>") : partitionTags(m.waiting, "amber")) +
           "</td></tr>";
  }
  return out + "</tbody></table></div>";
}

std::string historyTimeline(const DescribeGroupResponse& g, int64_t nowMs) {
  std::string out = "<div class=\"panel\"><h2>Rebalance history <span class=\"muted\">newest first</span></h2>";
  if (g.history.empty()) return out + "<p class=\"muted\">No generation move recorded yet.</p></div>";
  out += "<ol class=\"timeline\">";
  for (auto it = g.history.rbegin(); it != g.history.rend(); ++it) {
    const RebalanceEvent& e = *it;
    out += "<li class=\"event\"><div>" + badge(protocol::rebalanceReasonName(e.reason), reasonColour(e.reason)) +
           " <strong>generation " + std::to_string(e.generation) + "</strong>";
    if (e.count > 1) out += " <span class=\"muted\">×" + std::to_string(e.count) + "</span>";
    out += "<span class=\"when right\" title=\"" + esc(utcTime(e.timeMs, true)) + "\">" +
           esc(utcTime(e.timeMs, false)) + " · " + esc(ago(e.timeMs, nowMs)) + "</span></div>";
    out += "<div class=\"detail\">" + esc(e.detail) + "</div>";
    std::string who;
    if (!e.consumerId.empty()) who += "member <code>" + esc(e.consumerId) + "</code> ";
    if (!e.clientId.empty()) who += "client " + esc(e.clientId) + " ";
    if (!e.host.empty()) who += "from <span class=\"mono\">" + esc(e.host) + "</span> ";
    if (!e.subject.empty() && e.detail.find(e.subject) == std::string::npos) who += "· " + esc(e.subject);
    if (!who.empty()) out += "<div class=\"when\">" + who + "</div>";
    out += "</li>";
  }
  return out + "</ol></div>";
}

const protocol::ServerPlacement* placementOf(const FleetView& fleet, int32_t id) {
  if (!fleet.placement) return nullptr;
  for (const auto& s : fleet.placement->servers) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

std::string serverState(const FleetServer& s, const protocol::ServerPlacement* p) {
  if (p == nullptr) return s.drained ? badge("drained", "gray") : badge("live", "green");
  if (p->candidate) return badge("candidate", "green");
  if (p->drained) return badge("drained", "gray");
  return badge("settling", "blue");
}

std::string serverIdCell(int32_t id) {
  return id < 0 ? std::string("<span class=\"muted\">none</span>") : "server " + std::to_string(id);
}

// The servers' table of the fleet page, with each one's load, the bound and
// its load once the groups that should move have moved when the placement
// is known, and those groups.
std::string serversPanel(const FleetView& fleet) {
  const auto& placement = fleet.placement;
  std::string body = "<div class=\"panel servers\"><h2>Servers</h2>";
  if (fleet.servers.empty()) {
    body += "<p class=\"muted\">No live server known (is ZooKeeper reachable?).</p>";
  } else {
    body += "<table><thead><tr><th>Server</th><th>Address</th><th>State</th>";
    if (placement) body += "<th class=\"num\">Load</th><th class=\"num\">Bound</th><th class=\"num\">After</th>";
    body += "<th>Groups</th></tr></thead><tbody>";
    for (const auto& s : fleet.servers) {
      const protocol::ServerPlacement* p = placementOf(fleet, s.id);
      body += "<tr><td><strong>" + std::to_string(s.id) + "</strong>" +
              (s.self ? " <span class=\"muted\">(this one)</span>" : "") + "</td><td>" + hostText(s.host, s.port) +
              "</td><td>" + serverState(s, p) + "</td>";
      if (placement) {
        const std::string none = "<span class=\"muted\">—</span>";
        body += "<td class=\"num load\">" + (p ? std::to_string(p->load) : none) + "</td><td class=\"num bound\">" +
                (p && p->candidate ? std::to_string(placement->bound) : none) + "</td><td class=\"num placed\">" +
                (p ? std::to_string(p->placed) : none) + "</td>";
      }
      // Folded: a server may control thousands of groups, and the table
      // must stay readable.
      body += "<td>";
      if (s.groups.empty()) {
        body += "<span class=\"muted\">no group</span>";
      } else {
        body += "<details><summary>" + std::to_string(s.groups.size()) +
                (s.groups.size() == 1 ? " group" : " groups") + "</summary>";
        for (size_t i = 0; i < s.groups.size(); ++i) body += (i ? ", " : "") + groupLink(s.groups[i]);
        body += "</details>";
      }
      body += "</td></tr>";
    }
    body += "</tbody></table>";
  }
  if (placement) {
    body += "<p class=\"when rule\">" + esc(protocol::boundRuleText(*placement)) + " · total " +
            std::to_string(placement->total) + " over " + std::to_string(protocol::candidateCount(*placement)) +
            " candidate(s) · view of server " + std::to_string(placement->server) + "</p>";
    if (!placement->complete) {
      body += "<p>" + badge("reading", "blue") +
              " <span class=\"muted\">still reading the fleet: no group moves for load yet</span></p>";
    }
    if (!placement->moves.empty()) {
      body += "<h2>Groups that should move</h2><table class=\"moves\"><thead><tr><th>Group</th>"
              "<th class=\"num\">Weight</th><th>From</th><th>To</th></tr></thead><tbody>";
      for (const auto& m : placement->moves) {
        body += "<tr><td>" + groupLink(m.group) + "</td><td class=\"num\">" + std::to_string(m.weight) +
                "</td><td>" + serverIdCell(m.controller) + "</td><td>" + serverIdCell(m.target) + "</td></tr>";
      }
      body += "</tbody></table>";
    }
  }
  return body + "<footer>JSON: <a href=\"/api/servers\">/api/servers</a></footer></div>";
}

// Invalid UTF-8 (a hostile client id) is replaced, not thrown on.
std::string dump(const nlohmann::json& j) { return protocol::dumpJson(j); }

}  // namespace

std::string htmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  appendEscaped(out, text);
  return out;
}

std::string urlEncode(std::string_view text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
        c == '~' || c == '-') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string renderFleetPage(const FleetView& fleet, int64_t nowMs) {
  size_t members = 0;
  for (const auto& g : fleet.groups) members += g.members.size();
  std::string body = "<h1>Fleet</h1><div class=\"cards\">";
  body += card("Servers", std::to_string(fleet.servers.size()));
  body += card("Groups", std::to_string(fleet.groups.size()));
  body += card("Members", std::to_string(members));
  body += card("Answered by", "server " + std::to_string(fleet.selfId));
  body += "</div><div class=\"grid2\"><div class=\"panel\"><h2>Groups</h2>";
  if (fleet.groups.empty()) {
    body += "<p class=\"muted\">No groups yet.</p>";
  } else {
    body += "<table><thead><tr><th>Group</th><th>Protocol</th><th>Controller</th><th class=\"num\">Generation</th>"
            "<th class=\"num\">Members</th><th>Topics</th></tr></thead><tbody>";
    for (const auto& g : fleet.groups) {
      body += "<tr><td>" + groupLink(g.name);
      if (g.error != ErrorCode::NONE) body += " " + badge(protocol::errorName(g.error), "red");
      body += "</td><td class=\"nowrap\">" + esc(protocol::protocolText(g.kafka, g.protocolType, g.protocolName));
      body += "</td><td>" + brokerText(g.controller) + "</td><td class=\"num\">" + std::to_string(g.generation) +
              "</td><td class=\"num\">" + std::to_string(g.members.size()) + "</td><td class=\"tags\">";
      for (const auto& t : g.topics) body += "<span class=\"badge b-gray\">" + esc(t) + "</span>";
      body += "</td></tr>";
    }
    body += "</tbody></table>";
  }
  body += "</div>" + serversPanel(fleet) + "</div>";
  return page("groupcoord · fleet", "fleet", refreshedAt(nowMs), body, true);
}

std::string renderGroupPage(const DescribeGroupResponse& g, int64_t nowMs) {
  size_t partitions = 0;
  for (const auto& t : g.topics) partitions += static_cast<size_t>(std::max(0, t.partitions));
  std::string body = "<h1>" + esc(g.group) + " " + stateBadge(g.state) + "</h1><div class=\"cards\">";
  body += card("Generation", std::to_string(g.generation));
  body += card("Members", std::to_string(g.members.size()));
  body += card("Partitions", std::to_string(partitions));
  std::string topics;
  for (const auto& t : g.topics) {
    topics += "<span class=\"badge b-gray\">" + esc(t.topic) + " · " +
              (t.partitions < 0 ? std::string("missing") : std::to_string(t.partitions)) + "</span> ";
  }
  body += card("Topics", "<span class=\"tags\">" + topics + "</span>");
  body += card("Protocol", esc(protocol::protocolText(g.kafka, g.protocolType, g.protocolName)));
  body += card("Controller", brokerText(g.controller));
  body += card("Session timeout", std::to_string(g.sessionTimeoutMs) + " ms" + (g.ephemeral ? " · ephemeral" : ""));
  body += "</div>";
  body += partitionsTable(g);
  body += "<div class=\"grid2\"><div>" + membersTable(g, nowMs) + "</div><div>" + historyTimeline(g, nowMs) +
          "</div></div>";
  body += "<footer>JSON: <a href=\"/api/groups/" + esc(urlEncode(g.group)) + "\">/api/groups/" + esc(g.group) +
          "</a></footer>";
  return page("groupcoord · " + g.group, "<a href=\"/\">fleet</a> / " + esc(g.group), refreshedAt(nowMs), body, true);
}

std::string renderErrorPage(int httpStatus, const StatusError& error) {
  std::string body = "<h1>" + std::to_string(httpStatus) + " " + badge(protocol::errorName(error.code), "red") +
                     "</h1><div class=\"panel\"><p>" + esc(error.message) +
                     "</p><p><a href=\"/\">Back to the fleet</a></p></div>";
  return page("groupcoord · error", "<a href=\"/\">fleet</a>", "", body, false);
}

std::string fleetJson(const FleetView& fleet) {
  nlohmann::json servers = nlohmann::json::array();
  for (const auto& s : fleet.servers) {
    servers.push_back({{"id", s.id},
                       {"host", s.host},
                       {"port", s.port},
                       {"drained", s.drained},
                       {"self", s.self},
                       {"groups", s.groups}});
  }
  return dump({{"server", fleet.selfId}, {"servers", servers}});
}

// The document `groupctl servers --output json` prints (docs/protocol.md,
// "DescribeServers as JSON"): from the groups and, when known, the placement.
std::string serversJson(const FleetView& fleet) {
  return dump(protocol::serversJson(fleet.groups, fleet.placement ? &*fleet.placement : nullptr));
}

// GroupInfo in the encoding `groupctl list` prints too (docs/protocol.md,
// "DescribeGroup as JSON").
std::string groupsJson(const FleetView& fleet) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : fleet.groups) groups.push_back(protocol::groupInfoJson(g));
  return dump({{"server", fleet.selfId}, {"groups", groups}});
}

// The DescribeGroup answer in the one JSON encoding groupctl prints too
// (docs/protocol.md, "DescribeGroup as JSON").
std::string groupJson(const DescribeGroupResponse& g) { return dump(protocol::describeGroupJson(g)); }

std::string errorJson(const StatusError& error) {
  return dump({{"error", protocol::errorName(error.code)}, {"message", error.message}});
}

int httpStatusOf(const StatusError& error) {
  switch (error.code) {
    case ErrorCode::UNKNOWN_GROUP:
    case ErrorCode::INVALID_GROUP_NAME: return 404;
    case ErrorCode::CONTROLLER_NOT_AVAILABLE:
    case ErrorCode::NOT_CONTROLLER: return 503;
    case ErrorCode::NOT_AUTHORIZED: return 403;
    default: return 502;
  }
}

}  // namespace groupcoord::server
