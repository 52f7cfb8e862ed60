// The worker service's wire bodies: the envelope, RecvTensor's zero-copy
// encoding, and the strict decoder on every kind of malformed body.
#include "engine/distributed/grpc_tensor_coding.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace sluice {
namespace distributed {
namespace {

using ::testing::HasSubstr;

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::vector<absl::string_view> chunks;
  EXPECT_TRUE(ByteBufferChunks(buffer, &slices, &chunks).ok());
  std::string out;
  for (absl::string_view c : chunks) out.append(c.data(), c.size());
  return out;
}

// `body` cut into pieces of `piece` bytes.
std::vector<absl::string_view> Split(absl::string_view body, size_t piece) {
  std::vector<absl::string_view> chunks;
  for (size_t i = 0; i < body.size(); i += piece) chunks.push_back(body.substr(i, piece));
  return chunks;
}

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A RecvTensor body: varint length, `header`, then `tail`.
std::string Body(const RecvTensorResponseHeader& header, absl::string_view tail = "") {
  std::string body;
  std::string h = header.SerializeAsString();
  AppendVarint(h.size(), &body);
  body += h;
  body.append(tail.data(), tail.size());
  return body;
}

RecvTensorResponseHeader FloatHeader(std::initializer_list<int64_t> dims, int64_t tensor_bytes) {
  RecvTensorResponseHeader header;
  header.set_dtype(DT_FLOAT);
  for (int64_t d : dims) header.mutable_shape()->add_dim()->set_size(d);
  header.set_tensor_bytes(tensor_bytes);
  return header;
}

// Decodes `body` and returns the decoding status (the worker's must be OK
// when the decoding is).
absl::Status Decode(absl::string_view body, RecvTensorResult* result) {
  absl::Status worker_status = absl::UnknownError("unset");
  std::vector<absl::string_view> chunks = {body};
  absl::Status s = DecodeRecvTensorResponse(chunks, &worker_status, result);
  if (s.ok()) {
    EXPECT_TRUE(worker_status.ok()) << worker_status;
  }
  return s;
}

absl::Status Decode(absl::string_view body) {
  RecvTensorResult result;
  return Decode(body, &result);
}

Tensor Bools(std::initializer_list<bool> values) {
  Tensor t(DT_BOOL, TensorShape({static_cast<int64_t>(values.size())}));
  std::copy(values.begin(), values.end(), t.data<bool>());
  return t;
}

Tensor Iota(int64_t n) {
  Tensor t(DT_FLOAT, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(i) * 0.5f - 3.0f;
  return t;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.TotalBytes() == b.TotalBytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

// ---- the envelope ----

TEST(EnvelopeTest, OkResponseRoundTrips) {
  RegisterGraphResponse sent;
  sent.set_graph_handle("graph-17");
  grpc::ByteBuffer buffer = EncodeOkResponse(sent);
  const std::string bytes = Flatten(buffer);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(bytes[0], 0);

  RegisterGraphResponse got;
  absl::Status worker_status = absl::UnknownError("unset");
  ASSERT_TRUE(DecodeResponse(buffer, &worker_status, &got).ok());
  EXPECT_TRUE(worker_status.ok());
  EXPECT_EQ(got.graph_handle(), "graph-17");
}

TEST(EnvelopeTest, ErrorKeepsCodeAndWholeLongMessage) {
  const std::string message = std::string(100 * 1024, 'x') + " the end";
  grpc::ByteBuffer buffer = EncodeErrorResponse(absl::FailedPreconditionError(message));
  EXPECT_EQ(Flatten(buffer)[0], 1);
  RegisterGraphResponse got;
  absl::Status worker_status;
  ASSERT_TRUE(DecodeResponse(buffer, &worker_status, &got).ok());
  EXPECT_EQ(worker_status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(worker_status.message(), message);
}

TEST(EnvelopeTest, MalformedBodiesAreDataLoss) {
  ErrorResponse zero_code;  // an "error" whose code is OK
  zero_code.mutable_status()->set_message("nothing");
  RegisterGraphResponse long_handle;
  long_handle.set_graph_handle(std::string(100, 'h'));
  const std::string ok_body = std::string(1, '\0') + long_handle.SerializeAsString();
  const std::vector<std::string> bodies = {
      std::string(),                                              // empty
      std::string("\x02", 1),                                     // unknown first byte
      ok_body.substr(0, ok_body.size() / 2),                      // truncated response
      std::string("\x01\x0a\xff\xff\xff\x0f", 6),                 // error with a huge length
      std::string(1, '\x01') + zero_code.SerializeAsString(),     // error with code 0
  };
  for (const std::string& body : bodies) {
    RegisterGraphResponse got;
    absl::Status worker_status = absl::OkStatus();
    std::vector<absl::string_view> chunks = {body};
    absl::Status s = DecodeResponse(chunks, &worker_status, &got);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << absl::CEscape(body) << ": " << s;
  }
}

TEST(EnvelopeTest, BodySplitAnywhereDecodes) {
  RunGraphResponse sent;
  auto* recv = sent.add_recv();
  recv->set_key("a;b;c");
  Iota(100).AsProtoTensorContent(recv->mutable_tensor());
  const std::string body = Flatten(EncodeOkResponse(sent));
  for (size_t piece : {1, 2, 7, 64, 1000}) {
    RunGraphResponse got;
    absl::Status worker_status;
    ASSERT_TRUE(DecodeResponse(Split(body, piece), &worker_status, &got).ok()) << piece;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(sent, got)) << piece;
  }
}

TEST(RequestTest, RoundTripAndTruncation) {
  RunGraphRequest sent;
  sent.set_session_handle("s");
  sent.set_step_id(-7);
  auto* send = sent.add_send();
  send->set_key("k");
  Iota(1000).AsProtoTensorContent(send->mutable_tensor());
  grpc::ByteBuffer buffer = SerializeToByteBuffer(sent);
  RunGraphRequest got;
  ASSERT_TRUE(ParseFromByteBuffer(buffer, &got));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(sent, got));

  const std::string bytes = Flatten(buffer);
  const std::string truncated = bytes.substr(0, bytes.size() - 10);
  std::vector<absl::string_view> chunks = {truncated};
  RunGraphRequest bad;
  EXPECT_FALSE(ParseFromChunks(chunks, &bad));
}

// ---- RecvTensor: encoding ----

TEST(RecvTensorCodingTest, EncodingSharesTheTensorBuffer) {
  Tensor t = Iota(1024);
  grpc::ByteBuffer buffer = EncodeRecvTensorResponse(absl::OkStatus(), RecvTensorResult{t, false, 0});
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 2u);
  // The second slice IS the tensor's buffer: no copy.
  EXPECT_EQ(static_cast<const void*>(slices[1].begin()), t.raw_data());
  EXPECT_EQ(slices[1].size(), t.TotalBytes());
}

TEST(RecvTensorCodingTest, BufferOutlivesTheTensor) {
  grpc::ByteBuffer buffer;
  {
    Tensor t = Iota(4096);
    buffer = EncodeRecvTensorResponse(absl::OkStatus(), RecvTensorResult{t, false, 42});
  }  // the only Tensor handle is gone; the slice keeps the buffer
  RecvTensorResult got;
  absl::Status worker_status;
  ASSERT_TRUE(DecodeRecvTensorResponse(buffer, &worker_status, &got).ok());
  ASSERT_TRUE(worker_status.ok());
  EXPECT_TRUE(SameBytes(got.value, Iota(4096)));
  EXPECT_EQ(got.send_start_micros, 42);
}

TEST(RecvTensorCodingTest, RoundTripsSplitAnywhereIntoAnAlignedFreshBuffer) {
  Tensor t = Iota(300);
  const std::string body = Flatten(EncodeRecvTensorResponse(absl::OkStatus(), RecvTensorResult{t, false, 9}));
  for (size_t piece : {1, 3, 64, 1199, 100000}) {
    RecvTensorResult got;
    absl::Status worker_status;
    ASSERT_TRUE(DecodeRecvTensorResponse(Split(body, piece), &worker_status, &got).ok()) << piece;
    ASSERT_TRUE(worker_status.ok());
    EXPECT_TRUE(SameBytes(got.value, t)) << piece;
    EXPECT_FALSE(got.value.SharesBufferWith(t));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(got.value.raw_data()) % kTensorAlignment, 0u);
    EXPECT_FALSE(got.is_dead);
  }
}

