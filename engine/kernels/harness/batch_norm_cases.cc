// Harness entries for FusedBatchNormV3 and FusedBatchNormGradV3 (and the
// fusion pass's _FusedBatchNormEx and _FusedBatchNormGradEx): outputs
// against a float64 reference (training and inference, NHWC and NCHW, rank 4
// and 5, running averages), bad-input errors, and float64 finite-difference
// checks of the gradient of y (the batch statistics pass no gradient, as in
// TensorFlow).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

struct Norm {
  TensorShape shape;
  bool channels_first = false;
  bool training = true;
  // float, as the attrs hold them.
  double epsilon = static_cast<float>(1e-3);
  double factor = 1.0;
  // x is uniform in [x_lo, x_hi).
  double x_lo = -2, x_hi = 3;
  // Checked by float64 finite differences (too slow for the large cases, and
  // too noisy for x near 1000).
  bool finite_differences = true;
  // float64's tolerance (0: the harness's default, 1e-12). With x near 1000
  // the reference's own sums of x are off by about 1e-12 of y's scale.
  double double_tolerance = 0;
};

// channel of flat element k, and the count of elements per channel.
int64_t ChannelOf(const Norm& n, int64_t k, int64_t* per_channel) {
  const int c_dim = n.channels_first ? 1 : n.shape.dims() - 1;
  int64_t inner = 1;
  for (int d = c_dim + 1; d < n.shape.dims(); ++d) inner *= n.shape.dim_size(d);
  const int64_t channels = n.shape.dim_size(c_dim);
  *per_channel = n.shape.num_elements() / channels;
  return (k / inner) % channels;
}

AttrList NormAttrs(const Norm& n, bool forward) {
  AttrList attrs = {{"epsilon", MakeAttr(static_cast<float>(n.epsilon))},
                    {"is_training", MakeAttr(n.training)},
                    {"data_format", MakeAttr(std::string(n.shape.dims() == 5 ? (n.channels_first ? "NCDHW" : "NDHWC")
                                                                             : (n.channels_first ? "NCHW" : "NHWC")))}};
  if (forward) attrs["exponential_avg_factor"] = MakeAttr(static_cast<float>(n.factor));
  return attrs;
}

// Per-channel mean and biased variance of x.
void Moments(const Norm& n, const std::vector<double>& x, int64_t channels, std::vector<double>* mean,
             std::vector<double>* var) {
  mean->assign(channels, 0.0);
  var->assign(channels, 0.0);
  int64_t per = 1;
  for (size_t k = 0; k < x.size(); ++k) (*mean)[ChannelOf(n, k, &per)] += x[k];
  for (double& m : *mean) m /= per;
  for (size_t k = 0; k < x.size(); ++k) {
    const int64_t c = ChannelOf(n, k, &per);
    (*var)[c] += (x[k] - (*mean)[c]) * (x[k] - (*mean)[c]);
  }
  for (double& v : *var) v /= per;
}

std::string XRange(const Norm& n) {
  return " x in [" + std::to_string(n.x_lo) + ", " + std::to_string(n.x_hi) + ")";
}

DataType StatType(DataType t) { return t == DT_DOUBLE ? DT_DOUBLE : DT_FLOAT; }

