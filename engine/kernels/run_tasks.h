// RunTasks: a fork-join over a few coarse tasks on a kernel's intra-op pool
// (CpuGemm's blocks of C, a convolution's per-thread pieces).
// Thread safety: fn is called concurrently for different t.
#ifndef SLUICE_ENGINE_KERNELS_RUN_TASKS_H_
#define SLUICE_ENGINE_KERNELS_RUN_TASKS_H_

#include <cstdint>

#include "absl/synchronization/blocking_counter.h"

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace sluice {

// Runs fn(t) for t in [0, tasks): t >= 1 on `pool`, t = 0 on this thread, and
// returns when all are done. All run here, in order, when `pool` is null or
// this thread is one of the pool's own (waiting there for tasks queued behind
// it could deadlock).
template <typename Fn>
void RunTasks(Eigen::ThreadPoolInterface* pool, int64_t tasks, const Fn& fn) {
  if (tasks <= 1 || pool == nullptr || pool->CurrentThreadId() >= 0) {
    for (int64_t t = 0; t < tasks; ++t) fn(t);
    return;
  }
  absl::BlockingCounter pending(static_cast<int>(tasks - 1));
  for (int64_t t = 1; t < tasks; ++t) {
    pool->Schedule([&fn, &pending, t] {
      fn(t);
      pending.DecrementCount();
    });
  }
  fn(0);
  pending.Wait();
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_RUN_TASKS_H_
