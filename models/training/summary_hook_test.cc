// SummaryHook: which summary nodes it builds for configs/fashion_mlp.pbtxt's real training
// graph and the config errors it finds; then, on a FakeSession, what the event file holds:
// the graph, session_log START after a resume, the scalars and merged summaries of summary
// steps only, and eval results.
#include "models/training/summary_hook.h"


#include <cstdlib>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "configs/load.h"
#include "engine/platform/env.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"
#include "models/training/fake_session.h"
#include "models/training/training_loop.h"
#include "monitoring/event_file_reader_testlib.h"

namespace sluice {
namespace training {
namespace {

class SummaryHookGraphTest : public ::testing::Test {
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
  SummaryHookOptions Options() const {
    const config::Summaries& s = loaded_->experiment.summaries();
    SummaryHookOptions o;
    o.every_steps = s.every_steps();
    o.histograms.assign(s.histograms().begin(), s.histograms().end());
    o.input_images = s.input_images();
    return o;
  }
  std::unique_ptr<config::LoadedExperiment> loaded_;
  models::TrainingGraph tg_;
};

TEST_F(SummaryHookGraphTest, AddsHistogramsOfMatchingVariablesAndTheirGradients) {
  ASSERT_TRUE(Build({"summaries.input_images=2"}));  // the config asks for fc1/*
  auto h = SummaryHook::Create(Options(), tg_, nullptr);
  ASSERT_TRUE(h.ok()) << h.status();
  std::set<std::string> tags;
  std::string merged_op;
  for (const NodeDef& n : (*h)->summary_graph().node()) {
    if (n.op() == "HistogramSummary" || n.op() == "ImageSummary") tags.insert(n.name());
    if (n.name() == "summaries/merged") merged_op = n.op();
  }
  EXPECT_EQ(tags, (std::set<std::string>{"summaries/histogram/fc1/kernel", "summaries/histogram/fc1/kernel/gradient",
                                          "summaries/histogram/fc1/bias", "summaries/histogram/fc1/bias/gradient",
                                          "summaries/input_images"}));
  EXPECT_EQ(merged_op, "MergeSummary");
}

TEST_F(SummaryHookGraphTest, NoSummaryNodesWhenSummariesAreOff) {
  ASSERT_TRUE(Build({"summaries.every_steps=0"}));
  auto h = SummaryHook::Create(Options(), tg_, nullptr);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ((*h)->summary_graph().node_size(), 0);
}

TEST_F(SummaryHookGraphTest, APatternMatchingNothingIsAnErrorListingTheVariables) {
  ASSERT_TRUE(Build({}));
  SummaryHookOptions o = Options();
  o.histograms.push_back("fc9/*");  // beside the config's fc1/*
  auto h = SummaryHook::Create(o, tg_, nullptr);
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(h.status()));
  EXPECT_TRUE(absl::StartsWith(h.status().message(), "histograms[1]: the pattern 'fc9/*' matches no trainable variable"))
      << h.status();
  EXPECT_TRUE(absl::StrContains(h.status().message(), "fc1/kernel")) << h.status();
}

// A part of a split table matches by its own name or the table's (the name
// checkpoints, `ckpt` and warm starts use); a whole variable by its name only.
TEST(HistogramPatternMatchesTest, APartMatchesByTheTablesNameToo) {
  models::VariableSummary part;
  part.name = "embed/embeddings/part_1";
  part.logical = "embed/embeddings";
  part.part = 1;
  part.num_parts = 2;
  EXPECT_TRUE(HistogramPatternMatches("embed/embeddings", part));
  EXPECT_TRUE(HistogramPatternMatches("embed/embeddings/part_1", part));
  EXPECT_TRUE(HistogramPatternMatches("embed/*", part));
  EXPECT_FALSE(HistogramPatternMatches("embed/embeddings/part_0", part));
  models::VariableSummary whole;
  whole.name = "fc1/kernel";
  EXPECT_TRUE(HistogramPatternMatches("fc1/*", whole));
  EXPECT_FALSE(HistogramPatternMatches("", whole));
}

TEST_F(SummaryHookGraphTest, ImagesNeedAnImageFeature) {
  ASSERT_TRUE(Build({}));
  tg_.train_input.features.erase("image");
  SummaryHookOptions o = Options();
  o.input_images = 1;
  auto h = SummaryHook::Create(o, tg_, nullptr);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().message(), "input_images: the training input has no feature named 'image'");
}

// A hand-made graph: one variable w with a gradient, a gradient norm and an accuracy metric.
class SummaryHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    tg_.graph.add_node()->set_name("w");
    tg_.graph.mutable_node(0)->set_op("VariableV2");
    tg_.variables.push_back({"w", TensorShape({2}), true});
    tg_.variables.push_back({"global_step", TensorShape({}), false});
    tg_.gradients.push_back({"w", "gradients/w"});
    tg_.global_norm = "global_norm";
    tg_.train_metrics = {{"accuracy", "accuracy"}};
    options_.run_dir = run_dir_;
    options_.every_steps = 2;
    options_.histograms = {"w"};
    session_.SetValue("loss", Tensor::Scalar<float>(0.5f));
    session_.SetValue("global_norm", Tensor::Scalar<float>(3.0f));
    session_.SetValue("accuracy", Tensor::Scalar<float>(0.875f));
    // What the merged summary op would return: one serialized Summary.
    Summary merged;
    Summary::Value* v = merged.add_value();
    v->set_tag("w");
    v->mutable_histo()->set_num(2);
    session_.SetValue("summaries/merged", Tensor::Scalar<tstring>(merged.SerializeAsString()));
  }
  LoopEnd RunSteps(int64_t step, int64_t last_step, bool resumed, std::vector<TrainingHook*> hooks) {
    TrainingLoopOptions options;
    options.loss = "loss";
    options.train_op = "train";
    options.learning_rate_feed = "lr";
    options.learning_rate = [](int64_t) { return 0.25; };
    options.examples_per_step = 10;
    LoopStart start;
    start.step = step;
    start.last_step = last_step;
    start.resumed = resumed;
    return RunTrainingLoop(&session_, options, start, hooks);
  }
  // (Public for the hooks the tests define.)
 public:
  std::vector<Event> Events(const std::string& path) {
    testing_events::DecodedFile f = testing_events::DecodeFile(path);
    EXPECT_EQ(f.error, "");
    return f.events;
  }

 protected:
  FakeSession session_;
  models::TrainingGraph tg_;
  SummaryHookOptions options_;
  std::string run_dir_;
  std::ostringstream err_;
};

