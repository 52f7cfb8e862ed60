// The training loop against a FakeSession: what each step runs and feeds, which hook sees
// which fetched values, the order of the hooks' calls, and every way the loop can end.
#include "models/training/training_loop.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "models/training/fake_session.h"

namespace sluice {
namespace training {
namespace {

// Records its calls as "name:Call:step" into a shared log, and does what it is told.
class RecordingHook : public TrainingHook {
 public:
  RecordingHook(std::string name, std::vector<std::string>* log) : name_(std::move(name)), log_(log) {}

  absl::Status Begin(Session* session, const LoopStart& start) override {
    log_->push_back(absl::StrCat(name_, ":Begin:", start.step));
    return begin_status;
  }
  void BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) override {
    log_->push_back(absl::StrCat(name_, ":BeforeStep:", step.step));
    infos.push_back(step);
    args->fetches = fetches;
    args->collect_step_stats = collect_step_stats;
    if (step.step == stop_before_step) control->RequestStop(stop_kind);
  }
  absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) override {
    log_->push_back(absl::StrCat(name_, ":AfterStep:", step.step));
    results.push_back(result);
    if (step.step == stop_after_step) control->RequestStop(stop_kind);
    if (step.step == pause_after_step) control->AddPause(absl::Hours(1));
    return step.step == fail_after_step ? absl::InternalError("hook failed") : absl::OkStatus();
  }
  absl::Status End(Session* session, const LoopEnd& end) override {
    log_->push_back(absl::StrCat(name_, ":End:", end.step));
    status_seen_at_end = end.status;
    return end_status;
  }
  void Close(const LoopEnd& end) override {
    log_->push_back(absl::StrCat(name_, ":Close:", end.step));
    closed_with = end;
  }

  std::vector<std::string> fetches;
  bool collect_step_stats = false;
  int64_t stop_before_step = -1;
  int64_t stop_after_step = -1;
  int64_t fail_after_step = -1;
  int64_t pause_after_step = -1;  // reports an hour of other work (an evaluation) then
  StopKind stop_kind = StopKind::kFinish;
  absl::Status begin_status;
  absl::Status end_status;

  std::vector<StepInfo> infos;
  std::vector<StepResult> results;
  absl::Status status_seen_at_end;
  LoopEnd closed_with;

