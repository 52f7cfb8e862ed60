// SpinUntil: a bounded busy-wait for a condition that another thread is about
// to make true, for the few places where sleeping costs more than the wait: a
// thread woken from a futex on a VM starts 35-47 us later (measured on a
// 2-vCPU Xeon VM, docs/PERFORMANCE.md "Session 28"), while a fork-join piece
// of a kernel lasts 100-300 us. Used by SpinningThreadPool's idle threads and
// by RunTasks's caller waiting for its helpers; both block on a mutex
// condition when the spin ends without the condition.
// Thread safety: none needed; `ready` is called on the calling thread only.
#ifndef SLUICE_ENGINE_PLATFORM_SPIN_WAIT_H_
#define SLUICE_ENGINE_PLATFORM_SPIN_WAIT_H_

#include <sched.h>

#include <chrono>
#include <cstdint>

namespace sluice {

// Tells the core this thread is in a spin loop (x86's PAUSE: the sibling
// hyperthread gets the pipeline, and leaving the loop costs no memory-order
// flush).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls ready() with a CpuRelax() between polls until it returns true (then
// returns true) or `spin_nanos` have passed (then returns false; at once when
// spin_nanos <= 0, after one poll). With yield_every_nanos > 0 the thread
// also gives its core to any other runnable thread (sched_yield) that often,
// so a spinner does not hold a core that a thread with work is waiting for.
// The clock is read every 64 polls.
template <typename Ready>
bool SpinUntil(const Ready& ready, int64_t spin_nanos, int64_t yield_every_nanos = 0) {
  if (ready()) return true;
  if (spin_nanos <= 0) return false;
  const auto start = std::chrono::steady_clock::now();
  auto last_yield = start;
  for (int polls = 1;; ++polls) {
    CpuRelax();
    if (ready()) return true;
    if (polls % 64 != 0) continue;
    const auto now = std::chrono::steady_clock::now();
    if (now - start > std::chrono::nanoseconds(spin_nanos)) return false;
    if (yield_every_nanos > 0 && now - last_yield > std::chrono::nanoseconds(yield_every_nanos)) {
      sched_yield();
      last_yield = now;
    }
  }
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_SPIN_WAIT_H_
