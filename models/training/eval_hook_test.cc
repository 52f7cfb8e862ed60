// EvalHook on a FakeSession: the cadence of periodic evaluations, the example-weighted
// average over batches, the report line and results file, listeners, the final evaluation
// (none when preempted), and failures.
#include "models/training/eval_hook.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/platform/env.h"
#include "engine/platform/fault_env.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"
#include "monitoring/progress.h"
#include "models/training/fake_session.h"
#include "models/training/stop_signal_hook.h"
#include "models/training/training_loop.h"

namespace sluice {
namespace training {
namespace {

class RecordingListener : public EvalListener {
 public:
  void OnEval(int64_t step, const EvalValues& values) override { calls.push_back({step, values}); }
  std::vector<std::pair<int64_t, EvalValues>> calls;
};

class EvalHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    results_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                            ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_eval.txt");
    options_.loss = "eval/loss";
    options_.metrics = {{"accuracy", "eval/accuracy"}};
    options_.examples_per_epoch = 250;
    options_.batch_size = 100;
    options_.every_steps = 10;
    options_.results_file = results_;
    // Eval batch i (counting over the whole test) has loss i+1 and accuracy 0.5.
    session_.SetHandler([this](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
      if (call.fetches[0] == "loss") {
        out->push_back(Tensor::Scalar<float>(0.25f));
        return absl::OkStatus();
      }
      if (fail_) return absl::DataLossError("corrupt eval record");
      out->push_back(Tensor::Scalar<float>(static_cast<float>(eval_batches_ % 3 + 1)));
      out->push_back(Tensor::Scalar<float>(0.5f));
      ++eval_batches_;
      return absl::OkStatus();
    });
  }
  LoopEnd RunSteps(int64_t last_step, std::vector<TrainingHook*> hooks, int64_t first_step = 0) {
    TrainingLoopOptions options;
    options.loss = "loss";
    options.train_op = "train";
    LoopStart start;
    start.step = first_step;
    start.last_step = last_step;
    return RunTrainingLoop(&session_, options, start, hooks);
  }

  FakeSession session_;
  EvalHookOptions options_;
  std::string results_;
  int eval_batches_ = 0;
  bool fail_ = false;
  std::ostringstream out_, err_;
};

// A stop signal during a periodic evaluation abandons it before its next
// batch; the stop-signal hook then stops the loop before the next step, and
// the preempted run evaluates no more.
TEST_F(EvalHookTest, AStopSignalAbandonsAPeriodicEvaluationAndTheLoopStops) {
  std::atomic<int> signals{0};
  options_.stop_signals = &signals;
  session_.SetHandler([&](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
    if (call.fetches[0] == "loss") {
      out->push_back(Tensor::Scalar<float>(0.25f));
      return absl::OkStatus();
    }
    out->push_back(Tensor::Scalar<float>(1));
    out->push_back(Tensor::Scalar<float>(0.5f));
    ++eval_batches_;
    signals.store(1);  // arrives during the first batch
    return absl::OkStatus();
  });
  RecordingListener listener;
  EvalHook hook(options_, {&listener}, &out_, &err_);
  std::ostringstream stop_out;
  StopSignalHook stop(&signals, &stop_out);
  LoopEnd end = RunSteps(30, {&stop, &hook});
  EXPECT_TRUE(end.preempted());
  EXPECT_EQ(end.step, 10);
  EXPECT_EQ(eval_batches_, 1);
  EXPECT_TRUE(listener.calls.empty());
  EXPECT_EQ(out_.str(), "evaluation at step 10 abandoned: a stop signal arrived\n");
}

// One during the final evaluation (the last step is done and saved) ends the
// run as Cancelled, which the trainer exits 143 for; nothing reaches eval.txt.
TEST_F(EvalHookTest, AStopSignalAbandonsTheFinalEvaluation) {
  std::atomic<int> signals{1};
  options_.stop_signals = &signals;
  options_.every_steps = 0;
  RecordingListener listener;
  {
    EvalHook hook(options_, {&listener}, &out_, &err_);
    LoopEnd end = RunSteps(3, {&hook});
    EXPECT_TRUE(absl::IsCancelled(end.status)) << end.status;
    EXPECT_FALSE(end.preempted());
  }
  EXPECT_EQ(eval_batches_, 0);
  EXPECT_TRUE(listener.calls.empty());
  EXPECT_EQ(out_.str(), "final evaluation at step 3 abandoned: a stop signal arrived; run the same command again to evaluate\n");
  EXPECT_EQ(err_.str(), "");
  std::ifstream f(results_);
  std::stringstream written;
  written << f.rdbuf();
  EXPECT_EQ(written.str(), "");
}

// A periodic evaluation's time is reported as a pause: the steps after it
// have an active clock behind their wall clock (the rates leave it out).
TEST_F(EvalHookTest, APeriodicEvaluationIsLeftOutOfTheRates) {
  class Clocks : public TrainingHook {
   public:
    absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl*) override {
      paused.push_back(result.end_time - result.active_time);
      return absl::OkStatus();
    }
    std::vector<absl::Duration> paused;
  } clocks;
  EvalHook hook(options_, {}, &out_, &err_);
  RunSteps(12, {&clocks, &hook});
  ASSERT_EQ(clocks.paused.size(), 12u);
  EXPECT_EQ(clocks.paused[9], absl::ZeroDuration());  // step 10, evaluated after it
  EXPECT_GT(clocks.paused[10], absl::ZeroDuration());
  EXPECT_EQ(clocks.paused[11], clocks.paused[10]);
}

