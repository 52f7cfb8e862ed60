// Image resizing as layers use it (upsampling in decoders and GANs):
// ResizeBilinear, ResizeNearestNeighbor and their gradients, with
// TensorFlow's signatures (tensorflow/core/ops/image_ops.cc): NHWC images, a
// `size` of [new_height, new_width] (int32), attrs align_corners and
// half_pixel_centers (not both). ResizeBilinear returns float whatever the
// image's type. Gradients as TensorFlow's: ResizeBilinearGrad(grad, image)
// and ResizeNearestNeighborGrad(grad, the image's [height, width]); the
// gradient ops themselves have none (TensorFlow registers none either).
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

// [batch, size[0], size[1], channels] from a 4-D input `image` and a size
// input of two int32 values (known or not).
absl::Status ResizedShape(InferenceContext* c, int image, int size) {
  PartialShape in;
  absl::Status s = c->WithRank(image, 4, &in);
  if (!s.ok()) return s;
  PartialShape size_shape;
  s = c->WithRank(size, 1, &size_shape);
  if (!s.ok()) return s;
  if (size_shape.dim(0) != kUnknownDim && size_shape.dim(0) != 2) {
    return c->Error(absl::StrCat("size must hold 2 values (height, width), got ", size_shape.dim(0)));
  }
  int64_t h = kUnknownDim, w = kUnknownDim;
  auto values = c->input_index_values(size);
  if (values && values->size() == 2) {
    if ((*values)[0] <= 0 || (*values)[1] <= 0) {
      return c->Error(absl::StrCat("size must be positive, got [", (*values)[0], ", ", (*values)[1], "]"));
    }
    h = (*values)[0];
    w = (*values)[1];
  } else if (c->input_as_shape(size).rank_known() && c->input_as_shape(size).rank() == 2) {
    h = c->input_as_shape(size).dim(0);
    w = c->input_as_shape(size).dim(1);
  }
  c->set_output(0, PartialShape::FromDims({in.dim(0), h, w, in.dim(3)}));
  return absl::OkStatus();
}

AttrList ResizeAttrs(GradientBuilder* g, absl::Status* s) {
  bool align = false, half = false;
  *s = g->GetAttr("align_corners", &align);
  if (s->ok()) *s = g->GetAttr("half_pixel_centers", &half);
  return {{"align_corners", MakeAttr(align)}, {"half_pixel_centers", MakeAttr(half)}};
}

}  // namespace

REGISTER_OP("ResizeBilinear")
    .Input("images: T")
    .Input("size: int32")
    .Output("resized_images: float")
    .Attr("T: {int8, uint8, int16, uint16, int32, int64, bfloat16, half, float, double}")
    .Attr("align_corners: bool = false")
    .Attr("half_pixel_centers: bool = false")
    .SetShapeFn([](InferenceContext* c) { return ResizedShape(c, 0, 1); })
    .SetGradient([](GradientBuilder* g) {
      absl::Status s;
      AttrList attrs = ResizeAttrs(g, &s);
      if (!s.ok()) return s;
      g->SetInputGrad(0, g->b().Op("resize_grad", "ResizeBilinearGrad", {g->grad(0), g->input(0)}, attrs));
      return absl::OkStatus();
    });

REGISTER_OP("ResizeBilinearGrad")
    .Input("grads: float")
    .Input("original_image: T")
    .Output("output: T")
    .Attr("T: {float, bfloat16, half, double}")
    .Attr("align_corners: bool = false")
    .Attr("half_pixel_centers: bool = false")
    .SetShapeFn([](InferenceContext* c) {
      PartialShape grads, image;
      absl::Status s = c->WithRank(0, 4, &grads);
      if (!s.ok()) return s;
      s = c->WithRank(1, 4, &image);
      if (!s.ok()) return s;
      c->set_output(0, image);
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

REGISTER_OP("ResizeNearestNeighbor")
    .Input("images: T")
    .Input("size: int32")
    .Output("resized_images: T")
    .Attr("T: {int8, uint8, int16, uint16, int32, int64, half, float, double, bfloat16}")
    .Attr("align_corners: bool = false")
    .Attr("half_pixel_centers: bool = false")
    .SetShapeFn([](InferenceContext* c) { return ResizedShape(c, 0, 1); })
    .SetGradient([](GradientBuilder* g) {
      absl::Status s;
      AttrList attrs = ResizeAttrs(g, &s);
      if (!s.ok()) return s;
      GraphBuilder& b = g->b();
      Output shape = b.Op("shape", "Shape", {g->input(0)});
      Output hw = b.Op("height_width", "Slice", {shape, b.Const("begin", Tensor::FromVector<int32_t>({1})),
                                                 b.Const("len", Tensor::FromVector<int32_t>({2}))});
      g->SetInputGrad(0, b.Op("resize_grad", "ResizeNearestNeighborGrad", {g->grad(0), hw}, attrs));
      return absl::OkStatus();
    });

REGISTER_OP("ResizeNearestNeighborGrad")
    .Input("grads: T")
    .Input("size: int32")
    .Output("output: T")
    .Attr("T: {uint8, int8, int32, half, float, double, bfloat16}")
    .Attr("align_corners: bool = false")
    .Attr("half_pixel_centers: bool = false")
    .SetShapeFn([](InferenceContext* c) { return ResizedShape(c, 0, 1); })
    .SetNotDifferentiable();

}  // namespace sluice