 private:
  std::string name_;
  std::vector<std::string>* log_;
};

class TrainingLoopTest : public ::testing::Test {
 protected:
  TrainingLoopTest() {
    options_.loss = "loss:0";
    options_.train_op = "train";
    options_.learning_rate_feed = "lr";
    options_.learning_rate = [](int64_t step) { return 0.5 / (step + 1); };
    options_.examples_per_step = 32;
    session_.SetValue("loss:0", Tensor::Scalar<float>(0.25f));
  }
  LoopEnd Run(int64_t step, int64_t last_step, std::vector<TrainingHook*> hooks) {
    LoopStart start;
    start.step = step;
    start.last_step = last_step;
    return RunTrainingLoop(&session_, options_, start, hooks);
  }
  // Steps answer a loss of 0.5; the k-th Run of the stage op (1: the first
  // batch's) returns `status`, the others OK.
  void FailStagingRun(int k, absl::Status status) {
    auto stages = std::make_shared<std::atomic<int>>(0);
    session_.SetHandler([stages, k, status](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
      if (call.targets == std::vector<std::string>{"stage"}) return ++*stages == k ? status : absl::OkStatus();
      out->push_back(Tensor::Scalar<float>(0.5f));
      return absl::OkStatus();
    });
  }
  FakeSession session_;
  TrainingLoopOptions options_;
  std::vector<std::string> log_;
};

TEST_F(TrainingLoopTest, RunsFromTheStartStepToTheLastFeedingTheLearningRate) {
  RecordingHook hook("h", &log_);
  LoopEnd end = Run(2, 5, {&hook});
  EXPECT_EQ(end.reason, LoopStop::kLastStep);
  EXPECT_TRUE(end.succeeded());
  EXPECT_EQ(end.step, 5);
  EXPECT_EQ(end.steps_run, 3);
  EXPECT_EQ(end.last_loss, 0.25);
  std::vector<FakeSession::Call> steps = session_.CallsWithTarget("train");
  ASSERT_EQ(steps.size(), 3u);
  for (size_t i = 0; i < steps.size(); ++i) {
    const int64_t before = 2 + static_cast<int64_t>(i);
    EXPECT_EQ(steps[i].fetches, std::vector<std::string>{"loss:0"});
    ASSERT_EQ(steps[i].feeds.size(), 1u);
    EXPECT_EQ(steps[i].feeds[0].first, "lr");
    EXPECT_FLOAT_EQ(steps[i].feeds[0].second.scalar<float>(), 0.5f / (before + 1));
    EXPECT_FALSE(steps[i].options.collect_step_stats);
    EXPECT_EQ(hook.infos[i].step, before + 1);
    EXPECT_EQ(hook.infos[i].last_step, 5);
    EXPECT_EQ(hook.infos[i].examples, 32);
    EXPECT_DOUBLE_EQ(hook.infos[i].learning_rate, 0.5 / (before + 1));
    EXPECT_EQ(hook.results[i].loss, 0.25);
    EXPECT_GE(hook.results[i].seconds, 0);
  }
  EXPECT_EQ(log_, (std::vector<std::string>{"h:Begin:2", "h:BeforeStep:3", "h:AfterStep:3", "h:BeforeStep:4",
                                            "h:AfterStep:4", "h:BeforeStep:5", "h:AfterStep:5", "h:End:5",
                                            "h:Close:5"}));
}

// A replica of a replicated run: other workers advance the global step too,
// so each step's number is the global step fetched with it.
TEST_F(TrainingLoopTest, AStepTensorGivesEachStepItsGlobalStep) {
  options_.step_tensor = "step:0";
  int64_t global = 10;
  session_.SetHandler([&](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
    for (const std::string& f : call.fetches) {
      if (f == "step:0") {
        global += 3;  // two other workers' updates and this one's
        out->push_back(Tensor::Scalar<int64_t>(global));
      } else {
        out->push_back(Tensor::Scalar<float>(0.5f));
      }
    }
    return absl::OkStatus();
  });
  RecordingHook hook("h", &log_);
  hook.fetches = {"extra"};
  LoopEnd end = Run(10, 20, {&hook});
  EXPECT_EQ(end.reason, LoopStop::kLastStep);
  EXPECT_EQ(end.step, 22);
  EXPECT_EQ(end.steps_run, 4);  // 13, 16, 19, 22
  ASSERT_EQ(hook.results.size(), 4u);
  EXPECT_EQ(log_[2], "h:AfterStep:13");
  EXPECT_EQ(hook.results[0].fetched.size(), 1u) << "the step tensor is not the hook's fetch";
  std::vector<FakeSession::Call> steps = session_.CallsWithTarget("train");
  ASSERT_EQ(steps.size(), 4u);
  // The learning rate follows the global step seen last.
  EXPECT_FLOAT_EQ(steps[1].feeds[0].second.scalar<float>(), 0.5f / (13 + 1));
}

// Time a hook reports as other work (an evaluation) is left out of the
// active clock of every later step, which the rates are measured on.
TEST_F(TrainingLoopTest, APauseAHookReportsIsLeftOutOfTheLaterStepsActiveTime) {
  RecordingHook hook("a", &log_);
  hook.pause_after_step = 2;
  Run(0, 4, {&hook});
  ASSERT_EQ(hook.results.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const absl::Duration paused = hook.results[i].end_time - hook.results[i].active_time;
    EXPECT_EQ(paused, i < 2 ? absl::ZeroDuration() : absl::Hours(1)) << "step " << i + 1;
  }
}

TEST_F(TrainingLoopTest, HooksAreCalledInTheirOrderInEveryPhase) {
  RecordingHook a("a", &log_), b("b", &log_);
  Run(0, 1, {&a, &b});
  EXPECT_EQ(log_, (std::vector<std::string>{"a:Begin:0", "b:Begin:0", "a:BeforeStep:1", "b:BeforeStep:1",
                                            "a:AfterStep:1", "b:AfterStep:1", "a:End:1", "b:End:1", "a:Close:1",
                                            "b:Close:1"}));
}

TEST_F(TrainingLoopTest, EachHookGetsBackOnlyItsOwnFetchesInItsOrder) {
  RecordingHook a("a", &log_), none("none", &log_), b("b", &log_);
  a.fetches = {"x"};
  b.fetches = {"y", "z"};
  session_.SetValue("x", Tensor::Scalar<float>(1));
  session_.SetValue("y", Tensor::Scalar<float>(2));
  session_.SetValue("z", Tensor::Scalar<int32_t>(3));
  Run(0, 2, {&a, &none, &b});
  std::vector<FakeSession::Call> steps = session_.CallsWithTarget("train");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].fetches, (std::vector<std::string>{"loss:0", "x", "y", "z"}));
  ASSERT_EQ(a.results.size(), 2u);
  ASSERT_EQ(a.results[1].fetched.size(), 1u);
  EXPECT_EQ(a.results[1].fetched[0].scalar<float>(), 1);
  EXPECT_TRUE(none.results[1].fetched.empty());
  ASSERT_EQ(b.results[1].fetched.size(), 2u);
  EXPECT_EQ(b.results[1].fetched[0].scalar<float>(), 2);
  EXPECT_EQ(b.results[1].fetched[1].scalar<int32_t>(), 3);
}

