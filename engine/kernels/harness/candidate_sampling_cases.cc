// Harness entries for LogUniformCandidateSampler and ...AtStep (properties of its random
// output: range, uniqueness, the class frequencies of the log-uniform law,
// expected counts from that law, seeded determinism; bad inputs) and
// ComputeAccidentalHits (exact references).
#include <cfloat>
#include <cmath>
#include <functional>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

Tensor Int64s(const std::vector<int64_t>& v, const TensorShape& shape) {
  Tensor t(DT_INT64, shape);
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

double LogUniformP(int64_t c, int64_t range) { return std::log((c + 2.0) / (c + 1.0)) / std::log(range + 1.0); }

AttrList SamplerAttrs(int64_t num_true, int64_t num_sampled, bool unique, int64_t range, int64_t seed = 7) {
  return {{"num_true", MakeAttr(num_true)},   {"num_sampled", MakeAttr(num_sampled)}, {"unique", MakeAttr(unique)},
          {"range_max", MakeAttr(range)},     {"seed", MakeAttr(seed)},               {"seed2", MakeAttr(int64_t{3})}};
}

OpCase SamplerCase(int64_t num_sampled, bool unique, int64_t range) {
  OpCase c;
  c.description = absl::StrCat(num_sampled, unique ? " unique" : "", " of ", range);
  const std::vector<int64_t> classes = {0, 5 % range, 1 % range, range - 1, 3 % range, 2 % range};
  c.inputs = {Int64s(classes, TensorShape({3, 2}))};
  c.attrs = SamplerAttrs(2, num_sampled, unique, range);
  c.expected = {Tensor(DT_INT64, TensorShape({num_sampled})), Tensor(DT_FLOAT, TensorShape({3, 2})),
                Tensor(DT_FLOAT, TensorShape({num_sampled}))};
  c.skip_output = {true, true, true};
  c.check = [=](const std::vector<Tensor>& out) -> absl::Status {
    std::set<int64_t> distinct;
    std::vector<int64_t> hist(range, 0);
    for (int64_t i = 0; i < num_sampled; ++i) {
      const int64_t v = out[0].data<int64_t>()[i];
      if (v < 0 || v >= range) return absl::InternalError(absl::StrCat("class ", v, " out of range"));
      distinct.insert(v);
      ++hist[v];
    }
    if (unique && static_cast<int64_t>(distinct.size()) != num_sampled) return absl::InternalError("repeated class");
    if (!unique) {
      // Each expected count is p * num_sampled; low classes come up at their rates.
      for (int64_t i = 0; i < num_sampled; ++i) {
        const double want = LogUniformP(out[0].data<int64_t>()[i], range) * num_sampled;
        if (std::abs(out[2].data<float>()[i] - want) > 1e-4 * want) return absl::InternalError("sampled count");
      }
      for (size_t k = 0; k < classes.size(); ++k) {
        const double want = LogUniformP(classes[k], range) * num_sampled;
        if (std::abs(out[1].data<float>()[k] - want) > 1e-4 * want) return absl::InternalError("true count");
      }
      if (num_sampled >= 20000) {
        for (int64_t v : {0, 1, 9}) {
          const double p = LogUniformP(v, range), got = static_cast<double>(hist[v]) / num_sampled;
          const double sd = std::sqrt(p * (1 - p) / num_sampled);
          if (std::abs(got - p) > 5 * sd) {
            return absl::InternalError(absl::StrCat("class ", v, " came up at ", got, ", expected ", p));
          }
        }
      }
    } else {
      // 1 - (1 - p)^tries with tries >= num_sampled: at least p * num_sampled
      // for small p, and the same tries for every class.
      for (int64_t i = 0; i < num_sampled; ++i) {
        const float e = out[2].data<float>()[i];
        if (!(e > 0 && e <= 1.0f + 1e-6f)) return absl::InternalError(absl::StrCat("expected count ", e));
      }
    }
    return absl::OkStatus();
  };
  return c;
}

// Cases drawing 50 classes once per (value, same) in `runs`, in order: a run
// marked same must draw what the first drew, one not marked must not.
// `setup` gives a case its inputs and attrs for the value of `what` (a seed, a step).
std::vector<OpCase> DeterminismCases(const std::string& what, const std::vector<std::pair<int64_t, bool>>& runs,
                                     const std::function<void(int64_t, OpCase*)>& setup) {
  std::vector<OpCase> cases;
  auto first = std::make_shared<Tensor>();
  for (const auto& [value, same] : runs) {
    OpCase c;
    c.description = absl::StrCat(what, " ", value, " determinism");
    setup(value, &c);
    c.expected = {Tensor(DT_INT64, TensorShape({50})), Tensor(DT_FLOAT, TensorShape({2, 1})),
                  Tensor(DT_FLOAT, TensorShape({50}))};
    c.skip_output = {true, true, true};
    c.check = [first, same = same, what](const std::vector<Tensor>& out) -> absl::Status {
      if (first->dtype() == DT_INVALID) {
        *first = out[0];
        return absl::OkStatus();
      }
      bool equal = true;
      for (int64_t i = 0; i < 50; ++i) equal &= out[0].data<int64_t>()[i] == first->data<int64_t>()[i];
      if (equal != same) {
        return absl::InternalError(same ? absl::StrCat("equal ", what, "s differ")
                                        : absl::StrCat("other ", what, "s gave the same samples"));
      }
      return absl::OkStatus();
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<OpCase> SamplerCases(DataType, Rng*) {
  std::vector<OpCase> cases = {SamplerCase(20000, false, 100), SamplerCase(64, true, 1000), SamplerCase(10, true, 10),
                               SamplerCase(1, false, 1)};
  // Equal seeds give equal samples, other seeds others.
  for (OpCase& c : DeterminismCases("seed", {{5, true}, {5, true}, {6, false}}, [](int64_t seed, OpCase* c) {
         c->inputs = {Int64s({1, 2}, TensorShape({2, 1}))};
         c->attrs = SamplerAttrs(1, 50, false, 1000000, seed);
       })) {
    cases.push_back(std::move(c));
  }
  cases.push_back(ErrorCase("negative true class", {Int64s({3, -1}, TensorShape({1, 2}))},
                            SamplerAttrs(2, 4, false, 10), "true class -1 (element 1) is negative"));
  cases.push_back(ErrorCase("num_true mismatch", {Int64s({3, 1}, TensorShape({1, 2}))}, SamplerAttrs(1, 4, false, 10),
                            "num_true"));
  cases.push_back(ErrorCase("unique beyond the range", {Int64s({3}, TensorShape({1, 1}))}, SamplerAttrs(1, 11, true, 10),
                            "num_sampled (11) <= range_max (10)"));
  return cases;
}

std::vector<OpCase> AccidentalHitsCases(DataType, Rng*) {
  auto hits = [](std::vector<int32_t> rows, std::vector<int64_t> ids) {
    Tensor r(DT_INT32, TensorShape({static_cast<int64_t>(rows.size())}));
    for (size_t i = 0; i < rows.size(); ++i) r.data<int32_t>()[i] = rows[i];
    Tensor w(DT_FLOAT, TensorShape({static_cast<int64_t>(rows.size())}));
    for (size_t i = 0; i < rows.size(); ++i) w.data<float>()[i] = -FLT_MAX;
    return std::vector<Tensor>{r, Int64s(ids, TensorShape({static_cast<int64_t>(ids.size())})), w};
  };
  AttrList one = {{"num_true", MakeAttr(int64_t{1})}}, two = {{"num_true", MakeAttr(int64_t{2})}};
  OpCase a;
  a.description = "one true class";
  a.inputs = {Int64s({4, 7, 1}, TensorShape({3, 1})), Int64s({1, 9, 4, 3}, TensorShape({4}))};
  a.attrs = one;
  a.expected = hits({0, 2}, {2, 0});
  OpCase b;
  b.description = "two true classes, in the row's order";
  b.inputs = {Int64s({3, 1, 8, 8}, TensorShape({2, 2})), Int64s({1, 9, 3, 8}, TensorShape({4}))};
  b.attrs = two;
  b.expected = hits({0, 0, 1, 1}, {2, 0, 3, 3});
  OpCase dup;
  dup.description = "a class sampled twice counts at its last position";
  dup.inputs = {Int64s({4, 2}, TensorShape({2, 1})), Int64s({4, 1, 4}, TensorShape({3}))};
  dup.attrs = one;
  dup.expected = hits({0}, {2});
  OpCase none;
  none.description = "no hits";
  none.inputs = {Int64s({5}, TensorShape({1, 1})), Int64s({1, 2}, TensorShape({2}))};
  none.attrs = one;
  none.expected = hits({}, {});
  return {a, b, dup, none,
          ErrorCase("num_true mismatch", {Int64s({5, 6}, TensorShape({1, 2})), Int64s({1}, TensorShape({1}))}, one,
                    "num_true"),
          ErrorCase("matrix candidates", {Int64s({5}, TensorShape({1, 1})), Int64s({1, 2}, TensorShape({1, 2}))}, one,
                    "vector")};
}

// LogUniformCandidateSamplerAtStep: the same law and errors, with a step
// input; equal steps give equal samples, other steps others.
std::vector<OpCase> StepSamplerCases(DataType dtype, Rng* rng) {
  std::vector<OpCase> cases;
  for (OpCase c : SamplerCases(dtype, rng)) {
    if (c.description.find("determinism") != std::string::npos) continue;
    c.inputs.push_back(Tensor::Scalar<int64_t>(12));
    cases.push_back(std::move(c));
  }
  for (OpCase& c : DeterminismCases("step", {{7, true}, {7, true}, {8, false}}, [](int64_t step, OpCase* c) {
         c->inputs = {Int64s({1, 2}, TensorShape({2, 1})), Tensor::Scalar<int64_t>(step)};
         c->attrs = SamplerAttrs(1, 50, false, 1000000, 5);
       })) {
    cases.push_back(std::move(c));
  }
  cases.push_back(ErrorCase("a vector step", {Int64s({3}, TensorShape({1, 1})), Int64s({1, 2}, TensorShape({2}))},
                            SamplerAttrs(1, 4, false, 10), "step must be a scalar"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"LogUniformCandidateSampler", {DT_INT64}, SamplerCases});
REGISTER_OP_HARNESS(OpHarnessEntry{"LogUniformCandidateSamplerAtStep", {DT_INT64}, StepSamplerCases});
REGISTER_OP_HARNESS(OpHarnessEntry{"ComputeAccidentalHits", {DT_INT64}, AccidentalHitsCases});

}  // namespace
}  // namespace harness
}  // namespace sluice
