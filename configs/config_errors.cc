// ConfigErrors formatting.
#include "configs/config_errors.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {
namespace config {

void ConfigErrors::Add(Location where, std::string message) {
  std::string prefix = file_;
  if (where.line > 0) absl::StrAppend(&prefix, ":", where.line);
  if (where.line > 0 && where.column > 0) absl::StrAppend(&prefix, ":", where.column);
  lines_.push_back(absl::StrCat(prefix, ": error: ", message,
                                where.set_by.empty() ? "" : absl::StrCat(" (set by --set ", where.set_by, ")")));
}

absl::Status ConfigErrors::ToStatus() const {
  if (lines_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(lines_, "\n"));
}

}  // namespace config
}  // namespace sluice
