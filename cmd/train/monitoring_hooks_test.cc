// TrainMonitor's pure parts: --trace_steps and pushgateway_url parsing, and Create's checks of
// the summaries config against the real training graph of configs/fashion_mlp.pbtxt (which
// summary nodes it adds, and the errors for patterns that match nothing or a missing image
// feature). Whole runs are tested in tests/ (train_event_file_test and friends).
#include "cmd/train/monitoring_hooks.h"

#include <cstdlib>
#include <set>

#include "absl/strings/match.h"
#include "configs/load.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

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

class TrainMonitorCreateTest : public ::testing::Test {
 protected:
  // The MLP's training graph with `overrides` applied; false (and a failure) if it does not build.
  bool Build(const std::vector<std::string>& overrides) {
    const std::string path = std::string(std::getenv("TEST_SRCDIR")) + "/sluice/configs/fashion_mlp.pbtxt";
    auto loaded = config::LoadExperimentFile(path);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded.ok()) return false;
    loaded_ = std::move(loaded).value();
    EXPECT_TRUE(config::ApplyOverrides(overrides, &loaded_->experiment).ok());
    config::ApplyDefaults(&loaded_->experiment);
    config::ConfigErrors errors(path);
    absl::Status s = models::BuildTrainingGraph(*loaded_, &tg_, &errors);
    EXPECT_TRUE(s.ok() && errors.empty()) << s;
    return s.ok() && errors.empty();
  }
  std::unique_ptr<config::LoadedExperiment> loaded_;
  models::TrainingGraph tg_;
};

TEST_F(TrainMonitorCreateTest, AddsHistogramsOfMatchingVariablesAndTheirGradients) {
  ASSERT_TRUE(Build({"summaries.input_images=2"}));  // the config asks for fc1/*
  auto m = TrainMonitor::Create({}, loaded_->experiment, tg_);
  ASSERT_TRUE(m.ok()) << m.status();
  std::set<std::string> tags;
  std::string merged_op;
  for (const NodeDef& n : (*m)->summary_graph().node()) {
    if (n.op() == "HistogramSummary" || n.op() == "ImageSummary") tags.insert(n.name());
    if (n.name() == "summaries/merged") merged_op = n.op();
  }
  EXPECT_EQ(tags, (std::set<std::string>{"summaries/histogram/fc1/kernel", "summaries/histogram/fc1/kernel/gradient",
                                          "summaries/histogram/fc1/bias", "summaries/histogram/fc1/bias/gradient",
                                          "summaries/input_images"}));
  EXPECT_EQ(merged_op, "MergeSummary");
}

TEST_F(TrainMonitorCreateTest, NoSummaryNodesWhenSummariesAreOff) {
  ASSERT_TRUE(Build({"summaries.every_steps=0", "monitoring.metrics_port=-1"}));
  auto m = TrainMonitor::Create({}, loaded_->experiment, tg_);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->summary_graph().node_size(), 0);
}

// Issue 22, class 13: /metrics bound every interface unless the experiment
// said otherwise; now loopback unless monitoring.metrics_address names one.
TEST_F(TrainMonitorCreateTest, MetricsBindLoopbackUnlessTheExperimentNamesAnAddress) {
  ASSERT_TRUE(Build({}));
  ASSERT_TRUE(loaded_->experiment.monitoring().metrics_address().empty());
  auto m = TrainMonitor::Create({}, loaded_->experiment, tg_);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->metrics_bind_address(), "127.0.0.1");
  loaded_->experiment.mutable_monitoring()->set_metrics_address("0.0.0.0");
  m = TrainMonitor::Create({}, loaded_->experiment, tg_);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->metrics_bind_address(), "0.0.0.0");
}

TEST_F(TrainMonitorCreateTest, PatternMatchingNothingIsAConfigErrorListingVariables) {
  ASSERT_TRUE(Build({}));
  loaded_->experiment.mutable_summaries()->add_histograms("fc9/*");  // beside the config's fc1/*
  auto m = TrainMonitor::Create({}, loaded_->experiment, tg_);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(m.status()));
  EXPECT_TRUE(absl::StrContains(m.status().message(), "summaries.histograms")) << m.status();
  EXPECT_TRUE(absl::StrContains(m.status().message(), "'fc9/*'")) << m.status();
  EXPECT_TRUE(absl::StrContains(m.status().message(), "fc1/kernel")) << m.status();
}

}  // namespace
}  // namespace sluice
