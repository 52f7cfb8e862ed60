// TFRecord framing: round trips, a known byte layout, and corruption: every
// truncation and every bit flip of a small file is DataLoss (or a clean
// shorter read at record boundaries, or "no more yet" when following), never
// a crash; injected I/O errors and full disks surface with the file name.
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/platform/crc32c.h"
#include "engine/platform/fault_env.h"
#include "engine/platform/record_reader.h"
#include "engine/platform/record_writer.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

// Each test's files live in its own fresh directory, reached through a
// FaultEnv over the real file system.
class Record : public ::testing::Test {
 protected:
  Record()
      : dir_(FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name())),
        env_(Env::Default()) {}
  std::string Path(const std::string& name) const { return JoinPath(dir_, name); }
  void SetContents(const std::string& name, const std::string& data) {
    ASSERT_TRUE(WriteStringToFile(Env::Default(), Path(name), data).ok());
  }
  std::string WriteRecords(const std::string& name, const std::vector<std::string>& records) {
    auto file = env_.NewWritableFile(Path(name));
    EXPECT_TRUE(file.ok());
    RecordWriter writer(file->get());
    for (const std::string& r : records) EXPECT_TRUE(writer.WriteRecord(r).ok());
    EXPECT_TRUE(writer.Close().ok());
    auto contents = ReadFileToString(Env::Default(), Path(name));
    EXPECT_TRUE(contents.ok()) << contents.status();
    return contents.ok() ? *contents : "";
  }
  // Reads until a non-OK status; returns the records and that status. `views`:
  // through ReadRecord(string_view*) (no copy) instead of ReadRecord(string*).
  // `mapped`: the file comes from the POSIX Env, which the reader maps (unless
  // options say otherwise); else from the FaultEnv, whose files are read.
  absl::Status ReadAll(const std::string& name, std::vector<std::string>* out, RecordReaderOptions options = {},
                       bool views = false, bool mapped = false) {
    out->clear();
    auto file = (mapped ? Env::Default() : static_cast<Env*>(&env_))->NewRandomAccessFile(Path(name));
    if (!file.ok()) return file.status();
    SequentialRecordReader reader(file->get(), options);
    while (true) {
      std::string r;
      absl::string_view v;
      absl::Status s = views ? reader.ReadRecord(&v) : reader.ReadRecord(&r);
      // An empty file is read: a size of 0 may not mean empty (/proc's files).
      const bool empty = *Env::Default()->GetFileSize(Path(name)) == 0;
      EXPECT_EQ(reader.mapping(), mapped && options.map_file && !options.follow && !empty) << name;
      if (!s.ok()) return s;
      out->push_back(views ? std::string(v) : r);
    }
  }

  const std::string dir_;
  FaultEnv env_;
};

std::vector<std::string> SmallRecords() { return {"", "a", "hello", std::string(40, 'x'), "end"}; }

