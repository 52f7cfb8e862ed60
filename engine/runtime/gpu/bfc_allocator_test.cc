// Tests of BfcAllocator over a host buffer (it never touches the memory, so
// no GPU is needed): splitting and merging, best fit, exhaustion, zero-byte
// requests, alignment, stats, and a randomized run checked against a model of
// the region as a row of 256-byte units.
#include "engine/runtime/gpu/bfc_allocator.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace gpu {
namespace {

constexpr size_t kUnit = 256;

// A 256-aligned host buffer of `units` units.
struct Region {
  explicit Region(size_t units) : storage(new char[units * kUnit + kUnit]) {
    uintptr_t p = reinterpret_cast<uintptr_t>(storage.get());
    base = reinterpret_cast<char*>((p + kUnit - 1) / kUnit * kUnit);
    size = units * kUnit;
  }
  std::unique_ptr<char[]> storage;
  char* base;
  size_t size;
};

TEST(BfcAllocatorTest, FreshRegionIsOneFreeChunk) {
  Region r(16);
  BfcAllocator a("test", r.base, r.size);
  BfcStats s = a.GetBfcStats();
  EXPECT_EQ(s.region_bytes, 16 * 256);
  EXPECT_EQ(s.num_free_chunks, 1);
  EXPECT_EQ(s.largest_free_chunk, 16 * 256);
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.fragmentation, 0.0);
  EXPECT_EQ(a.Name(), "test");
}

TEST(BfcAllocatorTest, UnalignedRegionIsTrimmed) {
  Region r(16);
  BfcAllocator a("test", r.base + 1, r.size - 1);
  EXPECT_EQ(a.GetBfcStats().region_bytes, 15 * 256);
  void* p = a.AllocateRaw(64, 100);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  EXPECT_EQ(p, r.base + 256);
  a.DeallocateRaw(p, 100);
}

TEST(BfcAllocatorTest, SplitsOnAllocateAndMergesOnFree) {
  Region r(16);
  BfcAllocator a("test", r.base, r.size);
  void* p1 = a.AllocateRaw(64, 256);
  void* p2 = a.AllocateRaw(64, 512);
  void* p3 = a.AllocateRaw(64, 256);
  ASSERT_TRUE(p1 && p2 && p3);
  // Address order: each chunk follows the previous one.
  EXPECT_EQ(p1, r.base);
  EXPECT_EQ(p2, r.base + 256);
  EXPECT_EQ(p3, r.base + 768);
  BfcStats s = a.GetBfcStats();
  EXPECT_EQ(s.bytes_in_use, 1024);
  EXPECT_EQ(s.num_free_chunks, 1);
  EXPECT_EQ(s.largest_free_chunk, 12 * 256);

  a.DeallocateRaw(p2, 512);  // a hole between two in-use chunks
  s = a.GetBfcStats();
  EXPECT_EQ(s.num_free_chunks, 2);
  EXPECT_EQ(s.free_bytes, 14 * 256);
  EXPECT_NEAR(s.fragmentation, 1.0 - 12.0 / 14.0, 1e-12);

  a.DeallocateRaw(p1, 256);  // merges with the hole after it
  s = a.GetBfcStats();
  EXPECT_EQ(s.num_free_chunks, 2);
  EXPECT_EQ(s.largest_free_chunk, 12 * 256);

  a.DeallocateRaw(p3, 256);  // merges both sides: one chunk again
  s = a.GetBfcStats();
  EXPECT_EQ(s.num_free_chunks, 1);
  EXPECT_EQ(s.largest_free_chunk, 16 * 256);
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.fragmentation, 0.0);
  EXPECT_EQ(s.peak_bytes_in_use, 1024);
}

