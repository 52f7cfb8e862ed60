// MappedRegion and its SIGBUS guard: a region shows the file's bytes; a file
// truncated under a region reads as zeros and marks it damaged instead of
// ending the process; a SIGBUS that is not in a region still ends the process
// (or reaches the handler installed before the guard); when the registry is
// full, Create says so and the record reader reads instead; a region asks
// for huge pages.
#include "engine/platform/mapped_region.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "engine/platform/env.h"
#include "engine/platform/mapping_cache.h"
#include "engine/platform/record_reader.h"
#include "engine/platform/record_writer.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

class Mapped : public ::testing::Test {
 protected:
  Mapped() : dir_(FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name())) {}
  // A file of `n` bytes, byte i = i * 7 mod 256; returns its descriptor.
  int MakeFile(const std::string& name, size_t n) {
    std::string data(n, '\0');
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<char>(i * 7);
    path_ = JoinPath(dir_, name);
    EXPECT_TRUE(WriteStringToFile(Env::Default(), path_, data).ok());
    const int fd = open(path_.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    return fd;
  }
  const std::string dir_;
  std::string path_;
};

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

TEST_F(Mapped, ShowsTheFileBytesAtAnUnalignedOffset) {
  const int fd = MakeFile("f", 5 * kPage);
  auto region = MappedRegion::Create(fd, kPage + 123, 2 * kPage, "f");
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_EQ((*region)->size(), 2 * kPage);
  for (size_t i = 0; i < 2 * kPage; ++i) {
    ASSERT_EQ((*region)->data()[i], static_cast<char>((kPage + 123 + i) * 7)) << i;
  }
  EXPECT_FALSE((*region)->damaged());
  auto empty = MappedRegion::Create(fd, 0, 0, "f");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->size(), 0u);
  close(fd);
}

// The VmFlags line of the mapping that holds `addr` in /proc/self/smaps ("" if
// none is found).
std::string VmFlagsOf(const void* addr) {
  auto smaps = ReadFileToString(Env::Default(), "/proc/self/smaps", 64 << 20);
  if (!smaps.ok()) return "";
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  bool inside = false;
  for (absl::string_view line : absl::StrSplit(*smaps, '\n')) {
    // A mapping's first line is "lo-hi perms offset dev inode path" (hex
    // addresses); its fields follow as "Name: value" lines.
    const std::pair<absl::string_view, absl::string_view> range =
        absl::StrSplit(line.substr(0, line.find(' ')), absl::MaxSplits('-', 1));
    uintptr_t lo = 0, hi = 0;
    if (absl::SimpleHexAtoi(range.first, &lo) && absl::SimpleHexAtoi(range.second, &hi)) {
      inside = a >= lo && a < hi;
    } else if (inside && absl::StartsWith(line, "VmFlags:")) {
      return std::string(line);
    }
  }
  return "";
}

// A region asks for huge pages, so that parts of the file not yet cached are
// read in 2 MB folios that the mapping (and later ones) take as huge pages
// (mapped_region.cc). The kernel's choices of folios are not this test's
// business; the request is: smaps shows it as the flag "hg".
TEST_F(Mapped, ARegionAsksForHugePages) {
  auto thp = ReadFileToString(Env::Default(), "/sys/kernel/mm/transparent_hugepage/enabled", 4096);
  if (!thp.ok() || absl::StrContains(*thp, "[never]")) {
    GTEST_SKIP() << "transparent huge pages are off in this kernel: MADV_HUGEPAGE is refused";
  }
  const int fd = MakeFile("f", 4 << 20);
  auto region = MappedRegion::Create(fd, 0, 4 << 20, "f");
  ASSERT_TRUE(region.ok()) << region.status();
  const std::string flags = VmFlagsOf((*region)->data());
  ASSERT_FALSE(flags.empty()) << "no mapping found in /proc/self/smaps";
  EXPECT_TRUE(absl::StrContains(flags, " hg")) << flags;
  region->reset();
  close(fd);
}

