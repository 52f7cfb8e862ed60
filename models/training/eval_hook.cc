// EvalHook (see eval_hook.h).
#include "models/training/eval_hook.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "monitoring/progress.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace sluice {
namespace training {
namespace {

constexpr absl::string_view kLinePrefix = "eval at step ";

}  // namespace

std::vector<int64_t> EvaluatedSteps(absl::string_view results_text) {
  std::vector<int64_t> steps;
  for (absl::string_view line : absl::StrSplit(results_text, '\n')) {
    int64_t step = 0;
    if (absl::ConsumePrefix(&line, kLinePrefix) && absl::SimpleAtoi(line.substr(0, line.find(':')), &step)) {
      steps.push_back(step);
    }
  }
  return steps;
}

absl::Status EvalHook::Begin(Session* session, const LoopStart& start) {
  session_ = session;
  last_result_.clear();
  missed_eval_step_ = -1;
  missed_eval_status_ = absl::OkStatus();
  last_evaluated_step_ = -1;
  if (!options_.results_file.empty()) {
    // The last line an earlier run wrote: a finished run run again reports
    // its final evaluation from it instead of evaluating again.
    auto earlier = ReadFileToString(options_.env, options_.results_file, kMaxResultsBytes);
    bool evaluated_at_start = false;  // the file holds the restored step's evaluation
    if (earlier.ok()) {
      absl::string_view text = *earlier;
      while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
      last_result_ = std::string(text.substr(text.rfind('\n') == absl::string_view::npos ? 0 : text.rfind('\n') + 1));
      const std::vector<int64_t> steps = EvaluatedSteps(text);
      evaluated_at_start = std::find(steps.begin(), steps.end(), start.step) != steps.end();
    }
    // A periodic evaluation due at the restored step that the file lacks.
    if (start.resumed && options_.every_steps > 0 && start.step > 0 && start.step % options_.every_steps == 0 &&
        start.step < start.last_step && !evaluated_at_start) {
      missed_eval_step_ = start.step;
    }
    auto file = options_.env->NewAppendableFile(options_.results_file);
    if (!file.ok()) return absl::Status(file.status().code(), absl::StrCat("eval results: ", file.status().message()));
    results_ = std::move(*file);
  }
  return absl::OkStatus();
}

absl::StatusOr<EvalValues> EvalHook::Evaluate(Session* session, int64_t* examples_out) const {
  std::vector<std::string> fetches = {options_.loss};
  for (const auto& [name, t] : options_.metrics) fetches.push_back(t);
  const int64_t n = options_.examples_per_epoch;
  const int64_t batch = options_.batch_size;
  const int64_t batches = n > 0 ? (n + batch - 1) / batch : 1;
  std::vector<double> sums(fetches.size(), 0.0);
  int64_t examples = 0;
  for (int64_t i = 0; i < batches; ++i) {
    if (options_.stop_signals != nullptr && options_.stop_signals->load() > 0) {
      return absl::CancelledError("a stop signal arrived");
    }
    std::vector<Tensor> out;
    absl::Status s = session->Run({}, fetches, {}, &out);
    if (!s.ok()) return s;
    if (out.size() != fetches.size()) {
      return absl::InternalError(absl::StrCat("the session returned ", out.size(), " tensors for ", fetches.size(),
                                              " fetches"));
    }
    const int64_t weight = (n > 0 && i == batches - 1) ? n - batch * (batches - 1) : batch;
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k].dtype() != DT_FLOAT || out[k].NumElements() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(fetches[k], " is not a float scalar"));
      }
      sums[k] += static_cast<double>(out[k].scalar<float>()) * weight;
    }
    examples += weight;
  }
  EvalValues values;
  values.push_back({"loss", sums[0] / examples});
  if (options_.perplexity) values.push_back({"perplexity", std::exp(sums[0] / examples)});
  for (size_t k = 0; k < options_.metrics.size(); ++k) values.push_back({options_.metrics[k].first, sums[k + 1] / examples});
  if (examples_out != nullptr) *examples_out = examples;
  return values;
}