TEST(BfcAllocatorTest, BestFitTakesTheSmallestHoleThatFits) {
  Region r(32);
  BfcAllocator a("test", r.base, r.size);
  // Layout: [A:4][x:1][B:2][x:1][C:3][x:1][rest]; then free A, B, C.
  std::vector<void*> p;
  for (size_t units : {4, 1, 2, 1, 3, 1}) p.push_back(a.AllocateRaw(64, units * kUnit));
  for (void* q : p) ASSERT_NE(q, nullptr);
  a.DeallocateRaw(p[0], 4 * kUnit);
  a.DeallocateRaw(p[2], 2 * kUnit);
  a.DeallocateRaw(p[4], 3 * kUnit);
  // 2 units: hole B exactly.
  EXPECT_EQ(a.AllocateRaw(64, 2 * kUnit), p[2]);
  // 3 units: hole C (3) rather than A (4) or the rest (20).
  EXPECT_EQ(a.AllocateRaw(64, 3 * kUnit - 10), p[4]);
  // 1 unit: the smallest hole left is A (4).
  EXPECT_EQ(a.AllocateRaw(64, 1), p[0]);
}

TEST(BfcAllocatorTest, ExhaustionReturnsNull) {
  Region r(8);
  BfcAllocator a("test", r.base, r.size);
  EXPECT_EQ(a.AllocateRaw(64, 9 * kUnit), nullptr);
  EXPECT_EQ(a.AllocateRaw(64, SIZE_MAX), nullptr);
  EXPECT_EQ(a.AllocateRaw(64, SIZE_MAX - 100), nullptr);
  void* all = a.AllocateRaw(64, 8 * kUnit);
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(a.AllocateRaw(64, 1), nullptr);
  EXPECT_EQ(a.GetBfcStats().num_free_chunks, 0);
  a.DeallocateRaw(all, 8 * kUnit);
  EXPECT_NE(a.AllocateRaw(64, 8 * kUnit), nullptr);
}

TEST(BfcAllocatorTest, EmptyRegionAllocatesNothing) {
  BfcAllocator a("empty", nullptr, 0);
  EXPECT_EQ(a.AllocateRaw(64, 0), nullptr);
  EXPECT_EQ(a.GetBfcStats().region_bytes, 0);
  a.DeallocateRaw(nullptr, 0);
}

TEST(BfcAllocatorTest, ZeroByteRequestsAreUnique) {
  Region r(4);
  BfcAllocator a("test", r.base, r.size);
  void* p = a.AllocateRaw(64, 0);
  void* q = a.AllocateRaw(64, 0);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_NE(p, q);
  EXPECT_EQ(a.GetBfcStats().bytes_in_use, 2 * 256);
  a.DeallocateRaw(p, 0);
  a.DeallocateRaw(q, 0);
  EXPECT_EQ(a.GetBfcStats().bytes_in_use, 0);
}

TEST(BfcAllocatorTest, AlignmentAboveTheRegionsIsHonoured) {
  Region r(64);
  BfcAllocator a("test", r.base, r.size);
  void* small = a.AllocateRaw(64, 10);  // pushes the next free chunk off 4 KiB
  ASSERT_NE(small, nullptr);
  void* p = a.AllocateRaw(4096, 1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  EXPECT_TRUE(a.Owns(p));
  a.DeallocateRaw(p, 1000);
  a.DeallocateRaw(small, 10);
  BfcStats s = a.GetBfcStats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.num_free_chunks, 1);
  EXPECT_EQ(a.AllocateRaw(3, 10), nullptr);  // not a power of two
}

TEST(BfcAllocatorTest, StatsTrackPeakAndLargest) {
  Region r(16);
  BfcAllocator a("test", r.base, r.size);
  void* p = a.AllocateRaw(64, 1000);  // 4 units
  void* q = a.AllocateRaw(64, 300);   // 2 units
  AllocatorStats s = a.GetStats();
  EXPECT_EQ(s.num_allocs, 2);
  EXPECT_EQ(s.bytes_in_use, 6 * 256);
  EXPECT_EQ(s.largest_alloc_size, 1000);
  a.DeallocateRaw(p, 1000);
  a.DeallocateRaw(q, 300);
  s = a.GetStats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.peak_bytes_in_use, 6 * 256);
  EXPECT_FALSE(a.DebugString().empty());
}

