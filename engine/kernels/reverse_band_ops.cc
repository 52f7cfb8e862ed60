// CPU kernels for ReverseV2 and MatrixBandPart, for every dtype (elements are
// moved as bytes; strings by assignment, through array_kernel_util.h).
// ReverseV2 copies runs of the innermost dims that are not reversed as one
// block; MatrixBandPart copies the input and zeroes each row outside its band.
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

}  // namespace
}  // namespace sluice
