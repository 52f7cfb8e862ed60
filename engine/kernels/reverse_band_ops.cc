// CPU kernels for ReverseV2, ReverseSequence, Roll and MatrixBandPart, for
// every dtype (elements are moved as bytes; strings by assignment, through
// array_kernel_util.h). ReverseV2 copies runs of the innermost dims that are
// not reversed as one block; ReverseSequence copies the input and then the
// reversed prefix of each line along seq_dim (whole inner blocks when the
// batch dim comes first); Roll copies each innermost row as at most two runs
// to its rotated place; MatrixBandPart copies the input and zeroes each row
// outside its band.
// Thread safety: kernels are stateless.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/array_kernel_util.h"

namespace sluice {
namespace {

using array_util::CopyElements;

// Zeroes elements [off, off + n) of `t`.
void ZeroRange(const Tensor& t, int64_t off, int64_t n) {
  if (n <= 0) return;
  if (t.dtype() == DT_STRING) {
    tstring* d = t.data<tstring>() + off;
    for (int64_t i = 0; i < n; ++i) d[i].clear();
    return;
  }
  const int bytes = array_util::ElementBytes(t.dtype());
  std::memset(static_cast<char*>(t.raw_data()) + off * bytes, 0, static_cast<size_t>(n * bytes));
}

class ReverseV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto axes = array_util::IndexVector(ctx->input(1), "axis");
    OP_REQUIRES_OK(ctx, axes.status());
    const int rank = in.dims();
    std::vector<bool> reversed(rank, false);
    for (int64_t a : *axes) {
      auto axis = array_util::CanonicalAxis(a, rank, "axis");
      OP_REQUIRES_OK(ctx, axis.status());
      OP_REQUIRES(ctx, !reversed[*axis],
                  absl::InvalidArgumentError(absl::StrCat("axis ", *axis, " is given more than once")));
      reversed[*axis] = true;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    if (in.NumElements() == 0) return;
    // Dims after the last reversed one form contiguous blocks.
    int last = rank - 1;
    while (last >= 0 && !reversed[last]) --last;
    if (last < 0) {
      CopyElements(in, 0, *out, 0, in.NumElements());
      return;
    }
    const int64_t block = array_util::DimProduct(in.shape(), last + 1, rank);
    std::vector<int64_t> stride(last + 1);
    int64_t s = block;
    for (int d = last; d >= 0; --d) {
      stride[d] = s;
      s *= in.dim_size(d);
    }
    const int64_t blocks = in.NumElements() / block;
    std::vector<int64_t> index(last + 1, 0);
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t src = 0;
      for (int d = 0; d <= last; ++d) {
        src += (reversed[d] ? in.dim_size(d) - 1 - index[d] : index[d]) * stride[d];
      }
      CopyElements(in, src, *out, b * block, block);
      for (int d = last; d >= 0; --d) {
        if (++index[d] < in.dim_size(d)) break;
        index[d] = 0;
      }
    }
  }
};

class ReverseSequenceOp : public OpKernel {
 public:
  explicit ReverseSequenceOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seq_dim", &seq_dim_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("batch_dim", &batch_dim_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const int rank = in.dims();
    OP_REQUIRES(ctx, seq_dim_ >= 0 && seq_dim_ < rank && batch_dim_ >= 0 && batch_dim_ < rank && seq_dim_ != batch_dim_,
                absl::InvalidArgumentError(absl::StrCat("seq_dim (", seq_dim_, ") and batch_dim (", batch_dim_,
                                                        ") must be two different dims of the input, of shape ",
                                                        in.shape().DebugString())));
    const Tensor& lengths_t = ctx->input(1);
    OP_REQUIRES(ctx, lengths_t.dims() == 1 && lengths_t.dim_size(0) == in.dim_size(batch_dim_),
                absl::InvalidArgumentError(absl::StrCat("seq_lengths must be a vector of the input's batch dim ",
                                                        batch_dim_, " (", in.dim_size(batch_dim_), " entries), got shape ",
                                                        lengths_t.shape().DebugString())));
    auto lengths = array_util::IndexVector(lengths_t, "seq_lengths");
    OP_REQUIRES_OK(ctx, lengths.status());
    const int64_t n = in.dim_size(seq_dim_);
    for (size_t b = 0; b < lengths->size(); ++b) {
      OP_REQUIRES(ctx, (*lengths)[b] >= 0 && (*lengths)[b] <= n,
                  absl::InvalidArgumentError(absl::StrCat("seq_lengths[", b, "] = ", (*lengths)[b],
                                                          " is not in [0, ", n, "] (the input's dim ", seq_dim_, ")")));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    if (in.NumElements() == 0) return;
    CopyElements(in, 0, *out, 0, in.NumElements());
    // The input as [outer, n, inner] around seq_dim; an element's batch
    // index is a digit of its outer index or of its inner one.
    const int64_t outer = array_util::DimProduct(in.shape(), 0, static_cast<int>(seq_dim_));
    const int64_t inner = array_util::DimProduct(in.shape(), static_cast<int>(seq_dim_) + 1, rank);
    const int64_t batch = in.dim_size(batch_dim_);
    const int64_t below_batch = array_util::DimProduct(
        in.shape(), static_cast<int>(batch_dim_) + 1, batch_dim_ < seq_dim_ ? static_cast<int>(seq_dim_) : rank);
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t line = o * n * inner;
      if (batch_dim_ < seq_dim_) {
        const int64_t len = (*lengths)[(o / below_batch) % batch];
        for (int64_t k = 0; k < len; ++k) CopyElements(in, line + (len - 1 - k) * inner, *out, line + k * inner, inner);
        continue;
      }
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t len = (*lengths)[(i / below_batch) % batch];
        for (int64_t k = 0; k < len; ++k) {
          CopyElements(in, line + (len - 1 - k) * inner + i, *out, line + k * inner + i, 1);
        }
      }
    }
  }

 private:
  int64_t seq_dim_ = 0;
  int64_t batch_dim_ = 0;
};

