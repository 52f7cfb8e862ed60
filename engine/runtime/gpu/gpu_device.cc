// GpuDevice: streams, allocators, library handles and the completion poller of
// one CUDA GPU (the contract is gpu_device.h).
//
// Completion (ThenRun): an event is recorded on the stream and handed to the
// poller thread, which queries its pending events (sleeping briefly while none
// is done) and passes each finished callback to the callback thread. Callbacks
// therefore run on an ordinary host thread, in the order they complete, and
// may call CUDA; a slow callback delays other callbacks but never the polling.
#include "engine/runtime/gpu/gpu_device.h"

#include <sys/prctl.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/platform/logging.h"
#include "engine/runtime/gpu/bfc_allocator.h"
#include "engine/runtime/gpu/cublas_loader.h"
#include "engine/runtime/gpu/pinned_host_allocator.h"

namespace sluice {
namespace gpu {

absl::Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  std::string msg = absl::StrCat(what, " failed: ", cudaGetErrorName(e), ": ", cudaGetErrorString(e));
  if (e == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(msg);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return absl::UnavailableError(msg);
  return absl::InternalError(msg);
}

absl::Status CublasStatus(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  // cuBLAS's own text needs cuBLAS loaded (cublas_loader.h).
  std::string msg = absl::StrCat(what, " failed: cuBLAS status ", static_cast<int>(e), ": ",
                                 LoadCublas().ok() ? cublasGetStatusString(e) : "(cuBLAS is not loaded)");
  if (e == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

absl::Status CudnnStatus(cudnnStatus_t e, const char* what) {
  if (e == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  std::string msg = absl::StrCat(what, " failed: cuDNN status ", static_cast<int>(e), ": ", cudnnGetErrorString(e));
  if (e == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      e == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    return absl::ResourceExhaustedError(msg);
  }
  return absl::InternalError(msg);
}

namespace {

constexpr size_t kPinnedRegionBytes = size_t{256} << 20;

// Runs callbacks once their events complete (see the file comment).
class CompletionPoller {
 public:
  explicit CompletionPoller(int ordinal) : ordinal_(ordinal) {
    poll_thread_ = std::thread([this] { PollLoop(); });
    callback_thread_ = std::thread([this] { CallbackLoop(); });
  }
  // Waits for every pending callback to run.
  ~CompletionPoller() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
      cv_.SignalAll();
    }
    poll_thread_.join();
    callback_thread_.join();
  }

  // Takes ownership of `event` (already recorded); returns it to `recycle`
  // when done.
  void Add(cudaEvent_t event, std::function<void(absl::Status)> fn, std::function<void(cudaEvent_t)> recycle) {
    absl::MutexLock lock(&mu_);
    pending_.push_back(Pending{event, std::move(fn), std::move(recycle)});
    cv_.SignalAll();
  }
  // Runs `fn(status)` on the callback thread without waiting for an event.
  void RunNow(std::function<void(absl::Status)> fn, absl::Status status) {
    absl::MutexLock lock(&mu_);
    ready_.push_back([fn = std::move(fn), status] { fn(status); });
    cv_.SignalAll();
  }

 private:
  struct Pending {
    cudaEvent_t event;
    std::function<void(absl::Status)> fn;
    std::function<void(cudaEvent_t)> recycle;
  };

  void PollLoop() {
    cudaSetDevice(ordinal_);
    // Linux lets a sleep overrun by the thread's timer slack, 50 us by
    // default: the 10 us naps below would each last about 60 us, and every
    // step's last event (the loss going to the CPU) would wait that long.
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    std::vector<Pending> polling;
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        while (pending_.empty() && polling.empty() && !stop_) cv_.Wait(&mu_);
        for (auto& p : pending_) polling.push_back(std::move(p));
        pending_.clear();
        if (polling.empty() && stop_) {
          poll_done_ = true;
          cv_.SignalAll();
          return;
        }
      }
      bool any_done = false;
      std::vector<Pending> still;
      for (auto& p : polling) {
        const cudaError_t e = cudaEventQuery(p.event);
        if (e == cudaErrorNotReady) {
          still.push_back(std::move(p));
          continue;
        }
        any_done = true;
        absl::Status s = CudaStatus(e, "cudaEventQuery (waiting for the stream)");
        p.recycle(p.event);
        absl::MutexLock lock(&mu_);
        ready_.push_back([fn = std::move(p.fn), s] { fn(s); });
        cv_.SignalAll();
      }
      polling.swap(still);
      if (!any_done && !polling.empty()) absl::SleepFor(absl::Microseconds(10));
    }
  }

  void CallbackLoop() {
    cudaSetDevice(ordinal_);
    for (;;) {
      std::function<void()> fn;
      {
        absl::MutexLock lock(&mu_);
        while (ready_.empty() && !poll_done_) cv_.Wait(&mu_);
        if (ready_.empty()) return;  // poll_done_: nothing more will come
        fn = std::move(ready_.front());
        ready_.pop_front();
      }
      fn();
    }
  }

  const int ordinal_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::vector<Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::deque<std::function<void()>> ready_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool poll_done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread poll_thread_;
  std::thread callback_thread_;
};

}  // namespace

class GpuDevice::Impl {
 public:
  ~Impl() {
    poller.reset();  // runs the callbacks still pending
    {
      absl::MutexLock lock(&event_mu);
      for (cudaEvent_t e : free_events) cudaEventDestroy(e);
      free_events.clear();
    }
    if (cudnn != nullptr) cudnnDestroy(cudnn);
    if (lt != nullptr) cublasLtDestroy(lt);
    if (cublas != nullptr) cublasDestroy(cublas);
    for (cudaStream_t s : {compute, h2d, d2h, staged_h2d}) {
      if (s != nullptr) cudaStreamDestroy(s);
    }
    device_alloc.reset();
    if (region != nullptr) cudaFree(region);
    host_alloc.reset();
  }

