// Spec for the GPU Transpose's host side (runs without a GPU): NHWC <-> NCHW
// become batched 2-D transposes, moving only size-1 dims moves nothing, and
// for random shapes and permutations both the reduced permutation and the
// plan the kernel runs (each kind's index arithmetic simulated here) put every
// element where the original permutation does.
#include "engine/kernels/gpu/transpose_reduce.h"

#include <numeric>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace gpu {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The values 0, 1, ... of a row-major tensor of `shape`, permuted by `perm`
// (output dim i is input dim perm[i]), in output order.
std::vector<int64_t> Permuted(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> in_strides(rank, 1), out_dims(rank);
  for (int d = rank - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * shape[d + 1];
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    out_dims[i] = shape[perm[i]];
    n *= out_dims[i];
  }
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, src = 0;
    for (int k = rank - 1; k >= 0; --k) {
      src += (rest % out_dims[k]) * in_strides[perm[k]];
      rest /= out_dims[k];
    }
    out[i] = src;
  }
  return out;
}

// Rank 1-6, dims 1-4 (many of them 1), and a random permutation.
void RandomShapeAndPermutation(std::mt19937* rng, std::vector<int64_t>* shape, std::vector<int64_t>* perm) {
  const int rank = 1 + static_cast<int>((*rng)() % 6);
  shape->resize(rank);
  perm->resize(rank);
  for (int64_t& d : *shape) d = 1 + static_cast<int64_t>((*rng)() % 4);
  std::iota(perm->begin(), perm->end(), 0);
  std::shuffle(perm->begin(), perm->end(), *rng);
}

std::vector<int64_t> Permuted(const ReducedPermutation& r) {
  return Permuted(r.dims, std::vector<int64_t>(r.perm.begin(), r.perm.end()));
}

TEST(TransposeReduce, NhwcToNchwIsABatchedTwoDimensionalTranspose) {
  const ReducedPermutation r = ReducePermutation({8, 28, 27, 32}, {0, 3, 1, 2});
  EXPECT_THAT(r.dims, ElementsAre(8, 28 * 27, 32));
  EXPECT_THAT(r.perm, ElementsAre(0, 2, 1));
}

TEST(TransposeReduce, NchwToNhwcIsABatchedTwoDimensionalTranspose) {
  const ReducedPermutation r = ReducePermutation({8, 32, 28, 27}, {0, 2, 3, 1});
  EXPECT_THAT(r.dims, ElementsAre(8, 32, 28 * 27));
  EXPECT_THAT(r.perm, ElementsAre(0, 2, 1));
}

TEST(TransposeReduce, MovingOneChannelMovesNothing) {
  // A one-channel NHWC image in NCHW has the same bytes.
  const ReducedPermutation r = ReducePermutation({8, 28, 28, 1}, {0, 3, 1, 2});
  EXPECT_THAT(r.dims, ElementsAre(8 * 28 * 28));
  EXPECT_THAT(r.perm, ElementsAre(0));
  EXPECT_THAT(ReducePermutation({1, 1}, {1, 0}).perm, IsEmpty());
  EXPECT_THAT(ReducePermutation({3, 0, 2}, {2, 1, 0}).perm, ElementsAre(1, 0));  // [3, 2] transposed; no elements
}

TEST(TransposeReduce, NeighboursAcrossADroppedDimMerge) {
  // [a, 1, b, c] -> [c, a, 1, b]: a and b are neighbours once the 1 is gone.
  const ReducedPermutation r = ReducePermutation({2, 1, 3, 4}, {3, 0, 1, 2});
  EXPECT_THAT(r.dims, ElementsAre(6, 4));
  EXPECT_THAT(r.perm, ElementsAre(1, 0));
}

