// Writes one checkpoint directory: N shard stores (RocksDB, built as one SST
// file each with SstFileWriter and ingested), a manifest in every shard, and
// the FILES inventory; every file and directory fsynced before returning.
// The caller commits it (Saver renames a temporary directory, then updates
// the state file). Layout: FORMAT.md.
// Thread safety: WriteCheckpointDir may run concurrently for different dirs;
// it reads the tensors it is given (callers must not mutate their buffers).
#ifndef SLUICE_CHECKPOINT_CHECKPOINT_WRITER_H_
#define SLUICE_CHECKPOINT_CHECKPOINT_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/platform/env.h"
#include "checkpoint/store_format.h"
#include "engine/framework/tensor.h"

namespace sluice {
namespace checkpoint {

// One value to save: a whole tensor (slice_spec "") or one slice of the
// variable `full_name` of shape `full_shape` (TensorSlice spelling "0,5:-").
struct SaveEntry {
  std::string full_name;
  Tensor value;
  std::string slice_spec;
  TensorShape full_shape;  // only read when slice_spec is set
};

struct WriteOptions {
  int64_t step = 0;
  std::string config_hash;
  int num_shards = 1;
  uint64_t chunk_bytes = kDefaultChunkBytes;
  // Write shards on parallel threads.
  bool parallel_shards = true;
};

// Creates `dir` (which must not exist) and writes the checkpoint into it.
// InvalidArgument for duplicate names, bad slices or num_shards < 1.
absl::Status WriteCheckpointDir(Env* env, const std::string& dir, const std::vector<SaveEntry>& entries,
                                const WriteOptions& options);

// Writes a FILES inventory of every file under `dir` (sizes and CRC32Cs).
absl::Status WriteFilesInventory(Env* env, const std::string& dir);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_CHECKPOINT_WRITER_H_