// The model: which units are in use. Free runs of the model are exactly the
// allocator's free chunks (it coalesces), so the model predicts success, the
// best-fit choice's hole size, the free-chunk count and the largest chunk.
struct Model {
  explicit Model(size_t units) : used(units, false) {}
  std::vector<bool> used;
  // (start, length) of every free run.
  std::vector<std::pair<size_t, size_t>> FreeRuns() const {
    std::vector<std::pair<size_t, size_t>> runs;
    for (size_t i = 0; i < used.size();) {
      if (used[i]) { ++i; continue; }
      size_t j = i;
      while (j < used.size() && !used[j]) ++j;
      runs.push_back({i, j - i});
      i = j;
    }
    return runs;
  }
};

TEST(BfcAllocatorTest, RandomizedAgainstModel) {
  constexpr size_t kUnits = 512;
  Region r(kUnits);
  BfcAllocator a("test", r.base, r.size);
  Model m(kUnits);
  struct Live { void* p; size_t bytes; size_t start; size_t units; };
  std::vector<Live> live;
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    const bool alloc = live.empty() || rng() % 100 < 55;
    if (alloc) {
      const size_t bytes = rng() % 4 == 0 ? rng() % 300 : rng() % (24 * kUnit);
      const size_t units = std::max<size_t>(1, (bytes + kUnit - 1) / kUnit);
      auto runs = m.FreeRuns();
      size_t best = SIZE_MAX;
      for (auto& run : runs) if (run.second >= units) best = std::min(best, run.second);
      void* p = a.AllocateRaw(64, bytes);
      if (best == SIZE_MAX) {
        ASSERT_EQ(p, nullptr) << "step " << step;
        continue;
      }
      ASSERT_NE(p, nullptr) << "step " << step << ": a hole of " << best << " units fits " << units;
      const size_t off = static_cast<char*>(p) - r.base;
      ASSERT_EQ(off % kUnit, 0u);
      const size_t start = off / kUnit;
      // It starts a free run of exactly the best-fit length.
      auto it = std::find_if(runs.begin(), runs.end(), [&](auto& run) { return run.first == start; });
      ASSERT_NE(it, runs.end()) << "step " << step << ": not at the start of a free run";
      ASSERT_EQ(it->second, best) << "step " << step << ": not the best fit";
      for (size_t u = start; u < start + units; ++u) m.used[u] = true;
      live.push_back({p, bytes, start, units});
    } else {
      const size_t k = rng() % live.size();
      a.DeallocateRaw(live[k].p, live[k].bytes);
      for (size_t u = live[k].start; u < live[k].start + live[k].units; ++u) m.used[u] = false;
      live[k] = live.back();
      live.pop_back();
    }
    const auto runs = m.FreeRuns();
    size_t largest = 0, free_units = 0;
    for (auto& run : runs) { largest = std::max(largest, run.second); free_units += run.second; }
    const BfcStats s = a.GetBfcStats();
    ASSERT_EQ(s.num_free_chunks, static_cast<int64_t>(runs.size())) << "step " << step;
    ASSERT_EQ(s.largest_free_chunk, static_cast<int64_t>(largest * kUnit));
    ASSERT_EQ(s.free_bytes, static_cast<int64_t>(free_units * kUnit));
    ASSERT_EQ(s.bytes_in_use + s.free_bytes, s.region_bytes);
  }
  for (auto& l : live) a.DeallocateRaw(l.p, l.bytes);
  const BfcStats s = a.GetBfcStats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.num_free_chunks, 1);
}

TEST(BfcAllocatorTest, ConcurrentUseKeepsTheBooksStraight) {
  Region r(4096);
  BfcAllocator a("test", r.base, r.size);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&a, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<void*, size_t>> mine;
      for (int i = 0; i < 5000; ++i) {
        if (mine.empty() || rng() % 2 == 0) {
          size_t bytes = rng() % 5000;
          void* p = a.AllocateRaw(64, bytes);
          if (p != nullptr) mine.push_back({p, bytes});
        } else {
          a.DeallocateRaw(mine.back().first, mine.back().second);
          mine.pop_back();
        }
      }
      for (auto& [p, b] : mine) a.DeallocateRaw(p, b);
    });
  }
  for (auto& th : threads) th.join();
  const BfcStats s = a.GetBfcStats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.num_free_chunks, 1);
}

}  // namespace
}  // namespace gpu
}  // namespace sluice
