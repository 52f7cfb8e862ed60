// PinnedHostAllocator: page-locked host memory for a GPU's int32 tensors and
// transfer buffers. A BfcAllocator over one cudaHostAlloc region serves most
// requests; when the region is full a request gets its own cudaHostAlloc
// (freed with cudaFreeHost), so it fails only when the system is out of
// pinned memory.
// Thread safety: all methods may be called concurrently.
#ifndef SLUICE_ENGINE_RUNTIME_GPU_PINNED_HOST_ALLOCATOR_H_
#define SLUICE_ENGINE_RUNTIME_GPU_PINNED_HOST_ALLOCATOR_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/allocator.h"
#include "engine/runtime/gpu/bfc_allocator.h"

namespace sluice {
namespace gpu {

class PinnedHostAllocator : public Allocator {
 public:
  // Pins `region_bytes` of host memory (cudaHostAlloc). Error when CUDA fails.
  static absl::StatusOr<std::unique_ptr<PinnedHostAllocator>> Create(size_t region_bytes);
  // REQUIRES: every allocation was returned.
  ~PinnedHostAllocator() override;

  std::string Name() const override { return "gpu_host_pinned"; }
  void* AllocateRaw(size_t alignment, size_t num_bytes) override;
  void DeallocateRaw(void* ptr, size_t num_bytes) override;
  AllocatorStats GetStats() const override;
  BfcStats GetBfcStats() const { return bfc_->GetBfcStats(); }

 private:
  PinnedHostAllocator(void* region, size_t bytes);
  void* region_;
  std::unique_ptr<BfcAllocator> bfc_;
  mutable absl::Mutex mu_;
  // Requests served outside the region.
  AllocatorStats overflow_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_GPU_PINNED_HOST_ALLOCATOR_H_
