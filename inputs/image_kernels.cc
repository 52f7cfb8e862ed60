// CPU kernels for the image ops (image_ops.cc).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "inputs/random_seed.h"

namespace sluice {
namespace {

class ImageToFloatOp : public OpKernel {
 public:
  explicit ImageToFloatOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("scale", &scale_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    // Locals, so the compiler knows a store to dst changes neither the scale
    // nor the count, and vectorizes the loop.
    const uint8_t* __restrict src = in.data<uint8_t>();
    float* __restrict dst = out->data<float>();
    const float scale = scale_;
    const int64_t n = in.NumElements();
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * scale;
  }

 private:
  float scale_ = 1.0f / 255;
};

class PerImageStandardizationOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t images = in.dims() == 4 ? in.dim_size(0) : 1;
    const int64_t n = images == 0 ? 0 : in.NumElements() / images;
    for (int64_t b = 0; b < images; ++b) {
      const float* x = in.data<float>() + b * n;
      float* y = out->data<float>() + b * n;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < n; ++i) sum += x[i];
      const double mean = n > 0 ? sum / n : 0;
      for (int64_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
      const double stddev = n > 0 ? std::sqrt(sq / n) : 0;
      const double adjusted = std::max(stddev, n > 0 ? 1.0 / std::sqrt(static_cast<double>(n)) : 1.0);
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>((x[i] - mean) / adjusted);
    }
  }
};

class RandomFlipLeftRightOp : public OpKernel {
 public:
  explicit RandomFlipLeftRightOp(OpKernelConstruction* ctx) : OpKernel(ctx), rng_(Seed(ctx, "seed"), Seed(ctx, "seed2")) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, in.dims() == 2 || in.dims() == 3,
                absl::InvalidArgumentError(absl::StrCat("image must be [H, W] or [H, W, C], got ",
                                                        in.shape().DebugString())));
    if (rng_.Uniform(2) == 0) {
      ctx->set_output(0, in);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t h = in.dim_size(0), w = in.dim_size(1);
    const size_t pixel = static_cast<size_t>((in.dims() == 3 ? in.dim_size(2) : 1) * DataTypeSize(in.dtype()));
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t c = 0; c < w; ++c) {
        std::memcpy(dst + (r * w + c) * pixel, src + (r * w + (w - 1 - c)) * pixel, pixel);
      }
    }
  }
  static int64_t Seed(OpKernelConstruction* ctx, const char* attr) {
    int64_t v = 0;
    ctx->GetAttr(attr, &v).IgnoreError();
    return v;
  }

 private:
  SeededRandom rng_;
};

class RandomCropOp : public OpKernel {
 public:
  explicit RandomCropOp(OpKernelConstruction* ctx)
      : OpKernel(ctx), rng_(RandomFlipLeftRightOp::Seed(ctx, "seed"), RandomFlipLeftRightOp::Seed(ctx, "seed2")) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& size = ctx->input(1);
    OP_REQUIRES(ctx, in.dims() == 3,
                absl::InvalidArgumentError(absl::StrCat("image must be [H, W, C], got ", in.shape().DebugString())));
    OP_REQUIRES(ctx, size.NumElements() == 2, absl::InvalidArgumentError("size must be [height, width]"));
    const int64_t h = size.data<int64_t>()[0], w = size.data<int64_t>()[1];
    const int64_t H = in.dim_size(0), W = in.dim_size(1), C = in.dim_size(2);
    OP_REQUIRES(ctx, h >= 0 && w >= 0 && h <= H && w <= W,
                absl::InvalidArgumentError(absl::StrCat("crop of ", h, "x", w, " does not fit an image of ", H, "x",
                                                        W)));
    const int64_t top = static_cast<int64_t>(rng_.Uniform(static_cast<uint64_t>(H - h + 1)));
    const int64_t left = static_cast<int64_t>(rng_.Uniform(static_cast<uint64_t>(W - w + 1)));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({h, w, C}), &out));
    const size_t es = DataTypeSize(in.dtype());
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    for (int64_t r = 0; r < h; ++r) {
      std::memcpy(dst + r * w * C * es, src + ((top + r) * W + left) * C * es, static_cast<size_t>(w * C) * es);
    }
  }

 private:
  SeededRandom rng_;
};

REGISTER_KERNEL_BUILDER(Name("ImageToFloat").Device(kDeviceCpu), ImageToFloatOp);
REGISTER_KERNEL_BUILDER(Name("PerImageStandardization").Device(kDeviceCpu), PerImageStandardizationOp);
REGISTER_KERNEL_BUILDER(Name("RandomFlipLeftRight").Device(kDeviceCpu), RandomFlipLeftRightOp);
REGISTER_KERNEL_BUILDER(Name("RandomCrop").Device(kDeviceCpu), RandomCropOp);

}  // namespace
}  // namespace sluice
