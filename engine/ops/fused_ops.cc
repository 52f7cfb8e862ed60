// Fused ops: _FusedMatMul (MatMul + BiasAdd [+ Relu]) and _FusedConv2D
// (Conv2D + BiasAdd [+ Relu]), which the fusion pass
// (engine/graph/optimizer_fusion.h) makes from chains on a device with their
// kernels; the CPU's (matmul_op.cc, conv_ops.cc) add the bias and apply the
// activation in CpuGemm's epilogue, the GPU's (engine/kernels/gpu) in one
// pass after cuBLAS's or cuDNN's product. _FusedMaxPoolGrad (MaxPoolGrad + ReluGrad [+
// BiasAddGrad], engine/graph/optimizer_pool_grad_fusion.h) is the backward of
// conv -> bias -> relu -> max pool in one pass (pooling_ops.cc); it is ours,
// TensorFlow has no such op. TensorFlow's grappler ops of the same names and attrs:
// args = [bias] (num_args 1), fused_ops ["BiasAdd"] or ["BiasAdd", "Relu"];
// epsilon and leakyrelu_alpha are accepted for TensorFlow's GraphDefs and
// unused. Each shape function is the unfused op's own (looked up in the
// registry: the fused node has the same inputs 0 and 1 and attrs), then the
// epilogue's checks. The pass runs after gradients are built: no gradients.
// Thread safety: registrations run at static initialization.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace {

// The shape function of `unfused` (MatMul or Conv2D) on the fused node, then:
// fused_ops is [BiasAdd] or [BiasAdd, Relu], num_args is 1, and the bias
// (input 2) is a vector with one element per output channel.
absl::Status FusedBiasShape(InferenceContext* c, const char* unfused) {
  const OpDef* def = OpRegistry::Global()->LookUp(unfused);
  if (def == nullptr || !def->shape_fn) return c->Error(absl::StrCat("op ", unfused, " is not registered"));
  absl::Status s = def->shape_fn(c);
  if (!s.ok()) return s;
  std::vector<std::string> fused_ops;
  int64_t num_args = 0;
  s = c->GetAttr("fused_ops", &fused_ops);
  if (!s.ok()) return s;
  s = c->GetAttr("num_args", &num_args);
  if (!s.ok()) return s;
  const bool bias_add = fused_ops.size() == 1 && fused_ops[0] == "BiasAdd";
  const bool bias_add_relu = fused_ops.size() == 2 && fused_ops[0] == "BiasAdd" && fused_ops[1] == "Relu";
  if (!bias_add && !bias_add_relu) {
    return c->Error(absl::StrCat("fused_ops must be [BiasAdd] or [BiasAdd, Relu], got [",
                                 absl::StrJoin(fused_ops, ", "), "]"));
  }
  if (num_args != 1) return c->Error(absl::StrCat("BiasAdd takes 1 argument (the bias), got num_args ", num_args));
  PartialShape bias;
  s = c->WithRank(2, 1, &bias);
  if (!s.ok()) return s;
  const PartialShape& out = c->output(0);
  if (out.rank_known() && out.rank() > 0 && bias.rank_known()) {
    const int64_t channels = out.dim(out.rank() - 1);
    if (channels != kUnknownDim && bias.dim(0) != kUnknownDim && channels != bias.dim(0)) {
      return c->Error(absl::StrCat("the bias must have one element per output channel: bias ", bias.DebugString(),
                                   " vs output ", out.DebugString()));
    }
  }
  return absl::OkStatus();
}

REGISTER_OP("_FusedMatMul")
    .Input("a: T")
    .Input("b: T")
    .Input("args: num_args * T")
    .Output("product: T")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("T: {float}")
    .Attr("num_args: int >= 0")
    .Attr("fused_ops: list(string) = []")
    .Attr("epsilon: float = 0.0001")
    .Attr("leakyrelu_alpha: float = 0.2")
    .SetShapeFn([](InferenceContext* c) { return FusedBiasShape(c, "MatMul"); })
    .SetNotDifferentiable();

REGISTER_OP("_FusedConv2D")
    .Input("input: T")
    .Input("filter: T")
    .Input("args: num_args * T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("num_args: int >= 0")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("fused_ops: list(string) = []")
    .Attr("epsilon: float = 0.0001")
    .Attr("leakyrelu_alpha: float = 0.2")
    .SetShapeFn([](InferenceContext* c) { return FusedBiasShape(c, "Conv2D"); })
    .SetNotDifferentiable();

// MaxPoolGrad's shape function on the fused node (the same inputs and
// attrs), then output 1: one element per channel of orig_input.
absl::Status FusedMaxPoolGradShape(InferenceContext* c) {
  const OpDef* def = OpRegistry::Global()->LookUp("MaxPoolGrad");
  if (def == nullptr || !def->shape_fn) return c->Error("op MaxPoolGrad is not registered");
  absl::Status s = def->shape_fn(c);
  if (!s.ok()) return s;
  const PartialShape& in = c->output(0);
  c->set_output(1, PartialShape({in.rank_known() && in.rank() == 4 ? in.dim(3) : kUnknownDim}));
  return absl::OkStatus();
}

// output = ReluGrad(MaxPoolGrad(orig_input, orig_output, grad), orig_input):
// each window's gradient goes to its first maximal element of orig_input, and
// only where that element is positive; bias_backprop = BiasAddGrad(output),
// the sum of output per channel (NHWC).
REGISTER_OP("_FusedMaxPoolGrad")
    .SetSluiceOnly()
    .Input("orig_input: T")
    .Input("orig_output: T")
    .Input("grad: T")
    .Output("output: T")
    .Output("bias_backprop: T")
    .Attr("ksize: list(int) >= 4")
    .Attr("strides: list(int) >= 4")
    .Attr("padding: string")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: string = 'NHWC'")
    .Attr("T: {float}")
    .SetShapeFn(FusedMaxPoolGradShape)
    .SetNotDifferentiable();

}  // namespace
}  // namespace sluice
