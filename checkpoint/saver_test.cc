// The Saver through a real Session: save and restore of weights, optimizer
// slot and global step; periodic saves with retention; snapshots isolated
// from later updates; fallback past a corrupted checkpoint; a crash at any
// file operation of a commit; partitioned variables; warm start with a name
// mapping.
#include "checkpoint/saver.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_reader.h"
#include "engine/platform/fault_env.h"
#include "checkpoint/tensor_bundle_writer.h"
#include "checkpoint/warm_start.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace checkpoint {
namespace {

// A model in container `c`: w [3] float, w/momentum [3] float, global_step
// int64; `init` sets them, `train` adds to each.
struct Model {
  explicit Model(const std::string& c) : container(c) {
    GraphDefBuilder b;
    std::string w = b.Variable("w", DT_FLOAT, TensorShape({3}), c);
    std::string m = b.Variable("w/momentum", DT_FLOAT, TensorShape({3}), c);
    std::string gs = b.Variable("global_step", DT_INT64, TensorShape({}), c);
    std::string iw = b.Assign("init_w", w, b.Const("w0", Tensor::FromVector<float>({1, 2, 3})), DT_FLOAT);
    std::string im = b.Assign("init_m", m, b.Const("m0", Tensor::FromVector<float>({0, 0, 0})), DT_FLOAT);
    std::string ig = b.Assign("init_gs", gs, b.Const("gs0", Tensor::Scalar<int64_t>(0)), DT_INT64);
    b.NoOp("init", {iw, im, ig});
    std::string aw = b.AssignAdd("add_w", w, b.Const("dw", Tensor::FromVector<float>({1, 1, 1})), DT_FLOAT);
    std::string am = b.AssignAdd("add_m", m, b.Const("dm", Tensor::FromVector<float>({.5f, .5f, .5f})), DT_FLOAT);
    std::string ag = b.AssignAdd("add_gs", gs, b.Const("one", Tensor::Scalar<int64_t>(1)), DT_INT64);
    b.NoOp("train", {aw, am, ag});
    b.Identity("read_w", w, DT_FLOAT);
    b.Identity("read_m", m, DT_FLOAT);
    b.Identity("read_gs", gs, DT_INT64);
    graph = b.graph();
    variables = {{"w", "", DT_FLOAT}, {"w/momentum", "", DT_FLOAT}, {"global_step", "", DT_INT64}};
  }
  std::unique_ptr<Session> NewSessionWith(const Saver& saver) {
    Session::Reset({container});
    auto s = NewSession();
    EXPECT_TRUE(s.ok());
    EXPECT_TRUE((*s)->Create(graph).ok());
    EXPECT_TRUE(saver.Extend(s->get()).ok());
    return *std::move(s);
  }
  std::string container;
  GraphDef graph;
  std::vector<SaveableVariable> variables;
};

void RunTarget(Session* s, const std::string& target) {
  std::vector<Tensor> out;
  absl::Status st = s->Run({}, {}, {target}, &out);
  ASSERT_TRUE(st.ok()) << target << ": " << st;
}

std::string Fetch(Session* s, const std::string& name) {
  std::vector<Tensor> out;
  absl::Status st = s->Run({}, {name}, {}, &out);
  if (!st.ok()) return st.ToString();
  return out[0].SummarizeValue(10);
}

TEST(Saver, SavesAndRestoresWeightsSlotsAndStep) {
  Model model("saver_roundtrip");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_roundtrip");
  auto saver = Saver::Create(o, model.variables);
  ASSERT_TRUE(saver.ok()) << saver.status();
  auto session = model.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  for (int i = 0; i < 3; ++i) RunTarget(session.get(), "train");
  ASSERT_TRUE((*saver)->Save(session.get(), 3).ok());
  ASSERT_TRUE((*saver)->Wait().ok());
  EXPECT_EQ((*saver)->last_checkpoint(), JoinPath(o.run_dir, "checkpoints/ckpt-3"));

  auto fresh = model.NewSessionWith(**saver);  // containers reset: uninitialized
  auto step = (*saver)->RestoreLatest(fresh.get());
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(*step, 3);
  EXPECT_EQ(Fetch(fresh.get(), "read_w"), "4 5 6");
  EXPECT_EQ(Fetch(fresh.get(), "read_m"), "1.5 1.5 1.5");
  EXPECT_EQ(Fetch(fresh.get(), "read_gs"), "3");
}

// A background write that fails is reported by the next Save or Wait with
// its own step (a later step's save must not read as the failed one), and
// that step counts as not saved: saving it again writes it.
TEST(Saver, AFailedBackgroundWriteNamesItsStepAndIsNotCountedAsSaved) {
  Model model("saver_failed_write");
  FaultEnv env(Env::Default());
  SaverOptions o;
  o.run_dir = FreshTestDir("run_failed_write");
  o.env = &env;
  auto saver = Saver::Create(o, model.variables);
  ASSERT_TRUE(saver.ok());
  auto session = model.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  env.FailSyncs(true);
  ASSERT_TRUE((*saver)->Save(session.get(), 1).ok());  // the write runs in the background
  absl::Status reported = (*saver)->Save(session.get(), 2);  // waits for step 1's write first
  EXPECT_TRUE(absl::IsUnavailable(reported)) << reported;
  EXPECT_TRUE(absl::StartsWith(reported.message(), "the checkpoint of step 1 was not written: ")) << reported;
  reported = (*saver)->Wait();
  EXPECT_TRUE(absl::StartsWith(reported.message(), "the checkpoint of step 2 was not written: ")) << reported;
  EXPECT_EQ((*saver)->last_checkpoint(), "");
  // Step 2 was not saved: saving it again writes it.
  env.FailSyncs(false);
  ASSERT_TRUE((*saver)->Save(session.get(), 2).ok());
  ASSERT_TRUE((*saver)->Wait().ok());
  EXPECT_EQ((*saver)->last_checkpoint(), JoinPath(o.run_dir, "checkpoints/ckpt-2"));
  auto found = FindLatestValidCheckpoint(Env::Default(), o.run_dir, VerifyLevel::kFull);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->step, 2);
}