TEST_F(TrainingLoopTest, StepStatsAreCollectedOnlyWhenAHookAsks) {
  RecordingHook a("a", &log_), b("b", &log_);
  b.collect_step_stats = true;
  Run(0, 1, {&a, &b});
  std::vector<FakeSession::Call> steps = session_.CallsWithTarget("train");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].options.collect_step_stats);
  EXPECT_TRUE(a.results[0].step_stats_collected);
  EXPECT_NE(a.results[0].metadata, nullptr);
}

TEST_F(TrainingLoopTest, AStopRequestedBeforeAStepSkipsThatStepAndEndsNormally) {
  RecordingHook a("a", &log_), b("b", &log_);
  b.stop_before_step = 3;
  b.stop_kind = StopKind::kPreempt;
  LoopEnd end = Run(0, 10, {&a, &b});
  EXPECT_EQ(end.reason, LoopStop::kRequested);
  EXPECT_TRUE(end.preempted());
  EXPECT_FALSE(end.succeeded());
  EXPECT_TRUE(end.ended);
  EXPECT_EQ(end.step, 2);
  EXPECT_EQ(end.steps_run, 2);
  EXPECT_EQ(session_.CallsWithTarget("train").size(), 2u);
  EXPECT_EQ(a.infos.size(), 3u);    // every BeforeStep of step 3 ran
  EXPECT_EQ(a.results.size(), 2u);  // but no AfterStep
  EXPECT_EQ(log_.back(), "b:Close:2");
}

TEST_F(TrainingLoopTest, AStopRequestedAfterAStepLetsTheOtherHooksSeeThatStep) {
  RecordingHook a("a", &log_), b("b", &log_);
  a.stop_after_step = 4;
  LoopEnd end = Run(0, 10, {&a, &b});
  EXPECT_EQ(end.reason, LoopStop::kRequested);
  EXPECT_FALSE(end.preempted());
  EXPECT_TRUE(end.succeeded());
  EXPECT_EQ(end.step, 4);
  EXPECT_EQ(b.results.size(), 4u);
}

