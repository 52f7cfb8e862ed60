// Histogram, following tensorflow/core/lib/histogram/histogram.cc.
#include "monitoring/histogram.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

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

namespace {

// For AddFloats: positive floats in cells of equal exponent and top 5 mantissa bits (a
// cell spans a factor of at most 1 + 2^-5, while consecutive limits differ by 1.1, so a
// cell holds at most one limit). For each cell, how many positive limits are <= (below_or_at)
// and < (below) its smallest value; a value then needs one comparison with the next limit.
constexpr int kCellShift = 18;  // 23 mantissa bits - 5
constexpr size_t kCells = size_t{1} << (31 - kCellShift);
// The vector path's cell words (FloatBucketTable::cell_words): the low kCellShift bits of the
// threshold inside the cell, 11 bits of count above them, then the in-cell flag.
constexpr int kCountShift = kCellShift;
constexpr uint32_t kCountBits = (1u << 11) - 1;
constexpr int kInCellShift = kCountShift + 11;
static_assert(kInCellShift < 31, "a cell word is 32 bits, and its top bit stays clear");

// The smallest float whose double value is >= limit (or > limit when `strict`): for a float a,
// limit <= a (limit < a) exactly when a >= the result. +infinity when no finite float is.
float FloatThreshold(double limit, bool strict) {
  auto passes = [&](float x) { return strict ? static_cast<double>(x) > limit : static_cast<double>(x) >= limit; };
  if (!(limit < static_cast<double>(FLT_MAX)) || !passes(FLT_MAX)) return std::numeric_limits<float>::infinity();
  float x = static_cast<float>(limit);
  while (!passes(x)) x = std::nextafter(x, std::numeric_limits<float>::infinity());
  for (float below = std::nextafter(x, -std::numeric_limits<float>::infinity()); passes(below);
       below = std::nextafter(x, -std::numeric_limits<float>::infinity())) {
    x = below;
  }
  return x;
}

struct FloatBucketTable {
  std::vector<uint16_t> at_or_below, below;
  std::vector<double> limits;  // the positive limits, then +infinity
  size_t n = 0;
  // For the vector path, one 32-bit word per cell, from the limits' float thresholds t[k] (the
  // smallest float >= p[k], FloatThreshold): at kCountShift the number of thresholds below the
  // cell's lowest float, at kInCellShift a flag set when a threshold lies in the cell, and below
  // kCellShift that threshold's low bits (its other bits are the cell's). Within a cell floats
  // order as their low bits, so for a positive float a in the cell:
  // #{k: p[k] <= a} = count + (flag && low(a) >= low(t)).
  // When no limit is exactly a float (so t[k] is also the smallest float > p[k]), the same
  // count is #{k: p[k] < a}, which negative values need. `vector_ok` says that holds.
  std::vector<uint32_t> cell_words;
  bool vector_ok = false;
  FloatBucketTable() {
    const std::vector<double>& all = Histogram::DefaultBucketLimits();
    n = (all.size() - 3) / 2;
    limits.assign(all.begin() + static_cast<std::ptrdiff_t>(n + 2), all.begin() + static_cast<std::ptrdiff_t>(2 * n + 2));
    limits.push_back(std::numeric_limits<double>::infinity());
    at_or_below.resize(kCells);
    below.resize(kCells);
    for (size_t cell = 0; cell < kCells; ++cell) {
      const uint32_t bits = static_cast<uint32_t>(cell << kCellShift);
      float lowest;
      std::memcpy(&lowest, &bits, sizeof(lowest));
      const double v = lowest;  // may be +inf or NaN for the top cells: no finite value lands there
      at_or_below[cell] = static_cast<uint16_t>(std::upper_bound(limits.begin(), limits.begin() + n, v) - limits.begin());
      below[cell] = static_cast<uint16_t>(std::lower_bound(limits.begin(), limits.begin() + n, v) - limits.begin());
    }
    vector_ok = n <= kCountBits;
    std::vector<uint32_t> threshold_bits;  // t[k] as bits, increasing
    for (size_t k = 0; k < n; ++k) {
      const float at_least = FloatThreshold(limits[k], /*strict=*/false);
      if (at_least != FloatThreshold(limits[k], /*strict=*/true)) vector_ok = false;
      uint32_t bits;
      std::memcpy(&bits, &at_least, sizeof(bits));
      threshold_bits.push_back(bits);
    }
    cell_words.resize(kCells);
    size_t k = 0;  // thresholds below the current cell
    for (size_t cell = 0; cell < kCells; ++cell) {
      const uint32_t lowest = static_cast<uint32_t>(cell << kCellShift);
      while (k < threshold_bits.size() && threshold_bits[k] < lowest) ++k;
      uint32_t word = static_cast<uint32_t>(k) << kCountShift;
      if (k < threshold_bits.size() && (threshold_bits[k] >> kCellShift) == cell) {
        word |= uint32_t{1} << kInCellShift | (threshold_bits[k] & ((uint32_t{1} << kCellShift) - 1));
        // A second threshold in one cell would break the one-comparison rule.
        if (k + 1 < threshold_bits.size() && (threshold_bits[k + 1] >> kCellShift) == cell) vector_ok = false;
      }
      cell_words[cell] = word;
    }
  }
};

const FloatBucketTable& GetFloatBucketTable() {
  static const FloatBucketTable* table = new FloatBucketTable;
  return *table;
}

}  // namespace

