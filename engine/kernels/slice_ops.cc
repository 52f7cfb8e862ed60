// CPU kernels for Transpose, Slice, StridedSlice, StridedSliceGrad, Tile,
// BroadcastTo and Pad. Each computes an index space and strides and hands them to StridedCopy
// (strided_copy.h), so one kernel serves every dtype. StridedSlice follows
// TensorFlow's mask semantics (begin/end/ellipsis/new_axis/shrink_axis).
// Stateless; Compute is safe to run concurrently.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/strided_slice.h"
#include "engine/kernels/array_kernel_util.h"
#include "engine/kernels/strided_copy.h"

namespace sluice {
namespace {

using array_util::IndexVector;
using array_util::RowMajorStrides;
using array_util::StridedCopy;

class TransposeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const int rank = in.dims();
    auto perm = array_util::CheckedPermutation(ctx->input(1), rank);
    OP_REQUIRES_OK(ctx, perm.status());
    bool identity = true;
    for (int i = 0; i < rank; ++i) identity &= (*perm)[i] == i;
    if (identity) {
      ctx->set_output(0, in);
      return;
    }
    std::vector<int64_t> dims(rank), src_strides(rank);
    const std::vector<int64_t> in_strides = RowMajorStrides(in.shape());
    for (int i = 0; i < rank; ++i) {
      dims[i] = in.dim_size((*perm)[i]);
      src_strides[i] = in_strides[(*perm)[i]];
    }
    auto shape = TensorShape::Build(dims);
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    StridedCopy(in, 0, src_strides, *out, 0, RowMajorStrides(out->shape()), dims);
  }
};
REGISTER_KERNEL_BUILDER(Name("Transpose").Device(kDeviceCpu), TransposeOp);

class SliceOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto begin = IndexVector(ctx->input(1), "begin");
    OP_REQUIRES_OK(ctx, begin.status());
    auto size = IndexVector(ctx->input(2), "size");
    OP_REQUIRES_OK(ctx, size.status());
    const int rank = in.dims();
    OP_REQUIRES(ctx, static_cast<int>(begin->size()) == rank && static_cast<int>(size->size()) == rank,
                absl::InvalidArgumentError(absl::StrCat("expected begin and size arguments to be 1-D tensors of size ",
                                                        rank, ", but got shapes ", ctx->input(1).shape().DebugString(),
                                                        " and ", ctx->input(2).shape().DebugString())));
    std::vector<int64_t> dims(rank);
    int64_t base = 0;
    const std::vector<int64_t> strides = RowMajorStrides(in.shape());
    for (int i = 0; i < rank; ++i) {
      const int64_t b = (*begin)[i], dim = in.dim_size(i);
      int64_t s = (*size)[i];
      // b is checked before `dim - b` is formed: with b = INT64_MIN that
      // difference overflows (undefined behaviour).
      const bool begin_ok = b >= 0 && b <= dim;
      if (begin_ok && s == -1) s = dim - b;
      OP_REQUIRES(ctx, begin_ok && s >= 0 && s <= dim - b,
                  absl::InvalidArgumentError(absl::StrCat("expected begin[", i, "] in [0, ", dim, "] and size[", i,
                                                          "] in [0, ", dim, " - begin], but got begin ", b, " and size ",
                                                          (*size)[i])));
      dims[i] = s;
      base += b * strides[i];
    }
    auto shape = TensorShape::Build(dims);
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    StridedCopy(in, base, strides, *out, 0, RowMajorStrides(out->shape()), dims);
  }
};
REGISTER_KERNEL_BUILDER(Name("Slice").Device(kDeviceCpu), SliceOp);

// ResolveStridedSlice (engine/framework/strided_slice.h) with begin, end and
// strides read from the op's index tensors.
absl::Status ResolveFromTensors(const TensorShape& input, const Tensor& begin_t, const Tensor& end_t,
                                 const Tensor& strides_t, const StridedSliceMasks& m, StridedSliceSpec* spec) {
  auto begin = IndexVector(begin_t, "begin");
  if (!begin.ok()) return begin.status();
  auto end = IndexVector(end_t, "end");
  if (!end.ok()) return end.status();
  auto strides = IndexVector(strides_t, "strides");
  if (!strides.ok()) return strides.status();
  return ResolveStridedSlice(input.dim_sizes(), *begin, *end, *strides, m, spec);
}

