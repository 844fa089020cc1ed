#pragma once

// Brokers' racks, from Kafka's layout: every child <id> of <brokers-path>
// (default /brokers/ids) is a broker, its JSON's "rack" field its rack
// (docs/design.md, "Assignment"). Watched from start() on, the list and each
// broker's data; when a broker's rack changes (it appears with a rack, goes
// away, or its rack moves) `changed(id)` is told, without locks held, on the
// completion thread. A broker whose JSON cannot be read counts as having no
// rack, with a log line; the rest goes on.
//
// Lock: mu_ guards the broker table only; it is never held while calling
// out or while taking another lock.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "adapter/SessionEpoch.h"
#include "common/Sync.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

class BrokerRacks {
 public:
  using Changed = std::function<void(int32_t broker)>;

  BrokerRacks(zk::Client& zk, std::string brokersPath, const SessionEpoch& epoch, Changed changed)
      : zk_(zk), brokersPath_(std::move(brokersPath)), epoch_(epoch), changed_(std::move(changed)) {}

  // Lists the brokers and watches the list and each broker's data. Call once
  // per session, when it is established.
  void watch() EXCLUDES(mu_);
  // Watches again what failed to be read (the list, a broker). Called by the
  // tick while ZooKeeper is connected.
  void rewatch() EXCLUDES(mu_);
  // The session ended: its watches are gone.
  void clear() EXCLUDES(mu_);

  // The rack of each of these brokers that has one; brokers unknown or
  // without a rack are absent.
  std::map<int32_t, std::string> racksOf(const std::set<int32_t>& brokers) const EXCLUDES(mu_);

 private:
  struct Broker {
    std::string rack;  // "" for none
    bool watching = false;
  };
  void watchList() EXCLUDES(mu_);
  void onListed(const std::vector<std::string>& children) EXCLUDES(mu_);
  void watchBroker(int32_t id) EXCLUDES(mu_);
  void onRack(int32_t id, std::string rack) EXCLUDES(mu_);
  void onGone(int32_t id) EXCLUDES(mu_);

  zk::Client& zk_;
  const std::string brokersPath_;
  const SessionEpoch& epoch_;
  const Changed changed_;

  mutable Mutex mu_;
  bool listWatched_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  std::map<int32_t, Broker> brokers_ GUARDED_BY(mu_);
};

}  // namespace groupcoord::adapter
