// Progress: the one-line status a person at a terminal sees while training runs (DESIGN.md):
//   step 1200/5000 (24.0%) loss 0.4312 lr 0.05 12,345 ex/s 3.1 steps/s ETA 20m26s
// ProgressTracker keeps a sliding window of recent steps for the rates and the ETA, so a slow
// first step (graph setup) or a checkpoint pause fades out of the estimate.
// Ownership: value type. Thread safety: none (the trainer's loop owns it), but for the
// progress line's flag (below).
#ifndef SLUICE_MONITORING_PROGRESS_H_
#define SLUICE_MONITORING_PROGRESS_H_

#include <cstdint>
#include <deque>
#include <string>

#include "absl/time/time.h"

namespace sluice {

struct ProgressLine {
  int64_t step = 0;
  int64_t total_steps = 0;  // 0: unknown (no percentage, no ETA)
  double loss = 0;
  double learning_rate = 0;
  double examples_per_second = 0;  // <= 0: unknown
  double steps_per_second = 0;     // <= 0: unknown
};

// "step 1200/5000 (24.0%) loss 0.4312 lr 0.05 12,345 ex/s 3.1 steps/s ETA 20m26s"; unknown
// parts are left out.
std::string FormatProgress(const ProgressLine& p);
// "20m26s", "3h05m", "45s", "2d03h".
std::string FormatEta(absl::Duration d);
// 12345 -> "12,345" (a leading "-" for negative numbers).
std::string FormatThousands(int64_t v);
// 1536 -> "1.5 KiB" (binary units, one decimal).
std::string FormatBytes(double bytes);
// (1, "file", "files") -> "1 file", (2, ...) -> "2 files"; thousands separated.
std::string CountOf(int64_t n, const char* one, const char* many);

// A progress line on a terminal ("\r" ... ESC[K, no line break) stays open
// until something ends it. MarkProgressLineOpen says one is; EndProgressLine
// gives "\n" (and marks it ended) when one is open, "" otherwise: written
// before a message that must start a line of its own, so that a log file or a
// pipe, where no line is left open, gets no blank lines. Thread safety: any
// thread (one atomic flag for the process).
void MarkProgressLineOpen();
const char* EndProgressLine();

class ProgressTracker {
 public:
  // `total_steps` 0 if unknown; rates over the last `window` steps.
  explicit ProgressTracker(int64_t total_steps, int window = 50) : total_steps_(total_steps), window_(window) {}
  // Records that `step` finished at `now` after processing `examples`.
  void OnStep(int64_t step, int64_t examples, double loss, double learning_rate, absl::Time now);
  ProgressLine Line() const;
  std::string ToString() const { return FormatProgress(Line()); }

 private:
  struct Point {
    int64_t step;
    int64_t examples;  // cumulative
    absl::Time time;
  };
  int64_t total_steps_;
  int window_;
  int64_t examples_ = 0;
  ProgressLine last_;
  std::deque<Point> points_;
};

}  // namespace sluice

#endif  // SLUICE_MONITORING_PROGRESS_H_
