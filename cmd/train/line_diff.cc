// LineDiff (see line_diff.h): a longest common subsequence of lines by
// dynamic programming, then a walk that prints what is outside it.
#include "cmd/train/line_diff.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sluice {
namespace {

constexpr size_t kMaxLines = 2000;  // a table of at most 8 MB

void Removed(const std::string& line, std::string* out) {
  if (!line.empty()) absl::StrAppend(out, "  - ", line, "\n");
}
void Added(const std::string& line, std::string* out) {
  if (!line.empty()) absl::StrAppend(out, "  + ", line, "\n");
}

}  // namespace

std::string LineDiff(const std::string& a, const std::string& b) {
  const std::vector<std::string> la = absl::StrSplit(a, '\n'), lb = absl::StrSplit(b, '\n');
  const size_t n = la.size(), m = lb.size();
  std::string out;
  if (n > kMaxLines || m > kMaxLines) {
    for (size_t i = 0; i < std::max(n, m); ++i) {
      const std::string x = i < n ? la[i] : "", y = i < m ? lb[i] : "";
      if (x == y) continue;
      Removed(x, &out);
      Added(y, &out);
    }
    return out;
  }
  // common[i][j]: the length of a longest common subsequence of la[i:] and lb[j:].
  std::vector<std::vector<uint16_t>> common(n + 1, std::vector<uint16_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      common[i][j] = la[i] == lb[j] ? common[i + 1][j + 1] + 1 : std::max(common[i + 1][j], common[i][j + 1]);
    }
  }
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && la[i] == lb[j]) {
      ++i;
      ++j;
    } else if (j == m || (i < n && common[i + 1][j] >= common[i][j + 1])) {
      Removed(la[i++], &out);
    } else {
      Added(lb[j++], &out);
    }
  }
  return out;
}

}  // namespace sluice
