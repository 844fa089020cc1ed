#pragma once

// A map from a name to V, in name order, with a hash index beside it.
//
// The group's members are kept in id order (a registration's answer lists
// them so, and the assignment reads them so), but the lookup every
// heartbeat makes costs one hash and one compare of the id here instead of
// log2(members) compares. The index holds views of the map's own keys
// (std::map nodes never move) and iterators to them; every change goes
// through this class, which keeps both in step.

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "adapter/Hash.h"

namespace groupcoord::adapter {

template <class V>
class NameMap {
  using Map = std::map<std::string, V, std::less<>>;

 public:
  using iterator = typename Map::iterator;
  using const_iterator = typename Map::const_iterator;

  NameMap() = default;
  NameMap(const NameMap&) = delete;  // the index points into this map
  NameMap& operator=(const NameMap&) = delete;

  iterator begin() { return map_.begin(); }
  iterator end() { return map_.end(); }
  const_iterator begin() const { return map_.begin(); }
  const_iterator end() const { return map_.end(); }
  size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }

  iterator find(std::string_view name) {
    auto it = index_.find(name);
    return it == index_.end() ? map_.end() : it->second;
  }
  const_iterator find(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? map_.end() : const_iterator(it->second);
  }
  size_t count(std::string_view name) const { return index_.count(name); }
  // Moves (from 1) whenever an element is added or removed: an element
  // found at one version is still where it was at the same version.
  uint64_t version() const { return version_; }

  // Inserts {name, value} unless `name` is here: the element, and whether
  // it was inserted.
  std::pair<iterator, bool> emplace(std::string name, V value) {
    if (auto it = find(name); it != map_.end()) return {it, false};
    auto [it, inserted] = map_.emplace(std::move(name), std::move(value));
    index_.emplace(std::string_view(it->first), it);
    ++version_;
    return {it, inserted};
  }
  // The element of `name`, inserted with V{} when not here.
  V& operator[](std::string_view name) { return emplace(std::string(name), V{}).first->second; }

  iterator erase(iterator it) {
    index_.erase(std::string_view(it->first));
    ++version_;
    return map_.erase(it);
  }
  size_t erase(std::string_view name) {
    auto it = find(name);
    if (it == map_.end()) return 0;
    erase(it);
    return 1;
  }
  void clear() {
    index_.clear();
    map_.clear();
    ++version_;
  }

 private:
  Map map_;
  uint64_t version_ = 1;
  std::unordered_map<std::string_view, iterator, NameHash> index_;
};

}  // namespace groupcoord::adapter