  absl::StatusOr<cudaEvent_t> GetEvent() {
    {
      absl::MutexLock lock(&event_mu);
      if (!free_events.empty()) {
        cudaEvent_t e = free_events.back();
        free_events.pop_back();
        return e;
      }
    }
    cudaEvent_t e = nullptr;
    absl::Status s = CudaStatus(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    if (!s.ok()) return s;
    return e;
  }
  void PutEvent(cudaEvent_t e) {
    absl::MutexLock lock(&event_mu);
    free_events.push_back(e);
  }

  int ordinal = 0;
  cudaDeviceProp props{};
  cudaStream_t compute = nullptr, h2d = nullptr, d2h = nullptr, staged_h2d = nullptr;
  void* region = nullptr;
  std::unique_ptr<BfcAllocator> device_alloc;
  std::unique_ptr<PinnedHostAllocator> host_alloc;

  absl::Mutex cublas_mu;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t lt = nullptr;
  absl::Mutex cudnn_mu;
  cudnnHandle_t cudnn ABSL_GUARDED_BY(cudnn_mu) = nullptr;

  absl::Mutex event_mu;
  std::vector<cudaEvent_t> free_events ABSL_GUARDED_BY(event_mu);

  std::unique_ptr<CompletionPoller> poller;
};

absl::StatusOr<std::unique_ptr<GpuDevice>> GpuDevice::Create(const std::string& task,
                                                             const GpuDeviceOptions& options) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return absl::UnavailableError(absl::StrCat("no CUDA GPU: ", cudaGetErrorName(e), ": ", cudaGetErrorString(e)));
  }
  if (options.ordinal < 0 || options.ordinal >= count) {
    return absl::UnavailableError(absl::StrCat("no CUDA GPU ", options.ordinal, " (this process sees ", count, ")"));
  }
  auto impl = std::make_unique<Impl>();
  impl->ordinal = options.ordinal;
#define SLUICE_RETURN_IF_CUDA_(CALL)                                 \
  do {                                                               \
    absl::Status sluice_s_ = CudaStatus((CALL), #CALL);              \
    if (!sluice_s_.ok()) return sluice_s_;                           \
  } while (0)
#define SLUICE_RETURN_IF_CUBLAS_(CALL)                               \
  do {                                                               \
    absl::Status sluice_s_ = CublasStatus((CALL), #CALL);            \
    if (!sluice_s_.ok()) return sluice_s_;                           \
  } while (0)
  // fp32 means fp32: cuBLAS and cuDNN may otherwise round float32 inputs to
  // TF32 (10-bit mantissa) on tensor cores, and results would drift from the
  // CPU kernels by ~1e-3. NVIDIA's libraries read this before their first
  // handle; a value the user set wins.
  setenv("NVIDIA_TF32_OVERRIDE", "0", /*overwrite=*/0);
  SLUICE_RETURN_IF_CUDA_(cudaSetDevice(options.ordinal));
  SLUICE_RETURN_IF_CUDA_(cudaGetDeviceProperties(&impl->props, options.ordinal));
  SLUICE_RETURN_IF_CUDA_(cudaStreamCreateWithFlags(&impl->compute, cudaStreamNonBlocking));
  SLUICE_RETURN_IF_CUDA_(cudaStreamCreateWithFlags(&impl->h2d, cudaStreamNonBlocking));
  SLUICE_RETURN_IF_CUDA_(cudaStreamCreateWithFlags(&impl->d2h, cudaStreamNonBlocking));
  SLUICE_RETURN_IF_CUDA_(cudaStreamCreateWithFlags(&impl->staged_h2d, cudaStreamNonBlocking));

  size_t free_bytes = 0, total_bytes = 0;
  SLUICE_RETURN_IF_CUDA_(cudaMemGetInfo(&free_bytes, &total_bytes));
  size_t bytes = options.memory_bytes > 0 ? options.memory_bytes : static_cast<size_t>(free_bytes * 0.9);
  bytes = bytes / (size_t{2} << 20) * (size_t{2} << 20);  // whole 2 MiB pages
  if (bytes == 0) {
    return absl::ResourceExhaustedError(absl::StrCat("GPU ", options.ordinal, " has only ", free_bytes,
                                                     " bytes free"));
  }
  SLUICE_RETURN_IF_CUDA_(cudaMalloc(&impl->region, bytes));
  impl->device_alloc = std::make_unique<BfcAllocator>("gpu_bfc", impl->region, bytes);
  auto host = PinnedHostAllocator::Create(kPinnedRegionBytes);
  if (!host.ok()) return host.status();
  impl->host_alloc = std::move(host).value();

  absl::Status loaded = LoadCublas();
  if (!loaded.ok()) return loaded;
  SLUICE_RETURN_IF_CUBLAS_(cublasCreate(&impl->cublas));
  SLUICE_RETURN_IF_CUBLAS_(cublasSetStream(impl->cublas, impl->compute));
  // Plain fp32 (no TF32 tensor-core rounding): results match the CPU kernels.
  SLUICE_RETURN_IF_CUBLAS_(cublasSetMathMode(impl->cublas, CUBLAS_DEFAULT_MATH));
  SLUICE_RETURN_IF_CUBLAS_(cublasLtCreate(&impl->lt));
#undef SLUICE_RETURN_IF_CUDA_
#undef SLUICE_RETURN_IF_CUBLAS_
  impl->poller = std::make_unique<CompletionPoller>(options.ordinal);
  std::string name = absl::StrCat(task, "/device:GPU:", options.ordinal);
  return std::unique_ptr<GpuDevice>(new GpuDevice(std::move(name), std::move(impl)));
}

GpuDevice::GpuDevice(std::string name, std::unique_ptr<Impl> impl)
    : Device(std::move(name), kDeviceGpu, impl->device_alloc.get(), /*intra_op_threads=*/1), impl_(std::move(impl)) {}

GpuDevice::~GpuDevice() {
  // Variables and other resources hold tensors of this device's allocators:
  // free them while the allocators exist.
  for (const std::string& c : resource_manager()->Containers()) resource_manager()->Cleanup(c);
  absl::Status s = Synchronize();
  if (!s.ok()) LOG(WARNING) << name() << ": " << s.message();
  impl_.reset();
}

Allocator* GpuDevice::GetAllocator(DataType dtype) const {
  return HostMemory(dtype) ? impl_->host_alloc.get() : static_cast<Allocator*>(impl_->device_alloc.get());
}

// int32 as in TensorFlow; strings too, because a string tensor's elements are
// constructed in place by the host.
bool GpuDevice::HostMemory(DataType dtype) const { return dtype == DT_INT32 || dtype == DT_STRING; }

int GpuDevice::ordinal() const { return impl_->ordinal; }
const cudaDeviceProp& GpuDevice::properties() const { return impl_->props; }
cudaStream_t GpuDevice::compute_stream() const { return impl_->compute; }
cudaStream_t GpuDevice::host_to_device_stream() const { return impl_->h2d; }
cudaStream_t GpuDevice::device_to_host_stream() const { return impl_->d2h; }
cudaStream_t GpuDevice::staged_host_to_device_stream() const { return impl_->staged_h2d; }
Allocator* GpuDevice::host_allocator() const { return impl_->host_alloc.get(); }
Allocator* GpuDevice::device_allocator() const { return impl_->device_alloc.get(); }

void GpuDevice::ThenRun(cudaStream_t stream, std::function<void(absl::Status)> fn) {
  auto event = impl_->GetEvent();
  if (!event.ok()) {
    impl_->poller->RunNow(std::move(fn), event.status());
    return;
  }
  absl::Status s = CudaStatus(cudaEventRecord(*event, stream), "cudaEventRecord");
  if (!s.ok()) {
    impl_->PutEvent(*event);
    impl_->poller->RunNow(std::move(fn), s);
    return;
  }
  Impl* impl = impl_.get();
  impl_->poller->Add(*event, std::move(fn), [impl](cudaEvent_t e) { impl->PutEvent(e); });
}

absl::Status GpuDevice::StreamWaitStream(cudaStream_t waiter, cudaStream_t signaller) {
  if (waiter == signaller) return absl::OkStatus();
  auto event = impl_->GetEvent();
  if (!event.ok()) return event.status();
  // A wait captures the event's state at the call, so the event can be
  // recorded again for another wait right after.
  absl::Status s = CudaStatus(cudaEventRecord(*event, signaller), "cudaEventRecord");
  if (s.ok()) s = CudaStatus(cudaStreamWaitEvent(waiter, *event, 0), "cudaStreamWaitEvent");
  impl_->PutEvent(*event);
  return s;
}

absl::StatusOr<GpuDevice::SharedEvent> GpuDevice::RecordEvent(cudaStream_t stream) {
  cudaEvent_t event = nullptr;
  absl::Status s = CudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  if (!s.ok()) return s;
  SharedEvent shared(event, [](cudaEvent_t e) { (void)cudaEventDestroy(e); });
  s = CudaStatus(cudaEventRecord(event, stream), "cudaEventRecord");
  if (!s.ok()) return s;
  return shared;
}

std::unique_ptr<GpuDevice::CublasLock> GpuDevice::LockCublas() {
  return std::unique_ptr<CublasLock>(new CublasLock{absl::MutexLock(&impl_->cublas_mu), impl_->cublas, impl_->lt});
}

absl::StatusOr<std::unique_ptr<GpuDevice::CudnnLock>> GpuDevice::LockCudnn() {
  cudnnHandle_t handle = nullptr;
  {
    absl::MutexLock lock(&impl_->cudnn_mu);
    if (impl_->cudnn == nullptr) {
      cudnnHandle_t h = nullptr;
      absl::Status s = CudnnStatus(cudnnCreate(&h), "cudnnCreate");
      if (s.ok()) s = CudnnStatus(cudnnSetStream(h, impl_->compute), "cudnnSetStream");
      if (!s.ok()) {
        if (h != nullptr) cudnnDestroy(h);
        return s;
      }
      impl_->cudnn = h;
    }
    handle = impl_->cudnn;
  }
  return std::unique_ptr<CudnnLock>(new CudnnLock{absl::MutexLock(&impl_->cudnn_mu), handle});
}

absl::Status GpuDevice::Synchronize() {
  absl::Status s;
  for (cudaStream_t st : {impl_->compute, impl_->h2d, impl_->d2h, impl_->staged_h2d}) {
    absl::Status one = CudaStatus(cudaStreamSynchronize(st), "cudaStreamSynchronize");
    if (s.ok()) s = one;
  }
  return s;
}

GpuDevice* GetGpuDevice(OpKernelContext* ctx) {
  Device* d = ctx->device();
  CHECK(d != nullptr && d->device_type() == kDeviceGpu)
      << "GetGpuDevice on a " << (d == nullptr ? "null" : d->device_type()) << " device";
  return static_cast<GpuDevice*>(d);
}

}  // namespace gpu
}  // namespace sluice
