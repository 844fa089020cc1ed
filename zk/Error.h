#pragma once

// One error type for everything zk/ returns: exactly the ZooKeeper C
// client's return codes, so a value can be compared with the C header's
// ZOK, ZNONODE, ... and logged by name.

#include <cstdint>
#include <string_view>

#include <fmt/format.h>

namespace groupcoord::zk {

enum class Error : int32_t {
  Ok = 0,
  SystemError = -1,
  RuntimeInconsistency = -2,
  DataInconsistency = -3,
  ConnectionLoss = -4,
  MarshallingError = -5,
  Unimplemented = -6,
  OperationTimeout = -7,
  BadArguments = -8,
  InvalidState = -9,
  NewConfigNoQuorum = -13,
  ReconfigInProgress = -14,
  SslConnectionError = -15,
  ApiError = -100,
  NoNode = -101,
  NoAuth = -102,
  BadVersion = -103,
  NoChildrenForEphemerals = -108,
  NodeExists = -110,
  NotEmpty = -111,
  SessionExpired = -112,
  InvalidCallback = -113,
  InvalidAcl = -114,
  AuthFailed = -115,
  Closing = -116,
  Nothing = -117,
  SessionMoved = -118,
  NotReadOnly = -119,
  EphemeralOnLocalSession = -120,
  NoWatcher = -121,
  ReconfigDisabled = -123,
  SessionClosedRequireSaslAuth = -124,
  Throttled = -127,
};

// "ZNONODE (node does not exist)"-style text; unknown values print their number.
std::string_view errorName(Error e);     // e.g. "ZNONODE"
std::string_view errorMessage(Error e);  // e.g. "node does not exist"

inline bool isOk(Error e) { return e == Error::Ok; }

// The connection or the session is in trouble; the operation may or may not
// have been applied (ConnectionLoss, OperationTimeout) or certainly was not
// (SessionExpired, InvalidState, Closing, SessionMoved).
bool isConnectionProblem(Error e);

// Errors that describe the data, not the system: NoNode, NodeExists,
// BadVersion, NotEmpty, NoChildrenForEphemerals. Normal outcomes for callers
// that race with other writers.
bool isDataError(Error e);

}  // namespace groupcoord::zk

template <>
struct fmt::formatter<groupcoord::zk::Error> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(groupcoord::zk::Error e, Ctx& ctx) const {
    return fmt::format_to(ctx.out(), "{} ({})", groupcoord::zk::errorName(e),
                          groupcoord::zk::errorMessage(e));
  }
};
