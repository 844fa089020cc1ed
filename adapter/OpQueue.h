#pragma once

// The requests a controlled group has accepted but not yet made durable,
// and the ones in flight in a ZooKeeper transaction.
//
// Each kind of operation is queued in an OpQueue: accepted operations wait
// in `pending`; launch() moves them into `inFlight` when a transaction is
// sent; the transaction's answer either completes them (takeInFlight()),
// puts them back to be sent again (requeue()), or fails them (answer
// InFlight / answerAll). An operation is answered exactly once: by its
// completion or by answerAll, never both, since both take it out of the
// queue.
//
// Op needs: `void answer(protocol::ErrorCode, const std::string& group,
// Outbox&)`, and for keyed queues `void absorb(Op&&)` (a requeued op meets
// a newer one for the same key: the two become one).

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "adapter/Outbox.h"
#include "protocol/Messages.h"

namespace groupcoord::adapter {

namespace detail {
template <class Op>
void append(std::vector<Op>& to, std::vector<Op>&& from) {
  for (auto& op : from) to.push_back(std::move(op));
  from.clear();
}
template <class Op>
void append(std::map<std::string, Op>& to, std::map<std::string, Op>&& from) {
  for (auto& [key, op] : from) {
    auto [it, inserted] = to.try_emplace(key, std::move(op));
    if (!inserted) it->second.absorb(std::move(op));
  }
  from.clear();
}
template <class Op>
Op& opOf(Op& op) {
  return op;
}
template <class Op>
Op& opOf(std::pair<const std::string, Op>& entry) {
  return entry.second;
}
}  // namespace detail

// Container: std::vector<Op> (in arrival order) or std::map<std::string, Op>
// (one op per member id, sent in key order).
template <class Container>
class OpQueue {
 public:
  Container& pending() { return pending_; }
  const Container& pending() const { return pending_; }
  Container& inFlight() { return inFlight_; }
  const Container& inFlight() const { return inFlight_; }

  bool empty() const { return pending_.empty() && inFlight_.empty(); }
  bool hasPending() const { return !pending_.empty(); }
  bool hasInFlight() const { return !inFlight_.empty(); }

  // Every pending op goes into flight.
  void launch() { detail::append(inFlight_, std::move(pending_)); }
  // At most `budget` pending ops, from the front, go into flight; budget is
  // decreased by their number.
  void launch(size_t& budget) {
    while (!pending_.empty() && budget > 0) {
      moveFront();
      --budget;
    }
  }
  // Pending ops answered without a transaction (nothing to write).
  Container takePending() { return std::exchange(pending_, Container{}); }
  // The ops of a transaction that succeeded: the caller completes them.
  Container takeInFlight() { return std::exchange(inFlight_, Container{}); }
  // The transaction failed and will be sent again: its ops wait again,
  // behind (vector) or merged with (map) what arrived meanwhile.
  void requeue() { detail::append(pending_, std::move(inFlight_)); }

  void answerPending(protocol::ErrorCode e, const std::string& group, Outbox& out) { answer(pending_, e, group, out); }
  void answerInFlight(protocol::ErrorCode e, const std::string& group, Outbox& out) {
    answer(inFlight_, e, group, out);
  }
  void answerAll(protocol::ErrorCode e, const std::string& group, Outbox& out) {
    answerPending(e, group, out);
    answerInFlight(e, group, out);
  }

 private:
  static void answer(Container& ops, protocol::ErrorCode e, const std::string& group, Outbox& out) {
    for (auto& entry : ops) detail::opOf(entry).answer(e, group, out);
    ops.clear();
  }
  void moveFront() {
    if constexpr (requires { pending_.extract(pending_.begin()); }) {
      inFlight_.insert(pending_.extract(pending_.begin()));
    } else {
      inFlight_.push_back(std::move(pending_.front()));
      pending_.erase(pending_.begin());
    }
  }

  Container pending_;
  Container inFlight_;
};

// A request with no payload that rides on the next transaction (a
// generation move asked for by a topic change).
class PendingFlag {
 public:
  void request() { pending_ = true; }
  bool pending() const { return pending_; }
  bool inFlight() const { return inFlight_; }
  void launch() { inFlight_ = std::exchange(pending_, false); }
  void complete() { inFlight_ = false; }
  // Withdraws the request (not what is in flight).
  void cancel() { pending_ = false; }
  // The flight failed: what was in it is pending again, nothing is in flight.
  void requeue() {
    pending_ = pending_ || inFlight_;
    inFlight_ = false;
  }

 private:
  bool pending_ = false;
  bool inFlight_ = false;
};

}  // namespace groupcoord::adapter
