// Harness entries for the random ops (engine/ops/random_ops.cc),
// RandomUniformInt included. Their values
// are not functions of the inputs, so the cases skip the value comparison
// and check properties instead: shape and dtype, range, moments within 5
// sigma, determinism (two nodes with the same nonzero (seed, seed2) give the
// same values, different seeds give different ones; cases run in order, so a
// later case compares against an earlier one's output), and for RandomShuffle
// that the output is a permutation of the input's rows.
#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

AttrList Seeds(int64_t seed, int64_t seed2, DataType dtype) {
  return {{"seed", MakeAttr(seed)}, {"seed2", MakeAttr(seed2)}, {"dtype", MakeAttr(dtype)}};
}

Tensor ShapeInput(DataType index_type, const std::vector<double>& dims) {
  return FromDoubles(index_type, TensorShape({static_cast<int64_t>(dims.size())}), dims);
}

enum class Kind { kUniform, kNormal, kTruncated };

// Checks range and the first two moments of `t`.
absl::Status CheckDistribution(const Tensor& t, Kind kind) {
  std::vector<double> v = ToDoubles(t);
  double sum = 0, sq = 0;
  for (double x : v) {
    if (!std::isfinite(x)) return absl::InternalError("non-finite value");
    if (kind == Kind::kUniform && (x < 0 || x >= 1)) return absl::InternalError(absl::StrCat("uniform value ", x));
    if (kind == Kind::kTruncated && std::abs(x) >= 2) return absl::InternalError(absl::StrCat("truncated value ", x));
    sum += x;
  }
  const double n = v.size();
  if (n < 1000) return absl::OkStatus();
  const double mean = sum / n;
  for (double x : v) sq += (x - mean) * (x - mean);
  const double var = sq / n;
  // Expected mean and variance; the standard deviations of the estimates.
  double want_mean = 0, want_var = 1, sd_mean, sd_var;
  if (kind == Kind::kUniform) {
    want_mean = 0.5;
    want_var = 1.0 / 12;
    sd_var = std::sqrt((1.0 / 80 - want_var * want_var) / n);
  } else if (kind == Kind::kNormal) {
    sd_var = std::sqrt(2.0 / n);
  } else {
    want_var = 0.773741;  // variance of N(0,1) truncated to (-2, 2)
    sd_var = std::sqrt(2.0 / n);
  }
  sd_mean = std::sqrt(want_var / n);
  if (std::abs(mean - want_mean) > 5 * sd_mean + 1e-3) {
    return absl::InternalError(absl::StrCat("mean ", mean, ", expected ", want_mean));
  }
  if (std::abs(var - want_var) > 5 * sd_var + 1e-2) {
    return absl::InternalError(absl::StrCat("variance ", var, ", expected ", want_var));
  }
  return absl::OkStatus();
}

bool SameValues(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && ToDoubles(a) == ToDoubles(b);
}

