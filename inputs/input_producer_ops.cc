// Ops that build file-name producers (tf.train.string_input_producer):
//  MatchingFiles  TensorFlow's: the files matching a glob, sorted.
//  CountUpTo      TensorFlow's: increments a variable, OutOfRange once it
//                 reaches `limit` (the epoch counter).
//  ShuffleForEpoch Sluice's: a vector in the seeded permutation of epoch
//                 `epoch` (inputs/file_order.h), the same for the same
//                 (seed, epoch) in any process, so a resumed run knows the
//                 order of the epoch it resumes in without replaying the
//                 epochs before it (TensorFlow's RandomShuffle draws from
//                 one stream, whose state a checkpoint does not hold).
// Kernels: input_producer_kernels.cc; graph builder: input_builders.h.
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {

REGISTER_OP("MatchingFiles")
    .Input("pattern: string")
    .Output("filenames: string")
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("CountUpTo")
    .Input("ref: Ref(T)")
    .Output("output: T")
    .Attr("limit: int")
    .Attr("T: {int32, int64}")
    .SetShapeFn(shape_fns::Scalar);

REGISTER_OP("ShuffleForEpoch")
    .SetSluiceOnly()
    .Input("value: T")
    .Input("epoch: int64")
    .Output("output: T")
    .Attr("T: type")
    .Attr("seed: int = 1")
    .SetShapeFn(shape_fns::Unchanged);

}  // namespace sluice
