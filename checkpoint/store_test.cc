// Round trips through the checkpoint store: every dtype, scalars, 0-size and
// multi-chunk tensors, strings, several shards, slices; and the errors for
// missing tensors and bad input.
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace checkpoint {
namespace {

// Fills a tensor of any supported dtype with varied values.
Tensor MakeTensor(DataType dtype, const TensorShape& shape, int seed) {
  Tensor t(dtype, shape);
  std::mt19937 rng(seed);
  if (dtype == DT_STRING) {
    for (int64_t i = 0; i < t.NumElements(); ++i) t.data<tstring>()[i] = std::string(rng() % 300, 'a' + i % 26);
  } else if (dtype == DT_BOOL) {
    for (int64_t i = 0; i < t.NumElements(); ++i) t.data<bool>()[i] = rng() & 1;
  } else {
    char* p = static_cast<char*>(t.raw_data());
    for (size_t i = 0; i < t.TotalBytes(); ++i) p[i] = static_cast<char>(rng());
  }
  return t;
}

bool Equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DT_STRING) {
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      if (a.data<tstring>()[i] != b.data<tstring>()[i]) return false;
    }
    return true;
  }
  return a.TotalBytes() == b.TotalBytes() && std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

TEST(Store, RoundTripsEveryDtypeAndShape) {
  const std::vector<TensorShape> shapes = {TensorShape({}), TensorShape({0}), TensorShape({3, 0, 2}),
                                           TensorShape({7}), TensorShape({5, 33}), TensorShape({1000})};
  std::vector<SaveEntry> entries;
  int seed = 0;
  for (DataType dt : AllSupportedTypes()) {
    for (size_t s = 0; s < shapes.size(); ++s) {
      SaveEntry e;
      e.full_name = DataTypeString(dt) + "/shape" + std::to_string(s);
      e.value = MakeTensor(dt, shapes[s], ++seed);
      entries.push_back(e);
    }
  }
  for (int shards : {1, 3}) {
    const std::string dir = JoinPath(FreshTestDir("roundtrip" + std::to_string(shards)), "ckpt");
    WriteOptions options;
    options.num_shards = shards;
    options.chunk_bytes = 256;  // most tensors span several chunks
    options.step = 42;
    ASSERT_TRUE(WriteCheckpointDir(Env::Default(), dir, entries, options).ok());
    auto reader = CheckpointReader::Open(dir);
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->manifest().step(), 42);
    EXPECT_EQ((*reader)->manifest().tensors_size(), static_cast<int>(entries.size()));
    for (const SaveEntry& e : entries) {
      auto t = (*reader)->ReadTensor(e.full_name);
      ASSERT_TRUE(t.ok()) << t.status();
      EXPECT_TRUE(Equal(*t, e.value)) << e.full_name;
    }
    EXPECT_TRUE((*reader)->VerifyAll().ok());
  }
}

TEST(Store, TensorLargerThanTheDefaultChunkSpansChunks) {
  SaveEntry e;
  e.full_name = "big";
  e.value = MakeTensor(DT_FLOAT, TensorShape({3 * (1 << 20) + 5}), 7);  // 12 MB
  const std::string dir = JoinPath(FreshTestDir("big"), "ckpt");
  ASSERT_TRUE(WriteCheckpointDir(Env::Default(), dir, {e}, WriteOptions()).ok());
  auto reader = CheckpointReader::Open(dir);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->FindEntry("big")->num_chunks(), 4u);  // 12 MB + 20 bytes in 4 MB chunks
  auto t = (*reader)->ReadTensor("big");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(Equal(*t, e.value));
}

