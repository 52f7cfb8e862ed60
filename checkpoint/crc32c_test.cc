// Tests of CRC32C: known vectors, hardware vs table, Extend and Combine.
#include "checkpoint/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace checkpoint {
namespace {

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c::Value("123456789", 9), 0xe3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c::Value(zeros), 0x8a9136aau);
  std::string ones(32, '\xff');
  EXPECT_EQ(crc32c::Value(ones), 0x62a8ab43u);
  EXPECT_EQ(crc32c::Value("", 0), 0u);
}

TEST(Crc32c, HardwareMatchesPortableAtEveryAlignmentAndLength) {
  std::string data;
  for (int i = 0; i < 5000; ++i) data.push_back(static_cast<char>(i * 131 + (i >> 3)));
  for (size_t off = 0; off < 9; ++off) {
    for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 4000}) {
      EXPECT_EQ(crc32c::Extend(0, data.data() + off, n), crc32c::ExtendPortable(0, data.data() + off, n));
    }
  }
}

TEST(Crc32c, ExtendAndCombineAgreeWithOnePass) {
  std::string data;
  for (int i = 0; i < 10000; ++i) data.push_back(static_cast<char>(i * 7));
  const uint32_t whole = crc32c::Value(data);
  for (size_t split : {0, 1, 100, 4096, 9999, 10000}) {
    const uint32_t a = crc32c::Value(data.data(), split);
    const uint32_t b = crc32c::Value(data.data() + split, data.size() - split);
    EXPECT_EQ(crc32c::Extend(a, data.data() + split, data.size() - split), whole);
    EXPECT_EQ(crc32c::Combine(a, b, data.size() - split), whole) << split;
  }
}

}  // namespace
}  // namespace checkpoint
}  // namespace sluice
