// Spec for IdxRecordReader across epochs (issue 18): a gzip IDX file is
// inflated once and later epochs are served from memory while the file is
// unchanged (same size and gzip trailer), with the same records in the same
// order and the same resume state as a reader that inflates it again.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "engine/platform/fault_env.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"
#include "inputs/fifo_queue.h"
#include "inputs/idx.h"
#include "inputs/idx_cache.h"
#include "inputs/readers.h"

namespace sluice {
namespace {

constexpr int kItems = 50;

IdxFile Sample(int base) {
  IdxFile f;
  f.dtype = DT_UINT8;
  f.dims = {kItems, 3};
  for (int i = 0; i < kItems * 3; ++i) f.data.push_back(static_cast<char>(base + i * 7));
  return f;
}

// A file-name queue holding `path` `epochs` times, closed.
std::shared_ptr<QueueBase> FileQueue(const std::string& path, int epochs) {
  auto q = std::make_shared<FIFOQueue>("files", QueueBase::kUnbounded, DataTypeVector{DT_STRING},
                                       std::vector<PartialShape>{});
  for (int i = 0; i < epochs; ++i) {
    absl::Status s;
    q->TryEnqueue({Tensor::Scalar<tstring>(path)}, nullptr, [&s](const absl::Status& r) { s = r; });
    EXPECT_TRUE(s.ok()) << s;
  }
  q->Close(false, [](const absl::Status&) {});
  return q;
}

// Reads up to `n` records one at a time; stops early at the end of input or
// at an error (returned in *status).
std::vector<std::string> Read(ReaderBase* reader, const std::shared_ptr<QueueBase>& q, int n, absl::Status* status) {
  std::vector<std::string> records;
  *status = absl::OkStatus();
  for (int i = 0; i < n && status->ok(); ++i) {
    absl::Notification done;
    reader->ReadAsync(q, nullptr, [&](const absl::Status& s, std::string key, std::string value) {
      if (s.ok()) records.push_back(key + "=" + value);
      *status = s;
      done.Notify();
    });
    done.WaitForNotification();
  }
  return records;
}

class IdxReaderEpochsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = FreshTestDir("idx_reader_epochs") + "/items.idx.gz";
    ASSERT_TRUE(WriteIdxFile(&env_, path_, Sample(0), /*gzip=*/true).ok());
  }
  // Reads of the compressed data (past the 10-byte gzip header, before the
  // 8-byte trailer that identifies the file) fail from now on.
  void BreakData(FaultEnv* env) { env->InjectReadError(path_, 12); }

  FaultEnv env_{Env::Default()};
  std::string path_;
};

TEST_F(IdxReaderEpochsTest, LaterEpochsDoNotReadTheDataAgain) {
  for (uint64_t shuffle_seed : {uint64_t{0}, uint64_t{17}}) {
    FaultEnv env(Env::Default());
    auto reader = std::make_shared<IdxRecordReader>("r", &env, shuffle_seed);
    auto q = FileQueue(path_, 3);
    absl::Status s;
    std::vector<std::string> first = Read(reader.get(), q, kItems, &s);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(first.size(), static_cast<size_t>(kItems));

    // A reader that had to read the data again would fail from here on.
    BreakData(&env);
    std::vector<std::string> later = Read(reader.get(), q, 2 * kItems, &s);
    ASSERT_TRUE(s.ok()) << "seed " << shuffle_seed << ": " << s;
    ASSERT_EQ(later.size(), static_cast<size_t>(2 * kItems));

    // The same records as a fresh reader of an intact file gives, epoch by
    // epoch (a shuffled epoch's order depends on its epoch number).
    FaultEnv intact(Env::Default());
    auto fresh = std::make_shared<IdxRecordReader>("fresh", &intact, shuffle_seed);
    auto q2 = FileQueue(path_, 3);
    std::vector<std::string> expected = Read(fresh.get(), q2, 3 * kItems, &s);
    ASSERT_TRUE(s.ok()) << s;
    std::vector<std::string> got = first;
    got.insert(got.end(), later.begin(), later.end());
    EXPECT_EQ(got, expected) << "seed " << shuffle_seed;
    if (shuffle_seed != 0) {
      EXPECT_NE(std::vector<std::string>(got.begin(), got.begin() + kItems),
                std::vector<std::string>(got.begin() + kItems, got.begin() + 2 * kItems));
    }
  }
}

// A reader keeps its own last file across epochs: with a process cache that
// keeps nothing (a file over its budget), later epochs still do not inflate
// the file again.
TEST_F(IdxReaderEpochsTest, AFileTheCacheDoesNotKeepIsStillInflatedOnce) {
  IdxFileCache keeps_nothing(0);
  FaultEnv env(Env::Default());
  auto reader = std::make_shared<IdxRecordReader>("r", &env, 0, 1, 0, &keeps_nothing);
  auto q = FileQueue(path_, 3);
  absl::Status s;
  ASSERT_EQ(Read(reader.get(), q, kItems, &s).size(), static_cast<size_t>(kItems));
  ASSERT_TRUE(s.ok()) << s;
  BreakData(&env);
  ASSERT_EQ(Read(reader.get(), q, 2 * kItems, &s).size(), static_cast<size_t>(2 * kItems));
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(keeps_nothing.parses(), 1);
  EXPECT_EQ(keeps_nothing.files(), 0);
}

// Resuming mid-epoch from saved state, on the reader that holds the items,
// gives the records an uninterrupted read gives, without reading the data.
TEST_F(IdxReaderEpochsTest, RestoreMidEpochUsesTheItemsInMemory) {
  auto reader = std::make_shared<IdxRecordReader>("r", &env_, /*shuffle_seed=*/5);
  auto q = FileQueue(path_, 3);
  absl::Status s;
  ASSERT_EQ(Read(reader.get(), q, kItems + 7, &s).size(), static_cast<size_t>(kItems + 7));
  ASSERT_TRUE(s.ok()) << s;
  const std::string state = reader->SerializeState();
  std::vector<std::string> uninterrupted = Read(reader.get(), q, 20, &s);
  ASSERT_TRUE(s.ok()) << s;

  BreakData(&env_);
  ASSERT_TRUE(reader->RestoreState(state).ok());
  std::vector<std::string> resumed = Read(reader.get(), q, 20, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(resumed, uninterrupted);
}

// A rewritten file (another gzip trailer) is inflated anew.
TEST_F(IdxReaderEpochsTest, AChangedFileIsReadAgain) {
  auto reader = std::make_shared<IdxRecordReader>("r", &env_);
  auto q = FileQueue(path_, 2);
  absl::Status s;
  std::vector<std::string> first = Read(reader.get(), q, kItems, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(WriteIdxFile(&env_, path_, Sample(1), true).ok());
  std::vector<std::string> second = Read(reader.get(), q, kItems, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(second.size(), first.size());
  EXPECT_NE(second, first);
  // And with its data unreadable, the changed file's read fails (it is read).
  ASSERT_TRUE(WriteIdxFile(&env_, path_, Sample(2), true).ok());
  BreakData(&env_);
  auto other = std::make_shared<IdxRecordReader>("o", &env_);
  auto q2 = FileQueue(path_, 1);
  Read(other.get(), q2, 1, &s);
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace sluice
