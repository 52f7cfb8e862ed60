// Elementwise math ops, AddN, Select(V2), Cast, BroadcastGradientArgs, the
// *Grad helper ops, MatMul and BatchMatMul(V2): TensorFlow's signatures
// (tensorflow/core/ops/math_ops.cc), each with its shape function and its
// gradient. Gradients of broadcasting binary ops sum over the broadcast axes
// (BroadcastGradientArgs -> Sum -> Reshape), as TensorFlow does.
// Reductions live in reduction_ops.cc.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

// ---- Gradient helpers ----

Output One(GradientBuilder* g, DataType dtype, double v = 1) { return g->b().ScalarOfType("c", dtype, v); }

// Sums dx / dy over the axes along which x / y were broadcast and reshapes
// them to the inputs' shapes; either may be invalid (no gradient).
void SetBroadcastGrads(GradientBuilder* g, Output dx, Output dy) {
  GraphBuilder& b = g->b();
  Output sx = b.Op("shape_x", "Shape", {g->input(0)});
  Output sy = b.Op("shape_y", "Shape", {g->input(1)});
  Node* args = b.AddNode("broadcast_args", "BroadcastGradientArgs", {sx, sy});
  if (args == nullptr) return;
  if (dx.valid()) {
    g->SetInputGrad(0, b.Op("reshape_dx", "Reshape", {b.Op("sum_dx", "Sum", {dx, Output{args, 0}}), sx}));
  }
  if (dy.valid()) {
    g->SetInputGrad(1, b.Op("reshape_dy", "Reshape", {b.Op("sum_dy", "Sum", {dy, Output{args, 1}}), sy}));
  }
}

Output Un(GradientBuilder* g, const char* op, Output x) { return g->b().Op(op, op, {x}); }
Output Bin(GradientBuilder* g, const char* op, Output x, Output y) { return g->b().Op(op, op, {x, y}); }
Output CastTo(GradientBuilder* g, Output x, DataType dtype) {
  return g->b().Op("cast", "Cast", {x}, {{"DstT", MakeAttr(dtype)}});
}

// ---- Shape functions ----

absl::Status MatMulShape(InferenceContext* c) {
  PartialShape a, b;
  absl::Status s = c->WithRank(0, 2, &a);
  if (!s.ok()) return s;
  s = c->WithRank(1, 2, &b);
  if (!s.ok()) return s;
  bool transpose_a, transpose_b;
  s = c->GetAttr("transpose_a", &transpose_a);
  if (!s.ok()) return s;
  s = c->GetAttr("transpose_b", &transpose_b);
  if (!s.ok()) return s;
  int64_t m = a.dim(transpose_a ? 1 : 0), ka = a.dim(transpose_a ? 0 : 1);
  int64_t kb = b.dim(transpose_b ? 1 : 0), n = b.dim(transpose_b ? 0 : 1);
  if (ka != kUnknownDim && kb != kUnknownDim && ka != kb) {
    return c->Error(absl::StrCat("inner dimensions differ: a is ", a.DebugString(), (transpose_a ? " (transposed)" : ""),
                                 ", b is ", b.DebugString(), (transpose_b ? " (transposed)" : "")));
  }
  c->set_output(0, PartialShape::FromDims({m, n}));
  return absl::OkStatus();
}