TEST(Saver, FreshRunHasNothingToRestore) {
  Model model("saver_fresh");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_fresh");
  auto saver = Saver::Create(o, model.variables);
  ASSERT_TRUE(saver.ok());
  auto session = model.NewSessionWith(**saver);
  EXPECT_EQ((*saver)->RestoreLatest(session.get()).status().code(), absl::StatusCode::kNotFound);
}

// A run directory written by another model (a layer's size or the
// optimizer changed) is FailedPrecondition naming the tensor, never NotFound
// ("nothing to restore": the caller would start afresh beside it) and never a
// variable silently taking the checkpoint's shape.
TEST(Saver, ACheckpointOfAnotherModelIsFailedPrecondition) {
  Model model("saver_other_model");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_other_model");
  auto saver = Saver::Create(o, model.variables);
  ASSERT_TRUE(saver.ok());
  auto session = model.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  ASSERT_TRUE((*saver)->Save(session.get(), 1).ok());
  ASSERT_TRUE((*saver)->Wait().ok());

  // The same variables restored where w is declared [4]: the shape is checked.
  std::vector<SaveableVariable> wider = model.variables;
  wider[0].shape = TensorShape({4});
  auto checked = Saver::Create(o, wider);
  ASSERT_TRUE(checked.ok());
  auto fresh = model.NewSessionWith(**checked);
  auto mismatch = (*checked)->RestoreLatest(fresh.get());
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kFailedPrecondition) << mismatch.status();
  EXPECT_NE(mismatch.status().message().find("tensor 'w' in the checkpoint has shape [3]; this model's variable is [4]"),
            std::string::npos)
      << mismatch.status();
  // Declared [3], as saved: restores, and the restored directory is named.
  wider[0].shape = TensorShape({3});
  auto same = Saver::Create(o, wider);
  ASSERT_TRUE(same.ok());
  fresh = model.NewSessionWith(**same);
  std::string restored_dir;
  auto step = (*same)->RestoreLatest(fresh.get(), VerifyLevel::kFull, &restored_dir);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(restored_dir, JoinPath(o.run_dir, "checkpoints/ckpt-1"));

  // A variable the checkpoint lacks (another optimizer's slot).
  std::vector<SaveableVariable> renamed = model.variables;
  renamed[1].name = "w/adam_m";
  auto missing_saver = Saver::Create(o, renamed);
  ASSERT_TRUE(missing_saver.ok());
  fresh = model.NewSessionWith(**missing_saver);
  auto missing = (*missing_saver)->RestoreLatest(fresh.get());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition) << missing.status();
  EXPECT_NE(missing.status().message().find("w/adam_m"), std::string::npos) << missing.status();
}