TEST_F(SummaryHookTest, WritesTheGraphAndTheSummariesOfSummaryStepsOnly) {
  auto hook = SummaryHook::Create(options_, tg_, &err_);
  ASSERT_TRUE(hook.ok()) << hook.status();
  std::string path;
  class KeepPath : public TrainingHook {
   public:
    KeepPath(SummaryHook* h, std::string* p) : h_(h), p_(p) {}
    absl::Status Begin(Session*, const LoopStart&) override {
      *p_ = h_->event_file();
      return absl::OkStatus();
    }
    SummaryHook* h_;
    std::string* p_;
  } keep(hook->get(), &path);
  LoopEnd end = RunSteps(0, 5, false, {hook->get(), &keep});
  ASSERT_TRUE(end.succeeded());
  // The summary nodes went into the session.
  bool merged_in_session = false;
  const GraphDef in_session = session_.graph();
  for (const NodeDef& n : in_session.node()) merged_in_session |= n.name() == "summaries/merged";
  EXPECT_TRUE(merged_in_session);
  // Summary steps fetch the norm, the metrics and the merged summary; the others nothing more.
  std::vector<FakeSession::Call> steps = session_.CallsWithTarget("train");
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].fetches, std::vector<std::string>{"loss"});
  EXPECT_EQ(steps[1].fetches, (std::vector<std::string>{"loss", "global_norm", "accuracy", "summaries/merged"}));

  ASSERT_FALSE(path.empty());
  EXPECT_TRUE(absl::StrContains(path, "/events.out.tfevents.")) << path;
  std::vector<Event> events = Events(path);
  ASSERT_EQ(events.size(), 4u);  // version, graph, steps 2 and 4
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  GraphDef graph;
  ASSERT_TRUE(graph.ParseFromString(events[1].graph_def()));
  EXPECT_GT(graph.node_size(), 1);  // w and the summary nodes
  for (int i : {2, 3}) {
    EXPECT_EQ(events[i].step(), 2 * (i - 1));
    std::map<std::string, Summary::Value> values;
    for (const Summary::Value& v : events[i].summary().value()) values[v.tag()] = v;
    for (const char* tag : {"w", "train/loss", "train/learning_rate", "train/gradient_global_norm", "train/accuracy",
                            "train/examples_per_second"}) {
      ASSERT_TRUE(values.count(tag)) << tag << " missing at event " << i << ": " << events[i].DebugString();
    }
    EXPECT_EQ(values["w"].histo().num(), 2);
    EXPECT_FLOAT_EQ(values["train/loss"].simple_value(), 0.5f);
    EXPECT_FLOAT_EQ(values["train/learning_rate"].simple_value(), 0.25f);
    EXPECT_FLOAT_EQ(values["train/gradient_global_norm"].simple_value(), 3.0f);
    EXPECT_FLOAT_EQ(values["train/accuracy"].simple_value(), 0.875f);
    EXPECT_GT(values["train/examples_per_second"].simple_value(), 0);
  }
  EXPECT_EQ(err_.str(), "");
}