// Offsets and strides of the processing space within a tensor of `shape`.
void SpecStrides(const TensorShape& shape, const StridedSliceSpec& spec, int64_t* base, std::vector<int64_t>* strides) {
  std::vector<int64_t> rm = RowMajorStrides(shape);
  *base = 0;
  strides->resize(rm.size());
  for (size_t i = 0; i < rm.size(); ++i) {
    *base += spec.begin[i] * rm[i];
    (*strides)[i] = spec.stride[i] * rm[i];
  }
}

class StridedSliceOp : public OpKernel {
 public:
  explicit StridedSliceOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, masks_.Read(ctx->def())); }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    StridedSliceSpec spec;
    OP_REQUIRES_OK(ctx, ResolveFromTensors(in.shape(), ctx->input(1), ctx->input(2), ctx->input(3), masks_, &spec));
    auto out_shape = TensorShape::Build(spec.final_shape);
    OP_REQUIRES_OK(ctx, out_shape.status());
    // The processing space spans the same elements as the output.
    auto processing = TensorShape::Build(spec.size);
    OP_REQUIRES_OK(ctx, processing.status());
    OP_REQUIRES(ctx, processing->num_elements() == out_shape->num_elements(),
                absl::InternalError(absl::StrCat("strided slice resolved to ", processing->DebugString(),
                                                 " elements for an output of shape ", out_shape->DebugString())));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    int64_t base;
    std::vector<int64_t> strides;
    SpecStrides(in.shape(), spec, &base, &strides);
    StridedCopy(in, base, strides, *out, 0, RowMajorStrides(*processing), spec.size);
  }

 private:
  StridedSliceMasks masks_;
};
REGISTER_KERNEL_BUILDER(Name("StridedSlice").Device(kDeviceCpu), StridedSliceOp);

class StridedSliceGradOp : public OpKernel {
 public:
  explicit StridedSliceGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, masks_.Read(ctx->def())); }
  void Compute(OpKernelContext* ctx) override {
    auto dims = IndexVector(ctx->input(0), "shape");
    OP_REQUIRES_OK(ctx, dims.status());
    auto shape = TensorShape::Build(*dims);
    OP_REQUIRES(ctx, shape.ok(), absl::InvalidArgumentError(absl::StrCat("shape: ", shape.status().message())));
    const Tensor& dy = ctx->input(4);
    StridedSliceSpec spec;
    OP_REQUIRES_OK(ctx, ResolveFromTensors(*shape, ctx->input(1), ctx->input(2), ctx->input(3), masks_, &spec));
    auto dy_shape = TensorShape::Build(spec.final_shape);
    OP_REQUIRES_OK(ctx, dy_shape.status());
    OP_REQUIRES(ctx, dy.shape() == *dy_shape,
                absl::InvalidArgumentError(absl::StrCat("shape of dy was ", dy.shape().DebugString(), " instead of ",
                                                        dy_shape->DebugString())));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    array_util::SetZero(*out);
    int64_t base;
    std::vector<int64_t> strides;
    SpecStrides(*shape, spec, &base, &strides);
    auto processing = TensorShape::Build(spec.size);
    OP_REQUIRES_OK(ctx, processing.status());
    StridedCopy(dy, 0, RowMajorStrides(*processing), *out, base, strides, spec.size);
  }

 private:
  StridedSliceMasks masks_;
};
REGISTER_KERNEL_BUILDER(Name("StridedSliceGrad").Device(kDeviceCpu), StridedSliceGradOp);

class TileOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto multiples = IndexVector(ctx->input(1), "multiples");
    OP_REQUIRES_OK(ctx, multiples.status());
    const int rank = in.dims();
    OP_REQUIRES(ctx, static_cast<int>(multiples->size()) == rank,
                absl::InvalidArgumentError(absl::StrCat("expected multiples argument to be a vector of length ", rank,
                                                        " but got length ", multiples->size())));
    std::vector<int64_t> out_dims(rank), dims, src_strides, dst_strides;
    for (int i = 0; i < rank; ++i) {
      const int64_t m = (*multiples)[i];
      OP_REQUIRES(ctx, m >= 0, absl::InvalidArgumentError(absl::StrCat("expected multiples[", i, "] >= 0, but got ", m)));
      OP_REQUIRES(ctx, in.dim_size(i) == 0 || m <= kMaxTensorElements / in.dim_size(i),
                  absl::InvalidArgumentError("tiled shape overflows the maximum tensor size"));
      out_dims[i] = in.dim_size(i) * m;
    }
    auto out_shape = TensorShape::Build(out_dims);
    OP_REQUIRES(ctx, out_shape.ok(),
                absl::InvalidArgumentError(absl::StrCat("tiled shape: ", out_shape.status().message())));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    // The output viewed as [m0, d0, m1, d1, ...]; the input repeats along m_i.
    const std::vector<int64_t> in_strides = RowMajorStrides(in.shape());
    const std::vector<int64_t> out_strides = RowMajorStrides(*out_shape);
    for (int i = 0; i < rank; ++i) {
      dims.push_back((*multiples)[i]);
      src_strides.push_back(0);
      dst_strides.push_back(out_strides[i] * in.dim_size(i));
      dims.push_back(in.dim_size(i));
      src_strides.push_back(in_strides[i]);
      dst_strides.push_back(out_strides[i]);
    }
    StridedCopy(in, 0, src_strides, *out, 0, dst_strides, dims);
  }
};
REGISTER_KERNEL_BUILDER(Name("Tile").Device(kDeviceCpu), TileOp);

