// Neural-network ops: activations (Relu, Relu6, LeakyRelu, Elu, Selu, Softplus
// and their Grad helpers), Softmax, LogSoftmax, the two softmax
// cross-entropies, BiasAdd(+Grad), Conv2D and its backprop ops, MaxPool/AvgPool
// and their Grad ops (NHWC or NCHW), DataFormatVecPermute, L2Loss, InTopK(V2),
// TopKV2, and Sluice's Dropout.
// Signatures, attr names and defaults follow TensorFlow's
// tensorflow/core/ops/nn_ops.cc, so TensorFlow GraphDefs run unchanged; each
// op's gradient is registered beside it (TensorFlow's nn_grad.py).
//
// Gradients use other families' ops by name: Mul, Sub, Neg, Exp, RealDiv,
// AddV2, Less, Select, Sigmoid, Sum, Prod, Maximum, Cast (math), Shape, Rank,
// ExpandDims, ZerosLike, Slice, ConcatV2, GatherV2, Range, UnsortedSegmentSum
// (array).
// Thread safety: registrations run at static initialization.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

absl::Status FirstError(std::initializer_list<absl::Status> statuses) {
  for (const absl::Status& s : statuses) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// ---- Shape functions ----

// Output 0 (and 1): [batch] and the logits' shape, for the cross-entropies.
absl::Status XentShape(InferenceContext* c) {
  PartialShape logits;
  absl::Status s = c->WithRank(0, 2, &logits);
  if (!s.ok()) return s;
  const PartialShape& labels = c->input(1);
  const bool sparse = c->node_def().op() == "SparseSoftmaxCrossEntropyWithLogits";
  if (sparse) {
    PartialShape l;
    s = c->WithRank(1, 1, &l);
    if (!s.ok()) return s;
    if (logits.rank_known() && l.rank_known() && logits.dim(0) != kUnknownDim && l.dim(0) != kUnknownDim &&
        logits.dim(0) != l.dim(0)) {
      return c->Error(absl::StrCat("logits and labels must have the same first dimension, got logits shape ",
                                   logits.DebugString(), " and labels shape ", l.DebugString()));
    }
  } else if (!logits.IsCompatibleWith(labels)) {
    return c->Error(absl::StrCat("logits and labels must be the same size: logits ", logits.DebugString(),
                                 " vs labels ", labels.DebugString()));
  }
  int64_t batch = logits.rank_known() ? logits.dim(0) : kUnknownDim;
  c->set_output(0, PartialShape::FromDims({batch}));
  c->set_output(1, logits.rank_known() ? logits : PartialShape::UnknownOfRank(2));
  return absl::OkStatus();
}

absl::Status BiasAddShape(InferenceContext* c) {
  std::string format;
  absl::Status s = c->GetAttr("data_format", &format);
  if (!s.ok()) return s;
  if (format != "NHWC" && format != "NCHW") return c->Error(absl::StrCat("data_format must be NHWC or NCHW, got ", format));
  const PartialShape& value = c->input(0);
  PartialShape bias;
  s = c->WithRank(1, 1, &bias);
  if (!s.ok()) return s;
  if (value.rank_known()) {
    if (value.rank() < 2) return c->Error(absl::StrCat("input must be at least 2-D, got ", value.DebugString()));
    int channel_dim = format == "NCHW" ? 1 : value.rank() - 1;
    int64_t ch = value.dim(channel_dim);
    if (bias.rank_known() && ch != kUnknownDim && bias.dim(0) != kUnknownDim && ch != bias.dim(0)) {
      return c->Error(absl::StrCat("must provide as many biases as the channel dimension of the input: bias ",
                                   bias.DebugString(), " vs input ", value.DebugString()));
    }
  }
  c->set_output(0, value);
  return absl::OkStatus();
}

absl::Status BiasAddGradShape(InferenceContext* c) {
  std::string format;
  absl::Status s = c->GetAttr("data_format", &format);
  if (!s.ok()) return s;
  const PartialShape& dy = c->input(0);
  if (!dy.rank_known()) {
    c->set_output(0, PartialShape::UnknownOfRank(1));
    return absl::OkStatus();
  }
  if (dy.rank() < 2) return c->Error(absl::StrCat("input must be at least 2-D, got ", dy.DebugString()));
  c->set_output(0, PartialShape::FromDims({dy.dim(format == "NCHW" ? 1 : dy.rank() - 1)}));
  return absl::OkStatus();
}

// TensorFlow's GetWindowedOutputSize for dilation 1; -1 when unknown.
absl::Status WindowedOutputSize(InferenceContext* c, int64_t in, int64_t k, int64_t stride, const std::string& padding,
                                int64_t* out) {
  if (in == kUnknownDim || k == kUnknownDim) {
    *out = kUnknownDim;
    return absl::OkStatus();
  }
  if (padding == "VALID") {
    if (k > in) {
      return c->Error(absl::StrCat("window size ", k, " is larger than the input size ", in, " (VALID padding)"));
    }
    *out = (in - k) / stride + 1;
  } else {
    *out = in == 0 ? 0 : (in - 1) / stride + 1;
  }
  return absl::OkStatus();
}

// Where a 4-D conv/pool tensor keeps its dimensions: NHWC or NCHW (filters
// are HWIO in both).
struct DimIndex {
  int batch = 0, height = 1, width = 2, channels = 3;
};

DimIndex DimsOf(const std::string& format) {
  return format == "NCHW" ? DimIndex{0, 2, 3, 1} : DimIndex{};
}

// Checks padding, data_format and a strides/ksize list (`what`); sets *dims
// to where the node's format keeps each dimension.
absl::Status CheckStridesAndFormat(InferenceContext* c, const std::vector<int64_t>& strides, const char* what,
                                   DimIndex* dims = nullptr) {
  std::string format, padding;
  absl::Status s = c->GetAttr("data_format", &format);
  if (!s.ok()) return s;
  s = c->GetAttr("padding", &padding);
  if (!s.ok()) return s;
  if (padding != "SAME" && padding != "VALID") {
    return c->Error(absl::StrCat("padding ", padding, " is not supported (SAME or VALID)"));
  }
  if (format != "NHWC" && format != "NCHW") {
    return c->Error(absl::StrCat("data_format must be NHWC or NCHW, got ", format));
  }
  const DimIndex d = DimsOf(format);
  if (dims != nullptr) *dims = d;
  if (strides.size() != 4) return c->Error(absl::StrCat(what, " must have 4 elements"));
  for (int64_t v : strides) {
    if (v <= 0) return c->Error(absl::StrCat(what, " must be positive, got ", v));
  }
  if (strides[d.batch] != 1 || strides[d.channels] != 1) {
    return c->Error(absl::StrCat(what, " in the batch and depth dimensions must be 1 (", format, ")"));
  }
  return absl::OkStatus();
}

// A 4-D shape with the format's layout.
PartialShape Shape4(const DimIndex& d, int64_t batch, int64_t height, int64_t width, int64_t channels) {
  std::vector<int64_t> dims(4);
  dims[d.batch] = batch;
  dims[d.height] = height;
  dims[d.width] = width;
  dims[d.channels] = channels;
  return PartialShape::FromDims(dims);
}

// Conv2D's output shape, or with `depthwise` DepthwiseConv2dNative's (a
// filter [h, w, in_channels, multiplier]: in_channels * multiplier outputs).
absl::Status ConvShape(InferenceContext* c, bool depthwise) {
  std::vector<int64_t> strides, dilations;
  std::string padding;
  absl::Status s = FirstError({c->GetAttr("strides", &strides), c->GetAttr("padding", &padding),
                               c->GetAttr("dilations", &dilations)});
  if (!s.ok()) return s;
  DimIndex d;
  s = CheckStridesAndFormat(c, strides, "strides", &d);
  if (!s.ok()) return s;
  for (int64_t d : dilations) {
    if (d != 1) return c->Error("dilations other than 1 are not supported");
  }
  if (padding == "EXPLICIT") return c->Error("EXPLICIT padding is not supported");
  PartialShape in, filter;
  s = c->WithRank(0, 4, &in);
  if (!s.ok()) return s;
  s = c->WithRank(1, 4, &filter);
  if (!s.ok()) return s;
  if (!in.rank_known() || !filter.rank_known()) {
    c->set_output(0, PartialShape::UnknownOfRank(4));
    return absl::OkStatus();
  }
  const int64_t depth = in.dim(d.channels);
  if (depth != kUnknownDim && filter.dim(2) != kUnknownDim && depth != filter.dim(2)) {
    return c->Error(absl::StrCat("input depth ", depth, " does not match the filter's input depth ", filter.dim(2)));
  }
  int64_t oh, ow;
  s = WindowedOutputSize(c, in.dim(d.height), filter.dim(0), strides[d.height], padding, &oh);
  if (!s.ok()) return s;
  s = WindowedOutputSize(c, in.dim(d.width), filter.dim(1), strides[d.width], padding, &ow);
  if (!s.ok()) return s;
  int64_t out_channels = filter.dim(3);
  if (depthwise) {
    const int64_t multiplier = filter.dim(3), channels = depth != kUnknownDim ? depth : filter.dim(2);
    if (multiplier > 0 && channels > kMaxTensorElements / multiplier) {
      return c->Error(absl::StrCat(channels, " channels times multiplier ", multiplier,
                                   " is more output channels than a tensor can hold"));
    }
    out_channels = multiplier == kUnknownDim || channels == kUnknownDim ? kUnknownDim : channels * multiplier;
  }
  c->set_output(0, Shape4(d, in.dim(d.batch), oh, ow, out_channels));
  return absl::OkStatus();
}

absl::Status Conv2DShape(InferenceContext* c) { return ConvShape(c, false); }

// Output: the shape held by the int32 input `shape_input` when known.
absl::Status ShapeFromInput(InferenceContext* c, int shape_input) {
  const Tensor* t = c->input_tensor(shape_input);
  if (t == nullptr || t->dtype() != DT_INT32 || t->dims() != 1) {
    // A shape computed at run time (a gradient's Shape(x)): x's partial shape.
    const PartialShape& as_shape = c->input_as_shape(shape_input);
    c->set_output(0, as_shape.rank() == 4 ? as_shape : PartialShape::UnknownOfRank(4));
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < t->NumElements(); ++i) {
    int32_t d = t->data<int32_t>()[i];
    if (d < 0) return c->Error(absl::StrCat("shape input has a negative dimension ", d));
    dims.push_back(d);
  }
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

absl::Status ConvBackpropShape(InferenceContext* c, int shape_input) {
  std::vector<int64_t> strides;
  absl::Status s = c->GetAttr("strides", &strides);
  if (!s.ok()) return s;
  s = CheckStridesAndFormat(c, strides, "strides");
  if (!s.ok()) return s;
  return ShapeFromInput(c, shape_input);
}

absl::Status PoolShape(InferenceContext* c) {
  std::vector<int64_t> ksize, strides;
  std::string padding;
  absl::Status s = FirstError({c->GetAttr("ksize", &ksize), c->GetAttr("strides", &strides),
                               c->GetAttr("padding", &padding)});
  if (!s.ok()) return s;
  DimIndex d;
  s = CheckStridesAndFormat(c, strides, "strides", &d);
  if (!s.ok()) return s;
  s = CheckStridesAndFormat(c, ksize, "ksize");
  if (!s.ok()) return s;
  PartialShape in;
  s = c->WithRank(0, 4, &in);
  if (!s.ok()) return s;
  if (!in.rank_known()) {
    c->set_output(0, PartialShape::UnknownOfRank(4));
    return absl::OkStatus();
  }
  int64_t oh, ow;
  s = WindowedOutputSize(c, in.dim(d.height), ksize[d.height], strides[d.height], padding, &oh);
  if (!s.ok()) return s;
  s = WindowedOutputSize(c, in.dim(d.width), ksize[d.width], strides[d.width], padding, &ow);
  if (!s.ok()) return s;
  c->set_output(0, Shape4(d, in.dim(d.batch), oh, ow, in.dim(d.channels)));
  return absl::OkStatus();
}

absl::Status PoolGradShape(InferenceContext* c, bool from_shape_input) {
  std::vector<int64_t> ksize, strides;
  absl::Status s = FirstError({c->GetAttr("ksize", &ksize), c->GetAttr("strides", &strides)});
  if (!s.ok()) return s;
  s = CheckStridesAndFormat(c, strides, "strides");
  if (!s.ok()) return s;
  s = CheckStridesAndFormat(c, ksize, "ksize");
  if (!s.ok()) return s;
  if (from_shape_input) return ShapeFromInput(c, 0);
  PartialShape in;
  s = c->WithRank(0, 4, &in);
  if (!s.ok()) return s;
  c->set_output(0, in);
  return absl::OkStatus();
}

absl::Status InTopKShape(InferenceContext* c) {
  PartialShape predictions, targets;
  absl::Status s = c->WithRank(0, 2, &predictions);
  if (!s.ok()) return s;
  s = c->WithRank(1, 1, &targets);
  if (!s.ok()) return s;
  int64_t batch = predictions.rank_known() ? predictions.dim(0) : kUnknownDim;
  if (targets.rank_known() && batch != kUnknownDim && targets.dim(0) != kUnknownDim && targets.dim(0) != batch) {
    return c->Error(absl::StrCat("predictions ", predictions.DebugString(), " and targets ", targets.DebugString(),
                                 " must have the same batch size"));
  }
  c->set_output(0, PartialShape::FromDims({batch}));
  return absl::OkStatus();
}

// Output 0: the common shape of inputs 0 and 1, which must match.
absl::Status SameShapeBinary(InferenceContext* c) {
  auto merged = c->input(0).Merge(c->input(1));
  if (!merged.ok()) {
    return c->Error(absl::StrCat("gradients and features must have the same shape: ", c->input(0).DebugString(),
                                 " vs ", c->input(1).DebugString()));
  }
  c->set_output(0, *merged);
  return absl::OkStatus();
}

// ---- Gradient helpers ----

Output IntShape(GradientBuilder* g, Output x) {
  return g->b().Op("shape", "Shape", {x}, {{"out_type", MakeAttr(DT_INT32)}});
}

// sum(x, axis=-1, keep_dims=true)
Output SumLastKeepDims(GradientBuilder* g, Output x) {
  Output axis = g->b().Scalar<int32_t>("axis", -1);
  return g->b().Op("sum", "Sum", {x, axis}, {{"keep_dims", MakeAttr(true)}});
}

Output ExpandLast(GradientBuilder* g, Output x) {
  return g->b().Op("expand", "ExpandDims", {x, g->b().Scalar<int32_t>("dim", -1)});
}

// Softmax's Jacobian-vector product: (v - sum(v * s, -1)) * s.
Output SoftmaxJvp(GradientBuilder* g, Output v, Output s) {
  GraphBuilder& b = g->b();
  Output dot = SumLastKeepDims(g, b.Op("vs", "Mul", {v, s}));
  return b.Op("softmax_grad", "Mul", {b.Op("centered", "Sub", {v, dot}), s});
}

#define SLUICE_CONV_ATTRS \
  { "strides", "padding", "explicit_paddings", "data_format", "dilations", "use_cudnn_on_gpu" }
#define SLUICE_POOL_ATTRS \
  { "ksize", "strides", "padding", "explicit_paddings", "data_format" }

}  // namespace

// ---- Activations ----

REGISTER_OP("Relu")
    .Input("features: T")
    .Output("activations: T")
    .Attr("T: {bfloat16, half, float, double, int8, int16, int32, int64, uint8, uint16}")
    .SetShapeFn(shape_fns::Unchanged)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("relu_grad", "ReluGrad", {g->grad(0), g->output(0)}));
      return absl::OkStatus();
    });

