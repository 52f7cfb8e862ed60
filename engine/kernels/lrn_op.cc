// CPU kernels for LRN and LRNGrad over the last dim of a 4-D tensor (each
// pixel's channels): a window sum of squares per channel, in float (double
// for double), rows in parallel chunks. LRNGrad is the exact derivative
// (TensorFlow's): d out_j / d in_k = [j == k] norm_j^-beta
// - 2 alpha beta in_k out_j / norm_j, norm_j = bias + alpha * sum of squares.
// Thread safety: kernels are stateless.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/cwise_ops_common.h"
#include "engine/kernels/nn_util.h"

namespace sluice {
namespace {

class LrnKernel : public OpKernel {
 public:
  explicit LrnKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    int64_t radius = 0;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("depth_radius", &radius));
    OP_REQUIRES(ctx, radius >= 0 && radius <= (int64_t{1} << 30),
                absl::InvalidArgumentError(absl::StrCat("depth_radius must be in [0, 2^30], got ", radius)));
    radius_ = radius;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("bias", &bias_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("alpha", &alpha_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("beta", &beta_));
  }

 protected:
  static absl::Status Check4D(const Tensor& t, const char* what) {
    if (t.dims() != 4) {
      return absl::InvalidArgumentError(absl::StrCat(what, " must be 4-D, got shape ", t.shape().DebugString()));
    }
    return absl::OkStatus();
  }
  // norm[j] = bias + alpha * sum of x[k]^2 over k in [j - r, j + r].
  template <typename A, typename T>
  void Norms(const T* x, int64_t depth, std::vector<A>* norm) const {
    // Prefix sums of squares: each window in O(1).
    std::vector<A> prefix(static_cast<size_t>(depth + 1), A(0));
    for (int64_t k = 0; k < depth; ++k) prefix[k + 1] = prefix[k] + static_cast<A>(x[k]) * static_cast<A>(x[k]);
    for (int64_t j = 0; j < depth; ++j) {
      const int64_t begin = std::max<int64_t>(0, j - radius_), end = std::min<int64_t>(depth, j + radius_ + 1);
      (*norm)[j] = static_cast<A>(bias_) + static_cast<A>(alpha_) * (prefix[end] - prefix[begin]);
    }
  }

  int64_t radius_ = 5;
  float bias_ = 1, alpha_ = 1, beta_ = 0.5f;
};

template <typename T>
class LrnOp : public LrnKernel {
 public:
  using LrnKernel::LrnKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK(ctx, Check4D(in, "input"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t depth = in.dim_size(3);
    if (in.NumElements() == 0) return;
    using A = typename AccumulatorType<T>::type;
    const T* x = in.data<T>();
    T* y = out->data<T>();
    cwise::ParallelFor(ctx, in.NumElements() / depth, depth * 8, [&](int64_t first, int64_t last) {
      std::vector<A> norm(static_cast<size_t>(depth));
      for (int64_t r = first; r < last; ++r) {
        Norms<A>(x + r * depth, depth, &norm);
        for (int64_t j = 0; j < depth; ++j) {
          y[r * depth + j] = static_cast<T>(static_cast<A>(x[r * depth + j]) * std::pow(norm[j], -static_cast<A>(beta_)));
        }
      }
    });
  }
};

template <typename T>
class LrnGradOp : public LrnKernel {
 public:
  using LrnKernel::LrnKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& in = ctx->input(1);
    const Tensor& out_image = ctx->input(2);
    OP_REQUIRES_OK(ctx, Check4D(in, "input_image"));
    OP_REQUIRES(ctx, dy.shape() == in.shape() && out_image.shape() == in.shape(),
                absl::InvalidArgumentError(absl::StrCat("input_grads ", dy.shape().DebugString(), ", input_image ",
                                                        in.shape().DebugString(), " and output_image ",
                                                        out_image.shape().DebugString(), " must have one shape")));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &dx));
    const int64_t depth = in.dim_size(3);
    if (in.NumElements() == 0) return;
    using A = typename AccumulatorType<T>::type;
    const T* x = in.data<T>();
    const T* y = out_image.data<T>();
    const T* g = dy.data<T>();
    T* o = dx->data<T>();
    const A scale = A(-2) * static_cast<A>(alpha_) * static_cast<A>(beta_);
    // Per row: depth channels of up to 2r + 1 window terms (capped: no
    // overflow for any radius).
    const double window = static_cast<double>(std::min<int64_t>(2 * radius_ + 1, depth));
    const int64_t cost = static_cast<int64_t>(std::min(1e15, static_cast<double>(depth) * window * 4));
    cwise::ParallelFor(ctx, in.NumElements() / depth, cost, [&](int64_t first, int64_t last) {
      std::vector<A> norm(static_cast<size_t>(depth)), sum(static_cast<size_t>(depth));
      for (int64_t r = first; r < last; ++r) {
        const T* xr = x + r * depth;
        Norms<A>(xr, depth, &norm);
        std::fill(sum.begin(), sum.end(), A(0));
        for (int64_t j = 0; j < depth; ++j) {
          const A gj = static_cast<A>(g[r * depth + j]);
          const A common = scale * static_cast<A>(y[r * depth + j]) / norm[j] * gj;
          const int64_t begin = std::max<int64_t>(0, j - radius_), end = std::min<int64_t>(depth, j + radius_ + 1);
          for (int64_t k = begin; k < end; ++k) sum[k] += common * static_cast<A>(xr[k]);
          sum[j] += std::pow(norm[j], -static_cast<A>(beta_)) * gj;
        }
        for (int64_t k = 0; k < depth; ++k) o[r * depth + k] = static_cast<T>(sum[k]);
      }
    });
  }
};

#define SLUICE_REG_(T)                                                                      \
  REGISTER_KERNEL_BUILDER(Name("LRN").Device(kDeviceCpu).TypeConstraint<T>("T"), LrnOp<T>); \
  REGISTER_KERNEL_BUILDER(Name("LRNGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), LrnGradOp<T>)
SLUICE_REG_(float);
SLUICE_REG_(double);
SLUICE_REG_(half);
SLUICE_REG_(bfloat16);
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice
