// Reshape's output shape: the requested shape (at most one -1, inferred)
// resolved against the input's element count, with one set of error
// messages for the CPU kernel (shape_ops.cc) and the GPU kernel
// (gpu/state_ops_gpu.cc). Device-neutral (no CUDA); reads the shape tensor
// on the host (the GPU's int32 shape input lives in host memory).
// Thread safety: a pure function.
#ifndef SLUICE_ENGINE_KERNELS_RESHAPE_UTIL_H_
#define SLUICE_ENGINE_KERNELS_RESHAPE_UTIL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "engine/framework/tensor.h"

namespace sluice {

// `shape_t`: a vector (or scalar) of int32 or int64 sizes, at most one of
// them -1. InvalidArgument unless the shape holds exactly `num_elements`.
absl::StatusOr<TensorShape> ReshapeOutputShape(const Tensor& shape_t, int64_t num_elements);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_RESHAPE_UTIL_H_
