// CPU kernels for the summary ops (monitoring/summary_ops.cc), following TensorFlow's
// summary_op.cc and summary_image_op.cc: the same tags, the same histogram buckets, the same
// float-image normalization, so TensorBoard shows the same thing for the same values.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "monitoring/histogram.h"
#include "monitoring/png_encoder.h"
#include "monitoring/summary.pb.h"

namespace sluice {
namespace {

// Calls fn(const T*) for the real number types the summary ops accept; InvalidArgument otherwise.
template <typename Fn>
absl::Status VisitReal(const Tensor& t, Fn fn) {
  switch (t.dtype()) {
    case DT_FLOAT: fn(t.data<float>()); break;
    case DT_DOUBLE: fn(t.data<double>()); break;
    case DT_INT32: fn(t.data<int32_t>()); break;
    case DT_INT64: fn(t.data<int64_t>()); break;
    case DT_UINT8: fn(t.data<uint8_t>()); break;
    case DT_INT16: fn(t.data<int16_t>()); break;
    case DT_INT8: fn(t.data<int8_t>()); break;
    case DT_UINT16: fn(t.data<uint16_t>()); break;
    case DT_HALF: fn(t.data<half>()); break;
    case DT_BFLOAT16: fn(t.data<bfloat16>()); break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("summary values of type ", DataTypeString(t.dtype()),
                                                     " are not supported"));
  }
  return absl::OkStatus();
}

template <typename T>
double AsDouble(T v) {
  return static_cast<double>(v);
}
template <>
double AsDouble<half>(half v) {
  return static_cast<double>(static_cast<float>(v));
}
template <>
double AsDouble<bfloat16>(bfloat16 v) {
  return static_cast<double>(static_cast<float>(v));
}

void OutputSummary(OpKernelContext* ctx, const Summary& summary) {
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
  out->scalar<tstring>() = summary.SerializeAsString();
}

class ScalarSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& tags = ctx->input(0);
    const Tensor& values = ctx->input(1);
    OP_REQUIRES(ctx, tags.shape() == values.shape(),
                absl::InvalidArgumentError(absl::StrCat("tags and values are not the same shape: ",
                                                        tags.shape().DebugString(), " != ",
                                                        values.shape().DebugString())));
    Summary s;
    const tstring* tag = tags.data<tstring>();
    OP_REQUIRES_OK(ctx, VisitReal(values, [&](const auto* v) {
                     for (int64_t i = 0; i < values.NumElements(); ++i) {
                       Summary::Value* value = s.add_value();
                       value->set_tag(tag[i]);
                       value->set_simple_value(static_cast<float>(AsDouble(v[i])));
                     }
                   }));
    OutputSummary(ctx, s);
  }
  bool IsExpensive() const override { return false; }
};

class HistogramSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& tags = ctx->input(0);
    const Tensor& values = ctx->input(1);
    OP_REQUIRES(ctx, tags.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("tags must be scalar, got shape ", tags.shape().DebugString())));
    const std::string& tag = tags.scalar<tstring>();
    Histogram histo;
    absl::Status bad;
    OP_REQUIRES_OK(ctx, VisitReal(values, [&](const auto* v) {
                     const int64_t n = values.NumElements();
                     // float32, the common case: one branchless pass says whether any value is
                     // NaN or infinite; only then the loop below finds which comes first.
                     bool any_bad = true;
                     if constexpr (std::is_same<std::decay_t<decltype(*v)>, float>::value) {
                       any_bad = false;
                       for (int64_t i = 0; i < n; ++i) any_bad |= !(std::fabs(v[i]) <= FLT_MAX);
                     }
                     for (int64_t i = 0; any_bad && i < n; ++i) {
                       const double d = AsDouble(v[i]);
                       if (std::isnan(d)) {
                         bad = absl::InvalidArgumentError(absl::StrCat("Nan in summary histogram for: ", tag));
                         return;
                       }
                       if (std::isinf(d)) {
                         bad = absl::InvalidArgumentError(absl::StrCat("Infinity in summary histogram for: ", tag));
                         return;
                       }
                     }
                     if constexpr (std::is_same<std::decay_t<decltype(*v)>, float>::value) {
                       histo.AddFloats(v, static_cast<size_t>(n));  // the common case, several times faster
                     } else {
                       for (int64_t i = 0; i < n; ++i) histo.Add(AsDouble(v[i]));
                     }
                   }));
    OP_REQUIRES_OK(ctx, bad);
    Summary s;
    Summary::Value* value = s.add_value();
    value->set_tag(tag);
    histo.EncodeToProto(value->mutable_histo(), /*preserve_zero_buckets=*/false);
    OutputSummary(ctx, s);
  }
};

