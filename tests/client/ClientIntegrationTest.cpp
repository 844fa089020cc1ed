// The client library (Admin, Consumer) against real groupcoordd processes
// and the live ZooKeeper ensemble.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/Layout.h"
#include "client/Admin.h"
#include "client/Consumer.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/TestSession.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using client::Admin;
using client::Consumer;
using client::ConsumerCallbacks;
using client::ConsumerConfig;
using client::Endpoint;
using protocol::ErrorCode;
using protocol::PartitionOffset;
using protocol::TopicPartition;
using Clock = std::chrono::steady_clock;

// Two groupcoordd processes on a root and a topics path of their own, with
// topics alpha (4 partitions) and beta (2).
class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("client");
    topicsPath_ = root_ + "-topics";
    zk_ = openTestSession();
    ASSERT_NE(zk_, nullptr);
    ASSERT_EQ(zk_->ensurePathSync(topicsPath_), zk::Error::Ok);
    for (auto& [t, n] : std::map<std::string, int32_t>{{"alpha", 4}, {"beta", 2}}) {
      ASSERT_EQ(zk_->createSync(topicsPath_ + "/" + t, layout::encodeTopic(n), zk::CreateMode::Persistent).error,
                zk::Error::Ok);
      for (int32_t p = 0; p < n; ++p) all_.insert({t, p});
    }
    for (int id = 1; id <= 2; ++id) {
      servers_.push_back(std::make_unique<ServerProcess>(std::vector<std::string>{
          "--server-id=" + std::to_string(id), "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_,
          "--zk-session-timeout-ms=4000"}));
      ASSERT_TRUE(servers_.back()->start());
      bootstrap_.push_back({"127.0.0.1", servers_.back()->port()});
    }
    // Both registered before a group exists, so either may control it.
    for (int i = 0; i < 200 && zk_->getChildrenSync(root_ + "/servers").children.size() < 2; ++i)
      std::this_thread::sleep_for(50ms);
  }

  ConsumerConfig config(const std::string& group, const std::string& clientId,
                        std::optional<std::chrono::milliseconds> heartbeat = std::nullopt) {
    ConsumerConfig c;
    c.bootstrap = bootstrap_;
    c.group = group;
    c.clientId = clientId;
    c.heartbeatInterval = heartbeat;
    return c;
  }

  std::string root_;
  std::string topicsPath_;
  std::unique_ptr<zk::Session> zk_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::vector<Endpoint> bootstrap_;
  std::set<TopicPartition> all_;
};

// What the callbacks saw, in order, for one or more consumers on one thread.
struct Event {
  int64_t seq;
  Clock::time_point at;
  std::string who;
  std::string kind;  // "assigned", "revoked", "lost"
  std::vector<PartitionOffset> partitions;
};

struct Journal {
  std::mutex mu;
  std::vector<Event> events;

  void add(const std::string& who, const std::string& kind, std::vector<PartitionOffset> ps) {
    std::lock_guard lock(mu);
    events.push_back({static_cast<int64_t>(events.size()), Clock::now(), who, kind, std::move(ps)});
  }
  ConsumerCallbacks callbacks(const std::string& who) {
    ConsumerCallbacks cb;
    cb.onAssigned = [this, who](const std::vector<PartitionOffset>& ps) { add(who, "assigned", ps); };
    auto asOffsets = [](const std::vector<TopicPartition>& tps) {
      std::vector<PartitionOffset> out;
      for (auto& tp : tps) out.push_back({tp.topic, tp.partition, -1});
      return out;
    };
    cb.onRevoked = [this, who, asOffsets](const std::vector<TopicPartition>& tps) {
      add(who, "revoked", asOffsets(tps));
    };
    cb.onLost = [this, who, asOffsets](const std::vector<TopicPartition>& tps) { add(who, "lost", asOffsets(tps)); };
    return cb;
  }
  std::vector<Event> of(const std::string& who, const std::string& kind) {
    std::lock_guard lock(mu);
    std::vector<Event> out;
    for (auto& e : events)
      if (e.who == who && e.kind == kind) out.push_back(e);
    return out;
  }
};