// backprops = gradients * (features > 0). Differentiable in `gradients`
// (the same mask); with respect to `features` it is zero almost everywhere,
// and no gradient is returned for it.
REGISTER_OP("ReluGrad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr("T: {bfloat16, half, float, double, int8, int16, int32, int64, uint8, uint16}")
    .SetShapeFn(SameShapeBinary)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("relu_grad", "ReluGrad", {g->grad(0), g->input(1)}));
      return absl::OkStatus();
    });

REGISTER_OP("Elu")
    .Input("features: T")
    .Output("activations: T")
    .Attr("T: {bfloat16, half, float, double}")
    .SetShapeFn(shape_fns::Unchanged)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("elu_grad", "EluGrad", {g->grad(0), g->output(0)}));
      return absl::OkStatus();
    });

// backprops = gradients * (outputs < 0 ? outputs + 1 : 1), where outputs =
// Elu(features). Gradient w.r.t. outputs: gradients * grad where outputs < 0,
// built as v - ReluGrad(v, outputs) with v = grad * gradients.
REGISTER_OP("EluGrad")
    .Input("gradients: T")
    .Input("outputs: T")
    .Output("backprops: T")
    .Attr("T: {bfloat16, half, float, double}")
    .SetShapeFn(SameShapeBinary)
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      g->SetInputGrad(0, b.Op("elu_grad", "EluGrad", {g->grad(0), g->input(1)}));
      Output v = b.Op("v", "Mul", {g->grad(0), g->input(0)});
      g->SetInputGrad(1, b.Op("negative_part", "Sub", {v, b.Op("positive_part", "ReluGrad", {v, g->input(1)})}));
      return absl::OkStatus();
    });

