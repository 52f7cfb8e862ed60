// Histogram::DefaultBucketIndex (the arithmetic bucket lookup Add uses with TensorFlow's default
// limits) agrees with a binary search (upper_bound, clamped) on every limit, its neighbours, the
// extremes and a million random values spread over every decade; AddFloats agrees with Add.
#include "monitoring/histogram.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace sluice {
namespace {

size_t BinarySearchBucket(double v) {
  const std::vector<double>& limits = Histogram::DefaultBucketLimits();
  const size_t b = std::upper_bound(limits.begin(), limits.end(), v) - limits.begin();
  return std::min(b, limits.size() - 1);
}

TEST(DefaultBucketIndexTest, MatchesBinarySearchAtLimitsAndNeighbours) {
  std::vector<double> values = {0.0, -0.0, DBL_MAX, -DBL_MAX, std::numeric_limits<double>::denorm_min(),
                                -std::numeric_limits<double>::denorm_min(), DBL_MIN, -DBL_MIN, 1e-300, -1e-300,
                                1e300, -1e300, 1.0, -1.0};
  for (double l : Histogram::DefaultBucketLimits()) {
    values.push_back(l);
    values.push_back(std::nextafter(l, -DBL_MAX));
    values.push_back(std::nextafter(l, DBL_MAX));
  }
  for (double v : values) {
    ASSERT_EQ(Histogram::DefaultBucketIndex(v), BinarySearchBucket(v)) << v;
  }
}

TEST(DefaultBucketIndexTest, MatchesBinarySearchOnRandomValues) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-330, 310), unit(-1, 1);
  std::normal_distribution<double> weights(0, 0.05);
  for (int i = 0; i < 1000000; ++i) {
    const double v = (i % 2) ? weights(rng) : std::copysign(std::pow(10.0, exponent(rng)), unit(rng));
    if (!std::isfinite(v)) continue;
    ASSERT_EQ(Histogram::DefaultBucketIndex(v), BinarySearchBucket(v)) << v;
  }
}

TEST(DefaultBucketIndexTest, AddCountsLikeTheCustomLimitPath) {
  // The same limits given explicitly take the binary-search path.
  Histogram fast;
  Histogram slow(Histogram::DefaultBucketLimits());
  std::mt19937_64 rng(3);
  std::normal_distribution<double> d(0, 1);
  for (int i = 0; i < 100000; ++i) {
    const double v = d(rng);
    fast.Add(v);
    slow.Add(v);
  }
  HistogramProto a, b;
  fast.EncodeToProto(&a, false);
  slow.EncodeToProto(&b, false);
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

// AddFloats (table + one comparison) against Add value by value: every float limit and its
// float neighbours, zeros of both signs, denormals, the float extremes and random floats
// over every float decade; buckets, min, max and num exactly, sums to rounding.
TEST(AddFloatsTest, MatchesAddOneByOne) {
  std::vector<float> values = {0.0f, -0.0f, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN,
                               std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                               1.0f, -1.0f};
  for (double l : Histogram::DefaultBucketLimits()) {
    if (!(std::fabs(l) <= FLT_MAX)) continue;
    const float f = static_cast<float>(l);
    for (float g : {f, std::nextafter(f, -FLT_MAX), std::nextafter(f, FLT_MAX)}) values.push_back(g);
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> exponent(-45, 38), unit(-1, 1);
  std::normal_distribution<float> weights(0, 0.05f);
  for (int i = 0; i < 300000; ++i) {
    const float v = (i % 2) ? weights(rng) : static_cast<float>(std::copysign(std::pow(10.0, exponent(rng)), unit(rng)));
    if (std::isfinite(v)) values.push_back(v);
  }
  Histogram one_by_one, batched;
  for (float v : values) one_by_one.Add(v);
  batched.AddFloats(values.data(), values.size() / 2);  // two calls: state carries over
  batched.AddFloats(values.data() + values.size() / 2, values.size() - values.size() / 2);
  HistogramProto a, b;
  one_by_one.EncodeToProto(&a, /*preserve_zero_buckets=*/true);
  batched.EncodeToProto(&b, /*preserve_zero_buckets=*/true);
  ASSERT_EQ(a.bucket_size(), b.bucket_size());
  for (int i = 0; i < a.bucket_size(); ++i) {
    ASSERT_EQ(a.bucket(i), b.bucket(i)) << "bucket " << i << " (limit " << a.bucket_limit(i) << ")";
  }
  EXPECT_EQ(a.min(), b.min());
  EXPECT_EQ(a.max(), b.max());
  EXPECT_EQ(a.num(), b.num());
  EXPECT_NEAR(a.sum(), b.sum(), 1e-9 * a.sum_squares() + 1e-300);
  EXPECT_NEAR(a.sum_squares(), b.sum_squares(), 1e-12 * a.sum_squares());
}

}  // namespace
}  // namespace sluice
