// FaultEnv: each kind of fault it injects behaves as documented, and without
// faults it is the base Env.
#include "engine/platform/fault_env.h"

#include <string>

#include "absl/strings/match.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

class FaultEnvTest : public ::testing::Test {
 protected:
  FaultEnvTest()
      : dir_(FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name())), env_(Env::Default()) {}
  std::string Path(const std::string& name) const { return JoinPath(dir_, name); }
  std::string Contents(const std::string& name) {
    auto s = ReadFileToString(Env::Default(), Path(name));
    return s.ok() ? *s : "<" + s.status().ToString() + ">";
  }
  const std::string dir_;
  FaultEnv env_;
};

TEST_F(FaultEnvTest, WithoutFaultsItIsTheBaseEnv) {
  ASSERT_TRUE(env_.CreateDirs(Path("d")).ok());
  ASSERT_TRUE(WriteFileAtomically(&env_, Path("d/f"), "data").ok());
  EXPECT_EQ(Contents("d/f"), "data");
  EXPECT_EQ(*ReadFileToString(&env_, Path("d/f")), "data");
  EXPECT_GT(env_.ops(), 4);
  EXPECT_FALSE(env_.crashed());
}

TEST_F(FaultEnvTest, ACrashFailsThatOperationAndEveryLaterOne) {
  env_.CrashAfter(2);  // create, append; the sync crashes
  auto file = env_.NewWritableFile(Path("f"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("abcd").ok());
  absl::Status s = (*file)->Sync();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "injected crash")) << s;
  EXPECT_TRUE(env_.crashed());
  EXPECT_FALSE(env_.RenameFile(Path("f"), Path("g")).ok());
  EXPECT_FALSE(env_.CreateDirs(Path("d")).ok());
  EXPECT_EQ(Contents("f"), "abcd") << "written but not synced";
  env_.DropUnsyncedData();
  EXPECT_EQ(Contents("f"), "") << "a power cut loses what was not synced";
}

TEST_F(FaultEnvTest, AShortWriteLeavesHalfTheBytes) {
  auto file = env_.NewWritableFile(Path("f"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("1234").ok());
  ASSERT_TRUE((*file)->Sync().ok());
  env_.CrashAfter(0, /*short_write=*/true);
  EXPECT_FALSE((*file)->Append("abcdefgh").ok());
  EXPECT_EQ(Contents("f"), "1234abcd");
  env_.DropUnsyncedData();
  EXPECT_EQ(Contents("f"), "1234");
}

TEST_F(FaultEnvTest, AFullDiskWritesWhatFitsThenFails) {
  auto file = env_.NewWritableFile(Path("f"));
  ASSERT_TRUE(file.ok());
  env_.SetWriteBudget(6);
  ASSERT_TRUE((*file)->Append("abcd").ok());
  absl::Status s = (*file)->Append("efgh");
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), Path("f"))) << s;
  EXPECT_TRUE(absl::IsResourceExhausted((*file)->Append("x")));
  EXPECT_EQ(Contents("f"), "abcdef");
  env_.SetWriteBudget(-1);
  EXPECT_TRUE((*file)->Append("gh").ok());
}

TEST_F(FaultEnvTest, FailedSyncsAreUnavailable) {
  env_.FailSyncs(true);
  EXPECT_TRUE(absl::IsUnavailable(WriteFileAtomically(&env_, Path("f"), "x")));
  ASSERT_TRUE(WriteStringToFile(Env::Default(), Path("g"), "y").ok());
  EXPECT_TRUE(absl::IsUnavailable(env_.SyncFile(Path("g"))));
  EXPECT_TRUE(absl::IsUnavailable(env_.SyncDir(dir_)));
  env_.FailSyncs(false);
  EXPECT_TRUE(WriteFileAtomically(&env_, Path("f"), "x").ok());
}

TEST_F(FaultEnvTest, ReadErrorsHitOnlyReadsCoveringTheByte) {
  ASSERT_TRUE(WriteStringToFile(Env::Default(), Path("f"), "0123456789").ok());
  env_.InjectReadError(Path("f"), 5);
  auto file = env_.NewRandomAccessFile(Path("f"));
  ASSERT_TRUE(file.ok());
  char scratch[10];
  absl::string_view got;
  EXPECT_TRUE((*file)->Read(0, 5, &got, scratch).ok());
  EXPECT_EQ(got, "01234");
  absl::Status s = (*file)->Read(3, 4, &got, scratch);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), Path("f"))) << s;
  EXPECT_TRUE((*file)->Read(6, 4, &got, scratch).ok());
}

TEST_F(FaultEnvTest, RenamedFilesKeepTheirSyncState) {
  auto file = env_.NewWritableFile(Path("tmp"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("synced").ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Append("+not").ok());
  ASSERT_TRUE((*file)->Close().ok());
  ASSERT_TRUE(env_.RenameFile(Path("tmp"), Path("final")).ok());
  env_.DropUnsyncedData();
  EXPECT_EQ(Contents("final"), "synced");
}

}  // namespace
}  // namespace sluice