absl::Status BatchMatMulShape(InferenceContext* c, bool broadcast) {
  const PartialShape& x = c->input(0);
  const PartialShape& y = c->input(1);
  if (!x.rank_known() || !y.rank_known()) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  if (x.rank() < 2 || y.rank() < 2) {
    return c->Error(absl::StrCat("BatchMatMul needs inputs of rank >= 2, got shapes ", x.DebugString(), " and ",
                                 y.DebugString()));
  }
  bool adj_x, adj_y;
  absl::Status s = c->GetAttr("adj_x", &adj_x);
  if (!s.ok()) return s;
  s = c->GetAttr("adj_y", &adj_y);
  if (!s.ok()) return s;
  const int xr = x.rank(), yr = y.rank();
  const int64_t m = x.dim(adj_x ? xr - 1 : xr - 2), kx = x.dim(adj_x ? xr - 2 : xr - 1);
  const int64_t ky = y.dim(adj_y ? yr - 1 : yr - 2), n = y.dim(adj_y ? yr - 2 : yr - 1);
  if (kx != kUnknownDim && ky != kUnknownDim && kx != ky) {
    return c->Error(absl::StrCat("inner dimensions differ: x is ", x.DebugString(), adj_x ? " (adjoint)" : "",
                                 ", y is ", y.DebugString(), adj_y ? " (adjoint)" : ""));
  }
  PartialShape bx = PartialShape::FromDims(x.dims().subspan(0, xr - 2));
  PartialShape by = PartialShape::FromDims(y.dims().subspan(0, yr - 2));
  absl::StatusOr<PartialShape> batch;
  if (broadcast) {
    batch = shape_fns::Broadcast(bx, by);
  } else {
    if (xr != yr) {
      return c->Error(absl::StrCat("inputs must have the same rank, got shapes ", x.DebugString(), " and ",
                                   y.DebugString()));
    }
    batch = bx.Merge(by);
  }
  if (!batch.ok()) return c->Error(absl::StrCat("batch dimensions differ: ", batch.status().message()));
  std::vector<int64_t> dims(batch->dims().begin(), batch->dims().end());
  dims.push_back(m);
  dims.push_back(n);
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

absl::Status EqualityShape(InferenceContext* c) {
  bool incompatible_shape_error = true;
  absl::Status s = c->GetAttr("incompatible_shape_error", &incompatible_shape_error);
  if (!s.ok()) return s;
  auto shape = shape_fns::Broadcast(c->input(0), c->input(1));
  if (!shape.ok()) {
    if (incompatible_shape_error) return c->Error(shape.status().message());
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  c->set_output(0, *shape);
  return absl::OkStatus();
}

// ---- Gradient functions ----

absl::Status MatMulGrad(GradientBuilder* g) {
  bool ta, tb;
  absl::Status s = g->GetAttr("transpose_a", &ta);
  if (!s.ok()) return s;
  s = g->GetAttr("transpose_b", &tb);
  if (!s.ok()) return s;
  Output a = g->input(0), b = g->input(1), dz = g->grad(0);
  auto mm = [&](const char* name, Output x, Output y, bool t1, bool t2) {
    return g->b().Op(name, "MatMul", {x, y}, {{"transpose_a", MakeAttr(t1)}, {"transpose_b", MakeAttr(t2)}});
  };
  if (!ta && !tb) {
    g->SetInputGrad(0, mm("da", dz, b, false, true));
    g->SetInputGrad(1, mm("db", a, dz, true, false));
  } else if (!ta && tb) {
    g->SetInputGrad(0, mm("da", dz, b, false, false));
    g->SetInputGrad(1, mm("db", dz, a, true, false));
  } else if (ta && !tb) {
    g->SetInputGrad(0, mm("da", b, dz, false, true));
    g->SetInputGrad(1, mm("db", a, dz, false, false));
  } else {
    g->SetInputGrad(0, mm("da", b, dz, true, true));
    g->SetInputGrad(1, mm("db", dz, a, true, true));
  }
  return absl::OkStatus();
}

// BatchMatMul / BatchMatMulV2; V2 also sums over broadcast batch dims.
absl::Status BatchMatMulGrad(GradientBuilder* g, const char* op, bool broadcast) {
  bool ax, ay;
  absl::Status s = g->GetAttr("adj_x", &ax);
  if (!s.ok()) return s;
  s = g->GetAttr("adj_y", &ay);
  if (!s.ok()) return s;
  Output x = g->input(0), y = g->input(1), dz = g->grad(0);
  auto mm = [&](const char* name, Output p, Output q, bool t1, bool t2) {
    return g->b().Op(name, op, {p, q}, {{"adj_x", MakeAttr(t1)}, {"adj_y", MakeAttr(t2)}});
  };
  Output dx, dy;
  if (!ax && !ay) {
    dx = mm("dx", dz, y, false, true);
    dy = mm("dy", x, dz, true, false);
  } else if (!ax && ay) {
    dx = mm("dx", dz, y, false, false);
    dy = mm("dy", dz, x, true, false);
  } else if (ax && !ay) {
    dx = mm("dx", y, dz, false, true);
    dy = mm("dy", x, dz, false, false);
  } else {
    dx = mm("dx", y, dz, true, true);
    dy = mm("dy", dz, x, true, true);
  }
  if (!broadcast) {
    g->SetInputGrad(0, dx);
    g->SetInputGrad(1, dy);
    return absl::OkStatus();
  }
  GraphBuilder& b = g->b();
  Output sx = b.Op("shape_x", "Shape", {x});
  Output sy = b.Op("shape_y", "Shape", {y});
  Output zero = b.Const("zero", Tensor::FromVector<int32_t>({0}));
  Output two = b.Const("two", Tensor::FromVector<int32_t>({2}));
  Output bx = b.Op("batch_x", "Slice", {sx, zero, b.Op("len_x", "Sub", {b.Op("rank_x", "Shape", {sx}), two})});
  Output by = b.Op("batch_y", "Slice", {sy, zero, b.Op("len_y", "Sub", {b.Op("rank_y", "Shape", {sy}), two})});
  Node* args = b.AddNode("broadcast_args", "BroadcastGradientArgs", {bx, by});
  if (args == nullptr) return b.status();
  g->SetInputGrad(0, b.Op("reshape_dx", "Reshape", {b.Op("sum_dx", "Sum", {dx, Output{args, 0}}), sx}));
  g->SetInputGrad(1, b.Op("reshape_dy", "Reshape", {b.Op("sum_dy", "Sum", {dy, Output{args, 1}}), sy}));
  return absl::OkStatus();
}

}  // namespace

// ---- Broadcasting binary ops ----

#define SLUICE_BINARY_OP_(NAME, TYPES, OUT)                                                   \
  REGISTER_OP(NAME).Input("x: T").Input("y: T").Output("z: " OUT).Attr("T: " TYPES).SetShapeFn( \
      shape_fns::BroadcastBinary)
#define SLUICE_REAL_TYPES_ "{bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64}"
#define SLUICE_ARITH_TYPES_ "{bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64, complex64}"
#define SLUICE_FLOAT_TYPES_ "{bfloat16, half, float, double, complex64}"

SLUICE_BINARY_OP_("Add", "{bfloat16, half, float, double, uint8, int8, int16, int32, int64, complex64, string}", "T")
    .SetGradient([](GradientBuilder* g) {
      SetBroadcastGrads(g, g->grad(0), g->grad(0));
      return absl::OkStatus();
    });
SLUICE_BINARY_OP_("AddV2", SLUICE_ARITH_TYPES_, "T").SetGradient([](GradientBuilder* g) {
  SetBroadcastGrads(g, g->grad(0), g->grad(0));
  return absl::OkStatus();
});
SLUICE_BINARY_OP_("Sub", SLUICE_ARITH_TYPES_, "T").SetGradient([](GradientBuilder* g) {
  SetBroadcastGrads(g, g->grad(0), Un(g, "Neg", g->grad(0)));
  return absl::OkStatus();
});
SLUICE_BINARY_OP_("Mul", SLUICE_ARITH_TYPES_, "T").SetGradient([](GradientBuilder* g) {
  SetBroadcastGrads(g, Bin(g, "Mul", g->grad(0), g->input(1)), Bin(g, "Mul", g->input(0), g->grad(0)));
  return absl::OkStatus();
});
static absl::Status DivGrad(GradientBuilder* g) {
  Output x = g->input(0), y = g->input(1), dz = g->grad(0);
  Output dx = Bin(g, "RealDiv", dz, y);
  Output dy = Bin(g, "Mul", dz, Bin(g, "RealDiv", Bin(g, "RealDiv", Un(g, "Neg", x), y), y));
  SetBroadcastGrads(g, dx, dy);
  return absl::OkStatus();
}
SLUICE_BINARY_OP_("Div", SLUICE_ARITH_TYPES_, "T").SetGradient(DivGrad);
SLUICE_BINARY_OP_("RealDiv", SLUICE_ARITH_TYPES_, "T").SetGradient(DivGrad);
SLUICE_BINARY_OP_("FloorDiv", SLUICE_ARITH_TYPES_, "T").SetNotDifferentiable();
// x / y, and 0 where y == 0 (TensorFlow's _DivNoNanGrad: the same rule in
// both partials, so no NaN flows back from a zero divisor either).
SLUICE_BINARY_OP_("DivNoNan", "{bfloat16, half, float, double}", "T").SetGradient([](GradientBuilder* g) {
  Output x = g->input(0), y = g->input(1), dz = g->grad(0);
  Output dx = Bin(g, "DivNoNan", dz, y);
  Output dy = Bin(g, "Mul", dz, Bin(g, "DivNoNan", Bin(g, "DivNoNan", Un(g, "Neg", x), y), y));
  SetBroadcastGrads(g, dx, dy);
  return absl::OkStatus();
});

// TensorFlow's FloorMod also takes uint32 and uint64, which Sluice has not.
SLUICE_BINARY_OP_("FloorMod", "{int8, int16, int32, int64, uint8, uint16, bfloat16, half, float, double}", "T")
    .SetGradient([](GradientBuilder* g) {
      // z = x - floor(x / y) * y: dz/dx = 1, dz/dy = -floor(x / y).
      Output dz = g->grad(0);
      SetBroadcastGrads(g, dz, Bin(g, "Mul", dz, Un(g, "Neg", Bin(g, "FloorDiv", g->input(0), g->input(1)))));
      return absl::OkStatus();
    });
static absl::Status MaxMinGrad(GradientBuilder* g, const char* cmp) {
  Output x = g->input(0), y = g->input(1), dz = g->grad(0);
  const DataType t = x.dtype();
  Output xmask = CastTo(g, Bin(g, cmp, x, y), t);
  Output ymask = Bin(g, "Sub", One(g, t), xmask);
  SetBroadcastGrads(g, Bin(g, "Mul", dz, xmask), Bin(g, "Mul", dz, ymask));
  return absl::OkStatus();
}
SLUICE_BINARY_OP_("Maximum", SLUICE_REAL_TYPES_, "T").SetGradient([](GradientBuilder* g) {
  return MaxMinGrad(g, "GreaterEqual");
});
SLUICE_BINARY_OP_("Minimum", SLUICE_REAL_TYPES_, "T").SetGradient([](GradientBuilder* g) {
  return MaxMinGrad(g, "LessEqual");
});
SLUICE_BINARY_OP_("Pow", "{bfloat16, half, float, double, int8, int16, int32, int64, complex64}", "T")
    .SetGradient([](GradientBuilder* g) {
      Output x = g->input(0), y = g->input(1), z = g->output(0), dz = g->grad(0);
      const DataType t = x.dtype();
      // dx = dz * y * x^(y-1); dy = dz * z * log(x) where x > 0, else 0.
      Output dx = Bin(g, "Mul", dz, Bin(g, "Mul", y, Bin(g, "Pow", x, Bin(g, "Sub", y, One(g, t)))));
      Output positive = CastTo(g, Bin(g, "Greater", x, One(g, t, 0)), t);
      Output safe_x = Bin(g, "Add", Bin(g, "Mul", x, positive), Bin(g, "Sub", One(g, t), positive));
      Output dy = Bin(g, "Mul", dz, Bin(g, "Mul", z, Un(g, "Log", safe_x)));
      SetBroadcastGrads(g, dx, dy);
      return absl::OkStatus();
    });
SLUICE_BINARY_OP_("SquaredDifference", "{bfloat16, half, float, double, int32, int64, complex64}", "T")
    .SetGradient([](GradientBuilder* g) {
      Output x = g->input(0), y = g->input(1), dz = g->grad(0);
      Output d = Bin(g, "Mul", Bin(g, "Mul", One(g, x.dtype(), 2), dz), Bin(g, "Sub", x, y));
      SetBroadcastGrads(g, d, Un(g, "Neg", d));
      return absl::OkStatus();
    });

// atan2(y, x) (inputs named x and y as TensorFlow's are): the angle of the
// point (x = input 1, y = input 0). d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 +
// y^2) (TensorFlow's _Atan2Grad).
REGISTER_OP("Atan2")
    .Input("y: T")
    .Input("x: T")
    .Output("z: T")
    .Attr("T: {bfloat16, half, float, double}")
    .SetShapeFn(shape_fns::BroadcastBinary)
    .SetGradient([](GradientBuilder* g) {
      Output y = g->input(0), x = g->input(1), dz = g->grad(0);
      Output scale = Bin(g, "RealDiv", dz, Bin(g, "AddV2", Un(g, "Square", x), Un(g, "Square", y)));
      SetBroadcastGrads(g, Bin(g, "Mul", x, scale), Un(g, "Neg", Bin(g, "Mul", y, scale)));
      return absl::OkStatus();
    });
// polygamma(a, x), the a-th derivative of digamma at x, for whole a >= 0 (NaN
// otherwise). Differentiable in x only: d/dx = polygamma(a + 1, x)
// (TensorFlow's _PolygammaGrad). half and bfloat16 beyond TensorFlow's
// types: Digamma's gradient of those types needs them.
REGISTER_OP("Polygamma")
    .Input("a: T")
    .Input("x: T")
    .Output("z: T")
    .Attr("T: {bfloat16, half, float, double}")
    .SetShapeFn(shape_fns::BroadcastBinary)
    .SetGradient([](GradientBuilder* g) {
      Output a = g->input(0), x = g->input(1);
      Output next = Bin(g, "Polygamma", Bin(g, "AddV2", a, One(g, a.dtype())), x);
      SetBroadcastGrads(g, Output(), Bin(g, "Mul", g->grad(0), next));
      return absl::OkStatus();
    });

SLUICE_BINARY_OP_("Less", SLUICE_REAL_TYPES_, "bool").SetNotDifferentiable();
SLUICE_BINARY_OP_("LessEqual", SLUICE_REAL_TYPES_, "bool").SetNotDifferentiable();
SLUICE_BINARY_OP_("Greater", SLUICE_REAL_TYPES_, "bool").SetNotDifferentiable();
SLUICE_BINARY_OP_("GreaterEqual", SLUICE_REAL_TYPES_, "bool").SetNotDifferentiable();
REGISTER_OP("Equal")
    .Input("x: T")
    .Input("y: T")
    .Output("z: bool")
    .Attr("incompatible_shape_error: bool = true")
    .Attr("T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64, complex64, bool, string}")
    .SetShapeFn(EqualityShape)
    .SetNotDifferentiable();
REGISTER_OP("NotEqual")
    .Input("x: T")
    .Input("y: T")
    .Output("z: bool")
    .Attr("incompatible_shape_error: bool = true")
    .Attr("T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64, complex64, bool, string}")
    .SetShapeFn(EqualityShape)
    .SetNotDifferentiable();
REGISTER_OP("LogicalAnd")
    .Input("x: bool")
    .Input("y: bool")
    .Output("z: bool")
    .SetShapeFn(shape_fns::BroadcastBinary)
    .SetNotDifferentiable();
REGISTER_OP("LogicalOr")
    .Input("x: bool")
    .Input("y: bool")
    .Output("z: bool")
    .SetShapeFn(shape_fns::BroadcastBinary)
    .SetNotDifferentiable();
REGISTER_OP("LogicalNot").Input("x: bool").Output("y: bool").SetShapeFn(shape_fns::Unchanged).SetNotDifferentiable();

// ---- Unary ops ----

#define SLUICE_UNARY_OP_(NAME, TYPES) \
  REGISTER_OP(NAME).Input("x: T").Output("y: T").Attr("T: " TYPES).SetShapeFn(shape_fns::Unchanged)
#define SLUICE_SIGNED_TYPES_ "{bfloat16, half, float, double, int8, int16, int32, int64, complex64}"

SLUICE_UNARY_OP_("Neg", SLUICE_SIGNED_TYPES_).SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Un(g, "Neg", g->grad(0)));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Abs", "{bfloat16, half, float, double, int8, int16, int32, int64}")
    .SetGradient([](GradientBuilder* g) {
      Output x = g->input(0);
      const DataType t = x.dtype();
      Output sign = Bin(g, "Sub", CastTo(g, Bin(g, "Greater", x, One(g, t, 0)), t),
                        CastTo(g, Bin(g, "Less", x, One(g, t, 0)), t));
      g->SetInputGrad(0, Bin(g, "Mul", g->grad(0), sign));
      return absl::OkStatus();
    });
