// Encoding and strict decoding of the worker service's call bodies (see
// grpc_tensor_coding.h).
#include "engine/distributed/grpc_tensor_coding.h"

#include <climits>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/framework/allocator.h"
#include "engine/framework/tensor_shape.h"
#include "engine/framework/types.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace sluice {
namespace distributed {
namespace {

constexpr char kOkByte = 0;
constexpr char kErrorByte = 1;
// ArrayInputStream takes an int size: longer chunks are split.
constexpr size_t kMaxStreamChunk = size_t{1} << 30;

// A slice that owns `s` (deleted when gRPC releases the slice).
grpc::Slice OwnedStringSlice(std::unique_ptr<std::string> s) {
  std::string* raw = s.release();
  return grpc::Slice(
      raw->data(), raw->size(), [](void* p) { delete static_cast<std::string*>(p); }, raw);
}

grpc::ByteBuffer OwnedStringBuffer(std::unique_ptr<std::string> s) {
  grpc::Slice slice = OwnedStringSlice(std::move(s));
  return grpc::ByteBuffer(&slice, 1);
}

void AppendVarint32(uint32_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Reads bytes front to back across chunks.
class ChunkReader {
 public:
  explicit ChunkReader(absl::Span<const absl::string_view> chunks) : chunks_(chunks) {
    for (absl::string_view c : chunks) remaining_ += c.size();
  }

  uint64_t remaining() const { return remaining_; }

  bool ReadByte(uint8_t* byte) {
    if (remaining_ == 0) return false;
    SkipEmpty();
    *byte = static_cast<uint8_t>(chunks_[index_][offset_]);
    Advance(1);
    return true;
  }

  // Strict varint32: at most 5 bytes, value < 2^32.
  bool ReadVarint32(uint32_t* value) {
    uint32_t result = 0;
    for (int i = 0; i < 5; ++i) {
      uint8_t b;
      if (!ReadByte(&b)) return false;
      if (i == 4 && b > 0x0F) return false;
      result |= static_cast<uint32_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  // REQUIRES: n <= remaining().
  void Copy(char* dst, uint64_t n) {
    while (n > 0) {
      SkipEmpty();
      const absl::string_view c = chunks_[index_];
      const uint64_t take = std::min<uint64_t>(n, c.size() - offset_);
      std::memcpy(dst, c.data() + offset_, take);
      dst += take;
      n -= take;
      Advance(take);
    }
  }

  // The unread bytes as chunks (views into the same memory).
  std::vector<absl::string_view> Rest() const {
    std::vector<absl::string_view> rest;
    for (size_t i = index_; i < chunks_.size(); ++i) {
      absl::string_view c = chunks_[i];
      if (i == index_) c.remove_prefix(offset_);
      if (!c.empty()) rest.push_back(c);
    }
    return rest;
  }

 private:
  void SkipEmpty() {
    while (offset_ == chunks_[index_].size()) {
      ++index_;
      offset_ = 0;
    }
  }
  void Advance(uint64_t n) {
    offset_ += n;
    remaining_ -= n;
  }

  absl::Span<const absl::string_view> chunks_;
  size_t index_ = 0;
  size_t offset_ = 0;
  uint64_t remaining_ = 0;
};

absl::Status DataLoss(absl::string_view what, absl::string_view why) {
  return absl::DataLossError(absl::StrCat(what, ": ", why));
}

absl::Status Invalid(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("RecvTensor response: ", why));
}

// Validates an error-free header and makes its result: the final value
// (a dead value without a dtype, a string tensor), or an allocated tensor whose
// header.tensor_bytes raw bytes the caller writes at *dest (null when none).
absl::Status PrepareTensor(const RecvTensorResponseHeader& header, RecvTensorResult* result, char** dest) {
  *dest = nullptr;
  const int64_t tensor_bytes = header.tensor_bytes();
  if (tensor_bytes < 0) return Invalid(absl::StrCat("negative tensor_bytes ", tensor_bytes));
  const DataType dtype = header.dtype();
  if (dtype == DT_INVALID && header.is_dead()) {
    // A dead value may have no tensor at all.
    if (tensor_bytes != 0 || header.shape().dim_size() != 0 || header.has_string_tensor()) {
      return Invalid("a dead value without a dtype carries a shape or data");
    }
    result->value = Tensor();
    return absl::OkStatus();
  }
  if (!DataTypeIsSupported(dtype)) return Invalid(absl::StrCat("unsupported dtype ", DataTypeString(dtype)));
  auto shape = TensorShape::FromProto(header.shape());
  if (!shape.ok()) return Invalid(absl::StrCat("bad shape: ", shape.status().message()));

  if (dtype == DT_STRING) {
    if (tensor_bytes != 0) return Invalid(absl::StrCat("a string tensor with tensor_bytes ", tensor_bytes));
    if (!header.has_string_tensor()) return Invalid("a string tensor without string_tensor");
    const TensorProto& proto = header.string_tensor();
    auto proto_shape = Tensor::ValidateProto(proto);
    if (!proto_shape.ok()) return Invalid(absl::StrCat("bad string_tensor: ", proto_shape.status().message()));
    if (proto.dtype() != DT_STRING || *proto_shape != *shape) {
      return Invalid(absl::StrCat("string_tensor is ", DataTypeString(proto.dtype()), " ",
                                  proto_shape->DebugString(), " but the header says string ", shape->DebugString()));
    }
    // One value per element: a few bytes must not expand (by repeating the
    // last value) into a huge tensor.
    if (proto.string_val_size() != shape->num_elements()) {
      return Invalid(absl::StrCat("string_tensor has ", proto.string_val_size(), " values for ",
                                  shape->num_elements(), " elements"));
    }
    auto t = Tensor::FromProto(proto);
    if (!t.ok()) return Invalid(absl::StrCat("bad string_tensor: ", t.status().message()));
    result->value = *std::move(t);
    return absl::OkStatus();
  }

  if (header.has_string_tensor()) {
    return Invalid(absl::StrCat("a ", DataTypeString(dtype), " tensor with a string_tensor"));
  }
  const int64_t size = DataTypeSize(dtype);
  const int64_t n = shape->num_elements();
  if (n > INT64_MAX / size || n * size != tensor_bytes) {
    return Invalid(absl::StrCat("tensor_bytes is ", tensor_bytes, " but a ", DataTypeString(dtype), " tensor of shape ",
                                shape->DebugString(), " has ", n, " elements of ", size, " bytes"));
  }
  auto t = Tensor::Allocate(CpuAllocator(), dtype, *shape);
  if (!t.ok()) return t.status();
  result->value = *std::move(t);
  if (tensor_bytes > 0) *dest = static_cast<char*>(result->value.raw_data());
  return absl::OkStatus();
}

// The checks on a tensor's bytes once they are in (bools must be 0 or 1).
absl::Status CheckTensorBytes(const RecvTensorResult& result) {
  const Tensor& t = result.value;
  if (t.IsInitialized() && t.dtype() == DT_BOOL && t.TotalBytes() > 0) {
    absl::Status s = ValidateBoolBytes(absl::string_view(static_cast<const char*>(t.raw_data()), t.TotalBytes()));
    if (!s.ok()) return Invalid(s.message());
  }
  return absl::OkStatus();
}

// The tensor part of a decoded, error-free header (the body after the header
// is `rest`).
absl::Status DecodeTensor(const RecvTensorResponseHeader& header, ChunkReader* rest, RecvTensorResult* result) {
  const int64_t tensor_bytes = header.tensor_bytes();
  if (tensor_bytes < 0) return Invalid(absl::StrCat("negative tensor_bytes ", tensor_bytes));
  // Before anything else: the claimed bytes must really be there, so no claim
  // makes us allocate more than the body holds.
  if (rest->remaining() != static_cast<uint64_t>(tensor_bytes)) {
    return DataLoss("RecvTensor response",
                    absl::StrCat(rest->remaining(), " bytes follow the header, but tensor_bytes is ", tensor_bytes));
  }
  char* dest = nullptr;
  absl::Status s = PrepareTensor(header, result, &dest);
  if (!s.ok()) return s;
  if (dest != nullptr) rest->Copy(dest, tensor_bytes);
  return CheckTensorBytes(*result);
}

}  // namespace

absl::Status ByteBufferChunks(const grpc::ByteBuffer& buffer, std::vector<grpc::Slice>* slices,
                              std::vector<absl::string_view>* chunks) {
  slices->clear();
  chunks->clear();
  if (!buffer.Valid()) return absl::OkStatus();  // an empty message
  grpc::Status s = buffer.Dump(slices);
  if (!s.ok()) return absl::DataLossError(absl::StrCat("cannot read the message: ", s.error_message()));
  chunks->reserve(slices->size());
  for (const grpc::Slice& slice : *slices) {
    chunks->emplace_back(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return absl::OkStatus();
}

grpc::ByteBuffer SerializeToByteBuffer(const google::protobuf::MessageLite& message) {
  auto bytes = std::make_unique<std::string>();
  message.AppendToString(bytes.get());
  return OwnedStringBuffer(std::move(bytes));
}

bool ParseFromChunks(absl::Span<const absl::string_view> chunks, google::protobuf::MessageLite* message) {
  std::vector<std::unique_ptr<google::protobuf::io::ArrayInputStream>> streams;
  for (absl::string_view c : chunks) {
    while (!c.empty()) {
      const size_t take = std::min(c.size(), kMaxStreamChunk);
      streams.push_back(std::make_unique<google::protobuf::io::ArrayInputStream>(c.data(), static_cast<int>(take)));
      c.remove_prefix(take);
    }
  }
  std::vector<google::protobuf::io::ZeroCopyInputStream*> pointers;
  for (auto& s : streams) pointers.push_back(s.get());
  google::protobuf::io::ConcatenatingInputStream input(pointers.data(), static_cast<int>(pointers.size()));
  return message->ParseFromZeroCopyStream(&input);
}

bool ParseFromByteBuffer(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite* message) {
  std::vector<grpc::Slice> slices;
  std::vector<absl::string_view> chunks;
  if (!ByteBufferChunks(buffer, &slices, &chunks).ok()) return false;
  return ParseFromChunks(chunks, message);
}

grpc::ByteBuffer EncodeOkResponse(const google::protobuf::MessageLite& response) {
  auto bytes = std::make_unique<std::string>(1, kOkByte);
  response.AppendToString(bytes.get());
  return OwnedStringBuffer(std::move(bytes));
}

grpc::ByteBuffer EncodeErrorResponse(const absl::Status& status) {
  ErrorResponse error;
  StatusToProto(status, error.mutable_status());
  auto bytes = std::make_unique<std::string>(1, kErrorByte);
  error.AppendToString(bytes.get());
  return OwnedStringBuffer(std::move(bytes));
}

absl::Status DecodeResponse(absl::Span<const absl::string_view> body, absl::Status* worker_status,
                            google::protobuf::MessageLite* response) {
  ChunkReader reader(body);
  uint8_t kind;
  if (!reader.ReadByte(&kind)) return DataLoss("response", "the body is empty");
  const std::vector<absl::string_view> rest = reader.Rest();
  if (kind == kOkByte) {
    if (!ParseFromChunks(rest, response)) {
      return DataLoss("response", absl::StrCat("the body is not a valid ", response->GetTypeName(), " (",
                                               reader.remaining(), " bytes)"));
    }
    *worker_status = absl::OkStatus();
    return absl::OkStatus();
  }
  if (kind == kErrorByte) {
    ErrorResponse error;
    if (!ParseFromChunks(rest, &error)) {
      return DataLoss("response", absl::StrCat("the body is not a valid ErrorResponse (", reader.remaining(),
                                               " bytes)"));
    }
    if (error.status().code() == 0) return DataLoss("response", "an error response with code OK");
    *worker_status = StatusFromProto(error.status());
    return absl::OkStatus();
  }
  return DataLoss("response", absl::StrCat("the body starts with byte ", static_cast<int>(kind), ", neither 0 (response) nor 1 (error)"));
}

absl::Status DecodeResponse(const grpc::ByteBuffer& body, absl::Status* worker_status,
                            google::protobuf::MessageLite* response) {
  std::vector<grpc::Slice> slices;
  std::vector<absl::string_view> chunks;
  absl::Status s = ByteBufferChunks(body, &slices, &chunks);
  if (!s.ok()) return s;
  return DecodeResponse(chunks, worker_status, response);
}

RecvTensorResponseHeader MakeRecvTensorHeader(const absl::Status& status, const RecvTensorResult& result,
                                              int64_t max_message_bytes) {
  RecvTensorResponseHeader header;
  if (!status.ok()) {
    StatusToProto(status, header.mutable_error());
    return header;
  }
  auto error = [&header](const absl::Status& s) {
    header.Clear();
    StatusToProto(s, header.mutable_error());
    return header;
  };
  const Tensor& value = result.value;
  header.set_is_dead(result.is_dead);
  header.set_send_start_micros(result.send_start_micros);
  int64_t tensor_bytes = 0;
  if (!value.IsInitialized()) {
    if (!result.is_dead) return error(absl::InternalError("RecvTensor: the worker produced an uninitialized tensor"));
    header.set_dtype(DT_INVALID);
  } else if (value.dtype() == DT_RESOURCE) {
    // Handles are process-local; the placer keeps their consumers beside them.
    return error(absl::InvalidArgumentError(
        "RecvTensor: a resource handle cannot cross tasks (colocate its consumers with the VarHandleOp)"));
  } else {
    header.set_dtype(value.dtype());
    value.shape().AsProto(header.mutable_shape());
    if (value.dtype() == DT_STRING) {
      value.AsProtoTensorContent(header.mutable_string_tensor());
    } else {
      tensor_bytes = static_cast<int64_t>(value.TotalBytes());
    }
  }
  header.set_tensor_bytes(tensor_bytes);
  const uint64_t header_bytes = header.ByteSizeLong();
  if (header_bytes > static_cast<uint64_t>(max_message_bytes) ||
      static_cast<uint64_t>(tensor_bytes) > static_cast<uint64_t>(max_message_bytes) - header_bytes) {
    return error(absl::ResourceExhaustedError(
        absl::StrCat("RecvTensor: a ", DataTypeString(value.dtype()), " tensor of shape ", value.shape().DebugString(),
                     " does not fit in one message of this transport (", max_message_bytes, " bytes)")));
  }
  return header;
}

absl::Status PrepareRecvTensor(const RecvTensorResponseHeader& header, absl::Status* worker_status,
                               RecvTensorResult* result, char** dest) {
  *dest = nullptr;
  if (header.has_error()) {
    if (header.error().code() == 0) return DataLoss("RecvTensor response", "an error header with code OK");
    if (header.tensor_bytes() != 0) {
      return DataLoss("RecvTensor response", absl::StrCat("an error header with tensor_bytes ", header.tensor_bytes()));
    }
    *worker_status = StatusFromProto(header.error());
    return absl::OkStatus();
  }
  RecvTensorResult prepared;
  absl::Status s = PrepareTensor(header, &prepared, dest);
  if (!s.ok()) return s;
  prepared.is_dead = header.is_dead();
  prepared.send_start_micros = header.send_start_micros();
  *result = std::move(prepared);
  *worker_status = absl::OkStatus();
  return absl::OkStatus();
}

absl::Status FinishRecvTensor(const RecvTensorResult& result) { return CheckTensorBytes(result); }

grpc::ByteBuffer EncodeRecvTensorResponse(const absl::Status& status, const RecvTensorResult& result) {
  // gRPC messages are at most INT_MAX bytes; say so instead of failing in the
  // transport with a less useful message.
  const RecvTensorResponseHeader header = MakeRecvTensorHeader(status, result, INT_MAX - 5);
  const int64_t tensor_bytes = header.tensor_bytes();
  const size_t header_bytes = header.ByteSizeLong();
  auto prefix = std::make_unique<std::string>();
  prefix->reserve(header_bytes + 5);
  AppendVarint32(static_cast<uint32_t>(header_bytes), prefix.get());
  header.AppendToString(prefix.get());
  grpc::Slice slices[2] = {OwnedStringSlice(std::move(prefix)), grpc::Slice()};
  size_t num_slices = 1;
  if (tensor_bytes > 0) {
    // The tensor's own bytes; the heap copy of `value` keeps its buffer alive
    // until gRPC is done with the slice.
    auto* keep = new Tensor(result.value);
    slices[1] = grpc::Slice(
        keep->raw_data(), static_cast<size_t>(tensor_bytes), [](void* p) { delete static_cast<Tensor*>(p); }, keep);
    num_slices = 2;
  }
  return grpc::ByteBuffer(slices, num_slices);
}

absl::Status DecodeRecvTensorResponse(absl::Span<const absl::string_view> body, absl::Status* worker_status,
                                      RecvTensorResult* result) {
  ChunkReader reader(body);
  if (reader.remaining() == 0) return DataLoss("RecvTensor response", "the body is empty");
  uint32_t header_length;
  if (!reader.ReadVarint32(&header_length)) {
    return DataLoss("RecvTensor response", "the body does not start with a valid varint32 header length");
  }
  if (header_length > reader.remaining()) {
    return DataLoss("RecvTensor response", absl::StrCat("the header length is ", header_length, " but only ",
                                                        reader.remaining(), " bytes follow"));
  }
  std::string header_bytes(header_length, '\0');
  reader.Copy(header_bytes.data(), header_length);
  RecvTensorResponseHeader header;
  if (!header.ParseFromString(header_bytes)) {
    return DataLoss("RecvTensor response",
                    absl::StrCat("the header (", header_length, " bytes) is not a valid RecvTensorResponseHeader"));
  }
  if (header.has_error()) {
    if (header.error().code() == 0) return DataLoss("RecvTensor response", "an error header with code OK");
    if (reader.remaining() != 0) {
      return DataLoss("RecvTensor response",
                      absl::StrCat(reader.remaining(), " bytes follow an error header (expected none)"));
    }
    *worker_status = StatusFromProto(header.error());
    return absl::OkStatus();
  }
  RecvTensorResult decoded;
  absl::Status s = DecodeTensor(header, &reader, &decoded);
  if (!s.ok()) return s;
  decoded.is_dead = header.is_dead();
  decoded.send_start_micros = header.send_start_micros();
  *result = std::move(decoded);
  *worker_status = absl::OkStatus();
  return absl::OkStatus();
}

absl::Status DecodeRecvTensorResponse(const grpc::ByteBuffer& body, absl::Status* worker_status,
                                      RecvTensorResult* result) {
  std::vector<grpc::Slice> slices;
  std::vector<absl::string_view> chunks;
  absl::Status s = ByteBufferChunks(body, &slices, &chunks);
  if (!s.ok()) return s;
  return DecodeRecvTensorResponse(chunks, worker_status, result);
}

}  // namespace distributed
}  // namespace sluice
