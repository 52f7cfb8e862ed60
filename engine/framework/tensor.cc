// Tensor: buffers, proto conversion, reshaping and printing.
#include "engine/framework/tensor.h"

#include <cstring>
#include <limits>
#include <new>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// The bytes `num_elements` elements of `dtype` occupy in a buffer, or false
// when that count does not fit in int64 (a shape may hold 2^62 elements, but
// 2^62 8-byte or 32-byte elements do not fit in 64-bit byte counts).
// Bytes per element in a buffer: strings and resource handles are objects
// constructed in place.
uint64_t ElementBytes(DataType dtype) {
  if (dtype == DT_STRING) return sizeof(tstring);
  if (dtype == DT_RESOURCE) return sizeof(ResourceHandle);
  return static_cast<uint64_t>(DataTypeSize(dtype));
}

bool BufferBytes(DataType dtype, int64_t num_elements, size_t* bytes) {
  const uint64_t element = ElementBytes(dtype);
  if (num_elements < 0) return false;
  if (element != 0 &&
      static_cast<uint64_t>(num_elements) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / element) {
    return false;
  }
  *bytes = static_cast<size_t>(static_cast<uint64_t>(num_elements) * element);
  return true;
}

absl::Status TooManyBytes(DataType dtype, const TensorShape& shape) {
  return absl::InvalidArgumentError(absl::StrCat("a ", DataTypeString(dtype), " tensor of shape ", shape.DebugString(),
                                                 " needs more than 2^63 bytes"));
}

}  // namespace

std::shared_ptr<TensorBuffer> TensorBuffer::Allocate(Allocator* allocator, DataType dtype,
                                                     int64_t num_elements) {
  size_t bytes;
  if (!BufferBytes(dtype, num_elements, &bytes)) return nullptr;
  void* data = allocator->AllocateRaw(kTensorAlignment, bytes);
  if (data == nullptr) return nullptr;
  if (dtype == DT_STRING) {
    tstring* strings = static_cast<tstring*>(data);
    for (int64_t i = 0; i < num_elements; ++i) new (strings + i) tstring();
  } else if (dtype == DT_RESOURCE) {
    ResourceHandle* handles = static_cast<ResourceHandle*>(data);
    for (int64_t i = 0; i < num_elements; ++i) new (handles + i) ResourceHandle();
  }
  return std::shared_ptr<TensorBuffer>(new TensorBuffer(allocator, dtype, num_elements, data, bytes));
}

TensorBuffer::~TensorBuffer() {
  if (dtype_ == DT_STRING) {
    tstring* strings = static_cast<tstring*>(data_);
    for (int64_t i = 0; i < num_elements_; ++i) strings[i].~tstring();
  } else if (dtype_ == DT_RESOURCE) {
    ResourceHandle* handles = static_cast<ResourceHandle*>(data_);
    for (int64_t i = 0; i < num_elements_; ++i) handles[i].~ResourceHandle();
  }
  allocator_->DeallocateRaw(data_, bytes_);
}

Tensor::Tensor(DataType dtype, const TensorShape& shape) : Tensor(CpuAllocator(), dtype, shape) {}

Tensor::Tensor(Allocator* allocator, DataType dtype, const TensorShape& shape) {
  auto t = Allocate(allocator, dtype, shape);
  CHECK(t.ok()) << t.status().ToString();
  *this = std::move(t).value();
}

absl::StatusOr<Tensor> Tensor::Allocate(Allocator* allocator, DataType dtype,
                                        const TensorShape& shape) {
  if (!DataTypeCanFlow(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot allocate a tensor of type ", DataTypeString(dtype)));
  }
  size_t bytes;
  if (!BufferBytes(dtype, shape.num_elements(), &bytes)) return TooManyBytes(dtype, shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.buffer_ = TensorBuffer::Allocate(allocator, dtype, shape.num_elements());
  if (t.buffer_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory allocating a ",
                                                     DataTypeString(dtype), " tensor of shape ",
                                                     shape.DebugString(), " on ", allocator->Name()));
  }
  return t;
}

size_t Tensor::TotalBytes() const {
  return NumElements() * ElementBytes(dtype_);
}

absl::StatusOr<Tensor> Tensor::Reshaped(const TensorShape& shape) const {
  if (shape.num_elements() != NumElements()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reshape a tensor of ", NumElements(),
                                                   " elements to shape ", shape.DebugString()));
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::Clone() const {
  if (!IsInitialized() || buffer_ == nullptr) return *this;
  Tensor t(CpuAllocator(), dtype_, shape_);
  if (dtype_ == DT_STRING) {
    std::copy(data<tstring>(), data<tstring>() + NumElements(), t.data<tstring>());
  } else if (dtype_ == DT_RESOURCE) {
    std::copy(data<ResourceHandle>(), data<ResourceHandle>() + NumElements(), t.data<ResourceHandle>());
  } else {
    std::memcpy(t.raw_data(), raw_data(), TotalBytes());
  }
  return t;
}

