// The LevelDB table (SSTable) format as TensorFlow's lib/io/table_builder
// writes it, which is the file format of a TF V2 checkpoint's PREFIX.index
// (FORMAT.md "TensorFlow checkpoints"): data blocks of prefix-compressed
// key/value entries with restart points, each followed by a compression byte
// and a masked CRC32C; an empty metaindex block; an index block mapping each
// data block's last key to its handle; a 48-byte footer ending in the magic
// number. Uncompressed blocks only (TensorFlow writes bundles uncompressed).
// Whole tables are built and parsed in memory: an index holds one small entry
// per tensor.
// Thread safety: pure functions.
#ifndef SLUICE_CHECKPOINT_LEVELDB_TABLE_H_
#define SLUICE_CHECKPOINT_LEVELDB_TABLE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {
namespace checkpoint {

using TableEntries = std::vector<std::pair<std::string, std::string>>;

inline constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
inline constexpr size_t kTableFooterBytes = 48;
// Block trailer: 1 compression-type byte + masked CRC32C (4 bytes).
inline constexpr size_t kBlockTrailerBytes = 5;

struct TableOptions {
  size_t block_bytes = 256 << 10;  // TensorFlow's default block size
  int restart_interval = 16;
};

// The bytes of a table holding `entries`.
// REQUIRES: keys strictly ascending (bytewise).
std::string BuildTable(const TableEntries& entries, const TableOptions& options = TableOptions());

// Parses a whole table file. Every entry, in key order. DataLoss naming
// `filename` (and the offset of the bad block) for a short file, a bad magic
// number, a handle outside the file, a bad block CRC, a malformed block or
// keys out of order; Unimplemented for compressed blocks.
absl::StatusOr<TableEntries> ParseTable(absl::string_view contents, const std::string& filename);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_LEVELDB_TABLE_H_
