// `train CONFIG [--validate] [--dry-run] [--set field.path=value]...
//  [--run_dir DIR] [--allow-drift] [--trace_steps=A-B [--trace_device_time]] [--job NAME --task N]
//  [--local_cluster ps=N,worker=M] [--export PATH [--export_outputs A,B] [--export_checkpoint C]]`: runs a Sluice
// experiment, or with --local_cluster the whole cluster of one on this machine
// (cmd/train/local_cluster.h), or with --export writes the run's newest checkpoint as a
// frozen inference graph, a GraphDef or a SavedModel (cmd/train/export.h). Exit codes in cmd/train/exit_codes.h.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "cmd/train/exit_codes.h"
#include "cmd/train/export.h"
#include "cmd/train/local_cluster.h"
#include "cmd/train/trainer.h"

namespace {

constexpr char kUsage[] =
    "usage: train CONFIG [--validate] [--dry-run] [--set field.path=value]... [--run_dir DIR] [--allow-drift]\n"
    "             [--trace_steps=A-B [--trace_device_time]] [--print_losses] [--job NAME --task N]\n"
    "             [--local_cluster ps=N,worker=M[,restarts=R]]\n"
    "       train CONFIG --export PATH [--export_outputs A,B] [--export_checkpoint latest|best|STEP]\n"
    "             [--set field.path=value]... [--run_dir DIR] [--allow-drift]\n"
    "  --validate     check the experiment (and the run directory, as a run would: a different\n"
    "                 config there needs --allow-drift) and print the plan; do no work\n"
    "  --dry-run      build everything, check the run directory and print the plan; do not train\n"
    "  --set K=V      override a config field, e.g. --set train.steps=100\n"
    "  --run_dir DIR  where checkpoints, summaries and results go (default: the config's run_dir)\n"
    "  --allow-drift  resume a run directory whose config differs from CONFIG\n"
    "  --trace_steps=A-B  write a Chrome trace (Perfetto, chrome://tracing) of steps A..B\n"
    "                 to RUN_DIR/traces/step_N.json; one step: --trace_steps=A\n"
    "  --trace_device_time  in traced steps, each GPU kernel waits for its GPU work, so a node's\n"
    "                 duration is its GPU time (plus the launch) rather than the host's time to\n"
    "                 queue it; those steps run slower; single-process runs only; with\n"
    "                 devices.intra_op_threads 1, no record includes another node's GPU work\n"
    "                 queued meanwhile\n"
    "  --print_losses   print every step's loss at full precision (\"loss at step N: X\")\n"
    "  --job NAME --task N  this process's task in the cluster (else from TF_CONFIG or Slurm's\n"
    "                 SLURM_PROCID; sources that disagree are an error)\n"
    "  --local_cluster ps=N,worker=M  run the whole cluster on this machine: one train process per\n"
    "                 task on a free 127.0.0.1 port, each with its own TF_CONFIG (so no --job/--task\n"
    "                 and no TF_CONFIG or SLURM_PROCID around it); their output lines are prefixed\n"
    "                 [ps:0], [worker:1]...; SIGTERM/SIGINT are passed on to every task; with\n"
    "                 restarts=R a task other than the chief that dies (a signal, a code >= 128)\n"
    "                 is started again, up to R times; a task that dies and is not started\n"
    "                 again stops the cluster (SIGTERM to every task)\n"
    "  --export PATH  write the run directory's newest checkpoint as a frozen inference graph and\n"
    "                 exit: a TensorFlow GraphDef if PATH ends in .pb (text: .pbtxt), else a\n"
    "                 SavedModel directory (new or empty; tag serve, signature serving_default);\n"
    "                 its inputs are the model's features (image:0, ...), its outputs each loss's\n"
    "                 predictions:\n"
    "                 outputs/L:0, outputs/L/probabilities:0 and outputs/L/classes:0 for logits L;\n"
    "                 CONFIG's model must be the run directory's (config.pbtxt), unless --allow-drift\n"
    "  --export_outputs A,B  export these layers (outputs/A:0, ...) instead\n"
    "  --export_checkpoint C  export checkpoint C instead of the newest: best (the best evaluation's,\n"
    "                 kept by train.best_model) or a retained step, e.g. 3000\n"
    "exit codes: 0 done, 2 bad config or usage, 1 other permanent errors, 129 transient failure,\n"
    "            143 stopped by SIGTERM/SIGINT after a checkpoint (run again to resume; a second\n"
    "            signal a second or more after the first stops at once, without one);\n"
    "            with --local_cluster: the chief's (worker 0's) code, a task killed by signal S\n"
    "            counting as 128+S, or the code of another task that failed for good (1-127)\n"
    "            before the chief ended\n";

// When the first SIGTERM/SIGINT arrived (CLOCK_MONOTONIC ns); 0: none yet.
std::atomic<int64_t> g_first_signal_ns{0};

void OnSignal(int) {
  // First signal: finish the step and checkpoint. Another one a second or
  // more later: leave now. One arriving sooner is the same request delivered
  // twice (timeout(1) signals the process and then its process group; Ctrl-C
  // under --local_cluster reaches a task from the terminal and from the
  // launcher) and must not cost the checkpoint.
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  const int64_t now_ns = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  int64_t first = 0;
  if (g_first_signal_ns.compare_exchange_strong(first, now_ns)) {
    sluice::g_stop_signals.fetch_add(1);
    return;
  }
  if (now_ns - first < 1000000000) return;
  sluice::g_stop_signals.fetch_add(1);
  _exit(sluice::kExitPreempted);
}

}  // namespace

