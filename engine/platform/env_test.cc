// The POSIX Env: files of every kind, directories, renames, globbing, the
// bounded whole-file read, the atomic write, file types (links and FIFOs are
// reported as what they are), and errors that name the path.
#include "engine/platform/env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

class EnvTest : public ::testing::Test {
 protected:
  EnvTest() : dir_(FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name())) {}
  std::string Path(const std::string& name) const { return JoinPath(dir_, name); }
  Env* env_ = Env::Default();
  const std::string dir_;
};

TEST_F(EnvTest, WriteAppendAndReadBack) {
  ASSERT_TRUE(WriteStringToFile(env_, Path("a"), "hello").ok());
  auto appendable = env_->NewAppendableFile(Path("a"));
  ASSERT_TRUE(appendable.ok());
  ASSERT_TRUE((*appendable)->Append(", world").ok());
  ASSERT_TRUE((*appendable)->Sync().ok());
  ASSERT_TRUE((*appendable)->Close().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*appendable)->Append("x"))) << "closed files refuse appends";
  EXPECT_EQ(*ReadFileToString(env_, Path("a")), "hello, world");
  EXPECT_EQ(*env_->GetFileSize(Path("a")), 12u);

  auto file = env_->NewRandomAccessFile(Path("a"));
  ASSERT_TRUE(file.ok());
  char scratch[16];
  absl::string_view got;
  ASSERT_TRUE((*file)->Read(7, 16, &got, scratch).ok());
  EXPECT_EQ(got, "world") << "a read past the end is short, not an error";
  ASSERT_TRUE((*file)->Read(100, 4, &got, scratch).ok());
  EXPECT_TRUE(got.empty());
}

TEST_F(EnvTest, BufferedBytesReachTheFileOnFlush) {
  auto file = env_->NewWritableFile(Path("b"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("abc").ok());
  EXPECT_EQ(*env_->GetFileSize(Path("b")), 0u) << "still in the buffer";
  ASSERT_TRUE((*file)->Flush().ok());
  EXPECT_EQ(*env_->GetFileSize(Path("b")), 3u);
}

// Appends are written out in pieces that end on multiples of 2 MB of the file
// (so the page cache can hold it in 2 MB folios: env.cc): between flushes the
// file's size is the last 2 MB boundary the data has passed, and every byte
// arrives in order, from appends of any size, after a Flush that broke the
// alignment, and in a file opened for appending at an odd size.
TEST_F(EnvTest, WritesEndOnTwoMegabyteBoundariesAndKeepEveryByte) {
  constexpr uint64_t kChunk = 2 << 20;
  std::string expected;
  auto next_piece = [&expected](size_t n) {
    std::string piece(n, '\0');
    for (size_t i = 0; i < n; ++i) piece[i] = static_cast<char>((expected.size() + i) * 2654435761u >> 13);
    return piece;
  };
  auto file = env_->NewWritableFile(Path("w"));
  ASSERT_TRUE(file.ok());
  uint64_t flushed = 0;
  const std::vector<size_t> sizes = {1, 1000, 300000, 5 << 20, 17, 123457, 2 << 20, 999999, 3, 4 << 20};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string piece = next_piece(sizes[i]);
    ASSERT_TRUE((*file)->Append(piece).ok());
    expected += piece;
    const uint64_t boundary = expected.size() / kChunk * kChunk;
    EXPECT_EQ(*env_->GetFileSize(Path("w")), std::max(boundary, flushed)) << "after append " << i;
    if (i == 4) {
      ASSERT_TRUE((*file)->Flush().ok());
      flushed = expected.size();
      EXPECT_EQ(*env_->GetFileSize(Path("w")), flushed);
    }
  }
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_TRUE(*ReadFileToString(env_, Path("w"), 64 << 20) == expected) << "the file's bytes differ";

  // Appending to a file of 1,000,003 bytes: the first write ends at 2 MB.
  expected = next_piece(1000003);
  ASSERT_TRUE(WriteStringToFile(env_, Path("a"), expected).ok());
  auto appendable = env_->NewAppendableFile(Path("a"));
  ASSERT_TRUE(appendable.ok());
  const std::string more = next_piece(3 << 20);
  ASSERT_TRUE((*appendable)->Append(more).ok());
  expected += more;
  EXPECT_EQ(*env_->GetFileSize(Path("a")), kChunk);
  ASSERT_TRUE((*appendable)->Close().ok());
  EXPECT_TRUE(*ReadFileToString(env_, Path("a"), 64 << 20) == expected) << "the file's bytes differ";
}

TEST_F(EnvTest, ExclusiveCreateRefusesAnExistingFile) {
  ASSERT_TRUE(env_->NewExclusiveFile(Path("x")).ok());
  auto again = env_->NewExclusiveFile(Path("x"));
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();
  EXPECT_TRUE(absl::StrContains(again.status().message(), Path("x")));
}

TEST_F(EnvTest, MissingFilesAreNotFoundAndNameThePath) {
  auto r = env_->NewRandomAccessFile(Path("missing"));
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), Path("missing")));
  EXPECT_TRUE(absl::IsNotFound(env_->FileExists(Path("missing"))));
  EXPECT_TRUE(absl::IsNotFound(env_->GetFileSize(Path("missing")).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(env_->NewRandomAccessFile(dir_).status())) << "a directory";
}

