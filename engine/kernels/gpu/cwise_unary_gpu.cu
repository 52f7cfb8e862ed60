// Unary element-wise GPU kernels (cwise_gpu.h): math ops, Cast, fills and
// AddN. Flat grid-stride loops with a 4-wide vector path when the pointers
// are aligned.
#include <cstdint>

#include "engine/kernels/gpu/cwise_gpu.h"
#include "engine/kernels/gpu/launch_util.cuh"

namespace sluice {
namespace gpu {
namespace {

using cu::BlocksFor;
using cu::kThreads;
using cu::Pack4;

template <UnaryOp OP>
struct Fn;

#define SLUICE_UNARY_FN_(OP, EXPR)                                                      \
  template <>                                                                           \
  struct Fn<UnaryOp::OP> {                                                              \
    template <typename T>                                                               \
    __device__ __forceinline__ T operator()(T a) const { return static_cast<T>(EXPR); } \
  }
SLUICE_UNARY_FN_(kNeg, -a);
SLUICE_UNARY_FN_(kAbs, cu::Abs(a));
SLUICE_UNARY_FN_(kSquare, a * a);
SLUICE_UNARY_FN_(kSqrt, cu::Sqrt(a));
SLUICE_UNARY_FN_(kRsqrt, cu::Rsqrt(a));
SLUICE_UNARY_FN_(kExp, cu::Exp(a));
SLUICE_UNARY_FN_(kLog, cu::Log(a));
SLUICE_UNARY_FN_(kLog1p, cu::Log1p(a));
SLUICE_UNARY_FN_(kTanh, cu::Tanh(a));
SLUICE_UNARY_FN_(kSigmoid, T(1) / (T(1) + cu::Exp(-a)));
SLUICE_UNARY_FN_(kReciprocal, T(1) / a);
// max(a, 0) as Eigen's cwiseMax (std::max): a NaN stays NaN.
SLUICE_UNARY_FN_(kRelu, a < T(0) ? T(0) : a);
SLUICE_UNARY_FN_(kElu, a < T(0) ? cu::Expm1(a) : a);
#undef SLUICE_UNARY_FN_

template <typename Src, typename Dst>
struct CastFn {
  __device__ __forceinline__ Dst operator()(Src a) const { return static_cast<Dst>(a); }
};
template <typename Src>
struct CastFn<Src, bool> {
  __device__ __forceinline__ bool operator()(Src a) const { return a != Src(0); }
};

// out[i] = f(x[i]); `vec`: x and out are aligned for Pack4.
template <typename F, typename T, typename Tout>
__global__ void __launch_bounds__(kThreads)
    MapKernel(F f, const T* __restrict__ x, Tout* __restrict__ out, int64_t n, bool vec) {
  const int64_t stride = cu::GlobalStride();
  int64_t done = 0;
  if (vec) {
    const int64_t nv = n / 4;
    for (int64_t i = cu::GlobalThread(); i < nv; i += stride) {
      const Pack4<T> a = reinterpret_cast<const Pack4<T>*>(x)[i];
      Pack4<Tout> c;
#pragma unroll
      for (int k = 0; k < 4; ++k) c.v[k] = f(a.v[k]);
      reinterpret_cast<Pack4<Tout>*>(out)[i] = c;
    }
    done = nv * 4;
  }
  for (int64_t i = done + cu::GlobalThread(); i < n; i += stride) out[i] = f(x[i]);
}

template <typename F, typename T, typename Tout>
cudaError_t Map(cudaStream_t stream, const void* xv, void* outv, int64_t n) {
  const T* x = static_cast<const T*>(xv);
  Tout* out = static_cast<Tout*>(outv);
  const bool vec = cu::Aligned4<T>(x) && cu::Aligned4<Tout>(out);
  MapKernel<F, T, Tout><<<BlocksFor(vec ? (n + 3) / 4 : n), kThreads, 0, stream>>>(F(), x, out, n, vec);
  return cudaGetLastError();
}

template <typename T>
cudaError_t RunUnary(cudaStream_t s, UnaryOp op, const void* x, void* out, int64_t n) {
  switch (op) {
#define SLUICE_CASE_(OP) \
  case UnaryOp::OP:      \
    return Map<Fn<UnaryOp::OP>, T, T>(s, x, out, n);
    SLUICE_CASE_(kNeg)
    SLUICE_CASE_(kAbs)
    SLUICE_CASE_(kSquare)
    SLUICE_CASE_(kSqrt)
    SLUICE_CASE_(kRsqrt)
    SLUICE_CASE_(kExp)
    SLUICE_CASE_(kLog)
    SLUICE_CASE_(kLog1p)
    SLUICE_CASE_(kTanh)
    SLUICE_CASE_(kSigmoid)
    SLUICE_CASE_(kReciprocal)
    SLUICE_CASE_(kRelu)
    SLUICE_CASE_(kElu)
  }
  return cudaErrorInvalidValue;
}

cudaError_t RunUnaryInt64(cudaStream_t s, UnaryOp op, const void* x, void* out, int64_t n) {
  using T = int64_t;
  switch (op) {
    SLUICE_CASE_(kNeg)
    SLUICE_CASE_(kAbs)
    SLUICE_CASE_(kSquare)
    default:
      break;
  }
  return cudaErrorInvalidValue;
#undef SLUICE_CASE_
}

template <typename Src>
cudaError_t CastFrom(cudaStream_t s, ElemType dst, const void* x, void* out, int64_t n) {
  switch (dst) {
    case ElemType::kFloat:
      return Map<CastFn<Src, float>, Src, float>(s, x, out, n);
    case ElemType::kDouble:
      return Map<CastFn<Src, double>, Src, double>(s, x, out, n);
    case ElemType::kInt64:
      return Map<CastFn<Src, int64_t>, Src, int64_t>(s, x, out, n);
    case ElemType::kInt32:
      return Map<CastFn<Src, int32_t>, Src, int32_t>(s, x, out, n);
    case ElemType::kBool:
      return Map<CastFn<Src, bool>, Src, bool>(s, x, out, n);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) FillFromDeviceKernel(const T* __restrict__ value, T* __restrict__ out,
                                                                  int64_t n) {
  const T v = *value;
  const int64_t stride = cu::GlobalStride();
  for (int64_t i = cu::GlobalThread(); i < n; i += stride) out[i] = v;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) FillValueKernel(T v, T* __restrict__ out, int64_t n) {
  const int64_t stride = cu::GlobalStride();
  for (int64_t i = cu::GlobalThread(); i < n; i += stride) out[i] = v;
}

constexpr int kAddNMax = 8;
template <typename T>
struct AddNInputs {
  const T* p[kAddNMax];
};

// out[i] = (accumulate ? out[i] : 0) + sum of in.p[k][i] for k < num.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    AddNKernel(AddNInputs<T> in, int num, bool accumulate, T* __restrict__ out, int64_t n) {
  const int64_t stride = cu::GlobalStride();
  for (int64_t i = cu::GlobalThread(); i < n; i += stride) {
    T s = accumulate ? out[i] : in.p[0][i];
#pragma unroll
    for (int k = accumulate ? 0 : 1; k < kAddNMax; ++k) {
      if (k < num) s += in.p[k][i];
    }
    out[i] = s;
  }
}

template <typename T>
cudaError_t AddN(cudaStream_t stream, const void* const* inputs, int num, void* outv, int64_t n) {
  T* out = static_cast<T*>(outv);
  int k = 0;
  bool accumulate = false;
  while (k < num) {
    AddNInputs<T> in = {};
    const int take = num - k < kAddNMax ? num - k : kAddNMax;
    for (int j = 0; j < take; ++j) in.p[j] = static_cast<const T*>(inputs[k + j]);
    AddNKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(in, take, accumulate, out, n);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    k += take;
    accumulate = true;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t LaunchUnary(cudaStream_t stream, UnaryOp op, ElemType type, const void* x, void* out, int64_t n) {
  if (n <= 0) return cudaSuccess;
  switch (type) {
    case ElemType::kFloat:
      return RunUnary<float>(stream, op, x, out, n);
    case ElemType::kDouble:
      return RunUnary<double>(stream, op, x, out, n);
    case ElemType::kInt64:
      return RunUnaryInt64(stream, op, x, out, n);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchCast(cudaStream_t stream, ElemType src, ElemType dst, const void* x, void* out, int64_t n) {
  if (n <= 0) return cudaSuccess;
  switch (src) {
    case ElemType::kFloat:
      return CastFrom<float>(stream, dst, x, out, n);
    case ElemType::kDouble:
      return CastFrom<double>(stream, dst, x, out, n);
    case ElemType::kInt64:
      return CastFrom<int64_t>(stream, dst, x, out, n);
    case ElemType::kInt32:
      return CastFrom<int32_t>(stream, dst, x, out, n);
    case ElemType::kBool:
      return CastFrom<bool>(stream, dst, x, out, n);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchFillFromDevice(cudaStream_t stream, ElemType type, const void* value, void* out, int64_t n) {
  if (n <= 0) return cudaSuccess;
  switch (type) {
#define SLUICE_FILL_(E, T)                                                                           \
  case ElemType::E:                                                                                  \
    FillFromDeviceKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(static_cast<const T*>(value),     \
                                                                   static_cast<T*>(out), n);         \
    return cudaGetLastError();
    SLUICE_FILL_(kFloat, float)
    SLUICE_FILL_(kDouble, double)
    SLUICE_FILL_(kInt64, int64_t)
    SLUICE_FILL_(kInt32, int32_t)
    SLUICE_FILL_(kBool, bool)
#undef SLUICE_FILL_
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchFillOnes(cudaStream_t stream, ElemType type, void* out, int64_t n) {
  if (n <= 0) return cudaSuccess;
  switch (type) {
#define SLUICE_FILL_(E, T)                                                                      \
  case ElemType::E:                                                                             \
    FillValueKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(T(1), static_cast<T*>(out), n);   \
    return cudaGetLastError();
    SLUICE_FILL_(kFloat, float)
    SLUICE_FILL_(kDouble, double)
    SLUICE_FILL_(kInt64, int64_t)
    SLUICE_FILL_(kInt32, int32_t)
    SLUICE_FILL_(kBool, bool)
#undef SLUICE_FILL_
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchAddN(cudaStream_t stream, ElemType type, const void* const* inputs, int num, void* out, int64_t n) {
  if (n <= 0) return cudaSuccess;
  if (num < 1) return cudaErrorInvalidValue;
  switch (type) {
    case ElemType::kFloat:
      return AddN<float>(stream, inputs, num, out, n);
    case ElemType::kDouble:
      return AddN<double>(stream, inputs, num, out, n);
    case ElemType::kInt64:
      return AddN<int64_t>(stream, inputs, num, out, n);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace gpu
}  // namespace sluice
