// SummaryHook (see summary_hook.h).
#include "models/training/summary_hook.h"

#include <fnmatch.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/graph/graph_def_builder.h"

namespace sluice {
namespace training {
namespace {

constexpr char kScope[] = "summaries";

// The value of a numeric scalar, 0 for anything else.
double ScalarValue(const Tensor& t) {
  if (t.NumElements() != 1) return 0;
  switch (t.dtype()) {
    case DT_FLOAT: return t.scalar<float>();
    case DT_INT32: return t.scalar<int32_t>();
    case DT_INT64: return static_cast<double>(t.scalar<int64_t>());
    case DT_DOUBLE: return t.scalar<double>();
    default: return 0;
  }
}

bool Matches(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace

bool HistogramPatternMatches(const std::string& pattern, const models::VariableSummary& v) {
  return Matches(pattern, v.name) || (!v.logical.empty() && Matches(pattern, v.logical));
}

absl::StatusOr<std::unique_ptr<SummaryHook>> SummaryHook::Create(const SummaryHookOptions& options,
                                                                  const models::TrainingGraph& tg,
                                                                  std::ostream* err) {
  std::unique_ptr<SummaryHook> h(new SummaryHook());
  h->options_ = options;
  h->err_ = err;
  h->global_norm_ = tg.global_norm;
  h->train_metrics_ = tg.train_metrics;

  // Histograms: trainable variables matching a pattern, and their gradients.
  GraphDefBuilder b;
  std::vector<std::string> summaries;
  std::vector<const models::VariableSummary*> trainable;
  std::vector<std::string> names;
  for (const auto& v : tg.variables) {
    if (!v.trainable) continue;
    trainable.push_back(&v);
    names.push_back(v.name);
  }
  const std::vector<std::string>& patterns = options.histograms;
  for (size_t i = 0; i < patterns.size(); ++i) {
    bool any = false;
    for (const models::VariableSummary* v : trainable) any = any || HistogramPatternMatches(patterns[i], *v);
    if (!any) {
      return absl::InvalidArgumentError(absl::StrCat("histograms[", i, "]: the pattern '", patterns[i],
                                                     "' matches no trainable variable; variables: ",
                                                     absl::StrJoin(names, ", ")));
    }
  }
  auto add_histogram = [&](const std::string& tag, const std::string& tensor) {
    const std::string name = absl::StrCat(kScope, "/histogram/", tag);
    const std::string t = b.Const(name + "/tag", Tensor::Scalar<tstring>(tag));
    summaries.push_back(b.Node(name, "HistogramSummary", {t, tensor}, {{"T", MakeAttr(DT_FLOAT)}}));
  };
  if (options.every_steps > 0) {
    for (const models::VariableSummary* variable : trainable) {
      bool match = false;
      for (const std::string& p : patterns) match = match || HistogramPatternMatches(p, *variable);
      if (!match) continue;
      const std::string& v = variable->name;
      // The histogram reads a copy taken under the variable's lock on the
      // variable's device (_CheckpointSnapshot), not the variable itself: a
      // reader of the ref would have to sit on the variable's device, and
      // HistogramSummary runs on the CPU only (the variable may be on a GPU).
      const std::string value = b.Node(absl::StrCat(kScope, "/histogram/", v, "/value"), "_CheckpointSnapshot", {v},
                                       {{"T", MakeAttr(DT_FLOAT)}});
      add_histogram(v, value);
      for (const auto& [var, grad] : tg.gradients) {
        if (var == v) add_histogram(v + "/gradient", grad);
      }
    }
  }
  // Images of the training batch.
  if (options.input_images > 0 && options.every_steps > 0) {
    auto it = tg.train_input.features.find("image");
    if (it == tg.train_input.features.end()) {
      return absl::InvalidArgumentError("input_images: the training input has no feature named 'image'");
    }
    const models::PipelineFeature& f = it->second;
    if (f.shape.rank_known() && f.shape.rank() != 4) {
      return absl::InvalidArgumentError(absl::StrCat("input_images: the 'image' feature has shape ",
                                                     f.shape.DebugString(),
                                                     "; images need [batch, height, width, channels]"));
    }
    if (f.dtype != DT_FLOAT && f.dtype != DT_UINT8) {
      return absl::InvalidArgumentError("input_images: the 'image' feature must be float or uint8");
    }
    const std::string name = absl::StrCat(kScope, "/input_images");
    const std::string t = b.Const(name + "/tag", Tensor::Scalar<tstring>("input"));
    summaries.push_back(b.Node(name, "ImageSummary", {t, f.tensor},
                               {{"T", MakeAttr(f.dtype)}, {"max_images", MakeAttr(options.input_images)}}));
  }
  if (!summaries.empty()) {
    h->merged_summary_ = b.Node(absl::StrCat(kScope, "/merged"), "MergeSummary", summaries,
                                {{"N", MakeAttr(static_cast<int>(summaries.size()))}});
  }
  h->summary_graph_ = b.graph();
  h->training_graph_ = tg.graph;
  for (const NodeDef& n : h->summary_graph_.node()) *h->training_graph_.add_node() = n;
  return h;
}

SummaryHook::~SummaryHook() {
  if (events_) events_->Close().IgnoreError();
}

void SummaryHook::Warn(const std::string& message) {
  if (err_ != nullptr) *err_ << EndProgressLine() << "warning: " << message << "\n";
}

absl::Status SummaryHook::Begin(Session* session, const LoopStart& start) {
  rate_ = std::make_unique<ProgressTracker>(start.last_step);
  last_summary_step_ = start.step;
  if (summary_graph_.node_size() > 0) {
    absl::Status s = session->Extend(summary_graph_);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("starting monitoring: adding the summary nodes: ", s.message()));
  }
  if (options_.every_steps <= 0) return absl::OkStatus();
  EventWriterOptions wo;
  wo.run_dir = options_.run_dir;
  wo.flush_interval = options_.flush_interval;
  auto w = EventWriter::Create(wo);
  if (!w.ok()) {
    return absl::Status(w.status().code(),
                        absl::StrCat("starting monitoring: opening the event file: ", w.status().message()));
  }
  events_ = std::move(w).value();
  absl::Status s = events_->WriteGraph(training_graph_);
  // The restored checkpoint holds step T's update, and the earlier attempt's
  // points up to T stand: TensorBoard drops only those of steps >= the
  // START's, which this run writes again (a START at T dropped step T's
  // points for good: this run's first step is T + 1).
  if (s.ok() && start.resumed) s = events_->WriteSessionStart(start.step + 1);
  // On disk at once: a crash before the first flush left a file with no graph.
  if (s.ok()) s = events_->Flush();
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("starting monitoring: writing ", events_->path(), ": ", s.message()));
  }
  return absl::OkStatus();
}

void SummaryHook::BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) {
  summary_step_ = -1;
  merged_index_ = -1;
  // The step ends at step.step, or later when other replicas advance the
  // global step too: summarize at the first step past each multiple.
  if (events_ == nullptr || !CrossedMultiple(last_summary_step_, step.step, options_.every_steps)) return;
  summary_step_ = step.step;
  args->fetches.push_back(global_norm_);
  for (const auto& [name, tensor] : train_metrics_) args->fetches.push_back(tensor);
  if (!merged_summary_.empty()) {
    merged_index_ = static_cast<int>(args->fetches.size());
    args->fetches.push_back(merged_summary_);
  }
}

