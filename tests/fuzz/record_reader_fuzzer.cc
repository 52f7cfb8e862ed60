// Fuzz target: the TFRecord reader (engine/platform/record_reader.h) over arbitrary file bytes.
// The first input byte picks the options (follow, buffer size, record size cap, which
// ReadRecord overload, whether the target repairs the checksums first so the bytes reach the
// framing's deeper paths); the rest is the file. Asserted beyond "no crash": every result is
// OK, OutOfRange, DataLoss or ResourceExhausted; an OK record advances the offset by exactly
// its framed size; a DataLoss names the file.
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "engine/platform/record_reader.h"
#include "engine/platform/record_writer.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

constexpr size_t kBufferSizes[] = {kRecordHeaderBytes, 64, 4096, 1 << 20};

void ReadAll(const uint8_t* data, size_t size) {
  fuzz::InputBytes input(data, size);
  const uint8_t options_byte = input.Byte();
  RecordReaderOptions options;
  options.follow = options_byte & 1;
  options.buffer_bytes = kBufferSizes[(options_byte >> 1) & 3];
  if (options_byte & 8) options.max_record_bytes = 100;
  const bool views = options_byte & 16;
  std::string bytes(input.rest());
  if (options_byte & 32) fuzz::FixRecordChecksums(&bytes);

  fuzz::StringFile file(bytes, "fuzz.tfrecord");
  RecordReader reader(&file, options);
  uint64_t offset = 0;
  for (int i = 0; i < 100000; ++i) {
    const uint64_t before = offset;
    absl::Status s;
    size_t length = 0;
    if (views) {
      absl::string_view record;
      s = reader.ReadRecord(&offset, &record);
      length = record.size();
    } else {
      std::string record;
      s = reader.ReadRecord(&offset, &record);
      length = record.size();
    }
    if (s.ok()) {
      FUZZ_CHECK(offset == before + kRecordHeaderBytes + length + kRecordFooterBytes, "offset %llu -> %llu",
                 static_cast<unsigned long long>(before), static_cast<unsigned long long>(offset));
      FUZZ_CHECK(offset <= bytes.size(), "offset past the end of the file");
      continue;
    }
    FUZZ_CHECK(offset == before, "an error moved the offset");
    FUZZ_CHECK(absl::IsOutOfRange(s) || absl::IsDataLoss(s) || absl::IsResourceExhausted(s), "unexpected status: %s",
               s.ToString().c_str());
    FUZZ_CHECK(!absl::IsDataLoss(s) || absl::StrContains(s.message(), "fuzz.tfrecord"), "DataLoss without the file: %s",
               s.ToString().c_str());
    return;
  }
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::ReadAll(data, size);
  return 0;
}
