// Corruption sweep over a small checkpoint: every file truncated at (up to)
// 64 offsets and bit-flipped at (up to) 64 positions. Each time: reading any
// tensor either returns the exact saved value or a DataLoss naming the
// checkpoint; full verification fails; the latest-valid lookup falls back to
// the previous checkpoint; and nothing crashes (run it under --config=asan).
//
// Then crafted-but-consistent checkpoints, which no checksum catches (valid
// CRCs over lying contents): a slice whose stored shape is not its spec's,
// duplicate and overlapping slices, element counts the bytes cannot hold,
// FILES paths that leave the directory, FIFOs, symlinks. Each ends in a
// DataLoss naming the file (and the tensor), without blocking and without an
// allocation larger than the bytes on disk.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/checkpoint_writer.h"
#include "engine/platform/crc32c.h"
#include "checkpoint/rocksdb_util.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"

namespace sluice {
namespace checkpoint {
namespace {

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
    run_dir_ = FreshTestDir("corruption_run");
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
    const std::string original = *ReadFileToString(Env::Default(), file);
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

// ---------------------------------------------------------------------------
// Crafted-but-consistent checkpoints.

// Rewrites dir/FILES as `lines` plus a valid CRC trailer.
void WriteFilesLines(const std::string& dir, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) absl::StrAppend(&text, l, "\n");
  absl::StrAppendFormat(&text, "crc32c %08x\n", crc32c::Value(text));
  WriteRaw(JoinPath(dir, kFilesName), text);
}

// The lines of dir/FILES without the trailer.
std::vector<std::string> FilesLines(const std::string& dir) {
  std::vector<std::string> lines = absl::StrSplit(*ReadFileToString(Env::Default(), JoinPath(dir, kFilesName)), '\n',
                                                  absl::SkipEmpty());
  lines.pop_back();
  return lines;
}

// One entry of a crafted store: `entry` says what the manifest claims (key,
// dtype, shapes, slice); `bytes` is what the store holds. Unless keep_sizes,
// num_bytes and num_chunks are set from `bytes`; the CRCs always are.
struct Crafted {
  TensorEntry entry;
  std::string bytes;
  bool keep_sizes = false;
};

Crafted Entry(const std::string& key, DataType dtype, std::vector<int64_t> shape, std::string bytes,
              const std::string& full_name = "", std::vector<int64_t> full_shape = {},
              const std::string& slice_spec = "") {
  Crafted c;
  c.entry.set_key(key);
  c.entry.set_dtype(dtype);
  TensorShape(shape).AsProto(c.entry.mutable_shape());
  c.entry.set_full_name(full_name.empty() ? key : full_name);
  TensorShape(full_shape.empty() && slice_spec.empty() ? shape : full_shape).AsProto(c.entry.mutable_full_shape());
  c.entry.set_slice_spec(slice_spec);
  c.bytes = std::move(bytes);
  return c;
}

std::string Floats(std::vector<float> v) { return std::string(reinterpret_cast<const char*>(v.data()), 4 * v.size()); }

// Writes a one-shard checkpoint at `dir` whose store holds exactly `tensors`
// (in the given manifest order): chunks, headers with correct chunk CRCs, the
// manifest, and a correct FILES inventory. Every checksum verifies.
void WriteCraftedCheckpoint(const std::string& dir, std::vector<Crafted> tensors, uint64_t chunk_bytes = 64) {
  ASSERT_TRUE(Env::Default()->CreateDirs(dir).ok());
  const std::string store = JoinPath(dir, ShardDirName(0, 1));
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(StoreOptions(/*write=*/true), store, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  CheckpointManifest m;
  m.set_format(kFormatName);
  m.set_step(7);
  m.set_num_shards(1);
  m.set_shard_index(0);
  m.set_chunk_bytes(chunk_bytes);
  for (Crafted& c : tensors) {
    TensorEntry& e = c.entry;
    const uint64_t n = c.bytes.size();
    if (!c.keep_sizes) {
      e.set_num_bytes(n);
      e.set_num_chunks(n == 0 ? 0 : (n - 1) / chunk_bytes + 1);
    }
    TensorEntry header = e;
    uint32_t whole = 0;
    for (uint64_t off = 0, i = 0; off < n; off += chunk_bytes, ++i) {
      const uint64_t len = std::min(chunk_bytes, n - off);
      const uint32_t crc = crc32c::Value(c.bytes.data() + off, len);
      header.add_chunk_crc32c(crc);
      whole = i == 0 ? crc : crc32c::Combine(whole, crc, len);
      ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), ChunkKey(e.key(), i), rocksdb::Slice(c.bytes.data() + off, len)).ok());
    }
    while (header.chunk_crc32c_size() < static_cast<int>(e.num_chunks())) header.add_chunk_crc32c(0);
    e.set_crc32c(whole);
    header.set_crc32c(whole);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), HeaderKey(e.key()), header.SerializeAsString()).ok());
    *m.add_tensors() = e;
  }
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), kManifestKey, m.SerializeAsString()).ok());
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());  // into an SST: read-only opens see it
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  ASSERT_TRUE(WriteFilesInventory(Env::Default(), dir).ok());
}

