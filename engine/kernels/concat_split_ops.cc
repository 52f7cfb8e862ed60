// CPU kernels for Concat, ConcatV2, Pack, Split, SplitV and Unpack. Each views
// its tensors as [outer, axis, inner] and moves contiguous runs with memcpy
// (string elements by assignment), so one kernel serves every dtype. Also
// ConcatOffset (index arithmetic on shape vectors).
// Stateless; Compute is safe to run concurrently.
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/array_kernel_util.h"

namespace sluice {
namespace {

using array_util::CopyElements;
using array_util::DimProduct;

// Concatenates `inputs` along `axis` (already canonical) into output 0.
// `shapes_as` are the shapes inputs are viewed with (Pack inserts an axis).
void ConcatInto(OpKernelContext* ctx, const std::vector<const Tensor*>& inputs, int axis,
                const std::vector<TensorShape>& shapes_as) {
  const TensorShape& first = shapes_as[0];
  std::vector<int64_t> out_dims(first.dim_sizes().begin(), first.dim_sizes().end());
  int64_t axis_total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorShape& s = shapes_as[i];
    OP_REQUIRES(ctx, s.dims() == first.dims(),
                absl::InvalidArgumentError(absl::StrCat("ranks of all input tensors should match: shape[0] = ",
                                                        first.DebugString(), " vs. shape[", i, "] = ", s.DebugString())));
    for (int d = 0; d < s.dims(); ++d) {
      if (d == axis) continue;
      OP_REQUIRES(ctx, s.dim_size(d) == first.dim_size(d),
                  absl::InvalidArgumentError(absl::StrCat("dimensions of inputs should match: shape[0] = ",
                                                          first.DebugString(), " vs. shape[", i, "] = ", s.DebugString())));
    }
    // Each size is at most 2^62, so the check below cannot itself overflow.
    OP_REQUIRES(ctx, s.dim_size(axis) <= kMaxTensorElements - axis_total,
                absl::InvalidArgumentError(absl::StrCat("concatenated dimension ", axis, " exceeds 2^62 at input ", i,
                                                        " (shape ", s.DebugString(), ")")));
    axis_total += s.dim_size(axis);
  }
  out_dims[axis] = axis_total;
  auto out_shape = TensorShape::Build(out_dims);
  OP_REQUIRES_OK(ctx, out_shape.status());
  Tensor* out = nullptr;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
  if (out->NumElements() == 0) return;
  const int64_t outer = DimProduct(first, 0, axis);
  std::vector<int64_t> chunk(inputs.size());
  int64_t row = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    chunk[i] = DimProduct(shapes_as[i], axis, shapes_as[i].dims());
    row += chunk[i];
  }
  for (int64_t o = 0; o < outer; ++o) {
    int64_t dst = o * row;
    for (size_t i = 0; i < inputs.size(); ++i) {
      CopyElements(*inputs[i], o * chunk[i], *out, dst, chunk[i]);
      dst += chunk[i];
    }
  }
}

// Concat(concat_dim, values...) and ConcatV2(values..., axis).
template <bool kAxisFirst>
class ConcatOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    const int axis_input = kAxisFirst ? 0 : n;
    const int first = kAxisFirst ? 1 : 0;
    auto axis = array_util::IndexScalar(ctx->input(axis_input), "axis");
    OP_REQUIRES_OK(ctx, axis.status());
    std::vector<const Tensor*> inputs;
    std::vector<TensorShape> shapes;
    for (int i = 0; i < n; ++i) {
      inputs.push_back(&ctx->input(first + i));
      shapes.push_back(inputs.back()->shape());
    }
    const int rank = shapes[0].dims();
    OP_REQUIRES(ctx, rank > 0, absl::InvalidArgumentError("can't concatenate scalars (use Pack instead)"));
    auto a = array_util::CanonicalAxis(*axis, rank, "concat axis");
    OP_REQUIRES_OK(ctx, a.status());
    ConcatInto(ctx, inputs, *a, shapes);
  }
};
REGISTER_KERNEL_BUILDER(Name("Concat").Device(kDeviceCpu), ConcatOp<true>);
REGISTER_KERNEL_BUILDER(Name("ConcatV2").Device(kDeviceCpu), ConcatOp<false>);

