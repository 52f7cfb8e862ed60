// Image preprocessing ops: for input pipelines, and AugmentImages for the
// model's augment layer. Images are [H, W, C] (or [H, W]); batches
// [N, H, W, C] where noted.
//  ImageToFloat            (Sluice) uint8 -> float times `scale` (1/255:
//                          [0, 1], as tf.image.convert_image_dtype).
//  PerImageStandardization (Sluice; tf.image.per_image_standardization as
//                          one op) (x - mean) / max(stddev, 1/sqrt(n)) per
//                          image: over all elements, or per leading index
//                          for rank-4 batches.
//  RandomFlipLeftRight     (Sluice) reverses dim 1 (W) with probability 1/2.
//  RandomCrop              TensorFlow's (deprecated) op: a random [h, w]
//                          window of an [H, W, C] image.
//  AugmentImages           (Sluice; the `augment` layer) a batch [N, H, W, C]
//                          with each image flipped left-right (probability
//                          1/2, with flip_left_right) and shifted by dy, dx
//                          drawn uniformly from [-max_shift, max_shift], the
//                          vacated border zero: output[n, r, c] =
//                          image'[n, r + dy, c + dx], image' the flipped or
//                          unflipped image, 0 outside it. Example n's draws
//                          are Philox block n of the stream keyed by (seed,
//                          seed2) at counter `step` (as Dropout's): a pure
//                          function of (seed, seed2, step, n), so a resumed
//                          run augments as an unbroken one. No gradient: it
//                          takes input features. Stateful, so CSE never
//                          merges two of them.
// RandomFlipLeftRight and RandomCrop draw from a per-kernel generator seeded
// by (seed, seed2): nonzero seeds give the same sequence in every run; both
// zero, a random one. AugmentImages keeps no state (counter-based, above).
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {

REGISTER_OP("ImageToFloat")
    .SetSluiceOnly()
    .Input("image: uint8")
    .Output("output: float")
    .Attr("scale: float = 0.003921568859368563")
    .SetShapeFn(shape_fns::Unchanged);

REGISTER_OP("PerImageStandardization")
    .SetSluiceOnly()
    .Input("image: float")
    .Output("output: float")
    .SetShapeFn(shape_fns::Unchanged);

REGISTER_OP("RandomFlipLeftRight")
    .SetSluiceOnly()
    .Input("image: T")
    .Output("output: T")
    .Attr("T: {uint8, float}")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unchanged);

REGISTER_OP("RandomCrop")
    .Input("image: T")
    .Input("size: int64")
    .Output("output: T")
    .Attr("T: {uint8, int8, int16, int32, int64, float, double}")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("AugmentImages")
    .SetSluiceOnly()
    .Input("images: T")
    .Input("step: int64")
    .Output("output: T")
    .Attr("T: {uint8, half, bfloat16, float, double}")
    .Attr("flip_left_right: bool = false")
    .Attr("max_shift: int = 0")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      if (c->input(0).rank_known() && c->input(0).rank() != 4) {
        return c->Error(absl::StrCat("images must be [batch, height, width, channels], got ",
                                     c->input(0).DebugString()));
      }
      if (c->input(1).rank_known() && c->input(1).rank() != 0) {
        return c->Error(absl::StrCat("step must be a scalar, got ", c->input(1).DebugString()));
      }
      c->set_output(0, c->input(0));
      return absl::OkStatus();
    });

}  // namespace sluice
