// Trainer: runs an experiment end to end — validate, build the training
// graph, print the plan, initialize or resume from the latest checkpoint,
// start the input queue runners, step with a progress line, evaluate at the
// configured cadence and at the end, checkpoint, and stop cleanly on SIGTERM
// or SIGINT (finish the step, save, exit 143).
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
};

// Set by the signal handler: finish the step, checkpoint, exit 143.
extern std::atomic<int> g_stop_signals;

// Returns the process exit code (exit_codes.h). Messages go to `out` (the
// plan, progress, results) and `err` (errors, one per line).
int RunTrainer(const TrainerOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_TRAINER_H_
