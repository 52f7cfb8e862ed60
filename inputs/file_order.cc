// File orders and record positions of file sources (see file_order.h).
#include "inputs/file_order.h"

#include <random>
#include <utility>

#include "engine/platform/record_reader.h"
#include "inputs/line_reader.h"

namespace sluice {

std::vector<int64_t> SeededPermutation(uint64_t seed, int64_t work, int64_t n) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(work));
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng() % (i + 1)]);
  return order;
}

namespace {

// Calls visit(offset) with the byte offset of each record of `file`, in file
// order, as a reader of `format` finds them, until visit returns false or the
// file ends.
template <typename Visit>
absl::Status ForEachRecord(RandomAccessFile* file, const RecordFormat& format, Visit visit) {
  uint64_t offset = 0;
  if (format.kind == RecordFormat::kTfRecord) {
    RecordReader reader(file);
    absl::string_view record;
    while (true) {
      const uint64_t start = offset;
      absl::Status s = reader.ReadRecord(&offset, &record);
      if (absl::IsOutOfRange(s)) return absl::OkStatus();
      if (!s.ok()) return s;
      if (!visit(start)) return absl::OkStatus();
    }
  }
  LineReader reader(file);
  std::string line;
  int64_t lines = 0;
  while (true) {
    const uint64_t start = offset;
    absl::Status s = reader.ReadLine(&offset, &line);
    if (absl::IsOutOfRange(s)) return absl::OkStatus();
    if (!s.ok()) return s;
    if (++lines > format.skip_header_lines && !visit(start)) return absl::OkStatus();
  }
}

}  // namespace

absl::StatusOr<FileScan> ScanRecords(Env* env, const std::string& path, const RecordFormat& format,
                                     int64_t wanted) {
  auto file = env->NewRandomAccessFile(path);
  if (!file.ok()) return file.status();
  FileScan scan;
  absl::Status s = ForEachRecord(file->get(), format, [&scan, wanted](uint64_t offset) {
    if (scan.records == wanted) {
      scan.offset_of_wanted = static_cast<int64_t>(offset);
      return false;
    }
    ++scan.records;
    return true;
  });
  if (!s.ok()) return s;
  return scan;
}

absl::StatusOr<std::vector<uint64_t>> RecordOffsets(RandomAccessFile* file, const RecordFormat& format) {
  std::vector<uint64_t> offsets;
  absl::Status s = ForEachRecord(file, format, [&offsets](uint64_t offset) {
    offsets.push_back(offset);
    return true;
  });
  if (!s.ok()) return s;
  return offsets;
}

absl::StatusOr<int64_t> CountRecords(Env* env, const std::vector<std::string>& files, const RecordFormat& format) {
  int64_t count = 0;
  for (const std::string& path : files) {
    auto scan = ScanRecords(env, path, format);
    if (!scan.ok()) return scan.status();
    count += scan->records;
  }
  return count;
}

}  // namespace sluice