TEST(Saver, SnapshotIsTakenBeforeSaveReturns) {
  Model model("saver_snapshot");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_snapshot");
  auto saver = Saver::Create(o, model.variables);
  auto session = model.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  ASSERT_TRUE((*saver)->Save(session.get(), 1).ok());
  // Updates in place (AssignAdd) while the background write may still run.
  for (int i = 0; i < 5; ++i) RunTarget(session.get(), "train");
  ASSERT_TRUE((*saver)->Wait().ok());
  auto reader = CheckpointReader::Open((*saver)->last_checkpoint());
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->ReadTensor("w")->SummarizeValue(10), "1 2 3");
  EXPECT_EQ((*reader)->ReadTensor("global_step")->SummarizeValue(10), "0");
}

TEST(Saver, EveryNStepsWithRetention) {
  Model model("saver_periodic");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_periodic");
  o.every_steps = 2;
  o.retention.keep = 2;
  auto saver = Saver::Create(o, model.variables);
  auto session = model.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  for (int step = 1; step <= 9; ++step) {
    RunTarget(session.get(), "train");
    ASSERT_TRUE((*saver)->MaybeSave(session.get(), step).ok());
  }
  ASSERT_TRUE((*saver)->Wait().ok());
  auto children = Env::Default()->GetChildren(CheckpointsDir(o.run_dir));
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, (std::vector<std::string>{"checkpoint", "ckpt-6", "ckpt-8"}));
  auto state = ReadCheckpointState(Env::Default(), CheckpointsDir(o.run_dir));
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->latest(), "ckpt-8");
  // A new Saver on the same run directory continues the retention.
  auto again = Saver::Create(o, model.variables);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->Save(session.get(), 10).ok());
  ASSERT_TRUE((*again)->Wait().ok());
  children = Env::Default()->GetChildren(CheckpointsDir(o.run_dir));
  EXPECT_EQ(*children, (std::vector<std::string>{"checkpoint", "ckpt-10", "ckpt-8"}));
}

// The best checkpoint (train.best_model) is kept besides the `keep` newest
// while it is the best; marking another lets retention drop it. A step not
// saved yet is saved by the mark, with the variables as they are then.
TEST(Saver, TheBestCheckpointIsKeptBesidesTheNewestUntilAnotherIsBest) {
  Model model("saver_best");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_best");
  o.every_steps = 2;
  o.retention.keep = 2;
  o.records_best = true;
  auto saver = Saver::Create(o, model.variables);
  ASSERT_TRUE(saver.ok());
  EXPECT_FALSE((*saver)->best().has_value());
  auto session = model.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  const std::string ckpts = CheckpointsDir(o.run_dir);
  for (int step = 1; step <= 9; ++step) {
    RunTarget(session.get(), "train");
    ASSERT_TRUE((*saver)->MaybeSave(session.get(), step).ok());
    if (step == 2) ASSERT_TRUE((*saver)->MarkBest(session.get(), 2, "accuracy", 0.5).ok());
    // Step 5 has no periodic save: the mark writes it.
    if (step == 5) ASSERT_TRUE((*saver)->MarkBest(session.get(), 5, "accuracy", 0.75).ok());
  }
  ASSERT_TRUE((*saver)->Wait().ok());
  auto children = Env::Default()->GetChildren(ckpts);
  ASSERT_TRUE(children.ok());
  // ckpt-2 left with the first save after ckpt-5 became the best; ckpt-5
  // outlived the window (6, 8).
  EXPECT_EQ(*children, (std::vector<std::string>{"checkpoint", "ckpt-5", "ckpt-6", "ckpt-8"}));
  auto state = ReadCheckpointState(Env::Default(), ckpts);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->best().dir(), "ckpt-5");
  EXPECT_EQ(state->best().metric(), "accuracy");
  EXPECT_EQ(state->best().value(), 0.75);
  EXPECT_EQ(state->latest(), "ckpt-8");
  // ckpt-5 holds step 5's variables (w started at 1 2 3, +1 a step).
  auto fresh = model.NewSessionWith(**saver);
  ASSERT_TRUE((*saver)->Restore(fresh.get(), JoinPath(ckpts, "ckpt-5")).ok());
  EXPECT_EQ(Fetch(fresh.get(), "read_w"), "6 7 8");
  // A new Saver reads the best back and still spares it.
  auto again = Saver::Create(o, model.variables);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->best().has_value());
  EXPECT_EQ((*again)->best()->step(), 5);
  ASSERT_TRUE((*again)->Save(session.get(), 10).ok());
  ASSERT_TRUE((*again)->Save(session.get(), 12).ok());
  ASSERT_TRUE((*again)->Wait().ok());
  children = Env::Default()->GetChildren(ckpts);
  EXPECT_EQ(*children, (std::vector<std::string>{"checkpoint", "ckpt-10", "ckpt-12", "ckpt-5"}));
  // The newest is the one a resume uses, not the best.
  auto found = FindLatestValidCheckpoint(Env::Default(), o.run_dir, VerifyLevel::kFull);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->step, 12);

  // A Saver of a run that no longer selects a best (records_best false) drops it at its
  // first commit, and retention deletes it like any other.
  o.records_best = false;
  auto without = Saver::Create(o, model.variables);
  ASSERT_TRUE(without.ok());
  ASSERT_TRUE((*without)->Save(session.get(), 14).ok());
  ASSERT_TRUE((*without)->Wait().ok());
  EXPECT_FALSE(ReadCheckpointState(Env::Default(), ckpts)->has_best());
  children = Env::Default()->GetChildren(ckpts);
  EXPECT_EQ(*children, (std::vector<std::string>{"checkpoint", "ckpt-12", "ckpt-14"}));
}

