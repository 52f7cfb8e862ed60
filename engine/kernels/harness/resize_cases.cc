// Harness entries for ResizeBilinear, ResizeNearestNeighbor and their
// gradient ops: up- and downsizing, the identity size, 1x1, every setting of
// align_corners and half_pixel_centers, against float64 references that take
// their source coordinates by TensorFlow's rules (the coordinates in float,
// as TensorFlow computes them, so floor and round land alike); bad sizes and
// attrs; finite-difference gradients of the forward ops in float64.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

struct Settings {
  bool align_corners, half_pixel;
};
const Settings kSettings[] = {{false, false}, {true, false}, {false, true}};

AttrList Attrs(const Settings& s) {
  return {{"align_corners", MakeAttr(s.align_corners)}, {"half_pixel_centers", MakeAttr(s.half_pixel)}};
}

float Scale(int64_t in, int64_t out, bool align) {
  return align && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                          : static_cast<float>(in) / static_cast<float>(out);
}

// Bilinear: (lower, upper, fraction) of output coordinate i.
void Bilinear(int64_t i, int64_t in, float scale, bool half, int64_t* lo, int64_t* hi, double* frac) {
  const float src = half ? (static_cast<float>(i) + 0.5f) * scale - 0.5f : static_cast<float>(i) * scale;
  *lo = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(std::floor(src)), 0), in - 1);
  *hi = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(std::ceil(src)), 0), in - 1);
  *frac = src - std::floor(src);
}

int64_t Nearest(int64_t i, int64_t in, float scale, const Settings& s) {
  const float src = s.half_pixel ? (static_cast<float>(i) + 0.5f) * scale : static_cast<float>(i) * scale;
  int64_t v = static_cast<int64_t>(s.align_corners ? std::round(src) : std::floor(src));
  v = std::min(v, in - 1);
  if (s.half_pixel) v = std::max<int64_t>(v, 0);
  return v;
}

// Calls fn(out_flat, in_flat, weight) for every contribution of an input
// pixel to an output pixel of a [b, ih, iw, c] -> [b, oh, ow, c] resize.
void ForEachContribution(const TensorShape& in_shape, int64_t oh, int64_t ow, const Settings& s, bool bilinear,
                         const std::function<void(int64_t, int64_t, double)>& fn) {
  const int64_t b = in_shape.dim_size(0), ih = in_shape.dim_size(1), iw = in_shape.dim_size(2), ch = in_shape.dim_size(3);
  const float sy = Scale(ih, oh, s.align_corners), sx = Scale(iw, ow, s.align_corners);
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        for (int64_t c = 0; c < ch; ++c) {
          const int64_t out = ((n * oh + y) * ow + x) * ch + c;
          auto at = [&](int64_t yy, int64_t xx) { return ((n * ih + yy) * iw + xx) * ch + c; };
          if (!bilinear) {
            fn(out, at(Nearest(y, ih, sy, s), Nearest(x, iw, sx, s)), 1);
            continue;
          }
          int64_t y0, y1, x0, x1;
          double fy, fx;
          Bilinear(y, ih, sy, s.half_pixel, &y0, &y1, &fy);
          Bilinear(x, iw, sx, s.half_pixel, &x0, &x1, &fx);
          fn(out, at(y0, x0), (1 - fy) * (1 - fx));
          fn(out, at(y0, x1), (1 - fy) * fx);
          fn(out, at(y1, x0), fy * (1 - fx));
          fn(out, at(y1, x1), fy * fx);
        }
      }
    }
  }
}

const std::vector<std::pair<int64_t, int64_t>> kSizes = {{3, 7}, {8, 10}, {4, 5}, {1, 1}};

Tensor SizeTensor(int64_t h, int64_t w) {
  return Tensor::FromVector<int32_t>({static_cast<int32_t>(h), static_cast<int32_t>(w)});
}