TEST(Store, SlicesAssembleAnyRequestedSlice) {
  Tensor full = MakeTensor(DT_INT32, TensorShape({6, 4}), 3);
  std::vector<SaveEntry> entries;
  for (int part = 0; part < 3; ++part) {
    SaveEntry e;
    e.full_name = "w";
    e.full_shape = TensorShape({6, 4});
    e.slice_spec = std::to_string(2 * part) + ",2:-";
    e.value = Tensor(DT_INT32, TensorShape({2, 4}));
    std::memcpy(e.value.raw_data(), full.data<int32_t>() + 8 * part, 8 * sizeof(int32_t));
    entries.push_back(e);
  }
  const std::string dir = JoinPath(FreshTestDir("slices"), "ckpt");
  ASSERT_TRUE(WriteCheckpointDir(Env::Default(), dir, entries, WriteOptions()).ok());
  auto reader = CheckpointReader::Open(dir);
  ASSERT_TRUE(reader.ok());
  auto whole = (*reader)->ReadSlice("w", TensorShape({6, 4}), TensorSlice::Full(2));
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_TRUE(Equal(*whole, full));
  auto mid = (*reader)->ReadSlice("w", TensorShape({6, 4}), *ParseSliceSpec("1,4:2,2", TensorShape({6, 4})));
  ASSERT_TRUE(mid.ok()) << mid.status();
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 2; ++c) EXPECT_EQ(mid->data<int32_t>()[r * 2 + c], full.data<int32_t>()[(r + 1) * 4 + c + 2]);
  }
  auto wrong_shape = (*reader)->ReadSlice("w", TensorShape({6, 5}), TensorSlice::Full(2));
  EXPECT_EQ(wrong_shape.status().code(), absl::StatusCode::kInvalidArgument);
}

// The writer applies the reader's manifest rules: it never writes slices a
// reader would refuse.
TEST(Store, WriterRefusesOverlappingOrInconsistentSlices) {
  auto slice = [](const std::string& spec, TensorShape full, TensorShape shape) {
    SaveEntry e;
    e.full_name = "w";
    e.full_shape = full;
    e.slice_spec = spec;
    e.value = MakeTensor(DT_FLOAT, shape, 1);
    return e;
  };
  const TensorShape full({6, 4});
  absl::Status overlap = WriteCheckpointDir(
      Env::Default(), JoinPath(FreshTestDir("overlap"), "ckpt"), {slice("0,4:-", full, TensorShape({4, 4})), slice("3,3:-", full, TensorShape({3, 4}))},
      WriteOptions());
  EXPECT_EQ(overlap.code(), absl::StatusCode::kInvalidArgument) << overlap;
  EXPECT_NE(overlap.message().find("slices '0,4:-' and '3,3:-' of 'w' overlap"), std::string::npos) << overlap;
  absl::Status shapes = WriteCheckpointDir(
      Env::Default(), JoinPath(FreshTestDir("full_shapes"), "ckpt"),
      {slice("0,3:-", full, TensorShape({3, 4})), slice("3,3:-", TensorShape({7, 4}), TensorShape({3, 4}))}, WriteOptions());
  EXPECT_EQ(shapes.code(), absl::StatusCode::kInvalidArgument) << shapes;
  SaveEntry whole;
  whole.full_name = "w";
  whole.value = MakeTensor(DT_FLOAT, full, 2);
  EXPECT_EQ(WriteCheckpointDir(Env::Default(), JoinPath(FreshTestDir("whole_and_slice"), "ckpt"), {whole, slice("0,3:-", full, TensorShape({3, 4}))},
                               WriteOptions())
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(WriteCheckpointDir(Env::Default(), JoinPath(FreshTestDir("disjoint"), "ckpt"),
                                 {slice("0,3:-", full, TensorShape({3, 4})), slice("3,3:-", full, TensorShape({3, 4}))},
                                 WriteOptions())
                  .ok());
}

TEST(Store, MissingTensorIsNotFoundAndDuplicatesAreRejected) {
  SaveEntry e;
  e.full_name = "a";
  e.value = Tensor::Scalar<float>(1);
  const std::string dir = JoinPath(FreshTestDir("missing"), "ckpt");
  ASSERT_TRUE(WriteCheckpointDir(Env::Default(), dir, {e}, WriteOptions()).ok());
  auto reader = CheckpointReader::Open(dir);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->ReadTensor("b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(WriteCheckpointDir(Env::Default(), JoinPath(FreshTestDir("dup"), "ckpt"), {e, e}, WriteOptions()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteCheckpointDir(Env::Default(), dir, {e}, WriteOptions()).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(CheckpointReader::Open(JoinPath(FreshTestDir("nothing"), "ckpt")).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