TEST_F(Record, RoundTrip) {
  std::vector<std::string> records = SmallRecords();
  std::string big(1 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  records.push_back(big);
  WriteRecords("f", records);
  for (bool mapped : {false, true}) {
    for (bool views : {false, true}) {
      std::vector<std::string> got;
      // Small buffers and windows: records straddle them, and the big one is
      // larger than either.
      RecordReaderOptions options{64 << 20, false, 1024};
      options.map_window_bytes = 4096;
      absl::Status s = ReadAll("f", &got, options, views, mapped);
      EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
      EXPECT_EQ(got, records) << "views " << views << " mapped " << mapped;
    }
  }
}

TEST_F(Record, MappedWindowsGiveTheSameRecordsAsReads) {
  // Records of many sizes across windows of a few pages: every way a frame
  // can lie across a window's end.
  std::vector<std::string> records;
  for (int i = 0; i < 300; ++i) records.push_back(std::string(static_cast<size_t>(i * 37 % 5000), static_cast<char>(i)));
  WriteRecords("f", records);
  for (size_t window : {16, 4096, 3 * 4096 + 5, 64 << 10}) {
    for (bool views : {false, true}) {
      std::vector<std::string> got;
      RecordReaderOptions options;
      options.map_window_bytes = window;
      absl::Status s = ReadAll("f", &got, options, views, /*mapped=*/true);
      EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
      EXPECT_EQ(got, records) << "window " << window << " views " << views;
    }
  }
}

// A POSIX file that counts the reader's calls: Maps, and the Reads it falls
// back to (a record a window showed as bad is read again).
class CountingFile : public RandomAccessFile {
 public:
  explicit CountingFile(std::unique_ptr<RandomAccessFile> file) : file_(std::move(file)) {}
  absl::Status Read(uint64_t offset, size_t n, absl::string_view* result, char* scratch) const override {
    ++reads;
    return file_->Read(offset, n, result, scratch);
  }
  absl::StatusOr<std::unique_ptr<MappedRegion>> Map(uint64_t offset, size_t n) const override {
    ++maps;
    return file_->Map(offset, n);
  }
  const std::string& name() const override { return file_->name(); }
  mutable int reads = 0;
  mutable int maps = 0;

 private:
  std::unique_ptr<RandomAccessFile> file_;
};

TEST_F(Record, AlignedMappedWindowsOfAFileOfSeveralMegabytesGiveTheSameRecordsAsReads) {
  // The default 4 MB windows are widened to 2 MB boundaries of the file (see
  // record_reader.cc); 3000 records of up to 5 KB (about 7.5 MB) cross
  // several of them at every kind of offset. Every record comes from a
  // window: none is read again.
  std::vector<std::string> records;
  for (int i = 0; i < 3000; ++i) {
    std::string r(static_cast<size_t>(i * 2654435761u % 5000), '\0');
    for (size_t k = 0; k < r.size(); ++k) r[k] = static_cast<char>(i * 7 + k);
    records.push_back(std::move(r));
  }
  const std::string contents = WriteRecords("f", records);
  for (bool views : {false, true}) {
    auto posix = Env::Default()->NewRandomAccessFile(Path("f"));
    ASSERT_TRUE(posix.ok());
    CountingFile file(*std::move(posix));
    SequentialRecordReader reader(&file);
    std::vector<std::string> got;
    absl::Status s;
    std::string r;
    absl::string_view v;
    while ((s = views ? reader.ReadRecord(&v) : reader.ReadRecord(&r)).ok()) got.push_back(views ? std::string(v) : r);
    EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
    EXPECT_TRUE(got == records) << "views " << views;
    EXPECT_TRUE(reader.mapping());
    EXPECT_EQ(file.reads, 0) << "records read again after a window showed them as bad";
    // A window holds at least 4 MB of new bytes, less the record that did not fit.
    EXPECT_LE(file.maps, static_cast<int>(contents.size() / (4 << 20)) + 2) << "views " << views;
  }
}

// A file cut while the reader has it mapped reads like the shorter file it now
// is, as when reading: a cut at a record start is the end of the file, a cut
// inside a record is DataLoss naming it. Page-sized records put a cut at a
// record start on a page boundary, so the pages after it are gone from the
// mapping (touching them raises SIGBUS, which the guard turns into zeros); a
// cut 100 bytes into a record leaves that record's first page mapped, with
// zeros after the cut and no SIGBUS.
TEST_F(Record, AFileCutUnderTheMappingReadsLikeTheShorterFile) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<std::string> records;
  for (int i = 0; i < 64; ++i) records.push_back(std::string(page - 16, static_cast<char>('a' + i % 26)));
  for (size_t extra : {size_t{0}, size_t{100}}) {
    for (bool views : {false, true}) {
      SCOPED_TRACE(absl::StrCat("cut ", extra, " bytes into record 10, views ", views));
      WriteRecords("f", records);
      auto file = Env::Default()->NewRandomAccessFile(Path("f"));
      ASSERT_TRUE(file.ok());
      SequentialRecordReader reader(file->get());
      std::string r;
      absl::string_view v;
      ASSERT_TRUE((views ? reader.ReadRecord(&v) : reader.ReadRecord(&r)).ok());
      ASSERT_TRUE(reader.mapping());
      std::vector<std::string> got = {views ? std::string(v) : r};
      // Someone rewrites the file while the reader is in it.
      ASSERT_EQ(truncate(Path("f").c_str(), static_cast<off_t>(10 * page + extra)), 0);
      absl::Status s;
      while ((s = views ? reader.ReadRecord(&v) : reader.ReadRecord(&r)).ok()) {
        got.push_back(views ? std::string(v) : r);
      }
      ASSERT_EQ(got.size(), 10u);
      for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], records[i]) << i;
      if (extra == 0) {
        EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
        // The window lost pages: the reader reads from now on.
        EXPECT_FALSE(reader.mapping());
      } else {
        ASSERT_TRUE(absl::IsDataLoss(s)) << s;
        EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("truncated record at offset ", 10 * page))) << s;
        EXPECT_TRUE(absl::StrContains(s.message(), Path("f"))) << s;
      }
      // Asked again, the same answer.
      absl::Status again = views ? reader.ReadRecord(&v) : reader.ReadRecord(&r);
      EXPECT_EQ(again.code(), s.code()) << again;
    }
  }
}

TEST_F(Record, ByteLayoutMatchesTensorFlow) {
  std::string bytes = WriteRecords("f", {"abc"});
  ASSERT_EQ(bytes.size(), 12u + 3 + 4);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  uint32_t len_crc = 0, data_crc = 0;
  for (int i = 3; i >= 0; --i) len_crc = (len_crc << 8) | static_cast<uint8_t>(bytes[8 + i]);
  for (int i = 3; i >= 0; --i) data_crc = (data_crc << 8) | static_cast<uint8_t>(bytes[15 + i]);
  EXPECT_EQ(len_crc, crc32c::Mask(crc32c::Value(bytes.data(), 8)));
  EXPECT_EQ(data_crc, crc32c::Mask(crc32c::Value("abc")));
  EXPECT_EQ(bytes.substr(12, 3), "abc");
}

