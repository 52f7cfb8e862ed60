// Harness entries for the NN ops (engine/ops/nn_ops.cc): activations (Relu,
// Relu6, LeakyRelu, Elu, Selu, Softplus and their Grad helpers),
// softmax family, cross-entropies, BiasAdd(+Grad), Conv2D and its backprop
// ops and pools (NHWC, and NCHW twins of their value cases), L2Loss, InTopK(V2), TopKV2 and Dropout, each against a float64
// reference with finite-difference gradient checks in float64; and pointers to
// //engine/kernels:training_ops_test for the training ops.
#include <algorithm>
#include <cmath>

#include "engine/kernels/harness/op_harness.h"
#include "engine/kernels/philox_random.h"

namespace sluice {
namespace harness {
namespace {

// ---- Elementwise activations ----

std::vector<OpCase> UnaryCases(DataType dtype, Rng* rng, const std::function<double(double)>& fn, bool grad,
                               double lo = -3, double hi = 3, const AttrList& attrs = {}) {
  std::vector<OpCase> cases;
  for (int rank = 0; rank < 4; ++rank) {
    OpCase c;
    c.inputs = {RandomTensor(dtype, RandomShape(rng, rank, rank == 3 ? 0 : 1, 4), rng, lo, hi)};
    c.attrs = attrs;
    c.description = "shape " + c.inputs[0].shape().DebugString();
    c.expected = {UnaryReference(dtype, c.inputs[0], fn)};
    c.check_gradient = grad && dtype == DT_DOUBLE;
    cases.push_back(std::move(c));
  }
  return cases;
}

// Binary (gradients, forward value) helper ops of the same shape.
std::vector<OpCase> GradHelperCases(DataType dtype, Rng* rng, double lo, const std::function<double(double, double)>& fn,
                                    std::vector<int> grad_inputs, double hi = 3, const AttrList& attrs = {}) {
  std::vector<OpCase> cases;
  for (TensorShape shape : {RandomShape(rng, 2, 1, 4), TensorShape({3}), TensorShape({0, 2})}) {
    OpCase c;
    c.description = "shape " + shape.DebugString();
    c.attrs = attrs;
    c.inputs = {RandomTensor(dtype, shape, rng, -3, 3), RandomTensor(dtype, shape, rng, lo, hi)};
    c.expected = {BroadcastBinaryReference(dtype, c.inputs[0], c.inputs[1], fn)};
    c.check_gradient = dtype == DT_DOUBLE;
    c.grad_inputs = grad_inputs;
    cases.push_back(std::move(c));
  }
  cases.push_back(ErrorCase("shapes differ",
                            {RandomTensor(dtype, TensorShape({2, 3}), rng), RandomTensor(dtype, TensorShape({3, 2}), rng)},
                            attrs, "same shape"));
  return cases;
}

double EluRef(double x) { return x < 0 ? std::expm1(x) : x; }

constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluScaleAlpha = 1.7580993408473768599402175208123;
double SeluRef(double x) { return x < 0 ? kSeluScaleAlpha * std::expm1(x) : kSeluScale * x; }
double SoftplusRef(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }

// LeakyRelu(Grad) cases at the default alpha (attr absent), a small one and
// one above 1.
template <typename F>
std::vector<OpCase> LeakyCases(DataType dtype, Rng* rng, const F& cases_for_alpha) {
  std::vector<OpCase> cases;
  for (double alpha : {-1.0, 0.1, 1.5}) {
    AttrList attrs;
    if (alpha >= 0) attrs["alpha"] = MakeAttr(static_cast<float>(alpha));
    // The attr is a float: the kernel multiplies by float(alpha).
    const double a = alpha >= 0 ? static_cast<double>(static_cast<float>(alpha)) : static_cast<double>(0.2f);
    for (OpCase& c : cases_for_alpha(a, attrs)) {
      c.description += alpha >= 0 ? " alpha " + std::to_string(alpha) : " default alpha";
      cases.push_back(std::move(c));
    }
  }
  (void)dtype;
  (void)rng;
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Relu", RealNumberTypes(), [](DataType dtype, Rng* rng) {
                                     return UnaryCases(dtype, rng, [](double x) { return std::max(x, 0.0); }, true);
                                   }});
REGISTER_OP_HARNESS(OpHarnessEntry{"ReluGrad", RealNumberTypes(), [](DataType dtype, Rng* rng) {
                                     return GradHelperCases(dtype, rng, -3, [](double g, double x) { return x > 0 ? g : 0; },
                                                            {0});
                                   }});
REGISTER_OP_HARNESS(OpHarnessEntry{"Elu", FloatTypes(), [](DataType dtype, Rng* rng) {
                                     return UnaryCases(dtype, rng, EluRef, true);
                                   }});
REGISTER_OP_HARNESS(OpHarnessEntry{
    "EluGrad", FloatTypes(), [](DataType dtype, Rng* rng) {
      return GradHelperCases(dtype, rng, -0.9, [](double g, double y) { return y < 0 ? g * (y + 1) : g; }, {});
    }});

REGISTER_OP_HARNESS(OpHarnessEntry{"Relu6", RealNumberTypes(), [](DataType dtype, Rng* rng) {
                                     return UnaryCases(dtype, rng, [](double x) { return std::min(std::max(x, 0.0), 6.0); },
                                                       true, -3, 9);
                                   }});
REGISTER_OP_HARNESS(OpHarnessEntry{"Relu6Grad", RealNumberTypes(), [](DataType dtype, Rng* rng) {
                                     return GradHelperCases(
                                         dtype, rng, -3, [](double g, double x) { return x > 0 && x < 6 ? g : 0; }, {}, 9);
                                   }});
REGISTER_OP_HARNESS(OpHarnessEntry{"LeakyRelu", FloatTypes(), [](DataType dtype, Rng* rng) {
                                     return LeakyCases(dtype, rng, [&](double a, const AttrList& attrs) {
                                       return UnaryCases(dtype, rng, [a](double x) { return x > 0 ? x : a * x; }, true,
                                                         -3, 3, attrs);
                                     });
                                   }});
REGISTER_OP_HARNESS(OpHarnessEntry{"LeakyReluGrad", FloatTypes(), [](DataType dtype, Rng* rng) {
                                     return LeakyCases(dtype, rng, [&](double a, const AttrList& attrs) {
                                       return GradHelperCases(
                                           dtype, rng, -3, [a](double g, double x) { return x > 0 ? g : a * g; }, {}, 3,
                                           attrs);
                                     });
                                   }});
REGISTER_OP_HARNESS(OpHarnessEntry{"Selu", FloatTypes(), [](DataType dtype, Rng* rng) {
                                     return UnaryCases(dtype, rng, SeluRef, true);
                                   }});
// outputs of Selu lie above -scale * alpha.
REGISTER_OP_HARNESS(OpHarnessEntry{"SeluGrad", FloatTypes(), [](DataType dtype, Rng* rng) {
                                     return GradHelperCases(
                                         dtype, rng, -1.7,
                                         [](double g, double y) { return y < 0 ? g * (y + kSeluScaleAlpha) : g * kSeluScale; },
                                         {});
                                   }});
REGISTER_OP_HARNESS(OpHarnessEntry{"Softplus", FloatTypes(), [](DataType dtype, Rng* rng) {
                                     std::vector<OpCase> cases = UnaryCases(dtype, rng, SoftplusRef, true);
                                     // Far tails: no overflow of exp, exact to the dtype.
                                     OpCase c;
                                     c.description = "tails";
                                     c.inputs = {FromDoubles(dtype, TensorShape({6}), {-100, -30, -10, 10, 30, 100})};
                                     c.expected = {UnaryReference(dtype, c.inputs[0], SoftplusRef)};
                                     c.check_gradient = dtype == DT_DOUBLE;
                                     cases.push_back(std::move(c));
                                     return cases;
                                   }});
REGISTER_OP_HARNESS(OpHarnessEntry{"SoftplusGrad", FloatTypes(), [](DataType dtype, Rng* rng) {
                                     return GradHelperCases(
                                         dtype, rng, -3, [](double g, double x) { return g / (1 + std::exp(-x)); }, {});
                                   }});

REGISTER_OP_HARNESS(OpHarnessEntry{"Softsign", FloatTypes(), [](DataType dtype, Rng* rng) {
                                     return UnaryCases(dtype, rng, [](double x) { return x / (1 + std::abs(x)); },
                                                       true);
                                   }});
REGISTER_OP_HARNESS(OpHarnessEntry{"SoftsignGrad", FloatTypes(), [](DataType dtype, Rng* rng) {
                                     return GradHelperCases(
                                         dtype, rng, -3,
                                         [](double g, double x) { return g / ((1 + std::abs(x)) * (1 + std::abs(x))); },
                                         {});
                                   }});

// ---- TopKV2 ----

// Per row: indices ordered by value (descending), then index (ascending).
std::vector<OpCase> TopKCases(DataType dtype, Rng* rng) {
  struct Spec {
    TensorShape shape;
    int64_t k;
    DataType k_type, index_type;
  };
  std::vector<Spec> specs = {{TensorShape({5}), 2, DT_INT32, DT_INT32},      {TensorShape({3, 4}), 4, DT_INT64, DT_INT32},
                             {TensorShape({2, 3, 5}), 1, DT_INT32, DT_INT64}, {TensorShape({3, 0}), 0, DT_INT32, DT_INT32},
                             {TensorShape({4, 6}), 0, DT_INT16, DT_INT16},    {TensorShape({2, 7}), 3, DT_INT16, DT_INT16},
                             {TensorShape({0, 3}), 2, DT_INT32, DT_INT32}};
  if (dtype == DT_FLOAT) specs.push_back({TensorShape({300, 200}), 10, DT_INT32, DT_INT32});
  auto scalar = [](DataType t, int64_t v) {
    return t == DT_INT16 ? Tensor::Scalar<int16_t>(static_cast<int16_t>(v))
                         : t == DT_INT64 ? Tensor::Scalar<int64_t>(v) : Tensor::Scalar<int32_t>(static_cast<int32_t>(v));
  };
  std::vector<OpCase> cases;
  for (const Spec& s : specs) {
    OpCase c;
    c.description = s.shape.DebugString() + " k=" + std::to_string(s.k) + " " + DataTypeString(s.index_type) + " indices";
    // Few distinct values (except in float64, whose gradient check needs no ties).
    Tensor x = dtype == DT_DOUBLE ? RandomTensor(dtype, s.shape, rng, -3, 3) : RandomTensor(dtype, s.shape, rng, -2, 2);
    c.inputs = {x, scalar(s.k_type, s.k)};
    c.attrs = {{"index_type", MakeAttr(s.index_type)}};
    const int64_t n = s.shape.dim_size(s.shape.dims() - 1);
    const int64_t rows = n == 0 ? 0 : x.NumElements() / n;
    std::vector<double> v = ToDoubles(x), values, indices;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> order(n);
      for (int64_t i = 0; i < n; ++i) order[i] = i;
      const double* row = v.data() + r * n;
      std::stable_sort(order.begin(), order.end(), [row](int64_t a, int64_t b) { return row[a] > row[b]; });
      for (int64_t j = 0; j < s.k; ++j) {
        values.push_back(row[order[j]]);
        indices.push_back(static_cast<double>(order[j]));
      }
    }
    std::vector<int64_t> dims(s.shape.dim_sizes().begin(), s.shape.dim_sizes().end());
    dims.back() = s.k;
    c.expected = {FromDoubles(dtype, TensorShape(dims), values), FromDoubles(s.index_type, TensorShape(dims), indices)};
    c.check_gradient = dtype == DT_DOUBLE && s.k > 0 && x.NumElements() > 0;
    c.grad_inputs = {0};
    cases.push_back(std::move(c));
  }
  if (DataTypeIsFloating(dtype)) {  // NaN counts as the largest value
    OpCase c;
    c.description = "NaN";
    c.inputs = {FromDoubles(dtype, TensorShape({4}), {1, NAN, 2, 2}), scalar(DT_INT32, 3)};
    c.expected = {FromDoubles(dtype, TensorShape({3}), {NAN, 2, 2}), FromDoubles(DT_INT32, TensorShape({3}), {1, 2, 3})};
    cases.push_back(std::move(c));
  }
  Tensor x = RandomTensor(dtype, TensorShape({2, 3}), rng);
  cases.push_back(ErrorCase("k > n", {x, scalar(DT_INT32, 4)}, {}, "entries in its last dimension"));
  cases.push_back(ErrorCase("negative k", {x, scalar(DT_INT64, -1)}, {}, "non-negative"));
  cases.push_back(ErrorCase("scalar input", {RandomTensor(dtype, TensorShape({}), rng), scalar(DT_INT32, 0)}, {}, "rank >= 1"));
  cases.push_back(ErrorCase("k vector", {x, Tensor::FromVector<int32_t>({1, 2})}, {}, "scalar"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"TopKV2", RealNumberTypes(), TopKCases});

// ---- Softmax family ----

// Row-wise over the last dimension.
Tensor SoftmaxReference(const Tensor& x, bool log) {
  std::vector<double> v = ToDoubles(x);
  const int64_t depth = x.dim_size(x.dims() - 1);
  for (int64_t r = 0; depth > 0 && r < x.NumElements() / depth; ++r) {
    double* row = v.data() + r * depth;
    double mx = *std::max_element(row, row + depth), sum = 0;
    for (int64_t j = 0; j < depth; ++j) sum += std::exp(row[j] - mx);
    for (int64_t j = 0; j < depth; ++j) row[j] = log ? row[j] - mx - std::log(sum) : std::exp(row[j] - mx) / sum;
  }
  return FromDoubles(x.dtype(), x.shape(), v);
}

std::vector<OpCase> SoftmaxCases(DataType dtype, Rng* rng, bool log) {
  std::vector<OpCase> cases;
  for (TensorShape shape : {TensorShape({5}), RandomShape(rng, 2, 1, 5), RandomShape(rng, 3, 1, 4), TensorShape({0, 3}),
                            TensorShape({2, 0})}) {
    OpCase c;
    c.description = "shape " + shape.DebugString();
    c.inputs = {RandomTensor(dtype, shape, rng, -4, 4)};
    c.expected = {SoftmaxReference(c.inputs[0], log)};
    c.check_gradient = dtype == DT_DOUBLE;
    cases.push_back(std::move(c));
  }
  OpCase big;  // large logits: must not overflow
  big.description = "large logits";
  big.inputs = {FromDoubles(dtype, TensorShape({1, 3}), {1000, 1001, 999})};
  if (dtype == DT_HALF) big.inputs = {FromDoubles(dtype, TensorShape({1, 3}), {60000, 60001, 59999})};
  big.expected = {SoftmaxReference(big.inputs[0], log)};
  if (dtype == DT_HALF || dtype == DT_BFLOAT16) big.tolerance = 0.05;
  cases.push_back(std::move(big));
  cases.push_back(ErrorCase("scalar logits", {RandomTensor(dtype, TensorShape({}), rng)}, {}, "rank >= 1"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Softmax", FloatTypes(),
                                   [](DataType dtype, Rng* rng) { return SoftmaxCases(dtype, rng, false); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"LogSoftmax", FloatTypes(),
                                   [](DataType dtype, Rng* rng) { return SoftmaxCases(dtype, rng, true); }});

// (loss, backprop) for logits and dense labels.
std::vector<Tensor> XentReference(const Tensor& logits, const std::vector<double>& labels) {
  const int64_t batch = logits.dim_size(0), depth = logits.dim_size(1);
  std::vector<double> lp =
      ToDoubles(SoftmaxReference(FromDoubles(DT_DOUBLE, logits.shape(), ToDoubles(logits)), true));
  std::vector<double> loss(batch, 0.0), backprop(batch * depth);
  for (int64_t r = 0; r < batch; ++r) {
    for (int64_t j = 0; j < depth; ++j) {
      loss[r] -= labels[r * depth + j] * lp[r * depth + j];
      backprop[r * depth + j] = std::exp(lp[r * depth + j]) - labels[r * depth + j];
    }
  }
  return {FromDoubles(logits.dtype(), TensorShape({batch}), loss), FromDoubles(logits.dtype(), logits.shape(), backprop)};
}

// Rows of random probabilities.
Tensor RandomDistribution(DataType dtype, const TensorShape& shape, Rng* rng) {
  std::vector<double> v = ToDoubles(RandomTensor(DT_DOUBLE, shape, rng, 0.05, 1));
  const int64_t depth = shape.dim_size(1);
  for (int64_t r = 0; r < shape.dim_size(0); ++r) {
    double sum = 0;
    for (int64_t j = 0; j < depth; ++j) sum += v[r * depth + j];
    for (int64_t j = 0; j < depth; ++j) v[r * depth + j] /= sum;
  }
  return FromDoubles(dtype, shape, v);
}

REGISTER_OP_HARNESS(OpHarnessEntry{
    "SoftmaxCrossEntropyWithLogits", FloatTypes(), [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      for (TensorShape shape : {TensorShape({1, 1}), RandomShape(rng, 2, 1, 5), TensorShape({4, 3}), TensorShape({0, 3})}) {
        OpCase c;
        c.description = "shape " + shape.DebugString();
        c.inputs = {RandomTensor(dtype, shape, rng, -4, 4), RandomDistribution(dtype, shape, rng)};
        c.expected = XentReference(c.inputs[0], ToDoubles(c.inputs[1]));
        if (dtype == DT_HALF || dtype == DT_BFLOAT16) c.tolerance = 0.05;
        c.check_gradient = dtype == DT_DOUBLE && shape.num_elements() > 0;
        cases.push_back(std::move(c));
      }
      cases.push_back(ErrorCase("mismatched shapes",
                                {RandomTensor(dtype, TensorShape({2, 3}), rng), RandomTensor(dtype, TensorShape({2, 4}), rng)},
                                {}, "same size"));
      cases.push_back(ErrorCase("1-D logits",
                                {RandomTensor(dtype, TensorShape({3}), rng), RandomTensor(dtype, TensorShape({3}), rng)}, {},
                                "2"));
      return cases;
    }});

REGISTER_OP_HARNESS(OpHarnessEntry{
    "SparseSoftmaxCrossEntropyWithLogits", FloatTypes(), [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      for (DataType label_type : {DT_INT32, DT_INT64}) {
        for (TensorShape shape : {RandomShape(rng, 2, 1, 5), TensorShape({4, 3}), TensorShape({0, 3})}) {
          const int64_t batch = shape.dim_size(0), depth = shape.dim_size(1);
          OpCase c;
          c.description = "shape " + shape.DebugString() + " labels " + DataTypeString(label_type);
          Tensor labels = RandomTensor(label_type, TensorShape({batch}), rng, 0, depth - 1);
          std::vector<double> l = ToDoubles(labels), dense(batch * depth, 0.0);
          for (int64_t r = 0; r < batch; ++r) dense[r * depth + static_cast<int64_t>(l[r])] = 1;
          c.inputs = {RandomTensor(dtype, shape, rng, -4, 4), labels};
          c.expected = XentReference(c.inputs[0], dense);
          if (dtype == DT_HALF || dtype == DT_BFLOAT16) c.tolerance = 0.05;
          c.check_gradient = dtype == DT_DOUBLE && batch > 0;
          c.grad_inputs = {0};
          cases.push_back(std::move(c));
        }
        cases.push_back(ErrorCase("label out of range",
                                  {RandomTensor(dtype, TensorShape({2, 3}), rng),
                                   FromDoubles(label_type, TensorShape({2}), {1, 3})},
                                  {}, "outside the valid range"));
        cases.push_back(ErrorCase("negative label",
                                  {RandomTensor(dtype, TensorShape({2, 3}), rng),
                                   FromDoubles(label_type, TensorShape({2}), {-1, 0})},
                                  {}, "outside the valid range"));
        cases.push_back(ErrorCase("batch mismatch",
                                  {RandomTensor(dtype, TensorShape({2, 3}), rng),
                                   FromDoubles(label_type, TensorShape({3}), {0, 1, 2})},
                                  {}, "same first dimension"));
      }
      return cases;
    }});

// ---- BiasAdd ----

// value + bias along the channel dimension (last, or 1 for NCHW).
Tensor BiasAddReference(const Tensor& x, const Tensor& bias, bool nchw) {
  std::vector<double> v = ToDoubles(x), b = ToDoubles(bias);
  const int cdim = nchw ? 1 : x.dims() - 1;
  int64_t inner = 1;
  for (int d = cdim + 1; d < x.dims(); ++d) inner *= x.dim_size(d);
  const int64_t c = x.dim_size(cdim);
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) v[i] += b[(i / inner) % c];
  return FromDoubles(x.dtype(), x.shape(), v);
}

Tensor BiasAddGradReference(const Tensor& dy, bool nchw) {
  std::vector<double> v = ToDoubles(dy);
  const int cdim = nchw ? 1 : dy.dims() - 1;
  int64_t inner = 1;
  for (int d = cdim + 1; d < dy.dims(); ++d) inner *= dy.dim_size(d);
  const int64_t c = dy.dim_size(cdim);
  std::vector<double> out(c, 0.0);
  for (int64_t i = 0; c > 0 && i < static_cast<int64_t>(v.size()); ++i) out[(i / inner) % c] += v[i];
  return FromDoubles(dy.dtype(), TensorShape({c}), out);
}

std::vector<std::pair<TensorShape, bool>> BiasShapes(Rng* rng) {
  return {{RandomShape(rng, 2, 1, 5), false}, {TensorShape({2, 3, 4, 5}), false}, {TensorShape({0, 3}), false},
          {TensorShape({2, 3, 4}), true},     {TensorShape({2, 3, 2, 2}), true},   {TensorShape({3, 0}), false}};
}

AttrList Format(bool nchw) { return {{"data_format", MakeAttr(nchw ? "NCHW" : "NHWC")}}; }

REGISTER_OP_HARNESS(OpHarnessEntry{
    "BiasAdd", RealNumberTypes(), [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      for (const auto& [shape, nchw] : BiasShapes(rng)) {
        OpCase c;
        c.description = "shape " + shape.DebugString() + (nchw ? " NCHW" : " NHWC");
        c.inputs = {RandomTensor(dtype, shape, rng, -5, 5),
                    RandomTensor(dtype, TensorShape({shape.dim_size(nchw ? 1 : shape.dims() - 1)}), rng, -5, 5)};
        c.attrs = Format(nchw);
        c.expected = {BiasAddReference(c.inputs[0], c.inputs[1], nchw)};
        c.check_gradient = dtype == DT_DOUBLE;
        cases.push_back(std::move(c));
      }
      cases.push_back(ErrorCase("bias size differs from channels",
                                {RandomTensor(dtype, TensorShape({2, 3}), rng), RandomTensor(dtype, TensorShape({4}), rng)},
                                {}, "as many biases"));
      cases.push_back(ErrorCase("1-D value",
                                {RandomTensor(dtype, TensorShape({3}), rng), RandomTensor(dtype, TensorShape({3}), rng)},
                                {}, "at least 2-D"));
      return cases;
    }});

REGISTER_OP_HARNESS(OpHarnessEntry{
    "BiasAddGrad", RealNumberTypes(), [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      for (const auto& [shape, nchw] : BiasShapes(rng)) {
        OpCase c;
        c.description = "shape " + shape.DebugString() + (nchw ? " NCHW" : " NHWC");
        c.inputs = {RandomTensor(dtype, shape, rng, -5, 5)};
        c.attrs = Format(nchw);
        c.expected = {BiasAddGradReference(c.inputs[0], nchw)};
        if (dtype == DT_HALF || dtype == DT_BFLOAT16) c.tolerance = 0.05;
        c.check_gradient = dtype == DT_DOUBLE;
        cases.push_back(std::move(c));
      }
      cases.push_back(ErrorCase("1-D input", {RandomTensor(dtype, TensorShape({3}), rng)}, {}, "at least 2-D"));
      return cases;
    }});

// DataFormatVecPermute: y[i] = x[src.find(dst[i])] (rows of a [4, 2] matrix).
REGISTER_OP_HARNESS(OpHarnessEntry{
    "DataFormatVecPermute", {DT_INT32, DT_INT64}, [](DataType dtype, Rng* rng) {
      auto ints = [dtype](std::vector<double> v, TensorShape shape) { return FromDoubles(dtype, shape, v); };
      auto formats = [](const char* src, const char* dst) {
        return AttrList{{"src_format", MakeAttr(src)}, {"dst_format", MakeAttr(dst)}};
      };
      const TensorShape four({4}), pairs({4, 2});
      std::vector<OpCase> cases;
      OpCase c;
      c.description = "NHWC to NCHW";
      c.inputs = {ints({8, 28, 27, 3}, four)};
      c.attrs = formats("NHWC", "NCHW");
      c.expected = {ints({8, 3, 28, 27}, four)};
      cases.push_back(c);
      c.description = "NCHW to NHWC";
      c.inputs = {ints({8, 3, 28, 27}, four)};
      c.attrs = formats("NCHW", "NHWC");
      c.expected = {ints({8, 28, 27, 3}, four)};
      cases.push_back(c);
      c.description = "paddings [4, 2]";
      c.inputs = {ints({0, 1, 2, 3, 4, 5, 6, 7}, pairs)};
      c.attrs = formats("NHWC", "NCHW");
      c.expected = {ints({0, 1, 6, 7, 2, 3, 4, 5}, pairs)};
      cases.push_back(c);
      c.description = "spatial dims only";
      c.inputs = {ints({5, 9}, TensorShape({2}))};
      c.attrs = formats("NHWC", "NCHW");
      c.expected = {ints({5, 9}, TensorShape({2}))};
      cases.push_back(c);
      c.description = "same format";
      c.inputs = {RandomTensor(dtype, four, rng, 0, 100)};
      c.attrs = formats("NCHW", "NCHW");
      c.expected = {c.inputs[0]};
      cases.push_back(c);
      cases.push_back(ErrorCase("3 entries", {ints({1, 2, 3}, TensorShape({3}))}, formats("NHWC", "NCHW"),
                                "vector of 4 or 2 entries"));
      cases.push_back(ErrorCase("format HWNC", {ints({1, 2, 3, 4}, four)}, formats("HWNC", "NCHW"),
                                "NHWC or NCHW"));
      return cases;
    }});

// ---- NCHW twins (the layout pass, engine/graph/optimizer_layout.h) ----

// [N, H, W, C] -> [N, C, H, W], values unchanged.
Tensor NhwcToNchw(const Tensor& t) {
  const int64_t n = t.dim_size(0), h = t.dim_size(1), w = t.dim_size(2), c = t.dim_size(3);
  std::vector<double> in = ToDoubles(t), out(in.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch) out[((b * c + ch) * h + y) * w + x] = in[((b * h + y) * w + x) * c + ch];
  return FromDoubles(t.dtype(), TensorShape({n, c, h, w}), out);
}

std::vector<int64_t> NhwcToNchwList(const std::vector<int64_t>& v) { return {v[0], v[3], v[1], v[2]}; }

// Where an op's cases hold 4-D tensors in the node's format.
struct FormatPorts {
  std::vector<int> data_inputs, shape_inputs, outputs;
};

// The value cases of `cases` again with data_format NCHW: 4-D inputs and
// expected outputs transposed, shape vectors and strides/ksize rearranged.
// The op's kernels take NHWC, so these run through the layout pass, as a
// TensorFlow graph written for a GPU does; gradient checks included.
void AddNchwTwins(const FormatPorts& ports, std::vector<OpCase>* cases) {
  const size_t n = cases->size();
  for (size_t k = 0; k < n; ++k) {
    if ((*cases)[k].expected_error != absl::StatusCode::kOk) continue;
    OpCase c = (*cases)[k];
    c.description += " NCHW";
    for (int i : ports.data_inputs) c.inputs[i] = NhwcToNchw(c.inputs[i]);
    for (int i : ports.shape_inputs) {
      const int32_t* d = c.inputs[i].data<int32_t>();
      c.inputs[i] = Tensor::FromVector<int32_t>({d[0], d[3], d[1], d[2]});
    }
    for (int o : ports.outputs) c.expected[o] = NhwcToNchw(c.expected[o]);
    for (const char* name : {"strides", "ksize"}) {
      auto it = c.attrs.find(name);
      if (it == c.attrs.end()) continue;
      std::vector<int64_t> v(it->second.list().i().begin(), it->second.list().i().end());
      it->second = MakeAttr(NhwcToNchwList(v));
    }
    c.attrs["data_format"] = MakeAttr("NCHW");
    cases->push_back(std::move(c));
  }
}

// ---- Convolution ----

struct Window1D {
  int64_t out = 0, pad = 0;
};
Window1D Win(int64_t in, int64_t k, int64_t s, bool same) {
  Window1D w;
  if (same) {
    w.out = (in + s - 1) / s;
    w.pad = std::max<int64_t>(0, (w.out - 1) * s + k - in) / 2;
  } else {
    w.out = (in - k + s) / s;
  }
  return w;
}

struct ConvSpec {
  TensorShape input, filter;
  int64_t sh, sw;
  bool same;
};

AttrList ConvAttrs(const ConvSpec& s) {
  return {{"strides", MakeAttr(std::vector<int64_t>{1, s.sh, s.sw, 1})}, {"padding", MakeAttr(s.same ? "SAME" : "VALID")}};
}

TensorShape ConvOutShape(const ConvSpec& s) {
  Window1D r = Win(s.input.dim_size(1), s.filter.dim_size(0), s.sh, s.same);
  Window1D c = Win(s.input.dim_size(2), s.filter.dim_size(1), s.sw, s.same);
  return TensorShape({s.input.dim_size(0), r.out, c.out, s.filter.dim_size(3)});
}

// Calls fn(input_index, filter_index, output_index) for every product term.
void ForEachConvTerm(const ConvSpec& s, const std::function<void(int64_t, int64_t, int64_t)>& fn) {
  const int64_t n = s.input.dim_size(0), h = s.input.dim_size(1), w = s.input.dim_size(2), c = s.input.dim_size(3);
  const int64_t kh = s.filter.dim_size(0), kw = s.filter.dim_size(1), o = s.filter.dim_size(3);
  Window1D r = Win(h, kh, s.sh, s.same), q = Win(w, kw, s.sw, s.same);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oh = 0; oh < r.out; ++oh)
      for (int64_t ow = 0; ow < q.out; ++ow)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t ih = oh * s.sh - r.pad + i, iw = ow * s.sw - q.pad + j;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            for (int64_t ci = 0; ci < c; ++ci)
              for (int64_t co = 0; co < o; ++co) {
                fn(((b * h + ih) * w + iw) * c + ci, ((i * kw + j) * c + ci) * o + co,
                   ((b * r.out + oh) * q.out + ow) * o + co);
              }
          }
}