// A step the state file lists but this Saver neither saved nor restored (a checkpoint from
// before a fallback restore to an older one) is written again when it becomes the best: the
// variables now hold this run's values of that step.
TEST(Saver, MarkBestWritesAgainAStepItDidNotSaveOrRestore) {
  Model model("saver_best_rewrite");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_best_rewrite");
  o.records_best = true;
  auto first = Saver::Create(o, model.variables);
  ASSERT_TRUE(first.ok());
  auto session = model.NewSessionWith(**first);
  RunTarget(session.get(), "init");
  for (int step = 1; step <= 4; ++step) {
    RunTarget(session.get(), "train");
    if (step == 2 || step == 4) ASSERT_TRUE((*first)->Save(session.get(), step).ok());
  }
  ASSERT_TRUE((*first)->Wait().ok());
  // A new process restores step 4 (w = 5 6 7).
  auto second = Saver::Create(o, model.variables);
  ASSERT_TRUE(second.ok());
  auto fresh = model.NewSessionWith(**second);
  ASSERT_TRUE((*second)->RestoreLatest(fresh.get()).ok());
  // The restored step is marked as it is.
  ASSERT_TRUE((*second)->MarkBest(fresh.get(), 4, "loss", 0.5).ok());
  EXPECT_EQ(Fetch(fresh.get(), "read_w"), "5 6 7");
  // Step 2, listed but not this Saver's, is written from the session's values.
  ASSERT_TRUE((*second)->MarkBest(fresh.get(), 2, "loss", 0.25).ok());
  auto check = model.NewSessionWith(**second);
  ASSERT_TRUE((*second)->Restore(check.get(), JoinPath(CheckpointsDir(o.run_dir), "ckpt-2")).ok());
  EXPECT_EQ(Fetch(check.get(), "read_w"), "5 6 7");
}

// A state file whose best is not one of its checkpoints is not what a Saver
// writes: DataLoss, as for any other damage.
TEST(Saver, AStateFileWhoseBestIsNotListedIsDataLoss) {
  const std::string dir = FreshTestDir("state_bad_best");
  const std::string listed = "latest: \"ckpt-4\"\ncheckpoints { dir: \"ckpt-4\" step: 4 }\n";
  for (const char* best : {"best { dir: \"ckpt-3\" step: 3 metric: \"loss\" value: 0.5 }",
                                  "best { dir: \"ckpt-4\" step: 4 value: 0.5 }",
                                  "best { dir: \"ckpt-4\" step: 4 metric: \"loss\" value: nan }"}) {
    ASSERT_TRUE(WriteStringToFile(Env::Default(), JoinPath(dir, "checkpoint"), listed + best).ok());
    auto state = ReadCheckpointState(Env::Default(), dir);
    EXPECT_TRUE(absl::IsDataLoss(state.status())) << best << ": " << state.status();
  }
  ASSERT_TRUE(WriteStringToFile(Env::Default(), JoinPath(dir, "checkpoint"),
                                listed + "best { dir: \"ckpt-4\" step: 4 metric: \"loss\" value: 0.5 }")
                  .ok());
  EXPECT_TRUE(ReadCheckpointState(Env::Default(), dir).ok());
}

