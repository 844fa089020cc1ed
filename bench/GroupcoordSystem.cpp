// The peers scenario's groupcoord system: bench/Fleet's members, each on a
// connection of its own, in client-mode groups. A member sees the others in
// the member list its registrations are answered with (RegisterConsumer
// version 2, docs/protocol.md §16: the whole list, or what changed since
// the generation whose list it holds), and learns of a change when its next
// heartbeat answers REBALANCE_NEEDED and it registers again.

#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/Common.h"
#include "bench/Fleet.h"
#include "bench/Peers.h"

namespace groupcoord::bench {
namespace {

using protocol::ErrorCode;

class GroupcoordSystem : public PeerSystem {
 public:
  GroupcoordSystem(Loop& loop, uint16_t port, int64_t sessionMs)
      // Connections are opened as members need them: a slot each, as many
      // as members ever join.
      : loop_(loop), port_(port), sessionMs_(sessionMs), fleet_(loop, {port}, 1'000'000) {
    fleet_.registerVersion = 2;
    fleet_.onRegisterAnswer = [this](size_t i, const protocol::RegisterConsumerResponse& r) { onList(i, r); };
    // The client library's default interval: a third of the session
    // (ConsumerConfig::heartbeatInterval).
    fleet_.startBeating(static_cast<uint64_t>(sessionMs) * kMs / 3);
  }

  ~GroupcoordSystem() override { fleet_.stopBeating(); }

  std::string name() const override { return "groupcoord"; }

  bool prepare(const std::vector<std::string>& groups) override {
    for (const auto& g : groups) {
      const ErrorCode e = createGroup(loop_, port_, g, sessionMs_, {}, nullptr, protocol::AssignmentMode::CLIENT);
      if (e != ErrorCode::NONE) {
        log("peers: CreateGroup %s: %s", g.c_str(), std::string(protocol::errorName(e)).c_str());
        return false;
      }
    }
    return true;
  }

  void join(size_t id, const std::string& group, std::function<void(bool)> done) override {
    const size_t i = fleet_.add(group, port_);
    fleet_.at(i).metadata = "m" + std::to_string(id);
    if (fleetOf_.size() <= id) fleetOf_.resize(id + 1, SIZE_MAX);
    fleetOf_[id] = i;
    idOf_.push_back(id);
    views_.emplace_back();
    attempt(i, 0, std::move(done));
  }

  void leave(size_t id) override {
    Member* m = find(id);
    if (m == nullptr || m->crashed) return;
    m->crashed = true;  // beats no more
    const size_t i = fleetOf_[id];
    const int conn = fleet_.connFor(i);
    if (conn < 0) return;
    ++leaves_;
    loop_.send(conn, protocol::LeaveGroupRequest{m->group, m->id}, [this, i](const protocol::Response*, uint64_t) {
      Member& mm = fleet_.at(i);
      fleet_.killConnection(mm.port, mm.slot);
    });
  }

  void crash(size_t id) override {
    Member* m = find(id);
    if (m == nullptr || m->crashed) return;
    m->crashed = true;
    fleet_.killConnection(m->port, m->slot);
  }

  uint64_t requestsSent() const override {
    auto& s = const_cast<Fleet&>(fleet_).stats();
    return s.heartbeats + s.registrations + leaves_;
  }

 private:
  Member* find(size_t id) {
    if (id >= fleetOf_.size() || fleetOf_[id] == SIZE_MAX) return nullptr;
    return &fleet_.at(fleetOf_[id]);
  }

  void attempt(size_t i, int tries, std::function<void(bool)> done) {
    fleet_.registerMember(i, [this, i, tries, done = std::move(done)](bool ok) mutable {
      if (ok) {
        fleet_.joinSchedule(i);
        done(true);
      } else if (tries + 1 < 20 && !fleet_.at(i).crashed) {
        loop_.after(50 * kMs, [this, i, tries, done = std::move(done)]() mutable { attempt(i, tries + 1, std::move(done)); });
      } else {
        done(false);
      }
    });
  }

  // The member's list after this answer: the whole list, or the one it held
  // changed by what the answer adds and removes.
  void onList(size_t i, const protocol::RegisterConsumerResponse& r) {
    if (r.mode != protocol::AssignmentMode::CLIENT) return;
    auto& view = views_[i];
    std::unordered_map<std::string, size_t> next;
    if (r.listBase >= 0) next = view;
    for (const auto& gone : r.removedMembers) next.erase(gone);
    for (const auto& md : r.memberData) {
      if (md.metadata.size() < 2 || md.metadata[0] != 'm') continue;
      next[md.consumerId] = std::strtoull(md.metadata.c_str() + 1, nullptr, 10);
    }
    if (static_cast<int32_t>(next.size()) != r.memberCount) {
      // It lost count: the next registration asks for the whole list.
      fleet_.at(i).listGeneration = -1;
      ++mismatches_;
    }
    if (seen) {
      const size_t observer = idOf_[i];
      for (const auto& [cid, subject] : next) {
        if (!view.count(cid)) seen(observer, subject, true);
      }
      for (const auto& [cid, subject] : view) {
        if (!next.count(cid)) seen(observer, subject, false);
      }
    }
    view = std::move(next);
  }

  Loop& loop_;
  uint16_t port_;
  int64_t sessionMs_;
  Fleet fleet_;
  std::vector<size_t> fleetOf_;  // member id -> its index in the fleet
  std::vector<size_t> idOf_;     // fleet index -> member id
  std::vector<std::unordered_map<std::string, size_t>> views_;  // fleet index -> consumer id -> member id
  uint64_t leaves_ = 0;
  uint64_t mismatches_ = 0;
};

}  // namespace

std::unique_ptr<PeerSystem> makeGroupcoordSystem(Loop& loop, uint16_t port, int64_t sessionMs) {
  return std::make_unique<GroupcoordSystem>(loop, port, sessionMs);
}

}  // namespace groupcoord::bench