// `status` is a DataLoss whose message holds every one of `parts`.
void ExpectDataLoss(const absl::Status& status, const std::vector<std::string>& parts) {
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  for (const std::string& p : parts) EXPECT_TRUE(absl::StrContains(status.message(), p)) << status << "\nmissing: " << p;
}

// A crafted checkpoint fails to open and to verify, naming the store and `parts`.
void ExpectRefused(const std::string& dir, const std::vector<std::string>& parts) {
  std::vector<std::string> with_store = parts;
  with_store.push_back(JoinPath(dir, ShardDirName(0, 1)));
  ExpectDataLoss(CheckpointReader::Open(dir).status(), with_store);
  ExpectDataLoss(VerifyCheckpoint(Env::Default(), dir, VerifyLevel::kOpen), with_store);
  ExpectDataLoss(VerifyCheckpoint(Env::Default(), dir, VerifyLevel::kFull), with_store);
}

TEST(CraftedCheckpoint, ConsistentCraftedStoreReadsBack) {
  // The helper itself writes checkpoints that read back: the tests below
  // fail for what they change, not for how the store was built.
  const std::string dir = FreshTestDir("crafted_ok");
  WriteCraftedCheckpoint(dir, {Entry("w@0,2", DT_FLOAT, {2}, Floats({1, 2}), "w", {4}, "0,2"),
                               Entry("w@2,2", DT_FLOAT, {2}, Floats({3, 4}), "w", {4}, "2,2")});
  auto reader = CheckpointReader::Open(dir);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->VerifyAll().ok());
  auto w = (*reader)->ReadSlice("w", TensorShape({4}), TensorSlice::Full(1));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->DebugString(10), Tensor::FromVector<float>({1, 2, 3, 4}).DebugString(10));
}

// Class: a slice's stored shape vs its spec. The copy would read 16 KB from
// a 4-byte value.
TEST(CraftedCheckpoint, SliceShapeThatIsNotItsSpecsIsRefused) {
  const std::string dir = FreshTestDir("crafted_slice_shape");
  WriteCraftedCheckpoint(dir, {Entry("w@0,4096", DT_FLOAT, {1}, Floats({1}), "w", {4096}, "0,4096")});
  ExpectRefused(dir, {"tensor 'w@0,4096'", "does not match its slice '0,4096'"});
}

TEST(CraftedCheckpoint, WholeTensorSmallerThanItsFullShapeIsRefused) {
  const std::string dir = FreshTestDir("crafted_whole_shape");
  WriteCraftedCheckpoint(dir, {Entry("v", DT_FLOAT, {1}, Floats({1}), "v", {4096})});
  ExpectRefused(dir, {"tensor 'v'", "differs from the full shape [4096]"});
}

