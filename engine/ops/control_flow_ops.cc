// Control-flow primitives (whitepaper §4.4): Switch, Merge, Enter, Exit,
// NextIteration, LoopCond and ControlTrigger. The executor gives Enter, Exit and
// NextIteration their frame semantics; Switch and Merge route values and
// deadness. Switch and Merge have the gradients of a cond (TensorFlow's: a
// Switch's gradient merges its outputs' gradients, a Merge's gradient is
// switched back to the branch that ran); while loops are differentiated as a
// unit (engine/graph/while_gradient.h).
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

absl::Status SwitchShape(InferenceContext* c) {
  const PartialShape& pred = c->input(1);
  if (pred.rank_known() && pred.rank() != 0) {
    return c->Error(absl::StrCat("input 'pred' must be a scalar but has shape ", pred.DebugString()));
  }
  for (int i : {0, 1}) {
    c->set_output(i, c->input(0));
    c->set_output_handle_shapes(i, c->input_handle_shapes(0));
  }
  return absl::OkStatus();
}

// Merge forwards whichever input is alive, so its output may have any of the
// inputs' shapes: keep only what they all share (TensorFlow's rule). A
// NextIteration back edge arrives with the shape ShapeRefiner assumes for it
// (engine/graph/shape_refiner.h: a fixpoint over the loop).
absl::Status MergeShape(InferenceContext* c) {
  PartialShape out = c->input(0);
  bool same_handles = true;  // a handle's element shapes: only when every input has the same
  for (int i = 1; i < c->num_inputs(); ++i) {
    out = out.Widen(c->input(i));
    same_handles &= c->input_handle_shapes(i) == c->input_handle_shapes(0);
  }
  c->set_output(0, out);
  if (same_handles) c->set_output_handle_shapes(0, c->input_handle_shapes(0));
  c->set_output(1, PartialShape::Scalar());
  return absl::OkStatus();
}

absl::Status LoopCondShape(InferenceContext* c) {
  const PartialShape& in = c->input(0);
  if (in.rank_known() && in.rank() != 0) {
    return c->Error(absl::StrCat("input must be a scalar but has shape ", in.DebugString()));
  }
  c->set_output(0, PartialShape::Scalar());
  return absl::OkStatus();
}

// The predicate of the cond whose outputs `merge` joins: BuildCond gives
// each branch value a control edge from its pivot, Identity(Switch(pred,
// pred)). Null when the Merge has another shape.
Output CondPredicate(const Node& merge) {
  const Edge* in = merge.input_edge(0);
  if (in == nullptr) return Output();
  for (const Edge* e : in->src->in_edges()) {
    if (!e->IsControlEdge() || e->src->type_string() != "Identity") continue;
    const Edge* from_switch = e->src->input_edge(0);
    if (from_switch == nullptr || !from_switch->src->IsSwitch()) continue;
    const Edge* data = from_switch->src->input_edge(0);
    const Edge* pred = from_switch->src->input_edge(1);
    if (data != nullptr && pred != nullptr && data->src == pred->src && data->src_output == pred->src_output) {
      return Output{pred->src, pred->src_output};
    }
  }
  return Output();
}

}  // namespace

REGISTER_OP("Switch")
    .Input("data: T")
    .Input("pred: bool")
    .Output("output_false: T")
    .Output("output_true: T")
    .Attr("T: type")
    .SetShapeFn(SwitchShape)
    .SetGradient([](GradientBuilder* g) {
      if (!g->has_grad(0) && !g->has_grad(1)) return absl::OkStatus();
      // The branch that did not run has a dead zeros gradient; Merge takes the live one.
      g->SetInputGrad(0, g->b().Op("merge", "Merge", {g->grad(0), g->grad(1)}));
      return absl::OkStatus();
    });

REGISTER_OP("Merge")
    .Input("inputs: N * T")
    .Output("output: T")
    .Output("value_index: int32")
    .Attr("T: type")
    .Attr("N: int >= 1")
    .SetShapeFn(MergeShape)
    .SetGradient([](GradientBuilder* g) {
      Output pred = g->num_inputs() == 2 ? CondPredicate(g->node()) : Output();
      if (!pred.valid()) {
        return absl::UnimplementedError(absl::StrCat(NodeContext(g->node().def()),
                                                     "the gradient of Merge is defined for the outputs of conds built by "
                                                     "BuildCond (engine/graph/control_flow_builders.h)"));
      }
      if (!g->has_grad(0)) return absl::OkStatus();
      Node* routed = g->b().AddNode("switch", "Switch", {g->grad(0), pred});
      if (routed == nullptr) return g->b().status();
      g->SetInputGrad(0, Output{routed, 0});
      g->SetInputGrad(1, Output{routed, 1});
      return absl::OkStatus();
    });

REGISTER_OP("Enter")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("frame_name: string")
    .Attr("is_constant: bool = false")
    .Attr("parallel_iterations: int = 10")
    .SetShapeFn(shape_fns::Unchanged);

REGISTER_OP("Exit").Input("data: T").Output("output: T").Attr("T: type").SetShapeFn(shape_fns::Unchanged);

REGISTER_OP("NextIteration").Input("data: T").Output("output: T").Attr("T: type").SetShapeFn(shape_fns::Unchanged);

REGISTER_OP("LoopCond").Input("input: bool").Output("output: bool").SetShapeFn(LoopCondShape);

// Does nothing, and runs even when its control inputs are dead (the executor
// never marks it dead): a point to hang control edges on that is reached
// whichever branch of a cond ran.
REGISTER_OP("ControlTrigger").SetShapeFn(shape_fns::Unknown);

}  // namespace sluice
