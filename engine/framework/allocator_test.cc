// CpuAllocator: alignment of small, large and over-aligned blocks, reuse of
// freed small and large blocks within their size class (not under sanitizers,
// which keep every free real), several blocks of hundreds of MB kept for reuse,
// statistics, and a failed huge allocation
// returning null instead of aborting.
#include "engine/framework/allocator.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

bool AlignedTo(const void* p, size_t alignment) { return reinterpret_cast<uintptr_t>(p) % alignment == 0; }

TEST(CpuAllocatorTest, BlocksAreAlignedAndWritable) {
  Allocator* a = CpuAllocator();
  for (size_t alignment : {size_t{8}, size_t{64}, size_t{4096}, size_t{8192}}) {
    for (size_t bytes : {size_t{1}, size_t{100}, size_t{65536}, size_t{65537}, size_t{1} << 20}) {
      void* p = a->AllocateRaw(alignment, bytes);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(AlignedTo(p, alignment)) << alignment << " " << bytes;
      std::memset(p, 0x5a, bytes);
      a->DeallocateRaw(p, bytes);
    }
  }
}

TEST(CpuAllocatorTest, FreedLargeBlocksAreReusedAndStatsBalance) {
  Allocator* a = CpuAllocator();
  const int64_t before = a->GetStats().bytes_in_use;
  // An over-aligned block freed into the cache may be handed out for a smaller alignment.
  void* over = a->AllocateRaw(8192, 3 << 20);
  ASSERT_NE(over, nullptr);
  a->DeallocateRaw(over, 3 << 20);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) {
    void* p = a->AllocateRaw(64, 3 << 20);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(AlignedTo(p, 64));
    std::memset(p, i, 3 << 20);
    blocks.push_back(p);
  }
  EXPECT_EQ(a->GetStats().bytes_in_use, before + 4 * (3 << 20));
  for (void* p : blocks) a->DeallocateRaw(p, 3 << 20);
  EXPECT_EQ(a->GetStats().bytes_in_use, before);
  void* again = a->AllocateRaw(64, 3 << 20);
  ASSERT_NE(again, nullptr);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && !defined(SLUICE_TSAN)
  // The most recently freed block of the same size class comes back.
  EXPECT_EQ(again, blocks.back());
#endif
  a->DeallocateRaw(again, 3 << 20);
}

TEST(CpuAllocatorTest, SmallBlocksAreReusedWithinTheirClass) {
  Allocator* a = CpuAllocator();
  // 100 and 120 bytes share the 128-byte class; an over-aligned small block
  // freed into the cache serves a later 64-byte-aligned request.
  void* over = a->AllocateRaw(256, 100);
  ASSERT_NE(over, nullptr);
  EXPECT_TRUE(AlignedTo(over, 256));
  std::memset(over, 1, 100);
  a->DeallocateRaw(over, 100);
  void* p = a->AllocateRaw(64, 120);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(AlignedTo(p, 64));
  std::memset(p, 2, 120);  // the whole request is writable (ASan checks the size)
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && !defined(SLUICE_TSAN)
  EXPECT_EQ(p, over);
#endif
  // A request of another class gets another block.
  void* q = a->AllocateRaw(64, 200);
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q, p);
  std::memset(q, 3, 200);
  a->DeallocateRaw(q, 200);
  a->DeallocateRaw(p, 120);
}

TEST(CpuAllocatorTest, SeveralHugeBlocksAreKeptForReuse) {
  // Three blocks of 200 MiB, as an evaluation's logits: a cache of an eighth of the machine's
  // memory keeps all three (on machines of 5 GiB and more), so the next batch gets them back
  // instead of fresh zeroed pages from the kernel.
  Allocator* a = CpuAllocator();
  const size_t bytes = size_t{200} << 20;
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) {
    blocks.push_back(a->AllocateRaw(64, bytes));
    ASSERT_NE(blocks.back(), nullptr);
    std::memset(blocks.back(), i, bytes);
  }
  for (void* p : blocks) a->DeallocateRaw(p, bytes);
  std::vector<void*> again;
  for (int i = 0; i < 3; ++i) {
    again.push_back(a->AllocateRaw(64, bytes - 100));  // the same 4 KiB class
    ASSERT_NE(again.back(), nullptr);
    std::memset(again.back(), 7, bytes - 100);
  }
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && !defined(SLUICE_TSAN)
  const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (memory >= 5.0 * (1 << 30)) {
    // Most recently freed first.
    EXPECT_EQ(again, std::vector<void*>(blocks.rbegin(), blocks.rend()));
  }
#endif
  for (void* p : again) a->DeallocateRaw(p, bytes - 100);
}

TEST(CpuAllocatorTest, ImpossibleAllocationReturnsNull) {
  Allocator* a = CpuAllocator();
  // Park some blocks in the cache first: a failure must release them and still fail cleanly.
  void* p = a->AllocateRaw(64, 1 << 20);
  a->DeallocateRaw(p, 1 << 20);
  EXPECT_EQ(a->AllocateRaw(64, size_t{1} << 62), nullptr);
}

}  // namespace
}  // namespace sluice
