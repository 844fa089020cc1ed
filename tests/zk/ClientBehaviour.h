#pragma once

// The behaviour suite every zk::Client must pass. It is compiled twice: in
// the unit binary against zk::FakeClient, in the integration binary against
// zk::Session and the live ensemble. Whatever the adapter's unit tests rely
// on in the fake is checked here against the real thing too.
//
// Include this header in exactly one source file per test binary and
// instantiate ClientBehaviour there with a Backend.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/TestEnv.h"
#include "zk/Client.h"
#include "zk/Path.h"
#include "ZkTestUtil.h"

namespace groupcoord::zk::test {

// Gives the suite connected clients of one kind.
class Backend {
 public:
  virtual ~Backend() = default;
  // A new, connected session; nullptr (after a gtest failure) if impossible.
  virtual std::unique_ptr<Client> connect() = 0;
};

struct BackendParam {
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;
};

inline std::string backendName(const ::testing::TestParamInfo<BackendParam>& info) { return info.param.name; }
inline void PrintTo(const BackendParam& p, std::ostream* os) { *os << p.name; }

class ClientBehaviour : public ::testing::TestWithParam<BackendParam> {
 protected:
  void SetUp() override {
    backend_ = GetParam().make();
    if (::testing::Test::HasFatalFailure() || !backend_) return;
    client_ = backend_->connect();
    ASSERT_TRUE(client_);
    root_ = "/" + groupcoord::testing::uniqueName("zk-behaviour");
    ASSERT_EQ(client_->ensurePathSync(root_), Error::Ok);
  }

  void TearDown() override {
    if (client_ && client_->state() == SessionState::Connected) {
      // A node a busy machine holds back fails the removal with a connection
      // problem (the session reconnects): tried again within a session
      // timeout and the scheduling allowance (kWait), as a client would.
      Error e = Error::Ok;
      groupcoord::testing::eventuallyWithin(kWait, [&] {
        e = removeRecursive(*client_, root_);
        return !isConnectionProblem(e) || client_->state() == SessionState::Expired;
      }, std::chrono::milliseconds(100));
      EXPECT_EQ(e, Error::Ok);
    }
    client_.reset();
    backend_.reset();
  }

