// The CPU allocator: aligned_alloc with atomic statistics, glibc tuned to keep
// large freed blocks, and a cache of freed blocks by size (a training step
// frees and allocates the same sizes every step). The binaries that train
// (cmd/train, run_graphdef) link tcmalloc as the process's malloc
// (//third_party:tcmalloc); the glibc settings then do nothing, and the cache
// still keeps tensors' blocks from going back to it.
#include "engine/framework/allocator.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <unordered_map>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace sluice {
namespace {

// Freed blocks go back to a per-size free list instead of to glibc, up to
// CacheMaxBytes() in all: sizes round up to kSmallGranule below kLargeBlock
// and to kLargeGranule above it. Tensors want 64-byte alignment, which glibc
// serves through memalign (split and re-merge a larger chunk on every call,
// no thread cache), and its free of large blocks sorts bins and consolidates:
// together ~6% of a Fashion-MNIST MLP step for the large blocks and as much
// again for the small ones. Sanitizer builds keep every free real, so
// use-after-free is still caught.
//
// The cache's size: an eighth of the machine's memory, at least 512 MiB. An
// evaluation of configs/text_lstm.pbtxt makes three blocks of 335 MB per
// batch (its [8365, 10000] logits); with a 512 MiB cache two of them went back
// to glibc, which maps blocks that large afresh and the kernel zeroes them
// again on every batch: 4.1-4.6 s of system time per evaluation, 0.7-1.4 s
// with the blocks kept. The cost is memory a process holds after its peak,
// as any caching allocator does.
constexpr size_t kSmallGranule = 64;
constexpr size_t kLargeBlock = 64 << 10;
constexpr size_t kLargeGranule = 4096;
constexpr size_t kMinCacheBytes = size_t{512} << 20;

constexpr size_t kHugePageAdviceBytes = size_t{32} << 20;

// Asks for transparent huge pages over the 2 MiB-aligned interior of a block
// of kHugePageAdviceBytes or more (advice only; the kernel may refuse): a
// large table read and written at scattered rows (sparse_embedding_bench,
// 1M rows) otherwise misses the TLB on most rows; its step went from 1.76-1.90x
// to 1.49-1.53x that of a 10k-row table. (The pages cost the same to zero.)
void AdviseHugePages(void* ptr, size_t num_bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(ptr) + kHuge - 1) / kHuge * kHuge;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(ptr) + num_bytes) / kHuge * kHuge;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

size_t CacheMaxBytes() {
  static const size_t max_bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return kMinCacheBytes;
    return std::max(kMinCacheBytes, static_cast<size_t>(pages) * static_cast<size_t>(page_size) / 8);
  }();
  return max_bytes;
}
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(SLUICE_TSAN)
constexpr bool kCacheBlocks = false;
#else
constexpr bool kCacheBlocks = true;
#endif

size_t CacheGranule(size_t num_bytes) { return num_bytes < kLargeBlock ? kSmallGranule : kLargeGranule; }

size_t CacheClass(size_t num_bytes) {
  const size_t granule = CacheGranule(num_bytes);
  return (std::max<size_t>(num_bytes, 1) + granule - 1) / granule * granule;
}

class CpuAllocatorImpl : public Allocator {
 public:
  CpuAllocatorImpl() {
    // Steps allocate and free tensors of many MB. glibc serves blocks above
    // its mmap threshold with a fresh mmap each time, so every such tensor
    // is page-faulted in anew (8,192 faults for 32 MiB): ops_bench measured
    // elementwise Add at 0.18 of memcpy that way and 0.83 with the blocks
    // reused. So large blocks come from the arenas (glibc still falls back to
    // mmap when an arena cannot grow) and freed memory is not trimmed back
    // eagerly, as a caching allocator would keep it. Sanitizer builds
    // replace malloc, and so does tcmalloc where linked: these calls then do
    // nothing.
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }

  std::string Name() const override { return "cpu"; }

