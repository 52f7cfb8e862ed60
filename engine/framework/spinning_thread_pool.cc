// SpinningThreadPool: one FIFO queue, threads that spin before they sleep.
#include "engine/framework/spinning_thread_pool.h"

#include <utility>

#include "engine/platform/logging.h"
#include "engine/platform/spin_wait.h"

namespace sluice {
namespace {

thread_local const SpinningThreadPool* current_pool = nullptr;
thread_local int current_index = -1;

// While spinning, a thread gives the core to any other runnable thread this
// often.
constexpr int64_t kYieldEveryNanos = 5000;

}  // namespace

SpinningThreadPool::SpinningThreadPool(int num_threads, int64_t spin_nanos) : spin_nanos_(spin_nanos) {
  CHECK_GE(num_threads, 1);
  CHECK_GE(spin_nanos, 0);
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) threads_.emplace_back([this, i] { WorkerLoop(i); });
}

SpinningThreadPool::~SpinningThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  stopping_.store(true, std::memory_order_release);
  for (std::thread& t : threads_) t.join();
}

void SpinningThreadPool::Schedule(std::function<void()> fn) { Push(std::move(fn)); }

void SpinningThreadPool::ScheduleWithHint(std::function<void()> fn, int /*start*/, int /*limit*/) {
  Push(std::move(fn));
}

void SpinningThreadPool::Push(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(fn));
  queued_.fetch_add(1, std::memory_order_release);
  // Unlocking wakes a sleeping thread: its Await condition now holds.
}

int SpinningThreadPool::CurrentThreadId() const { return current_pool == this ? current_index : -1; }

bool SpinningThreadPool::TryPop(std::function<void()>* fn) {
  if (queued_.load(std::memory_order_acquire) == 0) return false;
  absl::MutexLock lock(&mu_);
  if (queue_.empty()) return false;
  *fn = std::move(queue_.front());
  queue_.pop_front();
  queued_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

void SpinningThreadPool::WorkerLoop(int index) {
  current_pool = this;
  current_index = index;
  std::function<void()> fn;
  for (;;) {
    if (TryPop(&fn)) {
      fn();
      fn = nullptr;
      continue;
    }
    SpinUntil(
        [this] {
          return queued_.load(std::memory_order_relaxed) != 0 || stopping_.load(std::memory_order_relaxed);
        },
        spin_nanos_, kYieldEveryNanos);
    if (queued_.load(std::memory_order_acquire) > 0) continue;
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](SpinningThreadPool* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) { return !p->queue_.empty() || p->done_; },
        this));
    if (queue_.empty()) return;  // done_, and nothing left to run
    // The next turn of the loop pops it (this thread or another).
  }
}

}  // namespace sluice