class ImageSummaryOp : public OpKernel {
 public:
  explicit ImageSummaryOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    int64_t max_images;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("max_images", &max_images));
    OP_REQUIRES(ctx, max_images >= 1 && max_images <= std::numeric_limits<int32_t>::max(),
                absl::InvalidArgumentError(absl::StrCat("max_images must be in [1, 2^31), got ", max_images)));
    max_images_ = static_cast<int>(max_images);
    TensorProto proto;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("bad_color", &proto));
    auto color = Tensor::FromProto(proto);
    OP_REQUIRES_OK(ctx, color.status());
    OP_REQUIRES(ctx, color->dtype() == DT_UINT8 && color->dims() == 1,
                absl::InvalidArgumentError(absl::StrCat("bad_color must be a uint8 vector, got ",
                                                        color->DebugString())));
    bad_color_ = std::move(color).value();
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& tags = ctx->input(0);
    const Tensor& tensor = ctx->input(1);
    OP_REQUIRES(ctx, tags.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("tag must be scalar, got shape ", tags.shape().DebugString())));
    OP_REQUIRES(ctx,
                tensor.dims() == 4 && (tensor.dim_size(3) == 1 || tensor.dim_size(3) == 3 || tensor.dim_size(3) == 4),
                absl::InvalidArgumentError(absl::StrCat("tensor must be 4-D with last dim 1, 3, or 4, not ",
                                                        tensor.shape().DebugString())));
    const std::string& base_tag = tags.scalar<tstring>();
    const int64_t batch = tensor.dim_size(0), h = tensor.dim_size(1), w = tensor.dim_size(2);
    const int depth = static_cast<int>(tensor.dim_size(3));
    OP_REQUIRES(ctx, h < (1 << 24) && w < (1 << 24),
                absl::InvalidArgumentError(absl::StrCat("image too large: ", tensor.shape().DebugString())));
    OP_REQUIRES(ctx, bad_color_.NumElements() >= depth,
                absl::InvalidArgumentError(absl::StrCat("bad_color has ", bad_color_.NumElements(),
                                                        " channels but the images have ", depth)));
    const int64_t hw = h * w;
    const int64_t n = std::min<int64_t>(max_images_, batch);
    Summary s;
    // Sized only when there is an image to copy, so never beyond the tensor's
    // own bytes: a [0, 2^23, 2^23, 4] tensor is empty, not 2^48 bytes.
    std::vector<uint8_t> image;
    if (n > 0) image.resize(static_cast<size_t>(hw * depth));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t offset = i * hw * depth;
      switch (tensor.dtype()) {
        case DT_UINT8: std::copy_n(tensor.data<uint8_t>() + offset, image.size(), image.begin()); break;
        case DT_FLOAT: Normalize<float, float>(tensor.data<float>() + offset, hw, depth, image.data()); break;
        case DT_HALF: Normalize<half, float>(tensor.data<half>() + offset, hw, depth, image.data()); break;
        case DT_DOUBLE: Normalize<double, double>(tensor.data<double>() + offset, hw, depth, image.data()); break;
        default:
          ctx->CtxFailure(absl::InvalidArgumentError(
              absl::StrCat("ImageSummary does not support ", DataTypeString(tensor.dtype()))));
          return;
      }
      Summary::Value* v = s.add_value();
      v->set_tag(max_images_ > 1 ? absl::StrCat(base_tag, "/image/", i) : absl::StrCat(base_tag, "/image"));
      Summary::Image* img = v->mutable_image();
      img->set_height(static_cast<int32_t>(h));
      img->set_width(static_cast<int32_t>(w));
      img->set_colorspace(depth);
      if (hw == 0) continue;  // an empty image has no PNG
      auto png = EncodePng(image.data(), static_cast<int>(w), static_cast<int>(h), depth);
      OP_REQUIRES_OK(ctx, png.status());
      *img->mutable_encoded_image_string() = std::move(png).value();
    }
    OutputSummary(ctx, s);
  }

 private:
  // TensorFlow's NormalizeFloatImage: pixels with any non-finite channel become bad_color;
  // over the finite ones, all >= 0: scale by 255 / max; else scale by 127 / max(|min|, |max|)
  // and add 128. Then truncate to uint8. `Acc` is the arithmetic type (float for half).
  template <typename T, typename Acc>
  void Normalize(const T* values, int64_t hw, int depth, uint8_t* out) const {
    auto finite_pixel = [&](int64_t p) {
      for (int c = 0; c < depth; ++c) {
        if (!std::isfinite(static_cast<Acc>(values[p * depth + c]))) return false;
      }
      return true;
    };
    Acc lo = std::numeric_limits<Acc>::infinity(), hi = -lo;
    for (int64_t p = 0; p < hw; ++p) {
      if (!finite_pixel(p)) continue;
      for (int c = 0; c < depth; ++c) {
        const Acc v = static_cast<Acc>(values[p * depth + c]);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    const Acc kZeroThreshold = static_cast<Acc>(1e-6);
    Acc scale, offset;
    if (lo < 0) {
      const Acc max_val = std::max(std::abs(lo), std::abs(hi));
      scale = max_val < kZeroThreshold ? Acc(0) : Acc(127) / max_val;
      offset = Acc(128);
    } else {
      scale = hi < kZeroThreshold ? Acc(0) : Acc(255) / hi;
      offset = Acc(0);
    }
    const uint8_t* bad = bad_color_.data<uint8_t>();
    for (int64_t p = 0; p < hw; ++p) {
      const bool finite = finite_pixel(p);
      for (int c = 0; c < depth; ++c) {
        // The clamp only guards against rounding past 255 (a float -> uint8 overflow is UB).
        const Acc x = static_cast<Acc>(values[p * depth + c]) * scale + offset;
        out[p * depth + c] = finite ? static_cast<uint8_t>(std::min(Acc(255), std::max(Acc(0), x))) : bad[c];
      }
    }
  }

  int max_images_ = 3;
  Tensor bad_color_;
};

class MergeSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Summary s;
    std::unordered_set<std::string> tags;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      const tstring* serialized = in.data<tstring>();
      for (int64_t j = 0; j < in.NumElements(); ++j) {
        Summary part;
        OP_REQUIRES(ctx, part.ParseFromString(serialized[j]),
                    absl::InvalidArgumentError(absl::StrCat("Could not parse one of the summary inputs (input ", i,
                                                            ", element ", j, ")")));
        for (Summary::Value& v : *part.mutable_value()) {
          OP_REQUIRES(ctx, v.tag().empty() || tags.insert(v.tag()).second,
                      absl::InvalidArgumentError(absl::StrCat("Duplicate tag ", v.tag(), " found in summary inputs")));
          *s.add_value() = std::move(v);
        }
      }
    }
    OutputSummary(ctx, s);
  }
};

