// TraceHook (see trace_hook.h).
#include "models/training/trace_hook.h"

#include <cstdio>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "engine/platform/env.h"
#include "monitoring/trace.h"
#include "monitoring/progress.h"

namespace sluice {
namespace training {
absl::StatusOr<StepRange> ParseStepRange(absl::string_view text) {
  const std::string t(absl::StripAsciiWhitespace(text));
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--trace_steps '", t, "': ", why, "; expected A-B with 1 <= A <= B (e.g. 10-12) or one step A"));
  };
  std::vector<std::string> parts = absl::StrSplit(t, '-');
  if (parts.empty() || parts.size() > 2) return bad("not a step range");
  StepRange r;
  if (!absl::SimpleAtoi(parts[0], &r.first) || parts[0].empty() || !absl::ascii_isdigit(parts[0][0])) {
    return bad("the first step is not a number");
  }
  r.last = r.first;
  if (parts.size() == 2 && (!absl::SimpleAtoi(parts[1], &r.last) || parts[1].empty() ||
                            !absl::ascii_isdigit(parts[1][0]))) {
    return bad("the last step is not a number");
  }
  if (r.first < 1) return bad("steps count from 1");
  if (r.last < r.first) return bad("the range is backwards");
  return r;
}

void TraceHook::Warn(const std::string& message) { *err_ << EndProgressLine() << "warning: " << message << "\n"; }

absl::Status TraceHook::Begin(Session* session, const LoopStart& start) {
  if (options_.steps.empty()) return absl::OkStatus();
  const std::string dir = options_.run_dir + "/traces";
  if (absl::Status s = Env::Default()->CreateDirs(dir); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("starting monitoring: cannot create ", dir, ": ", s.message()));
  }
  if (options_.steps.last <= start.step) {
    Warn(absl::StrCat("--trace_steps=", options_.steps.first, "-", options_.steps.last, ": the run resumes after step ",
                      start.step, ", so no step is traced"));
  }
  return absl::OkStatus();
}

void TraceHook::BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) {
  traced_ = options_.steps.Contains(step.step) && !failed_;
  if (traced_) {
    args->collect_step_stats = true;
    args->step_stats_device_time = options_.device_time;
  }
}

absl::Status TraceHook::AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) {
  if (!traced_ || result.metadata == nullptr) return absl::OkStatus();
  const RunMetadata& metadata = *result.metadata;
  const std::string path = absl::StrFormat("%s/traces/step_%d.json", options_.run_dir, step.step);
  // One lane (trace process) per device; a session that reports no devices
  // (a fake one in tests) gives one lane named options_.device.
  std::vector<DeviceStepStats> lanes = metadata.device_step_stats;
  if (lanes.empty()) lanes.push_back({options_.device, metadata.step_stats});
  const std::string json = StepStatsToChromeTrace(
      lanes,
      {{"step", absl::StrCat(step.step)},
       {"executed_graph_nodes", absl::StrCat(metadata.executed_graph_nodes)},
       {"recorded_nodes", absl::StrCat(metadata.step_stats.size())}});
  if (absl::Status s = WriteFileAtomically(Env::Default(), path, json); !s.ok()) {
    Warn(absl::StrCat("cannot write the trace ", path, " (", s.message(), "); tracing is off"));
    failed_ = true;
    return absl::OkStatus();
  }
  ++traces_written_;
  return absl::OkStatus();
}

void TraceHook::Close(const LoopEnd& end) {
  if (end.ended && traces_written_ > 0) {
    *out_ << "traces: " << traces_written_ << " step(s) in " << options_.run_dir << "/traces\n";
    out_->flush();
  }
}

}  // namespace training
}  // namespace sluice
