#include "support/TestSession.h"

#include <gtest/gtest.h>

#include <chrono>

#include "support/TestEnv.h"

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
  if (const zk::Error e = session->waitConnected(10s); e != zk::Error::Ok) {
    ADD_FAILURE() << "no ZooKeeper connection to " << zc.connect << " within 10 s";
    return nullptr;
  }
  return session;
}

}  // namespace groupcoord::testing
