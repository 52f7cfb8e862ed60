// Allocator: where Tensor buffers come from. Each Device owns one; the CPU
// allocator hands out 64-byte-aligned blocks (cache line / AVX-512 width) and
// keeps byte statistics for the plan and for monitoring.
// Thread safety: all methods may be called concurrently.
#ifndef SLUICE_ENGINE_FRAMEWORK_ALLOCATOR_H_
#define SLUICE_ENGINE_FRAMEWORK_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice {

constexpr size_t kTensorAlignment = 64;

struct AllocatorStats {
  int64_t num_allocs = 0;
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t largest_alloc_size = 0;
  // For an allocator over a fixed region (a GPU's): its size, the largest
  // free block in it, and 1 - largest free block / free bytes (how scattered
  // the free memory is). 0 for the CPU allocator, which has no fixed region.
  int64_t bytes_limit = 0;
  int64_t largest_free_block = 0;
  double fragmentation = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string Name() const = 0;
  // Returns nullptr when memory is exhausted. A zero-byte request returns a
  // valid, unique, non-dereferenceable pointer.
  virtual void* AllocateRaw(size_t alignment, size_t num_bytes) = 0;
  // REQUIRES: `ptr` came from AllocateRaw on this allocator with `num_bytes`.
  virtual void DeallocateRaw(void* ptr, size_t num_bytes) = 0;
  virtual AllocatorStats GetStats() const = 0;
};

// The process-wide CPU allocator (never destroyed).
Allocator* CpuAllocator();

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_ALLOCATOR_H_
