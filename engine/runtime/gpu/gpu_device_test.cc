// Tests of GpuDevice on a real GPU: allocators, a host->device->host round
// trip through the copy streams, ThenRun ordering and StreamWaitStream, the
// library handles, and the registered factory. Without a GPU every test
// prints "SKIP: no GPU" and passes.
#include "engine/runtime/gpu/gpu_device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "engine/framework/device.h"
#include "engine/runtime/gpu/gpu_test_util.h"
#include "gtest/gtest.h"

namespace sluice {
namespace gpu {
namespace {


std::unique_ptr<GpuDevice> MakeDevice() {
  GpuDeviceOptions options;
  options.memory_bytes = size_t{256} << 20;
  auto d = GpuDevice::Create("/job:localhost/replica:0/task:0", options);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? std::move(d).value() : nullptr;
}

TEST(GpuDeviceTest, CreateWithoutGpuIsUnavailable) {
  if (HaveGpu()) return;
  std::printf("SKIP: no GPU\n");
  auto d = GpuDevice::Create("/job:localhost/replica:0/task:0", GpuDeviceOptions());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable) << d.status();
}

TEST(GpuDeviceTest, FactoryIsRegisteredAndFindsTheGpuIfAny) {
  auto types = RegisteredLocalDeviceTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), kDeviceGpu), types.end());
  int gpus = 0;
  for (const auto& d : DeviceMgr::Local()->devices()) {
    if (d->device_type() == kDeviceGpu) {
      ++gpus;
      EXPECT_EQ(d->name(), "/job:localhost/replica:0/task:0/device:GPU:0");
    }
  }
  EXPECT_EQ(gpus, HaveGpu() ? 1 : 0);
  EXPECT_EQ(DeviceMgr::Local()->HostCpu()->device_type(), kDeviceCpu);
  if (!HaveGpu()) std::printf("SKIP: no GPU\n");
}

TEST(GpuDeviceTest, AllocatorsByDtype) {
  SLUICE_SKIP_WITHOUT_GPU();
  auto d = MakeDevice();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->device_type(), kDeviceGpu);
  EXPECT_EQ(d->name(), "/job:localhost/replica:0/task:0/device:GPU:0");
  EXPECT_TRUE(d->HostMemory(DT_INT32));
  EXPECT_FALSE(d->HostMemory(DT_FLOAT));
  EXPECT_EQ(d->GetAllocator(DT_INT32), d->host_allocator());
  EXPECT_EQ(d->GetAllocator(DT_FLOAT), d->device_allocator());
  EXPECT_EQ(d->allocator(), d->device_allocator());
  EXPECT_GT(d->properties().multiProcessorCount, 0);

  // Device memory is really device memory; pinned memory is host-registered.
  void* dev = d->device_allocator()->AllocateRaw(64, 1000);
  void* host = d->host_allocator()->AllocateRaw(64, 1000);
  ASSERT_NE(dev, nullptr);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(dev) % 256, 0u);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, dev), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  ASSERT_EQ(cudaPointerGetAttributes(&attr, host), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  std::memset(host, 1, 1000);  // readable and writable on the host
  d->device_allocator()->DeallocateRaw(dev, 1000);
  d->host_allocator()->DeallocateRaw(host, 1000);

  // The device allocator refuses what does not fit; tensors report it.
  EXPECT_EQ(d->device_allocator()->AllocateRaw(64, size_t{1} << 30), nullptr);
  auto t = Tensor::Allocate(d->GetAllocator(DT_FLOAT), DT_FLOAT, TensorShape({1 << 28}));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  // Pinned memory beyond its region still works (cudaHostAlloc per request).
  void* big = d->host_allocator()->AllocateRaw(64, size_t{300} << 20);
  ASSERT_NE(big, nullptr);
  d->host_allocator()->DeallocateRaw(big, size_t{300} << 20);
}

