// The `checkpoint` state file of <run_dir>/checkpoints/ (latest + retained
// checkpoints, and the best one when a run selects it: text-format
// CheckpointState), retention (`keep`, `keep_every_hours`, the best spared),
// and finding the newest checkpoint that verifies.
//
// The state file is only ever replaced atomically (WriteFileAtomically:
// write temp, fsync, rename, fsync dir), after the checkpoint it names is
// whole on disk. Thread safety: free functions; callers serialize writers of
// one run directory (the Saver has a single writer).
#ifndef SLUICE_CHECKPOINT_CHECKPOINT_STATE_H_
#define SLUICE_CHECKPOINT_CHECKPOINT_STATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/platform/env.h"
#include "checkpoint/manifest.pb.h"

namespace sluice {
namespace checkpoint {

inline constexpr char kCheckpointsDirName[] = "checkpoints";
inline constexpr char kStateFileName[] = "checkpoint";

// <run_dir>/checkpoints
std::string CheckpointsDir(const std::string& run_dir);

// NotFound when there is no state file; DataLoss when it does not parse or is
// not what a Saver writes (see FORMAT.md).
absl::StatusOr<CheckpointState> ReadCheckpointState(Env* env, const std::string& checkpoints_dir);
absl::Status WriteCheckpointState(Env* env, const std::string& checkpoints_dir, const CheckpointState& state);
// A state listing every committed ckpt-<step> directory under
// `checkpoints_dir`, oldest step first (unix_seconds 0: unknown), for when the
// state file is lost or damaged: retention then still sees (and in time
// deletes) the checkpoints the damaged file listed.
absl::StatusOr<CheckpointState> StateFromDirectories(Env* env, const std::string& checkpoints_dir);

struct RetentionOptions {
  // Most recent checkpoints kept (>= 1); 0 keeps all.
  int keep = 5;
  // > 0: of the checkpoints leaving the `keep` window, one per this many
  // hours is preserved forever.
  double keep_every_hours = 0;
};

// Appends `record` as the latest checkpoint of `state` and applies retention.
// `*next_preserve_time` (unix seconds) is when the next checkpoint leaving
// the window is old enough to be preserved; updated. Directories to delete
// (names relative to checkpoints/) are appended to `to_delete`.
// The state's best checkpoint (CheckpointState::best) is spared by `keep`
// retention, as keep_forever ones are.
void AddCheckpointAndApplyRetention(const CheckpointRecord& record, const RetentionOptions& options,
                                    double* next_preserve_time, CheckpointState* state,
                                    std::vector<std::string>* to_delete);

// Makes `best` the state's best checkpoint and applies retention again (the
// previous best may leave the `keep` window: its directory is then appended
// to `to_delete`). FailedPrecondition unless `state` lists best.dir at
// best.step.
absl::Status MarkBestAndApplyRetention(const BestCheckpoint& best, const RetentionOptions& options,
                                       double* next_preserve_time, CheckpointState* state,
                                       std::vector<std::string>* to_delete);

enum class VerifyLevel {
  kOpen,  // the manifest reads and the FILES inventory matches
  kFull,  // CheckpointReader::VerifyAll
};

struct FoundCheckpoint {
  std::string dir;  // full path of ckpt-<step>
  int64_t step = 0;
};

// The newest checkpoint in <run_dir>/checkpoints that verifies: candidates
// are those the state file lists (the commit point), newest first; only when
// the state file is missing or unreadable, every ckpt-<step> directory (a
// checkpoint is renamed into place only when whole). Each one
// skipped is logged as a warning and described in `skipped` (optional).
// NotFound when none verifies (or there are none).
absl::StatusOr<FoundCheckpoint> FindLatestValidCheckpoint(Env* env, const std::string& run_dir, VerifyLevel level,
                                                          std::vector<std::string>* skipped = nullptr);

// Verifies one checkpoint directory at `level`.
absl::Status VerifyCheckpoint(Env* env, const std::string& dir, VerifyLevel level);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_CHECKPOINT_STATE_H_