OpCase ForwardCase(DataType dt, Rng* rng, const Norm& n) {
  const int64_t C = n.shape.dim_size(n.channels_first ? 1 : n.shape.dims() - 1);
  const DataType u = StatType(dt);
  Tensor x = RandomTensor(dt, n.shape, rng, n.x_lo, n.x_hi);
  Tensor scale = RandomTensor(u, TensorShape({C}), rng, 0.5, 2);
  Tensor offset = RandomTensor(u, TensorShape({C}), rng, -1, 1);
  Tensor run_mean = RandomTensor(u, TensorShape({C}), rng, -1, 1);
  Tensor run_var = RandomTensor(u, TensorShape({C}), rng, 0.5, 2);
  std::vector<double> xv = ToDoubles(x), sv = ToDoubles(scale), ov = ToDoubles(offset), rm = ToDoubles(run_mean),
                      rv = ToDoubles(run_var), mean, var;
  if (n.training) {
    Moments(n, xv, C, &mean, &var);
  } else {
    mean = rm;
    var = rv;
  }
  std::vector<double> y(xv.size()), batch_mean(C), batch_var(C);
  int64_t per = 1;
  for (size_t k = 0; k < xv.size(); ++k) {
    const int64_t c = ChannelOf(n, k, &per);
    y[k] = (xv[k] - mean[c]) / std::sqrt(var[c] + n.epsilon) * sv[c] + ov[c];
  }
  for (int64_t c = 0; c < C; ++c) {
    batch_mean[c] = mean[c];
    batch_var[c] = var[c];
    if (n.training) {
      batch_var[c] = per > 1 ? var[c] * per / (per - 1) : var[c];
      batch_mean[c] = (1 - n.factor) * rm[c] + n.factor * batch_mean[c];
      batch_var[c] = (1 - n.factor) * rv[c] + n.factor * batch_var[c];
    }
  }
  OpCase c;
  c.description = n.shape.DebugString() + (n.channels_first ? " channels first" : " channels last") +
                  (n.training ? " training" : " inference") + " factor " + std::to_string(n.factor) + XRange(n);
  c.inputs = {x, scale, offset, run_mean, run_var};
  c.attrs = NormAttrs(n, true);
  c.expected = {FromDoubles(dt, n.shape, y),       FromDoubles(u, TensorShape({C}), batch_mean),
                FromDoubles(u, TensorShape({C}), batch_var), FromDoubles(u, TensorShape({C}), mean),
                FromDoubles(u, TensorShape({C}), var),       FromDoubles(u, TensorShape({0}), {})};
  if (dt == DT_FLOAT) c.tolerance = 1e-4;
  c.check_gradient = dt == DT_DOUBLE && n.finite_differences;
  if (dt == DT_DOUBLE) c.tolerance = n.double_tolerance;
  c.grad_inputs = {0, 1, 2};
  c.grad_outputs = {0};
  return c;
}

std::vector<Norm> Layouts() {
  std::vector<Norm> layouts = {
      {TensorShape({2, 3, 3, 4}), false, true},  {TensorShape({2, 4, 3, 3}), true, true},
      {TensorShape({3, 2, 2, 2}), false, false}, {TensorShape({2, 3, 2, 2}), true, false},
      {TensorShape({1, 2, 2, 3, 2}), false, true}, {TensorShape({2, 2, 3, 1, 2}), true, true},
  };
  Norm blended{TensorShape({2, 2, 2, 3}), false, true};
  blended.factor = static_cast<float>(0.3);
  layouts.push_back(blended);
  // The kernels' vector loops and their tails: more channels than a vector's
  // lanes, not a multiple of them, rows not a multiple of four; runs of 63.
  layouts.push_back({TensorShape({3, 5, 3, 19}), false, true});
  layouts.push_back({TensorShape({2, 3, 5, 19}), false, false});
  layouts.push_back({TensorShape({2, 19, 7, 9}), true, true});
  layouts.push_back({TensorShape({2, 19, 7, 9}), true, false});
  // A mean far from zero against the deviations: x - mean must keep them.
  for (bool channels_first : {false, true}) {
    Norm offset{channels_first ? TensorShape({4, 12, 6, 6}) : TensorShape({4, 6, 6, 12}), channels_first, true};
    offset.x_lo = 1000;
    offset.x_hi = 1001;
    offset.finite_differences = false;
    offset.double_tolerance = 1e-10;
    layouts.push_back(offset);
  }
  // Several blocks (in NHWC the last one short), run on the intra-op pool.
  for (bool channels_first : {false, true}) {
    Norm large{channels_first ? TensorShape({5, 20, 48, 48}) : TensorShape({8, 32, 32, 20}), channels_first, true};
    large.finite_differences = false;
    layouts.push_back(large);
  }
  return layouts;
}