// A damaged state file is rebuilt from the directories on disk, so the
// checkpoints it listed stay under retention instead of being orphaned.
TEST(Saver, DamagedStateFileIsRebuiltFromTheDirectories) {
  Model model("saver_rebuild");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_rebuild");
  o.retention.keep = 2;
  auto saver = Saver::Create(o, model.variables);
  ASSERT_TRUE(saver.ok());
  auto session = model.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  for (int step : {1, 2, 3}) ASSERT_TRUE((*saver)->Save(session.get(), step).ok());
  ASSERT_TRUE((*saver)->Wait().ok());
  const std::string ckpts = CheckpointsDir(o.run_dir);
  // Parses, but is not what a Saver writes: latest names no listed checkpoint.
  ASSERT_TRUE(WriteStringToFile(Env::Default(), JoinPath(ckpts, "checkpoint"), "latest: \"ckpt-9\"\n").ok());
  auto again = Saver::Create(o, model.variables);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE((*again)->Save(session.get(), 4).ok());
  ASSERT_TRUE((*again)->Wait().ok());
  auto children = Env::Default()->GetChildren(ckpts);
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, (std::vector<std::string>{"checkpoint", "ckpt-3", "ckpt-4"}));
  auto state = ReadCheckpointState(Env::Default(), ckpts);
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->checkpoints_size(), 2);
  EXPECT_EQ(state->checkpoints(0).dir(), "ckpt-3");
  EXPECT_EQ(state->latest(), "ckpt-4");
}

TEST(Saver, EveryTSecondsWithAFakeClock) {
  Model model("saver_seconds");
  double now = 1000;
  SaverOptions o;
  o.run_dir = FreshTestDir("run_seconds");
  o.every_seconds = 60;
  o.clock = [&now] { return now; };
  auto saver = Saver::Create(o, model.variables);
  auto session = model.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  EXPECT_FALSE((*saver)->ShouldSave(1));
  now += 61;
  EXPECT_TRUE((*saver)->ShouldSave(2));
  ASSERT_TRUE((*saver)->MaybeSave(session.get(), 2).ok());
  EXPECT_FALSE((*saver)->ShouldSave(3));
  ASSERT_TRUE((*saver)->Wait().ok());
}

// A replica of a replicated run sees the global step jump (other workers
// advance it): every_steps saves once per multiple, at the first step past it.
TEST(Saver, EveryNStepsWhenTheStepJumps) {
  Model model("saver_jumps");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_jumps");
  o.every_steps = 10;
  o.background = false;
  auto saver = Saver::Create(o, model.variables);
  ASSERT_TRUE(saver.ok()) << saver.status();
  auto session = model.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  EXPECT_FALSE((*saver)->ShouldSave(6, 9));
  EXPECT_TRUE((*saver)->ShouldSave(9, 11));
  ASSERT_TRUE((*saver)->Save(session.get(), 11).ok());
  EXPECT_FALSE((*saver)->ShouldSave(11, 14));
  EXPECT_FALSE((*saver)->ShouldSave(14, 19));
  EXPECT_TRUE((*saver)->ShouldSave(19, 20));
  EXPECT_TRUE((*saver)->ShouldSave(18, 23));
  // One step per step: exactly the multiples.
  EXPECT_FALSE((*saver)->ShouldSave(19));
  EXPECT_TRUE((*saver)->ShouldSave(20));
}

TEST(Saver, CorruptLatestFallsBackToThePreviousOne) {
  Model model("saver_fallback");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_fallback");
  o.background = false;
  auto saver = Saver::Create(o, model.variables);
  auto session = model.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  ASSERT_TRUE((*saver)->Save(session.get(), 1).ok());
  RunTarget(session.get(), "train");
  ASSERT_TRUE((*saver)->Save(session.get(), 2).ok());
  // Flip a byte in every file of the newest checkpoint's store.
  const std::string store = JoinPath((*saver)->last_checkpoint(), "shard-00000-of-00001");
  const std::vector<std::string> files = *Env::Default()->GetChildren(store);
  for (const std::string& f : files) {
    const std::string path = JoinPath(store, f);
    auto data = ReadFileToString(Env::Default(), path);
    if (!data.ok() || data->empty()) continue;
    (*data)[data->size() / 2] ^= 0x10;
    FILE* out = fopen(path.c_str(), "wb");
    fwrite(data->data(), 1, data->size(), out);
    fclose(out);
  }
  std::vector<std::string> skipped;
  auto found = FindLatestValidCheckpoint(Env::Default(), o.run_dir, VerifyLevel::kFull, &skipped);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->step, 1);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("ckpt-2"), std::string::npos) << skipped[0];
  auto fresh = model.NewSessionWith(**saver);
  auto step = (*saver)->RestoreLatest(fresh.get());
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(*step, 1);
  EXPECT_EQ(Fetch(fresh.get(), "read_w"), "1 2 3");
}