std::vector<ConvSpec> ConvSpecs(Rng* rng, bool small) {
  std::vector<ConvSpec> specs = {
      {TensorShape({1, 4, 4, 2}), TensorShape({2, 2, 2, 3}), 1, 1, false},
      {TensorShape({2, 5, 4, 2}), TensorShape({3, 3, 2, 2}), 1, 1, true},
      {TensorShape({1, 5, 5, 1}), TensorShape({3, 2, 1, 2}), 2, 2, true},
      {TensorShape({2, 6, 5, 2}), TensorShape({2, 3, 2, 1}), 2, 1, false},
      {TensorShape({2, 3, 3, 3}), TensorShape({1, 1, 3, 2}), 1, 1, false},  // pointwise
      {TensorShape({1, 2, 2, 1}), TensorShape({4, 4, 1, 1}), 1, 1, true},   // window larger than input (SAME)
      // Issue 22, class 11: a SAME window far wider than the input. Only the
      // taps that meet the input are kept (a 3x4 block of the 11x13 filter),
      // so the patches stay the size of the input, not 11*13 per pixel.
      {TensorShape({2, 3, 2, 2}), TensorShape({11, 13, 2, 3}), 1, 1, true},
      {TensorShape({1, 4, 3, 1}), TensorShape({9, 7, 1, 2}), 2, 1, true},
  };
  if (!small) {
    specs.push_back({TensorShape({3, 9, 8, 4}), TensorShape({5, 5, 4, 6}), 1, 1, true});
    // Large enough that the float32 kernels split the work into several
    // pieces per thread and (filter gradient) several pieces per group.
    specs.push_back({TensorShape({12, 16, 16, 32}), TensorShape({5, 5, 32, 8}), 1, 1, true});
    specs.push_back({TensorShape({4, 13, 11, 6}), TensorShape({3, 4, 6, 20}), 2, 2, true});
    // One input channel, 32 filters (the CNN's first layer): the float32
    // filter gradient takes its patches^T x dy form.
    specs.push_back({TensorShape({3, 10, 9, 1}), TensorShape({5, 5, 1, 32}), 1, 1, true});
    // 5x5 at stride 1 with 16 or more channels: the Winograd kernels' shapes
    // (winograd_conv.h), with odd sizes (partial 2x2 blocks at the edges),
    // channels that are not a multiple of the vector width, and VALID.
    specs.push_back({TensorShape({2, 9, 7, 16}), TensorShape({5, 5, 16, 20}), 1, 1, true});
    specs.push_back({TensorShape({1, 8, 11, 24}), TensorShape({5, 5, 24, 16}), 1, 1, false});
    // And 3x3 (F(4x4, 3x3)): partial 4x4 blocks (SAME 9x7: 1 row, 3 columns;
    // VALID 8x11 -> 6x9: 2 rows, 1 column).
    specs.push_back({TensorShape({2, 9, 7, 16}), TensorShape({3, 3, 16, 20}), 1, 1, true});
    specs.push_back({TensorShape({1, 8, 11, 24}), TensorShape({3, 3, 24, 16}), 1, 1, false});
    specs.push_back({TensorShape({0, 4, 4, 2}), TensorShape({2, 2, 2, 3}), 1, 1, true});  // empty batch
    specs.push_back({TensorShape({2, 4, 4, 0}), TensorShape({2, 2, 0, 3}), 1, 1, true});  // no input channels
    TensorShape in = RandomShape(rng, 4, 1, 6);
    specs.push_back({in, TensorShape({2, 2, in.dim_size(3), 2}), 1, 2, true});
  }
  return specs;
}

