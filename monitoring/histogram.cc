// Histogram, following tensorflow/core/lib/histogram/histogram.cc.
#include "monitoring/histogram.h"

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>

namespace sluice {

const std::vector<double>& Histogram::DefaultBucketLimits() {
  static const std::vector<double>* limits = [] {
    std::vector<double> pos, neg;
    double v = 1.0e-12;
    while (v < 1.0e20) {
      pos.push_back(v);
      neg.push_back(-v);
      v *= 1.1;
    }
    pos.push_back(DBL_MAX);
    neg.push_back(-DBL_MAX);
    std::reverse(neg.begin(), neg.end());
    auto* all = new std::vector<double>(neg);
    all->push_back(0.0);
    all->insert(all->end(), pos.begin(), pos.end());
    return all;
  }();
  return *limits;
}

bool Histogram::ValidBucketLimits(absl::Span<const double> limits) {
  if (limits.empty()) return false;
  for (size_t i = 1; i < limits.size(); ++i) {
    if (!(limits[i] > limits[i - 1])) return false;
  }
  return true;
}

Histogram::Histogram()
    // Aliasing constructor: shares nothing, points at the immortal defaults.
    : limits_(std::shared_ptr<const std::vector<double>>(), &DefaultBucketLimits()), default_limits_(true) {
  Clear();
}

namespace {

// How many of the increasing positive limits p[0, n) are <= a (or < a when `strict`), a > 0.
// p[k] is about 1e-12 * 1.1^k, so k ~ (log2(a) - log2(1e-12)) / log2(1.1); log2(a) is
// approximated by exponent + mantissa fraction (error < 0.09, under one bucket), then the
// answer is found exactly by stepping against the table.
inline size_t CountPositiveLimits(const double* p, size_t n, double a, bool strict) {
  uint64_t bits;
  std::memcpy(&bits, &a, sizeof(bits));
  const double log2a = static_cast<double>(static_cast<int64_t>(bits >> 52) - 1023) +
                       static_cast<double>(bits & ((uint64_t{1} << 52) - 1)) * (1.0 / 4503599627370496.0);
  const double guess = (log2a + 39.863137138648348) * 7.2725408973417132;
  auto counted = [&](size_t i) { return strict ? p[i] < a : p[i] <= a; };
  // The guess is low by under one bucket, so the count is within [g - 1, g + 3): count those
  // entries without branches, then confirm (the loops below almost never iterate).
  size_t k;
  if (guess >= 1 && guess < static_cast<double>(n) - 3) {
    const size_t g = static_cast<size_t>(guess) - 1;
    k = g + counted(g) + counted(g + 1) + counted(g + 2) + counted(g + 3);
  } else {
    k = guess <= 0 ? 0 : (guess >= static_cast<double>(n) ? n : static_cast<size_t>(guess));
  }
  while (k > 0 && !counted(k - 1)) --k;
  while (k < n && counted(k)) ++k;
  return k;
}

}  // namespace

size_t Histogram::DefaultBucketIndex(double value) {
  // Layout: [0] -DBL_MAX, [1, n] -p[n-1] .. -p[0], [n+1] 0, [n+2, 2n+1] p[0] .. p[n-1], [2n+2] DBL_MAX.
  const std::vector<double>& limits = DefaultBucketLimits();
  const size_t n = (limits.size() - 3) / 2;
  const double* p = limits.data() + n + 2;
  if (value == 0) return n + 2;  // also -0.0
  if (value > 0) return n + 2 + CountPositiveLimits(p, n, value, /*strict=*/false);
  // First limit > value among the negatives: -p[j] > value  <=>  p[j] < -value.
  return n + 1 - CountPositiveLimits(p, n, -value, /*strict=*/true);
}

Histogram::Histogram(std::vector<double> limits)
    : limits_(std::make_shared<const std::vector<double>>(std::move(limits))) {
  Clear();
}

void Histogram::Clear() {
  min_ = limits_->back();
  max_ = -DBL_MAX;
  num_ = sum_ = sum_squares_ = 0;
  buckets_.assign(limits_->size(), 0.0);
}

void Histogram::Add(double value) {
  size_t b = default_limits_ ? DefaultBucketIndex(value)
                            : std::upper_bound(limits_->begin(), limits_->end(), value) - limits_->begin();
  // Values at or above the last limit go to the last bucket (TensorFlow's last limit is
  // DBL_MAX, so only custom limits reach this).
  if (b >= buckets_.size()) b = buckets_.size() - 1;
  buckets_[b] += 1.0;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  num_ += 1;
  sum_ += value;
  sum_squares_ += value * value;
}

void Histogram::EncodeToProto(HistogramProto* proto, bool preserve_zero_buckets) const {
  proto->Clear();
  proto->set_min(min_);
  proto->set_max(max_);
  proto->set_num(num_);
  proto->set_sum(sum_);
  proto->set_sum_squares(sum_squares_);
  for (size_t i = 0; i < buckets_.size();) {
    double end = (*limits_)[i];
    double count = buckets_[i];
    ++i;
    if (!preserve_zero_buckets && count <= 0.0) {
      while (i < buckets_.size() && buckets_[i] <= 0.0) {
        end = (*limits_)[i];
        count = buckets_[i];
        ++i;
      }
    }
    proto->add_bucket_limit(end);
    proto->add_bucket(count);
  }
  if (proto->bucket_size() == 0) {
    proto->add_bucket_limit(DBL_MAX);
    proto->add_bucket(0.0);
  }
}

}  // namespace sluice
