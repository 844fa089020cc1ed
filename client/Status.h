#pragma once

// Typed outcome of a client call: the protocol's error code plus a sentence
// for people, so that callers can branch on the code and log the message.

#include <string>
#include <string_view>
#include <utility>

#include "protocol/Messages.h"

namespace groupcoord::client {

struct Status {
  protocol::ErrorCode code = protocol::ErrorCode::NONE;
  std::string message;

  bool ok() const { return code == protocol::ErrorCode::NONE; }
  std::string_view name() const { return protocol::errorName(code); }
  // "NOT_CONTROLLER: server 2 at 127.0.0.1:7401 is not the controller of group orders"
  std::string toString() const {
    std::string out(name());
    if (!message.empty()) out += ": " + message;
    return out;
  }

  static Status success() { return {}; }
  static Status error(protocol::ErrorCode code, std::string message) { return {code, std::move(message)}; }
};

// A Status with the value the call produced; the value is meaningful only when ok().
template <typename T>
struct Result {
  Status status;
  T value{};
  bool ok() const { return status.ok(); }
};

}  // namespace groupcoord::client
