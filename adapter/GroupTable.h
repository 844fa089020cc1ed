#pragma once

// The groups this server controls, by name.
//
// Lock: mu_ (shared for lookups, which every request makes) guards the
// table only. It is never held while a group's own lock is taken: callers
// get the group (or a snapshot of all of them) and release the table
// first, so "for every controlled group" is one helper, forEach().

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "adapter/GroupController.h"
#include "adapter/Hash.h"
#include "common/Sync.h"

namespace groupcoord::adapter {

class GroupTable {
 public:
  using Ptr = std::shared_ptr<GroupController>;

  Ptr find(std::string_view name) const EXCLUDES(mu_) {
    ReaderLock lock(mu_);
    auto it = groups_.find(name);
    return it == groups_.end() ? nullptr : it->second;
  }

  // One caller's last lookup, kept between its calls (a connection's
  // heartbeats, which name the same group each time), and the member last
  // found in that group (GroupController::heartbeat), emptied with it.
  struct Cached {
    uint64_t version = 0;  // the table's version() when filled; 0: empty
    std::string name;
    Ptr group;  // null: not here then
    GroupController::MemberCache member;
  };
  // find(name), from `cached` while the table is unchanged since `cached`
  // was filled for this name: no lock and no hash, one atomic load and a
  // compare. The group is a raw pointer kept alive by `cached` until it is
  // filled again or goes; like find()'s answer it may leave the table at
  // any moment, which its own phase tells.
  GroupController* find(std::string_view name, Cached& cached) const EXCLUDES(mu_) {
    // Read before the lookup: a change between the two leaves `cached`
    // older than the table, so the next call looks again.
    const uint64_t v = version_.load(std::memory_order_acquire);
    if (cached.version == v && cached.name == name) return cached.group.get();
    cached.group = find(name);
    cached.name.assign(name);
    cached.version = v;
    cached.member = {};  // of the group it held before, which may be gone
    return cached.group.get();
  }
  void insert(Ptr g) EXCLUDES(mu_) {
    WriterLock lock(mu_);
    groups_[g->name()] = std::move(g);
    version_.fetch_add(1, std::memory_order_release);
  }
  // Removes and returns the group, nullptr when not here.
  Ptr remove(const std::string& name) EXCLUDES(mu_) {
    WriterLock lock(mu_);
    auto it = groups_.find(name);
    if (it == groups_.end()) return nullptr;
    Ptr g = std::move(it->second);
    groups_.erase(it);
    version_.fetch_add(1, std::memory_order_release);
    return g;
  }
  // Removes and returns every group.
  std::vector<Ptr> removeAll() EXCLUDES(mu_) {
    WriterLock lock(mu_);
    std::vector<Ptr> all;
    all.reserve(groups_.size());
    for (auto& [_, g] : groups_) all.push_back(std::move(g));
    groups_.clear();
    version_.fetch_add(1, std::memory_order_release);
    return all;
  }
  std::vector<Ptr> snapshot() const EXCLUDES(mu_) {
    ReaderLock lock(mu_);
    std::vector<Ptr> all;
    all.reserve(groups_.size());
    for (auto& [_, g] : groups_) all.push_back(g);
    return all;
  }
  // f(GroupController&) for every controlled group, with no table lock held.
  template <class F>
  void forEach(F&& f) const EXCLUDES(mu_) {
    for (auto& g : snapshot()) f(*g);
  }

 private:
  mutable SharedMutex mu_;
  std::atomic<uint64_t> version_{1};  // moves on every change of the table
  // Looked up by string_view too (the heartbeat path reads names in place).
  std::unordered_map<std::string, Ptr, NameHash, std::equal_to<>> groups_ GUARDED_BY(mu_);
};

}  // namespace groupcoord::adapter
