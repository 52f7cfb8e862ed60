// RecordWriter: appends TFRecord-framed records to a WritableFile:
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes |
//   data[length] | uint32 masked CRC32C of data
// (see FORMATS.md). Files are byte-compatible with TensorFlow's
// tf.io.TFRecordWriter without compression.
// Ownership: the writer does not own the file; the file must outlive it.
// After a failed write the writer keeps that error: later calls return it
// (the file may end in a partial record, which readers report as truncated).
// Thread safety: not thread-safe; one writer per thread.
#ifndef SLUICE_ENGINE_PLATFORM_RECORD_WRITER_H_
#define SLUICE_ENGINE_PLATFORM_RECORD_WRITER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/platform/env.h"

namespace sluice {

constexpr size_t kRecordHeaderBytes = 12;  // length + its CRC
constexpr size_t kRecordFooterBytes = 4;   // data CRC

class RecordWriter {
 public:
  explicit RecordWriter(WritableFile* file) : file_(file) {}

  absl::Status WriteRecord(absl::string_view data);
  // Hands written records to the OS, so readers of the file see them.
  absl::Status Flush();
  // Flushes and closes the file.
  absl::Status Close();

  // The 12 header bytes for a record of `length` bytes.
  static void EncodeHeader(uint64_t length, char header[kRecordHeaderBytes]);
  // The 4 footer bytes for `data`.
  static void EncodeFooter(absl::string_view data, char footer[kRecordFooterBytes]);

 private:
  WritableFile* file_;
  absl::Status status_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_RECORD_WRITER_H_