std::set<TopicPartition> asSet(const std::vector<TopicPartition>& v) { return {v.begin(), v.end()}; }

constexpr auto kClaimFallback = 3000ms;  // the servers' claim fallback (the default)

// A group whose consumers must lose nothing while the test polls them: they
// heartbeat as often as with a session of `base` (a third of it), and the
// session holds the scheduling allowance beyond that, so that a test thread
// that polls seconds late does not let a lease run out. (The tests of
// fencing and failover keep their short sessions: those are the scenario.)
std::chrono::milliseconds steadySession(std::chrono::milliseconds base) { return designBound(base); }

// The controller of a group just created: the one CreateGroup named, or,
// when it answered before any server claimed the group (it waits 5 s, and
// may: docs/protocol.md), the one ListGroups names once there is one, at the
// latest after the claim fallback. None if no server claimed it by then.
protocol::Broker controllerOf(Admin& admin, const std::string& group, const protocol::Broker& created) {
  protocol::Broker found = created;
  if (found.isNone()) {
    eventuallyWithin(designBound(kClaimFallback), [&] {
      auto info = admin.groupInfo(group);
      if (info.ok()) found = info.value.controller;
      return !found.isNone();
    }, 100ms);
  }
  return found;
}

// Polls the consumers in turn until `done` holds or `wait` passes.
template <typename Pred>
bool pollUntil(std::vector<Consumer*> consumers, Pred done, std::chrono::milliseconds wait = 20s) {
  auto deadline = Clock::now() + wait;
  while (Clock::now() < deadline) {
    for (auto* c : consumers) c->poll(20ms);
    if (done()) return true;
  }
  return false;
}

TEST_F(ClientTest, ConsumerLife) {
  Admin admin(bootstrap_);
  const std::string group = "orders";
  const auto heartbeat = 2000ms / 3;
  auto created = admin.createGroup(group, steadySession(2000ms), {"alpha", "beta"}, false);
  ASSERT_TRUE(created.ok()) << created.status.toString();
  EXPECT_FALSE(controllerOf(admin, group, created.value).isNone());

  Journal journal;
  Consumer c1(config(group, "first", heartbeat), journal.callbacks("c1"));
  ASSERT_TRUE(pollUntil({&c1}, [&] { return asSet(c1.assignment()) == all_; }));
  EXPECT_FALSE(c1.memberId().empty());
  EXPECT_GE(c1.generation(), 0);
  auto firstAssigned = journal.of("c1", "assigned");
  ASSERT_FALSE(firstAssigned.empty());
  for (auto& e : firstAssigned)
    for (auto& p : e.partitions) EXPECT_EQ(p.offset, -1) << p.topic << "/" << p.partition;

  // Distinct offsets, so that whichever partitions move, their offsets can be checked.
  std::map<TopicPartition, int64_t> committed;
  std::vector<PartitionOffset> offsets;
  int64_t next = 100;
  for (auto& tp : all_) {
    committed[tp] = next;
    offsets.push_back({tp.topic, tp.partition, next++});
  }
  auto commit = c1.commitSync(offsets);
  ASSERT_TRUE(commit.ok()) << commit.toString();

  const int64_t genBefore = c1.generation();
  Consumer c2(config(group, "second", heartbeat), journal.callbacks("c2"));
  ASSERT_TRUE(pollUntil({&c1, &c2}, [&] {
    auto a = asSet(c1.assignment());
    auto b = asSet(c2.assignment());
    std::set<TopicPartition> both;
    both.insert(a.begin(), a.end());
    both.insert(b.begin(), b.end());
    return !a.empty() && !b.empty() && a.size() + b.size() == all_.size() && both == all_;
  })) << "c1 holds " << c1.assignment().size() << ", c2 holds " << c2.assignment().size();
  EXPECT_GT(c1.generation(), genBefore);
  EXPECT_NE(c1.memberId(), c2.memberId());

  // c1 gave up each partition c2 got before c2 was granted it, and c2 got the
  // committed offsets with its assignment.
  auto revoked = journal.of("c1", "revoked");
  ASSERT_FALSE(revoked.empty());
  for (auto& granted : journal.of("c2", "assigned")) {
    for (auto& p : granted.partitions) {
      bool releasedBefore = false;
      for (auto& r : revoked)
        for (auto& q : r.partitions)
          if (q.topic == p.topic && q.partition == p.partition && r.seq < granted.seq) releasedBefore = true;
      EXPECT_TRUE(releasedBefore) << p.topic << "/" << p.partition << " granted to c2 before c1 revoked it";
      EXPECT_EQ(p.offset, (committed[TopicPartition{p.topic, p.partition}])) << p.topic << "/" << p.partition;
    }
  }

  // c1 leaves: onRevoked for what it held, and c2 ends with everything.
  auto held = asSet(c1.assignment());
  auto closed = c1.close();
  EXPECT_TRUE(closed.ok()) << closed.toString();
  EXPECT_TRUE(c1.assignment().empty());
  auto lastRevoke = journal.of("c1", "revoked").back();
  std::set<TopicPartition> lastRevoked;
  for (auto& p : lastRevoke.partitions) lastRevoked.insert({p.topic, p.partition});
  EXPECT_EQ(lastRevoked, held);
  ASSERT_TRUE(pollUntil({&c2}, [&] { return asSet(c2.assignment()) == all_; }));
  for (auto& e : journal.of("c2", "assigned"))
    for (auto& p : e.partitions) EXPECT_EQ(p.offset, (committed[TopicPartition{p.topic, p.partition}]));
  EXPECT_TRUE(journal.of("c1", "lost").empty());
  EXPECT_TRUE(journal.of("c2", "lost").empty());
  EXPECT_TRUE(c2.close().ok());
}