TEST(RecvTensorCodingTest, RoundTripsEveryKindOfValue) {
  Tensor strings(DT_STRING, TensorShape({3}));
  strings.data<tstring>()[0] = "";
  strings.data<tstring>()[1] = std::string("a\0b", 3);
  strings.data<tstring>()[2] = std::string(5000, 'z');
  Tensor bools = Bools({true, false, true});
  Tensor empty(DT_DOUBLE, TensorShape({0, 5}));
  const std::vector<RecvTensorResult> values = {
      {Tensor::Scalar<int64_t>(-1234567890123LL), false, 1},
      {strings, false, 2},
      {bools, false, 3},
      {empty, false, 4},
      {Iota(3), true, 5},  // dead, with a value
  };
  for (const RecvTensorResult& sent : values) {
    const std::string body = Flatten(EncodeRecvTensorResponse(absl::OkStatus(), sent));
    RecvTensorResult got;
    ASSERT_TRUE(Decode(body, &got).ok()) << sent.value.DebugString();
    EXPECT_EQ(got.value.DebugString(100), sent.value.DebugString(100));
    EXPECT_EQ(got.is_dead, sent.is_dead);
    EXPECT_EQ(got.send_start_micros, sent.send_start_micros);
  }
  // The strings survive byte for byte.
  RecvTensorResult got;
  ASSERT_TRUE(Decode(Flatten(EncodeRecvTensorResponse(absl::OkStatus(), {strings, false, 0})), &got).ok());
  ASSERT_EQ(got.value.dtype(), DT_STRING);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got.value.data<tstring>()[i], strings.data<tstring>()[i]);
}

