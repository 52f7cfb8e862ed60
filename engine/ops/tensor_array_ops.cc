// TensorArrays (TensorFlow's TensorArray*V3 ops from
// tensorflow/core/ops/data_flow_ops.cc, same signatures): a per-step array of
// tensors behind a DT_RESOURCE handle, written and read one index at a time
// (Write/Read), many at once (Scatter/Gather), or as pieces of one tensor
// along dim 0 (Split/Concat). Every op that changes or reads the array takes
// and gives a float "flow" scalar that orders it after the writes it depends
// on. Kernels: engine/kernels/tensor_array_ops.cc (tensor_array.h).
//
// Gradients (TensorFlow's tensor_array_grad.py): the gradient of an array is
// a second array (TensorArrayGradV3 with source = the gradient name scope, so
// each gradient computation gets its own) of the same size; Read's gradient
// writes dy into it and Write's reads it back (Gather <-> Scatter,
// Concat <-> Split likewise); the flow inputs receive the gradient array's
// flows, so the backward reads wait for the backward writes.
// Thread safety: registrations run at static initialization.
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/str_join.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

absl::Status NoOutputs(InferenceContext*) { return absl::OkStatus(); }

absl::Status FlowOut(InferenceContext* c) {
  c->set_output(0, PartialShape::Scalar());
  return absl::OkStatus();
}

// [?] + the shape attr `attr` (unknown when its rank is).
// A shape attr (an element shape) as a partial shape.
absl::StatusOr<PartialShape> ShapeAttr(InferenceContext* c, const char* attr) {
  TensorShapeProto proto;
  absl::Status s = c->GetAttr(attr, &proto);
  if (!s.ok()) return s;
  auto shape = PartialShape::FromProto(proto);
  if (!shape.ok()) return c->Error(absl::StrCat("attr '", attr, "': ", shape.status().message()));
  return shape;
}

absl::Status PrependUnknownDim(InferenceContext* c, const char* attr) {
  auto shape = ShapeAttr(c, attr);
  if (!shape.ok()) return shape.status();
  if (!shape->rank_known()) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  std::vector<int64_t> dims = {kUnknownDim};
  dims.insert(dims.end(), shape->dims().begin(), shape->dims().end());
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

// TensorFlow's _GetGradSource: the name scope up to the last component
// starting with "gradients" (each tf.gradients call has its own), taken from
// the builder's prefix; "gradients" when there is none.
std::string GradSource(GradientBuilder* g) {
  std::vector<std::string> parts = absl::StrSplit(g->b().prefix(), '/');
  for (int i = static_cast<int>(parts.size()) - 1; i >= 0; --i) {
    if (absl::StartsWith(parts[i], "gradients")) {
      parts.resize(i + 1);
      return absl::StrJoin(parts, "/");
    }
  }
  return "gradients";
}

// The gradient array of the array behind `handle`, ordered after `flow`:
// {grad handle, grad flow}.
std::pair<Output, Output> GradArray(GradientBuilder* g, Output handle, Output flow) {
  Node* n = g->b().AddNode("TensorArrayGrad", "TensorArrayGradV3", {handle, flow},
                           {{"source", MakeAttr(GradSource(g))}});
  if (n == nullptr) return {Output{}, Output{}};
  return {Output{n, 0}, Output{n, 1}};
}

absl::Status DtypeAttr(GradientBuilder* g, const char* name, DataType* dtype) { return g->GetAttr(name, dtype); }

}  // namespace

REGISTER_OP("TensorArrayV3")
    .Input("size: int32")
    .Output("handle: resource")
    .Output("flow: float")
    .Attr("dtype: type")
    .Attr("element_shape: shape = { unknown_rank: true }")
    .Attr("dynamic_size: bool = false")
    .Attr("clear_after_read: bool = true")
    .Attr("identical_element_shapes: bool = false")
    .Attr("tensor_array_name: string = ''")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) {  // the handle carries the element shape writes are held to
      auto element = ShapeAttr(c, "element_shape");
      if (!element.ok()) return element.status();
      c->set_output(0, PartialShape::Scalar());
      c->set_output(1, PartialShape::Scalar());
      c->set_output_handle_shapes(0, {*std::move(element)});
      return absl::OkStatus();
    });

REGISTER_OP("TensorArrayGradV3")
    .Input("handle: resource")
    .Input("flow_in: float")
    .Output("grad_handle: resource")
    .Output("flow_out: float")
    .Attr("source: string")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) {  // the gradient array takes its source's element shape
      c->set_output(0, PartialShape::Scalar());
      c->set_output(1, PartialShape::Scalar());
      c->set_output_handle_shapes(0, c->input_handle_shapes(0));
      return absl::OkStatus();
    });

REGISTER_OP("TensorArrayWriteV3")
    .Input("handle: resource")
    .Input("index: int32")
    .Input("value: T")
    .Input("flow_in: float")
    .Output("flow_out: float")
    .Attr("T: type")
    .SetIsStateful()
    .SetShapeFn(FlowOut)
    .SetGradient([](GradientBuilder* g) {
      DataType dtype;
      absl::Status s = DtypeAttr(g, "T", &dtype);
      if (!s.ok()) return s;
      Output flow_grad = g->grad(0);
      auto [grad_handle, grad_flow] = GradArray(g, g->input(0), flow_grad);
      g->SetInputGrad(2, g->b().Op("TensorArrayRead", "TensorArrayReadV3", {grad_handle, g->input(1), grad_flow},
                                   {{"dtype", MakeAttr(dtype)}}));
      g->SetInputGrad(3, flow_grad);
      return absl::OkStatus();
    });

