// TrainMonitor: summaries, metrics and traces for `train` (see monitoring_hooks.h).
#include "cmd/train/monitoring_hooks.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/store_format.h"
#include "engine/framework/device.h"
#include "engine/graph/graph_def_builder.h"
#include "monitoring/trace.h"

namespace sluice {
namespace {

constexpr char kScope[] = "summaries";

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The node name of tensor "node:port" / "node" / "^node".
std::string NodeOf(const std::string& tensor) {
  std::string n = tensor;
  if (!n.empty() && n[0] == '^') n = n.substr(1);
  const size_t colon = n.rfind(':');
  if (colon != std::string::npos) n = n.substr(0, colon);
  return n;
}

const NodeDef* FindNode(const GraphDef& g, const std::string& name) {
  for (const NodeDef& n : g.node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<StepRange> ParseStepRange(absl::string_view text) {
  const std::string t(absl::StripAsciiWhitespace(text));
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--trace_steps '", t, "': ", why, "; expected A-B with 1 <= A <= B (e.g. 10-12) or one step A"));
  };
  std::vector<std::string> parts = absl::StrSplit(t, '-');
  if (parts.empty() || parts.size() > 2) return bad("not a step range");
  StepRange r;
  if (!absl::SimpleAtoi(parts[0], &r.first) || parts[0].empty() || !absl::ascii_isdigit(parts[0][0])) {
    return bad("the first step is not a number");
  }
  r.last = r.first;
  if (parts.size() == 2 && (!absl::SimpleAtoi(parts[1], &r.last) || parts[1].empty() ||
                            !absl::ascii_isdigit(parts[1][0]))) {
    return bad("the last step is not a number");
  }
  if (r.first < 1) return bad("steps count from 1");
  if (r.last < r.first) return bad("the range is backwards");
  return r;
}

absl::StatusOr<std::pair<std::string, std::string>> ParsePushgatewayUrl(absl::string_view url) {
  std::string rest(url);
  std::string scheme = "http";
  const size_t sep = rest.find("://");
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("pushgateway_url '", url, "' ", why,
                                                   "; use \"http://HOST:PORT\", e.g. \"http://127.0.0.1:9091\""));
  };
  if (sep != std::string::npos) {
    scheme = rest.substr(0, sep);
    if (scheme != "http" && scheme != "https") return bad("has an unsupported scheme");
    rest = rest.substr(sep + 3);
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) return bad("has a path");
  std::string host = rest, port = "9091";
  const size_t colon = rest.rfind(':');
  if (colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    int p = 0;
    if (!absl::SimpleAtoi(port, &p) || p < 1 || p > 65535) return bad("has a bad port");
  }
  if (host.empty()) return bad("has no host");
  return std::make_pair(absl::StrCat(scheme, "://", host), port);
}

absl::StatusOr<std::unique_ptr<TrainMonitor>> TrainMonitor::Create(const TrainMonitorOptions& options,
                                                                   const config::Experiment& e,
                                                                   const models::TrainingGraph& tg) {
  std::unique_ptr<TrainMonitor> m(new TrainMonitor());
  m->options_ = options;
  m->run_dir_ = e.run_dir();
  m->summary_every_ = e.summaries().every_steps();
  m->batch_size_ = e.input().train().batch_size();
  m->queue_capacity_ = tg.train_input.queue_capacity;
  m->global_norm_ = tg.global_norm;
  m->train_metrics_ = tg.train_metrics;
  m->device_ = DeviceMgr::Local()->HostCpu()->name();

  // Histograms: trainable variables matching a pattern, and their gradients.
  GraphDefBuilder b;
  std::vector<std::string> summaries;
  std::vector<std::string> trainable;
  for (const auto& v : tg.variables) {
    if (v.trainable) trainable.push_back(v.name);
  }
  const auto& patterns = e.summaries().histograms();
  for (int i = 0; i < patterns.size(); ++i) {
    bool any = false;
    for (const std::string& v : trainable) any = any || ::fnmatch(patterns[i].c_str(), v.c_str(), 0) == 0;
    if (!any) {
      return absl::InvalidArgumentError(absl::StrCat("summaries.histograms[", i, "]: the pattern '", patterns[i],
                                                     "' matches no trainable variable; variables: ",
                                                     absl::StrJoin(trainable, ", ")));
    }
  }
  auto add_histogram = [&](const std::string& tag, const std::string& tensor) {
    const std::string name = absl::StrCat(kScope, "/histogram/", tag);
    const std::string t = b.Const(name + "/tag", Tensor::Scalar<tstring>(tag));
    summaries.push_back(b.Node(name, "HistogramSummary", {t, tensor}, {{"T", MakeAttr(DT_FLOAT)}}));
  };
  if (m->summary_every_ > 0) {
    for (const std::string& v : trainable) {
      bool match = false;
      for (const std::string& p : patterns) match = match || ::fnmatch(p.c_str(), v.c_str(), 0) == 0;
      if (!match) continue;
      add_histogram(v, v);
      for (const auto& [var, grad] : tg.gradients) {
        if (var == v) add_histogram(v + "/gradient", grad);
      }
    }
  }
  // Images of the training batch.
  const int images = e.summaries().input_images();
  if (images > 0 && m->summary_every_ > 0) {
    auto it = tg.train_input.features.find("image");
    if (it == tg.train_input.features.end()) {
      return absl::InvalidArgumentError("summaries.input_images: the training input has no feature named 'image'");
    }
    const models::PipelineFeature& f = it->second;
    if (f.shape.rank_known() && f.shape.rank() != 4) {
      return absl::InvalidArgumentError(absl::StrCat("summaries.input_images: the 'image' feature has shape ",
                                                     f.shape.DebugString(), "; images need [batch, height, width, channels]"));
    }
    if (f.dtype != DT_FLOAT && f.dtype != DT_UINT8) {
      return absl::InvalidArgumentError("summaries.input_images: the 'image' feature must be float or uint8");
    }
    const std::string name = absl::StrCat(kScope, "/input_images");
    const std::string t = b.Const(name + "/tag", Tensor::Scalar<tstring>("input"));
    summaries.push_back(b.Node(name, "ImageSummary", {t, f.tensor},
                               {{"T", MakeAttr(f.dtype)}, {"max_images", MakeAttr(images)}}));
  }
  if (!summaries.empty()) {
    m->merged_summary_ = b.Node(absl::StrCat(kScope, "/merged"), "MergeSummary", summaries,
                                {{"N", MakeAttr(static_cast<int>(summaries.size()))}});
  }

  // Metrics.
  const bool has_monitoring = e.has_monitoring();
  const config::Monitoring& mon = e.monitoring();
  m->serve_metrics_ = has_monitoring && mon.metrics_port() >= 0;
  m->pushgateway_url_ = has_monitoring ? mon.pushgateway_url() : "";
  if (!m->pushgateway_url_.empty()) {
    auto parsed = ParsePushgatewayUrl(m->pushgateway_url_);
    if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat("monitoring.", parsed.status().message()));
  }
  m->want_metrics_ = m->serve_metrics_ || !m->pushgateway_url_.empty();
  m->metrics_options_.job = options.job;
  m->metrics_options_.task = options.task;
  m->metrics_options_.version = options.version;
  m->metrics_options_.serve = m->serve_metrics_;
  m->metrics_options_.port = m->serve_metrics_ ? mon.metrics_port() : 0;
  // Loopback unless the experiment names an address (issue 22: not every interface by default).
  m->metrics_options_.bind_address = mon.metrics_address().empty() ? "127.0.0.1" : mon.metrics_address();
  if (m->want_metrics_) {
    // The batch queue's size, as the input pipeline exposes it.
    m->queue_size_ = tg.train_input.queue_size;
  }
  m->summary_graph_ = b.graph();
  m->training_graph_ = tg.graph;
  for (const NodeDef& n : m->summary_graph_.node()) *m->training_graph_.add_node() = n;
  return m;
}

