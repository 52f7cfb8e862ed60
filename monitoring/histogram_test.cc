// Histogram::DefaultBucketIndex (the arithmetic bucket lookup Add uses with TensorFlow's default
// limits) agrees with a binary search (upper_bound, clamped) on every limit, its neighbours, the
// extremes and a million random values spread over every decade.
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