TEST_F(TrainingLoopTest, OutOfRangeFromAStepMeansTheInputEnded) {
  int calls = 0;
  session_.SetHandler([&](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
    if (++calls == 3) return absl::OutOfRangeError("queue closed and empty");
    out->push_back(Tensor::Scalar<float>(0.5f));
    return absl::OkStatus();
  });
  RecordingHook a("a", &log_);
  LoopEnd end = Run(0, 10, {&a});
  EXPECT_EQ(end.reason, LoopStop::kInputEnded);
  EXPECT_TRUE(end.succeeded());
  EXPECT_EQ(end.step, 2);
  EXPECT_EQ(end.steps_run, 2);
  EXPECT_EQ(log_[log_.size() - 2], "a:End:2");
}

// A hook that knows the input failed (InputHook: a runner's parse error
// closed the queue) turns that OutOfRange into a failed step with its error.
TEST_F(TrainingLoopTest, OutOfRangeAfterTheInputFailedIsThatFailure) {
  int calls = 0;
  session_.SetHandler([&](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
    if (++calls == 3) return absl::OutOfRangeError("queue closed and empty");
    out->push_back(Tensor::Scalar<float>(0.5f));
    return absl::OkStatus();
  });
  class FailedInput : public TrainingHook {
   public:
    absl::Status InputFailure() const override { return absl::InvalidArgumentError("bad record"); }
  };
  RecordingHook a("a", &log_);
  FailedInput input;
  LoopEnd end = Run(0, 10, {&a, &input});
  EXPECT_EQ(end.reason, LoopStop::kStepFailed);
  EXPECT_TRUE(absl::IsInvalidArgument(end.status)) << end.status;
  EXPECT_EQ(end.status.message(), "bad record");
  EXPECT_EQ(end.step, 2);
  EXPECT_FALSE(end.succeeded());
}

// With a stage op the loop stages the first batch before the first step, then
// the next batch beside every step but the last (BatchStager). Beside means
// both at once: step k's Run waits here for the staging Run of batch k + 1
// to begin, and that staging Run waits for step k's Run to begin, so a loop
// that ran them one after the other (either way round) would time out.
TEST_F(TrainingLoopTest, AStageOpRunsBeforeTheFirstStepAndBesideEachStepButTheLast) {
  options_.stage_op = "stage";
  absl::Mutex mu;
  std::vector<std::string> order;
  int stages = 0, steps = 0;
  absl::Notification stage_began[5], step_began[5];
  bool overlapped = true;
  session_.SetHandler([&](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
    const bool staging = call.targets == std::vector<std::string>{"stage"};
    int k;
    {
      absl::MutexLock lock(&mu);
      k = staging ? ++stages : ++steps;
      order.push_back(absl::StrCat(staging ? "stage" : "step", k));
    }
    if (k >= 5) return absl::InternalError("too many Runs");
    (staging ? stage_began : step_began)[k].Notify();
    // Staging Run k (k >= 2) goes beside step k - 1; step k (k < 3) beside staging Run k + 1.
    absl::Notification* partner = staging ? (k >= 2 ? &step_began[k - 1] : nullptr)
                                          : (k < 3 ? &stage_began[k + 1] : nullptr);
    if (partner != nullptr && !partner->WaitForNotificationWithTimeout(absl::Seconds(10))) {
      absl::MutexLock lock(&mu);
      overlapped = false;
    }
    if (!staging) out->push_back(Tensor::Scalar<float>(0.5f));
    return absl::OkStatus();
  });
  RecordingHook a("a", &log_);
  LoopEnd end = Run(0, 3, {&a});
  EXPECT_EQ(end.reason, LoopStop::kLastStep);
  EXPECT_TRUE(end.succeeded()) << end.status;
  EXPECT_EQ(end.steps_run, 3);
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(overlapped);
  EXPECT_EQ(stages, 3);  // batches 1, 2 and 3: none beside the last step
  ASSERT_FALSE(order.empty());
  EXPECT_EQ(order[0], "stage1");
  EXPECT_EQ(order.back(), "step3");
}

