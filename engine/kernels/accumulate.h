// Arithmetic shared by the kernels that accumulate (scans, segment
// reductions, scatters): the type a running value is kept in, and integer
// sums and products that wrap around (computed in uint64_t: no signed
// overflow, and no promotion of uint16 to int) as TensorFlow's Eigen loops do
// in practice.
// Thread safety: pure functions.
#ifndef SLUICE_ENGINE_KERNELS_ACCUMULATE_H_
#define SLUICE_ENGINE_KERNELS_ACCUMULATE_H_

#include <cstdint>
#include <type_traits>

#include "engine/framework/types.h"

namespace sluice {

// float for half and bfloat16 (their sums lose little that way), else T
// itself: integers stay exact, double stays double. (nn_util.h's
// AccumulatorType is for floating kernels only: float for every type but
// double.)
template <typename T>
using RunningType =
    typename std::conditional<std::is_same<T, half>::value || std::is_same<T, bfloat16>::value, float, T>::type;

template <typename T>
T WrappingAdd(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return static_cast<T>(a + b);
  }
}

template <typename T>
T WrappingMul(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return static_cast<T>(a * b);
  }
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_ACCUMULATE_H_
