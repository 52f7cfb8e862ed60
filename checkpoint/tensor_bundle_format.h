// Names and tensor encodings of TensorFlow's tensor-bundle checkpoints (TF V2:
// PREFIX.index, a LevelDB table, plus PREFIX.data-<i>-of-<n>); FORMAT.md
// "TensorFlow checkpoints" is the byte-level description, shared here by
// tensor_bundle_reader and tensor_bundle_writer.
// Thread safety: pure functions (IsTensorBundle asks the Env).
#ifndef SLUICE_CHECKPOINT_TENSOR_BUNDLE_FORMAT_H_
#define SLUICE_CHECKPOINT_TENSOR_BUNDLE_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/framework/tensor.h"
#include "engine/platform/env.h"

namespace sluice {
namespace checkpoint {

// BundleHeaderProto.version.producer we write; we read bundles whose
// min_consumer is at most this (TensorFlow's kTensorBundleVersion).
inline constexpr int kBundleVersion = 1;

// "PREFIX.index".
std::string BundleIndexFilename(absl::string_view prefix);
// "PREFIX.data-00000-of-00001".
std::string BundleDataFilename(absl::string_view prefix, int shard, int num_shards);
// True when PREFIX.index exists: `prefix` names a TensorFlow checkpoint.
bool IsTensorBundle(Env* env, const std::string& prefix);

// Whether a bundle can hold this dtype: the fixed-size dtypes (raw
// little-endian elements, as in our own store) and DT_STRING.
bool BundleSupportsDtype(DataType dtype);

// TensorFlow's string tensor bytes: every length as a varint64, then the
// masked CRC32C of the lengths (each as a little-endian uint32, or uint64 when
// over 2^32 - 1) as 4 bytes, then the string bytes. *crc is the unmasked
// CRC32C of everything written (what BundleEntryProto.crc32c masks).
std::string EncodeBundleStrings(const Tensor& tensor, uint32_t* crc);
// Decodes `bytes` into `out` (allocated, DT_STRING, with the entry's shape)
// and checks both CRCs. DataLoss (with `what` naming tensor and file) when
// the bytes do not hold exactly out->NumElements() strings or a CRC differs
// from `expected_crc` (unmasked).
absl::Status DecodeBundleStrings(absl::string_view bytes, uint32_t expected_crc, const std::string& what,
                                 Tensor* out);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_TENSOR_BUNDLE_FORMAT_H_
