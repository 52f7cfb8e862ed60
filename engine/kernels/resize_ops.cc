// CPU kernels for ResizeBilinear, ResizeNearestNeighbor and their gradients
// (NHWC). The coordinate rules are TensorFlow's, so results match its:
//   scale = in / out, or (in - 1) / (out - 1) with align_corners (out > 1),
//   in float;
//   bilinear source of output i: i * scale, or (i + 0.5) * scale - 0.5 with
//   half_pixel_centers; it lies between rows floor (at least 0) and ceil
//   (at most in - 1), weighted by its fraction; values in float;
//   nearest source: floor(i * scale), round(i * scale) with align_corners, or
//   floor((i + 0.5) * scale) with half_pixel_centers, kept in [0, in - 1].
// The gradients send each incoming value back to the pixels it came from
// (bilinear: its four weighted pixels), summing in float (double for
// double).
// Thread safety: kernels are stateless.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/array_kernel_util.h"
#include "engine/kernels/cwise_ops_common.h"
#include "engine/kernels/nn_util.h"

namespace sluice {
namespace {

float ResizeScale(int64_t in, int64_t out, bool align_corners) {
  return align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

// Where output index i reads from, for bilinear resizing.
struct Interpolation {
  int64_t lower = 0, upper = 0;
  float lerp = 0;
};

// Computed per use, not tabled: a table per output row and column could be
// larger than the output itself (a 1 x 2^31 resize).
// Both rows stay in [0, in - 1]: i * scale in float can round up to `in`
// itself (i = 2^25 - 1 of a 1-pixel image resized to 2^25).
Interpolation BilinearWeight(int64_t i, int64_t in, float scale, bool half_pixel) {
  const float src = half_pixel ? (static_cast<float>(i) + 0.5f) * scale - 0.5f : static_cast<float>(i) * scale;
  const float floor_src = std::floor(src);
  Interpolation w;
  w.lower = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(floor_src), 0), in - 1);
  w.upper = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(std::ceil(src)), 0), in - 1);
  w.lerp = src - floor_src;
  return w;
}

int64_t NearestSource(int64_t i, int64_t in, float scale, bool align_corners, bool half_pixel) {
  const float s = half_pixel ? (static_cast<float>(i) + 0.5f) * scale : static_cast<float>(i) * scale;
  int64_t v = static_cast<int64_t>(align_corners ? std::round(s) : std::floor(s));
  v = std::min(v, in - 1);
  if (half_pixel) v = std::max<int64_t>(v, 0);
  return v;
}

// The attrs and the checks every resize kernel shares.
class ResizeKernel : public OpKernel {
 public:
  explicit ResizeKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("align_corners", &align_corners_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("half_pixel_centers", &half_pixel_centers_));
    OP_REQUIRES(ctx, !(align_corners_ && half_pixel_centers_),
                absl::InvalidArgumentError("align_corners and half_pixel_centers cannot both be true"));
  }

 protected:
  // The [height, width] of input `i`: two positive int32 values.
  static absl::Status ReadSize(OpKernelContext* ctx, int i, int64_t* h, int64_t* w) {
    const Tensor& size = ctx->input(i);
    if (size.dtype() != DT_INT32 || size.dims() != 1 || size.NumElements() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("size must be a vector of 2 int32 values, got shape ", size.shape().DebugString()));
    }
    *h = size.data<int32_t>()[0];
    *w = size.data<int32_t>()[1];
    if (*h <= 0 || *w <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("size must be positive, got [", *h, ", ", *w, "]"));
    }
    return absl::OkStatus();
  }
  // The forward ops' checks of input 0 (the images) and input 1 (the size),
  // and their output allocated: [batch, size[0], size[1], channels].
  static absl::Status AllocateResized(OpKernelContext* ctx, Tensor** out) {
    const Tensor& image = ctx->input(0);
    absl::Status s = Check4D(image, "images");
    if (!s.ok()) return s;
    int64_t oh, ow;
    s = ReadSize(ctx, 1, &oh, &ow);
    if (!s.ok()) return s;
    const int64_t batch = image.dim_size(0), ih = image.dim_size(1), iw = image.dim_size(2), ch = image.dim_size(3);
    if ((ih == 0 || iw == 0) && batch * ch != 0) {
      return absl::InvalidArgumentError(absl::StrCat("cannot resize an image of shape ", image.shape().DebugString()));
    }
    auto shape = TensorShape::Build({batch, oh, ow, ch});
    if (!shape.ok()) return absl::InvalidArgumentError(absl::StrCat("output shape: ", shape.status().message()));
    return ctx->allocate_output(0, *shape, out);
  }
  static absl::Status Check4D(const Tensor& t, const char* what) {
    if (t.dims() != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must be 4-D [batch, height, width, channels], got shape ", t.shape().DebugString()));
    }
    return absl::OkStatus();
  }

  bool align_corners_ = false;
  bool half_pixel_centers_ = false;
};