TEST_F(EvalHookTest, EvaluatesEveryNStepsBeforeTheLastAndAtTheEnd) {
  RecordingListener listener;
  EvalHook hook(options_, {&listener}, &out_, &err_);
  LoopEnd end = RunSteps(30, {&hook});
  EXPECT_TRUE(end.succeeded());
  // Batches weigh 100, 100 and the epoch's last 50: (1*100 + 2*100 + 3*50) / 250 = 1.8.
  const std::string expected = absl::StrCat("eval at step 10: loss 1.8000 accuracy 0.5000 (250 examples)\n",
                                            "eval at step 20: loss 1.8000 accuracy 0.5000 (250 examples)\n",
                                            "eval at step 30: loss 1.8000 accuracy 0.5000 (250 examples)\n");
  EXPECT_EQ(out_.str(), expected);
  EXPECT_EQ(eval_batches_, 9);
  std::ifstream f(results_);
  std::stringstream written;
  written << f.rdbuf();
  EXPECT_EQ(written.str(), expected);
  ASSERT_EQ(listener.calls.size(), 3u);
  EXPECT_EQ(listener.calls[2].first, 30);
  ASSERT_EQ(listener.calls[2].second.size(), 2u);
  EXPECT_EQ(listener.calls[2].second[0].first, "loss");
  EXPECT_DOUBLE_EQ(listener.calls[2].second[0].second, 1.8);
  EXPECT_EQ(listener.calls[2].second[1].first, "accuracy");
}

TEST_F(EvalHookTest, PerplexityIsExpOfTheMeanLoss) {
  options_.every_steps = 0;
  options_.perplexity = true;
  RecordingListener listener;
  EvalHook hook(options_, {&listener}, &out_, &err_);
  RunSteps(5, {&hook});
  // exp(1.8) = 6.0496.
  EXPECT_EQ(out_.str(), "eval at step 5: loss 1.8000 perplexity 6.0496 accuracy 0.5000 (250 examples)\n");
  ASSERT_EQ(listener.calls.size(), 1u);
  ASSERT_EQ(listener.calls[0].second.size(), 3u);
  EXPECT_EQ(listener.calls[0].second[1].first, "perplexity");
  EXPECT_DOUBLE_EQ(listener.calls[0].second[1].second, std::exp(1.8));
}

