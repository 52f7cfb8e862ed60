// ConfigErrors: the problems found in an experiment file, each located at
// file:line:col (1-based, as editors count), collected so a user sees all of
// them at once. Format: "configs/x.pbtxt:12:5: error: message".
// Thread safety: not synchronized; one per load.
#ifndef SLUICE_CONFIGS_CONFIG_ERRORS_H_
#define SLUICE_CONFIGS_CONFIG_ERRORS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace sluice {
namespace config {

struct Location {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based; 0 when unknown
  // The --set that gave the field its value ("train.steps=-1"), if one did:
  // the error then says so, since the file's line holds another value.
  std::string set_by;
};

class ConfigErrors {
 public:
  explicit ConfigErrors(std::string file) : file_(std::move(file)) {}
  void Add(Location where, std::string message);
  bool empty() const { return lines_.empty(); }
  size_t size() const { return lines_.size(); }
  const std::vector<std::string>& lines() const { return lines_; }
  const std::string& file() const { return file_; }
  // InvalidArgument holding every line (joined by '\n'), or OK.
  absl::Status ToStatus() const;

 private:
  std::string file_;
  std::vector<std::string> lines_;
};

}  // namespace config
}  // namespace sluice

#endif  // SLUICE_CONFIGS_CONFIG_ERRORS_H_