TEST(RecvTensorCodingTest, DeadValueWithoutATensor) {
  const std::string body = Flatten(EncodeRecvTensorResponse(absl::OkStatus(), RecvTensorResult{Tensor(), true, 0}));
  RecvTensorResult got;
  got.value = Iota(2);
  ASSERT_TRUE(Decode(body, &got).ok());
  EXPECT_TRUE(got.is_dead);
  EXPECT_FALSE(got.value.IsInitialized());
}

TEST(RecvTensorCodingTest, LiveUninitializedTensorIsAnInternalError) {
  grpc::ByteBuffer buffer = EncodeRecvTensorResponse(absl::OkStatus(), RecvTensorResult{Tensor(), false, 0});
  RecvTensorResult got;
  absl::Status worker_status;
  ASSERT_TRUE(DecodeRecvTensorResponse(buffer, &worker_status, &got).ok());
  EXPECT_EQ(worker_status.code(), absl::StatusCode::kInternal);
}

TEST(RecvTensorCodingTest, WorkerErrorKeepsCodeAndMessage) {
  const std::string message = std::string(100 * 1024, 'e');
  grpc::ByteBuffer buffer = EncodeRecvTensorResponse(absl::AbortedError(message), RecvTensorResult{Iota(4), false, 0});
  // Nothing but the header.
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  EXPECT_EQ(slices.size(), 1u);
  RecvTensorResult got;
  absl::Status worker_status;
  ASSERT_TRUE(DecodeRecvTensorResponse(buffer, &worker_status, &got).ok());
  EXPECT_EQ(worker_status.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(worker_status.message(), message);
}

// ---- RecvTensor: malformed bodies ----

struct Malformed {
  std::string name;
  std::string body;
  absl::StatusCode code;
  std::string message_part;
};

std::vector<Malformed> MalformedBodies() {
  std::vector<Malformed> cases;
  auto add = [&](std::string name, std::string body, absl::StatusCode code, std::string part) {
    cases.push_back({std::move(name), std::move(body), code, std::move(part)});
  };
  const auto kLoss = absl::StatusCode::kDataLoss;
  const auto kInvalid = absl::StatusCode::kInvalidArgument;

  add("empty body", "", kLoss, "empty");
  add("truncated varint", "\x80", kLoss, "varint32");
  add("six-byte varint", "\xff\xff\xff\xff\xff\x01", kLoss, "varint32");
  add("varint over 32 bits", "\xff\xff\xff\xff\x7f", kLoss, "varint32");
  {
    std::string body;
    AppendVarint(uint64_t{1} << 31, &body);  // a 2 GiB header, 3 bytes present
    add("2 GiB header length", body + "abc", kLoss, "header length is 2147483648 but only 3 bytes follow");
  }
  add("header does not parse", "\x03\xff\xff\xff", kLoss, "not a valid RecvTensorResponseHeader");
  {
    RecvTensorResponseHeader h = FloatHeader({2}, 8);
    h.set_dtype(static_cast<DataType>(999));
    add("unknown dtype", Body(h, std::string(8, '\0')), kInvalid, "unsupported dtype");
    h.set_dtype(static_cast<DataType>(DT_FLOAT + kDataTypeRefOffset));
    add("reference dtype", Body(h, std::string(8, '\0')), kInvalid, "unsupported dtype");
    h.set_dtype(DT_INVALID);
    add("invalid dtype, live", Body(h, std::string(8, '\0')), kInvalid, "unsupported dtype");
  }
  {
    RecvTensorResponseHeader h;
    h.set_is_dead(true);
    h.mutable_shape()->add_dim()->set_size(2);
    add("dead without dtype but with a shape", Body(h), kInvalid, "dead value");
  }
  add("negative dim", Body(FloatHeader({-1}, 0)), kInvalid, "bad shape");
  add("dims overflow", Body(FloatHeader({int64_t{1} << 40, int64_t{1} << 40}, 0)), kInvalid, "bad shape");
  {
    RecvTensorResponseHeader h = FloatHeader({}, 4);
    h.mutable_shape()->set_unknown_rank(true);
    add("unknown rank", Body(h, std::string(4, '\0')), kInvalid, "bad shape");
  }
  add("tensor_bytes too small for the shape", Body(FloatHeader({2}, 4), std::string(4, '\0')), kInvalid,
      "tensor_bytes is 4 but a float tensor of shape [2] has 2 elements of 4 bytes");
  add("tensor_bytes too large for the shape", Body(FloatHeader({2}, 12), std::string(12, '\0')), kInvalid,
      "tensor_bytes is 12");
  add("element bytes overflow int64", Body(FloatHeader({int64_t{1} << 62}, 8), std::string(8, '\0')), kInvalid,
      "tensor_bytes is 8");
  add("negative tensor_bytes", Body(FloatHeader({0}, -4)), kInvalid, "negative tensor_bytes");
  add("body one byte short", Body(FloatHeader({2}, 8), std::string(7, '\0')), kLoss,
      "7 bytes follow the header, but tensor_bytes is 8");
  add("body one byte long", Body(FloatHeader({2}, 8), std::string(9, '\0')), kLoss,
      "9 bytes follow the header, but tensor_bytes is 8");
  add("2 GiB tensor claim, 8 bytes present", Body(FloatHeader({int64_t{1} << 29}, int64_t{1} << 31), "12345678"),
      kLoss, "8 bytes follow the header, but tensor_bytes is 2147483648");
  add("int64 max tensor claim", Body(FloatHeader({1}, INT64_MAX), "1234"), kLoss, "tensor_bytes is 9223372036854775807");
  {
    RecvTensorResponseHeader h;
    h.set_dtype(DT_BOOL);
    h.mutable_shape()->add_dim()->set_size(3);
    h.set_tensor_bytes(3);
    add("bool byte that is neither 0 nor 1", Body(h, std::string("\x01\x02\x00", 3)), kInvalid, "");
  }
  {
    RecvTensorResponseHeader h;
    h.set_dtype(DT_STRING);
    h.mutable_shape()->add_dim()->set_size(1);
    add("string without string_tensor", Body(h), kInvalid, "without string_tensor");
    Tensor s(DT_STRING, TensorShape({2}));
    s.AsProtoTensorContent(h.mutable_string_tensor());
    add("string_tensor of another shape", Body(h), kInvalid, "string_tensor is string [2]");
    h.mutable_string_tensor()->mutable_tensor_shape()->mutable_dim(0)->set_size(1000);
    h.mutable_shape()->mutable_dim(0)->set_size(1000);
    h.mutable_string_tensor()->clear_string_val();
    h.mutable_string_tensor()->add_string_val("repeat me");
    add("string_tensor with fewer values than elements", Body(h), kInvalid, "1 values for 1000 elements");
    h.mutable_string_tensor()->mutable_tensor_shape()->mutable_dim(0)->set_size(2);
    h.mutable_shape()->mutable_dim(0)->set_size(1);
    h.set_tensor_bytes(1);
    add("string with tensor_bytes", Body(h, "x"), kInvalid, "string tensor with tensor_bytes 1");
    h.set_tensor_bytes(0);
    Iota(1).AsProtoTensorContent(h.mutable_string_tensor());
    add("string_tensor holding floats", Body(h), kInvalid, "string_tensor is float");
    h.mutable_string_tensor()->set_dtype(DT_STRING);
    h.mutable_string_tensor()->set_tensor_content("garbage");
    add("string_tensor that does not decode", Body(h), kInvalid, "bad string_tensor");
  }
  {
    RecvTensorResponseHeader h = FloatHeader({1}, 4);
    Tensor s(DT_STRING, TensorShape({1}));
    s.AsProtoTensorContent(h.mutable_string_tensor());
    add("float with a string_tensor", Body(h, "abcd"), kInvalid, "float tensor with a string_tensor");
  }
  {
    RecvTensorResponseHeader h;
    h.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kAborted));
    h.mutable_error()->set_message("boom");
    add("bytes after an error header", Body(h, "x"), kLoss, "1 bytes follow an error header");
    h.mutable_error()->set_code(0);
    add("error header with code 0", Body(h), kLoss, "code OK");
  }
  return cases;
}

