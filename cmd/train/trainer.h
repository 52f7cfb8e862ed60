// Trainer: runs an experiment end to end — validate, build the training
// graph, print the plan, prepare the run directory, initialize or resume from
// the latest checkpoint (or warm-start), then hand the session to the training
// loop (models/training/training_loop.h) with its hooks: summaries, traces,
// metrics, the progress line, checkpoints, stop signals (SIGTERM/SIGINT:
// finish the step, save, exit 143), evaluation and the input pipeline. This
// file is the wiring: config -> hook options, and the loop's end -> exit code.
// Thread safety: one Trainer per process; Run is called once.
#ifndef SLUICE_CMD_TRAIN_TRAINER_H_
#define SLUICE_CMD_TRAIN_TRAINER_H_

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

namespace sluice {

struct TrainerOptions {
  std::string config_path;
  std::vector<std::string> overrides;  // --set field.path=value
  std::string run_dir;                 // --run_dir (overrides the config)
  bool validate_only = false;          // --validate
  bool dry_run = false;                // --dry-run: plan, no training
  bool allow_drift = false;            // --allow-drift: resume a changed config
  std::string trace_steps;             // --trace_steps=A-B: Chrome traces in <run_dir>/traces/
  bool trace_device_time = false;      // --trace_device_time: traced kernels wait for their device
  bool print_losses = false;           // --print_losses: every step's loss, full precision
  std::string job;                     // --job NAME ("" when not given)
  int task = -1;                       // --task N (-1 when not given)
  std::string export_path;             // --export PATH: write a frozen inference graph (export.h), no training
  std::vector<std::string> export_outputs;  // --export_outputs A,B: layers to export instead of the defaults
  std::string export_checkpoint;  // --export_checkpoint latest|best|STEP: which checkpoint ("": the newest)
};

// Set by the signal handler: finish the step, checkpoint, exit 143.
extern std::atomic<int> g_stop_signals;

// The /metrics port this process serves or served (0: none), which a task
// that restarts itself keeps (exit_codes.h, kMetricsPortEnv).
int MetricsPortServed();

// Returns the process exit code (exit_codes.h). Messages go to `out` (the
// plan, progress, results) and `err` (errors, one per line).
// The chief locks its run directory (RUN_DIR/.lock, flock) until the
// process ends: once per process and run directory (the recovery path
// re-executes the binary; the lock's descriptor closes on exec).
int RunTrainer(const TrainerOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_TRAINER_H_
