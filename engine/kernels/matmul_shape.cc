// See matmul_shape.h.
#include "engine/kernels/matmul_shape.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace sluice {

absl::Status ComputeMatMulShape(const TensorShape& a, const TensorShape& b, bool transpose_a, bool transpose_b,
                                MatMulShape* s) {
  if (a.dims() != 2 || b.dims() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("MatMul needs matrices, got shapes ", a.DebugString(), " and ", b.DebugString()));
  }
  s->a_inner = transpose_a ? 0 : 1;
  s->b_inner = transpose_b ? 1 : 0;
  if (a.dim_size(s->a_inner) != b.dim_size(s->b_inner)) {
    return absl::InvalidArgumentError(absl::StrCat("inner dimensions differ: a is ", a.DebugString(),
                                                   transpose_a ? " (transposed)" : "", ", b is ", b.DebugString(),
                                                   transpose_b ? " (transposed)" : ""));
  }
  s->k = a.dim_size(s->a_inner);
  // [m, n] takes one dim from each input: [2^40, 0] x [0, 2^40] is two
  // empty matrices whose product is not a valid shape.
  auto out = TensorShape::Build({a.dim_size(1 - s->a_inner), b.dim_size(1 - s->b_inner)});
  if (!out.ok()) return out.status();
  s->out = *out;
  return absl::OkStatus();
}

absl::Status ComputeBatchMatMulShape(const TensorShape& x, const TensorShape& y, bool adj_x, bool adj_y, bool broadcast,
                                     BatchMatMulShape* s) {
  if (x.dims() < 2 || y.dims() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("BatchMatMul needs inputs of rank >= 2, got shapes ", x.DebugString(), " and ", y.DebugString()));
  }
  if (!broadcast && x.dims() != y.dims()) {
    return absl::InvalidArgumentError(
        absl::StrCat("inputs must have the same rank, got shapes ", x.DebugString(), " and ", y.DebugString()));
  }
  s->xr = x.dim_size(x.dims() - 2);
  s->xc = x.dim_size(x.dims() - 1);
  s->yr = y.dim_size(y.dims() - 2);
  s->yc = y.dim_size(y.dims() - 1);
  s->m = adj_x ? s->xc : s->xr;
  s->k = adj_x ? s->xr : s->xc;
  const int64_t ky = adj_y ? s->yc : s->yr;
  s->n = adj_y ? s->yr : s->yc;
  if (s->k != ky) {
    return absl::InvalidArgumentError(absl::StrCat("inner dimensions differ: x is ", x.DebugString(),
                                                   adj_x ? " (adjoint)" : "", ", y is ", y.DebugString(),
                                                   adj_y ? " (adjoint)" : ""));
  }
  // Batch dims: broadcast (V2) or equal (V1).
  // Sub-shapes of valid shapes: TryAddDim cannot fail here, but says so.
  s->bx = TensorShape();
  s->by = TensorShape();
  for (int i = 0; i < x.dims() - 2; ++i) {
    absl::Status st = s->bx.TryAddDim(x.dim_size(i));
    if (!st.ok()) return st;
  }
  for (int i = 0; i < y.dims() - 2; ++i) {
    absl::Status st = s->by.TryAddDim(y.dim_size(i));
    if (!st.ok()) return st;
  }
  if (!broadcast && s->bx != s->by) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch dimensions differ: ", x.DebugString(), " vs ", y.DebugString()));
  }
  absl::Status batch_status = cwise::MakeBroadcastPlan(s->bx, s->by, &s->plan);
  if (!batch_status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("batch dimensions differ: ", batch_status.message()));
  }
  std::vector<int64_t> out_dims(s->plan.out_shape.dim_sizes().begin(), s->plan.out_shape.dim_sizes().end());
  out_dims.push_back(s->m);
  out_dims.push_back(s->n);
  auto out = TensorShape::Build(out_dims);
  if (!out.ok()) return out.status();
  s->out = *out;
  return absl::OkStatus();
}

}  // namespace sluice