SLUICE_UNARY_OP_("Square", SLUICE_SIGNED_TYPES_).SetGradient([](GradientBuilder* g) {
  Output x = g->input(0);
  g->SetInputGrad(0, Bin(g, "Mul", g->grad(0), Bin(g, "Mul", One(g, x.dtype(), 2), x)));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Sqrt", SLUICE_FLOAT_TYPES_).SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Bin(g, "SqrtGrad", g->output(0), g->grad(0)));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Rsqrt", SLUICE_FLOAT_TYPES_).SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Bin(g, "RsqrtGrad", g->output(0), g->grad(0)));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Exp", SLUICE_FLOAT_TYPES_).SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Bin(g, "Mul", g->grad(0), g->output(0)));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Log", SLUICE_FLOAT_TYPES_).SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Bin(g, "Mul", g->grad(0), Un(g, "Reciprocal", g->input(0))));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Log1p", SLUICE_FLOAT_TYPES_).SetGradient([](GradientBuilder* g) {
  Output x = g->input(0);
  g->SetInputGrad(0, Bin(g, "Mul", g->grad(0), Un(g, "Reciprocal", Bin(g, "AddV2", One(g, x.dtype()), x))));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Tanh", SLUICE_FLOAT_TYPES_).SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Bin(g, "TanhGrad", g->output(0), g->grad(0)));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Sigmoid", SLUICE_FLOAT_TYPES_).SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Bin(g, "SigmoidGrad", g->output(0), g->grad(0)));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Sin", SLUICE_FLOAT_TYPES_).SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Bin(g, "Mul", g->grad(0), Un(g, "Cos", g->input(0))));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Cos", SLUICE_FLOAT_TYPES_).SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Bin(g, "Mul", Un(g, "Neg", g->grad(0)), Un(g, "Sin", g->input(0))));
  return absl::OkStatus();
});
// -1, 0 or 1 (complex: x / |x|). Its gradient is zero (TensorFlow's _SignGrad).
SLUICE_UNARY_OP_("Sign", "{bfloat16, half, float, double, int8, int16, int32, int64, complex64}")
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, Un(g, "ZerosLike", g->input(0)));
      return absl::OkStatus();
    });
