// RecordReader: reads TFRecord-framed records (FORMATS.md) from a
// RandomAccessFile, verifying both checksums of every record.
//
// ReadRecord(&offset, &record) reads the record starting at `offset` and, on
// success only, advances `offset` past it (after an error *record is
// unspecified). Results:
//   OK               a record
//   OutOfRange       no record starts at `offset`: the clean end of the file;
//                    with `follow`, also a partial record at the end (the
//                    writer has not finished it yet: retry later)
//   DataLoss         a checksum mismatch, or (without `follow`) a record cut
//                    short by the end of the file; the message names the file
//                    and the record's byte offset
//   ResourceExhausted a record longer than max_record_bytes
//   other            the file's I/O error
// By default the reader maps the file in windows (map_file) and checks each
// record where it lies; a file that cannot be mapped (not a regular file, a
// test Env's file) is read into a buffer instead. The results are the same
// either way: a record that a window shows as bad (DataLoss), and any record
// of a window that lost pages (the file was truncated under it, or its disk
// failed: mapped_region.h turns the SIGBUS into zero pages), is read again
// with the Env's Read, whose result is returned. So a file that shrank reads
// like the shorter file it now is, a disk error is the Env's error, and a
// window that lost pages turns mapping off for the rest of the reader's life.
// Ownership: the reader does not own the file. Thread safety: not thread-safe.
#ifndef SLUICE_ENGINE_PLATFORM_RECORD_READER_H_
#define SLUICE_ENGINE_PLATFORM_RECORD_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "engine/platform/env.h"

namespace sluice {

struct RecordReaderOptions {
  // Longer records are refused before any allocation.
  uint64_t max_record_bytes = 64ull << 20;
  // Treat a truncated tail as "no more records yet" (a file being written).
  bool follow = false;
  // Bytes read from the file at a time (records larger than this are read
  // directly).
  size_t buffer_bytes = 1 << 20;
  // Map the file (RandomAccessFile::Map) and check records where they lie in
  // the page cache, instead of reading it into the buffer above: the kernel's
  // copy into the buffer goes away (docs/PERFORMANCE.md, "Session 23"). Used
  // when the file can be mapped and `follow` is off; otherwise the reader
  // reads. If the file shrinks under the mapping, the reader reads it as the
  // shorter file it now is (see the top of this file), and does not crash.
  // Posix files give their windows from the process's whole-file mappings
  // (engine/platform/mapping_cache.h), so a later reader of the same file
  // (the next epoch) does not map it again; the reader lets go of its
  // window at the end of the file.
  bool map_file = true;
  // Bytes mapped at a time (a larger record gets a window of its own size);
  // windows of 2 MB and more are widened to start and end on 2 MB
  // boundaries of the file.
  size_t map_window_bytes = 4 << 20;
};

class RecordReader {
 public:
  explicit RecordReader(RandomAccessFile* file, RecordReaderOptions options = {});

  absl::Status ReadRecord(uint64_t* offset, std::string* record);
  // The same without a copy: *record points into the reader's buffer, or
  // into the file's mapping, and is valid until the next call (while the file
  // is not rewritten in place or truncated: a mapping shows such changes,
  // see mapped_region.h).
  absl::Status ReadRecord(uint64_t* offset, absl::string_view* record);
  // True when the reader reads through mappings of the file (map_file, and
  // the file could be mapped when last asked), false when it reads.
  bool mapping() const { return map_; }

 private:
  // Points *out at n bytes at `offset` (fewer at the end of the file).
  absl::Status ReadBytes(uint64_t offset, size_t n, absl::string_view* out);
  // Reads and checks the header of the record at `start`; points *body at its
  // data and data checksum (*length + 4 bytes), not yet verified.
  absl::Status ReadFrame(uint64_t start, uint64_t* length, absl::string_view* body);
  // ReadFrame without a call into the file when the frame is in the buffer.
  absl::Status NextFrame(uint64_t start, uint64_t* length, absl::string_view* body);
  // In a mapped window: prefetches what lies a little past the frame at
  // `frame` (frame_bytes long), where the next records' checksums will read.
  void PrefetchAhead(const char* frame, size_t frame_bytes) const;
  // The record at `start`: its data, not yet verified (its stored CRC follows
  // it), and the offset of the record after it.
  absl::Status FrameData(uint64_t start, absl::string_view* data, uint64_t* next);
  absl::Status CorruptData(uint64_t start, uint64_t length) const;
  // ReadRecord from the current window or buffer, without the retry.
  absl::Status ReadRecordOnce(uint64_t* offset, std::string* record);
  absl::Status ReadRecordOnce(uint64_t* offset, absl::string_view* record);
  // True when the mapped window lost pages (the file shrank under it).
  bool Damaged() const { return region_ != nullptr && region_->damaged(); }
  // Whether a result `s` from a mapped window must be confirmed by reading:
  // it is DataLoss, or the window lost pages.
  bool NeedsReadRetry(const absl::Status& s) const {
    return region_ != nullptr && ((!s.ok() && absl::IsDataLoss(s)) || region_->damaged());
  }
  // Drops the window and switches to reads for one retry; map_after_retry_
  // says whether mapping resumes after it (not after a window lost pages).
  void StartReadRetry();
  // ReadRecordOnce, then once more by reading when NeedsReadRetry says so
  // (both ReadRecord overloads; Record is std::string or absl::string_view).
  template <typename Record>
  absl::Status ReadRecordWithRetry(uint64_t* offset, Record* record);
  absl::Status Truncated(uint64_t offset, absl::string_view what, size_t want, size_t got) const;

  RandomAccessFile* file_;
  RecordReaderOptions options_;
  std::string large_;        // a record larger than the buffer
  std::string buffer_;       // what the reader read, when it reads
  std::unique_ptr<MappedRegion> region_;  // what it mapped, when it maps
  bool map_;                 // map windows; false after a failed Map
  bool map_after_retry_ = true;
  // Bytes [buffer_start_, buffer_start_ + buffer_len_) of the file, in
  // buffer_ or region_.
  const char* window_ = nullptr;
  uint64_t buffer_start_ = 0;
  size_t buffer_len_ = 0;
};

// Reads records one after another from the start of a file.
class SequentialRecordReader {
 public:
  explicit SequentialRecordReader(RandomAccessFile* file, RecordReaderOptions options = {})
      : reader_(file, options) {}
  absl::Status ReadRecord(std::string* record) { return reader_.ReadRecord(&offset_, record); }
  absl::Status ReadRecord(absl::string_view* record) { return reader_.ReadRecord(&offset_, record); }
  uint64_t offset() const { return offset_; }
  bool mapping() const { return reader_.mapping(); }
  // Continue from a byte offset at which a record starts.
  void Seek(uint64_t offset) { offset_ = offset; }

 private:
  RecordReader reader_;
  uint64_t offset_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_RECORD_READER_H_
