// Fuzz target: the event-file reader our tests use (monitoring/event_file_reader_testlib.h),
// checked against the product's TFRecord reader (engine/platform/record_reader.h) on the same
// bytes: two independent readers of one framing must agree. The first byte says whether the
// target repairs the checksums first (so the bytes reach Event parsing); the rest is the file.
// Asserted: both read the same records in the same order; the testlib reports an error exactly
// when the record reader stops with one or a record is not an Event; a clean read of the
// testlib covers every byte.
#include <cstdint>
#include <string>

#include "engine/platform/record_reader.h"
#include "monitoring/event_file_reader_testlib.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  fuzz::InputBytes input(data, size);
  const uint8_t options_byte = input.Byte();
  std::string bytes(input.rest());
  if (options_byte & 1) fuzz::FixRecordChecksums(&bytes);

  const testing_events::DecodedFile decoded = testing_events::DecodeBytes(bytes);
  FUZZ_CHECK(decoded.records.size() == decoded.events.size(), "records and events differ in number");

  fuzz::StringFile file(bytes, "fuzz.tfevents");
  RecordReaderOptions options;
  // The testlib has no cap, but no record is longer than the file. (No cap at all would let a
  // bogus length make the reader allocate that many bytes: its cap is what prevents that.)
  options.max_record_bytes = bytes.size();
  SequentialRecordReader reader(&file, options);
  size_t n = 0;
  absl::Status s;
  for (;; ++n) {
    std::string record;
    s = reader.ReadRecord(&record);
    if (!s.ok()) break;
    if (n >= decoded.records.size()) {
      // The testlib stopped earlier: only a record that is not an Event may stop it.
      FUZZ_CHECK(n == decoded.records.size() && !decoded.error.empty(), "record %zu: the testlib missed it", n);
      Event e;
      FUZZ_CHECK(!e.ParseFromString(record), "record %zu is an Event but the testlib said: %s", n,
                 decoded.error.c_str());
      return 0;
    }
    FUZZ_CHECK(record == decoded.records[n], "record %zu differs between the readers", n);
  }
  FUZZ_CHECK(n == decoded.records.size(), "the record reader read %zu records, the testlib %zu", n,
             decoded.records.size());
  if (absl::IsOutOfRange(s)) {
    FUZZ_CHECK(decoded.error.empty(), "the record reader reached the end, the testlib said: %s",
               decoded.error.c_str());
  } else {
    FUZZ_CHECK(!decoded.error.empty(), "the record reader failed (%s), the testlib did not", s.ToString().c_str());
  }
  return 0;
}
