// The shared behaviour suite against zk::Session and the live ensemble
// (integration label). Fails, never skips, when no ensemble serves.

#include "ClientBehaviour.h"
#include "zk/Session.h"

namespace groupcoord::zk::test {
namespace {

class LiveBackend : public Backend {
 public:
  std::unique_ptr<Client> connect() override {
    SessionConfig config;
    config.connect = groupcoord::testing::zkConnect();
    config.sessionTimeout = kLiveSessionTimeout;
    config.logPrefix = "[behaviour] ";
    auto session = std::make_unique<Session>(config);
    EXPECT_EQ(session->start(), Error::Ok);
    Error connected = session->waitConnected(kWait);
    EXPECT_EQ(connected, Error::Ok) << "no session to " << config.connect;
    if (connected != Error::Ok) return nullptr;
    return session;
  }
};

std::unique_ptr<Backend> makeLive() {
  groupcoord::testing::requireEnsemble();
  if (::testing::Test::HasFatalFailure()) return nullptr;
  return std::make_unique<LiveBackend>();
}

INSTANTIATE_TEST_SUITE_P(Live, ClientBehaviour, ::testing::Values(BackendParam{"Live", makeLive}), backendName);

}  // namespace
}  // namespace groupcoord::zk::test
