// Broadcast plans and parallel loops shared by the elementwise kernels
// (cwise_ops_common.h).
#include "engine/kernels/cwise_ops_common.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace cwise {

void ParallelFor(OpKernelContext* ctx, int64_t n, int64_t cost_per_unit,
                 const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (n * std::max<int64_t>(cost_per_unit, 1) < kParallelThreshold) {
    fn(0, n);
    return;
  }
  // Ranges a multiple of 16 units, so vectorized inner loops stay aligned-ish.
  const auto& d = ctx->eigen_cpu_device();
  ParallelForRanges(d.getPool(), d.numThreads(), n, cost_per_unit, 16, fn);
}

absl::Status MakeBroadcastPlan(const TensorShape& x, const TensorShape& y, BroadcastPlan* plan) {
  const int rank = std::max(x.dims(), y.dims());
  absl::InlinedVector<int64_t, 8> xd(rank, 1), yd(rank, 1), od(rank, 1);
  for (int i = 0; i < x.dims(); ++i) xd[rank - x.dims() + i] = x.dim_size(i);
  for (int i = 0; i < y.dims(); ++i) yd[rank - y.dims() + i] = y.dim_size(i);
  for (int i = 0; i < rank; ++i) {
    if (xd[i] == yd[i] || yd[i] == 1) {
      od[i] = xd[i];
    } else if (xd[i] == 1) {
      od[i] = yd[i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", x.DebugString(), " and ", y.DebugString(), " are not broadcast-compatible"));
    }
  }
  auto shape = TensorShape::Build(od);
  if (!shape.ok()) return shape.status();
  plan->out_shape = *shape;
  const int64_t n = plan->out_shape.num_elements();
  const int64_t nx = x.num_elements(), ny = y.num_elements();
  plan->dims.clear();
  plan->x_strides.clear();
  plan->y_strides.clear();
  if (nx == n && ny == n) {
    plan->kind = BroadcastPlan::kSame;
    return absl::OkStatus();
  }
  if (ny == 1 && nx == n) {
    plan->kind = BroadcastPlan::kYScalar;
    return absl::OkStatus();
  }
  if (nx == 1 && ny == n) {
    plan->kind = BroadcastPlan::kXScalar;
    return absl::OkStatus();
  }
  plan->kind = BroadcastPlan::kGeneral;
  if (n == 0) {
    plan->dims = {0};
    plan->x_strides = {0};
    plan->y_strides = {0};
    return absl::OkStatus();
  }
  // Collapse: drop output dims of size 1, merge neighbours with the same
  // broadcast pattern.
  absl::InlinedVector<int64_t, 8> dims;
  absl::InlinedVector<int, 8> pattern;  // bit 0: x broadcast, bit 1: y broadcast
  for (int i = 0; i < rank; ++i) {
    if (od[i] == 1) continue;
    const int pat = (xd[i] == 1 ? 1 : 0) | (yd[i] == 1 ? 2 : 0);
    if (!dims.empty() && pattern.back() == pat) {
      dims.back() *= od[i];
    } else {
      dims.push_back(od[i]);
      pattern.push_back(pat);
    }
  }
  const int cr = static_cast<int>(dims.size());
  plan->dims = dims;
  plan->x_strides.assign(cr, 0);
  plan->y_strides.assign(cr, 0);
  int64_t sx = 1, sy = 1;
  for (int i = cr - 1; i >= 0; --i) {
    if (!(pattern[i] & 1)) {
      plan->x_strides[i] = sx;
      sx *= dims[i];
    }
    if (!(pattern[i] & 2)) {
      plan->y_strides[i] = sy;
      sy *= dims[i];
    }
  }
  plan->inner_x_scalar = pattern.back() & 1;
  plan->inner_y_scalar = pattern.back() & 2;
  return absl::OkStatus();
}

void ForEachRow(const BroadcastPlan& p, int64_t first, int64_t last,
                const std::function<void(int64_t, int64_t, int64_t)>& fn) {
  const int outer = static_cast<int>(p.dims.size()) - 1;
  absl::InlinedVector<int64_t, 8> index(std::max(outer, 0), 0);
  int64_t xo = 0, yo = 0, r = first;
  for (int d = outer - 1; d >= 0; --d) {
    index[d] = r % p.dims[d];
    r /= p.dims[d];
    xo += index[d] * p.x_strides[d];
    yo += index[d] * p.y_strides[d];
  }
  for (int64_t row = first; row < last; ++row) {
    fn(row, xo, yo);
    for (int d = outer - 1; d >= 0; --d) {
      ++index[d];
      xo += p.x_strides[d];
      yo += p.y_strides[d];
      if (index[d] < p.dims[d]) break;
      xo -= p.x_strides[d] * index[d];
      yo -= p.y_strides[d] * index[d];
      index[d] = 0;
    }
  }
}

}  // namespace cwise
}  // namespace sluice
