#pragma once

// The two small hashes of the adapter: rendezvous scores (ServerRegistry)
// and member ids (MemberIds). Stable across versions: every server of a
// fleet must compute the same preferred controller for a group.

#include <cstdint>
#include <string_view>

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

}  // namespace groupcoord::adapter