TrainMonitor::~TrainMonitor() {
  if (events_) events_->Close().IgnoreError();
}

void TrainMonitor::Warn(const std::string& message) {
  if (err_ != nullptr) *err_ << "\nwarning: " << message << "\n";
}

absl::Status TrainMonitor::Start(Session* session, const checkpoint::Saver* saver, int64_t step, bool resumed,
                                 std::ostream& out, std::ostream& err) {
  saver_ = saver;
  err_ = &err;
  started_ = absl::Now();
  if (summary_graph_.node_size() > 0) {
    absl::Status s = session->Extend(summary_graph_);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("adding the summary nodes: ", s.message()));
  }
  if (summary_every_ > 0) {
    EventWriterOptions wo;
    wo.run_dir = run_dir_;
    wo.flush_interval = options_.flush_interval;
    auto w = EventWriter::Create(wo);
    if (!w.ok()) return absl::Status(w.status().code(), absl::StrCat("opening the event file: ", w.status().message()));
    events_ = std::move(w).value();
    absl::Status s = events_->WriteGraph(training_graph_);
    if (s.ok() && resumed) s = events_->WriteSessionStart(step);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("writing ", events_->path(), ": ", s.message()));
  }
  if (want_metrics_) {
    auto m = TrainingMetrics::Create(metrics_options_);
    if (!m.ok()) return m.status();
    metrics_ = std::move(m).value();
    metrics_->SetInputQueue(0, queue_capacity_);
    if (serve_metrics_) {
      const std::string host =
          metrics_options_.bind_address == "0.0.0.0" ? "127.0.0.1" : metrics_options_.bind_address;
      out << "metrics: http://" << host << ":" << metrics_->port() << "/metrics\n";
      out.flush();
    }
  }
  if (!options_.trace_steps.empty()) {
    if (!IsDir(run_dir_ + "/traces") && ::mkdir((run_dir_ + "/traces").c_str(), 0755) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot create ", run_dir_, "/traces"));
    }
    if (options_.trace_steps.last <= step) {
      Warn(absl::StrCat("--trace_steps=", options_.trace_steps.first, "-", options_.trace_steps.last,
                        ": the run resumes after step ", step, ", so no step is traced"));
    }
  }
  return absl::OkStatus();
}

