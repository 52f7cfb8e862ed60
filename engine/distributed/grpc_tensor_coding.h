// The bytes of the worker service's calls (the framing worker.proto's header
// fixes), between protobuf messages / RecvTensorResult and grpc::ByteBuffer:
//
//   * requests: the request message, serialized;
//   * responses of every method but RecvTensor: byte 0 then the response
//     message, or byte 1 then an ErrorResponse (the "envelope");
//   * RecvTensor's response: varint32 header length, RecvTensorResponseHeader,
//     then exactly header.tensor_bytes raw bytes of the tensor's buffer.
//
// Encoding a tensor does not copy its bytes: the ByteBuffer holds a slice
// over the tensor's own buffer, which a heap-held Tensor copy keeps alive until
// gRPC releases the slice. Decoding copies the bytes exactly once, into a
// freshly allocated (kTensorAlignment-aligned) tensor.
//
// Decoding never trusts the bytes: every length is checked against the bytes
// that are really there before anything is allocated, and a malformed body is
// DataLoss (broken framing: bad varint, lengths that disagree, a header or
// message that does not parse) or InvalidArgument (a well-framed header that
// describes no valid tensor: dtype, shape, byte count). The Decode* functions
// return that decoding status; when it is OK, *worker_status is the status the
// worker answered with, and the response is filled in when that is OK.
//
// Bodies come as chunks (a ByteBuffer's slices, or one string_view) and may be
// split anywhere.
//
// Thread safety: pure functions. A ByteBuffer that Encode* returns may be
// read from any thread, and outlives the tensor it was made from.
#ifndef SLUICE_ENGINE_DISTRIBUTED_GRPC_TENSOR_CODING_H_
#define SLUICE_ENGINE_DISTRIBUTED_GRPC_TENSOR_CODING_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/distributed/worker_interface.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"

namespace sluice {
namespace distributed {

// Every method's full name is this prefix and the method: "GetStatus",
// "RegisterGraph", "DeregisterGraph", "RunGraph", "RecvTensor",
// "CleanupGraph", "CleanupAll", "Shutdown".
inline constexpr char kWorkerServicePrefix[] = "/sluice.distributed.WorkerService/";

// The bytes of a ByteBuffer, as views of its slices (which `slices` keeps
// alive). DataLoss if the buffer cannot be read.
absl::Status ByteBufferChunks(const grpc::ByteBuffer& buffer, std::vector<grpc::Slice>* slices,
                              std::vector<absl::string_view>* chunks);

// ---- requests ----

// `message`, serialized.
grpc::ByteBuffer SerializeToByteBuffer(const google::protobuf::MessageLite& message);
// False when the bytes are not a valid `message` (or the buffer unreadable).
bool ParseFromByteBuffer(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite* message);
bool ParseFromChunks(absl::Span<const absl::string_view> chunks, google::protobuf::MessageLite* message);

// ---- the envelope (every method but RecvTensor) ----

// Byte 0, then `response`.
grpc::ByteBuffer EncodeOkResponse(const google::protobuf::MessageLite& response);
// Byte 1, then an ErrorResponse with `status`. REQUIRES: !status.ok().
grpc::ByteBuffer EncodeErrorResponse(const absl::Status& status);
// OK when the body is a well-formed envelope: then *worker_status is OK and
// `response` parsed, or the worker's error (never OK: an error envelope with
// code 0 is DataLoss).
absl::Status DecodeResponse(absl::Span<const absl::string_view> body, absl::Status* worker_status,
                            google::protobuf::MessageLite* response);
absl::Status DecodeResponse(const grpc::ByteBuffer& body, absl::Status* worker_status,
                            google::protobuf::MessageLite* response);

// ---- RecvTensor ----

// The response for the worker's answer: when `status` is not OK, a header
// with just the error; otherwise `result` (a DT_STRING tensor as a
// TensorProto in the header; other tensors as raw bytes sharing the tensor's
// buffer). A dead result may carry an uninitialized tensor; a live one that is
// uninitialized (a worker bug) becomes an Internal error.
grpc::ByteBuffer EncodeRecvTensorResponse(const absl::Status& status, const RecvTensorResult& result);
absl::Status DecodeRecvTensorResponse(absl::Span<const absl::string_view> body, absl::Status* worker_status,
                                      RecvTensorResult* result);
absl::Status DecodeRecvTensorResponse(const grpc::ByteBuffer& body, absl::Status* worker_status,
                                      RecvTensorResult* result);

// The same header for transports that carry the tensor's bytes themselves
// (tcp_tensor_transport.h): the header of EncodeRecvTensorResponse (an error
// header for a failed status, an uninitialized live value, a resource
// handle, or a header plus tensor_bytes over `max_message_bytes`). Its
// tensor_bytes raw bytes are result.value's buffer.
RecvTensorResponseHeader MakeRecvTensorHeader(const absl::Status& status, const RecvTensorResult& result,
                                              int64_t max_message_bytes);
// The receiving side of MakeRecvTensorHeader, in two parts around the bytes.
// PrepareRecvTensor checks `header` (as DecodeRecvTensorResponse does) and,
// when its status is OK: *worker_status is the worker's error, or OK with
// *result made (the tensor allocated, aligned) and *dest where the caller
// writes exactly header.tensor_bytes() bytes (null when there are none).
// FinishRecvTensor then checks the bytes (bools are 0 or 1). The caller must
// check that tensor_bytes is one it will read before calling: this allocates it.
absl::Status PrepareRecvTensor(const RecvTensorResponseHeader& header, absl::Status* worker_status,
                               RecvTensorResult* result, char** dest);
absl::Status FinishRecvTensor(const RecvTensorResult& result);

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_GRPC_TENSOR_CODING_H_
