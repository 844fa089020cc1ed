#include "adapter/Hash.h"

#include <chrono>
#include <random>

namespace groupcoord::adapter {

uint64_t processSeed() {
  std::random_device device;
  const uint64_t r = (static_cast<uint64_t>(device()) << 32) ^ device();
  // The clock too, should random_device be a fixed sequence on some platform.
  return mix64(r ^ static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
}

}  // namespace groupcoord::adapter