void TrainMonitor::BeforeStep(int64_t step, std::vector<std::string>* fetches, RunOptions* options) {
  plan_ = StepPlan();
  plan_.step = step;
  if (metrics_ && !queue_size_.empty()) {
    plan_.queue_size = static_cast<int>(fetches->size());
    fetches->push_back(queue_size_);
  }
  plan_.summaries = events_ != nullptr && summary_every_ > 0 && step % summary_every_ == 0;
  if (plan_.summaries) {
    plan_.global_norm = static_cast<int>(fetches->size());
    fetches->push_back(global_norm_);
    plan_.first_metric = static_cast<int>(fetches->size());
    for (const auto& [name, tensor] : train_metrics_) fetches->push_back(tensor);
    if (!merged_summary_.empty()) {
      plan_.merged = static_cast<int>(fetches->size());
      fetches->push_back(merged_summary_);
    }
  }
  plan_.traced = options_.trace_steps.Contains(step) && !trace_warned_;
  if (plan_.traced) options->collect_step_stats = true;
}

void TrainMonitor::AfterStep(int64_t step, const std::vector<Tensor>& fetched, const RunMetadata& metadata,
                             double seconds, double loss, double learning_rate, double examples_per_second) {
  if (plan_.step != step) return;  // BeforeStep was not called for this step
  auto scalar_at = [&](int i) -> double {
    if (i < 0 || static_cast<size_t>(i) >= fetched.size() || fetched[i].NumElements() != 1) return 0;
    switch (fetched[i].dtype()) {
      case DT_FLOAT: return fetched[i].scalar<float>();
      case DT_INT32: return fetched[i].scalar<int32_t>();
      case DT_INT64: return static_cast<double>(fetched[i].scalar<int64_t>());
      case DT_DOUBLE: return fetched[i].scalar<double>();
      default: return 0;
    }
  };
  if (metrics_) {
    metrics_->OnStep(batch_size_, seconds, loss, learning_rate);
    if (plan_.queue_size >= 0) metrics_->SetInputQueue(static_cast<int64_t>(scalar_at(plan_.queue_size)), queue_capacity_);
    if (plan_.traced) metrics_->AddStepStats(metadata.step_stats);
    PollCheckpoint(step);
  }
  if (plan_.summaries && events_) {
    Summary summary;
    if (plan_.merged >= 0 && static_cast<size_t>(plan_.merged) < fetched.size() &&
        fetched[plan_.merged].dtype() == DT_STRING && fetched[plan_.merged].NumElements() == 1) {
      const tstring& bytes = fetched[plan_.merged].scalar<tstring>();
      if (!summary.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) summary.Clear();
    }
    auto add = [&](const std::string& tag, double v) {
      Summary::Value* value = summary.add_value();
      value->set_tag(tag);
      value->set_simple_value(static_cast<float>(v));
    };
    add("train/loss", loss);
    add("train/learning_rate", learning_rate);
    if (examples_per_second > 0) add("train/examples_per_second", examples_per_second);
    add("train/gradient_global_norm", scalar_at(plan_.global_norm));
    for (size_t k = 0; k < train_metrics_.size(); ++k) {
      add("train/" + train_metrics_[k].first, scalar_at(plan_.first_metric + static_cast<int>(k)));
    }
    WriteSummary(step, summary);
  }
  if (plan_.traced) WriteTrace(step, metadata);
  // A periodic save the trainer is about to start (it calls MaybeSave right after this).
  if (metrics_ && saver_ != nullptr && pending_save_step_ < 0 && saver_->ShouldSave(step)) {
    pending_save_step_ = step;
    pending_save_start_ = absl::Now();
  }
}