TEST_F(ClientTest, AdminEndToEnd) {
  // The first bootstrap server refuses connections: the admin goes on to the next.
  std::vector<Endpoint> withDead{{"127.0.0.1", 1}};
  withDead.insert(withDead.end(), bootstrap_.begin(), bootstrap_.end());
  Admin admin(withDead);
  const std::string group = "payments";
  const auto session = steadySession(3000ms);

  auto created = admin.createGroup(group, session, {"alpha", "beta"}, false);
  ASSERT_TRUE(created.ok()) << created.status.toString();
  EXPECT_TRUE(admin.createGroup(group, session, {"alpha", "beta"}, false).ok());  // idempotent
  auto clash = admin.createGroup(group, session + 1000ms, {"alpha"}, false);
  EXPECT_EQ(clash.status.code, ErrorCode::GROUP_ALREADY_EXISTS);
  EXPECT_EQ(clash.status.name(), "GROUP_ALREADY_EXISTS");
  EXPECT_FALSE(clash.status.message.empty());
  EXPECT_EQ(admin.createGroup("bad/name", 3000ms, {}, false).status.code, ErrorCode::INVALID_GROUP_NAME);
  EXPECT_EQ(admin.createGroup("shortlived", 10ms, {}, false).status.code, ErrorCode::INVALID_SESSION_TIMEOUT);

  auto listed = admin.listGroups({group, "missing"});
  ASSERT_TRUE(listed.ok()) << listed.status.toString();
  ASSERT_EQ(listed.value.size(), 2u);
  EXPECT_EQ(listed.value[0].name, group);
  EXPECT_EQ(listed.value[0].error, ErrorCode::NONE);
  EXPECT_EQ(listed.value[0].sessionTimeoutMs, session.count());
  EXPECT_EQ(listed.value[0].topics, (std::vector<std::string>{"alpha", "beta"}));
  EXPECT_FALSE(listed.value[0].ephemeral);
  EXPECT_EQ(listed.value[1].error, ErrorCode::UNKNOWN_GROUP);
  auto every = admin.listGroups();
  ASSERT_TRUE(every.ok());
  EXPECT_TRUE(std::any_of(every.value.begin(), every.value.end(), [&](auto& g) { return g.name == group; }));
  auto missing = admin.groupInfo("missing");
  EXPECT_EQ(missing.status.code, ErrorCode::UNKNOWN_GROUP);

  auto none = admin.fetchOffsets(group);
  ASSERT_TRUE(none.ok()) << none.status.toString();
  EXPECT_TRUE(none.value.empty());
  EXPECT_EQ(admin.fetchOffsets("missing").status.code, ErrorCode::UNKNOWN_GROUP);

  Journal journal;
  Consumer c(config(group, "payer", 1000ms), journal.callbacks("c"));
  ASSERT_TRUE(pollUntil({&c}, [&] { return asSet(c.assignment()) == all_; }));
  auto described = admin.groupInfo(group);
  ASSERT_TRUE(described.ok()) << described.status.toString();
  EXPECT_EQ(described.value.members, std::vector<std::string>{c.memberId()});
  EXPECT_FALSE(described.value.controller.isNone());
  EXPECT_EQ(described.value.generation, c.generation());

  ASSERT_TRUE(c.commitSync({{"alpha", 0, 50}, {"beta", 1, 70}}).ok());
  auto fetched = admin.fetchOffsets(group, {"alpha"});
  ASSERT_TRUE(fetched.ok()) << fetched.status.toString();
  EXPECT_EQ(fetched.value, (std::vector<PartitionOffset>{{"alpha", 0, 50}}));

  // A rewind moves the offset back and the member receives it when it registers again.
  auto rewound = admin.rewind(group, {{"alpha", 0, 10}});
  ASSERT_TRUE(rewound.ok()) << rewound.status.toString();
  ASSERT_EQ(rewound.value.size(), 1u);
  EXPECT_EQ(rewound.value[0].error, ErrorCode::NONE);
  auto afterRewind = admin.fetchOffsets(group);
  ASSERT_TRUE(afterRewind.ok());
  EXPECT_NE(std::find(afterRewind.value.begin(), afterRewind.value.end(), PartitionOffset{"alpha", 0, 10}),
            afterRewind.value.end());
  auto seesRewind = [&] {
    for (auto& e : journal.of("c", "assigned"))
      for (auto& p : e.partitions)
        if (p.topic == "alpha" && p.partition == 0 && p.offset == 10) return true;
    return false;
  };
  ASSERT_TRUE(pollUntil({&c}, seesRewind));
  EXPECT_TRUE(journal.of("c", "revoked").empty());
  EXPECT_TRUE(journal.of("c", "lost").empty());

  auto busy = admin.deleteGroup(group);
  EXPECT_EQ(busy.code, ErrorCode::GROUP_NOT_EMPTY) << busy.toString();
  ASSERT_TRUE(c.close().ok());
  auto deleted = admin.deleteGroup(group);
  EXPECT_TRUE(deleted.ok()) << deleted.toString();
  EXPECT_EQ(admin.groupInfo(group).status.code, ErrorCode::UNKNOWN_GROUP);
  EXPECT_EQ(admin.deleteGroup(group).code, ErrorCode::UNKNOWN_GROUP);
}

