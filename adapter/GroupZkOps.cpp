#include "adapter/GroupZkOps.h"

#include "zk/Error.h"

namespace groupcoord::adapter::zkops {

zk::Op historyOp(GroupPaths g, layout::HistoryRecord record, bool exists) {
  std::string data = layout::encodeHistory(record);
  while (data.size() > zk::kMaxDataSize / 4 && !record.events.empty()) {
    record.events.erase(record.events.begin());
    data = layout::encodeHistory(record);
  }
  std::string path = g.layout.historyPath(g.group);
  return exists ? zk::makeSetData(std::move(path), std::move(data)) : zk::makeCreate(std::move(path), std::move(data));
}

std::vector<zk::Op> batchOps(GroupPaths g, const OffsetStore& offsets, BatchWrite w) {
  std::vector<zk::Op> ops;
  ops.reserve(w.removed.size() + w.joined.size() + w.rewound.size() + 2);
  for (auto& id : w.removed) ops.push_back(zk::makeRemove(g.layout.memberPath(g.group, id)));
  for (auto& [id, clientId] : w.joined) {
    ops.push_back(
        zk::makeCreate(g.layout.memberPath(g.group, id), layout::encodeMember(clientId), zk::CreateMode::Ephemeral));
  }
  if (!w.rewound.empty()) offsets.writeOps(g.group, w.committed, w.rewound, ops);
  ops.push_back(historyOp(g, std::move(w.history), w.historyExists));
  ops.push_back(zk::makeSetData(g.layout.groupPath(g.group), w.settingsData, w.version));
  return ops;
}

std::vector<zk::Op> deleteOps(GroupPaths g, const OffsetsListing& listing, bool historyExists, int32_t version) {
  std::vector<zk::Op> ops;
  if (listing.error == zk::Error::Ok) {
    for (auto& p : listing.leaves) ops.push_back(zk::makeRemove(p));
    for (auto& p : listing.topics) ops.push_back(zk::makeRemove(p));
    ops.push_back(zk::makeRemove(g.layout.offsetsPath(g.group)));
  }
  ops.push_back(zk::makeRemove(g.layout.membersPath(g.group)));
  if (historyExists) ops.push_back(zk::makeRemove(g.layout.historyPath(g.group)));
  ops.push_back(zk::makeRemove(g.layout.controllerPath(g.group)));
  ops.push_back(zk::makeRemove(g.layout.groupPath(g.group), version));
  return ops;
}

HandoverWrite handoverOps(GroupPaths g, layout::HandoverRecord record, int32_t version,
                          std::optional<layout::HistoryRecord> history) {
  HandoverWrite w;
  std::string data = layout::encodeHandover(record);
  w.recordBytes = data.size();
  if (data.size() > zk::kMaxDataSize) {
    // Too big to record: the next controller waits one session timeout
    // before it grants what nobody reports, as after a failure.
    data.clear();
    record.movedMembers = false;
    w.recorded = false;
  }
  w.movedMembers = record.movedMembers;
  w.ops.push_back(zk::makeCheck(g.layout.groupPath(g.group), version));
  w.ops.push_back(zk::makeSetData(g.layout.membersPath(g.group), std::move(data)));
  if (history) w.ops.push_back(historyOp(g, std::move(*history), true));
  if (w.movedMembers) {
    for (auto& [id, _] : record.members) w.ops.push_back(zk::makeRemove(g.layout.memberPath(g.group, id)));
  }
  w.ops.push_back(zk::makeRemove(g.layout.controllerPath(g.group)));
  return w;
}

std::vector<zk::Op> adoptOps(GroupPaths g, int32_t version,
                             const std::vector<std::pair<std::string, std::string>>& members) {
  std::vector<zk::Op> ops{zk::makeCheck(g.layout.groupPath(g.group), version)};
  ops.reserve(members.size() + 1);
  for (auto& [id, clientId] : members) {
    ops.push_back(
        zk::makeCreate(g.layout.memberPath(g.group, id), layout::encodeMember(clientId), zk::CreateMode::Ephemeral));
  }
  return ops;
}

TxnOutcome classify(const zk::MultiResult& r, size_t opCount, int groupOp) {
  if (r.error == zk::Error::Ok) return TxnOutcome::Applied;
  if (zk::isConnectionProblem(r.error)) return TxnOutcome::Unknown;
  if (r.error == zk::Error::NoNode && r.failedOp == groupOp) return TxnOutcome::GroupGone;
  if (r.error == zk::Error::NoNode && r.failedOp == static_cast<int>(opCount) - 1) return TxnOutcome::LastGone;
  return TxnOutcome::Refused;
}

}  // namespace groupcoord::adapter::zkops
