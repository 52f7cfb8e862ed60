// Random ops: RandomUniform, RandomUniformInt, RandomStandardNormal,
// TruncatedNormal and RandomShuffle, with TensorFlow's signatures (tensorflow/core/ops/random_ops.cc).
//
// Seeds. Each op has attrs seed and seed2. A nonzero pair keys a Philox
// stream (engine/kernels/philox_random.h): the k-th run of the node in a
// session produces the same values in every process, so a run is
// reproducible. seed = seed2 = 0 means nondeterministic.
// TensorFlow's graph-level seed maps onto the pair as in its
// random_seed.get_seed, which model builders follow:
//   graph seed G set, op seed S set   -> (seed, seed2) = (G, S)
//   graph seed G set, op seed unset   -> (G, the op's creation index in the graph)
//   graph seed unset, op seed S set   -> (87654321, S)   (TF's DEFAULT_GRAPH_SEED)
//   neither                           -> (0, 0): nondeterministic
// The ops are stateful (never merged by CSE; each run draws new values) and
// not differentiable.
// Thread safety: registrations run at static initialization.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace {

// Output 0: the shape held by input 0 when it is a known constant.
absl::Status ShapeFromShapeInput(InferenceContext* c) {
  const Tensor* t = c->input_tensor(0);
  if (c->input(0).rank_known() && c->input(0).rank() != 1) {
    return c->Error(absl::StrCat("shape must be a vector, got ", c->input(0).DebugString()));
  }
  if (t == nullptr) {
    int64_t rank = c->input(0).rank_known() ? c->input(0).dim(0) : kUnknownDim;
    if (rank == kUnknownDim) {
      c->set_output(0, PartialShape::Unknown());
      return absl::OkStatus();
    }
    auto out = PartialShape::WithUnknownDims(rank);
    if (!out.ok()) return c->Error(absl::StrCat("shape input ", c->input(0).DebugString(), " gives ", out.status().message()));
    c->set_output(0, *out);
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < t->NumElements(); ++i) {
    int64_t d = t->dtype() == DT_INT32 ? t->data<int32_t>()[i] : t->data<int64_t>()[i];
    if (d < 0) return c->Error(absl::StrCat("shape has a negative dimension ", d));
    dims.push_back(d);
  }
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

}  // namespace

// Uniform in [0, 1).
REGISTER_OP("RandomUniform")
    .Input("shape: T")
    .Output("output: dtype")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("dtype: {half, bfloat16, float, double}")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(ShapeFromShapeInput);

// Mean 0, standard deviation 1.
REGISTER_OP("RandomStandardNormal")
    .Input("shape: T")
    .Output("output: dtype")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("dtype: {half, bfloat16, float, double}")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(ShapeFromShapeInput);

// Standard normal values redrawn until within 2 standard deviations.
REGISTER_OP("TruncatedNormal")
    .Input("shape: T")
    .Output("output: dtype")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("dtype: {half, bfloat16, float, double}")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(ShapeFromShapeInput);

// Integers uniform in [minval, maxval) (scalars; minval < maxval unless the
// output is empty).
REGISTER_OP("RandomUniformInt")
    .Input("shape: T")
    .Input("minval: Tout")
    .Input("maxval: Tout")
    .Output("output: Tout")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("Tout: {int32, int64}")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) {
      for (int i : {1, 2}) {
        const PartialShape& bound = c->input(i);
        if (bound.rank_known() && bound.rank() != 0) {
          return c->Error(absl::StrCat(i == 1 ? "minval" : "maxval", " must be a scalar, got shape ",
                                       bound.DebugString()));
        }
      }
      return ShapeFromShapeInput(c);
    });

// A random permutation of `value` along its first dimension.
REGISTER_OP("RandomShuffle")
    .Input("value: T")
    .Output("output: T")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("T: type")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(shape_fns::Unchanged);

}  // namespace sluice