TEST(TransposeReduce, RandomPermutationsMoveEveryElementAsTheOriginalDoes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int64_t> shape, perm;
    RandomShapeAndPermutation(&rng, &shape, &perm);
    const ReducedPermutation r = ReducePermutation(shape, perm);
    ASSERT_LE(r.dims.size(), shape.size());
    const std::vector<int64_t> expected = Permuted(shape, perm);
    if (r.perm.empty()) {
      // Every dim has size 1: one element, which stays.
      ASSERT_THAT(expected, ElementsAre(0)) << "trial " << trial;
      continue;
    }
    ASSERT_EQ(Permuted(r), expected) << "trial " << trial;
    // No two neighbours of the reduced output are neighbours, in order, in
    // its input: it cannot be reduced further.
    for (size_t i = 0; i + 1 < r.perm.size(); ++i) ASSERT_NE(r.perm[i] + 1, r.perm[i + 1]) << "trial " << trial;
  }
}

// The source index of every output element under `plan`, as the kernels
// compute it (transpose_ops_gpu.cc: the tiled kernel's out[b, c, r] =
// in[b, r, c], or the gather's strides).
std::vector<int64_t> Executed(const TransposePlan& plan, int64_t n) {
  std::vector<int64_t> out(n);
  if (plan.kind == TransposePlan::kNone) {
    std::iota(out.begin(), out.end(), 0);
  } else if (plan.kind == TransposePlan::kBatched2d) {
    EXPECT_EQ(plan.batch * plan.rows * plan.cols, n);
    for (int64_t b = 0; b < plan.batch; ++b)
      for (int64_t r = 0; r < plan.rows; ++r)
        for (int64_t c = 0; c < plan.cols; ++c) {
          out[(b * plan.cols + c) * plan.rows + r] = (b * plan.rows + r) * plan.cols + c;
        }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      int64_t rest = i, src = 0;
      for (int k = static_cast<int>(plan.out_dims.size()) - 1; k >= 0; --k) {
        src += (rest % plan.out_dims[k]) * plan.in_strides[k];
        rest /= plan.out_dims[k];
      }
      out[i] = src;
    }
  }
  return out;
}

TEST(TransposePlan, NhwcAndNchwAreBatched2dAndOtherPermutationsGather) {
  TransposePlan p = PlanTranspose({8, 28, 27, 32}, {0, 3, 1, 2});
  EXPECT_EQ(p.kind, TransposePlan::kBatched2d);
  EXPECT_EQ(p.batch, 8);
  EXPECT_EQ(p.rows, 28 * 27);
  EXPECT_EQ(p.cols, 32);
  p = PlanTranspose({5, 7}, {1, 0});
  EXPECT_EQ(p.kind, TransposePlan::kBatched2d);
  EXPECT_EQ(p.batch, 1);
  EXPECT_EQ(PlanTranspose({8, 28, 28, 1}, {0, 3, 1, 2}).kind, TransposePlan::kNone);
  p = PlanTranspose({2, 3, 4}, {2, 1, 0});
  EXPECT_EQ(p.kind, TransposePlan::kGather);
  EXPECT_THAT(p.out_dims, ElementsAre(4, 3, 2));
  EXPECT_THAT(p.in_strides, ElementsAre(1, 4, 12));
}

TEST(TransposePlan, RandomPermutationsMoveEveryElementAsTheOriginalDoes) {
  std::mt19937 rng(11);
  int kinds[3] = {0, 0, 0};
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int64_t> shape, perm;
    RandomShapeAndPermutation(&rng, &shape, &perm);
    const TransposePlan plan = PlanTranspose(shape, perm);
    ++kinds[plan.kind];
    const std::vector<int64_t> expected = Permuted(shape, perm);
    ASSERT_EQ(Executed(plan, static_cast<int64_t>(expected.size())), expected) << "trial " << trial;
  }
  // Every kind of plan came up.
  EXPECT_GT(kinds[TransposePlan::kNone], 0);
  EXPECT_GT(kinds[TransposePlan::kBatched2d], 0);
  EXPECT_GT(kinds[TransposePlan::kGather], 0);
}

}  // namespace
}  // namespace gpu
}  // namespace sluice
