// Histogram: TensorFlow's summary histogram (tensorflow/core/lib/histogram), so our
// HistogramProtos match what TensorFlow writes for the same values. Default bucket limits:
// -DBL_MAX, then -1e20.. -1e-12 (exponential, factor 1.1, mirrored), 0, 1e-12 .. <1e20, DBL_MAX.
// A value v falls in the first bucket whose limit is > v (upper_bound), i.e. buckets are
// [limit[i-1], limit[i]).
// Ownership: value type. Thread safety: none (one thread, or external locking).
#ifndef SLUICE_MONITORING_HISTOGRAM_H_
#define SLUICE_MONITORING_HISTOGRAM_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "monitoring/histogram.pb.h"

namespace sluice {

class Histogram {
 public:
  // With the default bucket limits.
  Histogram();
  // REQUIRES: `limits` non-empty and strictly increasing (the caller checks; see
  // ValidBucketLimits).
  explicit Histogram(std::vector<double> limits);

  static bool ValidBucketLimits(absl::Span<const double> limits);
  // The default limits (shared, built once).
  static const std::vector<double>& DefaultBucketLimits();

  void Clear();
  // REQUIRES: finite `value` (the summary kernel rejects NaN and infinities first).
  void Add(double value);
  // The bucket Add puts `value` in with the default limits: the index of the first limit
  // > value (upper_bound), clamped to the last bucket. Guesses the index from the value's
  // binary exponent and mantissa (the positive limits are about 1e-12 * 1.1^k) and steps to the
  // exact answer against the table, so it equals the binary search, several times faster.
  // REQUIRES: finite `value`.
  static size_t DefaultBucketIndex(double value);
  // Add for each of values[0, n): the same buckets, min, max (up to the sign of a zero) and
  // num; sum and sum_squares are summed in another order (several partial sums), so their last bits may differ.
  // With the default limits a float's bucket comes from a table indexed by its exponent and
  // top mantissa bits plus one comparison, without branches (with AVX2, for 8 values
  // at a time).
  // REQUIRES: every value finite.
  void AddFloats(const float* values, size_t n);

  // Like TensorFlow's EncodeToProto: min, max, num, sum, sum_squares, then the buckets. Unless
  // `preserve_zero_buckets`, each run of empty buckets collapses into one entry carrying the
  // run's last limit and count 0. An empty histogram encodes one bucket (DBL_MAX, 0).
  void EncodeToProto(HistogramProto* proto, bool preserve_zero_buckets) const;

  double num() const { return num_; }
  double min() const { return min_; }
  double max() const { return max_; }

 private:
  std::shared_ptr<const std::vector<double>> limits_;  // shared with copies (and the defaults)
  bool default_limits_ = false;  // limits_ is DefaultBucketLimits(): Add finds buckets arithmetically
  std::vector<double> buckets_;
  double min_, max_, num_, sum_, sum_squares_;
};

}  // namespace sluice

#endif  // SLUICE_MONITORING_HISTOGRAM_H_