// TensorFlow's Relu6 and Relu6Grad also take uint32 and uint64, which Sluice
// has not.
REGISTER_OP("Relu6")
    .Input("features: T")
    .Output("activations: T")
    .Attr("T: {bfloat16, half, float, double, int8, int16, int32, int64, uint8, uint16}")
    .SetShapeFn(shape_fns::Unchanged)
    .SetGradient([](GradientBuilder* g) {
      // The outputs lie in (0, 6) exactly where the features do.
      g->SetInputGrad(0, g->b().Op("relu6_grad", "Relu6Grad", {g->grad(0), g->output(0)}));
      return absl::OkStatus();
    });

// backprops = gradients where 0 < features < 6, else 0. Linear in
// `gradients` (the same mask); zero almost everywhere in `features`.
REGISTER_OP("Relu6Grad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr("T: {bfloat16, half, float, double, int8, int16, int32, int64, uint8, uint16}")
    .SetShapeFn(SameShapeBinary)
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      g->SetInputGrad(0, b.Op("relu6_grad", "Relu6Grad", {g->grad(0), g->input(1)}));
      g->SetInputGrad(1, b.Op("zeros", "ZerosLike", {g->input(1)}));
      return absl::OkStatus();
    });

// features where features > 0, else alpha * features.
REGISTER_OP("LeakyRelu")
    .Input("features: T")
    .Output("activations: T")
    .Attr("alpha: float = 0.2")
    .Attr("T: {half, bfloat16, float, double} = DT_FLOAT")
    .SetShapeFn(shape_fns::Unchanged)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("leaky_relu_grad", "LeakyReluGrad", {g->grad(0), g->input(0)},
                                   g->ForwardAttrs({"alpha"})));
      return absl::OkStatus();
    });

