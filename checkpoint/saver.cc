// Saver: see saver.h.
#include "checkpoint/saver.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "checkpoint/store_format.h"
#include "engine/platform/logging.h"
#include "engine/platform/status_macros.h"
#include "engine/graph/graph_def_builder.h"

namespace sluice {
namespace checkpoint {
namespace {

// A save's error, naming the step whose checkpoint it cost.
absl::Status NotWritten(int64_t step, const absl::Status& why) {
  return absl::Status(why.code(), absl::StrCat("the checkpoint of step ", step, " was not written: ", why.message()));
}

std::string ShapeAndSliceSpec(const SaveableVariable& v) {
  std::vector<std::string> parts;
  for (int64_t d : v.full_shape.dim_sizes()) parts.push_back(absl::StrCat(d));
  parts.push_back(v.slice_spec);
  return absl::StrJoin(parts, " ");
}

std::string SnapshotNode(const std::string& scope, size_t i) { return absl::StrCat(scope, "/snapshot_", i); }

// int32 rows part, part + n, ... below `rows`: the rows of part `part` of n.
std::string PartRowIds(GraphDefBuilder& b, const std::string& name, int64_t rows, size_t n, size_t part) {
  auto scalar = [&](const std::string& what, int64_t v) {
    return b.Const(absl::StrCat(name, "/", what), Tensor::Scalar<int32_t>(static_cast<int32_t>(v)));
  };
  return b.Node(name, "Range",
                {scalar("start", static_cast<int64_t>(part)), scalar("limit", rows), scalar("delta", static_cast<int64_t>(n))},
                {{"Tidx", MakeAttr(DT_INT32)}});
}

}  // namespace

void AddRestoreNodes(const std::string& scope, const std::vector<SaveableVariable>& variables,
                     const std::vector<std::string>& checkpoint_names, GraphDef* graph) {
  GraphDefBuilder b;
  const std::string filename = b.Placeholder(scope + "/filename", DT_STRING);
  std::vector<std::string> assigns;
  for (size_t i = 0; i < variables.size(); ++i) {
    const SaveableVariable& v = variables[i];
    const std::string name = b.Const(absl::StrCat(scope, "/name_", i), Tensor::Scalar<tstring>(checkpoint_names[i]));
    std::string restored;
    if (!v.mod_parts.empty()) {
      // The whole, its shape checked against this run's (a slice spanning
      // every dim; a checkpoint of TensorFlow-style slices assembles too).
      SaveableVariable whole = v;
      whole.slice_spec = absl::StrJoin(std::vector<std::string>(v.full_shape.dims(), "-"), ":");
      const std::string spec = b.Const(absl::StrCat(scope, "/shape_and_slice_", i),
                                       Tensor::Scalar<tstring>(ShapeAndSliceSpec(whole)));
      restored = b.Node(absl::StrCat(scope, "/restore_", i), "RestoreSlice", {filename, name, spec},
                        {{"dt", MakeAttr(v.dtype)}});
    } else if (v.slice_spec.empty()) {
      std::map<std::string, AttrValue> attrs = {{"dt", MakeAttr(v.dtype)}};
      if (v.shape.has_value()) {
        TensorShapeProto shape;
        v.shape->AsProto(&shape);
        attrs["shape"] = MakeAttr(shape);
      }
      restored = b.Node(absl::StrCat(scope, "/restore_", i), "RestoreAndCheck", {filename, name}, attrs);
    } else {
      const std::string spec = b.Const(absl::StrCat(scope, "/shape_and_slice_", i),
                                       Tensor::Scalar<tstring>(ShapeAndSliceSpec(v)));
      restored = b.Node(absl::StrCat(scope, "/restore_", i), "RestoreSlice", {filename, name, spec},
                        {{"dt", MakeAttr(v.dtype)}});
    }
    if (v.mod_parts.empty()) {
      assigns.push_back(b.Assign(absl::StrCat(scope, "/assign_", i), v.node, restored, v.dtype));
      continue;
    }
    const int64_t rows = v.full_shape.dims() > 0 ? v.full_shape.dim_size(0) : 0;
    for (size_t p = 0; p < v.mod_parts.size(); ++p) {
      const std::string part = absl::StrCat(scope, "/restore_", i, "/part_", p);
      const std::string ids = PartRowIds(b, part + "/rows", rows, v.mod_parts.size(), p);
      const std::string value = b.Node(part + "/value", "Gather", {restored, ids},
                                       {{"Tparams", MakeAttr(v.dtype)}, {"Tindices", MakeAttr(DT_INT32)}});
      assigns.push_back(b.Assign(absl::StrCat(scope, "/assign_", i, "/part_", p), v.mod_parts[p], value, v.dtype));
    }
  }
  b.NoOp(scope + "/restore_all", assigns);
  for (const NodeDef& n : b.graph().node()) *graph->add_node() = n;
}

absl::StatusOr<std::unique_ptr<Saver>> Saver::Create(SaverOptions options, std::vector<SaveableVariable> variables) {
  if (options.run_dir.empty()) return absl::InvalidArgumentError("Saver: run_dir is empty");
  if (variables.empty()) return absl::InvalidArgumentError("Saver: no variables to save");
  if (options.num_shards < 1) return absl::InvalidArgumentError("Saver: num_shards must be >= 1");
  if (options.retention.keep < 0) return absl::InvalidArgumentError("Saver: keep must be >= 0");
  std::set<std::string> keys;
  for (SaveableVariable& v : variables) {
    if (!v.mod_parts.empty()) {
      if (v.name.empty()) return absl::InvalidArgumentError("Saver: a partitioned variable needs a name");
      if (!v.slice_spec.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("Saver: '", v.name, "' has both mod_parts and a slice_spec"));
      }
      if (v.full_shape.dims() < 1 || v.full_shape.dim_size(0) < static_cast<int64_t>(v.mod_parts.size()) ||
          v.full_shape.dim_size(0) > INT32_MAX) {
        return absl::InvalidArgumentError(absl::StrCat("Saver: partitioned variable '", v.name, "' of shape ",
                                                       v.full_shape.DebugString(), " cannot have ", v.mod_parts.size(),
                                                       " parts (rows must be in [parts, 2^31 - 1])"));
      }
    }
    if (v.name.empty()) v.name = v.node;
    if (!keys.insert(EntryKey(v.name, v.slice_spec)).second) {
      return absl::InvalidArgumentError(absl::StrCat("Saver: variable '", v.name, "' listed twice"));
    }
  }
  std::unique_ptr<Saver> saver(new Saver(std::move(options), std::move(variables)));
  const SaverOptions& o = saver->options_;
  const std::string ckpts = CheckpointsDir(o.run_dir);
  SLUICE_RETURN_IF_ERROR(o.env->CreateDirs(ckpts));
  // Continue the retention bookkeeping of an earlier run; drop leftovers of
  // writes that never committed.
  auto state = ReadCheckpointState(o.env, ckpts);
  if (state.ok()) {
    saver->state_ = *std::move(state);
  } else if (state.status().code() != absl::StatusCode::kNotFound) {
    // Damaged: list what is on disk instead, so retention keeps counting the
    // checkpoints the file listed (and the lookup, which scans, finds them).
    auto rebuilt = StateFromDirectories(o.env, ckpts);
    if (!rebuilt.ok()) return rebuilt.status();
    LOG(WARNING) << state.status().message() << "; rebuilt the state from " << rebuilt->checkpoints_size()
                 << " checkpoint directories";
    saver->state_ = *std::move(rebuilt);
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> children, o.env->GetChildren(ckpts));
  for (const std::string& c : children) {
    if (absl::StartsWith(c, "ckpt-") && absl::EndsWith(c, ".tmp")) {
      o.env->DeleteRecursively(JoinPath(ckpts, c)).IgnoreError();
    }
  }
  double anchor = saver->Now();
  if (saver->state_.checkpoints_size() > 0) anchor = saver->state_.checkpoints(0).unix_seconds();
  for (const CheckpointRecord& r : saver->state_.checkpoints()) {
    if (r.keep_forever()) anchor = r.unix_seconds();
  }
  saver->next_preserve_time_ = anchor + o.retention.keep_every_hours * 3600;
  if (!saver->state_.latest().empty()) saver->last_checkpoint_ = JoinPath(ckpts, saver->state_.latest());
  if (saver->state_.has_best()) saver->best_ = saver->state_.best();
  saver->last_save_time_ = saver->Now();
  return saver;
}

Saver::Saver(SaverOptions options, std::vector<SaveableVariable> variables)
    : options_(std::move(options)), variables_(std::move(variables)) {}

Saver::~Saver() { Wait().IgnoreError(); }

double Saver::Now() const {
  return options_.clock ? options_.clock() : absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
}

GraphDef Saver::SaverGraph() const {
  GraphDef graph;
  GraphDefBuilder b;
  for (size_t i = 0; i < variables_.size(); ++i) {
    const SaveableVariable& v = variables_[i];
    if (v.mod_parts.empty()) {
      b.Node(SnapshotNode(options_.scope, i), "_CheckpointSnapshot", {v.node}, {{"T", MakeAttr(v.dtype)}});
      continue;
    }
    // The whole tensor: each part's snapshot stitched in at its rows.
    const size_t n = v.mod_parts.size();
    const int64_t rows = v.full_shape.dims() > 0 ? v.full_shape.dim_size(0) : 0;
    std::vector<std::string> ids, parts;
    for (size_t p = 0; p < n; ++p) {
      const std::string part = absl::StrCat(SnapshotNode(options_.scope, i), "/part_", p);
      ids.push_back(PartRowIds(b, part + "/rows", rows, n, p));
      parts.push_back(b.Node(part, "_CheckpointSnapshot", {v.mod_parts[p]}, {{"T", MakeAttr(v.dtype)}}));
    }
    std::vector<std::string> inputs = ids;
    inputs.insert(inputs.end(), parts.begin(), parts.end());
    b.Node(SnapshotNode(options_.scope, i), "DynamicStitch", inputs,
           {{"N", MakeAttr(static_cast<int64_t>(n))}, {"T", MakeAttr(v.dtype)}});
  }
  graph = b.graph();
  std::vector<std::string> names;
  for (const SaveableVariable& v : variables_) names.push_back(v.name);
  AddRestoreNodes(options_.scope, variables_, names, &graph);
  return graph;
}

absl::Status Saver::Extend(Session* session) const { return session->Extend(SaverGraph()); }

bool Saver::ShouldSave(int64_t previous, int64_t step) const {
  if (step == last_save_step_) return false;
  const int64_t every = options_.every_steps;
  // Once per multiple of every_steps: the first step that reaches or passes
  // it, unless a save (periodic, timed, or the one restored from) is already
  // at or past it.
  if (every > 0 && (last_save_step_ < 0 || step / every > last_save_step_ / every) && step > previous &&
      step / every > previous / every) {
    return true;
  }
  if (options_.every_seconds > 0 && Now() - last_save_time_ >= options_.every_seconds) return true;
  return false;
}

absl::Status Saver::MaybeSave(Session* session, int64_t step) {
  if (!ShouldSave(step)) return absl::OkStatus();
  return Save(session, step);
}

absl::Status Saver::Save(Session* session, int64_t step) {
  if (step < 0) return absl::InvalidArgumentError(absl::StrCat("Saver: negative step ", step));
  // This step is saved (or being saved) already: saving it again would
  // replace a committed checkpoint in place, for nothing.
  if (step == last_save_step_) return absl::OkStatus();
  const double started = Now();
  std::vector<std::string> fetches;
  for (size_t i = 0; i < variables_.size(); ++i) fetches.push_back(SnapshotNode(options_.scope, i));
  std::vector<Tensor> values;
  if (absl::Status snap = session->Run({}, fetches, {}, &values); !snap.ok()) return NotWritten(step, snap);
  std::vector<SaveEntry> entries(variables_.size());
  for (size_t i = 0; i < variables_.size(); ++i) {
    entries[i].full_name = variables_[i].name;
    entries[i].value = values[i];
    entries[i].slice_spec = variables_[i].slice_spec;
    entries[i].full_shape = variables_[i].full_shape;
  }
  // One write at a time: the previous one must finish first (a failure of it
  // names its own step, so that nobody reads it as this step's).
  absl::Status previous = Wait();
  const double now = Now();
  last_save_step_ = step;
  last_save_time_ = now;
  if (!options_.background) {
    SLUICE_RETURN_IF_ERROR(previous);
    absl::Status committed = Commit(step, started, now, std::move(entries));
    if (committed.ok()) return committed;
    last_save_step_ = -1;  // not saved: a later Save of this step writes it
    return NotWritten(step, committed);
  }
  writer_step_ = step;
  writer_ = std::thread([this, step, started, now, entries = std::move(entries)]() mutable {
    writer_status_ = Commit(step, started, now, std::move(entries));
  });
  return previous;
}

absl::Status Saver::Wait() {
  if (writer_.joinable()) writer_.join();
  const absl::Status s = writer_status_;
  writer_status_ = absl::OkStatus();
  if (s.ok()) return s;
  // That step is not saved: a later Save of it writes it again.
  if (last_save_step_ == writer_step_) last_save_step_ = -1;
  return NotWritten(writer_step_, s);
}

absl::Status Saver::Commit(int64_t step, double started, double now, std::vector<SaveEntry> entries) {
  Env* env = options_.env;
  const std::string ckpts = CheckpointsDir(options_.run_dir);
  const std::string name = CheckpointDirName(step);
  const std::string final_dir = JoinPath(ckpts, name);
  const std::string tmp_dir = final_dir + ".tmp";
  SLUICE_RETURN_IF_ERROR(env->DeleteRecursively(tmp_dir));
  WriteOptions wo;
  wo.step = step;
  wo.config_hash = options_.config_hash;
  wo.num_shards = options_.num_shards;
  wo.chunk_bytes = options_.chunk_bytes;
  absl::Status s = WriteCheckpointDir(env, tmp_dir, entries, wo);
  if (!s.ok()) {
    env->DeleteRecursively(tmp_dir).IgnoreError();
    return s;
  }
  entries.clear();  // release the snapshot before the slow part ends
  // 1. The checkpoint is whole and durable under its temporary name; give it
  // its real name (replacing an earlier save of the same step).
  SLUICE_RETURN_IF_ERROR(env->DeleteRecursively(final_dir));
  SLUICE_RETURN_IF_ERROR(env->RenameFile(tmp_dir, final_dir));
  SLUICE_RETURN_IF_ERROR(env->SyncDir(ckpts));
  // 2. Point the state file at it.
  CheckpointRecord record;
  record.set_dir(name);
  record.set_step(step);
  record.set_unix_seconds(now);
  CheckpointState next = state_;
  if (!options_.records_best) next.clear_best();
  std::vector<std::string> to_delete;
  double next_preserve = next_preserve_time_;
  AddCheckpointAndApplyRetention(record, options_.retention, &next_preserve, &next, &to_delete);
  SLUICE_RETURN_IF_ERROR(WriteCheckpointState(env, ckpts, next));
  state_ = next;
  next_preserve_time_ = next_preserve;
  last_checkpoint_ = final_dir;
  // 3. Drop what retention no longer keeps (a crash here leaves extra
  // directories, which the state file does not list).
  DeleteDropped(to_delete);
  if (on_committed_) {
    const double finished = Now();
    on_committed_(step, finished - started, finished);
  }
  return absl::OkStatus();
}

void Saver::DeleteDropped(const std::vector<std::string>& dirs) const {
  const std::string ckpts = CheckpointsDir(options_.run_dir);
  for (const std::string& d : dirs) {
    absl::Status del = options_.env->DeleteRecursively(JoinPath(ckpts, d));
    if (!del.ok()) LOG(WARNING) << "cannot delete old checkpoint: " << del.message();
  }
}

bool Saver::Retains(int64_t step) const {
  for (const CheckpointRecord& r : state_.checkpoints()) {
    if (r.step() == step) return true;
  }
  return false;
}

absl::Status Saver::MarkBest(Session* session, int64_t step, const std::string& metric, double value) {
  // The writer is idle from here on: state_ is this thread's.
  const absl::Status pending = Wait();
  // The mark's own failure, with the pending write's when both failed.
  auto failed = [&pending](const absl::Status& s) {
    return pending.ok() ? s : absl::Status(s.code(), absl::StrCat(s.message(), "; also ", pending.message()));
  };
  if (!((step == last_save_step_ || step == restored_step_) && Retains(step))) {
    // A failed earlier write of this very step counts as not saved: Save writes it again.
    absl::Status saved = Save(session, step);
    if (saved.ok()) saved = Wait();
    if (!saved.ok()) return failed(saved);
  }
  BestCheckpoint best;
  best.set_dir(CheckpointDirName(step));
  best.set_step(step);
  best.set_metric(metric);
  best.set_value(value);
  CheckpointState next = state_;
  std::vector<std::string> to_delete;
  double next_preserve = next_preserve_time_;
  absl::Status marked = MarkBestAndApplyRetention(best, options_.retention, &next_preserve, &next, &to_delete);
  if (marked.ok()) marked = WriteCheckpointState(options_.env, CheckpointsDir(options_.run_dir), next);
  if (!marked.ok()) return failed(marked);
  state_ = std::move(next);
  next_preserve_time_ = next_preserve;
  best_ = best;
  DeleteDropped(to_delete);
  return pending;
}

absl::Status Saver::Restore(Session* session, const std::string& ckpt_dir) const {
  std::vector<Tensor> unused;
  return session->Run({{options_.scope + "/filename", Tensor::Scalar<tstring>(ckpt_dir)}}, {},
                      {options_.scope + "/restore_all"}, &unused);
}

absl::Status Saver::RestoreFitting(Session* session, const std::string& ckpt_dir) const {
  absl::Status s = Restore(session, ckpt_dir);
  // A tensor this model needs and the checkpoint lacks (NotFound) must not
  // read as "no checkpoint": the caller would start afresh beside it.
  if (absl::IsNotFound(s) || absl::IsInvalidArgument(s)) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint ", ckpt_dir, " does not fit this model: ",
                                                      s.message()));
  }
  return s;
}

absl::Status Saver::RestoreVerified(Session* session, const std::string& ckpt_dir, VerifyLevel level) const {
  SLUICE_RETURN_IF_ERROR(VerifyCheckpoint(options_.env, ckpt_dir, level));
  return RestoreFitting(session, ckpt_dir);
}

absl::StatusOr<int64_t> Saver::RestoreLatest(Session* session, VerifyLevel level, std::string* restored_dir) const {
  SLUICE_ASSIGN_OR_RETURN(FoundCheckpoint found, FindLatestValidCheckpoint(options_.env, options_.run_dir, level));
  SLUICE_RETURN_IF_ERROR(RestoreFitting(session, found.dir));  // verified by the lookup
  restored_step_ = found.step;
  if (restored_dir != nullptr) *restored_dir = found.dir;
  return found.step;
}

std::string Saver::last_checkpoint() const { return last_checkpoint_; }

}  // namespace checkpoint
}  // namespace sluice
