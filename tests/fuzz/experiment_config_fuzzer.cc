// Fuzz target: the experiment loader and validator (configs/load.h, configs/validate.cc) on
// arbitrary text, run as `train` runs them: ParseExperiment, ApplyOverrides, ApplyDefaults,
// Validate. The first byte says whether the first line of the rest is an override
// ("field.path=value", as --set gives); the rest is the config. Asserted beyond "no crash":
// a parse error is InvalidArgument whose every line starts with the file name; every
// validation error line starts with the file name.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "configs/load.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  fuzz::InputBytes input(data, size);
  const uint8_t options_byte = input.Byte();
  absl::string_view text = input.rest();
  std::vector<std::string> overrides;
  if (options_byte & 1) {
    const size_t eol = text.find('\n');
    overrides.emplace_back(text.substr(0, eol));
    text = eol == absl::string_view::npos ? absl::string_view() : text.substr(eol + 1);
  }
  const std::string path = "fuzz.pbtxt";
  auto loaded = config::ParseExperiment(path, std::string(text));
  if (!loaded.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(loaded.status()), "unexpected status: %s",
               loaded.status().ToString().c_str());
    for (absl::string_view line : absl::StrSplit(loaded.status().message(), '\n')) {
      FUZZ_CHECK(absl::StartsWith(line, path), "error line without the file: %s", std::string(line).c_str());
    }
    return 0;
  }
  config::Experiment& e = (*loaded)->experiment;
  absl::Status s = config::ApplyOverrides(overrides, &e);
  if (!s.ok()) return 0;
  config::ApplyDefaults(&e);
  config::ConfigErrors errors(path);
  config::Validate(**loaded, &errors);
  for (const std::string& line : errors.lines()) {
    FUZZ_CHECK(absl::StartsWith(line, path), "validation error without the file: %s", line.c_str());
  }
  return 0;
}
