// PinnedHostAllocator: a BFC over one pinned region, cudaHostAlloc beyond it.
#include "engine/runtime/gpu/pinned_host_allocator.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/platform/logging.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {

absl::StatusOr<std::unique_ptr<PinnedHostAllocator>> PinnedHostAllocator::Create(size_t region_bytes) {
  void* region = nullptr;
  if (region_bytes > 0) {
    absl::Status s = CudaStatus(cudaHostAlloc(&region, region_bytes, cudaHostAllocPortable), "cudaHostAlloc");
    if (!s.ok()) return s;
  }
  return std::unique_ptr<PinnedHostAllocator>(new PinnedHostAllocator(region, region_bytes));
}

PinnedHostAllocator::PinnedHostAllocator(void* region, size_t bytes)
    : region_(region), bfc_(std::make_unique<BfcAllocator>("gpu_host_pinned", region, bytes)) {}

PinnedHostAllocator::~PinnedHostAllocator() {
  bfc_.reset();
  if (region_ != nullptr) cudaFreeHost(region_);
}

void* PinnedHostAllocator::AllocateRaw(size_t alignment, size_t num_bytes) {
  if (void* p = bfc_->AllocateRaw(alignment, num_bytes)) return p;
  // cudaHostAlloc returns page-aligned memory; larger alignments are not served.
  if (alignment > 4096) return nullptr;
  void* p = nullptr;
  if (cudaHostAlloc(&p, std::max<size_t>(num_bytes, 1), cudaHostAllocPortable) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the error so later calls do not see it
    return nullptr;
  }
  absl::MutexLock lock(&mu_);
  ++overflow_.num_allocs;
  overflow_.bytes_in_use += static_cast<int64_t>(num_bytes);
  overflow_.peak_bytes_in_use = std::max(overflow_.peak_bytes_in_use, overflow_.bytes_in_use);
  overflow_.largest_alloc_size = std::max(overflow_.largest_alloc_size, static_cast<int64_t>(num_bytes));
  return p;
}

void PinnedHostAllocator::DeallocateRaw(void* ptr, size_t num_bytes) {
  if (ptr == nullptr) return;
  if (bfc_->Owns(ptr)) {
    bfc_->DeallocateRaw(ptr, num_bytes);
    return;
  }
  cudaFreeHost(ptr);
  absl::MutexLock lock(&mu_);
  overflow_.bytes_in_use -= static_cast<int64_t>(num_bytes);
}

AllocatorStats PinnedHostAllocator::GetStats() const {
  AllocatorStats s = bfc_->GetStats();
  absl::MutexLock lock(&mu_);
  s.num_allocs += overflow_.num_allocs;
  s.bytes_in_use += overflow_.bytes_in_use;
  s.peak_bytes_in_use += overflow_.peak_bytes_in_use;  // an upper bound of the joint peak
  s.largest_alloc_size = std::max(s.largest_alloc_size, overflow_.largest_alloc_size);
  return s;
}

}  // namespace gpu
}  // namespace sluice