namespace {

// Copies `count` typed proto values into `out`, repeating the last one to fill
// `n` elements as TensorFlow does.
template <typename T, typename Field>
absl::Status FillFromField(const Field& field, int64_t n, T* out, const char* field_name) {
  int64_t count = field.size();
  if (count > n) {
    return absl::InvalidArgumentError(absl::StrCat("TensorProto has ", count, " values in ",
                                                   field_name, " but the shape holds ", n));
  }
  if (count == 0) {
    std::fill(out, out + n, T());
    return absl::OkStatus();
  }
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(field.Get(i));
  std::fill(out + count, out + n, out[count - 1]);
  return absl::OkStatus();
}

template <typename T>
absl::Status FillFromHalfField(const TensorProto& proto, int64_t n, T* out) {
  int64_t count = proto.half_val_size();
  if (count > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("TensorProto has ", count, " values in half_val but the shape holds ", n));
  }
  for (int64_t i = 0; i < count; ++i) {
    out[i] = Eigen::numext::bit_cast<T>(static_cast<uint16_t>(proto.half_val(i)));
  }
  std::fill(out + count, out + n, count == 0 ? T() : out[count - 1]);
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateBoolBytes(absl::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    const unsigned char b = static_cast<unsigned char>(bytes[i]);
    if (b > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("bool element ", i, " is stored as byte ", static_cast<int>(b), " (must be 0 or 1)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorShape> Tensor::ValidateProto(const TensorProto& proto) {
  if (!DataTypeIsSupported(proto.dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat("TensorProto has unsupported dtype ", DataTypeString(proto.dtype())));
  }
  auto shape_or = TensorShape::FromProto(proto.tensor_shape());
  if (!shape_or.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("TensorProto: ", shape_or.status().message()));
  }
  const TensorShape& shape = *shape_or;
  const int64_t n = shape.num_elements();
  const DataType dtype = proto.dtype();
  if (!proto.tensor_content().empty()) {
    if (dtype == DT_STRING) {
      return absl::InvalidArgumentError("TensorProto of type string cannot use tensor_content");
    }
    size_t expected;
    if (!BufferBytes(dtype, n, &expected)) return TooManyBytes(dtype, shape);
    if (proto.tensor_content().size() != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat("TensorProto tensor_content has ", proto.tensor_content().size(),
                       " bytes but a ", DataTypeString(dtype), " tensor of shape ",
                       shape.DebugString(), " needs ", expected));
    }
    if (dtype == DT_BOOL) {
      absl::Status s = ValidateBoolBytes(proto.tensor_content());
      if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("TensorProto tensor_content: ", s.message()));
    }
    return shape;
  }
  int64_t count = 0;
  const char* field = "";
  switch (dtype) {
    case DT_FLOAT: count = proto.float_val_size(); field = "float_val"; break;
    case DT_DOUBLE: count = proto.double_val_size(); field = "double_val"; break;
    case DT_INT32: case DT_INT16: case DT_INT8: case DT_UINT8: case DT_UINT16:
      count = proto.int_val_size(); field = "int_val"; break;
    case DT_INT64: count = proto.int64_val_size(); field = "int64_val"; break;
    case DT_BOOL: count = proto.bool_val_size(); field = "bool_val"; break;
    case DT_HALF: case DT_BFLOAT16: count = proto.half_val_size(); field = "half_val"; break;
    case DT_STRING: count = proto.string_val_size(); field = "string_val"; break;
    case DT_COMPLEX64:
      if (proto.scomplex_val_size() % 2 != 0) {
        return absl::InvalidArgumentError("TensorProto scomplex_val holds an odd number of floats");
      }
      count = proto.scomplex_val_size() / 2; field = "scomplex_val"; break;
    default: break;
  }
  if (count > n) {
    return absl::InvalidArgumentError(absl::StrCat("TensorProto has ", count, " values in ", field,
                                                   " but the shape ", shape.DebugString(), " holds ", n));
  }
  size_t bytes;
  if (!BufferBytes(dtype, n, &bytes)) return TooManyBytes(dtype, shape);
  // Fewer values than elements repeat the last one (or zero): a few bytes of
  // proto must not turn into gigabytes of tensor.
  if (count < n && bytes > static_cast<size_t>(kMaxRepeatedProtoBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TensorProto of shape ", shape.DebugString(), " gives ", count, " ", field, " values for ", n,
        " elements: repeating them would fill ", bytes, " bytes, more than the ", kMaxRepeatedProtoBytes,
        " a proto may expand to (give every value in tensor_content, or build the tensor with Fill)"));
  }
  return shape;
}

