#pragma once

// Typed outcome of a client call: the protocol's error code plus a sentence
// for people, so that callers can branch on the code and log the message,
// and whether any server was reached at all.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "protocol/Messages.h"

namespace groupcoord::client {

struct Status {
  enum class Kind : uint8_t {
    // A server's answer, or what the library concluded from answers or
    // their absence after connecting (a request that timed out, say).
    Answered,
    // No server could be connected to (Connection::unreachable()); the code
    // is CONTROLLER_NOT_AVAILABLE.
    Unreachable,
  };

  protocol::ErrorCode code = protocol::ErrorCode::NONE;
  std::string message;
  Kind kind = Kind::Answered;

  bool ok() const { return code == protocol::ErrorCode::NONE; }
  bool unreachable() const { return kind == Kind::Unreachable; }
  std::string_view name() const { return protocol::errorName(code); }
  // "NOT_CONTROLLER: server 2 at 127.0.0.1:7401 is not the controller of group orders"
  std::string toString() const {
    std::string out(name());
    if (!message.empty()) out += ": " + message;
    return out;
  }

  static Status success() { return {}; }
  static Status error(protocol::ErrorCode code, std::string message) {
    return {code, std::move(message), Kind::Answered};
  }
  // CONTROLLER_NOT_AVAILABLE of kind Unreachable.
  static Status unreachableError(std::string message) {
    return {protocol::ErrorCode::CONTROLLER_NOT_AVAILABLE, std::move(message), Kind::Unreachable};
  }
};

// A Status with the value the call produced; the value is meaningful only when ok().
template <typename T>
struct Result {
  Status status;
  T value{};
  bool ok() const { return status.ok(); }
};

}  // namespace groupcoord::client
