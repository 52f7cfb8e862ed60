// Shape inference: PartialShape (rank and dims possibly unknown) and the
// InferenceContext an op's shape function reads inputs and attrs from and
// writes output shapes to. Shape functions live beside their op registrations;
// common ones are in namespace shape_fns.
// Thread safety: an InferenceContext is used by one thread at a time.
#ifndef SLUICE_ENGINE_FRAMEWORK_SHAPE_INFERENCE_H_
#define SLUICE_ENGINE_FRAMEWORK_SHAPE_INFERENCE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/tensor.h"

namespace sluice {

constexpr int64_t kUnknownDim = -1;
constexpr int kUnknownRank = -1;

class PartialShape {
 public:
  // Unknown rank.
  PartialShape() = default;
  PartialShape(std::initializer_list<int64_t> dims) : rank_(static_cast<int>(dims.size())), dims_(dims) {}
  static PartialShape Unknown() { return PartialShape(); }
  static PartialShape Scalar() { return FromDims({}); }
  // Unchecked: dims of at most kMaxTensorRank entries, each >= -1. Shape
  // functions may form shapes no tensor can have (a MatMul of [2^40,?] and
  // [?,2^40]); ShapeRefiner checks every output with CheckBounds.
  static PartialShape FromDims(absl::Span<const int64_t> dims);
  // `rank` unknown dims. A rank outside [0, kMaxTensorRank] gives an unknown
  // rank (never a negative or huge allocation): shape functions that take a
  // rank from an input's dims or values use WithUnknownDims, which says why.
  static PartialShape UnknownOfRank(int64_t rank);
  // `rank` unknown dims, or InvalidArgument when no tensor has that rank.
  static absl::StatusOr<PartialShape> WithUnknownDims(int64_t rank);
  // FromDims, checked with CheckBounds (and dims >= -1).
  static absl::StatusOr<PartialShape> Build(absl::Span<const int64_t> dims);
  static PartialShape FromShape(const TensorShape& shape) { return FromDims(shape.dim_sizes()); }
  // InvalidArgument for dims < -1 and for shapes CheckBounds rejects.
  static absl::StatusOr<PartialShape> FromProto(const TensorShapeProto& proto);
  void AsProto(TensorShapeProto* proto) const;

  bool rank_known() const { return rank_ != kUnknownRank; }
  int rank() const { return rank_; }
  int64_t dim(int i) const { return dims_[i]; }
  absl::Span<const int64_t> dims() const { return dims_; }
  bool IsFullyDefined() const;
  // OK when some tensor can have this shape: TensorShape's rule (at most
  // kMaxTensorRank dims, every known dim and the product of the known non-zero
  // dims at most kMaxTensorElements), else InvalidArgument saying why.
  absl::Status CheckBounds() const;
  // Is `shape` one of the shapes this partial shape allows?
  bool IsCompatibleWith(const TensorShape& shape) const;
  bool IsCompatibleWith(const PartialShape& other) const;
  // The most specific shape compatible with both; InvalidArgument if none.
  absl::StatusOr<PartialShape> Merge(const PartialShape& other) const;
  // The most specific shape that both this and `other` fit (what a Merge of
  // the two outputs): dims that differ become unknown, and differing ranks an
  // unknown rank.
  PartialShape Widen(const PartialShape& other) const;
  bool operator==(const PartialShape& other) const { return rank_ == other.rank_ && dims_ == other.dims_; }
  // "[2,?]" or "<unknown>".
  std::string DebugString() const;

 private:
  int rank_ = kUnknownRank;
  absl::InlinedVector<int64_t, 4> dims_;
};

class InferenceContext {
 public:
  // `input_tensors[i]` is the value of input i when known statically (a Const
  // producer), else nullptr.
  InferenceContext(const NodeDef* node_def, const OpDef* op_def, std::vector<PartialShape> input_shapes,
                   std::vector<const Tensor*> input_tensors, int num_outputs);