TEST_F(ClientTest, SelfFencingBeforeAnotherMemberIsGranted) {
  Admin admin(bootstrap_);
  const std::string group = "fenced";
  ASSERT_TRUE(admin.createGroup(group, 1500ms, {"alpha", "beta"}, false).ok());

  Journal journal;
  Consumer a(config(group, "stalled"), journal.callbacks("a"));
  ASSERT_TRUE(pollUntil({&a}, [&] { return asSet(a.assignment()) == all_; }));
  // Settled and heartbeating; from here on `a` is not polled, as an
  // application stuck in processing would not be.
  ASSERT_TRUE(a.poll(100ms).ok());
  // The lease runs from the send time of the last successful call, which is
  // past: a rule of the client, whatever the machine's speed.
  const auto expiry = a.leaseExpiry();
  ASSERT_LE(expiry, Clock::now() + 1500ms);

  std::atomic<bool> stop{false};
  Consumer b(config(group, "healthy"), journal.callbacks("b"));
  std::thread bThread([&] {
    while (!stop) b.poll(20ms);
  });
  auto bHasAll = [&] {
    std::set<TopicPartition> got;
    for (auto& e : journal.of("b", "assigned"))
      for (auto& p : e.partitions) got.insert({p.topic, p.partition});
    return got == all_;
  };
  auto waitUntil = Clock::now() + 15s;
  while (!bHasAll() && Clock::now() < waitUntil) std::this_thread::sleep_for(20ms);
  bool bGotAll = bHasAll();

  // The stalled consumer learns on its next poll that it has lost everything,
  // without a heartbeat first: its lease ran out before `b` was granted anything.
  auto lostBefore = Clock::now();
  a.poll(0ms);
  stop = true;
  bThread.join();
  ASSERT_TRUE(bGotAll) << "b never got a's partitions";
  auto lost = journal.of("a", "lost");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].partitions.size(), all_.size());
  EXPECT_GE(lost[0].at, lostBefore);
  EXPECT_GE(lost[0].at, expiry);
  EXPECT_TRUE(journal.of("a", "revoked").empty());
  auto bAssigned = journal.of("b", "assigned");
  ASSERT_FALSE(bAssigned.empty());
  for (auto& e : bAssigned) EXPECT_GE(e.at, expiry) << "b was granted partitions while a's lease still ran";
  EXPECT_TRUE(a.assignment().empty());
  b.close();
  a.close();
}

