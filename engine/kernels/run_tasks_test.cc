// RunTasks and ParallelForRanges: every task or unit runs exactly once, ranges
// are contiguous and aligned, a busy pool never makes the caller wait for it,
// and the number of ranges is a whole number per thread.
#include "engine/kernels/run_tasks.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(RunTasks, RunsEveryTaskOnce) {
  Eigen::ThreadPool pool(2);
  for (int64_t tasks : {0, 1, 2, 3, 7, 64}) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(tasks));
    RunTasks(&pool, tasks, [&](int64_t t) { runs[static_cast<size_t>(t)].fetch_add(1); });
    for (int64_t t = 0; t < tasks; ++t) EXPECT_EQ(runs[static_cast<size_t>(t)].load(), 1) << tasks << " tasks";
  }
}

TEST(RunTasks, CallerRunsEverythingWhenThePoolIsBusy) {
  Eigen::ThreadPool pool(1);
  absl::Notification release;
  absl::Notification blocked;
  pool.Schedule([&] {
    blocked.Notify();
    release.WaitForNotification();
  });
  blocked.WaitForNotification();
  // The pool's only thread is blocked until after RunTasks returns, so a
  // caller that waited for a helper would hang here (and the test time out).
  const std::thread::id caller = std::this_thread::get_id();
  int on_caller = 0;
  RunTasks(&pool, 5, [&](int64_t) { on_caller += std::this_thread::get_id() == caller; });
  EXPECT_EQ(on_caller, 5);
  release.Notify();
}

TEST(ParallelForRanges, CoversEveryUnitOnceInAlignedContiguousRanges) {
  Eigen::ThreadPool pool(2);
  for (int64_t n : {1, 15, 16, 1000, 1 << 20, (1 << 20) + 5}) {
    for (int64_t align : {1, 16}) {
      std::mutex mu;
      std::vector<std::pair<int64_t, int64_t>> ranges;
      ParallelForRanges(&pool, 2, n, /*cost_per_unit=*/8, align, [&](int64_t first, int64_t last) {
        std::lock_guard<std::mutex> lock(mu);
        ranges.emplace_back(first, last);
      });
      std::sort(ranges.begin(), ranges.end());
      ASSERT_FALSE(ranges.empty());
      EXPECT_EQ(ranges.front().first, 0);
      EXPECT_EQ(ranges.back().second, n);
      for (size_t i = 0; i < ranges.size(); ++i) {
        EXPECT_LT(ranges[i].first, ranges[i].second);
        if (i > 0) {
          EXPECT_EQ(ranges[i].first, ranges[i - 1].second) << "n=" << n;
        }
        EXPECT_EQ(ranges[i].first % align, 0) << "n=" << n << " align=" << align;
      }
    }
  }
}

TEST(ParallelForRanges, AWholeNumberOfRangesPerThread) {
  Eigen::ThreadPool pool(2);
  // Work for exactly 3 minimum-size ranges: cut into 2 (one per thread), not 3.
  const int64_t n = 3 * kMinRangeCost;
  std::atomic<int> count{0};
  ParallelForRanges(&pool, 2, n, /*cost_per_unit=*/1, 1, [&](int64_t, int64_t) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 2);
  // Work for 5: 4 ranges; for 20 or more: at most 4 per thread.
  count = 0;
  ParallelForRanges(&pool, 2, 5 * kMinRangeCost, 1, 1, [&](int64_t, int64_t) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 4);
  count = 0;
  ParallelForRanges(&pool, 2, 20 * kMinRangeCost, 1, 1, [&](int64_t, int64_t) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 8);
  // Below two ranges' worth of work: one call on this thread.
  count = 0;
  ParallelForRanges(&pool, 2, kMinRangeCost, 1, 1, [&](int64_t, int64_t) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 1);
}

}  // namespace
}  // namespace sluice
