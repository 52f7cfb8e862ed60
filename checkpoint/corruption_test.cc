// Corruption sweep over a small checkpoint: every file truncated at (up to)
// 64 offsets and bit-flipped at (up to) 64 positions. Each time: reading any
// tensor either returns the exact saved value or a DataLoss naming the
// checkpoint; full verification fails; the latest-valid lookup falls back to
// the previous checkpoint; and nothing crashes (run it under --config=asan).
#include <cstdio>
#include <cstdlib>
#include <set>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/checkpoint_writer.h"
#include "gtest/gtest.h"

namespace sluice {
namespace checkpoint {
namespace {

std::string TempDir(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string dir = JoinPath(t ? t : "/tmp", name);
  Env::Default()->DeleteRecursively(dir).IgnoreError();
  return dir;
}

void WriteRaw(const std::string& path, const std::string& data) {
  FILE* f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!data.empty()) fwrite(data.data(), 1, data.size(), f);
  fclose(f);
}

void ListFiles(const std::string& dir, std::vector<std::string>* out) {
  const std::vector<std::string> children = *Env::Default()->GetChildren(dir);
  for (const std::string& c : children) {
    std::string p = JoinPath(dir, c);
    if (Env::Default()->IsDirectory(p)) {
      ListFiles(p, out);
    } else {
      out->push_back(p);
    }
  }
}

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = TempDir("corruption_run");
    const std::string ckpts = CheckpointsDir(run_dir_);
    ASSERT_TRUE(Env::Default()->CreateDirs(ckpts).ok());
    for (int step : {1, 2}) {
      std::vector<SaveEntry> entries(3);
      entries[0].full_name = "w";
      entries[0].value = Tensor(DT_FLOAT, TensorShape({40}));
      for (int i = 0; i < 40; ++i) entries[0].value.data<float>()[i] = step * 100 + i;
      entries[1].full_name = "global_step";
      entries[1].value = Tensor::Scalar<int64_t>(step);
      entries[2].full_name = "vocab";
      entries[2].value = Tensor(DT_STRING, TensorShape({3}));
      for (int i = 0; i < 3; ++i) entries[2].value.data<tstring>()[i] = "word" + std::to_string(i * step);
      WriteOptions options;
      options.step = step;
      options.chunk_bytes = 64;  // w spans three chunks
      ASSERT_TRUE(WriteCheckpointDir(Env::Default(), JoinPath(ckpts, "ckpt-" + std::to_string(step)), entries,
                                     options).ok());
      if (step == 2) expected_ = entries;
    }
    CheckpointState state;
    for (int step : {1, 2}) {
      CheckpointRecord* r = state.add_checkpoints();
      r->set_dir("ckpt-" + std::to_string(step));
      r->set_step(step);
    }
    state.set_latest("ckpt-2");
    ASSERT_TRUE(WriteCheckpointState(Env::Default(), ckpts, state).ok());
    target_ = JoinPath(ckpts, "ckpt-2");
  }

  // Checks the invariants after one corruption of `file` (described by `what`).
  void CheckCorrupted(const std::string& file, const std::string& what) {
    SCOPED_TRACE(what + " of " + file);
    ++cases_;
    auto reader = CheckpointReader::Open(target_);
    if (reader.ok()) {
      for (const SaveEntry& e : expected_) {
        auto t = (*reader)->ReadTensor(e.full_name);
        if (t.ok()) {
          EXPECT_EQ(t->DebugString(100), e.value.DebugString(100)) << "silently wrong value of " << e.full_name;
        } else {
          EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss) << t.status();
          EXPECT_NE(t.status().message().find(target_), std::string::npos) << t.status();
        }
      }
      absl::Status v = (*reader)->VerifyAll();
      EXPECT_FALSE(v.ok()) << "verification passed";
      if (!v.ok()) {
        EXPECT_EQ(v.code(), absl::StatusCode::kDataLoss) << v;
        EXPECT_NE(v.message().find(target_), std::string::npos) << v;
      }
    } else {
      EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss) << reader.status();
      EXPECT_NE(reader.status().message().find(target_), std::string::npos) << reader.status();
    }
    EXPECT_FALSE(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kFull).ok());
    EXPECT_FALSE(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kOpen).ok());
    auto found = FindLatestValidCheckpoint(Env::Default(), run_dir_, VerifyLevel::kFull);
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_EQ(found->step, 1);
  }

  std::string run_dir_;
  std::string target_;
  std::vector<SaveEntry> expected_;
  int cases_ = 0;
};

std::set<size_t> Offsets(size_t size) {
  std::set<size_t> offsets;
  for (size_t i = 0; i < 64; ++i) offsets.insert(i * size / 64);
  return offsets;
}

TEST_F(CorruptionTest, IntactCheckpointVerifies) {
  EXPECT_TRUE(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kFull).ok());
  auto found = FindLatestValidCheckpoint(Env::Default(), run_dir_, VerifyLevel::kFull);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->step, 2);
}

TEST_F(CorruptionTest, TruncationsAndBitFlipsInEveryFile) {
  std::vector<std::string> files;
  ListFiles(target_, &files);
  ASSERT_GE(files.size(), 5u);  // FILES, CURRENT, MANIFEST, OPTIONS, IDENTITY, an SST, LOCK
  for (const std::string& file : files) {
    const std::string original = *Env::Default()->ReadFile(file);
    if (original.empty()) continue;  // RocksDB's LOCK file
    for (size_t off : Offsets(original.size())) {
      WriteRaw(file, original.substr(0, off));
      CheckCorrupted(file, "truncation to " + std::to_string(off) + " bytes");
    }
    int flip = 0;
    for (size_t off : Offsets(original.size())) {
      std::string data = original;
      data[off] ^= static_cast<char>(1 << (flip++ % 8));
      WriteRaw(file, data);
      CheckCorrupted(file, "bit flip at " + std::to_string(off));
    }
    WriteRaw(file, original);
  }
  EXPECT_TRUE(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kFull).ok());
  EXPECT_GT(cases_, 300);
}

TEST_F(CorruptionTest, MissingFilesAndStoresAreDataLoss) {
  Env::Default()->DeleteRecursively(JoinPath(target_, "FILES")).IgnoreError();
  EXPECT_EQ(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kFull).code(), absl::StatusCode::kDataLoss);
  Env::Default()->DeleteRecursively(JoinPath(target_, "shard-00000-of-00001")).IgnoreError();
  EXPECT_EQ(CheckpointReader::Open(target_).status().code(), absl::StatusCode::kDataLoss);
  auto found = FindLatestValidCheckpoint(Env::Default(), run_dir_, VerifyLevel::kFull);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->step, 1);
}

TEST_F(CorruptionTest, GarbageStateFileFallsBackToScanningDirectories) {
  WriteRaw(JoinPath(CheckpointsDir(run_dir_), kStateFileName), "latest: \"ckpt-2\" garbage {{{");
  auto found = FindLatestValidCheckpoint(Env::Default(), run_dir_, VerifyLevel::kFull);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->step, 2);
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
