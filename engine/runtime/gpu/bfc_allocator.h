// BfcAllocator: best-fit with coalescing over one fixed region of memory
// (a GPU's one big cudaMalloc, or a pinned host buffer). The region is cut
// into chunks kept in address order; free chunks sit in bins by size class
// (powers of two). AllocateRaw takes the smallest free chunk that fits and
// splits off the rest; DeallocateRaw merges the chunk with free neighbours.
// Every chunk size is a multiple of the region alignment (256 bytes), so every
// chunk starts aligned.
//
// It only does bookkeeping: it never reads or writes the region, so it works
// over device memory and is testable over a host buffer. It does not own the
// region (the caller frees it after the allocator is gone).
//
// Thread safety: all methods may be called concurrently (one absl::Mutex).
#ifndef SLUICE_ENGINE_RUNTIME_GPU_BFC_ALLOCATOR_H_
#define SLUICE_ENGINE_RUNTIME_GPU_BFC_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "engine/framework/allocator.h"

namespace sluice {
namespace gpu {

struct BfcStats {
  int64_t num_allocs = 0;           // successful AllocateRaw calls, ever
  int64_t bytes_in_use = 0;         // bytes of in-use chunks (rounded sizes)
  int64_t peak_bytes_in_use = 0;
  int64_t largest_alloc_size = 0;   // largest request, in bytes
  int64_t largest_free_chunk = 0;
  int64_t num_free_chunks = 0;
  int64_t free_bytes = 0;
  // 1 - largest_free_chunk / free_bytes (0 when nothing is free).
  double fragmentation = 0;
  int64_t region_bytes = 0;         // usable bytes (after aligning the region)
};

class BfcAllocator : public Allocator {
 public:
  static constexpr size_t kDefaultAlignment = 256;

  // Manages [base, base + size). The usable part starts at base rounded up to
  // `alignment` and is a whole number of `alignment` units.
  // REQUIRES: alignment is a power of two.
  BfcAllocator(std::string name, void* base, size_t size, size_t alignment = kDefaultAlignment);
  ~BfcAllocator() override = default;

  std::string Name() const override { return name_; }
  // nullptr when no free chunk fits. A zero-byte request gets a unique chunk
  // of one alignment unit. Alignments above the region's are served by
  // taking a larger chunk.
  void* AllocateRaw(size_t alignment, size_t num_bytes) override;
  // REQUIRES: `ptr` came from AllocateRaw on this allocator (nullptr is a no-op).
  void DeallocateRaw(void* ptr, size_t num_bytes) override;
  AllocatorStats GetStats() const override;
  BfcStats GetBfcStats() const;

  // Whether `ptr` lies in the managed region.
  bool Owns(const void* ptr) const;
  // Human-readable summary of the stats (for logs and /metrics labels).
  std::string DebugString() const;

 private:
  struct Chunk {
    size_t size = 0;
    bool in_use = false;
  };
  // Free chunks of one size class, ordered by (size, offset): best fit first.
  using Bin = std::set<std::pair<size_t, size_t>>;
  static constexpr int kNumBins = 64;

  static int BinIndex(size_t size);
  void InsertFree(size_t offset, size_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EraseFree(size_t offset, size_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  const size_t alignment_;
  char* base_ = nullptr;   // aligned start of the usable region
  size_t size_ = 0;        // usable bytes

  mutable absl::Mutex mu_;
  // offset from base_ -> chunk; chunks tile [0, size_) without gaps.
  std::map<size_t, Chunk> chunks_ ABSL_GUARDED_BY(mu_);
  std::vector<Bin> bins_ ABSL_GUARDED_BY(mu_);
  int64_t num_allocs_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_bytes_in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t largest_alloc_size_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t free_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t num_free_chunks_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_GPU_BFC_ALLOCATOR_H_