// Rounding: their gradient is None in TensorFlow (_FloorGrad, _CeilGrad,
// _RoundGrad): nothing flows through them. Round rounds half to even.
SLUICE_UNARY_OP_("Floor", "{bfloat16, half, float, double}").SetNotDifferentiable();
SLUICE_UNARY_OP_("Ceil", "{bfloat16, half, float, double}").SetNotDifferentiable();
SLUICE_UNARY_OP_("Round", "{bfloat16, half, float, double, int8, int16, int32, int64}").SetNotDifferentiable();
// d erfc(x)/dx = -2 / sqrt(pi) * exp(-x^2).
SLUICE_UNARY_OP_("Erfc", "{bfloat16, half, float, double}").SetGradient([](GradientBuilder* g) {
  Output x = g->input(0);
  Output scale = One(g, x.dtype(), -1.1283791670955126);  // -2 / sqrt(pi)
  g->SetInputGrad(0, Bin(g, "Mul", Bin(g, "Mul", g->grad(0), scale), Un(g, "Exp", Un(g, "Neg", Un(g, "Square", x)))));
  return absl::OkStatus();
});
// d erf(x)/dx = 2 / sqrt(pi) * exp(-x^2).
SLUICE_UNARY_OP_("Erf", "{bfloat16, half, float, double}").SetGradient([](GradientBuilder* g) {
  Output x = g->input(0);
  Output scale = One(g, x.dtype(), 1.1283791670955126);  // 2 / sqrt(pi)
  g->SetInputGrad(0, Bin(g, "Mul", Bin(g, "Mul", g->grad(0), scale), Un(g, "Exp", Un(g, "Neg", Un(g, "Square", x)))));
  return absl::OkStatus();
});
// log|Gamma(x)|; its derivative is digamma(x) (TensorFlow's _LgammaGrad).
SLUICE_UNARY_OP_("Lgamma", "{bfloat16, half, float, double}").SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Bin(g, "Mul", g->grad(0), Un(g, "Digamma", g->input(0))));
  return absl::OkStatus();
});
// d digamma(x)/dx = polygamma(1, x) (TensorFlow's _DigammaGrad).
SLUICE_UNARY_OP_("Digamma", "{bfloat16, half, float, double}").SetGradient([](GradientBuilder* g) {
  Output x = g->input(0);
  g->SetInputGrad(0, Bin(g, "Mul", g->grad(0), Bin(g, "Polygamma", One(g, x.dtype()), x)));
  return absl::OkStatus();
});
SLUICE_UNARY_OP_("Reciprocal", SLUICE_FLOAT_TYPES_).SetGradient([](GradientBuilder* g) {
  g->SetInputGrad(0, Bin(g, "Mul", g->grad(0), Un(g, "Neg", Un(g, "Square", g->output(0)))));
  return absl::OkStatus();
});