TEST_F(TrainingLoopTest, AStagedRunOfOneStepStagesOnlyItsBatch) {
  options_.stage_op = "stage";
  RecordingHook a("a", &log_);
  LoopEnd end = Run(9, 10, {&a});
  EXPECT_TRUE(end.succeeded()) << end.status;
  EXPECT_EQ(end.steps_run, 1);
  EXPECT_EQ(session_.CallsWithTarget("stage").size(), 1u);
  EXPECT_EQ(session_.CallsWithTarget("train").size(), 1u);
}

// A stop requested after a step, and a failed step, end the loop with the
// staging Run beside that step finished (its batch stays staged, unused; a
// resume reads it again from the input position of the last step).
TEST_F(TrainingLoopTest, AStopOrAFailedStepWithAStagingRunBesideItEndsTheLoopAsWithout) {
  options_.stage_op = "stage";
  RecordingHook a("a", &log_);
  a.stop_after_step = 2;
  LoopEnd end = Run(0, 10, {&a});
  EXPECT_EQ(end.reason, LoopStop::kRequested);
  EXPECT_EQ(end.step, 2);
  EXPECT_EQ(session_.CallsWithTarget("stage").size(), 3u);  // batch 1, then beside steps 1 and 2

  std::atomic<int> steps{0};
  session_.SetHandler([&](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
    if (call.targets == std::vector<std::string>{"stage"}) return absl::OkStatus();
    if (++steps == 2) return absl::InternalError("kernel failed");
    out->push_back(Tensor::Scalar<float>(0.5f));
    return absl::OkStatus();
  });
  end = Run(0, 10, {});
  EXPECT_EQ(end.reason, LoopStop::kStepFailed);
  EXPECT_EQ(end.status.message(), "kernel failed");
  EXPECT_EQ(end.step, 1);
}

// The staging Run beside step k finds the input at its end: step k (whose
// batch was staged before) still counts and reaches every hook, then the loop
// ends as the input's end, as a step's own OutOfRange would end it.
TEST_F(TrainingLoopTest, AStagingRunAtTheInputsEndEndsTheLoopAfterTheStepBesideIt) {
  options_.stage_op = "stage";
  FailStagingRun(3, absl::OutOfRangeError("queue closed and empty"));
  RecordingHook a("a", &log_);
  LoopEnd end = Run(0, 10, {&a});
  EXPECT_EQ(end.reason, LoopStop::kInputEnded);
  EXPECT_TRUE(end.succeeded()) << end.status;
  EXPECT_EQ(end.step, 2);
  EXPECT_EQ(end.steps_run, 2);
  EXPECT_NE(std::find(log_.begin(), log_.end(), "a:AfterStep:2"), log_.end());
  EXPECT_EQ(log_[log_.size() - 2], "a:End:2");
}

TEST_F(TrainingLoopTest, AnInputThatEndsBeforeTheFirstBatchRunsNoStep) {
  options_.stage_op = "stage";
  FailStagingRun(1, absl::OutOfRangeError("queue closed and empty"));
  RecordingHook a("a", &log_);
  LoopEnd end = Run(4, 10, {&a});
  EXPECT_EQ(end.reason, LoopStop::kInputEnded);
  EXPECT_TRUE(end.succeeded()) << end.status;
  EXPECT_EQ(end.steps_run, 0);
  EXPECT_EQ(end.step, 4);
  EXPECT_EQ(session_.CallsWithTarget("train").size(), 0u);
  EXPECT_EQ(log_, (std::vector<std::string>{"a:Begin:4", "a:End:4", "a:Close:4"}));
}