template <typename T>
class ResizeBilinearOp : public ResizeKernel {
 public:
  using ResizeKernel::ResizeKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& image = ctx->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, AllocateResized(ctx, &out));
    if (out->NumElements() == 0) return;
    const int64_t batch = image.dim_size(0), ih = image.dim_size(1), iw = image.dim_size(2), ch = image.dim_size(3);
    const int64_t oh = out->dim_size(1), ow = out->dim_size(2);
    const float sy = ResizeScale(ih, oh, align_corners_), sx = ResizeScale(iw, ow, align_corners_);
    const bool half = half_pixel_centers_;
    const T* in = image.data<T>();
    float* o = out->data<float>();
    cwise::ParallelFor(ctx, batch * oh, ow * ch * 8, [&](int64_t first, int64_t last) {
      for (int64_t row = first; row < last; ++row) {
        const int64_t b = row / oh, y = row % oh;
        const Interpolation wy = BilinearWeight(y, ih, sy, half);
        const T* top = in + (b * ih + wy.lower) * iw * ch;
        const T* bottom = in + (b * ih + wy.upper) * iw * ch;
        const float ly = wy.lerp;
        float* dst = o + row * ow * ch;
        for (int64_t x = 0; x < ow; ++x) {
          const Interpolation wx = BilinearWeight(x, iw, sx, half);
          const int64_t l = wx.lower * ch, r = wx.upper * ch;
          const float lx = wx.lerp;
          for (int64_t c = 0; c < ch; ++c) {
            const float tl = static_cast<float>(top[l + c]), tr = static_cast<float>(top[r + c]);
            const float bl = static_cast<float>(bottom[l + c]), br = static_cast<float>(bottom[r + c]);
            const float t = tl + (tr - tl) * lx;
            const float bo = bl + (br - bl) * lx;
            dst[x * ch + c] = t + (bo - t) * ly;
          }
        }
      }
    });
  }
};

template <typename T>
class ResizeBilinearGradOp : public ResizeKernel {
 public:
  using ResizeKernel::ResizeKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& grads = ctx->input(0);
    const Tensor& image = ctx->input(1);
    OP_REQUIRES_OK(ctx, Check4D(grads, "grads"));
    OP_REQUIRES_OK(ctx, Check4D(image, "original_image"));
    const int64_t batch = image.dim_size(0), ih = image.dim_size(1), iw = image.dim_size(2), ch = image.dim_size(3);
    const int64_t oh = grads.dim_size(1), ow = grads.dim_size(2);
    OP_REQUIRES(ctx, grads.dim_size(0) == batch && grads.dim_size(3) == ch,
                absl::InvalidArgumentError(absl::StrCat("grads ", grads.shape().DebugString(),
                                                        " and original_image ", image.shape().DebugString(),
                                                        " must agree in batch and channels")));
    OP_REQUIRES(ctx, (ih > 0 && iw > 0) || grads.NumElements() == 0,
                absl::InvalidArgumentError(absl::StrCat("original_image of shape ", image.shape().DebugString(),
                                                        " has no pixel to send gradients to")));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, image.shape(), &out));
    using A = typename AccumulatorType<T>::type;
    Tensor sum_t;  // a tensor: an allocation failure is a status
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<A>::value, image.shape(), &sum_t));
    A* sum = sum_t.data<A>();
    std::fill(sum, sum + sum_t.NumElements(), A(0));
    if (grads.NumElements() > 0) {
      const float sy = ResizeScale(ih, oh, align_corners_), sx = ResizeScale(iw, ow, align_corners_);
      const float* g = grads.data<float>();
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t y = 0; y < oh; ++y) {
          const Interpolation wy = BilinearWeight(y, ih, sy, half_pixel_centers_);
          A* top = sum + (b * ih + wy.lower) * iw * ch;
          A* bottom = sum + (b * ih + wy.upper) * iw * ch;
          const A ly = wy.lerp;
          const float* src = g + (b * oh + y) * ow * ch;
          for (int64_t x = 0; x < ow; ++x) {
            const Interpolation wx = BilinearWeight(x, iw, sx, half_pixel_centers_);
            const int64_t l = wx.lower * ch, r = wx.upper * ch;
            const A lx = wx.lerp;
            for (int64_t c = 0; c < ch; ++c) {
              const A v = src[x * ch + c];
              top[l + c] += v * (1 - ly) * (1 - lx);
              top[r + c] += v * (1 - ly) * lx;
              bottom[l + c] += v * ly * (1 - lx);
              bottom[r + c] += v * ly * lx;
            }
          }
        }
      }
    }
    T* o = out->data<T>();
    for (int64_t i = 0; i < sum_t.NumElements(); ++i) o[i] = static_cast<T>(sum[i]);
  }
};