TEST(CraftedCheckpoint, NonCanonicalSliceKeyIsRefused) {
  // "w@00,2" and "w@0,2" would be two keys for one slice.
  const std::string dir = FreshTestDir("crafted_key");
  WriteCraftedCheckpoint(dir, {Entry("w@00,2", DT_FLOAT, {2}, Floats({1, 2}), "w", {4}, "00,2")});
  ExpectRefused(dir, {"tensor 'w@00,2'", "canonical"});
}

// Class: duplicate slices counted twice toward "covered".
TEST(CraftedCheckpoint, DuplicateSliceIsRefused) {
  const std::string dir = FreshTestDir("crafted_duplicate");
  WriteCraftedCheckpoint(dir, {Entry("w@0,2", DT_FLOAT, {2}, Floats({1, 2}), "w", {4}, "0,2"),
                               Entry("w@0,2", DT_FLOAT, {2}, Floats({1, 2}), "w", {4}, "0,2")});
  ExpectRefused(dir, {"tensor 'w@0,2'", "listed twice"});
}

TEST(CraftedCheckpoint, OverlappingSlicesAreRefused) {
  // 0,2 and 1,2 of [4] add up to 4 elements but leave element 3 unwritten.
  const std::string dir = FreshTestDir("crafted_overlap");
  WriteCraftedCheckpoint(dir, {Entry("w@0,2", DT_FLOAT, {2}, Floats({1, 2}), "w", {4}, "0,2"),
                               Entry("w@1,2", DT_FLOAT, {2}, Floats({2, 3}), "w", {4}, "1,2")});
  ExpectRefused(dir, {"slices '0,2' and '1,2' of 'w' overlap"});
  // "-" and "0,4" are different keys for the same rows.
  const std::string dir2 = FreshTestDir("crafted_overlap_all");
  WriteCraftedCheckpoint(dir2, {Entry("m@-:0,1", DT_FLOAT, {2, 1}, Floats({1, 2}), "m", {2, 2}, "-:0,1"),
                                Entry("m@0,2:0,1", DT_FLOAT, {2, 1}, Floats({1, 2}), "m", {2, 2}, "0,2:0,1")});
  ExpectRefused(dir2, {"of 'm' overlap"});
  // Disjoint in dim 0 but overlapping in dim 1 of a grid.
  const std::string dir3 = FreshTestDir("crafted_overlap_grid");
  WriteCraftedCheckpoint(dir3, {Entry("g@0,1:0,2", DT_FLOAT, {1, 2}, Floats({1, 2}), "g", {2, 3}, "0,1:0,2"),
                                Entry("g@0,1:2,1", DT_FLOAT, {1, 1}, Floats({3}), "g", {2, 3}, "0,1:2,1"),
                                Entry("g@1,1:0,2", DT_FLOAT, {1, 2}, Floats({4, 5}), "g", {2, 3}, "1,1:0,2"),
                                Entry("g@1,1:1,2", DT_FLOAT, {1, 2}, Floats({5, 6}), "g", {2, 3}, "1,1:1,2")});
  ExpectRefused(dir3, {"slices '1,1:0,2' and '1,1:1,2' of 'g' overlap"});
}

TEST(CraftedCheckpoint, VariableStoredWholeAndSlicedIsRefused) {
  const std::string dir = FreshTestDir("crafted_whole_and_slice");
  WriteCraftedCheckpoint(dir, {Entry("w", DT_FLOAT, {4}, Floats({1, 2, 3, 4})),
                               Entry("w@0,2", DT_FLOAT, {2}, Floats({1, 2}), "w", {4}, "0,2")});
  ExpectRefused(dir, {"'w' is stored both whole and in slices"});
}

TEST(CraftedCheckpoint, SlicesThatDisagreeOnTheFullShapeAreRefused) {
  const std::string dir = FreshTestDir("crafted_full_shapes");
  WriteCraftedCheckpoint(dir, {Entry("w@0,2", DT_FLOAT, {2}, Floats({1, 2}), "w", {4}, "0,2"),
                               Entry("w@2,2", DT_FLOAT, {2}, Floats({3, 4}), "w", {5}, "2,2")});
  ExpectRefused(dir, {"slices '0,2' and '2,2' of 'w' disagree"});
}

