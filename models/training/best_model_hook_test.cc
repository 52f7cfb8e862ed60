// BestModelHook with the EvalHook, the CheckpointHook and a real Saver on a FakeSession whose
// evaluations give scripted values: the best checkpoint follows the improvements (by more than
// min_delta), patience stops the run as a finished one, and a rerun of a run that stopped
// early stops again before its first step unless its patience was raised.
#include "models/training/best_model_hook.h"

#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "checkpoint/checkpoint_state.h"
#include "engine/platform/env.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"
#include "models/training/checkpoint_hook.h"
#include "models/training/eval_hook.h"
#include "models/training/fake_session.h"
#include "models/training/training_loop.h"

namespace sluice {
namespace training {
namespace {

class BestModelHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    session_.SetHandler([this](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
      for (const std::string& t : call.targets) step_ += t == "train" ? 1 : 0;
      for (const std::string& f : call.fetches) {
        if (f == "loss" || f == "eval_loss") {
          out->push_back(Tensor::Scalar<float>(0.5f));
        } else if (f == "eval_accuracy") {
          auto it = accuracy_at_.find(step_);
          out->push_back(Tensor::Scalar<float>(it == accuracy_at_.end() ? 0.f : it->second));
        } else {  // the Saver's snapshot of w
          out->push_back(Tensor::Scalar<float>(static_cast<float>(step_)));
        }
      }
      return absl::OkStatus();
    });
  }

  struct Run {
    LoopEnd end;
    std::string out;
    std::string err;
  };
  // Trains from `start_step` (resumed when > 0) to `last_step`, evaluating every 2 steps and
  // checkpointing every 4, with the given patience and min_delta.
  Run Train(int64_t start_step, int64_t last_step, int patience, double min_delta, bool with_saver = true) {
    step_ = start_step;
    std::unique_ptr<checkpoint::Saver> saver;
    if (with_saver) {
      checkpoint::SaverOptions so;
      so.run_dir = run_dir_;
      so.every_steps = 4;
      so.retention.keep = 1;
      so.background = false;
      so.records_best = true;
      checkpoint::SaveableVariable w;
      w.node = "w";
      auto created = checkpoint::Saver::Create(so, {w});
      EXPECT_TRUE(created.ok()) << created.status();
      saver = std::move(created).value();
      EXPECT_TRUE(saver->Extend(&session_).ok());
    }
    std::ostringstream out, err;
    BestModelHookOptions bo;
    bo.metric = "accuracy";
    bo.higher_is_better = true;
    bo.min_delta = min_delta;
    bo.patience = patience;
    bo.results_file = run_dir_ + "/eval.txt";
    bo.run_dir = run_dir_;
    BestModelHook best(bo, saver.get(), &out, &err);
    EvalHookOptions eo;
    eo.loss = "eval_loss";
    eo.metrics = {{"accuracy", "eval_accuracy"}};
    eo.every_steps = 2;
    eo.results_file = bo.results_file;
    EvalHook eval(eo, {&best}, &out, &err);
    std::unique_ptr<CheckpointHook> checkpoints;
    std::vector<TrainingHook*> hooks;
    if (saver != nullptr) {
      checkpoints = std::make_unique<CheckpointHook>(saver.get(), std::vector<CheckpointListener*>{}, &out, &err);
      hooks.push_back(checkpoints.get());
    }
    hooks.push_back(&eval);
    hooks.push_back(&best);
    TrainingLoopOptions options;
    options.loss = "loss";
    options.train_op = "train";
    LoopStart start;
    start.step = start_step;
    start.last_step = last_step;
    start.resumed = start_step > 0;
    Run run;
    run.end = RunTrainingLoop(&session_, options, start, hooks);
    best_step_ = best.best_step();
    since_best_ = best.evaluations_since_best();
    run.out = out.str();
    run.err = err.str();
    return run;
  }

  checkpoint::CheckpointState State() const {
    auto state = checkpoint::ReadCheckpointState(Env::Default(), checkpoint::CheckpointsDir(run_dir_));
    EXPECT_TRUE(state.ok()) << state.status();
    return state.ok() ? *state : checkpoint::CheckpointState();
  }
  // The steps eval.txt holds a line for, in order.
  std::vector<std::string> EvaluatedSteps() const {
    auto text = ReadFileToString(Env::Default(), run_dir_ + "/eval.txt", 1 << 20);
    std::vector<std::string> steps;
    if (!text.ok()) return steps;
    for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
      steps.push_back(std::string(line.substr(13, line.find(':') - 13)));
    }
    return steps;
  }

  // A hook without a saver, begun at step 0 of 100, writing to out_ and err_.
  std::unique_ptr<BestModelHook> Begun(const BestModelHookOptions& options) {
    auto hook = std::make_unique<BestModelHook>(options, nullptr, &out_, &err_);
    LoopStart start;
    start.last_step = 100;
    EXPECT_TRUE(hook->Begin(&session_, start).ok());
    return hook;
  }

