// InputHook (see input_hook.h).
#include "models/training/input_hook.h"

#include "absl/strings/str_cat.h"
#include "inputs/reader_state.pb.h"

namespace sluice {
namespace training {
namespace {

absl::Status WithContext(const absl::Status& s, absl::string_view context) {
  return absl::Status(s.code(), absl::StrCat(context, s.message()));
}

// Feeds every restorable reader of `input` the state it has after `consumed` examples.
absl::Status RestoreInputPosition(Session* session, const models::InputPipeline& input, int64_t consumed) {
  if (input.readers.empty() || input.examples_per_epoch <= 0 || consumed <= 0) return absl::OkStatus();
  const int64_t epoch = consumed / input.examples_per_epoch;
  const int64_t position = consumed % input.examples_per_epoch;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> targets;
  for (const models::RestorableReader& r : input.readers) {
    ReaderState state;
    state.set_reader_type(r.reader_type);
    state.set_work_started(epoch + 1);
    state.set_work_finished(epoch);
    state.set_num_records_produced(consumed);
    state.set_current_work(r.file);
    // A sharded reader skips to its next record from there.
    state.set_position(position * std::max(1, input.num_shards));
    feeds.push_back({r.state_feed, Tensor::Scalar<tstring>(state.SerializeAsString())});
    targets.push_back(r.restore_op);
  }
  std::vector<Tensor> unused;
  return session->Run(feeds, {}, targets, &unused);
}

}  // namespace

InputHook::~InputHook() { Stop(); }

absl::Status InputHook::Begin(Session* session, const LoopStart& start) {
  std::vector<std::string> init = options_.train.init_ops;
  init.insert(init.end(), options_.eval.init_ops.begin(), options_.eval.init_ops.end());
  std::vector<Tensor> unused;
  if (!init.empty()) {
    absl::Status s = session->Run({}, {}, init, &unused);
    if (!s.ok()) return WithContext(s, "initializing the input pipeline: ");
  }
  if (start.step > 0) {
    const int64_t consumed = start.step * options_.examples_per_step;
    absl::Status s = RestoreInputPosition(session, options_.train, consumed);
    if (!s.ok()) return WithContext(s, "restoring the input position: ");
    // A replica that joins a fresh run late starts where the run is, not
    // where a checkpoint was.
    *out_ << (start.resumed ? "input restored to example " : "input starts at example ") << consumed
          << (options_.train.exact_order ? " (exact order)" : "")
          << (start.resumed ? "" : absl::StrCat(": the run is at step ", start.step)) << "\n";
  }
  std::vector<QueueRunnerDef> defs = options_.train.runners;
  defs.insert(defs.end(), options_.eval.runners.begin(), options_.eval.runners.end());
  for (const QueueRunnerDef& def : defs) {
    auto runner = QueueRunner::New(def);
    if (!runner.ok()) {
      Stop();
      return runner.status();
    }
    absl::Status s = (*runner)->Start(session, &coord_);
    if (!s.ok()) {
      Stop();
      return WithContext(s, "starting the input pipeline: ");
    }
    runners_.push_back(std::move(runner).value());
  }
  return absl::OkStatus();
}

void InputHook::Stop() {
  if (runners_.empty()) return;
  coord_.RequestStop();
  for (auto& r : runners_) r->Stop();
  for (auto& r : runners_) (void)r->Join();
  runners_.clear();
}

void InputHook::Close(const LoopEnd& end) { Stop(); }

}  // namespace training
}  // namespace sluice
