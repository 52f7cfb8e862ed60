// Warm start: initialize selected variables of this run from another run's
// checkpoint, with a name mapping (e.g. a pretrained "encoder/w" into this
// model's "enc/w"), or from a TensorFlow V2 checkpoint. Runs
// RestoreAndCheck/RestoreSlice (RestoreV2 for TensorFlow) + Assign nodes that
// it adds to the session's graph under a fresh scope.
// Thread safety: one call at a time per session (it extends the graph).
#ifndef SLUICE_CHECKPOINT_WARM_START_H_
#define SLUICE_CHECKPOINT_WARM_START_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "checkpoint/saver.h"
#include "engine/runtime/session.h"

namespace sluice {
namespace checkpoint {

struct WarmStartOptions {
  // A run directory (its newest valid checkpoint is used), a checkpoint
  // directory (ckpt-<step>), or a TensorFlow checkpoint prefix (PREFIX.index
  // exists: a tensor bundle, restored with RestoreV2).
  std::string from;
  // Variable name in this run -> tensor name in the checkpoint. Variables not
  // in the map keep their own name.
  std::map<std::string, std::string> name_map;
  Env* env = Env::Default();
};

// Restores `variables` (SaveableVariable::name is this run's name) from the
// checkpoint. NotFound names the first variable the checkpoint lacks;
// InvalidArgument a dtype or shape mismatch; DataLoss corruption;
// Unimplemented a partitioned variable in a TensorFlow checkpoint.
absl::Status WarmStart(Session* session, const std::vector<SaveableVariable>& variables,
                       const WarmStartOptions& options);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_WARM_START_H_
