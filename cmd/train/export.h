// `train CONFIG --export PATH`: the run directory's newest checkpoint as a
// frozen inference GraphDef (models/inference_graph.h) that TensorFlow loads
// as it is (tf.compat.v1.GraphDef, import_graph_def) and Sluice runs
// (tests/tf_interop/run_graphdef), or as a SavedModel of it. The steps: build the inference graph,
// restore the newest valid checkpoint into its variables (the trainer's
// restore, fully verified), replace each variable by a constant of its
// value, run the result once on a batch of zeros (an export that does not
// run is never written), and write it: a binary GraphDef when PATH ends in
// ".pb", a text one for ".pbtxt", else a SavedModel directory
// (models/saved_model.h; never over a directory that holds something). A
// text input's vocabulary goes to PATH.vocab.txt (a SavedModel's
// assets/vocab.txt), a word a line in id order. A summary names the checkpoint, each input and output with
// its dtype and shape, and the size. --export_checkpoint picks another
// checkpoint than the newest: `best` (train.best_model's, from the state
// file) or a retained step; it is verified fully too.
// Thread safety: called once, from main.
#ifndef SLUICE_CMD_TRAIN_EXPORT_H_
#define SLUICE_CMD_TRAIN_EXPORT_H_

#include <ostream>

#include "cmd/train/trainer.h"

namespace sluice {

// Returns the process exit code (exit_codes.h): 2 for a bad config, an
// output that cannot be exported (an unknown --export_outputs name, one that
// reads no variable or a stateful node, an --export_checkpoint that is not
// latest, best or a step number), or a run directory whose
// config.pbtxt has another model section (unless options.allow_drift); 1
// when there is no checkpoint (or not the one named), it does not fit the
// model, or the file (or SavedModel directory) cannot
// be written; 129 for a transient failure reading the checkpoint.
// REQUIRES: !options.export_path.empty().
int RunExport(const TrainerOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_EXPORT_H_