  std::string path(const std::string& name) const { return joinPath(root_, name); }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Client> client_;
  std::string root_;
};

// --- create modes -----------------------------------------------------------

TEST_P(ClientBehaviour, PersistentCreateThenGetReturnsDataAndFreshStat) {
  auto created = client_->createSync(path("p"), "hello", CreateMode::Persistent);
  ASSERT_EQ(created.error, Error::Ok);
  EXPECT_EQ(created.path, path("p"));

  auto got = client_->getSync(path("p"));
  ASSERT_EQ(got.error, Error::Ok);
  EXPECT_EQ(got.data, "hello");
  EXPECT_EQ(got.stat.version, 0);
  EXPECT_EQ(got.stat.cversion, 0);
  EXPECT_EQ(got.stat.dataLength, 5);
  EXPECT_EQ(got.stat.numChildren, 0);
  EXPECT_EQ(got.stat.ephemeralOwner, 0);
  EXPECT_GT(got.stat.czxid, 0);
  EXPECT_EQ(got.stat.czxid, got.stat.mzxid);

  auto parent = client_->existsSync(root_);
  ASSERT_EQ(parent.error, Error::Ok);
  EXPECT_EQ(parent.stat.numChildren, 1);
  EXPECT_EQ(parent.stat.cversion, 1);
}

TEST_P(ClientBehaviour, EphemeralCreateIsOwnedByTheSession) {
  ASSERT_EQ(client_->createSync(path("e"), "", CreateMode::Ephemeral).error, Error::Ok);
  auto st = client_->existsSync(path("e"));
  ASSERT_EQ(st.error, Error::Ok);
  EXPECT_NE(client_->sessionId(), 0);
  EXPECT_EQ(st.stat.ephemeralOwner, client_->sessionId());
}

TEST_P(ClientBehaviour, SequentialCreatesAppendTheParentsChildVersion) {
  ASSERT_EQ(client_->createSync(path("q"), "", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(client_->createSync(path("q/plain"), "", CreateMode::Persistent).error, Error::Ok);

  auto first = client_->createSync(path("q/s-"), "1", CreateMode::PersistentSequential);
  ASSERT_EQ(first.error, Error::Ok);
  EXPECT_EQ(first.path, path("q/s-0000000001"));
  auto second = client_->createSync(path("q/s-"), "2", CreateMode::EphemeralSequential);
  ASSERT_EQ(second.error, Error::Ok);
  EXPECT_EQ(second.path, path("q/s-0000000002"));
  // The suffix counts children ever created: a delete moves the parent's
  // cversion but not the sequence, and numbers are never reused.
  ASSERT_EQ(client_->removeSync(path("q/plain")), Error::Ok);
  EXPECT_EQ(client_->existsSync(path("q")).stat.cversion, 4);
  auto third = client_->createSync(path("q/"), "", CreateMode::PersistentSequential);
  ASSERT_EQ(third.error, Error::Ok);
  EXPECT_EQ(third.path, path("q/0000000003"));
  ASSERT_EQ(client_->removeSync(third.path), Error::Ok);
  auto fourth = client_->createSync(path("q/s-"), "", CreateMode::PersistentSequential);
  ASSERT_EQ(fourth.error, Error::Ok);
  EXPECT_EQ(fourth.path, path("q/s-0000000004"));
  EXPECT_EQ(client_->existsSync(path("q")).stat.cversion, 7);

  auto eph = client_->existsSync(second.path);
  ASSERT_EQ(eph.error, Error::Ok);
  EXPECT_EQ(eph.stat.ephemeralOwner, client_->sessionId());
  EXPECT_EQ(client_->getSync(first.path).data, "1");
}

TEST_P(ClientBehaviour, ContainerIsCreatedAndMayHaveEphemeralChildren) {
  ASSERT_EQ(client_->createSync(path("c"), "", CreateMode::Container).error, Error::Ok);
  ASSERT_EQ(client_->createSync(path("c/kid"), "", CreateMode::Ephemeral).error, Error::Ok);
  auto st = client_->existsSync(path("c"));
  ASSERT_EQ(st.error, Error::Ok);
  // Not an ephemeral: the stat shows no owner.
  EXPECT_EQ(st.stat.ephemeralOwner, 0);
  EXPECT_EQ(st.stat.numChildren, 1);
  EXPECT_EQ(client_->createSync(path("c"), "", CreateMode::Container).error, Error::NodeExists);
}

// --- errors of create, get, set, delete --------------------------------------

TEST_P(ClientBehaviour, CreateOnExistingNodeIsNodeExists) {
  ASSERT_EQ(client_->createSync(path("x"), "a", CreateMode::Persistent).error, Error::Ok);
  EXPECT_EQ(client_->createSync(path("x"), "b", CreateMode::Persistent).error, Error::NodeExists);
  EXPECT_EQ(client_->createSync(path("x"), "b", CreateMode::Ephemeral).error, Error::NodeExists);
  EXPECT_EQ(client_->getSync(path("x")).data, "a");
}

TEST_P(ClientBehaviour, CreateUnderMissingParentIsNoNode) {
  EXPECT_EQ(client_->createSync(path("missing/child"), "", CreateMode::Persistent).error, Error::NoNode);
  EXPECT_EQ(client_->createSync(path("missing/seq-"), "", CreateMode::PersistentSequential).error, Error::NoNode);
  EXPECT_EQ(client_->existsSync(path("missing")).error, Error::NoNode);
}

TEST_P(ClientBehaviour, EphemeralCannotHaveChildren) {
  ASSERT_EQ(client_->createSync(path("eph"), "", CreateMode::Ephemeral).error, Error::Ok);
  EXPECT_EQ(client_->createSync(path("eph/kid"), "", CreateMode::Persistent).error, Error::NoChildrenForEphemerals);
  EXPECT_EQ(client_->createSync(path("eph/kid"), "", CreateMode::Ephemeral).error, Error::NoChildrenForEphemerals);
  EXPECT_EQ(client_->createSync(path("eph/s-"), "", CreateMode::EphemeralSequential).error,
            Error::NoChildrenForEphemerals);
}

TEST_P(ClientBehaviour, ReadsAndWritesOfAMissingNodeAreNoNode) {
  EXPECT_EQ(client_->getSync(path("none")).error, Error::NoNode);
  EXPECT_EQ(client_->existsSync(path("none")).error, Error::NoNode);
  EXPECT_EQ(client_->getChildrenSync(path("none")).error, Error::NoNode);
  EXPECT_EQ(client_->setSync(path("none"), "x").error, Error::NoNode);
  EXPECT_EQ(client_->setSync(path("none"), "x", 3).error, Error::NoNode);
  EXPECT_EQ(client_->removeSync(path("none")), Error::NoNode);
  EXPECT_EQ(client_->removeSync(path("none"), 7), Error::NoNode);
}

TEST_P(ClientBehaviour, SetDataChecksTheVersionAndMovesItByOne) {
  ASSERT_EQ(client_->createSync(path("v"), "0", CreateMode::Persistent).error, Error::Ok);
  auto one = client_->setSync(path("v"), "1", 0);
  ASSERT_EQ(one.error, Error::Ok);
  EXPECT_EQ(one.stat.version, 1);
  EXPECT_EQ(one.stat.dataLength, 1);

  auto stale = client_->setSync(path("v"), "stale", 0);
  EXPECT_EQ(stale.error, Error::BadVersion);
  EXPECT_EQ(client_->getSync(path("v")).data, "1");

  auto any = client_->setSync(path("v"), "2", kAnyVersion);
  ASSERT_EQ(any.error, Error::Ok);
  EXPECT_EQ(any.stat.version, 2);
  EXPECT_GT(any.stat.mzxid, any.stat.czxid);

  auto got = client_->getSync(path("v"));
  EXPECT_EQ(got.data, "2");
  EXPECT_EQ(got.stat.version, 2);
}

TEST_P(ClientBehaviour, DeleteChecksVersionAndChildren) {
  ASSERT_EQ(client_->createSync(path("d"), "", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(client_->createSync(path("d/kid"), "", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(client_->setSync(path("d"), "x").error, Error::Ok);  // version 1

  EXPECT_EQ(client_->removeSync(path("d"), kAnyVersion), Error::NotEmpty);
  ASSERT_EQ(client_->removeSync(path("d/kid")), Error::Ok);
  EXPECT_EQ(client_->removeSync(path("d"), 0), Error::BadVersion);
  EXPECT_EQ(client_->existsSync(path("d")).error, Error::Ok);
  EXPECT_EQ(client_->removeSync(path("d"), 1), Error::Ok);
  EXPECT_EQ(client_->existsSync(path("d")).error, Error::NoNode);
  EXPECT_EQ(client_->removeSync(path("d"), 1), Error::NoNode);
}

TEST_P(ClientBehaviour, TheRootAndTheSystemZnodeCannotBeDeletedOrCreated) {
  EXPECT_EQ(client_->removeSync("/"), Error::BadArguments);
  EXPECT_EQ(client_->removeSync("/zookeeper"), Error::BadArguments);
  EXPECT_EQ(client_->createSync("/", "", CreateMode::Persistent).error, Error::NodeExists);
  EXPECT_EQ(client_->existsSync("/").error, Error::Ok);
  auto system = client_->getChildrenSync("/zookeeper");
  ASSERT_EQ(system.error, Error::Ok);
  std::sort(system.children.begin(), system.children.end());
  EXPECT_EQ(system.children, (std::vector<std::string>{"config", "quota"}));
}

TEST_P(ClientBehaviour, EveryOperationWithAMalformedPathIsBadArguments) {
  const std::vector<std::string> bad = {
      "", "a", "a/b", "/a/", "//", "//a", "/a//b", "/a/./b", "/a/../b", "/.", "/..",
      std::string("/a\0b", 4), "/a\x01", "/a\x7f"};
  for (const auto& p : bad) {
    SCOPED_TRACE("path '" + p + "'");
    EXPECT_EQ(client_->createSync(p, "", CreateMode::Persistent).error, Error::BadArguments);
    EXPECT_EQ(client_->createSync(p, "", CreateMode::Ephemeral).error, Error::BadArguments);
    EXPECT_EQ(client_->removeSync(p), Error::BadArguments);
    EXPECT_EQ(client_->getSync(p).error, Error::BadArguments);
    EXPECT_EQ(client_->setSync(p, "x").error, Error::BadArguments);
    EXPECT_EQ(client_->existsSync(p).error, Error::BadArguments);
    EXPECT_EQ(client_->getChildrenSync(p).error, Error::BadArguments);
    auto m = client_->multiSync({makeCreate(path("ok"), ""), makeCheck(p, 0)});
    EXPECT_EQ(m.error, Error::BadArguments);
    EXPECT_EQ(m.results.size(), 2u);
  }
  // The NUL case must not have created "/a" (the prefix before the NUL).
  EXPECT_EQ(client_->existsSync("/a").error, Error::NoNode);
  EXPECT_EQ(client_->existsSync(path("ok")).error, Error::NoNode);
  // Still usable afterwards.
  EXPECT_EQ(client_->createSync(path("after"), "", CreateMode::Persistent).error, Error::Ok);
}

TEST_P(ClientBehaviour, SequentialCreateMayEndInSlash) {
  ASSERT_EQ(client_->createSync(path("s"), "", CreateMode::Persistent).error, Error::Ok);
  auto r = client_->createSync(path("s/"), "", CreateMode::PersistentSequential);
  ASSERT_EQ(r.error, Error::Ok);
  EXPECT_EQ(r.path, path("s/0000000000"));
  // Without the sequential flag the same path is malformed.
  EXPECT_EQ(client_->createSync(path("s/"), "", CreateMode::Persistent).error, Error::BadArguments);
}

TEST_P(ClientBehaviour, DataRoundTripsByteForByte) {
  std::string binary("\0\x01\xff\x7f zk\0", 8);
  ASSERT_EQ(client_->createSync(path("bin"), binary, CreateMode::Persistent).error, Error::Ok);
  auto got = client_->getSync(path("bin"));
  ASSERT_EQ(got.error, Error::Ok);
  EXPECT_EQ(got.data, binary);
  EXPECT_EQ(got.stat.dataLength, 8);

  ASSERT_EQ(client_->createSync(path("empty"), "", CreateMode::Persistent).error, Error::Ok);
  auto empty = client_->getSync(path("empty"));
  ASSERT_EQ(empty.error, Error::Ok);
  EXPECT_EQ(empty.data, "");
  EXPECT_EQ(empty.stat.dataLength, 0);

  std::string big(512 * 1024, 'z');
  big[1000] = '\0';
  ASSERT_EQ(client_->setSync(path("empty"), big).error, Error::Ok);
  EXPECT_EQ(client_->getSync(path("empty")).data, big);
}

TEST_P(ClientBehaviour, DataAboveTheLimitIsRefusedWithoutHarm) {
  std::string huge(kMaxDataSize + 1, 'h');
  EXPECT_EQ(client_->createSync(path("huge"), huge, CreateMode::Persistent).error, Error::BadArguments);
  ASSERT_EQ(client_->createSync(path("small"), "s", CreateMode::Persistent).error, Error::Ok);
  EXPECT_EQ(client_->setSync(path("small"), huge).error, Error::BadArguments);
  EXPECT_EQ(client_->multiSync({makeSetData(path("small"), huge)}).error, Error::BadArguments);
  EXPECT_EQ(client_->getSync(path("small")).data, "s");
  EXPECT_EQ(client_->state(), SessionState::Connected);
}

TEST_P(ClientBehaviour, GetChildrenListsNamesAndTheParentsStat) {
  for (const char* name : {"b", "a", "c"}) {
    ASSERT_EQ(client_->createSync(path(name), "", CreateMode::Persistent).error, Error::Ok);
  }
  auto kids = client_->getChildrenSync(root_);
  ASSERT_EQ(kids.error, Error::Ok);
  std::sort(kids.children.begin(), kids.children.end());
  EXPECT_EQ(kids.children, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(kids.stat.numChildren, 3);
  EXPECT_EQ(kids.stat.cversion, 3);

  auto none = client_->getChildrenSync(path("a"));
  ASSERT_EQ(none.error, Error::Ok);
  EXPECT_TRUE(none.children.empty());
}

TEST_P(ClientBehaviour, EnsurePathCreatesEveryLevelAndIsIdempotent) {
  std::string deep = path("l1/l2/l3");
  ASSERT_EQ(client_->ensurePathSync(deep), Error::Ok);
  EXPECT_EQ(client_->existsSync(path("l1")).error, Error::Ok);
  EXPECT_EQ(client_->existsSync(path("l1/l2")).error, Error::Ok);
  EXPECT_EQ(client_->existsSync(deep).error, Error::Ok);
  EXPECT_EQ(client_->ensurePathSync(deep), Error::Ok);
  EXPECT_EQ(client_->ensurePathSync("/"), Error::Ok);
  EXPECT_EQ(client_->ensurePathSync("no-slash"), Error::BadArguments);
}

// --- watches ----------------------------------------------------------------

TEST_P(ClientBehaviour, ExistsWatchOnAMissingNodeFiresOnCreate) {
  WatchProbe probe;
  ExistsResult first;
  std::promise<ExistsResult> p;
  client_->exists(path("w"), [&](ExistsResult r) { p.set_value(r); }, probe.callback());
  first = p.get_future().get();
  EXPECT_EQ(first.error, Error::NoNode);

  ASSERT_EQ(client_->createSync(path("w"), "", CreateMode::Persistent).error, Error::Ok);
  auto ev = probe.next();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, WatchEvent::Type::Created);
  EXPECT_EQ(ev->path, path("w"));
  EXPECT_EQ(ev->state, SessionState::Connected);
}

TEST_P(ClientBehaviour, DataWatchIsOneShot) {
  ASSERT_EQ(client_->createSync(path("w"), "0", CreateMode::Persistent).error, Error::Ok);
  WatchProbe probe;
  std::promise<GetResult> p;
  client_->get(path("w"), [&](GetResult r) { p.set_value(r); }, probe.callback());
  ASSERT_EQ(p.get_future().get().error, Error::Ok);

  ASSERT_EQ(client_->setSync(path("w"), "1").error, Error::Ok);
  ASSERT_EQ(client_->setSync(path("w"), "2").error, Error::Ok);
  // A round trip on the same session: any event for the writes above
  // would have been delivered before its answer.
  ASSERT_EQ(client_->getSync(path("w")).error, Error::Ok);
  auto ev = probe.next();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, WatchEvent::Type::Changed);
  EXPECT_EQ(ev->path, path("w"));
  EXPECT_EQ(probe.count(), 1u);
}

TEST_P(ClientBehaviour, DataAndChildWatchesFireOnDelete) {
  ASSERT_EQ(client_->createSync(path("w"), "", CreateMode::Persistent).error, Error::Ok);
  WatchProbe data;
  WatchProbe kids;
  WatchProbe parent;
  std::promise<void> a, b, c;
  client_->exists(path("w"), [&](ExistsResult) { a.set_value(); }, data.callback());
  client_->getChildren(path("w"), [&](ChildrenResult) { b.set_value(); }, kids.callback());
  client_->getChildren(root_, [&](ChildrenResult) { c.set_value(); }, parent.callback());
  a.get_future().get();
  b.get_future().get();
  c.get_future().get();

  ASSERT_EQ(client_->removeSync(path("w")), Error::Ok);
  auto e1 = data.next();
  ASSERT_TRUE(e1);
  EXPECT_EQ(e1->type, WatchEvent::Type::Deleted);
  EXPECT_EQ(e1->path, path("w"));
  auto e2 = kids.next();
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->type, WatchEvent::Type::Deleted);
  auto e3 = parent.next();
  ASSERT_TRUE(e3);
  EXPECT_EQ(e3->type, WatchEvent::Type::Child);
  EXPECT_EQ(e3->path, root_);
}

TEST_P(ClientBehaviour, ChildWatchFiresOnChildCreateAndOnChildDelete) {
  WatchProbe probe;
  std::promise<ChildrenResult> p1;
  client_->getChildren(root_, [&](ChildrenResult r) { p1.set_value(r); }, probe.callback());
  ASSERT_EQ(p1.get_future().get().error, Error::Ok);
  ASSERT_EQ(client_->createSync(path("kid"), "", CreateMode::Ephemeral).error, Error::Ok);
  auto created = probe.next();
  ASSERT_TRUE(created);
  EXPECT_EQ(created->type, WatchEvent::Type::Child);
  EXPECT_EQ(created->path, root_);

  // Changing a child's data is not a change of the children.
  std::promise<ChildrenResult> p2;
  client_->getChildren(root_, [&](ChildrenResult r) { p2.set_value(r); }, probe.callback());
  ASSERT_EQ(p2.get_future().get().children, std::vector<std::string>{"kid"});
  ASSERT_EQ(client_->setSync(path("kid"), "data").error, Error::Ok);
  ASSERT_EQ(client_->getSync(path("kid")).error, Error::Ok);
  EXPECT_EQ(probe.count(), 1u);

  ASSERT_EQ(client_->removeSync(path("kid")), Error::Ok);
  auto deleted = probe.next();
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->type, WatchEvent::Type::Child);
  EXPECT_EQ(probe.count(), 2u);
}

TEST_P(ClientBehaviour, AReadThatFailedArmsNoWatch) {
  WatchProbe probe;
  std::promise<GetResult> p1;
  std::promise<ChildrenResult> p2;
  client_->get(path("later"), [&](GetResult r) { p1.set_value(r); }, probe.callback());
  client_->getChildren(path("later"), [&](ChildrenResult r) { p2.set_value(r); }, probe.callback());
  EXPECT_EQ(p1.get_future().get().error, Error::NoNode);
  EXPECT_EQ(p2.get_future().get().error, Error::NoNode);
  ASSERT_EQ(client_->createSync(path("later"), "", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(client_->createSync(path("later/kid"), "", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(client_->getSync(path("later")).error, Error::Ok);  // round trip
  EXPECT_EQ(probe.count(), 0u);
}

TEST_P(ClientBehaviour, AWatchEventComesBeforeTheAnswerToTheWriteThatCausedIt) {
  ASSERT_EQ(client_->createSync(path("o"), "", CreateMode::Persistent).error, Error::Ok);
  std::mutex m;
  std::vector<std::string> order;
  std::promise<void> armed;
  client_->get(path("o"), [&](GetResult) { armed.set_value(); },
               [&](const WatchEvent&) {
                 std::lock_guard lock(m);
                 order.push_back("watch");
               });
  armed.get_future().get();
  std::promise<void> written;
  client_->set(path("o"), "x", kAnyVersion, [&](SetResult) {
    {
      std::lock_guard lock(m);
      order.push_back("set");
    }
    written.set_value();
  });
  written.get_future().get();
  std::lock_guard lock(m);
  EXPECT_EQ(order, (std::vector<std::string>{"watch", "set"}));
}

// --- multi ------------------------------------------------------------------

TEST_P(ClientBehaviour, MultiOfEphemeralChildAndVersionedParentUpdateIsAtomic) {
  ASSERT_EQ(client_->createSync(path("group"), "gen0", CreateMode::Persistent).error, Error::Ok);

  auto ok = client_->multiSync({makeCreate(path("group/m1"), "member", CreateMode::Ephemeral),
                                makeSetData(path("group"), "gen1", 0)});
  ASSERT_EQ(ok.error, Error::Ok);
  EXPECT_EQ(ok.failedOp, -1);
  ASSERT_EQ(ok.results.size(), 2u);
  EXPECT_EQ(ok.results[0].error, Error::Ok);
  EXPECT_EQ(ok.results[0].path, path("group/m1"));
  EXPECT_EQ(ok.results[1].error, Error::Ok);
  EXPECT_EQ(ok.results[1].stat.version, 1);

  auto parent = client_->getSync(path("group"));
  EXPECT_EQ(parent.data, "gen1");
  EXPECT_EQ(parent.stat.version, 1);  // moved exactly once
  auto member = client_->existsSync(path("group/m1"));
  ASSERT_EQ(member.error, Error::Ok);
  EXPECT_EQ(member.stat.ephemeralOwner, client_->sessionId());
  // Both ops carry the multi's one transaction id.
  EXPECT_EQ(member.stat.czxid, parent.stat.mzxid);

  // A stale version: the whole multi fails and nothing of it is applied.
  auto stale = client_->multiSync({makeCreate(path("group/m2"), "member", CreateMode::Ephemeral),
                                   makeSetData(path("group"), "gen2", 0)});
  EXPECT_EQ(stale.error, Error::BadVersion);
  EXPECT_EQ(stale.failedOp, 1);
  ASSERT_EQ(stale.results.size(), 2u);
  EXPECT_EQ(stale.results[1].error, Error::BadVersion);
  EXPECT_EQ(client_->existsSync(path("group/m2")).error, Error::NoNode);
  auto after = client_->getSync(path("group"));
  EXPECT_EQ(after.data, "gen1");
  EXPECT_EQ(after.stat.version, 1);
  EXPECT_EQ(after.stat.numChildren, 1);
}

TEST_P(ClientBehaviour, FailedMultiNamesTheFailedOpAndAppliesNothing) {
  ASSERT_EQ(client_->createSync(path("t"), "t", CreateMode::Persistent).error, Error::Ok);
  auto r = client_->multiSync({makeCreate(path("t/a"), ""), makeCreate(path("t/b"), ""),
                               makeCreate(path("t/a"), ""), makeSetData(path("t"), "changed")});
  EXPECT_EQ(r.error, Error::NodeExists);
  EXPECT_EQ(r.failedOp, 2);
  ASSERT_EQ(r.results.size(), 4u);
  EXPECT_EQ(r.results[2].error, Error::NodeExists);
  EXPECT_EQ(r.results[3].error, Error::RuntimeInconsistency);
  EXPECT_EQ(client_->existsSync(path("t/a")).error, Error::NoNode);
  EXPECT_EQ(client_->existsSync(path("t/b")).error, Error::NoNode);
  auto t = client_->getSync(path("t"));
  EXPECT_EQ(t.data, "t");
  EXPECT_EQ(t.stat.version, 0);
  EXPECT_EQ(t.stat.cversion, 0);

  auto missing = client_->multiSync({makeRemove(path("t/none"))});
  EXPECT_EQ(missing.error, Error::NoNode);
  EXPECT_EQ(missing.failedOp, 0);

  ASSERT_EQ(client_->createSync(path("t/full"), "", CreateMode::Persistent).error, Error::Ok);
  ASSERT_EQ(client_->createSync(path("t/full/kid"), "", CreateMode::Persistent).error, Error::Ok);
  auto notEmpty = client_->multiSync({makeCheck(path("t"), 0), makeRemove(path("t/full"))});
  EXPECT_EQ(notEmpty.error, Error::NotEmpty);
  EXPECT_EQ(notEmpty.failedOp, 1);

  ASSERT_EQ(client_->createSync(path("t/eph"), "", CreateMode::Ephemeral).error, Error::Ok);
  auto ephKid = client_->multiSync({makeCreate(path("t/eph/kid"), "")});
  EXPECT_EQ(ephKid.error, Error::NoChildrenForEphemerals);
  EXPECT_EQ(ephKid.failedOp, 0);
}

TEST_P(ClientBehaviour, MultiCheckOpGuardsOnAVersion) {
  ASSERT_EQ(client_->createSync(path("k"), "", CreateMode::Persistent).error, Error::Ok);
  auto good = client_->multiSync({makeCheck(path("k"), 0), makeCreate(path("k/x"), "")});
  ASSERT_EQ(good.error, Error::Ok);
  EXPECT_EQ(good.results[1].path, path("k/x"));

  auto bad = client_->multiSync({makeCreate(path("k/y"), ""), makeCheck(path("k"), 5)});
  EXPECT_EQ(bad.error, Error::BadVersion);
  EXPECT_EQ(bad.failedOp, 1);
  EXPECT_EQ(client_->existsSync(path("k/y")).error, Error::NoNode);

  auto gone = client_->multiSync({makeCheck(path("k/none"), 0)});
  EXPECT_EQ(gone.error, Error::NoNode);
  EXPECT_EQ(gone.failedOp, 0);
}

TEST_P(ClientBehaviour, MultiReturnsSequentialPathsAndSeesItsOwnEarlierOps) {
  ASSERT_EQ(client_->createSync(path("m"), "", CreateMode::Persistent).error, Error::Ok);
  auto r = client_->multiSync({makeCreate(path("m/s-"), "a", CreateMode::PersistentSequential),
                               makeCreate(path("m/s-"), "b", CreateMode::EphemeralSequential),
                               makeCreate(path("m/tmp"), ""), makeRemove(path("m/tmp")),
                               makeSetData(path("m"), "done", 0)});
  ASSERT_EQ(r.error, Error::Ok);
  ASSERT_EQ(r.results.size(), 5u);
  EXPECT_EQ(r.results[0].path, path("m/s-0000000000"));
  EXPECT_EQ(r.results[1].path, path("m/s-0000000001"));
  EXPECT_EQ(r.results[2].path, path("m/tmp"));
  EXPECT_EQ(r.results[4].stat.version, 1);
  EXPECT_EQ(client_->existsSync(path("m/tmp")).error, Error::NoNode);
  auto kids = client_->getChildrenSync(path("m"));
  EXPECT_EQ(kids.children.size(), 2u);
  EXPECT_EQ(kids.stat.cversion, 4);
}

TEST_P(ClientBehaviour, EmptyMultiSucceeds) {
  auto r = client_->multiSync({});
  EXPECT_EQ(r.error, Error::Ok);
  EXPECT_TRUE(r.results.empty());
  EXPECT_EQ(r.failedOp, -1);
}

TEST_P(ClientBehaviour, MultiFiresTheWatchesOfItsChanges) {
  ASSERT_EQ(client_->createSync(path("g"), "", CreateMode::Persistent).error, Error::Ok);
  WatchProbe kids;
  WatchProbe data;
  std::promise<void> a, b;
  client_->getChildren(path("g"), [&](ChildrenResult) { a.set_value(); }, kids.callback());
  client_->get(path("g"), [&](GetResult) { b.set_value(); }, data.callback());
  a.get_future().get();
  b.get_future().get();
  ASSERT_EQ(client_->multiSync({makeCreate(path("g/m"), "", CreateMode::Ephemeral), makeSetData(path("g"), "1", 0)})
                .error,
            Error::Ok);
  auto k = kids.next();
  ASSERT_TRUE(k);
  EXPECT_EQ(k->type, WatchEvent::Type::Child);
  auto d = data.next();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->type, WatchEvent::Type::Changed);
}

// --- threading contract -----------------------------------------------------

TEST_P(ClientBehaviour, CallbacksRunOnTheCompletionThreadEvenForImmediateErrors) {
  auto caller = std::this_thread::get_id();
  std::promise<std::thread::id> ok, bad, wrongVersion;
  client_->get(root_, [&](GetResult) { ok.set_value(std::this_thread::get_id()); });
  client_->get("bad path", [&](GetResult r) {
    EXPECT_EQ(r.error, Error::BadArguments);
    bad.set_value(std::this_thread::get_id());
  });
  client_->set(path("none"), "", 3, [&](SetResult) { wrongVersion.set_value(std::this_thread::get_id()); });
  auto t1 = ok.get_future().get();
  auto t2 = bad.get_future().get();
  auto t3 = wrongVersion.get_future().get();
  EXPECT_NE(t1, caller);
  EXPECT_NE(t2, caller);
  EXPECT_EQ(t1, t2);
  EXPECT_EQ(t2, t3);
}

TEST_P(ClientBehaviour, CallbacksComeInTheOrderOfTheCalls) {
  ASSERT_EQ(client_->createSync(path("n"), "", CreateMode::Persistent).error, Error::Ok);
  constexpr int kCalls = 60;
  std::mutex m;
  std::vector<int> order;
  std::promise<void> all;
  for (int i = 0; i < kCalls; ++i) {
    auto record = [&, i] {
      std::lock_guard lock(m);
      order.push_back(i);
      if (order.size() == kCalls) all.set_value();
    };
    switch (i % 4) {
      case 0: client_->set(path("n"), std::to_string(i), kAnyVersion, [record](SetResult) { record(); }); break;
      case 1: client_->get(path("n"), [record](GetResult) { record(); }); break;
      case 2: client_->remove(path("none"), kAnyVersion, [record](Error) { record(); }); break;
      default: client_->exists(path("none"), [record](ExistsResult) { record(); }); break;
    }
  }
  ASSERT_EQ(all.get_future().wait_for(kWait), std::future_status::ready);
  std::lock_guard lock(m);
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
}

TEST_P(ClientBehaviour, ACallbackMayCallBackIntoTheClient) {
  ASSERT_EQ(client_->createSync(path("chain"), "", CreateMode::Persistent).error, Error::Ok);
  std::promise<GetResult> last;
  client_->set(path("chain"), "from-callback", kAnyVersion, [&](SetResult r) {
    EXPECT_EQ(r.error, Error::Ok);
    client_->get(path("chain"), [&](GetResult g) { last.set_value(g); });
  });
  auto f = last.get_future();
  ASSERT_EQ(f.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(f.get().data, "from-callback");
}

}  // namespace groupcoord::zk::test
