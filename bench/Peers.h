#pragma once

// The `peers` scenario's systems: the same membership work (members join a
// group, stay alive at their system's usual keep-alive rate, watch their
// group, leave or crash) driven on groupcoordd, on the ZooKeeper ensemble
// alone (a session, an ephemeral znode and a children watch per member) and
// on etcd (a lease kept alive, a key under the group's prefix, a watch on
// the prefix per member), all from one Loop. docs/benchmarks.md describes
// the workload and its figures.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/Loop.h"

namespace groupcoord::bench {

class PeerSystem {
 public:
  // Member `observer` now sees member `subject` in its group (present) or
  // no longer does. Every member reports the members already there when it
  // joins too, and itself.
  using SeenFn = std::function<void(size_t observer, size_t subject, bool present)>;

  virtual ~PeerSystem() = default;
  virtual std::string name() const = 0;

  // Makes the groups ready before any member joins (the parent znodes, the
  // groups in groupcoordd); runs the loop as it needs. Whether it could.
  virtual bool prepare(const std::vector<std::string>& groups) {
    (void)groups;
    return true;
  }

  // Member `id` (named "m<id>" in the system) joins group `group`: it opens
  // what it needs, registers, keeps itself alive and watches the group.
  // done(ok) once it is in and its watch is set.
  virtual void join(size_t id, const std::string& group, std::function<void(bool ok)> done) = 0;
  // It says goodbye (deletes what it holds) and closes.
  virtual void leave(size_t id) = 0;
  // It goes without a goodbye: its connections close, nothing more is sent.
  virtual void crash(size_t id) = 0;
  // Requests (or messages on a stream) the members have sent to the
  // coordination side so far, keep-alives included.
  virtual uint64_t requestsSent() const = 0;

  SeenFn seen;
};

// groupcoordd on `port`: each member a connection of its own (as each
// consumer process has), RegisterConsumer version 2 in client-mode groups of
// `sessionMs` (created by prepare()), a heartbeat every sessionMs / 3 (the
// client library's default). A member sees the others in the member list
// its registrations are answered with.
std::unique_ptr<PeerSystem> makeGroupcoordSystem(Loop& loop, uint16_t port, int64_t sessionMs);

// The ZooKeeper ensemble alone, driven as Curator's GroupMember or kazoo's
// Party drive it: per member a session of `sessionMs` on a connection of its
// own (spread over `ports`), an ephemeral znode /peers/<group>/m<id> and a
// children watch on its group, re-armed by reading the children again each
// time it fires; a ping every sessionMs / 3 when idle, as ZooKeeper's
// clients send them. ZooKeeper's client protocol is spoken directly.
std::unique_ptr<PeerSystem> makeZookeeperSystem(Loop& loop, std::vector<uint16_t> ports, int64_t sessionMs);

// etcd through its gRPC API (HTTP/2 without TLS) on `ports` (the members
// spread over them); leases of `ttlSeconds`, kept alive every ttl/3.
std::unique_ptr<PeerSystem> makeEtcdSystem(Loop& loop, std::vector<uint16_t> ports, int ttlSeconds);

}  // namespace groupcoord::bench
