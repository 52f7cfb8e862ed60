// CPU kernels for FusedBatchNormV3 and FusedBatchNormGradV3. x is viewed as
// [outer, C, inner] (channels last: inner = 1; channels first: outer = N);
// statistics per channel accumulate in double. Training: y uses the batch
// mean and biased variance; batch_variance is the unbiased one, blended into
// the given running values when exponential_avg_factor != 1;
// reserve_space_1/2 keep the batch mean and biased variance for the
// gradient. Inference: the given mean and variance. reserve_space_3/4/5 are
// empty. Thread safety: kernels are stateless.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"

namespace sluice {
namespace {

struct Layout {
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t count() const { return outer * inner; }
};

absl::Status ReadFormat(OpKernelConstruction* ctx, bool* channels_first) {
  std::string format = "NHWC";
  if (ctx->def().attr().count("data_format")) {
    absl::Status s = ctx->GetAttr("data_format", &format);
    if (!s.ok()) return s;
  }
  if (format != "NHWC" && format != "NCHW" && format != "NDHWC" && format != "NCDHW") {
    return absl::InvalidArgumentError(
        absl::StrCat("data_format must be NHWC, NCHW, NDHWC or NCDHW, got '", format, "'"));
  }
  *channels_first = format == "NCHW" || format == "NCDHW";
  return absl::OkStatus();
}

absl::Status MakeLayout(const Tensor& x, bool channels_first, Layout* l) {
  if (x.dims() != 4 && x.dims() != 5) {
    return absl::InvalidArgumentError(absl::StrCat("x must have rank 4 or 5, got shape ", x.shape().DebugString()));
  }
  const int c = channels_first ? 1 : x.dims() - 1;
  l->channels = x.dim_size(c);
  l->outer = l->inner = 1;
  for (int d = 0; d < c; ++d) l->outer *= x.dim_size(d);
  for (int d = c + 1; d < x.dims(); ++d) l->inner *= x.dim_size(d);
  return absl::OkStatus();
}

absl::Status CheckChannelVector(const Tensor& v, const char* name, int64_t channels) {
  if (v.dims() != 1 || v.dim_size(0) != channels) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a vector of the ", channels,
                                                   " channels of x, got shape ", v.shape().DebugString()));
  }
  return absl::OkStatus();
}

// Calls fn(channel, flat index) for every element of x, in memory order.
template <typename F>
void ForEach(const Layout& l, F fn) {
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t c = 0; c < l.channels; ++c) {
      const int64_t base = (o * l.channels + c) * l.inner;
      for (int64_t i = 0; i < l.inner; ++i) fn(c, base + i);
    }
  }
}

template <typename T, typename U>
class FusedBatchNormOp : public OpKernel {
 public:
  explicit FusedBatchNormOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadFormat(ctx, &channels_first_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("epsilon", &epsilon_));
    if (ctx->def().attr().count("exponential_avg_factor")) {
      OP_REQUIRES_OK(ctx, ctx->GetAttr("exponential_avg_factor", &avg_factor_));
    }
    OP_REQUIRES_OK(ctx, ctx->GetAttr("is_training", &is_training_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Layout l;
    OP_REQUIRES_OK(ctx, MakeLayout(x, channels_first_, &l));
    const char* names[] = {"scale", "offset", "mean", "variance"};
    for (int i = 1; i <= 4; ++i) {
      // Training with exponential_avg_factor 1 ignores the running statistics
      // (TensorFlow allows them empty); a blend needs them.
      if (is_training_ && avg_factor_ == 1.0f && i >= 3) continue;
      OP_REQUIRES_OK(ctx, CheckChannelVector(ctx->input(i), names[i - 1], l.channels));
    }
    const int64_t C = l.channels, n = l.count();
    const T* in = x.data<T>();
    const U* scale = ctx->input(1).data<U>();
    const U* offset = ctx->input(2).data<U>();
    std::vector<double> mean(C, 0.0), var(C, 0.0);
    if (is_training_) {
      ForEach(l, [&](int64_t c, int64_t k) { mean[c] += static_cast<double>(in[k]); });
      for (double& m : mean) m = n > 0 ? m / n : 0.0;
      ForEach(l, [&](int64_t c, int64_t k) {
        const double d = static_cast<double>(in[k]) - mean[c];
        var[c] += d * d;
      });
      for (double& v : var) v = n > 0 ? v / n : 0.0;
    } else {
      for (int64_t c = 0; c < C; ++c) {
        mean[c] = static_cast<double>(ctx->input(3).data<U>()[c]);
        var[c] = static_cast<double>(ctx->input(4).data<U>()[c]);
      }
    }
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    std::vector<double> mul(C), add(C);
    for (int64_t c = 0; c < C; ++c) {
      mul[c] = static_cast<double>(scale[c]) / std::sqrt(var[c] + epsilon_);
      add[c] = static_cast<double>(offset[c]) - mean[c] * mul[c];
    }
    T* out = y->data<T>();
    ForEach(l, [&](int64_t c, int64_t k) { out[k] = static_cast<T>(static_cast<double>(in[k]) * mul[c] + add[c]); });

    Tensor* outs[5];
    for (int i = 1; i <= 4; ++i) OP_REQUIRES_OK(ctx, ctx->allocate_output(i, TensorShape({C}), &outs[i - 1]));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(5, TensorShape({0}), &outs[4]));
    const bool blend = is_training_ && avg_factor_ != 1.0f;
    for (int64_t c = 0; c < C; ++c) {
      double batch_mean = mean[c], batch_var = var[c];
      if (is_training_) {
        batch_var = n > 1 ? var[c] * n / (n - 1) : var[c];
        if (blend) {
          const double f = avg_factor_;
          batch_mean = (1 - f) * static_cast<double>(ctx->input(3).data<U>()[c]) + f * batch_mean;
          batch_var = (1 - f) * static_cast<double>(ctx->input(4).data<U>()[c]) + f * batch_var;
        }
      }
      outs[0]->data<U>()[c] = static_cast<U>(batch_mean);
      outs[1]->data<U>()[c] = static_cast<U>(batch_var);
      outs[2]->data<U>()[c] = static_cast<U>(mean[c]);
      outs[3]->data<U>()[c] = static_cast<U>(var[c]);
    }
  }

