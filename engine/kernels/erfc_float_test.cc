// ErfcFloat against the double-precision erfc rounded to float: a sample of
// every sign and exponent (every 997th float bit pattern), dense sweeps of
// the intervals where the result's exponent changes fastest, the special
// values, and every tail length of the vector loop.
#include "engine/kernels/erfc_float.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
int64_t Ordered(float f) {  // the float's position on the number line, in ulps
  int32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b >= 0 ? b : -static_cast<int64_t>(b & 0x7fffffff);
}

// The worst distance in ulps from the correctly rounded erfc over `xs`.
int64_t WorstUlps(const std::vector<float>& xs, float* worst_x) {
  std::vector<float> got(xs.size());
  ErfcFloat(xs.data(), got.data(), static_cast<int64_t>(xs.size()));
  int64_t worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = static_cast<float>(std::erfc(static_cast<double>(xs[i])));
    const int64_t ulps = std::abs(Ordered(got[i]) - Ordered(want));
    if (ulps > worst) {
      worst = ulps;
      *worst_x = xs[i];
    }
  }
  return worst;
}

TEST(ErfcFloat, WithinOneUlpAcrossEveryExponent) {
  std::vector<float> xs;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 997) {
    const float x = FromBits(static_cast<uint32_t>(b));
    if (!std::isnan(x)) xs.push_back(x);
  }
  float worst_x = 0;
  EXPECT_LE(WorstUlps(xs, &worst_x), 1) << "at x = " << worst_x;
}

TEST(ErfcFloat, WithinOneUlpOnDenseSweeps) {
  // Around 0 (1 - erf), across the fit's range, and the tail down to the
  // last denormal (erfc(10.05) is about 1.4e-45).
  for (auto [lo, hi] : {std::pair<float, float>{-1, 1}, {1, 4}, {4, 9}, {9, 10.5f}, {-6, -1}}) {
    std::vector<float> xs;
    for (float x = lo; x < hi; x = std::nextafter(x, hi)) {
      xs.push_back(x);
      for (int skip = 0; skip < 60 && x < hi; ++skip) x = std::nextafter(x, hi);
    }
    float worst_x = 0;
    EXPECT_LE(WorstUlps(xs, &worst_x), 1) << "in [" << lo << ", " << hi << ") at x = " << worst_x;
  }
}

TEST(ErfcFloat, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xs = {0.0f, -0.0f, inf, -inf, nan, std::numeric_limits<float>::max(),
                           -std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(), 11.0f, 1e30f};
  std::vector<float> got(xs.size());
  ErfcFloat(xs.data(), got.data(), static_cast<int64_t>(xs.size()));
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 1.0f);
  EXPECT_EQ(got[2], 0.0f);
  EXPECT_EQ(got[3], 2.0f);
  EXPECT_TRUE(std::isnan(got[4]));
  EXPECT_EQ(got[5], 0.0f);
  EXPECT_EQ(got[6], 2.0f);
  EXPECT_EQ(got[7], 1.0f);
  EXPECT_EQ(got[8], 0.0f);
  EXPECT_EQ(got[9], 0.0f);
}

TEST(ErfcFloat, EveryTailLengthAndInPlace) {
  for (int n = 0; n <= 33; ++n) {  // blocks of 16: every tail, and blocks plus tails
    std::vector<float> xs(n), out(n + 1, -7.0f);  // a guard element after the output
    for (int i = 0; i < n; ++i) xs[i] = -2.0f + 0.25f * i;
    ErfcFloat(xs.data(), out.data(), n);
    for (int i = 0; i < n; ++i) {
      EXPECT_LE(std::abs(Ordered(out[i]) - Ordered(static_cast<float>(std::erfc(static_cast<double>(xs[i]))))), 1)
          << "n = " << n << ", element " << i;
    }
    EXPECT_EQ(out[n], -7.0f) << "n = " << n << ": wrote past the end";
    std::vector<float> in_place = xs;
    ErfcFloat(in_place.data(), in_place.data(), n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(in_place[i], out[i]) << "n = " << n << ", element " << i;
  }
}

}  // namespace
}  // namespace sluice