// ---- Gradient helper ops: (y, dy) -> dx, with their own gradients ----

#define SLUICE_GRAD_OP_(NAME)                                                                            \
  REGISTER_OP(NAME).Input("y: T").Input("dy: T").Output("z: T").Attr("T: " SLUICE_FLOAT_TYPES_).SetShapeFn( \
      shape_fns::Unchanged)

// z = dy * (1 - y^2): dz/dy = -2 y dy; dz/d(dy) = 1 - y^2.
SLUICE_GRAD_OP_("TanhGrad").SetGradient([](GradientBuilder* g) {
  Output y = g->input(0), dy = g->input(1), gz = g->grad(0);
  g->SetInputGrad(0, Bin(g, "Mul", gz, Bin(g, "Mul", One(g, y.dtype(), -2), Bin(g, "Mul", dy, y))));
  g->SetInputGrad(1, Bin(g, "TanhGrad", y, gz));
  return absl::OkStatus();
});
// z = dy * y * (1 - y): dz/dy = dy (1 - 2y); dz/d(dy) = y (1 - y).
SLUICE_GRAD_OP_("SigmoidGrad").SetGradient([](GradientBuilder* g) {
  Output y = g->input(0), dy = g->input(1), gz = g->grad(0);
  Output one_minus_2y = Bin(g, "Sub", One(g, y.dtype()), Bin(g, "Mul", One(g, y.dtype(), 2), y));
  g->SetInputGrad(0, Bin(g, "Mul", gz, Bin(g, "Mul", dy, one_minus_2y)));
  g->SetInputGrad(1, Bin(g, "SigmoidGrad", y, gz));
  return absl::OkStatus();
});
// z = dy * 0.5 / y: dz/dy = -z / y; dz/d(dy) = 0.5 / y.
SLUICE_GRAD_OP_("SqrtGrad").SetGradient([](GradientBuilder* g) {
  Output y = g->input(0), z = g->output(0), gz = g->grad(0);
  g->SetInputGrad(0, Un(g, "Neg", Bin(g, "Mul", gz, Bin(g, "RealDiv", z, y))));
  g->SetInputGrad(1, Bin(g, "SqrtGrad", y, gz));
  return absl::OkStatus();
});
// z = -0.5 * dy * y^3: dz/dy = -1.5 dy y^2; dz/d(dy) = -0.5 y^3.
SLUICE_GRAD_OP_("RsqrtGrad").SetGradient([](GradientBuilder* g) {
  Output y = g->input(0), dy = g->input(1), gz = g->grad(0);
  g->SetInputGrad(0, Bin(g, "Mul", gz, Bin(g, "Mul", One(g, y.dtype(), -1.5), Bin(g, "Mul", dy, Un(g, "Square", y)))));
  g->SetInputGrad(1, Bin(g, "RsqrtGrad", y, gz));
  return absl::OkStatus();
});