void TrainMonitor::WriteSummary(int64_t step, const Summary& summary) {
  absl::Status s = events_->WriteSummary(step, summary);
  if (!s.ok()) {
    Warn(absl::StrCat("summaries are off from step ", step, ": ", s.message()));
    events_->Close().IgnoreError();
    events_.reset();
  }
}

void TrainMonitor::WriteTrace(int64_t step, const RunMetadata& metadata) {
  const std::string path = absl::StrFormat("%s/traces/step_%d.json", run_dir_, step);
  DeviceStepStats device{device_, metadata.step_stats};
  const std::string json = StepStatsToChromeTrace(
      absl::MakeConstSpan(&device, 1),
      {{"step", absl::StrCat(step)},
       {"executed_graph_nodes", absl::StrCat(metadata.executed_graph_nodes)},
       {"recorded_nodes", absl::StrCat(metadata.step_stats.size())}});
  const std::string tmp = path + ".tmp";
  std::ofstream f(tmp, std::ios::trunc);
  f << json;
  f.close();
  if (!f || ::rename(tmp.c_str(), path.c_str()) != 0) {
    Warn(absl::StrCat("cannot write the trace ", path, "; tracing is off"));
    trace_warned_ = true;
    return;
  }
  ++traces_written_;
}

void TrainMonitor::PollCheckpoint(int64_t step) {
  if (pending_save_step_ < 0 || pending_save_step_ == step) return;
  // The saver renames ckpt-<step>.tmp to ckpt-<step> when the write is complete.
  const std::string dir = absl::StrCat(checkpoint::CheckpointsDir(run_dir_), "/",
                                       checkpoint::CheckpointDirName(pending_save_step_));
  if (!IsDir(dir)) return;
  const absl::Time now = absl::Now();
  metrics_->OnCheckpointSaved(absl::ToDoubleSeconds(now - pending_save_start_), now);
  pending_save_step_ = -1;
}

void TrainMonitor::OnEval(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  if (!events_) return;
  Summary summary;
  for (const auto& [name, v] : values) {
    Summary::Value* value = summary.add_value();
    value->set_tag("eval/" + name);
    value->set_simple_value(static_cast<float>(v));
  }
  WriteSummary(step, summary);
}

void TrainMonitor::CheckpointStarting(int64_t step) {
  if (!metrics_) return;
  // A periodic save still in flight is joined by this save.
  if (pending_save_step_ >= 0 && pending_save_step_ != step) {
    PollCheckpoint(step);
  }
  pending_save_step_ = step;
  pending_save_start_ = absl::Now();
}

void TrainMonitor::CheckpointCommitted(int64_t step) {
  if (!metrics_ || pending_save_step_ != step) return;
  const absl::Time now = absl::Now();
  metrics_->OnCheckpointSaved(absl::ToDoubleSeconds(now - pending_save_start_), now);
  pending_save_step_ = -1;
}

void TrainMonitor::Finish(int exit_code, std::ostream& out, std::ostream& err) {
  err_ = &err;
  if (events_) {
    absl::Status s = events_->Close();
    if (!s.ok()) Warn(absl::StrCat("closing ", events_->path(), ": ", s.message()));
    events_.reset();
  }
  if (traces_written_ > 0) out << "traces: " << traces_written_ << " step(s) in " << run_dir_ << "/traces\n";
  if (metrics_ && exit_code == 0) {
    const absl::Time now = absl::Now();
    metrics_->OnRunSucceeded(absl::ToDoubleSeconds(now - started_), now);
    if (!pushgateway_url_.empty()) {
      auto url = ParsePushgatewayUrl(pushgateway_url_);
      absl::Status s = url.status();
      if (s.ok()) {
        PushOptions push;
        push.host = url->first;
        push.port = url->second;
        s = metrics_->Push(push);
      }
      if (s.ok()) {
        out << "metrics: pushed to " << pushgateway_url_ << "\n";
      } else {
        Warn(absl::StrCat("pushing metrics to ", pushgateway_url_, ": ", s.message()));
      }
    }
  }
  out.flush();
}

}  // namespace sluice
