// GpuDevice: one CUDA GPU as a Device (DESIGN.md "Devices"; whitepaper §3.2,
// §5.3-5.4). Built only with the CUDA libraries (//engine/runtime/gpu), linked
// into `train` by --config=cuda; DeviceMgr::Local() gets it from a registered
// LocalDeviceFactory when the process sees a GPU.
//
// The execution model (TensorFlow's):
//   * Kernels are ordinary OpKernels that enqueue their work on the device's
//     one compute stream and return; they never wait for the GPU. Work on one
//     stream runs in order, so a buffer freed by the host (its Tensor's last
//     reference dropped) may be handed out again at once: every later use of
//     the memory is also on the compute stream, after the earlier one.
//   * Memory: tensors of every dtype but int32 live in device memory, from a
//     best-fit-with-coalescing allocator over one large cudaMalloc (stats in
//     /metrics). int32 tensors (shapes, axes, sizes, int32 labels) live in
//     pinned host memory, as in TensorFlow, so kernels read them on the host.
//     Device::HostMemory(dtype) says which.
//   * Transfers: _Send/_Recv between the CPU and this GPU copy the tensor on a
//     copy stream (host-to-device or device-to-host; staged batches on a
//     host-to-device stream of their own) ordered against the compute stream
//     with events; host buffers for the copies are pinned.
//   * Completion: ThenRun(stream, fn) runs `fn` on a host thread (not a CUDA
//     callback thread, so `fn` may call CUDA) once the work enqueued so far on
//     `stream` is done: an async kernel's `done` after a device-to-host copy.
//
// Thread safety: all methods may be called concurrently. cuBLAS and cuDNN
// handles are shared: kernels use them only through the Lock* accessors, which
// hold the device's library mutex while the call enqueues.
#ifndef SLUICE_ENGINE_RUNTIME_GPU_GPU_DEVICE_H_
#define SLUICE_ENGINE_RUNTIME_GPU_GPU_DEVICE_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/device.h"
#include "engine/framework/op_kernel.h"

namespace sluice {
namespace gpu {

// The status of a CUDA, cuBLAS or cuDNN call, naming `what` (the call) and
// the library's own error text: Internal, or ResourceExhausted for an
// out-of-memory error.
absl::Status CudaStatus(cudaError_t e, const char* what);
absl::Status CublasStatus(cublasStatus_t e, const char* what);
absl::Status CudnnStatus(cudnnStatus_t e, const char* what);

// OP_REQUIRES_CUDA(ctx, cudaMemsetAsync(...)): fails the kernel when the call fails.
#define OP_REQUIRES_CUDA(CTX, CALL) OP_REQUIRES_OK(CTX, ::sluice::gpu::CudaStatus((CALL), #CALL))
#define OP_REQUIRES_CUBLAS(CTX, CALL) OP_REQUIRES_OK(CTX, ::sluice::gpu::CublasStatus((CALL), #CALL))
#define OP_REQUIRES_CUDNN(CTX, CALL) OP_REQUIRES_OK(CTX, ::sluice::gpu::CudnnStatus((CALL), #CALL))

struct GpuDeviceOptions {
  int ordinal = 0;  // CUDA device number
  // Bytes of device memory the allocator takes at start; 0: 90% of what is free.
  size_t memory_bytes = 0;
};

class GpuDevice : public Device {
 public:
  // Creates the device `<task>/device:GPU:<ordinal>`: selects the GPU, makes
  // its streams, handles and allocators. Unavailable when CUDA sees no such
  // GPU (no driver, no device), with CUDA's reason.
  static absl::StatusOr<std::unique_ptr<GpuDevice>> Create(const std::string& task, const GpuDeviceOptions& options);
  ~GpuDevice() override;

  Allocator* GetAllocator(DataType dtype) const override;
  bool HostMemory(DataType dtype) const override;

  int ordinal() const;
  const cudaDeviceProp& properties() const;
  cudaStream_t compute_stream() const;
  cudaStream_t host_to_device_stream() const;
  cudaStream_t device_to_host_stream() const;
  // The copies of staged batches (_Recv kernels whose consumers order their
  // copies, engine/framework/op_kernel.h): a stream of their own, so that a
  // step's other host-to-device copies, which the compute stream waits for,
  // never queue behind them.
  cudaStream_t staged_host_to_device_stream() const;
  // Pinned host memory (int32 tensors, transfer buffers).
  Allocator* host_allocator() const;
  // The device-memory allocator (also allocator()).
  Allocator* device_allocator() const;

  // Runs `fn` on a host thread once everything enqueued on `stream` so far is
  // done (or the device failed: `fn` gets the error).
  void ThenRun(cudaStream_t stream, std::function<void(absl::Status)> fn);
  // Makes `waiter` wait (on the GPU, not the host) for everything enqueued on
  // `signaller` so far.
  absl::Status StreamWaitStream(cudaStream_t waiter, cudaStream_t signaller);
  // An event recorded on `stream` now (everything enqueued on it so far), for
  // a wait that another kernel enqueues later (cudaStreamWaitEvent). It is
  // its own event, not the pool's, destroyed with its last reference, so it
  // may outlive this device (CUDA then reports an error that is ignored).
  using SharedEvent = std::shared_ptr<std::remove_pointer_t<cudaEvent_t>>;
  absl::StatusOr<SharedEvent> RecordEvent(cudaStream_t stream);

  // The cuBLAS handle (bound to the compute stream, fp32 math without TF32)
  // and a cuBLASLt handle, held under the library mutex while in scope.
  struct CublasLock {
    absl::MutexLock lock;
    cublasHandle_t handle;
    cublasLtHandle_t lt;
  };
  std::unique_ptr<CublasLock> LockCublas();
  // The cuDNN handle (bound to the compute stream), made on first use.
  struct CudnnLock {
    absl::MutexLock lock;
    cudnnHandle_t handle;
  };
  absl::StatusOr<std::unique_ptr<CudnnLock>> LockCudnn();

  // Waits until every stream of the device is idle (tests, shutdown, traces
  // of device time).
  absl::Status Synchronize() override;

  class Impl;

 private:
  GpuDevice(std::string name, std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The GpuDevice a kernel runs on. REQUIRES: the kernel is registered for
// kDeviceGpu (so ctx->device() is a GpuDevice).
GpuDevice* GetGpuDevice(OpKernelContext* ctx);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_GPU_GPU_DEVICE_H_