absl::StatusOr<Tensor> Tensor::FromProto(const TensorProto& proto, Allocator* allocator) {
  auto shape_or = ValidateProto(proto);
  if (!shape_or.ok()) return shape_or.status();
  const TensorShape& shape = *shape_or;
  const int64_t n = shape.num_elements();
  const DataType dtype = proto.dtype();
  auto tensor_or = Allocate(allocator, dtype, shape);
  if (!tensor_or.ok()) return tensor_or.status();
  Tensor t = std::move(tensor_or).value();
  if (!proto.tensor_content().empty()) {
    std::memcpy(t.raw_data(), proto.tensor_content().data(), proto.tensor_content().size());
    return t;
  }
  absl::Status s;
  switch (dtype) {
    case DT_FLOAT: s = FillFromField(proto.float_val(), n, t.data<float>(), "float_val"); break;
    case DT_DOUBLE: s = FillFromField(proto.double_val(), n, t.data<double>(), "double_val"); break;
    case DT_INT32: s = FillFromField(proto.int_val(), n, t.data<int32_t>(), "int_val"); break;
    case DT_INT16: s = FillFromField(proto.int_val(), n, t.data<int16_t>(), "int_val"); break;
    case DT_INT8: s = FillFromField(proto.int_val(), n, t.data<int8_t>(), "int_val"); break;
    case DT_UINT8: s = FillFromField(proto.int_val(), n, t.data<uint8_t>(), "int_val"); break;
    case DT_UINT16: s = FillFromField(proto.int_val(), n, t.data<uint16_t>(), "int_val"); break;
    case DT_INT64: s = FillFromField(proto.int64_val(), n, t.data<int64_t>(), "int64_val"); break;
    case DT_BOOL: s = FillFromField(proto.bool_val(), n, t.data<bool>(), "bool_val"); break;
    case DT_HALF: s = FillFromHalfField(proto, n, t.data<half>()); break;
    case DT_BFLOAT16: s = FillFromHalfField(proto, n, t.data<bfloat16>()); break;
    case DT_STRING: s = FillFromField(proto.string_val(), n, t.data<tstring>(), "string_val"); break;
    case DT_COMPLEX64: {
      const auto& v = proto.scomplex_val();
      if (v.size() % 2 != 0 || v.size() / 2 > n) {
        return absl::InvalidArgumentError(absl::StrCat("TensorProto has ", v.size(),
                                                       " scomplex_val values for ", n, " elements"));
      }
      complex64* out = t.data<complex64>();
      int64_t count = v.size() / 2;
      for (int64_t i = 0; i < count; ++i) out[i] = complex64(v.Get(2 * i), v.Get(2 * i + 1));
      std::fill(out + count, out + n, count == 0 ? complex64() : out[count - 1]);
      break;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("TensorProto has unsupported dtype ", DataTypeString(dtype)));
  }
  if (!s.ok()) return s;
  return t;
}

void Tensor::AsProtoTensorContent(TensorProto* proto) const {
  proto->Clear();
  proto->set_dtype(dtype_);
  shape_.AsProto(proto->mutable_tensor_shape());
  if (dtype_ == DT_STRING) {
    for (int64_t i = 0; i < NumElements(); ++i) proto->add_string_val(data<tstring>()[i]);
    return;
  }
  if (dtype_ == DT_RESOURCE) return;  // handles are process-local: dtype and shape only
  if (TotalBytes() > 0) {
    proto->set_tensor_content(static_cast<const char*>(raw_data()), TotalBytes());
  }
}

namespace {

template <typename T>
std::string ValueString(const T& v) {
  return absl::StrCat(v);
}
template <>
std::string ValueString(const bool& v) { return v ? "1" : "0"; }
template <>
std::string ValueString(const half& v) { return absl::StrCat(static_cast<float>(v)); }
template <>
std::string ValueString(const bfloat16& v) { return absl::StrCat(static_cast<float>(v)); }
template <>
std::string ValueString(const complex64& v) { return absl::StrCat("(", v.real(), ",", v.imag(), ")"); }
template <>
std::string ValueString(const int8_t& v) { return absl::StrCat(static_cast<int>(v)); }
template <>
std::string ValueString(const uint8_t& v) { return absl::StrCat(static_cast<int>(v)); }

}  // namespace

std::string Tensor::SummarizeValue(int max_entries) const {
  if (!IsInitialized()) return "<uninitialized>";
  std::string out;
  int64_t limit = std::min<int64_t>(max_entries, NumElements());
  if (dtype_ == DT_RESOURCE) {
    for (int64_t i = 0; i < limit; ++i) {
      if (i > 0) out += " ";
      out += data<ResourceHandle>()[i].DebugString();
    }
    if (limit < NumElements()) out += "...";
    return out;
  }
  SLUICE_SWITCH_ALL_TYPES(dtype_, return "<unsupported>", {
    const T* values = data<T>();
    for (int64_t i = 0; i < limit; ++i) {
      if (i > 0) out += " ";
      out += ValueString<T>(values[i]);
    }
  });
  if (limit < NumElements()) out += "...";
  return out;
}

std::string Tensor::DebugString(int max_entries) const {
  return absl::StrCat("Tensor<", DataTypeString(dtype_), ", ", shape_.DebugString(), ": ",
                      SummarizeValue(max_entries), ">");
}

}  // namespace sluice