  std::string run_dir_;
  std::ostringstream out_, err_;
  FakeSession session_;
  int64_t step_ = 0;
  std::map<int64_t, float> accuracy_at_;
  int64_t best_step_ = -1;
  int since_best_ = 0;
};

TEST_F(BestModelHookTest, TheBestFollowsImprovementsAndPatienceStopsTheRun) {
  // Step 8 is better than step 4 by less than min_delta: not an improvement.
  accuracy_at_ = {{2, 0.5f}, {4, 0.7f}, {6, 0.69f}, {8, 0.71f}, {10, 0.9f}};
  Run run = Train(0, 20, /*patience=*/2, /*min_delta=*/0.02);
  EXPECT_TRUE(run.end.succeeded()) << run.end.status << run.err;
  EXPECT_EQ(run.end.reason, LoopStop::kRequested);
  EXPECT_EQ(run.end.step, 8);
  EXPECT_TRUE(absl::StrContains(run.out, "early stop at step 8: accuracy 0.7100 has not improved on 0.7000 (step 4) "
                                         "for 2 evaluations\n"))
      << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, absl::StrCat("best accuracy 0.7000 at step 4: ", run_dir_,
                                                      "/checkpoints/ckpt-4\n")))
      << run.out;
  EXPECT_EQ(run.err, "");
  // Step 2's checkpoint was written for its mark (no periodic save there); no longer the best,
  // it went with the save of step 8: keep: 1 leaves the latest (8) and the best (4).
  const checkpoint::CheckpointState state = State();
  EXPECT_EQ(state.best().dir(), "ckpt-4");
  EXPECT_EQ(state.best().metric(), "accuracy");
  EXPECT_FLOAT_EQ(state.best().value(), 0.7f);
  EXPECT_EQ(state.latest(), "ckpt-8");
  auto children = Env::Default()->GetChildren(checkpoint::CheckpointsDir(run_dir_));
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, (std::vector<std::string>{"checkpoint", "ckpt-4", "ckpt-8"}));
  // The final evaluation is the one at step 8, not run twice.
  EXPECT_EQ(EvaluatedSteps(), (std::vector<std::string>{"2", "4", "6", "8"}));

  // Run again: it stopped early, so it stops before its first step.
  Run again = Train(8, 20, 2, 0.02);
  EXPECT_TRUE(again.end.succeeded()) << again.end.status;
  EXPECT_EQ(again.end.steps_run, 0);
  EXPECT_TRUE(absl::StrContains(again.out, "the run stopped early at step 8: accuracy has not improved on 0.7000 "
                                           "(step 4) for 2 evaluations (patience 2;"))
      << again.out;
  EXPECT_EQ(EvaluatedSteps(), (std::vector<std::string>{"2", "4", "6", "8"}));

  // With more patience it trains on, and step 10 becomes the best.
  Run on = Train(8, 20, 3, 0.02);
  EXPECT_EQ(best_step_, 10);
  EXPECT_EQ(on.end.step, 16);  // 12, 14 and 16 are not better than 0.9 (accuracy 0 where unscripted)
  EXPECT_TRUE(absl::StrContains(on.out, "early stop at step 16: accuracy 0.0000 has not improved on 0.9000 (step 10) "
                                        "for 3 evaluations"))
      << on.out;
  EXPECT_EQ(State().best().dir(), "ckpt-10");
}

// The final evaluation (after the loop) is counted, but a run that reached its last step did
// not stop early and does not say so.
TEST_F(BestModelHookTest, TheFinalEvaluationStopsNothing) {
  accuracy_at_ = {{2, 0.5f}, {4, 0.7f}, {6, 0.6f}, {8, 0.6f}};
  Run run = Train(0, 8, /*patience=*/2, 0);
  EXPECT_EQ(run.end.reason, LoopStop::kLastStep);
  EXPECT_EQ(since_best_, 2);
  EXPECT_FALSE(absl::StrContains(run.out, "early stop")) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "best accuracy 0.7000 at step 4")) << run.out;
}

TEST_F(BestModelHookTest, ResumedRunsCountTheEvaluationsSinceTheBestFromTheResultsFile) {
  accuracy_at_ = {{2, 0.5f}, {4, 0.7f}, {6, 0.6f}, {8, 0.6f}};
  Run run = Train(0, 8, /*patience=*/0, 0);  // never stops early; ends at its last step
  EXPECT_EQ(run.end.reason, LoopStop::kLastStep);
  EXPECT_EQ(best_step_, 4);
  EXPECT_EQ(since_best_, 2);  // 6 and the final evaluation at 8
  // A longer run with patience 3 resumes with 2 evaluations counted (6 and 8), so the next
  // one without an improvement (10) stops it.
  Run longer = Train(8, 20, 3, 0);
  EXPECT_EQ(longer.end.step, 10) << longer.out;
  EXPECT_TRUE(absl::StrContains(longer.out, "for 3 evaluations")) << longer.out;
}