// float32 sums of n products of inputs in [-2, 2] drift by about sqrt(n)
// roundings of the running sum: widen the default 1e-5 for long sums (the
// large specs sum up to 3,072 products per output).
double ConvTolerance(DataType dtype, int64_t products_per_output) {
  if (dtype != DT_FLOAT) return 0;  // the dtype's default
  return 1e-5 * std::max(1.0, std::sqrt(static_cast<double>(products_per_output)) / 4);
}

std::string ConvDescription(const ConvSpec& s) {
  return "input " + s.input.DebugString() + " filter " + s.filter.DebugString() + " strides " +
         std::to_string(s.sh) + "," + std::to_string(s.sw) + (s.same ? " SAME" : " VALID");
}

Tensor ShapeTensor(const TensorShape& shape) {
  std::vector<int32_t> dims;
  for (int64_t d : shape.dim_sizes()) dims.push_back(static_cast<int32_t>(d));
  return Tensor::FromVector<int32_t>(dims);
}

// Bad-input cases shared by the conv ops; `make` builds the op's inputs for a
// (input, filter) pair.
std::vector<OpCase> ConvErrorCases(DataType dtype, Rng* rng,
                                   const std::function<std::vector<Tensor>(const ConvSpec&)>& make) {
  std::vector<OpCase> cases;
  ConvSpec ok{TensorShape({1, 4, 4, 2}), TensorShape({2, 2, 2, 3}), 1, 1, false};
  AttrList zero_stride = {{"strides", MakeAttr(std::vector<int64_t>{1, 0, 1, 1})}, {"padding", MakeAttr("VALID")}};
  cases.push_back(ErrorCase("stride 0", make(ok), zero_stride, "must be positive"));
  AttrList dilated = ConvAttrs(ok);
  dilated["dilations"] = MakeAttr(std::vector<int64_t>{1, 2, 2, 1});
  cases.push_back(ErrorCase("dilation 2", make(ok), dilated, "dilations"));
  AttrList nwhc = ConvAttrs(ok);
  nwhc["data_format"] = MakeAttr("NWHC");
  cases.push_back(ErrorCase("data_format NWHC", make(ok), nwhc, "NHWC or NCHW"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{
    "Conv2D", {DT_FLOAT, DT_DOUBLE}, [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      for (const ConvSpec& s : ConvSpecs(rng, false)) {
        OpCase c;
        c.description = ConvDescription(s);
        c.inputs = {RandomTensor(dtype, s.input, rng, -2, 2), RandomTensor(dtype, s.filter, rng, -2, 2)};
        c.attrs = ConvAttrs(s);
        std::vector<double> x = ToDoubles(c.inputs[0]), f = ToDoubles(c.inputs[1]);
        TensorShape out_shape = ConvOutShape(s);
        std::vector<double> out(out_shape.num_elements(), 0.0);
        ForEachConvTerm(s, [&](int64_t i, int64_t k, int64_t o) { out[o] += x[i] * f[k]; });
        c.expected = {FromDoubles(dtype, out_shape, out)};
        c.check_gradient = dtype == DT_DOUBLE && s.input.num_elements() <= 48 && out_shape.num_elements() > 0;
        c.tolerance = ConvTolerance(dtype, s.filter.num_elements() / std::max<int64_t>(1, s.filter.dim_size(3)));
        cases.push_back(std::move(c));
      }
      auto make = [&](const ConvSpec& s) {
        return std::vector<Tensor>{RandomTensor(dtype, s.input, rng), RandomTensor(dtype, s.filter, rng)};
      };
      AddNchwTwins(FormatPorts{{0}, {}, {0}}, &cases);
      for (OpCase& c : ConvErrorCases(dtype, rng, make)) cases.push_back(std::move(c));
      ConvSpec big{TensorShape({1, 3, 3, 1}), TensorShape({4, 4, 1, 1}), 1, 1, false};
      cases.push_back(ErrorCase("VALID window larger than input", make(big), ConvAttrs(big), "larger than the input"));
      // Issue 22, class 1: empty input and filter whose output [2^40,1,1,2^40]
      // has no valid shape (batch and out_depth come from different inputs).
      ConvSpec empty{TensorShape({int64_t{1} << 40, 1, 1, 0}), TensorShape({1, 1, 0, int64_t{1} << 40}), 1, 1, true};
      cases.push_back(ErrorCase("empty input and filter, output shape overflows", make(empty), ConvAttrs(empty), "2^62"));
      ConvSpec depth{TensorShape({1, 3, 3, 2}), TensorShape({2, 2, 3, 1}), 1, 1, false};
      cases.push_back(ErrorCase("mismatched channels", make(depth), ConvAttrs(depth), "depth"));
      cases.push_back(ErrorCase("3-D input",
                                {RandomTensor(dtype, TensorShape({3, 3, 1}), rng),
                                 RandomTensor(dtype, TensorShape({2, 2, 1, 1}), rng)},
                                ConvAttrs(depth), "4"));
      return cases;
    }});

// _FusedConv2D (the fusion pass's Conv2D + BiasAdd [+ Relu]): the float64
// convolution plus the bias per output channel, then max(0, x) with Relu;
// every Conv2D spec (pointwise, im2col, empty batch, no input channels).
REGISTER_OP_HARNESS(OpHarnessEntry{
    "_FusedConv2D", {DT_FLOAT}, [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      auto with_fused_ops = [](AttrList attrs, bool relu) {
        attrs["fused_ops"] =
            MakeAttr(relu ? std::vector<std::string>{"BiasAdd", "Relu"} : std::vector<std::string>{"BiasAdd"});
        return attrs;
      };
      for (const ConvSpec& s : ConvSpecs(rng, false)) {
        for (bool relu : {false, true}) {
          OpCase c;
          c.description = ConvDescription(s) + (relu ? " BiasAdd,Relu" : " BiasAdd");
          const int64_t channels = s.filter.dim_size(3);
          c.inputs = {RandomTensor(dtype, s.input, rng, -2, 2), RandomTensor(dtype, s.filter, rng, -2, 2),
                      RandomTensor(dtype, TensorShape({channels}), rng, -2, 2)};
          c.attrs = with_fused_ops(ConvAttrs(s), relu);
          std::vector<double> x = ToDoubles(c.inputs[0]), f = ToDoubles(c.inputs[1]), bias = ToDoubles(c.inputs[2]);
          TensorShape out_shape = ConvOutShape(s);
          std::vector<double> out(out_shape.num_elements(), 0.0);
          ForEachConvTerm(s, [&](int64_t i, int64_t k, int64_t o) { out[o] += x[i] * f[k]; });
          for (size_t o = 0; o < out.size(); ++o) {
            out[o] += bias[o % channels];
            if (relu) out[o] = std::max(out[o], 0.0);
          }
          c.expected = {FromDoubles(dtype, out_shape, out)};
          c.tolerance = ConvTolerance(dtype, s.filter.num_elements() / std::max<int64_t>(1, channels));
          cases.push_back(std::move(c));
        }
      }
      ConvSpec ok{TensorShape({1, 4, 4, 2}), TensorShape({2, 2, 2, 3}), 1, 1, false};
      auto make = [&](int64_t bias_size) {
        return std::vector<Tensor>{RandomTensor(dtype, ok.input, rng), RandomTensor(dtype, ok.filter, rng),
                                   RandomTensor(dtype, TensorShape({bias_size}), rng)};
      };
      cases.push_back(ErrorCase("bias of the wrong length", make(2), with_fused_ops(ConvAttrs(ok), true),
                                "per output channel"));
      AttrList relu_only = ConvAttrs(ok);
      relu_only["fused_ops"] = MakeAttr(std::vector<std::string>{"Relu"});
      cases.push_back(ErrorCase("fused_ops [Relu]", make(3), relu_only, "fused_ops must be"));
      AttrList nchw = with_fused_ops(ConvAttrs(ok), false);
      nchw["data_format"] = MakeAttr("NCHW");
      cases.push_back(ErrorCase("NCHW", make(3), nchw, "NHWC"));
      return cases;
    }});

REGISTER_OP_HARNESS(OpHarnessEntry{
    "Conv2DBackpropInput", {DT_FLOAT, DT_DOUBLE}, [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      for (const ConvSpec& s : ConvSpecs(rng, false)) {
        OpCase c;
        c.description = ConvDescription(s);
        TensorShape out_shape = ConvOutShape(s);
        c.inputs = {ShapeTensor(s.input), RandomTensor(dtype, s.filter, rng, -2, 2),
                    RandomTensor(dtype, out_shape, rng, -2, 2)};
        c.attrs = ConvAttrs(s);
        std::vector<double> f = ToDoubles(c.inputs[1]), dy = ToDoubles(c.inputs[2]);
        std::vector<double> dx(s.input.num_elements(), 0.0);
        ForEachConvTerm(s, [&](int64_t i, int64_t k, int64_t o) { dx[i] += dy[o] * f[k]; });
        c.expected = {FromDoubles(dtype, s.input, dx)};
        c.check_gradient = dtype == DT_DOUBLE && s.input.num_elements() <= 48 && out_shape.num_elements() > 0;
        c.tolerance = ConvTolerance(dtype, s.filter.dim_size(0) * s.filter.dim_size(1) * s.filter.dim_size(3));
        cases.push_back(std::move(c));
      }
      auto make = [&](const ConvSpec& s) {
        return std::vector<Tensor>{ShapeTensor(s.input), RandomTensor(dtype, s.filter, rng),
                                   RandomTensor(dtype, ConvOutShape(s), rng)};
      };
      AddNchwTwins(FormatPorts{{2}, {0}, {0}}, &cases);
      for (OpCase& c : ConvErrorCases(dtype, rng, make)) cases.push_back(std::move(c));
      ConvSpec ok{TensorShape({1, 4, 4, 2}), TensorShape({2, 2, 2, 3}), 1, 1, false};
      cases.push_back(ErrorCase("out_backprop of the wrong shape",
                                {ShapeTensor(ok.input), RandomTensor(dtype, ok.filter, rng),
                                 RandomTensor(dtype, TensorShape({1, 4, 4, 3}), rng)},
                                ConvAttrs(ok), "out_backprop"));
      cases.push_back(ErrorCase("negative input size",
                                {Tensor::FromVector<int32_t>({1, -4, 4, 2}), RandomTensor(dtype, ok.filter, rng),
                                 RandomTensor(dtype, TensorShape({1, 3, 3, 3}), rng)},
                                ConvAttrs(ok), "negative"));
      return cases;
    }});

REGISTER_OP_HARNESS(OpHarnessEntry{
    "Conv2DBackpropFilter", {DT_FLOAT, DT_DOUBLE}, [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      for (const ConvSpec& s : ConvSpecs(rng, false)) {
        OpCase c;
        c.description = ConvDescription(s);
        TensorShape out_shape = ConvOutShape(s);
        c.inputs = {RandomTensor(dtype, s.input, rng, -2, 2), ShapeTensor(s.filter),
                    RandomTensor(dtype, out_shape, rng, -2, 2)};
        c.attrs = ConvAttrs(s);
        std::vector<double> x = ToDoubles(c.inputs[0]), dy = ToDoubles(c.inputs[2]);
        std::vector<double> dw(s.filter.num_elements(), 0.0);
        ForEachConvTerm(s, [&](int64_t i, int64_t k, int64_t o) { dw[k] += x[i] * dy[o]; });
        c.expected = {FromDoubles(dtype, s.filter, dw)};
        c.check_gradient = dtype == DT_DOUBLE && s.input.num_elements() <= 48 && out_shape.num_elements() > 0;
        c.tolerance = ConvTolerance(dtype, out_shape.num_elements() / std::max<int64_t>(1, out_shape.dim_size(3)));
        cases.push_back(std::move(c));
      }
      auto make = [&](const ConvSpec& s) {
        return std::vector<Tensor>{RandomTensor(dtype, s.input, rng), ShapeTensor(s.filter),
                                   RandomTensor(dtype, ConvOutShape(s), rng)};
      };
      AddNchwTwins(FormatPorts{{0, 2}, {}, {}}, &cases);
      for (OpCase& c : ConvErrorCases(dtype, rng, make)) cases.push_back(std::move(c));
      ConvSpec depth{TensorShape({1, 3, 3, 2}), TensorShape({2, 2, 3, 1}), 1, 1, false};
      cases.push_back(ErrorCase("mismatched channels",
                                {RandomTensor(dtype, depth.input, rng), ShapeTensor(depth.filter),
                                 RandomTensor(dtype, TensorShape({1, 2, 2, 1}), rng)},
                                ConvAttrs(depth), "depth"));
      return cases;
    }});

// ---- Pooling ----

struct PoolSpec {
  TensorShape input;
  int64_t kh, kw, sh, sw;
  bool same;
};

AttrList PoolAttrs(const PoolSpec& s) {
  return {{"ksize", MakeAttr(std::vector<int64_t>{1, s.kh, s.kw, 1})},
          {"strides", MakeAttr(std::vector<int64_t>{1, s.sh, s.sw, 1})},
          {"padding", MakeAttr(s.same ? "SAME" : "VALID")}};
}

TensorShape PoolOutShape(const PoolSpec& s) {
  return TensorShape({s.input.dim_size(0), Win(s.input.dim_size(1), s.kh, s.sh, s.same).out,
                      Win(s.input.dim_size(2), s.kw, s.sw, s.same).out, s.input.dim_size(3)});
}

// Calls fn(output_index, input indices of the window, in row-major order).
void ForEachPoolWindow(const PoolSpec& s, const std::function<void(int64_t, const std::vector<int64_t>&)>& fn) {
  const int64_t n = s.input.dim_size(0), h = s.input.dim_size(1), w = s.input.dim_size(2), c = s.input.dim_size(3);
  Window1D r = Win(h, s.kh, s.sh, s.same), q = Win(w, s.kw, s.sw, s.same);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oh = 0; oh < r.out; ++oh)
      for (int64_t ow = 0; ow < q.out; ++ow)
        for (int64_t ch = 0; ch < c; ++ch) {
          std::vector<int64_t> window;
          for (int64_t i = 0; i < s.kh; ++i)
            for (int64_t j = 0; j < s.kw; ++j) {
              const int64_t ih = oh * s.sh - r.pad + i, iw = ow * s.sw - q.pad + j;
              if (ih >= 0 && ih < h && iw >= 0 && iw < w) window.push_back(((b * h + ih) * w + iw) * c + ch);
            }
          fn(((b * r.out + oh) * q.out + ow) * c + ch, window);
        }
}

std::vector<PoolSpec> PoolSpecs(Rng* rng) {
  TensorShape random = RandomShape(rng, 4, 1, 5);
  return {
      {TensorShape({1, 4, 4, 2}), 2, 2, 2, 2, false}, {TensorShape({2, 5, 5, 3}), 2, 2, 2, 2, true},
      {TensorShape({1, 5, 4, 1}), 3, 3, 1, 1, true},  {TensorShape({2, 6, 5, 2}), 3, 2, 2, 1, false},
      {TensorShape({1, 2, 3, 2}), 4, 4, 1, 2, true},  {TensorShape({0, 4, 4, 2}), 2, 2, 2, 2, true},
      {random, 2, 1, 1, 2, true},
      // Tiling windows with padding before (MaxPoolGrad writes dx once), and
      // stride == size windows that leave the last row and column uncovered.
      {TensorShape({2, 7, 7, 3}), 3, 3, 3, 3, true}, {TensorShape({1, 5, 5, 2}), 2, 2, 2, 2, false},
      // Stride beyond the window: positions no window covers.
      {TensorShape({1, 8, 7, 3}), 2, 2, 3, 3, false},
      // More channels than a vector holds, not a multiple of one (whole and
      // partial vectors of the float kernel).
      {TensorShape({2, 6, 6, 37}), 2, 2, 2, 2, false}, {TensorShape({1, 5, 5, 20}), 3, 3, 2, 2, true},
      {TensorShape({1, 4, 4, 100}), 2, 2, 2, 2, false}, {TensorShape({1, 5, 5, 88}), 3, 3, 2, 2, true},
  };
}

std::string PoolDescription(const PoolSpec& s) {
  return "input " + s.input.DebugString() + " ksize " + std::to_string(s.kh) + "x" + std::to_string(s.kw) +
         " strides " + std::to_string(s.sh) + "," + std::to_string(s.sw) + (s.same ? " SAME" : " VALID");
}

std::vector<OpCase> PoolErrorCases(DataType dtype, Rng* rng, const std::function<std::vector<Tensor>(const PoolSpec&)>& make) {
  std::vector<OpCase> cases;
  PoolSpec ok{TensorShape({1, 4, 4, 2}), 2, 2, 2, 2, false};
  AttrList zero_stride = PoolAttrs(ok);
  zero_stride["strides"] = MakeAttr(std::vector<int64_t>{1, 0, 2, 1});
  cases.push_back(ErrorCase("stride 0", make(ok), zero_stride, "must be positive"));
  AttrList zero_ksize = PoolAttrs(ok);
  zero_ksize["ksize"] = MakeAttr(std::vector<int64_t>{1, 2, 0, 1});
  cases.push_back(ErrorCase("ksize 0", make(ok), zero_ksize, "must be positive"));
  AttrList depth_window = PoolAttrs(ok);
  depth_window["ksize"] = MakeAttr(std::vector<int64_t>{1, 2, 2, 2});
  cases.push_back(ErrorCase("window over depth", make(ok), depth_window, "batch and depth"));
  return cases;
}

std::vector<double> PoolForward(const PoolSpec& s, const std::vector<double>& x, bool max) {
  std::vector<double> out(PoolOutShape(s).num_elements());
  ForEachPoolWindow(s, [&](int64_t o, const std::vector<int64_t>& window) {
    double acc = max ? -INFINITY : 0;
    for (int64_t i : window) acc = max ? std::max(acc, x[i]) : acc + x[i];
    out[o] = max ? acc : acc / window.size();
  });
  return out;
}

std::vector<OpCase> PoolCases(DataType dtype, Rng* rng, bool max) {
  std::vector<OpCase> cases;
  for (const PoolSpec& s : PoolSpecs(rng)) {
    OpCase c;
    c.description = PoolDescription(s);
    c.inputs = {RandomTensor(dtype, s.input, rng, -5, 5)};
    c.attrs = PoolAttrs(s);
    c.expected = {FromDoubles(dtype, PoolOutShape(s), PoolForward(s, ToDoubles(c.inputs[0]), max))};
    c.check_gradient = dtype == DT_DOUBLE && s.input.num_elements() > 0;
    cases.push_back(std::move(c));
  }
  AddNchwTwins(FormatPorts{{0}, {}, {0}}, &cases);
  auto make = [&](const PoolSpec& s) { return std::vector<Tensor>{RandomTensor(dtype, s.input, rng)}; };
  for (OpCase& c : PoolErrorCases(dtype, rng, make)) cases.push_back(std::move(c));
  PoolSpec big{TensorShape({1, 3, 3, 1}), 4, 4, 1, 1, false};
  cases.push_back(ErrorCase("VALID window larger than input", make(big), PoolAttrs(big), "larger than the input"));
  cases.push_back(ErrorCase("3-D input", {RandomTensor(dtype, TensorShape({3, 3, 1}), rng)}, PoolAttrs(big), "4"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"MaxPool", RealNumberTypes(),
                                   [](DataType dtype, Rng* rng) { return PoolCases(dtype, rng, true); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"AvgPool", FloatTypes(),
                                   [](DataType dtype, Rng* rng) { return PoolCases(dtype, rng, false); }});

// A value case of MaxPoolGrad (each window's gradient to its first maximal
// element), or with `fused` of _FusedMaxPoolGrad (the fusion pass's
// MaxPoolGrad + ReluGrad + BiasAddGrad: only where that element is > 0, and
// the per-channel sum of the result as output 1).
OpCase MaxPoolGradCase(DataType dtype, const PoolSpec& s, Rng* rng, bool fused) {
  OpCase c;
  c.description = PoolDescription(s);
  Tensor x = RandomTensor(dtype, s.input, rng, -5, 5);
  std::vector<double> xv = ToDoubles(x);
  TensorShape out_shape = PoolOutShape(s);
  Tensor y = FromDoubles(dtype, out_shape, PoolForward(s, xv, true));
  Tensor dy = RandomTensor(dtype, out_shape, rng, -5, 5);
  std::vector<double> g = ToDoubles(dy), dx(s.input.num_elements(), 0.0);
  ForEachPoolWindow(s, [&](int64_t o, const std::vector<int64_t>& window) {
    int64_t best = window[0];
    for (int64_t i : window) best = xv[i] > xv[best] ? i : best;
    if (!fused || xv[best] > 0) dx[best] += g[o];
  });
  c.inputs = {x, y, dy};
  c.attrs = PoolAttrs(s);
  c.expected = {FromDoubles(dtype, s.input, dx)};
  if (fused) {
    const int64_t channels = s.input.dim_size(3);
    std::vector<double> bias(channels, 0.0);
    for (size_t i = 0; i < dx.size(); ++i) bias[i % channels] += dx[i];
    c.expected.push_back(FromDoubles(dtype, TensorShape({channels}), bias));
  }
  if (dtype == DT_HALF || dtype == DT_BFLOAT16) c.tolerance = 0.05;
  return c;
}

std::vector<OpCase> MaxPoolGradCases(DataType dtype, Rng* rng, bool fused) {
  std::vector<OpCase> cases;
  for (const PoolSpec& s : PoolSpecs(rng)) cases.push_back(MaxPoolGradCase(dtype, s, rng, fused));
  // _FusedMaxPoolGrad is the fusion pass's op, made from NHWC nodes only.
  if (!fused) AddNchwTwins(FormatPorts{{0, 1, 2}, {}, {0}}, &cases);
  auto make = [&](const PoolSpec& s) {
    TensorShape out_shape = PoolOutShape(s);
    return std::vector<Tensor>{RandomTensor(dtype, s.input, rng), RandomTensor(dtype, out_shape, rng),
                               RandomTensor(dtype, out_shape, rng)};
  };
  for (OpCase& c : PoolErrorCases(dtype, rng, make)) cases.push_back(std::move(c));
  PoolSpec ok{TensorShape({1, 4, 4, 2}), 2, 2, 2, 2, false};
  cases.push_back(ErrorCase("grad of the wrong shape",
                            {RandomTensor(dtype, ok.input, rng), RandomTensor(dtype, TensorShape({1, 2, 2, 2}), rng),
                             RandomTensor(dtype, TensorShape({1, 3, 2, 2}), rng)},
                            PoolAttrs(ok), "pooled shape"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"MaxPoolGrad", RealNumberTypes(),
                                   [](DataType dtype, Rng* rng) { return MaxPoolGradCases(dtype, rng, false); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"_FusedMaxPoolGrad", {DT_FLOAT},
                                   [](DataType dtype, Rng* rng) { return MaxPoolGradCases(dtype, rng, true); }});

REGISTER_OP_HARNESS(OpHarnessEntry{
    "AvgPoolGrad", FloatTypes(), [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      for (const PoolSpec& s : PoolSpecs(rng)) {
        OpCase c;
        c.description = PoolDescription(s);
        TensorShape out_shape = PoolOutShape(s);
        Tensor dy = RandomTensor(dtype, out_shape, rng, -5, 5);
        std::vector<double> g = ToDoubles(dy), dx(s.input.num_elements(), 0.0);
        ForEachPoolWindow(s, [&](int64_t o, const std::vector<int64_t>& window) {
          for (int64_t i : window) dx[i] += g[o] / window.size();
        });
        c.inputs = {ShapeTensor(s.input), dy};
        c.attrs = PoolAttrs(s);
        c.expected = {FromDoubles(dtype, s.input, dx)};
        c.check_gradient = dtype == DT_DOUBLE && s.input.num_elements() > 0;
        cases.push_back(std::move(c));
      }
      AddNchwTwins(FormatPorts{{1}, {0}, {0}}, &cases);
      auto make = [&](const PoolSpec& s) {
        return std::vector<Tensor>{ShapeTensor(s.input), RandomTensor(dtype, PoolOutShape(s), rng)};
      };
      for (OpCase& c : PoolErrorCases(dtype, rng, make)) cases.push_back(std::move(c));
      PoolSpec ok{TensorShape({1, 4, 4, 2}), 2, 2, 2, 2, false};
      cases.push_back(ErrorCase("grad of the wrong shape",
                                {ShapeTensor(ok.input), RandomTensor(dtype, TensorShape({1, 3, 2, 2}), rng)},
                                PoolAttrs(ok), "pooled shape"));
      return cases;
    }});

// ---- L2Loss, InTopK ----

REGISTER_OP_HARNESS(OpHarnessEntry{"L2Loss", FloatTypes(), [](DataType dtype, Rng* rng) {
                                     std::vector<OpCase> cases;
                                     for (int rank = 0; rank < 4; ++rank) {
                                       OpCase c;
                                       c.inputs = {RandomTensor(dtype, RandomShape(rng, rank, rank == 3 ? 0 : 1, 4), rng)};
                                       c.description = "shape " + c.inputs[0].shape().DebugString();
                                       double sum = 0;
                                       for (double v : ToDoubles(c.inputs[0])) sum += v * v / 2;
                                       c.expected = {FromDoubles(dtype, TensorShape({}), {sum})};
                                       if (dtype == DT_HALF || dtype == DT_BFLOAT16) c.tolerance = 0.05;
                                       c.check_gradient = dtype == DT_DOUBLE;
                                       cases.push_back(std::move(c));
                                     }
                                     return cases;
                                   }});

std::vector<OpCase> InTopKCases(DataType dtype, Rng* rng, bool v2) {
  std::vector<OpCase> cases;
  // Row 1 ties with the target: ties count in. Row 2 has a NaN: false. Row 3's
  // target is out of range: false.
  Tensor predictions =
      FromDoubles(DT_FLOAT, TensorShape({4, 4}), {0.1, 0.5, 0.3, 0.2, 0.4, 0.4, 0.4, 0.1, NAN, 0.1, 0.9, 0.2, 1, 2, 3, 4});
  Tensor targets = FromDoubles(dtype, TensorShape({4}), {2, 0, 2, 7});
  for (int64_t k : {0, 1, 2, 3, 4}) {
    OpCase c;
    c.description = "k=" + std::to_string(k);
    std::vector<double> expected = {k >= 2 ? 1.0 : 0.0, k >= 1 ? 1.0 : 0.0, 0, 0};
    if (v2) {
      c.inputs = {predictions, targets, FromDoubles(dtype, TensorShape({}), {static_cast<double>(k)})};
    } else {
      c.inputs = {predictions, targets};
      c.attrs = {{"k", MakeAttr(k)}};
    }
    c.expected = {FromDoubles(DT_BOOL, TensorShape({4}), expected)};
    cases.push_back(std::move(c));
  }
  // Random rows against a sort-based reference.
  Tensor p = RandomTensor(DT_FLOAT, TensorShape({6, 5}), rng, -3, 3);
  Tensor t = RandomTensor(dtype, TensorShape({6}), rng, 0, 4);
  std::vector<double> pv = ToDoubles(p), tv = ToDoubles(t), expected(6);
  for (int r = 0; r < 6; ++r) {
    int more = 0;
    for (int j = 0; j < 5; ++j) more += pv[r * 5 + j] > pv[r * 5 + static_cast<int>(tv[r])];
    expected[r] = more < 3;
  }
  OpCase c;
  c.description = "random k=3";
  c.inputs = v2 ? std::vector<Tensor>{p, t, FromDoubles(dtype, TensorShape({}), {3})} : std::vector<Tensor>{p, t};
  if (!v2) c.attrs = {{"k", MakeAttr(int64_t{3})}};
  c.expected = {FromDoubles(DT_BOOL, TensorShape({6}), expected)};
  cases.push_back(std::move(c));
  std::vector<Tensor> bad = {p, RandomTensor(dtype, TensorShape({5}), rng, 0, 4)};
  if (v2) bad.push_back(FromDoubles(dtype, TensorShape({}), {1}));
  cases.push_back(ErrorCase("batch mismatch", bad, v2 ? AttrList{} : AttrList{{"k", MakeAttr(int64_t{1})}},
                            "same batch size"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"InTopK", {DT_INT32, DT_INT64},
                                   [](DataType dtype, Rng* rng) { return InTopKCases(dtype, rng, false); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"InTopKV2", {DT_INT32, DT_INT64},
                                   [](DataType dtype, Rng* rng) { return InTopKCases(dtype, rng, true); }});

// ---- Dropout ----

REGISTER_OP_HARNESS(OpHarnessEntry{
    "Dropout", FloatTypes(), [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      const AttrList seeds = {{"seed", MakeAttr(int64_t{7})}, {"seed2", MakeAttr(int64_t{3})}};
      for (double rate : {0.0, 0.25, 0.5, 0.9}) {
        // 2000 and 1001: whole 64-element vector groups, then leftover blocks and a partial block.
        for (TensorShape shape : {TensorShape({4, 5}), TensorShape({0, 3}), TensorShape({2000}), TensorShape({1001})}) {
          OpCase c;
          c.description = "rate " + std::to_string(rate) + " shape " + shape.DebugString();
          Tensor x = RandomTensor(dtype, shape, rng, 0.5, 3);  // nonzero, so dropped values are visible
          c.inputs = {x, FromDoubles(dtype, TensorShape({}), {rate}), Tensor::Scalar<int64_t>(11)};
          c.attrs = seeds;
          c.expected = {x, x};
          c.skip_output = {true, true};
          const bool big = shape.num_elements() >= 1000;
          // The rate as the kernel reads it (rounded to dtype).
          const double dtype_rate = ToDoubles(c.inputs[1])[0];
          c.check = [x, rate, big, dtype, dtype_rate](const std::vector<Tensor>& out) -> absl::Status {
            std::vector<double> xv = ToDoubles(x), y = ToDoubles(out[0]), m = ToDoubles(out[1]);
            // The mask is the documented stream: element i keeps when the
            // uniform from word i % 4 of Philox block i / 4 (key of seeds 7
            // and 3, counter run 11) is >= rate.
            const philox::Key key = philox::KeyFromSeeds(7, 3);
            for (size_t i = 0; i < m.size(); ++i) {
              const double u = philox::ToFloat(philox::Generate(key, i / 4, 11)[i % 4]);
              if (m[i] != (u >= dtype_rate ? 1.0 : 0.0)) {
                return absl::InternalError("mask differs from the Philox stream at " + std::to_string(i));
              }
            }
            const double tol = (dtype == DT_HALF || dtype == DT_BFLOAT16) ? 2e-2 : 1e-6;
            double kept = 0;
            for (size_t i = 0; i < xv.size(); ++i) {
              if (m[i] != 0 && m[i] != 1) return absl::InternalError("mask value is not 0 or 1");
              const double want = xv[i] * m[i] / (1 - rate);
              if (std::abs(y[i] - want) > tol * std::max(1.0, std::abs(want))) {
                return absl::InternalError("output != x * mask / (1 - rate) at " + std::to_string(i));
              }
              kept += m[i];
            }
            if (rate == 0 && kept != xv.size()) return absl::InternalError("rate 0 dropped values");
            if (big) {  // keep fraction within 5 sigma of 1 - rate
              const double n = xv.size(), p = 1 - rate;
              if (std::abs(kept / n - p) > 5 * std::sqrt(p * (1 - p) / n) + 1e-9) {
                return absl::InternalError("kept fraction " + std::to_string(kept / n) + " for rate " +
                                           std::to_string(rate));
              }
            }
            return absl::OkStatus();
          };
          c.check_gradient = dtype == DT_DOUBLE && shape.num_elements() > 0 && !big;
          c.grad_inputs = {0};
          cases.push_back(std::move(c));
        }
      }
      const Tensor step = Tensor::Scalar<int64_t>(0);
      cases.push_back(ErrorCase("rate 1",
                                {RandomTensor(dtype, TensorShape({3}), rng), FromDoubles(dtype, TensorShape({}), {1}), step},
                                seeds, "rate must be in [0, 1)"));
      cases.push_back(ErrorCase(
          "negative rate", {RandomTensor(dtype, TensorShape({3}), rng), FromDoubles(dtype, TensorShape({}), {-0.5}), step},
          seeds, "rate must be in [0, 1)"));
      cases.push_back(ErrorCase(
          "vector rate", {RandomTensor(dtype, TensorShape({3}), rng), RandomTensor(dtype, TensorShape({2}), rng), step},
          seeds, "scalar"));
      cases.push_back(ErrorCase("vector step",
                                {RandomTensor(dtype, TensorShape({3}), rng), FromDoubles(dtype, TensorShape({}), {0.5}),
                                 Tensor::FromVector<int64_t>({1, 2})},
                                seeds, "scalar"));
      return cases;
    }});

// ---- Training ops: they mutate variables through refs ----

#define SLUICE_TRAINING_ENTRY_(OP) \
  REGISTER_OP_HARNESS(OpHarnessEntry{OP, {}, nullptr, "//engine/kernels:training_ops_test"})
SLUICE_TRAINING_ENTRY_("ApplyGradientDescent");
SLUICE_TRAINING_ENTRY_("ApplyMomentum");
SLUICE_TRAINING_ENTRY_("ApplyAdagrad");
SLUICE_TRAINING_ENTRY_("ApplyRMSProp");
SLUICE_TRAINING_ENTRY_("ApplyAdam");
SLUICE_TRAINING_ENTRY_("ApplyFtrl");
SLUICE_TRAINING_ENTRY_("ApplyFtrlV2");
SLUICE_TRAINING_ENTRY_("SparseApplyMomentum");
SLUICE_TRAINING_ENTRY_("SparseApplyAdagrad");
SLUICE_TRAINING_ENTRY_("SparseApplyFtrl");
SLUICE_TRAINING_ENTRY_("SparseApplyFtrlV2");
SLUICE_TRAINING_ENTRY_("ScatterAdd");
SLUICE_TRAINING_ENTRY_("ScatterSub");
SLUICE_TRAINING_ENTRY_("ScatterUpdate");
#undef SLUICE_TRAINING_ENTRY_

}  // namespace
}  // namespace harness
}  // namespace sluice
