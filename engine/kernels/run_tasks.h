// RunTasks: a fork-join over a few coarse tasks on a kernel's intra-op pool
// (CpuGemm's blocks of C, a convolution's per-thread pieces, the ranges of an
// elementwise loop), and ParallelForRanges, which cuts [0, n) into such tasks.
//
// Tasks are claimed from a shared counter by the calling thread and by helpers
// scheduled on the pool, so the caller never waits for a helper that has not
// started: when the pool's threads are busy (another kernel's blocks, a long
// GEMM on the other inter-op thread), the caller runs every task itself
// instead of blocking behind them, and waits only for tasks already running.
// Which thread runs a task does not change what it computes, so results do not
// depend on timing. The caller may itself be one of the pool's threads (when
// the pool also runs the executor's nodes): it never waits for a helper that
// has not started, so a pool whose every thread is in RunTasks still finishes.
// Helpers are queued with ScheduleWithHint (the CPU device's pool runs a
// plain Schedule from its own threads at once, for Eigen's blocking
// parallelFor: engine/framework/device.cc); when the pool's queue is full,
// Eigen runs a helper at once, and it then claims the tasks itself.
// Thread safety: fn is called concurrently for different t, and each t once.
#ifndef SLUICE_ENGINE_KERNELS_RUN_TASKS_H_
#define SLUICE_ENGINE_KERNELS_RUN_TASKS_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "engine/platform/spin_wait.h"

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace sluice {
namespace run_tasks_internal {

// The state the caller shares with its helpers; a helper that starts after
// the caller returned finds `closed` and leaves without touching the tasks.
struct Claims {
  explicit Claims(int64_t tasks) : tasks(tasks) {}
  const int64_t tasks;
  std::atomic<int64_t> next{0};
  // Helpers between joining (under mu, while not closed) and leaving.
  std::atomic<int> running{0};
  absl::Mutex mu;
  bool closed ABSL_GUARDED_BY(mu) = false;

  bool NoneRunning() const { return running.load(std::memory_order_acquire) == 0; }
};

// How long the caller spins for its helpers' last tasks before it sleeps. A
// thread woken from a futex on a VM starts 35-47 us later
// (engine/platform/spin_wait.h); a product split in two halves of 100-300 us
// would lose that at every join.
constexpr int64_t kJoinSpinNanos = 200000;

// Waits until no helper is running: spins up to kJoinSpinNanos, then blocks.
// REQUIRES: claims.closed (no helper joins any more).
inline void AwaitHelpers(Claims& claims) {
  if (SpinUntil([&claims] { return claims.NoneRunning(); }, kJoinSpinNanos)) return;
  absl::MutexLock lock(&claims.mu);
  claims.mu.Await(absl::Condition(&claims, &Claims::NoneRunning));
}

template <typename Fn>
void RunClaimed(Claims& claims, const Fn& fn) {
  for (int64_t t = claims.next.fetch_add(1, std::memory_order_relaxed); t < claims.tasks;
       t = claims.next.fetch_add(1, std::memory_order_relaxed)) {
    fn(t);
  }
}

}  // namespace run_tasks_internal

// Runs fn(t) for every t in [0, tasks), on this thread and on up to
// min(tasks - 1, pool threads) helpers from `pool`, and returns when all are
// done. All run here, in order, when `pool` is null.
template <typename Fn>
void RunTasks(Eigen::ThreadPoolInterface* pool, int64_t tasks, const Fn& fn) {
  if (tasks <= 1 || pool == nullptr) {
    for (int64_t t = 0; t < tasks; ++t) fn(t);
    return;
  }
  using run_tasks_internal::Claims;
  auto claims = std::make_shared<Claims>(tasks);
  const Fn* shared_fn = &fn;
  const int64_t helpers = std::min<int64_t>(tasks - 1, pool->NumThreads());
  auto helper = [claims, shared_fn] {
    {
      absl::MutexLock lock(&claims->mu);
      if (claims->closed) return;
      claims->running.fetch_add(1, std::memory_order_relaxed);
    }
    run_tasks_internal::RunClaimed(*claims, *shared_fn);
    // The last helper out takes the lock once, so that a caller blocked in
    // AwaitHelpers re-evaluates its condition. It touches only `claims` from
    // here on: the caller may have returned.
    if (claims->running.fetch_sub(1, std::memory_order_acq_rel) == 1) absl::MutexLock lock(&claims->mu);
  };
  for (int64_t h = 0; h < helpers; ++h) pool->ScheduleWithHint(helper, 0, pool->NumThreads());
  run_tasks_internal::RunClaimed(*claims, fn);
  {
    absl::MutexLock lock(&claims->mu);
    claims->closed = true;
  }
  run_tasks_internal::AwaitHelpers(*claims);
}

// Runs fn(first, last) over [0, n) cut into contiguous ranges (each but the
// last a multiple of `align` units), on up to `threads` threads of `pool` with
// RunTasks. `cost_per_unit` is a rough count of cycles per unit: ranges get at
// least kMinRangeCost of work, and there are at most 4 per thread, so a late
// helper still finds work and a busy pool costs the caller nothing.
constexpr int64_t kMinRangeCost = 524288;
template <typename Fn>
void ParallelForRanges(Eigen::ThreadPoolInterface* pool, int threads, int64_t n, int64_t cost_per_unit,
                       int64_t align, const Fn& fn) {
  if (n <= 0) return;
  const int64_t total = n * std::max<int64_t>(cost_per_unit, 1);
  int64_t ranges = std::min<int64_t>(std::max(1, threads) * 4, total / kMinRangeCost);
  if (ranges <= 1 || pool == nullptr || threads <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  // A whole number of ranges per thread: 3 ranges on 2 threads leave one
  // thread a second range while the other waits (2/3 of the work on one).
  if (ranges > threads) ranges -= ranges % threads;
  align = std::max<int64_t>(align, 1);
  const int64_t aligned_units = (n + align - 1) / align;
  ranges = std::min(ranges, aligned_units);
  RunTasks(pool, ranges, [&](int64_t t) {
    const int64_t first = std::min(n, aligned_units * t / ranges * align);
    const int64_t last = std::min(n, aligned_units * (t + 1) / ranges * align);
    if (first < last) fn(first, last);
  });
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_RUN_TASKS_H_