std::vector<uint64_t> Boundaries(const std::vector<std::string>& records) {
  std::vector<uint64_t> b = {0};
  for (const auto& r : records) b.push_back(b.back() + 16 + r.size());
  return b;
}

TEST_F(Record, EveryTruncationIsDataLossOrACleanShorterRead) {
  const std::vector<std::string> records = SmallRecords();
  const std::string full = WriteRecords("f", records);
  const std::vector<uint64_t> bounds = Boundaries(records);
  for (size_t cut = 0; cut < full.size(); ++cut) {
    SetContents("t", full.substr(0, cut));
    for (bool mapped : {false, true}) {
      std::vector<std::string> got;
      absl::Status s = ReadAll("t", &got, {}, false, mapped);
      size_t complete = 0;
      while (complete + 1 < bounds.size() && bounds[complete + 1] <= cut) ++complete;
      ASSERT_EQ(got.size(), complete) << "cut " << cut << " mapped " << mapped;
      for (size_t i = 0; i < complete; ++i) EXPECT_EQ(got[i], records[i]);
      if (bounds[complete] == cut) {
        EXPECT_TRUE(absl::IsOutOfRange(s)) << "cut " << cut << ": " << s;
      } else {
        EXPECT_TRUE(absl::IsDataLoss(s)) << "cut " << cut << ": " << s;
        EXPECT_TRUE(absl::StrContains(s.message(), Path("t"))) << s;
        EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("offset ", bounds[complete]))) << s;
      }
    }
  }
}

TEST_F(Record, FollowingTreatsATruncatedTailAsNoMoreYetAndResumes) {
  const std::vector<std::string> records = SmallRecords();
  const std::string full = WriteRecords("f", records);
  for (size_t cut = 0; cut < full.size(); ++cut) {
    SetContents("t", full.substr(0, cut));
    auto file = env_.NewRandomAccessFile(Path("t"));
    ASSERT_TRUE(file.ok());
    RecordReaderOptions options;
    options.follow = true;
    SequentialRecordReader reader(file->get(), options);
    std::vector<std::string> got;
    std::string r;
    absl::Status s;
    while ((s = reader.ReadRecord(&r)).ok()) got.push_back(r);
    ASSERT_TRUE(absl::IsOutOfRange(s)) << "cut " << cut << ": " << s;
    // The writer finishes the file: the same reader continues where it was.
    SetContents("t", full);
    while ((s = reader.ReadRecord(&r)).ok()) got.push_back(r);
    EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
    EXPECT_EQ(got, records) << "cut " << cut;
  }
}

TEST_F(Record, EveryBitFlipIsDataLoss) {
  const std::vector<std::string> records = SmallRecords();
  const std::string full = WriteRecords("f", records);
  const std::vector<uint64_t> bounds = Boundaries(records);
  for (bool follow : {false, true}) {
    for (bool views : {false, true}) {
      for (bool mapped : {false, true}) {  // a following reader reads even a mappable file
      for (size_t byte = 0; byte < full.size(); ++byte) {
        for (int bit = 0; bit < 8; ++bit) {
          std::string bad = full;
          bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
          SetContents("c", bad);
          std::vector<std::string> got;
          RecordReaderOptions options;
          options.follow = follow;
          absl::Status s = ReadAll("c", &got, options, views, mapped);
          ASSERT_TRUE(absl::IsDataLoss(s)) << "byte " << byte << " bit " << bit << " views " << views << ": " << s;
          size_t hit = 0;  // the record holding the flipped byte
          while (bounds[hit + 1] <= byte) ++hit;
          EXPECT_EQ(got.size(), hit);
          EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("offset ", bounds[hit]))) << s;
        }
      }
      }
    }
  }
}

TEST_F(Record, OversizedRecordIsRefusedBeforeAllocation) {
  WriteRecords("f", {std::string(1000, 'z')});
  std::vector<std::string> got;
  RecordReaderOptions options;
  options.max_record_bytes = 999;
  absl::Status s = ReadAll("f", &got, options);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "1000 bytes")) << s;
}

TEST_F(Record, ReadErrorsSurfaceWithTheFileName) {
  WriteRecords("f", SmallRecords());
  env_.InjectReadError(Path("f"), 20);
  std::vector<std::string> got;
  absl::Status s = ReadAll("f", &got, RecordReaderOptions{64 << 20, false, 16});
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), Path("f"))) << s;
  EXPECT_EQ(got.size(), 1u);  // the first record (bytes 0..15) was fine
}

TEST_F(Record, AFullDiskFailsTheWriteAndTheReaderSeesATruncatedRecord) {
  auto file = env_.NewWritableFile(Path("f"));
  ASSERT_TRUE(file.ok());
  RecordWriter writer(file->get());
  ASSERT_TRUE(writer.WriteRecord("first").ok());
  env_.SetWriteBudget(10);
  absl::Status s = writer.WriteRecord("second record");
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(absl::IsResourceExhausted(writer.WriteRecord("third"))) << "the error sticks";
  std::vector<std::string> got;
  s = ReadAll("f", &got);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_EQ(got, std::vector<std::string>{"first"});
}

}  // namespace
}  // namespace sluice
