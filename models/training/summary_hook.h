// SummaryHook: the TensorBoard event file of a run (monitoring/EVENTS.md, "What train writes"):
// the training graph (with the summary nodes) at the start, session_log START after a resume,
// and every `every_steps` steps the scalars (train/loss, train/learning_rate,
// train/examples_per_second, train/gradient_global_norm, train/<metric>), histograms of the
// trainable variables matching `histograms` and of their gradients, and `input_images`
// images of the input batch; the eval/<name> scalars of each evaluation (an EvalListener).
//
// Histograms and images come from summary ops (monitoring/summary_ops.cc) that Begin adds to
// the session and that are fetched with the training step on summary steps, so they describe
// that step's batch and gradients; the scalars are values the loop already has.
// Writing never fails a run: a write error is printed once as a warning and summaries stop.
//
// Ownership: borrows `err`, which must outlive the hook; the event file is its own.
// Thread safety: the loop's thread only.
#ifndef SLUICE_MODELS_TRAINING_SUMMARY_HOOK_H_
#define SLUICE_MODELS_TRAINING_SUMMARY_HOOK_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/framework/graph.pb.h"
#include "models/training/checkpoint_hook.h"
#include "models/training/eval_hook.h"
#include "models/training/hook.h"
#include "models/training_graph.h"
#include "monitoring/event_writer.h"
#include "monitoring/progress.h"

namespace sluice {
namespace training {

struct SummaryHookOptions {
  std::string run_dir;      // where the event file goes
  int64_t every_steps = 0;  // 0: no event file at all
  // fnmatch patterns of trainable variable names; a part of a split table
  // also matches by the table's name (HistogramPatternMatches).
  std::vector<std::string> histograms;
  int input_images = 0;                 // images of the batch's "image" feature per summary
  absl::Duration flush_interval = absl::Seconds(5);  // how often the file is handed to the OS
};

// `pattern` (fnmatch, '*' crossing '/') matches variable `v` by its name or,
// for a part of a split table ("embed/embeddings/part_1"), by the table's
// name ("embed/embeddings", as checkpoints and warm starts call it).
bool HistogramPatternMatches(const std::string& pattern, const models::VariableSummary& v);

// Also a CheckpointListener: a save flushes the event file, so that a crash
// after a checkpoint at step T loses no point up to T (the resumed run starts
// after T and would never write them again).
class SummaryHook : public TrainingHook, public EvalListener, public CheckpointListener {
 public:
  // Checks the options against the training graph and builds the summary nodes; no I/O.
  // InvalidArgument naming the option ("histograms[1]: ...", "input_images: ...") when a
  // pattern matches no trainable variable or the input has no usable image feature.
  static absl::StatusOr<std::unique_ptr<SummaryHook>> Create(const SummaryHookOptions& options,
                                                             const models::TrainingGraph& tg, std::ostream* err);
  ~SummaryHook() override;

  // Adds the summary nodes to the session, opens the event file, writes the graph (and
  // session_log START when resumed). Errors: "starting monitoring: ..." with Extend's or the
  // event file's status.
  absl::Status Begin(Session* session, const LoopStart& start) override;
  void BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) override;
  absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) override;
  void Close(const LoopEnd& end) override;
  void OnEval(int64_t step, const EvalValues& values) override;
  void BeforeSave(int64_t step, bool final) override;
  void AfterFinalSave(int64_t step) override {}

  // The summary nodes Begin adds, and the event file's path ("" before Begin or when off).
  const GraphDef& summary_graph() const { return summary_graph_; }
  std::string event_file() const { return events_ ? events_->path() : ""; }

 private:
  SummaryHook() = default;
  void Write(int64_t step, const Summary& summary);
  void Warn(const std::string& message);

  SummaryHookOptions options_;
  std::ostream* err_ = nullptr;
  GraphDef training_graph_;     // what the graph dashboard shows (with the summary nodes)
  GraphDef summary_graph_;      // the nodes Begin adds to the session
  std::string merged_summary_;  // "" when there are no histograms or images
  std::string global_norm_;
  std::vector<std::pair<std::string, std::string>> train_metrics_;  // (name, scalar tensor)

  std::unique_ptr<EventWriter> events_;
  std::unique_ptr<ProgressTracker> rate_;  // examples per second, as the progress line has it
  // Where this step's fetches are (BeforeStep -> AfterStep); -1: not fetched.
  int64_t summary_step_ = -1;
  int64_t last_summary_step_ = 0;  // the step of the last summary (or the start)
  int merged_index_ = -1;
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_SUMMARY_HOOK_H_
