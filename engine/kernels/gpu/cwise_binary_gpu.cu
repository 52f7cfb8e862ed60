// Binary element-wise GPU kernels (LaunchBinary in cwise_gpu.h): arithmetic,
// comparisons and the activation-gradient helpers, over same-shape operands
// (4-wide vector path), a scalar operand, or a general numpy broadcast
// (collapsed dims, per-dim strides; 32-bit index math when the output has
// fewer than 2^31 elements).
#include <cstdint>
#include <type_traits>

#include "engine/kernels/gpu/cwise_gpu.h"
#include "engine/kernels/gpu/launch_util.cuh"

namespace sluice {
namespace gpu {
namespace {

using cu::BlocksFor;
using cu::kThreads;
using cu::Pack4;

// ---- Functors ----

template <BinaryOp OP>
struct Fn;

#define SLUICE_BINARY_FN_(OP, EXPR)                                   \
  template <>                                                         \
  struct Fn<BinaryOp::OP> {                                           \
    template <typename T>                                             \
    __device__ __forceinline__ auto operator()(T a, T b) const { return EXPR; } \
  }
SLUICE_BINARY_FN_(kAdd, static_cast<T>(a + b));
SLUICE_BINARY_FN_(kSub, static_cast<T>(a - b));
SLUICE_BINARY_FN_(kMul, static_cast<T>(a * b));
SLUICE_BINARY_FN_(kDiv, static_cast<T>(a / b));
// std::max / std::min semantics (the CPU kernels' Eigen scalar ops).
SLUICE_BINARY_FN_(kMax, (a < b) ? b : a);
SLUICE_BINARY_FN_(kMin, (b < a) ? b : a);
SLUICE_BINARY_FN_(kSquaredDifference, static_cast<T>((a - b) * (a - b)));
SLUICE_BINARY_FN_(kPow, cu::Pow(a, b));
SLUICE_BINARY_FN_(kLess, a < b);
SLUICE_BINARY_FN_(kLessEqual, a <= b);
SLUICE_BINARY_FN_(kGreater, a > b);
SLUICE_BINARY_FN_(kGreaterEqual, a >= b);
SLUICE_BINARY_FN_(kEqual, a == b);
SLUICE_BINARY_FN_(kNotEqual, a != b);
// (dy, x)
SLUICE_BINARY_FN_(kReluGrad, b > T(0) ? a : T(0));
// (dy, y)
SLUICE_BINARY_FN_(kEluGrad, b < T(0) ? a * (b + T(1)) : a);
// (y, dy)
SLUICE_BINARY_FN_(kTanhGrad, b * (T(1) - a * a));
SLUICE_BINARY_FN_(kSigmoidGrad, b * a * (T(1) - a));
SLUICE_BINARY_FN_(kSqrtGrad, b * T(0.5) / a);
SLUICE_BINARY_FN_(kRsqrtGrad, b * (a * a * a) * T(-0.5));
#undef SLUICE_BINARY_FN_

// ---- Kernels ----

// kMode: 0 same shape, 1 x is a scalar, 2 y is a scalar. `vec`: every
// non-scalar pointer is aligned for Pack4 (the host checked).
template <typename F, typename T, typename Tout, int kMode>
__global__ void __launch_bounds__(kThreads)
    BinaryFlatKernel(F f, const T* __restrict__ x, const T* __restrict__ y, Tout* __restrict__ out, int64_t n,
                     bool vec) {
  const T xs = kMode == 1 ? x[0] : T();
  const T ys = kMode == 2 ? y[0] : T();
  const int64_t stride = cu::GlobalStride();
  int64_t done = 0;
  if (vec) {
    const int64_t nv = n / 4;
    for (int64_t i = cu::GlobalThread(); i < nv; i += stride) {
      Pack4<T> a, b;
      Pack4<Tout> c;
      if (kMode != 1) a = reinterpret_cast<const Pack4<T>*>(x)[i];
      if (kMode != 2) b = reinterpret_cast<const Pack4<T>*>(y)[i];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        c.v[k] = f(kMode == 1 ? xs : a.v[k], kMode == 2 ? ys : b.v[k]);
      }
      reinterpret_cast<Pack4<Tout>*>(out)[i] = c;
    }
    done = nv * 4;
  }
  for (int64_t i = done + cu::GlobalThread(); i < n; i += stride) {
    out[i] = f(kMode == 1 ? xs : x[i], kMode == 2 ? ys : y[i]);
  }
}

template <typename Index>
struct BroadcastIndex {
  int rank;
  Index dims[kMaxBroadcastRank];
  Index xs[kMaxBroadcastRank];
  Index ys[kMaxBroadcastRank];
};

template <typename F, typename T, typename Tout, typename Index>
__global__ void __launch_bounds__(kThreads)
    BinaryBroadcastKernel(F f, const T* __restrict__ x, const T* __restrict__ y, Tout* __restrict__ out, Index n,
                          BroadcastIndex<Index> b) {
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    Index rem = i, xo = 0, yo = 0;
    for (int d = b.rank - 1; d > 0; --d) {
      const Index q = rem / b.dims[d];
      const Index r = rem - q * b.dims[d];
      xo += r * b.xs[d];
      yo += r * b.ys[d];
      rem = q;
    }
    xo += rem * b.xs[0];
    yo += rem * b.ys[0];
    out[i] = f(x[xo], y[yo]);
  }
}

template <typename Index>
BroadcastIndex<Index> ToIndex(const BroadcastShape& s) {
  BroadcastIndex<Index> b;
  b.rank = s.rank;
  for (int d = 0; d < kMaxBroadcastRank; ++d) {
    b.dims[d] = static_cast<Index>(d < s.rank ? s.dims[d] : 1);
    b.xs[d] = static_cast<Index>(d < s.rank ? s.x_strides[d] : 0);
    b.ys[d] = static_cast<Index>(d < s.rank ? s.y_strides[d] : 0);
  }
  return b;
}

template <BinaryOp OP, typename T>
cudaError_t Run(cudaStream_t stream, const void* xv, const void* yv, void* outv, int64_t n, BroadcastMode mode,
                const BroadcastShape& shape) {
  using F = Fn<OP>;
  using Tout = typename std::conditional<IsComparison(OP), bool, T>::type;
  const T* x = static_cast<const T*>(xv);
  const T* y = static_cast<const T*>(yv);
  Tout* out = static_cast<Tout*>(outv);
  switch (mode) {
    case BroadcastMode::kSame: {
      const bool vec = cu::Aligned4<T>(x) && cu::Aligned4<T>(y) && cu::Aligned4<Tout>(out);
      BinaryFlatKernel<F, T, Tout, 0><<<BlocksFor(vec ? (n + 3) / 4 : n), kThreads, 0, stream>>>(F(), x, y, out, n, vec);
      break;
    }
    case BroadcastMode::kXScalar: {
      const bool vec = cu::Aligned4<T>(y) && cu::Aligned4<Tout>(out);
      BinaryFlatKernel<F, T, Tout, 1><<<BlocksFor(vec ? (n + 3) / 4 : n), kThreads, 0, stream>>>(F(), x, y, out, n, vec);
      break;
    }
    case BroadcastMode::kYScalar: {
      const bool vec = cu::Aligned4<T>(x) && cu::Aligned4<Tout>(out);
      BinaryFlatKernel<F, T, Tout, 2><<<BlocksFor(vec ? (n + 3) / 4 : n), kThreads, 0, stream>>>(F(), x, y, out, n, vec);
      break;
    }
    case BroadcastMode::kGeneral:
      if (shape.rank < 1 || shape.rank > kMaxBroadcastRank) return cudaErrorInvalidValue;
      if (n <= INT32_MAX) {
        BinaryBroadcastKernel<F, T, Tout, int32_t><<<BlocksFor(n), kThreads, 0, stream>>>(
            F(), x, y, out, static_cast<int32_t>(n), ToIndex<int32_t>(shape));
      } else {
        BinaryBroadcastKernel<F, T, Tout, int64_t><<<BlocksFor(n), kThreads, 0, stream>>>(F(), x, y, out, n,
                                                                                        ToIndex<int64_t>(shape));
      }
      break;
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t RunFloating(cudaStream_t s, BinaryOp op, const void* x, const void* y, void* out, int64_t n,
                        BroadcastMode mode, const BroadcastShape& shape) {
  switch (op) {
#define SLUICE_CASE_(OP) \
  case BinaryOp::OP:     \
    return Run<BinaryOp::OP, T>(s, x, y, out, n, mode, shape);
    SLUICE_CASE_(kAdd)
    SLUICE_CASE_(kSub)
    SLUICE_CASE_(kMul)
    SLUICE_CASE_(kDiv)
    SLUICE_CASE_(kMax)
    SLUICE_CASE_(kMin)
    SLUICE_CASE_(kSquaredDifference)
    SLUICE_CASE_(kPow)
    SLUICE_CASE_(kLess)
    SLUICE_CASE_(kLessEqual)
    SLUICE_CASE_(kGreater)
    SLUICE_CASE_(kGreaterEqual)
    SLUICE_CASE_(kEqual)
    SLUICE_CASE_(kNotEqual)
    SLUICE_CASE_(kReluGrad)
    SLUICE_CASE_(kEluGrad)
    SLUICE_CASE_(kTanhGrad)
    SLUICE_CASE_(kSigmoidGrad)
    SLUICE_CASE_(kSqrtGrad)
    SLUICE_CASE_(kRsqrtGrad)
  }
  return cudaErrorInvalidValue;
}

cudaError_t RunInt64(cudaStream_t s, BinaryOp op, const void* x, const void* y, void* out, int64_t n,
                     BroadcastMode mode, const BroadcastShape& shape) {
  using T = int64_t;
  switch (op) {
    SLUICE_CASE_(kAdd)
    SLUICE_CASE_(kSub)
    SLUICE_CASE_(kMul)
    SLUICE_CASE_(kMax)
    SLUICE_CASE_(kMin)
    SLUICE_CASE_(kSquaredDifference)
    SLUICE_CASE_(kLess)
    SLUICE_CASE_(kLessEqual)
    SLUICE_CASE_(kGreater)
    SLUICE_CASE_(kGreaterEqual)
    SLUICE_CASE_(kEqual)
    SLUICE_CASE_(kNotEqual)
    default:
      break;
  }
  return cudaErrorInvalidValue;
}

cudaError_t RunBool(cudaStream_t s, BinaryOp op, const void* x, const void* y, void* out, int64_t n,
                    BroadcastMode mode, const BroadcastShape& shape) {
  using T = bool;
  switch (op) {
    SLUICE_CASE_(kEqual)
    SLUICE_CASE_(kNotEqual)
    default:
      break;
  }
  return cudaErrorInvalidValue;
#undef SLUICE_CASE_
}

}  // namespace

cudaError_t LaunchBinary(cudaStream_t stream, BinaryOp op, ElemType type, const void* x, const void* y, void* out,
                         int64_t n, BroadcastMode mode, const BroadcastShape& shape) {
  if (n <= 0) return cudaSuccess;
  switch (type) {
    case ElemType::kFloat:
      return RunFloating<float>(stream, op, x, y, out, n, mode, shape);
    case ElemType::kDouble:
      return RunFloating<double>(stream, op, x, y, out, n, mode, shape);
    case ElemType::kInt64:
      return RunInt64(stream, op, x, y, out, n, mode, shape);
    case ElemType::kBool:
      return RunBool(stream, op, x, y, out, n, mode, shape);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace gpu
}  // namespace sluice
