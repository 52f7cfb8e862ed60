// MetricsHook on a FakeSession with the metrics not served (read with Scrape): per-step
// counters and gauges, the queue size fetched with the step, kernel time only from steps with
// step stats, checkpoint timings (periodic: when its directory appears; final: exact), the
// run gauges of a completed run only; and pushgateway_url parsing.
#include "models/training/metrics_hook.h"


#include <cmath>
#include <thread>
#include <cstdlib>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/store_format.h"
#include "engine/platform/env.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"
#include "models/training/fake_session.h"
#include "models/training/training_loop.h"

namespace sluice {
namespace training {
namespace {

// The value of the first sample of `name` (any labels), or NaN.
double Sample(const std::string& text, const std::string& name) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, name + "{") && !absl::StartsWith(line, name + " ")) continue;
    double v;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) return v;
  }
  return std::nan("");
}

class MetricsHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    options_.metrics.serve = false;
    options_.metrics.version = "test";
    options_.queue_size = "queue/size";
    options_.queue_capacity = 1000;
    session_.SetValue("loss", Tensor::Scalar<float>(0.75f));
    session_.SetValue("queue/size", Tensor::Scalar<int32_t>(640));
  }
  LoopEnd RunSteps(int64_t last_step, std::vector<TrainingHook*> hooks) {
    TrainingLoopOptions options;
    options.loss = "loss";
    options.train_op = "train";
    options.learning_rate_feed = "lr";
    options.learning_rate = [](int64_t) { return 0.01; };
    options.examples_per_step = 128;
    LoopStart start;
    start.last_step = last_step;
    return RunTrainingLoop(&session_, options, start, hooks);
  }
  std::unique_ptr<MetricsHook> NewHook() {
    auto hook = MetricsHook::Create(options_, &out_, &err_);
    EXPECT_TRUE(hook.ok()) << hook.status();
    return std::move(hook).value();
  }

  FakeSession session_;
  MetricsHookOptions options_;
  std::string run_dir_;
  std::ostringstream out_, err_;
};

TEST_F(MetricsHookTest, CountsStepsAndFetchesTheQueueSizeWithEachStep) {
  auto hook = NewHook();
  LoopEnd end = RunSteps(3, {hook.get()});
  EXPECT_TRUE(end.succeeded());
  for (const auto& call : session_.CallsWithTarget("train")) {
    EXPECT_EQ(call.fetches, (std::vector<std::string>{"loss", "queue/size"}));
    EXPECT_FALSE(call.options.collect_step_stats);
  }
  const std::string text = hook->metrics()->Scrape();
  EXPECT_EQ(Sample(text, "sluice_train_steps_total"), 3) << text;
  EXPECT_EQ(Sample(text, "sluice_train_examples_total"), 384) << text;
  EXPECT_EQ(Sample(text, "sluice_loss"), 0.75) << text;
  EXPECT_DOUBLE_EQ(Sample(text, "sluice_learning_rate"), 0.01) << text;
  EXPECT_EQ(Sample(text, "sluice_global_step"), 3) << text;
  EXPECT_EQ(Sample(text, "sluice_last_step"), 3) << text;
  EXPECT_EQ(Sample(text, "sluice_input_queue_size"), 640) << text;
  EXPECT_EQ(Sample(text, "sluice_input_queue_capacity"), 1000) << text;
  EXPECT_FALSE(absl::StrContains(text, "sluice_kernel_seconds_total{")) << "no step was traced";
  // The completed run's gauges.
  EXPECT_GT(Sample(text, "sluice_run_last_success_timestamp_seconds"), 1.6e9) << text;
  EXPECT_EQ(out_.str(), "");  // not served, not pushed
}

TEST_F(MetricsHookTest, KernelTimeComesFromStepsWithStepStats) {
  class AskForStats : public TrainingHook {
    void BeforeStep(const StepInfo& step, StepArgs* args, LoopControl*) override {
      args->collect_step_stats = step.step == 2;
    }
  } ask;
  session_.SetHandler([](const FakeSession::Call& call, std::vector<Tensor>* out, RunMetadata* metadata) {
    out->push_back(Tensor::Scalar<float>(0.5f));
    out->push_back(Tensor::Scalar<int32_t>(1));
    if (call.options.collect_step_stats) metadata->step_stats.push_back({"mm", "MatMul", 0, 0, 0, 2000000000, 1});
    return absl::OkStatus();
  });
  auto hook = NewHook();
  RunSteps(3, {&ask, hook.get()});
  const std::string text = hook->metrics()->Scrape();
  EXPECT_DOUBLE_EQ(Sample(text, "sluice_kernel_seconds_total"), 2.0) << text;
}

