// Harness entries for the math ops (engine/ops/math_ops.cc,
// engine/ops/reduction_ops.cc): elementwise unary/binary ops with numpy
// broadcasting, comparisons and logical ops, Select(V2), Cast, AddN,
// BroadcastGradientArgs, the *Grad helper ops, reductions, ArgMax/ArgMin,
// MatMul and BatchMatMul(V2). Every case checks values against a float64
// reference; bad inputs must fail naming the node; float64 cases of
// differentiable ops check gradients by finite differences.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

const std::vector<DataType> kArithTypes = {DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE, DT_INT8,
                                           DT_INT16, DT_INT32,   DT_INT64, DT_UINT8,  DT_UINT16};
const std::vector<DataType> kSignedTypes = {DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE,
                                            DT_INT8, DT_INT16,    DT_INT32, DT_INT64};
const std::vector<DataType> kIntTypes = {DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8, DT_UINT16};

bool IsLowPrecision(DataType t) { return t == DT_HALF || t == DT_BFLOAT16; }

// Replaces values with |v| < min_abs by +-min_abs... so divisors and logs stay tame.
Tensor AwayFromZero(const Tensor& t, double min_abs) {
  std::vector<double> v = ToDoubles(t);
  for (double& e : v) {
    if (std::abs(e) < min_abs) e = e < 0 ? -min_abs : min_abs;
  }
  return FromDoubles(t.dtype(), t.shape(), v);
}

struct BinarySpec {
  DataType out_dtype = DT_INVALID;  // DT_INVALID: the input dtype
  std::function<double(double, double)> fn;
  bool differentiable = false;
  double x_lo = -5, x_hi = 5, y_lo = -5, y_hi = 5;
  double y_min_abs = 0;  // > 0: keep |y| away from zero
  AttrList attrs;
  double tolerance = 0;
};

std::vector<OpCase> BinaryCases(DataType dtype, Rng* rng, const BinarySpec& spec) {
  const DataType out = spec.out_dtype == DT_INVALID ? dtype : spec.out_dtype;
  std::vector<std::pair<TensorShape, TensorShape>> shapes = BroadcastShapePairs(rng);
  // Large enough for the parallel paths (same shape, scalar, general broadcast).
  if (dtype == DT_FLOAT || dtype == DT_INT32 || dtype == DT_BOOL) {
    shapes.push_back({TensorShape({300, 129}), TensorShape({300, 129})});
    shapes.push_back({TensorShape({300, 129}), TensorShape({})});
    shapes.push_back({TensorShape({}), TensorShape({40000})});
    shapes.push_back({TensorShape({300, 1, 129}), TensorShape({3, 1})});
    shapes.push_back({TensorShape({300, 1}), TensorShape({1, 129})});
  }
  shapes.push_back({RandomShape(rng, 3, 1, 3), RandomShape(rng, 1, 1, 1)});
  shapes.push_back({TensorShape({2, 1, 3, 1}), TensorShape({1, 2, 1, 2})});
  std::vector<OpCase> cases;
  for (const auto& [sx, sy] : shapes) {
    OpCase c;
    c.description = sx.DebugString() + " op " + sy.DebugString();
    c.inputs = {RandomTensor(dtype, sx, rng, spec.x_lo, spec.x_hi), RandomTensor(dtype, sy, rng, spec.y_lo, spec.y_hi)};
    if (spec.y_min_abs > 0) c.inputs[1] = AwayFromZero(c.inputs[1], spec.y_min_abs);
    c.attrs = spec.attrs;
    c.expected = {BroadcastBinaryReference(out, c.inputs[0], c.inputs[1], spec.fn)};
    c.tolerance = spec.tolerance;
    c.check_gradient = spec.differentiable && dtype == DT_DOUBLE && sx.num_elements() + sy.num_elements() < 100;
    cases.push_back(std::move(c));
  }
  cases.push_back(ErrorCase("broadcast-compatible",
                            {RandomTensor(dtype, TensorShape({2}), rng), RandomTensor(dtype, TensorShape({3}), rng)},
                            spec.attrs, "broadcast-compatible"));
  return cases;
}

void RegisterBinary(const std::string& op, std::vector<DataType> dtypes, std::function<BinarySpec(DataType)> spec) {
  Entries().push_back(OpHarnessEntry{op, std::move(dtypes), [spec](DataType dtype, Rng* rng) {
                                       return BinaryCases(dtype, rng, spec(dtype));
                                     }});
}

BinarySpec Arith(std::function<double(double, double)> fn, bool differentiable = true) {
  BinarySpec s;
  s.fn = std::move(fn);
  s.differentiable = differentiable;
  return s;
}

double TruncDiv(double a, double b) { return std::trunc(a / b); }

// digamma(x) for x > 0: the recurrence up to x >= 20, then the asymptotic
// series ln y - 1 / 2y - sum B_2k / (2k y^2k).
double DigammaRef(double x) {
  double shift = 0;
  for (; x < 20; x += 1) shift -= 1 / x;
  const double r = 1 / (x * x);
  return shift + std::log(x) - 0.5 / x -
         r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132)))));
}

// polygamma(n, x) for whole n >= 1 and x > 0: (-1)^(n+1) n! zeta(n + 1, x),
// the Hurwitz zeta by 20 terms and the Euler-Maclaurin tail. n = 0: digamma.
double PolygammaRef(double n, double x) {
  if (n == 0) return DigammaRef(x);
  const double s = n + 1;
  constexpr int kTerms = 20;
  double zeta = 0;
  for (int k = 0; k < kTerms; ++k) zeta += std::pow(x + k, -s);
  const double y = x + kTerms;
  zeta += std::pow(y, 1 - s) / (s - 1) + 0.5 * std::pow(y, -s);
  // sum_j B_2j / (2j)! * s (s + 1) ... (s + 2j - 2) y^(-s - 2j + 1).
  const double bernoulli[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66};
  double rising = s, factorial = 2;
  for (int j = 1; j <= 5; ++j) {
    zeta += bernoulli[j - 1] / factorial * rising * std::pow(y, -s - 2 * j + 1);
    rising *= (s + 2 * j - 1) * (s + 2 * j);
    factorial *= (2 * j + 1) * (2 * j + 2);
  }
  return (static_cast<int>(n) % 2 == 1 ? 1 : -1) * std::tgamma(n + 1) * zeta;
}

struct UnarySpec {
  std::function<double(double)> fn;
  bool differentiable = true;
  double lo = -3, hi = 3;
  double min_abs = 0;
  double tolerance = 0;
};

std::vector<OpCase> UnaryCases(const std::string& op, DataType dtype, Rng* rng, const UnarySpec& spec) {
  std::vector<OpCase> cases;
  std::vector<TensorShape> shapes = {TensorShape({}), RandomShape(rng, 1, 1, 6), RandomShape(rng, 2, 1, 4),
                                     TensorShape({0, 3}), RandomShape(rng, 3, 1, 3)};
  if (dtype == DT_FLOAT || dtype == DT_INT32) shapes.push_back(TensorShape({257, 131}));
  for (const TensorShape& shape : shapes) {
    OpCase c;
    c.description = shape.DebugString();
    c.inputs = {RandomTensor(dtype, shape, rng, spec.lo, spec.hi)};
    if (spec.min_abs > 0) c.inputs[0] = AwayFromZero(c.inputs[0], spec.min_abs);
    c.expected = {UnaryReference(dtype, c.inputs[0], spec.fn)};
    c.tolerance = spec.tolerance;
    c.check_gradient = spec.differentiable && dtype == DT_DOUBLE && shape.num_elements() < 100;
    cases.push_back(std::move(c));
  }
  (void)op;
  return cases;
}

void RegisterUnary(const std::string& op, std::vector<DataType> dtypes, UnarySpec spec) {
  Entries().push_back(OpHarnessEntry{
      op, std::move(dtypes), [op, spec](DataType dtype, Rng* rng) { return UnaryCases(op, dtype, rng, spec); }});
}