absl::Status SummaryHook::AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) {
  rate_->OnStep(step.step, step.examples, result.loss, step.learning_rate, result.active_time);
  if (summary_step_ < 0 || events_ == nullptr) return absl::OkStatus();
  last_summary_step_ = step.step;
  const std::vector<Tensor>& fetched = result.fetched;
  Summary summary;
  if (merged_index_ >= 0 && static_cast<size_t>(merged_index_) < fetched.size() &&
      fetched[merged_index_].dtype() == DT_STRING && fetched[merged_index_].NumElements() == 1) {
    const tstring& bytes = fetched[merged_index_].scalar<tstring>();
    if (!summary.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) summary.Clear();
  }
  auto add = [&](const std::string& tag, double v) {
    Summary::Value* value = summary.add_value();
    value->set_tag(tag);
    value->set_simple_value(static_cast<float>(v));
  };
  auto scalar_at = [&](size_t i) { return i < fetched.size() ? ScalarValue(fetched[i]) : 0.0; };
  add("train/loss", result.loss);
  add("train/learning_rate", step.learning_rate);
  const double examples_per_second = rate_->Line().examples_per_second;
  if (examples_per_second > 0) add("train/examples_per_second", examples_per_second);
  add("train/gradient_global_norm", scalar_at(0));
  for (size_t k = 0; k < train_metrics_.size(); ++k) add("train/" + train_metrics_[k].first, scalar_at(1 + k));
  Write(step.step, summary);
  return absl::OkStatus();
}

void SummaryHook::BeforeSave(int64_t step, bool final) {
  if (events_ == nullptr) return;
  absl::Status s = events_->Flush();
  if (!s.ok()) Warn(absl::StrCat("flushing ", events_->path(), " before the checkpoint of step ", step, ": ", s.message()));
}

void SummaryHook::OnEval(int64_t step, const EvalValues& values) {
  if (!events_) return;
  Summary summary;
  for (const auto& [name, v] : values) {
    Summary::Value* value = summary.add_value();
    value->set_tag("eval/" + name);
    value->set_simple_value(static_cast<float>(v));
  }
  Write(step, summary);
}

void SummaryHook::Write(int64_t step, const Summary& summary) {
  absl::Status s = events_->WriteSummary(step, summary);
  if (!s.ok()) {
    Warn(absl::StrCat("summaries are off from step ", step, ": ", s.message()));
    events_->Close().IgnoreError();
    events_.reset();
  }
}

void SummaryHook::Close(const LoopEnd& end) {
  if (!events_) return;
  absl::Status s = events_->Close();
  if (!s.ok()) Warn(absl::StrCat("closing ", events_->path(), ": ", s.message()));
  events_.reset();
}

}  // namespace training
}  // namespace sluice
