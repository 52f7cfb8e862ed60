// Helpers shared by session tests (fusion_session_test, onednn_session_test,
// winograd_session_test): seeded random inputs for graphs whose results are
// compared across session options, and the comparison.
// Thread safety: free functions without shared state.
#ifndef SLUICE_ENGINE_RUNTIME_SESSION_TEST_UTIL_H_
#define SLUICE_ENGINE_RUNTIME_SESSION_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "engine/framework/tensor.h"

namespace sluice {

// A float tensor of `shape`, uniform in [-1, 1) from `seed`.
inline Tensor RandomFloats(const TensorShape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t(DT_FLOAT, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = u(rng);
  return t;
}

// How far two float tensors of one shape are apart: the largest difference
// and the largest magnitude in `reference`.
struct FloatDifference {
  double worst = 0, scale = 0;
};
inline FloatDifference CompareFloats(const Tensor& reference, const Tensor& other) {
  FloatDifference d;
  const float* a = reference.data<float>();
  const float* b = other.data<float>();
  for (int64_t j = 0; j < reference.NumElements(); ++j) {
    d.worst = std::max(d.worst, static_cast<double>(std::abs(a[j] - b[j])));
    d.scale = std::max(d.scale, static_cast<double>(std::abs(a[j])));
  }
  return d;
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_SESSION_TEST_UTIL_H_
