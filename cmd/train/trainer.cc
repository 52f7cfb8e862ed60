// Trainer: the `train` command's work, from config to trained model.
#include "cmd/train/trainer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "monitoring/metrics.h"
#include "monitoring/progress.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "checkpoint/saver.h"
#include "checkpoint/warm_start.h"
#include "cmd/train/cluster_task.h"
#include "cmd/train/config_drift.h"
#include "cmd/train/exit_codes.h"
#include "cmd/train/line_diff.h"
#include "cmd/train/plan_printer.h"
#include "cmd/train/run_setup.h"
#include "configs/eval_values.h"
#include "configs/load.h"
#include "engine/framework/device.h"
#include "engine/framework/device_set.h"
#include "engine/framework/local_devices.h"
#include "engine/framework/op_def.h"
#include "engine/distributed/worker_interface.h"
#include "engine/distributed/task_identity.h"
#include "engine/graph/graph_constructor.h"
#include "engine/platform/env.h"
#include "engine/runtime/session.h"
#include "google/protobuf/text_format.h"
#include "models/model_builder.h"
#include "models/schedule.h"
#include "models/training/best_model_hook.h"
#include "models/training/checkpoint_hook.h"
#include "models/training/eval_hook.h"
#include "models/training/input_hook.h"
#include "models/training/metrics_hook.h"
#include "models/training/progress_hook.h"
#include "models/training/stop_signal_hook.h"
#include "models/training/summary_hook.h"
#include "models/training/trace_hook.h"
#include "models/training/training_loop.h"
#include "models/placement_check.h"
#include "models/training_graph.h"
#include "models/replication/replica_devices.h"

namespace sluice {

std::atomic<int> g_stop_signals{0};

namespace {
std::atomic<int> g_metrics_port_served{0};
}  // namespace

int MetricsPortServed() { return g_metrics_port_served.load(); }

namespace {

constexpr char kVersion[] = "sluice 0.1.0";

// Intra-op threads when devices.intra_op_threads is unset, the process has a
// GPU and one pool runs both the nodes and the kernels' loops. The step's GPU
// kernels only queue work, and each extra host thread picking up ready nodes
// adds a wake-up and a hand-off, not overlap. On an H200 host with 16 cores,
// 2 threads ran fashion_cnn's and fashion_mlp's steps 4-29% faster than 16 at
// batch 128 and 1024 (medians of 3 interleaved rounds; docs/PERFORMANCE.md,
// session 41). A heavy CPU input pipeline may want more: set the field.
constexpr int kIntraOpThreadsBesideAGpu = 2;

// The chief's claim on its run directory for the rest of the process: a
// second `train` on the same directory (two runs interleaved their
// checkpoints, event files and eval.txt, and both "succeeded") is refused.
// flock(2) on RUN_DIR/.lock, which holds the owner's pid; the kernel lets go
// however the process ends (SIGKILL included), so a rerun after a crash is
// never locked out. Unavailable while another process holds it.
absl::Status LockRunDirectory(const std::string& run_dir) {
  const std::string path = JoinPath(run_dir, ".lock");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char pid[32] = {0};
    const ssize_t n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    std::string owner(pid, n > 0 ? static_cast<size_t>(n) : 0);
    while (!owner.empty() && (owner.back() == '\n' || owner.back() == ' ')) owner.pop_back();
    if (error == EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat("run directory ", run_dir, " is in use by another train",
                                                 owner.empty() ? "" : absl::StrCat(" (pid ", owner, ")"),
                                                 "; wait for it to end, or use another --run_dir"));
    }
    return absl::InternalError(absl::StrCat("cannot lock ", path, ": ", std::strerror(error)));
  }
  const std::string mine = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) < 0) {
    // The lock holds without the pid; the message just cannot name it.
  }
  return absl::OkStatus();  // `fd` stays open: the lock lasts as long as this process
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

// The hooks that report a run besides its progress line: the event file, step traces, and
// the Prometheus metrics (null when the experiment neither serves nor pushes them).
struct MonitoringHooks {
  std::unique_ptr<training::SummaryHook> summaries;
  std::unique_ptr<training::TraceHook> trace;
  std::unique_ptr<training::MetricsHook> metrics;
};

// metrics_port 0 asks for a free port; a task that restarted itself asks for
// the one it served before, and a task of --local_cluster for the one the
// launcher picked (exit_codes.h): a scrape config keeps working across
// restarts. It takes a free one if another process has taken that port.
void KeepMetricsPortAcrossRestarts(MetricsOptions* metrics) {
  if (!metrics->serve || metrics->port != 0 || AssignedMetricsPort() == 0) return;
  metrics->port = AssignedMetricsPort();
  metrics->free_port_if_taken = true;
}

// The config's names of variables checked against the training graph, as
// located errors (with did-you-mean) that --validate reports too:
// checkpoint.warm_start.variables (the model's variables as checkpoints name
// them: a split table by its own name) and summaries.histograms (each must
// match a trainable variable). False if any is wrong.
bool CheckVariableNames(const config::LoadedExperiment& loaded, const models::TrainingGraph& tg,
                        config::ConfigErrors* errors) {
  const config::Experiment& e = loaded.experiment;
  std::vector<std::string> model, trainable;  // checkpoint names, in graph order
  for (const auto& v : tg.variables) {
    const std::string& name = v.num_parts > 1 ? v.logical : v.name;
    if (!v.slot && std::find(model.begin(), model.end(), name) == model.end()) model.push_back(name);
    if (v.trainable && std::find(trainable.begin(), trainable.end(), name) == trainable.end()) trainable.push_back(name);
  }
  bool ok = true;
  const config::Checkpoint::WarmStart& w = e.checkpoint().warm_start();
  for (int i = 0; i < w.variables_size(); ++i) {
    if (std::find(model.begin(), model.end(), w.variables(i)) != model.end()) continue;
    const std::string guess = ClosestMatch(w.variables(i), model);
    errors->Add(loaded.Where(w, "variables", i),
                absl::StrCat("checkpoint.warm_start.variables: '", w.variables(i), "' is not a variable of this model",
                             guess.empty() ? "" : absl::StrCat(" (did you mean '", guess, "'?)"),
                             "; the model's variables: ", absl::StrJoin(model, ", ")));
    ok = false;
  }
  const config::Summaries& sm = e.summaries();
  for (int i = 0; i < sm.histograms_size(); ++i) {
    bool any = false;
    for (const auto& v : tg.variables) any = any || (v.trainable && training::HistogramPatternMatches(sm.histograms(i), v));
    if (any) continue;
    errors->Add(loaded.Where(sm, "histograms", i),
                absl::StrCat("summaries.histograms[", i, "]: the pattern '", sm.histograms(i),
                             "' matches no trainable variable; trainable variables: ", absl::StrJoin(trainable, ", ")));
    ok = false;
  }
  return ok;
}

