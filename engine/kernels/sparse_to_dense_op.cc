// CPU kernel for SparseToDense: fills the output with default_value, then
// writes each sparse value at its index (a later repeat wins when
// validate_indices is false). Every index is bounds-checked, and with
// validate_indices they must also increase lexicographically, before anything
// is written. Dtype-generic (elements are moved as bytes; strings assigned).
// Stateless; Compute is safe to run concurrently.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/array_kernel_util.h"

namespace sluice {
namespace {

class SparseToDenseOp : public OpKernel {
 public:
  explicit SparseToDenseOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("validate_indices", &validate_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    const Tensor& values = ctx->input(2);
    const Tensor& default_value = ctx->input(3);
    OP_REQUIRES(ctx, indices.dims() <= 2,
                absl::InvalidArgumentError(absl::StrCat("sparse_indices must be a scalar, vector or matrix, got shape ",
                                                        indices.shape().DebugString())));
    const int64_t num_elems = indices.dims() > 0 ? indices.dim_size(0) : 1;
    const int64_t num_dims = indices.dims() > 1 ? indices.dim_size(1) : 1;
    auto shape = array_util::IndexVector(ctx->input(1), "output_shape");
    OP_REQUIRES_OK(ctx, shape.status());
    OP_REQUIRES(ctx, static_cast<int64_t>(shape->size()) == num_dims,
                absl::InvalidArgumentError(absl::StrCat("output_shape has ", shape->size(),
                                                        " elements but sparse_indices has ", num_dims, " columns")));
    OP_REQUIRES(ctx, values.dims() == 0 || (values.dims() == 1 && values.dim_size(0) == num_elems),
                absl::InvalidArgumentError(absl::StrCat("sparse_values must be a scalar or a vector of ", num_elems,
                                                        " elements, got shape ", values.shape().DebugString())));
    OP_REQUIRES(ctx, default_value.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("default_value must be a scalar, got shape ",
                                                        default_value.shape().DebugString())));
    for (size_t d = 0; d < shape->size(); ++d) {
      OP_REQUIRES(ctx, (*shape)[d] >= 0,
                  absl::InvalidArgumentError(absl::StrCat("output_shape[", d, "] = ", (*shape)[d], " is negative")));
    }
    auto out_shape = TensorShape::Build(*shape);
    OP_REQUIRES(ctx, out_shape.ok(),
                absl::InvalidArgumentError(absl::StrCat("output_shape: ", out_shape.status().message())));
    // Flat positions, checked before anything is written.
    std::vector<int64_t> positions(num_elems);
    std::vector<int64_t> prev, cur(num_dims);
    for (int64_t i = 0; i < num_elems; ++i) {
      int64_t flat = 0;
      bool in_bounds = true;
      for (int64_t d = 0; d < num_dims; ++d) {
        cur[d] = array_util::IndexAt(indices, i * num_dims + d);
        in_bounds &= cur[d] >= 0 && cur[d] < (*shape)[d];
        flat = flat * (*shape)[d] + cur[d];
      }
      OP_REQUIRES(ctx, in_bounds,
                  absl::InvalidArgumentError(absl::StrCat("sparse_indices[", i, "] = [", absl::StrJoin(cur, ","),
                                                          "] is out of bounds: need 0 <= index < [",
                                                          absl::StrJoin(*shape, ","), "]")));
      if (validate_ && i > 0) {
        OP_REQUIRES(ctx, cur != prev,
                    absl::InvalidArgumentError(absl::StrCat("sparse_indices[", i, "] = [", absl::StrJoin(cur, ","),
                                                            "] is repeated")));
        OP_REQUIRES(ctx, prev < cur,
                    absl::InvalidArgumentError(absl::StrCat("sparse_indices[", i, "] = [", absl::StrJoin(cur, ","),
                                                            "] is out of order")));
      }
      prev = cur;
      positions[i] = flat;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    array_util::FillWithElement(default_value, 0, *out, 0, out->NumElements());
    for (int64_t i = 0; i < num_elems; ++i) {
      array_util::CopyElements(values, values.dims() == 0 ? 0 : i, *out, positions[i], 1);
    }
  }

 private:
  bool validate_ = true;
};
REGISTER_KERNEL_BUILDER(Name("SparseToDense").Device(kDeviceCpu), SparseToDenseOp);

}  // namespace
}  // namespace sluice
