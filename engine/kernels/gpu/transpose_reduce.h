// The GPU Transpose's host side (transpose_ops_gpu.cc): a permutation of a
// shape reduced to the fewest dims that move the same elements, and the plan
// made from it: no move at all (only size-1 dims moved), a batched 2-D
// transpose (NHWC <-> NCHW) or a gather. Tested without a GPU
// (transpose_reduce_test.cc).
// Thread safety: a function of its arguments.
#ifndef SLUICE_ENGINE_KERNELS_GPU_TRANSPOSE_REDUCE_H_
#define SLUICE_ENGINE_KERNELS_GPU_TRANSPOSE_REDUCE_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sluice {
namespace gpu {

// `shape` and `perm` (output dim i is input dim perm[i]) reduced: `dims`
// (input order) and `perm` of the same meaning, after dropping dims of size
// 1 (or 0: a tensor without elements moves nothing) and merging input dims
// that stay neighbours, in order, in the output. When nothing moves, perm is
// [0] (or empty: no dim larger than 1).
struct ReducedPermutation {
  std::vector<int64_t> dims;
  std::vector<int> perm;
};

// REQUIRES: perm is a permutation of [0, shape.size()).
inline ReducedPermutation ReducePermutation(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  // Input dims of size > 1, numbered anew without the others.
  std::vector<int> compact(shape.size(), -1);
  std::vector<int64_t> sizes;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] > 1) {
      compact[d] = static_cast<int>(sizes.size());
      sizes.push_back(shape[d]);
    }
  }
  // Runs of consecutive input dims in output order become one dim.
  std::vector<std::vector<int>> groups;
  for (int64_t p : perm) {
    const int c = compact[p];
    if (c < 0) continue;
    if (!groups.empty() && groups.back().back() + 1 == c) {
      groups.back().push_back(c);
    } else {
      groups.push_back({c});
    }
  }
  // The groups in input order give the reduced input dims.
  std::vector<int> order(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) order[g] = static_cast<int>(g);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return groups[a][0] < groups[b][0]; });
  ReducedPermutation r;
  std::vector<int> position(groups.size());
  for (size_t k = 0; k < order.size(); ++k) {
    int64_t size = 1;
    for (int c : groups[order[k]]) size *= sizes[c];
    r.dims.push_back(size);
    position[order[k]] = static_cast<int>(k);
  }
  for (size_t g = 0; g < groups.size(); ++g) r.perm.push_back(position[g]);
  return r;
}

// How the GPU moves the elements of a permuted tensor with elements.
struct TransposePlan {
  enum Kind { kNone, kBatched2d, kGather } kind = kNone;
  // kBatched2d: out[b, c, r] = in[b, r, c] (the tiled kernel's contract).
  int64_t batch = 0, rows = 0, cols = 0;
  // kGather: out[i] = in[sum_d coord_d(i) * in_strides[d]] with coord the
  // row-major coordinates of i in out_dims.
  std::vector<int64_t> out_dims, in_strides;
};

// REQUIRES: as ReducePermutation; the tensor has elements.
inline TransposePlan PlanTranspose(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  const ReducedPermutation r = ReducePermutation(shape, perm);
  TransposePlan plan;
  const int k = static_cast<int>(r.perm.size());
  bool identity = true;
  for (int i = 0; i < k; ++i) identity &= r.perm[i] == i;
  if (identity) return plan;
  if ((k == 2 && r.perm[0] == 1) || (k == 3 && r.perm[0] == 0 && r.perm[1] == 2)) {
    plan.kind = TransposePlan::kBatched2d;
    plan.batch = k == 3 ? r.dims[0] : 1;
    plan.rows = r.dims[k - 2];
    plan.cols = r.dims[k - 1];
    return plan;
  }
  plan.kind = TransposePlan::kGather;
  std::vector<int64_t> strides(k);
  int64_t stride = 1;
  for (int d = k - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= r.dims[d];
  }
  for (int i = 0; i < k; ++i) {
    plan.out_dims.push_back(r.dims[r.perm[i]]);
    plan.in_strides.push_back(strides[r.perm[i]]);
  }
  return plan;
}

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_TRANSPOSE_REDUCE_H_