std::vector<OpCase> ForwardCases(DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  for (const Norm& n : Layouts()) cases.push_back(ForwardCase(dt, rng, n));
  const DataType u = StatType(dt);
  // tf.nn.fused_batch_norm in training passes empty mean and variance.
  OpCase empty = ForwardCase(dt, rng, Norm{TensorShape({2, 2, 2, 3}), false, true});
  empty.description += " empty running statistics";
  empty.inputs[3] = FromDoubles(u, TensorShape({0}), {});
  empty.inputs[4] = FromDoubles(u, TensorShape({0}), {});
  cases.push_back(std::move(empty));
  Norm blended{TensorShape({2, 2, 2, 3}), false, true};
  blended.factor = static_cast<float>(0.5);
  Tensor c3 = RandomTensor(u, TensorShape({3}), rng, 0.5, 1);
  cases.push_back(ErrorCase("a blend without running statistics",
                            {RandomTensor(dt, blended.shape, rng), c3, c3, FromDoubles(u, TensorShape({0}), {}),
                             FromDoubles(u, TensorShape({0}), {})},
                            NormAttrs(blended, true), "3 channels"));
  Tensor v3 = RandomTensor(u, TensorShape({3}), rng, 0.5, 1);
  Tensor v2 = RandomTensor(u, TensorShape({2}), rng, 0.5, 1);
  cases.push_back(ErrorCase("rank 3 x", {RandomTensor(dt, TensorShape({2, 2, 3}), rng), v3, v3, v3, v3},
                            NormAttrs(Norm{TensorShape({2, 2, 3})}, true), "rank 4 or 5"));
  cases.push_back(ErrorCase("scale of the wrong size", {RandomTensor(dt, TensorShape({1, 2, 2, 3}), rng), v2, v3, v3, v3},
                            NormAttrs(Norm{TensorShape({1, 2, 2, 3})}, true), "scale must be a vector of the 3 channels"));
  AttrList bad = NormAttrs(Norm{TensorShape({1, 2, 2, 3})}, true);
  bad["data_format"] = MakeAttr(std::string("HWCN"));
  cases.push_back(ErrorCase("unknown data_format", {RandomTensor(dt, TensorShape({1, 2, 2, 3}), rng), v3, v3, v3, v3},
                            bad, "data_format"));
  return cases;
}

// The fused gradient's variants: FusedBatchNormGradV3 itself, or
// _FusedBatchNormGradEx with Relu (its y_backprop masked by y > 0), without
// or with side_input_backprop (the masked gradient).
enum class GradKind { kPlain, kRelu, kReluSide };