TEST_F(EnvTest, DirectoriesChildrenRenameAndDelete) {
  ASSERT_TRUE(env_->CreateDirs(Path("d/e/f")).ok());
  ASSERT_TRUE(env_->CreateDirs(Path("d/e/f")).ok()) << "existing is fine";
  ASSERT_TRUE(WriteStringToFile(env_, Path("d/z"), "1").ok());
  ASSERT_TRUE(WriteStringToFile(env_, Path("d/a"), "2").ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(env_->CreateDirs(Path("d/z")))) << "a file of that name";
  EXPECT_EQ(*env_->GetChildren(Path("d")), (std::vector<std::string>{"a", "e", "z"})) << "sorted";
  EXPECT_TRUE(env_->IsDirectory(Path("d/e")));
  EXPECT_FALSE(env_->IsDirectory(Path("d/a")));
  ASSERT_TRUE(env_->RenameFile(Path("d/a"), Path("d/b")).ok());
  EXPECT_TRUE(absl::IsNotFound(env_->FileExists(Path("d/a"))));
  ASSERT_TRUE(env_->DeleteFile(Path("d/b")).ok());
  EXPECT_TRUE(absl::IsNotFound(env_->DeleteFile(Path("d/b"))));
  ASSERT_TRUE(env_->DeleteRecursively(Path("d")).ok());
  EXPECT_TRUE(absl::IsNotFound(env_->FileExists(Path("d"))));
  EXPECT_TRUE(env_->DeleteRecursively(Path("d")).ok()) << "missing is fine";
}

TEST_F(EnvTest, DeleteRecursivelyDoesNotFollowLinksOutOfTheTree) {
  ASSERT_TRUE(env_->CreateDirs(Path("outside")).ok());
  ASSERT_TRUE(WriteStringToFile(env_, Path("outside/keep"), "k").ok());
  ASSERT_TRUE(env_->CreateDirs(Path("tree")).ok());
  ASSERT_EQ(::symlink(Path("outside").c_str(), Path("tree/link").c_str()), 0);
  ASSERT_TRUE(env_->DeleteRecursively(Path("tree")).ok());
  EXPECT_TRUE(env_->FileExists(Path("outside/keep")).ok());
}

TEST_F(EnvTest, FileTypesAreReportedWithoutFollowingLinks) {
  ASSERT_TRUE(WriteStringToFile(env_, Path("f"), "x").ok());
  ASSERT_EQ(::symlink(Path("f").c_str(), Path("l").c_str()), 0);
  ASSERT_EQ(::mkfifo(Path("p").c_str(), 0600), 0);
  EXPECT_EQ(*env_->GetFileType(Path("f")), FileType::kRegular);
  EXPECT_EQ(*env_->GetFileType(dir_), FileType::kDirectory);
  EXPECT_EQ(*env_->GetFileType(Path("l")), FileType::kSymlink);
  EXPECT_EQ(*env_->GetFileType(Path("p")), FileType::kFifo);
  EXPECT_TRUE(absl::IsNotFound(env_->GetFileType(Path("none")).status()));
}

TEST_F(EnvTest, ReadFileToStringStopsAtItsLimit) {
  ASSERT_TRUE(WriteStringToFile(env_, Path("big"), std::string(5000, 'q')).ok());
  EXPECT_EQ(ReadFileToString(env_, Path("big"), 5000)->size(), 5000u);
  auto capped = ReadFileToString(env_, Path("big"), 4999);
  EXPECT_TRUE(absl::IsResourceExhausted(capped.status())) << capped.status();
  EXPECT_TRUE(absl::StrContains(capped.status().message(), Path("big")));
  // Refused by its size, before reading: the message gives it.
  EXPECT_TRUE(absl::StrContains(capped.status().message(), "(5000 bytes)")) << capped.status();
  // A device that never ends (as a crafted path could name) is cut off too.
  auto endless = ReadFileToString(env_, "/dev/zero", 3 << 20);
  EXPECT_TRUE(absl::IsResourceExhausted(endless.status())) << endless.status();
}

TEST_F(EnvTest, WriteFileAtomicallyReplacesAndLeavesNoTemporary) {
  ASSERT_TRUE(WriteFileAtomically(env_, Path("state"), "old").ok());
  ASSERT_TRUE(WriteFileAtomically(env_, Path("state"), "new").ok());
  EXPECT_EQ(*ReadFileToString(env_, Path("state")), "new");
  EXPECT_EQ(*env_->GetChildren(dir_), std::vector<std::string>{"state"});
  EXPECT_TRUE(SyncTree(env_, dir_).ok());
}

TEST_F(EnvTest, GlobsMatchTheLastComponentSorted) {
  for (const char* name : {"part-1.rec", "part-0.rec", "other.txt", ".hidden.rec"}) {
    ASSERT_TRUE(WriteStringToFile(env_, Path(name), "").ok());
  }
  EXPECT_EQ(*env_->GetMatchingPaths(Path("*.rec")),
            (std::vector<std::string>{Path("part-0.rec"), Path("part-1.rec")}));
  EXPECT_EQ(*env_->GetMatchingPaths(Path("other.txt")), std::vector<std::string>{Path("other.txt")});
  EXPECT_TRUE(env_->GetMatchingPaths(Path("nodir/*.rec"))->empty());
}

TEST_F(EnvTest, PathHelpersAndTheClock) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(Dirname("a/b/c"), "a/b");
  EXPECT_EQ(Dirname("/c"), "/");
  EXPECT_EQ(Dirname("c"), ".");
  const int64_t t0 = env_->NowMicros();
  EXPECT_GT(t0, int64_t{1600000000} * 1000000) << "after 2020";
  EXPECT_GE(env_->NowMicros(), t0);
}

}  // namespace
}  // namespace sluice