absl::Status EvalHook::EvaluateAndReport(int64_t step) {
  if (options_.loss.empty()) return absl::OkStatus();
  int64_t examples = 0;
  auto values = Evaluate(session_, &examples);
  if (!values.ok()) return values.status();
  std::vector<std::string> parts;
  for (const auto& [name, v] : *values) parts.push_back(absl::StrFormat("%s %.4f", name, v));
  const std::string line = absl::StrCat(kLinePrefix, step, ": ", absl::StrJoin(parts, " "), " (",
                                        FormatThousands(examples), " examples)");
  *out_ << EndProgressLine() << line << "\n";
  out_->flush();
  // The listeners first: the line in the results file says they heard it (the best-model hook
  // counts those lines when a run resumes).
  for (EvalListener* l : listeners_) l->OnEval(step, *values);
  if (results_ != nullptr) {
    // Flushed at once: a reader (or a crash) sees every finished line.
    absl::Status s = results_->Append(absl::StrCat(line, "\n"));
    if (s.ok()) s = results_->Flush();
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("eval results: ", s.message()));
  }
  last_evaluated_step_ = step;
  return absl::OkStatus();
}

void EvalHook::BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) {
  if (missed_eval_step_ < 0) return;
  // Here, not in Begin: the input pipeline's threads run from its Begin on, after this hook's.
  const int64_t at = missed_eval_step_;
  missed_eval_step_ = -1;
  const absl::Time start = absl::Now();
  absl::Status s = EvaluateAndReport(at);
  if (control != nullptr) control->AddPause(absl::Now() - start);
  if (StoppedBySignal(s)) {
    *out_ << EndProgressLine() << "evaluation at step " << at << " abandoned: " << s.message() << "\n";
  } else if (!s.ok()) {
    missed_eval_status_ = absl::Status(s.code(), absl::StrCat("evaluation at step ", at, ": ", s.message()));
  }
}

absl::Status EvalHook::AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) {
  if (!missed_eval_status_.ok()) return std::exchange(missed_eval_status_, absl::OkStatus());
  if (!CrossedMultiple(step.previous_step, step.step, options_.every_steps) || step.step >= step.last_step) {
    return absl::OkStatus();
  }
  const absl::Time start = absl::Now();
  absl::Status s = EvaluateAndReport(step.step);
  if (control != nullptr) control->AddPause(absl::Now() - start);  // not training: the rates leave it out
  if (StoppedBySignal(s)) {
    // The stop-signal hook stops the loop before the next step.
    *out_ << EndProgressLine() << "evaluation at step " << step.step << " abandoned: " << s.message() << "\n";
    return absl::OkStatus();
  }
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("evaluation at step ", step.step, ": ", s.message()));
  return absl::OkStatus();
}

bool EvalHook::StoppedBySignal(const absl::Status& s) const {
  return absl::IsCancelled(s) && options_.stop_signals != nullptr && options_.stop_signals->load() > 0;
}

absl::Status EvalHook::End(Session* session, const LoopEnd& end) {
  if (end.preempted()) return absl::OkStatus();  // leave quickly; the resumed run evaluates
  // Evaluated at this very step already (a run stopped early after its evaluation).
  if (last_evaluated_step_ == end.step) return absl::OkStatus();
  if (end.steps_run == 0 && absl::StartsWith(last_result_, absl::StrCat(kLinePrefix, end.step, ": "))) {
    // Nothing changed since that evaluation (a scheduler's retry of a finished run, say).
    *out_ << EndProgressLine() << last_result_ << " (from " << options_.results_file << ")\n";
    out_->flush();
    return absl::OkStatus();
  }
  absl::Status s = EvaluateAndReport(end.step);
  if (StoppedBySignal(s)) {
    *out_ << EndProgressLine() << "final evaluation at step " << end.step << " abandoned: " << s.message()
          << "; run the same command again to evaluate\n";
    out_->flush();
    return absl::CancelledError(absl::StrCat("final evaluation abandoned: ", s.message()));
  }
  if (!s.ok()) {
    *err_ << "error: final evaluation: " << s.message() << "\n";
    return absl::Status(s.code(), absl::StrCat("final evaluation: ", s.message()));
  }
  return absl::OkStatus();
}

void EvalHook::Close(const LoopEnd& end) {
  if (results_ == nullptr) return;
  absl::Status s = results_->Close();
  if (!s.ok()) *err_ << "warning: eval results: " << s.message() << "\n";
  results_.reset();
}

}  // namespace training
}  // namespace sluice
