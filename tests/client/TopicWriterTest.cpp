// common/TopicWriter (groupctl topic create) without an ensemble: the
// outcomes groupctl maps to its messages before any znode is written.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "common/TopicWriter.h"
#include "support/TestEnv.h"

namespace groupcoord::topics {
namespace {

using namespace std::chrono_literals;

TEST(TopicWriter, CodeNames) {
  EXPECT_TRUE(ZkCode{0}.ok());
  EXPECT_EQ(ZkCode{0}.name(), "ZOK");
  EXPECT_TRUE(ZkCode{-110}.nodeExists());
  EXPECT_EQ(ZkCode{-110}.name(), "ZNODEEXISTS");
  EXPECT_EQ(ZkCode{-101}.name(), "ZNONODE");
  EXPECT_EQ(ZkCode{-102}.name(), "ZNOAUTH");
  EXPECT_EQ(ZkCode{-4242}.name(), "ZERROR(-4242)");
}

TEST(TopicWriter, RefusesAnEmptyConnectString) {
  TopicWriter writer("");
  EXPECT_FALSE(writer.start().ok());
}

TEST(TopicWriter, NothingListeningTimesOut) {
  TopicWriter writer("127.0.0.1:" + std::to_string(groupcoord::testing::closedLoopbackPort()));
  ASSERT_TRUE(writer.start().ok());
  const auto before = std::chrono::steady_clock::now();
  const ZkCode waited = writer.waitConnected(300ms);
  EXPECT_EQ(waited.name(), "ZOPERATIONTIMEOUT");
  // It never gives up before its wait: a lower bound, strict (a busy machine
  // only makes the wait longer).
  EXPECT_GE(std::chrono::steady_clock::now() - before, 300ms);
}

TEST(TopicWriter, WritesNeedAStartedSession) {
  TopicWriter writer("127.0.0.1:2181");
  EXPECT_EQ(writer.waitConnected(10ms).name(), "ZINVALIDSTATE");
  EXPECT_EQ(writer.ensurePath("/brokers/topics").name(), "ZINVALIDSTATE");
  EXPECT_EQ(writer.createTopic("/brokers/topics/t", 3, layout::randomTopicId()).name(), "ZINVALIDSTATE");
}

}  // namespace
}  // namespace groupcoord::topics
