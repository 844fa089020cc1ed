// Fanout: many answers, one continuation, called once after the last
// answer, never before the starter's release() and never inside it. Driven
// with plain callbacks invoked by hand or from threads; no ZooKeeper: what
// the starter posts to the completion thread is kept in a list and run by
// the test.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "adapter/Fanout.h"

namespace groupcoord::adapter {
namespace {

struct Sum {
  int total = 0;
  std::vector<int> seen;
};

struct Continuation {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<Sum> last = std::make_shared<Sum>();
  std::function<void(Sum)> fn() {
    return [calls = calls, last = last](Sum s) {
      *last = std::move(s);
      calls->fetch_add(1);
    };
  }
  int count() const { return calls->load(); }
};

// Stands in for the completion thread: posted tasks wait until run().
struct Posted {
  std::shared_ptr<std::vector<std::function<void()>>> tasks = std::make_shared<std::vector<std::function<void()>>>();
  Fanout<Sum>::Post fn() {
    return [tasks = tasks](std::function<void()> t) { tasks->push_back(std::move(t)); };
  }
  size_t run() {
    auto now = std::move(*tasks);
    tasks->clear();
    for (auto& t : now) t();
    return now.size();
  }
};

// For the races below, where the thread does not matter.
Fanout<Sum>::Post inlinePost() {
  return [](std::function<void()> t) { t(); };
}

auto adding() {
  return [](Sum& s, int v) {
    s.total += v;
    s.seen.push_back(v);
  };
}

TEST(Fanout, WithNoReadsTheContinuationIsPostedAtRelease) {
  Continuation done;
  Posted posted;
  auto f = Fanout<Sum>::start(posted.fn(), done.fn());
  EXPECT_EQ(done.count(), 0);
  f->release();
  EXPECT_EQ(done.count(), 0) << "never inside the starter's release()";
  EXPECT_EQ(posted.run(), 1u);
  EXPECT_EQ(done.count(), 1);
  EXPECT_EQ(done.last->total, 0);
}

TEST(Fanout, TheContinuationRunsOnceAfterTheLastAnswer) {
  Continuation done;
  Posted posted;
  auto f = Fanout<Sum>::start(posted.fn(), done.fn());
  auto a = f->collect<int>(adding());
  auto b = f->collect<int>(adding());
  auto c = f->collect<int>(adding());
  f->release();
  EXPECT_EQ(done.count(), 0);
  b(2);
  EXPECT_EQ(done.count(), 0);
  a(1);
  EXPECT_EQ(done.count(), 0);
  c(4);
  EXPECT_EQ(done.count(), 1) << "the last answer runs it on its own (completion) thread";
  EXPECT_EQ(posted.run(), 0u);
  EXPECT_EQ(done.last->total, 7);
  EXPECT_EQ(done.last->seen, (std::vector<int>{2, 1, 4}));
}

TEST(Fanout, AnswersBeforeReleaseWaitForTheStarter) {
  Continuation done;
  Posted posted;
  auto f = Fanout<Sum>::start(posted.fn(), done.fn());
  auto a = f->collect<int>(adding());
  auto b = f->collect<int>(adding());
  a(10);
  b(20);
  EXPECT_EQ(done.count(), 0) << "the starter may still be issuing reads";
  f->release();
  EXPECT_EQ(done.count(), 0) << "posted, not run in the starter's stack";
  EXPECT_EQ(posted.run(), 1u);
  EXPECT_EQ(done.count(), 1);
  EXPECT_EQ(done.last->total, 30);
}

TEST(Fanout, WhenEveryAnswerCameFirstTheStartersLockIsNotRetaken) {
  // The starter holds a lock the continuation takes (as a group's
  // controller does while it issues reads): the continuation runs on the
  // completion thread once the starter has let go.
  std::mutex groupLock;
  std::vector<std::function<void()>> queued;
  std::atomic<int> ran{0};
  auto f = Fanout<Sum>::start([&](std::function<void()> t) { queued.push_back(std::move(t)); },
                              [&](Sum s) {
                                std::lock_guard<std::mutex> lock(groupLock);
                                ran += s.total;
                              });
  auto a = f->collect<int>(adding());
  {
    std::lock_guard<std::mutex> lock(groupLock);
    std::thread([&] { a(7); }).join();
    f->release();
    EXPECT_EQ(ran.load(), 0);
  }
  ASSERT_EQ(queued.size(), 1u);
  std::thread([&] { queued[0](); }).join();
  EXPECT_EQ(ran.load(), 7);
}

TEST(Fanout, UpdatePreparesTheStateTheContinuationGets) {
  Continuation done;
  auto f = Fanout<Sum>::start(Posted().fn(), done.fn());
  f->update([](Sum& s) { s.total = 100; });
  auto a = f->collect<int>(adding());
  f->release();
  a(5);
  EXPECT_EQ(done.count(), 1);
  EXPECT_EQ(done.last->total, 105);
}

TEST(Fanout, ReadsIssuedFromACollectorAreWaitedFor) {
  Continuation done;
  auto f = Fanout<Sum>::start(inlinePost(), done.fn());
  // The collector of the listing issues one read per child, as
  // OffsetStore does; their callbacks are answered later.
  std::vector<std::function<void(int)>> nested;
  auto list = f->collect<int>([&, f](Sum& s, int children) {
    s.seen.push_back(-children);
    for (int i = 0; i < children; ++i) nested.push_back(f->collect<int>(adding()));
  });
  f->release();
  list(3);
  ASSERT_EQ(nested.size(), 3u);
  EXPECT_EQ(done.count(), 0) << "three reads issued by the collector are still out";
  nested[0](1);
  nested[2](3);
  EXPECT_EQ(done.count(), 0);
  nested[1](2);
  EXPECT_EQ(done.count(), 1);
  EXPECT_EQ(done.last->total, 6);
}

TEST(Fanout, NestedTwoLevelsDeep) {
  Continuation done;
  auto f = Fanout<Sum>::start(inlinePost(), done.fn());
  std::vector<std::function<void(int)>> level2, level3;
  auto top = f->collect<int>([&, f](Sum&, int n) {
    for (int i = 0; i < n; ++i) {
      level2.push_back(f->collect<int>([&, f](Sum& s, int v) {
        s.total += v;
        level3.push_back(f->collect<int>(adding()));
      }));
    }
  });
  f->release();
  top(2);
  level2[0](10);
  level2[1](20);
  EXPECT_EQ(done.count(), 0);
  ASSERT_EQ(level3.size(), 2u);
  level3[1](2);
  EXPECT_EQ(done.count(), 0);
  level3[0](1);
  EXPECT_EQ(done.count(), 1);
  EXPECT_EQ(done.last->total, 33);
}

TEST(Fanout, AnswersFromManyThreadsRunTheContinuationExactlyOnce) {
  constexpr int kRounds = 200;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 25;
  for (int round = 0; round < kRounds; ++round) {
    Continuation done;
    auto f = Fanout<Sum>::start(inlinePost(), done.fn());
    std::vector<std::vector<std::function<void(int)>>> perThread(kThreads);
    for (int t = 0; t < kThreads; ++t)
      for (int i = 0; i < kPerThread; ++i) perThread[t].push_back(f->collect<int>(adding()));
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        for (auto& cb : perThread[t]) cb(1);
      });
    }
    go = true;
    f->release();  // the starter races the answers
    for (auto& th : threads) th.join();
    ASSERT_EQ(done.count(), 1) << "round " << round;
    ASSERT_EQ(done.last->total, kThreads * kPerThread) << "round " << round;
  }
}

