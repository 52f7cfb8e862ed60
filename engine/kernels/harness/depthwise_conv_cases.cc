// Harness entries for DepthwiseConv2dNative and its two backprops: SAME and
// VALID, strides 1 and 2 (per dim), channel multipliers 1-3, a 1x1 filter, an
// empty batch, larger multiplier-1 shapes for float's vector path, against a
// float64 direct loop; bad shapes and attrs; and
// finite-difference gradients in float64 (each op's gradient is built from
// the other two).
#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

struct Conv {
  TensorShape input, filter;
  int64_t stride_h, stride_w;
  std::string padding;
  // Finite differences in float64 (the small cases; the larger ones are for
  // the float path's vector tails, interiors and row groups).
  bool gradient = true;
};

int64_t OutSize(int64_t in, int64_t k, int64_t stride, const std::string& padding, int64_t* pad) {
  if (padding == "VALID") {
    *pad = 0;
    return (in - k) / stride + 1;
  }
  const int64_t out = (in + stride - 1) / stride;
  *pad = std::max<int64_t>(0, (out - 1) * stride + k - in) / 2;
  return out;
}

// Calls fn(out_index, in_index, filter_index) for each product of the
// convolution (flat NHWC / [h, w, C, M] indexes); returns the output shape.
TensorShape ForEachProduct(const Conv& c, const std::function<void(int64_t, int64_t, int64_t)>& fn) {
  const int64_t b = c.input.dim_size(0), h = c.input.dim_size(1), w = c.input.dim_size(2), ch = c.input.dim_size(3);
  const int64_t kh = c.filter.dim_size(0), kw = c.filter.dim_size(1), m = c.filter.dim_size(3);
  int64_t ph, pw;
  const int64_t oh = OutSize(h, kh, c.stride_h, c.padding, &ph), ow = OutSize(w, kw, c.stride_w, c.padding, &pw);
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t iy = y * c.stride_h - ph + i, ix = x * c.stride_w - pw + j;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            for (int64_t k = 0; k < ch; ++k) {
              for (int64_t q = 0; q < m; ++q) {
                fn(((n * oh + y) * ow + x) * ch * m + k * m + q, ((n * h + iy) * w + ix) * ch + k,
                   ((i * kw + j) * ch + k) * m + q);
              }
            }
          }
        }
      }
    }
  }
  return TensorShape({b, oh, ow, ch * m});
}

const std::vector<Conv>& Convs() {
  static const auto* convs = new std::vector<Conv>{
      {TensorShape({2, 5, 6, 3}), TensorShape({3, 3, 3, 2}), 1, 1, "SAME"},
      {TensorShape({1, 6, 7, 2}), TensorShape({3, 3, 2, 1}), 2, 2, "VALID"},
      {TensorShape({2, 5, 5, 2}), TensorShape({2, 3, 2, 3}), 2, 1, "SAME"},
      {TensorShape({1, 4, 4, 3}), TensorShape({1, 1, 3, 2}), 1, 1, "VALID"},
      {TensorShape({0, 4, 4, 2}), TensorShape({3, 3, 2, 1}), 1, 1, "SAME"},
      // Multiplier 1 (float's vector path): 37 channels end in a partial
      // vector; 18 output rows make three filter-gradient groups; stride 2 by
      // 1 with an even window over 7 rows pads one side; column stride 2
      // takes the input gradient's per-pixel path; a 5x5 window is wider
      // than the interior of a 9-wide image, and than all of a 2x2 one; a
      // 1x1 window at stride 3 leaves inputs no window covers; stride 2 with
      // SAME padding on both dims.
      {TensorShape({2, 9, 7, 37}), TensorShape({3, 3, 37, 1}), 1, 1, "SAME", false},
      {TensorShape({1, 7, 11, 20}), TensorShape({2, 3, 20, 1}), 2, 1, "SAME", false},
      {TensorShape({3, 6, 10, 16}), TensorShape({3, 3, 16, 1}), 1, 2, "VALID", false},
      {TensorShape({1, 5, 9, 8}), TensorShape({5, 5, 8, 1}), 1, 1, "SAME", false},
      {TensorShape({1, 2, 2, 3}), TensorShape({5, 5, 3, 1}), 1, 1, "SAME", false},
      {TensorShape({1, 7, 8, 5}), TensorShape({1, 1, 5, 1}), 3, 3, "VALID", false},
      {TensorShape({2, 6, 9, 17}), TensorShape({3, 3, 17, 1}), 2, 2, "SAME", false}};
  return *convs;
}

