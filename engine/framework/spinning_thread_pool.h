// SpinningThreadPool: the CPU device's intra-op pool (kernels' parallel
// pieces and, in a local session, the executor's nodes). A FIFO queue served
// by a fixed set of threads; a thread that finds the queue empty spins for a
// while before it sleeps, so that work scheduled soon after (the next GEMM's
// second half, the next node) starts at once.
//
// Why not Eigen's ThreadPool: its threads spin for a few microseconds and
// then sleep on a futex, and on a VM a sleeping vCPU starts 35-47 us after it
// is woken (measured on a 2-vCPU Xeon VM, 2026-12-02). A training step of
// fashion_mlp runs about ten parallel pieces of 100-300 us each, and each paid
// that wake-up at its start and again at its join. The same effect is what
// makes PyTorch with OMP_WAIT_POLICY=PASSIVE twice as slow on this model.
// docs/PERFORMANCE.md, "Session 28".
//
// Spinning costs CPU time while a thread waits, and only then: after
// `spin_nanos` without work a thread sleeps until Schedule wakes it. While it
// spins it yields the core every few microseconds (sched_yield), so other
// runnable threads (queue runners, the other task of a test) still get it.
//
// Semantics: tasks run in the order they were scheduled, each once, on one of
// the pool's threads. The destructor runs every task already scheduled, then
// joins the threads; tasks may schedule more tasks until then.
// Thread safety: every method may be called from any thread, including the
// pool's own.
#ifndef SLUICE_ENGINE_FRAMEWORK_SPINNING_THREAD_POOL_H_
#define SLUICE_ENGINE_FRAMEWORK_SPINNING_THREAD_POOL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace sluice {

class SpinningThreadPool : public Eigen::ThreadPoolInterface {
 public:
  // How long an idle thread spins before it sleeps, unless given. With 200 us
  // fashion_mlp's steps were no faster than with 50, and the threads of a
  // monitored run (the hooks between steps, the event writer) waited for
  // the spinners' cores: monitoring cost 3.8% instead of 1.0%.
  static constexpr int64_t kDefaultSpinNanos = 50000;

  // REQUIRES: num_threads >= 1, spin_nanos >= 0.
  explicit SpinningThreadPool(int num_threads, int64_t spin_nanos = kDefaultSpinNanos);
  ~SpinningThreadPool() override;

  SpinningThreadPool(const SpinningThreadPool&) = delete;
  SpinningThreadPool& operator=(const SpinningThreadPool&) = delete;

  void Schedule(std::function<void()> fn) override;
  // The pool has one queue: the hint is not used. Queues `fn` even where a
  // subclass's Schedule does something else (the CPU device's runs calls
  // from its own threads inline: device.cc).
  void ScheduleWithHint(std::function<void()> fn, int start, int limit) override;
  int NumThreads() const override { return static_cast<int>(threads_.size()); }
  // This thread's index in [0, NumThreads()) if it is one of this pool's, else -1.
  int CurrentThreadId() const override;

 private:
  // Queues fn and wakes a sleeping thread.
  void Push(std::function<void()> fn);
  void WorkerLoop(int index);
  // Pops the oldest task into *fn; false when the queue is empty.
  bool TryPop(std::function<void()>* fn);

  const int64_t spin_nanos_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  // queue_.size(), readable without the lock by spinning threads.
  std::atomic<int64_t> queued_{0};
  // done_, readable without the lock: spinning threads stop at once.
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_SPINNING_THREAD_POOL_H_
