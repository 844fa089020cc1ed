#pragma once

// The one mapping of a ZooKeeper error to the wire: a connection problem
// is CONTROLLER_NOT_AVAILABLE (retry), anything else unexpected
// UNKNOWN_SERVER_ERROR. A ZooKeeper code never goes on the wire.

#include "protocol/Messages.h"
#include "zk/Error.h"

namespace groupcoord::adapter {

inline protocol::ErrorCode fromZk(zk::Error e) {
  if (e == zk::Error::Ok) return protocol::ErrorCode::NONE;
  if (zk::isConnectionProblem(e)) return protocol::ErrorCode::CONTROLLER_NOT_AVAILABLE;
  return protocol::ErrorCode::UNKNOWN_SERVER_ERROR;
}

}  // namespace groupcoord::adapter
