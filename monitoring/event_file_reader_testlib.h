// An event-file decoder for tests, written independently of the writer: its own bitwise
// CRC32C and mask, its own parsing of the TFRecord framing, protobuf only for Event itself.
// Ownership: returns values. Thread safety: pure functions.
#ifndef SLUICE_MONITORING_EVENT_FILE_READER_TESTLIB_H_
#define SLUICE_MONITORING_EVENT_FILE_READER_TESTLIB_H_

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "monitoring/event.pb.h"

namespace sluice {
namespace testing_events {

inline uint32_t BitwiseCrc32c(const std::string& data) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char b : data) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return crc ^ 0xffffffffu;
}

inline uint32_t MaskCrc(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

inline uint64_t LoadLE(const std::string& s, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[pos + i]);
  return v;
}

struct DecodedFile {
  std::vector<std::string> records;
  std::vector<Event> events;
  // "" when every byte belongs to a whole, valid record; otherwise what went wrong where.
  std::string error;
  bool truncated_tail = false;  // the file ends inside a record (a writer stopped mid-record)
};

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline DecodedFile DecodeBytes(const std::string& bytes) {
  DecodedFile out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < 12) {
      out.truncated_tail = true;
      out.error = absl::StrCat("truncated header at offset ", pos);
      return out;
    }
    const std::string len_bytes = bytes.substr(pos, 8);
    const uint64_t len = LoadLE(bytes, pos, 8);
    const uint32_t len_crc = static_cast<uint32_t>(LoadLE(bytes, pos + 8, 4));
    if (len_crc != MaskCrc(BitwiseCrc32c(len_bytes))) {
      out.error = absl::StrCat("bad length crc at offset ", pos);
      return out;
    }
    if (bytes.size() - pos - 12 < len + 4) {
      out.truncated_tail = true;
      out.error = absl::StrCat("truncated record at offset ", pos);
      return out;
    }
    std::string data = bytes.substr(pos + 12, len);
    const uint32_t data_crc = static_cast<uint32_t>(LoadLE(bytes, pos + 12 + len, 4));
    if (data_crc != MaskCrc(BitwiseCrc32c(data))) {
      out.error = absl::StrCat("bad data crc at offset ", pos);
      return out;
    }
    Event e;
    if (!e.ParseFromString(data)) {
      out.error = absl::StrCat("record at offset ", pos, " is not an Event");
      return out;
    }
    out.records.push_back(std::move(data));
    out.events.push_back(std::move(e));
    pos += 12 + len + 4;
  }
  return out;
}

// As DecodeBytes; an error names the file ("<path>: bad data crc at offset 40").
inline DecodedFile DecodeFile(const std::string& path) {
  DecodedFile out = DecodeBytes(ReadWholeFile(path));
  if (!out.error.empty()) out.error = absl::StrCat(path, ": ", out.error);
  return out;
}

}  // namespace testing_events
}  // namespace sluice

#endif  // SLUICE_MONITORING_EVENT_FILE_READER_TESTLIB_H_
