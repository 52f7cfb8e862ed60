// TensorFlow V2 checkpoints (tensor bundles): a bundle TensorFlow 2.21 wrote
// reads back with its values; ours round-trips every supported dtype; the
// LevelDB table survives many blocks; and each kind of damage (made by
// mutating a good bundle) is a status naming the file, never a crash.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/leveldb_table.h"
#include "checkpoint/tensor_bundle.pb.h"
#include "checkpoint/tensor_bundle_format.h"
#include "checkpoint/tensor_bundle_reader.h"
#include "checkpoint/tensor_bundle_writer.h"
#include "engine/platform/env.h"
#include "engine/platform/test_dirs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace checkpoint {
namespace {

using ::testing::HasSubstr;

// Written by tf.compat.v1.train.Saver (TensorFlow 2.21) for two variables:
// a = float [1.5, -2], s = string ["hi", "", "xyz"].
const char kTfIndex[] =
    "\x00\x00\x06\x08\x01\x1a\x02\x08\x01\x00\x01\x0f\x61\x08\x01\x12\x04\x12\x02\x08\x02\x28\x08\x35\x3d\x33\xc8"
    "\xf4\x00\x01\x11\x73\x08\x07\x12\x04\x12\x02\x08\x03\x20\x08\x28\x0c\x35\xf1\xfa\x07\x23\x00\x00\x00\x00\x01"
    "\x00\x00\x00\x00\xe3\x2b\x03\xe6\x00\x00\x00\x00\x01\x00\x00\x00\x00\xc0\xf2\xa1\xb0\x00\x01\x02\x74\x00\x39"
    "\x00\x00\x00\x00\x01\x00\x00\x00\x00\x08\x7f\x72\x58\x3e\x08\x4b\x0e\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x57"
    "\xfb\x80\x8b\x24\x75\x47\xdb";
const char kTfData[] = "\x00\x00\xc0\x3f\x00\x00\x00\xc0\x02\x00\x03\x1b\x42\x8b\xca\x68\x69\x78\x79\x7a";

std::string Bytes(const char* s, size_t n) { return std::string(s, n); }

Tensor Strings(std::vector<std::string> v) {
  Tensor t(DT_STRING, TensorShape({static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) t.data<tstring>()[i] = v[i];
  return t;
}

std::string WriteTfBundle(const std::string& dir) {
  const std::string prefix = JoinPath(dir, "model");
  Env* env = Env::Default();
  EXPECT_TRUE(WriteStringToFile(env, BundleIndexFilename(prefix), Bytes(kTfIndex, sizeof(kTfIndex) - 1)).ok());
  EXPECT_TRUE(WriteStringToFile(env, BundleDataFilename(prefix, 0, 1), Bytes(kTfData, sizeof(kTfData) - 1)).ok());
  return prefix;
}

TEST(TensorBundle, ReadsWhatTensorFlowWrote) {
  const std::string prefix = WriteTfBundle(FreshTestDir("bundle_tf"));
  auto reader = BundleReader::Open(prefix);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->header().num_shards(), 1);
  EXPECT_EQ((*reader)->header().version().producer(), 1);
  ASSERT_EQ((*reader)->entries().size(), 2u);
  auto a = (*reader)->Read("a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->DebugString(), Tensor::FromVector<float>({1.5f, -2}).DebugString());
  auto s = (*reader)->Read("s");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->DebugString(), Strings({"hi", "", "xyz"}).DebugString());
  EXPECT_EQ((*reader)->Read("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST(TensorBundle, WritesTheDataFileTensorFlowWrites) {
  const std::string prefix = JoinPath(FreshTestDir("bundle_same"), "model");
  ASSERT_TRUE(WriteTensorBundle(Env::Default(), prefix,
                                {{"a", Tensor::FromVector<float>({1.5f, -2})}, {"s", Strings({"hi", "", "xyz"})}})
                  .ok());
  auto data = ReadFileToString(Env::Default(), BundleDataFilename(prefix, 0, 1));
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(*data, Bytes(kTfData, sizeof(kTfData) - 1));
  // The index differs only in the index block's separator key ("s" vs TF's "t").
  auto ours = ParseTable(*ReadFileToString(Env::Default(), BundleIndexFilename(prefix)), "ours");
  auto theirs = ParseTable(Bytes(kTfIndex, sizeof(kTfIndex) - 1), "tf");
  ASSERT_TRUE(ours.ok() && theirs.ok());
  EXPECT_EQ(*ours, *theirs);
}

Tensor Bools(std::vector<int> v) {
  Tensor t(DT_BOOL, TensorShape({static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i] != 0;
  return t;
}

template <typename T>
Tensor Filled(DataType dt, const TensorShape& shape) {
  Tensor t(dt, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<T>()[i] = static_cast<T>(i % 7) - 3;
  return t;
}

TEST(TensorBundle, RoundTripsEveryDtype) {
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"z/float", Tensor::FromVector<float>({1.5f, -2, 3e30f}, TensorShape({3, 1}))},
      {"double", Tensor::FromVector<double>({1e-300, 2})},
      {"int32", Tensor::FromVector<int32_t>({-7, 1 << 30})},
      {"int64", Tensor::Scalar<int64_t>(int64_t{1} << 40)},
      {"bool", Bools({true, false, true})},
      {"uint8", Tensor::FromVector<uint8_t>({0, 255})},
      {"int8", Tensor::FromVector<int8_t>({-128, 127})},
      {"int16", Tensor::FromVector<int16_t>({-300, 300})},
      {"empty", Tensor(DT_FLOAT, TensorShape({0, 4}))},
      {"empty_strings", Tensor(DT_STRING, TensorShape({0}))},
      {"strings", Strings({"", std::string(300, 'x'), std::string("a\0b", 3)})},
      {"big", Filled<float>(DT_FLOAT, TensorShape({100, 1000}))},
  };
  const std::string prefix = JoinPath(FreshTestDir("bundle_rt"), "sub/dir/ckpt");
  absl::Status s = WriteTensorBundle(Env::Default(), prefix, tensors);
  ASSERT_TRUE(s.ok()) << s;
  auto reader = BundleReader::Open(prefix);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ((*reader)->entries().size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    auto got = (*reader)->Read(name);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    EXPECT_EQ(got->shape(), t.shape()) << name;
    EXPECT_EQ(got->DebugString(1 << 20), t.DebugString(1 << 20)) << name;
    EXPECT_EQ((*reader)->ShapeOf(name), t.shape()) << name;
  }
  // Saving again replaces the bundle; no temporary files are left behind.
  ASSERT_TRUE(WriteTensorBundle(Env::Default(), prefix, {{"only", Tensor::Scalar<float>(1)}}).ok());
  reader = BundleReader::Open(prefix);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->entries().size(), 1u);
  auto children = Env::Default()->GetChildren(Dirname(prefix));
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, (std::vector<std::string>{"ckpt.data-00000-of-00001", "ckpt.index"}));
}

TEST(TensorBundle, WriterRejectsBadNames) {
  const std::string prefix = JoinPath(FreshTestDir("bundle_bad_names"), "m");
  EXPECT_EQ(WriteTensorBundle(Env::Default(), prefix, {{"", Tensor::Scalar<float>(1)}}).code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status s =
      WriteTensorBundle(Env::Default(), prefix, {{"x", Tensor::Scalar<float>(1)}, {"x", Tensor::Scalar<float>(2)}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'x' is listed twice"));
}

TEST(LevelDbTable, ManyBlocksAndRestartsRoundTrip) {
  TableEntries entries;
  for (int i = 0; i < 5000; ++i) {
    char key[32];
    std::snprintf(key, sizeof(key), "layer%04d/kernel", i);
    entries.emplace_back(key, std::string(i % 50, static_cast<char>('a' + i % 26)));
  }
  TableOptions small;
  small.block_bytes = 512;
  const std::string table = BuildTable(entries, small);
  auto parsed = ParseTable(table, "t");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, entries);
  auto empty = ParseTable(BuildTable({}), "e");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->empty());
}

// --- Damage: every case starts from a good bundle and changes one thing. ---

class DamagedBundle : public ::testing::Test {
 protected:
  void SetUp() override {
    prefix_ = JoinPath(FreshTestDir(::testing::UnitTest::GetInstance()->current_test_info()->name()), "m");
    ASSERT_TRUE(WriteTensorBundle(env_, prefix_,
                                  {{"w", Tensor::FromVector<float>({1, 2, 3, 4})}, {"s", Strings({"ab", "c"})}})
                    .ok());
    index_ = *ReadFileToString(env_, BundleIndexFilename(prefix_));
    data_ = *ReadFileToString(env_, BundleDataFilename(prefix_, 0, 1));
  }
  void WriteIndex(const std::string& bytes) {
    ASSERT_TRUE(WriteStringToFile(env_, BundleIndexFilename(prefix_), bytes).ok());
  }
  void WriteData(const std::string& bytes) {
    ASSERT_TRUE(WriteStringToFile(env_, BundleDataFilename(prefix_, 0, 1), bytes).ok());
  }
  // Rewrites the entry of `name` in an otherwise valid index.
  template <typename F>
  void EditEntry(const std::string& name, F edit) {
    auto table = ParseTable(index_, "good");
    ASSERT_TRUE(table.ok());
    for (auto& [key, value] : *table) {
      if (key != name) continue;
      BundleEntryProto e;
      ASSERT_TRUE(e.ParseFromString(value));
      edit(&e);
      value = e.SerializeAsString();
    }
    WriteIndex(BuildTable(*table));
  }
  // The status of opening the bundle and reading every tensor.
  absl::Status OpenAndReadAll() {
    auto reader = BundleReader::Open(prefix_, env_);
    if (!reader.ok()) return reader.status();
    for (const auto& [name, e] : (*reader)->entries()) {
      auto t = (*reader)->Read(name);
      if (!t.ok()) return t.status();
    }
    return absl::OkStatus();
  }
  void ExpectError(absl::StatusCode code, const std::string& fragment) {
    absl::Status s = OpenAndReadAll();
    EXPECT_EQ(s.code(), code) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(fragment)) << s;
  }

  Env* env_ = Env::Default();
  std::string prefix_, index_, data_;
};

TEST_F(DamagedBundle, GoodBundleReads) { EXPECT_TRUE(OpenAndReadAll().ok()); }

TEST_F(DamagedBundle, TruncatedIndex) {
  WriteIndex(index_.substr(0, 30));
  ExpectError(absl::StatusCode::kDataLoss, prefix_ + ".index is truncated: 30 bytes");
  WriteIndex(index_.substr(0, index_.size() - 1));
  ExpectError(absl::StatusCode::kDataLoss, "bad table magic number");
}

TEST_F(DamagedBundle, BadFooterMagic) {
  std::string bad = index_;
  bad[bad.size() - 1] ^= 1;
  WriteIndex(bad);
  ExpectError(absl::StatusCode::kDataLoss, prefix_ + ".index at offset " + std::to_string(bad.size() - 8));
}

TEST_F(DamagedBundle, BadBlockCrc) {
  std::string bad = index_;
  bad[5] ^= 0x40;  // inside the first data block
  WriteIndex(bad);
  ExpectError(absl::StatusCode::kDataLoss, prefix_ + ".index at offset 0: data block CRC32C mismatch");
}

TEST_F(DamagedBundle, HandleOutsideTheFile) {
  std::string bad = index_;
  // Footer starts with the metaindex handle: make its offset huge.
  bad[bad.size() - kTableFooterBytes] = '\x7f';
  WriteIndex(bad);
  ExpectError(absl::StatusCode::kDataLoss, "metaindex block at offset 127");
}

TEST_F(DamagedBundle, EntryPastTheEndOfTheDataFile) {
  EditEntry("w", [](BundleEntryProto* e) { e->set_offset(1000); });
  ExpectError(absl::StatusCode::kDataLoss, "tensor 'w' claims bytes [1000, +16) of " + prefix_ +
                                               ".data-00000-of-00001, which holds " + std::to_string(data_.size()));
}

TEST_F(DamagedBundle, TruncatedDataFile) {
  WriteData(data_.substr(0, 10));
  ExpectError(absl::StatusCode::kDataLoss, "which holds 10 bytes");
}

TEST_F(DamagedBundle, BadTensorCrc) {
  std::string bad = data_;
  bad[2] ^= 1;  // inside w
  WriteData(bad);
  ExpectError(absl::StatusCode::kDataLoss, prefix_ + ".data-00000-of-00001: tensor 'w' at offset 0: CRC32C mismatch");
}

TEST_F(DamagedBundle, BadStringBytes) {
  std::string bad = data_;
  bad[bad.size() - 1] ^= 1;  // the last string byte
  WriteData(bad);
  ExpectError(absl::StatusCode::kDataLoss, "tensor 's' at offset 16: CRC32C mismatch");
  bad = data_;
  bad[16] = 5;  // the first string's length
  WriteData(bad);
  ExpectError(absl::StatusCode::kDataLoss, "tensor 's' at offset 16: CRC32C mismatch in the string lengths");
}

TEST_F(DamagedBundle, MissingDataShard) {
  ASSERT_TRUE(env_->DeleteFile(BundleDataFilename(prefix_, 0, 1)).ok());
  ExpectError(absl::StatusCode::kNotFound, "data file " + prefix_ + ".data-00000-of-00001 is missing");
}

TEST_F(DamagedBundle, MissingIndex) {
  ASSERT_TRUE(env_->DeleteFile(BundleIndexFilename(prefix_)).ok());
  ExpectError(absl::StatusCode::kNotFound, prefix_ + ".index does not exist");
}

TEST_F(DamagedBundle, UnknownDtype) {
  EditEntry("w", [](BundleEntryProto* e) { e->set_dtype(static_cast<DataType>(77)); });
  ExpectError(absl::StatusCode::kDataLoss, "tensor 'w' has unknown or unsupported dtype");
}

TEST_F(DamagedBundle, HugeShape) {
  EditEntry("w", [](BundleEntryProto* e) {
    e->mutable_shape()->mutable_dim(0)->set_size(int64_t{1} << 61);
  });
  ExpectError(absl::StatusCode::kDataLoss, "tensor 'w' of shape [2305843009213693952] float needs");
  EditEntry("s", [](BundleEntryProto* e) { e->mutable_shape()->mutable_dim(0)->set_size(int64_t{1} << 40); });
  ExpectError(absl::StatusCode::kDataLoss, "tensor 's' has 1099511627776 strings but only");
  EditEntry("w", [](BundleEntryProto* e) { e->mutable_shape()->mutable_dim(0)->set_size(-5); });
  ExpectError(absl::StatusCode::kDataLoss, "tensor 'w' has a bad shape");
}

TEST_F(DamagedBundle, ShardOutOfRange) {
  EditEntry("w", [](BundleEntryProto* e) { e->set_shard_id(3); });
  ExpectError(absl::StatusCode::kDataLoss, "tensor 'w' is in data shard 3 of 1");
}

TEST_F(DamagedBundle, SlicedEntryIsUnimplemented) {
  EditEntry("w", [](BundleEntryProto* e) { e->add_slices()->add_extent()->set_start(0); });
  ExpectError(absl::StatusCode::kUnimplemented,
              "tensor 'w': partitioned (sliced) tensors in a TensorFlow checkpoint are not supported");
}

TEST_F(DamagedBundle, HeaderProblems) {
  auto table = ParseTable(index_, "good");
  ASSERT_TRUE(table.ok());
  TableEntries no_header(table->begin() + 1, table->end());
  WriteIndex(BuildTable(no_header));
  ExpectError(absl::StatusCode::kDataLoss, "no header entry");
  BundleHeaderProto h;
  h.set_num_shards(1);
  h.set_endianness(BundleHeaderProto::BIG);
  (*table)[0].second = h.SerializeAsString();
  WriteIndex(BuildTable(*table));
  ExpectError(absl::StatusCode::kUnimplemented, "big-endian");
  h.set_endianness(BundleHeaderProto::LITTLE);
  h.set_num_shards(0);
  (*table)[0].second = h.SerializeAsString();
  WriteIndex(BuildTable(*table));
  ExpectError(absl::StatusCode::kDataLoss, "header claims 0 data shards");
  (*table)[0].second = "\xff\xff\xff";
  WriteIndex(BuildTable(*table));
  ExpectError(absl::StatusCode::kDataLoss, "header (BundleHeaderProto) does not parse");
}

TEST_F(DamagedBundle, EveryByteFlipIsAStatus) {
  // No flipped byte anywhere in either file crashes the reader.
  for (size_t i = 0; i < index_.size(); ++i) {
    std::string bad = index_;
    bad[i] ^= 0x5a;
    WriteIndex(bad);
    OpenAndReadAll().IgnoreError();
  }
  WriteIndex(index_);
  for (size_t i = 0; i < data_.size(); ++i) {
    std::string bad = data_;
    bad[i] ^= 0x5a;
    WriteData(bad);
    EXPECT_EQ(OpenAndReadAll().code(), absl::StatusCode::kDataLoss) << "byte " << i;
  }
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
