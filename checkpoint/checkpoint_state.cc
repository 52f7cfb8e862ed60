// State file, retention and latest-valid lookup: see checkpoint_state.h.
#include "checkpoint/checkpoint_state.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/store_format.h"
#include "engine/platform/logging.h"
#include "engine/platform/status_macros.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace sluice {
namespace checkpoint {

namespace {
// The state file lists the retained checkpoints: a few hundred bytes each.
constexpr uint64_t kMaxStateFileBytes = 16 << 20;
}  // namespace

std::string CheckpointsDir(const std::string& run_dir) { return JoinPath(run_dir, kCheckpointsDirName); }

absl::StatusOr<CheckpointState> ReadCheckpointState(Env* env, const std::string& checkpoints_dir) {
  const std::string path = JoinPath(checkpoints_dir, kStateFileName);
  if (!env->FileExists(path).ok()) return absl::NotFoundError(absl::StrCat("no state file ", path));
  // A regular file of bounded size: a FIFO or device there must not hang the
  // latest-checkpoint lookup (it falls back to scanning the directories).
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadRegularFile(env, path, kMaxStateFileBytes));
  CheckpointState state;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowPartialMessage(false);
  class Silent : public google::protobuf::io::ErrorCollector {
   public:
    void AddError(int line, int col, const std::string& message) override {
      if (first.empty()) first = absl::StrCat(line + 1, ":", col + 1, ": ", message);
    }
    std::string first;
  } errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &state)) {
    return absl::DataLossError(absl::StrCat("state file ", path, ":", errors.first));
  }
  // What a Saver writes: at least one checkpoint, each in ckpt-<its step>, listed once, the
  // last one `latest`. A file cut short or bit-flipped can still parse (an empty file, a
  // comment, the first entries only): trusting it would hide committed checkpoints, so it is
  // DataLoss, and the lookup scans the directories instead.
  if (state.checkpoints_size() == 0) {
    return absl::DataLossError(absl::StrCat("state file ", path, ": lists no checkpoints"));
  }
  std::set<std::string> dirs;
  for (const CheckpointRecord& r : state.checkpoints()) {
    int64_t step = -1;
    if (!ParseCheckpointDirName(r.dir(), &step) || step != r.step() || !dirs.insert(r.dir()).second) {
      return absl::DataLossError(absl::StrCat("state file ", path, ": bad entry dir \"", absl::CEscape(r.dir()),
                                              "\" step ", r.step()));
    }
  }
  if (state.latest() != state.checkpoints(state.checkpoints_size() - 1).dir()) {
    return absl::DataLossError(absl::StrCat("state file ", path, ": latest \"", absl::CEscape(state.latest()),
                                            "\" is not the last checkpoint listed"));
  }
  if (state.has_best()) {
    const BestCheckpoint& b = state.best();
    int64_t step = -1;
    if (!dirs.count(b.dir()) || !ParseCheckpointDirName(b.dir(), &step) || step != b.step() || b.metric().empty() ||
        !std::isfinite(b.value())) {
      return absl::DataLossError(absl::StrCat("state file ", path, ": best \"", absl::CEscape(b.dir()), "\" step ",
                                              b.step(), " is not a listed checkpoint with a metric and a finite value"));
    }
  }
  return state;
}

absl::StatusOr<CheckpointState> StateFromDirectories(Env* env, const std::string& checkpoints_dir) {
  auto children = env->GetChildren(checkpoints_dir);
  if (!children.ok()) return children.status();
  std::map<int64_t, std::string> by_step;
  for (const std::string& c : *children) {
    int64_t step = -1;
    if (ParseCheckpointDirName(c, &step)) by_step[step] = c;
  }
  CheckpointState state;
  for (const auto& [step, dir] : by_step) {
    CheckpointRecord* r = state.add_checkpoints();
    r->set_dir(dir);
    r->set_step(step);
  }
  if (!by_step.empty()) state.set_latest(by_step.rbegin()->second);
  return state;
}

absl::Status WriteCheckpointState(Env* env, const std::string& checkpoints_dir, const CheckpointState& state) {
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(state, &text)) {
    return absl::InternalError("cannot print the checkpoint state");
  }
  text = "# Sluice checkpoint state (checkpoint/FORMAT.md). Replaced atomically; do not edit while training.\n" + text;
  return WriteFileAtomically(env, JoinPath(checkpoints_dir, kStateFileName), text);
}