TEST(GpuDeviceTest, RoundTripThroughTheStreams) {
  SLUICE_SKIP_WITHOUT_GPU();
  auto d = MakeDevice();
  ASSERT_NE(d, nullptr);
  constexpr int64_t n = 1 << 20;
  Tensor in(d->host_allocator(), DT_FLOAT, TensorShape({n}));
  Tensor out(d->host_allocator(), DT_FLOAT, TensorShape({n}));
  Tensor a(d->device_allocator(), DT_FLOAT, TensorShape({n}));
  Tensor b(d->device_allocator(), DT_FLOAT, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) in.data<float>()[i] = static_cast<float>(i) * 0.5f;
  std::memset(out.raw_data(), 0, n * sizeof(float));
  const size_t bytes = n * sizeof(float);
  // h2d: host -> a; compute: a -> b; d2h: b -> host.
  ASSERT_EQ(cudaMemcpyAsync(a.raw_data(), in.raw_data(), bytes, cudaMemcpyHostToDevice, d->host_to_device_stream()),
            cudaSuccess);
  ASSERT_TRUE(d->StreamWaitStream(d->compute_stream(), d->host_to_device_stream()).ok());
  ASSERT_EQ(cudaMemcpyAsync(b.raw_data(), a.raw_data(), bytes, cudaMemcpyDeviceToDevice, d->compute_stream()),
            cudaSuccess);
  ASSERT_TRUE(d->StreamWaitStream(d->device_to_host_stream(), d->compute_stream()).ok());
  ASSERT_EQ(cudaMemcpyAsync(out.raw_data(), b.raw_data(), bytes, cudaMemcpyDeviceToHost, d->device_to_host_stream()),
            cudaSuccess);
  absl::Notification done;
  absl::Status status = absl::InternalError("not run");
  d->ThenRun(d->device_to_host_stream(), [&](absl::Status s) {
    status = s;
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(status.ok()) << status;
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out.data<float>()[i], static_cast<float>(i) * 0.5f) << i;
  EXPECT_TRUE(d->Synchronize().ok());
}

TEST(GpuDeviceTest, ThenRunRunsInOrderAfterTheWork) {
  SLUICE_SKIP_WITHOUT_GPU();
  auto d = MakeDevice();
  ASSERT_NE(d, nullptr);
  constexpr size_t bytes = size_t{64} << 20;
  void* dev = d->device_allocator()->AllocateRaw(256, bytes);
  void* host = d->host_allocator()->AllocateRaw(256, bytes);
  ASSERT_TRUE(dev && host);
  std::vector<int> order;
  absl::Mutex mu;
  absl::Notification all;
  constexpr int kRounds = 20;
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_EQ(cudaMemsetAsync(dev, i, bytes, d->compute_stream()), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(host, dev, 4096, cudaMemcpyDeviceToHost, d->compute_stream()), cudaSuccess);
    d->ThenRun(d->compute_stream(), [&, i](absl::Status s) {
      EXPECT_TRUE(s.ok()) << s;
      // The copy before this callback is done; later rounds' are not started
      // only if the callback runs before them, so check the byte is >= i.
      const unsigned char seen = static_cast<unsigned char*>(host)[0];
      EXPECT_GE(seen, i);
      absl::MutexLock lock(&mu);
      order.push_back(i);
      if (static_cast<int>(order.size()) == kRounds) all.Notify();
    });
  }
  ASSERT_TRUE(all.WaitForNotificationWithTimeout(absl::Seconds(30)));
  std::vector<int> want(kRounds);
  for (int i = 0; i < kRounds; ++i) want[i] = i;
  EXPECT_EQ(order, want);
  // A callback may itself enqueue work and call ThenRun.
  absl::Notification nested;
  d->ThenRun(d->compute_stream(), [&](absl::Status) {
    EXPECT_EQ(cudaMemsetAsync(dev, 7, 16, d->compute_stream()), cudaSuccess);
    d->ThenRun(d->compute_stream(), [&](absl::Status s) {
      EXPECT_TRUE(s.ok());
      nested.Notify();
    });
  });
  ASSERT_TRUE(nested.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(d->Synchronize().ok());
  d->device_allocator()->DeallocateRaw(dev, bytes);
  d->host_allocator()->DeallocateRaw(host, bytes);
}

TEST(GpuDeviceTest, StreamWaitStreamOrdersAcrossStreams) {
  SLUICE_SKIP_WITHOUT_GPU();
  auto d = MakeDevice();
  ASSERT_NE(d, nullptr);
  constexpr size_t bytes = size_t{32} << 20;
  char* dev = static_cast<char*>(d->device_allocator()->AllocateRaw(256, bytes));
  unsigned char* host = static_cast<unsigned char*>(d->host_allocator()->AllocateRaw(256, bytes));
  ASSERT_TRUE(dev && host);
  for (int round = 1; round <= 10; ++round) {
    // Many large memsets on compute; the d2h copy must see the last one.
    for (int k = 0; k < 8; ++k) {
      ASSERT_EQ(cudaMemsetAsync(dev, k == 7 ? round : 0xEE, bytes, d->compute_stream()), cudaSuccess);
    }
    ASSERT_TRUE(d->StreamWaitStream(d->device_to_host_stream(), d->compute_stream()).ok());
    ASSERT_EQ(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, d->device_to_host_stream()), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(d->device_to_host_stream()), cudaSuccess);
    EXPECT_EQ(host[0], round);
    EXPECT_EQ(host[bytes - 1], round);
  }
  EXPECT_TRUE(d->StreamWaitStream(d->compute_stream(), d->compute_stream()).ok());
  d->device_allocator()->DeallocateRaw(dev, bytes);
  d->host_allocator()->DeallocateRaw(host, bytes);
}

