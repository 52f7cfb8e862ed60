// MappingCache: a file mapped twice is mapped once; a file that changed size
// is mapped again and shows its new bytes; a truncated file's damaged mapping
// is replaced; deleted files, files over the budget and the least recently
// used go; Env::Default()'s files map through the process's cache.
#include "engine/platform/mapping_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "engine/platform/env.h"
#include "engine/platform/record_reader.h"
#include "engine/platform/record_writer.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

class Cache : public ::testing::Test {
 protected:
  Cache() : dir_(FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name())) {}
  ~Cache() override {
    for (int fd : fds_) close(fd);
  }
  // Writes a file of `n` bytes, byte i = (i * 7 + seed) mod 256, and opens it.
  int MakeFile(const std::string& name, size_t n, int seed = 0) {
    std::string data(n, '\0');
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<char>(i * 7 + seed);
    EXPECT_TRUE(WriteStringToFile(Env::Default(), Path(name), data).ok());
    return Open(name);
  }
  int Open(const std::string& name) {
    const int fd = open(Path(name).c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    fds_.push_back(fd);
    return fd;
  }
  std::string Path(const std::string& name) const { return JoinPath(dir_, name); }
  // cache.View of the file open as fd, with what fstat says of it now.
  static std::unique_ptr<MappedRegion> ViewOf(MappingCache& cache, int fd, uint64_t offset, size_t n) {
    struct stat st;
    EXPECT_EQ(fstat(fd, &st), 0);
    return cache.View(fd, MappingCache::FileStateOf(st), offset, n, "f");
  }
  // Sets the file's modification time to `seconds` past the epoch.
  void SetModified(const std::string& name, time_t seconds) {
    struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, Path(name).c_str(), times, 0), 0);
  }

  const std::string dir_;
  std::vector<int> fds_;
};

TEST_F(Cache, AFileReadTwiceIsMappedOnce) {
  MappingCache cache(1 << 30);
  const int fd = MakeFile("a", 100000);
  auto first = ViewOf(cache, fd, 1000, 5000);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(first->size(), 5000u);
  for (size_t i = 0; i < 5000; ++i) ASSERT_EQ(first->data()[i], static_cast<char>((1000 + i) * 7)) << i;
  // A second reader, through its own descriptor, after the first is gone:
  // the same mapping, 3000 bytes further on.
  const char* first_data = first->data();
  first.reset();
  auto second = ViewOf(cache, Open("a"), 4000, 200000);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->data(), first_data + 3000);
  EXPECT_EQ(second->size(), 96000u);  // cut at the end of the file
  EXPECT_EQ(cache.files(), 1);
  EXPECT_EQ(cache.bytes(), 100000u);
  // Past the end: an empty view.
  auto past = ViewOf(cache, fd, 100000, 10);
  ASSERT_NE(past, nullptr);
  EXPECT_EQ(past->size(), 0u);
}

TEST_F(Cache, AFileThatChangedSizeIsMappedAgainAndShowsItsNewBytes) {
  MappingCache cache(1 << 30);
  const int fd = MakeFile("a", 50000);
  auto old_view = ViewOf(cache, fd, 0, 50000);
  ASSERT_NE(old_view, nullptr);
  // Rewritten in place (the same inode), longer and with other bytes.
  MakeFile("a", 80000, 3);
  auto view = ViewOf(cache, fd, 0, 80000);
  ASSERT_NE(view, nullptr);
  ASSERT_EQ(view->size(), 80000u);
  for (size_t i = 0; i < 80000; i += 997) ASSERT_EQ(view->data()[i], static_cast<char>(i * 7 + 3)) << i;
  EXPECT_EQ(cache.files(), 1);
  EXPECT_EQ(cache.bytes(), 80000u);
  // The old view still reads the file's first bytes (a shared mapping).
  EXPECT_EQ(old_view->data()[10], static_cast<char>(10 * 7 + 3));
}

// A file rewritten in place at the same size is mapped again when its
// modification time moved: on stacked file systems (overlayfs) the old
// mapping could show the old copy of the file.
TEST_F(Cache, AFileModifiedInPlaceIsMappedAgain) {
  MappingCache cache(1 << 30);
  const int fd = MakeFile("a", 40000);
  SetModified("a", 1000000);
  auto old_view = ViewOf(cache, fd, 0, 40000);
  ASSERT_NE(old_view, nullptr);
  EXPECT_EQ(ViewOf(cache, fd, 0, 40000)->data(), old_view->data());  // unchanged: the same mapping
  MakeFile("a", 40000, 9);
  SetModified("a", 2000000);
  auto view = ViewOf(cache, fd, 0, 40000);
  ASSERT_NE(view, nullptr);
  EXPECT_NE(view->data(), old_view->data());  // the old one is still alive, so a new one
  EXPECT_EQ(view->data()[777], static_cast<char>(777 * 7 + 9));
  EXPECT_EQ(cache.files(), 1);
  EXPECT_EQ(cache.bytes(), 40000u);
}

