// SpinUntil: it returns true as soon as the condition holds (set by another
// thread), false once its time is up, and polls once when given no time.
#include "engine/platform/spin_wait.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(SpinWaitTest, ReturnsTrueWhenAnotherThreadSetsTheCondition) {
  std::atomic<bool> flag{false};
  std::thread setter([&flag] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    flag.store(true, std::memory_order_release);
  });
  // Ten seconds: far longer than the setter needs, so only a broken poll fails.
  const bool seen = SpinUntil([&flag] { return flag.load(std::memory_order_acquire); }, 10'000'000'000, 5000);
  setter.join();
  EXPECT_TRUE(seen);
}

TEST(SpinWaitTest, ReturnsFalseWhenTimeRunsOut) {
  int polls = 0;
  const auto start = std::chrono::steady_clock::now();
  const bool seen = SpinUntil(
      [&polls] {
        ++polls;
        return false;
      },
      2'000'000);  // 2 ms
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(seen);
  EXPECT_GE(waited, std::chrono::milliseconds(2));
  EXPECT_GE(polls, 64);  // the clock is read every 64 polls
}

TEST(SpinWaitTest, PollsOnceWithoutTime) {
  int polls = 0;
  EXPECT_FALSE(SpinUntil(
      [&polls] {
        ++polls;
        return false;
      },
      0));
  EXPECT_EQ(polls, 1);
  EXPECT_TRUE(SpinUntil([] { return true; }, 0));
}

TEST(SpinWaitTest, ReadyAtOnceIsOnePoll) {
  int polls = 0;
  EXPECT_TRUE(SpinUntil(
      [&polls] {
        ++polls;
        return true;
      },
      1'000'000));
  EXPECT_EQ(polls, 1);
}

}  // namespace
}  // namespace sluice
