// See tensor_array.h. Error texts follow TensorFlow's (tensor_array.h/.cc)
// so users find them; each names the array.
#include "engine/kernels/tensor_array.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// One sum; integers wrap (in unsigned arithmetic: no signed-overflow UB).
template <typename T>
T Add(T x, T y) {
  if constexpr (std::is_integral<T>::value) {
    using U = typename std::make_unsigned<T>::type;
    return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
  } else {
    return static_cast<T>(x + y);
  }
}

// `a + b` elementwise, a fresh tensor (neither input changes).
absl::StatusOr<Tensor> AddTensors(const Tensor& a, const Tensor& b) {
  auto allocated = Tensor::Allocate(CpuAllocator(), a.dtype(), a.shape());
  if (!allocated.ok()) return allocated.status();
  Tensor sum = *std::move(allocated);
  const int64_t n = a.NumElements();
  switch (a.dtype()) {
#define SLUICE_TA_ADD_(ENUM, TYPE)                                                       \
  case ENUM: {                                                                           \
    const TYPE* x = a.data<TYPE>();                                                      \
    const TYPE* y = b.data<TYPE>();                                                      \
    TYPE* z = sum.data<TYPE>();                                                          \
    for (int64_t i = 0; i < n; ++i) z[i] = Add(x[i], y[i]);                              \
    return sum;                                                                          \
  }
    SLUICE_TA_ADD_(DT_FLOAT, float)
    SLUICE_TA_ADD_(DT_DOUBLE, double)
    SLUICE_TA_ADD_(DT_INT32, int32_t)
    SLUICE_TA_ADD_(DT_INT64, int64_t)
    SLUICE_TA_ADD_(DT_HALF, half)
    SLUICE_TA_ADD_(DT_BFLOAT16, bfloat16)
    SLUICE_TA_ADD_(DT_COMPLEX64, complex64)
#undef SLUICE_TA_ADD_
    default:
      return absl::UnimplementedError(
          absl::StrCat("cannot add up gradient writes of type ", DataTypeString(a.dtype())));
  }
}

}  // namespace

void CopyElements(const Tensor& src, int64_t src_offset, int64_t count, Tensor* dst, int64_t dst_offset) {
  if (count <= 0) return;
  if (src.dtype() == DT_STRING) {
    const tstring* from = src.data<tstring>() + src_offset;
    std::copy(from, from + count, dst->data<tstring>() + dst_offset);
    return;
  }
  const size_t bytes = static_cast<size_t>(DataTypeSize(src.dtype()));
  std::memcpy(static_cast<char*>(dst->raw_data()) + dst_offset * bytes,
              static_cast<const char*>(src.raw_data()) + src_offset * bytes, count * bytes);
}

absl::StatusOr<Tensor> ZerosTensor(DataType dtype, const TensorShape& shape) {
  auto t = Tensor::Allocate(CpuAllocator(), dtype, shape);
  if (!t.ok()) return t.status();
  if (dtype != DT_STRING && t->TotalBytes() > 0) std::memset(t->raw_data(), 0, t->TotalBytes());
  return t;
}

TensorArray::TensorArray(std::string name, Options options, int64_t size)
    : name_(std::move(name)), options_(std::move(options)), element_shape_(options_.element_shape) {
  elements_.resize(static_cast<size_t>(size));
}

std::string TensorArray::DebugString() const {
  absl::ReaderMutexLock lock(&mu_);
  return absl::StrCat("TensorArray ", name_, " of ", DataTypeString(options_.dtype), ", size ", elements_.size());
}

std::string TensorArray::Where(int64_t index) const {
  return absl::StrCat("TensorArray ", name_, ": ", index < 0 ? "" : absl::StrCat("index ", index, ": "));
}

absl::Status TensorArray::CheckOpen() const {
  if (closed_) return absl::InvalidArgumentError(absl::StrCat("TensorArray ", name_, " has already been closed."));
  return absl::OkStatus();
}

absl::Status TensorArray::Write(int64_t index, const Tensor& value) {
  absl::MutexLock lock(&mu_);
  return LockedWrite(index, value);
}