// Checks the summaries and monitoring sections against the training graph; a problem is
// InvalidArgument naming the config field. No I/O.
// `task`: this process's task (worker 0 outside a cluster). Only the chief
// pushes to a Pushgateway; another replica serves /metrics only on a free
// port (metrics_port 0), since tasks may share a machine.
absl::StatusOr<MonitoringHooks> CreateMonitoringHooks(const config::Experiment& e, const models::TrainingGraph& tg,
                                                      const training::StepRange& trace_steps, bool trace_device_time,
                                                      const distributed::TaskId& task, bool chief, bool replicated,
                                                      std::ostream& out, std::ostream& err) {
  MonitoringHooks hooks;
  training::SummaryHookOptions so;
  so.run_dir = e.run_dir();
  so.every_steps = e.summaries().every_steps();
  so.histograms.assign(e.summaries().histograms().begin(), e.summaries().histograms().end());
  so.input_images = e.summaries().input_images();
  auto summaries = training::SummaryHook::Create(so, tg, &err);
  if (!summaries.ok()) return absl::InvalidArgumentError(absl::StrCat("summaries.", summaries.status().message()));
  hooks.summaries = std::move(summaries).value();

  const config::Monitoring& mon = e.monitoring();
  const bool serve = e.has_monitoring() && mon.metrics_port() >= 0 && (chief || mon.metrics_port() == 0);
  const std::string pushgateway_url = e.has_monitoring() && chief ? mon.pushgateway_url() : "";
  if (serve || !pushgateway_url.empty()) {
    training::MetricsHookOptions mo;
    mo.metrics.role = task.job;
    mo.metrics.task = task.index;
    mo.metrics.version = kVersion;
    mo.metrics.serve = serve;
    mo.metrics.port = serve ? mon.metrics_port() : 0;
    KeepMetricsPortAcrossRestarts(&mo.metrics);
    mo.metrics.bind_address = mon.metrics_address().empty() ? "127.0.0.1" : mon.metrics_address();  // loopback unless named (issue 22)
    mo.metrics.series.checkpoints = chief;  // the chief saves
    mo.metrics.series.sync_aggregation = chief && !tg.aggregated_gradients.empty();
    mo.metrics.series.health_checks = replicated;
    mo.pushgateway_url = pushgateway_url;
    mo.queue_size = tg.train_input.queue_size;
    mo.queue_capacity = tg.train_input.queue_capacity;
    mo.recoveries = RecoveriesSoFar();
    if (chief) {
      mo.stale_gradients = tg.stale_gradients;
      mo.aggregated_gradients = tg.aggregated_gradients;
    }
    auto metrics = training::MetricsHook::Create(mo, &out, &err);
    if (!metrics.ok()) return absl::InvalidArgumentError(absl::StrCat("monitoring.", metrics.status().message()));
    hooks.metrics = std::move(metrics).value();
  }

  training::TraceHookOptions to;
  to.steps = trace_steps;
  to.device_time = trace_device_time;
  to.run_dir = e.run_dir();
  to.device = DeviceMgr::Local()->HostCpu()->name();
  hooks.trace = std::make_unique<training::TraceHook>(to, &out, &err);
  return hooks;
}

// A replica of a replicated run stops when the chief says so (the chief
// finished or stopped; the run is over for every worker).
class ChiefStopHook : public training::TrainingHook {
 public:
  explicit ChiefStopHook(ClusterRuntime* cluster) : cluster_(cluster) {}
  void BeforeStep(const training::StepInfo&, training::StepArgs*, training::LoopControl* control) override {
    if (cluster_->WaitForShutdown(absl::ZeroDuration())) control->RequestStop();
  }

 private:
  ClusterRuntime* const cluster_;
};

// A task of a cluster: a train step that still runs kGrace after a stop
// signal waits on a lost peer (a sync step for a dead worker's gradients, or
// a step whose peer is frozen). It is abandoned, so that the run checkpoints
// its last completed step and exits 143 as the signal asks, instead of
// ignoring the signal until a SIGKILL. Only a train step in flight is
// abandoned: the final checkpoint after it is not.
class StuckStepWatchdog {
 public:
  static constexpr absl::Duration kGrace = absl::Seconds(10);
  StuckStepWatchdog(ClusterRuntime* cluster, std::ostream* err)
      : thread_([this, cluster, err] { Watch(cluster, err); }) {}
  ~StuckStepWatchdog() {
    done_.Notify();
    thread_.join();
  }
  std::atomic<bool>* in_step() { return &in_step_; }
  bool abandoned() const { return abandoned_.load(); }

 private:
  void Watch(ClusterRuntime* cluster, std::ostream* err) {
    absl::Time signalled = absl::InfiniteFuture();
    while (!done_.WaitForNotificationWithTimeout(absl::Milliseconds(100))) {
      if (g_stop_signals.load() == 0) continue;
      const absl::Time now = absl::Now();
      if (signalled == absl::InfiniteFuture()) signalled = now;
      if (abandoned_.load() || !in_step_.load() || now - signalled < kGrace) continue;
      abandoned_.store(true);
      *err << (std::string(EndProgressLine()) + "stop signal: the step still waits " + absl::FormatDuration(kGrace) +
               " later (for a lost peer?); abandoning it and checkpointing the last completed step\n")
           << std::flush;
      cluster->AbortSteps(absl::CancelledError("abandoned after a stop signal"));
    }
  }

  std::atomic<bool> in_step_{false};
  std::atomic<bool> abandoned_{false};
  absl::Notification done_;
  std::thread thread_;
};

// For tests of backup workers only: SLUICE_TEST_SLOW_TASK=worker:2 and
// SLUICE_TEST_STEP_DELAY_MS=N make that task sleep N ms before every step.
class TestDelayHook : public training::TrainingHook {
 public:
  explicit TestDelayHook(absl::Duration delay) : delay_(delay) {}
  void BeforeStep(const training::StepInfo&, training::StepArgs*, training::LoopControl*) override {
    absl::SleepFor(delay_);
  }

 private:
  const absl::Duration delay_;
};

std::unique_ptr<TestDelayHook> TestDelayFor(const distributed::ResolvedIdentity& identity) {
  const char* task = std::getenv("SLUICE_TEST_SLOW_TASK");
  const char* ms = std::getenv("SLUICE_TEST_STEP_DELAY_MS");
  if (task == nullptr || ms == nullptr || identity.task.ToString() != task) return nullptr;
  return std::make_unique<TestDelayHook>(absl::Milliseconds(std::atoi(ms)));
}

