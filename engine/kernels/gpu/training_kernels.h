// Launch functions for the GPU training ops: each optimizer update is ONE
// fused elementwise kernel over the variable and its slots, updated in place.
// The scalar hyperparameters (lr, momentum, beta1_power, ...) are device
// pointers to one value each, read by the kernel (never on the host), so an
// update never waits for the device. Update rules as engine/ops/training_ops.cc
// states them (float math for float, double for double).
// Each function enqueues on `stream` and returns the launch error.
// Instantiated for float and double.
// Thread safety: plain functions; the caller holds the variables' mutexes
// while enqueuing.
#ifndef SLUICE_ENGINE_KERNELS_GPU_TRAINING_KERNELS_H_
#define SLUICE_ENGINE_KERNELS_GPU_TRAINING_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {

// var -= alpha * delta
template <typename T>
cudaError_t LaunchApplyGradientDescent(cudaStream_t stream, T* var, const T* alpha, const T* delta, int64_t n);

// accum = accum * momentum + grad; var -= nesterov ? lr * grad + lr * momentum * accum : lr * accum
template <typename T>
cudaError_t LaunchApplyMomentum(cudaStream_t stream, T* var, T* accum, const T* lr, const T* grad, const T* momentum,
                                int64_t n, bool nesterov);

// lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (g - m) * (1 - beta1);
// v += (g^2 - v) * (1 - beta2); var -= lr_t * (nesterov ? m * beta1 + (1 - beta1) * g : m) / (sqrt(v) + epsilon)
template <typename T>
cudaError_t LaunchApplyAdam(cudaStream_t stream, T* var, T* m, T* v, const T* beta1_power, const T* beta2_power,
                            const T* lr, const T* beta1, const T* beta2, const T* epsilon, const T* grad, int64_t n,
                            bool nesterov);

// if update_slots: accum += grad^2; var -= lr * grad / sqrt(accum)
template <typename T>
cudaError_t LaunchApplyAdagrad(cudaStream_t stream, T* var, T* accum, const T* lr, const T* grad, int64_t n,
                               bool update_slots);

// ms = ms * rho + grad^2 * (1 - rho); mom = mom * momentum + lr * grad / sqrt(ms + epsilon); var -= mom
template <typename T>
cudaError_t LaunchApplyRMSProp(cudaStream_t stream, T* var, T* ms, T* mom, const T* lr, const T* rho,
                               const T* momentum, const T* epsilon, const T* grad, int64_t n);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_TRAINING_KERNELS_H_
