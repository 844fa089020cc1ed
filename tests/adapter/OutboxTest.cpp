// Outbox: work queued under a lock runs later, in order, without the lock.

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "adapter/Outbox.h"

namespace groupcoord::adapter {
namespace {

TEST(Outbox, WorkRunsWhenTheOutboxIsDestroyedInTheOrderQueued) {
  std::vector<int> ran;
  {
    Outbox out;
    EXPECT_TRUE(out.empty());
    for (int i = 0; i < 5; ++i) out.push([&ran, i] { ran.push_back(i); });
    EXPECT_FALSE(out.empty());
    EXPECT_TRUE(ran.empty()) << "nothing runs before the outbox goes";
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(Outbox, AnEmptyOutboxRunsNothing) {
  { Outbox out; }
  SUCCEED();
}

// Whether another thread could take `mu` now (taken and given back at once).
bool freeForOthers(Mutex& mu) {
  return std::async(std::launch::async, [&mu]() NO_THREAD_SAFETY_ANALYSIS {
           if (!mu.try_lock()) return false;
           mu.unlock();
           return true;
         }).get();
}

TEST(Outbox, MoveOnlyWorkIsAccepted) {
  std::string seen;
  {
    Outbox out;
    auto text = std::make_unique<std::string>("moved");
    out.push([&seen, t = std::shared_ptr<std::string>(std::move(text))] { seen = *t; });
  }
  EXPECT_EQ(seen, "moved");
}

TEST(LockedOutbox, HoldsTheMutexForItsScope) {
  Mutex mu;
  {
    LockedOutbox lk(mu);
    EXPECT_FALSE(freeForOthers(mu)) << "held by the LockedOutbox";
  }
  EXPECT_TRUE(freeForOthers(mu));
}

TEST(LockedOutbox, WorkRunsAfterTheMutexIsReleased) {
  Mutex mu;
  std::vector<bool> lockFreeWhenRun;
  std::vector<int> order;
  {
    LockedOutbox lk(mu);
    for (int i = 0; i < 3; ++i) {
      lk.out.push([&, i] {
        order.push_back(i);
        lockFreeWhenRun.push_back(freeForOthers(mu));
      });
    }
    EXPECT_TRUE(order.empty());
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(lockFreeWhenRun, (std::vector<bool>{true, true, true}));
}

TEST(LockedOutbox, WorkMayTakeTheSameMutexAgain) {
  // An answer that re-enters the code that queued it (a callback calling
  // back into the coordinator) must not deadlock.
  Mutex mu;
  int reentered = 0;
  {
    LockedOutbox lk(mu);
    lk.out.push([&] {
      LockedOutbox again(mu);
      ++reentered;
    });
  }
  EXPECT_EQ(reentered, 1);
}

}  // namespace
}  // namespace groupcoord::adapter