// Crash at every Env operation of a commit: afterwards the newest valid
// checkpoint is the old one or the new one, whole.
TEST(Saver, CrashAtAnyStepOfACommitLeavesOldOrNewCheckpoint) {
  Model model("saver_crash");
  int total = -1;
  for (int crash_at = 0; total < 0 || crash_at <= total; ++crash_at) {
    SaverOptions o;
    o.run_dir = FreshTestDir("run_crash");
    o.background = false;
    auto saver = Saver::Create(o, model.variables);
    ASSERT_TRUE(saver.ok());
    auto session = model.NewSessionWith(**saver);
    RunTarget(session.get(), "init");
    ASSERT_TRUE((*saver)->Save(session.get(), 1).ok());
    RunTarget(session.get(), "train");
    FaultEnv env(Env::Default());
    o.env = &env;
    auto faulty = Saver::Create(o, model.variables);
    ASSERT_TRUE(faulty.ok());
    env.CrashAfter(total < 0 ? -1 : crash_at, /*short_write=*/crash_at % 2 == 1);
    const int before = env.ops();
    absl::Status s = (*faulty)->Save(session.get(), 2);
    if (total < 0) {  // the first pass counts the operations of a clean commit
      ASSERT_TRUE(s.ok()) << s;
      total = env.ops() - before;
      crash_at = -1;
      continue;
    }
    env.DropUnsyncedData();
    auto found = FindLatestValidCheckpoint(Env::Default(), o.run_dir, VerifyLevel::kFull);
    ASSERT_TRUE(found.ok()) << "crash at op " << crash_at << ": " << found.status();
    EXPECT_TRUE(found->step == 1 || found->step == 2) << found->step;
    if (s.ok()) {
      EXPECT_EQ(found->step, 2);
    }
    auto reader = CheckpointReader::Open(found->dir);
    ASSERT_TRUE(reader.ok());
    EXPECT_EQ((*reader)->ReadTensor("w")->SummarizeValue(10), found->step == 1 ? "1 2 3" : "2 3 4");
  }
  EXPECT_GE(total, 8);
}

TEST(Saver, PartitionedVariableRoundTripsAndWarmStartsWhole) {
  const std::string c = "saver_partitioned";
  GraphDefBuilder b;
  std::string p0 = b.Variable("emb/part_0", DT_FLOAT, TensorShape({2, 2}), c);
  std::string p1 = b.Variable("emb/part_1", DT_FLOAT, TensorShape({1, 2}), c);
  std::string i0 = b.Assign("i0", p0, b.Const("v0", Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}))),
                            DT_FLOAT);
  std::string i1 = b.Assign("i1", p1, b.Const("v1", Tensor::FromVector<float>({5, 6}, TensorShape({1, 2}))), DT_FLOAT);
  b.NoOp("init", {i0, i1});
  b.Variable("whole", DT_FLOAT, TensorShape({3, 2}), c);
  b.Identity("read_whole", "whole", DT_FLOAT);
  b.Identity("read_p1", p1, DT_FLOAT);
  std::vector<SaveableVariable> vars = {{"emb/part_0", "emb", DT_FLOAT, "0,2:-", TensorShape({3, 2})},
                                        {"emb/part_1", "emb", DT_FLOAT, "2,1:-", TensorShape({3, 2})}};
  SaverOptions o;
  o.run_dir = FreshTestDir("run_partitioned");
  o.num_shards = 2;
  auto saver = Saver::Create(o, vars);
  ASSERT_TRUE(saver.ok()) << saver.status();
  Session::Reset({c});
  auto session = NewSession();
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  ASSERT_TRUE((*saver)->Extend(session->get()).ok());
  RunTarget(session->get(), "init");
  ASSERT_TRUE((*saver)->Save(session->get(), 5).ok());
  ASSERT_TRUE((*saver)->Wait().ok());
  Session::Reset({c});
  ASSERT_TRUE((*saver)->RestoreLatest(session->get()).ok());
  EXPECT_EQ(Fetch(session->get(), "read_p1"), "5 6");
  // Warm start the unpartitioned variable "whole" from the two slices of "emb".
  WarmStartOptions ws;
  ws.from = o.run_dir;
  ws.name_map = {{"whole", "emb"}};
  absl::Status s = WarmStart(session->get(), {{"whole", "", DT_FLOAT}}, ws);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Fetch(session->get(), "read_whole"), "1 2 3 4 5 6");
}