absl::Status TensorArray::LockedWrite(int64_t index, const Tensor& value) {
  absl::Status s = CheckOpen();
  if (!s.ok()) return s;
  if (value.dtype() != options_.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(Where(-1), "Could not write to TensorArray index ", index,
                                                   " because the value dtype is ", DataTypeString(value.dtype()),
                                                   " but the TensorArray dtype is ",
                                                   DataTypeString(options_.dtype), "."));
  }
  if (index < 0) {
    return absl::InvalidArgumentError(absl::StrCat(Where(-1), "Tried to write to index ", index,
                                                   " but the index is negative"));
  }
  if (index >= static_cast<int64_t>(elements_.size())) {
    if (!options_.dynamic_size || size_frozen_) {
      return absl::InvalidArgumentError(absl::StrCat(Where(-1), "Tried to write to index ", index,
                                                     " but array is not resizeable and size is: ", elements_.size()));
    }
    if (index >= kMaxTensorArraySize) {
      return absl::InvalidArgumentError(absl::StrCat(Where(-1), "Tried to write to index ", index,
                                                     " but the largest TensorArray has ", kMaxTensorArraySize,
                                                     " elements"));
    }
    elements_.resize(static_cast<size_t>(index) + 1);
  }
  if (!element_shape_.IsCompatibleWith(value.shape())) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(-1), "Could not write to TensorArray index ", index, " because the value shape is ",
        value.shape().DebugString(), " which is incompatible with the TensorArray's inferred element shape: ",
        element_shape_.DebugString(), " (consider setting infer_shape=False)."));
  }
  if (options_.identical_element_shapes && !element_shape_.IsFullyDefined()) {
    element_shape_ = PartialShape::FromShape(value.shape());
  }
  Element& e = elements_[static_cast<size_t>(index)];
  if (e.read) {
    return absl::InvalidArgumentError(absl::StrCat(Where(-1), "Could not write to TensorArray index ", index,
                                                   " because it has already been read."));
  }
  if (e.written && !options_.is_grad) {
    return absl::InvalidArgumentError(absl::StrCat(Where(-1), "Could not write to TensorArray index ", index,
                                                   " because it has already been written to."));
  }
  if (e.has_shape && e.shape != value.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(-1), "Could not write to TensorArray index ", index, " because the value shape ",
        value.shape().DebugString(), " differs from the element's shape ", e.shape.DebugString(),
        e.written ? " written before" : " in the forward array"));
  }
  if (e.written) {  // a gradient array: add up
    auto sum = AddTensors(e.value, value);
    if (!sum.ok()) return absl::Status(sum.status().code(), Where(index) + std::string(sum.status().message()));
    e.value = std::move(sum).value();
    return absl::OkStatus();
  }
  e.value = value;
  e.shape = value.shape();
  e.has_shape = true;
  e.written = true;
  return absl::OkStatus();
}

absl::StatusOr<Tensor> TensorArray::Read(int64_t index) {
  absl::MutexLock lock(&mu_);
  return LockedRead(index);
}

absl::StatusOr<Tensor> TensorArray::LockedRead(int64_t index) {
  absl::Status s = CheckOpen();
  if (!s.ok()) return s;
  if (index < 0 || index >= static_cast<int64_t>(elements_.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(-1), "Tried to read from index ", index, " but array size is: ", elements_.size()));
  }
  Element& e = elements_[static_cast<size_t>(index)];
  if (e.cleared) {
    return absl::InvalidArgumentError(absl::StrCat(Where(-1), "Could not read index ", index,
                                                   " twice because it was cleared after a previous read "
                                                   "(perhaps try setting clear_after_read = false?)."));
  }
  Tensor value;
  if (e.written) {
    value = e.value;
  } else if (options_.is_grad && (e.has_shape || element_shape_.IsFullyDefined())) {
    TensorShape shape = e.shape;
    if (!e.has_shape) {
      auto built = TensorShape::Build(element_shape_.dims());
      if (!built.ok()) return absl::Status(built.status().code(), Where(index) + std::string(built.status().message()));
      shape = *built;
    }
    auto zeros = ZerosTensor(options_.dtype, shape);
    if (!zeros.ok()) return absl::Status(zeros.status().code(), Where(index) + std::string(zeros.status().message()));
    value = *std::move(zeros);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(Where(-1), "Could not read from TensorArray index ", index,
                                                   " because it has not yet been written to."));
  }
  e.read = true;
  if (options_.clear_after_read) {
    e.value = Tensor();
    e.cleared = true;
  }
  return value;
}

absl::StatusOr<std::vector<Tensor>> TensorArray::ReadMany(absl::Span<const int32_t> indices) {
  absl::MutexLock lock(&mu_);
  std::vector<Tensor> values;
  values.reserve(indices.size());
  for (int32_t i : indices) {
    auto v = LockedRead(i);
    if (!v.ok()) return v.status();
    values.push_back(std::move(v).value());
  }
  return values;
}

absl::StatusOr<std::vector<Tensor>> TensorArray::ReadAll() {
  absl::MutexLock lock(&mu_);
  std::vector<Tensor> values;
  values.reserve(elements_.size());
  for (size_t i = 0; i < elements_.size(); ++i) {
    auto v = LockedRead(static_cast<int64_t>(i));
    if (!v.ok()) return v.status();
    values.push_back(std::move(v).value());
  }
  return values;
}

absl::StatusOr<int64_t> TensorArray::Size() const {
  absl::ReaderMutexLock lock(&mu_);
  absl::Status s = CheckOpen();
  if (!s.ok()) return s;
  return static_cast<int64_t>(elements_.size());
}

PartialShape TensorArray::element_shape() const {
  absl::ReaderMutexLock lock(&mu_);
  return element_shape_;
}

void TensorArray::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  elements_.clear();
}

absl::StatusOr<std::shared_ptr<TensorArray>> TensorArray::MakeGradient(const std::string& name) {
  absl::MutexLock lock(&mu_);
  absl::Status s = CheckOpen();
  if (!s.ok()) return s;
  size_frozen_ = true;
  Options options = options_;
  options.dynamic_size = false;
  options.clear_after_read = true;
  options.is_grad = true;
  options.element_shape = element_shape_;
  auto grad = std::make_shared<TensorArray>(name, options, static_cast<int64_t>(elements_.size()));
  absl::MutexLock grad_lock(&grad->mu_);
  for (size_t i = 0; i < elements_.size(); ++i) {
    grad->elements_[i].shape = elements_[i].shape;
    grad->elements_[i].has_shape = elements_[i].has_shape;
  }
  return grad;
}

}  // namespace sluice
