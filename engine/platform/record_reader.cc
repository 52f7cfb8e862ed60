// RecordReader: buffered reads, framing and checksum verification.
#include "engine/platform/record_reader.h"

#include <cstring>

#include "absl/base/internal/endian.h"
#include "absl/strings/str_cat.h"
#include "engine/platform/crc32c.h"
#include "engine/platform/record_writer.h"

namespace sluice {
namespace {

// Mapped windows start and end on multiples of this many bytes of the file
// (the x86-64 huge page): a window then holds the page cache's folios of up to
// 2 MB whole, and the kernel maps each with one entry (a huge page) instead of
// 512. A 1 KB TFRecord read through windows that ended mid-folio ran at 0.63
// of a plain read on a 6.18 guest, and at 0.9 through aligned ones
// (docs/PERFORMANCE.md, "Session 30").
constexpr uint64_t kMapAlignment = 2 << 20;

// In a mapped window, the frame kPrefetchAheadBytes past the one being read
// is prefetched (up to kPrefetchMaxBytes of it): with records of 1.5-4 KB the
// hardware's prefetchers left the checksum's loads waiting for memory, and 3
// KB records read at 0.57-0.63 of a plain read without this, 0.95-1.09 with
// it.
constexpr size_t kPrefetchAheadBytes = 4096;
constexpr size_t kPrefetchMaxBytes = 16384;

}  // namespace

RecordReader::RecordReader(RandomAccessFile* file, RecordReaderOptions options)
    : file_(file), options_(options), map_(options.map_file && !options.follow) {
  if (options_.buffer_bytes < kRecordHeaderBytes) options_.buffer_bytes = kRecordHeaderBytes;
  if (options_.map_window_bytes < kRecordHeaderBytes) options_.map_window_bytes = kRecordHeaderBytes;
}

absl::Status RecordReader::ReadBytes(uint64_t offset, size_t n, absl::string_view* out) {
  if (offset >= buffer_start_ && offset - buffer_start_ <= buffer_len_ && n <= buffer_len_ - (offset - buffer_start_)) {
    *out = absl::string_view(window_ + (offset - buffer_start_), n);
    return absl::OkStatus();
  }
  if (map_) {
    // The window starts and ends on multiples of kMapAlignment of the file,
    // so that the page cache's large folios lie whole inside it and can be
    // mapped whole (a huge page for a 2 MB folio): see engine/platform/env.cc.
    // (Windows smaller than that, for tests, are not widened.)
    const uint64_t align = options_.map_window_bytes >= kMapAlignment ? kMapAlignment : 1;
    const uint64_t start = offset - offset % align;
    const size_t lead = static_cast<size_t>(offset - start);
    size_t span = lead + (n > options_.map_window_bytes ? n : options_.map_window_bytes);
    span += static_cast<size_t>((align - span % align) % align);
    auto region = file_->Map(start, span);
    if (region.ok()) {
      region_ = *std::move(region);  // unmaps the previous window
      window_ = region_->data();
      buffer_start_ = start;
      buffer_len_ = region_->size();
      const size_t left = buffer_len_ > lead ? buffer_len_ - lead : 0;
      *out = absl::string_view(window_ + (lead < buffer_len_ ? lead : buffer_len_), n < left ? n : left);
      return absl::OkStatus();
    }
    // Not mappable (or out of mappings): read from now on.
    map_ = false;
    region_.reset();
  }
  size_t want = n > options_.buffer_bytes ? n : options_.buffer_bytes;
  if (buffer_.size() < want) buffer_.resize(want);
  absl::string_view got;
  absl::Status s = file_->Read(offset, want, &got, buffer_.data());
  if (got.data() != buffer_.data() && !got.empty()) std::memmove(buffer_.data(), got.data(), got.size());
  window_ = buffer_.data();
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
  if (header.empty()) {
    // The end of the file: let go of the window, which keeps the file's whole
    // mapping alive (mapping_cache.h) for as long as the reader would. (A
    // damaged window stays, so that the end it shows is confirmed by reading:
    // NeedsReadRetry.)
    if (region_ != nullptr && !region_->damaged()) {
      region_.reset();
      window_ = nullptr;
      buffer_start_ = 0;
      buffer_len_ = 0;
    }
    return absl::OutOfRangeError(absl::StrCat(file_->name(), ": end of file at offset ", start));
  }
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
  if (!map_ && want > options_.buffer_bytes) {
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

namespace {

// Asks for the cache line at p. On x86-64 an asm statement: GCC 12 deleted a
// loop of __builtin_prefetch calls here once it was inlined (it counts the
// builtin as free of side effects, and the loop as dead).
inline void PrefetchLine(const char* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*p));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace

void RecordReader::PrefetchAhead(const char* frame, size_t frame_bytes) const {
  const size_t from = static_cast<size_t>(frame - window_) + kPrefetchAheadBytes;
  const size_t to = from + (frame_bytes < kPrefetchMaxBytes ? frame_bytes : kPrefetchMaxBytes);
  for (size_t at = from; at < to && at < buffer_len_; at += 64) PrefetchLine(window_ + at);
}

absl::Status RecordReader::NextFrame(uint64_t start, uint64_t* length, absl::string_view* body) {
  // Fast path: the whole frame is already in the buffer and its header is good.
  // (Written without start + ..., which could wrap for an offset near 2^64.)
  if (start >= buffer_start_ && start - buffer_start_ <= buffer_len_ &&
      buffer_len_ - (start - buffer_start_) >= kRecordHeaderBytes + kRecordFooterBytes) {
    const uint64_t room = buffer_len_ - (start - buffer_start_) - kRecordHeaderBytes - kRecordFooterBytes;
    const char* header = window_ + (start - buffer_start_);
    const uint64_t n = absl::little_endian::Load64(header);
    if (n <= options_.max_record_bytes && n <= room &&
        crc32c::ValueOf8Bytes(header) == crc32c::Unmask(absl::little_endian::Load32(header + 8))) {
      if (region_ != nullptr) PrefetchAhead(header, static_cast<size_t>(n) + kRecordHeaderBytes + kRecordFooterBytes);
      *length = n;
      *body = absl::string_view(header + kRecordHeaderBytes, static_cast<size_t>(n) + kRecordFooterBytes);
      return absl::OkStatus();
    }
  }
  // Refills the buffer, or reports what is wrong with the frame.
  return ReadFrame(start, length, body);
}

absl::Status RecordReader::FrameData(uint64_t start, absl::string_view* data, uint64_t* next) {
  uint64_t length = 0;
  absl::string_view body;
  absl::Status s = NextFrame(start, &length, &body);
  if (!s.ok()) return s;
  const size_t n = static_cast<size_t>(length);
  *data = body.substr(0, n);
  *next = start + kRecordHeaderBytes + n + kRecordFooterBytes;
  return absl::OkStatus();
}

namespace {

// Loaded only after the data's checksum is computed: the footer lies past the
// data, and loading it first would wait for memory the checksum's sequential
// pass is about to bring in anyway (in a mapped window, a miss to DRAM).
uint32_t StoredDataCrc(absl::string_view data) {
  return crc32c::Unmask(absl::little_endian::Load32(data.data() + data.size()));
}

}  // namespace

inline absl::Status RecordReader::ReadRecordOnce(uint64_t* offset, std::string* record) {
  absl::string_view data;
  uint64_t next;
  absl::Status s = FrameData(*offset, &data, &next);
  if (!s.ok()) return s;
  // Verify while copying: one pass over the record's bytes.
  record->resize(data.size());
  const uint32_t crc = crc32c::ExtendAndCopy(0, data.data(), data.size(), &(*record)[0]);
  if (crc != StoredDataCrc(data)) return CorruptData(*offset, data.size());
  *offset = next;
  return absl::OkStatus();
}

inline absl::Status RecordReader::ReadRecordOnce(uint64_t* offset, absl::string_view* record) {
  absl::string_view data;
  uint64_t next;
  absl::Status s = FrameData(*offset, &data, &next);
  if (!s.ok()) return s;
  const uint32_t crc = crc32c::Value(data);
  if (crc != StoredDataCrc(data)) return CorruptData(*offset, data.size());
  *record = data;
  *offset = next;
  return absl::OkStatus();
}

void RecordReader::StartReadRetry() {
  map_after_retry_ = !Damaged();
  region_.reset();
  window_ = nullptr;
  buffer_start_ = 0;
  buffer_len_ = 0;
  map_ = false;
}

template <typename Record>
absl::Status RecordReader::ReadRecordWithRetry(uint64_t* offset, Record* record) {
  const uint64_t start = *offset;
  absl::Status s = ReadRecordOnce(offset, record);
  if (!NeedsReadRetry(s)) return s;
  StartReadRetry();
  *offset = start;
  s = ReadRecordOnce(offset, record);
  map_ = map_after_retry_;
  return s;
}

absl::Status RecordReader::ReadRecord(uint64_t* offset, std::string* record) {
  return ReadRecordWithRetry(offset, record);
}

absl::Status RecordReader::ReadRecord(uint64_t* offset, absl::string_view* record) {
  return ReadRecordWithRetry(offset, record);
}

}  // namespace sluice
