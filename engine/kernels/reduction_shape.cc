// See reduction_shape.h.
#include "engine/kernels/reduction_shape.h"

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// Normalizes the axes against `rank`; InvalidArgument when out of range.
absl::Status ReadAxes(const Tensor& axes, int rank, std::vector<bool>* reduce) {
  if (axes.dims() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("reduction axes must be a scalar or vector, got shape ", axes.shape().DebugString()));
  }
  reduce->assign(rank, false);
  for (int64_t i = 0; i < axes.NumElements(); ++i) {
    const int64_t a = axes.dtype() == DT_INT32 ? axes.data<int32_t>()[i] : axes.data<int64_t>()[i];
    if (a < -rank || a >= rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("Invalid reduction dimension (", a, " for input with ", rank, " dimension(s)"));
    }
    (*reduce)[a < 0 ? a + rank : a] = true;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ComputeReductionShape(const TensorShape& in, const Tensor& axes, bool keep_dims, ReductionShape* r) {
  absl::Status s = ReadAxes(axes, in.dims(), &r->reduce);
  if (!s.ok()) return s;
  std::vector<int64_t> out_dims;
  r->count = 1;
  for (int i = 0; i < in.dims(); ++i) {
    if (r->reduce[i]) {
      r->count *= in.dim_size(i);
      if (keep_dims) out_dims.push_back(1);
    } else {
      out_dims.push_back(in.dim_size(i));
    }
  }
  auto out = TensorShape::Build(out_dims);
  if (!out.ok()) return out.status();
  r->out = *out;
  return absl::OkStatus();
}

absl::Status ComputeArgReductionShape(const TensorShape& in, const Tensor& axis_t, ArgReductionShape* r) {
  if (axis_t.NumElements() != 1 || axis_t.dims() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("dimension must be a scalar, got shape ", axis_t.shape().DebugString()));
  }
  const int64_t raw = axis_t.dtype() == DT_INT32 ? axis_t.data<int32_t>()[0] : axis_t.data<int64_t>()[0];
  const int rank = in.dims();
  if (raw < -rank || raw >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("Expected dimension in the range [", -rank, ", ", rank, "), but got ", raw));
  }
  r->axis = static_cast<int>(raw < 0 ? raw + rank : raw);
  if (in.dim_size(r->axis) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Reduction axis ", r->axis, " is empty in shape ", in.DebugString()));
  }
  std::vector<int64_t> out_dims;
  r->A = 1;
  r->B = 1;
  for (int i = 0; i < rank; ++i) {
    if (i == r->axis) continue;
    out_dims.push_back(in.dim_size(i));
    (i < r->axis ? r->A : r->B) *= in.dim_size(i);
  }
  r->R = in.dim_size(r->axis);
  auto out = TensorShape::Build(out_dims);
  if (!out.ok()) return out.status();
  r->out = *out;
  return absl::OkStatus();
}

}  // namespace sluice
