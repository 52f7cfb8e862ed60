// What `train` and `train --export` (export.h) both do before their own
// work: load the experiment with --set and --run_dir applied, defaults
// filled and every config rule checked; and name the variables as
// checkpoints hold them.
// Thread safety: pure functions.
#ifndef SLUICE_CMD_TRAIN_RUN_SETUP_H_
#define SLUICE_CMD_TRAIN_RUN_SETUP_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "checkpoint/saver.h"
#include "cmd/train/trainer.h"
#include "configs/load.h"
#include "models/training_graph.h"

namespace sluice {

// Loads options.config_path, applies options.overrides and options.run_dir,
// fills defaults and validates. Returns kExitDone with `loaded` set, or
// kExitBadConfig after printing every problem to `err` (file:line:col).
int LoadExperimentForRun(const TrainerOptions& options, std::ostream& err,
                         std::unique_ptr<config::LoadedExperiment>* loaded);

// The checkpoint entries of `variables`: a whole variable under its node's
// name; a partitioned one (models/embedding_ops.h) once, as its whole
// logical variable stitched from its parts (row r in part r % N), so a run
// restores into another number of partitions. The variable named
// `int64_variable` (the global step) is int64, the rest float. `model`,
// when given, gets one flag per entry: a variable of the model (trainable,
// or state such as batch_norm's moving statistics), not an optimizer slot or
// the step.
std::vector<checkpoint::SaveableVariable> SaveablesOf(const std::vector<models::VariableSummary>& variables,
                                                      const std::string& int64_variable, std::vector<bool>* model);

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_RUN_SETUP_H_
