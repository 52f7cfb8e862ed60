// CPU kernels for DepthwiseConv2dNative and its two backprops (NHWC input,
// filter [h, w, C, M], output channel c * M + q; SAME or VALID, dilation 1,
// TensorFlow's window rules through nn_util.h). Direct loops: per output
// pixel, the window's taps each multiply C input values by their M filters,
// summed in float (double for double); with M = 1 (MobileNet's) a tap is one
// contiguous run over the channels, which the compiler vectorizes. The forward pass runs output rows in
// parallel chunks; the backprops sum into one buffer of their output in
// order (the same bits on any number of threads). Float with M = 1 takes
// depthwise_conv_float.h's explicit-vector loops instead: every pass in
// parallel rows, the input gradient gathered per element, the filter
// gradient summed per group of output rows (their number from the shape
// alone) and then over the groups in order (again the same bits on any number of threads).
// Thread safety: kernels are stateless.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/cwise_ops_common.h"
#include "engine/kernels/depthwise_conv_float.h"
#include "engine/kernels/nn_util.h"

namespace sluice {
namespace {

// The shapes of one depthwise convolution, checked (the float path takes
// the ConvDims part).
struct DepthwiseGeometry : depthwise::ConvDims {
  int64_t multiplier = 0;
  TensorShape input, filter, output;
};

absl::Status MakeGeometry(const TensorShape& input, const TensorShape& filter, const std::vector<int64_t>& strides,
                          const std::string& padding, DepthwiseGeometry* g) {
  if (input.dims() != 4) {
    return absl::InvalidArgumentError(absl::StrCat("input must be 4-D (NHWC), got shape ", input.DebugString()));
  }
  if (filter.dims() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("filter must be 4-D [height, width, in_channels, multiplier], got shape ", filter.DebugString()));
  }
  if (filter.dim_size(2) != input.dim_size(3)) {
    return absl::InvalidArgumentError(absl::StrCat("the filter's in_channels (", filter.dim_size(2),
                                                   ") must match the input's channels (", input.dim_size(3), ")"));
  }
  g->batch = input.dim_size(0);
  g->channels = input.dim_size(3);
  g->multiplier = filter.dim_size(3);
  absl::Status s = ComputeWindow(input.dim_size(1), filter.dim_size(0), strides[1], padding, &g->rows);
  if (!s.ok()) return s;
  s = ComputeWindow(input.dim_size(2), filter.dim_size(1), strides[2], padding, &g->cols);
  if (!s.ok()) return s;
  if (g->channels > 0 && g->multiplier > kMaxTensorElements / g->channels) {
    return absl::InvalidArgumentError(absl::StrCat(g->channels, " channels times multiplier ", g->multiplier,
                                                   " is more output channels than a tensor can hold"));
  }
  auto out = TensorShape::Build({g->batch, g->rows.out, g->cols.out, g->channels * g->multiplier});
  if (!out.ok()) return absl::InvalidArgumentError(absl::StrCat("output shape: ", out.status().message()));
  g->input = input;
  g->filter = filter;
  g->output = *out;
  return absl::OkStatus();
}

// Calls fn(out_pixel, in_pixel, tap) for every window tap of output pixels
// [first_row, last_row) of the flattened (batch, out row) range that falls
// inside the input; pixels are flat NHW indexes, taps flat (ky, kx).
template <typename F>
void ForEachTap(const DepthwiseGeometry& g, int64_t first_row, int64_t last_row, const F& fn) {
  const WindowDim &r = g.rows, &c = g.cols;
  for (int64_t row = first_row; row < last_row; ++row) {
    const int64_t b = row / r.out, oy = row % r.out;
    for (int64_t ox = 0; ox < c.out; ++ox) {
      const int64_t out_pixel = row * c.out + ox;
      for (int64_t ky = 0; ky < r.k; ++ky) {
        const int64_t iy = oy * r.stride - r.pad + ky;
        if (iy < 0 || iy >= r.in) continue;
        for (int64_t kx = 0; kx < c.k; ++kx) {
          const int64_t ix = ox * c.stride - c.pad + kx;
          if (ix < 0 || ix >= c.in) continue;
          fn(out_pixel, (b * r.in + iy) * c.in + ix, ky * c.k + kx);
        }
      }
    }
  }
}

// Output rows per group of the float filter gradient: at least 8, and
// enough that there are at most 256 groups (the partial sums are a group's
// filter each). A function of the shape alone, so the sum's order does not
// depend on the thread count.
int64_t FilterRowsPerGroup(int64_t rows) { return std::max<int64_t>(8, (rows + 255) / 256); }

class DepthwiseKernel : public OpKernel {
 public:
  explicit DepthwiseKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadWindowAttrs(ctx, &strides_, nullptr, &padding_));
  }

 protected:
  // The backprops' common frame: out_backprop (input 2) checked against the
  // output of `g`, output 0 of shape `result` allocated, and
  // `accumulate(sum)` run (when there is a gradient) over a zeroed buffer of
  // that shape in the accumulation type, which is then cast into output 0.
  // The buffer is a tensor: a huge size read from an input fails as a
  // status.
  template <typename T, typename F>
  static void Backprop(OpKernelContext* ctx, const DepthwiseGeometry& g, const TensorShape& result, const F& accumulate) {
    const Tensor& dout = ctx->input(2);
    Tensor* out = BackpropOutput(ctx, g, result);
    if (out == nullptr) return;
    using A = typename AccumulatorType<T>::type;
    Tensor sum_t;
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<A>::value, result, &sum_t));
    A* sum = sum_t.data<A>();
    std::fill(sum, sum + sum_t.NumElements(), A(0));
    if (dout.NumElements() > 0) accumulate(sum);
    T* o = out->data<T>();
    for (int64_t i = 0; i < sum_t.NumElements(); ++i) o[i] = static_cast<T>(sum[i]);
  }

  // A backprop's output 0 of shape `result`, once out_backprop (input 2)
  // has the output's shape; nullptr after an error (set on ctx).
  static Tensor* BackpropOutput(OpKernelContext* ctx, const DepthwiseGeometry& g, const TensorShape& result) {
    const Tensor& dout = ctx->input(2);
    Tensor* out = nullptr;
    absl::Status s = dout.shape() == g.output
                         ? ctx->allocate_output(0, result, &out)
                         : absl::InvalidArgumentError(absl::StrCat("out_backprop must have the output's shape ",
                                                                   g.output.DebugString(), ", got ",
                                                                   dout.shape().DebugString()));
    if (!s.ok()) {
      ctx->SetStatus(s);
      return nullptr;
    }
    return out;
  }

  std::vector<int64_t> strides_;
  std::string padding_;
};

