// CheckpointHook with a real Saver on a FakeSession (which answers the Saver's snapshot
// fetches): periodic saves at the Saver's cadence, the final save and its report, what
// listeners hear, and failed saves (a warning while training, an error at the end).
#include "models/training/checkpoint_hook.h"

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "checkpoint/store_format.h"
#include "engine/platform/env.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"
#include "models/training/fake_session.h"
#include "models/training/training_loop.h"

namespace sluice {
namespace training {
namespace {

bool IsDir(const std::string& path) { return Env::Default()->IsDirectory(path); }

class RecordingListener : public CheckpointListener {
 public:
  void BeforeSave(int64_t step, bool final) override { events.push_back(absl::StrCat("before ", step, final ? " final" : "")); }
  void AfterFinalSave(int64_t step) override { events.push_back(absl::StrCat("after ", step)); }
  void AfterCommit(int64_t step, double seconds, absl::Time finished) override {
    events.push_back(absl::StrCat("commit ", step, seconds >= 0 && finished > absl::UnixEpoch() ? "" : " (bad time)"));
  }
  std::vector<std::string> events;
};

class CheckpointHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    checkpoint::SaverOptions so;
    so.run_dir = run_dir_;
    so.every_steps = 2;
    so.retention.keep = 10;
    so.background = false;
    checkpoint::SaveableVariable w;
    w.node = "w";
    auto saver = checkpoint::Saver::Create(so, {w});
    ASSERT_TRUE(saver.ok()) << saver.status();
    saver_ = std::move(saver).value();
    ASSERT_TRUE(saver_->Extend(&session_).ok());
    // The Saver snapshots the variable through its snapshot node (the only fetch of a save).
    session_.SetHandler([this](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata*) {
      for (const std::string& f : call.fetches) {
        if (f == "loss") {
          out->push_back(Tensor::Scalar<float>(0.5f));
        } else {
          if (snapshots_to_fail_ > 0) {
            --snapshots_to_fail_;
            return absl::UnavailableError("snapshot lost");
          }
          Tensor t(DT_FLOAT, TensorShape({2}));
          t.flat<float>()(0) = 1;
          t.flat<float>()(1) = 2;
          out->push_back(t);
        }
      }
      return absl::OkStatus();
    });
  }
  LoopEnd RunSteps(int64_t step, int64_t last_step, TrainingHook* hook) {
    TrainingLoopOptions options;
    options.loss = "loss";
    options.train_op = "train";
    LoopStart start;
    start.step = step;
    start.last_step = last_step;
    return RunTrainingLoop(&session_, options, start, {hook});
  }
  std::string Ckpt(int64_t step) const {
    return absl::StrCat(run_dir_, "/checkpoints/", checkpoint::CheckpointDirName(step));
  }