#define SLUICE_REGISTER_SUMMARY_(T)                                                                    \
  REGISTER_KERNEL_BUILDER(Name("ScalarSummary").Device(kDeviceCpu).TypeConstraint<T>("T"), ScalarSummaryOp); \
  REGISTER_KERNEL_BUILDER(Name("HistogramSummary").Device(kDeviceCpu).TypeConstraint<T>("T"), HistogramSummaryOp)
SLUICE_REGISTER_SUMMARY_(float);
SLUICE_REGISTER_SUMMARY_(double);
SLUICE_REGISTER_SUMMARY_(int32_t);
SLUICE_REGISTER_SUMMARY_(int64_t);
SLUICE_REGISTER_SUMMARY_(uint8_t);
SLUICE_REGISTER_SUMMARY_(int16_t);
SLUICE_REGISTER_SUMMARY_(int8_t);
SLUICE_REGISTER_SUMMARY_(uint16_t);
SLUICE_REGISTER_SUMMARY_(half);
SLUICE_REGISTER_SUMMARY_(bfloat16);
#undef SLUICE_REGISTER_SUMMARY_

REGISTER_KERNEL_BUILDER(Name("ImageSummary").Device(kDeviceCpu).TypeConstraint("T", {DT_UINT8, DT_FLOAT, DT_HALF, DT_DOUBLE}),
                        ImageSummaryOp);
REGISTER_KERNEL_BUILDER(Name("MergeSummary").Device(kDeviceCpu), MergeSummaryOp);

}  // namespace
}  // namespace sluice