class PackOp : public OpKernel {
 public:
  explicit PackOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, ctx->GetAttr("axis", &axis_)); }
  void Compute(OpKernelContext* ctx) override {
    const TensorShape& s0 = ctx->input(0).shape();
    auto axis = array_util::CanonicalAxis(axis_, s0.dims() + 1, "axis");
    OP_REQUIRES_OK(ctx, axis.status());
    std::vector<const Tensor*> inputs;
    std::vector<TensorShape> shapes;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const TensorShape& s = ctx->input(i).shape();
      OP_REQUIRES(ctx, s == s0,
                  absl::InvalidArgumentError(absl::StrCat("shapes of all inputs must match: values[0].shape = ",
                                                          s0.DebugString(), " != values[", i, "].shape = ", s.DebugString())));
      std::vector<int64_t> dims(s.dim_sizes().begin(), s.dim_sizes().end());
      dims.insert(dims.begin() + *axis, 1);
      auto as = TensorShape::Build(dims);
      OP_REQUIRES_OK(ctx, as.status());
      inputs.push_back(&ctx->input(i));
      shapes.push_back(*std::move(as));
    }
    ConcatInto(ctx, inputs, *axis, shapes);
  }

 private:
  int64_t axis_ = 0;
};
REGISTER_KERNEL_BUILDER(Name("Pack").Device(kDeviceCpu), PackOp);

// Splits `in` along `axis` into pieces of `sizes`, viewed with `drop_axis`
// (Unpack removes the split axis from each output).
void SplitInto(OpKernelContext* ctx, const Tensor& in, int axis, const std::vector<int64_t>& sizes, bool drop_axis) {
  const TensorShape& s = in.shape();
  const int64_t outer = DimProduct(s, 0, axis);
  const int64_t inner = DimProduct(s, axis + 1, s.dims());
  const int64_t row = s.dim_size(axis) * inner;
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int64_t> dims(s.dim_sizes().begin(), s.dim_sizes().end());
    if (drop_axis) {
      dims.erase(dims.begin() + axis);
    } else {
      dims[axis] = sizes[i];
    }
    auto shape = TensorShape::Build(dims);
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(static_cast<int>(i), *shape, &out));
    const int64_t chunk = sizes[i] * inner;
    if (chunk > 0) {
      for (int64_t o = 0; o < outer; ++o) CopyElements(in, o * row + offset, *out, o * chunk, chunk);
    }
    offset += chunk;
  }
}

class SplitOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(1);
    auto dim = array_util::IndexScalar(ctx->input(0), "split_dim");
    OP_REQUIRES_OK(ctx, dim.status());
    auto axis = array_util::CanonicalAxis(*dim, in.dims(), "split_dim");
    OP_REQUIRES_OK(ctx, axis.status());
    const int n = num_outputs();
    OP_REQUIRES(ctx, in.dim_size(*axis) % n == 0,
                absl::InvalidArgumentError(absl::StrCat("number of ways to split should evenly divide the split dimension, "
                                                        "but got split_dim ", *axis, " (size = ", in.dim_size(*axis),
                                                        ") and num_split ", n)));
    SplitInto(ctx, in, *axis, std::vector<int64_t>(n, in.dim_size(*axis) / n), false);
  }
};
REGISTER_KERNEL_BUILDER(Name("Split").Device(kDeviceCpu), SplitOp);

class SplitVOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto dim = array_util::IndexScalar(ctx->input(2), "split_dim");
    OP_REQUIRES_OK(ctx, dim.status());
    auto axis = array_util::CanonicalAxis(*dim, in.dims(), "split_dim");
    OP_REQUIRES_OK(ctx, axis.status());
    auto sizes = array_util::IndexVector(ctx->input(1), "size_splits");
    OP_REQUIRES_OK(ctx, sizes.status());
    OP_REQUIRES(ctx, static_cast<int>(sizes->size()) == num_outputs(),
                absl::InvalidArgumentError(absl::StrCat("size_splits has ", sizes->size(), " entries but num_split is ",
                                                        num_outputs())));
    int unknown = -1;
    int64_t total = 0;
    for (size_t i = 0; i < sizes->size(); ++i) {
      const int64_t v = (*sizes)[i];
      if (v == -1) {
        OP_REQUIRES(ctx, unknown < 0, absl::InvalidArgumentError("there can only be one -1 in size_splits"));
        unknown = static_cast<int>(i);
      } else {
        OP_REQUIRES(ctx, v >= 0 && v <= in.dim_size(*axis),
                    absl::InvalidArgumentError(absl::StrCat("size_splits[", i, "] = ", v, " is out of range [0, ",
                                                            in.dim_size(*axis), "]")));
        total += v;
      }
    }
    const int64_t dim_size = in.dim_size(*axis);
    if (unknown >= 0) {
      OP_REQUIRES(ctx, total <= dim_size,
                  absl::InvalidArgumentError(absl::StrCat("size_splits sum to ", total, ", more than the split dimension ",
                                                          dim_size)));
      (*sizes)[unknown] = dim_size - total;
      total = dim_size;
    }
    OP_REQUIRES(ctx, total == dim_size,
                absl::InvalidArgumentError(absl::StrCat("determined shape must either match input shape along split_dim "
                                                        "exactly if fully specified, or be less than the size of the input "
                                                        "along split_dim if not fully specified; got sizes summing to ",
                                                        total, " for dimension ", dim_size)));
    SplitInto(ctx, in, *axis, *sizes, false);
  }
};
REGISTER_KERNEL_BUILDER(Name("SplitV").Device(kDeviceCpu), SplitVOp);