// backprops = gradients where features > 0, else alpha * gradients.
REGISTER_OP("LeakyReluGrad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr("alpha: float = 0.2")
    .Attr("T: {half, bfloat16, float, double} = DT_FLOAT")
    .SetShapeFn(SameShapeBinary)
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      g->SetInputGrad(0, b.Op("leaky_relu_grad", "LeakyReluGrad", {g->grad(0), g->input(1)}, g->ForwardAttrs({"alpha"})));
      g->SetInputGrad(1, b.Op("zeros", "ZerosLike", {g->input(1)}));
      return absl::OkStatus();
    });

// scale * features where features > 0, else scale * alpha * (exp(features) - 1),
// with TensorFlow's constants (Klambauer et al. 2017).
REGISTER_OP("Selu")
    .Input("features: T")
    .Output("activations: T")
    .Attr("T: {half, bfloat16, float, double}")
    .SetShapeFn(shape_fns::Unchanged)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("selu_grad", "SeluGrad", {g->grad(0), g->output(0)}));
      return absl::OkStatus();
    });

// backprops = gradients * (outputs < 0 ? outputs + scale * alpha : scale),
// where outputs = Selu(features). In `outputs` it is linear (slope
// gradients) where outputs < 0, constant elsewhere (TensorFlow's _SeluGradGrad).
REGISTER_OP("SeluGrad")
    .Input("gradients: T")
    .Input("outputs: T")
    .Output("backprops: T")
    .Attr("T: {half, bfloat16, float, double}")
    .SetShapeFn(SameShapeBinary)
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      Output outputs = g->input(1);
      g->SetInputGrad(0, b.Op("selu_grad", "SeluGrad", {g->grad(0), outputs}));
      Output negative = b.Op("negative", "Less", {outputs, b.ScalarOfType("zero", outputs.dtype(), 0)});
      g->SetInputGrad(1, b.Op("select", "Select", {negative, b.Op("mul", "Mul", {g->grad(0), g->input(0)}),
                                                   b.Op("zeros", "ZerosLike", {outputs})}));
      return absl::OkStatus();
    });

// log(1 + exp(features)), computed without overflow.
REGISTER_OP("Softplus")
    .Input("features: T")
    .Output("activations: T")
    .Attr("T: {half, bfloat16, float, double}")
    .SetShapeFn(shape_fns::Unchanged)
    .SetGradient([](GradientBuilder* g) {
      // TensorFlow's _SoftplusGrad: grad * sigmoid(features).
      GraphBuilder& b = g->b();
      g->SetInputGrad(0, b.Op("mul", "Mul", {g->grad(0), b.Op("sigmoid", "Sigmoid", {g->input(0)})}));
      return absl::OkStatus();
    });

// backprops = gradients / (1 + exp(-features)).
REGISTER_OP("SoftplusGrad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr("T: {half, bfloat16, float, double}")
    .SetShapeFn(SameShapeBinary)
    .SetGradient([](GradientBuilder* g) {
      // d/d(gradients) = sigmoid(x); d/dx = gradients * sigmoid'(x) =
      // gradients / (exp(-x) + 2 + exp(x)) (TensorFlow's _SoftplusGradGrad).
      GraphBuilder& b = g->b();
      Output dy = g->input(0), x = g->input(1), grad = g->grad(0);
      g->SetInputGrad(0, b.Op("softplus_grad", "SoftplusGrad", {grad, x}));
      Output denom = b.Op("denom", "AddV2", {b.Op("add", "AddV2", {b.Op("exp_neg", "Exp", {b.Op("neg", "Neg", {x})}),
                                                                  b.ScalarOfType("two", x.dtype(), 2)}),
                                             b.Op("exp", "Exp", {x})});
      g->SetInputGrad(1, b.Op("d2x", "RealDiv", {b.Op("mul", "Mul", {grad, dy}), denom}));
      return absl::OkStatus();
    });

// features / (1 + |features|).
REGISTER_OP("Softsign")
    .Input("features: T")
    .Output("activations: T")
    .Attr("T: {half, bfloat16, float, double}")
    .SetShapeFn(shape_fns::Unchanged)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("softsign_grad", "SoftsignGrad", {g->grad(0), g->input(0)}));
      return absl::OkStatus();
    });

