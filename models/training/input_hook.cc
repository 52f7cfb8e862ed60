// InputHook (see input_hook.h).
#include "models/training/input_hook.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/platform/env.h"
#include "inputs/file_order.h"
#include "inputs/reader_state.pb.h"
#include "models/training/input_files.h"

namespace sluice {
namespace training {
namespace {

absl::Status WithContext(const absl::Status& s, absl::string_view context) {
  return absl::Status(s.code(), absl::StrCat(context, s.message()));
}

// Feeds every restorable reader of `input` the state it has after `consumed` examples.
absl::Status RestoreReaders(Session* session, const models::InputPipeline& input, int64_t consumed) {
  if (input.readers.empty() || input.examples_per_epoch <= 0) return absl::OkStatus();
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

// Puts a TFRecord or CSV source where it is after `consumed` examples: the
// epoch from the files' record counts, the file and record in that epoch's
// order, the reader opened there with the epoch's later files pending, and
// the producer's epoch counter past that epoch. Returns where, for the log.
absl::StatusOr<std::string> RestoreFileSource(Session* session, const models::RestorableFileSource& source,
                                              int64_t consumed) {
  const int64_t n = static_cast<int64_t>(source.files.size());
  std::vector<int64_t> counts;
  int64_t per_epoch = 0;
  for (const std::string& path : source.files) {
    auto scan = ScanRecords(Env::Default(), path, source.format);
    if (!scan.ok()) return scan.status();
    counts.push_back(scan->records);
    per_epoch += scan->records;
  }
  if (per_epoch == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ", n, " training file(s) hold no record (", source.files[0], n > 1 ? ", ..." : "", ")"));
  }
  const int64_t epoch = consumed / per_epoch;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> targets = {source.set_epochs_op};
  std::vector<Tensor> unused;
  if (source.num_epochs > 0 && epoch >= source.num_epochs) {
    feeds.push_back({source.epochs_feed, Tensor::Scalar<int64_t>(source.num_epochs)});
    absl::Status s = session->Run(feeds, {}, targets, &unused);
    if (!s.ok()) return s;
    return absl::StrCat(": all ", source.num_epochs, " epoch(s) of ", per_epoch, " records were read");
  }
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (source.shuffle) order = SeededPermutation(static_cast<uint64_t>(source.seed), epoch, n);
  int64_t record = consumed % per_epoch;
  int64_t at = 0;
  while (record >= counts[order[at]]) record -= counts[order[at++]];  // ends: record < per_epoch
  const std::string& file = source.files[order[at]];
  // A reader that shuffles within the file counts records; one that does not, bytes.
  int64_t position = record;
  if (!source.reader_shuffle) {
    auto scan = ScanRecords(Env::Default(), file, source.format, record);
    if (!scan.ok()) return scan.status();
    if (scan->offset_of_wanted < 0) {
      return absl::DataLossError(absl::StrCat(file, ": record ", record, " is gone (the file changed while read)"));
    }
    position = scan->offset_of_wanted;
  }
  ReaderState state;
  state.set_reader_type(source.reader.reader_type);
  state.set_work_started(epoch * n + at + 1);
  state.set_work_finished(epoch * n + at);
  state.set_num_records_produced(consumed);
  state.set_current_work(file);
  state.set_position(position);
  for (int64_t i = at + 1; i < n; ++i) state.add_pending_work(source.files[order[i]]);
  feeds.push_back({source.epochs_feed, Tensor::Scalar<int64_t>(epoch + 1)});
  feeds.push_back({source.reader.state_feed, Tensor::Scalar<tstring>(state.SerializeAsString())});
  targets.push_back(source.reader.restore_op);
  absl::Status s = session->Run(feeds, {}, targets, &unused);
  if (!s.ok()) return s;
  return absl::StrCat(" at epoch ", epoch, ", record ", record, " of ", file);
}

// The files the training readers read: a file source's, or each reader's own.
// The training files, every shard's: under a replicated run a file of
// another worker's shard that changed moves that worker's input position,
// and the chief's record is the only one kept.
std::vector<std::string> TrainingFiles(const models::InputPipeline& input) {
  if (!input.all_files.empty()) return input.all_files;
  if (input.file_source.has_value()) return input.file_source->files;
  std::vector<std::string> files;
  for (const models::RestorableReader& r : input.readers) {
    if (std::find(files.begin(), files.end(), r.file) == files.end()) files.push_back(r.file);
  }
  return files;
}

}  // namespace

absl::StatusOr<std::string> RestoreInputPosition(Session* session, const models::InputPipeline& input,
                                                 int64_t consumed) {
  if (consumed <= 0) return std::string();
  if (input.file_source.has_value()) return RestoreFileSource(session, *input.file_source, consumed);
  absl::Status s = RestoreReaders(session, input, consumed);
  if (!s.ok()) return s;
  return std::string();
}

InputHook::~InputHook() { Stop(); }

absl::Status InputHook::Begin(Session* session, const LoopStart& start) {
  std::vector<std::string> init = options_.train.init_ops;
  init.insert(init.end(), options_.eval.init_ops.begin(), options_.eval.init_ops.end());
  std::vector<Tensor> unused;
  if (!init.empty()) {
    absl::Status s = session->Run({}, {}, init, &unused);
    if (!s.ok()) return WithContext(s, "initializing the input pipeline: ");
  }
  if (!options_.files_record.empty()) CheckAndRecordInputFiles(start);
  if (start.step > 0) {
    const int64_t consumed = start.step * options_.examples_per_step;
    auto where = RestoreInputPosition(session, options_.train, consumed);
    if (!where.ok()) return WithContext(where.status(), "restoring the input position: ");
    // A replica that joins a fresh run late starts where the run is, not
    // where a checkpoint was.
    *out_ << (start.resumed ? "input restored to example " : "input starts at example ") << consumed
          << (options_.train.exact_order ? " (exact order)" : "") << *where
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

void InputHook::CheckAndRecordInputFiles(const LoopStart& start) {
  Env* env = Env::Default();
  const std::string now = DescribeInputFiles(env, TrainingFiles(options_.train));
  if (start.resumed && start.step > 0) {
    constexpr uint64_t kMaxRecordBytes = 64 << 20;
    auto before = ReadRegularFile(env, options_.files_record, kMaxRecordBytes);
    const std::vector<std::string> changes = before.ok() ? InputFileChanges(*before, now) : std::vector<std::string>();
    if (!changes.empty()) {
      *out_ << "warning: the training files changed since the last run in this directory (" << options_.files_record
            << "):\n";
      for (const std::string& change : changes) *out_ << "  " << change << "\n";
      *out_ << "  the input resumes at example " << start.step * options_.examples_per_step
            << " of the files as they are now, which is not where that run stopped reading\n";
    }
  }
  absl::Status written = WriteFileAtomically(env, options_.files_record, now);
  if (!written.ok()) *out_ << "warning: cannot record the training files: " << written.message() << "\n";
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