 private:
  bool channels_first_ = false;
  float epsilon_ = 1e-4f;
  float avg_factor_ = 1.0f;
  bool is_training_ = true;
};

template <typename T, typename U>
class FusedBatchNormGradOp : public OpKernel {
 public:
  explicit FusedBatchNormGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadFormat(ctx, &channels_first_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("epsilon", &epsilon_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("is_training", &is_training_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    Layout l;
    OP_REQUIRES_OK(ctx, MakeLayout(x, channels_first_, &l));
    OP_REQUIRES(ctx, dy.shape() == x.shape(),
                absl::InvalidArgumentError(absl::StrCat("y_backprop and x must have one shape, got ",
                                                        dy.shape().DebugString(), " and ", x.shape().DebugString())));
    OP_REQUIRES_OK(ctx, CheckChannelVector(ctx->input(2), "scale", l.channels));
    OP_REQUIRES_OK(ctx, CheckChannelVector(ctx->input(3), "reserve_space_1 (mean)", l.channels));
    OP_REQUIRES_OK(ctx, CheckChannelVector(ctx->input(4), "reserve_space_2 (variance)", l.channels));
    const int64_t C = l.channels, n = l.count();
    const T* g = dy.data<T>();
    const T* in = x.data<T>();
    std::vector<double> inv(C), mean(C), sum_dy(C, 0.0), sum_dy_xhat(C, 0.0);
    for (int64_t c = 0; c < C; ++c) {
      mean[c] = static_cast<double>(ctx->input(3).data<U>()[c]);
      inv[c] = 1.0 / std::sqrt(static_cast<double>(ctx->input(4).data<U>()[c]) + epsilon_);
    }
    ForEach(l, [&](int64_t c, int64_t k) {
      const double d = static_cast<double>(g[k]);
      sum_dy[c] += d;
      sum_dy_xhat[c] += d * (static_cast<double>(in[k]) - mean[c]) * inv[c];
    });
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &dx));
    const U* scale = ctx->input(2).data<U>();
    T* out = dx->data<T>();
    if (is_training_) {
      // dx = scale * inv / n * (n * dy - sum(dy) - xhat * sum(dy * xhat)).
      ForEach(l, [&](int64_t c, int64_t k) {
        const double xhat = (static_cast<double>(in[k]) - mean[c]) * inv[c];
        const double v = static_cast<double>(scale[c]) * inv[c] *
                         (static_cast<double>(g[k]) - (sum_dy[c] + xhat * sum_dy_xhat[c]) / n);
        out[k] = static_cast<T>(v);
      });
    } else {
      ForEach(l, [&](int64_t c, int64_t k) {
        out[k] = static_cast<T>(static_cast<double>(g[k]) * static_cast<double>(scale[c]) * inv[c]);
      });
    }
    Tensor *dscale, *doffset, *r4, *r5;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({C}), &dscale));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({C}), &doffset));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, TensorShape({0}), &r4));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(4, TensorShape({0}), &r5));
    for (int64_t c = 0; c < C; ++c) {
      dscale->data<U>()[c] = static_cast<U>(sum_dy_xhat[c]);
      doffset->data<U>()[c] = static_cast<U>(sum_dy[c]);
    }
  }

 private:
  bool channels_first_ = false;
  float epsilon_ = 1e-4f;
  bool is_training_ = true;
};

#define SLUICE_REG_(T, U)                                                                               \
  REGISTER_KERNEL_BUILDER(                                                                             \
      Name("FusedBatchNormV3").Device(kDeviceCpu).TypeConstraint<T>("T").TypeConstraint<U>("U"),       \
      (FusedBatchNormOp<T, U>));                                                                       \
  REGISTER_KERNEL_BUILDER(                                                                             \
      Name("FusedBatchNormGradV3").Device(kDeviceCpu).TypeConstraint<T>("T").TypeConstraint<U>("U"),   \
      (FusedBatchNormGradOp<T, U>))
SLUICE_REG_(float, float);
SLUICE_REG_(half, float);
SLUICE_REG_(bfloat16, float);
SLUICE_REG_(double, double);
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice
