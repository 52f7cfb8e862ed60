// CRC32C: known vectors (RFC 3720 / iSCSI), hardware (three crc32 streams and
// 512-bit folding) vs. table vs. a bitwise reference, Extend, ExtendAndCopy,
// Combine, masking.
#include "engine/platform/crc32c.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace {

// The definition, one bit at a time: shares no code or table with crc32c.cc.
uint32_t BitwiseCrc32c(uint32_t init_crc, const char* data, size_t n) {
  uint32_t c = ~init_crc;
  for (size_t i = 0; i < n; ++i) {
    c ^= static_cast<uint8_t>(data[i]);
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return ~c;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

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

TEST(Crc32c, FoldingBesideSixStreamsAgreesWithTheTableAtItsPieceBoundaries) {
  // In AVX-512 builds, Extend folds buffers from 2048 bytes (beside six crc32
  // streams where they pay: both ways are checked here), in pieces of at most 13792 bytes (25 x 256 bytes folded beside 6
  // x 154 words); a piece before the last leaves at least 2048 bytes, and the
  // last leaves under 48. The words per stream change at n = 2064 + 48 i, the
  // folds at 2368 + 544 i. Lengths at and around those sizes, several pieces
  // (the last one whole, split to leave 2048 bytes, or short), and four starts.
  std::mt19937 rng(19);
  std::string data(5 * 13792 + 200, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t n : {size_t{2047}, size_t{2048}, size_t{2063}, size_t{2064}, size_t{2111}, size_t{2112}, size_t{2367},
                   size_t{2368}, size_t{2912}, size_t{13791}, size_t{13792}, size_t{13793}, size_t{13792 + 2047},
                   size_t{13792 + 2048}, size_t{2 * 13792 + 47}, size_t{3 * 13792 + 5000}, size_t{5 * 13792 + 100}}) {
    for (size_t start : {size_t{0}, size_t{1}, size_t{8}, size_t{63}}) {
      const uint32_t init = static_cast<uint32_t>(n * 0x9e3779b9u + start);
      const uint32_t want = crc32c::ExtendPortable(init, data.data() + start, n);
      EXPECT_EQ(crc32c::Extend(init, data.data() + start, n), want) << "n " << n << " start " << start;
      // Both ways, whichever this CPU's Extend takes.
      for (bool six : {true, false}) {
        EXPECT_EQ(crc32c::ExtendWithSixStreamsForTesting(init, data.data() + start, n, six), want)
            << "n " << n << " start " << start << " six streams " << six;
      }
    }
  }
}

TEST(Crc32c, EveryLengthUpToThreeLongBlocksAgreesWithTheTable) {
  // Covers the single stream (short inputs), a three-way pass of every block
  // size (8 * j bytes for j = 1 .. 1024) and every tail length; in AVX-512
  // builds, folding, and folding beside six streams (from 2048 bytes) with
  // every number of folds in a piece and every number of stream words; each
  // with the six streams on and off.
  std::mt19937 rng(13);
  std::string data(3 * 8192 + 64, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t n = 0; n <= data.size() - 1; ++n) {
    const uint32_t init = static_cast<uint32_t>(n * 0x9e3779b9u);
    const uint32_t want = crc32c::ExtendPortable(init, data.data() + 1, n);
    ASSERT_EQ(crc32c::Extend(init, data.data() + 1, n), want) << "n " << n;
    ASSERT_EQ(crc32c::ExtendWithSixStreamsForTesting(init, data.data() + 1, n, true), want) << "n " << n;
    ASSERT_EQ(crc32c::ExtendWithSixStreamsForTesting(init, data.data() + 1, n, false), want) << "n " << n;
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

TEST(Crc32c, EveryLengthUpTo2048AndEveryStartWithinACacheLineAgreesWithTheBitwiseReference) {
  // Every path: the single and three crc32 streams, folding with one and with
  // four 512-bit accumulators, and every tail of the 64- and 16-byte loops.
  const std::string data = RandomBytes(2048 + 64, 23);
  for (size_t start = 0; start < 64; ++start) {
    for (size_t n = 0; n <= 2048; ++n) {
      const uint32_t init = static_cast<uint32_t>((n + 1) * 0x9e3779b9u + start);
      ASSERT_EQ(crc32c::Extend(init, data.data() + start, n), BitwiseCrc32c(init, data.data() + start, n))
          << "start " << start << " n " << n;
    }
  }
}

TEST(Crc32c, ExtendAndCopyAgreesWithTheBitwiseReferenceOnEveryLengthUpTo2048) {
  const std::string data = RandomBytes(2048 + 16, 29);
  std::string out(2048 + 2, '\0');
  for (size_t start : {size_t{0}, size_t{1}, size_t{13}}) {
    for (size_t n = 0; n <= 2048; ++n) {
      out.assign(n + 2, '#');
      ASSERT_EQ(crc32c::ExtendAndCopy(7u, data.data() + start, n, &out[1]), BitwiseCrc32c(7u, data.data() + start, n))
          << "start " << start << " n " << n;
      ASSERT_EQ(out.substr(1, n), data.substr(start, n)) << "start " << start << " n " << n;
      ASSERT_EQ(out.front(), '#');
      ASSERT_EQ(out.back(), '#') << "wrote past the end, start " << start << " n " << n;
    }
  }
}

TEST(Crc32c, RandomLargeBuffersAgreeWithTheBitwiseReference) {
  std::mt19937 rng(31);
  const std::string data = RandomBytes(1 << 20, 37);
  for (int i = 0; i < 20; ++i) {
    const size_t n = rng() % (data.size() - 64);
    const size_t start = rng() % 64;
    const uint32_t init = static_cast<uint32_t>(rng());
    const uint32_t want = BitwiseCrc32c(init, data.data() + start, n);
    EXPECT_EQ(crc32c::Extend(init, data.data() + start, n), want) << "start " << start << " n " << n;
    std::string out(n, '\0');
    EXPECT_EQ(crc32c::ExtendAndCopy(init, data.data() + start, n, &out[0]), want) << "start " << start << " n " << n;
    EXPECT_TRUE(out == data.substr(start, n)) << "start " << start << " n " << n;
  }
}

TEST(Crc32c, ExtendOverSplitBuffersEqualsOnePass) {
  // Each piece goes through whichever path its length picks; the state must
  // carry across any mix of them.
  std::mt19937 rng(41);
  const std::string data = RandomBytes(200000, 43);
  const uint32_t whole = BitwiseCrc32c(0, data.data(), data.size());
  for (int trial = 0; trial < 50; ++trial) {
    uint32_t c = 0;
    size_t at = 0;
    while (at < data.size()) {
      // Lengths from 0 to ~8 KB, biased to short ones.
      const size_t piece = std::min<size_t>(data.size() - at, (rng() % 2) ? rng() % 300 : rng() % 8500);
      c = crc32c::Extend(c, data.data() + at, piece);
      at += piece;
    }
    ASSERT_EQ(c, whole) << "trial " << trial;
  }
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