// backprops = gradients / (1 + |features|)^2.
REGISTER_OP("SoftsignGrad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr("T: {half, bfloat16, float, double}")
    .SetShapeFn(SameShapeBinary)
    .SetGradient([](GradientBuilder* g) {
      // d/d(gradients) = 1 / (1 + |x|)^2: SoftsignGrad again; d/dx =
      // -2 gradients sign(x) / (1 + |x|)^3.
      GraphBuilder& b = g->b();
      Output dy = g->input(0), x = g->input(1), grad = g->grad(0);
      g->SetInputGrad(0, b.Op("softsign_grad", "SoftsignGrad", {grad, x}));
      Output denom = b.Op("denom", "AddV2", {b.ScalarOfType("one", x.dtype(), 1), b.Op("abs", "Abs", {x})});
      Output cube = b.Op("cube", "Mul", {denom, b.Op("square", "Square", {denom})});
      Output numer = b.Op("numer", "Mul", {b.Op("mul", "Mul", {grad, dy}),
                                           b.Op("scaled_sign", "Mul", {b.ScalarOfType("minus_two", x.dtype(), -2),
                                                                       b.Op("sign", "Sign", {x})})});
      g->SetInputGrad(1, b.Op("d2x", "RealDiv", {numer, cube}));
      return absl::OkStatus();
    });

// ---- Softmax family ----

REGISTER_OP("Softmax")
    .Input("logits: T")
    .Output("softmax: T")
    .Attr("T: {bfloat16, half, float, double}")
    .SetShapeFn([](InferenceContext* c) {
      if (c->input(0).rank_known() && c->input(0).rank() < 1) return c->Error("logits must have rank >= 1");
      return shape_fns::Unchanged(c);
    })
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, SoftmaxJvp(g, g->grad(0), g->output(0)));
      return absl::OkStatus();
    });

REGISTER_OP("LogSoftmax")
    .Input("logits: T")
    .Output("logsoftmax: T")
    .Attr("T: {bfloat16, half, float, double}")
    .SetShapeFn([](InferenceContext* c) {
      if (c->input(0).rank_known() && c->input(0).rank() < 1) return c->Error("logits must have rank >= 1");
      return shape_fns::Unchanged(c);
    })
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      Output softmax = b.Op("softmax", "Exp", {g->output(0)});
      Output sum = SumLastKeepDims(g, g->grad(0));
      g->SetInputGrad(0, b.Op("logsoftmax_grad", "Sub", {g->grad(0), b.Op("scaled", "Mul", {sum, softmax})}));
      return absl::OkStatus();
    });

// loss[i] = -sum_j labels[i,j] * log_softmax(features)[i,j];
// backprop = softmax(features) - labels (the gradient of loss w.r.t. features).
// Gradients: features get grad_loss * backprop (+ the softmax Jacobian times
// grad_backprop when the backprop output is itself differentiated); labels get
// -grad_loss * log_softmax(features) (- grad_backprop).
REGISTER_OP("SoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: T")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr("T: {bfloat16, half, float, double}")
    .SetShapeFn(XentShape)
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      Output grad_loss = ExpandLast(g, g->grad(0));
      Output dfeatures = b.Op("dfeatures", "Mul", {grad_loss, g->output(1)});
      if (g->has_grad(1)) {
        Output softmax = b.Op("softmax", "Softmax", {g->input(0)});
        dfeatures = b.Op("dfeatures_total", "Add", {dfeatures, SoftmaxJvp(g, g->grad(1), softmax)});
      }
      g->SetInputGrad(0, dfeatures);
      Output log_softmax = b.Op("log_softmax", "LogSoftmax", {g->input(0)});
      Output dlabels = b.Op("scaled", "Mul", {grad_loss, log_softmax});
      // backprop = softmax - labels also depends on the labels.
      if (g->has_grad(1)) dlabels = b.Op("dlabels_total", "Add", {dlabels, g->grad(1)});
      g->SetInputGrad(1, b.Op("dlabels", "Neg", {dlabels}));
      return absl::OkStatus();
    });

// loss[i] = -log_softmax(features)[i, labels[i]]; backprop = softmax - onehot.
// A label outside [0, num_classes) is InvalidArgument.
REGISTER_OP("SparseSoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: Tlabels")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr("T: {bfloat16, half, float, double}")
    .Attr("Tlabels: {int32, int64} = DT_INT64")
    .SetShapeFn(XentShape)
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      Output dfeatures = b.Op("dfeatures", "Mul", {ExpandLast(g, g->grad(0)), g->output(1)});
      if (g->has_grad(1)) {
        Output softmax = b.Op("softmax", "Softmax", {g->input(0)});
        dfeatures = b.Op("dfeatures_total", "Add", {dfeatures, SoftmaxJvp(g, g->grad(1), softmax)});
      }
      g->SetInputGrad(0, dfeatures);
      return absl::OkStatus();
    });

// ---- Bias ----

REGISTER_OP("BiasAdd")
    .Input("value: T")
    .Input("bias: T")
    .Output("output: T")
    .Attr("T: {bfloat16, half, float, double, int8, int16, int32, int64, uint8, uint16}")
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(BiasAddShape)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->grad(0));
      g->SetInputGrad(1, g->b().Op("bias_grad", "BiasAddGrad", {g->grad(0)}, g->ForwardAttrs({"data_format"})));
      return absl::OkStatus();
    });

// The sum of out_backprop over every dimension but the channel one. Its
// gradient broadcasts the incoming [C] gradient back: BiasAdd(zeros, grad).
REGISTER_OP("BiasAddGrad")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {bfloat16, half, float, double, int8, int16, int32, int64, uint8, uint16}")
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(BiasAddGradShape)
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      Output zeros = b.Op("zeros", "ZerosLike", {g->input(0)});
      g->SetInputGrad(0, b.Op("broadcast", "BiasAdd", {zeros, g->grad(0)}, g->ForwardAttrs({"data_format"})));
      return absl::OkStatus();
    });

