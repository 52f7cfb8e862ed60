// IDX: round trips (plain and gzip, every element type), header validation,
// every truncation of a small file, and the real Fashion-MNIST files when the
// dataset-fashion-mnist package is installed.
#include "inputs/idx.h"

#include <cstring>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "inputs/testing/mem_env.h"

namespace sluice {
namespace {

IdxFile Sample(DataType dtype) {
  IdxFile f;
  f.dtype = dtype;
  f.dims = {3, 2, 2};
  f.data.resize(12 * DataTypeSize(dtype));
  for (size_t i = 0; i < f.data.size(); ++i) f.data[i] = static_cast<char>(i * 7 + 1);
  return f;
}

TEST(Idx, RoundTripsEveryTypePlainAndGzip) {
  for (DataType dtype : {DT_UINT8, DT_INT8, DT_INT16, DT_INT32, DT_FLOAT, DT_DOUBLE}) {
    for (bool gzip : {false, true}) {
      IdxFile f = Sample(dtype);
      auto bytes = EncodeIdx(f, gzip);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      EXPECT_EQ(LooksGzipped(*bytes), gzip);
      auto back = ParseIdx(*bytes, "sample");
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(back->dtype, dtype);
      EXPECT_EQ(back->dims, f.dims);
      EXPECT_EQ(back->data, f.data);
      EXPECT_EQ(back->num_items(), 3);
      EXPECT_EQ(back->item(1), f.data.substr(4 * DataTypeSize(dtype), 4 * DataTypeSize(dtype)));
    }
  }
}

TEST(Idx, MultiByteElementsAreBigEndianOnDisk) {
  IdxFile f;
  f.dtype = DT_INT32;
  f.dims = {1};
  int32_t v = 0x01020304;
  f.data.assign(reinterpret_cast<const char*>(&v), 4);
  auto bytes = EncodeIdx(f, false);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, std::string("\0\0\x0c\x01\0\0\0\x01\x01\x02\x03\x04", 12));
}

TEST(Idx, BadHeadersAreInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(ParseIdx(std::string("\x01\0\x08\x01\0\0\0\0", 8), "f").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseIdx(std::string("\0\0\x07\x01\0\0\0\0", 8), "f").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseIdx(std::string("\0\0\x08\0", 4), "f").status()));
  auto s = ParseIdx(std::string("\0\0\x08\x01\0\0\0\0", 8), "f.idx");
  EXPECT_TRUE(s.ok()) << s.status();  // zero items is a valid (empty) file
}

TEST(Idx, EveryTruncationAndTrailingBytesAreDataLoss) {
  for (bool gzip : {false, true}) {
    auto bytes = EncodeIdx(Sample(DT_INT16), gzip);
    ASSERT_TRUE(bytes.ok());
    for (size_t cut = 0; cut < bytes->size(); ++cut) {
      auto r = ParseIdx(bytes->substr(0, cut), "cut.idx");
      ASSERT_TRUE(absl::IsDataLoss(r.status())) << "gzip " << gzip << " cut " << cut << ": " << r.status();
      EXPECT_TRUE(absl::StrContains(r.status().message(), "cut.idx"));
    }
  }
  auto plain = EncodeIdx(Sample(DT_UINT8), false);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(absl::IsDataLoss(ParseIdx(*plain + "x", "f").status()));
}

TEST(Idx, CorruptGzipIsDataLoss) {
  auto bytes = EncodeIdx(Sample(DT_UINT8), true);
  ASSERT_TRUE(bytes.ok());
  int data_loss = 0, ok = 0;
  for (size_t i = 10; i < bytes->size(); ++i) {
    std::string bad = *bytes;
    bad[i] ^= 0x55;
    auto r = ParseIdx(bad, "f");
    EXPECT_TRUE(r.ok() || absl::IsDataLoss(r.status()) || absl::IsInvalidArgument(r.status())) << r.status();
    if (absl::IsDataLoss(r.status())) ++data_loss;
    if (r.ok()) ++ok;
  }
  EXPECT_GT(data_loss, 0);
  EXPECT_EQ(ok, 0) << "gzip's CRC32 and length trailer catch every flipped byte";
}

TEST(Idx, DecompressionIsCapped) {
  IdxFile f;
  f.dtype = DT_UINT8;
  f.dims = {1 << 20};
  f.data.assign(1 << 20, '\0');
  auto bytes = EncodeIdx(f, true);
  ASSERT_TRUE(bytes.ok());
  IdxOptions options;
  options.max_bytes = 1000;
  EXPECT_TRUE(absl::IsResourceExhausted(ParseIdx(*bytes, "bomb", options).status()));
}

TEST(Idx, ReadsThroughTheEnv) {
  MemEnv env;
  ASSERT_TRUE(WriteIdxFile(&env, "/d/x.idx.gz", Sample(DT_FLOAT), true).ok());
  auto r = ReadIdxFile(&env, "/d/x.idx.gz");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data, Sample(DT_FLOAT).data);
  EXPECT_TRUE(absl::IsNotFound(ReadIdxFile(&env, "/d/missing").status()));
}

TEST(Idx, FashionMnistWhenInstalled) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!Env::Default()->FileExists(dir + "t10k-labels-idx1-ubyte.gz").ok()) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  auto images = ReadIdxFile(Env::Default(), dir + "t10k-images-idx3-ubyte.gz");
  auto labels = ReadIdxFile(Env::Default(), dir + "t10k-labels-idx1-ubyte.gz");
  ASSERT_TRUE(images.ok()) << images.status();
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(images->dims, (std::vector<int64_t>{10000, 28, 28}));
  EXPECT_EQ(labels->dims, (std::vector<int64_t>{10000}));
  for (char c : labels->data) EXPECT_LT(static_cast<uint8_t>(c), 10);
}

}  // namespace
}  // namespace sluice