template <typename T>
class DepthwiseConv2dOp : public DepthwiseKernel {
 public:
  using DepthwiseKernel::DepthwiseKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    DepthwiseGeometry g;
    OP_REQUIRES_OK(ctx, MakeGeometry(input.shape(), filter.shape(), strides_, padding_, &g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output, &out));
    if (out->NumElements() == 0) return;
    const int64_t rows = g.batch * g.rows.out;
    if constexpr (std::is_same_v<T, float>) {
      if (g.multiplier == 1) {
        cwise::ParallelFor(ctx, rows, g.cols.out * g.rows.k * g.cols.k * g.channels, [&](int64_t first, int64_t last) {
          depthwise::Forward(g, input.data<float>(), filter.data<float>(), out->data<float>(), first, last);
        });
        return;
      }
    }
    using A = typename AccumulatorType<T>::type;
    const int64_t C = g.channels, M = g.multiplier, CM = C * M;
    const T* in = input.data<T>();
    const T* f = filter.data<T>();
    T* o = out->data<T>();
    cwise::ParallelFor(ctx, rows, g.cols.out * g.rows.k * g.cols.k * CM, [&](int64_t first, int64_t last) {
      std::vector<A> sum(static_cast<size_t>(g.cols.out * CM));
      for (int64_t row = first; row < last; ++row) {
        std::fill(sum.begin(), sum.end(), A(0));
        ForEachTap(g, row, row + 1, [&](int64_t out_pixel, int64_t in_pixel, int64_t tap) {
          A* acc = sum.data() + (out_pixel - row * g.cols.out) * CM;
          const T* x = in + in_pixel * C;
          const T* w = f + tap * CM;
          if (M == 1) {  // the common case (MobileNet's): one contiguous, vectorizable run
            for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<A>(x[c]) * static_cast<A>(w[c]);
            return;
          }
          for (int64_t c = 0; c < C; ++c) {
            const A v = static_cast<A>(x[c]);
            for (int64_t q = 0; q < M; ++q) acc[c * M + q] += v * static_cast<A>(w[c * M + q]);
          }
        });
        T* dst = o + row * g.cols.out * CM;
        for (size_t i = 0; i < sum.size(); ++i) dst[i] = static_cast<T>(sum[i]);
      }
    });
  }
};