// A shape, strides or paddings vector of one data format rearranged for
// another: y[i] = x[src_format.find(dst_format[i])] (4 entries, or a [4, 2]
// matrix of paddings, row by row); 2 entries are the spatial dims, whose
// order NHWC and NCHW share (the two formats it takes). The layout pass (engine/graph/optimizer_layout.h)
// uses it on the shape inputs of the nodes it converts.
REGISTER_OP("DataFormatVecPermute")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {int32, int64} = DT_INT32")
    .Attr("src_format: string = 'NHWC'")
    .Attr("dst_format: string = 'NCHW'")
    .SetShapeFn([](InferenceContext* c) {
      std::string src, dst;
      absl::Status s = FirstError({c->GetAttr("src_format", &src), c->GetAttr("dst_format", &dst)});
      if (!s.ok()) return s;
      for (const std::string* f : {&src, &dst}) {
        if (*f != "NHWC" && *f != "NCHW") {
          return c->Error(absl::StrCat("src_format and dst_format must be NHWC or NCHW, got '", *f, "'"));
        }
      }
      const PartialShape& x = c->input(0);
      if (x.rank_known()) {
        const bool vector = x.rank() == 1 && (x.dim(0) == kUnknownDim || x.dim(0) == 4 || x.dim(0) == 2);
        const bool matrix = x.rank() == 2 && (x.dim(0) == kUnknownDim || x.dim(0) == 4) &&
                            (x.dim(1) == kUnknownDim || x.dim(1) == 2);
        if (!vector && !matrix) {
          return c->Error(absl::StrCat("x must be a vector of 4 or 2 entries or a [4, 2] matrix, got ", x.DebugString()));
        }
      }
      c->set_output(0, x);
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

// ---- Convolution (NHWC or NCHW; dilations must be 1; SAME or VALID padding) ----

REGISTER_OP("Conv2D")
    .Input("input: T")
    .Input("filter: T")
    .Output("output: T")
    .Attr("T: {half, bfloat16, float, double, int32}")
    .Attr("strides: list(int)")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn(Conv2DShape)
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      AttrList attrs = g->ForwardAttrs(SLUICE_CONV_ATTRS);
      g->SetInputGrad(0, b.Op("input_grad", "Conv2DBackpropInput", {IntShape(g, g->input(0)), g->input(1), g->grad(0)},
                              attrs));
      g->SetInputGrad(1, b.Op("filter_grad", "Conv2DBackpropFilter",
                              {g->input(0), IntShape(g, g->input(1)), g->grad(0)}, attrs));
      return absl::OkStatus();
    });

// The gradient of Conv2D w.r.t. its input, of shape `input_sizes`. Linear in
// filter and out_backprop; its gradients are the other two convolutions.
REGISTER_OP("Conv2DBackpropInput")
    .Input("input_sizes: int32")
    .Input("filter: T")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {half, bfloat16, float, double, int32}")
    .Attr("strides: list(int)")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn([](InferenceContext* c) { return ConvBackpropShape(c, 0); })
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      AttrList attrs = g->ForwardAttrs(SLUICE_CONV_ATTRS);
      g->SetInputGrad(1, b.Op("filter_grad", "Conv2DBackpropFilter",
                              {g->grad(0), IntShape(g, g->input(1)), g->input(2)}, attrs));
      g->SetInputGrad(2, b.Op("out_backprop_grad", "Conv2D", {g->grad(0), g->input(1)}, attrs));
      return absl::OkStatus();
    });

// The gradient of Conv2D w.r.t. its filter, of shape `filter_sizes`.
REGISTER_OP("Conv2DBackpropFilter")
    .Input("input: T")
    .Input("filter_sizes: int32")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {half, bfloat16, float, double}")
    .Attr("strides: list(int)")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn([](InferenceContext* c) { return ConvBackpropShape(c, 1); })
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      AttrList attrs = g->ForwardAttrs(SLUICE_CONV_ATTRS);
      g->SetInputGrad(0, b.Op("input_grad", "Conv2DBackpropInput",
                              {IntShape(g, g->input(0)), g->grad(0), g->input(2)}, attrs));
      g->SetInputGrad(2, b.Op("out_backprop_grad", "Conv2D", {g->input(0), g->grad(0)}, attrs));
      return absl::OkStatus();
    });

// ---- Depthwise convolution ----
// Each input channel c convolved with its own filters [h, w, c, 0..M-1]:
// output channel c * M + q. The same attrs as Conv2D's, less
// use_cudnn_on_gpu; kernels take NHWC (TensorFlow's CPU kernels too). The
// three ops are linear in both inputs, so their gradients are each other,
// as Conv2D's are.

REGISTER_OP("DepthwiseConv2dNative")
    .Input("input: T")
    .Input("filter: T")
    .Output("output: T")
    .Attr("T: {half, bfloat16, float, double}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn([](InferenceContext* c) { return ConvShape(c, true); })
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      AttrList attrs = g->ForwardAttrs(SLUICE_CONV_ATTRS);
      g->SetInputGrad(0, b.Op("input_grad", "DepthwiseConv2dNativeBackpropInput",
                              {IntShape(g, g->input(0)), g->input(1), g->grad(0)}, attrs));
      g->SetInputGrad(1, b.Op("filter_grad", "DepthwiseConv2dNativeBackpropFilter",
                              {g->input(0), IntShape(g, g->input(1)), g->grad(0)}, attrs));
      return absl::OkStatus();
    });

REGISTER_OP("DepthwiseConv2dNativeBackpropInput")
    .Input("input_sizes: int32")
    .Input("filter: T")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {half, bfloat16, float, double}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn([](InferenceContext* c) { return ConvBackpropShape(c, 0); })
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      AttrList attrs = g->ForwardAttrs(SLUICE_CONV_ATTRS);
      g->SetInputGrad(1, b.Op("filter_grad", "DepthwiseConv2dNativeBackpropFilter",
                              {g->grad(0), IntShape(g, g->input(1)), g->input(2)}, attrs));
      g->SetInputGrad(2, b.Op("out_backprop_grad", "DepthwiseConv2dNative", {g->grad(0), g->input(1)}, attrs));
      return absl::OkStatus();
    });