// A consumer that polls again right at its lease expiry fences itself at
// once, before the controller can have evicted it.
TEST_F(ClientTest, FencesAtLeaseExpiryWhenPolledThen) {
  Admin admin(bootstrap_);
  const std::string group = "prompt";
  ASSERT_TRUE(admin.createGroup(group, 1500ms, {"alpha"}, false).ok());
  Journal journal;
  Consumer a(config(group, "prompt"), journal.callbacks("a"));
  ASSERT_TRUE(pollUntil({&a}, [&] { return !a.assignment().empty(); }));
  ASSERT_TRUE(a.poll(100ms).ok());
  const auto expiry = a.leaseExpiry();
  std::this_thread::sleep_until(expiry);
  const auto polled = Clock::now();
  a.poll(0ms);
  const auto returned = Clock::now();
  auto lost = journal.of("a", "lost");
  ASSERT_EQ(lost.size(), 1u);
  // Fenced by that very poll, not before its lease ran out. How long after
  // the expiry is a measure of speed (the test's thread may wake late): a
  // figure, not asserted (tests/README.md, Time in tests).
  EXPECT_GE(lost[0].at, expiry);
  EXPECT_GE(lost[0].at, polled);
  EXPECT_LE(lost[0].at, returned);
  figure("fenced at lease expiry: onLost " +
         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(lost[0].at - expiry).count()) +
         " ms after the expiry, the poll called " +
         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(polled - expiry).count()) +
         " ms after it");
  // The member then joins again and gets its partitions back.
  ASSERT_TRUE(pollUntil({&a}, [&] { return a.assignment().size() == 4u; }));
  EXPECT_TRUE(a.close().ok());
}

