// Launch functions of the element-wise GPU kernels (cwise_gpu.cu): binary
// ops with numpy broadcasting, unary math, Cast, fills and AddN. Plain C++
// over raw device pointers, so the OpKernel glue (cwise_ops_gpu.cc and
// friends, compiled by gcc) never sees CUDA device code.
//
// Every function enqueues its work on `stream` and returns the launch's error
// (cudaSuccess when n == 0: nothing is launched). Pointers are device
// pointers; element counts are int64. Kernels use grid-stride loops, 32-bit
// index arithmetic when everything fits, and 4-wide vector loads when the
// pointers allow.
// Thread safety: the functions are stateless.
#ifndef SLUICE_ENGINE_KERNELS_GPU_CWISE_GPU_H_
#define SLUICE_ENGINE_KERNELS_GPU_CWISE_GPU_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {

// Element types of device buffers the kernels handle.
enum class ElemType { kFloat, kDouble, kInt64, kInt32, kBool };

// Binary ops. Comparisons write bool; the others write the input type.
// The *Grad ops take same-shape operands:
//   kReluGrad(dy, x) = x > 0 ? dy : 0       kEluGrad(dy, y) = y < 0 ? dy * (y + 1) : dy
//   kTanhGrad(y, dy) = dy * (1 - y^2)      kSigmoidGrad(y, dy) = dy * y * (1 - y)
//   kSqrtGrad(y, dy) = dy * 0.5 / y        kRsqrtGrad(y, dy) = dy * y^3 * -0.5
enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kMax, kMin, kSquaredDifference, kPow,
  kLess, kLessEqual, kGreater, kGreaterEqual, kEqual, kNotEqual,
  kReluGrad, kEluGrad, kTanhGrad, kSigmoidGrad, kSqrtGrad, kRsqrtGrad,
};

// True for the ops whose output is bool.
constexpr bool IsComparison(BinaryOp op) {
  return op == BinaryOp::kLess || op == BinaryOp::kLessEqual || op == BinaryOp::kGreater ||
         op == BinaryOp::kGreaterEqual || op == BinaryOp::kEqual || op == BinaryOp::kNotEqual;
}

// How the operands line up with the output (cwise::BroadcastPlan's kinds).
enum class BroadcastMode { kSame, kXScalar, kYScalar, kGeneral };

constexpr int kMaxBroadcastRank = 8;

// kGeneral: the output collapsed to `rank` dims (innermost last) and each
// operand's element stride per dim (0 where it is broadcast).
struct BroadcastShape {
  int rank = 0;
  int64_t dims[kMaxBroadcastRank] = {};
  int64_t x_strides[kMaxBroadcastRank] = {};
  int64_t y_strides[kMaxBroadcastRank] = {};
};

// out[i] = op(x[...], y[...]) for the n output elements. `type`: kFloat,
// kDouble (every op); kInt64 (Add, Sub, Mul, Max, Min, SquaredDifference and
// the comparisons); kBool (Equal, NotEqual). cudaErrorInvalidValue for other
// combinations or a rank above kMaxBroadcastRank.
cudaError_t LaunchBinary(cudaStream_t stream, BinaryOp op, ElemType type, const void* x, const void* y, void* out,
                         int64_t n, BroadcastMode mode, const BroadcastShape& shape);

enum class UnaryOp {
  kNeg, kAbs, kSquare, kSqrt, kRsqrt, kExp, kLog, kLog1p, kTanh, kSigmoid, kReciprocal, kRelu, kElu,
};

// out[i] = op(x[i]). `type`: kFloat, kDouble; kInt64 for Neg, Abs, Square.
cudaError_t LaunchUnary(cudaStream_t stream, UnaryOp op, ElemType type, const void* x, void* out, int64_t n);

// out[i] = static_cast<dst>(x[i]) between any two of the ElemTypes (to bool:
// x != 0). In-device only: int32 buffers here are device buffers.
cudaError_t LaunchCast(cudaStream_t stream, ElemType src, ElemType dst, const void* x, void* out, int64_t n);

// out[i] = *value, where `value` is one element in device memory.
cudaError_t LaunchFillFromDevice(cudaStream_t stream, ElemType type, const void* value, void* out, int64_t n);

// out[i] = 1 (true for bool).
cudaError_t LaunchFillOnes(cudaStream_t stream, ElemType type, void* out, int64_t n);

// out[i] = sum of inputs[k][i] over k < num (num >= 1). `type`: kFloat,
// kDouble, kInt64. `inputs` is a host array of device pointers.
cudaError_t LaunchAddN(cudaStream_t stream, ElemType type, const void* const* inputs, int num, void* out, int64_t n);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_CWISE_GPU_H_