// An open progress line is ended first; a log (no line open) gets no blank line.
TEST_F(EvalHookTest, ResultsAreAppendedAndAnOpenProgressLineIsEndedFirst) {
  options_.every_steps = 0;
  {
    MarkProgressLineOpen();
    EvalHook hook(options_, {}, &out_, &err_);
    RunSteps(5, {&hook});
  }
  EvalHook again(options_, {}, &out_, &err_);
  RunSteps(5, {&again});
  EXPECT_EQ(out_.str(), "\neval at step 5: loss 1.8000 accuracy 0.5000 (250 examples)\n"
                        "eval at step 5: loss 1.8000 accuracy 0.5000 (250 examples)\n");
  std::ifstream f(results_);
  std::stringstream written;
  written << f.rdbuf();
  EXPECT_EQ(written.str(), "eval at step 5: loss 1.8000 accuracy 0.5000 (250 examples)\n"
                           "eval at step 5: loss 1.8000 accuracy 0.5000 (250 examples)\n");
}

// A finished run run again (no step ran): its final evaluation is the
// results file's last line, printed again, not evaluated and appended again.
TEST_F(EvalHookTest, AFinishedRunRunAgainReportsItsEvaluationFromTheResultsFile) {
  options_.every_steps = 0;
  {
    EvalHook hook(options_, {}, &out_, &err_);
    RunSteps(5, {&hook});
  }
  const int batches = eval_batches_;
  out_.str("");
  {
    EvalHook again(options_, {}, &out_, &err_);
    EXPECT_TRUE(RunSteps(5, {&again}, /*first_step=*/5).succeeded());
  }
  EXPECT_EQ(eval_batches_, batches);
  EXPECT_EQ(out_.str(), absl::StrCat("eval at step 5: loss 1.8000 accuracy 0.5000 (250 examples) (from ", results_, ")\n"));
  std::ifstream f(results_);
  std::stringstream written;
  written << f.rdbuf();
  EXPECT_EQ(written.str(), "eval at step 5: loss 1.8000 accuracy 0.5000 (250 examples)\n");
  // Resumed at another step (the last line is not this step's): it evaluates.
  EvalHook later(options_, {}, &out_, &err_);
  RunSteps(6, {&later}, /*first_step=*/6);
  EXPECT_GT(eval_batches_, batches);
}

// Resumed at a step whose periodic evaluation eval.txt lacks (abandoned for a
// stop signal, or lost to a crash after the checkpoint): it runs before the
// first step, on the restored variables; one that eval.txt has is not run again.
TEST_F(EvalHookTest, AResumeRunsTheRestoredStepsMissingEvaluationFirst) {
  auto resume_at_10 = [&] {
    out_.str("");
    TrainingLoopOptions options;
    options.loss = "loss";
    options.train_op = "train";
    LoopStart start;
    start.step = 10;
    start.last_step = 25;
    start.resumed = true;
    EvalHook hook(options_, {}, &out_, &err_);
    EXPECT_TRUE(RunTrainingLoop(&session_, options, start, {&hook}).succeeded());
  };
  resume_at_10();
  EXPECT_EQ(out_.str(), "eval at step 10: loss 1.8000 accuracy 0.5000 (250 examples)\n"
                        "eval at step 20: loss 1.8000 accuracy 0.5000 (250 examples)\n"
                        "eval at step 25: loss 1.8000 accuracy 0.5000 (250 examples)\n");
  // eval.txt now holds step 10's (and later ones): another resume at 10 does not run it again.
  resume_at_10();
  EXPECT_TRUE(absl::StartsWith(out_.str(), "eval at step 20: ")) << out_.str();
  // Nor when it is the file's first line.
  ASSERT_TRUE(WriteStringToFile(Env::Default(), results_, "eval at step 10: loss 1.8000 accuracy 0.5000 (250 examples)\n").ok());
  resume_at_10();
  EXPECT_TRUE(absl::StartsWith(out_.str(), "eval at step 20: ")) << out_.str();
  // A file without it: run first.
  ASSERT_TRUE(WriteStringToFile(Env::Default(), results_, "eval at step 100: loss 1.8000 accuracy 0.5000 (250 examples)\n").ok());
  resume_at_10();
  EXPECT_TRUE(absl::StartsWith(out_.str(), "eval at step 10: ")) << out_.str();
}