// (y, dy) -> dx helper ops.
void RegisterUnaryGrad(const std::string& op, std::function<double(double, double)> fn, double lo, double hi) {
  Entries().push_back(OpHarnessEntry{op, FloatTypes(), [fn, lo, hi](DataType dtype, Rng* rng) {
                                       std::vector<OpCase> cases;
                                       for (const TensorShape& shape :
                                            {TensorShape({}), TensorShape({5}), TensorShape({2, 3}), TensorShape({0, 2}),
                                             TensorShape({130, 300})}) {
                                         if (shape.num_elements() > 1000 && dtype != DT_FLOAT) continue;
                                         OpCase c;
                                         c.description = shape.DebugString();
                                         c.inputs = {RandomTensor(dtype, shape, rng, lo, hi),
                                                     RandomTensor(dtype, shape, rng, -2, 2)};
                                         c.expected = {BroadcastBinaryReference(dtype, c.inputs[0], c.inputs[1], fn)};
                                         if (IsLowPrecision(dtype)) c.tolerance = 5e-2;
                                         c.check_gradient = dtype == DT_DOUBLE && shape.num_elements() < 100;
                                         cases.push_back(std::move(c));
                                       }
                                       cases.push_back(ErrorCase("shapes differ",
                                                                 {RandomTensor(dtype, TensorShape({2}), rng, lo, hi),
                                                                  RandomTensor(dtype, TensorShape({3}), rng)},
                                                                 {}, "same shape"));
                                       return cases;
                                     }});
}

// ---- Reductions ----

// Reduces x over `axes` (normalized, may repeat) with fn from init, in float64.
Tensor ReduceReference(const Tensor& x, const std::vector<int64_t>& axes, bool keep_dims, DataType out_dtype,
                       double init, const std::function<double(double, double)>& fn,
                       const std::function<double(double, int64_t)>& finish) {
  const int rank = x.dims();
  std::vector<bool> reduce(rank, false);
  for (int64_t a : axes) reduce[a < 0 ? a + rank : a] = true;
  std::vector<int64_t> out_dims, kept_dims;
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    kept_dims.push_back(reduce[i] ? 1 : x.dim_size(i));
    if (reduce[i]) count *= x.dim_size(i);
    if (!reduce[i]) out_dims.push_back(x.dim_size(i));
    else if (keep_dims) out_dims.push_back(1);
  }
  TensorShape kept(kept_dims);
  std::vector<double> acc(kept.num_elements(), init);
  std::vector<double> v = ToDoubles(x);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    int64_t o = 0;
    for (int d = 0; d < rank; ++d) o = o * kept_dims[d] + (reduce[d] ? 0 : index[d]);
    acc[o] = fn(acc[o], v[i]);
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < x.dim_size(d)) break;
      index[d] = 0;
    }
  }
  for (double& a : acc) a = finish(a, count);
  return FromDoubles(out_dtype, TensorShape(out_dims), acc);
}

Tensor AxesTensor(const std::vector<int64_t>& axes, bool int64, bool scalar) {
  if (int64) {
    if (scalar) return Tensor::Scalar<int64_t>(axes[0]);
    return Tensor::FromVector<int64_t>(axes);
  }
  std::vector<int32_t> a(axes.begin(), axes.end());
  if (scalar) return Tensor::Scalar<int32_t>(a[0]);
  return Tensor::FromVector<int32_t>(a);
}

struct ReduceSpec {
  double init;
  std::function<double(double, double)> fn;
  std::function<double(double, int64_t)> finish = [](double a, int64_t) { return a; };
  double lo = -2, hi = 2;
  int64_t max_dim = 4;
  bool avoid_ties = false;
};

std::vector<OpCase> ReduceCases(DataType dtype, Rng* rng, const ReduceSpec& spec) {
  std::vector<OpCase> cases;
  double lo = spec.lo, hi = spec.hi;
  int64_t max_dim = spec.max_dim;
  if (DataTypeIsInteger(dtype)) {
    lo = std::max(lo, -1.0);
    hi = std::min(hi, 1.0);
    max_dim = std::min<int64_t>(max_dim, 3);
  }
  struct Layout {
    TensorShape shape;
    std::vector<int64_t> axes;
    bool scalar_axis;
  };
  std::vector<Layout> layouts = {
      {TensorShape({}), {}, false},
      {RandomShape(rng, 1, 1, max_dim), {0}, true},
      {RandomShape(rng, 2, 1, max_dim), {1}, false},
      {RandomShape(rng, 2, 1, max_dim), {0}, false},
      {RandomShape(rng, 2, 1, max_dim), {-1, 0}, false},
      {RandomShape(rng, 3, 1, max_dim), {0, 2}, false},
      {RandomShape(rng, 3, 1, max_dim), {-2}, true},
      {RandomShape(rng, 4, 1, 3), {1, 3}, false},
      {RandomShape(rng, 4, 1, 3), {0, 2, 3}, false},
      {RandomShape(rng, 3, 1, max_dim), {}, false},
      {RandomShape(rng, 3, 1, max_dim), {1, 1}, false},
      {TensorShape({2, 0, 3}), {1}, false},
      {TensorShape({2, 0, 3}), {0}, false},
      {TensorShape({0}), {0}, false},
  };
  if (dtype == DT_BOOL) {
    // The parallel paths (one long row in chunks; many rows).
    layouts.push_back({TensorShape({70000}), {0}, true});
    layouts.push_back({TensorShape({300, 200}), {0}, false});
  }
  if (dtype == DT_FLOAT) {
    layouts.push_back({TensorShape({70000}), {0}, true});
    layouts.push_back({TensorShape({300, 200}), {1}, false});
    layouts.push_back({TensorShape({300, 200}), {0}, false});
    layouts.push_back({TensorShape({20, 60, 50}), {0, 2}, false});
  }
  int k = 0;
  for (const Layout& l : layouts) {
    for (bool keep : {false, true}) {
      const bool int64 = (k++ % 2) == 1;
      OpCase c;
      c.description = l.shape.DebugString() + " axes " + std::to_string(l.axes.size()) +
                      (l.axes.empty() ? "" : " first " + std::to_string(l.axes[0])) + (keep ? " keep_dims" : "") +
                      (int64 ? " int64 axes" : "");
      Tensor x = RandomTensor(dtype, l.shape, rng, lo, hi);
      if (spec.avoid_ties && dtype == DT_DOUBLE) {
        std::vector<double> v = ToDoubles(x);
        for (size_t i = 0; i < v.size(); ++i) v[i] += 1e-3 * static_cast<double>(i);
        x = FromDoubles(dtype, x.shape(), v);
      }
      c.inputs = {x, AxesTensor(l.axes, int64, l.scalar_axis)};
      c.attrs = {{"keep_dims", MakeAttr(keep)}};
      c.expected = {ReduceReference(x, l.axes, keep, dtype, spec.init, spec.fn, spec.finish)};
      if (IsLowPrecision(dtype)) c.tolerance = 3e-2;
      if (dtype == DT_FLOAT && l.shape.num_elements() > 1000) c.tolerance = 1e-4;
      c.check_gradient = dtype == DT_DOUBLE && l.shape.num_elements() > 0 && l.shape.num_elements() <= 40;
      c.grad_inputs = {0};
      cases.push_back(std::move(c));
    }
  }
  cases.push_back(ErrorCase("axis out of range", {RandomTensor(dtype, TensorShape({2, 3}), rng), AxesTensor({2}, false, false)},
                            {}, "Invalid reduction dimension"));
  cases.push_back(ErrorCase("negative axis out of range",
                            {RandomTensor(dtype, TensorShape({2, 3}), rng), AxesTensor({-3}, true, true)}, {},
                            "Invalid reduction dimension"));
  return cases;
}

void RegisterReduction(const std::string& op, std::vector<DataType> dtypes, ReduceSpec spec) {
  Entries().push_back(
      OpHarnessEntry{op, std::move(dtypes), [spec](DataType dtype, Rng* rng) { return ReduceCases(dtype, rng, spec); }});
}

