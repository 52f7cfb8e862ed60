// TraceHook on a FakeSession that returns step stats when asked: which steps ask for them,
// the Chrome trace files it writes, its end report and its warnings; and --trace_steps parsing.
#include "models/training/trace_hook.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "engine/platform/env.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"
#include "models/training/fake_session.h"
#include "models/training/training_loop.h"

namespace sluice {
namespace training {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) { return Env::Default()->FileExists(path).ok(); }

class TraceHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    session_.SetHandler([](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata* metadata) {
      out->push_back(Tensor::Scalar<float>(1.0f));
      if (call.options.collect_step_stats) {
        metadata->step_stats.push_back({"layer/MatMul", "MatMul", 0, 0, 1000, 51000, 7});
        metadata->executed_graph_nodes = 12;
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
  TraceHookOptions Options(int64_t first, int64_t last) {
    TraceHookOptions o;
    o.steps.first = first;
    o.steps.last = last;
    o.run_dir = run_dir_;
    o.device = "/job:worker/replica:0/task:0/device:CPU:0";
    return o;
  }

  FakeSession session_;
  std::string run_dir_;
  std::ostringstream out_, err_;
};

TEST_F(TraceHookTest, TracesTheStepsOfTheRangeAsChromeTraceJson) {
  TraceHook hook(Options(2, 3), &out_, &err_);
  LoopEnd end = RunSteps(0, 5, &hook);
  EXPECT_TRUE(end.succeeded());
  std::vector<FakeSession::Call> steps = session_.CallsWithTarget("train");
  ASSERT_EQ(steps.size(), 5u);
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].options.collect_step_stats, i == 1 || i == 2) << i;
  EXPECT_FALSE(Exists(run_dir_ + "/traces/step_1.json"));
  EXPECT_FALSE(Exists(run_dir_ + "/traces/step_4.json"));
  for (int step : {2, 3}) {
    const std::string json = ReadFile(absl::StrCat(run_dir_, "/traces/step_", step, ".json"));
    google::protobuf::Struct parsed;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
    EXPECT_TRUE(absl::StrContains(json, "layer/MatMul")) << json;
    EXPECT_TRUE(absl::StrContains(json, absl::StrCat("\"step\":\"", step, "\""))) << json;
    EXPECT_TRUE(absl::StrContains(json, "\"executed_graph_nodes\":\"12\"")) << json;
  }
  EXPECT_EQ(hook.traces_written(), 2);
  EXPECT_EQ(out_.str(), absl::StrCat("traces: 2 step(s) in ", run_dir_, "/traces\n"));
  EXPECT_EQ(err_.str(), "");
}

TEST_F(TraceHookTest, WarnsWhenTheRunResumesAfterTheRange) {
  TraceHook hook(Options(2, 3), &out_, &err_);
  RunSteps(10, 12, &hook);
  EXPECT_EQ(err_.str(), "warning: --trace_steps=2-3: the run resumes after step 10, so no step is traced\n");
  for (const auto& call : session_.CallsWithTarget("train")) EXPECT_FALSE(call.options.collect_step_stats);
  EXPECT_EQ(out_.str(), "");
}

TEST_F(TraceHookTest, AnEmptyRangeDoesNothing) {
  TraceHook hook(TraceHookOptions{StepRange(), run_dir_, "cpu"}, &out_, &err_);
  RunSteps(0, 3, &hook);
  EXPECT_FALSE(Exists(run_dir_ + "/traces"));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(TraceHookTest, AnUnwritableTraceIsOneWarningAndTracingStops) {
  // A directory where the trace's temporary file would go makes the write fail.
  ASSERT_TRUE(Env::Default()->CreateDirs(run_dir_ + "/traces/step_1.json.tmp").ok());
  TraceHook hook(Options(1, 3), &out_, &err_);
  LoopEnd end = RunSteps(0, 3, &hook);
  EXPECT_TRUE(end.succeeded());
  // One warning: the path, the reason (the .tmp file is a directory), and that tracing stops.
  const std::string warning = err_.str();
  EXPECT_TRUE(absl::StartsWith(warning, absl::StrCat("warning: cannot write the trace ", run_dir_,
                                                     "/traces/step_1.json (")))
      << warning;
  EXPECT_NE(warning.find("step_1.json.tmp"), std::string::npos) << warning;
  EXPECT_TRUE(absl::EndsWith(warning, "); tracing is off\n")) << warning;
  EXPECT_EQ(warning.find("warning", 5), std::string::npos) << "more than one warning: " << warning;
  std::vector<FakeSession::Call> steps = session_.CallsWithTarget("train");
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_FALSE(steps[1].options.collect_step_stats);
  EXPECT_EQ(hook.traces_written(), 0);
}

TEST(ParseStepRangeTest, AcceptsRangesAndSingleSteps) {
  auto r = ParseStepRange("10-12");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, 10);
  EXPECT_EQ(r->last, 12);
  EXPECT_TRUE(r->Contains(11));
  EXPECT_FALSE(r->Contains(13));
  r = ParseStepRange("7");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, 7);
  EXPECT_EQ(r->last, 7);
  EXPECT_TRUE(StepRange().empty());
}

TEST(ParseStepRangeTest, RejectsBadRangesWithTheExpectedForm) {
  for (const char* bad : {"", "a-b", "5-3", "0-2", "-1", "1-2-3", "1-", "+1-2", "1.5"}) {
    auto r = ParseStepRange(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << bad;
    EXPECT_TRUE(absl::StrContains(r.status().message(), "expected A-B")) << r.status();
  }
}

}  // namespace
}  // namespace training
}  // namespace sluice