std::vector<OpCase> ForwardCases(DataType dtype, Rng* rng, bool bilinear) {
  std::vector<OpCase> cases;
  const TensorShape in_shape({2, 4, 5, 3});
  for (const Settings& s : kSettings) {
    for (const auto& [oh, ow] : kSizes) {
      Tensor image = RandomTensor(dtype, in_shape, rng, 0, 9);
      const std::vector<double> v = ToDoubles(image);
      std::vector<double> out(static_cast<size_t>(2 * oh * ow * 3), 0.0);
      ForEachContribution(in_shape, oh, ow, s, bilinear, [&](int64_t o, int64_t i, double w) { out[o] += w * v[i]; });
      OpCase c;
      c.description = "[2,4,5,3] to " + std::to_string(oh) + "x" + std::to_string(ow) +
                      (s.align_corners ? " align_corners" : "") + (s.half_pixel ? " half_pixel_centers" : "");
      c.inputs = {image, SizeTensor(oh, ow)};
      c.attrs = Attrs(s);
      c.expected = {FromDoubles(bilinear ? DT_FLOAT : dtype, TensorShape({2, oh, ow, 3}), out)};
      if (bilinear && (dtype == DT_HALF || dtype == DT_BFLOAT16)) c.tolerance = 2e-2;
      c.check_gradient = dtype == DT_DOUBLE;
      c.grad_inputs = {0};
      // ResizeBilinear's output is float32: a larger step (exact: it is
      // linear in the image).
      if (bilinear) c.gradient_epsilon = 1;
      cases.push_back(std::move(c));
    }
  }
  if (dtype == DT_FLOAT) {
    // One pixel to 2^25: the source of the last column, (2^25 - 1) / 2^25
    // in float, rounds to 1.0 itself, past the image; every output must be
    // the pixel (the gradient op's case below writes that column's sum).
    OpCase c;
    c.description = "1 pixel to 1x2^25";
    c.inputs = {FromDoubles(dtype, TensorShape({1, 1, 1, 1}), {7}), SizeTensor(1, int64_t{1} << 25)};
    c.check = [](const std::vector<Tensor>& out) {
      const auto* v = out[0].data<float>();
      for (int64_t i = 0; i < out[0].NumElements(); ++i) {
        if (v[i] != 7) return absl::InternalError(absl::StrCat("output ", i, " is ", v[i], ", not the pixel's 7"));
      }
      return absl::OkStatus();
    };
    cases.push_back(std::move(c));
  }
  Tensor image = RandomTensor(dtype, in_shape, rng, 0, 9);
  cases.push_back(ErrorCase("both pixel rules", {image, SizeTensor(3, 3)},
                            {{"align_corners", MakeAttr(true)}, {"half_pixel_centers", MakeAttr(true)}},
                            "cannot both be true"));
  cases.push_back(ErrorCase("zero size", {image, SizeTensor(0, 3)}, {}, "size must be positive"));
  cases.push_back(ErrorCase("three sizes", {image, Tensor::FromVector<int32_t>({2, 2, 2})}, {}, "2 int32 values"));
  cases.push_back(ErrorCase("3-D image", {RandomTensor(dtype, TensorShape({4, 5, 3}), rng, 0, 9), SizeTensor(2, 2)}, {},
                            "4-D"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"ResizeBilinear",
                                   {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_UINT8, DT_INT32},
                                   [](DataType dtype, Rng* rng) { return ForwardCases(dtype, rng, true); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"ResizeNearestNeighbor",
                                   {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_UINT8, DT_INT32},
                                   [](DataType dtype, Rng* rng) { return ForwardCases(dtype, rng, false); }});

// The gradient ops: each incoming value sent back to the pixels it came from.
std::vector<OpCase> GradCases(DataType dtype, Rng* rng, bool bilinear) {
  std::vector<OpCase> cases;
  const TensorShape in_shape({2, 4, 5, 3});
  for (const Settings& s : kSettings) {
    for (const auto& [oh, ow] : kSizes) {
      const TensorShape grad_shape({2, oh, ow, 3});
      Tensor grads = RandomTensor(bilinear ? DT_FLOAT : dtype, grad_shape, rng, -2, 2);
      const std::vector<double> g = ToDoubles(grads);
      std::vector<double> out(static_cast<size_t>(in_shape.num_elements()), 0.0);
      ForEachContribution(in_shape, oh, ow, s, bilinear, [&](int64_t o, int64_t i, double w) { out[i] += w * g[o]; });
      OpCase c;
      c.description = "from " + std::to_string(oh) + "x" + std::to_string(ow) + " to [2,4,5,3]" +
                      (s.align_corners ? " align_corners" : "") + (s.half_pixel ? " half_pixel_centers" : "");
      c.inputs = {grads, bilinear ? RandomTensor(dtype, in_shape, rng, 0, 9) : SizeTensor(4, 5)};
      c.attrs = Attrs(s);
      c.expected = {FromDoubles(dtype, in_shape, out)};
      if (dtype == DT_HALF || dtype == DT_BFLOAT16) c.tolerance = 3e-2;
      cases.push_back(std::move(c));
    }
  }
  if (dtype == DT_FLOAT) {
    // 2^25 columns of ones back to one pixel: the last one's source rounds to
    // the column past the image (see ForwardCases); all of them land on it.
    OpCase c;
    c.description = "1x2^25 back to 1 pixel";
    const int64_t wide = int64_t{1} << 25;
    Tensor ones(DT_FLOAT, TensorShape({1, 1, wide, 1}));
    std::fill(ones.data<float>(), ones.data<float>() + wide, 1.0f);
    c.inputs = {ones, bilinear ? FromDoubles(dtype, TensorShape({1, 1, 1, 1}), {0}) : SizeTensor(1, 1)};
    // A float sum of 2^25 ones stops growing at 2^24: the check is that
    // they all landed on the one pixel (and, under ASan, nowhere else).
    c.check = [](const std::vector<Tensor>& out) {
      const float v = out[0].data<float>()[0];
      if (out[0].NumElements() != 1 || !(v >= 16777216.0f && v <= 33554432.0f)) {
        return absl::InternalError(absl::StrCat("the pixel's gradient is ", v, ", not in [2^24, 2^25]"));
      }
      return absl::OkStatus();
    };
    cases.push_back(std::move(c));
  }
  Tensor grads = RandomTensor(bilinear ? DT_FLOAT : dtype, TensorShape({2, 3, 3, 3}), rng);
  cases.push_back(ErrorCase("both pixel rules",
                            {grads, bilinear ? RandomTensor(dtype, in_shape, rng) : SizeTensor(4, 5)},
                            {{"align_corners", MakeAttr(true)}, {"half_pixel_centers", MakeAttr(true)}},
                            "cannot both be true"));
  if (bilinear) {
    cases.push_back(ErrorCase("channels differ", {grads, RandomTensor(dtype, TensorShape({2, 4, 5, 2}), rng)}, {},
                              "must agree"));
  } else {
    cases.push_back(ErrorCase("negative size", {grads, SizeTensor(-1, 5)}, {}, "size must be positive"));
  }
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"ResizeBilinearGrad", {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16},
                                   [](DataType dtype, Rng* rng) { return GradCases(dtype, rng, true); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"ResizeNearestNeighborGrad", {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16},
                                   [](DataType dtype, Rng* rng) { return GradCases(dtype, rng, false); }});

}  // namespace
}  // namespace harness
}  // namespace sluice