void Histogram::AddFloats(const float* values, size_t count) {
  if (count == 0) return;
  if (!default_limits_) {
    for (size_t i = 0; i < count; ++i) Add(values[i]);
    return;
  }
  const FloatBucketTable& t = GetFloatBucketTable();
  const uint16_t* at_or_below = t.at_or_below.data();
  const uint16_t* below = t.below.data();
  const double* p = t.limits.data();
  const size_t n = t.n;
  // Two count arrays, so runs of equal buckets do not serialize on one counter.
  std::vector<uint32_t> counts(2 * buckets_.size(), 0);
  uint32_t* even = counts.data();
  uint32_t* odd = counts.data() + buckets_.size();
  // The bucket of one value, without branches (signs are random in weights).
  auto bucket_of = [&](float v) -> size_t {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    const uint32_t cell = (bits & 0x7fffffffu) >> kCellShift;
    const double a = std::fabs(static_cast<double>(v));
    const size_t up = at_or_below[cell] + static_cast<size_t>(p[at_or_below[cell]] <= a);
    const size_t down = below[cell] + static_cast<size_t>(p[below[cell]] < a);
    // First limit > v: positive values and +-0 after the 0 limit at n + 1,
    // negative ones before it, counting down from -p[0] at index n.
    // Selected with a mask: as a conditional, GCC 12 emits a branch, which weights' random signs
    // mispredict half the time (monitoring_bench BM_Histogram/n:1048576/batched:1: 170 -> 273-326
    // million values/s; docs/PERFORMANCE.md, "Session 26").
    const size_t positive = static_cast<size_t>(((bits >> 31) == 0) | (a == 0));
    const size_t mask = 0 - positive;
    return ((n + 2 + up) & mask) | ((n + 1 - down) & ~mask);
  };
  double lo0 = min_, hi0 = max_, lo1 = min_, hi1 = max_;
  double sum0 = 0, sum1 = 0, square0 = 0, square1 = 0;
  size_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  // 8 values at a time: one gather of their cells' words (FloatBucketTable::cell_words) and one
  // integer comparison each (masks as all-ones lanes; the low-bit comparison is signed, which is
  // exact below 2^kCellShift); the buckets of up to 256 values go to a buffer, then into the
  // counts. The scalar loop below is ~30 instructions per value (monitoring_bench BM_Histogram
  // on 2^20 values: 3.2-3.9x; a 16-wide AVX-512 version ran no faster on Zen 4:
  // docs/PERFORMANCE.md, "Session 27").
  if (count >= 8 && t.vector_ok) {
    const int* cells = reinterpret_cast<const int*>(t.cell_words.data());
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i low_bits = _mm256_set1_epi32((1 << kCellShift) - 1);
    const __m256i count_bits = _mm256_set1_epi32(kCountBits);
    const __m256i in_cell_bit = _mm256_set1_epi32(1 << kInCellShift);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i positive_base = _mm256_set1_epi32(static_cast<int>(n + 2));
    const __m256i negative_base = _mm256_set1_epi32(static_cast<int>(n + 1));
    __m256 lo = _mm256_set1_ps(std::numeric_limits<float>::infinity());
    __m256 hi = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256d sums[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
    __m256d squares[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
    alignas(32) uint32_t index[256];
    while (i + 8 <= count) {
      const size_t block = std::min<size_t>((count - i) / 8 * 8, 256);
      for (size_t j = 0; j < block; j += 8) {
        const __m256 v = _mm256_loadu_ps(values + i + j);
        const __m256i bits = _mm256_castps_si256(v);
        const __m256i abs_bits = _mm256_and_si256(bits, abs_mask);
        const __m256i word = _mm256_i32gather_epi32(cells, _mm256_srli_epi32(abs_bits, kCellShift), 4);
        const __m256i below = _mm256_and_si256(_mm256_srli_epi32(word, kCountShift), count_bits);
        const __m256i in_cell = _mm256_cmpeq_epi32(_mm256_and_si256(word, in_cell_bit), in_cell_bit);
        const __m256i short_of_it = _mm256_cmpgt_epi32(_mm256_and_si256(word, low_bits), _mm256_and_si256(abs_bits, low_bits));
        const __m256i reached = _mm256_andnot_si256(short_of_it, in_cell);
        const __m256i limits_below = _mm256_sub_epi32(below, reached);  // reached lanes are -1
        const __m256i negative = _mm256_andnot_si256(_mm256_cmpeq_epi32(abs_bits, zero), _mm256_cmpgt_epi32(zero, bits));
        const __m256i bucket = _mm256_blendv_epi8(_mm256_add_epi32(positive_base, limits_below),
                                                  _mm256_sub_epi32(negative_base, limits_below), negative);
        _mm256_store_si256(reinterpret_cast<__m256i*>(index + j), bucket);
        lo = _mm256_min_ps(lo, v);
        hi = _mm256_max_ps(hi, v);
        const __m256d low_half = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
        const __m256d high_half = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
        sums[0] = _mm256_add_pd(sums[0], low_half);
        sums[1] = _mm256_add_pd(sums[1], high_half);
        squares[0] = _mm256_fmadd_pd(low_half, low_half, squares[0]);
        squares[1] = _mm256_fmadd_pd(high_half, high_half, squares[1]);
      }
      for (size_t j = 0; j < block; j += 2) {
        ++even[index[j]];
        ++odd[index[j + 1]];
      }
      i += block;
    }
    alignas(32) float lanes[8];
    alignas(32) double sum_lanes[4], square_lanes[4];
    _mm256_store_ps(lanes, lo);
    for (float x : lanes) lo0 = std::min(lo0, static_cast<double>(x));
    _mm256_store_ps(lanes, hi);
    for (float x : lanes) hi0 = std::max(hi0, static_cast<double>(x));
    _mm256_store_pd(sum_lanes, _mm256_add_pd(sums[0], sums[1]));
    _mm256_store_pd(square_lanes, _mm256_add_pd(squares[0], squares[1]));
    for (int l = 0; l < 4; ++l) {
      sum0 += sum_lanes[l];
      square0 += square_lanes[l];
    }
  }
#endif
  for (; i + 2 <= count; i += 2) {
    const float v0 = values[i], v1 = values[i + 1];
    ++even[bucket_of(v0)];
    ++odd[bucket_of(v1)];
    const double d0 = v0, d1 = v1;
    lo0 = std::min(lo0, d0);
    hi0 = std::max(hi0, d0);
    lo1 = std::min(lo1, d1);
    hi1 = std::max(hi1, d1);
    sum0 += d0;
    sum1 += d1;
    square0 += d0 * d0;
    square1 += d1 * d1;
  }
  if (i < count) {
    const float v = values[i];
    ++even[bucket_of(v)];
    const double d = v;
    lo0 = std::min(lo0, d);
    hi0 = std::max(hi0, d);
    sum0 += d;
    square0 += d * d;
  }
  for (size_t b = 0; b < buckets_.size(); ++b) buckets_[b] += static_cast<double>(even[b]) + static_cast<double>(odd[b]);
  min_ = std::min(lo0, lo1);
  max_ = std::max(hi0, hi1);
  num_ += static_cast<double>(count);
  sum_ += sum0 + sum1;
  sum_squares_ += square0 + square1;
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