// Each committed save is timed as the saver timed it (a periodic one reports
// on the writer's thread): an evaluation at the checkpoint's step, which once
// counted as save time, does not; a save that failed never commits.
TEST_F(MetricsHookTest, EachCommittedSaveIsTimedAsTheSaverTimedIt) {
  auto hook = NewHook();
  ASSERT_TRUE(hook->Begin(&session_, LoopStart()).ok());
  auto sample = [&](const char* name) { return Sample(hook->metrics()->Scrape(), name); };
  EXPECT_EQ(sample("sluice_checkpoint_save_duration_seconds_count"), 0);
  EXPECT_TRUE(std::isnan(sample("sluice_checkpoint_last_success_timestamp_seconds")));
  std::thread writer([&] { hook->AfterCommit(500, 0.25, absl::FromUnixSeconds(1700000000)); });
  writer.join();
  EXPECT_EQ(sample("sluice_checkpoint_save_duration_seconds_count"), 1);
  EXPECT_DOUBLE_EQ(sample("sluice_checkpoint_save_duration_seconds_sum"), 0.25);
  EXPECT_EQ(sample("sluice_checkpoint_last_success_timestamp_seconds"), 1700000000);
  hook->AfterCommit(1000, 0.5, absl::FromUnixSeconds(1700000100));
  EXPECT_EQ(sample("sluice_checkpoint_save_duration_seconds_count"), 2);
  EXPECT_DOUBLE_EQ(sample("sluice_checkpoint_save_duration_seconds_sum"), 0.75);
  EXPECT_EQ(sample("sluice_checkpoint_last_success_timestamp_seconds"), 1700000100);
}

TEST_F(MetricsHookTest, APreemptedRunSetsNoRunGauges) {
  auto hook = NewHook();
  class Preempt : public TrainingHook {
    void BeforeStep(const StepInfo& step, StepArgs*, LoopControl* control) override {
      if (step.step == 2) control->RequestStop(StopKind::kPreempt);
    }
  } preempt;
  LoopEnd end = RunSteps(10, {hook.get(), &preempt});
  EXPECT_TRUE(end.preempted());
  const std::string text = hook->metrics()->Scrape();
  EXPECT_EQ(Sample(text, "sluice_train_steps_total"), 1) << text;
  EXPECT_TRUE(std::isnan(Sample(text, "sluice_run_last_success_timestamp_seconds"))) << text;
}

TEST_F(MetricsHookTest, ServesOnAPortAndSaysWhere) {
  options_.metrics.serve = true;
  options_.metrics.port = 0;
  options_.metrics.bind_address = "127.0.0.1";
  auto hook = NewHook();
  LoopStart start;
  ASSERT_TRUE(hook->Begin(&session_, start).ok());
  EXPECT_GT(hook->port(), 0);
  EXPECT_EQ(out_.str(), absl::StrCat("metrics: http://127.0.0.1:", hook->port(), "/metrics\n"));
}

TEST_F(MetricsHookTest, AnUnreachablePushgatewayIsAWarning) {
  options_.pushgateway_url = "http://127.0.0.1:1";
  auto hook = NewHook();
  LoopEnd end = RunSteps(1, {hook.get()});
  EXPECT_TRUE(end.succeeded());
  EXPECT_TRUE(absl::StartsWith(err_.str(), "warning: pushing metrics to http://127.0.0.1:1: ")) << err_.str();
}

TEST_F(MetricsHookTest, ABadPushgatewayUrlIsRejectedByCreate) {
  options_.pushgateway_url = "http://gw:80/metrics";
  auto hook = MetricsHook::Create(options_, &out_, &err_);
  ASSERT_FALSE(hook.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(hook.status()));
  EXPECT_TRUE(absl::StartsWith(hook.status().message(), "pushgateway_url 'http://gw:80/metrics' has a path"))
      << hook.status();
}

TEST(ParsePushgatewayUrlTest, SplitsHostAndPort) {
  auto u = ParsePushgatewayUrl("http://127.0.0.1:9091");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->first, "http://127.0.0.1");
  EXPECT_EQ(u->second, "9091");
  u = ParsePushgatewayUrl("gateway.example:1234/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->first, "http://gateway.example");
  EXPECT_EQ(u->second, "1234");
  u = ParsePushgatewayUrl("https://gw");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->first, "https://gw");
  EXPECT_EQ(u->second, "9091");
  for (const char* bad : {"ftp://gw:1", "http://gw:0", "http://gw:99999", "http://gw:x", "http://:80",
                          "http://gw:80/metrics"}) {
    EXPECT_FALSE(ParsePushgatewayUrl(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace training
}  // namespace sluice
