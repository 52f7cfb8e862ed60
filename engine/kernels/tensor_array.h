// TensorArray: the per-step resource behind TensorFlow's TensorArrayV3 handles
// (engine/ops/tensor_array_ops.cc): an array of tensors of one dtype, each
// element written once and (with clear_after_read) read once, that a loop
// fills one index per iteration. The kernels (tensor_array_ops.cc) keep it in
// the step's container; the gradient array of a source is another TensorArray
// in the same container, named "<forward name>@<source>", of the forward
// array's size, which sums repeated writes to an index and reads an unwritten
// index as zeros of the forward element's shape (TensorFlow's semantics).
// Every misuse (index out of range, a second write, a read of an unwritten or
// already-read element, a dtype or shape mismatch, use after Close) is an
// InvalidArgument naming the array and the index; nothing crashes.
// Thread safety: all methods may be called concurrently (one mutex per array);
// values are shallow copies, so copying happens outside the lock where large.
#ifndef SLUICE_ENGINE_KERNELS_TENSOR_ARRAY_H_
#define SLUICE_ENGINE_KERNELS_TENSOR_ARRAY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "engine/framework/resource_mgr.h"
#include "engine/framework/shape_inference.h"
#include "engine/framework/tensor.h"

namespace sluice {

// The most elements an array may have (creation or a dynamic write past the
// end): more is InvalidArgument, not an allocation that kills the process.
inline constexpr int64_t kMaxTensorArraySize = int64_t{1} << 24;

class TensorArray : public ResourceBase {
 public:
  static constexpr char kTypeName[] = "TensorArray";

  struct Options {
    DataType dtype = DT_INVALID;
    PartialShape element_shape;  // unknown rank: anything
    bool dynamic_size = false;
    bool clear_after_read = true;
    bool identical_element_shapes = false;
    // A gradient array: writes to one index add up; unwritten elements read
    // as zeros when their shape is known.
    bool is_grad = false;
  };

  TensorArray(std::string name, Options options, int64_t size);

  const std::string& name() const { return name_; }
  DataType dtype() const { return options_.dtype; }
  bool dynamic_size() const { return options_.dynamic_size; }
  std::string DebugString() const override;

  absl::Status Write(int64_t index, const Tensor& value);
  absl::StatusOr<Tensor> Read(int64_t index);
  // Reads `indices` in order (each as Read would).
  absl::StatusOr<std::vector<Tensor>> ReadMany(absl::Span<const int32_t> indices);
  // Reads every element, 0 .. size-1.
  absl::StatusOr<std::vector<Tensor>> ReadAll();
  absl::StatusOr<int64_t> Size() const;
  // The element shape the array knows (the attr, refined by identical shapes).
  PartialShape element_shape() const;
  // Drops the values; every later use is an error.
  void Close();

  // A new gradient array named `name`: this array's size (frozen) and dtype,
  // and the shapes of the elements written so far.
  absl::StatusOr<std::shared_ptr<TensorArray>> MakeGradient(const std::string& name);

 private:
  struct Element {
    Tensor value;
    TensorShape shape;     // of the value written (kept after clearing)
    bool has_shape = false;
    bool written = false;
    bool read = false;
    bool cleared = false;
  };

  absl::Status CheckOpen() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status LockedWrite(int64_t index, const Tensor& value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Tensor> LockedRead(int64_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Where(int64_t index) const;

  const std::string name_;
  const Options options_;
  mutable absl::Mutex mu_;
  PartialShape element_shape_ ABSL_GUARDED_BY(mu_);
  std::vector<Element> elements_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool size_frozen_ ABSL_GUARDED_BY(mu_) = false;  // a gradient was made
};

// Copies `count` elements of `src` from flat offset `src_offset` into `dst`
// at flat offset `dst_offset`. REQUIRES: same dtype; both ranges in bounds.
void CopyElements(const Tensor& src, int64_t src_offset, int64_t count, Tensor* dst, int64_t dst_offset);

// A tensor of zeros (empty strings) of `dtype` and `shape`; ResourceExhausted
// when it cannot be allocated.
absl::StatusOr<Tensor> ZerosTensor(DataType dtype, const TensorShape& shape);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_TENSOR_ARRAY_H_