TEST(CraftedCheckpoint, PartialSlicesCoverOnlyWhatTheyHold) {
  // Disjoint slices that leave a gap: the coverage count is exact.
  const std::string dir = FreshTestDir("crafted_gap");
  WriteCraftedCheckpoint(dir, {Entry("w@0,1", DT_FLOAT, {1}, Floats({1}), "w", {4}, "0,1"),
                               Entry("w@2,2", DT_FLOAT, {2}, Floats({3, 4}), "w", {4}, "2,2")});
  auto reader = CheckpointReader::Open(dir);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto w = (*reader)->ReadSlice("w", TensorShape({4}), TensorSlice::Full(1));
  EXPECT_EQ(w.status().code(), absl::StatusCode::kNotFound) << w.status();
  EXPECT_TRUE(absl::StrContains(w.status().message(), "cover 3 of the 4")) << w.status();
  auto tail = (*reader)->ReadSlice("w", TensorShape({4}), *ParseSliceSpec("2,2", TensorShape({4})));
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(tail->DebugString(10), Tensor::FromVector<float>({3, 4}).DebugString(10));
}

// Class: a string tensor's element count vs its bytes. 2^28 strings would be
// allocated (and constructed) for two bytes.
TEST(CraftedCheckpoint, StringElementCountBeyondItsBytesIsRefused) {
  const std::string dir = FreshTestDir("crafted_strings");
  WriteCraftedCheckpoint(dir, {Entry("vocab", DT_STRING, {int64_t{1} << 28}, std::string("\x01" "a", 2))});
  ExpectRefused(dir, {"tensor 'vocab'", "268435456 elements) in only 2 bytes"});
}

TEST(CraftedCheckpoint, TensorBytesBeyondTheStoreAreRefusedBeforeAllocating) {
  // A 1 GiB tensor whose chunks are not there: refused at open, not after a
  // 1 GiB allocation and a missing chunk.
  const std::string dir = FreshTestDir("crafted_bytes");
  Crafted big = Entry("big", DT_FLOAT, {int64_t{1} << 28}, Floats({1, 2}));
  big.keep_sizes = true;
  big.entry.set_num_bytes(uint64_t{1} << 30);
  big.entry.set_num_chunks(64);
  WriteCraftedCheckpoint(dir, {big}, /*chunk_bytes=*/16 << 20);
  ExpectRefused(dir, {"claim 1073741824 bytes but its SST files hold only"});
}

// Class: FILES paths outside the checkpoint, FIFOs, symlinks, whole reads.
TEST_F(CorruptionTest, FilesPathLeavingTheCheckpointIsRefused) {
  std::string escape;
  for (int i = 0; i < 64; ++i) escape += "../";  // from any depth up to /
  for (const std::string& path : {escape + "dev/zero", std::string("/dev/zero"), std::string("shard-00000-of-00001/../FILES"),
                                  std::string("./FILES"), std::string("shard-00000-of-00001//CURRENT")}) {
    SCOPED_TRACE(path);
    std::vector<std::string> lines = FilesLines(target_);
    const std::vector<std::string> original = lines;
    lines.push_back(path + " 0 00000000");
    WriteFilesLines(target_, lines);
    ExpectDataLoss(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kOpen),
                   {JoinPath(target_, "FILES"), "leaves the checkpoint directory", path});
    WriteFilesLines(target_, original);
  }
  EXPECT_TRUE(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kFull).ok());
}

