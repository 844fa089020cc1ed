// zk::Error, the state and event names, and the path rules.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "zk/Error.h"
#include "zk/Path.h"
#include "zk/Types.h"

namespace groupcoord::zk {
namespace {

TEST(ZkError, ValuesAreTheCClientsCodes) {
  EXPECT_EQ(static_cast<int>(Error::Ok), 0);
  EXPECT_EQ(static_cast<int>(Error::ConnectionLoss), -4);
  EXPECT_EQ(static_cast<int>(Error::NoNode), -101);
  EXPECT_EQ(static_cast<int>(Error::NodeExists), -110);
  EXPECT_EQ(static_cast<int>(Error::SessionExpired), -112);
  EXPECT_EQ(static_cast<int>(Error::Closing), -116);
}

TEST(ZkError, PrintsNameAndMessage) {
  EXPECT_EQ(errorName(Error::NoNode), "ZNONODE");
  EXPECT_EQ(errorMessage(Error::NoNode), "node does not exist");
  EXPECT_EQ(fmt::format("{}", Error::BadVersion), "ZBADVERSION (version conflict)");
  EXPECT_EQ(fmt::format("{}", Error::Ok), "ZOK (ok)");
}

TEST(ZkError, UnknownCodesPrintTheirNumber) {
  auto odd = static_cast<Error>(-4242);
  EXPECT_EQ(errorName(odd), "ZERROR(-4242)");
  EXPECT_EQ(errorMessage(odd), "unknown error");
  EXPECT_EQ(fmt::format("{}", odd), "ZERROR(-4242) (unknown error)");
}

TEST(ZkError, EveryNamedCodeHasANameAndMessage) {
  for (int code = 0; code >= -130; --code) {
    auto e = static_cast<Error>(code);
    auto name = errorName(e);
    ASSERT_FALSE(name.empty());
    if (name.rfind("ZERROR(", 0) == 0) continue;
    EXPECT_EQ(name.substr(0, 1), "Z");
    EXPECT_NE(errorMessage(e), "unknown error") << name;
  }
}

TEST(ZkError, ConnectionProblemsAreNotDataErrors) {
  for (auto e : {Error::ConnectionLoss, Error::OperationTimeout, Error::SessionExpired, Error::InvalidState,
                 Error::Closing, Error::SessionMoved}) {
    EXPECT_TRUE(isConnectionProblem(e)) << errorName(e);
    EXPECT_FALSE(isDataError(e)) << errorName(e);
  }
  for (auto e : {Error::NoNode, Error::NodeExists, Error::BadVersion, Error::NotEmpty,
                 Error::NoChildrenForEphemerals}) {
    EXPECT_TRUE(isDataError(e)) << errorName(e);
    EXPECT_FALSE(isConnectionProblem(e)) << errorName(e);
  }
  for (auto e : {Error::Ok, Error::BadArguments, Error::NoAuth, Error::RuntimeInconsistency}) {
    EXPECT_FALSE(isDataError(e)) << errorName(e);
    EXPECT_FALSE(isConnectionProblem(e)) << errorName(e);
  }
  EXPECT_TRUE(isOk(Error::Ok));
  EXPECT_FALSE(isOk(Error::NoNode));
}

TEST(ZkTypes, StatesAndEventsHaveNames) {
  EXPECT_EQ(toString(SessionState::Reconnecting), "Reconnecting");
  EXPECT_EQ(toString(SessionState::Expired), "Expired");
  EXPECT_EQ(toString(WatchEvent::Type::Child), "Child");
  EXPECT_EQ(toString(WatchEvent::Type::NotWatching), "NotWatching");
}

TEST(ZkTypes, OpHelpersBuildTheRightOps) {
  Op c = makeCreate("/a", "d", CreateMode::Ephemeral);
  ASSERT_TRUE(std::holds_alternative<CreateOp>(c));
  EXPECT_EQ(std::get<CreateOp>(c).mode, CreateMode::Ephemeral);
  Op r = makeRemove("/a");
  EXPECT_EQ(std::get<RemoveOp>(r).version, kAnyVersion);
  Op s = makeSetData("/a", "x", 3);
  EXPECT_EQ(std::get<SetDataOp>(s).version, 3);
  Op k = makeCheck("/a", 4);
  EXPECT_EQ(std::get<CheckOp>(k).version, 4);
}

TEST(ZkPath, AcceptsWellFormedPaths) {
  for (const char* p : {"/", "/a", "/a/b", "/groupcoord/groups/g-1/members/c.1", "/a.b/..c/d..", "/-_~!", "/ü"}) {
    EXPECT_TRUE(isValidPath(p)) << p;
  }
}

TEST(ZkPath, RefusesMalformedPaths) {
  const std::vector<std::string> bad = {"", "a", "a/", "/a/", "//", "//a", "/a//b", "/.", "/..", "/a/.", "/a/..",
                                        "/./a", "/../a", std::string("/a\0b", 4), "/a\tb", "/a\nb", "/\x7f"};
  for (const auto& p : bad) EXPECT_FALSE(isValidPath(p)) << "'" << p << "'";
}

TEST(ZkPath, SequentialCreatesMayEndWithSlashOrDots) {
  EXPECT_TRUE(isValidPath("/a/", true));
  EXPECT_TRUE(isValidPath("/a/.", true));
  EXPECT_TRUE(isValidPath("/a/..", true));
  EXPECT_TRUE(isValidPath("/", true));
  EXPECT_FALSE(isValidPath("/a//", true));
  EXPECT_FALSE(isValidPath("/./a", true));
  EXPECT_FALSE(isValidPath("a/", true));
}

TEST(ZkPath, SplitsAndJoins) {
  EXPECT_EQ(parentPath("/a/b"), "/a");
  EXPECT_EQ(parentPath("/a"), "/");
  EXPECT_EQ(parentPath("/"), "");
  EXPECT_EQ(parentPath("/a/"), "/a");
  EXPECT_EQ(baseName("/a/b"), "b");
  EXPECT_EQ(baseName("/a"), "a");
  EXPECT_EQ(baseName("/"), "");
  EXPECT_EQ(joinPath("/", "b"), "/b");
  EXPECT_EQ(joinPath("/a", "b"), "/a/b");
  EXPECT_EQ(joinPath("/a/", "b"), "/a/b");
}

}  // namespace
}  // namespace groupcoord::zk