// A worker of a replicated run other than the chief: waits until the chief has
// initialized or restored every variable (polling their IsVariableInitialized)
// and says it is ready for the replicas' steps (GetStatus's replica_ready,
// which a restarted chief says only once it has restored the variables: the
// variables alone may still be those the chief's previous incarnation left on
// the ps). Returns the ready chief's incarnation.
absl::StatusOr<uint64_t> WaitForChiefInit(Session* session, const models::TrainingGraph& tg, absl::Duration timeout,
                                          ClusterRuntime* cluster, std::ostream& out) {
  const absl::Time start = absl::Now();
  absl::Time next_note = start + absl::Seconds(5);
  std::vector<Tensor> fetched;
  while (true) {
    absl::Status s = session->Run({}, tg.ready, {}, &fetched);
    if (!s.ok()) return s;
    bool ready = true;
    for (const Tensor& t : fetched) ready = ready && t.scalar<bool>();
    if (ready) {
      // The chief not answering for a moment (it is restarting) is waited out
      // like a chief that is not ready yet.
      absl::StatusOr<uint64_t> chief = cluster->ChiefReadyIncarnation();
      if (chief.ok() && *chief != 0) return *chief;
    }
    if (g_stop_signals.load() > 0) return absl::CancelledError("stopped by a signal while waiting for the chief");
    if (cluster->WaitForShutdown(absl::Milliseconds(100))) {
      return absl::CancelledError(absl::StrCat("the chief stopped this task: ", cluster->shutdown_reason()));
    }
    const absl::Time now = absl::Now();
    if (now - start > timeout) {
      return absl::UnavailableError(absl::StrCat("the chief did not initialize the variables within ",
                                                 absl::FormatDuration(timeout)));
    }
    if (now > next_note) {
      out << "waiting for the chief to initialize or restore the variables\n";
      out.flush();
      next_note = now + absl::Seconds(5);
    }
  }
}

// Recovery of a replicated run (issue 16): a worker whose step failed because
// a peer was lost or restarted (a retryable status, and not the chief's stop)
// starts itself again: the chief resumes from the newest checkpoint, which
// gives a restarted ps its variables back; another worker waits for that and
// rejoins. Up to cluster.max_recoveries times per process (counted in the
// environment across the restarts); then exit 129.
int RecoverOrGiveUp(const absl::Status& why, bool chief, const config::Cluster& cluster_config,
                    ClusterRuntime* cluster, std::ostream& err) {
  const int done = RecoveriesSoFar();
  const int most = cluster_config.max_recoveries() > 0 ? cluster_config.max_recoveries() : 5;
  if (done >= most) {
    err << EndProgressLine() << "error: " << why.message() << "\nerror: giving up after " << most
        << " recoveries (cluster.max_recoveries); run the same command again to resume\n";
    if (cluster != nullptr && chief) {
      cluster->set_exit_reason(absl::StrCat("the chief gave up after ", most, " recoveries: ", why.message()));
    }
    return kExitRetryable;
  }
  err << EndProgressLine() << "lost a peer: " << why.message() << "\nrecovering (" << done + 1 << " of " << most
      << "): restarting this task; "
      << (chief ? "it resumes from the newest checkpoint" : "it rejoins once the chief has restored the variables")
      << "\n";
  err.flush();
  if (cluster != nullptr) cluster->set_stop_peers_on_exit(false);
  return kRestartThisTask;
}

// A task other than the chief: serve until the chief says stop.
// `restart_after_freeze`: see ClusterRuntime::ServeUntilShutdown. With
// `metrics` (monitoring.metrics_port 0), the task serves /metrics on a free
// port: its build and its recoveries.
int ServeClusterTask(const ClusterTaskOptions& options, std::ostream& out, std::ostream& err,
                     absl::Duration restart_after_freeze, const MetricsOptions* metrics) {
  std::unique_ptr<TrainingMetrics> served;
  if (metrics != nullptr) {
    MetricsOptions options = *metrics;
    KeepMetricsPortAcrossRestarts(&options);
    auto m = TrainingMetrics::Create(options);
    if (!m.ok()) {
      err << "error: " << m.status().message() << "\n";
      return ExitCodeForStatus(m.status());
    }
    served = std::move(m).value();
    served->SetRecoveries(RecoveriesSoFar());
    g_metrics_port_served = served->port();
    out << "metrics: " << served->Url(options.bind_address) << "\n";
    out.flush();
  }
  auto runtime = ClusterRuntime::Start(options, err);
  if (!runtime.ok()) {
    err << "error: " << runtime.status().message() << "\n";
    return absl::IsInvalidArgument(runtime.status()) ? kExitBadConfig : ExitCodeForStatus(runtime.status());
  }
  out << "task " << (*runtime)->task() << " serving on port " << (*runtime)->port() << "; waiting for every task\n";
  out.flush();
  // Every peer must run this config (the chief checks too).
  auto devices = (*runtime)->Connect(out, &g_stop_signals);
  if (absl::IsCancelled(devices.status())) return kExitPreempted;
  if (!devices.ok()) {
    err << "error: " << devices.status().message() << "\n";
    return absl::IsFailedPrecondition(devices.status()) ? kExitBadConfig : ExitCodeForStatus(devices.status());
  }
  out << "every task answered; serving until the chief says stop\n";
  out.flush();
  const int code = (*runtime)->ServeUntilShutdown(&g_stop_signals, out, err, restart_after_freeze);
  // Restarting: main execs at once. No teardown (it would wait for the steps
  // its peers abandoned); gRPC's sockets close on exec.
  if (code == kRestartThisTask) (void)runtime->release();
  return code;
}