  FakeSession session_;
  std::string run_dir_;
  std::unique_ptr<checkpoint::Saver> saver_;
  int snapshots_to_fail_ = 0;  // the next this many snapshots fail
  std::ostringstream out_, err_;
};

TEST_F(CheckpointHookTest, SavesAtTheSaversCadenceAndAtTheEnd) {
  RecordingListener listener;
  CheckpointHook hook(saver_.get(), {&listener}, &out_, &err_);
  LoopEnd end = RunSteps(0, 5, &hook);
  EXPECT_TRUE(end.succeeded()) << end.status;
  EXPECT_TRUE(IsDir(Ckpt(2)));
  EXPECT_TRUE(IsDir(Ckpt(4)));
  EXPECT_TRUE(IsDir(Ckpt(5)));
  EXPECT_FALSE(IsDir(Ckpt(3)));
  EXPECT_EQ(listener.events, (std::vector<std::string>{"before 2", "commit 2", "before 4", "commit 4", "before 5 final",
                                                       "commit 5", "after 5"}));
  EXPECT_EQ(out_.str(), absl::StrCat("saved ", Ckpt(5), "\n"));
  EXPECT_EQ(err_.str(), "");
}

// No step ran and the run has no checkpoint: nothing is saved, and the
// report says so (it once printed "saved " and an empty path).
TEST_F(CheckpointHookTest, NoStepNoNewCheckpointAndTheReportSaysSo) {
  RecordingListener listener;
  CheckpointHook hook(saver_.get(), {&listener}, &out_, &err_);
  LoopEnd end = RunSteps(3, 3, &hook);
  EXPECT_TRUE(end.succeeded());
  EXPECT_FALSE(IsDir(Ckpt(3)));
  EXPECT_EQ(out_.str(), "no checkpoint saved: no step ran\n");
  EXPECT_EQ(listener.events, (std::vector<std::string>{"before 3 final", "after 3"}));
}

// A finished run run again: no step, no new save, and the report names the
// checkpoint that stands instead of claiming a save.
TEST_F(CheckpointHookTest, AFinishedRunAgainSavesNothingAndNamesItsCheckpoint) {
  CheckpointHook hook(saver_.get(), {}, &out_, &err_);
  ASSERT_TRUE(RunSteps(0, 2, &hook).succeeded());
  out_.str("");
  LoopEnd again = RunSteps(2, 2, &hook);
  EXPECT_TRUE(again.succeeded());
  EXPECT_EQ(out_.str(), absl::StrCat("no step ran: the newest checkpoint is ", Ckpt(2), "\n"));
}

TEST_F(CheckpointHookTest, APeriodicFailureIsAWarningAndTheFinalOneFailsTheRun) {
  snapshots_to_fail_ = 1000;
  RecordingListener listener;
  CheckpointHook hook(saver_.get(), {&listener}, &out_, &err_);
  LoopEnd end = RunSteps(0, 3, &hook);
  EXPECT_EQ(end.steps_run, 3);  // training went on after the failed save at step 2
  EXPECT_TRUE(absl::StrContains(err_.str(), "warning: the checkpoint of step 2 was not written: snapshot lost\n"))
      << err_.str();
  EXPECT_TRUE(absl::StrContains(err_.str(), "error: final checkpoint: the checkpoint of step 3 was not written: snapshot lost\n"))
      << err_.str();
  EXPECT_TRUE(absl::IsUnavailable(end.status)) << end.status;
  EXPECT_FALSE(end.succeeded());
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(listener.events, (std::vector<std::string>{"before 2", "before 3 final"}));
}

// A periodic save that failed at the last step does not count as that step's
// checkpoint: the final save writes it, and the run succeeds.
TEST_F(CheckpointHookTest, APeriodicSaveThatFailedAtTheLastStepIsWrittenAgainAtTheEnd) {
  snapshots_to_fail_ = 1;  // the save at step 2
  CheckpointHook hook(saver_.get(), {}, &out_, &err_);
  LoopEnd end = RunSteps(0, 2, &hook);
  EXPECT_TRUE(end.succeeded()) << end.status;
  EXPECT_EQ(err_.str(), "warning: the checkpoint of step 2 was not written: snapshot lost\n");
  EXPECT_TRUE(IsDir(Ckpt(2)));
  EXPECT_EQ(out_.str(), absl::StrCat("saved ", Ckpt(2), "\n"));
}

TEST_F(CheckpointHookTest, APreemptedRunStillSavesItsLastStep) {
  CheckpointHook hook(saver_.get(), {}, &out_, &err_);
  class Preempt : public TrainingHook {
    void BeforeStep(const StepInfo& step, StepArgs*, LoopControl* control) override {
      if (step.step == 4) control->RequestStop(StopKind::kPreempt);
    }
  } preempt;
  TrainingLoopOptions options;
  options.loss = "loss";
  options.train_op = "train";
  LoopStart start;
  start.last_step = 100;
  LoopEnd end = RunTrainingLoop(&session_, options, start, {&preempt, &hook});
  EXPECT_TRUE(end.preempted());
  EXPECT_TRUE(IsDir(Ckpt(3)));
  EXPECT_EQ(out_.str(), absl::StrCat("saved ", Ckpt(3), "\n"));
}

}  // namespace
}  // namespace training
}  // namespace sluice
