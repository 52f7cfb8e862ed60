// Where a file source's example k lies, for an exact resume of TFRecord and
// CSV inputs (models/training/input_hook.cc): the order in which a file
// producer gives the files of each epoch (inputs/input_builders.h: a seeded
// permutation keyed by (seed, epoch), so epoch e's order does not depend on
// the epochs before it), how many records a reader finds in each file, and
// the byte offset at which a reader restored there gives record r.
// Thread safety: functions of their arguments (and the files) alone.
#ifndef SLUICE_INPUTS_FILE_ORDER_H_
#define SLUICE_INPUTS_FILE_ORDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/platform/env.h"

namespace sluice {

// A seeded permutation of [0, n) for work unit (epoch) `work`: Fisher-Yates
// on raw mt19937_64 draws, so every standard library gives the same order;
// the modulo bias is below 2^-40 for any n a reader holds.
std::vector<int64_t> SeededPermutation(uint64_t seed, int64_t work, int64_t n);

// How a reader splits a file into records.
struct RecordFormat {
  enum Kind { kTfRecord, kLines };
  Kind kind = kTfRecord;
  int64_t skip_header_lines = 0;  // kLines: lines before the first record
};

// What a scan of one file found: its records, and (when asked for record r
// and the file has more than r) the byte offset at which a reader restored
// there reads record r next.
struct FileScan {
  int64_t records = 0;
  int64_t offset_of_wanted = -1;
};

// Scans `path` as a reader of `format` reads it, to its end or (wanted >= 0)
// until record `wanted` is found. TFRecord records are checked as the reader
// checks them, so a corrupt file fails here as it would in training, naming
// the file and offset.
absl::StatusOr<FileScan> ScanRecords(Env* env, const std::string& path, const RecordFormat& format,
                                     int64_t wanted = -1);

// The byte offset of every record of `file` (after a text file's header
// lines), as a reader of `format` finds them: where a reader that reads the
// records in another order (a seeded permutation) reads each. Errors as
// ScanRecords.
absl::StatusOr<std::vector<uint64_t>> RecordOffsets(RandomAccessFile* file, const RecordFormat& format);

// The records of every file of `files` together.
absl::StatusOr<int64_t> CountRecords(Env* env, const std::vector<std::string>& files, const RecordFormat& format);

}  // namespace sluice

#endif  // SLUICE_INPUTS_FILE_ORDER_H_
