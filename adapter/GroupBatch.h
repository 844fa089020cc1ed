#pragma once

// The membership changes a controlled group has accepted and not yet made
// durable (docs/design.md, "The group model"): joins, removals (leaves and
// evictions), re-registrations of members already in, rewinds, and a
// generation move asked for outside those (a topic change, new metadata, a
// takeover in client mode) with the events that explain it.
//
// What waits goes out in one transaction (launch()), which moves the
// generation. Its answer either completes what was in flight (the caller
// takes it), puts it back to wait for the next one (requeue()), or fails
// it (answerInFlight()). Every waiter is answered exactly once.
//
// Pure bookkeeping: no ZooKeeper, no lock (the group's lock guards it).

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "adapter/Clock.h"
#include "adapter/GroupOps.h"
#include "adapter/OpQueue.h"
#include "adapter/Outbox.h"
#include "protocol/Messages.h"

namespace groupcoord::adapter {

class MembershipBatch {
 public:
  OpQueue<std::map<std::string, Join>> joins;
  OpQueue<std::map<std::string, Removal>> removals;
  OpQueue<std::vector<Rejoin>> rejoins;
  OpQueue<std::vector<OffsetWrite>> rewinds;
  PendingFlag move;  // a generation move asked for by itself
  // Events of that move, waiting and in flight.
  std::vector<protocol::RebalanceEvent> movesWaiting;
  std::vector<protocol::RebalanceEvent> movesInFlight;
  // What the transaction in flight makes true (its history), and whether
  // it creates the history znode.
  std::vector<protocol::RebalanceEvent> eventsInFlight;
  bool createsHistory = false;
  // More changes than one transaction may carry: the member znodes of the
  // joins go out first, in slices that do not move the generation, and the
  // last transaction moves it once for all of them. `written`: joins whose
  // znodes a slice wrote, waiting for that move; `writtenInFlight`: those
  // of them in the transaction in flight (it does not create them again);
  // `sliceInFlight`: the transaction in flight is a slice.
  std::map<std::string, Join> written;
  std::set<std::string> writtenInFlight;
  bool sliceInFlight = false;

  // When the first and the latest of the joins waiting arrived, and how
  // long they wait after the latest (0: they do not wait).
  TimePoint firstJoinAt{};
  TimePoint lastJoinAt{};
  Millis joinWindow{0};

  // A join arrives at `now` (before it is queued). The first of those
  // waiting sets the window they wait, `window`. One that arrives after
  // the window closed rides with the joins already due and does not open
  // it again.
  void noteJoin(TimePoint now, Millis window) {
    if (!joins.hasPending()) {
      firstJoinAt = lastJoinAt = now;
      joinWindow = window;
    } else if (now < lastJoinAt + joinWindow) {
      lastJoinAt = now;
    }
  }
  // Joins coalesce (docs/design.md, "Coalesced joins"): the joins waiting
  // go out the window after the latest of them, so that a storm moves the
  // generation once, but no later than `cap` after the first, so that a
  // steady trickle cannot hold them forever. A time point in the past when
  // no join waits.
  TimePoint joinsDueAt(Millis cap) const {
    if (!joins.hasPending()) return TimePoint{};
    return std::min(lastJoinAt + joinWindow, firstJoinAt + cap);
  }

  // Something for the next transaction to write (re-registrations alone
  // need none: they are answered at the current generation).
  bool hasPendingWrites() const {
    return joins.hasPending() || removals.hasPending() || rewinds.hasPending() || move.pending() ||
           !written.empty();
  }
  // hasPendingWrites(), but joins still inside their window do not count:
  // they go out later, with whatever else comes by then.
  bool hasWritesDue(TimePoint now, Millis cap) const {
    return (joins.hasPending() && joinsDueAt(cap) <= now) || removals.hasPending() || rewinds.hasPending() ||
           move.pending() || !written.empty();
  }
  bool hasInFlight() const {
    return joins.hasInFlight() || removals.hasInFlight() || rejoins.hasInFlight() || rewinds.hasInFlight() ||
           move.inFlight();
  }
  // Membership changes (joins and removals) in flight.
  size_t changesInFlight() const { return joins.inFlight().size() + removals.inFlight().size(); }
  bool removing(const std::string& member) const {
    return removals.pending().count(member) > 0 || removals.inFlight().count(member) > 0;
  }

  // Into flight as a slice: at most `budget` joins, whose member znodes
  // are written without moving the generation.
  void launchSlice(size_t budget) {
    joins.launch(budget);
    sliceInFlight = true;
  }
  // The slice was applied: its joins wait for the move.
  void sliceWritten();
  // Into flight: removals, then joins, at most `budget` of them together;
  // every re-registration and rewind; the move and its events. Returns
  // the number of joins and removals launched.
  size_t launch(size_t budget);
  // The transaction did not happen (or may not have): everything in it
  // waits again, merged with what arrived meanwhile.
  void requeue();
  // The transaction failed for good, or its outcome is unknown: its
  // waiters are answered `e` (evictions have none: they are found again).
  // `retryMove`: the generation move it carried waits for the next one.
  void answerInFlight(protocol::ErrorCode e, const std::string& group, Outbox& out, bool retryMove);
  // Nothing waiting will be sent (the group is being handed over): the
  // waiters are answered `e`, the move is withdrawn.
  void answerPending(protocol::ErrorCode e, const std::string& group, Outbox& out);
  // Every waiter, waiting or in flight, is answered `e` (the group is
  // stopping or no longer controlled here).
  void answerAll(protocol::ErrorCode e, const std::string& group, Outbox& out);
  // The transaction was applied: the move is done; the queues' ops are
  // taken by the caller.
  void applied();

 private:
  void answerWritten(protocol::ErrorCode e, const std::string& group, Outbox& out);
};

}  // namespace groupcoord::adapter
