// Trainer: the `train` command's work, from config to trained model.
#include "cmd/train/trainer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "checkpoint/saver.h"
#include "checkpoint/warm_start.h"
#include "cmd/train/exit_codes.h"
#include "cmd/train/monitoring_hooks.h"
#include "configs/load.h"
#include "engine/framework/device.h"
#include "engine/graph/graph_constructor.h"
#include "engine/runtime/session.h"
#include "google/protobuf/text_format.h"
#include "inputs/queue_runner.h"
#include "inputs/reader_state.pb.h"
#include "models/schedule.h"
#include "models/training_graph.h"
#include "monitoring/progress.h"

namespace sluice {

std::atomic<int> g_stop_signals{0};

namespace {

constexpr char kVersion[] = "sluice 0.1.0";

std::string Thousands(int64_t n) {
  std::string digits = absl::StrCat(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string Bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", b, units[u]);
}

std::string OptimizerSummary(const config::Optimizer& o) {
  std::string name;
  switch (o.kind_case()) {
    case config::Optimizer::kSgd: name = "sgd"; break;
    case config::Optimizer::kMomentum:
      name = absl::StrCat(o.momentum().nesterov() ? "nesterov momentum " : "momentum ", o.momentum().momentum());
      break;
    case config::Optimizer::kAdagrad: name = "adagrad"; break;
    case config::Optimizer::kRmsprop: name = "rmsprop"; break;
    case config::Optimizer::kAdam: name = "adam"; break;
    default: name = "none";
  }
  std::string schedule = "constant";
  if (o.schedule().has_exponential_decay()) schedule = "exponential decay";
  if (o.schedule().has_piecewise()) schedule = "piecewise constant";
  if (o.schedule().has_warmup_cosine()) schedule = "warmup + cosine";
  return absl::StrCat(name, ", learning rate ", models::BaseLearningRate(o), " (", schedule, ")",
                      o.clip_global_norm() > 0 ? absl::StrCat(", gradients clipped to norm ", o.clip_global_norm()) : "");
}

void PrintPlan(const config::LoadedExperiment& loaded, const models::TrainingGraph& tg, int inter_op, std::ostream& out) {
  const config::Experiment& e = loaded.experiment;
  out << "Experiment " << e.name() << " (" << loaded.path << ")\n";
  out << "  run directory  " << e.run_dir() << "\n";
  out << "  device         " << DeviceMgr::Local()->HostCpu()->name() << " (" << NumSchedulableCpus() << " cores, "
      << inter_op << " inter-op threads, " << DeviceMgr::Local()->HostCpu()->intra_op_threads()
      << " intra-op threads)\n";
  out << "  variables\n";
  size_t width = 0;
  for (const auto& v : tg.variables) width = std::max(width, v.name.size());
  int64_t trainable = 0, state = 0;
  for (const auto& v : tg.variables) {
    if (v.trainable) {
      out << "    " << v.name << std::string(width - v.name.size() + 2, ' ') << v.shape.DebugString() << "  "
          << Thousands(v.shape.num_elements()) << "\n";
      trainable += v.shape.num_elements();
    } else {
      state += v.shape.num_elements();
    }
  }
  out << "    total trainable parameters " << Thousands(trainable) << "; optimizer state " << Thousands(state) << "\n";
  const int64_t batch = e.input().train().batch_size();
  // Backward is about twice the forward work.
  const double flops = 3.0 * static_cast<double>(tg.forward_flops_per_example) * static_cast<double>(batch);
  out << "  FLOPs per step " << absl::StrFormat("%.3g", flops) << " (batch " << batch << ", forward "
      << Thousands(tg.forward_flops_per_example) << " per example, x3 with gradients)\n";
  const double weights = 4.0 * static_cast<double>(trainable + state);
  // Activations and their gradients, kept for the backward pass.
  const double activations = 2.0 * 4.0 * static_cast<double>(tg.activation_elements_per_example * batch);
  const double queue = 4.0 * static_cast<double>(tg.train_input.queue_capacity) *
                       static_cast<double>(tg.input_elements_per_example);
  out << "  estimated peak memory " << Bytes(weights + activations + queue) << " (variables " << Bytes(weights)
      << ", activations " << Bytes(activations) << ", input queue " << Bytes(queue) << ")\n";
  out << "  input train    " << tg.train_input.description << "\n";
  if (tg.has_eval) out << "  input eval     " << tg.eval_input.description << "\n";
  out << "  optimizer      " << OptimizerSummary(e.optimizer()) << "\n";
  out << "  schedule       " << e.train().steps() << " steps"
      << (e.train().eval_every_steps() > 0 ? absl::StrCat(", evaluate every ", e.train().eval_every_steps()) : "")
      << (e.checkpoint().every_steps() > 0 ? absl::StrCat(", checkpoint every ", e.checkpoint().every_steps(),
                                                          " (keep ", e.checkpoint().keep(), ")")
                                           : "")
      << "\n";
  out.flush();
}

// The resolved config as written to <run_dir>/config.pbtxt and hashed for the
// drift check. run_dir is left out: it is where the file lies, and a run
// directory that is moved or copied resumes as the same run.
std::string ConfigText(const config::Experiment& e) {
  config::Experiment copy = e;
  copy.clear_run_dir();
  std::string text;
  google::protobuf::TextFormat::PrintToString(copy, &text);
  return text;
}

std::string HexHash(const std::string& text) {
  // FNV-1a 64: stable across builds, enough to notice a changed config.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", h);
}

bool MakeDirs(const std::string& path) {
  std::string cur;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    cur.append(part.data(), part.size());
    if (!cur.empty()) ::mkdir(cur.c_str(), 0755);
    cur += '/';
  }
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    f.flush();
    if (!f) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return absl::UnavailableError(absl::StrCat("cannot rename ", tmp));
  return absl::OkStatus();
}

// Lines of `a` and `b` that differ, "-old" / "+new".
std::string LineDiff(const std::string& a, const std::string& b) {
  std::vector<std::string> la = absl::StrSplit(a, '\n'), lb = absl::StrSplit(b, '\n');
  std::string out;
  size_t n = std::max(la.size(), lb.size());
  for (size_t i = 0; i < n; ++i) {
    std::string x = i < la.size() ? la[i] : "", y = i < lb.size() ? lb[i] : "";
    if (x == y) continue;
    if (!x.empty()) absl::StrAppend(&out, "  - ", x, "\n");
    if (!y.empty()) absl::StrAppend(&out, "  + ", y, "\n");
  }
  return out;
}

struct EvalResult {
  std::vector<std::pair<std::string, double>> values;  // loss first
  int64_t examples = 0;
};

// Puts the training input's readers where an uninterrupted run would be after
// `consumed` examples: epoch consumed / N, item consumed % N. With the
// deterministic pipeline (exact_order) the resumed run then sees exactly the
// examples the uninterrupted one would; otherwise the examples that sat in the
// shuffle queue at the checkpoint are read again (none is skipped).
absl::Status RestoreInputPosition(Session* session, const models::InputPipeline& input, int64_t consumed) {
  if (input.readers.empty() || input.examples_per_epoch <= 0 || consumed <= 0) return absl::OkStatus();
  const int64_t epoch = consumed / input.examples_per_epoch;
  const int64_t position = consumed % input.examples_per_epoch;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> targets;
  for (const models::RestorableReader& r : input.readers) {
    ReaderState state;
    state.set_reader_type(r.reader_type);
    state.set_work_started(epoch + 1);
    state.set_work_finished(epoch);
    state.set_num_records_produced(consumed);
    state.set_current_work(r.file);
    state.set_position(position);
    feeds.push_back({r.state_feed, Tensor::Scalar<tstring>(state.SerializeAsString())});
    targets.push_back(r.restore_op);
  }
  std::vector<Tensor> unused;
  return session->Run(feeds, {}, targets, &unused);
}

absl::StatusOr<EvalResult> Evaluate(Session* session, const models::TrainingGraph& tg, int64_t batch) {
  std::vector<std::string> fetches = {tg.eval_loss};
  for (const auto& [name, t] : tg.eval_metrics) fetches.push_back(t);
  const int64_t n = tg.eval_input.examples_per_epoch;
  const int64_t batches = n > 0 ? (n + batch - 1) / batch : 1;
  std::vector<double> sums(fetches.size(), 0.0);
  int64_t examples = 0;
  for (int64_t i = 0; i < batches; ++i) {
    std::vector<Tensor> out;
    absl::Status s = session->Run({}, fetches, {}, &out);
    if (!s.ok()) return s;
    const int64_t weight = (n > 0 && i == batches - 1) ? n - batch * (batches - 1) : batch;
    for (size_t k = 0; k < out.size(); ++k) sums[k] += static_cast<double>(out[k].scalar<float>()) * weight;
    examples += weight;
  }
  EvalResult r;
  r.examples = examples;
  r.values.push_back({"loss", sums[0] / examples});
  for (size_t k = 0; k < tg.eval_metrics.size(); ++k) r.values.push_back({tg.eval_metrics[k].first, sums[k + 1] / examples});
  return r;
}

std::string FormatEval(int64_t step, const EvalResult& r) {
  std::vector<std::string> parts;
  for (const auto& [name, v] : r.values) parts.push_back(absl::StrFormat("%s %.4f", name, v));
  return absl::StrCat("eval at step ", step, ": ", absl::StrJoin(parts, " "), " (", Thousands(r.examples), " examples)");
}

}  // namespace

int RunTrainer(const TrainerOptions& options, std::ostream& out, std::ostream& err) {
  auto loaded_or = config::LoadExperimentFile(options.config_path);
  if (!loaded_or.ok()) {
    err << loaded_or.status().message() << "\n";
    return kExitBadConfig;
  }
  config::LoadedExperiment& loaded = **loaded_or;
  config::Experiment& e = loaded.experiment;
  absl::Status s = config::ApplyOverrides(options.overrides, &e);
  if (!s.ok()) {
    err << "error: " << s.message() << "\n";
    return kExitBadConfig;
  }
  if (!options.run_dir.empty()) e.set_run_dir(options.run_dir);
  config::ApplyDefaults(&e);
  config::ConfigErrors errors(options.config_path);
  config::Validate(loaded, &errors);
  if (!errors.empty()) {
    for (const std::string& line : errors.lines()) err << line << "\n";
    return kExitBadConfig;
  }
  // Kernels split work by thread count, so deterministic runs fix it at 1.
  // Set before anything touches the local device.
  const int intra_op = e.train().deterministic() ? 1
                       : e.devices().intra_op_threads() > 0 ? e.devices().intra_op_threads()
                                                            : NumSchedulableCpus();
  s = DeviceMgr::SetLocalIntraOpThreads(intra_op);
  if (!s.ok()) {
    err << "error: " << s.message() << "\n";
    return kExitPermanentError;
  }
  models::TrainingGraph tg;
  s = models::BuildTrainingGraph(loaded, &tg, &errors);
  if (!errors.empty()) {
    for (const std::string& line : errors.lines()) err << line << "\n";
    return kExitBadConfig;
  }
  if (!s.ok()) {
    err << options.config_path << ": error: building the training graph: " << s.message() << "\n";
    return kExitBadConfig;
  }
  // The full graph must validate (ops, attrs, dtypes, shapes) before any work.
  auto full = GraphFromGraphDef(tg.graph);
  if (!full.ok()) {
    err << options.config_path << ": error: the training graph is invalid: " << full.status().message() << "\n";
    return kExitBadConfig;
  }
  // Summaries, metrics and step traces (cmd/train/monitoring_hooks.h), checked against the graph.
  TrainMonitorOptions monitor_options;
  monitor_options.version = kVersion;
  if (!options.trace_steps.empty()) {
    auto range = ParseStepRange(options.trace_steps);
    if (!range.ok()) {
      err << "error: " << range.status().message() << "\n";
      return kExitBadConfig;
    }
    monitor_options.trace_steps = *range;
  }
  auto monitor_or = TrainMonitor::Create(monitor_options, e, tg);
  if (!monitor_or.ok()) {
    err << options.config_path << ": error: " << monitor_or.status().message() << "\n";
    return kExitBadConfig;
  }
  std::unique_ptr<TrainMonitor> monitor = std::move(monitor_or).value();
  const bool deterministic = e.train().deterministic();
  const int inter_op = deterministic ? 1 : (e.devices().inter_op_threads() > 0 ? e.devices().inter_op_threads()
                                                                               : NumSchedulableCpus());
  PrintPlan(loaded, tg, inter_op, out);
  if (options.validate_only) {
    out << options.config_path << ": OK\n";
    return kExitDone;
  }
  if (options.dry_run) return kExitDone;

  // Run directory, resolved config and provenance.
  const std::string run_dir = e.run_dir();
  if (!MakeDirs(run_dir)) {
    err << "error: cannot create run directory " << run_dir << "\n";
    return kExitPermanentError;
  }
  const std::string config_text = ConfigText(e);
  const std::string config_hash = HexHash(config_text);
  std::string previous;
  if (ReadFile(run_dir + "/config.pbtxt", &previous) && previous != config_text) {
    if (!options.allow_drift) {
      err << run_dir << "/config.pbtxt: error: the run directory holds a run of a different config; "
          << "pass --allow-drift to resume it anyway, or use another --run_dir. Differences:\n"
          << LineDiff(previous, config_text);
      return kExitBadConfig;
    }
    out << "resuming with a changed config (--allow-drift):\n" << LineDiff(previous, config_text);
  }
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  s = WriteFile(run_dir + "/config.pbtxt", config_text);
  if (s.ok()) {
    s = WriteFile(run_dir + "/provenance.txt",
                  absl::StrCat("version: ", kVersion, "\nconfig: ", options.config_path, "\nconfig_hash: ", config_hash,
                               "\nhost: ", host, "\nstart_time: ", absl::FormatTime(absl::Now(), absl::UTCTimeZone()),
                               "\n"));
  }
  if (!s.ok()) {
    err << "error: " << s.message() << "\n";
    return ExitCodeForStatus(s);
  }

  SessionOptions session_options;
  session_options.inter_op_threads = inter_op;
  auto session_or = NewSession(session_options);
  if (!session_or.ok()) {
    err << "error: " << session_or.status().message() << "\n";
    return kExitPermanentError;
  }
  std::unique_ptr<Session> session = std::move(session_or).value();
  s = session->Create(tg.graph);
  if (!s.ok()) {
    err << "error: " << s.message() << "\n";
    return kExitPermanentError;
  }

  // Checkpoints: resume from the newest valid one, or initialize.
  checkpoint::SaverOptions saver_options;
  saver_options.run_dir = run_dir;
  saver_options.every_steps = e.checkpoint().every_steps();
  saver_options.every_seconds = static_cast<double>(e.checkpoint().every_seconds());
  saver_options.retention.keep = e.checkpoint().keep();
  saver_options.retention.keep_every_hours = e.checkpoint().keep_every_hours();
  saver_options.config_hash = config_hash;
  std::vector<checkpoint::SaveableVariable> saveables;
  for (const auto& v : tg.variables) {
    checkpoint::SaveableVariable sv;
    sv.node = v.name;
    sv.dtype = v.name == tg.global_step ? DT_INT64 : DT_FLOAT;
    saveables.push_back(sv);
  }
  auto saver_or = checkpoint::Saver::Create(saver_options, saveables);
  if (!saver_or.ok()) {
    err << "error: " << saver_or.status().message() << "\n";
    return kExitPermanentError;
  }
  std::unique_ptr<checkpoint::Saver> saver = std::move(saver_or).value();
  s = saver->Extend(session.get());
  if (!s.ok()) {
    err << "error: adding checkpoint nodes: " << s.message() << "\n";
    return kExitPermanentError;
  }
  std::vector<Tensor> fetched;
  int64_t step = 0;
  auto restored = saver->RestoreLatest(session.get());
  if (restored.ok()) {
    s = session->Run({}, {tg.global_step}, {}, &fetched);
    if (!s.ok()) {
      err << "error: reading the restored step: " << s.message() << "\n";
      return ExitCodeForStatus(s);
    }
    step = fetched[0].scalar<int64_t>();
    out << "resumed from " << saver->last_checkpoint() << " at step " << step << "\n";
  } else if (absl::IsNotFound(restored.status())) {
    s = session->Run({}, {}, {tg.init_op}, &fetched);
    if (!s.ok()) {
      err << "error: initializing variables: " << s.message() << "\n";
      return ExitCodeForStatus(s);
    }
    if (e.checkpoint().has_warm_start()) {
      const config::Checkpoint::WarmStart& w = e.checkpoint().warm_start();
      const std::set<std::string> listed(w.variables().begin(), w.variables().end());
      std::set<std::string> wanted = listed;  // those not found yet
      std::vector<checkpoint::SaveableVariable> chosen;
      for (const auto& v : tg.variables) {
        if (!v.trainable || (!listed.empty() && wanted.erase(v.name) == 0)) continue;
        checkpoint::SaveableVariable sv;
        sv.node = v.name;
        chosen.push_back(sv);
      }
      if (!wanted.empty()) {
        err << options.config_path << ": error: checkpoint.warm_start.variables: '" << *wanted.begin()
            << "' is not a trainable variable of this model\n";
        return kExitBadConfig;
      }
      checkpoint::WarmStartOptions wo;
      wo.from = w.from();
      for (const auto& [mine, theirs] : w.rename()) wo.name_map[mine] = theirs;
      s = checkpoint::WarmStart(session.get(), chosen, wo);
      if (!s.ok()) {
        err << "error: checkpoint.warm_start from " << w.from() << ": " << s.message() << "\n";
        return absl::IsNotFound(s) || absl::IsInvalidArgument(s) ? kExitBadConfig : ExitCodeForStatus(s);
      }
      out << "warm-started " << chosen.size() << " variables from " << w.from() << "\n";
    }
  } else {
    err << "error: restoring " << run_dir << ": " << restored.status().message() << "\n";
    return ExitCodeForStatus(restored.status());
  }

  // Event file, /metrics server, trace directory.
  s = monitor->Start(session.get(), saver.get(), step, restored.ok(), out, err);
  if (!s.ok()) {
    err << "error: starting monitoring: " << s.message() << "\n";
    return ExitCodeForStatus(s);
  }

  // Input pipelines.
  std::vector<std::string> input_init = tg.train_input.init_ops;
  input_init.insert(input_init.end(), tg.eval_input.init_ops.begin(), tg.eval_input.init_ops.end());
  if (!input_init.empty()) {
    s = session->Run({}, {}, input_init, &fetched);
    if (!s.ok()) {
      err << "error: initializing the input pipeline: " << s.message() << "\n";
      return ExitCodeForStatus(s);
    }
  }
  if (step > 0) {
    s = RestoreInputPosition(session.get(), tg.train_input, step * e.input().train().batch_size());
    if (!s.ok()) {
      err << "error: restoring the input position: " << s.message() << "\n";
      return ExitCodeForStatus(s);
    }
    out << "input restored to example " << step * e.input().train().batch_size()
        << (tg.train_input.exact_order ? " (exact order)" : "") << "\n";
  }
  Coordinator coord;
  std::vector<std::unique_ptr<QueueRunner>> runners;
  std::vector<QueueRunnerDef> defs = tg.train_input.runners;
  defs.insert(defs.end(), tg.eval_input.runners.begin(), tg.eval_input.runners.end());
  for (const QueueRunnerDef& def : defs) {
    auto runner = QueueRunner::New(def);
    if (!runner.ok()) {
      err << "error: " << runner.status().message() << "\n";
      return kExitPermanentError;
    }
    s = (*runner)->Start(session.get(), &coord);
    if (!s.ok()) {
      err << "error: starting the input pipeline: " << s.message() << "\n";
      return ExitCodeForStatus(s);
    }
    runners.push_back(std::move(runner).value());
  }
  auto stop_inputs = [&]() {
    coord.RequestStop();
    for (auto& r : runners) r->Stop();
    for (auto& r : runners) (void)r->Join();
  };

  const int64_t total = e.train().steps();
  const int64_t batch = e.input().train().batch_size();
  const int64_t eval_batch = tg.has_eval ? e.input().eval().batch_size() : 0;
  const int64_t log_every = e.train().log_every_steps();
  const bool tty = ::isatty(STDOUT_FILENO);
  ProgressTracker progress(total);
  absl::Time last_print = absl::InfinitePast();
  std::ofstream eval_log(run_dir + "/eval.txt", std::ios::app);
  int exit_code = kExitDone;
  bool input_ended = false;
  auto run_eval = [&](int64_t at) -> absl::Status {
    if (!tg.has_eval) return absl::OkStatus();
    auto r = Evaluate(session.get(), tg, eval_batch);
    if (!r.ok()) return r.status();
    std::string line = FormatEval(at, *r);
    if (tty) out << "\n";
    out << line << "\n";
    out.flush();
    eval_log << line << "\n";
    eval_log.flush();
    monitor->OnEval(at, r->values);
    return absl::OkStatus();
  };
  int64_t steps_run = 0;
  double last_loss = 0;
  while (step < total) {
    if (g_stop_signals.load() > 0) {
      exit_code = kExitPreempted;
      break;
    }
    const double lr = models::LearningRateAt(e.optimizer(), total, step);
    std::vector<std::string> step_fetches = {tg.loss};
    RunOptions run_options;
    RunMetadata run_metadata;
    monitor->BeforeStep(step + 1, &step_fetches, &run_options);
    const absl::Time step_start = absl::Now();
    s = session->Run(run_options, {{tg.learning_rate, Tensor::Scalar<float>(static_cast<float>(lr))}}, step_fetches,
                     {tg.train_op}, &fetched, &run_metadata);
    if (absl::IsOutOfRange(s)) {
      input_ended = true;
      break;
    }
    if (!s.ok()) {
      absl::Status input_error = coord.status();
      err << "\nerror at step " << step << ": " << (input_error.ok() ? s.message() : input_error.message()) << "\n";
      stop_inputs();
      return ExitCodeForStatus(input_error.ok() ? s : input_error);
    }
    ++step;
    ++steps_run;
    const double loss = fetched[0].scalar<float>();
    last_loss = loss;
    if (!std::isfinite(loss)) {
      err << "\nerror: the loss is " << loss << " at step " << step
          << "; lower the learning rate or clip gradients (optimizer.clip_global_norm)\n";
      stop_inputs();
      return kExitPermanentError;
    }
    const absl::Time now = absl::Now();
    progress.OnStep(step, batch, loss, lr, now);
    monitor->AfterStep(step, fetched, run_metadata, absl::ToDoubleSeconds(now - step_start), loss, lr,
                       progress.Line().examples_per_second);
    if (tty ? (now - last_print > absl::Milliseconds(250) || step == total) : (step % log_every == 0 || step == total)) {
      out << (tty ? "\r" : "") << progress.ToString() << (tty ? "\033[K" : "\n");
      out.flush();
      last_print = now;
    }
    s = saver->MaybeSave(session.get(), step);
    if (!s.ok()) err << "\nwarning: checkpoint at step " << step << " failed: " << s.message() << "\n";
    if (e.train().eval_every_steps() > 0 && step % e.train().eval_every_steps() == 0 && step < total) {
      s = run_eval(step);
      if (!s.ok()) {
        err << "\nerror: evaluation at step " << step << ": " << s.message() << "\n";
        stop_inputs();
        return ExitCodeForStatus(s);
      }
    }
  }
  if (tty) out << "\n";
  // Full precision, for comparing runs (exact resume, determinism).
  if (steps_run > 0) out << absl::StrFormat("last step %d loss %.9g\n", step, last_loss);
  if (input_ended) out << "the training input ended at step " << step << " (input.train.epochs)\n";
  // Save the final (or preempted) state, then evaluate.
  monitor->CheckpointStarting(step);
  // Nothing to save when no step ran since the restore.
  s = steps_run > 0 ? saver->Save(session.get(), step) : absl::OkStatus();
  if (s.ok()) s = saver->Wait();
  if (s.ok()) monitor->CheckpointCommitted(step);
  if (!s.ok()) {
    err << "error: final checkpoint: " << s.message() << "\n";
    if (exit_code == kExitDone) exit_code = ExitCodeForStatus(s);
  } else {
    out << "saved " << saver->last_checkpoint() << "\n";
  }
  if (exit_code == kExitPreempted) {
    out << "stopped by signal at step " << step << "; resume by running the same command\n";
    stop_inputs();
    monitor->Finish(exit_code, out, err);
    return exit_code;
  }
  s = run_eval(step);
  if (!s.ok()) {
    err << "error: final evaluation: " << s.message() << "\n";
    exit_code = ExitCodeForStatus(s);
  }
  stop_inputs();
  monitor->Finish(exit_code, out, err);
  return exit_code;
}

}  // namespace sluice
