// The group model's rebalance history (docs/design.md, "Rebalance
// history"): the events each generation move makes true, and those that
// do not wait for one (a takeover, a handover).

#include <spdlog/spdlog.h>

#include "adapter/GroupModel.h"
#include "metrics/Coordination.h"

namespace groupcoord::adapter {

using protocol::RebalanceEvent;
using protocol::RebalanceReason;

RebalanceEvent GroupModel::event(RebalanceReason reason, std::string detail, int64_t wallMs) const {
  RebalanceEvent e;
  e.timeMs = wallMs;
  e.generation = version_;
  e.reason = reason;
  e.detail = std::move(detail);
  return e;
}

void GroupModel::logAndCount(const std::vector<RebalanceEvent>& events) const {
  for (auto& e : events) {
    spdlog::info("group {}: generation {}: {} ({})", name_, e.generation, e.detail,
                 protocol::rebalanceReasonName(e.reason));
    metrics::coordination().rebalance(static_cast<size_t>(e.reason), static_cast<uint64_t>(e.count));
  }
}

// Kept, logged and counted at once; persisted with the next write.
void GroupModel::recordNow(std::vector<RebalanceEvent> events) {
  logAndCount(events);
  history_.add(std::move(events));
}

layout::HistoryRecord GroupModel::historyRecord(const std::vector<RebalanceEvent>& next) const {
  return layout::HistoryRecord{serverId_, history_.persisted(next)};
}

// The partition counts now against those of the current target.
std::vector<RebalanceEvent> GroupModel::topicEvents(int64_t wallMs) const {
  std::vector<RebalanceEvent> out;
  const auto counts = topics_.partitionCounts(settings_);
  for (auto& t : settings_.topics) {
    auto was = knownPartitions_.find(t);
    auto is = counts.find(t);
    const int32_t before = was == knownPartitions_.end() ? 0 : was->second;
    const int32_t after = is == counts.end() ? 0 : is->second;
    if (before == after) continue;
    RebalanceEvent e;
    if (before <= 0) {
      e = event(RebalanceReason::TOPIC_APPEARED,
                "subscribed topic " + t + " appeared with " + std::to_string(after) + " partitions", wallMs);
      e.value = after;
    } else if (after <= 0) {
      e = event(RebalanceReason::TOPIC_GONE, "subscribed topic " + t + " went away", wallMs);
    } else {
      e = event(RebalanceReason::TOPIC_RESIZED,
                "subscribed topic " + t + " went from " + std::to_string(before) + " to " + std::to_string(after) +
                    " partitions",
                wallMs);
      e.value = after;
    }
    e.subject = t;
    out.push_back(std::move(e));
  }
  return out;
}

// The events the transaction being launched makes true, at `generation`.
std::vector<RebalanceEvent> GroupModel::batchEvents(int64_t generation, int64_t wallMs) const {
  std::vector<RebalanceEvent> out;
  auto whereFrom = [](const std::string& host, uint16_t port) {
    return host.empty() ? std::string() : ", from " + protocol::Caller{host, port, ""}.address();
  };
  for (auto& [id, rm] : batch_.removals.inFlight()) {
    const Member* m = member(id);
    RebalanceEvent e;
    if (rm.unregistered) {
      e = event(RebalanceReason::MEMBER_EVICTED,
                "member " + id + " evicted: it did not register at generation " + std::to_string(version_) +
                    " within the session timeout (" + std::to_string(settings_.sessionTimeoutMs) + " ms)",
                wallMs);
      e.value = rm.silentMs;
    } else if (rm.evicted) {
      e = event(RebalanceReason::MEMBER_EVICTED,
                "member " + id + " evicted after " + std::to_string(rm.silentMs) + " ms of silence (session timeout " +
                    std::to_string(settings_.sessionTimeoutMs) + " ms)",
                wallMs);
      e.value = rm.silentMs;
    } else {
      e = event(RebalanceReason::MEMBER_LEFT, "member " + id + " left", wallMs);
    }
    e.consumerId = id;
    e.clientId = m ? m->clientId : "";
    e.host = m ? m->host : "";
    out.push_back(std::move(e));
  }
  for (auto& [id, j] : batch_.joins.inFlight()) {
    const std::string who = " (client id '" + j.clientId + "'" + whereFrom(j.host, j.port) + ")";
    RebalanceEvent e = j.replaces.empty()
                           ? event(RebalanceReason::MEMBER_JOINED, "member " + id + " joined" + who, wallMs)
                           : event(RebalanceReason::MEMBER_REPLACED,
                                   "member " + id + " registered again under a new id, replacing " + j.replaces + who,
                                   wallMs);
    e.consumerId = id;
    e.clientId = j.clientId;
    e.host = j.host;
    e.subject = j.replaces;
    out.push_back(std::move(e));
  }
  for (auto& w : batch_.rewinds.inFlight()) {
    RebalanceEvent e = event(RebalanceReason::REWIND,
                             std::to_string(w.accepted.size()) + " offsets rewound" + (w.user.empty() ? "" : " by " + w.user),
                             wallMs);
    e.subject = w.user;
    e.value = static_cast<int64_t>(w.accepted.size());
    out.push_back(std::move(e));
  }
  for (auto& e : batch_.movesInFlight) out.push_back(e);
  if (out.empty()) out.push_back(event(RebalanceReason::OTHER, "the generation moved", wallMs));
  for (auto& e : out) e.generation = generation;
  return foldEvents(std::move(out));
}

// In the history: this server controls the group from now on.
void GroupModel::recordTakeover(RebalanceReason reason, int32_t from, int64_t wallMs) {
  const std::string by = from >= 0 ? "server " + std::to_string(from) : "a server not known";
  auto e = event(reason,
                 reason == RebalanceReason::HANDOVER
                     ? "handed over by " + by + " to server " + std::to_string(serverId_)
                     : "server " + std::to_string(serverId_) + " took the group over from " + by,
                 wallMs);
  e.subject = from >= 0 ? std::to_string(from) : "";
  e.value = serverId_;
  recordNow({std::move(e)});
}

}  // namespace groupcoord::adapter
