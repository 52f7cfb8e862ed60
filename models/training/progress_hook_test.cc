// ProgressHook: which steps print a progress line (with and without a terminal), and the end
// of the run's report, driven by the training loop on a FakeSession.
#include "models/training/progress_hook.h"

#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "models/training/fake_session.h"
#include "models/training/training_loop.h"

namespace sluice {
namespace training {
namespace {

LoopEnd RunSteps(FakeSession* session, int64_t step, int64_t last_step, TrainingHook* hook) {
  TrainingLoopOptions options;
  options.loss = "loss";
  options.train_op = "train";
  options.learning_rate_feed = "lr";
  options.learning_rate = [](int64_t) { return 0.05; };
  options.examples_per_step = 64;
  LoopStart start;
  start.step = step;
  start.last_step = last_step;
  return RunTrainingLoop(session, options, start, {hook});
}

TEST(ProgressHookTest, WithoutATerminalPrintsEveryNStepsAndTheLastThenTheFinalLoss) {
  FakeSession session;
  session.SetValue("loss", Tensor::Scalar<float>(0.123456789f));
  std::ostringstream out;
  ProgressHook hook({/*tty=*/false, /*log_every_steps=*/2}, &out);
  RunSteps(&session, 0, 5, &hook);
  std::vector<std::string> lines = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u) << out.str();
  EXPECT_TRUE(absl::StartsWith(lines[0], "step 2/5 (40.0%) loss 0.1235 lr 0.05")) << lines[0];
  EXPECT_TRUE(absl::StartsWith(lines[1], "step 4/5 ")) << lines[1];
  EXPECT_TRUE(absl::StartsWith(lines[2], "step 5/5 ")) << lines[2];
  // Full precision: the float's value to 9 significant digits.
  EXPECT_EQ(lines[3], "last step 5 loss 0.123456791");
  EXPECT_TRUE(absl::StartsWith(lines[4], "mean step time ")) << lines[4];
  EXPECT_TRUE(absl::EndsWith(lines[4], " ms over 5 steps")) << lines[4];
  EXPECT_FALSE(absl::StrContains(out.str(), "\r"));
}

// An async replica's global step went back: its chief restarted from an
// older checkpoint. The hook says so; a step forward says nothing.
TEST(ProgressHookTest, WarnsWhenTheGlobalStepGoesBack) {
  std::ostringstream out;
  ProgressHook hook({/*tty=*/false, /*log_every_steps=*/1000}, &out);
  LoopStart start;
  start.step = 1800;
  start.last_step = 5000;
  FakeSession session;
  ASSERT_TRUE(hook.Begin(&session, start).ok());
  StepInfo info;
  info.previous_step = 1800;
  info.step = 1803;  // other replicas' steps landed meanwhile
  info.last_step = 5000;
  StepResult result;
  result.end_time = absl::Now();
  ASSERT_TRUE(hook.AfterStep(info, result, nullptr).ok());
  EXPECT_EQ(out.str(), "");
  info.previous_step = 1803;
  info.step = 527;
  ASSERT_TRUE(hook.AfterStep(info, result, nullptr).ok());
  EXPECT_EQ(out.str(),
            "warning: the global step went back from 1803 to 527: the chief restored an older checkpoint, and the "
            "steps after it are trained again\n");
}

TEST(ProgressHookTest, PrintsEveryLossAtFullPrecisionWhenAsked) {
  FakeSession session;
  session.SetValue("loss", Tensor::Scalar<float>(0.123456789f));
  std::ostringstream out;
  ProgressHook hook({/*tty=*/false, /*log_every_steps=*/100, /*print_losses=*/true}, &out);
  RunSteps(&session, 0, 2, &hook);
  EXPECT_TRUE(absl::StartsWith(out.str(), "loss at step 1: 0.123456791\nloss at step 2: 0.123456791\n")) << out.str();
}

TEST(ProgressHookTest, OnATerminalRedrawsOneLineAndEndsIt) {
  FakeSession session;
  std::ostringstream out;
  ProgressHook hook({/*tty=*/true, /*log_every_steps=*/100}, &out);
  RunSteps(&session, 0, 3, &hook);
  const std::string text = out.str();
  // The first step prints (nothing printed for 250 ms before it), and the last always does.
  EXPECT_TRUE(absl::StartsWith(text, "\rstep 1/3 ")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\rstep 3/3 (100.0%)")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\033[K\nlast step 3 loss 0\n")) << text;
}

TEST(ProgressHookTest, SaysWhenTheInputEndedAndPrintsNoLossWhenNoStepRan) {
  FakeSession session;
  int calls = 0;
  session.SetHandler([&](const FakeSession::Call&, std::vector<Tensor>* out, RunMetadata*) {
    if (++calls > 2) return absl::OutOfRangeError("end of input");
    out->push_back(Tensor::Scalar<float>(1.5f));
    return absl::OkStatus();
  });
  std::ostringstream out;
  ProgressHook hook({false, 1}, &out);
  RunSteps(&session, 10, 20, &hook);
  EXPECT_TRUE(absl::StrContains(out.str(), "step 12/20 (60.0%)")) << out.str();
  EXPECT_TRUE(absl::StrContains(out.str(), "last step 12 loss 1.5\nthe training input ended at step 12 (input.train.epochs)\n"))
      << out.str();

  std::ostringstream resumed_at_end;
  ProgressHook idle({false, 1}, &resumed_at_end);
  RunSteps(&session, 20, 20, &idle);
  EXPECT_EQ(resumed_at_end.str(), "");
}

}  // namespace
}  // namespace training
}  // namespace sluice
