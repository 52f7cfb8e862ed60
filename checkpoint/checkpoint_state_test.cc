// The state file is replaced atomically under injected crashes (at every
// operation, with short writes, with unsynced data dropped), and retention
// keeps the newest `keep` plus one per keep_every_hours.
#include "checkpoint/checkpoint_state.h"

#include <cstdlib>

#include "engine/platform/fault_env.h"
#include "gtest/gtest.h"

namespace sluice {
namespace checkpoint {
namespace {

std::string TempDir(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string dir = JoinPath(t ? t : "/tmp", name);
  Env::Default()->DeleteRecursively(dir).IgnoreError();
  Env::Default()->CreateDirs(dir).IgnoreError();
  return dir;
}

CheckpointState StateWithSteps(std::vector<int64_t> steps) {
  CheckpointState s;
  for (int64_t step : steps) {
    CheckpointRecord* r = s.add_checkpoints();
    r->set_dir("ckpt-" + std::to_string(step));
    r->set_step(step);
    r->set_unix_seconds(1000 + step);
    s.set_latest(r->dir());
  }
  return s;
}

TEST(CheckpointState, WritesAndReadsBack) {
  const std::string dir = TempDir("state_rw");
  EXPECT_EQ(ReadCheckpointState(Env::Default(), dir).status().code(), absl::StatusCode::kNotFound);
  CheckpointState s = StateWithSteps({100, 200});
  ASSERT_TRUE(WriteCheckpointState(Env::Default(), dir, s).ok());
  auto back = ReadCheckpointState(Env::Default(), dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), s.SerializeAsString());
}

TEST(CheckpointState, GarbageIsDataLossNotACrash) {
  const std::string dir = TempDir("state_garbage");
  FILE* f = fopen(JoinPath(dir, kStateFileName).c_str(), "w");
  fputs("latest: \"ckpt-1\"\ncheckpoints { dir: ", f);
  fclose(f);
  EXPECT_EQ(ReadCheckpointState(Env::Default(), dir).status().code(), absl::StatusCode::kDataLoss);
}

// Found by tests/corruption_sweep_test: a state file cut short or bit-flipped that still
// parses listed fewer checkpoints (or none), and the lookup trusted it (a fresh start, or an
// older checkpoint than the newest whole one). Such a file is now DataLoss.
TEST(CheckpointState, ParsableButInconsistentIsDataLoss) {
  const std::string dir = TempDir("state_inconsistent");
  const std::string good = "latest: \"ckpt-2\"\ncheckpoints { dir: \"ckpt-1\" step: 1 }\n"
                           "checkpoints { dir: \"ckpt-2\" step: 2 }\n";
  for (const std::string& text : {
           std::string(""),                                                  // cut to nothing
           std::string("# Sluice checkpoint state"),                         // cut in the comment
           std::string("latest: \"ckpt-2\"\n"),                              // no checkpoints
           good.substr(0, good.find("checkpoints { dir: \"ckpt-2")),         // the newest cut off
           std::string("latest: \"ckpt-3\"\ncheckpoints { dir: \"ckpt-2\" step: 2 }\n"),  // latest unlisted
           std::string("latest: \"ckpt-2\"\ncheckpoints { dir: \"ckpt-2\" step: 3 }\n"),  // dir and step differ
           std::string("latest: \"ckpt/2\"\ncheckpoints { dir: \"ckpt/2\" step: 2 }\n"),  // not a ckpt-<step>
           std::string("latest: \"ckpt-2\"\ncheckpoints { dir: \"ckpt-2\" step: 2 }\n"
                       "checkpoints { dir: \"ckpt-2\" step: 2 }\n"),                      // listed twice
       }) {
    FILE* f = fopen(JoinPath(dir, kStateFileName).c_str(), "w");
    fputs(text.c_str(), f);
    fclose(f);
    auto state = ReadCheckpointState(Env::Default(), dir);
    EXPECT_EQ(state.status().code(), absl::StatusCode::kDataLoss) << text;
    EXPECT_NE(state.status().message().find(JoinPath(dir, kStateFileName)), std::string::npos) << state.status();
  }
  FILE* f = fopen(JoinPath(dir, kStateFileName).c_str(), "w");
  fputs(good.c_str(), f);
  fclose(f);
  EXPECT_TRUE(ReadCheckpointState(Env::Default(), dir).ok());
}

// Crash at every operation of a state-file update, with and without a short
// write and with unsynced data dropped: the file always parses and is either
// the old or the new state.
TEST(CheckpointState, CrashAtAnyOperationLeavesOldOrNewState) {
  const CheckpointState old_state = StateWithSteps({100});
  const CheckpointState new_state = StateWithSteps({100, 200});
  // Count the operations of one clean update.
  int total = 0;
  {
    const std::string dir = TempDir("state_count");
    FaultEnv env(Env::Default());
    ASSERT_TRUE(WriteCheckpointState(&env, dir, new_state).ok());
    total = env.ops();
  }
  ASSERT_GE(total, 5);  // create, append, sync, close, rename, sync dir
  int saw_old = 0, saw_new = 0;
  for (int crash_at = 0; crash_at <= total; ++crash_at) {
    for (bool short_write : {false, true}) {
      const std::string dir = TempDir("state_crash");
      ASSERT_TRUE(WriteCheckpointState(Env::Default(), dir, old_state).ok());
      FaultEnv env(Env::Default());
      env.CrashAfter(crash_at, short_write);
      absl::Status s = WriteCheckpointState(&env, dir, new_state);
      EXPECT_EQ(s.ok(), crash_at == total) << crash_at;
      env.DropUnsyncedData();
      auto back = ReadCheckpointState(Env::Default(), dir);
      ASSERT_TRUE(back.ok()) << "crash at op " << crash_at << ": " << back.status();
      const std::string got = back->SerializeAsString();
      if (got == old_state.SerializeAsString()) {
        ++saw_old;
      } else {
        EXPECT_EQ(got, new_state.SerializeAsString()) << "crash at op " << crash_at;
        ++saw_new;
      }
    }
  }
  EXPECT_GT(saw_old, 0);
  EXPECT_GT(saw_new, 0);
}

TEST(Retention, KeepsTheNewestN) {
  CheckpointState state;
  RetentionOptions options;
  options.keep = 3;
  double next = 0;
  std::vector<std::string> deleted;
  for (int step = 1; step <= 6; ++step) {
    CheckpointRecord r;
    r.set_dir("ckpt-" + std::to_string(step));
    r.set_step(step);
    r.set_unix_seconds(step);
    AddCheckpointAndApplyRetention(r, options, &next, &state, &deleted);
  }
  ASSERT_EQ(state.checkpoints_size(), 3);
  EXPECT_EQ(state.checkpoints(0).dir(), "ckpt-4");
  EXPECT_EQ(state.latest(), "ckpt-6");
  EXPECT_EQ(deleted, (std::vector<std::string>{"ckpt-1", "ckpt-2", "ckpt-3"}));
}

TEST(Retention, PreservesOnePerKeepEveryHours) {
  CheckpointState state;
  RetentionOptions options;
  options.keep = 2;
  options.keep_every_hours = 1;
  double next = 3600;  // the saver started at t = 0
  std::vector<std::string> deleted;
  // One checkpoint every 20 minutes for 3 hours.
  for (int i = 1; i <= 9; ++i) {
    CheckpointRecord r;
    r.set_dir("ckpt-" + std::to_string(i));
    r.set_step(i);
    r.set_unix_seconds(i * 1200.0);
    AddCheckpointAndApplyRetention(r, options, &next, &state, &deleted);
  }
  std::vector<std::string> kept_forever, recent;
  for (const auto& r : state.checkpoints()) (r.keep_forever() ? kept_forever : recent).push_back(r.dir());
  // t=3600 (ckpt-3) and t=7200 (ckpt-6) are an hour apart.
  EXPECT_EQ(kept_forever, (std::vector<std::string>{"ckpt-3", "ckpt-6"}));
  EXPECT_EQ(recent, (std::vector<std::string>{"ckpt-8", "ckpt-9"}));
  EXPECT_EQ(deleted.size(), 5u);
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
