#include "adapter/MemberLists.h"

namespace groupcoord::adapter {

std::shared_ptr<const MemberLists::List> MemberLists::current(int64_t generation, Stamp stamp,
                                                             const std::function<List()>& build, bool base) {
  if (!kept_.empty() && kept_.back().generation == generation && kept_.back().stamp == stamp) {
    return kept_.back().list;
  }
  // A list of this generation or a later one (a group read again at an
  // older version cannot happen, but then nothing kept is trusted) goes.
  bool twice = false;
  while (!kept_.empty() && kept_.back().generation >= generation) {
    twice = true;
    kept_.pop_back();
  }
  kept_.push_back(Kept{generation, stamp, std::make_shared<const List>(build()), base && !twice});
  while (kept_.size() > kKept) kept_.pop_front();
  deltas_.clear();
  return kept_.back().list;
}

std::shared_ptr<const MemberLists::Delta> MemberLists::since(int64_t base) {
  if (kept_.empty()) return nullptr;
  if (auto d = deltas_.find(base); d != deltas_.end()) return d->second;
  for (size_t i = 0; i < kept_.size(); ++i) {
    if (kept_[i].generation != base) continue;
    if (!kept_[i].base) return nullptr;
    auto d = std::make_shared<const Delta>(diff(*kept_[i].list, *kept_.back().list));
    deltas_.emplace(base, d);
    return d;
  }
  return nullptr;
}

MemberLists::Delta MemberLists::diff(const List& from, const List& to) {
  Delta d;
  auto a = from.begin();
  auto b = to.begin();
  while (a != from.end() || b != to.end()) {
    if (b == to.end() || (a != from.end() && a->consumerId < b->consumerId)) {
      d.removed.push_back(a->consumerId);
      ++a;
    } else if (a == from.end() || b->consumerId < a->consumerId) {
      d.added.push_back(*b);
      ++b;
    } else {
      if (a->metadata != b->metadata || a->rack != b->rack) d.added.push_back(*b);
      ++a;
      ++b;
    }
  }
  return d;
}

}  // namespace groupcoord::adapter
