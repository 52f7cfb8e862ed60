// LstmGates and LstmGatesGrad: the element-wise part of one LSTM step as one
// op, so a recurrent loop runs a few nodes per step instead of a dozen (the
// matrix products stay MatMul, the input's hoisted out of the loop). Sluice's
// own ops; the gates follow TensorFlow's LSTMCell, i f g o along the last
// axis of z:
//   i = sig(z_i)  f = sig(z_f + forget_bias)  g = tanh(z_g)  o = sig(z_o)
//   c = f * c_prev + i * g      h = o * tanh(c)
// `activations` holds [i, f, g, o] for the gradient. The gradient flows from
// h and c (the activations output passes none).
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

// z [batch, 4 units] and a state [batch, units]: the state's shape, with
// what each says of the other filled in.
absl::Status StateShape(InferenceContext* c, const PartialShape& z, const PartialShape& state, PartialShape* out) {
  if (z.rank_known() && z.rank() != 2) return c->Error(absl::StrCat("z must be [batch, 4 * units], got ", z.DebugString()));
  if (state.rank_known() && state.rank() != 2) {
    return c->Error(absl::StrCat("the state must be [batch, units], got ", state.DebugString()));
  }
  int64_t batch = kUnknownDim, units = kUnknownDim;
  if (z.rank_known()) {
    batch = z.dim(0);
    if (z.dim(1) >= 0) {
      if (z.dim(1) % 4 != 0) return c->Error(absl::StrCat("z's last dim ", z.dim(1), " is not 4 * units"));
      units = z.dim(1) / 4;
    }
  }
  if (state.rank_known()) {
    if (batch >= 0 && state.dim(0) >= 0 && batch != state.dim(0)) {
      return c->Error(absl::StrCat("z has batch ", batch, " but the state has ", state.dim(0)));
    }
    if (units >= 0 && state.dim(1) >= 0 && units != state.dim(1)) {
      return c->Error(absl::StrCat("z has 4 * ", units, " gates but the state has ", state.dim(1), " units"));
    }
    if (batch < 0) batch = state.dim(0);
    if (units < 0) units = state.dim(1);
  }
  *out = PartialShape::FromDims({batch, units});
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("LstmGates")
    .SetSluiceOnly()
    .Input("z: T")
    .Input("c_prev: T")
    .Output("h: T")
    .Output("c: T")
    .Output("activations: T")
    .Attr("forget_bias: float = 1.0")
    .Attr("T: {float, double}")
    .SetShapeFn([](InferenceContext* c) {
      PartialShape state;
      absl::Status s = StateShape(c, c->input(0), c->input(1), &state);
      if (!s.ok()) return s;
      c->set_output(0, state);
      c->set_output(1, state);
      c->set_output(2, state.rank_known() ? PartialShape::FromDims({state.dim(0), state.dim(1) < 0 ? kUnknownDim
                                                                                                     : 4 * state.dim(1)})
                                          : c->input(0));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      if (!g->has_grad(0) && !g->has_grad(1)) return absl::OkStatus();
      Node* grad = g->b().AddNode("lstm_gates_grad", "LstmGatesGrad",
                                  {g->input(1), g->output(1), g->output(2), g->grad(0), g->grad(1)});
      if (grad == nullptr) return g->b().status();
      g->SetInputGrad(0, Output{grad, 0});
      g->SetInputGrad(1, Output{grad, 1});
      return absl::OkStatus();
    });

// dz and dc_prev from the forward step's c_prev, c and activations and the
// gradients of h and c.
REGISTER_OP("LstmGatesGrad")
    .SetSluiceOnly()
    .Input("c_prev: T")
    .Input("c: T")
    .Input("activations: T")
    .Input("dh: T")
    .Input("dc: T")
    .Output("dz: T")
    .Output("dc_prev: T")
    .Attr("T: {float, double}")
    .SetShapeFn([](InferenceContext* c) {
      PartialShape state;
      absl::Status s = StateShape(c, c->input(2), c->input(0), &state);
      if (!s.ok()) return s;
      c->set_output(0, c->input(2));
      c->set_output(1, state);
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

}  // namespace sluice