TEST(RecvTensorDecodeTest, EveryMalformedBodyIsAClearError) {
  const int64_t largest_before = CpuAllocator()->GetStats().largest_alloc_size;
  for (const Malformed& m : MalformedBodies()) {
    for (size_t piece : {size_t{1}, size_t{1} << 20}) {
      absl::Status worker_status = absl::OkStatus();
      RecvTensorResult got;
      got.value = Iota(1);
      absl::Status s = DecodeRecvTensorResponse(Split(m.body, piece), &worker_status, &got);
      EXPECT_EQ(s.code(), m.code) << m.name << ": " << s;
      EXPECT_THAT(std::string(s.message()), HasSubstr(m.message_part)) << m.name;
      // A failed decode leaves the result alone.
      EXPECT_TRUE(SameBytes(got.value, Iota(1))) << m.name;
    }
  }
  // No claim made us allocate anything large.
  EXPECT_LT(CpuAllocator()->GetStats().largest_alloc_size, std::max<int64_t>(largest_before, 1 << 20));
}

// Every truncation of a valid body fails, and no mutation crashes.
TEST(RecvTensorDecodeTest, TruncationsFailAndMutationsNeverCrash) {
  Tensor strings(DT_STRING, TensorShape({2}));
  strings.data<tstring>()[0] = "left";
  strings.data<tstring>()[1] = "right";
  const std::vector<std::string> bodies = {
      Flatten(EncodeRecvTensorResponse(absl::OkStatus(), {Iota(16), false, 7})),
      Flatten(EncodeRecvTensorResponse(absl::OkStatus(), {strings, false, 7})),
      Flatten(EncodeRecvTensorResponse(absl::OkStatus(), {Bools({true, false}), true, 7})),
  };
  std::mt19937 rng(20240601);
  for (const std::string& body : bodies) {
    ASSERT_TRUE(Decode(body).ok());
    for (size_t n = 0; n < body.size(); ++n) {
      EXPECT_FALSE(Decode(body.substr(0, n)).ok()) << "truncated to " << n;
    }
    for (int round = 0; round < 3000; ++round) {
      std::string mutated = body;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) mutated[rng() % mutated.size()] = static_cast<char>(rng());
      RecvTensorResult got;
      absl::Status s = Decode(mutated, &got);
      if (s.ok() && got.value.IsInitialized() && got.value.dtype() != DT_STRING) {
        // Whatever decoded is self-consistent.
        EXPECT_EQ(got.value.TotalBytes(), got.value.NumElements() * DataTypeSize(got.value.dtype()));
      }
    }
  }
  for (int round = 0; round < 3000; ++round) {
    std::string random(rng() % 64, '\0');
    for (char& c : random) c = static_cast<char>(rng());
    Decode(random).IgnoreError();
  }
}

}  // namespace
}  // namespace distributed
}  // namespace sluice