// ---- AddN, Select, Cast, BroadcastGradientArgs ----

REGISTER_OP("AddN")
    .Input("inputs: N * T")
    .Output("sum: T")
    .Attr("N: int >= 1")
    .Attr("T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64, complex64}")
    .SetShapeFn([](InferenceContext* c) {
      PartialShape merged = c->input(0);
      for (int i = 1; i < c->num_inputs(); ++i) {
        auto m = merged.Merge(c->input(i));
        if (!m.ok()) {
          return c->Error(absl::StrCat("AddN inputs must have the same shape: input 0 is ",
                                       c->input(0).DebugString(), ", input ", i, " is ", c->input(i).DebugString()));
        }
        merged = *m;
      }
      c->set_output(0, merged);
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      for (int i = 0; i < g->num_inputs(); ++i) g->SetInputGrad(i, g->grad(0));
      return absl::OkStatus();
    });

REGISTER_OP("Select")
    .Input("condition: bool")
    .Input("t: T")
    .Input("e: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn([](InferenceContext* c) {
      auto m = c->input(1).Merge(c->input(2));
      if (!m.ok()) {
        return c->Error(absl::StrCat("'t' and 'e' must have the same shape, got ", c->input(1).DebugString(),
                                     " and ", c->input(2).DebugString()));
      }
      c->set_output(0, *m);
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      Output cond = g->input(0), dz = g->grad(0);
      Output zeros = g->b().Op("zeros", "ZerosLike", {dz});
      g->SetInputGrad(1, g->b().Op("dt", "Select", {cond, dz, zeros}));
      g->SetInputGrad(2, g->b().Op("de", "Select", {cond, zeros, dz}));
      return absl::OkStatus();
    });

