// TFRecord framing for the files monitoring/ writes (event files):
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes | data |
//   uint32 masked CRC32C of data
// (all integers little-endian; mask in monitoring/crc32c.h). Byte-compatible with TensorFlow's
// io::RecordWriter without compression. See monitoring/EVENTS.md.
// Ownership: RecordWriter borrows its WritableFile. Thread safety: one thread at a time.
#ifndef SLUICE_MONITORING_RECORD_WRITER_H_
#define SLUICE_MONITORING_RECORD_WRITER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "monitoring/file_system.h"

namespace sluice {

constexpr size_t kRecordHeaderSize = 12;
constexpr size_t kRecordFooterSize = 4;

// The 12 header bytes and the 4 footer bytes that frame `data`.
std::string EncodeRecordHeader(absl::string_view data);
std::string EncodeRecordFooter(absl::string_view data);

class RecordWriter {
 public:
  // REQUIRES: `file` outlives this writer.
  explicit RecordWriter(WritableFile* file) : file_(file) {}
  // Appends one framed record (header, data and footer in one Append).
  absl::Status WriteRecord(absl::string_view data);
  // Bytes written so far (header and footer included).
  uint64_t offset() const { return offset_; }

 private:
  WritableFile* file_;
  uint64_t offset_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_MONITORING_RECORD_WRITER_H_
