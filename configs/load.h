// Loading an experiment: text-proto parsing with locations, --set overrides,
// defaults, and the semantic checks that need no graph (names, references,
// ranges, files). Model shapes are checked when the model is compiled
// (models/), with the same locations.
// Thread safety: pure functions.
#ifndef SLUICE_CONFIGS_LOAD_H_
#define SLUICE_CONFIGS_LOAD_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "configs/config_errors.h"
#include "configs/experiment.pb.h"
#include "google/protobuf/text_format.h"

namespace sluice {
namespace config {

// A field that a --set override gave its value: `field` of `message` (at
// `index` when repeated), or every field of `message` when `field` is empty
// (a whole message set in text format).
struct AppliedOverride {
  const google::protobuf::Message* message = nullptr;
  std::string field;
  int index = -1;
  std::string text;  // "train.steps=-1"
};

// A parsed experiment and where each field came from.
struct LoadedExperiment {
  std::string path;
  std::string text;  // the file's contents
  Experiment experiment;
  std::unique_ptr<google::protobuf::TextFormat::ParseInfoTree> locations;
  std::vector<AppliedOverride> overrides;  // ApplyOverrides(..., &overrides)

  // The location of `field` (index for repeated fields) of `message`, which
  // must be `experiment` or a message inside it: its line and column in the
  // file ({0,0} when the file does not write it), and the --set that gave it
  // its value, if one did.
  Location Where(const google::protobuf::Message& message, const std::string& field, int index = -1) const;
};

// Parses `text` (from `path`, for messages). Syntax errors, unknown fields and
// unknown enum values come back as "path:line:col: error: ..." with a
// did-you-mean where a close name exists.
absl::StatusOr<std::unique_ptr<LoadedExperiment>> ParseExperiment(const std::string& path, const std::string& text);
absl::StatusOr<std::unique_ptr<LoadedExperiment>> LoadExperimentFile(const std::string& path);

// Applies "field.path=value" overrides (repeated fields by index:
// "model.layer[1].dense.units=256"). Errors name the override. `applied`, if
// given, gets the field each one set (for LoadedExperiment::overrides).
absl::Status ApplyOverrides(const std::vector<std::string>& overrides, Experiment* experiment,
                            std::vector<AppliedOverride>* applied = nullptr);

// Fills defaults documented in experiment.proto.
void ApplyDefaults(Experiment* experiment);

// Checks everything that needs no graph, appending every problem to `errors`.
void Validate(const LoadedExperiment& loaded, ConfigErrors* errors);

}  // namespace config
}  // namespace sluice

#endif  // SLUICE_CONFIGS_LOAD_H_
