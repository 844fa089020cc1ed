// The ownership checker: members driven over TCP join, leave, crash, pause
// and restart at random on one group with several topics, while a
// ZooKeeper node is killed and restarted and one of two groupcoordd servers
// is killed. Every grant and release is recorded with its time; the test
// fails if two members ever held the same partition at once, if an
// acknowledged commit is not what FetchOffsets returns at the end, or if the
// group does not settle within two session timeouts (and the scheduling
// allowance) once the churn stops.
// The members and the checks are support/OwnershipChecker.h, which the
// fault suite (tests/fault) shares.
//
// GROUPCOORD_CHECKER_SEED replays a seed; GROUPCOORD_CHECKER_SECONDS sets
// the churn's length (at least 30 s by default).

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "WireMember.h"
#include "common/Layout.h"
#include "support/OwnershipChecker.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;
using protocol::TopicPartition;
using Clock = std::chrono::steady_clock;

constexpr int64_t kSessionTimeoutMs = 2000;  // the group's
constexpr int64_t kZkSessionTimeoutMs = 4000;  // the servers'
constexpr const char* kGroup = "checked";

TEST(OwnershipChecker, NoPartitionIsEverHeldTwiceUnderChurnAndFaults) {
  requireEnsemble();
  uint64_t seed = 20261130;
  if (const char* s = std::getenv("GROUPCOORD_CHECKER_SEED")) seed = std::strtoull(s, nullptr, 10);
  int seconds = 30;
  if (const char* s = std::getenv("GROUPCOORD_CHECKER_SECONDS")) seconds = std::max(5, std::atoi(s));
  std::cout << "[checker] seed " << seed << " (replay with GROUPCOORD_CHECKER_SEED=" << seed << ")" << std::endl;

  const std::string root = "/" + uniqueName("checker");
  const std::string topicsPath = root + "-topics";
  zk::SessionConfig zc;
  zc.connect = zkConnect();
  zc.sessionTimeout = 10000ms;
  zk::Session zk(zc);
  ASSERT_EQ(zk.start(), zk::Error::Ok);
  ASSERT_EQ(zk.waitConnected(designBound(zc.sessionTimeout)), zk::Error::Ok);
  ASSERT_EQ(zk.ensurePathSync(topicsPath), zk::Error::Ok);
  const std::map<std::string, int32_t> topics{{"alpha", 12}, {"beta", 7}, {"gamma", 5}};
  std::set<TopicPartition> all;
  for (auto& [t, n] : topics) {
    ASSERT_EQ(zk.createSync(topicsPath + "/" + t, layout::encodeTopic(n), zk::CreateMode::Persistent).error,
              zk::Error::Ok);
    for (int32_t p = 0; p < n; ++p) all.insert({t, p});
  }

  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int id = 1; id <= 2; ++id) {
    servers.push_back(std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=" + std::to_string(id), "--zk-root=" + root, "--zk-topics-path=" + topicsPath,
        "--zk-session-timeout-ms=" + std::to_string(kZkSessionTimeoutMs)}));
    ASSERT_TRUE(servers.back()->start());
  }
  std::vector<uint16_t> ports{servers[0]->port(), servers[1]->port()};
  // Both registered before the group exists, so either may control it. A
  // server registers with one ZooKeeper write once it listens, answered
  // within its session timeout.
  ASSERT_TRUE(eventuallyWithin(designBound(std::chrono::milliseconds(kZkSessionTimeoutMs)),
                               [&] { return zk.getChildrenSync(root + "/servers").children.size() == 2; }))
      << "the two servers did not both register";
  auto created = createGroup(ports[0], kGroup, kSessionTimeoutMs, false, {"alpha", "beta", "gamma"});
  ASSERT_EQ(created.error, ErrorCode::NONE);
  ASSERT_FALSE(created.controller.isNone());
  size_t controllerIndex = created.controller.port == ports[0] ? 0 : 1;

  ServerPorts serverPorts(ports);
  SimMemberOptions options;
  options.group = kGroup;
  options.sessionTimeoutMs = kSessionTimeoutMs;
  OwnershipChecker checker(serverPorts, options);
  checker.start(20, seed);
  checker.setChurn(true);

  auto churnStart = Clock::now();
  auto at = [&](int s) { return churnStart + std::chrono::seconds(s); };
  int leader = awaitEnsembleLeader();
  ASSERT_GT(leader, 0) << "no ZooKeeper node leads";
  int follower = leader % 3 + 1;
  std::this_thread::sleep_until(at(seconds / 3));
  ASSERT_EQ(ensemble("kill " + std::to_string(follower)), 0);
  std::cout << "[checker] killed ZooKeeper node " << follower << std::endl;
  std::this_thread::sleep_until(at(seconds / 3 + 3));
  ASSERT_EQ(ensemble("restart " + std::to_string(follower)), 0);
  std::this_thread::sleep_until(at(seconds / 2));
  servers[controllerIndex]->kill9();
  serverPorts.set({ports[1 - controllerIndex]});
  std::cout << "[checker] killed the controlling groupcoordd (server " << controllerIndex + 1 << ")" << std::endl;
  std::this_thread::sleep_until(at(seconds));

  // The churn stops: every member comes back and behaves. The design's
  // bound: a member that crashed just before is evicted one session timeout
  // after its last heartbeat, and the move that follows is done within
  // another. Waited for one allowance longer, to tell late from never.
  const int64_t settleBoundMs = 2 * kSessionTimeoutMs;
  auto churnStop = Clock::now();
  checker.setChurn(false);
  auto settle = checker.waitSettled(all, churnStop,
                                    designBound(std::chrono::milliseconds(settleBoundMs)) + schedulingAllowance());
  checker.stop();

  // Overlaps: per partition, the holding intervals must not intersect.
  auto overlaps = checker.record().overlaps();
  for (auto& o : overlaps) ADD_FAILURE() << o;

  // Acknowledged commits against what ZooKeeper has (every member has
  // stopped, so nothing is in flight).
  auto fetched = fetchOffsetsOnAny({ports[1 - controllerIndex]}, kGroup);
  ASSERT_TRUE(fetched.has_value()) << "FetchOffsets failed";
  auto commits = checker.record().compareCommits(*fetched);
  for (auto& p : commits.problems) ADD_FAILURE() << p;
  auto counts = checker.record().counts();

  std::cout << "[figure] ownership checker: " << counts.grants << " grants and " << counts.releases
            << " releases checked, " << overlaps.size() << " overlaps; " << counts.commitsAcked
            << " commits acknowledged, " << commits.lost << " differ from FetchOffsets (" << commits.inDoubt
            << " partitions hold an unacknowledged later commit); settled " << settle.ms
            << " ms after the churn stopped (design bound " << settleBoundMs << " ms)" << std::endl;
  EXPECT_TRUE(settle.settled) << "the group did not settle: " << settle.reason;
  EXPECT_LE(settle.ms, designBoundMs(settleBoundMs))
      << "settled, but later than two session timeouts and the scheduling allowance";
  // That the churn exercised the group: every partition granted, and
  // commits acknowledged. How many fit in the churn's time is a measure of
  // speed, in the figure above.
  EXPECT_GE(counts.grants, all.size());
  EXPECT_GT(counts.commitsAcked, 0u);
  if (HasFailure()) {
    for (auto& s : servers) std::cerr << "---- groupcoordd log\n" << s->log() << std::endl;
  }
  for (auto& s : servers) s->terminate();
}

}  // namespace
}  // namespace groupcoord::testing
