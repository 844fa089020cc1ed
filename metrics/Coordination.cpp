#include "metrics/Coordination.h"

namespace groupcoord::metrics {

std::string_view zkOpName(ZkOp op) {
  switch (op) {
    case ZkOp::Create: return "create";
    case ZkOp::Remove: return "remove";
    case ZkOp::Get: return "get";
    case ZkOp::Set: return "set";
    case ZkOp::Exists: return "exists";
    case ZkOp::GetChildren: return "get_children";
    case ZkOp::Multi: return "multi";
  }
  return "unknown";
}

std::string_view zkStateName(ZkState state) {
  switch (state) {
    case ZkState::Connecting: return "connecting";
    case ZkState::Connected: return "connected";
    case ZkState::Reconnecting: return "reconnecting";
    case ZkState::Expired: return "expired";
    case ZkState::AuthFailed: return "auth_failed";
    case ZkState::Closed: return "closed";
  }
  return "unknown";
}

std::string_view rebalanceReasonLabel(size_t code) {
  static constexpr std::array<std::string_view, kRebalanceReasonCount> kLabels{
      "other",          "member_joined", "member_left", "member_evicted", "member_replaced",     "topic_appeared",
      "topic_resized",  "topic_gone",    "rewind",      "controller_takeover", "handover"};
  return code < kLabels.size() ? kLabels[code] : kLabels[0];
}

std::string_view handoverReasonName(HandoverReason reason) {
  switch (reason) {
    case HandoverReason::Rebalance: return "rebalance";
    case HandoverReason::Drain: return "drain";
  }
  return "unknown";
}

CoordinationMetrics::CoordinationMetrics() {
  for (auto& h : zkLatency) h = std::make_unique<Histogram>(zookeeperLatencyBoundsNs());
}

void CoordinationMetrics::sessionState(ZkState next) {
  const auto before = static_cast<ZkState>(zkState.exchange(static_cast<size_t>(next), std::memory_order_relaxed));
  if (next == ZkState::Connected && before == ZkState::Reconnecting) zkReconnects.add();
  if ((next == ZkState::Expired || next == ZkState::AuthFailed) && before != next) zkExpiries.add();
}

CoordinationMetrics& coordination() {
  // Never destroyed: ZooKeeper's last callbacks may record during exit.
  static CoordinationMetrics* const instance = new CoordinationMetrics();
  return *instance;
}

void registerCoordinationMetrics(Registry& r) {
  CoordinationMetrics& m = coordination();
  r.addCounter("groupcoord_generation_moves_total",
               "Membership transactions of the groups controlled here that moved a group's generation",
               m.generationMoves);
  r.addCounter("groupcoord_evictions_total", "Members evicted because they were silent for their session timeout",
               m.evictions);
  r.addHistogram("groupcoord_zookeeper_transaction_changes",
                 "Membership changes (joins, leaves, evictions) per batched ZooKeeper transaction sent",
                 m.transactionChanges);
  r.add("groupcoord_handovers_total",
        "Groups this server handed over to another server, by reason: rebalance (a server that should control them "
        "joined) or drain (this server was drained)",
        Type::Counter, [&m](FamilyWriter& w) {
          for (size_t i = 0; i < kHandoverReasonCount; ++i) {
            w.value({{"reason", std::string(handoverReasonName(static_cast<HandoverReason>(i)))}},
                    static_cast<double>(m.handovers[i].value()));
          }
        });
  r.add("groupcoord_rebalances_total",
        "Rebalance reasons recorded by the groups controlled here (each generation move has one or more; takeovers "
        "and handovers are recorded too), by reason",
        Type::Counter, [&m](FamilyWriter& w) {
          for (size_t i = 0; i < kRebalanceReasonCount; ++i) {
            w.value({{"reason", std::string(rebalanceReasonLabel(i))}}, static_cast<double>(m.rebalances[i].value()));
          }
        });
  r.addCounter("groupcoord_handover_failures_total",
               "Handovers that failed; the group stayed here and is tried again", m.handoverFailures);
  r.addHistogram("groupcoord_handover_duration_seconds",
                 "Handovers of groups controlled here, from the decision until the group was the next server's to "
                 "claim",
                 m.handoverDuration, 1e9);
  r.add("groupcoord_zookeeper_session_state",
        "The ZooKeeper session's state: 1 for the current state, 0 for the others", Type::Gauge,
        [&m](FamilyWriter& w) {
          const size_t now = m.zkState.load(std::memory_order_relaxed);
          for (size_t s = 0; s < kZkStateCount; ++s) {
            w.value({{"state", std::string(zkStateName(static_cast<ZkState>(s)))}}, s == now ? 1 : 0);
          }
        });
  r.addCounter("groupcoord_zookeeper_reconnects_total",
               "Times the connection to ZooKeeper was restored with the same session", m.zkReconnects);
  r.addCounter("groupcoord_zookeeper_session_expiries_total",
               "ZooKeeper sessions of this server that expired or failed authentication (a new one is opened)",
               m.zkExpiries);
  r.add("groupcoord_zookeeper_operation_duration_seconds",
        "ZooKeeper operations of this server, from the call to its completion, by operation", Type::Histogram,
        [&m](FamilyWriter& w) {
          for (size_t op = 0; op < kZkOpCount; ++op) {
            w.histogram({{"op", std::string(zkOpName(static_cast<ZkOp>(op)))}}, m.zkLatency[op]->snapshot(), 1e9);
          }
        });
}

}  // namespace groupcoord::metrics
