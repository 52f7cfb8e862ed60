// Host-side helpers for the OpKernel glue of engine/kernels/gpu (gcc-compiled
// .cc files): DataType -> the launch functions' ElemType, a cwise
// BroadcastPlan -> the kernels' BroadcastShape, and the kernel's compute
// stream.
// Thread safety: pure functions.
#ifndef SLUICE_ENGINE_KERNELS_GPU_GPU_KERNEL_UTIL_H_
#define SLUICE_ENGINE_KERNELS_GPU_GPU_KERNEL_UTIL_H_

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/cwise_ops_common.h"
#include "engine/kernels/gpu/cwise_gpu.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {

// False for dtypes the GPU kernels do not handle.
inline bool ToElemType(DataType dtype, ElemType* out) {
  switch (dtype) {
    case DT_FLOAT: *out = ElemType::kFloat; return true;
    case DT_DOUBLE: *out = ElemType::kDouble; return true;
    case DT_INT64: *out = ElemType::kInt64; return true;
    case DT_INT32: *out = ElemType::kInt32; return true;
    case DT_BOOL: *out = ElemType::kBool; return true;
    default: return false;
  }
}

template <typename T>
ElemType ElemTypeOf();
template <>
inline ElemType ElemTypeOf<float>() { return ElemType::kFloat; }
template <>
inline ElemType ElemTypeOf<double>() { return ElemType::kDouble; }
template <>
inline ElemType ElemTypeOf<int64_t>() { return ElemType::kInt64; }
template <>
inline ElemType ElemTypeOf<bool>() { return ElemType::kBool; }

inline BroadcastMode ToMode(cwise::BroadcastPlan::Kind kind) {
  switch (kind) {
    case cwise::BroadcastPlan::kSame: return BroadcastMode::kSame;
    case cwise::BroadcastPlan::kXScalar: return BroadcastMode::kXScalar;
    case cwise::BroadcastPlan::kYScalar: return BroadcastMode::kYScalar;
    case cwise::BroadcastPlan::kGeneral: break;
  }
  return BroadcastMode::kGeneral;
}

// Unimplemented when the collapsed broadcast has more than kMaxBroadcastRank dims.
inline absl::Status ToBroadcastShape(const cwise::BroadcastPlan& plan, BroadcastShape* shape) {
  shape->rank = 0;
  if (plan.kind != cwise::BroadcastPlan::kGeneral) return absl::OkStatus();
  const int rank = static_cast<int>(plan.dims.size());
  if (rank > kMaxBroadcastRank) {
    return absl::UnimplementedError(absl::StrCat("GPU broadcasting supports up to ", kMaxBroadcastRank,
                                                 " collapsed dimensions, got ", rank, " for output shape ",
                                                 plan.out_shape.DebugString()));
  }
  shape->rank = rank;
  for (int d = 0; d < rank; ++d) {
    shape->dims[d] = plan.dims[d];
    shape->x_strides[d] = plan.x_strides[d];
    shape->y_strides[d] = plan.y_strides[d];
  }
  return absl::OkStatus();
}

inline cudaStream_t ComputeStream(OpKernelContext* ctx) { return GetGpuDevice(ctx)->compute_stream(); }

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_GPU_KERNEL_UTIL_H_
