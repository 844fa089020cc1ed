#include "adapter/GroupBatch.h"

#include <utility>

namespace groupcoord::adapter {

using protocol::ErrorCode;

void MembershipBatch::sliceWritten() {
  detail::append(written, joins.takeInFlight());
  sliceInFlight = false;
}

size_t MembershipBatch::launch(size_t budget) {
  const size_t all = budget;
  removals.launch(budget);
  joins.launch(budget);
  // The joins a slice wrote ride with this transaction, which moves the
  // generation for them; their znodes are there already.
  for (auto& [id, _] : written) writtenInFlight.insert(id);
  detail::append(joins.inFlight(), std::move(written));
  rejoins.launch();
  rewinds.launch();
  move.launch();
  movesInFlight = std::exchange(movesWaiting, {});
  return all - budget;
}

void MembershipBatch::requeue() {
  joins.requeue();
  detail::append(joins.pending(), std::move(written));
  writtenInFlight.clear();
  sliceInFlight = false;
  removals.requeue();
  rejoins.requeue();
  rewinds.requeue();
  move.requeue();
  // The moves of the failed transaction first: they were asked for first.
  for (auto& e : movesWaiting) movesInFlight.push_back(std::move(e));
  movesWaiting = std::exchange(movesInFlight, {});
  eventsInFlight.clear();
  createsHistory = false;
}

void MembershipBatch::answerInFlight(ErrorCode e, const std::string& group, Outbox& out, bool retryMove) {
  joins.answerInFlight(e, group, out);
  // Joins a slice wrote cannot be moved without a re-read either: their
  // members register again, and the re-read finds them in ZooKeeper.
  answerWritten(e, group, out);
  sliceInFlight = false;
  removals.answerInFlight(e, group, out);
  rejoins.answerInFlight(e, group, out);
  rewinds.answerInFlight(e, group, out);
  if (retryMove) {
    // Only the move and its events: the waiters above were answered.
    move.requeue();
    for (auto& ev : movesWaiting) movesInFlight.push_back(std::move(ev));
    movesWaiting = std::exchange(movesInFlight, {});
  } else {
    move.complete();
    movesInFlight.clear();
  }
  eventsInFlight.clear();
  createsHistory = false;
}

void MembershipBatch::answerPending(ErrorCode e, const std::string& group, Outbox& out) {
  joins.answerPending(e, group, out);
  answerWritten(e, group, out);
  removals.answerPending(e, group, out);
  rejoins.answerPending(e, group, out);
  rewinds.answerPending(e, group, out);
  move.cancel();
  movesWaiting.clear();
}

void MembershipBatch::answerAll(ErrorCode e, const std::string& group, Outbox& out) {
  joins.answerAll(e, group, out);
  answerWritten(e, group, out);
  sliceInFlight = false;
  removals.answerAll(e, group, out);
  rejoins.answerAll(e, group, out);
  rewinds.answerAll(e, group, out);
}

void MembershipBatch::answerWritten(ErrorCode e, const std::string& group, Outbox& out) {
  for (auto& [_, j] : written) j.answer(e, group, out);
  written.clear();
  writtenInFlight.clear();
}

void MembershipBatch::applied() {
  writtenInFlight.clear();
  move.complete();
  movesInFlight.clear();
  eventsInFlight.clear();
  createsHistory = false;
}

}  // namespace groupcoord::adapter