TEST_F(CorruptionTest, FifoInTheCheckpointIsRefusedWithoutBlocking) {
  const std::string fifo = JoinPath(target_, "shard-00000-of-00001/fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::vector<std::string> lines = FilesLines(target_);
  lines.push_back("shard-00000-of-00001/fifo 0 00000000");
  WriteFilesLines(target_, lines);
  ExpectDataLoss(CheckpointReader::Open(target_).status(), {fifo, "not a regular file"});
  ExpectDataLoss(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kFull), {fifo, "not a regular file"});
  auto found = FindLatestValidCheckpoint(Env::Default(), run_dir_, VerifyLevel::kOpen);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->step, 1);
  // A FIFO in place of a file RocksDB opens (CURRENT) is refused before
  // RocksDB waits on it.
  ::unlink(fifo.c_str());
  const std::string current = JoinPath(target_, "shard-00000-of-00001/CURRENT");
  ASSERT_EQ(::unlink(current.c_str()), 0);
  ASSERT_EQ(::mkfifo(current.c_str(), 0644), 0);
  ExpectDataLoss(CheckpointReader::Open(target_).status(), {current, "not a regular file"});
}

TEST_F(CorruptionTest, FifoAsTheStateFileDoesNotBlockTheLookup) {
  const std::string state = JoinPath(CheckpointsDir(run_dir_), kStateFileName);
  ASSERT_EQ(::unlink(state.c_str()), 0);
  ASSERT_EQ(::mkfifo(state.c_str(), 0644), 0);
  EXPECT_FALSE(ReadCheckpointState(Env::Default(), CheckpointsDir(run_dir_)).ok());
  auto found = FindLatestValidCheckpoint(Env::Default(), run_dir_, VerifyLevel::kOpen);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->step, 2);  // by scanning the directories
}

TEST_F(CorruptionTest, SymlinksInTheCheckpointAreRefused) {
  // CURRENT replaced by a symlink to an identical copy outside: every size
  // and CRC still matches.
  const std::string current = JoinPath(target_, "shard-00000-of-00001/CURRENT");
  const std::string outside = JoinPath(run_dir_, "CURRENT.copy");
  WriteRaw(outside, *ReadFileToString(Env::Default(), current));
  ASSERT_EQ(::unlink(current.c_str()), 0);
  ASSERT_EQ(::symlink(outside.c_str(), current.c_str()), 0);
  ExpectDataLoss(CheckpointReader::Open(target_).status(), {current, "symlink"});
  ExpectDataLoss(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kFull), {current, "symlink"});
  ASSERT_EQ(::unlink(current.c_str()), 0);
  ASSERT_EQ(::rename(outside.c_str(), current.c_str()), 0);
  ASSERT_TRUE(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kFull).ok());
  // The whole store moved out and linked back in.
  const std::string store = JoinPath(target_, "shard-00000-of-00001");
  const std::string moved = JoinPath(run_dir_, "store.moved");
  ASSERT_EQ(::rename(store.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::symlink(moved.c_str(), store.c_str()), 0);
  ExpectDataLoss(CheckpointReader::Open(target_).status(), {store, "symlink"});
  auto found = FindLatestValidCheckpoint(Env::Default(), run_dir_, VerifyLevel::kFull);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->step, 1);
}

TEST_F(CorruptionTest, FilesMustListExactlyTheCheckpointsSmallFiles) {
  const std::vector<std::string> original = FilesLines(target_);
  // A file FILES does not list.
  const std::string stray = JoinPath(target_, "shard-00000-of-00001/stray");
  WriteRaw(stray, "x");
  ExpectDataLoss(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kOpen), {stray, "not listed"});
  // Listed with a CRC although over 1 MiB: never read whole into memory.
  const std::string big(kInventoryCrcMaxBytes + 1, 'b');
  WriteRaw(stray, big);
  std::vector<std::string> lines = original;
  lines.push_back(absl::StrFormat("shard-00000-of-00001/stray %d %08x", big.size(), crc32c::Value(big)));
  WriteFilesLines(target_, lines);
  ExpectDataLoss(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kOpen),
                 {JoinPath(target_, "FILES"), "a CRC for a file over"});
  // Listed twice.
  ::unlink(stray.c_str());
  lines = original;
  lines.push_back(original.front());
  WriteFilesLines(target_, lines);
  ExpectDataLoss(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kOpen), {"listed twice"});
  WriteFilesLines(target_, original);
  EXPECT_TRUE(VerifyCheckpoint(Env::Default(), target_, VerifyLevel::kFull).ok());
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