TEST_F(Cache, ATruncatedFilesDamagedMappingIsReplaced) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  MappingCache cache(1 << 30);
  const int fd = MakeFile("a", 8 * page);
  auto view = ViewOf(cache, fd, 0, 8 * page);
  ASSERT_NE(view, nullptr);
  const volatile char* bytes = view->data();
  ASSERT_EQ(truncate(Path("a").c_str(), static_cast<off_t>(2 * page)), 0);
  EXPECT_EQ(bytes[5 * page], 0);  // SIGBUS without the guard
  EXPECT_TRUE(view->damaged());
  // The file grows back to its old size: the size alone would not tell.
  MakeFile("a", 8 * page, 5);
  auto fresh = ViewOf(cache, fd, 0, 8 * page);
  ASSERT_NE(fresh, nullptr);
  EXPECT_FALSE(fresh->damaged());
  EXPECT_EQ(fresh->data()[5 * page], static_cast<char>(5 * page * 7 + 5));
  EXPECT_EQ(cache.files(), 1);
}

TEST_F(Cache, DeletedFilesAreDroppedWhenAFileIsAdded) {
  MappingCache cache(1 << 30);
  ASSERT_NE(ViewOf(cache, MakeFile("a", 30000), 0, 10), nullptr);
  ASSERT_NE(ViewOf(cache, MakeFile("b", 20000), 0, 10), nullptr);
  EXPECT_EQ(cache.files(), 2);
  ASSERT_EQ(unlink(Path("a").c_str()), 0);
  close(fds_.front());  // our descriptor of "a"
  fds_.erase(fds_.begin());
  ASSERT_NE(ViewOf(cache, MakeFile("c", 10000), 0, 10), nullptr);
  EXPECT_EQ(cache.files(), 2);
  EXPECT_EQ(cache.bytes(), 30000u);  // b and c
}

TEST_F(Cache, TheLeastRecentlyUsedGoFirstAndLargeFilesAreNotCached) {
  MappingCache cache(100000, 3);
  const int a = MakeFile("a", 20000), b = MakeFile("b", 20000), c = MakeFile("c", 20000);
  ASSERT_NE(ViewOf(cache, a, 0, 1), nullptr);
  ASSERT_NE(ViewOf(cache, b, 0, 1), nullptr);
  ASSERT_NE(ViewOf(cache, c, 0, 1), nullptr);
  ASSERT_NE(ViewOf(cache, a, 0, 1), nullptr);  // a is now the most recent
  // A fourth file: over max_files, so b goes.
  const int d = MakeFile("d", 20000);
  auto view_d = ViewOf(cache, d, 0, 1);
  ASSERT_NE(view_d, nullptr);
  EXPECT_EQ(cache.files(), 3);
  const char* a_data = ViewOf(cache, a, 0, 1)->data();
  EXPECT_EQ(ViewOf(cache, a, 0, 1)->data(), a_data);  // still the same mapping
  EXPECT_EQ(cache.files(), 3);
  ViewOf(cache, b, 0, 1);  // b comes back; c (now the oldest) goes
  EXPECT_EQ(cache.files(), 3);
  EXPECT_EQ(cache.bytes(), 60000u);
  // Over a quarter of the budget: not cached, the caller maps it.
  EXPECT_EQ(ViewOf(cache, MakeFile("e", 25001), 0, 1), nullptr);
  EXPECT_NE(ViewOf(cache, MakeFile("f", 25000), 0, 1), nullptr);
  // Budget 0: off.
  MappingCache off(0);
  EXPECT_EQ(ViewOf(off, a, 0, 1), nullptr);
}

TEST_F(Cache, PosixFilesMapThroughTheProcesssCache) {
  if (std::getenv("SLUICE_MAPPING_CACHE_BYTES") != nullptr) GTEST_SKIP() << "SLUICE_MAPPING_CACHE_BYTES is set";
  MakeFile("a", 3 << 20, 1);
  auto file = Env::Default()->NewRandomAccessFile(Path("a"));
  ASSERT_TRUE(file.ok());
  auto first = (*file)->Map(1 << 20, 1 << 20);
  ASSERT_TRUE(first.ok()) << first.status();
  const char* at = (*first)->data();
  first->reset();
  auto again = Env::Default()->NewRandomAccessFile(Path("a"));
  ASSERT_TRUE(again.ok());
  auto second = (*again)->Map(1 << 20, 1 << 20);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->data(), at);
  EXPECT_EQ((*second)->data()[12345], static_cast<char>(((1 << 20) + 12345) * 7 + 1));
}

