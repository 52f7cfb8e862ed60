// StopSignalHook: a counted signal stops the loop before its next step as a preemption, and
// the end report says where; without a signal it never interferes.
#include "models/training/stop_signal_hook.h"

#include <atomic>
#include <sstream>

#include "gtest/gtest.h"
#include "models/training/fake_session.h"
#include "models/training/training_loop.h"

namespace sluice {
namespace training {
namespace {

// Raises the signal count after a given step (as the signal handler would, mid-run).
class SignalAfter : public TrainingHook {
 public:
  SignalAfter(std::atomic<int>* signals, int64_t step) : signals_(signals), step_(step) {}
  absl::Status AfterStep(const StepInfo& step, const StepResult&, LoopControl*) override {
    if (step.step == step_) signals_->fetch_add(1);
    return absl::OkStatus();
  }

 private:
  std::atomic<int>* signals_;
  int64_t step_;
};

LoopEnd RunSteps(FakeSession* session, int64_t last_step, std::vector<TrainingHook*> hooks) {
  TrainingLoopOptions options;
  options.loss = "loss";
  options.train_op = "train";
  LoopStart start;
  start.last_step = last_step;
  return RunTrainingLoop(session, options, start, hooks);
}

TEST(StopSignalHookTest, ASignalStopsBeforeTheNextStepAsAPreemption) {
  FakeSession session;
  std::atomic<int> signals{0};
  std::ostringstream out;
  StopSignalHook hook(&signals, &out);
  SignalAfter raise(&signals, 3);
  LoopEnd end = RunSteps(&session, 10, {&raise, &hook});
  EXPECT_EQ(end.reason, LoopStop::kRequested);
  EXPECT_TRUE(end.preempted());
  EXPECT_EQ(end.step, 3);
  EXPECT_EQ(session.CallsWithTarget("train").size(), 3u);
  EXPECT_TRUE(hook.stopped());
  EXPECT_EQ(out.str(), "stopped by signal at step 3; resume by running the same command\n");
}

TEST(StopSignalHookTest, ASignalBeforeTheFirstStepRunsNoStep) {
  FakeSession session;
  std::atomic<int> signals{2};
  std::ostringstream out;
  StopSignalHook hook(&signals, &out);
  LoopEnd end = RunSteps(&session, 10, {&hook});
  EXPECT_TRUE(end.preempted());
  EXPECT_EQ(end.steps_run, 0);
  EXPECT_TRUE(session.calls().empty());
  EXPECT_EQ(out.str(), "stopped by signal at step 0; resume by running the same command\n");
}

TEST(StopSignalHookTest, WithoutASignalTheRunCompletesQuietly) {
  FakeSession session;
  std::atomic<int> signals{0};
  std::ostringstream out;
  StopSignalHook hook(&signals, &out);
  LoopEnd end = RunSteps(&session, 4, {&hook});
  EXPECT_EQ(end.reason, LoopStop::kLastStep);
  EXPECT_TRUE(end.succeeded());
  EXPECT_FALSE(hook.stopped());
  EXPECT_EQ(out.str(), "");
}

TEST(StopSignalHookTest, ASignalDuringTheLastStepDoesNotPreemptACompletedRun) {
  FakeSession session;
  std::atomic<int> signals{0};
  std::ostringstream out;
  StopSignalHook hook(&signals, &out);
  SignalAfter raise(&signals, 4);
  LoopEnd end = RunSteps(&session, 4, {&raise, &hook});
  EXPECT_EQ(end.reason, LoopStop::kLastStep);
  EXPECT_TRUE(end.succeeded());
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace training
}  // namespace sluice