// output[(i_d + shift_d) mod n_d] = input[i], the shifts of an axis given
// more than once added up.
class RollOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor &shift_t = ctx->input(1), &axis_t = ctx->input(2);
    OP_REQUIRES(ctx, shift_t.dims() <= 1 && axis_t.dims() <= 1 && shift_t.NumElements() == axis_t.NumElements(),
                absl::InvalidArgumentError(absl::StrCat(
                    "shift and axis must be scalars or vectors of the same length, got shapes ",
                    shift_t.shape().DebugString(), " and ", axis_t.shape().DebugString())));
    // Scalars or vectors (checked above).
    auto values = [](const Tensor& t) {
      std::vector<int64_t> v(t.NumElements());
      for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = array_util::IndexAt(t, i);
      return v;
    };
    const std::vector<int64_t> shifts = values(shift_t), axes = values(axis_t);
    const int rank = in.dims();
    std::vector<int64_t> shift(rank, 0);  // per dim, in [0, n)
    for (size_t k = 0; k < axes.size(); ++k) {
      auto axis = array_util::CanonicalAxis(axes[k], rank, "axis");
      OP_REQUIRES_OK(ctx, axis.status());
      const int64_t n = in.dim_size(*axis);
      if (n == 0) continue;
      // (s mod n) without overflow for any int64 s.
      int64_t s = shifts[k] % n;
      if (s < 0) s += n;
      shift[*axis] = (shift[*axis] + s) % n;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    if (in.NumElements() == 0) return;
    if (rank == 0) {
      CopyElements(in, 0, *out, 0, 1);
      return;
    }
    // Rows of the innermost dim: each goes to its rotated row, in two runs.
    const int64_t row = in.dim_size(rank - 1), rows = in.NumElements() / row;
    const int64_t s_last = shift[rank - 1];
    std::vector<int64_t> index(rank - 1, 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t dst_row = 0;
      for (int d = 0; d < rank - 1; ++d) {
        int64_t i = index[d] + shift[d];
        if (i >= in.dim_size(d)) i -= in.dim_size(d);
        dst_row = dst_row * in.dim_size(d) + i;
      }
      const int64_t src = r * row, dst = dst_row * row;
      CopyElements(in, src, *out, dst + s_last, row - s_last);
      CopyElements(in, src + row - s_last, *out, dst, s_last);
      for (int d = rank - 2; d >= 0; --d) {
        if (++index[d] < in.dim_size(d)) break;
        index[d] = 0;
      }
    }
  }
};

class MatrixBandPartOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, in.dims() >= 2,
                absl::InvalidArgumentError(absl::StrCat("input must be at least a matrix (rank >= 2), got shape ",
                                                        in.shape().DebugString())));
    auto lower = array_util::IndexScalar(ctx->input(1), "num_lower");
    OP_REQUIRES_OK(ctx, lower.status());
    auto upper = array_util::IndexScalar(ctx->input(2), "num_upper");
    OP_REQUIRES_OK(ctx, upper.status());
    const int64_t rows = in.dim_size(in.dims() - 2), cols = in.dim_size(in.dims() - 1);
    OP_REQUIRES(ctx, *lower <= rows,
                absl::InvalidArgumentError(absl::StrCat("num_lower must be negative or at most the number of rows (",
                                                        rows, "), got ", *lower)));
    OP_REQUIRES(ctx, *upper <= cols,
                absl::InvalidArgumentError(absl::StrCat(
                    "num_upper must be negative or at most the number of columns (", cols, "), got ", *upper)));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    if (in.NumElements() == 0) return;
    CopyElements(in, 0, *out, 0, in.NumElements());
    const int64_t matrices = in.NumElements() / (rows * cols);
    for (int64_t m = 0; m < matrices; ++m) {
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t row = (m * rows + i) * cols;
        // Kept: max(0, i - lower) <= j <= min(cols - 1, i + upper).
        const int64_t first = *lower < 0 ? 0 : std::clamp<int64_t>(i - *lower, 0, cols);
        const int64_t end = *upper < 0 ? cols : std::clamp<int64_t>(i + *upper + 1, 0, cols);
        if (first >= end) {
          ZeroRange(*out, row, cols);
          continue;
        }
        ZeroRange(*out, row, first);
        ZeroRange(*out, row + end, cols - end);
      }
    }
  }
};

REGISTER_KERNEL_BUILDER(Name("ReverseV2").Device(kDeviceCpu), ReverseV2Op);
REGISTER_KERNEL_BUILDER(Name("MatrixBandPart").Device(kDeviceCpu), MatrixBandPartOp);
REGISTER_KERNEL_BUILDER(Name("ReverseSequence").Device(kDeviceCpu), ReverseSequenceOp);
REGISTER_KERNEL_BUILDER(Name("Roll").Device(kDeviceCpu), RollOp);

}  // namespace
}  // namespace sluice
