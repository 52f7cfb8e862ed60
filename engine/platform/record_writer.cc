// RecordWriter: TFRecord framing on top of a WritableFile.
#include "engine/platform/record_writer.h"

#include "absl/base/internal/endian.h"
#include "engine/platform/crc32c.h"

namespace sluice {

void RecordWriter::EncodeHeader(uint64_t length, char header[kRecordHeaderBytes]) {
  absl::little_endian::Store64(header, length);
  absl::little_endian::Store32(header + 8, crc32c::Mask(crc32c::Value(header, 8)));
}

void RecordWriter::EncodeFooter(absl::string_view data, char footer[kRecordFooterBytes]) {
  absl::little_endian::Store32(footer, crc32c::Mask(crc32c::Value(data)));
}

absl::Status RecordWriter::WriteRecord(absl::string_view data) {
  if (!status_.ok()) return status_;
  char header[kRecordHeaderBytes];
  char footer[kRecordFooterBytes];
  EncodeHeader(data.size(), header);
  EncodeFooter(data, footer);
  status_ = file_->Append(absl::string_view(header, sizeof(header)));
  if (status_.ok()) status_ = file_->Append(data);
  if (status_.ok()) status_ = file_->Append(absl::string_view(footer, sizeof(footer)));
  return status_;
}

absl::Status RecordWriter::Flush() {
  if (!status_.ok()) return status_;
  status_ = file_->Flush();
  return status_;
}

absl::Status RecordWriter::Close() {
  absl::Status s = file_->Close();
  if (status_.ok()) status_ = s;
  return status_;
}

}  // namespace sluice
