#pragma once

// Member ids for registrations without one: "<client id reduced to name
// characters>-<16 hex digits>", unpredictable across servers and restarts.

#include <cstdint>
#include <optional>
#include <string>

#include "common/Sync.h"

namespace groupcoord::adapter {

class MemberIds {
 public:
  explicit MemberIds(int32_t serverId);
  std::string next(const std::optional<std::string>& clientId) EXCLUDES(mu_);

 private:
  Mutex mu_;
  uint64_t state_ GUARDED_BY(mu_);
};

}  // namespace groupcoord::adapter
