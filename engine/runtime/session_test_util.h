// Helpers shared by session tests (fusion_session_test, onednn_session_test):
// seeded random inputs for graphs whose results are compared across
// session options.
// Thread safety: free functions without shared state.
#ifndef SLUICE_ENGINE_RUNTIME_SESSION_TEST_UTIL_H_
#define SLUICE_ENGINE_RUNTIME_SESSION_TEST_UTIL_H_

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

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_SESSION_TEST_UTIL_H_