// A [10, 2] table split into `parts` variables by row modulo parts (row r at
// r / parts of part r % parts), in container `c`; `init` sets row r to
// (10 r, 10 r + 1) + offset. Read nodes read_<p>.
struct ModTable {
  ModTable(const std::string& c, int parts, float offset) : container(c) {
    GraphDefBuilder b;
    std::vector<std::string> inits;
    for (int p = 0; p < parts; ++p) {
      std::vector<float> rows;
      for (int r = p; r < 10; r += parts) rows.insert(rows.end(), {10.0f * r + offset, 10.0f * r + 1 + offset});
      const int64_t n = static_cast<int64_t>(rows.size()) / 2;
      const std::string name = parts == 1 ? "table" : absl::StrCat("table/part_", p);
      std::string v = b.Variable(name, DT_FLOAT, TensorShape({n, 2}), c);
      inits.push_back(b.Assign(absl::StrCat("init_", p), v,
                               b.Const(absl::StrCat("value_", p), Tensor::FromVector<float>(rows, TensorShape({n, 2}))),
                               DT_FLOAT));
      b.Identity(absl::StrCat("read_", p), v, DT_FLOAT);
      saveable.mod_parts.push_back(name);
    }
    b.NoOp("init", inits);
    graph = b.graph();
    saveable.name = "table";
    saveable.full_shape = TensorShape({10, 2});
    if (parts == 1) {  // a whole variable, saved as one
      saveable.node = "table";
      saveable.mod_parts.clear();
      saveable.full_shape = TensorShape();
    }
  }
  std::string container;
  GraphDef graph;
  SaveableVariable saveable;
};

TEST(Saver, ModPartitionedVariableRestoresIntoAnotherNumberOfParts) {
  SaverOptions o;
  o.run_dir = FreshTestDir("run_mod_parts");
  ModTable four("saver_mod4", 4, 0.0f);
  auto saver = Saver::Create(o, {four.saveable});
  ASSERT_TRUE(saver.ok()) << saver.status();
  Session::Reset({four.container});
  auto session = NewSession();
  ASSERT_TRUE((*session)->Create(four.graph).ok());
  ASSERT_TRUE((*saver)->Extend(session->get()).ok());
  RunTarget(session->get(), "init");
  ASSERT_TRUE((*saver)->Save(session->get(), 5).ok());
  ASSERT_TRUE((*saver)->Wait().ok());
  // The checkpoint holds the whole table, rows in id order.
  auto reader = CheckpointReader::Open((*saver)->last_checkpoint());
  ASSERT_TRUE(reader.ok());
  auto whole = (*reader)->ReadTensor("table");
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->shape(), TensorShape({10, 2}));
  EXPECT_EQ(whole->SummarizeValue(20), "0 1 10 11 20 21 30 31 40 41 50 51 60 61 70 71 80 81 90 91");
  // Restored into 3 parts, and into one variable: every row where it belongs.
  for (int parts : {3, 1, 4}) {
    SCOPED_TRACE(absl::StrCat(parts, " parts"));
    ModTable target(absl::StrCat("saver_mod_to", parts), parts, 0.5f);
    SaverOptions to = o;
    auto restorer = Saver::Create(to, {target.saveable});
    ASSERT_TRUE(restorer.ok()) << restorer.status();
    Session::Reset({target.container});
    auto fresh = NewSession();
    ASSERT_TRUE((*fresh)->Create(target.graph).ok());
    ASSERT_TRUE((*restorer)->Extend(fresh->get()).ok());
    auto step = (*restorer)->RestoreLatest(fresh->get());
    ASSERT_TRUE(step.ok()) << step.status();
    EXPECT_EQ(*step, 5);
    for (int p = 0; p < parts; ++p) {
      std::string want;
      for (int r = p; r < 10; r += parts) absl::StrAppend(&want, want.empty() ? "" : " ", 10 * r, " ", 10 * r + 1);
      std::vector<Tensor> out;
      ASSERT_TRUE((*fresh)->Run({}, {absl::StrCat("read_", p)}, {}, &out).ok());
      EXPECT_EQ(out[0].SummarizeValue(20), want) << "part " << p;
    }
  }
  // A table of another size is an error naming both shapes.
  ModTable twelve("saver_mod_wrong", 3, 0.0f);
  SaveableVariable wrong = twelve.saveable;
  wrong.full_shape = TensorShape({12, 2});
  auto bad = Saver::Create(o, {wrong});
  ASSERT_TRUE(bad.ok());
  Session::Reset({twelve.container});
  auto other = NewSession();
  ASSERT_TRUE((*other)->Create(twelve.graph).ok());
  ASSERT_TRUE((*bad)->Extend(other->get()).ok());
  auto failed = (*bad)->RestoreLatest(other->get());
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("[10,2]"), std::string::npos) << failed.status();
  // Parts that cannot split the table are refused up front.
  SaveableVariable too_many = four.saveable;
  too_many.full_shape = TensorShape({3, 2});
  EXPECT_EQ(Saver::Create(o, {too_many}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WarmStart, MapsNamesAndReportsMissingOnes) {
  Model source("warm_source");
  SaverOptions o;
  o.run_dir = FreshTestDir("run_warm_source");
  auto saver = Saver::Create(o, source.variables);
  auto session = source.NewSessionWith(**saver);
  RunTarget(session.get(), "init");
  RunTarget(session.get(), "train");
  ASSERT_TRUE((*saver)->Save(session.get(), 1).ok());
  ASSERT_TRUE((*saver)->Wait().ok());

  const std::string c = "warm_target";
  GraphDefBuilder b;
  std::string enc = b.Variable("encoder/w", DT_FLOAT, TensorShape({3}), c);
  b.Identity("read_enc", enc, DT_FLOAT);
  Session::Reset({c});
  auto target = NewSession();
  ASSERT_TRUE((*target)->Create(b.graph()).ok());
  WarmStartOptions ws;
  ws.from = o.run_dir;
  ws.name_map = {{"encoder/w", "w"}};
  absl::Status s = WarmStart(target->get(), {{"encoder/w", "", DT_FLOAT}}, ws);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Fetch(target->get(), "read_enc"), "2 3 4");
  ws.name_map = {{"encoder/w", "decoder/w"}};
  s = WarmStart(target->get(), {{"encoder/w", "", DT_FLOAT}}, ws);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("decoder/w"), std::string::npos) << s;
  ws.name_map = {{"encoder/w", "global_step"}};
  EXPECT_EQ(WarmStart(target->get(), {{"encoder/w", "", DT_FLOAT}}, ws).code(), absl::StatusCode::kInvalidArgument);
}

