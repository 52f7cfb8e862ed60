// CheckpointReader: reads one checkpoint directory (ckpt-<step>/, the shard
// stores under it, FILES): the manifest, whole tensors, slices of partitioned
// variables, and full verification. Every problem with the files is a
// DataLoss status naming the checkpoint, the store or file, and the tensor;
// nothing in a checkpoint's bytes can crash the process.
//
// Ownership: the reader owns its open RocksDB handles (opened read-only,
// lazily, one per shard). Thread safety: all methods may be called
// concurrently.
#ifndef SLUICE_CHECKPOINT_CHECKPOINT_READER_H_
#define SLUICE_CHECKPOINT_CHECKPOINT_READER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/platform/env.h"
#include "checkpoint/manifest.pb.h"
#include "checkpoint/tensor_slice.h"
#include "engine/framework/tensor.h"

namespace rocksdb {
class DB;
}

namespace sluice {
namespace checkpoint {

class CheckpointReader {
 public:
  // Opens `dir` and reads the manifest from shard `preferred_shard` (or, when
  // that fails or is -1, from the first shard that opens). NotFound when
  // `dir` does not exist; DataLoss when it holds anything but regular files
  // and directories (checked before any file is opened), or when no shard
  // yields a manifest that passes CheckManifestEntries (manifest_rules.h)
  // and whose entries fit in the shard's SST files (FORMAT.md "What a reader
  // checks").
  static absl::StatusOr<std::unique_ptr<CheckpointReader>> Open(const std::string& dir, Env* env = Env::Default(),
                                                                int preferred_shard = -1);
  ~CheckpointReader();

  const std::string& dir() const { return dir_; }
  const CheckpointManifest& manifest() const { return manifest_; }
  // The manifest entry with this key (name or name@slice); nullptr if none.
  const TensorEntry* FindEntry(const std::string& key) const;

  // Reads a whole tensor. Always checks chunk sizes and chunk CRCs; with
  // `check` also the whole-tensor CRC and that the entry's header agrees
  // with the manifest. NotFound when no such tensor; DataLoss on corruption.
  absl::StatusOr<Tensor> ReadTensor(const std::string& key, bool check = true);
  // Assembles `slice` of the variable `full_name` (of shape `full_shape`)
  // from its stored slices, or from the whole stored tensor.
  absl::StatusOr<Tensor> ReadSlice(const std::string& full_name, const TensorShape& full_shape,
                                   const TensorSlice& slice, bool check = true);
  // Checks everything: the FILES inventory, that every shard opens with an
  // identical manifest, RocksDB block checksums, and every tensor's CRCs.
  absl::Status VerifyAll();
  // Only the FILES inventory: it lists exactly the checkpoint's files (paths
  // compared with the directory, never followed), each with its size, and
  // the CRCs of the small files (cheap: no tensor data is read).
  absl::Status VerifyFiles();

 private:
  CheckpointReader(std::string dir, Env* env);
  absl::StatusOr<rocksdb::DB*> Shard(int shard);
  std::string ShardPath(int shard) const;

  const std::string dir_;
  Env* const env_;
  CheckpointManifest manifest_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<rocksdb::DB>> shards_ ABSL_GUARDED_BY(mu_);
};

// Reads and parses the manifest of one shard store.
absl::StatusOr<CheckpointManifest> ReadShardManifest(rocksdb::DB* db, const std::string& store_path);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_CHECKPOINT_READER_H_
