// The rules a checkpoint manifest must satisfy before any of its entries is
// trusted (FORMAT.md "What a reader checks"): within each entry, dtype,
// shape, byte and chunk counts, key, full shape and slice agree; across
// entries, keys are unique and sorted, and the entries of one variable agree
// on dtype and full shape, are either one whole tensor or slices, and the
// slices do not overlap. CRCs cannot vouch for any of this: a crafted store
// carries valid checksums over lying contents.
//
// The reader applies these rules to every manifest it reads (a violation is
// DataLoss naming the store), the writer to every manifest it is about to
// write (InvalidArgument), so what is written can always be read back.
// Thread safety: pure functions.
#ifndef SLUICE_CHECKPOINT_MANIFEST_RULES_H_
#define SLUICE_CHECKPOINT_MANIFEST_RULES_H_

#include <cstdint>

#include "absl/status/status.h"
#include "checkpoint/manifest.pb.h"

namespace sluice {
namespace checkpoint {

// Slices one variable may be stored in (bounds the overlap check).
inline constexpr int kMaxSlicesPerVariable = 4096;

// Checks one entry on its own. The message does not name the tensor.
absl::Status CheckEntry(const TensorEntry& entry, uint64_t chunk_bytes);

// Checks every entry of `manifest` (CheckEntry, shard in range) and the rules
// across entries. The message names the tensor(s) but no file; the status
// code is InvalidArgument (callers choose their own).
absl::Status CheckManifestEntries(const CheckpointManifest& manifest);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_MANIFEST_RULES_H_
