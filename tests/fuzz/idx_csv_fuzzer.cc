// Fuzz target: IDX decoding (inputs/idx.h, plain and gzip), and CSV lines read by the
// LineReader and split by ParseCsvLine (inputs/csv.h, inputs/line_reader.h). The first byte
// picks the decoder and its options; the rest is the file. Asserted beyond "no crash": a parsed
// IDX file's data is exactly items x item bytes and re-encodes to a file that parses to the same
// value; IDX errors are InvalidArgument, DataLoss or ResourceExhausted and name the file; every
// CSV line that splits re-formats (FormatCsvLine) to a line that splits into the same fields.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "inputs/csv.h"
#include "inputs/idx.h"
#include "inputs/line_reader.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

void FuzzIdx(uint8_t options_byte, absl::string_view contents) {
  IdxOptions options;
  if (options_byte & 2) options.max_bytes = 4096;
  absl::StatusOr<IdxFile> idx = ParseIdx(contents, "fuzz.idx", options);
  if (!idx.ok()) {
    const absl::Status& s = idx.status();
    FUZZ_CHECK(absl::IsInvalidArgument(s) || absl::IsDataLoss(s) || absl::IsResourceExhausted(s),
               "unexpected status: %s", s.ToString().c_str());
    FUZZ_CHECK(absl::StrContains(s.message(), "fuzz.idx"), "error without the file: %s", s.ToString().c_str());
    return;
  }
  FUZZ_CHECK(!idx->dims.empty(), "no dims");
  FUZZ_CHECK(idx->data.size() == static_cast<size_t>(idx->num_items()) * idx->item_bytes(),
             "data %zu bytes, %lld items of %zu", idx->data.size(), static_cast<long long>(idx->num_items()),
             idx->item_bytes());
  if (idx->num_items() > 0) idx->item(idx->num_items() - 1);
  absl::StatusOr<std::string> encoded = EncodeIdx(*idx, /*gzip=*/options_byte & 4);
  FUZZ_CHECK(encoded.ok(), "a parsed file does not re-encode: %s", encoded.status().ToString().c_str());
  absl::StatusOr<IdxFile> again = ParseIdx(*encoded, "again.idx");
  FUZZ_CHECK(again.ok(), "a re-encoded file does not parse: %s", again.status().ToString().c_str());
  FUZZ_CHECK(again->dtype == idx->dtype && again->dims == idx->dims && again->data == idx->data,
             "the re-encoded file parses to a different value");
}

void FuzzCsv(uint8_t options_byte, absl::string_view contents) {
  static const char kDelims[] = {',', '\t', ';', '|'};
  const char delim = kDelims[(options_byte >> 1) & 3];
  const bool quotes = options_byte & 8;
  fuzz::StringFile file(contents, "fuzz.csv");
  LineReader reader(&file, /*max_line_bytes=*/(options_byte & 16) ? 64 : 1 << 20);
  uint64_t offset = 0;
  for (int i = 0; i < 100000; ++i) {
    std::string line;
    const uint64_t before = offset;
    absl::Status s = reader.ReadLine(&offset, &line);
    if (!s.ok()) {
      FUZZ_CHECK(absl::IsOutOfRange(s) || absl::IsResourceExhausted(s), "unexpected status: %s", s.ToString().c_str());
      return;
    }
    FUZZ_CHECK(offset > before && offset <= contents.size(), "ReadLine did not advance");
    std::vector<std::string> fields;
    s = ParseCsvLine(line, delim, quotes, &fields);
    if (!s.ok()) {
      FUZZ_CHECK(absl::IsInvalidArgument(s), "unexpected status: %s", s.ToString().c_str());
      continue;
    }
    if (!quotes) continue;  // FormatCsvLine quotes; only a quoting reader reads that back
    std::vector<std::string> again;
    const std::string formatted = FormatCsvLine(fields, delim);
    s = ParseCsvLine(formatted, delim, true, &again);
    FUZZ_CHECK(s.ok(), "a formatted line does not parse: %s", s.ToString().c_str());
    FUZZ_CHECK(again == fields, "formatted line [%s] splits differently", formatted.c_str());
  }
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::fuzz::InputBytes input(data, size);
  const uint8_t options_byte = input.Byte();
  if (options_byte & 1) {
    sluice::FuzzCsv(options_byte, input.rest());
  } else {
    sluice::FuzzIdx(options_byte, input.rest());
  }
  return 0;
}