OpCase GradCase(DataType dt, Rng* rng, const Norm& n, GradKind kind) {
  const DataType u = StatType(dt);
  const int64_t C = n.shape.dim_size(n.channels_first ? 1 : n.shape.dims() - 1);
  Tensor dy = RandomTensor(dt, n.shape, rng, -1, 1), x = RandomTensor(dt, n.shape, rng, n.x_lo, n.x_hi);
  Tensor scale = RandomTensor(u, TensorShape({C}), rng, 0.5, 2);
  // A Relu's output: zero where it clipped (about a third of the elements).
  std::vector<double> yv = ToDoubles(RandomTensor(dt, n.shape, rng, -0.5, 1));
  for (double& v : yv) v = std::max(v, 0.0);
  std::vector<double> xv = ToDoubles(x), g = ToDoubles(dy), sv = ToDoubles(scale), mean, var;
  if (kind != GradKind::kPlain) {
    for (size_t k = 0; k < g.size(); ++k) g[k] = yv[k] > 0 ? g[k] : 0.0;
  }
  Moments(n, xv, C, &mean, &var);
  if (!n.training) {  // population statistics, unrelated to x
    mean = ToDoubles(RandomTensor(u, TensorShape({C}), rng, -1, 1));
    var = ToDoubles(RandomTensor(u, TensorShape({C}), rng, 0.5, 2));
  }
  // The reference uses the statistics as the kernel gets them (float for
  // float tensors): a mean near 1000 rounds by up to 3e-5.
  mean = ToDoubles(FromDoubles(u, TensorShape({C}), mean));
  var = ToDoubles(FromDoubles(u, TensorShape({C}), var));
  std::vector<double> sum_dy(C, 0.0), sum_dy_xhat(C, 0.0), dx(xv.size());
  int64_t per = 1;
  for (size_t k = 0; k < xv.size(); ++k) {
    const int64_t c = ChannelOf(n, k, &per);
    sum_dy[c] += g[k];
    sum_dy_xhat[c] += g[k] * (xv[k] - mean[c]) / std::sqrt(var[c] + n.epsilon);
  }
  for (size_t k = 0; k < xv.size(); ++k) {
    const int64_t c = ChannelOf(n, k, &per);
    const double inv = 1 / std::sqrt(var[c] + n.epsilon), xhat = (xv[k] - mean[c]) * inv;
    dx[k] = n.training ? sv[c] * inv * (g[k] - (sum_dy[c] + xhat * sum_dy_xhat[c]) / per) : g[k] * sv[c] * inv;
  }
  OpCase c;
  c.description = n.shape.DebugString() + (n.channels_first ? " channels first" : " channels last") +
                  (n.training ? " training" : " inference") + XRange(n);
  c.inputs = {dy, x, scale, FromDoubles(u, TensorShape({C}), mean), FromDoubles(u, TensorShape({C}), var),
              FromDoubles(u, TensorShape({0}), {})};
  c.attrs = NormAttrs(n, false);
  c.expected = {FromDoubles(dt, n.shape, dx), FromDoubles(u, TensorShape({C}), sum_dy_xhat),
                FromDoubles(u, TensorShape({C}), sum_dy), FromDoubles(u, TensorShape({0}), {}),
                FromDoubles(u, TensorShape({0}), {})};
  if (dt == DT_FLOAT) c.tolerance = 1e-4;
  if (dt == DT_DOUBLE) c.tolerance = n.double_tolerance;
  if (kind != GradKind::kPlain) {
    const bool side = kind == GradKind::kReluSide;
    c.description += side ? " relu, side input" : " relu";
    c.inputs.push_back(RandomTensor(u, TensorShape({C}), rng, -1, 1));  // offset (unused)
    c.inputs.push_back(FromDoubles(dt, n.shape, yv));
    c.attrs["activation_mode"] = MakeAttr(std::string("Relu"));
    c.attrs["num_side_inputs"] = MakeAttr(int64_t{side ? 1 : 0});
    if (side) c.expected.push_back(FromDoubles(dt, n.shape, g));
  }
  return c;
}

std::vector<OpCase> GradCases(DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  const DataType u = StatType(dt);
  for (const Norm& n : Layouts()) {
    if (n.factor == 1.0) cases.push_back(GradCase(dt, rng, n, GradKind::kPlain));
  }
  Tensor v3 = RandomTensor(u, TensorShape({3}), rng, 0.5, 1);
  cases.push_back(ErrorCase("dy and x differ",
                            {RandomTensor(dt, TensorShape({1, 2, 2, 3}), rng), RandomTensor(dt, TensorShape({1, 2, 1, 3}), rng),
                             v3, v3, v3, FromDoubles(u, TensorShape({0}), {})},
                            NormAttrs(Norm{TensorShape({1, 2, 2, 3})}, false), "one shape"));
  return cases;
}

// _FusedBatchNormEx: FusedBatchNormV3's cases with a side input added to y
// and a Relu (alternately without the side input), and one with a side
// input and no activation (the third); mismatched side inputs and an unknown
// activation are errors.
std::vector<OpCase> ForwardExCases(DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  int i = 0;
  for (const Norm& n : Layouts()) {
    const bool side = i % 2 == 0, relu = i != 2;
    ++i;
    OpCase c = ForwardCase(dt, rng, n);
    c.check_gradient = false;
    std::vector<double> y = ToDoubles(c.expected[0]);
    if (side) {
      Tensor s = RandomTensor(dt, n.shape, rng, -1, 1);
      const std::vector<double> sv = ToDoubles(s);
      for (size_t k = 0; k < y.size(); ++k) y[k] += sv[k];
      c.inputs.push_back(s);
    }
    if (relu) {
      for (double& v : y) v = std::max(v, 0.0);
    }
    c.expected[0] = FromDoubles(dt, n.shape, y);
    c.attrs["num_side_inputs"] = MakeAttr(int64_t{side ? 1 : 0});
    c.attrs["activation_mode"] = MakeAttr(std::string(relu ? "Relu" : "Identity"));
    c.description += std::string(side ? " side input" : "") + (relu ? " relu" : "");
    cases.push_back(std::move(c));
  }
  const Norm small{TensorShape({1, 2, 2, 3}), false, true};
  const DataType u = StatType(dt);
  Tensor v3 = RandomTensor(u, TensorShape({3}), rng, 0.5, 1);
  AttrList attrs = NormAttrs(small, true);
  attrs["num_side_inputs"] = MakeAttr(int64_t{1});
  attrs["activation_mode"] = MakeAttr(std::string("Relu"));
  cases.push_back(ErrorCase("a side input of another shape",
                            {RandomTensor(dt, small.shape, rng), v3, v3, v3, v3, RandomTensor(dt, TensorShape({1, 2, 1, 3}), rng)},
                            attrs, "side_input must have x's shape"));
  attrs["num_side_inputs"] = MakeAttr(int64_t{0});
  attrs["activation_mode"] = MakeAttr(std::string("Elu"));
  cases.push_back(ErrorCase("an unknown activation", {RandomTensor(dt, small.shape, rng), v3, v3, v3, v3}, attrs,
                            "activation_mode must be Identity or Relu"));
  return cases;
}

