#pragma once

// The live groupcoordd servers: this server's own registration
// (<root>/servers/<id>, ephemeral), the watched list of the others with
// where clients reach them, and rendezvous hashing over them, which names
// each group's preferred controller (docs/design.md, "Claims").
//
// Threads: called from the ticker, I/O threads (brokerOf) and ZooKeeper
// completions. Lock: mu_ guards the server table; it is never held while
// calling out. `changed` and `registeredNow` run on the completion thread
// without locks.

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "adapter/Clock.h"
#include "adapter/SessionEpoch.h"
#include "common/Layout.h"
#include "common/Sync.h"
#include "protocol/Messages.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

struct ServerIdentity {
  int32_t id = 1;
  std::string host = "127.0.0.1";
  uint16_t port = 7400;
};

class ServerRegistry {
 public:
  struct Events {
    std::function<void()> changed;        // the set of live servers changed
    std::function<void()> registeredNow;  // this server's registration was written
  };

  ServerRegistry(zk::Client& zk, const layout::Layout& layout, const TimeSource& time, const SessionEpoch& epoch,
                 Events events);

  // Before start only: where clients reach this server.
  void setIdentity(ServerIdentity self) { self_ = std::move(self); }
  const ServerIdentity& self() const { return self_; }

  // Writes this server's registration unless written or being written.
  void registerSelf() EXCLUDES(mu_);
  // Lists the servers and watches the list.
  void watch() EXCLUDES(mu_);
  // Retries a failed registration, lists again after a failed watch.
  // Called by the tick while ZooKeeper is connected.
  void tick(TimePoint now) EXCLUDES(mu_);
  // The connection came back in the same session: watches may have missed
  // a change.
  void rewatchSoon() EXCLUDES(mu_);
  // The session ended: this server is not registered and knows no server.
  void reset() EXCLUDES(mu_);

  bool registered() const { return registered_.load(); }
  // The live server rendezvous hashing prefers for the group (this server
  // when it knows no other).
  int32_t preferredServer(const std::string& group) const EXCLUDES(mu_);
  // Where clients reach a server; an empty Broker when not known.
  protocol::Broker brokerOf(int32_t serverId) const EXCLUDES(mu_);
  std::vector<int32_t> liveServers() const EXCLUDES(mu_);

 private:
  void retryRegistrationLater() EXCLUDES(mu_);
  void onListed(std::vector<std::string> children) EXCLUDES(mu_);

  zk::Client& zk_;
  const layout::Layout& layout_;
  const TimeSource& time_;
  const SessionEpoch& epoch_;
  const Events events_;
  ServerIdentity self_;

  std::atomic<bool> registered_{false};
  std::atomic<bool> registering_{false};

  mutable Mutex mu_;
  std::map<int32_t, protocol::Broker> servers_ GUARDED_BY(mu_);
  TimePoint nextRegisterAttempt_ GUARDED_BY(mu_);
  bool rewatchNeeded_ GUARDED_BY(mu_) = false;
};

}  // namespace groupcoord::adapter