// BroadcastTo: the input is read with stride 0 along the dims it is
// broadcast over; the same shape forwards the input.
class BroadcastToOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto dims = IndexVector(ctx->input(1), "shape");
    OP_REQUIRES_OK(ctx, dims.status());
    for (size_t i = 0; i < dims->size(); ++i) {
      OP_REQUIRES(ctx, (*dims)[i] >= 0,
                  absl::InvalidArgumentError(absl::StrCat("shape[", i, "] = ", (*dims)[i], " is negative")));
    }
    auto out_shape = TensorShape::Build(*dims);
    OP_REQUIRES(ctx, out_shape.ok(), absl::InvalidArgumentError(absl::StrCat("shape: ", out_shape.status().message())));
    const int rank = out_shape->dims();
    bool ok = in.dims() <= rank;
    std::vector<int64_t> src_strides(rank, 0);
    const std::vector<int64_t> in_strides = RowMajorStrides(in.shape());
    for (int i = 0; ok && i < in.dims(); ++i) {
      const int o = rank - in.dims() + i;
      if (in.dim_size(i) == out_shape->dim_size(o)) {
        src_strides[o] = in.dim_size(i) == 1 ? 0 : in_strides[i];
      } else {
        ok = in.dim_size(i) == 1;
      }
    }
    OP_REQUIRES(ctx, ok,
                absl::InvalidArgumentError(absl::StrCat("unable to broadcast a tensor of shape ",
                                                        in.shape().DebugString(), " to shape ",
                                                        out_shape->DebugString())));
    if (in.shape() == *out_shape) {
      ctx->set_output(0, in);
      return;
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    if (out->NumElements() == 0) return;
    StridedCopy(in, 0, src_strides, *out, 0, RowMajorStrides(*out_shape), *dims);
  }
};
REGISTER_KERNEL_BUILDER(Name("BroadcastTo").Device(kDeviceCpu), BroadcastToOp);

class PadOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& paddings = ctx->input(1);
    const int rank = in.dims();
    OP_REQUIRES(ctx, paddings.dims() == 2 && paddings.dim_size(0) == rank && paddings.dim_size(1) == 2,
                absl::InvalidArgumentError(absl::StrCat("paddings must be a matrix of shape [", rank, ",2], got ",
                                                        paddings.shape().DebugString())));
    std::vector<int64_t> out_dims(rank), before(rank);
    for (int i = 0; i < rank; ++i) {
      const int64_t b = array_util::IndexAt(paddings, 2 * i), a = array_util::IndexAt(paddings, 2 * i + 1);
      OP_REQUIRES(ctx, b >= 0 && a >= 0,
                  absl::InvalidArgumentError(absl::StrCat("paddings must be non-negative: ", b, " ", a)));
      OP_REQUIRES(ctx, b <= kMaxTensorElements - in.dim_size(i) && a <= kMaxTensorElements - in.dim_size(i) - b,
                  absl::InvalidArgumentError("padded shape overflows the maximum tensor size"));
      before[i] = b;
      out_dims[i] = in.dim_size(i) + b + a;
    }
    auto out_shape = TensorShape::Build(out_dims);
    OP_REQUIRES(ctx, out_shape.ok(), absl::InvalidArgumentError(absl::StrCat("padded shape: ", out_shape.status().message())));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    array_util::SetZero(*out);
    const std::vector<int64_t> out_strides = RowMajorStrides(*out_shape);
    int64_t base = 0;
    for (int i = 0; i < rank; ++i) base += before[i] * out_strides[i];
    std::vector<int64_t> dims(in.shape().dim_sizes().begin(), in.shape().dim_sizes().end());
    StridedCopy(in, 0, RowMajorStrides(in.shape()), *out, base, out_strides, dims);
  }
};
REGISTER_KERNEL_BUILDER(Name("Pad").Device(kDeviceCpu), PadOp);

}  // namespace
}  // namespace sluice