  void* AllocateRaw(size_t alignment, size_t num_bytes) override {
    alignment = std::max(alignment, sizeof(void*));
    size_t rounded = (std::max<size_t>(num_bytes, 1) + alignment - 1) / alignment * alignment;
    const size_t cls = CacheClass(num_bytes);
    void* ptr = nullptr;
    // Blocks of a cached class are allocated as cls bytes (so any of them can
    // serve any request of the class later); the cache only promises 64-byte
    // alignment, so larger alignments get a fresh block.
    const bool cached_class = kCacheBlocks && alignment <= CacheGranule(num_bytes);
    if (cached_class && alignment <= 64) {
      absl::MutexLock lock(&cache_mu_);
      std::vector<void*>* blocks = FindCachedBlocks(cls);
      if (blocks != nullptr && !blocks->empty()) {
        ptr = blocks->back();
        blocks->pop_back();
        cached_bytes_ -= cls;
      }
    }
    auto allocate = [&] {
      return cached_class ? std::aligned_alloc(std::max<size_t>(alignment, 64), cls)
                          : std::aligned_alloc(alignment, rounded);
    };
    const bool fresh = ptr == nullptr;
    if (ptr == nullptr) ptr = allocate();
    if (ptr == nullptr && kCacheBlocks && ReleaseCache()) ptr = allocate();  // memory parked in the cache
    if (ptr == nullptr) return nullptr;
    if (fresh && kCacheBlocks && num_bytes >= kHugePageAdviceBytes) AdviseHugePages(ptr, num_bytes);
    num_allocs_.fetch_add(1, std::memory_order_relaxed);
    int64_t in_use = bytes_in_use_.fetch_add(num_bytes, std::memory_order_relaxed) + num_bytes;
    int64_t peak = peak_bytes_.load(std::memory_order_relaxed);
    while (in_use > peak && !peak_bytes_.compare_exchange_weak(peak, in_use)) {
    }
    int64_t largest = largest_.load(std::memory_order_relaxed);
    while (static_cast<int64_t>(num_bytes) > largest &&
           !largest_.compare_exchange_weak(largest, num_bytes)) {
    }
    return ptr;
  }

  void DeallocateRaw(void* ptr, size_t num_bytes) override {
    if (ptr == nullptr) return;
    bytes_in_use_.fetch_sub(num_bytes, std::memory_order_relaxed);
    // A block is at least cls bytes and 64-aligned however it was allocated
    // (alignments above its granule round sizes up further).
    const size_t cls = CacheClass(num_bytes);
    if (kCacheBlocks) {
      absl::MutexLock lock(&cache_mu_);
      if (cached_bytes_ + cls <= CacheMaxBytes()) {
        CachedBlocks(cls).push_back(ptr);
        cached_bytes_ += cls;
        return;
      }
    }
    std::free(ptr);
  }

  // Frees every cached block; false if there was none.
  bool ReleaseCache() {
    absl::MutexLock lock(&cache_mu_);
    if (cached_bytes_ == 0) return false;
    for (std::vector<void*>& blocks : small_cache_) {
      for (void* block : blocks) std::free(block);
      blocks.clear();
    }
    for (auto& [cls, blocks] : cache_) {
      for (void* block : blocks) std::free(block);
    }
    cache_.clear();
    cached_bytes_ = 0;
    return true;
  }

  AllocatorStats GetStats() const override {
    AllocatorStats stats;
    stats.num_allocs = num_allocs_.load();
    stats.bytes_in_use = bytes_in_use_.load();
    stats.peak_bytes_in_use = peak_bytes_.load();
    stats.largest_alloc_size = largest_.load();
    return stats;
  }

 private:
  // The free list of class `cls` (a CacheClass), made if missing. Classes
  // below kLargeBlock are an array index (a step allocates mostly small
  // tensors: no hashing for them), larger ones a hash map's entry.
  std::vector<void*>& CachedBlocks(size_t cls) ABSL_EXCLUSIVE_LOCKS_REQUIRED(cache_mu_) {
    if (cls < kLargeBlock) return small_cache_[cls / kSmallGranule];
    return cache_[cls];
  }
  // The same, or null for a large class with no list yet.
  std::vector<void*>* FindCachedBlocks(size_t cls) ABSL_EXCLUSIVE_LOCKS_REQUIRED(cache_mu_) {
    if (cls < kLargeBlock) return &small_cache_[cls / kSmallGranule];
    auto it = cache_.find(cls);
    return it == cache_.end() ? nullptr : &it->second;
  }

  std::atomic<int64_t> num_allocs_{0};
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_bytes_{0};
  std::atomic<int64_t> largest_{0};
  absl::Mutex cache_mu_;
  std::vector<void*> small_cache_[kLargeBlock / kSmallGranule] ABSL_GUARDED_BY(cache_mu_);
  std::unordered_map<size_t, std::vector<void*>> cache_ ABSL_GUARDED_BY(cache_mu_);
  size_t cached_bytes_ ABSL_GUARDED_BY(cache_mu_) = 0;
};

}  // namespace

Allocator* CpuAllocator() {
  static Allocator* allocator = new CpuAllocatorImpl;
  return allocator;
}

}  // namespace sluice
