// BundleReader: reads a TensorFlow V2 checkpoint (tensor bundle: PREFIX.index
// and PREFIX.data-<i>-of-<n>) as tf.compat.v1.train.Saver and
// tf.train.Checkpoint write it. Open parses and checks the whole index (table
// CRCs, header, every entry's dtype, shape, shard and byte range against the
// data file sizes); Read then reads one tensor and checks its CRC32C. Every
// problem is a status naming the file (and offset or tensor): DataLoss for
// corrupt or inconsistent files, NotFound for a missing index or data file
// or tensor, Unimplemented for what we do not read (big-endian bundles,
// partitioned (sliced) entries, compressed tables). Nothing in the files'
// bytes can crash the process or allocate more than the data file holds.
//
// Ownership: the reader owns its open data files. Thread safety: const
// methods may be called concurrently.
#ifndef SLUICE_CHECKPOINT_TENSOR_BUNDLE_READER_H_
#define SLUICE_CHECKPOINT_TENSOR_BUNDLE_READER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/tensor_bundle.pb.h"
#include "engine/framework/tensor.h"
#include "engine/platform/env.h"

namespace sluice {
namespace checkpoint {

// Largest index file we read (an index holds ~100 bytes per tensor).
inline constexpr uint64_t kMaxBundleIndexBytes = uint64_t{1} << 30;

class BundleReader {
 public:
  static absl::StatusOr<std::unique_ptr<BundleReader>> Open(const std::string& prefix, Env* env = Env::Default());

  const std::string& prefix() const { return prefix_; }
  const BundleHeaderProto& header() const { return header_; }
  // Every tensor entry by name (sorted); the header's "" key is not included.
  const std::map<std::string, BundleEntryProto>& entries() const { return entries_; }
  // nullptr when the bundle has no tensor `name`.
  const BundleEntryProto* Find(const std::string& name) const;
  // The shape of tensor `name` (checked at Open); a scalar shape for a
  // name that is absent or a sliced entry.
  TensorShape ShapeOf(const std::string& name) const;

  // Reads tensor `name` and checks its CRC32C. NotFound when absent;
  // Unimplemented for a partitioned variable's sliced entry.
  absl::StatusOr<Tensor> Read(const std::string& name) const;

 private:
  BundleReader(std::string prefix, Env* env) : prefix_(std::move(prefix)), env_(env) {}

  const std::string prefix_;
  Env* const env_;
  BundleHeaderProto header_;
  std::map<std::string, BundleEntryProto> entries_;
  std::map<std::string, TensorShape> shapes_;
  std::vector<std::unique_ptr<RandomAccessFile>> data_files_;  // one per shard
};

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_TENSOR_BUNDLE_READER_H_
