// LineReader: reads text lines from a RandomAccessFile through a buffer.
// Lines end with "\n" (a "\r" before it is dropped); the last line may lack
// its "\n". ReadLine(&offset, &line) reads the line starting at `offset` and
// advances it; OutOfRange at the end of the file. A line longer than
// max_line_bytes is ResourceExhausted naming the file and offset.
// Ownership: does not own the file. Thread safety: not thread-safe.
#ifndef SLUICE_INPUTS_LINE_READER_H_
#define SLUICE_INPUTS_LINE_READER_H_

#include <string>

#include "absl/status/status.h"
#include "engine/platform/env.h"

namespace sluice {

class LineReader {
 public:
  explicit LineReader(RandomAccessFile* file, size_t max_line_bytes = 16 << 20)
      : file_(file), max_line_bytes_(max_line_bytes) {}
  absl::Status ReadLine(uint64_t* offset, std::string* line);

 private:
  absl::Status Fill(uint64_t offset);
  RandomAccessFile* file_;
  size_t max_line_bytes_;
  std::string buffer_;
  uint64_t buffer_start_ = 0;
  size_t buffer_len_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_INPUTS_LINE_READER_H_
