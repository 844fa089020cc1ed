#include "adapter/GroupBatch.h"

#include <utility>

namespace groupcoord::adapter {

using protocol::ErrorCode;

size_t MembershipBatch::launch(size_t budget) {
  const size_t all = budget;
  removals.launch(budget);
  joins.launch(budget);
  rejoins.launch();
  rewinds.launch();
  move.launch();
  movesInFlight = std::exchange(movesWaiting, {});
  return all - budget;
}

void MembershipBatch::requeue() {
  joins.requeue();
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
  removals.answerPending(e, group, out);
  rejoins.answerPending(e, group, out);
  rewinds.answerPending(e, group, out);
  move.cancel();
  movesWaiting.clear();
}

void MembershipBatch::answerAll(ErrorCode e, const std::string& group, Outbox& out) {
  joins.answerAll(e, group, out);
  removals.answerAll(e, group, out);
  rejoins.answerAll(e, group, out);
  rewinds.answerAll(e, group, out);
}

void MembershipBatch::applied() {
  move.complete();
  movesInFlight.clear();
  eventsInFlight.clear();
  createsHistory = false;
}

}  // namespace groupcoord::adapter
