#pragma once

// What the coordinator records about groups and ZooKeeper, process-wide.
// The adapter adds to these counters (relaxed, lock-free); groupcoordd
// registers them for scrapes with registerCoordinationMetrics(). Several
// coordinators in one process (tests) add to the same counters.

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <string_view>

#include "metrics/Metrics.h"
#include "metrics/Registry.h"

namespace groupcoord::metrics {

// ZooKeeper operations timed from call to completion.
enum class ZkOp : size_t { Create, Remove, Get, Set, Exists, GetChildren, Multi };
inline constexpr size_t kZkOpCount = 7;
std::string_view zkOpName(ZkOp op);

// The ZooKeeper session's state, as the coordinator last heard it.
enum class ZkState : size_t { Connecting, Connected, Reconnecting, Expired, AuthFailed, Closed };
inline constexpr size_t kZkStateCount = 6;
std::string_view zkStateName(ZkState state);

// Why a group controlled here was handed over to another server.
enum class HandoverReason : size_t { Rebalance, Drain };
inline constexpr size_t kHandoverReasonCount = 2;
std::string_view handoverReasonName(HandoverReason reason);

// Why a generation moved (docs/protocol.md, DescribeGroup's reasons), by
// the reason's code; codes outside the table count as "other".
inline constexpr size_t kRebalanceReasonCount = 11;
std::string_view rebalanceReasonLabel(size_t code);  // "member_joined", ...

struct CoordinationMetrics {
  Counter generationMoves;  // membership transactions that moved a generation
  Counter evictions;        // members evicted for silence
  Histogram transactionChanges{transactionSizeBounds()};  // membership changes per transaction sent
  std::array<std::unique_ptr<Histogram>, kZkOpCount> zkLatency;         // nanoseconds, per operation
  Counter zkReconnects;     // connection restored with the same session
  Counter zkExpiries;       // sessions that expired (or failed authentication)
  std::atomic<size_t> zkState{static_cast<size_t>(ZkState::Connecting)};
  std::array<Counter, kHandoverReasonCount> handovers;  // groups handed over, by reason
  Counter handoverFailures;                              // handovers that failed (the group stayed)
  std::array<Counter, kRebalanceReasonCount> rebalances;  // rebalance reasons recorded, by reason code
  Histogram handoverDuration{handoverDurationBoundsNs()};  // nanoseconds, from the decision to the end

  CoordinationMetrics();
  CoordinationMetrics(const CoordinationMetrics&) = delete;
  CoordinationMetrics& operator=(const CoordinationMetrics&) = delete;

  void observeZk(ZkOp op, uint64_t nanos) { zkLatency[static_cast<size_t>(op)]->observe(nanos); }
  void rebalance(size_t reasonCode, uint64_t n) { rebalances[reasonCode < kRebalanceReasonCount ? reasonCode : 0].add(n); }
  // Records a session state change: counts reconnects (Reconnecting ->
  // Connected) and expiries. Called on the ZooKeeper completion thread.
  void sessionState(ZkState next);
};

// The process-wide instance.
CoordinationMetrics& coordination();

// Adds groupcoord_generation_moves_total, groupcoord_evictions_total,
// groupcoord_handover*, groupcoord_zookeeper_* to the registry. Start-up.
void registerCoordinationMetrics(Registry& registry);

}  // namespace groupcoord::metrics