TEST_F(Mapped, PosixFilesMapUpToTheirEnd) {
  close(MakeFile("f", 3 * kPage + 10));
  auto file = Env::Default()->NewRandomAccessFile(path_);
  ASSERT_TRUE(file.ok());
  auto tail = (*file)->Map(3 * kPage, 1 << 20);
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ((*tail)->size(), 10u);
  EXPECT_EQ((*tail)->data()[9], static_cast<char>((3 * kPage + 9) * 7));
  auto past = (*file)->Map(4 * kPage, 100);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ((*past)->size(), 0u);
}

TEST_F(Mapped, ATruncatedFileReadsAsZerosAndMarksTheRegionDamaged) {
  const int fd = MakeFile("f", 4 * kPage);
  auto region = MappedRegion::Create(fd, 0, 4 * kPage, "f");
  ASSERT_TRUE(region.ok());
  const volatile char* bytes = (*region)->data();
  EXPECT_EQ(bytes[kPage + 1], static_cast<char>((kPage + 1) * 7));
  ASSERT_EQ(truncate(path_.c_str(), static_cast<off_t>(kPage)), 0);
  // The first page is still in the file; pages 1-3 are gone.
  EXPECT_EQ(bytes[5], static_cast<char>(5 * 7));
  EXPECT_FALSE((*region)->damaged());
  EXPECT_EQ(bytes[2 * kPage + 3], 0);  // SIGBUS without the guard
  EXPECT_TRUE((*region)->damaged());
  // Page 1, behind the first fault, faults in turn and reads zeros too.
  EXPECT_EQ(bytes[kPage + 1], 0);
  close(fd);
}

