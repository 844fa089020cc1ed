#pragma once

// The live groupcoordd servers: this server's own registration
// (<root>/servers/<id>, ephemeral), the watched list of the others with
// where clients reach them, the watched drain markers
// (<root>/draining/<id>), and the candidates the fleet's placement puts
// groups on (docs/design.md, "Claims" and "Placement"). A server is a
// candidate only once it has been live for the settle delay, so a server
// that comes and goes draws no group; a drained server is never one.
// preferredServer() is plain rendezvous hashing over the candidates, the
// claims' choice when no placement is given them.
//
// Threads: called from the ticker, I/O threads (brokerOf) and ZooKeeper
// completions. Lock: mu_ guards the server table; it is never held while
// calling out. `changed` and `registeredNow` run on the completion thread
// without locks.

#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/Options.h"
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
  uint16_t port = options::defaultInt("listen.port");
  // The internal listener's address; empty / 0 without one.
  std::string internalHost;
  uint16_t internalPort = 0;
  // The Kafka port's advertised port (at `host`); 0 without one.
  uint16_t kafkaPort = 0;
};

// Which of a server's addresses: the one clients are told (advertised), or
// the one that works inside the server's own network (docs/design.md, "Two
// addresses"), which is the advertised one for a server without an
// internal listener.
enum class Reach { Client, Internal };

class ServerRegistry {
 public:
  struct Events {
    std::function<void()> changed;        // the set of live servers changed
    std::function<void()> registeredNow;  // this server's registration was written
  };

  // settleDelay: how long a server must have been live (as this server saw
  // it) before it is preferred for any group.
  ServerRegistry(zk::Client& zk, const layout::Layout& layout, const TimeSource& time, const SessionEpoch& epoch,
                 Events events, Millis settleDelay = Millis(0));

  // Before start only: where clients reach this server.
  void setIdentity(ServerIdentity self) { self_ = std::move(self); }
  const ServerIdentity& self() const { return self_; }

  // Writes this server's registration unless written or being written.
  void registerSelf() EXCLUDES(mu_);
  // Lists the servers and the drain markers, and watches both.
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
  // The server that should control the group: among the live servers
  // (this one included) that are not drained, those live for the settle
  // delay, the one rendezvous hashing scores highest. When no candidate has
  // settled, any undrained one; when every server is drained, any.
  int32_t preferredServer(const std::string& group) const EXCLUDES(mu_);
  struct ServerState {
    int32_t id = -1;
    bool drained = false;
    bool settled = false;  // live for the settle delay, as this server saw it
  };
  // The live servers (this one included), by id.
  std::vector<ServerState> serverStates() const EXCLUDES(mu_);
  // The servers groups may be placed on (docs/design.md, "Placement"): the
  // settled undrained ones; when none has settled, the undrained ones; when
  // every server is drained, all. By id.
  std::vector<int32_t> candidates() const EXCLUDES(mu_);
  // True unless this server is drained while another live server is not.
  bool mayTakeGroups() const EXCLUDES(mu_);
  bool draining(int32_t serverId) const EXCLUDES(mu_);
  // Where clients (or, with Reach::Internal, peers and clients inside the
  // server's network) reach a server; an empty Broker when not known.
  protocol::Broker brokerOf(int32_t serverId, Reach reach = Reach::Client) const EXCLUDES(mu_);
  // Every live server with a Kafka port (this one included once
  // registered), by id: the brokers of the Kafka port's Metadata.
  std::vector<protocol::Broker> kafkaBrokers() const EXCLUDES(mu_);
  // A server's Kafka address; an empty Broker when it has none or is not known.
  protocol::Broker kafkaBrokerOf(int32_t serverId) const EXCLUDES(mu_);
  std::vector<int32_t> liveServers() const EXCLUDES(mu_);

  // Marks a server drained (or not) in ZooKeeper: the persistent marker
  // <root>/draining/<id>, which every server watches. Idempotent; `done`
  // gets NONE, or the error of the write (on the completion thread).
  void requestDrain(int32_t serverId, bool drain, std::function<void(protocol::ErrorCode)> done);

 private:
  void retryRegistrationLater() EXCLUDES(mu_);
  void onListed(std::vector<std::string> children) EXCLUDES(mu_);
  void watchServers() EXCLUDES(mu_);
  void watchDraining() EXCLUDES(mu_);
  void onDrainingListed(std::vector<std::string> children) EXCLUDES(mu_);

  zk::Client& zk_;
  const layout::Layout& layout_;
  const TimeSource& time_;
  const SessionEpoch& epoch_;
  const Events events_;
  ServerIdentity self_;

  std::atomic<bool> registered_{false};
  std::atomic<bool> registering_{false};
  // When this server first found its id held by another session (ms on
  // time_'s clock); 0: not held.
  std::atomic<int64_t> idTakenSince_{0};

  const Millis settleDelay_;

  struct Known {
    protocol::Broker broker;
    TimePoint since;            // first seen live
    protocol::Broker internal;  // none without an internal listener
    protocol::Broker kafka;     // none without a Kafka port
  };
  mutable Mutex mu_;
  std::map<int32_t, Known> servers_ GUARDED_BY(mu_);
  TimePoint selfSince_ GUARDED_BY(mu_);  // this server's registration was sent
  std::set<int32_t> draining_ GUARDED_BY(mu_);
  bool firstListing_ GUARDED_BY(mu_) = true;
  TimePoint nextRegisterAttempt_ GUARDED_BY(mu_);
  // A listing to do again at the next tick (it failed, or the connection
  // came back and a change may have been missed).
  bool relistServers_ GUARDED_BY(mu_) = false;
  bool relistDraining_ GUARDED_BY(mu_) = false;
};

}  // namespace groupcoord::adapter
