// TFRecord framing.
#include "monitoring/record_writer.h"

#include "monitoring/crc32c.h"

namespace sluice {
namespace {

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string EncodeRecordHeader(absl::string_view data) {
  std::string header;
  header.reserve(kRecordHeaderSize);
  PutFixed64(&header, data.size());
  PutFixed32(&header, monitoring::crc32c::Mask(monitoring::crc32c::Value(header.data(), 8)));
  return header;
}

std::string EncodeRecordFooter(absl::string_view data) {
  std::string footer;
  footer.reserve(kRecordFooterSize);
  PutFixed32(&footer, monitoring::crc32c::Mask(monitoring::crc32c::Value(data)));
  return footer;
}

absl::Status RecordWriter::WriteRecord(absl::string_view data) {
  std::string record = EncodeRecordHeader(data);
  record.reserve(kRecordHeaderSize + data.size() + kRecordFooterSize);
  record.append(data.data(), data.size());
  record += EncodeRecordFooter(data);
  absl::Status s = file_->Append(record);
  if (s.ok()) offset_ += record.size();
  return s;
}

}  // namespace sluice