TEST(GpuDeviceTest, LibraryHandles) {
  SLUICE_SKIP_WITHOUT_GPU();
  auto d = MakeDevice();
  ASSERT_NE(d, nullptr);
  {
    auto blas = d->LockCublas();
    ASSERT_NE(blas->handle, nullptr);
    ASSERT_NE(blas->lt, nullptr);
    cudaStream_t s = nullptr;
    ASSERT_EQ(cublasGetStream(blas->handle, &s), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(s, d->compute_stream());
    cublasMath_t mode;
    ASSERT_EQ(cublasGetMathMode(blas->handle, &mode), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(mode, CUBLAS_DEFAULT_MATH);
  }
  {
    auto dnn = d->LockCudnn();
    ASSERT_TRUE(dnn.ok()) << dnn.status();
    ASSERT_NE((*dnn)->handle, nullptr);
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudnnGetStream((*dnn)->handle, &s), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(s, d->compute_stream());
  }
  auto again = d->LockCudnn();  // the same handle, not a second one
  ASSERT_TRUE(again.ok());
}

TEST(GpuDeviceTest, StatusHelpers) {
  EXPECT_TRUE(CudaStatus(cudaSuccess, "x").ok());
  EXPECT_EQ(CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CudaStatus(cudaErrorInvalidValue, "cudaMemcpy").code(), absl::StatusCode::kInternal);
  EXPECT_EQ(CublasStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasSgemm").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CublasStatus(CUBLAS_STATUS_INVALID_VALUE, "cublasSgemm").code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(CublasStatus(CUBLAS_STATUS_SUCCESS, "x").ok());
  EXPECT_EQ(CudnnStatus(CUDNN_STATUS_BAD_PARAM, "cudnnConv").code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(CudnnStatus(CUDNN_STATUS_SUCCESS, "x").ok());
  EXPECT_NE(CudaStatus(cudaErrorInvalidValue, "cudaMemcpy").message().find("cudaMemcpy"), std::string::npos);
}

}  // namespace
}  // namespace gpu
}  // namespace sluice