// The same with a file of several MB that the region's faults read from disk:
// on kernels with large folios in the page cache (6.16+ ext4) they read it in
// 2 MB folios (the region asks for huge pages), mapped as huge pages, and the
// cut falls inside one of them.
TEST_F(Mapped, AFileCutInsideAHugePageReadsAsZerosAfterTheCut) {
  const size_t mb = 1 << 20;
  const int fd = MakeFile("f", 8 * mb);
  // Out of the page cache (written back first: dirty pages are not dropped),
  // so that the region's faults read it back.
  ASSERT_EQ(fdatasync(fd), 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  auto region = MappedRegion::Create(fd, 0, 8 * mb, "f");
  ASSERT_TRUE(region.ok()) << region.status();
  const volatile char* bytes = (*region)->data();
  for (size_t at = 0; at < 8 * mb; at += kPage) ASSERT_EQ(bytes[at], static_cast<char>(at * 7)) << at;
  const size_t cut = 3 * mb + 100;
  ASSERT_EQ(truncate(path_.c_str(), static_cast<off_t>(cut)), 0);
  EXPECT_EQ(bytes[3 * mb + 50], static_cast<char>((3 * mb + 50) * 7));  // before the cut
  EXPECT_EQ(bytes[3 * mb + 200], 0);  // the cut page's tail: zeros, no fault
  EXPECT_EQ(bytes[3 * mb + kPage + 1], 0);  // past the file's last page
  EXPECT_TRUE((*region)->damaged());
  EXPECT_EQ(bytes[7 * mb], 0);
  EXPECT_EQ(bytes[2 * mb + 7], static_cast<char>((2 * mb + 7) * 7));  // the cut folio's start
  close(fd);
}

// Maps `path` with a plain mmap (no region), empties the file and touches the
// mapping: a SIGBUS outside every region.
void FaultOutsideAnyRegion(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR);
  const volatile char* m =
      static_cast<const volatile char*>(mmap(nullptr, 2 * kPage, PROT_READ, MAP_SHARED, fd, 0));
  if (m == MAP_FAILED || ftruncate(fd, 0) != 0) _exit(3);
  (void)m[kPage];
  _exit(4);  // not reached: the SIGBUS ends the process first
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(SLUICE_TSAN)
#define SLUICE_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SLUICE_UNDER_SANITIZER 1
#endif
#endif

// The process ended on the SIGBUS: killed by it, or under a sanitizer (whose
// SIGBUS handler came before the guard and is passed the signal) with its
// report and its error exit code (not FaultOutsideAnyRegion's 3 or 4).
bool EndedBySigbus(int status) {
#ifdef SLUICE_UNDER_SANITIZER
  if (WIFEXITED(status)) return WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3 && WEXITSTATUS(status) != 4;
#endif
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
}

TEST_F(Mapped, ASigbusOutsideEveryRegionStillEndsTheProcess) {
  const int fd = MakeFile("f", 4 * kPage);
  close(MakeFile("g", 4 * kPage));
  auto region = MappedRegion::Create(fd, 0, kPage, "f");  // the guard is installed
  ASSERT_TRUE(region.ok());
  EXPECT_EXIT(FaultOutsideAnyRegion(path_), EndedBySigbus, "");
  EXPECT_EXIT(raise(SIGBUS), EndedBySigbus, "");
  close(fd);
}

// Set just before the fault outside every region: a SIGBUS that reaches the
// earlier handler before then (the guard failed on a fault in a region) exits
// with 43 instead.
volatile sig_atomic_t g_foreign_fault_next = 0;
void ExitWith42(int, siginfo_t*, void*) { _exit(g_foreign_fault_next ? 42 : 43); }

TEST_F(Mapped, ASigbusOutsideEveryRegionReachesTheHandlerInstalledBefore) {
  // "threadsafe": the child runs this test from a fresh start, so the guard
  // is installed after the handler below, not inherited from this process.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  close(MakeFile("g", 4 * kPage));
  const std::string foreign = path_;
  const int fd = MakeFile("f", 4 * kPage);
  EXPECT_EXIT(
      {
        struct sigaction action = {};
        action.sa_sigaction = ExitWith42;
        action.sa_flags = SA_SIGINFO;
        sigaction(SIGBUS, &action, nullptr);
        auto region = MappedRegion::Create(fd, 0, 4 * kPage, "f");
        if (!region.ok()) _exit(2);
        // A truncation under the region is still the guard's: no exit here.
        if (truncate(path_.c_str(), 0) != 0 || (*region)->data()[kPage] != 0 || !(*region)->damaged()) _exit(5);
        g_foreign_fault_next = 1;
        FaultOutsideAnyRegion(foreign);
      },
      ::testing::ExitedWithCode(42), "");
  close(fd);
}

TEST_F(Mapped, WhenTheRegistryIsFullTheRecordReaderReads) {
  const int fd = MakeFile("f", kPage);
  // Regions until the registry is full: kMaxMappedRegions, less those the
  // process's MappingCache holds for files that earlier tests read.
  std::vector<std::unique_ptr<MappedRegion>> held;
  absl::StatusOr<std::unique_ptr<MappedRegion>> one_more;
  while ((one_more = MappedRegion::Create(fd, 0, kPage, "f")).ok()) {
    held.push_back(*std::move(one_more));
    ASSERT_LE(held.size(), static_cast<size_t>(kMaxMappedRegions));
  }
  ASSERT_TRUE(absl::IsResourceExhausted(one_more.status())) << one_more.status();
  EXPECT_EQ(held.size(), static_cast<size_t>(kMaxMappedRegions - MappingCache::Default().files()));

  const std::string records_path = JoinPath(dir_, "records");
  {
    auto out = Env::Default()->NewWritableFile(records_path);
    ASSERT_TRUE(out.ok());
    RecordWriter writer(out->get());
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(writer.WriteRecord(std::string(static_cast<size_t>(i), 'r')).ok());
    ASSERT_TRUE(writer.Close().ok());
  }
  auto file = Env::Default()->NewRandomAccessFile(records_path);
  ASSERT_TRUE(file.ok());
  SequentialRecordReader reader(file->get());
  std::string r;
  int n = 0;
  absl::Status s;
  while ((s = reader.ReadRecord(&r)).ok()) {
    EXPECT_EQ(r, std::string(static_cast<size_t>(n), 'r'));
    ++n;
  }
  EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
  EXPECT_EQ(n, 100);
  EXPECT_FALSE(reader.mapping());

  held.pop_back();
  EXPECT_TRUE(MappedRegion::Create(fd, 0, kPage, "f").ok());
  close(fd);
}

}  // namespace
}  // namespace sluice