// Env::Default() tells the cache of the files it deletes or replaces, so their
// space is freed then (the cache would otherwise hold them open).
TEST_F(Cache, TheEnvsDeletesAndRenamesDropTheirFiles) {
  if (std::getenv("SLUICE_MAPPING_CACHE_BYTES") != nullptr) GTEST_SKIP() << "SLUICE_MAPPING_CACHE_BYTES is set";
  MappingCache& cache = MappingCache::Default();
  auto map_through_env = [&](const std::string& name) {
    auto file = Env::Default()->NewRandomAccessFile(Path(name));
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Map(0, 10).ok());
  };
  MakeFile("a", 100000);
  map_through_env("a");
  const int files = cache.files();
  const uint64_t bytes = cache.bytes();
  // A view still out when the file goes keeps reading it.
  auto file = Env::Default()->NewRandomAccessFile(Path("a"));
  ASSERT_TRUE(file.ok());
  auto view = (*file)->Map(5000, 100);
  ASSERT_TRUE(view.ok());
  ASSERT_TRUE(Env::Default()->DeleteFile(Path("a")).ok());
  EXPECT_EQ(cache.files(), files - 1);
  EXPECT_EQ(cache.bytes(), bytes - 100000);
  EXPECT_EQ((*view)->data()[99], static_cast<char>(5099 * 7));
  view->reset();

  MakeFile("b", 30000);
  map_through_env("b");
  MakeFile("c", 20000);
  ASSERT_EQ(cache.files(), files);
  ASSERT_TRUE(Env::Default()->RenameFile(Path("c"), Path("b")).ok());
  EXPECT_EQ(cache.files(), files - 1);
  map_through_env("b");
  EXPECT_EQ(cache.files(), files);
  ASSERT_TRUE(Env::Default()->DeleteRecursively(dir_).ok());
  EXPECT_EQ(cache.files(), files - 1);
}

// A RecordReader lets go of its window at the end of the file, so a reader
// kept after its file is done does not keep the file's whole mapping (nor,
// for a deleted file, its space).
TEST_F(Cache, ARecordReaderLetsGoOfItsMappingAtTheEnd) {
  if (std::getenv("SLUICE_MAPPING_CACHE_BYTES") != nullptr) GTEST_SKIP() << "SLUICE_MAPPING_CACHE_BYTES is set";
  {
    auto out = Env::Default()->NewWritableFile(Path("r"));
    ASSERT_TRUE(out.ok());
    RecordWriter writer(out->get());
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(writer.WriteRecord(std::string(1000, static_cast<char>(i))).ok());
    ASSERT_TRUE(writer.Close().ok());
  }
  auto file = Env::Default()->NewRandomAccessFile(Path("r"));
  ASSERT_TRUE(file.ok());
  SequentialRecordReader reader(file->get());
  absl::string_view record;
  int n = 0;
  absl::Status s;
  while ((s = reader.ReadRecord(&record)).ok()) ++n;
  ASSERT_TRUE(absl::IsOutOfRange(s)) << s;
  ASSERT_EQ(n, 500);
  ASSERT_TRUE(reader.mapping());
  auto mapped = [&] {
    auto maps = ReadFileToString(Env::Default(), "/proc/self/maps", 64 << 20);
    EXPECT_TRUE(maps.ok());
    return maps.ok() && absl::StrContains(*maps, Path("r"));
  };
  EXPECT_TRUE(mapped());  // the cache's mapping
  ASSERT_TRUE(Env::Default()->DeleteFile(Path("r")).ok());
  EXPECT_FALSE(mapped());  // and no other
}

// Readers on several threads share the process's cache: every record of three
// files is read, through views of the same mappings, while another thread
// keeps rewriting a fourth file in place, which each of them also maps.
TEST_F(Cache, ReadersOnSeveralThreadsShareTheCache) {
  auto write_records = [&](const std::string& name, int count, char fill) {
    auto out = Env::Default()->NewWritableFile(Path(name));
    ASSERT_TRUE(out.ok());
    RecordWriter writer(out->get());
    for (int i = 0; i < count; ++i) ASSERT_TRUE(writer.WriteRecord(std::string(700 + i % 300, fill)).ok());
    ASSERT_TRUE(writer.Close().ok());
  };
  const std::vector<std::string> names = {"x", "y", "z"};
  for (size_t f = 0; f < names.size(); ++f) write_records(names[f], 3000, static_cast<char>('a' + f));
  write_records("w", 100, 'w');
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int round = 0; !stop.load() && round < 200; ++round) write_records("w", 50 + round % 100, 'w');
  });
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      for (int pass = 0; pass < 3; ++pass) {
        for (size_t f = 0; f < names.size(); ++f) {
          auto file = Env::Default()->NewRandomAccessFile(Path(names[(f + t) % names.size()]));
          if (!file.ok()) {
            ++bad;
            continue;
          }
          SequentialRecordReader reader(file->get());
          absl::string_view record;
          int n = 0;
          absl::Status s;
          while ((s = reader.ReadRecord(&record)).ok()) {
            if (record.size() != static_cast<size_t>(700 + n % 300) ||
                record[0] != static_cast<char>('a' + (f + t) % names.size())) {
              ++bad;
            }
            ++n;
          }
          if (!absl::IsOutOfRange(s) || n != 3000) ++bad;
        }
        // The file being rewritten: any result but a crash (its bytes move
        // under the reader); the cache must not serve a stale size.
        auto file = Env::Default()->NewRandomAccessFile(Path("w"));
        if (file.ok()) {
          SequentialRecordReader reader(file->get());
          absl::string_view record;
          while (reader.ReadRecord(&record).ok()) {
          }
        }
      }
    });
  }
  for (auto& r : readers) r.join();
  stop = true;
  writer.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace sluice