// RunTrainer's body. `cluster`: the task's cluster runtime, which it starts
// in a cluster and which RunTrainer destroys after it returns (the chief then
// tells the other tasks to stop, with its exit code).
int RunTrainerIn(const TrainerOptions& options, std::ostream& out, std::ostream& err,
                 std::unique_ptr<ClusterRuntime>& cluster) {
  std::unique_ptr<config::LoadedExperiment> loaded_ptr;
  const int load_code = LoadExperimentForRun(options, err, &loaded_ptr);
  if (load_code != kExitDone) return load_code;
  config::LoadedExperiment& loaded = *loaded_ptr;
  config::Experiment& e = loaded.experiment;
  absl::Status s;
  config::ConfigErrors errors(options.config_path);
  // Who this process is: the cluster and its task (config, flags, TF_CONFIG, Slurm).
  distributed::IdentitySources sources;
  sources.config_cluster = &e.cluster();
  if (!options.job.empty()) sources.flag_job = options.job;
  if (options.task >= 0) sources.flag_task = options.task;
  sources.getenv = [](const char* name) -> const char* { return std::getenv(name); };
  auto identity = distributed::ResolveIdentity(sources);
  if (!identity.ok()) {
    err << options.config_path << ": error: " << identity.status().message() << "\n";
    return kExitBadConfig;
  }
  const bool in_cluster = !identity->cluster.empty();
  // Between-graph replication: every worker trains (OSDI §4.4).
  const bool replicated = in_cluster && (e.replication().has_sync() || e.replication().has_async());
  const bool replica = replicated && identity->task.job == "worker";
  const bool chief = !in_cluster || IsChief(*identity);
  // The chief's run directory, checked before any work (also at --validate).
  if (chief && Env::Default()->FileExists(e.run_dir()).ok() && !Env::Default()->IsDirectory(e.run_dir())) {
    err << options.config_path << ": error: run_dir " << e.run_dir() << " is a file, not a directory\n";
    return kExitBadConfig;
  }
  if (replicated && identity->cluster.num_tasks("ps") < 1) {
    err << options.config_path << ": error: replication needs a 'ps' job in the cluster: the variables live there\n";
    return kExitBadConfig;
  }
  if (in_cluster) {
    if (identity->cluster.num_tasks("worker") < 1) {
      err << options.config_path << ": error: the cluster has no 'worker' job; worker 0 is the chief, which trains\n";
      return kExitBadConfig;
    }
    // This process's devices are named after its task ("/job:ps/replica:0/task:0/device:CPU:0").
    s = SetLocalTaskName(ThisTaskName(*identity));
    if (!s.ok()) {
      err << "error: " << s.message() << "\n";
      return kExitPermanentError;
    }
  }
  // One pool for nodes and kernels' loops (SessionOptions::ops_on_intra_op_pool)
  // in a single process with one CPU device; cluster tasks (their workers'
  // own pools) and several CPU devices (a pool each) keep the two pools.
  const bool shared_pool =
      !e.devices().separate_inter_op_pool() && !in_cluster && std::max(1, e.devices().cpu_devices()) == 1;
  // Kernels split work by thread count, so deterministic runs fix it at 1.
  // Set before anything touches the local device. Unset: one per core, but
  // with a shared pool beside a GPU at most kIntraOpThreadsBesideAGpu.
  const int intra_op = e.train().deterministic() ? 1 : e.devices().intra_op_threads();
  s = intra_op > 0 ? DeviceMgr::SetLocalIntraOpThreads(intra_op) : absl::OkStatus();
  if (s.ok() && shared_pool) s = DeviceMgr::SetLocalIntraOpThreadsBesideAnAccelerator(kIntraOpThreadsBesideAGpu);
  if (s.ok()) s = SetLocalCpuDeviceCount(std::max(1, e.devices().cpu_devices()));
  if (s.ok() && e.devices().has_gpu()) s = SetLocalDeviceTypeEnabled(kDeviceGpu, e.devices().gpu());
  if (!s.ok()) {
    err << "error: " << s.message() << "\n";
    return kExitPermanentError;
  }
  const bool deterministic = e.train().deterministic();
  const int inter_op = deterministic ? 1 : (e.devices().inter_op_threads() > 0 ? e.devices().inter_op_threads()
                                                                               : NumSchedulableCpus());
  const std::string config_text = ConfigText(e);
  const std::string config_hash = HexHash(config_text);
  ClusterTaskOptions cluster_options;
  cluster_options.identity = *identity;
  cluster_options.cluster_config = e.cluster();
  // What every task must share: the experiment without what is each task's
  // own (its TLS files, how long it waits for the others).
  {
    config::Experiment shared = e;
    shared.mutable_cluster()->clear_tls();
    shared.mutable_cluster()->clear_start_timeout_secs();
    cluster_options.config_hash = HexHash(ConfigText(shared));
  }
  cluster_options.inter_op_threads = inter_op;
  if (in_cluster && !chief && !replica) {
    // Not the chief: serve the worker service until the chief says stop.
    out << "Experiment " << e.name() << " (" << loaded.path << ")\n"
        << "  cluster        " << identity->cluster.DebugString() << " (from " << identity->cluster_source << ")\n"
        << "  task           " << identity->task.ToString() << " (from " << identity->task_source
        << "): serves the chief, worker:0\n";
    if (options.validate_only) {
      out << options.config_path << ": OK\n";
      return kExitDone;
    }
    if (options.dry_run) return kExitDone;
    // A replicated run's ps restarts itself after a freeze longer than twice
    // the health check (keepalive: 2 s), which its peers noticed.
    MetricsOptions ps_metrics;
    ps_metrics.role = identity->task.job;
    ps_metrics.task = identity->task.index;
    ps_metrics.version = kVersion;
    ps_metrics.port = 0;
    ps_metrics.bind_address = e.monitoring().metrics_address().empty() ? "127.0.0.1" : e.monitoring().metrics_address();
    // It serves its partitions of the chief's steps; the training loop (loss, steps) is a worker's.
    ps_metrics.series.training = false;
    ps_metrics.series.checkpoints = false;
    // Every task of a cluster serves /metrics on a free port of its own when
    // asked for one (a fixed port is the chief's alone: they may share a host).
    const bool serve_metrics = e.has_monitoring() && e.monitoring().metrics_port() == 0;
    return ServeClusterTask(cluster_options, out, err, replicated ? absl::Seconds(5) : absl::InfiniteDuration(),
                            serve_metrics ? &ps_metrics : nullptr);
  }
  models::TrainingGraph tg;
  models::ReplicaOptions replica_options;
  if (replicated) {
    replica_options.num_replicas = identity->cluster.num_tasks("worker");
    replica_options.replica_index = identity->task.index;
    replica_options.sync = e.replication().has_sync();
    // Default: every worker's gradient except the backup workers'.
    const config::Replication::Sync& sync = e.replication().sync();
    replica_options.replicas_to_aggregate = sync.replicas_to_aggregate() > 0
                                                ? sync.replicas_to_aggregate()
                                                : replica_options.num_replicas - sync.backup_workers();
    if (replica_options.sync && (replica_options.replicas_to_aggregate < 1 ||
                                 replica_options.replicas_to_aggregate + sync.backup_workers() >
                                     replica_options.num_replicas)) {
      err << options.config_path << ": error: replication.sync: replicas_to_aggregate ("
          << replica_options.replicas_to_aggregate << ") + backup_workers (" << sync.backup_workers()
          << ") must be between 1 and the " << replica_options.num_replicas << " workers\n";
      return kExitBadConfig;
    }
  }
  // Staging the next batch is asked for (it is off by default: it has not run on a GPU yet,
  // and on a CPU it costs a little: docs/PERFORMANCE.md, "Session 42"); a cluster's tasks
  // do not stage.
  const bool stage_asked = e.input().train().stage_next_batch();
  replica_options.stage_batches = stage_asked && !in_cluster;
  if (stage_asked && in_cluster) {
    out << "note: input.train.stage_next_batch is for single-process runs; this task of a cluster does not stage\n";
  }
  s = models::BuildTrainingGraph(loaded, &tg, &errors, replica_options);
  if (!errors.empty()) {
    for (const std::string& line : errors.lines()) err << line << "\n";
    return kExitBadConfig;
  }
  if (!s.ok()) {
    err << options.config_path << ": error: building the training graph: " << s.message() << "\n";
    return kExitBadConfig;
  }
  // A replica's devices: variables on the ps tasks, the rest on this worker.
  models::ReplicaDevices replica_devices;
  if (replicated) {
    models::ReplicaDeviceOptions ro;
    ro.worker_task = ThisTaskName(*identity);
    for (int i = 0; i < identity->cluster.num_tasks("ps"); ++i) ro.ps_tasks.push_back(distributed::TaskName("ps", i));
    ro.round_robin = e.replication().ps_strategy() == config::Replication::ROUND_ROBIN;
    ro.global_step = tg.global_step;
    if (!tg.local_step.empty()) ro.worker_local.push_back(tg.local_step);
    for (const auto& v : tg.variables) {
      if (v.num_parts > 1) ro.partition_of[v.name] = v.part;
    }
    auto assigned = models::AssignReplicaDevices(ro, &tg.graph);
    if (!assigned.ok()) {
      err << options.config_path << ": error: placing the replica: " << assigned.status().message() << "\n";
      return kExitBadConfig;
    }
    replica_devices = std::move(assigned).value();
  }
  // The full graph must validate (ops, attrs, dtypes, shapes) before any work.
  auto full = GraphFromGraphDef(tg.graph);
  if (!full.ok()) {
    err << options.config_path << ": error: the training graph is invalid: " << full.status().message() << "\n";
    return kExitBadConfig;
  }
  // Placement on this process's devices, or on every task's in a cluster: a
  // conflict is a config error.
  std::unique_ptr<ClusterDevices> cluster_devices;
  if (in_cluster) {
    cluster_devices = std::make_unique<ClusterDevices>(*identity, e.devices().cpu_devices(), !replicated);
  }
  const DeviceSet devices = in_cluster ? cluster_devices->devices() : DeviceSetOf(*DeviceMgr::Local());
  models::PlacementPlan placement;
  if (!models::PlaceTrainingGraph(loaded, devices, &tg, full->get(), &placement, &errors)) {
    for (const std::string& line : errors.lines()) err << line << "\n";
    return kExitBadConfig;
  }
  if (!CheckVariableNames(loaded, tg, &errors)) {
    for (const std::string& line : errors.lines()) err << line << "\n";
    return kExitBadConfig;
  }
  // Summaries, metrics and step traces (models/training/), checked against the graph.
  training::StepRange trace_steps;
  if (!options.trace_steps.empty()) {
    auto range = training::ParseStepRange(options.trace_steps);
    if (!range.ok()) {
      err << "error: " << range.status().message() << "\n";
      return kExitBadConfig;
    }
    trace_steps = *range;
    if (trace_steps.first > e.train().steps()) {
      err << "error: --trace_steps=" << options.trace_steps << " starts after the run's last step, "
          << e.train().steps() << " (train.steps): nothing would be traced\n";
      return kExitBadConfig;
    }
  }
  distributed::TaskId metrics_task;
  metrics_task.job = in_cluster ? identity->task.job : "worker";
  metrics_task.index = in_cluster ? identity->task.index : 0;
  if (options.trace_device_time && trace_steps.empty()) {
    err << "error: --trace_device_time needs --trace_steps=A-B (the steps to trace)\n";
    return kExitBadConfig;
  }
  if (options.trace_device_time && in_cluster) {
    err << "error: --trace_device_time works in single-process runs only (a cluster's steps do not wait for each "
           "kernel's device); drop it, or trace a run without a cluster\n";
    return kExitBadConfig;
  }
  auto monitoring = CreateMonitoringHooks(e, tg, trace_steps, options.trace_device_time, metrics_task, chief, replicated, out, err);
  if (!monitoring.ok()) {
    err << options.config_path << ": error: " << monitoring.status().message() << "\n";
    return kExitBadConfig;
  }
  const PlanMemory plan_memory = EstimatePlanMemory(e, tg);
  {
    config::ConfigErrors memory_errors(options.config_path);
    if (!CheckPlanFitsInMemory(loaded, plan_memory, &memory_errors)) {
      for (const std::string& line : memory_errors.lines()) err << line << "\n";
      return kExitBadConfig;
    }
  }
  PrintPlan(loaded, tg, plan_memory, inter_op, shared_pool, out);
  models::PrintPlacementPlan(placement, devices, out);
  if (!identity->cluster.empty()) {
    out << "  cluster        " << identity->cluster.DebugString() << " (from " << identity->cluster_source << ")\n"
        << "  task           " << identity->task.ToString() << " (from " << identity->task_source << ")\n";
  }
  if (replicated) {
    const int workers = replica_options.num_replicas;
    const int aggregate = replica_options.replicas_to_aggregate > 0 ? replica_options.replicas_to_aggregate : workers;
    out << "  replication    "
        << (replica_options.sync ? absl::StrCat("sync: ", aggregate, " of ", workers, " workers' gradients per step",
                                               workers > aggregate ? absl::StrCat(" (", workers - aggregate, " backup)") : "")
                                 : absl::StrCat("async: ", workers, " workers apply their own gradients"))
        << "; this worker reads training "
        << (e.input().train().has_tfrecord() || e.input().train().has_csv() ? "files" : "records") << " i % " << workers
        << " == " << identity->task.index << "\n";
    for (size_t i = 0; i < replica_devices.bytes_per_ps.size(); ++i) {
      int count = 0;
      for (const auto& [name, task] : replica_devices.variable_task) count += task == distributed::TaskName("ps", static_cast<int>(i));
      out << "  ps:" << i << " holds     " << count << " variables, " << FormatBytes(static_cast<double>(replica_devices.bytes_per_ps[i]))
          << "\n";
    }
  } else if (!in_cluster && (e.replication().has_sync() || e.replication().has_async())) {
    // Not an error (the same config trains on one machine), but not what the
    // config asks for either.
    out << "  replication    " << (e.replication().has_sync() ? "sync" : "async")
        << " asked for, but this process is not in a cluster: it trains alone (start a cluster with "
           "--local_cluster ps=1,worker=2, or give each task TF_CONFIG)\n";
  }
  out.flush();
  // Run directory, resolved config and provenance.
  const std::string run_dir = e.run_dir();
  Env* env = Env::Default();
  // The chief owns the run directory; another replica writes nothing there.
  // --validate and --dry-run check it as the run would, and create nothing.
  if (chief) {
    const std::string config_copy = JoinPath(run_dir, "config.pbtxt");
    // The resolved config of an earlier run here (a regular file of bounded
    // size; anything else is not a previous run's copy).
    constexpr uint64_t kMaxConfigCopyBytes = 64 << 20;
    auto previous_or = ReadRegularFile(env, config_copy, kMaxConfigCopyBytes);
    const std::string previous = previous_or.ok() ? *previous_or : "";
    // A restart in new places (the cluster's addresses) is the same run.
    const std::string compared_previous = previous_or.ok() ? ConfigForDriftCheck(previous) : "";
    const std::string compared_now = ConfigForDriftCheck(config_text);
    if (previous_or.ok() && compared_previous != compared_now) {
      if (!options.allow_drift) {
        err << run_dir << "/config.pbtxt: error: the run directory holds a run of a different config; "
            << "pass --allow-drift to resume it anyway, or use another --run_dir. Differences:\n"
            << LineDiff(compared_previous, compared_now);
        return kExitBadConfig;
      }
      if (!options.validate_only && !options.dry_run) {
        out << "resuming with a changed config (--allow-drift):\n" << LineDiff(compared_previous, compared_now);
        // The input resumes at step x batch size: with another batch size
        // that is not where the earlier run stopped reading.
        config::Experiment before;
        if (google::protobuf::TextFormat::ParseFromString(previous, &before) &&
            before.input().train().batch_size() != e.input().train().batch_size()) {
          out << "warning: the training batch size changed from " << before.input().train().batch_size() << " to "
              << e.input().train().batch_size() << ": the input resumes at the restored step x "
              << e.input().train().batch_size() << " examples, not where the earlier run stopped reading\n";
        }
      }
    }
  }
  if (options.validate_only) {
    out << options.config_path << ": OK\n";
    return kExitDone;
  }
  if (options.dry_run) return kExitDone;
  // /metrics binds its port before anything goes into the run directory: a
  // taken port (fixed metrics_port) then leaves no event file, checkpoints
  // folder or config copy behind in a directory the run never used.
  if (monitoring->metrics != nullptr) {
    if (absl::Status serving = monitoring->metrics->Serve(); !serving.ok()) {
      err << "error: " << serving.message() << "\n";
      return ExitCodeForStatus(serving);
    }
  }
  if (chief) {
    if (absl::Status made = env->CreateDirs(run_dir); !made.ok()) {
      err << "error: cannot create run directory " << run_dir << ": " << made.message() << "\n";
      return kExitPermanentError;
    }
    if (absl::Status locked = LockRunDirectory(run_dir); !locked.ok()) {
      err << "error: " << locked.message() << "\n";
      return ExitCodeForStatus(locked);
    }
    const std::string config_copy = JoinPath(run_dir, "config.pbtxt");
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    s = WriteFileAtomically(env, config_copy, config_text);
    if (s.ok()) {
      s = WriteFileAtomically(env, JoinPath(run_dir, "provenance.txt"),
                    absl::StrCat("version: ", kVersion, "\nconfig: ", options.config_path, "\nconfig_hash: ", config_hash,
                                 "\nhost: ", host, "\nstart_time: ", absl::FormatTime(absl::Now(), absl::UTCTimeZone()),
                                 "\n"));
    }
    if (!s.ok()) {
      err << "error: " << s.message() << "\n";
      return ExitCodeForStatus(s);
    }
  }

  SessionOptions session_options;
  session_options.allow_soft_placement = e.devices().allow_soft_placement();
  session_options.inter_op_threads = inter_op;
  session_options.ops_on_intra_op_pool = shared_pool;
  // Graph rewrites: unset means on.
  const config::GraphRewrites& rewrites = e.train().graph_rewrites();
  session_options.enable_constant_folding = !rewrites.has_constant_folding() || rewrites.constant_folding();
  session_options.enable_identity_removal = !rewrites.has_identity_removal() || rewrites.identity_removal();
  session_options.fuse_bias_activation = !rewrites.has_fuse_bias_activation() || rewrites.fuse_bias_activation();
  session_options.fuse_batch_norm = !rewrites.has_fuse_batch_norm() || rewrites.fuse_batch_norm();
  const config::Kernels& kernels = e.train().kernels();
  session_options.onednn_kernels = !kernels.has_onednn() || kernels.onednn();  // unset: on
  session_options.winograd_kernels = !kernels.has_winograd() || kernels.winograd();  // unset: on
  // In a cluster: this task's server (`cluster`, which outlives this
  // function, so the session goes first and the other tasks are told to stop
  // last), then every task's answer, then a session over all of them.
  absl::StatusOr<std::unique_ptr<Session>> session_or;
  if (in_cluster) {
    auto started = ClusterRuntime::Start(cluster_options, err);
    if (!started.ok()) {
      err << "error: " << started.status().message() << "\n";
      // Bad TLS files are the config's fault.
      return absl::IsInvalidArgument(started.status()) ? kExitBadConfig : ExitCodeForStatus(started.status());
    }
    cluster = std::move(started).value();
    out << "task " << cluster->task() << " serving on port " << cluster->port() << "; waiting for every task\n";
    out.flush();
    auto cluster_devices_or = cluster->Connect(out, &g_stop_signals);
    if (absl::IsCancelled(cluster_devices_or.status())) return kExitPreempted;
    if (!cluster_devices_or.ok()) {
      err << "error: " << cluster_devices_or.status().message() << "\n";
      cluster->set_exit_reason(absl::StrCat("the chief could not start: ", cluster_devices_or.status().message()));
      return absl::IsFailedPrecondition(cluster_devices_or.status()) ? kExitBadConfig
                                                                     : ExitCodeForStatus(cluster_devices_or.status());
    }
    out << "every task answered: " << cluster_devices_or->size() << " devices\n";
    if (replicated) {
      cluster->StartHealthChecks(absl::Seconds(1), &err, chief ? &g_stop_signals : nullptr);
      ClusterRuntime* runtime = cluster.get();
      if (monitoring->metrics) monitoring->metrics->set_peers_alive([runtime] { return runtime->peers_alive(); });
    }
    std::vector<distributed::DeviceAttributes> session_devices = std::move(cluster_devices_or).value();
    if (replicated) {
      // A replica's session spans this task and the ps tasks only.
      const std::string self = ThisTaskName(*identity);
      session_devices.erase(std::remove_if(session_devices.begin(), session_devices.end(),
                                           [&self](const distributed::DeviceAttributes& d) {
                                             return absl::StartsWith(d.name(), "/job:worker/") &&
                                                    !absl::StartsWith(d.name(), self + "/");
                                           }),
                            session_devices.end());
    }
    session_or = cluster->NewSession(std::move(session_devices), session_options);
  } else {
    session_or = NewSession(session_options);
  }
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
  // train.best_model, which needs evaluations: the best checkpoint and early stopping.
  const bool selects_best = e.train().has_best_model() && tg.has_eval;
  saver_options.records_best = selects_best;
  std::vector<bool> model_variable;
  const std::vector<checkpoint::SaveableVariable> saveables = SaveablesOf(tg.variables, tg.global_step, &model_variable);
  std::unique_ptr<checkpoint::Saver> saver;
  if (chief) {
    auto saver_or = checkpoint::Saver::Create(saver_options, saveables);
    if (!saver_or.ok()) {
      err << "error: " << saver_or.status().message() << "\n";
      return kExitPermanentError;
    }
    saver = std::move(saver_or).value();
    s = saver->Extend(session.get());
    if (!s.ok()) {
      err << "error: adding checkpoint nodes: " << s.message() << "\n";
      return kExitPermanentError;
    }
  }
  std::vector<Tensor> fetched;
  int64_t step = 0;
  // Another replica: the chief initializes or restores; this one waits.
  absl::StatusOr<int64_t> restored = absl::NotFoundError("not the chief");
  std::string restored_dir;
  uint64_t chief_incarnation = 0;  // another replica: the chief's that said ready
  if (!chief) {
    const int secs = e.cluster().start_timeout_secs();
    absl::StatusOr<uint64_t> ready_chief =
        WaitForChiefInit(session.get(), tg, absl::Seconds(secs > 0 ? secs : 300), cluster.get(), out);
    if (ready_chief.ok()) chief_incarnation = *ready_chief;
    s = ready_chief.status();
    if (absl::IsCancelled(s)) {
      out << s.message() << "\n";
      if (g_stop_signals.load() > 0) return kExitPreempted;
      return cluster->WaitForShutdown(absl::ZeroDuration()) ? cluster->shutdown_exit_code() : kExitDone;
    }
    if (!s.ok()) {
      if (ExitCodeForStatus(s) == kExitRetryable) return RecoverOrGiveUp(s, chief, e.cluster(), cluster.get(), err);
      err << "error: " << s.message() << "\n";
      return ExitCodeForStatus(s);
    }
  } else {
    restored = saver->RestoreLatest(session.get(), checkpoint::VerifyLevel::kFull, &restored_dir);
  }
  if (!chief) {
    // Below: read the global step the chief left.
  } else if (restored.ok()) {
    s = session->Run({}, {tg.global_step}, {}, &fetched);
    if (!s.ok()) {
      if (replica && ExitCodeForStatus(s) == kExitRetryable) return RecoverOrGiveUp(s, chief, e.cluster(), cluster.get(), err);
      err << "error: reading the restored step: " << s.message() << "\n";
      return ExitCodeForStatus(s);
    }
    step = fetched[0].scalar<int64_t>();
    // The checkpoint's own step: with async replicas another worker may
    // already have stepped past it by the time the global step is read.
    out << "resumed from " << restored_dir << " at step " << *restored << "\n";
  } else if (absl::IsNotFound(restored.status())) {
    s = session->Run({}, {}, {tg.init_op}, &fetched);
    if (!s.ok()) {
      if (replica && ExitCodeForStatus(s) == kExitRetryable) return RecoverOrGiveUp(s, chief, e.cluster(), cluster.get(), err);
      err << "error: initializing variables: " << s.message() << "\n";
      return ExitCodeForStatus(s);
    }
    if (e.checkpoint().has_warm_start()) {
      const config::Checkpoint::WarmStart& w = e.checkpoint().warm_start();
      const std::set<std::string> listed(w.variables().begin(), w.variables().end());
      std::set<std::string> wanted = listed;  // those not found yet
      std::vector<checkpoint::SaveableVariable> chosen;
      for (size_t i = 0; i < saveables.size(); ++i) {
        if (!model_variable[i] || (!listed.empty() && wanted.erase(saveables[i].name) == 0)) continue;
        chosen.push_back(saveables[i]);
      }
      if (!wanted.empty()) {
        err << options.config_path << ": error: checkpoint.warm_start.variables: '" << *wanted.begin()
            << "' is not a variable of this model\n";
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
      out << "warm-started " << CountOf(static_cast<int64_t>(chosen.size()), "variable", "variables") << " from " << w.from()
          << "\n";
    }
  } else {
    if (replica && ExitCodeForStatus(restored.status()) == kExitRetryable) {
      return RecoverOrGiveUp(restored.status(), chief, e.cluster(), cluster.get(), err);
    }
    err << "error: restoring " << run_dir << ": " << restored.status().message() << "\n";
    if (absl::IsFailedPrecondition(restored.status())) {
      // The run directory holds another model's checkpoints (its layers or
      // its optimizer changed): the config's mistake, not a fault.
      err << "  (this run directory's checkpoints were written by another model: train in a new --run_dir, or "
             "take the variables that still fit with checkpoint { warm_start { from: \""
          << run_dir << "\" variables: ... } })\n";
      return kExitBadConfig;
    }
    return ExitCodeForStatus(restored.status());
  }

  if (replicated) {
    // Sync: the chief points every accumulator at the global step; every
    // worker starts its local step there. Every replica starts counting at the
    // global step.
    std::vector<std::string> targets;
    if (chief && !tg.chief_init_op.empty()) targets.push_back(tg.chief_init_op);
    if (!tg.local_init_op.empty()) targets.push_back(tg.local_init_op);
    s = session->Run({}, {tg.global_step}, targets, &fetched);
    if (!s.ok()) {
      if (ExitCodeForStatus(s) == kExitRetryable) return RecoverOrGiveUp(s, chief, e.cluster(), cluster.get(), err);
      err << "error: starting the replica: " << s.message() << "\n";
      return ExitCodeForStatus(s);
    }
    step = fetched[0].scalar<int64_t>();
    if (chief) {
      cluster->SetReplicaReady();
    } else {
      out << "the chief is ready: training from step " << step << "\n";
      if (replica_options.sync) cluster->AbortStepsWhenChiefChanges(chief_incarnation);
    }
  }

  // The loop and its hooks, in the order the loop calls them (models/training/hook.h):
  // monitoring first (its fetches and files), then the progress line, the checkpoints, the
  // stop signals, evaluation, and the input pipeline (started last, stopped last).
  const int64_t total = e.train().steps();
  const int64_t batch = e.input().train().batch_size();
  const bool tty = ::isatty(STDOUT_FILENO);
  training::ProgressHook progress({tty, e.train().log_every_steps(), options.print_losses}, &out);
  std::vector<training::CheckpointListener*> checkpoint_listeners;
  if (monitoring->metrics) checkpoint_listeners.push_back(monitoring->metrics.get());
  if (monitoring->summaries) checkpoint_listeners.push_back(monitoring->summaries.get());  // flushes the event file
  std::unique_ptr<training::CheckpointHook> checkpoints;
  if (saver != nullptr) checkpoints = std::make_unique<training::CheckpointHook>(saver.get(), checkpoint_listeners, &out, &err);
  training::StopSignalHook stop_signals(&g_stop_signals, &out);
  training::EvalHookOptions eval_options;
  if (tg.has_eval) {
    eval_options.loss = tg.eval_loss;
    eval_options.metrics = tg.eval_metrics;
    eval_options.perplexity = tg.eval_perplexity;
    eval_options.examples_per_epoch = tg.eval_input.examples_per_epoch;
    eval_options.batch_size = e.input().eval().batch_size();
  }
  eval_options.every_steps = e.train().eval_every_steps();
  eval_options.results_file = run_dir + "/eval.txt";
  eval_options.stop_signals = &g_stop_signals;
  // train.best_model: the best checkpoint by an evaluation value, and early stopping.
  std::unique_ptr<training::BestModelHook> best_model;
  std::vector<training::EvalListener*> eval_listeners = {monitoring->summaries.get()};
  if (monitoring->metrics) eval_listeners.push_back(monitoring->metrics.get());
  if (selects_best) {
    training::BestModelHookOptions bo;
    bo.metric = e.train().best_model().metric().empty() ? "loss" : e.train().best_model().metric();
    // The validator checked the name against the config; this is the graph's own list.
    std::vector<std::string> reported = {"loss"};
    if (tg.eval_perplexity) reported.push_back("perplexity");
    for (const auto& [name, tensor] : tg.eval_metrics) reported.push_back(name);
    if (std::find(reported.begin(), reported.end(), bo.metric) == reported.end()) {
      err << options.config_path << ": error: train.best_model.metric '" << bo.metric
          << "' is not a value this model's evaluation reports (" << absl::StrJoin(reported, ", ") << ")\n";
      return kExitBadConfig;
    }
    bo.higher_is_better = config::HigherIsBetter(bo.metric);
    bo.min_delta = e.train().best_model().min_delta();
    bo.patience = e.train().best_model().patience();
    bo.results_file = eval_options.results_file;
    bo.run_dir = run_dir;
    best_model = std::make_unique<training::BestModelHook>(bo, saver.get(), &out, &err);
    eval_listeners.push_back(best_model.get());
  }
  training::EvalHook eval(eval_options, eval_listeners, &out, &err);
  // An async replica consumes about its share of the global steps.
  const int64_t input_per_step = replicated && !replica_options.sync ? std::max<int64_t>(1, batch / replica_options.num_replicas)
                                                                      : batch;
  models::InputPipeline train_input = tg.train_input;
  // An async replica's share of the global steps is an estimate: so is its input position.
  if (replicated && !replica_options.sync) train_input.exact_order = false;
  // The chief keeps the training files' sizes in the run directory: a resume warns about those changed.
  training::InputHook inputs({train_input, tg.eval_input, input_per_step, chief ? JoinPath(run_dir, "input_files.txt") : ""},
                             &out);
  std::vector<training::TrainingHook*> hooks;
  std::unique_ptr<ChiefStopHook> chief_stop;
  if (chief) {
    hooks = {monitoring->summaries.get(), monitoring->trace.get()};
    if (monitoring->metrics) hooks.push_back(monitoring->metrics.get());
    for (training::TrainingHook* h : std::initializer_list<training::TrainingHook*>{
             &progress, checkpoints.get(), &stop_signals, &eval, best_model.get(), &inputs}) {
      if (h != nullptr) hooks.push_back(h);
    }
  } else {
    // Another replica reports its progress and stops with the chief; the
    // chief alone writes summaries, checkpoints and evaluations.
    chief_stop = std::make_unique<ChiefStopHook>(cluster.get());
    hooks = {&progress, &stop_signals, chief_stop.get(), &inputs};
    if (monitoring->metrics) hooks.insert(hooks.begin(), monitoring->metrics.get());
  }
  std::unique_ptr<TestDelayHook> test_delay = in_cluster ? TestDelayFor(*identity) : nullptr;
  if (test_delay != nullptr) hooks.push_back(test_delay.get());

  training::TrainingLoopOptions loop_options;
  loop_options.loss = tg.loss;
  loop_options.train_op = tg.train_op;
  loop_options.learning_rate_feed = tg.learning_rate;
  loop_options.learning_rate = [&e, total](int64_t at) { return models::LearningRateAt(e.optimizer(), total, at); };
  loop_options.examples_per_step = batch;
  loop_options.step_tensor = tg.step_tensor;
  loop_options.stage_op = tg.train_input.stage_op;
  if (chief && !tg.chief_train_op.empty()) {
    loop_options.train_op = tg.chief_train_op;
    loop_options.step_tensor = tg.chief_train_op + ":0";
  }
  training::LoopStart start;
  start.step = step;
  start.last_step = total;
  start.resumed = restored.ok();
  std::unique_ptr<StuckStepWatchdog> watchdog;
  if (in_cluster) {
    watchdog = std::make_unique<StuckStepWatchdog>(cluster.get(), &err);
    loop_options.in_step = watchdog->in_step();
    StuckStepWatchdog* w = watchdog.get();
    loop_options.abandoned_for_stop = [w] { return w->abandoned(); };
  }
  const training::LoopEnd end = training::RunTrainingLoop(session.get(), loop_options, start, hooks);
  watchdog.reset();
  if (monitoring->metrics) g_metrics_port_served = monitoring->metrics->port();
  if (!chief) {
    // A replica's step fails when the chief stops the run under it (its ps
    // tasks go away): that is the end of the run, not a failure. The chief's
    // word may trail the failure by a moment.
    const bool stopped_by_chief =
        cluster->WaitForShutdown(end.status.ok() ? absl::ZeroDuration() : absl::Seconds(3));
    if (stopped_by_chief && !end.preempted()) {
      // The run's outcome: 0 done, 143 stopped by a signal (resume later), else failed.
      const int code = cluster->shutdown_exit_code();
      out << EndProgressLine() << "stopped by the chief at step " << end.step << ": " << cluster->shutdown_reason()
          << (code != 0 ? absl::StrCat(" (exit ", code, ")") : "") << "\n";
      return code;
    }
    if (!stopped_by_chief && end.status.ok() && !end.preempted()) {
      // This replica reached the last step by itself (async: the global step
      // got there, maybe while the chief was away and restarting). It serves
      // on until the chief stops the run: a restarted chief waits for every
      // task to answer before it resumes.
      out << "reached the last step; serving until the chief stops the run\n";
      out.flush();
      return cluster->ServeUntilShutdown(&g_stop_signals, out, err);
    }
  }
  // (A step cancelled while nobody here stopped it was cancelled by a peer's loss.)
  if (replica && end.reason == training::LoopStop::kStepFailed && !end.preempted() &&
      (ExitCodeForStatus(end.status) == kExitRetryable || absl::IsCancelled(end.status)) &&
      g_stop_signals.load() == 0) {
    // A step aborted because the chief was lost says so, not which of this
    // step's nodes saw the abort first.
    const std::string chief_lost = chief ? "" : cluster->chief_lost();
    return RecoverOrGiveUp(chief_lost.empty() ? end.status : absl::UnavailableError(chief_lost), chief, e.cluster(),
                           cluster.get(), err);
  }
  // A signal that came after the last step abandoned the final evaluation
  // (the final checkpoint is written): a stop as much as a preemption.
  const bool stopped_by_signal = end.preempted() || (absl::IsCancelled(end.status) && g_stop_signals.load() > 0);
  if (cluster != nullptr && chief) {
    cluster->set_exit_reason(stopped_by_signal  ? "the chief was stopped by a signal"
                             : end.status.ok() ? "the chief finished training"
                                               : absl::StrCat("the chief failed: ", end.status.message()));
  }
  switch (end.reason) {
    case training::LoopStop::kBeginFailed:
      err << "error: " << end.status.message() << "\n";
      return ExitCodeForStatus(end.status);
    case training::LoopStop::kStepFailed: {
      // A step that fails because its input failed says why with the input's error.
      const absl::Status input_error = inputs.status();
      const absl::Status& why = input_error.ok() ? end.status : input_error;
      err << EndProgressLine() << "error at step " << end.step << ": " << why.message() << "\n";
      return ExitCodeForStatus(why);
    }
    case training::LoopStop::kAfterStepFailed:
      err << EndProgressLine() << "error: " << end.status.message() << "\n";
      return ExitCodeForStatus(end.status);
    default:
      break;
  }
  // Failures at the end (final checkpoint, final evaluation) were printed by their hooks.
  return stopped_by_signal ? kExitPreempted : ExitCodeForStatus(end.status);
}

}  // namespace

int RunTrainer(const TrainerOptions& options, std::ostream& out, std::ostream& err) {
  std::unique_ptr<ClusterRuntime> cluster;
  const int code = RunTrainerIn(options, out, err, cluster);
  // However the run ended, the chief's Shutdown calls (as `cluster` goes)
  // carry its exit code, which the other tasks exit with.
  if (cluster != nullptr && code != kRestartThisTask) cluster->set_exit_code(code);
  cluster.reset();
  return code;
}

}  // namespace sluice