TEST(WarmStart, FromATensorFlowCheckpoint) {
  const std::string prefix = JoinPath(FreshTestDir("warm_tf"), "model.ckpt");
  ASSERT_TRUE(WriteTensorBundle(Env::Default(), prefix,
                                {{"enc/kernel", Tensor::FromVector<float>({7, 8, 9})},
                                 {"wide", Tensor::FromVector<float>({1, 2, 3, 4})},
                                 {"step", Tensor::Scalar<int64_t>(3)}})
                  .ok());
  const std::string c = "warm_tf_target";
  GraphDefBuilder b;
  std::string enc = b.Variable("encoder/w", DT_FLOAT, TensorShape({3}), c);
  b.Identity("read_enc", enc, DT_FLOAT);
  b.Assign("init", enc, b.Const("zeros", Tensor::FromVector<float>({0, 0, 0})), DT_FLOAT);
  Session::Reset({c});
  auto target = NewSession();
  ASSERT_TRUE((*target)->Create(b.graph()).ok());
  RunTarget(target->get(), "init");
  WarmStartOptions ws;
  ws.from = prefix;
  ws.name_map = {{"encoder/w", "enc/kernel"}};
  absl::Status s = WarmStart(target->get(), {{"encoder/w", "", DT_FLOAT}}, ws);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Fetch(target->get(), "read_enc"), "7 8 9");
  ws.name_map = {{"encoder/w", "decoder/w"}};
  s = WarmStart(target->get(), {{"encoder/w", "", DT_FLOAT}}, ws);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("TensorFlow checkpoint " + prefix + " has no tensor 'decoder/w'"), std::string::npos) << s;
  ws.name_map = {{"encoder/w", "step"}};
  s = WarmStart(target->get(), {{"encoder/w", "", DT_FLOAT}}, ws);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("is int64, variable 'encoder/w' is float"), std::string::npos) << s;
  ws.name_map = {{"encoder/w", "wide"}};
  s = WarmStart(target->get(), {{"encoder/w", "", DT_FLOAT}}, ws);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(Fetch(target->get(), "read_enc"), "7 8 9");
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
