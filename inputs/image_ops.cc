// Image preprocessing ops for input pipelines. Images are [H, W, C] (or
// [H, W]); batches [N, H, W, C] where noted.
//  ImageToFloat            (Sluice) uint8 -> float times `scale` (1/255:
//                          [0, 1], as tf.image.convert_image_dtype).
//  PerImageStandardization (Sluice; tf.image.per_image_standardization as
//                          one op) (x - mean) / max(stddev, 1/sqrt(n)) per
//                          image: over all elements, or per leading index
//                          for rank-4 batches.
//  RandomFlipLeftRight     (Sluice) reverses dim 1 (W) with probability 1/2.
//  RandomCrop              TensorFlow's (deprecated) op: a random [h, w]
//                          window of an [H, W, C] image.
// Random ops draw from a per-kernel generator seeded by (seed, seed2):
// nonzero seeds give the same sequence in every run; both zero, a random one.
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

}  // namespace sluice
