// RecordReader: buffered reads, framing and checksum verification.
#include "engine/platform/record_reader.h"

#include <cstring>

#include "absl/base/internal/endian.h"
#include "absl/strings/str_cat.h"
#include "engine/platform/crc32c.h"
#include "engine/platform/record_writer.h"

namespace sluice {

RecordReader::RecordReader(RandomAccessFile* file, RecordReaderOptions options)
    : file_(file), options_(options) {
  if (options_.buffer_bytes < kRecordHeaderBytes) options_.buffer_bytes = kRecordHeaderBytes;
}

absl::Status RecordReader::ReadBytes(uint64_t offset, size_t n, absl::string_view* out) {
  if (offset >= buffer_start_ && offset + n <= buffer_start_ + buffer_len_) {
    *out = absl::string_view(buffer_.data() + (offset - buffer_start_), n);
    return absl::OkStatus();
  }
  size_t want = n > options_.buffer_bytes ? n : options_.buffer_bytes;
  if (buffer_.size() < want) buffer_.resize(want);
  absl::string_view got;
  absl::Status s = file_->Read(offset, want, &got, buffer_.data());
  if (got.data() != buffer_.data() && !got.empty()) std::memmove(buffer_.data(), got.data(), got.size());
  buffer_start_ = offset;
  buffer_len_ = s.ok() ? got.size() : 0;
  if (!s.ok()) return s;
  *out = absl::string_view(buffer_.data(), n < got.size() ? n : got.size());
  return absl::OkStatus();
}

absl::Status RecordReader::Truncated(uint64_t offset, absl::string_view what, size_t want, size_t got) const {
  if (options_.follow) {
    return absl::OutOfRangeError(absl::StrCat(file_->name(), ": record at offset ", offset,
                                              " is not complete yet (", what, ": ", got, " of ", want, " bytes)"));
  }
  return absl::DataLossError(absl::StrCat(file_->name(), ": truncated record at offset ", offset, " (", what, ": ",
                                          got, " of ", want, " bytes before the end of the file)"));
}

absl::Status RecordReader::ReadFrame(uint64_t start, uint64_t* length, absl::string_view* body) {
  absl::string_view header;
  absl::Status s = ReadBytes(start, kRecordHeaderBytes, &header);
  if (!s.ok()) return s;
  if (header.empty()) return absl::OutOfRangeError(absl::StrCat(file_->name(), ": end of file at offset ", start));
  if (header.size() < kRecordHeaderBytes) return Truncated(start, "header", kRecordHeaderBytes, header.size());
  *length = absl::little_endian::Load64(header.data());
  const uint32_t length_crc = crc32c::Unmask(absl::little_endian::Load32(header.data() + 8));
  if (crc32c::Value(header.data(), 8) != length_crc) {
    return absl::DataLossError(
        absl::StrCat(file_->name(), ": corrupt record at offset ", start, ": the length's checksum does not match"));
  }
  if (*length > options_.max_record_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(file_->name(), ": record at offset ", start, " is ", *length,
                                                     " bytes, above the limit of ", options_.max_record_bytes,
                                                     " (RecordReaderOptions::max_record_bytes)"));
  }
  const uint64_t data_start = start + kRecordHeaderBytes;
  const size_t want = static_cast<size_t>(*length) + kRecordFooterBytes;
  if (want > options_.buffer_bytes) {
    // Large record: read it whole, past the buffer.
    large_.resize(want);
    s = file_->Read(data_start, want, body, large_.data());
  } else {
    s = ReadBytes(data_start, want, body);
  }
  if (!s.ok()) return s;
  if (body->size() < want) return Truncated(start, "data and checksum", want, body->size());
  return absl::OkStatus();
}

absl::Status RecordReader::CorruptData(uint64_t start, uint64_t length) const {
  return absl::DataLossError(absl::StrCat(file_->name(), ": corrupt record at offset ", start, " (", length,
                                          " bytes): the data's checksum does not match"));
}

absl::Status RecordReader::NextFrame(uint64_t start, uint64_t* length, absl::string_view* body) {
  // Fast path: the whole frame is already in the buffer and its header is good.
  const uint64_t buffer_end = buffer_start_ + buffer_len_;
  if (start >= buffer_start_ && start + kRecordHeaderBytes <= buffer_end) {
    const char* header = buffer_.data() + (start - buffer_start_);
    const uint64_t n = absl::little_endian::Load64(header);
    if (n <= options_.max_record_bytes && start + kRecordHeaderBytes + n + kRecordFooterBytes <= buffer_end &&
        crc32c::ValueOf8Bytes(header) == crc32c::Unmask(absl::little_endian::Load32(header + 8))) {
      *length = n;
      *body = absl::string_view(header + kRecordHeaderBytes, static_cast<size_t>(n) + kRecordFooterBytes);
      return absl::OkStatus();
    }
  }
  // Refills the buffer, or reports what is wrong with the frame.
  return ReadFrame(start, length, body);
}

absl::Status RecordReader::FrameData(uint64_t start, absl::string_view* data, uint32_t* stored_crc,
                                     uint64_t* next) {
  uint64_t length = 0;
  absl::string_view body;
  absl::Status s = NextFrame(start, &length, &body);
  if (!s.ok()) return s;
  const size_t n = static_cast<size_t>(length);
  *data = body.substr(0, n);
  *stored_crc = crc32c::Unmask(absl::little_endian::Load32(body.data() + n));
  *next = start + kRecordHeaderBytes + n + kRecordFooterBytes;
  return absl::OkStatus();
}

absl::Status RecordReader::ReadRecord(uint64_t* offset, std::string* record) {
  absl::string_view data;
  uint32_t stored_crc;
  uint64_t next;
  absl::Status s = FrameData(*offset, &data, &stored_crc, &next);
  if (!s.ok()) return s;
  // Verify while copying: one pass over the record's bytes.
  record->resize(data.size());
  if (crc32c::ExtendAndCopy(0, data.data(), data.size(), &(*record)[0]) != stored_crc) {
    return CorruptData(*offset, data.size());
  }
  *offset = next;
  return absl::OkStatus();
}

absl::Status RecordReader::ReadRecord(uint64_t* offset, absl::string_view* record) {
  absl::string_view data;
  uint32_t stored_crc;
  uint64_t next;
  absl::Status s = FrameData(*offset, &data, &stored_crc, &next);
  if (!s.ok()) return s;
  if (crc32c::Value(data) != stored_crc) return CorruptData(*offset, data.size());
  *record = data;
  *offset = next;
  return absl::OkStatus();
}

}  // namespace sluice
