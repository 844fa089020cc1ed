#pragma once

// The operations a controlled group queues (OpQueue.h), each with the
// answer it gets when it fails as a whole.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "adapter/Outbox.h"
#include "protocol/Handler.h"

namespace groupcoord::adapter {

// Who waits for a registration's answer, and the form it takes: the
// request's version and, from version 2, the generation whose member list
// the member holds (docs/protocol.md §16).
struct Registrant {
  protocol::ResponseCallback done;
  int16_t version = 1;
  int64_t knownGeneration = -1;

  Registrant() = default;
  Registrant(protocol::ResponseCallback d, int16_t v = 1, int64_t known = -1)  // NOLINT: a callback is one
      : done(std::move(d)), version(v), knownGeneration(known) {}
  void operator()(protocol::Response r) { done(std::move(r)); }
};

// A RegisterConsumer of a member not in the group yet: its member znode is
// to be created.
struct Join {
  std::string memberId;
  std::string clientId;
  std::string host;  // where it registers from (DescribeGroup)
  uint16_t port = 0;
  uint64_t connection = 0;  // the newest connection it registered on (Caller::connection)
  std::string replaces;  // the id it had before, when it registers again under a new one
  std::string metadata;  // RegisterConsumer v1
  std::string rack;
  std::vector<Registrant> waiters;

  void answer(protocol::ErrorCode e, const std::string& group, Outbox& out);
  void absorb(Join&& older) {
    clientId = std::move(older.clientId);
    if (host.empty()) {
      host = std::move(older.host);
      port = older.port;
    }
    if (replaces.empty()) replaces = std::move(older.replaces);
    connection = std::max(connection, older.connection);
    for (auto& w : older.waiters) waiters.push_back(std::move(w));
  }
};

// A LeaveGroup, or an eviction (no waiter): the member znode is to be removed.
struct Removal {
  std::string memberId;
  bool evicted = false;
  bool unregistered = false;  // client mode: evicted for not registering at the generation in time
  int64_t silentMs = 0;
  std::vector<protocol::ResponseCallback> waiters;

  void answer(protocol::ErrorCode e, const std::string& group, Outbox& out);
  void absorb(Removal&& older) {
    for (auto& w : older.waiters) waiters.push_back(std::move(w));
  }
};

// A RegisterConsumer of a member already in the group, answered once
// nothing is pending (with the generation that write produces).
struct Rejoin {
  std::string memberId;
  Registrant done;

  void answer(protocol::ErrorCode e, const std::string& group, Outbox& out);
};

// A CommitOffsets or RewindConsumer waiting for its offsets to be durable.
struct OffsetWrite {
  enum class Kind { Commit, Rewind };
  Kind kind = Kind::Commit;
  std::vector<protocol::PartitionOffset> accepted;  // to write
  std::vector<protocol::PartitionError> results;    // one per offset asked for
  std::string user;  // who asked, for the history of a rewind ("" with authentication off)
  protocol::ResponseCallback done;

  void answer(protocol::ErrorCode e, const std::string& group, Outbox& out);
  // Durable: each offset gets its own result.
  void succeed(Outbox& out);
};

// A DeleteGroup waiting for the group's subtree to be removed.
struct Deletion {
  protocol::ResponseCallback done;

  void answer(protocol::ErrorCode e, const std::string& group, Outbox& out);
};

}  // namespace groupcoord::adapter