// _FusedBatchNormGradEx: FusedBatchNormGradV3's training and inference cases
// with the gradient masked by a Relu's output, alternately with the masked
// gradient as side_input_backprop; one without an activation, whose
// side_input_backprop is y_backprop itself; a y of another shape and an
// unknown activation are errors.
std::vector<OpCase> GradExCases(DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  int i = 0;
  for (const Norm& n : Layouts()) {
    if (n.factor != 1.0) continue;
    cases.push_back(GradCase(dt, rng, n, i++ % 2 == 0 ? GradKind::kReluSide : GradKind::kRelu));
  }
  // Identity: the plain gradient's values, and y_backprop as side_input_backprop
  // (offset and y taken from a Relu case, with its attrs but the activation).
  const OpCase relu = GradCase(dt, rng, Norm{TensorShape({2, 3, 3, 4}), false, true}, GradKind::kReluSide);
  OpCase plain = GradCase(dt, rng, Norm{TensorShape({2, 3, 3, 4}), false, true}, GradKind::kPlain);
  plain.inputs.push_back(relu.inputs[6]);
  plain.inputs.push_back(relu.inputs[7]);
  plain.attrs = relu.attrs;
  plain.attrs["activation_mode"] = MakeAttr(std::string("Identity"));
  plain.description += " Identity, side input";
  plain.expected.push_back(plain.inputs[0]);
  cases.push_back(std::move(plain));
  const DataType u = StatType(dt);
  const TensorShape shape({1, 2, 2, 3});
  Tensor v3 = RandomTensor(u, TensorShape({3}), rng, 0.5, 1);
  AttrList attrs = NormAttrs(Norm{shape}, false);
  attrs["activation_mode"] = MakeAttr(std::string("Relu"));
  attrs["num_side_inputs"] = MakeAttr(int64_t{0});
  const Tensor x = RandomTensor(dt, shape, rng);
  cases.push_back(ErrorCase("a y of another shape",
                            {x, x, v3, v3, v3, FromDoubles(u, TensorShape({0}), {}), v3,
                             RandomTensor(dt, TensorShape({1, 2, 1, 3}), rng)},
                            attrs, "y must have x's shape"));
  attrs["activation_mode"] = MakeAttr(std::string("Sigmoid"));
  cases.push_back(ErrorCase("an unknown activation", {x, x, v3, v3, v3, FromDoubles(u, TensorShape({0}), {}), v3, x},
                            attrs, "activation_mode must be Identity or Relu"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"FusedBatchNormV3", FloatTypes(), ForwardCases});
REGISTER_OP_HARNESS(OpHarnessEntry{"_FusedBatchNormEx", {DT_FLOAT}, ForwardExCases});
REGISTER_OP_HARNESS(OpHarnessEntry{"_FusedBatchNormGradEx", {DT_FLOAT}, GradExCases});
REGISTER_OP_HARNESS(OpHarnessEntry{"FusedBatchNormGradV3", FloatTypes(), GradCases});

}  // namespace
}  // namespace harness
}  // namespace sluice
