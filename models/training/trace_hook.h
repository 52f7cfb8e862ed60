// TraceHook: Chrome traces (monitoring/trace.h; Perfetto, chrome://tracing) of the steps in a
// range (train --trace_steps=A-B), one JSON file per step, <run_dir>/traces/step_<N>.json
// (written to a .tmp file, then renamed). It asks the session for step stats on those steps
// only. At the end of a run that stopped normally it prints "traces: K step(s) in DIR/traces".
// Each file's "otherData": `step`; `executed_graph_nodes`, the nodes of the step's graph
// (pruned and rewritten, before it is split across devices and tasks); `recorded_nodes`, the
// kernels that ran (one complete event each): more than executed_graph_nodes when the step
// spans devices or tasks (the _Send/_Recv pairs and control-edge constants that partitioning
// adds), fewer when a branch was not taken (dead nodes are not recorded).
// Tracing never fails a run: a write error is printed once as a warning and tracing stops.
//
// Ownership: borrows `out` and `err`, which must outlive the hook.
// Thread safety: the loop's thread only.
#ifndef SLUICE_MODELS_TRAINING_TRACE_HOOK_H_
#define SLUICE_MODELS_TRAINING_TRACE_HOOK_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/training/hook.h"

namespace sluice {
namespace training {

// An inclusive range of step numbers; empty when last < first.
struct StepRange {
  int64_t first = 1;
  int64_t last = 0;
  bool empty() const { return last < first; }
  bool Contains(int64_t step) const { return step >= first && step <= last; }
};

// "A-B" (1 <= A <= B) or "A" (the step A alone). InvalidArgument with the expected form.
absl::StatusOr<StepRange> ParseStepRange(absl::string_view text);

struct TraceHookOptions {
  StepRange steps;
  std::string run_dir;
  std::string device;  // the lane's name when the session reports step stats without devices
  // Each kernel's duration includes its device work (train --trace_device_time): a GPU
  // kernel waits for its stream; the traced steps run slower.
  bool device_time = false;
};

class TraceHook : public TrainingHook {
 public:
  TraceHook(const TraceHookOptions& options, std::ostream* out, std::ostream* err)
      : options_(options), out_(out), err_(err) {}

  // Creates <run_dir>/traces ("starting monitoring: cannot create ..." when it cannot); warns
  // when the run resumes after the range.
  absl::Status Begin(Session* session, const LoopStart& start) override;
  void BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) override;
  absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) override;
  void Close(const LoopEnd& end) override;

  int64_t traces_written() const { return traces_written_; }

 private:
  void Warn(const std::string& message);

  const TraceHookOptions options_;
  std::ostream* const out_;
  std::ostream* const err_;
  bool traced_ = false;  // this step asked for step stats
  bool failed_ = false;  // a write failed: tracing is off
  int64_t traces_written_ = 0;
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_TRACE_HOOK_H_
