// TensorShape: the fully known dimensions of a Tensor, with overflow-checked
// element counts. Shapes built from untrusted input go through
// TensorShape::Build / FromProto / TryAddDim, which return InvalidArgument
// instead of crashing on negative dims or products that overflow.
//
// The rule every TensorShape obeys (checked on every dim added):
//   * at most kMaxTensorRank dims;
//   * every dim in [0, kMaxTensorElements];
//   * the product of the NON-ZERO dims is at most kMaxTensorElements.
// The last point is stricter than "the element count fits": [0, 2^62, 4] has
// zero elements, but a kernel that drops, permutes or combines its dims (a
// reduction over axis 0, a transpose, a row-major stride) would form
// 2^62 * 4. Under the rule any product of any subset of a shape's dims fits
// in int64, so DimProduct, RowMajorStrides and the like never overflow.
// Kernels still build output shapes that mix dims of SEVERAL inputs (MatMul's
// [m, n], Concat's sums) with Build, never with the CHECKing constructors.
// Thread safety: a value type; const methods are safe to call concurrently.
#ifndef SLUICE_ENGINE_FRAMEWORK_TENSOR_SHAPE_H_
#define SLUICE_ENGINE_FRAMEWORK_TENSOR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/framework/tensor_shape.pb.h"

namespace sluice {

class TensorShape {
 public:
  // The shape of a scalar (rank 0, one element).
  TensorShape() = default;
  // REQUIRES: dims obey the rule above (CHECKed). For constants and tests
  // only: anything computed from a graph, an input tensor or a file goes
  // through Build.
  TensorShape(std::initializer_list<int64_t> dims);
  explicit TensorShape(absl::Span<const int64_t> dims);

  // InvalidArgument "invalid shape [..]: <why>" when dims break the rule.
  static absl::StatusOr<TensorShape> Build(absl::Span<const int64_t> dims);
  // Rejects unknown rank and unknown (-1) dims.
  static absl::StatusOr<TensorShape> FromProto(const TensorShapeProto& proto);
  void AsProto(TensorShapeProto* proto) const;

  int dims() const { return static_cast<int>(dims_.size()); }
  int64_t dim_size(int i) const { return dims_[i]; }
  absl::Span<const int64_t> dim_sizes() const { return dims_; }
  int64_t num_elements() const { return num_elements_; }

  // REQUIRES: the shape still obeys the rule with `size` added (CHECKed).
  void AddDim(int64_t size);
  // InvalidArgument (and the shape unchanged) when `size` would break the rule.
  absl::Status TryAddDim(int64_t size);

  bool operator==(const TensorShape& other) const { return dims_ == other.dims_; }
  bool operator!=(const TensorShape& other) const { return !(*this == other); }

  // "[2,3]"; "[]" for a scalar.
  std::string DebugString() const;

 private:
  absl::InlinedVector<int64_t, 4> dims_;
  int64_t num_elements_ = 1;
  int64_t nonzero_product_ = 1;  // product of the non-zero dims
};

// The largest element count a TensorShape may have (2^62), and the bound on
// the product of its non-zero dims. Byte counts of such shapes can still
// overflow (2^62 8-byte elements): Tensor::Allocate and Tensor::FromProto
// check those separately.
constexpr int64_t kMaxTensorElements = int64_t{1} << 62;
// The most dims a shape may have (TensorFlow's limit too).
constexpr int kMaxTensorRank = 254;

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_TENSOR_SHAPE_H_
