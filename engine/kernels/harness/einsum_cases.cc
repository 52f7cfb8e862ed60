// Harness entries for Einsum: matrix products, batched and attention-shaped
// contractions, transposes, sums, outer products, implicit outputs, "..."
// with broadcasting, size-0 dims, and bad inputs; references by a naive loop
// over every label assignment in float64 (finite-difference gradients for
// float64 cases).
#include <map>

#include "absl/strings/str_cat.h"
#include "engine/framework/einsum_equation.h"
#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

// Sum over all label assignments of the product of the inputs' elements.
Tensor EinsumReference(DataType dtype, const std::string& equation, const std::vector<Tensor>& inputs) {
  const EinsumEquation eq = *ParseEinsumEquation(equation);
  std::vector<std::vector<int64_t>> dims;
  for (const Tensor& t : inputs) {
    const auto& d = t.shape().dim_sizes();
    dims.emplace_back(d.begin(), d.end());
  }
  const EinsumPlan plan = *ResolveEinsum(eq, dims);
  std::vector<int> labels;  // every label in use
  for (const std::vector<int>& in : plan.input_labels) {
    for (int l : in) {
      if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
    }
  }
  std::vector<std::vector<double>> values;
  for (const Tensor& t : inputs) values.push_back(ToDoubles(t));
  const TensorShape out_shape(plan.output_dims);
  std::vector<double> out(out_shape.num_elements(), 0.0);
  std::map<int, int64_t> at;
  for (int l : labels) at[l] = 0;
  int64_t total = 1;
  for (int l : labels) total *= plan.label_size[l];
  for (int64_t step = 0; step < total; ++step) {
    int64_t rest = step;
    for (auto it = labels.rbegin(); it != labels.rend(); ++it) {
      at[*it] = rest % plan.label_size[*it];
      rest /= plan.label_size[*it];
    }
    double product = 1;
    for (size_t i = 0; i < inputs.size(); ++i) {
      int64_t offset = 0;
      for (size_t axis = 0; axis < plan.input_labels[i].size(); ++axis) {
        const int64_t d = inputs[i].dim_size(static_cast<int>(axis));
        offset = offset * d + (d == 1 ? 0 : at[plan.input_labels[i][axis]]);
      }
      product *= values[i][offset];
    }
    int64_t o = 0;
    for (int l : plan.output_labels) o = o * plan.label_size[l] + at[l];
    out[o] += product;
  }
  return FromDoubles(dtype, out_shape, out);
}

struct Spec {
  const char* equation;
  std::vector<TensorShape> shapes;
};

std::vector<OpCase> EinsumCases(DataType dtype, Rng* rng) {
  const std::vector<Spec> specs = {
      {"ij,jk->ik", {TensorShape({2, 3}), TensorShape({3, 4})}},
      {"ij,jk", {TensorShape({3, 2}), TensorShape({2, 2})}},
      {"ij,kj->ki", {TensorShape({2, 3}), TensorShape({4, 3})}},
      {"bsd,de->bse", {TensorShape({2, 3, 4}), TensorShape({4, 5})}},
      {"bij,bjk->bik", {TensorShape({3, 2, 4}), TensorShape({3, 4, 2})}},
      {"bhqd,bhkd->bhqk", {TensorShape({1, 2, 3, 4}), TensorShape({1, 2, 5, 4})}},
      {"bhqk,bhkd->bqhd", {TensorShape({2, 2, 3, 4}), TensorShape({2, 2, 4, 3})}},
      {"abc,cd->abd", {TensorShape({2, 2, 3}), TensorShape({3, 2})}},
      {"ijk,ik->j", {TensorShape({2, 3, 4}), TensorShape({2, 4})}},
      {"ab,bc->a", {TensorShape({2, 3}), TensorShape({3, 4})}},
      {"ab,cd->", {TensorShape({2, 3}), TensorShape({2, 2})}},
      {"i,i->", {TensorShape({5}), TensorShape({5})}},
      {"i,j->ij", {TensorShape({3}), TensorShape({4})}},
      {"...ij,...jk->...ik", {TensorShape({2, 1, 2, 3}), TensorShape({4, 3, 2})}},
      {"...ij,jk->...ik", {TensorShape({2, 3, 2, 3}), TensorShape({3, 2})}},
      {"ij...,jk->ik", {TensorShape({2, 3, 2}), TensorShape({3, 2})}},
      {"ij->ji", {TensorShape({2, 3})}},
      {"ijk->kij", {TensorShape({2, 3, 4})}},
      {"ij->", {TensorShape({3, 4})}},
      {"ij->j", {TensorShape({3, 4})}},
      {"ba", {TensorShape({2, 3})}},
      {"...j->...", {TensorShape({2, 3, 4})}},
      {"ij,jk->ik", {TensorShape({0, 3}), TensorShape({3, 2})}},
      {"ij,jk->ik", {TensorShape({2, 0}), TensorShape({0, 3})}},
      {"ij->j", {TensorShape({0, 3})}},
  };
  std::vector<OpCase> cases;
  for (const Spec& spec : specs) {
    OpCase c;
    c.description = spec.equation;
    for (const TensorShape& s : spec.shapes) {
      c.description += " " + s.DebugString();
      c.inputs.push_back(RandomTensor(dtype, s, rng, -2, 2));
    }
    c.attrs = {{"equation", MakeAttr(std::string(spec.equation))}};
    c.expected = {EinsumReference(dtype, spec.equation, c.inputs)};
    if (dtype == DT_HALF || dtype == DT_BFLOAT16) c.tolerance = 5e-2;
    c.check_gradient = dtype == DT_DOUBLE;
    cases.push_back(std::move(c));
  }
  if (dtype == DT_FLOAT) {
    // Large enough for the GEMM's pool path and a non-trivial permutation.
    OpCase c;
    c.description = "bhqd,bhkd->bqhk large";
    c.inputs = {RandomTensor(dtype, TensorShape({2, 4, 64, 32}), rng), RandomTensor(dtype, TensorShape({2, 4, 80, 32}), rng)};
    c.attrs = {{"equation", MakeAttr(std::string("bhqd,bhkd->bqhk"))}};
    c.expected = {EinsumReference(dtype, "bhqd,bhkd->bqhk", c.inputs)};
    c.tolerance = 1e-4;
    cases.push_back(std::move(c));
  }
  auto attrs = [](const char* e) { return AttrList{{"equation", MakeAttr(std::string(e))}}; };
  cases.push_back(ErrorCase("label sizes differ",
                            {RandomTensor(dtype, TensorShape({2, 3}), rng), RandomTensor(dtype, TensorShape({4, 5}), rng)},
                            attrs("ij,jk->ik"), "label 'j' is 3 in input 0 but 4 in input 1"));
  cases.push_back(ErrorCase("rank below the term",
                            {RandomTensor(dtype, TensorShape({2, 3}), rng)}, attrs("ijk->k"), "has rank 2"));
  cases.push_back(ErrorCase("a diagonal", {RandomTensor(dtype, TensorShape({3, 3}), rng)}, attrs("ii->i"),
                            "repeats within input 0", absl::StatusCode::kUnimplemented));
  cases.push_back(ErrorCase("a bad character", {RandomTensor(dtype, TensorShape({3}), rng)}, attrs("i1->i"),
                            "is not a letter"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Einsum", {DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64},
                                   EinsumCases});

}  // namespace
}  // namespace harness
}  // namespace sluice