// The controller's process dies: the consumer fences itself when its lease
// runs out, finds the new controller through the other bootstrap server and
// ends with every partition again.
TEST_F(ClientTest, ConsumerFollowsControllerFailover) {
  Admin admin(bootstrap_);
  const std::string group = "failover";
  auto created = admin.createGroup(group, 1500ms, {"alpha", "beta"}, false);
  ASSERT_TRUE(created.ok()) << created.status.toString();
  const auto first = controllerOf(admin, group, created.value);
  ASSERT_FALSE(first.isNone());
  size_t controller = first.port == bootstrap_[0].second ? 0 : 1;
  size_t survivor = 1 - controller;

  Journal journal;
  Consumer c(config(group, "survivor"), journal.callbacks("c"));
  ASSERT_TRUE(pollUntil({&c}, [&] { return asSet(c.assignment()) == all_; }));
  const int64_t genBefore = c.generation();
  servers_[controller]->kill9();

  // The dead server's ZooKeeper session (4 s) outlives the group's session
  // timeout (1.5 s), so the consumer must fence itself before it gets
  // everything back from the survivor.
  ASSERT_TRUE(pollUntil({&c}, [&] { return asSet(c.assignment()) == all_ && !journal.of("c", "lost").empty(); }, 30s));
  auto lost = journal.of("c", "lost");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].partitions.size(), all_.size());
  EXPECT_GE(c.generation(), genBefore);
  Admin survivorAdmin({bootstrap_[survivor]});
  auto described = survivorAdmin.groupInfo(group);
  ASSERT_TRUE(described.ok()) << described.status.toString();
  EXPECT_EQ(described.value.controller.port, bootstrap_[survivor].second);
  EXPECT_EQ(described.value.members, std::vector<std::string>{c.memberId()});
  EXPECT_TRUE(c.close().ok());
}


TEST_F(ClientTest, TwoConsumersCarryOnAfterControllerFailoverAndNeverShareAPartition) {
  Admin admin(bootstrap_);
  const std::string group = "failover-two";
  auto created = admin.createGroup(group, 1500ms, {"alpha", "beta"}, false);
  ASSERT_TRUE(created.ok()) << created.status.toString();
  const auto first = controllerOf(admin, group, created.value);
  ASSERT_FALSE(first.isNone());
  size_t controller = first.port == bootstrap_[0].second ? 0 : 1;
  size_t survivor = 1 - controller;

  Journal journal;
  Consumer a(config(group, "a"), journal.callbacks("a"));
  Consumer b(config(group, "b"), journal.callbacks("b"));
  auto split = [&] {
    auto sa = asSet(a.assignment()), sb = asSet(b.assignment());
    std::set<TopicPartition> both = sa;
    both.insert(sb.begin(), sb.end());
    return !sa.empty() && !sb.empty() && both.size() == sa.size() + sb.size() && both == all_;
  };
  ASSERT_TRUE(pollUntil({&a, &b}, split));
  servers_[controller]->kill9();
  // Both carry on with the survivor, the partitions split between them again.
  ASSERT_TRUE(pollUntil({&a, &b}, [&] {
    auto d = Admin({bootstrap_[survivor]}).describeGroup(group);
    return split() && d.ok() && d.value.controller.port == bootstrap_[survivor].second &&
           d.value.members.size() == 2 && a.generation() == d.value.generation && b.generation() == d.value.generation;
  }, 40s));

  // Replay what the callbacks saw, in the order they ran: a partition is
  // assigned to one consumer only while the other has not held it since its
  // last revoke or loss.
  std::map<TopicPartition, std::string> holder;
  size_t checked = 0;
  for (auto& e : journal.events) {
    for (auto& p : e.partitions) {
      TopicPartition tp{p.topic, p.partition};
      if (e.kind == "assigned") {
        auto it = holder.find(tp);
        EXPECT_TRUE(it == holder.end() || it->second == e.who)
            << tp.topic << "-" << tp.partition << " assigned to " << e.who << " while " << it->second << " held it";
        holder[tp] = e.who;
        ++checked;
      } else if (holder.count(tp) && holder[tp] == e.who) {
        holder.erase(tp);
      }
    }
  }
  std::cout << "[figure] failover with two consumers: " << checked << " grants replayed, none overlapping" << std::endl;
  EXPECT_GT(checked, all_.size());
  EXPECT_TRUE(a.close().ok());
  EXPECT_TRUE(b.close().ok());
}

}  // namespace
}  // namespace groupcoord::testing
