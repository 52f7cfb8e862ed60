// InputHook: the in-graph input pipelines' host side (models/input_pipeline.h). Begin runs the
// pipelines' init ops, puts the training readers where an uninterrupted run would be after
// the restored step, and starts the queue runners under one Coordinator; Close stops and joins
// them. IDX and text sources go to epoch consumed / N, item consumed % N; TFRecord and CSV
// sources to the epoch, file and record found from their files' record counts and the epoch's
// file order (a scan of the files at resume), printing "input restored to example E (exact
// order) at epoch P, record R of FILE". With an in-order pipeline (exact_order) a resumed run
// then sees exactly the examples the uninterrupted one would; otherwise the examples that sat
// in the shuffle queue at the checkpoint are read again (none is skipped).
// With a files record (the chief's <run_dir>/input_files.txt, input_files.h),
// Begin also warns, on a resume, about each training file that changed since
// the record was written, and writes the record anew.
//
// Ownership: borrows `out`; owns the runners and the coordinator.
// Thread safety: the loop's thread only; the runners' threads call Session::Run.
#ifndef SLUICE_MODELS_TRAINING_INPUT_HOOK_H_
#define SLUICE_MODELS_TRAINING_INPUT_HOOK_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "inputs/queue_runner.h"
#include "models/input_pipeline.h"
#include "absl/strings/str_cat.h"
#include "models/training/hook.h"

namespace sluice {
namespace training {

// Puts `input`'s readers (and a file source's epoch counter) where an uninterrupted run's
// are after `consumed` examples; Begin calls it after the init ops and before the queue
// runners start. Returns where, for the log: "" for IDX and text sources, " at epoch E,
// record R of FILE" for TFRecord and CSV sources. Errors: a file that cannot be read or
// scanned (named), or the restore ops' errors.
absl::StatusOr<std::string> RestoreInputPosition(Session* session, const models::InputPipeline& input,
                                                 int64_t consumed);

struct InputHookOptions {
  models::InputPipeline train;
  models::InputPipeline eval;  // empty when the run has no evaluation
  // Examples of this pipeline per global step: the training batch size (a
  // replica of an async run: its share, batch / workers).
  int64_t examples_per_step = 0;
  // Where the training files' names and sizes are kept between runs (the
  // chief's <run_dir>/input_files.txt); empty: nowhere.
  std::string files_record;
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
  // Warns (on a resume) about the training files that changed since the
  // record was written, and writes it anew. Never fails the run.
  void CheckAndRecordInputFiles(const LoopStart& start);

  const InputHookOptions options_;
  std::ostream* const out_;
  Coordinator coord_;
  std::vector<std::unique_ptr<QueueRunner>> runners_;
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_INPUT_HOOK_H_