REGISTER_OP("DepthwiseConv2dNativeBackpropFilter")
    .Input("input: T")
    .Input("filter_sizes: int32")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {half, bfloat16, float, double}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn([](InferenceContext* c) { return ConvBackpropShape(c, 1); })
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      AttrList attrs = g->ForwardAttrs(SLUICE_CONV_ATTRS);
      g->SetInputGrad(0, b.Op("input_grad", "DepthwiseConv2dNativeBackpropInput",
                              {IntShape(g, g->input(0)), g->grad(0), g->input(2)}, attrs));
      g->SetInputGrad(2, b.Op("out_backprop_grad", "DepthwiseConv2dNative", {g->input(0), g->grad(0)}, attrs));
      return absl::OkStatus();
    });

// ---- Local response normalization ----
// out = in / (bias + alpha * sum of in^2 over depth_radius channels either
// side)^beta, over the last dim of a 4-D input (TensorFlow's LRN; double too,
// beyond TensorFlow's types, for the gradient check). Gradient: LRNGrad
// (input_grads, input_image, output_image), which has none itself.
#define SLUICE_LRN_ATTRS                                   \
  .Attr("depth_radius: int = 5")                           \
  .Attr("bias: float = 1.0")                               \
  .Attr("alpha: float = 1.0")                              \
  .Attr("beta: float = 0.5")                               \
  .Attr("T: {half, bfloat16, float, double} = DT_FLOAT")

REGISTER_OP("LRN")
    .Input("input: T")
    .Output("output: T") SLUICE_LRN_ATTRS
    .SetShapeFn([](InferenceContext* c) {
      PartialShape in;
      absl::Status s = c->WithRank(0, 4, &in);
      if (!s.ok()) return s;
      c->set_output(0, in);
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("lrn_grad", "LRNGrad", {g->grad(0), g->input(0), g->output(0)},
                                   g->ForwardAttrs({"depth_radius", "bias", "alpha", "beta"})));
      return absl::OkStatus();
    });

REGISTER_OP("LRNGrad")
    .Input("input_grads: T")
    .Input("input_image: T")
    .Input("output_image: T")
    .Output("output: T") SLUICE_LRN_ATTRS
    .SetShapeFn([](InferenceContext* c) {
      PartialShape in;
      for (int i = 0; i < 3; ++i) {
        absl::Status s = c->WithRank(i, 4, &in);
        if (!s.ok()) return s;
      }
      c->set_output(0, c->input(1));
      return absl::OkStatus();
    })
    .SetNotDifferentiable();
#undef SLUICE_LRN_ATTRS

// ---- Pooling (NHWC or NCHW; SAME or VALID) ----

REGISTER_OP("MaxPool")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: {half, bfloat16, float, double, int32, int64, uint8, int16, int8, uint16} = DT_FLOAT")
    .Attr("ksize: list(int) >= 4")
    .Attr("strides: list(int) >= 4")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(PoolShape)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("max_pool_grad", "MaxPoolGrad", {g->input(0), g->output(0), g->grad(0)},
                                   g->ForwardAttrs(SLUICE_POOL_ATTRS)));
      return absl::OkStatus();
    });

// Routes each window's gradient to the first maximal element of the window
// in orig_input. Not differentiable here: its gradient would be TensorFlow's
// MaxPoolGradGrad, which Sluice does not provide.
REGISTER_OP("MaxPoolGrad")
    .Input("orig_input: T")
    .Input("orig_output: T")
    .Input("grad: T")
    .Output("output: T")
    .Attr("ksize: list(int) >= 4")
    .Attr("strides: list(int) >= 4")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .Attr("T: {half, bfloat16, float, double, int32, int64, uint8, int16, int8, uint16} = DT_FLOAT")
    .SetShapeFn([](InferenceContext* c) { return PoolGradShape(c, false); })
    .SetNotDifferentiable();

// Averages over the window's elements inside the input (padding excluded).
REGISTER_OP("AvgPool")
    .Input("value: T")
    .Output("output: T")
    .Attr("ksize: list(int) >= 4")
    .Attr("strides: list(int) >= 4")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .Attr("T: {half, bfloat16, float, double}")
    .SetShapeFn(PoolShape)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("avg_pool_grad", "AvgPoolGrad", {IntShape(g, g->input(0)), g->grad(0)},
                                   g->ForwardAttrs({"ksize", "strides", "padding", "data_format"})));
      return absl::OkStatus();
    });

// Linear in grad; its gradient is AvgPool of the incoming gradient.
REGISTER_OP("AvgPoolGrad")
    .Input("orig_input_shape: int32")
    .Input("grad: T")
    .Output("output: T")
    .Attr("ksize: list(int) >= 4")
    .Attr("strides: list(int) >= 4")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .Attr("T: {half, bfloat16, float, double}")
    .SetShapeFn([](InferenceContext* c) { return PoolGradShape(c, true); })
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(1, g->b().Op("avg_pool", "AvgPool", {g->grad(0)},
                                   g->ForwardAttrs({"ksize", "strides", "padding", "data_format"})));
      return absl::OkStatus();
    });

// ---- Losses and metrics ----

// output = sum(t^2) / 2.
REGISTER_OP("L2Loss")
    .Input("t: T")
    .Output("output: T")
    .Attr("T: {half, bfloat16, float, double}")
    .SetShapeFn(shape_fns::Scalar)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("l2_grad", "Mul", {g->input(0), g->grad(0)}));
      return absl::OkStatus();
    });

// precision[i] = targets[i] is among the k largest predictions[i, :] (ties
// count in, as TensorFlow); false for non-finite predictions or out-of-range
// targets.
REGISTER_OP("InTopK")
    .Input("predictions: float")
    .Input("targets: T")
    .Output("precision: bool")
    .Attr("k: int")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn(InTopKShape)
    .SetNotDifferentiable();

REGISTER_OP("InTopKV2")
    .Input("predictions: float")
    .Input("targets: T")
    .Input("k: T")
    .Output("precision: bool")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn(InTopKShape)
    .SetNotDifferentiable();

