// The shared behaviour suite against zk::FakeClient (unit label).

#include "ClientBehaviour.h"
#include "zk/FakeClient.h"

namespace groupcoord::zk::test {
namespace {

class FakeBackend : public Backend {
 public:
  std::unique_ptr<Client> connect() override { return std::make_unique<FakeClient>(ensemble_); }

 private:
  FakeEnsemble ensemble_;
};

INSTANTIATE_TEST_SUITE_P(Fake, ClientBehaviour,
                         ::testing::Values(BackendParam{"Fake", [] { return std::make_unique<FakeBackend>(); }}),
                         backendName);

}  // namespace
}  // namespace groupcoord::zk::test