std::vector<OpCase> ArgCases(DataType dtype, Rng* rng, bool is_max) {
  std::vector<OpCase> cases;
  std::vector<std::pair<TensorShape, int64_t>> layouts = {
      {RandomShape(rng, 1, 1, 6), 0},  {RandomShape(rng, 2, 1, 5), 1}, {RandomShape(rng, 2, 1, 5), -2},
      {RandomShape(rng, 3, 1, 4), 1},  {TensorShape({0, 3}), 1},      {TensorShape({3, 4, 5}), -1},
      {TensorShape({5, 1}), 0}};
  if (dtype == DT_FLOAT) layouts.push_back({TensorShape({300, 200}), 0});
  int k = 0;
  for (const auto& [shape, axis] : layouts) {
    for (DataType out : {DT_INT64, DT_INT32}) {
      OpCase c;
      c.description = shape.DebugString() + " axis " + std::to_string(axis) + " -> " + DataTypeString(out);
      // Few distinct values so that ties occur (the first index wins).
      Tensor x = RandomTensor(dtype, shape, rng, -2, 2);
      const bool int64_axis = (k++ % 2) == 1;
      c.inputs = {x, int64_axis ? Tensor::Scalar<int64_t>(axis) : Tensor::Scalar<int32_t>(static_cast<int32_t>(axis))};
      c.attrs = {{"output_type", MakeAttr(out)}};
      const int rank = shape.dims();
      const int a = static_cast<int>(axis < 0 ? axis + rank : axis);
      int64_t A = 1, B = 1;
      std::vector<int64_t> out_dims;
      for (int i = 0; i < rank; ++i) {
        if (i == a) continue;
        out_dims.push_back(shape.dim_size(i));
        (i < a ? A : B) *= shape.dim_size(i);
      }
      const int64_t R = shape.dim_size(a);
      std::vector<double> v = ToDoubles(x), result(A * B);
      for (int64_t o = 0; o < A * B; ++o) {
        const int64_t ai = o / B, bi = o % B;
        int64_t best = 0;
        for (int64_t r = 1; r < R; ++r) {
          const double cur = v[(ai * R + r) * B + bi], bv = v[(ai * R + best) * B + bi];
          if (is_max ? cur > bv : cur < bv) best = r;
        }
        result[o] = static_cast<double>(best);
      }
      c.expected = {FromDoubles(out, TensorShape(out_dims), result)};
      cases.push_back(std::move(c));
    }
  }
  cases.push_back(ErrorCase("axis out of range", {RandomTensor(dtype, TensorShape({2, 3}), rng), Tensor::Scalar<int32_t>(2)},
                            {}, "Expected dimension in the range"));
  cases.push_back(ErrorCase("empty axis", {RandomTensor(dtype, TensorShape({2, 0}), rng), Tensor::Scalar<int32_t>(1)}, {},
                            "is empty"));
  return cases;
}

// ---- Matrix products ----

// Reference batched product: x [..., m, k] (adj_x: [..., k, m]) @ y, batch dims broadcast.
Tensor BatchMatMulReference(const Tensor& x, const Tensor& y, bool ax, bool ay) {
  const int xr = x.dims(), yr = y.dims();
  const int64_t m = ax ? x.dim_size(xr - 1) : x.dim_size(xr - 2), k = ax ? x.dim_size(xr - 2) : x.dim_size(xr - 1);
  const int64_t n = ay ? y.dim_size(yr - 2) : y.dim_size(yr - 1);
  std::vector<int64_t> bx(x.shape().dim_sizes().begin(), x.shape().dim_sizes().end() - 2);
  std::vector<int64_t> by(y.shape().dim_sizes().begin(), y.shape().dim_sizes().end() - 2);
  // Broadcast batch index maps via BroadcastBinaryReference on index tensors.
  std::vector<double> ix(TensorShape(bx).num_elements()), iy(TensorShape(by).num_elements());
  for (size_t i = 0; i < ix.size(); ++i) ix[i] = static_cast<double>(i);
  for (size_t i = 0; i < iy.size(); ++i) iy[i] = static_cast<double>(i);
  Tensor tx = FromDoubles(DT_DOUBLE, TensorShape(bx), ix), ty = FromDoubles(DT_DOUBLE, TensorShape(by), iy);
  Tensor pick_x = BroadcastBinaryReference(DT_DOUBLE, tx, ty, [](double a, double) { return a; });
  Tensor pick_y = BroadcastBinaryReference(DT_DOUBLE, tx, ty, [](double, double b) { return b; });
  std::vector<double> px = ToDoubles(pick_x), py = ToDoubles(pick_y);
  std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y), out(px.size() * m * n, 0.0);
  const int64_t xs = m * k, ys = k * n;
  for (size_t b = 0; b < px.size(); ++b) {
    const double* xb = xv.data() + static_cast<int64_t>(px[b]) * xs;
    const double* yb = yv.data() + static_cast<int64_t>(py[b]) * ys;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += (ax ? xb[p * m + i] : xb[i * k + p]) * (ay ? yb[j * k + p] : yb[p * n + j]);
        out[(b * m + i) * n + j] = s;
      }
    }
  }
  std::vector<int64_t> od(pick_x.shape().dim_sizes().begin(), pick_x.shape().dim_sizes().end());
  od.push_back(m);
  od.push_back(n);
  return FromDoubles(x.dtype(), TensorShape(od), out);
}

std::vector<OpCase> BatchMatMulCases(DataType dtype, Rng* rng, bool v2) {
  std::vector<OpCase> cases;
  struct Layout {
    std::vector<int64_t> bx, by;
    int64_t m, k, n;
  };
  std::vector<Layout> layouts = {{{2}, {2}, 2, 3, 4}, {{3, 2}, {3, 2}, 1, 2, 1}, {{2}, {2}, 0, 3, 2},
                                 {{2}, {2}, 2, 0, 3}, {{0}, {0}, 2, 2, 2},        {{}, {}, 3, 2, 4}};
  if (v2) {
    layouts.push_back({{2, 1}, {3}, 2, 3, 2});
    layouts.push_back({{}, {2}, 2, 2, 3});
    layouts.push_back({{4}, {1}, 3, 1, 2});
  }
  if (dtype == DT_FLOAT) {
    layouts.push_back({{2}, {2}, 100, 80, 90});
    layouts.push_back({{64}, {64}, 8, 9, 7});
    // Small products (CpuGemm's small path, cpu_gemm_small.h): row blocks and a short last
    // one, partial and whole vectors of C (8 or 16 lanes), an attention head.
    layouts.push_back({{3}, {3}, 17, 5, 33});
    layouts.push_back({{2}, {2}, 9, 20, 64});
    layouts.push_back({{32}, {32}, 16, 8, 16});
  }
  for (const Layout& l : layouts) {
    for (int t = 0; t < 4; ++t) {
      const bool ax = t & 1, ay = t & 2;
      std::vector<int64_t> sx = l.bx, sy = l.by;
      sx.push_back(ax ? l.k : l.m);
      sx.push_back(ax ? l.m : l.k);
      sy.push_back(ay ? l.n : l.k);
      sy.push_back(ay ? l.k : l.n);
      OpCase c;
      c.description = TensorShape(sx).DebugString() + " x " + TensorShape(sy).DebugString() + (ax ? " adj_x" : "") +
                      (ay ? " adj_y" : "");
      c.inputs = {RandomTensor(dtype, TensorShape(sx), rng, -2, 2), RandomTensor(dtype, TensorShape(sy), rng, -2, 2)};
      c.attrs = {{"adj_x", MakeAttr(ax)}, {"adj_y", MakeAttr(ay)}};
      c.expected = {BatchMatMulReference(c.inputs[0], c.inputs[1], ax, ay)};
      if (IsLowPrecision(dtype)) c.tolerance = 5e-2;
      if (dtype == DT_FLOAT) c.tolerance = 1e-4;
      c.check_gradient = dtype == DT_DOUBLE && c.inputs[0].NumElements() > 0 && c.inputs[1].NumElements() > 0 &&
                         c.inputs[0].NumElements() + c.inputs[1].NumElements() < 60;
      cases.push_back(std::move(c));
    }
  }
  cases.push_back(ErrorCase("inner dims differ",
                            {RandomTensor(dtype, TensorShape({2, 2, 3}), rng), RandomTensor(dtype, TensorShape({2, 4, 2}), rng)},
                            {}, "inner dimensions differ"));
  cases.push_back(ErrorCase("batch dims differ",
                            {RandomTensor(dtype, TensorShape({2, 2, 3}), rng), RandomTensor(dtype, TensorShape({3, 3, 2}), rng)},
                            {}, "batch dimensions differ"));
  cases.push_back(ErrorCase("rank 1", {RandomTensor(dtype, TensorShape({3}), rng), RandomTensor(dtype, TensorShape({3, 2}), rng)},
                            {}, "rank"));
  return cases;
}

