// CRC32C against the RFC 3720 (iSCSI) test vectors, hardware vs table paths, and the mask.
#include "monitoring/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace monitoring {
namespace crc32c {
namespace {

TEST(Crc32cTest, StandardVectors) {
  EXPECT_EQ(Value("123456789"), 0xE3069283u);
  std::string buf(32, '\0');
  EXPECT_EQ(Value(buf), 0x8A9136AAu);
  buf.assign(32, '\xff');
  EXPECT_EQ(Value(buf), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<char>(i);
  EXPECT_EQ(Value(buf), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<char>(31 - i);
  EXPECT_EQ(Value(buf), 0x113FDB5Cu);
  EXPECT_EQ(Value(""), 0u);
}

TEST(Crc32cTest, ExtendEqualsWholeAndPathsAgree) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  for (size_t split : {size_t{0}, size_t{1}, size_t{5}, size_t{8}, size_t{499}, size_t{1000}}) {
    EXPECT_EQ(Extend(Value(data.data(), split), data.data() + split, data.size() - split), Value(data));
  }
  for (size_t n = 0; n <= data.size(); n += 37) {
    EXPECT_EQ(ExtendPortable(0, data.data(), n), Value(data.data(), n)) << n;
  }
}

TEST(Crc32cTest, MaskRoundTripsAndDiffers) {
  for (uint32_t c : {0u, 1u, 0xE3069283u, 0xffffffffu}) {
    EXPECT_NE(Mask(c), c);
    EXPECT_EQ(Unmask(Mask(c)), c);
  }
  EXPECT_EQ(Mask(0), kMaskDelta);
}

}  // namespace
}  // namespace crc32c
}  // namespace monitoring
}  // namespace sluice