// The k largest entries of each row (last dimension) of `input` and their
// indices, largest first; equal values keep their order (lower index first).
// Sorted output is always produced (`sorted: false` allows any order).
// TensorFlow also takes uint32 and uint64, which Sluice has not.
REGISTER_OP("TopKV2")
    .Input("input: T")
    .Input("k: Tk")
    .Output("values: T")
    .Output("indices: index_type")
    .Attr("sorted: bool = true")
    .Attr("T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half}")
    .Attr("Tk: {int16, int32, int64} = DT_INT32")
    .Attr("index_type: {int16, int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape& in = c->input(0);
      const PartialShape& k_shape = c->input(1);
      if (k_shape.rank_known() && k_shape.rank() != 0) {
        return c->Error(absl::StrCat("k must be a scalar, got shape ", k_shape.DebugString()));
      }
      if (!in.rank_known()) {
        c->set_output(0, PartialShape::Unknown());
        c->set_output(1, PartialShape::Unknown());
        return absl::OkStatus();
      }
      if (in.rank() < 1) return c->Error(absl::StrCat("input must have rank >= 1, got shape ", in.DebugString()));
      int64_t k = kUnknownDim;
      if (const Tensor* t = c->input_tensor(1); t != nullptr && t->NumElements() == 1) {
        switch (t->dtype()) {
          case DT_INT16: k = t->data<int16_t>()[0]; break;
          case DT_INT32: k = t->data<int32_t>()[0]; break;
          case DT_INT64: k = t->data<int64_t>()[0]; break;
          default: break;
        }
        if (k < 0) return c->Error(absl::StrCat("k must be non-negative, got ", k));
        const int64_t last = in.dim(in.rank() - 1);
        if (last != kUnknownDim && last < k) {
          return c->Error(absl::StrCat("input must have at least k = ", k, " entries in its last dimension, but has shape ",
                                       in.DebugString()));
        }
      }
      std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
      dims.back() = k;
      c->set_output(0, PartialShape::FromDims(dims));
      c->set_output(1, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      // Scatter dvalues back to the positions the indices name (TensorFlow's
      // _TopKGrad): flat position = row * n + index, summed into a vector of
      // the input's size (positions are unique) and reshaped to the input.
      GraphBuilder& b = g->b();
      Output x = g->input(0), indices = g->output(1);
      Output sx = IntShape(g, x);
      Output one = b.Scalar<int32_t>("one", 1);
      Output n = b.Op("n", "GatherV2", {sx, b.Op("last", "Sub", {b.Op("rank", "Rank", {x}), one}),
                                        b.Scalar<int32_t>("axis", 0)});
      Output safe_n = b.Op("safe_n", "Maximum", {n, one});
      Output si = IntShape(g, indices);
      Output outer_len = b.Op("outer_len", "Sub", {b.Op("rank_i", "Rank", {indices}), one});
      Output outer = b.Op("outer", "Slice", {si, b.Const("begin", Tensor::FromVector<int32_t>({0})),
                                             b.Op("len", "Reshape", {outer_len, b.Const("vec", Tensor::FromVector<int32_t>({1}))})});
      Output rows = b.Op("rows", "Prod", {outer, b.Scalar<int32_t>("axis0", 0)});
      Output offsets = b.Op("offsets", "Range", {b.Scalar<int32_t>("zero", 0), b.Op("end", "Mul", {rows, safe_n}), safe_n});
      Output offsets_shape = b.Op("offsets_shape", "ConcatV2", {outer, b.Const("one_vec", Tensor::FromVector<int32_t>({1})),
                                                                b.Scalar<int32_t>("concat_axis", 0)});
      Output position = b.Op("position", "AddV2", {b.Op("indices32", "Cast", {indices}, {{"DstT", MakeAttr(DT_INT32)}}),
                                                    b.Op("offsets_nd", "Reshape", {offsets, offsets_shape})});
      Output flat = b.Const("flat", Tensor::FromVector<int32_t>({-1}));
      Output scattered = b.Op("scattered", "UnsortedSegmentSum",
                              {b.Op("grad_flat", "Reshape", {g->grad(0), flat}),
                               b.Op("position_flat", "Reshape", {position, flat}), b.Op("size", "Size", {x})});
      g->SetInputGrad(0, b.Op("dx", "Reshape", {scattered, sx}));
      return absl::OkStatus();
    });

// ---- Dropout (Sluice's own op; TensorFlow composes dropout from ops) ----
//
// Dropout(x: T, rate: T, step: int64) -> (output: T, mask: T), attrs seed, seed2.
//   mask[i] = 1 with probability 1 - rate, else 0, drawn from the Philox
//   stream keyed by (seed, seed2) as the random ops are (seed = seed2 = 0
//   means a nondeterministic key) at counter `step`: the mask is a function
//   of (seed, seed2, step, i) only. The training graph feeds the global step,
//   so the dropout stream is part of every checkpoint and a resumed run draws
//   the masks an uninterrupted one would.
//   output = x * mask / (1 - rate)   (inverted dropout: E[output] = x).
//   rate is a scalar in [0, 1); rate outside it is InvalidArgument.
// Gradient: dx = dy * mask / (1 - rate); none for rate (the mask is a step
// function of it) or step. Marked stateful so CSE never merges two dropouts.
REGISTER_OP("Dropout")
    .SetSluiceOnly()
    .Input("x: T")
    .Input("rate: T")
    .Input("step: int64")
    .Output("output: T")
    .Output("mask: T")
    .Attr("T: {half, bfloat16, float, double}")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      if (c->input(1).rank_known() && c->input(1).rank() != 0) {
        return c->Error(absl::StrCat("rate must be a scalar, got ", c->input(1).DebugString()));
      }
      if (c->input(2).rank_known() && c->input(2).rank() != 0) {
        return c->Error(absl::StrCat("step must be a scalar, got ", c->input(2).DebugString()));
      }
      c->set_output(0, c->input(0));
      c->set_output(1, c->input(0));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      Output keep = b.Op("keep_prob", "Sub", {b.ScalarOfType("one", g->input(1).dtype(), 1.0), g->input(1)});
      Output masked = b.Op("masked", "Mul", {g->grad(0), g->output(1)});
      g->SetInputGrad(0, b.Op("dropout_grad", "RealDiv", {masked, keep}));
      return absl::OkStatus();
    });

}  // namespace sluice
