// Op definitions for checkpoints (whitepaper §3.3 "Fault tolerance": Save and
// Restore nodes connected to each variable), registered into the engine's op
// registry from here (the engine does not depend on checkpoint/).
//
//   Save(filename, tensor_names[N], data: T...)  writes the checkpoint
//       directory `filename` (one shard; replaced if it exists).
//   SaveSlices(filename, tensor_names[N], shapes_and_slices[N], data: T...)
//       the same, with a TensorFlow shape_and_slice spec per tensor
//       ("10 20 0,5:-", or "" for a whole tensor) for partitioned variables.
//   Restore(file_pattern, tensor_name) -> tensor: dt  reads one tensor from the
//       checkpoint directory `file_pattern`; chunk CRCs are checked.
//   RestoreSlice(file_pattern, tensor_name, shape_and_slice) -> tensor: dt
//       assembles the slice from whatever slices were stored.
//   RestoreAndCheck(file_pattern, tensor_name) -> tensor: dt  like Restore and
//       also checks the whole-tensor CRC against the manifest.
//   _CheckpointSnapshot(ref: Ref(T)) -> T  a copy of a variable's value taken
//       under its lock (the Saver fetches these, then writes in background).
// preferred_shard is the shard whose manifest is read first (-1: any).
//
// TensorFlow V2 checkpoints (tensor bundles: PREFIX.index and
// PREFIX.data-00000-of-00001; FORMAT.md "TensorFlow checkpoints"), with
// TensorFlow's signatures so tf.compat.v1.train.Saver graphs run unchanged:
//   SaveV2(prefix, tensor_names[N], shape_and_slices[N], tensors: dtypes)
//       writes the bundle at `prefix` (replaced if it exists).
//   RestoreV2(prefix, tensor_names[N], shape_and_slices[N]) -> tensors: dtypes
//       reads tensors from it; CRCs are checked.
//   MergeV2Checkpoints(checkpoint_prefixes[K], destination_prefix) merges the
//       bundles of a sharded save into one and deletes the sources.
// shape_and_slices entries must be "" (whole tensors): a slice spec is
// Unimplemented naming the tensor.
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {

REGISTER_OP("Save")
    .Input("filename: string")
    .Input("tensor_names: string")
    .Input("data: T")
    .Attr("T: list(type)")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("SaveSlices")
    .Input("filename: string")
    .Input("tensor_names: string")
    .Input("shapes_and_slices: string")
    .Input("data: T")
    .Attr("T: list(type)")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("Restore")
    .Input("file_pattern: string")
    .Input("tensor_name: string")
    .Output("tensor: dt")
    .Attr("dt: type")
    .Attr("preferred_shard: int = -1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("RestoreAndCheck")
    .SetSluiceOnly()
    .Input("file_pattern: string")
    .Input("tensor_name: string")
    .Output("tensor: dt")
    .Attr("dt: type")
    .Attr("preferred_shard: int = -1")
    // The shape the restored tensor must have (the variable it goes to);
    // an unknown rank checks nothing.
    .Attr("shape: shape = { unknown_rank: true }")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("RestoreSlice")
    .Input("file_pattern: string")
    .Input("tensor_name: string")
    .Input("shape_and_slice: string")
    .Output("tensor: dt")
    .Attr("dt: type")
    .Attr("preferred_shard: int = -1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("SaveV2")
    .Input("prefix: string")
    .Input("tensor_names: string")
    .Input("shape_and_slices: string")
    .Input("tensors: dtypes")
    .Attr("dtypes: list(type)")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("RestoreV2")
    .Input("prefix: string")
    .Input("tensor_names: string")
    .Input("shape_and_slices: string")
    .Output("tensors: dtypes")
    .Attr("dtypes: list(type) >= 1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("MergeV2Checkpoints")
    .Input("checkpoint_prefixes: string")
    .Input("destination_prefix: string")
    .Attr("delete_old_dirs: bool = true")
    .Attr("allow_missing_files: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("_CheckpointSnapshot")
    .SetSluiceOnly()
    .Input("ref: Ref(T)")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .SetNotDifferentiable();

}  // namespace sluice