// A resume whose restored step's evaluation is missing from eval.txt runs it before its first
// step; when it improves, it lifts the stop that the evaluations counted in eval.txt called for.
TEST_F(BestModelHookTest, AResumedRunsMissedEvaluationIsJudgedBeforeTheStop) {
  accuracy_at_ = {{2, 0.5f}, {4, 0.4f}, {6, 0.45f}};
  Run run = Train(0, 6, /*patience=*/0, 0);
  ASSERT_EQ(run.end.step, 6);
  ASSERT_EQ(best_step_, 2);
  // The process ended before step 6's line reached eval.txt.
  const std::string results = run_dir_ + "/eval.txt";
  auto text = ReadFileToString(Env::Default(), results, 1 << 20);
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(absl::EndsWith(*text, " (1 examples)\n")) << *text;
  std::string cut = text->substr(0, text->rfind("eval at step 6:"));
  ASSERT_TRUE(WriteStringToFile(Env::Default(), results, cut).ok());
  // With patience 1, step 4 alone would stop the run; step 6, evaluated again, now improves.
  accuracy_at_[6] = 0.9f;
  Run resumed = Train(6, 20, /*patience=*/1, 0);
  EXPECT_FALSE(absl::StrContains(resumed.out, "the run stopped early")) << resumed.out;
  EXPECT_EQ(best_step_, 6);
  EXPECT_EQ(resumed.end.step, 8) << resumed.out;  // step 8 (accuracy 0) uses the patience up
  EXPECT_EQ(State().best().dir(), "ckpt-6");
}

TEST_F(BestModelHookTest, WithoutASaverTheRunStillStopsEarly) {
  accuracy_at_ = {{2, 0.5f}, {4, 0.4f}};
  Run run = Train(0, 20, /*patience=*/1, 0, /*with_saver=*/false);
  EXPECT_EQ(run.end.step, 4);
  EXPECT_TRUE(absl::StrContains(run.out, "best accuracy 0.5000 at step 2\n")) << run.out;
}

TEST_F(BestModelHookTest, AnEvaluationWithoutTheMetricFailsTheRun) {
  BestModelHookOptions bo;
  bo.metric = "top_5_accuracy";
  auto best = Begun(bo);
  best->OnEval(2, {{"loss", 1.0}, {"accuracy", 0.5}});
  LoopControl control;
  absl::Status s = best->AfterStep(StepInfo(), StepResult(), &control);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "has no value 'top_5_accuracy'")) << s;
}

TEST_F(BestModelHookTest, NoFiniteValueYetStopsWithItsOwnLine) {
  BestModelHookOptions bo;
  bo.patience = 1;
  auto best = Begun(bo);
  best->OnEval(1, {{"loss", INFINITY}});
  LoopControl control;
  ASSERT_TRUE(best->AfterStep(StepInfo(), StepResult(), &control).ok());
  EXPECT_TRUE(control.stop_requested());
  EXPECT_EQ(best->best_step(), -1);
  EXPECT_TRUE(absl::StrContains(out_.str(), "early stop at step 1: loss has had no finite value in 1 evaluation\n"))
      << out_.str();
}

// An evaluation at the best's own step again (a resume whose eval.txt lacks that line) is not
// judged: it is the best's value, not an evaluation without an improvement.
TEST_F(BestModelHookTest, TheBestsOwnStepEvaluatedAgainIsNotJudged) {
  BestModelHookOptions bo;
  bo.patience = 1;
  auto best = Begun(bo);
  best->OnEval(2, {{"loss", 1.0}});
  best->OnEval(2, {{"loss", 1.0}});
  EXPECT_EQ(best->evaluations_since_best(), 0);
  LoopControl control;
  ASSERT_TRUE(best->AfterStep(StepInfo(), StepResult(), &control).ok());
  EXPECT_FALSE(control.stop_requested());
}

TEST_F(BestModelHookTest, LowerIsBetterForTheLossAndNaNNeverImproves) {
  BestModelHookOptions bo;  // "loss", lower is better
  bo.patience = 2;
  auto best = Begun(bo);
  LoopControl control;
  for (auto [step, loss] : std::vector<std::pair<int64_t, double>>{{1, 2.0}, {2, 1.5}, {3, NAN}, {4, 1.6}}) {
    best->OnEval(step, {{"loss", loss}});
    ASSERT_TRUE(best->AfterStep(StepInfo(), StepResult(), &control).ok());
  }
  EXPECT_EQ(best->best_step(), 2);
  EXPECT_EQ(best->best_value(), 1.5);
  EXPECT_TRUE(control.stop_requested());
  EXPECT_TRUE(absl::StrContains(out_.str(), "early stop at step 4: loss 1.6000 has not improved on 1.5000 (step 2)"))
      << out_.str();
}

}  // namespace
}  // namespace training
}  // namespace sluice
