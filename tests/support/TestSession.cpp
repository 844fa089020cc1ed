#include "support/TestSession.h"

#include <gtest/gtest.h>

#include <chrono>

#include "support/TestEnv.h"
#include "support/Timing.h"

namespace groupcoord::testing {

std::unique_ptr<zk::Session> openTestSession() {
  using namespace std::chrono_literals;
  zk::SessionConfig zc;
  zc.connect = zkConnect();
  zc.sessionTimeout = 10000ms;
  auto session = std::make_unique<zk::Session>(zc);
  if (const zk::Error e = session->start(); e != zk::Error::Ok) {
    ADD_FAILURE() << "cannot start a ZooKeeper session to " << zc.connect;
    return nullptr;
  }
  // A live ensemble grants a session within its timeout.
  const auto wait = designBound(zc.sessionTimeout);
  if (const zk::Error e = session->waitConnected(wait); e != zk::Error::Ok) {
    ADD_FAILURE() << "no ZooKeeper connection to " << zc.connect << " within " << wait.count() << " ms";
    return nullptr;
  }
  return session;
}

}  // namespace groupcoord::testing
