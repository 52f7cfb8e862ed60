// LinePrefixer (line_prefixer.h): prefixes whole lines of a child's output.
#include "cmd/train/line_prefixer.h"

#include <algorithm>
#include <utility>

namespace sluice {

LinePrefixer::LinePrefixer(std::string prefix, std::ostream* sink, size_t max_line_bytes)
    : prefix_(std::move(prefix)), sink_(sink), max_line_bytes_(std::max<size_t>(1, max_line_bytes)) {}

void LinePrefixer::Append(absl::string_view bytes) {
  if (finished_ || bytes.empty()) return;
  bool wrote = false;
  while (!bytes.empty()) {
    const size_t newline = bytes.find('\n');
    if (newline == absl::string_view::npos) {
      pending_.append(bytes.data(), bytes.size());
      break;
    }
    if (pending_.empty()) {
      WriteLine(bytes.substr(0, newline));
    } else {
      pending_.append(bytes.data(), newline);
      WriteLine(pending_);
      pending_.clear();
    }
    wrote = true;
    bytes.remove_prefix(newline + 1);
  }
  // A line without end: write it in pieces rather than grow without bound.
  while (pending_.size() >= max_line_bytes_) {
    WriteLine(absl::string_view(pending_).substr(0, max_line_bytes_));
    pending_.erase(0, max_line_bytes_);
    wrote = true;
  }
  if (wrote) sink_->flush();
}

void LinePrefixer::Finish() {
  if (finished_) return;
  finished_ = true;
  if (!pending_.empty()) {
    WriteLine(pending_);
    pending_.clear();
    sink_->flush();
  }
}

void LinePrefixer::WriteLine(absl::string_view line) {
  std::string whole;
  whole.reserve(prefix_.size() + line.size() + 1);
  whole.append(prefix_).append(line.data(), line.size()).push_back('\n');
  sink_->write(whole.data(), static_cast<std::streamsize>(whole.size()));
}

}  // namespace sluice