// A staging Run's other failures fail the run after the step beside it, and
// say where they came from; an OutOfRange after the input failed is that
// failure, as for a step.
TEST_F(TrainingLoopTest, AFailedStagingRunFailsTheRunAfterTheStepBesideIt) {
  options_.stage_op = "stage";
  FailStagingRun(2, absl::ResourceExhaustedError("out of pinned memory"));
  RecordingHook a("a", &log_);
  LoopEnd end = Run(0, 10, {&a});
  EXPECT_EQ(end.reason, LoopStop::kStepFailed);
  EXPECT_TRUE(absl::IsResourceExhausted(end.status)) << end.status;
  EXPECT_EQ(end.status.message(), "staging the next batch: out of pinned memory");
  EXPECT_EQ(end.step, 1);
  EXPECT_EQ(end.steps_run, 1);

  class FailedInput : public TrainingHook {
   public:
    absl::Status InputFailure() const override { return absl::InvalidArgumentError("bad record"); }
  };
  FailStagingRun(2, absl::OutOfRangeError("queue closed and empty"));
  FailedInput input;
  end = Run(0, 10, {&input});
  EXPECT_EQ(end.reason, LoopStop::kStepFailed);
  EXPECT_EQ(end.status.message(), "bad record");
  EXPECT_EQ(end.steps_run, 1);
}

TEST_F(TrainingLoopTest, AFailedStepSkipsEndButClosesEveryHook) {
  session_.SetHandler([&](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
    return absl::UnavailableError("device lost");
  });
  RecordingHook a("a", &log_);
  LoopEnd end = Run(7, 10, {&a});
  EXPECT_EQ(end.reason, LoopStop::kStepFailed);
  EXPECT_TRUE(absl::IsUnavailable(end.status));
  EXPECT_EQ(end.step, 7);  // the step before the failed one
  EXPECT_FALSE(end.ended);
  EXPECT_FALSE(end.succeeded());
  EXPECT_EQ(log_, (std::vector<std::string>{"a:Begin:7", "a:BeforeStep:8", "a:Close:7"}));
  EXPECT_FALSE(a.closed_with.ended);
}

// A step abandoned after a stop signal (a watchdog aborted it: it waited on a
// lost peer) ends the loop as preempted after the last completed step, with
// End (the final checkpoint) run for that step; the flag is set only during
// the step.
TEST_F(TrainingLoopTest, AStepAbandonedForAStopEndsAsPreemptedAfterTheLastCompletedStep) {
  std::atomic<bool> in_step{false};
  int runs = 0;
  bool in_step_seen = false;
  session_.SetHandler([&](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
    in_step_seen = in_step.load();
    if (++runs == 3) return absl::CancelledError("abandoned after a stop signal");
    out->push_back(Tensor::Scalar<float>(0.25f));
    return absl::OkStatus();
  });
  options_.in_step = &in_step;
  options_.abandoned_for_stop = [] { return true; };
  RecordingHook a("a", &log_);
  LoopEnd end = Run(4, 10, {&a});
  EXPECT_TRUE(in_step_seen);
  EXPECT_FALSE(in_step.load());
  EXPECT_TRUE(end.preempted());
  EXPECT_TRUE(end.ended);
  EXPECT_TRUE(end.status.ok()) << end.status;
  EXPECT_EQ(end.step, 6);
  EXPECT_EQ(log_.back(), "a:Close:6");
  EXPECT_NE(std::find(log_.begin(), log_.end(), "a:End:6"), log_.end()) << absl::StrJoin(log_, " ");
  // Not abandoned: the same failure fails the run.
  runs = 0;
  log_.clear();
  options_.abandoned_for_stop = [] { return false; };
  end = Run(4, 10, {&a});
  EXPECT_EQ(end.reason, LoopStop::kStepFailed);
  EXPECT_TRUE(absl::IsCancelled(end.status));
}

TEST_F(TrainingLoopTest, ANonFiniteLossFailsTheRunNamingTheStep) {
  session_.SetValue("loss:0", Tensor::Scalar<float>(std::nanf("")));
  RecordingHook a("a", &log_);
  LoopEnd end = Run(0, 10, {&a});
  EXPECT_EQ(end.reason, LoopStop::kAfterStepFailed);
  EXPECT_TRUE(absl::IsInvalidArgument(end.status));
  EXPECT_TRUE(absl::StrContains(end.status.message(), "the loss is nan at step 1; lower the learning rate"))
      << end.status;
  EXPECT_TRUE(a.results.empty());
  EXPECT_EQ(log_.back(), "a:Close:1");
}

