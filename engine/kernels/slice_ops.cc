// CPU kernels for Transpose, Slice, StridedSlice, StridedSliceGrad, Tile,
// BroadcastTo and Pad. Each computes an index space and strides and hands them to StridedCopy
// (strided_copy.h), so one kernel serves every dtype. StridedSlice follows
// TensorFlow's mask semantics (begin/end/ellipsis/new_axis/shrink_axis).
// Stateless; Compute is safe to run concurrently.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
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

// The resolved form of a strided slice over an input of known shape.
struct StridedSliceSpec {
  std::vector<int64_t> begin, stride, size;  // per input dim (the processing space)
  std::vector<int64_t> final_shape;          // with new axes added and shrunk axes removed
};

// The masks as bit patterns (unsigned: a negative attr is just a pattern with
// high bits set, and no mask arithmetic can overflow).
struct StridedSliceMasks {
  uint64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
  absl::Status Read(OpKernelConstruction* ctx) {
    for (auto [name, field] : {std::pair<const char*, uint64_t*>{"begin_mask", &begin_mask},
                               {"end_mask", &end_mask},
                               {"ellipsis_mask", &ellipsis_mask},
                               {"new_axis_mask", &new_axis_mask},
                               {"shrink_axis_mask", &shrink_axis_mask}}) {
      int64_t v = 0;
      absl::Status s = ctx->GetAttr(name, &v);
      if (!s.ok()) return s;
      *field = static_cast<uint64_t>(v);
    }
    return absl::OkStatus();
  }
};

bool Bit(uint64_t mask, int i) { return (mask >> i) & 1; }