namespace {

// Keeps the `keep` newest of `records` (oldest first) that are neither
// preserved forever nor the state's best, preserving one per keep_every_hours
// of those leaving the window; the rest go to `to_delete`.
void ApplyRetention(std::vector<CheckpointRecord> records, const RetentionOptions& options,
                    double* next_preserve_time, CheckpointState* state, std::vector<std::string>* to_delete) {
  const std::string best = state->has_best() ? state->best().dir() : "";
  auto spared = [&best](const CheckpointRecord& r) { return r.keep_forever() || (!best.empty() && r.dir() == best); };
  int recent = 0;
  for (const CheckpointRecord& r : records) recent += spared(r) ? 0 : 1;
  std::vector<CheckpointRecord> kept;
  for (CheckpointRecord& r : records) {
    if (!spared(r) && options.keep > 0 && recent > options.keep) {
      --recent;
      if (options.keep_every_hours > 0 && r.unix_seconds() >= *next_preserve_time) {
        r.set_keep_forever(true);
        *next_preserve_time = r.unix_seconds() + options.keep_every_hours * 3600;
        kept.push_back(r);
      } else {
        to_delete->push_back(r.dir());
      }
      continue;
    }
    kept.push_back(r);
  }
  state->clear_checkpoints();
  for (const CheckpointRecord& r : kept) *state->add_checkpoints() = r;
}

}  // namespace

void AddCheckpointAndApplyRetention(const CheckpointRecord& record, const RetentionOptions& options,
                                    double* next_preserve_time, CheckpointState* state,
                                    std::vector<std::string>* to_delete) {
  std::vector<CheckpointRecord> records;
  for (const CheckpointRecord& r : state->checkpoints()) {
    if (r.dir() != record.dir()) records.push_back(r);  // a re-save of a step replaces it
  }
  records.push_back(record);
  ApplyRetention(std::move(records), options, next_preserve_time, state, to_delete);
  state->set_latest(record.dir());
}

absl::Status MarkBestAndApplyRetention(const BestCheckpoint& best, const RetentionOptions& options,
                                       double* next_preserve_time, CheckpointState* state,
                                       std::vector<std::string>* to_delete) {
  bool listed = false;
  for (const CheckpointRecord& r : state->checkpoints()) listed |= r.dir() == best.dir() && r.step() == best.step();
  if (!listed) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", best.dir(), " of step ", best.step(), " is not retained: it cannot be the best"));
  }
  *state->mutable_best() = best;
  // The previous best, no longer spared, may now fall out of the window.
  ApplyRetention({state->checkpoints().begin(), state->checkpoints().end()}, options, next_preserve_time, state,
                 to_delete);
  return absl::OkStatus();
}

absl::Status VerifyCheckpoint(Env* env, const std::string& dir, VerifyLevel level) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader, CheckpointReader::Open(dir, env));
  if (level == VerifyLevel::kFull) return reader->VerifyAll();
  return reader->VerifyFiles();
}

absl::StatusOr<FoundCheckpoint> FindLatestValidCheckpoint(Env* env, const std::string& run_dir, VerifyLevel level,
                                                          std::vector<std::string>* skipped) {
  const std::string ckpts = CheckpointsDir(run_dir);
  std::map<int64_t, std::string, std::greater<int64_t>> candidates;  // step -> dir name
  // The state file is the commit point: a directory it does not list was
  // renamed into place by a save that crashed before committing, or was left
  // by retention; neither is resumed from. Only without a readable state file
  // are the directories scanned.
  auto state = ReadCheckpointState(env, ckpts);
  if (state.ok()) {
    for (const CheckpointRecord& r : state->checkpoints()) {
      int64_t step;
      if (ParseCheckpointDirName(r.dir(), &step)) candidates[step] = r.dir();
    }
  } else if (state.status().code() != absl::StatusCode::kNotFound) {
    LOG(WARNING) << state.status().message() << "; scanning " << ckpts << " instead";
  }
  if (!state.ok() && env->IsDirectory(ckpts)) {
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> children, env->GetChildren(ckpts));
    for (const std::string& c : children) {
      int64_t step;
      if (ParseCheckpointDirName(c, &step) && env->IsDirectory(JoinPath(ckpts, c))) candidates[step] = c;
    }
  }
  for (const auto& [step, name] : candidates) {
    const std::string dir = JoinPath(ckpts, name);
    absl::Status s = VerifyCheckpoint(env, dir, level);
    if (s.ok()) return FoundCheckpoint{dir, step};
    LOG(WARNING) << "skipping checkpoint " << dir << " (step " << step << "): " << s.message();
    if (skipped != nullptr) skipped->push_back(absl::StrCat(dir, ": ", s.message()));
  }
  return absl::NotFoundError(absl::StrCat("no valid checkpoint in ", ckpts,
                                          candidates.empty() ? "" : absl::StrCat(" (", candidates.size(), " failed verification)")));
}

}  // namespace checkpoint
}  // namespace sluice