// A step that fails in a histogram summary of NaN (a gradient diverged before
// the loss did) says what to do, as a non-finite loss does.
TEST_F(TrainingLoopTest, ANonFiniteHistogramSaysTheTrainingDiverged) {
  session_.SetHandler([](const FakeSession::Call&, std::vector<Tensor>*, RunMetadata*) {
    return absl::InvalidArgumentError("node 'summaries/histogram/fc1/bias/gradient' (op HistogramSummary): Nan in "
                                      "summary histogram for: fc1/bias/gradient");
  });
  RecordingHook a("a", &log_);
  LoopEnd end = Run(3, 10, {&a});
  EXPECT_EQ(end.reason, LoopStop::kStepFailed);
  EXPECT_TRUE(absl::IsInvalidArgument(end.status));
  EXPECT_TRUE(absl::StrContains(end.status.message(), "Nan in summary histogram for: fc1/bias/gradient; the training "
                                                      "diverged: lower the learning rate or clip gradients"))
      << end.status;
}

TEST_F(TrainingLoopTest, AFailedAfterStepStopsTheLoopBeforeTheLaterHooks) {
  RecordingHook a("a", &log_), b("b", &log_);
  a.fail_after_step = 2;
  LoopEnd end = Run(0, 10, {&a, &b});
  EXPECT_EQ(end.reason, LoopStop::kAfterStepFailed);
  EXPECT_EQ(end.status.message(), "hook failed");
  EXPECT_EQ(end.step, 2);
  EXPECT_EQ(b.results.size(), 1u);
  EXPECT_FALSE(end.ended);
}

TEST_F(TrainingLoopTest, AFailedBeginClosesOnlyTheHooksThatBegan) {
  RecordingHook a("a", &log_), b("b", &log_), c("c", &log_);
  b.begin_status = absl::UnavailableError("port in use");
  LoopEnd end = Run(0, 10, {&a, &b, &c});
  EXPECT_EQ(end.reason, LoopStop::kBeginFailed);
  EXPECT_EQ(end.status.message(), "port in use");
  EXPECT_EQ(log_, (std::vector<std::string>{"a:Begin:0", "b:Begin:0", "a:Close:0"}));
  EXPECT_TRUE(session_.calls().empty());
}

TEST_F(TrainingLoopTest, EndFailuresBecomeTheStatusAndTheLaterEndsStillRun) {
  RecordingHook a("a", &log_), b("b", &log_), c("c", &log_);
  a.end_status = absl::UnavailableError("disk full");
  b.end_status = absl::InvalidArgumentError("bad eval");
  LoopEnd end = Run(0, 1, {&a, &b, &c});
  EXPECT_EQ(end.reason, LoopStop::kLastStep);
  EXPECT_TRUE(b.status_seen_at_end.message() == "disk full");
  EXPECT_EQ(c.status_seen_at_end.message(), "bad eval");  // the last failure wins
  EXPECT_EQ(end.status.message(), "bad eval");
  EXPECT_FALSE(end.succeeded());
  EXPECT_FALSE(c.closed_with.succeeded());
}

TEST_F(TrainingLoopTest, NothingRunsWhenTheStartIsTheLastStep) {
  RecordingHook a("a", &log_);
  LoopEnd end = Run(5, 5, {&a});
  EXPECT_EQ(end.reason, LoopStop::kLastStep);
  EXPECT_EQ(end.steps_run, 0);
  EXPECT_TRUE(session_.calls().empty());
  EXPECT_EQ(log_, (std::vector<std::string>{"a:Begin:5", "a:End:5", "a:Close:5"}));
}

}  // namespace
}  // namespace training
}  // namespace sluice
