// Progress line formatting and the rate window.
#include "monitoring/progress.h"

#include <atomic>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice {
namespace {

std::atomic<bool> g_progress_line_open{false};

}  // namespace

void MarkProgressLineOpen() { g_progress_line_open.store(true); }

const char* EndProgressLine() { return g_progress_line_open.exchange(false) ? "\n" : ""; }

std::string CountOf(int64_t n, const char* one, const char* many) {
  return absl::StrCat(FormatThousands(n), " ", n == 1 ? one : many);
}

std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", bytes, units[u]);
}

std::string FormatThousands(int64_t v) {
  std::string digits = absl::StrCat(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return v < 0 ? "-" + out : out;
}

std::string FormatEta(absl::Duration d) {
  int64_t s = absl::ToInt64Seconds(d);
  if (s < 0) s = 0;
  if (s < 60) return absl::StrFormat("%ds", s);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  return absl::StrFormat("%dd%02dh", s / 86400, (s % 86400) / 3600);
}

std::string FormatProgress(const ProgressLine& p) {
  std::string out = absl::StrCat("step ", p.step);
  if (p.total_steps > 0) {
    absl::StrAppendFormat(&out, "/%d (%.1f%%)", p.total_steps, 100.0 * p.step / p.total_steps);
  }
  absl::StrAppendFormat(&out, " loss %.4g lr %.3g", p.loss, p.learning_rate);
  if (p.examples_per_second > 0) {
    absl::StrAppend(&out, " ", FormatThousands(static_cast<int64_t>(std::llround(p.examples_per_second))), " ex/s");
  }
  if (p.steps_per_second > 0) {
    absl::StrAppendFormat(&out, " %.3g steps/s", p.steps_per_second);
    if (p.total_steps > p.step) {
      absl::StrAppend(&out, " ETA ", FormatEta(absl::Seconds((p.total_steps - p.step) / p.steps_per_second)));
    }
  }
  return out;
}

void ProgressTracker::OnStep(int64_t step, int64_t examples, double loss, double learning_rate, absl::Time now) {
  examples_ += examples;
  last_.step = step;
  last_.loss = loss;
  last_.learning_rate = learning_rate;
  points_.push_back({step, examples_, now});
  while (static_cast<int>(points_.size()) > window_ + 1) points_.pop_front();
}

ProgressLine ProgressTracker::Line() const {
  ProgressLine p = last_;
  p.total_steps = total_steps_;
  if (points_.size() >= 2) {
    const Point& a = points_.front();
    const Point& b = points_.back();
    const double seconds = absl::ToDoubleSeconds(b.time - a.time);
    if (seconds > 0) {
      p.steps_per_second = (b.step - a.step) / seconds;
      p.examples_per_second = (b.examples - a.examples) / seconds;
    }
  }
  return p;
}

}  // namespace sluice
