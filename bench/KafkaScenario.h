#pragma once

// The Kafka port's figures: members speaking Kafka's classic group protocol
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) through protocol/kafka's
// codec, one connection each, all from this one generator thread.
//
//   kafka: N members form one group (time to stable, at the server's
//   kafka.group.initial.rebalance.delay.ms), then, in groups of each of
//   --leave-sizes at each heartbeat interval of --intervals-ms, one member
//   leaves and the rest resume (time to every remaining member holding its
//   new assignment).
//   instructions: a Kafka heartbeat's instructions beside a native one's
//   (kafkaHeartbeatInstructions, called by the `instructions` scenario).

#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/Common.h"

namespace groupcoord::bench {

void kafkaScenario(const Args& args);

// Instructions per Kafka heartbeat of the server `pid`, which runs under
// callgrind as perRequestInstructions() says: the one member of a stable
// group heartbeats at `depth` on one connection to the Kafka port.
// *notNone: heartbeats answered other than NONE.
double kafkaHeartbeatInstructions(uint16_t kafkaPort, int pid, const std::string& base, size_t n, int depth,
                                  uint64_t* notNone);

}  // namespace groupcoord::bench