TEST(Fanout, NestedReadsAnsweredFromOtherThreadsRunTheContinuationOnce) {
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    Continuation done;
    auto f = Fanout<Sum>::start(inlinePost(), done.fn());
    std::vector<std::thread> threads;
    std::mutex threadsMu;
    // Each of the two first reads, when answered, issues two reads answered
    // at once by new threads (as a completion thread would, concurrently).
    auto spawn = [&](std::function<void(int)> cb, int v) {
      std::lock_guard<std::mutex> lock(threadsMu);
      threads.emplace_back([cb = std::move(cb), v] { cb(v); });
    };
    std::vector<std::function<void(int)>> first;
    for (int i = 0; i < 2; ++i) {
      first.push_back(f->collect<int>([&, f](Sum& s, int v) {
        s.total += v;
        for (int j = 0; j < 2; ++j) spawn(f->collect<int>(adding()), 1);
      }));
    }
    for (auto& cb : first) spawn(cb, 100);
    f->release();
    for (;;) {
      std::vector<std::thread> batch;
      {
        std::lock_guard<std::mutex> lock(threadsMu);
        batch.swap(threads);
      }
      if (batch.empty()) break;
      for (auto& th : batch) th.join();
    }
    ASSERT_EQ(done.count(), 1) << "round " << round;
    ASSERT_EQ(done.last->total, 204) << "round " << round;
  }
}

}  // namespace
}  // namespace groupcoord::adapter
