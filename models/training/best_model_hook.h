// BestModelHook: train.best_model (configs/experiment.proto). It hears every evaluation (it is
// an EvalListener of the EvalHook, which must come before it among the loop's hooks) and
// judges the watched value as it comes (OnEval, in full precision): an evaluation improves on
// the best so far when the value is lower (higher when `higher_is_better`) by more than
// `min_delta`; the first finite one always does, a NaN or infinity never.
//
// - After an improvement it marks that step's checkpoint as the run's best
//   (checkpoint::Saver::MarkBest: written first unless this run saved or restored that step).
//   A failed mark is a warning; the run goes on, judging against the new best (the state file
//   keeps the one before, which a resumed run would judge against).
// - With patience > 0, `patience` evaluations in a row without an improvement stop the run as a
//   finished one (StopKind::kFinish, at its next step's start or end): "early stop at step
//   3000: accuracy 0.8712 has not improved on 0.8790 (step 1000) for 2 evaluations". The final
//   evaluation, after the loop, is counted but stops nothing and prints no such line.
// - At the end of a run (not a preempted one) it prints the best, if any: "best accuracy
//   0.8790 at step 1000: <run_dir>/checkpoints/ckpt-1000".
//
// Resuming: the best comes from the checkpoint state file (Saver::best, when it is of the same
// metric and not past the restored step), and the evaluations since it are counted in the
// results file (eval.txt: the distinct steps after the best's, up to the restored one). The
// EvalHook writes an evaluation's line after its listeners heard it, so every line there was
// judged (a process that ends between the mark and the line leaves the step to be evaluated
// again: an evaluation at the best's own step is not judged). A run that had stopped early
// thus stops again before its first step, unless its patience was raised. eval.txt holds the
// values only to 4 decimals, which is why the best itself is read from the state file.
//
// Ownership: borrows the saver (may be null: no checkpoints, then the best is only reported)
// and the streams. Thread safety: the loop's thread only (OnEval comes from the EvalHook,
// which runs there).
#ifndef SLUICE_MODELS_TRAINING_BEST_MODEL_HOOK_H_
#define SLUICE_MODELS_TRAINING_BEST_MODEL_HOOK_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "checkpoint/saver.h"
#include "engine/platform/env.h"
#include "models/training/eval_hook.h"
#include "models/training/hook.h"

namespace sluice {
namespace training {

struct BestModelHookOptions {
  std::string metric = "loss";  // an EvalValues name
  bool higher_is_better = false;
  double min_delta = 0;  // >= 0
  int patience = 0;      // 0: never stop early
  std::string results_file;  // the EvalHook's (eval.txt); "" for none
  std::string run_dir;       // the saver's, to name the best checkpoint
  Env* env = Env::Default();
};

class BestModelHook : public TrainingHook, public EvalListener {
 public:
  BestModelHook(BestModelHookOptions options, checkpoint::Saver* saver, std::ostream* out, std::ostream* err)
      : options_(std::move(options)), saver_(saver), out_(out), err_(err) {}

  absl::Status Begin(Session* session, const LoopStart& start) override;
  // Stops a run that had stopped early, or whose evaluation of its restored step (a resume's
  // missed one, which the EvalHook runs in its BeforeStep) used up the patience.
  void BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) override;
  absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) override;
  absl::Status End(Session* session, const LoopEnd& end) override;

  void OnEval(int64_t step, const EvalValues& values) override;

  // What the hook knows now (for tests): the best step (-1: none), its value, and the
  // evaluations since it without an improvement.
  int64_t best_step() const { return best_ ? best_->step : -1; }
  double best_value() const { return best_ ? best_->value : 0; }
  int evaluations_since_best() const { return since_best_; }

 private:
  struct Judged {
    int64_t step = 0;
    double value = 0;
  };
  // Judges one evaluation (from OnEval): marks an improvement's checkpoint, or counts it
  // against the patience and decides the stop.
  void Judge(int64_t step, double value);
  bool Improves(double value) const;
  // Evaluations in the results file at steps in (after, upto], counted once per step.
  int CountEvaluations(int64_t after, int64_t upto) const;
  // An evaluation that lacked the metric, as a status (OK: none); cleared.
  absl::Status TakeError();
  // Prints the stop's line (once) and asks the loop to stop.
  void RequestStop(LoopControl* control);

  const BestModelHookOptions options_;
  checkpoint::Saver* const saver_;
  std::ostream* const out_;
  std::ostream* const err_;
  Session* session_ = nullptr;
  std::optional<Judged> best_;
  std::string error_;  // an evaluation lacked the metric
  int since_best_ = 0;
  bool stop_ = false;            // the patience ran out: stop at the next chance
  std::string stop_line_;        // "early stop at step ...", printed with the stop
  bool stopped_before_ = false;  // ... and it had run out before this run (Begin)
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_BEST_MODEL_HOOK_H_
