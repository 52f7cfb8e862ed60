// Tensor: a typed, shaped, reference-counted view of a 64-byte-aligned buffer
// from a device Allocator. Copying a Tensor is cheap (it shares the buffer);
// Clone() makes a deep copy. Eigen views (flat, matrix, scalar...) map the
// buffer in place for kernels.
// Thread safety: a Tensor object is a value; concurrent reads of one buffer are
// safe, and writers (Assign kernels) synchronize through the variable's mutex.
#ifndef SLUICE_ENGINE_FRAMEWORK_TENSOR_H_
#define SLUICE_ENGINE_FRAMEWORK_TENSOR_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/framework/allocator.h"
#include "engine/platform/logging.h"
#include "engine/framework/tensor.pb.h"
#include "engine/framework/tensor_shape.h"
#include "engine/framework/types.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace sluice {

// Owns one allocation. Strings are constructed and destroyed in place.
class TensorBuffer {
 public:
  // nullptr when the allocator fails or the byte count would overflow int64.
  static std::shared_ptr<TensorBuffer> Allocate(Allocator* allocator, DataType dtype,
                                                int64_t num_elements);
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  TensorBuffer(Allocator* allocator, DataType dtype, int64_t num_elements, void* data, size_t bytes)
      : allocator_(allocator), dtype_(dtype), num_elements_(num_elements), data_(data), bytes_(bytes) {}
  Allocator* allocator_;
  DataType dtype_;
  int64_t num_elements_;
  void* data_;
  size_t bytes_;
};

class Tensor {
 public:
  template <typename T, int NDIMS>
  using TensorMapT = Eigen::TensorMap<Eigen::Tensor<T, NDIMS, Eigen::RowMajor, Eigen::DenseIndex>,
                                      Eigen::Aligned>;
  template <typename T, int NDIMS>
  using ConstTensorMapT =
      Eigen::TensorMap<Eigen::Tensor<const T, NDIMS, Eigen::RowMajor, Eigen::DenseIndex>,
                       Eigen::Aligned>;

  // An uninitialized tensor of type DT_INVALID.
  Tensor() = default;
  // Allocates from the CPU allocator. REQUIRES: dtype is supported; CHECK-fails
  // when memory is exhausted (use Allocate to get a Status instead).
  Tensor(DataType dtype, const TensorShape& shape);
  Tensor(Allocator* allocator, DataType dtype, const TensorShape& shape);

  // ResourceExhausted when the allocator fails; InvalidArgument for bad dtypes.
  static absl::StatusOr<Tensor> Allocate(Allocator* allocator, DataType dtype,
                                         const TensorShape& shape);

  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(DataTypeToEnum<T>::value, TensorShape());
    t.data<T>()[0] = std::move(value);
    return t;
  }
  // REQUIRES: values.size() == shape.num_elements().
  template <typename T>
  static Tensor FromVector(absl::Span<const T> values, const TensorShape& shape) {
    CHECK_EQ(static_cast<int64_t>(values.size()), shape.num_elements());
    Tensor t(DataTypeToEnum<T>::value, shape);
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector<T>(absl::MakeConstSpan(values),
                         TensorShape({static_cast<int64_t>(values.size())}));
  }

  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int dims() const { return shape_.dims(); }
  int64_t dim_size(int i) const { return shape_.dim_size(i); }
  int64_t NumElements() const { return shape_.num_elements(); }
  // Bytes of element storage (0 for strings' heap payloads).
  size_t TotalBytes() const;
  bool IsInitialized() const { return dtype_ != DT_INVALID && (buffer_ != nullptr || NumElements() == 0); }
  bool SharesBufferWith(const Tensor& other) const {
    return buffer_ != nullptr && buffer_ == other.buffer_;
  }

  // REQUIRES: DataTypeToEnum<T>::value == dtype() (CHECKed).
  template <typename T>
  T* data() const {
    CHECK_EQ(DataTypeToEnum<T>::value, dtype_) << "tensor dtype mismatch";
    return reinterpret_cast<T*>(raw_data());
  }
  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }
  // True when this Tensor object is the only holder of its buffer. A
  // resource variable's writer, holding the variable's mutex (under which
  // every reader takes its copy), updates in place only then, else it first
  // gives the variable a private copy (copy-on-write).
  bool RefCountIsOne() const { return buffer_ != nullptr && buffer_.use_count() == 1; }

  template <typename T>
  TensorMapT<T, 1> flat() const {
    return TensorMapT<T, 1>(data<T>(), NumElements());
  }
  template <typename T>
  ConstTensorMapT<T, 1> const_flat() const {
    return ConstTensorMapT<T, 1>(data<T>(), NumElements());
  }
  // REQUIRES: dims() == 2.
  template <typename T>
  TensorMapT<T, 2> matrix() const {
    CHECK_EQ(dims(), 2);
    return TensorMapT<T, 2>(data<T>(), dim_size(0), dim_size(1));
  }
  template <typename T, int NDIMS>
  TensorMapT<T, NDIMS> tensor() const {
    CHECK_EQ(dims(), NDIMS);
    Eigen::array<Eigen::DenseIndex, NDIMS> d;
    for (int i = 0; i < NDIMS; ++i) d[i] = dim_size(i);
    return TensorMapT<T, NDIMS>(data<T>(), d);
  }
  // REQUIRES: NumElements() == 1.
  template <typename T>
  T& scalar() const {
    CHECK_EQ(NumElements(), 1);
    return data<T>()[0];
  }

  // A tensor sharing this buffer with another shape of the same element count.
  absl::StatusOr<Tensor> Reshaped(const TensorShape& shape) const;
  Tensor Clone() const;

  // Decodes a TensorProto (tensor_content or typed fields; a single typed value
  // fills the shape). InvalidArgument for any malformed proto, and for typed
  // fields with fewer values than elements whose tensor would exceed
  // kMaxRepeatedProtoBytes (a Const [1e9] with one value).
  static absl::StatusOr<Tensor> FromProto(const TensorProto& proto,
                                          Allocator* allocator = CpuAllocator());
  // The checks FromProto makes, without allocating: the shape the proto
  // describes, or InvalidArgument for a malformed proto.
  static absl::StatusOr<TensorShape> ValidateProto(const TensorProto& proto);
  // Encodes values as little-endian bytes in tensor_content (strings in string_val).
  void AsProtoTensorContent(TensorProto* proto) const;

  // "Tensor<float, [2,2]: 1 2 3 4>", at most max_entries values.
  std::string DebugString(int max_entries = 10) const;
  // The values only: "1 2 3 4".
  std::string SummarizeValue(int max_entries) const;

 private:
  DataType dtype_ = DT_INVALID;
  TensorShape shape_;
  std::shared_ptr<TensorBuffer> buffer_;
};

// The most bytes a TensorProto's typed fields may expand to by repeating
// their last value (256 MiB: a [8192, 8192] float of zeros).
constexpr int64_t kMaxRepeatedProtoBytes = int64_t{1} << 28;

// OK when every byte is 0 or 1, else InvalidArgument naming the first bad
// element. Loading a C++ bool from any other byte is undefined behaviour, so
// every path that fills a DT_BOOL tensor from outside bytes (TensorProto
// tensor_content, checkpoints, raw records) calls this first.
absl::Status ValidateBoolBytes(absl::string_view bytes);

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_TENSOR_H_
