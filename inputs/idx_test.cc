// IDX: round trips (plain and gzip, every element type), header validation,
// every truncation of a small file, and the real Fashion-MNIST files when the
// dataset-fashion-mnist package is installed.
#include "inputs/idx.h"

#include <cstring>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "engine/platform/fault_env.h"
#include "engine/platform/test_dirs.h"

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

// A header of 4 + 4 * dims.size() bytes (uint8 elements) and `data`.
std::string RawIdx(const std::vector<uint32_t>& dims, const std::string& data = "") {
  std::string out("\0\0\x08", 3);
  out.push_back(static_cast<char>(dims.size()));
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  return out + data;
}

// Issue 22, class 2: a 0 dim made the data size 0, so the dims after it went
// unchecked and their product (here 2^96) overflowed the element count of the
// item shape built from them; the pipeline aborted on a 20-byte file.
TEST(Idx, ZeroDimDoesNotHideHugeDims) {
  for (const auto& [dims, bad_dim] :
       {std::pair<std::vector<uint32_t>, int>{{0, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 1},
        {{0xffffffffu, 0xffffffffu, 0}, 0},
        {{3, 0, 0x10000u, 0x10000u}, 3}}) {
    const std::string bytes = RawIdx(dims);
    for (bool gzip : {false, true}) {
      auto gz = Gzip(bytes);
      ASSERT_TRUE(gz.ok());
      auto r = ParseIdx(gzip ? *gz : bytes, "zero.idx");
      ASSERT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
      EXPECT_TRUE(absl::StrContains(r.status().message(), "zero.idx: IDX header dimension " + std::to_string(bad_dim)))
          << r.status();
    }
  }
  EXPECT_EQ(RawIdx({0, 0xffffffffu, 0xffffffffu, 0xffffffffu}).size(), 20u);
  // A 0 dim beside sizes within the limit is an empty file.
  auto empty = ParseIdx(RawIdx({0, 28, 28}), "empty.idx");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->num_items(), 0);
  EXPECT_EQ(empty->item_bytes(), 28u * 28u);
}

// Issue 22, class 2: a header claiming 2^32 - 1 items of zero bytes had no
// data to check it against; a shuffling reader then built a 32 GB order.
TEST(Idx, ItemsMustHoldData) {
  for (uint32_t n : {0xffffffffu, 1000000000u, 1u}) {
    auto r = ParseIdx(RawIdx({n, 0}), "empty_items.idx");
    ASSERT_TRUE(absl::IsInvalidArgument(r.status())) << n << ": " << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), "empty_items.idx: IDX header dimension")) << r.status();
  }
  auto r = ParseIdx(RawIdx({1000000u, 0, 5}), "f.idx");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "dimension 1 is 0, so none of its 1000000 items"))
      << r.status();
}

// Data beyond the limit, as the header describes it, is refused before it is read.
TEST(Idx, HeaderBeyondTheLimitIsResourceExhausted) {
  IdxOptions options;
  options.max_bytes = 2000;
  auto r = ParseIdx(RawIdx({10, 10, 21}), "big.idx", options);
  ASSERT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "big.idx: IDX header dimension 2 is 21")) << r.status();
  EXPECT_TRUE(ParseIdx(RawIdx({10, 10, 10}, std::string(1000, 'x')), "ok.idx", options).ok());
}

// Issue 22, class 2: the whole file was read before its size was compared
// with the header. A read error on the first data byte shows whether it is
// read: a plain file's size settles the question from the header alone.
TEST(Idx, PlainFileSizeIsCheckedBeforeTheDataIsRead) {
  const std::string d = FreshTestDir("idx_size_before_data");
  FaultEnv env(Env::Default());
  const std::string header = RawIdx({1u << 30});
  ASSERT_TRUE(WriteStringToFile(&env, d + "/short.idx", header + std::string(16, 'x')).ok());
  env.InjectReadError(d + "/short.idx", header.size());
  auto r = ReadIdxFile(&env, d + "/short.idx");
  ASSERT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "short.idx: truncated IDX data: the header describes "
                                                      "1073741824 bytes, the file has 16"))
      << r.status();
  ASSERT_TRUE(WriteStringToFile(&env, d + "/long.idx", RawIdx({4}) + std::string(20, 'x')).ok());
  env.InjectReadError(d + "/long.idx", 8);
  r = ReadIdxFile(&env, d + "/long.idx");
  ASSERT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "16 more bytes follow")) << r.status();
  // A file over the limit is refused from its size, before its dims.
  IdxOptions options;
  options.max_bytes = 64;
  ASSERT_TRUE(WriteStringToFile(&env, d + "/huge.idx", RawIdx({100}, std::string(100, 'x'))).ok());
  env.InjectReadError(d + "/huge.idx", 4);
  r = ReadIdxFile(&env, d + "/huge.idx", options);
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  // The data is read when the sizes agree (and the injected error then shows).
  ASSERT_TRUE(WriteStringToFile(&env, d + "/good.idx", RawIdx({4}, "abcd")).ok());
  env.InjectReadError(d + "/good.idx", 8);
  EXPECT_TRUE(absl::IsUnavailable(ReadIdxFile(&env, d + "/good.idx").status()));
}

// A gzip stream is read as far as needed, in chunks; what follows the data
// in the stream is counted up to the limit, no further.
TEST(Idx, GzipDataIsReadIncrementally) {
  const std::string d = FreshTestDir("idx_gzip_incremental");
  FaultEnv env(Env::Default());
  auto lying = Gzip(RawIdx({1u << 30}, std::string(100, 'x')));
  ASSERT_TRUE(lying.ok());
  ASSERT_TRUE(WriteStringToFile(&env, d + "/lying.idx.gz", *lying).ok());
  auto r = ReadIdxFile(&env, d + "/lying.idx.gz");
  ASSERT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "the file has 100")) << r.status();
  // A large file decompresses in many steps, and its round trip is exact.
  IdxFile big;
  big.dtype = DT_INT16;
  big.dims = {300, 1000};
  big.data.resize(600000);
  for (size_t i = 0; i < big.data.size(); ++i) big.data[i] = static_cast<char>(i * 31 + i / 977);
  ASSERT_TRUE(WriteIdxFile(&env, d + "/big.idx.gz", big, true).ok());
  auto back = ReadIdxFile(&env, d + "/big.idx.gz");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data, big.data);
  // Trailing data inside the stream: counted, and a bomb stops at the limit.
  auto trailing = Gzip(RawIdx({4}, std::string(4 + 70000, 'x')));
  ASSERT_TRUE(trailing.ok());
  r = ParseIdx(*trailing, "t.idx.gz");
  ASSERT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "70000 more bytes follow")) << r.status();
  IdxOptions options;
  options.max_bytes = 5000;
  r = ParseIdx(*trailing, "t.idx.gz", options);
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
}

TEST(Idx, ReadsThroughTheEnv) {
  const std::string dir = FreshTestDir("idx_through_env");
  FaultEnv env(Env::Default());
  ASSERT_TRUE(WriteIdxFile(&env, JoinPath(dir, "x.idx.gz"), Sample(DT_FLOAT), true).ok());
  auto r = ReadIdxFile(&env, JoinPath(dir, "x.idx.gz"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->data, Sample(DT_FLOAT).data);
  EXPECT_TRUE(absl::IsNotFound(ReadIdxFile(&env, JoinPath(dir, "missing")).status()));
  env.InjectReadError(JoinPath(dir, "x.idx.gz"), 0);
  absl::Status s = ReadIdxFile(&env, JoinPath(dir, "x.idx.gz")).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "x.idx.gz")) << s;
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