template <typename T>
class ResizeNearestNeighborOp : public ResizeKernel {
 public:
  using ResizeKernel::ResizeKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& image = ctx->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, AllocateResized(ctx, &out));
    if (out->NumElements() == 0) return;
    const int64_t batch = image.dim_size(0), ih = image.dim_size(1), iw = image.dim_size(2), ch = image.dim_size(3);
    const int64_t oh = out->dim_size(1), ow = out->dim_size(2);
    const float sy = ResizeScale(ih, oh, align_corners_), sx = ResizeScale(iw, ow, align_corners_);
    const T* in = image.data<T>();
    T* o = out->data<T>();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t y = 0; y < oh; ++y) {
        const T* row = in + (b * ih + NearestSource(y, ih, sy, align_corners_, half_pixel_centers_)) * iw * ch;
        T* dst = o + (b * oh + y) * ow * ch;
        for (int64_t x = 0; x < ow; ++x) {
          const int64_t sx_index = NearestSource(x, iw, sx, align_corners_, half_pixel_centers_);
          std::copy(row + sx_index * ch, row + (sx_index + 1) * ch, dst + x * ch);
        }
      }
    }
  }
};

template <typename T>
class ResizeNearestNeighborGradOp : public ResizeKernel {
 public:
  using ResizeKernel::ResizeKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& grads = ctx->input(0);
    OP_REQUIRES_OK(ctx, Check4D(grads, "grads"));
    int64_t ih, iw;  // the image's size: the gradient's shape
    OP_REQUIRES_OK(ctx, ReadSize(ctx, 1, &ih, &iw));
    const int64_t batch = grads.dim_size(0), oh = grads.dim_size(1), ow = grads.dim_size(2), ch = grads.dim_size(3);
    auto shape = TensorShape::Build({batch, ih, iw, ch});
    OP_REQUIRES(ctx, shape.ok(), absl::InvalidArgumentError(absl::StrCat("output shape: ", shape.status().message())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    using A = typename AccumulatorType<T>::type;
    Tensor sum_t;  // a tensor: an allocation failure is a status
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<A>::value, out->shape(), &sum_t));
    A* sum = sum_t.data<A>();
    std::fill(sum, sum + sum_t.NumElements(), A(0));
    if (grads.NumElements() > 0) {
      const float sy = ResizeScale(ih, oh, align_corners_), sx = ResizeScale(iw, ow, align_corners_);
      const T* g = grads.data<T>();
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t y = 0; y < oh; ++y) {
          A* row = sum + (b * ih + NearestSource(y, ih, sy, align_corners_, half_pixel_centers_)) * iw * ch;
          const T* src = g + (b * oh + y) * ow * ch;
          for (int64_t x = 0; x < ow; ++x) {
            const int64_t to = NearestSource(x, iw, sx, align_corners_, half_pixel_centers_) * ch;
            for (int64_t c = 0; c < ch; ++c) row[to + c] += static_cast<A>(src[x * ch + c]);
          }
        }
      }
    }
    T* o = out->data<T>();
    for (int64_t i = 0; i < sum_t.NumElements(); ++i) o[i] = static_cast<T>(sum[i]);
  }
};

#define SLUICE_REG_FORWARD_(T)                                                                          \
  REGISTER_KERNEL_BUILDER(Name("ResizeBilinear").Device(kDeviceCpu).TypeConstraint<T>("T"),             \
                          ResizeBilinearOp<T>);                                                         \
  REGISTER_KERNEL_BUILDER(Name("ResizeNearestNeighbor").Device(kDeviceCpu).TypeConstraint<T>("T"),      \
                          ResizeNearestNeighborOp<T>)
SLUICE_REG_FORWARD_(float);
SLUICE_REG_FORWARD_(double);
SLUICE_REG_FORWARD_(half);
SLUICE_REG_FORWARD_(bfloat16);
SLUICE_REG_FORWARD_(uint8_t);
SLUICE_REG_FORWARD_(int32_t);
#undef SLUICE_REG_FORWARD_
#define SLUICE_REG_GRAD_(T)                                                                             \
  REGISTER_KERNEL_BUILDER(Name("ResizeBilinearGrad").Device(kDeviceCpu).TypeConstraint<T>("T"),         \
                          ResizeBilinearGradOp<T>);                                                     \
  REGISTER_KERNEL_BUILDER(Name("ResizeNearestNeighborGrad").Device(kDeviceCpu).TypeConstraint<T>("T"),  \
                          ResizeNearestNeighborGradOp<T>)
SLUICE_REG_GRAD_(float);
SLUICE_REG_GRAD_(double);
SLUICE_REG_GRAD_(half);
SLUICE_REG_GRAD_(bfloat16);
#undef SLUICE_REG_GRAD_

}  // namespace
}  // namespace sluice