Tensor MatMulReference(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  return BatchMatMulReference(a, b, ta, tb);
}

// ---- SelectV2 ----

// Flat offset into a tensor of shape `in` for output index `out_index` under
// numpy broadcasting (trailing dims aligned, size-1 dims repeat).
int64_t BroadcastOffset(const TensorShape& in, const std::vector<int64_t>& out_index) {
  const int lead = static_cast<int>(out_index.size()) - in.dims();
  int64_t off = 0;
  for (int d = 0; d < in.dims(); ++d) off = off * in.dim_size(d) + (in.dim_size(d) == 1 ? 0 : out_index[lead + d]);
  return off;
}

// condition ? t : e with all three broadcast, in float64 (out dtype = t's).
Tensor SelectV2Reference(const Tensor& cond, const Tensor& t, const Tensor& e) {
  Tensor te = BroadcastBinaryReference(DT_DOUBLE, t, e, [](double a, double) { return a; });
  Tensor shape_only = BroadcastBinaryReference(DT_DOUBLE, cond, te, [](double, double) { return 0.0; });
  const TensorShape& out_shape = shape_only.shape();
  std::vector<double> c = ToDoubles(cond), a = ToDoubles(t), b = ToDoubles(e), out(out_shape.num_elements());
  std::vector<int64_t> index(out_shape.dims(), 0);
  for (int64_t i = 0; i < out_shape.num_elements(); ++i) {
    out[i] = c[BroadcastOffset(cond.shape(), index)] != 0 ? a[BroadcastOffset(t.shape(), index)]
                                                           : b[BroadcastOffset(e.shape(), index)];
    for (int d = out_shape.dims() - 1; d >= 0; --d) {
      if (++index[d] < out_shape.dim_size(d)) break;
      index[d] = 0;
    }
  }
  return FromDoubles(t.dtype(), out_shape, out);
}

std::vector<OpCase> SelectV2Cases(DataType dtype, Rng* rng) {
  struct Layout {
    TensorShape cond, t, e;
  };
  std::vector<Layout> layouts = {
      {TensorShape({2, 3}), TensorShape({2, 3}), TensorShape({2, 3})},
      {TensorShape({}), TensorShape({2, 3}), TensorShape({2, 3})},   // forwards t or e
      {TensorShape({1}), TensorShape({2, 2}), TensorShape({2, 2})},  // one element, output has t's shape
      {TensorShape({1, 1}), TensorShape({3}), TensorShape({3})},     // one element, output [1,3]
      {TensorShape({}), TensorShape({}), TensorShape({4})},
      {TensorShape({3}), TensorShape({2, 3}), TensorShape({2, 3})},  // numpy: cond runs along the last dim
      {TensorShape({2, 1}), TensorShape({1, 3}), TensorShape({})},
      {TensorShape({2, 1, 3}), TensorShape({4, 1}), TensorShape({1})},
      {TensorShape({0, 3}), TensorShape({3}), TensorShape({1, 3})},
      {TensorShape({}), TensorShape({}), TensorShape({})},
  };
  if (dtype == DT_FLOAT) {
    layouts.push_back({TensorShape({300, 200}), TensorShape({300, 200}), TensorShape({300, 200})});
    layouts.push_back({TensorShape({300, 200}), TensorShape({200}), TensorShape({})});
    layouts.push_back({TensorShape({300, 1}), TensorShape({300, 200}), TensorShape({1, 200})});
  }
  std::vector<OpCase> cases;
  for (const Layout& l : layouts) {
    OpCase c;
    c.description = "cond " + l.cond.DebugString() + " t " + l.t.DebugString() + " e " + l.e.DebugString();
    c.inputs = {RandomTensor(DT_BOOL, l.cond, rng), RandomTensor(dtype, l.t, rng), RandomTensor(dtype, l.e, rng)};
    c.expected = {SelectV2Reference(c.inputs[0], c.inputs[1], c.inputs[2])};
    const int64_t n = c.expected[0].NumElements();
    c.check_gradient = dtype == DT_DOUBLE && n > 0 && n < 100;
    cases.push_back(std::move(c));
  }
  for (bool pick : {true, false}) {  // a scalar condition forwards its choice
    OpCase c;
    c.description = std::string("scalar condition ") + (pick ? "true" : "false");
    c.inputs = {Tensor::Scalar<bool>(pick), RandomTensor(dtype, TensorShape({2, 2}), rng),
                RandomTensor(dtype, TensorShape({2, 2}), rng)};
    c.expected = {pick ? c.inputs[1] : c.inputs[2]};
    c.check_gradient = dtype == DT_DOUBLE;
    cases.push_back(std::move(c));
  }
  if (dtype == DT_INT32) {  // strings move by assignment
    Tensor t(DT_STRING, TensorShape({2, 1})), e(DT_STRING, TensorShape({2}));
    t.data<tstring>()[0] = "a";
    t.data<tstring>()[1] = "b";
    e.data<tstring>()[0] = "x";
    e.data<tstring>()[1] = "y";
    Tensor cond(DT_BOOL, TensorShape({2}));
    cond.data<bool>()[0] = true;
    cond.data<bool>()[1] = false;
    Tensor want(DT_STRING, TensorShape({2, 2}));
    want.data<tstring>()[0] = "a";
    want.data<tstring>()[1] = "y";
    want.data<tstring>()[2] = "b";
    want.data<tstring>()[3] = "y";
    OpCase c;
    c.description = "strings";
    c.inputs = {cond, t, e};
    c.expected = {want};
    cases.push_back(std::move(c));
  }
  cases.push_back(ErrorCase("t and e",
                            {RandomTensor(DT_BOOL, TensorShape({2}), rng), RandomTensor(dtype, TensorShape({2}), rng),
                             RandomTensor(dtype, TensorShape({3}), rng)},
                            {}, "broadcast-compatible"));
  cases.push_back(ErrorCase("condition",
                            {RandomTensor(DT_BOOL, TensorShape({4}), rng), RandomTensor(dtype, TensorShape({2, 3}), rng),
                             RandomTensor(dtype, TensorShape({2, 3}), rng)},
                            {}, "broadcast-compatible"));
  return cases;
}