  const NodeDef& node_def() const { return *node_def_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const PartialShape& input(int i) const { return inputs_[i]; }
  const Tensor* input_tensor(int i) const { return input_tensors_[i]; }
  // input_tensor(i)'s values, flattened, when it is an int32 or int64 tensor.
  std::optional<std::vector<int64_t>> input_index_values(int i) const;
  // What is known of input i's value as a shape, when it is a vector
  // computed at run time: each element's value, -1 where unknown (a
  // gradient's Shape(x) gives x's partial shape; ShapeRefiner also follows
  // such values through Pack, ConcatV2, slices and casts: see
  // engine/graph/shape_values.h); otherwise an unknown shape. Shape
  // functions that take a shape as a tensor (Conv2DBackpropInput's
  // input_sizes, Reshape's shape) use it when input_tensor(i) is null.
  const PartialShape& input_as_shape(int i) const;
  void set_inputs_as_shapes(std::vector<PartialShape> shapes) { inputs_as_shapes_ = std::move(shapes); }
  // When input i is a handle to a resource that declares its elements'
  // shapes (a queue's `shapes` attr), those shapes; otherwise empty. A queue's
  // Dequeue* ops give their outputs these shapes.
  const std::vector<PartialShape>& input_handle_shapes(int i) const;
  void set_input_handle_shapes(std::vector<std::vector<PartialShape>> shapes) {
    input_handle_shapes_ = std::move(shapes);
  }
  void set_output(int i, PartialShape shape) { outputs_[i] = std::move(shape); }
  const PartialShape& output(int i) const { return outputs_[i]; }
  // When output i is a handle: the element shapes of the resource behind it
  // (a variable's declared shape, a queue's components, a TensorArray's
  // element shape), which ShapeRefiner passes to the handle's consumers as
  // their input_handle_shapes. Unchanged, Switch and Merge forward them.
  void set_output_handle_shapes(int i, std::vector<PartialShape> shapes) {
    output_handle_shapes_[i] = std::move(shapes);
  }
  const std::vector<PartialShape>& output_handle_shapes(int i) const { return output_handle_shapes_[i]; }

  template <typename T>
  absl::Status GetAttr(absl::string_view name, T* value) const {
    return GetNodeAttr(*node_def_, name, value);
  }

  // InvalidArgument naming the input when its rank is known and differs.
  absl::Status WithRank(int input, int rank, PartialShape* out) const;
  // An InvalidArgument error prefixed with the node context.
  absl::Status Error(absl::string_view message) const;

 private:
  const NodeDef* node_def_;
  const OpDef* op_def_;
  std::vector<PartialShape> inputs_;
  std::vector<const Tensor*> input_tensors_;
  std::vector<PartialShape> inputs_as_shapes_;
  std::vector<std::vector<PartialShape>> input_handle_shapes_;
  std::vector<PartialShape> outputs_;
  std::vector<std::vector<PartialShape>> output_handle_shapes_;
};

// The values of an int32 or int64 tensor, flattened; nullopt for other types.
std::optional<std::vector<int64_t>> IndexValues(const Tensor& t);

namespace shape_fns {
// Every output: unknown shape.
absl::Status Unknown(InferenceContext* c);
// Every output: the shape (and handle shapes) of input 0.
absl::Status Unchanged(InferenceContext* c);
// Output 0: a scalar.
absl::Status Scalar(InferenceContext* c);
// Output 0: the numpy broadcast of inputs 0 and 1.
absl::Status BroadcastBinary(InferenceContext* c);
// Output 0: from the "shape" attr (partial shapes allowed).
absl::Status FromShapeAttr(InferenceContext* c);
// Output 0: the shape whose dims are the values of input `input` (a vector;
// -1 is unknown), or what is known of them (a Shape(x) computed at run time
// gives x's partial shape; a vector of known length, the rank).
absl::Status ShapeFromInput(InferenceContext* c, int input);
// Output 0: the numpy broadcast of two partial shapes, or InvalidArgument.
absl::StatusOr<PartialShape> Broadcast(const PartialShape& a, const PartialShape& b);
}  // namespace shape_fns

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_SHAPE_INFERENCE_H_
