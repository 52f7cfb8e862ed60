// Einsum: TensorFlow's signature (tensorflow/core/ops/math_ops.cc), its shape
// function and its gradient. The equation is parsed by einsum_equation.h.
//
// Gradient, for inputs A (and B) and output O:
//   dA = Einsum(dO, B; "O,B->A'")   (one input: Einsum(dO; "O->A'"))
// where A' is A without the labels that only A has (the forward pass summed
// them); those come back by multiplying with ones of A's shape
// (Einsum(dA, OnesLike(A); "A',A->A")). When both inputs have "...", their
// dims may have broadcast, and dA is summed over the broadcast axes as
// BatchMatMulV2's gradient does (BroadcastGradientArgs); that needs the "..."
// at the front of A's term and in the output (else the gradient is
// Unimplemented).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/framework/einsum_equation.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

bool Has(const std::vector<int>& term, int label) { return std::find(term.begin(), term.end(), label) != term.end(); }

absl::Status EinsumShape(InferenceContext* c) {
  std::string equation;
  absl::Status s = c->GetAttr("equation", &equation);
  if (!s.ok()) return s;
  absl::StatusOr<EinsumEquation> eq = ParseEinsumEquation(equation);
  if (!eq.ok()) return c->Error(eq.status().message());
  if (static_cast<int>(eq->inputs.size()) != c->num_inputs()) {
    return c->Error(absl::StrCat("einsum '", equation, "' has ", eq->inputs.size(), " input terms, but the node has ",
                                 c->num_inputs(), " inputs"));
  }
  if (c->num_inputs() > 2) {
    return c->Error(absl::StrCat("einsum '", equation, "' has ", c->num_inputs(),
                                 " inputs; Einsum takes 1 or 2 (chain two-input Einsums)"));
  }
  std::vector<std::vector<int64_t>> dims;
  for (int i = 0; i < c->num_inputs(); ++i) {
    if (!c->input(i).rank_known()) {
      c->set_output(0, Has(eq->output, kEinsumEllipsis)
                           ? PartialShape::Unknown()
                           : PartialShape::UnknownOfRank(static_cast<int64_t>(eq->output.size())));
      return absl::OkStatus();
    }
    const auto d = c->input(i).dims();
    dims.emplace_back(d.begin(), d.end());
  }
  absl::StatusOr<EinsumPlan> plan = ResolveEinsum(*eq, dims);
  if (!plan.ok()) {
    const absl::Status e = c->Error(plan.status().message());
    return plan.status().code() == absl::StatusCode::kInvalidArgument ? e : absl::Status(plan.status().code(), e.message());
  }
  c->set_output(0, PartialShape::FromDims(plan->output_dims));
  return absl::OkStatus();
}

// The labels of `term` that `a` or `b` also has ("..." included when it is).
std::vector<int> KeptLabels(const std::vector<int>& term, const std::vector<int>& a, const std::vector<int>* b) {
  std::vector<int> kept;
  for (int l : term) {
    if (Has(a, l) || (b != nullptr && Has(*b, l))) kept.push_back(l);
  }
  return kept;
}

absl::Status EinsumGrad(GradientBuilder* g) {
  std::string equation;
  absl::Status s = g->GetAttr("equation", &equation);
  if (!s.ok()) return s;
  absl::StatusOr<EinsumEquation> eq = ParseEinsumEquation(equation);
  if (!eq.ok()) return eq.status();
  GraphBuilder& b = g->b();
  const std::vector<int>& out = eq->output;
  const int n = static_cast<int>(eq->inputs.size());
  const bool both_ellipsis =
      n == 2 && Has(eq->inputs[0], kEinsumEllipsis) && Has(eq->inputs[1], kEinsumEllipsis);
  if (both_ellipsis && !Has(out, kEinsumEllipsis)) {
    // dA would take the other input's "..." dims, which may be fewer than A's.
    return absl::UnimplementedError(absl::StrCat("the gradient of einsum '", equation, "' (node '", g->node().name(),
                                                 "'): both inputs have \"...\" and the output does not"));
  }
  for (int i = 0; i < n; ++i) {
    const std::vector<int>& term = eq->inputs[i];
    const std::vector<int>* other = n == 2 ? &eq->inputs[1 - i] : nullptr;
    const std::vector<int> kept = KeptLabels(term, out, other);
    std::vector<std::vector<int>> terms = {out};
    std::vector<Output> operands = {g->grad(0)};
    if (other != nullptr) {
      terms.push_back(*other);
      operands.push_back(g->input(1 - i));
    }
    Output d = b.Op(absl::StrCat("d", i), "Einsum", operands,
                    {{"equation", MakeAttr(EinsumEquationString(terms, kept))}});
    if (kept != term) {
      Output ones = b.Op(absl::StrCat("ones", i), "OnesLike", {g->input(i)});
      d = b.Op(absl::StrCat("spread", i), "Einsum", {d, ones},
               {{"equation", MakeAttr(EinsumEquationString({kept, term}, term))}});
    }
    if (both_ellipsis) {
      if (term.front() != kEinsumEllipsis) {
        return absl::UnimplementedError(absl::StrCat("the gradient of einsum '", equation, "' (node '",
                                                     g->node().name(), "'): input ", i,
                                                     " has \"...\" after a letter while both inputs have one"));
      }
      Output shape = b.Op(absl::StrCat("shape", i), "Shape", {g->input(i)});
      Output d_shape = b.Op(absl::StrCat("d_shape", i), "Shape", {d});
      Node* args = b.AddNode(absl::StrCat("broadcast_args", i), "BroadcastGradientArgs", {shape, d_shape});
      if (args == nullptr) return b.status();
      d = b.Op(absl::StrCat("reshape", i), "Reshape", {b.Op(absl::StrCat("sum", i), "Sum", {d, Output{args, 0}}), shape});
    }
    g->SetInputGrad(i, d);
  }
  return b.status();
}

}  // namespace

REGISTER_OP("Einsum")
    .Input("inputs: N * T")
    .Output("output: T")
    .Attr("equation: string")
    .Attr("N: int >= 1")
    .Attr("T: {bfloat16, half, float, double, int32, int64}")
    .SetShapeFn(EinsumShape)
    .SetGradient(EinsumGrad);

}  // namespace sluice