REGISTER_OP("TensorArrayReadV3")
    .Input("handle: resource")
    .Input("index: int32")
    .Input("flow_in: float")
    .Output("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {  // the array's element shape, when its handle says
      const std::vector<PartialShape>& element = c->input_handle_shapes(0);
      c->set_output(0, element.empty() ? PartialShape::Unknown() : element[0]);
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      auto [grad_handle, grad_flow] = GradArray(g, g->input(0), g->input(2));
      g->SetInputGrad(2, g->b().Op("TensorArrayWrite", "TensorArrayWriteV3",
                                   {grad_handle, g->input(1), g->grad(0), grad_flow}));
      return absl::OkStatus();
    });

REGISTER_OP("TensorArrayGatherV3")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("flow_in: float")
    .Output("value: dtype")
    .Attr("dtype: type")
    .Attr("element_shape: shape = { unknown_rank: true }")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      // [one per index] + the element shape this node declares (its kernel
      // checks) merged with the array's (its writes are checked).
      auto element = ShapeAttr(c, "element_shape");
      if (!element.ok()) return element.status();
      const std::vector<PartialShape>& declared = c->input_handle_shapes(0);
      if (!declared.empty()) {
        auto merged = element->Merge(declared[0]);
        if (merged.ok()) element = *std::move(merged);
      }
      if (!element->rank_known()) {
        c->set_output(0, PartialShape::Unknown());
        return absl::OkStatus();
      }
      const PartialShape& indices = c->input(1);
      std::vector<int64_t> dims = {indices.rank() == 1 ? indices.dim(0) : kUnknownDim};
      dims.insert(dims.end(), element->dims().begin(), element->dims().end());
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      auto [grad_handle, grad_flow] = GradArray(g, g->input(0), g->input(2));
      g->SetInputGrad(2, g->b().Op("TensorArrayScatter", "TensorArrayScatterV3",
                                   {grad_handle, g->input(1), g->grad(0), grad_flow}));
      return absl::OkStatus();
    });

REGISTER_OP("TensorArrayScatterV3")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("value: T")
    .Input("flow_in: float")
    .Output("flow_out: float")
    .Attr("T: type")
    .SetIsStateful()
    .SetShapeFn(FlowOut)
    .SetGradient([](GradientBuilder* g) {
      DataType dtype;
      absl::Status s = DtypeAttr(g, "T", &dtype);
      if (!s.ok()) return s;
      Output flow_grad = g->grad(0);
      auto [grad_handle, grad_flow] = GradArray(g, g->input(0), flow_grad);
      g->SetInputGrad(2, g->b().Op("TensorArrayGather", "TensorArrayGatherV3", {grad_handle, g->input(1), grad_flow},
                                   {{"dtype", MakeAttr(dtype)}}));
      g->SetInputGrad(3, flow_grad);
      return absl::OkStatus();
    });

REGISTER_OP("TensorArrayConcatV3")
    .Input("handle: resource")
    .Input("flow_in: float")
    .Output("value: dtype")
    .Output("lengths: int64")
    .Attr("dtype: type")
    .Attr("element_shape_except0: shape = { unknown_rank: true }")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      absl::Status s = PrependUnknownDim(c, "element_shape_except0");
      if (!s.ok()) return s;
      c->set_output(1, PartialShape::FromDims({kUnknownDim}));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      auto [grad_handle, grad_flow] = GradArray(g, g->input(0), g->input(1));
      g->SetInputGrad(1, g->b().Op("TensorArraySplit", "TensorArraySplitV3",
                                   {grad_handle, g->grad(0), g->output(1), grad_flow}));
      return absl::OkStatus();
    });

REGISTER_OP("TensorArraySplitV3")
    .Input("handle: resource")
    .Input("value: T")
    .Input("lengths: int64")
    .Input("flow_in: float")
    .Output("flow_out: float")
    .Attr("T: type")
    .SetIsStateful()
    .SetShapeFn(FlowOut)
    .SetGradient([](GradientBuilder* g) {
      DataType dtype;
      absl::Status s = DtypeAttr(g, "T", &dtype);
      if (!s.ok()) return s;
      Output flow_grad = g->grad(0);
      auto [grad_handle, grad_flow] = GradArray(g, g->input(0), flow_grad);
      g->SetInputGrad(1, g->b().Op("TensorArrayConcat", "TensorArrayConcatV3", {grad_handle, grad_flow},
                                   {{"dtype", MakeAttr(dtype)}}));
      g->SetInputGrad(3, flow_grad);
      return absl::OkStatus();
    });

REGISTER_OP("TensorArraySizeV3")
    .Input("handle: resource")
    .Input("flow_in: float")
    .Output("size: int32")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(shape_fns::Scalar);

REGISTER_OP("TensorArrayCloseV3")
    .Input("handle: resource")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

}  // namespace sluice