// Select with numpy broadcasting of all three inputs (tf.where in TF 2).
REGISTER_OP("SelectV2")
    .Input("condition: bool")
    .Input("t: T")
    .Input("e: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn([](InferenceContext* c) {
      auto te = shape_fns::Broadcast(c->input(1), c->input(2));
      if (!te.ok()) {
        return c->Error(absl::StrCat("'t' ", c->input(1).DebugString(), " and 'e' ", c->input(2).DebugString(),
                                     " are not broadcast-compatible"));
      }
      auto out = shape_fns::Broadcast(c->input(0), *te);
      if (!out.ok()) {
        return c->Error(absl::StrCat("condition ", c->input(0).DebugString(), " and 't'/'e' ", te->DebugString(),
                                     " are not broadcast-compatible"));
      }
      c->set_output(0, *out);
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      // As TensorFlow's _SelectGradV2: route dz by the condition, then sum
      // over the axes along which t or e was broadcast to the output.
      GraphBuilder& b = g->b();
      Output cond = g->input(0), dz = g->grad(0);
      Output zero = One(g, dz.dtype(), 0);
      Output sz = b.Op("shape_z", "Shape", {g->output(0)});
      for (int i : {1, 2}) {
        Output routed = i == 1 ? b.Op("dt", "SelectV2", {cond, dz, zero}) : b.Op("de", "SelectV2", {cond, zero, dz});
        Output sx = b.Op("shape", "Shape", {g->input(i)});
        Node* args = b.AddNode("broadcast_args", "BroadcastGradientArgs", {sx, sz});
        if (args == nullptr) return b.status();
        g->SetInputGrad(i, b.Op("reshape", "Reshape", {b.Op("sum", "Sum", {routed, Output{args, 0}}), sx}));
      }
      return absl::OkStatus();
    });

