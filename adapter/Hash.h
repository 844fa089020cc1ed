#pragma once

// The small hashes of the adapter: rendezvous scores and the choice they
// make (ServerRegistry), and member ids (MemberIds). Stable across
// versions: every server of a fleet must compute the same preferred
// controller for a group.

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace groupcoord::adapter {

// splitmix64's finaliser.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a, 64 bits.
inline uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// The in-memory tables' hash of a name (groups by name, members by id):
// eight bytes at a time, seeded per process (names come from clients, so a
// table's buckets must not be predictable). Not stable across processes:
// never for anything stored or compared between servers (fnv1a is).
uint64_t processSeed();
inline uint64_t nameHash(std::string_view s) {
  static const uint64_t seed = processSeed();
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
  auto word = [](const char* at) {
    uint64_t w;
    std::memcpy(&w, at, 8);
    return w;
  };
  for (; n > 8; p += 8, n -= 8) h = (h ^ word(p)) * 0xbf58476d1ce4e5b9ULL, h ^= h >> 31;
  if (s.size() >= 8) {
    h ^= word(s.data() + s.size() - 8);  // the last eight bytes, overlapping what came before
  } else {
    uint64_t w = 0;
    for (size_t i = 0; i < n; ++i) w |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    h ^= w;
  }
  return mix64(h);
}

// std::unordered_map's hash for names, looked up by string_view too.
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return static_cast<size_t>(nameHash(s)); }
};

// Rendezvous hashing: server `id`'s score for the group whose name hashes
// to `groupHash` (fnv1a). The highest score wins, the lower id on a tie.
inline uint64_t rendezvousScore(uint64_t groupHash, int32_t id) {
  return mix64(groupHash ^ mix64(static_cast<uint64_t>(id)));
}

// Keeps the best candidate offered so far by rendezvous score.
struct RendezvousChoice {
  int32_t id = -1;  // -1 until a candidate is offered
  uint64_t score = 0;
  void offer(int32_t candidate, uint64_t s) {
    if (id < 0 || s > score || (s == score && candidate < id)) {
      id = candidate;
      score = s;
    }
  }
};

// The candidate rendezvous hashing picks for `group`; -1 when none.
inline int32_t rendezvousPick(std::string_view group, const std::vector<int32_t>& candidates) {
  const uint64_t h = fnv1a(group);
  RendezvousChoice best;
  for (int32_t id : candidates) best.offer(id, rendezvousScore(h, id));
  return best.id;
}

}  // namespace groupcoord::adapter