TEST_F(EvalHookTest, AnUnknownEpochSizeIsOneBatch) {
  options_.examples_per_epoch = 0;
  options_.every_steps = 0;
  EvalHook hook(options_, {}, &out_, &err_);
  RunSteps(1, {&hook});
  EXPECT_EQ(out_.str(), "eval at step 1: loss 1.0000 accuracy 0.5000 (100 examples)\n");
}

TEST_F(EvalHookTest, APreemptedRunIsNotEvaluatedAtTheEnd) {
  class Preempt : public TrainingHook {
    void BeforeStep(const StepInfo& step, StepArgs*, LoopControl* control) override {
      if (step.step == 3) control->RequestStop(StopKind::kPreempt);
    }
  } preempt;
  EvalHook hook(options_, {}, &out_, &err_);
  LoopEnd end = RunSteps(30, {&preempt, &hook});
  EXPECT_TRUE(end.preempted());
  EXPECT_EQ(eval_batches_, 0);
  EXPECT_EQ(out_.str(), "");
}

TEST_F(EvalHookTest, WithoutAnEvalLossNothingRuns) {
  options_.loss = "";
  EvalHook hook(options_, {}, &out_, &err_);
  LoopEnd end = RunSteps(20, {&hook});
  EXPECT_TRUE(end.succeeded());
  EXPECT_EQ(eval_batches_, 0);
  EXPECT_EQ(out_.str(), "");
}

TEST_F(EvalHookTest, AFailedPeriodicEvaluationStopsTheRun) {
  fail_ = true;
  EvalHook hook(options_, {}, &out_, &err_);
  LoopEnd end = RunSteps(30, {&hook});
  EXPECT_EQ(end.reason, LoopStop::kAfterStepFailed);
  EXPECT_EQ(end.step, 10);
  EXPECT_TRUE(absl::IsDataLoss(end.status));
  EXPECT_EQ(end.status.message(), "evaluation at step 10: corrupt eval record");
}

TEST_F(EvalHookTest, AFailedFinalEvaluationIsReportedAndFailsTheRun) {
  fail_ = true;
  options_.every_steps = 0;
  EvalHook hook(options_, {}, &out_, &err_);
  LoopEnd end = RunSteps(3, {&hook});
  EXPECT_TRUE(end.ended);
  EXPECT_FALSE(end.succeeded());
  EXPECT_TRUE(absl::IsDataLoss(end.status));
  EXPECT_EQ(err_.str(), "error: final evaluation: corrupt eval record\n");
}

TEST_F(EvalHookTest, AFullDiskFailsTheRunInsteadOfLosingAnEvalLine) {
  FaultEnv env(Env::Default());
  options_.env = &env;
  EvalHook hook(options_, {}, &out_, &err_);
  env.SetWriteBudget(10);  // less than one line
  LoopEnd end = RunSteps(30, {&hook});
  EXPECT_EQ(end.reason, LoopStop::kAfterStepFailed);
  EXPECT_EQ(end.step, 10);
  EXPECT_TRUE(absl::IsResourceExhausted(end.status)) << end.status;
  EXPECT_TRUE(absl::StartsWith(end.status.message(), "evaluation at step 10: eval results: ")) << end.status;
}

TEST_F(EvalHookTest, AResultsFileThatCannotBeOpenedStopsTheRunAtBegin) {
  options_.results_file = FreshTestDir("results_is_a_directory");
  EvalHook hook(options_, {}, &out_, &err_);
  LoopEnd end = RunSteps(30, {&hook});
  EXPECT_FALSE(end.ended);
  EXPECT_EQ(end.steps_run, 0);
  EXPECT_TRUE(absl::StartsWith(end.status.message(), "eval results: ")) << end.status;
  EXPECT_EQ(eval_batches_, 0);
}

}  // namespace
}  // namespace training
}  // namespace sluice
