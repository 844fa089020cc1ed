#include "client/KeyOwners.h"

#include <algorithm>

namespace groupcoord::client {

namespace {

uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// A finaliser that spreads FNV's low-entropy high bits (splitmix64's).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

const std::string kNobody;

}  // namespace

KeyOwners::KeyOwners(std::vector<std::string> members) : members_(std::move(members)) {
  std::sort(members_.begin(), members_.end());
  members_.erase(std::unique(members_.begin(), members_.end()), members_.end());
}

KeyOwners::KeyOwners(const std::vector<protocol::MemberMetadata>& members)
    : KeyOwners([&] {
        std::vector<std::string> ids;
        ids.reserve(members.size());
        for (auto& m : members) ids.push_back(m.consumerId);
        return ids;
      }()) {}

uint64_t KeyOwners::score(std::string_view member, std::string_view key) {
  // The member and the key hashed apart and combined, so that "ab"+"c" and
  // "a"+"bc" do not collide.
  return mix(fnv1a(key) ^ mix(fnv1a(member)));
}

const std::string& KeyOwners::owner(std::string_view key) const {
  const std::string* best = nullptr;
  uint64_t bestScore = 0;
  for (auto& m : members_) {  // sorted: on a tie the first (smaller id) stays
    const uint64_t s = score(m, key);
    if (!best || s > bestScore) {
      best = &m;
      bestScore = s;
    }
  }
  return best ? *best : kNobody;
}

}  // namespace groupcoord::client
