// The CPU device's intra-op pool when it also runs the executor's nodes
// (SessionOptions::ops_on_intra_op_pool): Eigen's ThreadPoolDevice, which
// blocks in a Barrier until the blocks it queued have run, must not hang when
// every thread of the pool evaluates an expression at once, and work queued
// with ScheduleWithHint still runs on the pool's threads.
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "engine/framework/device.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(DevicePool, EigenExpressionsOnEveryPoolThreadAtOnceFinish) {
  Device* cpu = DeviceMgr::Local()->HostCpu();
  Eigen::ThreadPoolInterface* pool = cpu->intra_op_pool();
  const int threads = pool->NumThreads();
  ASSERT_GE(threads, 1);
  constexpr int64_t kN = 1 << 20;  // large enough for Eigen to split it
  std::vector<std::vector<float>> in(threads, std::vector<float>(kN)), out(threads, std::vector<float>(kN));
  for (int t = 0; t < threads; ++t) {
    for (int64_t i = 0; i < kN; ++i) in[t][i] = static_cast<float>((i + t) % 97) - 48.0f;
  }
  // Every pool thread waits at the gate until all have started, then
  // evaluates; a Schedule that queued Eigen's blocks would leave nobody to
  // run them.
  std::atomic<int> started{0};
  std::atomic<int> on_pool{0};
  absl::Notification done;
  absl::BlockingCounter finished(threads);
  for (int t = 0; t < threads; ++t) {
    pool->ScheduleWithHint(
        [&, t] {
          on_pool += pool->CurrentThreadId() >= 0;
          ++started;
          // (Bounded: the test needs every thread inside at once, not a hang.)
          const absl::Time give_up = absl::Now() + absl::Seconds(10);
          while (started.load() < threads && absl::Now() < give_up) {
          }
          Eigen::TensorMap<Eigen::Tensor<const float, 1, Eigen::RowMajor>> x(in[t].data(), kN);
          Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>> y(out[t].data(), kN);
          y.device(*cpu->eigen_cpu_device()) = x.cwiseMax(0.0f) * 2.0f;
          finished.DecrementCount();
        },
        0, threads);
  }
  std::thread waiter([&] {
    finished.Wait();
    done.Notify();
  });
  const bool ok = done.WaitForNotificationWithTimeout(absl::Seconds(60));
  if (!ok) {
    // Fail rather than hang the suite (the waiter stays blocked; abort).
    ADD_FAILURE() << "Eigen expressions on the pool's own threads did not finish in 60 s";
    std::abort();
  }
  waiter.join();
  EXPECT_EQ(on_pool.load(), threads);
  for (int t = 0; t < threads; ++t) {
    for (int64_t i = 0; i < kN; i += 4099) ASSERT_EQ(out[t][i], std::max(in[t][i], 0.0f) * 2.0f) << t << " " << i;
  }
}

TEST(DevicePool, ScheduleFromOutsideThePoolQueues) {
  Device* cpu = DeviceMgr::Local()->HostCpu();
  Eigen::ThreadPoolInterface* pool = cpu->intra_op_pool();
  absl::Notification ran;
  std::atomic<int> id{-2};
  pool->Schedule([&] {
    id = pool->CurrentThreadId();
    ran.Notify();
  });
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(60)));
  EXPECT_GE(id.load(), 0);  // on a pool thread, not inline on this one
}

}  // namespace
}  // namespace sluice
