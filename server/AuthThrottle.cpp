#include "server/AuthThrottle.h"

#include <algorithm>

namespace groupcoord::server {

std::chrono::milliseconds AuthThrottle::delayAfter(uint32_t failures) {
  if (failures < kFreeFailures) return std::chrono::milliseconds{0};
  const uint32_t doublings = std::min<uint32_t>(failures - kFreeFailures, 16);
  return std::min(kMaxDelay, kFirstDelay * (int64_t{1} << doublings));
}

AuthThrottle::Entry* AuthThrottle::find(Keys& keys, std::string_view key, Clock::time_point now) {
  auto it = keys.entries.find(std::string(key));
  if (it == keys.entries.end()) return nullptr;
  if (now - it->second.lastFailure >= kForgetAfter) {
    keys.order.erase(it->second.age);
    keys.entries.erase(it);
    return nullptr;
  }
  return &it->second;
}

void AuthThrottle::fail(Keys& keys, std::string_view key, Clock::time_point now) {
  Entry* e = find(keys, key, now);
  if (e == nullptr) {
    while (keys.entries.size() >= kMaxKeys && !keys.order.empty()) {
      keys.entries.erase(keys.order.front());
      keys.order.pop_front();
    }
    keys.order.emplace_back(key);
    auto [it, inserted] = keys.entries.emplace(std::string(key), Entry{});
    e = &it->second;
    e->age = std::prev(keys.order.end());
  } else {
    keys.order.splice(keys.order.end(), keys.order, e->age);  // the most recently failed now
  }
  ++e->failures;
  e->lastFailure = now;
  e->notBefore = now + delayAfter(e->failures);
}

void AuthThrottle::clear(Keys& keys, std::string_view key) {
  auto it = keys.entries.find(std::string(key));
  if (it == keys.entries.end()) return;
  keys.order.erase(it->second.age);
  keys.entries.erase(it);
}

AuthThrottle::Clock::time_point AuthThrottle::notBefore(std::string_view address, std::string_view user,
                                                        Clock::time_point now) {
  Clock::time_point at{};
  if (Entry* e = find(addresses_, address, now)) at = std::max(at, e->notBefore);
  if (Entry* e = find(users_, user, now)) at = std::max(at, e->notBefore);
  return at;
}

void AuthThrottle::failed(std::string_view address, std::string_view user, Clock::time_point now) {
  fail(addresses_, address, now);
  fail(users_, user, now);
}

void AuthThrottle::succeeded(std::string_view address, std::string_view user) {
  clear(addresses_, address);
  clear(users_, user);
}

}  // namespace groupcoord::server
