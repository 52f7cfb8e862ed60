// Saver: periodic checkpoints of a set of variables (model weights, optimizer
// slots, the global step: they are all just variables), after whitepaper
// §3.3: Save/Restore nodes attached to the variables.
//
//   auto saver = Saver::Create(options, variables);
//   saver->Extend(session);                 // adds save/ and restore nodes
//   auto step = saver->RestoreLatest(session);   // resume (NotFound: fresh)
//   for (...) { session->Run(...train...); saver->MaybeSave(session, step); }
//   saver->Save(session, final_step); saver->Wait();
//
// A save takes a snapshot (one Session::Run fetching _CheckpointSnapshot
// copies of every variable, taken under each variable's lock), then a
// background thread writes <run_dir>/checkpoints/ckpt-<step>.tmp, fsyncs it,
// renames it to ckpt-<step>, fsyncs the directory, and only then replaces the
// `checkpoint` state file (write temp, fsync, rename, fsync dir) and deletes
// the checkpoints that retention drops. A crash at any instant leaves the
// old or the new checkpoint whole, and the state file names a whole one.
//
// Ownership: the Saver does not own the Session. Thread safety: Saver
// methods are called from one thread (the training loop); the background
// write runs on a thread the Saver owns and joins (Wait, destructor).
#ifndef SLUICE_CHECKPOINT_SAVER_H_
#define SLUICE_CHECKPOINT_SAVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/checkpoint_writer.h"
#include "engine/platform/env.h"
#include "engine/framework/graph.pb.h"
#include "engine/runtime/session.h"

namespace sluice {
namespace checkpoint {

// A variable to save: the graph node of a VariableV2 (its ref output), the
// name it has in checkpoints, and for one partition of a partitioned variable
// the full shape and its slice ("0,5:-").
struct SaveableVariable {
  std::string node;
  std::string name;  // "" means the node name
  DataType dtype = DT_FLOAT;
  std::string slice_spec;  // "" for a whole variable
  TensorShape full_shape;  // only with slice_spec or mod_parts
  // A whole variable's shape, when known: a restore requires the
  // checkpoint's tensor to have it (a checkpoint of another model is an
  // error, not a variable of another shape).
  std::optional<TensorShape> shape;
  // A variable held in parts split by rows modulo mod_parts.size() (models'
  // partitioned embeddings, models/embedding_ops.h): row r of the whole
  // (shape full_shape) is row r / N of node mod_parts[r % N]; `node` is not
  // used. The checkpoint holds the whole tensor under `name` (stitched from
  // the parts' snapshots), and a restore assigns each part its rows of it,
  // so a checkpoint restores into any number of parts, one included.
  std::vector<std::string> mod_parts;
};

struct SaverOptions {
  std::string run_dir;
  int64_t every_steps = 0;    // 0: no step trigger
  double every_seconds = 0;   // 0: no time trigger
  RetentionOptions retention;
  int num_shards = 1;
  uint64_t chunk_bytes = kDefaultChunkBytes;
  std::string config_hash;
  // false: Save writes before returning (tests, final saves).
  bool background = true;
  // Node-name prefix of the nodes the Saver adds.
  std::string scope = "save";
  Env* env = Env::Default();
  // Unix seconds; tests inject a fake clock.
  std::function<double()> clock;
  // The run selects a best checkpoint (train.best_model, MarkBest). When
  // false, a best the state file records (the config no longer selects one)
  // is dropped at the next commit, so retention no longer spares it.
  bool records_best = false;
};

class Saver {
 public:
  // InvalidArgument for an empty run_dir or variable list, duplicate names.
  static absl::StatusOr<std::unique_ptr<Saver>> Create(SaverOptions options, std::vector<SaveableVariable> variables);
  ~Saver();  // waits for a pending background write

  // The snapshot and restore nodes, to add to a graph that holds the
  // variable nodes (AddToGraph), or to a session's graph (Extend).
  GraphDef SaverGraph() const;
  absl::Status Extend(Session* session) const;