class UnpackOp : public OpKernel {
 public:
  explicit UnpackOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, ctx->GetAttr("axis", &axis_)); }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto axis = array_util::CanonicalAxis(axis_, in.dims(), "axis");
    OP_REQUIRES_OK(ctx, axis.status());
    OP_REQUIRES(ctx, in.dim_size(*axis) == num_outputs(),
                absl::InvalidArgumentError(absl::StrCat("input dimension ", *axis, " has size ", in.dim_size(*axis),
                                                        " but num is ", num_outputs())));
    SplitInto(ctx, in, *axis, std::vector<int64_t>(num_outputs(), 1), true);
  }

 private:
  int64_t axis_ = 0;
};
REGISTER_KERNEL_BUILDER(Name("Unpack").Device(kDeviceCpu), UnpackOp);

// ConcatOffset: for shapes s_0..s_{N-1} that agree except along concat_dim,
// offset_i is 0 except along concat_dim, where it is the sum of the earlier
// shapes' sizes there.
class ConcatOffsetOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& concat_dim = ctx->input(0);
    OP_REQUIRES(ctx, concat_dim.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("concat_dim must be a scalar, got shape ",
                                                        concat_dim.shape().DebugString())));
    const int n = ctx->num_inputs() - 1;
    std::vector<std::vector<int64_t>> shapes;
    for (int i = 0; i < n; ++i) {
      auto v = array_util::IndexVector(ctx->input(1 + i), absl::StrCat("shape ", i));
      OP_REQUIRES_OK(ctx, v.status());
      shapes.push_back(std::move(v).value());
    }
    const int64_t rank = static_cast<int64_t>(shapes[0].size());
    const int64_t cdim = concat_dim.data<int32_t>()[0];
    const int64_t axis = cdim < 0 ? cdim + rank : cdim;
    OP_REQUIRES(ctx, axis >= 0 && axis < rank,
                absl::InvalidArgumentError(absl::StrCat("concat_dim ", cdim, " is out of range for shapes of rank ",
                                                        rank)));
    int64_t offset = 0;
    for (int i = 0; i < n; ++i) {
      const std::vector<int64_t>& s = shapes[i];
      OP_REQUIRES(ctx, static_cast<int64_t>(s.size()) == rank,
                  absl::InvalidArgumentError(absl::StrCat("shape ", i, " has ", s.size(), " elements but shape 0 has ",
                                                          rank)));
      std::vector<int64_t> out(rank, 0);
      for (int64_t d = 0; d < rank; ++d) {
        if (d == axis) {
          out[d] = offset;
          offset += s[d];
          continue;
        }
        OP_REQUIRES(ctx, s[d] == shapes[0][d],
                    absl::InvalidArgumentError(absl::StrCat(
                        "all dimensions except ", axis, " must match: shape ", i, " is [",
                        ctx->input(1 + i).SummarizeValue(10), "] and shape 0 is [", ctx->input(1).SummarizeValue(10),
                        "]")));
      }
      auto t = array_util::MakeIndexTensor(output_type(i), out, TensorShape({rank}));
      OP_REQUIRES_OK(ctx, t.status());
      ctx->set_output(i, *t);
    }
  }
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("ConcatOffset").Device(kDeviceCpu), ConcatOffsetOp);

}  // namespace
}  // namespace sluice
