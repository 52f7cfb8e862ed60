// Host-side shape checks and output shapes of MatMul and BatchMatMul(V2),
// shared by the CPU kernels (matmul_op.cc, batch_matmul_op.cc) and the GPU
// kernels (gpu/matmul_ops_gpu.cc): one set of error messages. Device-neutral
// (no CUDA).
// Thread safety: pure functions.
#ifndef SLUICE_ENGINE_KERNELS_MATMUL_SHAPE_H_
#define SLUICE_ENGINE_KERNELS_MATMUL_SHAPE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "engine/framework/tensor_shape.h"
#include "engine/kernels/cwise_ops_common.h"

namespace sluice {

// MatMul of a [m, k] (transpose_a: [k, m]) and b [k, n] (transpose_b: [n, k]).
struct MatMulShape {
  int a_inner = 1, b_inner = 0;  // the contracted dimension of a and of b
  int64_t k = 0;
  TensorShape out;  // [m, n]
};

// InvalidArgument unless a and b are matrices with equal inner dimensions;
// fills `s` otherwise.
absl::Status ComputeMatMulShape(const TensorShape& a, const TensorShape& b, bool transpose_a, bool transpose_b,
                                MatMulShape* s);

// BatchMatMul (broadcast false: equal batch dims) and BatchMatMulV2
// (broadcast true: numpy-broadcast batch dims) of x [..., m, k] (adj_x:
// [..., k, m]) and y [..., k, n] (adj_y: [..., n, k]).
struct BatchMatMulShape {
  int64_t xr = 0, xc = 0, yr = 0, yc = 0;  // the stored matrix sizes of x and y
  int64_t m = 0, n = 0, k = 0;
  TensorShape bx, by;         // the batch dims of x and y
  cwise::BroadcastPlan plan;  // bx against by; plan.out_shape: the output's batch dims
  TensorShape out;            // plan.out_shape + [m, n]
};

absl::Status ComputeBatchMatMulShape(const TensorShape& x, const TensorShape& y, bool adj_x, bool adj_y, bool broadcast,
                                     BatchMatMulShape* s);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_MATMUL_SHAPE_H_
