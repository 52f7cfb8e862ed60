// CPU kernels for the image ops (image_ops.cc).
// Thread safety: RandomFlipLeftRight and RandomCrop lock their generator;
// AugmentImages keeps no state and may run concurrently.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/types.h"
#include "engine/kernels/philox_random.h"
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

// AugmentImages (image_ops.cc): example n's flip and shift come from Philox
// block n at counter `step`; each output row is a run of the source row (or
// zeros), copied pixel by pixel when flipped.
class AugmentImagesOp : public OpKernel {
 public:
  explicit AugmentImagesOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("flip_left_right", &flip_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("max_shift", &max_shift_));
    OP_REQUIRES(ctx, max_shift_ >= 0,
                absl::InvalidArgumentError(absl::StrCat("max_shift must be >= 0, got ", max_shift_)));
    int64_t seed = 0, seed2 = 0;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed", &seed));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed2", &seed2));
    key_ = philox::KeyFromSeeds(seed, seed2);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& step = ctx->input(1);
    OP_REQUIRES(ctx, in.dims() == 4,
                absl::InvalidArgumentError(absl::StrCat("images must be [batch, height, width, channels], got ",
                                                        in.shape().DebugString())));
    OP_REQUIRES(ctx, step.dims() == 0 && step.dtype() == DT_INT64,
                absl::InvalidArgumentError(
                    absl::StrCat("step must be an int64 scalar, got ", step.shape().DebugString())));
    const int64_t N = in.dim_size(0), H = in.dim_size(1), W = in.dim_size(2);
    OP_REQUIRES(ctx, max_shift_ < std::max<int64_t>(std::min(H, W), 1),
                absl::InvalidArgumentError(absl::StrCat("max_shift ", max_shift_,
                                                        " must be below the images' height and width, got ",
                                                        in.shape().DebugString())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const size_t pixel = static_cast<size_t>(in.dim_size(3)) * DataTypeSize(in.dtype());
    const size_t row = static_cast<size_t>(W) * pixel;
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    const uint64_t counter = static_cast<uint64_t>(step.data<int64_t>()[0]);
    const uint64_t span = static_cast<uint64_t>(2 * max_shift_ + 1);
    for (int64_t n = 0; n < N; ++n) {
      const philox::Block bits = philox::Generate(key_, static_cast<uint64_t>(n), static_cast<uint32_t>(counter),
                                                  static_cast<uint32_t>(counter >> 32));
      const bool flipped = flip_ && (bits[0] & 1) != 0;
      const int64_t dy = static_cast<int64_t>(bits[1] % span) - max_shift_;
      const int64_t dx = static_cast<int64_t>(bits[2] % span) - max_shift_;
      const char* image = src + static_cast<size_t>(n * H) * row;
      char* result = dst + static_cast<size_t>(n * H) * row;
      // Output columns [c0, c1) read source columns c + dx (of the flipped image).
      const int64_t c0 = std::max<int64_t>(0, -dx), c1 = std::min<int64_t>(W, W - dx);
      for (int64_t r = 0; r < H; ++r) {
        char* out_row = result + static_cast<size_t>(r) * row;
        const int64_t sr = r + dy;
        if (sr < 0 || sr >= H || c0 >= c1) {
          std::memset(out_row, 0, row);
          continue;
        }
        const char* in_row = image + static_cast<size_t>(sr) * row;
        std::memset(out_row, 0, static_cast<size_t>(c0) * pixel);
        if (flipped) {
          for (int64_t c = c0; c < c1; ++c) {
            std::memcpy(out_row + c * pixel, in_row + (W - 1 - (c + dx)) * pixel, pixel);
          }
        } else {
          std::memcpy(out_row + c0 * pixel, in_row + (c0 + dx) * pixel, static_cast<size_t>(c1 - c0) * pixel);
        }
        std::memset(out_row + c1 * pixel, 0, static_cast<size_t>(W - c1) * pixel);
      }
    }
  }

 private:
  bool flip_ = false;
  int64_t max_shift_ = 0;
  philox::Key key_;
};

REGISTER_KERNEL_BUILDER(Name("ImageToFloat").Device(kDeviceCpu), ImageToFloatOp);
REGISTER_KERNEL_BUILDER(Name("PerImageStandardization").Device(kDeviceCpu), PerImageStandardizationOp);
REGISTER_KERNEL_BUILDER(Name("RandomFlipLeftRight").Device(kDeviceCpu), RandomFlipLeftRightOp);
REGISTER_KERNEL_BUILDER(Name("RandomCrop").Device(kDeviceCpu), RandomCropOp);
REGISTER_KERNEL_BUILDER(Name("AugmentImages").Device(kDeviceCpu), AugmentImagesOp);

}  // namespace
}  // namespace sluice