  // Is a save due at `step` (every_steps / every_seconds since the last)?
  bool ShouldSave(int64_t step) const { return ShouldSave(step - 1, step); }
  // After a step that took the global step from `previous` to `step` (more
  // than one when other replicas advanced it): every_steps counts as reached
  // when a multiple of it lies in (previous, step].
  bool ShouldSave(int64_t previous, int64_t step) const;
  // Save(session, step) when ShouldSave(step).
  absl::Status MaybeSave(Session* session, int64_t step);
  // Snapshots now and writes (in the background unless !background). Returns
  // the snapshot's (or a foreground write's) error, or the error of the
  // previous background write (as Wait gives it); each names the step whose
  // checkpoint it cost: "the checkpoint of step N was not written: ...".
  absl::Status Save(Session* session, int64_t step);
  // Called after each save that committed: its step, the seconds from Save's
  // call to the commit, and when it committed (Unix seconds). A background
  // write calls it on the writer's thread. Set it while no write is pending.
  using CommitCallback = std::function<void(int64_t step, double seconds, double finished)>;
  void set_on_committed(CommitCallback on_committed) { on_committed_ = std::move(on_committed); }
  // Waits for the pending write; its status (OK if none). A failed write's
  // error names its step ("the checkpoint of step 1800 was not written: ..."),
  // and that step counts as not saved: Save(step) writes it again.
  absl::Status Wait();

  // Records the checkpoint of `step` as the run's best by the evaluation
  // value `metric` = `value` (train.best_model). Waits for a pending write;
  // writes the checkpoint of `step` first unless this Saver saved it or
  // RestoreLatest restored it (the session's variables must then still hold that
  // step: a checkpoint of that step from before a fallback restore is
  // written again); then
  // replaces the state file with it as `best`. Retention keeps the best
  // besides the `keep` newest until another is marked (the previous best may
  // then be deleted). A failed pending write (of another step) is returned
  // after the mark went on; a failed save or state file fails the mark (the
  // best stays as it was), its message ending with the pending write's.
  absl::Status MarkBest(Session* session, int64_t step, const std::string& metric, double value);
  // The best checkpoint the state file held when the Saver was created
  // (whatever records_best says), or the last one MarkBest recorded; nullopt
  // when none.
  std::optional<BestCheckpoint> best() const { return best_; }

  // Restores every variable from the checkpoint directory `ckpt_dir`.
  absl::Status Restore(Session* session, const std::string& ckpt_dir) const;
  // Restores from the newest valid checkpoint of run_dir and returns its
  // step; NotFound only when there is none (a fresh run). A checkpoint that
  // does not fit the variables (a tensor missing, or of another shape: the
  // model or optimizer changed) is FailedPrecondition naming it. When
  // `restored_dir` is given it gets the directory restored from.
  absl::StatusOr<int64_t> RestoreLatest(Session* session, VerifyLevel level = VerifyLevel::kFull,
                                        std::string* restored_dir = nullptr) const;

  // Verifies the checkpoint directory `ckpt_dir` at `level` and restores
  // every variable from it; one that does not fit the variables is
  // FailedPrecondition naming it, as for RestoreLatest.
  absl::Status RestoreVerified(Session* session, const std::string& ckpt_dir, VerifyLevel level) const;

  // Directory of the last committed checkpoint ("" if none yet).
  std::string last_checkpoint() const;

 private:
  Saver(SaverOptions options, std::vector<SaveableVariable> variables);
  // `started`: when Save was called; `now`: the checkpoint's time.
  absl::Status Commit(int64_t step, double started, double now, std::vector<SaveEntry> entries);
  // Deletes the checkpoint directories retention dropped (a failure is a
  // warning: the state file no longer lists them).
  void DeleteDropped(const std::vector<std::string>& dirs) const;
  bool Retains(int64_t step) const;
  // Restore, with a checkpoint that lacks a variable or has it in another
  // shape as FailedPrecondition.
  absl::Status RestoreFitting(Session* session, const std::string& ckpt_dir) const;
  double Now() const;

  const SaverOptions options_;
  const std::vector<SaveableVariable> variables_;
  std::thread writer_;
  absl::Status writer_status_;  // written by writer_, read after join
  int64_t writer_step_ = -1;    // the step writer_ writes (or wrote last)
  CommitCallback on_committed_;  // read by writer_
  std::string last_checkpoint_;  // written by writer_, read after join
  int64_t last_save_step_ = -1;
  // The step RestoreLatest last restored (-1: none); set by that const
  // method, on the loop's thread.
  mutable int64_t restored_step_ = -1;
  double last_save_time_ = 0;
  double next_preserve_time_ = 0;
  CheckpointState state_;  // used only by the writer (one at a time), or by MarkBest after Wait
  std::optional<BestCheckpoint> best_;  // the loop's thread only
};

// Builds the restore nodes for `variables` under `scope`: a string
// placeholder <scope>/filename, and <scope>/restore_all, a NoOp that restores
// every variable from the checkpoint `checkpoint_names[i]` (RestoreAndCheck, or
// RestoreSlice for partitions) and assigns it (for mod_parts: each part its
// rows, gathered from the whole).
void AddRestoreNodes(const std::string& scope, const std::vector<SaveableVariable>& variables,
                     const std::vector<std::string>& checkpoint_names, GraphDef* graph);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_SAVER_H_
