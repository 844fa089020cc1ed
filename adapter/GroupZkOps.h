#pragma once

// The ZooKeeper operations of one controlled group, built from data
// (docs/design.md, "The group model"): the membership transaction, the
// history znode, the deletion of the subtree, the handover and the
// adoption of handed-over members; and one reading of a transaction's
// result. Pure: nothing here talks to ZooKeeper.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapter/OffsetStore.h"
#include "common/Layout.h"
#include "zk/Types.h"

namespace groupcoord::adapter::zkops {

// The group's paths.
struct GroupPaths {
  const layout::Layout& layout;
  const std::string& group;
};

// The history znode carrying `record`: a create when it does not exist
// yet, a setData after. The oldest events are dropped while the encoding
// is over a quarter of ZooKeeper's limit (client ids and hosts come from
// the wire).
zk::Op historyOp(GroupPaths g, layout::HistoryRecord record, bool exists);

// One membership transaction: the removals, the ephemeral member znodes
// of the joins, the rewound offsets, the history, and last the group
// znode's setData at `version` (its result gives the new generation).
struct BatchWrite {
  const std::vector<std::string>& removed;
  const std::vector<std::pair<std::string, std::string>>& joined;  // id, client id
  const std::vector<protocol::PartitionOffset>& rewound;
  const CommittedOffsets& committed;  // which offset znodes exist
  layout::HistoryRecord history;
  bool historyExists = false;
  const std::string& settingsData;
  int32_t version = -1;
};
std::vector<zk::Op> batchOps(GroupPaths g, const OffsetStore& offsets, BatchWrite w);

// The whole subtree: offsets (as listed), members (which must be empty),
// the history, the controller znode, and the group znode at `version`.
std::vector<zk::Op> deleteOps(GroupPaths g, const OffsetsListing& listing, bool historyExists, int32_t version);

// The handover transaction: the group unchanged since `version`, the
// record in the members znode, the history (only when its znode exists: a
// create would move the child version the record relies on), the member
// znodes when they move, and last the controller znode's removal.
struct HandoverWrite {
  std::vector<zk::Op> ops;
  bool movedMembers = false;  // the record says so
  bool recorded = true;       // false: too big to record, handed over without it
  size_t recordBytes = 0;     // its encoding's size
};
HandoverWrite handoverOps(GroupPaths g, layout::HandoverRecord record, int32_t version,
                          std::optional<layout::HistoryRecord> history);

// Member znodes created in this server's session, checked against the
// group's version first: again after a handover, and as a slice of joins
// too many for one transaction (the generation moves after the last).
std::vector<zk::Op> adoptOps(GroupPaths g, int32_t version,
                             const std::vector<std::pair<std::string, std::string>>& members);  // id, client id

// What a transaction's answer means for the group. `groupOp`: the index of
// the op on the group znode itself.
enum class TxnOutcome {
  Applied,    // every op applied
  Unknown,    // the connection failed: applied or not, a re-read tells
  GroupGone,  // the group znode is gone
  LastGone,   // the last op met no node (the handover's controller znode)
  Refused,    // memory and ZooKeeper disagree: nothing was applied
};
TxnOutcome classify(const zk::MultiResult& r, size_t opCount, int groupOp);

}  // namespace groupcoord::adapter::zkops