// Python's % (the result has y's sign), in float64.
double FloorModRef(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// ---- Registration ----

struct Registrations {
  Registrations() {
    auto add = [](double a, double b) { return a + b; };
    // TensorFlow's Add has no uint16 (AddV2 does).
    std::vector<DataType> add_types = kArithTypes;
    add_types.pop_back();
    RegisterBinary("Add", add_types, [add](DataType) { return Arith(add); });
    RegisterBinary("AddV2", kArithTypes, [add](DataType) { return Arith(add); });
    RegisterBinary("Sub", kArithTypes, [](DataType) { return Arith([](double a, double b) { return a - b; }); });
    RegisterBinary("Mul", kArithTypes, [](DataType) { return Arith([](double a, double b) { return a * b; }); });
    auto div_spec = [](DataType t) {
      BinarySpec s;
      s.differentiable = true;
      if (DataTypeIsInteger(t)) {
        s.fn = TruncDiv;
        s.y_min_abs = 1;
      } else {
        s.fn = [](double a, double b) { return a / b; };
        s.y_min_abs = 0.5;
      }
      return s;
    };
    RegisterBinary("Div", kArithTypes, div_spec);
    RegisterBinary("RealDiv", FloatTypes(), div_spec);
    RegisterBinary("FloorDiv", kArithTypes, [](DataType t) {
      BinarySpec s;
      s.fn = [](double a, double b) { return std::floor(a / b); };
      s.y_min_abs = DataTypeIsInteger(t) ? 1 : 0.5;
      s.x_lo = -20;
      s.x_hi = 20;
      // Floating rounding of a/b can move floor() across an integer in half.
      if (IsLowPrecision(t)) s.tolerance = 1.0;
      return s;
    });
    RegisterBinary("FloorMod", kArithTypes, [](DataType t) {
      BinarySpec s;
      s.fn = FloorModRef;
      s.differentiable = true;
      s.y_min_abs = DataTypeIsInteger(t) ? 1 : 0.5;
      s.x_lo = -20;
      s.x_hi = 20;
      return s;
    });
    RegisterBinary("Maximum", kArithTypes,
                   [](DataType) { return Arith([](double a, double b) { return std::max(a, b); }); });
    RegisterBinary("Minimum", kArithTypes,
                   [](DataType) { return Arith([](double a, double b) { return std::min(a, b); }); });
    RegisterBinary("Pow", {DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}, [](DataType t) {
      BinarySpec s;
      s.fn = [](double a, double b) { return std::pow(a, b); };
      s.differentiable = true;
      if (DataTypeIsInteger(t)) {
        s.x_lo = -3, s.x_hi = 3, s.y_lo = 0, s.y_hi = 4;
      } else {
        s.x_lo = 0.5, s.x_hi = 2, s.y_lo = -2, s.y_hi = 2;
      }
      if (IsLowPrecision(t)) s.tolerance = 5e-2;
      return s;
    });
    RegisterBinary("SquaredDifference", {DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}, [](DataType t) {
      BinarySpec s = Arith([](double a, double b) { return (a - b) * (a - b); });
      if (IsLowPrecision(t)) s.tolerance = 5e-2;
      return s;
    });
    RegisterBinary("Atan2", FloatTypes(), [](DataType t) {
      BinarySpec s = Arith([](double y, double x) { return std::atan2(y, x); });
      // Away from the origin, where the angle jumps.
      s.y_min_abs = 0.3;
      if (IsLowPrecision(t)) s.tolerance = 2e-2;
      return s;
    });
    // Whole orders 0-3 against x in [0.3, 5]; the gradient in x only (the
    // order has none).
    Entries().push_back(OpHarnessEntry{"Polygamma", FloatTypes(), [](DataType dtype, Rng* rng) {
                                         std::vector<OpCase> cases;
                                         auto orders = [&](const TensorShape& shape) {
                                           Tensor a = RandomTensor(DT_DOUBLE, shape, rng, 0, 3);  // whole numbers
                                           std::vector<double> v = ToDoubles(a);
                                           for (double& e : v) e = std::round(std::abs(e));
                                           return FromDoubles(dtype, shape, v);
                                         };
                                         for (const auto& [sa, sx] : std::vector<std::pair<TensorShape, TensorShape>>{
                                                  {TensorShape({}), TensorShape({5})},
                                                  {TensorShape({2, 3}), TensorShape({2, 3})},
                                                  {TensorShape({3, 1}), TensorShape({4})},
                                                  {TensorShape({0, 2}), TensorShape({2})}}) {
                                           OpCase c;
                                           c.description = sa.DebugString() + " orders, x " + sx.DebugString();
                                           c.inputs = {orders(sa), RandomTensor(dtype, sx, rng, 0.3, 5)};
                                           c.expected = {BroadcastBinaryReference(dtype, c.inputs[0], c.inputs[1],
                                                                                  PolygammaRef)};
                                           c.tolerance = dtype == DT_DOUBLE ? 1e-10 : dtype == DT_FLOAT ? 1e-4 : 5e-2;
                                           c.check_gradient = dtype == DT_DOUBLE;
                                           c.grad_inputs = {1};
                                           cases.push_back(std::move(c));
                                         }
                                         return cases;
                                       }});
    auto cmp = [](std::function<double(double, double)> fn) {
      return [fn](DataType) {
        BinarySpec s;
        s.fn = fn;
        s.out_dtype = DT_BOOL;
        s.x_lo = s.y_lo = -2;
        s.x_hi = s.y_hi = 2;  // integers in [-2, 2]: many ties
        return s;
      };
    };
    RegisterBinary("Less", kArithTypes, cmp([](double a, double b) { return a < b; }));
    RegisterBinary("LessEqual", kArithTypes, cmp([](double a, double b) { return a <= b; }));
    RegisterBinary("Greater", kArithTypes, cmp([](double a, double b) { return a > b; }));
    RegisterBinary("GreaterEqual", kArithTypes, cmp([](double a, double b) { return a >= b; }));
    std::vector<DataType> eq_types = kArithTypes;
    eq_types.push_back(DT_BOOL);
    for (bool not_equal : {false, true}) {
      const std::string op = not_equal ? "NotEqual" : "Equal";
      Entries().push_back(OpHarnessEntry{op, eq_types, [not_equal](DataType dtype, Rng* rng) {
                                           BinarySpec s;
                                           s.fn = [not_equal](double a, double b) { return (a == b) != not_equal; };
                                           s.out_dtype = DT_BOOL;
                                           s.x_lo = s.y_lo = -2;
                                           s.x_hi = s.y_hi = 2;
                                           std::vector<OpCase> cases = BinaryCases(dtype, rng, s);
                                           OpCase c;
                                           c.description = "incompatible_shape_error=false";
                                           c.inputs = {RandomTensor(dtype, TensorShape({2}), rng),
                                                       RandomTensor(dtype, TensorShape({3}), rng)};
                                           c.attrs = {{"incompatible_shape_error", MakeAttr(false)}};
                                           c.expected = {Tensor::Scalar<bool>(not_equal)};
                                           cases.push_back(std::move(c));
                                           return cases;
                                         }});
    }
    auto logical = [](std::function<double(double, double)> fn) {
      return [fn](DataType) {
        BinarySpec s;
        s.fn = fn;
        return s;
      };
    };
    RegisterBinary("LogicalAnd", {DT_BOOL}, logical([](double a, double b) { return a != 0 && b != 0; }));
    RegisterBinary("LogicalOr", {DT_BOOL}, logical([](double a, double b) { return a != 0 || b != 0; }));
    RegisterUnary("LogicalNot", {DT_BOOL}, UnarySpec{[](double v) { return v == 0; }, false});

    RegisterUnary("Neg", kSignedTypes, UnarySpec{[](double v) { return -v; }});
    RegisterUnary("Abs", kSignedTypes, UnarySpec{[](double v) { return std::abs(v); }});
    RegisterUnary("Square", kSignedTypes, UnarySpec{[](double v) { return v * v; }, true, -3, 3, 0, 0});
    auto fl = [](std::function<double(double)> fn, double lo, double hi, double min_abs = 0) {
      UnarySpec s{std::move(fn), true, lo, hi, min_abs, 0};
      return s;
    };
    RegisterUnary("Sqrt", FloatTypes(), fl([](double v) { return std::sqrt(v); }, 0.2, 4));
    RegisterUnary("Rsqrt", FloatTypes(), fl([](double v) { return 1 / std::sqrt(v); }, 0.2, 4));
    RegisterUnary("Exp", FloatTypes(), fl([](double v) { return std::exp(v); }, -3, 3));
    RegisterUnary("Log", FloatTypes(), fl([](double v) { return std::log(v); }, 0.2, 4));
    RegisterUnary("Log1p", FloatTypes(), fl([](double v) { return std::log1p(v); }, -0.7, 3));
    RegisterUnary("Tanh", FloatTypes(), fl([](double v) { return std::tanh(v); }, -3, 3));
    RegisterUnary("Sigmoid", FloatTypes(), fl([](double v) { return 1 / (1 + std::exp(-v)); }, -5, 5));
    RegisterUnary("Reciprocal", FloatTypes(), fl([](double v) { return 1 / v; }, -3, 3, 0.3));
    RegisterUnary("Sin", FloatTypes(), fl([](double v) { return std::sin(v); }, -4, 4));
    RegisterUnary("Cos", FloatTypes(), fl([](double v) { return std::cos(v); }, -4, 4));
    RegisterUnary("Erfc", FloatTypes(), fl([](double v) { return std::erfc(v); }, -3, 3));
    RegisterUnary("Erf", FloatTypes(), fl([](double v) { return std::erf(v); }, -3, 3));
    // Away from the poles at 0, -1, -2, ...: positive arguments, and
    // negative ones between the poles.
    RegisterUnary("Lgamma", FloatTypes(), fl([](double v) { return std::lgamma(v); }, 0.1, 6));
    RegisterUnary("Digamma", FloatTypes(), fl(DigammaRef, 0.3, 6));
    // Integers in [-3, 3] include 0; the float64 gradient check (zero) stays
    // away from the jump at 0.
    RegisterUnary("Sign", kSignedTypes, UnarySpec{[](double v) { return double((v > 0) - (v < 0)); }, true, -3, 3, 0.01, 0});
    // Not differentiable (TensorFlow registers None); Round is half to even.
    RegisterUnary("Floor", FloatTypes(), UnarySpec{[](double v) { return std::floor(v); }, false, -4, 4});
    RegisterUnary("Ceil", FloatTypes(), UnarySpec{[](double v) { return std::ceil(v); }, false, -4, 4});
    std::vector<DataType> round_types = FloatTypes();
    for (DataType t : {DT_INT8, DT_INT16, DT_INT32, DT_INT64}) round_types.push_back(t);
    Entries().push_back(OpHarnessEntry{"Round", round_types, [](DataType dtype, Rng* rng) {
                                         UnarySpec s{[](double v) { return std::nearbyint(v); }, false, -4, 4};
                                         std::vector<OpCase> cases = UnaryCases("Round", dtype, rng, s);
                                         if (!DataTypeIsInteger(dtype)) {
                                           OpCase c;
                                           c.description = "halves go to the even neighbour";
                                           c.inputs = {FromDoubles(dtype, TensorShape({6}), {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5})};
                                           c.expected = {FromDoubles(dtype, TensorShape({6}), {-2, -2, -0, 0, 2, 2})};
                                           cases.push_back(std::move(c));
                                         }
                                         return cases;
                                       }});
    Entries().push_back(OpHarnessEntry{"DivNoNan", FloatTypes(), [](DataType dtype, Rng* rng) {
                                         BinarySpec s;
                                         s.fn = [](double a, double b) { return b == 0 ? 0 : a / b; };
                                         s.differentiable = true;
                                         s.y_min_abs = 0.5;
                                         std::vector<OpCase> cases = BinaryCases(dtype, rng, s);
                                         OpCase c;
                                         c.description = "zero divisors give 0, not inf or NaN";
                                         c.inputs = {FromDoubles(dtype, TensorShape({4}), {1, -2, 0, 3}),
                                                     FromDoubles(dtype, TensorShape({4}), {0, 2, 0, -0.0})};
                                         c.expected = {FromDoubles(dtype, TensorShape({4}), {0, -1, 0, 0})};
                                         cases.push_back(std::move(c));
                                         return cases;
                                       }});
    std::vector<DataType> select_v2_types = kArithTypes;
    select_v2_types.push_back(DT_BOOL);
    Entries().push_back(OpHarnessEntry{"SelectV2", select_v2_types, SelectV2Cases});

    RegisterUnaryGrad("TanhGrad", [](double y, double dy) { return dy * (1 - y * y); }, -0.9, 0.9);
    RegisterUnaryGrad("SigmoidGrad", [](double y, double dy) { return dy * y * (1 - y); }, 0.1, 0.9);
    RegisterUnaryGrad("SqrtGrad", [](double y, double dy) { return dy * 0.5 / y; }, 0.5, 3);
    RegisterUnaryGrad("RsqrtGrad", [](double y, double dy) { return -0.5 * dy * y * y * y; }, 0.5, 2);

    auto sum = [](double a, double b) { return a + b; };
    RegisterReduction("All", {DT_BOOL}, ReduceSpec{1, [](double a, double b) { return double(a != 0 && b != 0); }});
    RegisterReduction("Any", {DT_BOOL}, ReduceSpec{0, [](double a, double b) { return double(a != 0 || b != 0); }});
    RegisterReduction("Sum", kArithTypes, ReduceSpec{0, sum});
    ReduceSpec mean{0, sum};
    mean.finish = [](double a, int64_t n) { return n == 0 ? NAN : a / n; };
    Entries().push_back(OpHarnessEntry{"Mean", kArithTypes, [mean](DataType dtype, Rng* rng) {
                                         ReduceSpec s = mean;
                                         if (DataTypeIsInteger(dtype)) {
                                           s.finish = [](double a, int64_t n) { return n == 0 ? 0 : std::trunc(a / n); };
                                         }
                                         return ReduceCases(dtype, rng, s);
                                       }});
    ReduceSpec prod{1, [](double a, double b) { return a * b; }};
    prod.lo = -1.3;
    prod.hi = 1.3;
    prod.max_dim = 3;
    Entries().push_back(OpHarnessEntry{"Prod", kArithTypes, [prod](DataType dtype, Rng* rng) {
                                         std::vector<OpCase> cases = ReduceCases(dtype, rng, prod);
                                         if (dtype == DT_DOUBLE) {
                                           // Zeros: the gradient must still be exact.
                                           for (int zeros : {1, 2}) {
                                             OpCase c;
                                             c.description = "with " + std::to_string(zeros) + " zero(s)";
                                             std::vector<double> v = {1.5, 0, -2, 0.5, 3, -1};
                                             if (zeros == 2) v[4] = 0;
                                             Tensor x = FromDoubles(DT_DOUBLE, TensorShape({2, 3}), v);
                                             c.inputs = {x, Tensor::FromVector<int32_t>({0, 1})};
                                             c.attrs = {{"keep_dims", MakeAttr(false)}};
                                             c.expected = {Tensor::Scalar<double>(0.0)};
                                             c.check_gradient = true;
                                             c.grad_inputs = {0};
                                             OpCase rows = c;
                                             cases.push_back(std::move(c));
                                             rows.description += " per row";
                                             rows.inputs[1] = Tensor::Scalar<int32_t>(1);
                                             rows.expected = {ReduceReference(x, {1}, false, DT_DOUBLE, 1,
                                                                              [](double a, double b) { return a * b; },
                                                                              [](double a, int64_t) { return a; })};
                                             cases.push_back(std::move(rows));
                                           }
                                         }
                                         return cases;
                                       }});
    const double inf = INFINITY;
    ReduceSpec max{-inf, [](double a, double b) { return std::max(a, b); }};
    ReduceSpec min{inf, [](double a, double b) { return std::min(a, b); }};
    max.avoid_ties = min.avoid_ties = true;
    for (bool is_max : {true, false}) {
      ReduceSpec spec = is_max ? max : min;
      Entries().push_back(OpHarnessEntry{
          is_max ? "Max" : "Min", kArithTypes, [spec, is_max](DataType dtype, Rng* rng) {
            ReduceSpec s = spec;
            if (DataTypeIsInteger(dtype)) {
              // Empty reductions give the lowest / highest value of the type.
              double lowest = 0, highest = 0;
              switch (dtype) {
                case DT_INT8: lowest = -128, highest = 127; break;
                case DT_INT16: lowest = -32768, highest = 32767; break;
                case DT_INT32: lowest = -2147483648.0, highest = 2147483647.0; break;
                case DT_INT64: lowest = -9223372036854775808.0, highest = 9223372036854775807.0; break;
                case DT_UINT8: lowest = 0, highest = 255; break;
                case DT_UINT16: lowest = 0, highest = 65535; break;
                default: break;
              }
              s.init = is_max ? lowest : highest;
            }
            std::vector<OpCase> cases = ReduceCases(dtype, rng, s);
            if (dtype == DT_INT64) {
              // llround of +-2^63 is out of range: drop the empty int64 cases' values.
              for (OpCase& c : cases) {
                if (c.inputs[0].NumElements() == 0 && !c.expected.empty()) c.skip_output = {true};
              }
            }
            if (dtype == DT_DOUBLE) {
              // Ties share the gradient equally (TensorFlow).
              OpCase c;
              c.description = "ties";
              Tensor x = FromDoubles(DT_DOUBLE, TensorShape({2, 3}), {1, 3, 3, is_max ? 2.0 : -2.0, -1, is_max ? 2.0 : -2.0});
              c.inputs = {x, Tensor::Scalar<int32_t>(1)};
              c.attrs = {{"keep_dims", MakeAttr(false)}};
              c.expected = {ReduceReference(x, {1}, false, DT_DOUBLE, s.init, s.fn, s.finish)};
              cases.push_back(std::move(c));
            }
            return cases;
          }});
    }
    Entries().push_back(OpHarnessEntry{"ArgMax", kArithTypes, [](DataType t, Rng* rng) { return ArgCases(t, rng, true); }});
    Entries().push_back(OpHarnessEntry{"ArgMin", kArithTypes, [](DataType t, Rng* rng) { return ArgCases(t, rng, false); }});

    Entries().push_back(OpHarnessEntry{
        "MatMul", {DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}, [](DataType dtype, Rng* rng) {
          std::vector<OpCase> cases;
          std::vector<std::array<int64_t, 3>> dims = {{2, 3, 4}, {1, 1, 1}, {5, 0, 3}, {0, 4, 2}, {7, 9, 5}};
          if (dtype == DT_FLOAT) {
            dims.push_back({130, 70, 90});
            // Narrow products that the float kernel computes as their transpose
            // (with AVX-512's 8 x 32 tiles; matmul_exact_test covers both tile sizes).
            dims.push_back({130, 70, 10});
            dims.push_back({300, 20, 7});
          }
          for (const auto& d : dims) {
            for (int t = 0; t < 4; ++t) {
              const bool ta = t & 1, tb = t & 2;
              OpCase c;
              c.description = "m=" + std::to_string(d[0]) + " k=" + std::to_string(d[1]) + " n=" + std::to_string(d[2]) +
                              (ta ? " ta" : "") + (tb ? " tb" : "");
              TensorShape sa = ta ? TensorShape({d[1], d[0]}) : TensorShape({d[0], d[1]});
              TensorShape sb = tb ? TensorShape({d[2], d[1]}) : TensorShape({d[1], d[2]});
              c.inputs = {RandomTensor(dtype, sa, rng, -3, 3), RandomTensor(dtype, sb, rng, -3, 3)};
              c.attrs = {{"transpose_a", MakeAttr(ta)}, {"transpose_b", MakeAttr(tb)}};
              c.expected = {MatMulReference(c.inputs[0], c.inputs[1], ta, tb)};
              if (IsLowPrecision(dtype)) c.tolerance = 5e-2;
              if (dtype == DT_FLOAT) c.tolerance = 1e-4;
              c.check_gradient = dtype == DT_DOUBLE && d[0] * d[1] * d[2] > 0 && d[0] * d[1] * d[2] < 400;
              cases.push_back(std::move(c));
            }
          }
          cases.push_back(ErrorCase("inner dims differ",
                                    {RandomTensor(dtype, TensorShape({2, 3}), rng), RandomTensor(dtype, TensorShape({4, 2}), rng)},
                                    {}, "inner dimensions differ"));
          // Issue 22, class 1: two empty matrices whose product [2^40, 2^40]
          // has no valid shape.
          cases.push_back(ErrorCase("[2^40,0] x [0,2^40]",
                                    {RandomTensor(dtype, TensorShape({int64_t{1} << 40, 0}), rng),
                                     RandomTensor(dtype, TensorShape({0, int64_t{1} << 40}), rng)},
                                    {}, "2^62"));
          return cases;
        }});
    // _FusedMatMul (the fusion pass's MatMul + BiasAdd [+ Relu]): the float64
    // product, plus the bias per column, then max(0, x) with Relu. Sizes
    // around CpuGemm's tiles and k blocks, so edge tiles and the last block
    // of k carry the epilogue.
    Entries().push_back(OpHarnessEntry{"_FusedMatMul", {DT_FLOAT}, [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      const std::vector<std::array<int64_t, 3>> dims = {{2, 3, 4},  {1, 1, 1},    {7, 9, 5},     {5, 0, 3},
                                                        {0, 4, 2},  {6, 40, 32},  {130, 70, 90}, {13, 300, 37},
                                                        // computed as the transpose with AVX-512's tiles
                                                        {130, 70, 10}};
      auto fused_ops = [](bool relu) {
        return MakeAttr(relu ? std::vector<std::string>{"BiasAdd", "Relu"} : std::vector<std::string>{"BiasAdd"});
      };
      for (const auto& d : dims) {
        for (int t = 0; t < 4; ++t) {
          for (bool relu : {false, true}) {
            const bool ta = t & 1, tb = t & 2;
            OpCase c;
            c.description = "m=" + std::to_string(d[0]) + " k=" + std::to_string(d[1]) + " n=" + std::to_string(d[2]) +
                            (ta ? " ta" : "") + (tb ? " tb" : "") + (relu ? " BiasAdd,Relu" : " BiasAdd");
            TensorShape sa = ta ? TensorShape({d[1], d[0]}) : TensorShape({d[0], d[1]});
            TensorShape sb = tb ? TensorShape({d[2], d[1]}) : TensorShape({d[1], d[2]});
            c.inputs = {RandomTensor(dtype, sa, rng, -3, 3), RandomTensor(dtype, sb, rng, -3, 3),
                        RandomTensor(dtype, TensorShape({d[2]}), rng, -3, 3)};
            c.attrs = {{"transpose_a", MakeAttr(ta)}, {"transpose_b", MakeAttr(tb)}, {"fused_ops", fused_ops(relu)}};
            const Tensor product = MatMulReference(c.inputs[0], c.inputs[1], ta, tb);
            std::vector<double> out = ToDoubles(product);
            const std::vector<double> bias = ToDoubles(c.inputs[2]);
            for (size_t i = 0; i < out.size(); ++i) {
              out[i] += bias[i % bias.size()];
              if (relu) out[i] = std::max(out[i], 0.0);
            }
            c.expected = {FromDoubles(dtype, product.shape(), out)};
            c.tolerance = 1e-4;
            cases.push_back(std::move(c));
          }
        }
      }
      auto make = [&](int64_t bias_size) {
        return std::vector<Tensor>{RandomTensor(dtype, TensorShape({2, 3}), rng),
                                   RandomTensor(dtype, TensorShape({3, 4}), rng),
                                   RandomTensor(dtype, TensorShape({bias_size}), rng)};
      };
      cases.push_back(ErrorCase("bias of the wrong length", make(5), {{"fused_ops", fused_ops(false)}},
                                "per output channel"));
      cases.push_back(ErrorCase("fused_ops [Relu]", make(4),
                                {{"fused_ops", MakeAttr(std::vector<std::string>{"Relu"})}}, "fused_ops must be"));
      cases.push_back(ErrorCase("inner dims differ",
                                {RandomTensor(dtype, TensorShape({2, 3}), rng),
                                 RandomTensor(dtype, TensorShape({4, 2}), rng),
                                 RandomTensor(dtype, TensorShape({2}), rng)},
                                {{"fused_ops", fused_ops(true)}}, "inner dimensions differ"));
      return cases;
    }});
    const std::vector<DataType> bmm_types = {DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64};
    Entries().push_back(
        OpHarnessEntry{"BatchMatMul", bmm_types, [](DataType t, Rng* rng) { return BatchMatMulCases(t, rng, false); }});
    Entries().push_back(
        OpHarnessEntry{"BatchMatMulV2", bmm_types, [](DataType t, Rng* rng) { return BatchMatMulCases(t, rng, true); }});

    Entries().push_back(OpHarnessEntry{"AddN", kArithTypes, [](DataType dtype, Rng* rng) {
                                         std::vector<OpCase> cases;
                                         std::vector<TensorShape> shapes = {TensorShape({}), TensorShape({3}),
                                                                            RandomShape(rng, 2, 1, 4), TensorShape({0, 2})};
                                         if (dtype == DT_FLOAT) shapes.push_back(TensorShape({300, 200}));
                                         for (const TensorShape& shape : shapes) {
                                           for (int n : {1, 2, 3, 5}) {
                                             OpCase c;
                                             c.description = shape.DebugString() + " N=" + std::to_string(n);
                                             std::vector<double> sum(shape.num_elements(), 0.0);
                                             for (int i = 0; i < n; ++i) {
                                               c.inputs.push_back(RandomTensor(dtype, shape, rng, -3, 3));
                                               std::vector<double> v = ToDoubles(c.inputs.back());
                                               for (size_t j = 0; j < v.size(); ++j) sum[j] += v[j];
                                             }
                                             c.expected = {FromDoubles(dtype, shape, sum)};
                                             if (IsLowPrecision(dtype)) c.tolerance = 5e-2;
                                             c.check_gradient = dtype == DT_DOUBLE && shape.num_elements() < 40;
                                             cases.push_back(std::move(c));
                                           }
                                         }
                                         cases.push_back(ErrorCase("shapes differ",
                                                                   {RandomTensor(dtype, TensorShape({2}), rng),
                                                                    RandomTensor(dtype, TensorShape({3}), rng)},
                                                                   {}, "same shape"));
                                         return cases;
                                       }});

    std::vector<DataType> select_types = kArithTypes;
    select_types.push_back(DT_BOOL);
    Entries().push_back(OpHarnessEntry{
        "Select", select_types, [](DataType dtype, Rng* rng) {
          std::vector<OpCase> cases;
          struct Layout {
            TensorShape cond, t;
          };
          std::vector<Layout> layouts = {{TensorShape({2, 3}), TensorShape({2, 3})},
                                         {TensorShape({}), TensorShape({2, 2})},
                                         {TensorShape({3}), TensorShape({3, 2})},
                                         {TensorShape({0, 2}), TensorShape({0, 2})},
                                         {TensorShape({}), TensorShape({})}};
          if (dtype == DT_FLOAT) layouts.push_back({TensorShape({300, 200}), TensorShape({300, 200})});
          for (const Layout& l : layouts) {
            OpCase c;
            c.description = "cond " + l.cond.DebugString() + " t " + l.t.DebugString();
            Tensor cond = RandomTensor(DT_BOOL, l.cond, rng);
            Tensor t = RandomTensor(dtype, l.t, rng), e = RandomTensor(dtype, l.t, rng);
            c.inputs = {cond, t, e};
            std::vector<double> cv = ToDoubles(cond), tv = ToDoubles(t), ev = ToDoubles(e), out(tv.size());
            const int64_t inner = l.t.dims() == 0 || l.t.dim_size(0) == 0 ? 1 : l.t.num_elements() / l.t.dim_size(0);
            for (size_t i = 0; i < out.size(); ++i) {
              const double pick = l.cond == l.t ? cv[i] : (l.cond.dims() == 0 ? cv[0] : cv[i / inner]);
              out[i] = pick != 0 ? tv[i] : ev[i];
            }
            c.expected = {FromDoubles(dtype, l.t, out)};
            c.check_gradient = dtype == DT_DOUBLE && l.t.num_elements() > 0 && l.t.num_elements() < 100;
            cases.push_back(std::move(c));
          }
          cases.push_back(ErrorCase("t and e differ",
                                    {RandomTensor(DT_BOOL, TensorShape({2}), rng), RandomTensor(dtype, TensorShape({2}), rng),
                                     RandomTensor(dtype, TensorShape({3}), rng)},
                                    {}, "same shape"));
          cases.push_back(ErrorCase("bad condition",
                                    {RandomTensor(DT_BOOL, TensorShape({2}), rng), RandomTensor(dtype, TensorShape({3, 2}), rng),
                                     RandomTensor(dtype, TensorShape({3, 2}), rng)},
                                    {}, "condition"));
          return cases;
        }});

    std::vector<DataType> cast_types = kArithTypes;
    cast_types.push_back(DT_BOOL);
    Entries().push_back(OpHarnessEntry{"Cast", cast_types, [cast_types](DataType src, Rng* rng) {
                                         std::vector<OpCase> cases;
                                         for (DataType dst : cast_types) {
                                           for (const TensorShape& shape :
                                                {TensorShape({}), TensorShape({7}), TensorShape({0, 3})}) {
                                             OpCase c;
                                             c.description = "to " + DataTypeString(dst) + " " + shape.DebugString();
                                             const bool unsigned_dst = dst == DT_UINT8 || dst == DT_UINT16;
                                             c.inputs = {RandomTensor(src, shape, rng, unsigned_dst ? 0 : -5, 5)};
                                             c.attrs = {{"DstT", MakeAttr(dst)}};
                                             c.expected = {UnaryReference(dst, c.inputs[0], [dst](double v) {
                                               if (dst == DT_BOOL) return v != 0 ? 1.0 : 0.0;
                                               return DataTypeIsInteger(dst) ? std::trunc(v) : v;
                                             })};
                                             if (IsLowPrecision(dst) || IsLowPrecision(src)) c.tolerance = 2e-2;
                                             c.check_gradient = src == DT_DOUBLE && dst == DT_DOUBLE && shape.num_elements() > 0;
                                             cases.push_back(std::move(c));
                                           }
                                         }
                                         return cases;
                                       }});

    Entries().push_back(OpHarnessEntry{"BroadcastGradientArgs", {DT_INT32, DT_INT64}, [](DataType dtype, Rng*) {
                                         struct Case {
                                           std::vector<double> s0, s1, r0, r1;
                                         };
                                         std::vector<Case> table = {
                                             {{2, 3}, {2, 3}, {}, {}},
                                             {{2, 3}, {3}, {}, {0}},
                                             {{2, 1}, {1, 3}, {1}, {0}},
                                             {{}, {4, 5}, {0, 1}, {}},
                                             {{4, 1, 3}, {2, 1}, {1}, {0, 2}},
                                             {{0, 3}, {1, 3}, {}, {0}},
                                             {{1}, {1}, {0}, {0}},
                                         };
                                         std::vector<OpCase> cases;
                                         for (const Case& t : table) {
                                           auto vec = [&](const std::vector<double>& v) {
                                             return FromDoubles(dtype, TensorShape({static_cast<int64_t>(v.size())}), v);
                                           };
                                           OpCase c;
                                           c.description = vec(t.s0).DebugString() + " vs " + vec(t.s1).DebugString();
                                           c.inputs = {vec(t.s0), vec(t.s1)};
                                           c.expected = {vec(t.r0), vec(t.r1)};
                                           cases.push_back(std::move(c));
                                         }
                                         cases.push_back(ErrorCase("incompatible", {FromDoubles(dtype, TensorShape({1}), {2}),
                                                                                    FromDoubles(dtype, TensorShape({1}), {3})},
                                                                   {}, "broadcast-compatible"));
                                         return cases;
                                       }});
  }
};
Registrations registrations;

// Bad integer inputs: division by zero, negative integer powers.
std::vector<OpCase> IntErrorCases(const std::string& op, DataType dtype, Rng* rng) {
  std::vector<OpCase> cases;
  Tensor x = RandomTensor(dtype, TensorShape({2, 3}), rng, 1, 5);
  std::vector<double> y = {1, 2, 0};
  if (op == "Pow") {
    if (dtype != DT_INT32 && dtype != DT_INT64) return cases;
    y = {1, -1, 2};
    cases.push_back(ErrorCase("negative integer power", {x, FromDoubles(dtype, TensorShape({3}), y)}, {},
                              "negative integer powers"));
    return cases;
  }
  cases.push_back(
      ErrorCase("integer division by zero", {x, FromDoubles(dtype, TensorShape({3}), y)}, {}, "Integer division by zero"));
  const bool mod = op == "FloorMod";
  cases.push_back(ErrorCase("integer division by scalar zero", {x, FromDoubles(dtype, TensorShape({}), {0})}, {},
                            "Integer division by zero"));
  if (dtype == DT_INT32 || dtype == DT_INT64 || dtype == DT_INT8) {
    // The most negative value over -1 wraps (no trap).
    const double lowest = dtype == DT_INT8 ? -128 : (dtype == DT_INT32 ? -2147483648.0 : -9223372036854775808.0);
    if (dtype != DT_INT64) {
      OpCase c;
      c.description = mod ? "lowest % -1" : "lowest / -1";
      c.inputs = {FromDoubles(dtype, TensorShape({2}), {lowest, 7}), FromDoubles(dtype, TensorShape({}), {-1})};
      c.expected = {FromDoubles(dtype, TensorShape({2}), mod ? std::vector<double>{0, 0} : std::vector<double>{lowest, -7})};
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

// Appends the integer error cases to the Div, FloorDiv, FloorMod and Pow entries.
struct IntErrorRegistration {
  IntErrorRegistration() {
    for (OpHarnessEntry& e : Entries()) {
      if (e.op != "Div" && e.op != "FloorDiv" && e.op != "FloorMod" && e.op != "Pow") continue;
      auto base = e.make_cases;
      const std::string op = e.op;
      e.make_cases = [base, op](DataType dtype, Rng* rng) {
        std::vector<OpCase> cases = base(dtype, rng);
        if (DataTypeIsInteger(dtype)) {
          for (OpCase& c : IntErrorCases(op, dtype, rng)) cases.push_back(std::move(c));
        }
        return cases;
      };
    }
  }
};
IntErrorRegistration int_error_registration;

}  // namespace
}  // namespace harness
}  // namespace sluice
