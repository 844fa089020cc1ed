#pragma once

// Slowing down secret guessing (docs/design.md, "Authentication"): failed
// Authenticates counted per client address and per user name. The first
// kFreeFailures of either cost nothing more; after them every Authenticate
// from that address, or for that user, waits before it is checked:
// kFirstDelay, doubling with each further failure, up to kMaxDelay. A key
// without a failure for kForgetAfter is forgotten, and a success clears the
// address's and the user's counts.
//
// The memory is bounded whatever the number of addresses and names tried:
// at most kMaxKeys of each, the least recently failed forgotten first (a
// guesser's target keeps failing, so it stays).
//
// Pure bookkeeping on a caller-given clock; the gate (AuthGate) holds the
// waiting checks. Not thread-safe: the gate's worker alone calls it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

namespace groupcoord::server {

class AuthThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr uint32_t kFreeFailures = 3;
  static constexpr std::chrono::milliseconds kFirstDelay{200};
  static constexpr std::chrono::milliseconds kMaxDelay{5000};
  static constexpr std::chrono::seconds kForgetAfter{300};
  static constexpr size_t kMaxKeys = 10000;

  // When an Authenticate from `address` for `user` may be checked (now or
  // earlier: at once).
  Clock::time_point notBefore(std::string_view address, std::string_view user, Clock::time_point now);
  // The outcome of a check made at `now`.
  void failed(std::string_view address, std::string_view user, Clock::time_point now);
  void succeeded(std::string_view address, std::string_view user);

  // The wait after `failures` failures in a row.
  static std::chrono::milliseconds delayAfter(uint32_t failures);

  size_t addresses() const { return addresses_.size(); }
  size_t users() const { return users_.size(); }

 private:
  struct Entry {
    uint32_t failures = 0;
    Clock::time_point lastFailure;
    Clock::time_point notBefore;
    std::list<std::string>::iterator age;  // in order_, least recently failed first
  };
  struct Keys {
    std::unordered_map<std::string, Entry> entries;
    std::list<std::string> order;
    size_t size() const { return entries.size(); }
  };
  static Entry* find(Keys& keys, std::string_view key, Clock::time_point now);
  static void fail(Keys& keys, std::string_view key, Clock::time_point now);
  static void clear(Keys& keys, std::string_view key);

  Keys addresses_;
  Keys users_;
};

}  // namespace groupcoord::server
