// InputHook: the in-graph input pipelines' host side (models/input_pipeline.h). Begin runs the
// pipelines' init ops, puts the training readers where an uninterrupted run would be after
// the restored step (epoch consumed / N, item consumed % N; printing "input restored to
// example E (exact order)"), and starts the queue runners under one Coordinator; Close
// stops and joins them. With the deterministic pipeline (exact_order) a resumed run then sees
// exactly the examples the uninterrupted one would; otherwise the examples that sat in the
// shuffle queue at the checkpoint are read again (none is skipped).
//
// Ownership: borrows `out`; owns the runners and the coordinator.
// Thread safety: the loop's thread only; the runners' threads call Session::Run.
#ifndef SLUICE_MODELS_TRAINING_INPUT_HOOK_H_
#define SLUICE_MODELS_TRAINING_INPUT_HOOK_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <vector>

#include "inputs/queue_runner.h"
#include "models/input_pipeline.h"
#include "absl/strings/str_cat.h"
#include "models/training/hook.h"

namespace sluice {
namespace training {

struct InputHookOptions {
  models::InputPipeline train;
  models::InputPipeline eval;  // empty when the run has no evaluation
  // Examples of this pipeline per global step: the training batch size (a
  // replica of an async run: its share, batch / workers).
  int64_t examples_per_step = 0;
};

class InputHook : public TrainingHook {
 public:
  InputHook(InputHookOptions options, std::ostream* out) : options_(std::move(options)), out_(out) {}
  ~InputHook() override;

  // Errors, with context: "initializing the input pipeline: ...", "restoring the input
  // position: ...", "starting the input pipeline: ...", or an invalid runner def.
  absl::Status Begin(Session* session, const LoopStart& start) override;
  void Close(const LoopEnd& end) override;

  // The input pipeline's first error (a reader's, say), OK if none: when a step fails
  // because its input failed, this says why.
  absl::Status status() const { return coord_.status(); }
  // A queue closed by a failed runner ends the step with OutOfRange: that is
  // this failure, not the end of the input.
  absl::Status InputFailure() const override {
    const absl::Status s = status();
    return s.ok() ? s : absl::Status(s.code(), absl::StrCat("the input pipeline failed: ", s.message()));
  }

 private:
  void Stop();

  const InputHookOptions options_;
  std::ostream* const out_;
  Coordinator coord_;
  std::vector<std::unique_ptr<QueueRunner>> runners_;
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_INPUT_HOOK_H_
