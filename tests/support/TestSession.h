#pragma once

// A ZooKeeper session of the test's own on the live ensemble, for reading
// what groupcoordd wrote and writing topics and brokers as Kafka would.

#include <memory>

#include "zk/Session.h"

namespace groupcoord::testing {

// Started and connected (10 s session); nullptr, with a test failure
// recorded, when the ensemble does not answer.
std::unique_ptr<zk::Session> openTestSession();

}  // namespace groupcoord::testing
