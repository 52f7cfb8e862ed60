// BfcAllocator: chunk map in address order plus size-class bins of free chunks.
#include "engine/runtime/gpu/bfc_allocator.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace gpu {

BfcAllocator::BfcAllocator(std::string name, void* base, size_t size, size_t alignment)
    : name_(std::move(name)), alignment_(alignment), bins_(kNumBins) {
  CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0) << "alignment must be a power of two";
  const uintptr_t start = reinterpret_cast<uintptr_t>(base);
  const uintptr_t aligned = (start + alignment - 1) & ~(uintptr_t{alignment} - 1);
  const size_t skipped = aligned - start;
  if (base != nullptr && size > skipped) {
    base_ = reinterpret_cast<char*>(aligned);
    size_ = (size - skipped) / alignment * alignment;
  }
  absl::MutexLock lock(&mu_);
  if (size_ > 0) {
    chunks_[0] = Chunk{size_, false};
    InsertFree(0, size_);
  }
}

int BfcAllocator::BinIndex(size_t size) {
  // floor(log2(size)); sizes are >= 1.
  int b = 63 - __builtin_clzll(static_cast<unsigned long long>(std::max<size_t>(size, 1)));
  return std::min(b, kNumBins - 1);
}

void BfcAllocator::InsertFree(size_t offset, size_t size) {
  bins_[BinIndex(size)].emplace(size, offset);
  free_bytes_ += static_cast<int64_t>(size);
  ++num_free_chunks_;
}

void BfcAllocator::EraseFree(size_t offset, size_t size) {
  const size_t erased = bins_[BinIndex(size)].erase({size, offset});
  CHECK_EQ(erased, 1u) << name_ << ": free chunk at offset " << offset << " missing from its bin";
  free_bytes_ -= static_cast<int64_t>(size);
  --num_free_chunks_;
}

void* BfcAllocator::AllocateRaw(size_t alignment, size_t num_bytes) {
  if (alignment == 0) alignment = 1;
  if ((alignment & (alignment - 1)) != 0) return nullptr;
  // Round to whole units; a larger alignment than the region's needs slack to
  // move the start forward within the chunk.
  const size_t slack = alignment > alignment_ ? alignment - alignment_ : 0;
  const size_t want = std::max<size_t>(num_bytes, 1);
  if (want > size_ || slack > size_ - want) return nullptr;
  const size_t rounded = (want + slack + alignment_ - 1) / alignment_ * alignment_;

  absl::MutexLock lock(&mu_);
  // Best fit: the first chunk of at least `rounded` bytes in its own bin, else
  // the smallest chunk of the next non-empty bin (every chunk there is bigger).
  size_t offset = 0, size = 0;
  bool found = false;
  for (int b = BinIndex(rounded); b < kNumBins && !found; ++b) {
    auto it = bins_[b].lower_bound({rounded, 0});
    if (it != bins_[b].end()) {
      size = it->first;
      offset = it->second;
      found = true;
    }
  }
  if (!found) return nullptr;
  EraseFree(offset, size);
  auto chunk = chunks_.find(offset);
  CHECK(chunk != chunks_.end() && !chunk->second.in_use);
  if (size - rounded >= alignment_) {  // split: the tail stays free
    chunk->second.size = rounded;
    chunks_[offset + rounded] = Chunk{size - rounded, false};
    InsertFree(offset + rounded, size - rounded);
  }
  chunk->second.in_use = true;
  ++num_allocs_;
  bytes_in_use_ += static_cast<int64_t>(chunk->second.size);
  peak_bytes_in_use_ = std::max(peak_bytes_in_use_, bytes_in_use_);
  largest_alloc_size_ = std::max(largest_alloc_size_, static_cast<int64_t>(num_bytes));
  const uintptr_t start = reinterpret_cast<uintptr_t>(base_ + offset);
  const uintptr_t aligned = (start + alignment - 1) & ~(uintptr_t{alignment} - 1);
  return reinterpret_cast<void*>(aligned);
}

void BfcAllocator::DeallocateRaw(void* ptr, size_t /*num_bytes*/) {
  if (ptr == nullptr) return;
  CHECK(Owns(ptr)) << name_ << ": DeallocateRaw of a pointer outside the region";
  const size_t at = static_cast<size_t>(static_cast<char*>(ptr) - base_);
  absl::MutexLock lock(&mu_);
  // The chunk containing `ptr` (an over-aligned allocation starts inside it).
  auto it = std::prev(chunks_.upper_bound(at));
  CHECK(it->second.in_use) << name_ << ": double free at offset " << at;
  it->second.in_use = false;
  bytes_in_use_ -= static_cast<int64_t>(it->second.size);
  // Merge with the next chunk, then with the previous one.
  auto next = std::next(it);
  if (next != chunks_.end() && !next->second.in_use) {
    EraseFree(next->first, next->second.size);
    it->second.size += next->second.size;
    chunks_.erase(next);
  }
  if (it != chunks_.begin()) {
    auto prev = std::prev(it);
    if (!prev->second.in_use) {
      EraseFree(prev->first, prev->second.size);
      prev->second.size += it->second.size;
      chunks_.erase(it);
      it = prev;
    }
  }
  InsertFree(it->first, it->second.size);
}

bool BfcAllocator::Owns(const void* ptr) const {
  const char* p = static_cast<const char*>(ptr);
  return base_ != nullptr && p >= base_ && p < base_ + size_;
}

AllocatorStats BfcAllocator::GetStats() const {
  const BfcStats b = GetBfcStats();
  AllocatorStats s;
  s.num_allocs = b.num_allocs;
  s.bytes_in_use = b.bytes_in_use;
  s.peak_bytes_in_use = b.peak_bytes_in_use;
  s.largest_alloc_size = b.largest_alloc_size;
  s.bytes_limit = b.region_bytes;
  s.largest_free_block = b.largest_free_chunk;
  s.fragmentation = b.fragmentation;
  return s;
}

BfcStats BfcAllocator::GetBfcStats() const {
  absl::MutexLock lock(&mu_);
  BfcStats s;
  s.num_allocs = num_allocs_;
  s.bytes_in_use = bytes_in_use_;
  s.peak_bytes_in_use = peak_bytes_in_use_;
  s.largest_alloc_size = largest_alloc_size_;
  s.num_free_chunks = num_free_chunks_;
  s.free_bytes = free_bytes_;
  s.region_bytes = static_cast<int64_t>(size_);
  for (int b = kNumBins - 1; b >= 0; --b) {
    if (!bins_[b].empty()) {
      s.largest_free_chunk = static_cast<int64_t>(bins_[b].rbegin()->first);
      break;
    }
  }
  s.fragmentation = free_bytes_ > 0 ? 1.0 - static_cast<double>(s.largest_free_chunk) / free_bytes_ : 0.0;
  return s;
}

std::string BfcAllocator::DebugString() const {
  const BfcStats s = GetBfcStats();
  return absl::StrCat(name_, ": ", s.bytes_in_use, " of ", s.region_bytes, " bytes in use (peak ",
                      s.peak_bytes_in_use, "), ", s.num_free_chunks, " free chunks, largest ", s.largest_free_chunk,
                      ", fragmentation ", s.fragmentation);
}

}  // namespace gpu
}  // namespace sluice