REGISTER_OP("Cast")
    .Input("x: SrcT")
    .Output("y: DstT")
    .Attr("SrcT: type")
    .Attr("DstT: type")
    .Attr("Truncate: bool = false")
    .SetShapeFn(shape_fns::Unchanged)
    .SetGradient([](GradientBuilder* g) {
      // Differentiable only between floating types (as TensorFlow).
      DataType src, dst;
      absl::Status s = g->GetAttr("SrcT", &src);
      if (!s.ok()) return s;
      s = g->GetAttr("DstT", &dst);
      if (!s.ok()) return s;
      if (DataTypeIsFloating(src) && DataTypeIsFloating(dst)) g->SetInputGrad(0, CastTo(g, g->grad(0), src));
      return absl::OkStatus();
    });

REGISTER_OP("BroadcastGradientArgs")
    .Input("s0: T")
    .Input("s1: T")
    .Output("r0: T")
    .Output("r1: T")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, PartialShape::UnknownOfRank(1));
      c->set_output(1, PartialShape::UnknownOfRank(1));
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

// ---- Matrix products ----

REGISTER_OP("MatMul")
    .Input("a: T")
    .Input("b: T")
    .Output("product: T")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("T: {bfloat16, half, float, double, int32, int64, complex64}")
    // TensorFlow (2.15+) marks MatMuls built by gradient functions; a hint with
    // no effect on the result, accepted so TensorFlow's GraphDefs load unchanged.
    .Attr("grad_a: bool = false")
    .Attr("grad_b: bool = false")
    .SetShapeFn(MatMulShape)
    .SetGradient(MatMulGrad);

REGISTER_OP("BatchMatMul")
    .Input("x: T")
    .Input("y: T")
    .Output("output: T")
    .Attr("T: {bfloat16, half, float, double, int32, int64, complex64}")
    .Attr("adj_x: bool = false")
    .Attr("adj_y: bool = false")
    .Attr("grad_x: bool = false")  // TensorFlow's gradient hints, as MatMul's grad_a/grad_b
    .Attr("grad_y: bool = false")
    .SetShapeFn([](InferenceContext* c) { return BatchMatMulShape(c, false); })
    .SetGradient([](GradientBuilder* g) { return BatchMatMulGrad(g, "BatchMatMul", false); });

REGISTER_OP("BatchMatMulV2")
    .Input("x: T")
    .Input("y: T")
    .Output("output: T")
    .Attr("T: {bfloat16, half, float, double, int16, int32, int64, complex64}")
    .Attr("adj_x: bool = false")
    .Attr("adj_y: bool = false")
    .Attr("grad_x: bool = false")  // TensorFlow's gradient hints, as MatMul's grad_a/grad_b
    .Attr("grad_y: bool = false")
    .SetShapeFn([](InferenceContext* c) { return BatchMatMulShape(c, true); })
    .SetGradient([](GradientBuilder* g) { return BatchMatMulGrad(g, "BatchMatMulV2", true); });

}  // namespace sluice