int main(int argc, char** argv) {
  // --local_cluster SPEC is the launcher's own flag: it is taken out here; the
  // other arguments are checked below as usual and then passed to every task.
  std::optional<std::string> local_cluster;
  std::vector<char*> args = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string dashes = arg.rfind("--local-cluster", 0) == 0 ? "--local-cluster" : "--local_cluster";
    if ((arg == dashes || arg.rfind(dashes + "=", 0) == 0) && local_cluster.has_value()) {
      std::cerr << "error: --local_cluster is given twice\n" << kUsage;
      return sluice::kExitBadConfig;
    }
    if (arg == dashes) {
      if (i + 1 >= argc) {
        std::cerr << "error: --local_cluster needs jobs and task counts, e.g. ps=1,worker=2\n" << kUsage;
        return sluice::kExitBadConfig;
      }
      local_cluster = argv[++i];
    } else if (arg.rfind(dashes + "=", 0) == 0) {
      local_cluster = arg.substr(dashes.size() + 1);
    } else {
      args.push_back(argv[i]);
    }
  }
  const std::vector<std::string> task_args(args.begin() + 1, args.end());
  args.push_back(nullptr);
  argc = static_cast<int>(args.size()) - 1;
  argv = args.data();

  sluice::TrainerOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> const char* {
      if (arg.size() > flag.size() && arg.compare(0, flag.size() + 1, flag + "=") == 0) return argv[i] + flag.size() + 1;
      // The next argument, unless it is another flag ("--job --task 0": the
      // job is missing, not named "--task").
      if (arg == flag && i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) return argv[++i];
      return nullptr;
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return sluice::kExitDone;
    } else if (arg == "--validate") {
      options.validate_only = true;
    } else if (arg == "--trace_device_time" || arg == "--trace-device-time") {
      options.trace_device_time = true;
    } else if (arg == "--print_losses" || arg == "--print-losses") {
      options.print_losses = true;
    } else if (arg == "--dry-run" || arg == "--dry_run") {
      options.dry_run = true;
    } else if (arg == "--allow-drift" || arg == "--allow_drift") {
      options.allow_drift = true;
    } else if (arg.rfind("--set", 0) == 0) {
      const char* v = value("--set");
      if (v == nullptr) {
        std::cerr << "error: --set needs field.path=value\n" << kUsage;
        return sluice::kExitBadConfig;
      }
      options.overrides.push_back(v);
    } else if (arg.rfind("--run_dir", 0) == 0 || arg.rfind("--run-dir", 0) == 0) {
      const char* v = value(arg.rfind("--run_dir", 0) == 0 ? "--run_dir" : "--run-dir");
      if (v == nullptr) {
        std::cerr << "error: --run_dir needs a directory\n" << kUsage;
        return sluice::kExitBadConfig;
      }
      options.run_dir = v;
    } else if (arg.rfind("--trace_steps", 0) == 0 || arg.rfind("--trace-steps", 0) == 0) {
      const char* v = value(arg.rfind("--trace_steps", 0) == 0 ? "--trace_steps" : "--trace-steps");
      if (v == nullptr) {
        std::cerr << "error: --trace_steps needs a step range A-B\n" << kUsage;
        return sluice::kExitBadConfig;
      }
      options.trace_steps = v;
    } else if (arg.rfind("--export_outputs", 0) == 0 || arg.rfind("--export-outputs", 0) == 0) {
      const char* v = value(arg.rfind("--export_outputs", 0) == 0 ? "--export_outputs" : "--export-outputs");
      if (v != nullptr) options.export_outputs = absl::StrSplit(v, ',', absl::SkipEmpty());
      if (options.export_outputs.empty()) {
        std::cerr << "error: --export_outputs needs layer names, e.g. fc2,logits\n" << kUsage;
        return sluice::kExitBadConfig;
      }
    } else if (arg.rfind("--export_checkpoint", 0) == 0 || arg.rfind("--export-checkpoint", 0) == 0) {
      const char* v = value(arg.rfind("--export_checkpoint", 0) == 0 ? "--export_checkpoint" : "--export-checkpoint");
      if (v == nullptr || *v == '\0') {
        std::cerr << "error: --export_checkpoint needs latest, best or a step number\n" << kUsage;
        return sluice::kExitBadConfig;
      }
      options.export_checkpoint = v;
      int64_t step = -1;
      if (options.export_checkpoint != "latest" && options.export_checkpoint != "best" &&
          !(absl::SimpleAtoi(options.export_checkpoint, &step) && step >= 0)) {
        std::cerr << "error: --export_checkpoint takes latest, best or a step number, got '" << v << "'\n" << kUsage;
        return sluice::kExitBadConfig;
      }
    } else if (arg.rfind("--export", 0) == 0) {
      const char* v = value("--export");
      if (v == nullptr || *v == '\0') {
        std::cerr << "error: --export needs the path of the GraphDef to write\n" << kUsage;
        return sluice::kExitBadConfig;
      }
      options.export_path = v;
    } else if (arg.rfind("--job", 0) == 0) {
      const char* v = value("--job");
      if (v == nullptr || *v == '\0') {
        std::cerr << "error: --job needs a job name (ps or worker)\n" << kUsage;
        return sluice::kExitBadConfig;
      }
      options.job = v;
    } else if (arg.rfind("--task", 0) == 0) {
      const char* v = value("--task");
      char* end = nullptr;
      const long task = v == nullptr ? -1 : std::strtol(v, &end, 10);
      if (v == nullptr || *v == '\0' || *end != '\0' || task < 0 || task > 1000000) {
        std::cerr << "error: --task needs a task index >= 0" << (v != nullptr ? std::string(", got '") + v + "'" : "")
                  << "\n" << kUsage;
        return sluice::kExitBadConfig;
      }
      options.task = static_cast<int>(task);
    } else if (!arg.empty() && arg[0] == '-') {
      std::cerr << "error: unknown flag " << arg << "\n" << kUsage;
      return sluice::kExitBadConfig;
    } else if (options.config_path.empty()) {
      options.config_path = arg;
    } else {
      std::cerr << "error: more than one CONFIG (" << options.config_path << ", " << arg << ")\n" << kUsage;
      return sluice::kExitBadConfig;
    }
  }
  if (options.config_path.empty()) {
    std::cerr << kUsage;
    return sluice::kExitBadConfig;
  }
  if (!options.export_path.empty() || !options.export_outputs.empty() || !options.export_checkpoint.empty()) {
    std::string conflict;
    if (options.export_path.empty()) {
      conflict = options.export_outputs.empty() ? "--export_checkpoint needs --export PATH"
                                                : "--export_outputs needs --export PATH";
    }
    const std::pair<bool, const char*> others[] = {
        {local_cluster.has_value(), "--local_cluster"}, {options.validate_only, "--validate"},
        {options.dry_run, "--dry-run"},                {!options.trace_steps.empty(), "--trace_steps"},
        {options.trace_device_time, "--trace_device_time"}, {options.print_losses, "--print_losses"},
        {!options.job.empty() || options.task >= 0, "--job/--task"}};
    for (const auto& [given, flag] : others) {
      if (given && conflict.empty()) conflict = std::string("--export does not train; drop ") + flag;
    }
    if (!conflict.empty()) {
      std::cerr << "error: " << conflict << "\n" << kUsage;
      return sluice::kExitBadConfig;
    }
    return sluice::RunExport(options, std::cout, std::cerr);
  }
  if (local_cluster.has_value()) {
    absl::StatusOr<sluice::LocalClusterShape> shape = sluice::ParseLocalClusterSpec(*local_cluster);
    if (!shape.ok()) {
      std::cerr << "error: " << shape.status().message() << "\n" << kUsage;
      return sluice::kExitBadConfig;
    }
    sluice::LocalClusterOptions cluster;
    // The binary that is running, even if its file has been replaced since;
    // the tasks see our argv[0].
    cluster.program = "/proc/self/exe";
    cluster.argv0 = argv[0];
    cluster.args = task_args;
    cluster.shape = *shape;
    return sluice::RunLocalCluster(cluster, std::cout, std::cerr);
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  const int code = sluice::RunTrainer(options, std::cout, std::cerr);
  if (code != sluice::kRestartThisTask) return code;
  // Recovery (cmd/train/trainer.cc): everything of this run is torn down;
  // start the same command again in this process (same pid, same output).
  const int recoveries = sluice::RecoveriesSoFar() + 1;
  setenv(sluice::kRecoveriesEnv, std::to_string(recoveries).c_str(), 1);
  if (sluice::MetricsPortServed() > 0) {
    setenv(sluice::kMetricsPortEnv, std::to_string(sluice::MetricsPortServed()).c_str(), 1);
  }
  std::cout.flush();
  std::cerr.flush();
  execv("/proc/self/exe", argv);
  std::cerr << "error: cannot restart this task: " << std::strerror(errno) << "\n";
  return sluice::kExitRetryable;
}
