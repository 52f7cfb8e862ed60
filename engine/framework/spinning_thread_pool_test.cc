// SpinningThreadPool: every task runs once, on the pool's threads, in FIFO
// order on one thread; tasks may schedule tasks; the destructor runs what is
// queued; threads that went to sleep (spin 0, or after their spin) wake for
// new work.
#include "engine/framework/spinning_thread_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

// Schedules `n` tasks from `producers` threads at once; each task counts
// itself and records whether it ran on a pool thread.
void RunManyFromManyThreads(SpinningThreadPool* pool, int producers, int n) {
  std::vector<std::atomic<int>> runs(producers * n);
  std::atomic<int> off_pool{0};
  absl::BlockingCounter done(producers * n);
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < n; ++i) {
        pool->Schedule([&, k = p * n + i] {
          runs[k].fetch_add(1);
          if (pool->CurrentThreadId() < 0 || pool->CurrentThreadId() >= pool->NumThreads()) off_pool.fetch_add(1);
          done.DecrementCount();
        });
      }
    });
  }
  for (auto& t : threads) t.join();
  done.Wait();
  for (int k = 0; k < producers * n; ++k) ASSERT_EQ(runs[k].load(), 1) << k;
  EXPECT_EQ(off_pool.load(), 0);
}

TEST(SpinningThreadPool, EveryTaskRunsOnceOnThePool) {
  SpinningThreadPool pool(3);
  EXPECT_EQ(pool.NumThreads(), 3);
  EXPECT_EQ(pool.CurrentThreadId(), -1);
  RunManyFromManyThreads(&pool, 4, 5000);
}

TEST(SpinningThreadPool, SleepingThreadsWakeForNewWork) {
  // No spinning: every idle thread sleeps at once, so each round's tasks
  // must wake one.
  SpinningThreadPool pool(2, /*spin_nanos=*/0);
  for (int round = 0; round < 50; ++round) {
    absl::Notification ran;
    pool.Schedule([&] { ran.Notify(); });
    ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(30))) << round;
    if (round % 10 == 0) absl::SleepFor(absl::Milliseconds(2));
  }
  RunManyFromManyThreads(&pool, 2, 2000);
}

TEST(SpinningThreadPool, ThreadsAsleepAfterTheirSpinWake) {
  SpinningThreadPool pool(2, /*spin_nanos=*/20000);
  absl::SleepFor(absl::Milliseconds(5));  // past the spin: both threads asleep
  absl::Notification ran;
  pool.Schedule([&] { ran.Notify(); });
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(SpinningThreadPool, OneThreadRunsTasksInOrder) {
  SpinningThreadPool pool(1);
  absl::Mutex mu;
  std::vector<int> order;
  absl::BlockingCounter done(1000);
  for (int i = 0; i < 1000; ++i) {
    pool.ScheduleWithHint(
        [&, i] {
          absl::MutexLock lock(&mu);
          order.push_back(i);
          done.DecrementCount();
        },
        0, 1);
  }
  done.Wait();
  ASSERT_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(order[i], i);
}

TEST(SpinningThreadPool, TasksScheduleTasks) {
  SpinningThreadPool pool(2);
  std::atomic<int> leaves{0};
  absl::BlockingCounter done(64);
  // A binary tree of depth 6: 64 leaves, each scheduled by a task.
  std::function<void(int)> node = [&](int depth) {
    if (depth == 6) {
      leaves.fetch_add(1);
      done.DecrementCount();
      return;
    }
    pool.Schedule([&, depth] { node(depth + 1); });
    pool.Schedule([&, depth] { node(depth + 1); });
  };
  pool.Schedule([&] { node(0); });
  done.Wait();
  EXPECT_EQ(leaves.load(), 64);
}

TEST(SpinningThreadPool, DestructorRunsEveryQueuedTask) {
  std::atomic<int> ran{0};
  {
    SpinningThreadPool pool(2, /*spin_nanos=*/0);
    absl::Notification gate;
    // Both threads busy behind the gate; the rest waits in the queue.
    for (int i = 0; i < 2; ++i) {
      pool.Schedule([&] {
        gate.WaitForNotificationWithTimeout(absl::Seconds(30));
        ran.fetch_add(1);
      });
    }
    for (int i = 0; i < 100; ++i) pool.Schedule([&] { ran.fetch_add(1); });
    gate.Notify();
  }
  EXPECT_EQ(ran.load(), 102);
}

}  // namespace
}  // namespace sluice