// A checkpoint's start flushes the event file: a crash after it loses no
// point up to the checkpoint's step, however long the flush interval.
TEST_F(SummaryHookTest, ACheckpointFlushesTheEventFile) {
  options_.flush_interval = absl::Hours(1);
  auto hook = SummaryHook::Create(options_, tg_, &err_);
  ASSERT_TRUE(hook.ok()) << hook.status();
  SummaryHook* summaries = hook->get();
  class SaveAtStep4 : public TrainingHook {
   public:
    SaveAtStep4(SummaryHook* s, SummaryHookTest* test) : s_(s), test_(test) {}
    absl::Status AfterStep(const StepInfo& step, const StepResult&, LoopControl*) override {
      if (step.step != 4) return absl::OkStatus();
      s_->BeforeSave(4, /*final=*/false);
      for (const Event& e : test_->Events(s_->event_file())) last_step_on_disk = std::max(last_step_on_disk, e.step());
      return absl::OkStatus();
    }
    int64_t last_step_on_disk = -1;
    SummaryHook* s_;
    SummaryHookTest* test_;
  } save(summaries, this);
  RunSteps(0, 6, false, {summaries, &save});
  EXPECT_EQ(save.last_step_on_disk, 4);
}

TEST_F(SummaryHookTest, AResumedRunStartsWithSessionLogStartAndEvalResultsAreScalars) {
  auto hook = SummaryHook::Create(options_, tg_, &err_);
  ASSERT_TRUE(hook.ok()) << hook.status();
  class Evaluate : public TrainingHook {
   public:
    explicit Evaluate(EvalListener* l) : l_(l) {}
    absl::Status End(Session*, const LoopEnd& end) override {
      l_->OnEval(end.step, {{"loss", 0.25}, {"accuracy", 0.5}});
      return absl::OkStatus();
    }
    EvalListener* l_;
  } evaluate(hook->get());
  RunSteps(7, 8, true, {hook->get(), &evaluate});
  auto children = Env::Default()->GetChildren(run_dir_);
  ASSERT_TRUE(children.ok()) << children.status();
  std::string file;
  for (const std::string& c : *children) {
    if (absl::StartsWith(c, "events.out.tfevents.")) file = JoinPath(run_dir_, c);
  }
  std::vector<Event> events = Events(file);
  ASSERT_EQ(events.size(), 5u);  // version, graph, START, step 8, eval
  EXPECT_EQ(events[2].session_log().status(), SessionLog::START);
  EXPECT_EQ(events[2].step(), 8);  // the first step this run writes: the earlier points up to 7 stand
  EXPECT_EQ(events[3].step(), 8);
  EXPECT_EQ(events[4].step(), 8);
  ASSERT_EQ(events[4].summary().value_size(), 2);
  EXPECT_EQ(events[4].summary().value(0).tag(), "eval/loss");
  EXPECT_FLOAT_EQ(events[4].summary().value(0).simple_value(), 0.25f);
  EXPECT_EQ(events[4].summary().value(1).tag(), "eval/accuracy");
}

TEST_F(SummaryHookTest, WhenOffNoFileAndNoExtraFetches) {
  options_.every_steps = 0;
  auto hook = SummaryHook::Create(options_, tg_, &err_);
  ASSERT_TRUE(hook.ok());
  RunSteps(0, 4, false, {hook->get()});
  for (const auto& call : session_.CallsWithTarget("train")) EXPECT_EQ(call.fetches.size(), 1u);
  EXPECT_EQ((*hook)->event_file(), "");
  EXPECT_EQ(session_.graph().node_size(), 0);
}

TEST_F(SummaryHookTest, AFailedExtendStopsTheRunBeforeAnyStep) {
  session_.SetExtendStatus(absl::InvalidArgumentError("no op HistogramSummary"));
  auto hook = SummaryHook::Create(options_, tg_, &err_);
  ASSERT_TRUE(hook.ok());
  LoopEnd end = RunSteps(0, 4, false, {hook->get()});
  EXPECT_EQ(end.reason, LoopStop::kBeginFailed);
  EXPECT_EQ(end.status.message(), "starting monitoring: adding the summary nodes: no op HistogramSummary");
  EXPECT_TRUE(session_.calls().empty());
}

}  // namespace
}  // namespace training
}  // namespace sluice