// TensorFlow's ValidateStridedSliceOp: expands the sparse spec (with its
// ellipsis and new axes) to one entry per input dim and canonicalizes it.
absl::Status ResolveStridedSlice(const TensorShape& input, const Tensor& begin_t, const Tensor& end_t,
                                 const Tensor& strides_t, const StridedSliceMasks& m, StridedSliceSpec* spec) {
  auto begin = IndexVector(begin_t, "begin");
  if (!begin.ok()) return begin.status();
  auto end = IndexVector(end_t, "end");
  if (!end.ok()) return end.status();
  auto strides = IndexVector(strides_t, "strides");
  if (!strides.ok()) return strides.status();
  if (end->size() != begin->size() || strides->size() != begin->size()) {
    return absl::InvalidArgumentError(absl::StrCat("expected begin, end, and strides to be 1D equal size tensors, but got "
                                                   "shapes ", begin_t.shape().DebugString(), ", ",
                                                   end_t.shape().DebugString(), ", and ",
                                                   strides_t.shape().DebugString()));
  }
  int sparse_dims = static_cast<int>(begin->size());
  if (sparse_dims > 62) return absl::InvalidArgumentError("too many slice dimensions (at most 62)");
  uint64_t ellipsis_mask = m.ellipsis_mask;
  if ((ellipsis_mask & (ellipsis_mask - 1)) != 0) {
    return absl::InvalidArgumentError("multiple ellipses in slice spec not allowed");
  }
  // As TensorFlow's BuildDenseSpec: an ellipsis bit counts only inside the
  // spec (bits 0 .. sparse_dims-1). When none falls there, whatever the mask
  // says beyond, an implicit ellipsis follows the last entry, so the dims the
  // spec does not name are taken whole. (Keying this on ellipsis_mask == 0
  // left those dims out of the processing space, and the output unwritten.)
  if ((ellipsis_mask & ((uint64_t{1} << sparse_dims) - 1)) == 0) {
    ellipsis_mask = uint64_t{1} << sparse_dims;
    ++sparse_dims;
  }
  int ellipsis_pos = 0;
  while (!Bit(ellipsis_mask, ellipsis_pos)) ++ellipsis_pos;
  int num_add_axis_after_ellipsis = 0;
  for (int i = ellipsis_pos + 1; i < sparse_dims; ++i) {
    if (Bit(m.new_axis_mask, i)) ++num_add_axis_after_ellipsis;
  }
  const int dense_dims = input.dims();
  std::vector<int64_t> dbegin(dense_dims, 0), dend(dense_dims, 0), dstride(dense_dims, 1);
  std::vector<bool> dbegin_masked(dense_dims, false), dend_masked(dense_dims, false), dshrink(dense_dims, false);
  constexpr int kNewAxis = -1, kShrinkAxis = -2;
  std::vector<int> gather;  // final dims: input dim, kNewAxis or kShrinkAxis
  int full_index = 0;
  for (int i = 0; i < sparse_dims; ++i) {
    if (Bit(ellipsis_mask, i)) {
      const int next_index = std::min(dense_dims - (sparse_dims - i) + 1 + num_add_axis_after_ellipsis, dense_dims);
      for (; full_index < next_index; ++full_index) {
        dbegin_masked[full_index] = dend_masked[full_index] = true;
        gather.push_back(full_index);
      }
    } else if (Bit(m.new_axis_mask, i)) {
      gather.push_back(kNewAxis);
    } else {
      if (full_index == dense_dims) {
        return absl::InvalidArgumentError(absl::StrCat("index out of range using input dim ", full_index,
                                                       "; input has only ", dense_dims, " dims"));
      }
      dbegin[full_index] = (*begin)[i];
      dend[full_index] = (*end)[i];
      dstride[full_index] = (*strides)[i];
      dbegin_masked[full_index] = Bit(m.begin_mask, i);
      dend_masked[full_index] = Bit(m.end_mask, i);
      dshrink[full_index] = Bit(m.shrink_axis_mask, i);
      gather.push_back(dshrink[full_index] ? kShrinkAxis : full_index);
      ++full_index;
    }
  }
  spec->begin.assign(dense_dims, 0);
  spec->stride.assign(dense_dims, 1);
  spec->size.assign(dense_dims, 0);
  for (int i = 0; i < dense_dims; ++i) {
    const int64_t dim = input.dim_size(i);
    const int64_t stride = dstride[i];
    if (stride == 0) return absl::InvalidArgumentError(absl::StrCat("strides[", i, "] must be non-zero"));
    if (dshrink[i]) {
      const int64_t x = dbegin[i];
      const int64_t x_fwd = x < 0 ? dim + x : x;
      if (x_fwd < 0 || x_fwd >= dim) {
        return absl::InvalidArgumentError(absl::StrCat("slice index ", x, " of dimension ", i, " out of bounds"));
      }
      if (stride <= 0) return absl::InvalidArgumentError("only stride 1 allowed on non-range indexing");
      spec->begin[i] = x_fwd;
      spec->stride[i] = 1;
      spec->size[i] = 1;
      continue;
    }
    const int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? dim : dim - 1;
    auto canonical = [&](int64_t x, bool masked, bool is_end) {
      if (masked) return stride > 0 ? (is_end ? hi : lo) : (is_end ? lo : hi);
      const int64_t x_fwd = x < 0 ? dim + x : x;
      return x_fwd < lo ? lo : (x_fwd > hi ? hi : x_fwd);
    };
    const int64_t b = canonical(dbegin[i], dbegin_masked[i], false);
    const int64_t e = canonical(dend[i], dend_masked[i], true);
    const int64_t interval = e - b;
    int64_t size = 0;
    if (interval != 0 && (interval < 0) == (stride < 0)) {
      size = interval / stride + (interval % stride != 0 ? 1 : 0);
    }
    spec->begin[i] = b;
    // With fewer than two steps the stride is never applied; 1 keeps
    // stride * row-major stride (SpecStrides) from overflowing on a huge one.
    // With two or more, |stride| < dim, and that product stays in bounds.
    spec->stride[i] = size > 1 ? stride : 1;
    spec->size[i] = size;
  }
  spec->final_shape.clear();
  for (int g : gather) {
    if (g == kShrinkAxis) continue;
    spec->final_shape.push_back(g == kNewAxis ? 1 : spec->size[g]);
  }
  return absl::OkStatus();
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
  explicit StridedSliceOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, masks_.Read(ctx)); }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    StridedSliceSpec spec;
    OP_REQUIRES_OK(ctx, ResolveStridedSlice(in.shape(), ctx->input(1), ctx->input(2), ctx->input(3), masks_, &spec));
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
  explicit StridedSliceGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, masks_.Read(ctx)); }
  void Compute(OpKernelContext* ctx) override {
    auto dims = IndexVector(ctx->input(0), "shape");
    OP_REQUIRES_OK(ctx, dims.status());
    auto shape = TensorShape::Build(*dims);
    OP_REQUIRES(ctx, shape.ok(), absl::InvalidArgumentError(absl::StrCat("shape: ", shape.status().message())));
    const Tensor& dy = ctx->input(4);
    StridedSliceSpec spec;
    OP_REQUIRES_OK(ctx, ResolveStridedSlice(*shape, ctx->input(1), ctx->input(2), ctx->input(3), masks_, &spec));
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
