// Writes a TensorFlow V2 checkpoint (tensor bundle): PREFIX.data-00000-of-00001
// with the tensors' bytes in the order given, then PREFIX.index, a LevelDB
// table of the header and one BundleEntryProto per tensor, sorted by name.
// TensorFlow's tf.compat.v1.train.Saver, tf.train.load_checkpoint and
// RestoreV2 read it (FORMAT.md "TensorFlow checkpoints").
// Both files are written under temporary names, fsynced and renamed (data
// first, then the index), so a crash never leaves an index whose data file is
// incomplete.
// Thread safety: WriteTensorBundle may run concurrently for different prefixes.
#ifndef SLUICE_CHECKPOINT_TENSOR_BUNDLE_WRITER_H_
#define SLUICE_CHECKPOINT_TENSOR_BUNDLE_WRITER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "engine/framework/tensor.h"
#include "engine/platform/env.h"

namespace sluice {
namespace checkpoint {

// Creates the parent directory of `prefix` if needed and writes the bundle,
// replacing any bundle at `prefix`. InvalidArgument for an empty or duplicate
// name or an uninitialized tensor.
absl::Status WriteTensorBundle(Env* env, const std::string& prefix,
                               const std::vector<std::pair<std::string, Tensor>>& tensors);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_TENSOR_BUNDLE_WRITER_H_
