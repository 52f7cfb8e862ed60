// CUDA kernels for the training ops (training_kernels.h): one grid-stride
// elementwise kernel per optimizer, scalars loaded from device memory once
// per thread.
#include "engine/kernels/gpu/training_kernels.h"

#include <algorithm>

namespace sluice {
namespace gpu {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(int64_t n) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads, 8192)));
}

__device__ __forceinline__ float Sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double Sqrt(double x) { return sqrt(x); }

#define SLUICE_GRID_STRIDE_(i, n)                                                              \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <typename T>
__global__ void GradientDescentKernel(T* __restrict__ var, const T* __restrict__ alpha_p,
                                      const T* __restrict__ delta, int64_t n) {
  const T alpha = *alpha_p;
  SLUICE_GRID_STRIDE_(i, n) { var[i] = var[i] - alpha * delta[i]; }
}

template <typename T, bool kNesterov>
__global__ void MomentumKernel(T* __restrict__ var, T* __restrict__ accum, const T* __restrict__ lr_p,
                               const T* __restrict__ grad, const T* __restrict__ momentum_p, int64_t n) {
  const T lr = *lr_p, momentum = *momentum_p;
  SLUICE_GRID_STRIDE_(i, n) {
    const T g = grad[i];
    const T a = accum[i] * momentum + g;
    accum[i] = a;
    const T step = kNesterov ? g * lr + a * momentum * lr : lr * a;
    var[i] = var[i] - step;
  }
}

template <typename T, bool kNesterov>
__global__ void AdamKernel(T* __restrict__ var, T* __restrict__ m, T* __restrict__ v,
                           const T* __restrict__ beta1_power_p, const T* __restrict__ beta2_power_p,
                           const T* __restrict__ lr_p, const T* __restrict__ beta1_p, const T* __restrict__ beta2_p,
                           const T* __restrict__ epsilon_p, const T* __restrict__ grad, int64_t n) {
  const T beta1 = *beta1_p, beta2 = *beta2_p, epsilon = *epsilon_p;
  const T lr_t = *lr_p * Sqrt(T(1) - *beta2_power_p) / (T(1) - *beta1_power_p);
  SLUICE_GRID_STRIDE_(i, n) {
    const T g = grad[i];
    const T mi = m[i] + (g - m[i]) * (T(1) - beta1);
    const T vi = v[i] + (g * g - v[i]) * (T(1) - beta2);
    m[i] = mi;
    v[i] = vi;
    const T numerator = kNesterov ? mi * beta1 + (T(1) - beta1) * g : mi;
    var[i] = var[i] - lr_t * numerator / (Sqrt(vi) + epsilon);
  }
}

template <typename T, bool kUpdate>
__global__ void AdagradKernel(T* __restrict__ var, T* __restrict__ accum, const T* __restrict__ lr_p,
                              const T* __restrict__ grad, int64_t n) {
  const T lr = *lr_p;
  SLUICE_GRID_STRIDE_(i, n) {
    const T g = grad[i];
    T a = accum[i];
    if (kUpdate) {
      a += g * g;
      accum[i] = a;
    }
    var[i] = var[i] - lr * g / Sqrt(a);
  }
}

template <typename T>
__global__ void RMSPropKernel(T* __restrict__ var, T* __restrict__ ms, T* __restrict__ mom, const T* __restrict__ lr_p,
                              const T* __restrict__ rho_p, const T* __restrict__ momentum_p,
                              const T* __restrict__ epsilon_p, const T* __restrict__ grad, int64_t n) {
  const T lr = *lr_p, rho = *rho_p, momentum = *momentum_p, epsilon = *epsilon_p;
  SLUICE_GRID_STRIDE_(i, n) {
    const T g = grad[i];
    const T m2 = ms[i] * rho + g * g * (T(1) - rho);
    ms[i] = m2;
    const T mo = mom[i] * momentum + lr * g / Sqrt(m2 + epsilon);
    mom[i] = mo;
    var[i] = var[i] - mo;
  }
}

#undef SLUICE_GRID_STRIDE_

}  // namespace

template <typename T>
cudaError_t LaunchApplyGradientDescent(cudaStream_t stream, T* var, const T* alpha, const T* delta, int64_t n) {
  if (n <= 0) return cudaSuccess;
  GradientDescentKernel<T><<<Blocks(n), kThreads, 0, stream>>>(var, alpha, delta, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchApplyMomentum(cudaStream_t stream, T* var, T* accum, const T* lr, const T* grad, const T* momentum,
                                int64_t n, bool nesterov) {
  if (n <= 0) return cudaSuccess;
  if (nesterov) {
    MomentumKernel<T, true><<<Blocks(n), kThreads, 0, stream>>>(var, accum, lr, grad, momentum, n);
  } else {
    MomentumKernel<T, false><<<Blocks(n), kThreads, 0, stream>>>(var, accum, lr, grad, momentum, n);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchApplyAdam(cudaStream_t stream, T* var, T* m, T* v, const T* beta1_power, const T* beta2_power,
                            const T* lr, const T* beta1, const T* beta2, const T* epsilon, const T* grad, int64_t n,
                            bool nesterov) {
  if (n <= 0) return cudaSuccess;
  if (nesterov) {
    AdamKernel<T, true><<<Blocks(n), kThreads, 0, stream>>>(var, m, v, beta1_power, beta2_power, lr, beta1, beta2,
                                                            epsilon, grad, n);
  } else {
    AdamKernel<T, false><<<Blocks(n), kThreads, 0, stream>>>(var, m, v, beta1_power, beta2_power, lr, beta1, beta2,
                                                             epsilon, grad, n);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchApplyAdagrad(cudaStream_t stream, T* var, T* accum, const T* lr, const T* grad, int64_t n,
                               bool update_slots) {
  if (n <= 0) return cudaSuccess;
  if (update_slots) {
    AdagradKernel<T, true><<<Blocks(n), kThreads, 0, stream>>>(var, accum, lr, grad, n);
  } else {
    AdagradKernel<T, false><<<Blocks(n), kThreads, 0, stream>>>(var, accum, lr, grad, n);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchApplyRMSProp(cudaStream_t stream, T* var, T* ms, T* mom, const T* lr, const T* rho,
                               const T* momentum, const T* epsilon, const T* grad, int64_t n) {
  if (n <= 0) return cudaSuccess;
  RMSPropKernel<T><<<Blocks(n), kThreads, 0, stream>>>(var, ms, mom, lr, rho, momentum, epsilon, grad, n);
  return cudaGetLastError();
}

#define SLUICE_INSTANTIATE_TRAINING_(T)                                                                            \
  template cudaError_t LaunchApplyGradientDescent<T>(cudaStream_t, T*, const T*, const T*, int64_t);               \
  template cudaError_t LaunchApplyMomentum<T>(cudaStream_t, T*, T*, const T*, const T*, const T*, int64_t, bool);  \
  template cudaError_t LaunchApplyAdam<T>(cudaStream_t, T*, T*, T*, const T*, const T*, const T*, const T*,        \
                                          const T*, const T*, const T*, int64_t, bool);                            \
  template cudaError_t LaunchApplyAdagrad<T>(cudaStream_t, T*, T*, const T*, const T*, int64_t, bool);             \
  template cudaError_t LaunchApplyRMSProp<T>(cudaStream_t, T*, T*, T*, const T*, const T*, const T*, const T*,     \
                                             const T*, int64_t)
SLUICE_INSTANTIATE_TRAINING_(float);
SLUICE_INSTANTIATE_TRAINING_(double);
#undef SLUICE_INSTANTIATE_TRAINING_

}  // namespace gpu
}  // namespace sluice