std::vector<OpCase> RandomCases(DataType dtype, Rng* rng, Kind kind) {
  std::vector<OpCase> cases;
  for (DataType index_type : {DT_INT32, DT_INT64}) {
    for (const std::vector<double>& dims : std::vector<std::vector<double>>{{}, {7}, {3, 0}, {20, 30, 17}}) {
      OpCase c;
      c.description = absl::StrCat("shape of ", dims.size(), " dims, ", DataTypeString(index_type));
      c.inputs = {ShapeInput(index_type, dims)};
      c.attrs = Seeds(11, 5, dtype);
      std::vector<int64_t> d(dims.begin(), dims.end());
      c.expected = {Tensor(dtype, TensorShape(d))};
      c.skip_output = {true};
      TensorShape shape(d);
      c.check = [kind, shape, dtype](const std::vector<Tensor>& out) -> absl::Status {
        if (out[0].dtype() != dtype || out[0].shape() != shape) {
          return absl::InternalError("wrong dtype or shape: " + out[0].DebugString(3));
        }
        return CheckDistribution(out[0], kind);
      };
      cases.push_back(std::move(c));
    }
  }
  // Determinism: equal nonzero seeds agree, different seeds (either one)
  // differ, (0, 0) differs from run to run.
  auto first = std::make_shared<Tensor>();
  auto prev = std::make_shared<Tensor>();
  struct SeedCase {
    int64_t seed, seed2;
    bool same_as_first;
  };
  for (const SeedCase& s : {SeedCase{3, 4, true}, SeedCase{3, 4, true}, SeedCase{3, 5, false},
                            SeedCase{4, 4, false}, SeedCase{0, 0, false}, SeedCase{0, 0, false}}) {
    OpCase c;
    c.description = absl::StrCat("seeds (", s.seed, ", ", s.seed2, ") determinism");
    c.inputs = {ShapeInput(DT_INT32, {64})};
    c.attrs = Seeds(s.seed, s.seed2, dtype);
    c.expected = {Tensor(dtype, TensorShape({64}))};
    c.skip_output = {true};
    c.check = [first, prev, s, kind](const std::vector<Tensor>& out) -> absl::Status {
      absl::Status d = CheckDistribution(out[0], kind);
      if (!d.ok()) return d;
      const Tensor previous = *prev;
      *prev = out[0];
      if (first->dtype() == DT_INVALID) {
        *first = out[0];
        return absl::OkStatus();
      }
      if (SameValues(out[0], *first) != s.same_as_first) {
        return absl::InternalError(s.same_as_first ? "equal seeds gave different values"
                                                   : "different seeds gave equal values");
      }
      // Two unseeded nodes in a row must differ too.
      if (s.seed == 0 && s.seed2 == 0 && SameValues(out[0], previous)) {
        return absl::InternalError("seed = seed2 = 0 gave the same values twice");
      }
      return absl::OkStatus();
    };
    cases.push_back(std::move(c));
  }
  cases.push_back(ErrorCase("negative dimension", {ShapeInput(DT_INT32, {2, -1})}, Seeds(1, 1, dtype),
                            "negative dimension"));
  cases.push_back(ErrorCase("matrix shape", {FromDoubles(DT_INT32, TensorShape({1, 2}), {2, 2})}, Seeds(1, 1, dtype),
                            "vector"));
  (void)rng;
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"RandomUniform", FloatTypes(),
                                   [](DataType dtype, Rng* rng) { return RandomCases(dtype, rng, Kind::kUniform); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"RandomStandardNormal", FloatTypes(),
                                   [](DataType dtype, Rng* rng) { return RandomCases(dtype, rng, Kind::kNormal); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"TruncatedNormal", FloatTypes(),
                                   [](DataType dtype, Rng* rng) { return RandomCases(dtype, rng, Kind::kTruncated); }});

// RandomUniformInt: values in [lo, hi) that cover a small range, seeded
// determinism, the whole int range, and bad bounds (an empty output takes
// any bounds).
std::vector<OpCase> RandomUniformIntCases(DataType dtype, Rng*) {
  auto bound = [dtype](double v) { return FromDoubles(dtype, TensorShape({}), {v}); };
  auto seeds = [](int64_t seed, int64_t seed2) {
    return AttrList{{"seed", MakeAttr(seed)}, {"seed2", MakeAttr(seed2)}};
  };
  std::vector<OpCase> cases;
  struct Spec {
    std::vector<double> dims;
    double lo, hi;
  };
  for (const Spec& spec : {Spec{{}, -3, 4}, Spec{{7}, 0, 1}, Spec{{3, 0}, 5, 5}, Spec{{40, 50}, -5, 5},
                           Spec{{1000}, 100, 1000000}}) {
    for (DataType index_type : {DT_INT32, DT_INT64}) {
      OpCase c;
      c.description = absl::StrCat(spec.dims.size(), " dims in [", spec.lo, ", ", spec.hi, ") ",
                                   DataTypeString(index_type), " shape");
      c.inputs = {ShapeInput(index_type, spec.dims), bound(spec.lo), bound(spec.hi)};
      c.attrs = seeds(11, 5);
      std::vector<int64_t> d(spec.dims.begin(), spec.dims.end());
      c.expected = {Tensor(dtype, TensorShape(d))};
      c.skip_output = {true};
      TensorShape shape(d);
      c.check = [spec, shape, dtype](const std::vector<Tensor>& out) -> absl::Status {
        if (out[0].dtype() != dtype || out[0].shape() != shape) return absl::InternalError("wrong dtype or shape");
        std::vector<double> v = ToDoubles(out[0]);
        std::vector<bool> seen(spec.hi - spec.lo < 20 ? static_cast<size_t>(spec.hi - spec.lo) : 0, false);
        for (double x : v) {
          if (x < spec.lo || x >= spec.hi) return absl::InternalError(absl::StrCat("value ", x, " out of range"));
          if (!seen.empty()) seen[static_cast<size_t>(x - spec.lo)] = true;
        }
        if (v.size() >= 1000 && std::find(seen.begin(), seen.end(), false) != seen.end()) {
          return absl::InternalError("some value of a small range never drawn");
        }
        if (v.size() >= 1000 && seen.empty() && *std::min_element(v.begin(), v.end()) > spec.lo + (spec.hi - spec.lo) / 10) {
          return absl::InternalError("no value in the lowest tenth of the range");
        }
        return absl::OkStatus();
      };
      cases.push_back(std::move(c));
    }
  }
  // The same nonzero seeds give the same values; other seeds other values.
  auto first = std::make_shared<Tensor>();
  for (const auto& [seed, seed2, same] : std::vector<std::tuple<int64_t, int64_t, bool>>{
           {3, 4, true}, {3, 4, true}, {3, 5, false}}) {
    OpCase c;
    c.description = absl::StrCat("seeds (", seed, ", ", seed2, ") determinism");
    c.inputs = {ShapeInput(DT_INT32, {64}), bound(-1000), bound(1000)};
    c.attrs = seeds(seed, seed2);
    c.expected = {Tensor(dtype, TensorShape({64}))};
    c.skip_output = {true};
    const bool same_as_first = same;
    c.check = [first, same_as_first](const std::vector<Tensor>& out) -> absl::Status {
      if (first->dtype() == DT_INVALID) {
        *first = out[0];
        return absl::OkStatus();
      }
      if (SameValues(out[0], *first) != same_as_first) {
        return absl::InternalError(same_as_first ? "equal seeds gave different values"
                                                 : "different seeds gave equal values");
      }
      return absl::OkStatus();
    };
    cases.push_back(std::move(c));
  }
  {  // The whole range of the type: the unsigned range arithmetic must not overflow.
    const double lowest = dtype == DT_INT32 ? -2147483648.0 : -9223372036854775808.0;
    // (2^63 - 1 is not a double; 2^62 still makes the range exceed INT64_MAX.)
    const double highest = dtype == DT_INT32 ? 2147483647.0 : 4611686018427387904.0;
    OpCase c;
    c.description = "almost the whole range";
    c.inputs = {ShapeInput(DT_INT32, {100}), bound(lowest), bound(highest)};
    c.attrs = seeds(7, 7);
    c.expected = {Tensor(dtype, TensorShape({100}))};
    c.skip_output = {true};
    c.check = [](const std::vector<Tensor>& out) -> absl::Status {
      std::vector<double> v = ToDoubles(out[0]);
      const bool negative = std::any_of(v.begin(), v.end(), [](double x) { return x < 0; });
      const bool positive = std::any_of(v.begin(), v.end(), [](double x) { return x > 0; });
      return negative && positive ? absl::OkStatus() : absl::InternalError("values on one side of 0 only");
    };
    cases.push_back(std::move(c));
  }
  cases.push_back(ErrorCase("minval >= maxval", {ShapeInput(DT_INT32, {3}), bound(2), bound(2)}, seeds(1, 1),
                            "need minval < maxval, got 2 >= 2"));
  cases.push_back(ErrorCase("minval not scalar", {ShapeInput(DT_INT32, {3}), FromDoubles(dtype, TensorShape({1}), {0}),
                                                  bound(2)},
                            seeds(1, 1), "minval must be a scalar"));
  cases.push_back(ErrorCase("negative dimension", {ShapeInput(DT_INT64, {2, -1}), bound(0), bound(2)}, seeds(1, 1),
                            "negative dimension"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"RandomUniformInt", {DT_INT32, DT_INT64}, RandomUniformIntCases});

// Rows of `t` (as doubles), sorted.
std::vector<std::vector<double>> SortedRows(const Tensor& t) {
  std::vector<double> v = ToDoubles(t);
  const int64_t n = t.dims() == 0 ? 1 : t.dim_size(0);
  const int64_t row = n == 0 ? 0 : t.NumElements() / n;
  std::vector<std::vector<double>> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i].assign(v.begin() + i * row, v.begin() + (i + 1) * row);
  std::sort(rows.begin(), rows.end());
  return rows;
}

REGISTER_OP_HARNESS(OpHarnessEntry{
    "RandomShuffle", {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_INT32, DT_INT64, DT_UINT8, DT_BOOL}, [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      const bool narrow = dtype == DT_BOOL;
      for (TensorShape shape : {TensorShape({}), TensorShape({1}), TensorShape({0, 3}), TensorShape({50}),
                                TensorShape({40, 3}), TensorShape({5, 2, 2})}) {
        OpCase c;
        c.description = "shape " + shape.DebugString();
        // Distinct rows where the dtype allows it.
        std::vector<double> values(shape.num_elements());
        for (size_t i = 0; i < values.size(); ++i) values[i] = narrow ? static_cast<double>((*rng)() % 2) : i;
        Tensor x = FromDoubles(dtype, shape, values);
        c.inputs = {x};
        c.attrs = {{"seed", MakeAttr(int64_t{9})}, {"seed2", MakeAttr(int64_t{2})}};
        c.expected = {x};
        c.skip_output = {true};
        const bool expect_moved = shape.dims() >= 1 && shape.dim_size(0) >= 40 && !narrow;
        c.check = [x, expect_moved](const std::vector<Tensor>& out) -> absl::Status {
          if (out[0].shape() != x.shape() || out[0].dtype() != x.dtype()) return absl::InternalError("shape changed");
          if (SortedRows(out[0]) != SortedRows(x)) return absl::InternalError("not a permutation of the rows");
          if (expect_moved && SameValues(out[0], x)) return absl::InternalError("40+ rows left in place");
          return absl::OkStatus();
        };
        cases.push_back(std::move(c));
      }
      // Same seeds, same permutation; other seeds, another.
      auto first = std::make_shared<Tensor>();
      Tensor x = FromDoubles(DT_DOUBLE, TensorShape({60}), [] {
        std::vector<double> v(60);
        for (int i = 0; i < 60; ++i) v[i] = i;
        return v;
      }());
      x = FromDoubles(dtype, x.shape(), ToDoubles(x));
      for (auto [seed, same] : std::vector<std::pair<int64_t, bool>>{{21, true}, {21, true}, {22, false}}) {
        if (narrow) break;
        OpCase c;
        c.description = absl::StrCat("seed ", seed, " determinism");
        c.inputs = {x};
        c.attrs = {{"seed", MakeAttr(seed)}, {"seed2", MakeAttr(int64_t{1})}};
        c.expected = {x};
        c.skip_output = {true};
        c.check = [first, same = same](const std::vector<Tensor>& out) -> absl::Status {
          if (first->dtype() == DT_INVALID) {
            *first = out[0];
            return absl::OkStatus();
          }
          if (SameValues(out[0], *first) != same) {
            return absl::InternalError(same ? "equal seeds gave different permutations"
                                            : "different seeds gave the same permutation");
          }
          return absl::OkStatus();
        };
        cases.push_back(std::move(c));
      }
      return cases;
    }});

}  // namespace
}  // namespace harness
}  // namespace sluice
