#pragma once

// Which server controls each group, and this server's claims
// (docs/design.md, "Claims").
//
// Every server watches the list of groups and each group's controller
// znode (<group>/controller, ephemeral, holding the controller's id). A
// group without a controller is claimed by creating that znode: at once by
// its preferred server (ServerRegistry), by any server once it has stayed
// unclaimed for `claimFallback`. ZooKeeper lets one create succeed; the
// winner serves the group (Events::claimed).
//
// It also keeps the CreateGroup calls waiting for their new group's
// controller to be known, answered when it is or when their wait ends.
//
// Lock: mu_ guards the known groups and the waiters; it is never held
// while calling out (events run without it, on the completion thread or
// the ticker).

#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "adapter/Clock.h"
#include "adapter/Outbox.h"
#include "adapter/ServerRegistry.h"
#include "adapter/SessionEpoch.h"
#include "common/Layout.h"
#include "common/Sync.h"
#include "protocol/Handler.h"
#include "zk/Client.h"

namespace groupcoord::adapter {

struct ClaimsConfig {
  // A group without a controller whose preferred server has not claimed it
  // within this time is claimed by any server.
  Millis claimFallback{3000};
  // CreateGroup waits this long for the new group's controller to appear.
  Millis createWaitForController{5000};
};

class ControllerClaims {
 public:
  struct Events {
    // This server now controls the group.
    std::function<void(const std::string& group)> claimed;
    // The group's znode is gone, or its controller znode vanished: if
    // controlled here, it is not any more.
    std::function<void(const std::string& group, protocol::ErrorCode answer, const char* why)> lost;
    // May this server claim now? (registered, connected, not stopping)
    std::function<bool()> mayClaim;
    // The server that should control the group (FleetPlacement); when
    // empty, the registry's rendezvous choice.
    std::function<int32_t(const std::string& group)> preferred;
  };

  ControllerClaims(zk::Client& zk, const layout::Layout& layout, const TimeSource& time, const SessionEpoch& epoch,
                   const ServerRegistry& servers, ClaimsConfig config, Events events);

  // Lists the groups and watches the list.
  void watchGroups() EXCLUDES(mu_);
  // Claims every known group that has no controller and is ours to claim:
  // after this server registered, or when the live servers changed.
  void reconsider() EXCLUDES(mu_);
  // While connected: watches again what failed, claims what is due.
  void tick(TimePoint now) EXCLUDES(mu_);
  // Answers the CreateGroup waiters whose wait ended; while connected,
  // watches again for the others whose watch could not be set.
  void expireWaiters(TimePoint now, bool connected = true) EXCLUDES(mu_);
  // The connection came back in the same session.
  void rewatchSoon() EXCLUDES(mu_);
  // The session ended: nothing is known any more.
  void reset() EXCLUDES(mu_);
  // Stopping: every CreateGroup waiting is answered (without a controller).
  void answerWaiters(Outbox& out) EXCLUDES(mu_);

  // A CreateGroup of `group` succeeded: answer `done` with its controller
  // once known, or without one after createWaitForController.
  void awaitController(const std::string& group, protocol::ResponseCallback done) EXCLUDES(mu_);

  // The error for a controller-only request of a group not controlled here.
  protocol::ErrorCode notHere(const std::string& group, bool connected) const EXCLUDES(mu_);
  // Whether the groups have been listed once since this server started.
  bool listedOnce() const EXCLUDES(mu_);

  // Every known group and the server id its controller znode names (-1:
  // none, or not read yet). *complete: every one has been read.
  std::vector<std::pair<std::string, int32_t>> controllers(bool* complete = nullptr) const EXCLUDES(mu_);
  // The id one group's controller znode names; -1: none, unknown or not
  // read yet.
  int32_t controllerOf(const std::string& group) const EXCLUDES(mu_);
  // Changes whenever a group or a controller changes.
  uint64_t version() const { return version_.load(); }

 private:
  struct KnownGroup {
    bool hasController = false;
    bool claiming = false;
    bool watching = false;
    TimePoint noControllerSince;
    int32_t controller = -1;      // the id its znode names; -1: none or not read
    bool controllerRead = false;  // read since it was last seen to change
  };
  struct Waiter {
    std::string group;
    TimePoint deadline;
    std::atomic<bool> answered{false};
    // Its watch could not be set (ZooKeeper was away): the tick sets it again.
    std::atomic<bool> rewatch{false};
    protocol::ResponseCallback done;
    // Answers once; false when already answered.
    bool answer(protocol::Broker controller);
  };

  void onGroupsListed(std::vector<std::string> names) EXCLUDES(mu_);
  void watchController(const std::string& group) EXCLUDES(mu_);
  void readController(const std::string& group) EXCLUDES(mu_);
  // Asks again about every group waiting for a controller (after a
  // controller was read or claimed here).
  void claimWaiting() EXCLUDES(mu_);
  void maybeClaim(const std::string& group, TimePoint now) EXCLUDES(mu_);
  void claim(const std::string& group) EXCLUDES(mu_);
  void watchForController(const std::shared_ptr<Waiter>& w) EXCLUDES(mu_);

  zk::Client& zk_;
  const layout::Layout& layout_;
  const TimeSource& time_;
  const SessionEpoch& epoch_;
  const ServerRegistry& servers_;
  const ClaimsConfig config_;
  const Events events_;

  mutable Mutex mu_;
  std::map<std::string, KnownGroup> known_ GUARDED_BY(mu_);
  // The groups tick() must look at: not watched, or without a controller
  // and not being claimed. Kept beside known_ so that a tick costs nothing
  // while every group has its controller.
  std::set<std::string> attention_ GUARDED_BY(mu_);
  // The known groups seen without a controller, claimed or not.
  std::set<std::string> unclaimed_ GUARDED_BY(mu_);
  static constexpr size_t kClaimWaitingMax = 64;
  std::vector<std::shared_ptr<Waiter>> waiters_ GUARDED_BY(mu_);
  bool rewatchNeeded_ GUARDED_BY(mu_) = false;
  // The groups have been listed once: until then a group this server does
  // not know of may well exist (notHere answers CONTROLLER_NOT_AVAILABLE).
  bool listedOnce_ GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> version_{0};
};

}  // namespace groupcoord::adapter