AttrList ConvAttrs(const Conv& c) {
  return {{"strides", MakeAttr(std::vector<int64_t>{1, c.stride_h, c.stride_w, 1})}, {"padding", MakeAttr(c.padding)}};
}

std::string Describe(const Conv& c) {
  return c.input.DebugString() + " * " + c.filter.DebugString() + " stride " + std::to_string(c.stride_h) + "x" +
         std::to_string(c.stride_w) + " " + c.padding;
}

Tensor ShapeVector(const TensorShape& s) {
  std::vector<int32_t> v;
  for (int64_t d : s.dim_sizes()) v.push_back(static_cast<int32_t>(d));
  return Tensor::FromVector<int32_t>(v);
}

double Tolerance(DataType dtype) { return dtype == DT_HALF || dtype == DT_BFLOAT16 ? 3e-2 : 0; }

REGISTER_OP_HARNESS(OpHarnessEntry{"DepthwiseConv2dNative", FloatTypes(), [](DataType dtype, Rng* rng) {
  std::vector<OpCase> cases;
  for (const Conv& conv : Convs()) {
    Tensor x = RandomTensor(dtype, conv.input, rng), f = RandomTensor(dtype, conv.filter, rng);
    const std::vector<double> xv = ToDoubles(x), fv = ToDoubles(f);
    std::vector<double> out;
    TensorShape out_shape = ForEachProduct(conv, [](int64_t, int64_t, int64_t) {});
    out.assign(static_cast<size_t>(out_shape.num_elements()), 0.0);
    ForEachProduct(conv, [&](int64_t o, int64_t i, int64_t k) { out[o] += xv[i] * fv[k]; });
    OpCase c;
    c.description = Describe(conv);
    c.inputs = {x, f};
    c.attrs = ConvAttrs(conv);
    c.expected = {FromDoubles(dtype, out_shape, out)};
    c.tolerance = Tolerance(dtype);
    c.check_gradient = dtype == DT_DOUBLE && conv.gradient;
    cases.push_back(std::move(c));
  }
  const Conv& conv = Convs()[0];
  Tensor x = RandomTensor(dtype, conv.input, rng);
  cases.push_back(ErrorCase("channels differ", {x, RandomTensor(dtype, TensorShape({3, 3, 2, 2}), rng)},
                            ConvAttrs(conv), "in_channels"));
  AttrList nchw = ConvAttrs(conv);
  nchw["data_format"] = MakeAttr("NCHW");
  nchw["strides"] = MakeAttr(std::vector<int64_t>{1, 1, 1, 1});
  cases.push_back(ErrorCase("NCHW", {x, RandomTensor(dtype, conv.filter, rng)}, nchw, "NHWC"));
  cases.push_back(ErrorCase("window past a VALID input",
                            {RandomTensor(dtype, TensorShape({1, 2, 2, 3}), rng), RandomTensor(dtype, conv.filter, rng)},
                            {{"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})}, {"padding", MakeAttr("VALID")}},
                            "larger than the input"));
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"DepthwiseConv2dNativeBackpropInput", FloatTypes(), [](DataType dtype, Rng* rng) {
  std::vector<OpCase> cases;
  for (const Conv& conv : Convs()) {
    const TensorShape out_shape = ForEachProduct(conv, [](int64_t, int64_t, int64_t) {});
    Tensor f = RandomTensor(dtype, conv.filter, rng), dy = RandomTensor(dtype, out_shape, rng);
    const std::vector<double> fv = ToDoubles(f), dv = ToDoubles(dy);
    std::vector<double> dx(static_cast<size_t>(conv.input.num_elements()), 0.0);
    ForEachProduct(conv, [&](int64_t o, int64_t i, int64_t k) { dx[i] += dv[o] * fv[k]; });
    OpCase c;
    c.description = Describe(conv);
    c.inputs = {ShapeVector(conv.input), f, dy};
    c.attrs = ConvAttrs(conv);
    c.expected = {FromDoubles(dtype, conv.input, dx)};
    c.tolerance = Tolerance(dtype);
    c.check_gradient = dtype == DT_DOUBLE && conv.gradient;
    c.grad_inputs = {1, 2};
    cases.push_back(std::move(c));
  }
  const Conv& conv = Convs()[0];
  cases.push_back(ErrorCase("out_backprop of the wrong shape",
                            {ShapeVector(conv.input), RandomTensor(dtype, conv.filter, rng),
                             RandomTensor(dtype, TensorShape({2, 5, 5, 6}), rng)},
                            ConvAttrs(conv), "out_backprop must have"));
  cases.push_back(ErrorCase("negative size",
                            {Tensor::FromVector<int32_t>({2, -5, 6, 3}), RandomTensor(dtype, conv.filter, rng),
                             RandomTensor(dtype, TensorShape({2, 5, 6, 6}), rng)},
                            ConvAttrs(conv), "negative"));
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"DepthwiseConv2dNativeBackpropFilter", FloatTypes(), [](DataType dtype, Rng* rng) {
  std::vector<OpCase> cases;
  for (const Conv& conv : Convs()) {
    const TensorShape out_shape = ForEachProduct(conv, [](int64_t, int64_t, int64_t) {});
    Tensor x = RandomTensor(dtype, conv.input, rng), dy = RandomTensor(dtype, out_shape, rng);
    const std::vector<double> xv = ToDoubles(x), dv = ToDoubles(dy);
    std::vector<double> df(static_cast<size_t>(conv.filter.num_elements()), 0.0);
    ForEachProduct(conv, [&](int64_t o, int64_t i, int64_t k) { df[k] += dv[o] * xv[i]; });
    OpCase c;
    c.description = Describe(conv);
    c.inputs = {x, ShapeVector(conv.filter), dy};
    c.attrs = ConvAttrs(conv);
    c.expected = {FromDoubles(dtype, conv.filter, df)};
    // Sums over the whole batch and image: larger rounding in half.
    c.tolerance = Tolerance(dtype) * 2;
    c.check_gradient = dtype == DT_DOUBLE && conv.gradient;
    c.grad_inputs = {0, 2};
    cases.push_back(std::move(c));
  }
  {
    // A column stride near INT64_MAX: one output column, and only the middle
    // tap of a 1x5 SAME window (pad 2) sees the one input column.
    Tensor x = RandomTensor(dtype, TensorShape({1, 1, 1, 1}), rng), dy = RandomTensor(dtype, TensorShape({1, 1, 1, 1}), rng);
    std::vector<double> df(5, 0.0);
    df[2] = ToDoubles(x)[0] * ToDoubles(dy)[0];
    OpCase c;
    c.description = "column stride INT64_MAX";
    c.inputs = {x, Tensor::FromVector<int32_t>({1, 5, 1, 1}), dy};
    c.attrs = {{"strides", MakeAttr(std::vector<int64_t>{1, 1, std::numeric_limits<int64_t>::max(), 1})},
               {"padding", MakeAttr("SAME")}};
    c.expected = {FromDoubles(dtype, TensorShape({1, 5, 1, 1}), df)};
    c.tolerance = Tolerance(dtype);
    cases.push_back(std::move(c));
  }
  const Conv& conv = Convs()[0];
  cases.push_back(ErrorCase("filter_sizes of 3 values",
                            {RandomTensor(dtype, conv.input, rng), Tensor::FromVector<int32_t>({3, 3, 3}),
                             RandomTensor(dtype, TensorShape({2, 5, 6, 6}), rng)},
                            ConvAttrs(conv), "4 int32 values"));
  return cases;
}});

}  // namespace
}  // namespace harness
}  // namespace sluice