template <typename T>
class DepthwiseBackpropInputOp : public DepthwiseKernel {
 public:
  using DepthwiseKernel::DepthwiseKernel;
  void Compute(OpKernelContext* ctx) override {
    TensorShape input_shape;
    OP_REQUIRES_OK(ctx, ShapeFromTensor(ctx->input(0), 4, &input_shape));
    const Tensor& filter = ctx->input(1);
    DepthwiseGeometry g;
    OP_REQUIRES_OK(ctx, MakeGeometry(input_shape, filter.shape(), strides_, padding_, &g));
    if constexpr (std::is_same_v<T, float>) {
      if (g.multiplier == 1) {
        const Tensor& dout = ctx->input(2);
        Tensor* dx = BackpropOutput(ctx, g, input_shape);
        if (dx == nullptr || dx->NumElements() == 0) return;
        cwise::ParallelFor(ctx, g.batch * g.rows.in, g.cols.in * g.rows.k * g.cols.k * g.channels,
                           [&](int64_t first, int64_t last) {
                             depthwise::BackpropInput(g, dout.data<float>(), filter.data<float>(), dx->data<float>(),
                                                      first, last);
                           });
        return;
      }
    }
    const int64_t C = g.channels, M = g.multiplier, CM = C * M;
    const T* f = filter.data<T>();
    const T* dy = ctx->input(2).data<T>();
    Backprop<T>(ctx, g, input_shape, [&](auto* sum) {
      using A = std::remove_pointer_t<decltype(sum)>;
      ForEachTap(g, 0, g.batch * g.rows.out, [&](int64_t out_pixel, int64_t in_pixel, int64_t tap) {
        A* acc = sum + in_pixel * C;
        const T* d = dy + out_pixel * CM;
        const T* w = f + tap * CM;
        if (M == 1) {
          for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<A>(d[c]) * static_cast<A>(w[c]);
          return;
        }
        for (int64_t c = 0; c < C; ++c) {
          A v = 0;
          for (int64_t q = 0; q < M; ++q) v += static_cast<A>(d[c * M + q]) * static_cast<A>(w[c * M + q]);
          acc[c] += v;
        }
      });
    });
  }
};

template <typename T>
class DepthwiseBackpropFilterOp : public DepthwiseKernel {
 public:
  using DepthwiseKernel::DepthwiseKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    TensorShape filter_shape;
    OP_REQUIRES_OK(ctx, ShapeFromTensor(ctx->input(1), 4, &filter_shape));
    DepthwiseGeometry g;
    OP_REQUIRES_OK(ctx, MakeGeometry(input.shape(), filter_shape, strides_, padding_, &g));
    if constexpr (std::is_same_v<T, float>) {
      if (g.multiplier == 1) {
        const Tensor& dout = ctx->input(2);
        Tensor* df = BackpropOutput(ctx, g, filter_shape);
        if (df == nullptr) return;
        float* sum = df->data<float>();
        std::fill(sum, sum + df->NumElements(), 0.0f);
        const int64_t rows = g.batch * g.rows.out, taps = g.rows.k * g.cols.k * g.channels;
        if (rows == 0 || taps == 0) return;
        const int64_t per_group = FilterRowsPerGroup(rows);
        const int64_t groups = (rows + per_group - 1) / per_group;
        Tensor partial_t;
        OP_REQUIRES_OK(ctx, ctx->allocate_temp(DT_FLOAT, TensorShape({groups, taps}), &partial_t));
        float* partial = partial_t.data<float>();
        cwise::ParallelFor(ctx, groups, per_group * g.cols.out * taps, [&](int64_t first, int64_t last) {
          for (int64_t group = first; group < last; ++group) {
            depthwise::BackpropFilter(g, input.data<float>(), dout.data<float>(), partial + group * taps,
                                      group * per_group, std::min(rows, (group + 1) * per_group));
          }
        });
        for (int64_t group = 0; group < groups; ++group) {
          for (int64_t i = 0; i < taps; ++i) sum[i] += partial[group * taps + i];
        }
        return;
      }
    }
    const int64_t C = g.channels, M = g.multiplier, CM = C * M;
    const T* in = input.data<T>();
    const T* dy = ctx->input(2).data<T>();
    Backprop<T>(ctx, g, filter_shape, [&](auto* sum) {
      using A = std::remove_pointer_t<decltype(sum)>;
      ForEachTap(g, 0, g.batch * g.rows.out, [&](int64_t out_pixel, int64_t in_pixel, int64_t tap) {
        A* acc = sum + tap * CM;
        const T* x = in + in_pixel * C;
        const T* d = dy + out_pixel * CM;
        if (M == 1) {
          for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<A>(x[c]) * static_cast<A>(d[c]);
          return;
        }
        for (int64_t c = 0; c < C; ++c) {
          const A v = static_cast<A>(x[c]);
          for (int64_t q = 0; q < M; ++q) acc[c * M + q] += v * static_cast<A>(d[c * M + q]);
        }
      });
    });
  }
};

#define SLUICE_REG_(T)                                                                                        \
  REGISTER_KERNEL_BUILDER(Name("DepthwiseConv2dNative").Device(kDeviceCpu).TypeConstraint<T>("T"),            \
                          DepthwiseConv2dOp<T>);                                                             \
  REGISTER_KERNEL_BUILDER(Name("DepthwiseConv2dNativeBackpropInput").Device(kDeviceCpu).TypeConstraint<T>("T"), \
                          DepthwiseBackpropInputOp<T>);                                                      \
  REGISTER_KERNEL_BUILDER(Name("DepthwiseConv2dNativeBackpropFilter").Device(kDeviceCpu).TypeConstraint<T>("T"), \
                          DepthwiseBackpropFilterOp<T>)
SLUICE_REG_(float);
SLUICE_REG_(double);
SLUICE_REG_(half);
SLUICE_REG_(bfloat16);
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice
