// CRC32C: known vectors (RFC 3720 / iSCSI), hardware vs. table, Extend,
// ExtendAndCopy, Combine, masking.
#include "engine/platform/crc32c.h"

#include <cstring>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c::Value(""), 0u);
  EXPECT_EQ(crc32c::Value("123456789"), 0xe3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c::Value(zeros), 0x8a9136aau);
  std::string ones(32, '\xff');
  EXPECT_EQ(crc32c::Value(ones), 0x62a8ab43u);
  std::string inc(32, '\0');
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<char>(i);
  EXPECT_EQ(crc32c::Value(inc), 0x46dd794eu);
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<char>(31 - i);
  EXPECT_EQ(crc32c::Value(inc), 0x113fdb5cu);
}

TEST(Crc32c, HardwareAndPortableAgreeOnEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::string data(300, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; start + n <= data.size(); n += 7) {
      EXPECT_EQ(crc32c::Extend(0, data.data() + start, n), crc32c::ExtendPortable(0, data.data() + start, n))
          << "start " << start << " n " << n;
    }
  }
}

TEST(Crc32c, InterleavedStreamsAgreeWithTheTableOnLongInputs) {
  std::mt19937 rng(11);
  std::string data(3 * 8192 * 2 + 3 * 256 * 3 + 77, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t n : {size_t{768}, size_t{769}, size_t{1024}, size_t{3072}, size_t{24576}, size_t{24576 + 800},
                   data.size() - 3}) {
    for (size_t start : {size_t{0}, size_t{3}}) {
      EXPECT_EQ(crc32c::Extend(0, data.data() + start, n), crc32c::ExtendPortable(0, data.data() + start, n))
          << "n " << n << " start " << start;
      EXPECT_EQ(crc32c::Extend(0x12345678u, data.data() + start, n),
                crc32c::ExtendPortable(0x12345678u, data.data() + start, n));
    }
  }
}

TEST(Crc32c, EveryLengthUpToThreeLongBlocksAgreesWithTheTable) {
  // Covers the single stream (short inputs), a three-way pass of every block
  // size (8 * j bytes for j = 1 .. 1024) and every tail length.
  std::mt19937 rng(13);
  std::string data(3 * 8192 + 64, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t n = 0; n <= data.size() - 1; ++n) {
    const uint32_t init = static_cast<uint32_t>(n * 0x9e3779b9u);
    ASSERT_EQ(crc32c::Extend(init, data.data() + 1, n), crc32c::ExtendPortable(init, data.data() + 1, n))
        << "n " << n;
  }
}

TEST(Crc32c, ExtendAndCopyCopiesAndAgreesWithExtend) {
  std::mt19937 rng(17);
  std::string data(3 * 8192 * 2 + 1000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{63}, size_t{64}, size_t{100}, size_t{1024},
                   size_t{1040}, size_t{3072}, size_t{24575}, size_t{24576}, size_t{24577}, data.size() - 5}) {
    std::string out(n + 2, '#');
    const uint32_t crc = crc32c::ExtendAndCopy(0x1234u, data.data() + 5, n, &out[1]);
    EXPECT_EQ(crc, crc32c::ExtendPortable(0x1234u, data.data() + 5, n)) << "n " << n;
    EXPECT_EQ(out.substr(1, n), data.substr(5, n)) << "n " << n;
    EXPECT_EQ(out.front(), '#');
    EXPECT_EQ(out.back(), '#') << "wrote past the end, n " << n;
  }
}

TEST(Crc32c, ExtendEqualsWholeValue) {
  std::string s = "hello, sluice records";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    uint32_t a = crc32c::Value(s.data(), cut);
    EXPECT_EQ(crc32c::Extend(a, s.data() + cut, s.size() - cut), crc32c::Value(s));
  }
}

TEST(Crc32c, CombineEqualsOnePassOverEverySplit) {
  std::mt19937 rng(19);
  std::string data(10000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  const uint32_t whole = crc32c::Value(data);
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{100}, size_t{4096}, size_t{9999},
                       size_t{10000}}) {
    const uint32_t a = crc32c::Value(data.data(), split);
    const uint32_t b = crc32c::Value(data.data() + split, data.size() - split);
    EXPECT_EQ(crc32c::Combine(a, b, data.size() - split), whole) << "split " << split;
  }
  // A long zero run: Combine's shift covers lengths far beyond any buffer here.
  const std::string zeros(1 << 20, '\0');
  EXPECT_EQ(crc32c::Combine(crc32c::Value("abc"), crc32c::Value(zeros), zeros.size()),
            crc32c::Value("abc" + zeros));
}

TEST(Crc32c, MaskRoundTripsAndChangesTheValue) {
  for (uint32_t c : {0u, 1u, 0xe3069283u, 0xffffffffu, 0x12345678u}) {
    EXPECT_NE(crc32c::Mask(c), c);
    EXPECT_EQ(crc32c::Unmask(crc32c::Mask(c)), c);
  }
  EXPECT_EQ(crc32c::Mask(0), 0xa282ead8u);
}

TEST(Crc32c, ValueOf8BytesEqualsValue) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t w = rng();
    char bytes[8];
    std::memcpy(bytes, &w, 8);
    ASSERT_EQ(crc32c::ValueOf8Bytes(bytes), crc32c::Value(bytes, 8)) << w;
  }
}

}  // namespace
}  // namespace sluice
