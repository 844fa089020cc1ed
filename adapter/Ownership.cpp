#include "adapter/Ownership.h"

#include <algorithm>

namespace groupcoord::adapter {

namespace {
const std::string kNobody;
}

void Ownership::setTarget(std::map<std::string, std::vector<Partition>> target) {
  // Only the members whose targets changed are indexed again: a move in a
  // big group changes a few of them, and indexing every partition again
  // took most of a 10,000-member generation move (docs/design.md, "Moves
  // that leave a member as it is": what a move costs the controller). Both
  // maps are sorted by member: one walk finds them. Targets are disjoint
  // (the assignment's rule), so unindexing every changed member before
  // indexing any gives the same index as building it anew; one that is not
  // is indexed anew.
  std::vector<std::map<std::string, std::vector<Partition>>::const_iterator> added;
  auto unindex = [&](const std::string& member, const std::vector<Partition>& ps) {
    for (const auto& p : ps) {
      auto t = targetOf_.find(p);
      if (t == targetOf_.end() || t->second != member) continue;
      placed_ -= placed(p) ? 1 : 0;
      targetOf_.erase(t);
    }
  };
  auto o = target_.begin();
  auto n = target.cbegin();
  while (o != target_.end() || n != target.cend()) {
    if (n == target.cend() || (o != target_.end() && o->first < n->first)) {
      unindex(o->first, o->second);
      ++o;
    } else if (o == target_.end() || n->first < o->first) {
      added.push_back(n);
      ++n;
    } else {
      if (o->second != n->second) {
        unindex(o->first, o->second);
        added.push_back(n);
      }
      ++o;
      ++n;
    }
  }
  bool disjoint = !overlapping_;
  for (auto it = added.begin(); disjoint && it != added.end(); ++it) {
    for (const auto& p : (*it)->second) {
      auto [at, inserted] = targetOf_.try_emplace(p, (*it)->first);
      if (!inserted) {
        disjoint = false;  // given to two members: see below
        break;
      }
      placed_ += placed(p) ? 1 : 0;
    }
  }
  target_ = std::move(target);
  if (!disjoint) {
    // A target that gives a partition to two members (only a handover
    // record from elsewhere could say so): indexed anew, the first member
    // in order having it, and anew at the next target too, since which
    // members list it is not kept.
    targetOf_.clear();
    for (auto& [member, ps] : target_) {
      for (auto& p : ps) targetOf_.try_emplace(p, member);
    }
    placed_ = 0;
    for (auto& [p, member] : targetOf_) placed_ += placed(p) ? 1 : 0;
  }
  overlapping_ = !disjoint;
  ++epoch_;
}

bool Ownership::placed(const Partition& p) const {
  auto t = targetOf_.find(p);
  if (t == targetOf_.end()) return false;
  auto h = holder_.find(p);
  return h != holder_.end() && h->second == t->second;
}

void Ownership::hold(const Partition& p, const std::string& member) {
  holder_.emplace(p, member);
  placed_ += placed(p) ? 1 : 0;
}

void Ownership::free(const Partition& p) {
  placed_ -= placed(p) ? 1 : 0;
  holder_.erase(p);
  if (auto t = targetOf_.find(p); t != targetOf_.end()) freedFor_.insert(t->second);
}

void Ownership::reportOwned(const std::string& member, const std::vector<Partition>& owned) {
  ++epoch_;
  std::set<Partition> reported(owned.begin(), owned.end());
  auto it = held_.find(member);
  if (it != held_.end()) {
    for (auto p = it->second.begin(); p != it->second.end();) {
      if (!reported.count(*p)) {
        free(*p);
        p = it->second.erase(p);
      } else {
        ++p;
      }
    }
  }
  for (const auto& p : reported) {
    if (holder_.count(p)) continue;  // another member's: it stays with that member
    hold(p, member);
    held_[member].insert(p);
  }
  if (auto e = held_.find(member); e != held_.end() && e->second.empty()) held_.erase(e);
}

bool Ownership::grantable(const std::string& member, const Partition& p, TimePoint now) const {
  auto h = holder_.find(p);
  if (h != holder_.end()) return h->second == member;
  return now >= graceUntil_;
}

std::vector<Partition> Ownership::grant(const std::string& member, TimePoint now) {
  std::vector<Partition> out;
  auto t = target_.find(member);
  if (t == target_.end()) return out;
  for (const auto& p : t->second) {
    if (!grantable(member, p, now)) continue;
    if (!holder_.count(p)) {
      hold(p, member);
      held_[member].insert(p);
      ++epoch_;
    }
    out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t Ownership::releaseUntargeted(const std::string& member) {
  auto it = held_.find(member);
  if (it == held_.end()) return 0;
  // Called on every in-sync heartbeat: no allocation. A member's target is
  // a handful of partitions, so a linear search is the cheap one.
  static const std::vector<Partition> kNone;
  auto t = target_.find(member);
  const std::vector<Partition>& keep = t == target_.end() ? kNone : t->second;
  size_t released = 0;
  for (auto p = it->second.begin(); p != it->second.end();) {
    if (std::find(keep.begin(), keep.end(), *p) == keep.end()) {
      free(*p);
      p = it->second.erase(p);
      ++released;
    } else {
      ++p;
    }
  }
  if (it->second.empty()) held_.erase(it);
  if (released > 0) ++epoch_;
  return released;
}

size_t Ownership::releaseAll(const std::string& member) {
  auto it = held_.find(member);
  if (it == held_.end()) return 0;
  size_t n = it->second.size();
  ++epoch_;
  for (const auto& p : it->second) free(p);
  held_.erase(it);
  return n;
}

bool Ownership::due(const std::string& member, TimePoint now) const {
  auto t = target_.find(member);
  if (t == target_.end()) return false;
  for (const auto& p : t->second) {
    auto h = holder_.find(p);
    if (h == holder_.end() ? now >= graceUntil_ : false) return true;
  }
  return false;
}

bool Ownership::holdsExactlyItsTarget(const std::string& member) const {
  auto t = target_.find(member);
  auto h = held_.find(member);
  const size_t targeted = t == target_.end() ? 0 : t->second.size();
  const size_t held = h == held_.end() ? 0 : h->second.size();
  if (targeted != held) return false;
  if (targeted == 0) return true;
  return std::all_of(t->second.begin(), t->second.end(), [&](const Partition& p) { return h->second.count(p) != 0; });
}

bool Ownership::holdsOnlyItsTarget(const std::string& member) const {
  auto h = held_.find(member);
  if (h == held_.end()) return true;
  auto t = target_.find(member);
  if (t == target_.end()) return h->second.empty();
  return std::all_of(h->second.begin(), h->second.end(), [&](const Partition& p) {
    return std::find(t->second.begin(), t->second.end(), p) != t->second.end();
  });
}

bool Ownership::owns(const std::string& member, const Partition& p) const {
  auto h = holder_.find(p);
  return h != holder_.end() && h->second == member;
}

const std::string& Ownership::holderOf(const Partition& p) const {
  auto h = holder_.find(p);
  return h == holder_.end() ? kNobody : h->second;
}

std::vector<Partition> Ownership::heldBy(const std::string& member) const {
  auto it = held_.find(member);
  if (it == held_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

void Ownership::clear() {
  target_.clear();
  targetOf_.clear();
  placed_ = 0;
  overlapping_ = false;
  holder_.clear();
  held_.clear();
  graceUntil_ = TimePoint{};
  freedFor_.clear();
  ++epoch_;
}

}  // namespace groupcoord::adapter
