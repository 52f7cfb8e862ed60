// Host-side axis checks and output shapes of the reductions (Sum, Mean, Prod,
// Max, Min) and of ArgMax/ArgMin, shared by the CPU kernels
// (reduction_ops.cc) and the GPU kernels (gpu/reduction_ops.cc): one set of
// error messages. Axis tensors are int32 or int64, read on the host (a GPU
// keeps int32 in host memory). Device-neutral (no CUDA).
// Thread safety: pure functions.
#ifndef SLUICE_ENGINE_KERNELS_REDUCTION_SHAPE_H_
#define SLUICE_ENGINE_KERNELS_REDUCTION_SHAPE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "engine/framework/tensor.h"

namespace sluice {

struct ReductionShape {
  std::vector<bool> reduce;  // per input dim: whether it is reduced
  int64_t count = 1;         // elements combined into each output element
  TensorShape out;           // reduced dims dropped, or 1 with keep_dims
};

// `axes`: a scalar or vector of axes in [-rank, rank) of `in`.
absl::Status ComputeReductionShape(const TensorShape& in, const Tensor& axes, bool keep_dims, ReductionShape* r);

// ArgMax/ArgMin over one axis: the input viewed as [A, R, B].
struct ArgReductionShape {
  int axis = 0;
  int64_t A = 1, R = 1, B = 1;
  TensorShape out;  // the input's shape without `axis`
};

// `axis_t`: one axis in [-rank, rank) of `in`, whose size is not 0.
absl::Status ComputeArgReductionShape(const TensorShape& in, const Tensor& axis_t, ArgReductionShape* r);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_REDUCTION_SHAPE_H_
