#pragma once

// The groups this server controls, by name.
//
// Lock: mu_ (shared for lookups, which every request makes) guards the
// table only. It is never held while a group's own lock is taken: callers
// get the group (or a snapshot of all of them) and release the table
// first, so "for every controlled group" is one helper, forEach().

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "adapter/GroupController.h"
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
  void insert(Ptr g) EXCLUDES(mu_) {
    WriterLock lock(mu_);
    groups_[g->name()] = std::move(g);
  }
  // Removes and returns the group, nullptr when not here.
  Ptr remove(const std::string& name) EXCLUDES(mu_) {
    WriterLock lock(mu_);
    auto it = groups_.find(name);
    if (it == groups_.end()) return nullptr;
    Ptr g = std::move(it->second);
    groups_.erase(it);
    return g;
  }
  // Removes and returns every group.
  std::vector<Ptr> removeAll() EXCLUDES(mu_) {
    WriterLock lock(mu_);
    std::vector<Ptr> all;
    all.reserve(groups_.size());
    for (auto& [_, g] : groups_) all.push_back(std::move(g));
    groups_.clear();
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
  size_t size() const EXCLUDES(mu_) {
    ReaderLock lock(mu_);
    return groups_.size();
  }

 private:
  mutable SharedMutex mu_;
  // Looked up by string_view too (the heartbeat path reads names in place).
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Ptr, NameHash, std::equal_to<>> groups_ GUARDED_BY(mu_);
};

}  // namespace groupcoord::adapter
