// The training input's files as a run last saw them (see input_files.h).
#include "models/training/input_files.h"

#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sluice {
namespace training {
namespace {

constexpr absl::string_view kMissing = "missing";

// Path -> size ("missing" or a byte count), and the paths in order.
struct FileList {
  std::map<std::string, std::string> size_of;
  std::vector<std::string> order;
};

FileList ParseRecord(absl::string_view record) {
  FileList list;
  for (absl::string_view line : absl::StrSplit(record, '\n', absl::SkipEmpty())) {
    const size_t space = line.find(' ');
    if (space == absl::string_view::npos || space + 1 == line.size()) continue;
    const absl::string_view size = line.substr(0, space);
    uint64_t bytes = 0;
    if (size != kMissing && !absl::SimpleAtoi(size, &bytes)) continue;
    std::string path(line.substr(space + 1));
    if (list.size_of.emplace(path, std::string(size)).second) list.order.push_back(std::move(path));
  }
  return list;
}

}  // namespace

std::string DescribeInputFiles(Env* env, const std::vector<std::string>& files) {
  std::string record;
  for (const std::string& path : files) {
    // A path with a line break cannot be told apart from two records: left out.
    if (path.find('\n') != std::string::npos) continue;
    auto size = env->GetFileSize(path);
    absl::StrAppend(&record, size.ok() ? absl::StrCat(*size) : std::string(kMissing), " ", path, "\n");
  }
  return record;
}

std::vector<std::string> InputFileChanges(absl::string_view before, absl::string_view now) {
  const FileList earlier = ParseRecord(before);
  const FileList current = ParseRecord(now);
  std::vector<std::string> changes;
  for (const std::string& path : current.order) {
    const std::string& size = current.size_of.at(path);
    auto was = earlier.size_of.find(path);
    if (was == earlier.size_of.end()) {
      changes.push_back(absl::StrCat(path, ": new"));
    } else if (was->second != size) {
      changes.push_back(size == kMissing ? absl::StrCat(path, ": missing")
                        : was->second == kMissing
                            ? absl::StrCat(path, ": ", size, " bytes, missing before")
                            : absl::StrCat(path, ": ", size, " bytes, was ", was->second));
    }
  }
  for (const std::string& path : earlier.order) {
    if (current.size_of.count(path) == 0) changes.push_back(absl::StrCat(path, ": gone"));
  }
  return changes;
}

}  // namespace training
}  // namespace sluice
