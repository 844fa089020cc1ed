#include "adapter/MemberIds.h"

#include <random>

#include <fmt/format.h>

#include "adapter/Hash.h"

namespace groupcoord::adapter {

MemberIds::MemberIds(int32_t serverId) {
  std::random_device rd;
  MutexLock lock(mu_);
  state_ = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(serverId);
}

std::string MemberIds::next(const std::optional<std::string>& clientId) {
  std::string prefix;
  if (clientId) {
    for (char c : *clientId) {
      if (prefix.size() >= 64) break;
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                c == '.';
      if (ok) prefix.push_back(c);
    }
  }
  if (prefix.empty() || prefix == "." || prefix == "..") prefix = "consumer";
  uint64_t x;
  {
    MutexLock lock(mu_);
    state_ += 0x9e3779b97f4a7c15ULL;
    x = mix64(state_);
  }
  return fmt::format("{}-{:016x}", prefix, x);
}

}  // namespace groupcoord::adapter
