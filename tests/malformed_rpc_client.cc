// malformed_rpc_client --address HOST:PORT --task /job:ps/replica:0/task:0
//
// Sends malformed and hostile requests to a running task's worker service
// (engine/distributed/worker.proto) through a raw grpc::GenericStub, so no
// client-side encoding can tidy them up: bytes that are no request at all,
// truncated requests, length prefixes that claim 2 GiB, graphs that cannot be
// built, tensors whose dtype, shape and bytes disagree, rendezvous keys that
// name nothing, steps that were cleaned up, unknown methods, calls that send
// no request. Each case must come back as an error: a worker error (gRPC OK, a
// body of byte 1 then an ErrorResponse, or for RecvTensor a header whose
// `error` is set) or a gRPC status other than OK; a few documented cases must
// succeed (positive controls, and CleanupGraph, which is idempotent). After
// every case GetStatus must still answer. The framing is decoded here, by hand,
// from worker.proto's description, not with the runtime's own decoder.
//
// Prints one line per case; exits 0 when every case behaved, 1 otherwise, 2
// when the task stopped answering (the caller checks whether it crashed).
// It never sends a well-formed Shutdown or CleanupAll.
//
// Then the task's TCP tensor transport (engine/distributed/tcp_tensor_transport.h),
// at the tensor_address its GetStatus announces (none announced is a
// failure): frames that are no frames (garbage, unknown types, a key length of
// 4 GiB, a request shorter than its step id, bodies on cancels and pings)
// must make the task drop that connection (and only that one); well-formed
// requests for keys that name nothing must come back as error headers; a ping
// as a pong; a client that goes away with a call pending must be harmless.
// The frames are built here by hand from that header's description.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/distributed/grpc_options.h"
#include "engine/distributed/worker.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"

namespace sluice {
namespace {

using distributed::CleanupAllRequest;
using distributed::CleanupGraphRequest;
using distributed::DeregisterGraphRequest;
using distributed::ErrorResponse;
using distributed::GetStatusRequest;
using distributed::GetStatusResponse;
using distributed::NamedTensor;
using distributed::RecvTensorRequest;
using distributed::RecvTensorResponseHeader;
using distributed::RegisterGraphRequest;
using distributed::RegisterGraphResponse;
using distributed::RunGraphRequest;
using distributed::RunGraphResponse;
using distributed::ShutdownRequest;

constexpr char kPrefix[] = "/sluice.distributed.WorkerService/";
// absl / gRPC status codes.
constexpr int kCancelled = 1, kInvalidArgument = 3, kDeadlineExceeded = 4, kNotFound = 5,
              kFailedPrecondition = 9, kAborted = 10, kUnimplemented = 12, kUnavailable = 14;
constexpr int kAnyCode = -1;

std::string g_task;    // "/job:ps/replica:0/task:0"
std::string g_device;  // g_task + "/device:CPU:0"

// ---- wire helpers ----

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
// A length-delimited field's tag.
std::string LenTag(int field) { return Varint((static_cast<uint64_t>(field) << 3) | 2); }
std::string VarintField(int field, uint64_t v) { return Varint(static_cast<uint64_t>(field) << 3) + Varint(v); }
std::string LenField(int field, const std::string& bytes) { return LenTag(field) + Varint(bytes.size()) + bytes; }

// ---- calls ----

struct Outcome {
  enum Kind { kTransport, kOk, kWorkerError, kBadFraming } kind = kBadFraming;
  int code = 0;         // transport: the gRPC code; worker error: its code
  std::string message;  // the error, or what was wrong with the framing
  std::string payload;  // kOk: the response message's bytes (envelope) or the header (RecvTensor)
  std::string tensor_bytes;  // RecvTensor: the raw bytes after the header
  std::string Describe() const {
    switch (kind) {
      case kTransport: return absl::StrCat("gRPC status ", code, ": ", message);
      case kOk: return absl::StrCat("OK (", payload.size(), " bytes)");
      case kWorkerError: return absl::StrCat("worker error ", code, ": ", message);
      case kBadFraming: return absl::StrCat("MALFORMED RESPONSE: ", message);
    }
    return "?";
  }
};

class Client {
 public:
  explicit Client(const std::string& address)
      : channel_(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                           distributed::ClientChannelArguments())),
        stub_(channel_) {}

  // One unary call with `request` as its whole body; the raw result.
  grpc::Status Raw(const std::string& method, const std::string& request, int timeout_ms, std::string* body) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
    grpc::Slice slice(request);
    grpc::ByteBuffer in(&slice, 1), out;
    std::promise<grpc::Status> done;
    stub_.UnaryCall(&context, method, grpc::StubOptions(), &in, &out,
                    [&done](grpc::Status s) { done.set_value(std::move(s)); });
    grpc::Status status = done.get_future().get();
    body->clear();
    if (status.ok()) {
      std::vector<grpc::Slice> slices;
      if (!out.Dump(&slices).ok()) return grpc::Status(grpc::StatusCode::INTERNAL, "unreadable response");
      for (const grpc::Slice& s : slices) body->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    return status;
  }

  // A method answered in the envelope: byte 0 + response, or byte 1 + ErrorResponse.
  Outcome Envelope(const std::string& method, const std::string& request, int timeout_ms = 10000) {
    std::string body;
    Outcome o;
    grpc::Status s = Raw(kPrefix + method, request, timeout_ms, &body);
    if (!s.ok()) return Transport(s);
    if (body.empty()) {
      o.message = "empty body";
      return o;
    }
    if (body[0] == 0) {
      o.kind = Outcome::kOk;
      o.payload = body.substr(1);
      return o;
    }
    ErrorResponse error;
    if (body[0] != 1 || !error.ParseFromString(body.substr(1))) {
      o.message = absl::StrCat("first byte ", static_cast<int>(body[0]), ", ", body.size(), " bytes");
      return o;
    }
    if (error.status().code() == 0) {
      o.message = "an error envelope with code 0";
      return o;
    }
    o.kind = Outcome::kWorkerError;
    o.code = error.status().code();
    o.message = error.status().message();
    return o;
  }

  // RecvTensor: varint32 header length, header, tensor_bytes raw bytes.
  Outcome RecvTensor(const std::string& request, int timeout_ms = 10000) {
    std::string body;
    Outcome o;
    grpc::Status s = Raw(std::string(kPrefix) + "RecvTensor", request, timeout_ms, &body);
    if (!s.ok()) return Transport(s);
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(body.data()),
                                              static_cast<int>(body.size()));
    uint32_t header_length = 0;
    std::string header_bytes;
    RecvTensorResponseHeader header;
    if (!in.ReadVarint32(&header_length) || !in.ReadString(&header_bytes, static_cast<int>(header_length)) ||
        !header.ParseFromString(header_bytes)) {
      o.message = absl::StrCat("no header in ", body.size(), " bytes");
      return o;
    }
    const size_t rest = body.size() - static_cast<size_t>(in.CurrentPosition());
    if (header.has_error() && header.error().code() != 0) {
      if (rest != 0) {
        o.message = absl::StrCat("an error header followed by ", rest, " bytes");
        return o;
      }
      o.kind = Outcome::kWorkerError;
      o.code = header.error().code();
      o.message = header.error().message();
      return o;
    }
    if (header.tensor_bytes() < 0 || static_cast<size_t>(header.tensor_bytes()) != rest) {
      o.message = absl::StrCat("header says ", header.tensor_bytes(), " tensor bytes, ", rest, " follow");
      return o;
    }
    o.kind = Outcome::kOk;
    o.payload = header_bytes;
    o.tensor_bytes = body.substr(body.size() - rest);
    return o;
  }

  // A call that sends `messages` request messages (0 or 2: not what a unary
  // method expects) on a raw stream; the final gRPC status.
  grpc::Status Stream(const std::string& method, const std::vector<std::string>& messages, int timeout_ms) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
    grpc::CompletionQueue cq;
    auto call = stub_.PrepareCall(&context, kPrefix + method, &cq);
    std::vector<grpc::ByteBuffer> buffers;
    for (const std::string& m : messages) {
      grpc::Slice slice(m);
      buffers.emplace_back(&slice, 1);
    }
    auto step = [&cq](void* tag) {
      void* got = nullptr;
      bool ok = false;
      const bool more = cq.Next(&got, &ok);
      return more && got == tag && ok;
    };
    char tag = 0;
    call->StartCall(&tag);
    bool ok = step(&tag);
    for (size_t i = 0; ok && i < buffers.size(); ++i) {
      call->Write(buffers[i], &tag);
      ok = step(&tag);
    }
    if (ok) {
      call->WritesDone(&tag);
      step(&tag);
    }
    grpc::ByteBuffer response;
    call->Read(&response, &tag);
    step(&tag);
    grpc::Status status;
    call->Finish(&status, &tag);
    step(&tag);
    cq.Shutdown();
    void* got;
    bool ignored;
    while (cq.Next(&got, &ignored)) {
    }
    return status;
  }

 private:
  static Outcome Transport(const grpc::Status& s) {
    Outcome o;
    o.kind = Outcome::kTransport;
    o.code = s.error_code();
    o.message = s.error_message();
    return o;
  }

  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
};

// ---- expectations ----

enum class Want { kOk, kWorkerError, kTransportError, kAnyError };

int g_failures = 0;
int g_cases = 0;
Client* g_client = nullptr;

// The task answers GetStatus (no config hash: no check) with its own name.
bool StillServing(std::string* why) {
  GetStatusRequest request;
  request.set_caller_task("malformed_rpc_client");
  Outcome o = g_client->Envelope("GetStatus", request.SerializeAsString(), 5000);
  GetStatusResponse response;
  if (o.kind != Outcome::kOk || !response.ParseFromString(o.payload) || response.task() != g_task) {
    *why = o.kind == Outcome::kOk ? absl::StrCat("GetStatus answered task '", response.task(), "'") : o.Describe();
    return false;
  }
  return true;
}

void Check(const std::string& name, const Outcome& o, Want want, int code = kAnyCode,
           const std::string& contains = "") {
  ++g_cases;
  bool good = false;
  switch (want) {
    case Want::kOk: good = o.kind == Outcome::kOk; break;
    case Want::kWorkerError: good = o.kind == Outcome::kWorkerError; break;
    case Want::kTransportError: good = o.kind == Outcome::kTransport; break;
    case Want::kAnyError: good = o.kind == Outcome::kWorkerError || o.kind == Outcome::kTransport; break;
  }
  if (good && code != kAnyCode && o.code != code) good = false;
  if (good && !contains.empty() && !absl::StrContains(o.message, contains)) good = false;
  std::string shown = o.Describe();
  if (shown.size() > 300) shown = shown.substr(0, 300) + "...";
  std::printf("%s %s: %s\n", good ? "ok  " : "FAIL", name.c_str(), shown.c_str());
  if (!good) {
    ++g_failures;
    std::printf("     wanted %s%s%s\n",
                want == Want::kOk                ? "OK"
                : want == Want::kWorkerError     ? "a worker error"
                : want == Want::kTransportError ? "a gRPC error status"
                                                 : "an error",
                code == kAnyCode ? "" : absl::StrCat(" with code ", code).c_str(),
                contains.empty() ? "" : absl::StrCat(" containing '", contains, "'").c_str());
  }
  std::string why;
  if (!StillServing(&why)) {
    std::printf("FAIL after '%s' the task no longer answers GetStatus: %s\n", name.c_str(), why.c_str());
    std::fflush(stdout);
    std::exit(2);
  }
  std::fflush(stdout);
}

// ---- request builders ----

// A NodeDef on this task's CPU (or `device`).
NodeDef Node(const std::string& name, const std::string& op, std::vector<std::string> inputs = {},
             const std::string& device = g_device) {
  NodeDef n;
  n.set_name(name);
  n.set_op(op);
  for (auto& i : inputs) n.add_input(i);
  n.set_device(device);
  return n;
}
void SetType(NodeDef* n, const std::string& attr, DataType t) { (*n->mutable_attr())[attr].set_type(t); }
void SetString(NodeDef* n, const std::string& attr, const std::string& s) { (*n->mutable_attr())[attr].set_s(s); }

TensorProto FloatTensor(std::vector<int64_t> dims, std::vector<float> values) {
  TensorProto t;
  t.set_dtype(DT_FLOAT);
  for (int64_t d : dims) t.mutable_tensor_shape()->add_dim()->set_size(d);
  t.set_tensor_content(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

NodeDef ConstNode(const std::string& name, const TensorProto& value) {
  NodeDef n = Node(name, "Const");
  SetType(&n, "dtype", value.dtype());
  *(*n.mutable_attr())["value"].mutable_tensor() = value;
  return n;
}

// The rendezvous key of a tensor this task sends to itself.
std::string LocalKey(const std::string& name) { return absl::StrCat(g_device, ";0;", g_device, ";", name, ";0:0"); }

NodeDef RecvNode(const std::string& name, const std::string& tensor_name, DataType type) {
  NodeDef n = Node(name, "_Recv");
  SetType(&n, "tensor_type", type);
  SetString(&n, "tensor_name", tensor_name);
  SetString(&n, "send_device", g_device);
  (*n.mutable_attr())["send_device_incarnation"].set_i(0);
  SetString(&n, "recv_device", g_device);
  (*n.mutable_attr())["client_terminated"].set_b(true);
  return n;
}

NodeDef SendNode(const std::string& name, const std::string& input, const std::string& tensor_name) {
  NodeDef n = Node(name, "_Send", {input});
  SetType(&n, "T", DT_FLOAT);
  SetString(&n, "tensor_name", tensor_name);
  SetString(&n, "send_device", g_device);
  (*n.mutable_attr())["send_device_incarnation"].set_i(0);
  SetString(&n, "recv_device", g_device);
  (*n.mutable_attr())["client_terminated"].set_b(true);
  return n;
}

std::string RegisterRequest(const std::vector<NodeDef>& nodes) {
  RegisterGraphRequest r;
  r.set_session_handle("malformed_rpc_client");
  for (const NodeDef& n : nodes) *r.mutable_graph()->add_node() = n;
  return r.SerializeAsString();
}

RunGraphRequest RunRequest(const std::string& handle, int64_t step) {
  RunGraphRequest r;
  r.set_session_handle("malformed_rpc_client");
  r.set_graph_handle(handle);
  r.set_step_id(step);
  return r;
}

// ---- the cases ----

// Every method, given bytes that are not its request: random bytes (checked
// here not to parse), and a valid request cut short.
template <typename Request>
void Unparsable(const std::string& method, const std::string& full_request, std::mt19937* rng) {
  Request probe;
  int made = 0;
  for (int attempt = 0; made < 4 && attempt < 1000; ++attempt) {
    std::string bytes(1 + (*rng)() % 96, '\0');
    for (char& c : bytes) c = static_cast<char>((*rng)() & 0xff);
    if (probe.ParseFromString(bytes)) continue;  // happens to be a valid request: not this case
    ++made;
    const std::string name = absl::StrCat(method, "/random bytes #", made, " (", bytes.size(), " bytes)");
    if (method == "RecvTensor") {
      Check(name, g_client->RecvTensor(bytes), Want::kWorkerError, kInvalidArgument, "not a valid");
    } else {
      Check(name, g_client->Envelope(method, bytes), Want::kWorkerError, kInvalidArgument, "not a valid");
    }
  }
  if (made < 4) {
    std::printf("FAIL %s: could not make 4 unparsable random requests\n", method.c_str());
    ++g_failures;
  }
  if (!probe.ParseFromString(full_request)) {
    std::printf("FAIL %s: the full request does not parse (a test bug)\n", method.c_str());
    ++g_failures;
    return;
  }
  int cuts = 0;
  for (size_t keep : {full_request.size() - 1, full_request.size() / 2, size_t{2}}) {
    const std::string cut = full_request.substr(0, keep);
    if (keep == 0 || keep >= full_request.size() || probe.ParseFromString(cut)) continue;
    ++cuts;
    const std::string name = absl::StrCat(method, "/truncated to ", keep, " of ", full_request.size(), " bytes");
    if (method == "RecvTensor") {
      Check(name, g_client->RecvTensor(cut), Want::kWorkerError, kInvalidArgument, "not a valid");
    } else {
      Check(name, g_client->Envelope(method, cut), Want::kWorkerError, kInvalidArgument, "not a valid");
    }
  }
  if (cuts == 0) {
    std::printf("FAIL %s: no cut of the full request fails to parse (a test bug)\n", method.c_str());
    ++g_failures;
  }
}

void UnparsableRequests() {
  std::mt19937 rng(20240611);
  GetStatusRequest gs;
  gs.set_caller_task("/job:worker/replica:0/task:0");
  gs.set_config_hash("0123456789abcdef");
  Unparsable<GetStatusRequest>("GetStatus", gs.SerializeAsString(), &rng);
  NodeDef c = ConstNode("c", FloatTensor({2}, {1, 2}));
  Unparsable<RegisterGraphRequest>("RegisterGraph", RegisterRequest({c}), &rng);
  DeregisterGraphRequest dg;
  dg.set_session_handle("session");
  dg.set_graph_handle("graph_0");
  Unparsable<DeregisterGraphRequest>("DeregisterGraph", dg.SerializeAsString(), &rng);
  RunGraphRequest rg = RunRequest("graph_0", 7);
  NamedTensor* send = rg.add_send();
  send->set_key(LocalKey("x"));
  *send->mutable_tensor() = FloatTensor({2}, {1, 2});
  Unparsable<RunGraphRequest>("RunGraph", rg.SerializeAsString(), &rng);
  RecvTensorRequest rt;
  rt.set_step_id(7);
  rt.set_rendezvous_key(LocalKey("x"));
  Unparsable<RecvTensorRequest>("RecvTensor", rt.SerializeAsString(), &rng);
  CleanupGraphRequest cg;
  cg.set_step_id(7);
  cg.mutable_abort()->set_code(kAborted);
  cg.mutable_abort()->set_message("aborted by the test");
  Unparsable<CleanupGraphRequest>("CleanupGraph", cg.SerializeAsString(), &rng);
  // Never valid: a well-formed CleanupAll or Shutdown would act.
  CleanupAllRequest ca;
  ca.add_container("some_container");
  Unparsable<CleanupAllRequest>("CleanupAll", ca.SerializeAsString(), &rng);
  ShutdownRequest sd;
  sd.set_reason("the malformed RPC test must never send a valid Shutdown");
  Unparsable<ShutdownRequest>("Shutdown", sd.SerializeAsString(), &rng);

  // A length prefix that claims 2^31 bytes (and other impossible lengths)
  // where only a few bytes follow.
  const std::string two_gib = Varint(uint64_t{1} << 31);
  Check("RunGraph/send field claims 2 GiB",
        g_client->Envelope("RunGraph", LenField(2, "graph_0") + VarintField(3, 7) + LenTag(4) + two_gib + "abcd"),
        Want::kWorkerError, kInvalidArgument, "not a valid");
  // Consistent outer lengths; the tensor_content inside claims 2 GiB.
  const std::string inner_tensor = VarintField(1, DT_FLOAT) + LenTag(4) + two_gib + "abcd";
  const std::string named = LenField(1, LocalKey("x")) + LenField(2, inner_tensor);
  Check("RunGraph/tensor_content claims 2 GiB inside consistent outer lengths",
        g_client->Envelope("RunGraph", LenField(2, "graph_0") + LenField(4, named)), Want::kWorkerError,
        kInvalidArgument, "not a valid");
  Check("RegisterGraph/graph field claims 2 GiB", g_client->Envelope("RegisterGraph", LenTag(2) + two_gib + "xyz"),
        Want::kWorkerError, kInvalidArgument, "not a valid");
  Check("RegisterGraph/length of 2^64 - 1",
        g_client->Envelope("RegisterGraph", LenTag(2) + Varint(~uint64_t{0}) + "xyz"), Want::kWorkerError,
        kInvalidArgument, "not a valid");
  Check("RegisterGraph/an 11-byte varint length",
        g_client->Envelope("RegisterGraph", LenTag(2) + std::string(10, '\xff') + "\x01" + "xyz"),
        Want::kWorkerError, kInvalidArgument, "not a valid");
  Check("RecvTensor/rendezvous_key claims 2 GiB", g_client->RecvTensor(VarintField(1, 7) + LenTag(2) + two_gib + "k"),
        Want::kWorkerError, kInvalidArgument, "not a valid");
  Check("GetStatus/caller_task claims 2^31 - 1 bytes",
        g_client->Envelope("GetStatus", LenTag(1) + Varint((uint64_t{1} << 31) - 1) + "abc"), Want::kWorkerError,
        kInvalidArgument, "not a valid");
  Check("Shutdown/reason claims 2 GiB", g_client->Envelope("Shutdown", LenTag(1) + two_gib + "abc"),
        Want::kWorkerError, kInvalidArgument, "not a valid");
  // Bigger than gRPC's default 4 MiB receive cap (which the server raises),
  // and no request.
  std::string big(5 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(rng() & 0xff);
  big[0] = '\x07';  // field 0, wire type 7: never valid
  Check("RunGraph/5 MiB of random bytes", g_client->Envelope("RunGraph", big), Want::kWorkerError, kInvalidArgument,
        "not a valid");
}

// Returns the handle of a valid graph x -> MatMul(x, x) -> y, or "".
std::string RegisterGraphs() {
  auto reg = [](const std::vector<NodeDef>& nodes) { return g_client->Envelope("RegisterGraph", RegisterRequest(nodes)); };
  NodeDef c = ConstNode("c", FloatTensor({2}, {1, 2}));

  Check("RegisterGraph/no nodes", reg({}), Want::kWorkerError, kInvalidArgument, "no nodes");
  Check("RegisterGraph/unknown op", reg({Node("n", "NoSuchOpAnywhere")}), Want::kWorkerError, kInvalidArgument);
  Check("RegisterGraph/no device", reg({Node("n", "NoOp", {}, "")}), Want::kWorkerError, kInvalidArgument,
        "has no device");
  Check("RegisterGraph/device of another task", reg({Node("n", "NoOp", {}, "/job:worker/replica:0/task:0/device:CPU:0")}),
        Want::kWorkerError, kInvalidArgument, "has no device");
  Check("RegisterGraph/a GPU this task lacks", reg({Node("n", "NoOp", {}, g_task + "/device:GPU:7")}),
        Want::kWorkerError, kInvalidArgument, "has no device");
  Check("RegisterGraph/device name that is no device name", reg({Node("n", "NoOp", {}, "not a device ;;;")}),
        Want::kWorkerError, kInvalidArgument);
  {
    NodeDef a = Node("a", "Identity", {"b"}), b = Node("b", "Identity", {"a"});
    SetType(&a, "T", DT_FLOAT);
    SetType(&b, "T", DT_FLOAT);
    Check("RegisterGraph/cycle a <- b <- a", reg({a, b}), Want::kWorkerError, kInvalidArgument, "cycle");
    NodeDef self = Node("self", "Identity", {"self"});
    SetType(&self, "T", DT_FLOAT);
    Check("RegisterGraph/node that is its own input", reg({self}), Want::kWorkerError, kInvalidArgument);
    NodeDef i = Node("i", "Identity", {"c", "c:0"});  // both spellings of one input
    SetType(&i, "T", DT_FLOAT);
    Check("RegisterGraph/too many inputs", reg({c, i}), Want::kWorkerError, kInvalidArgument);
    NodeDef missing = Node("m", "Identity", {"nowhere"});
    SetType(&missing, "T", DT_FLOAT);
    Check("RegisterGraph/input from a node that does not exist", reg({missing}), Want::kWorkerError, kInvalidArgument);
    NodeDef port = Node("p", "Identity", {"c:5"});
    SetType(&port, "T", DT_FLOAT);
    Check("RegisterGraph/input port out of range", reg({c, port}), Want::kWorkerError, kInvalidArgument);
    NodeDef neg = Node("p", "Identity", {"c:-1"});
    SetType(&neg, "T", DT_FLOAT);
    Check("RegisterGraph/negative input port", reg({c, neg}), Want::kWorkerError, kInvalidArgument);
    NodeDef typed = Node("t", "Identity", {"c"});
    SetType(&typed, "T", DT_INT32);  // c is float
    Check("RegisterGraph/input type differs from the attr", reg({c, typed}), Want::kWorkerError, kInvalidArgument);
    Check("RegisterGraph/two nodes of one name", reg({c, c}), Want::kWorkerError, kInvalidArgument);
    NodeDef wrong_attr = Node("w", "Identity", {"c"});
    (*wrong_attr.mutable_attr())["T"].set_i(5);  // an int where a type belongs
    Check("RegisterGraph/attr of the wrong kind", reg({c, wrong_attr}), Want::kWorkerError, kInvalidArgument);
    NodeDef huge_type = Node("h", "Identity", {"c"});
    SetType(&huge_type, "T", static_cast<DataType>(INT_MAX));
    Check("RegisterGraph/type attr 2^31 - 1", reg({c, huge_type}), Want::kWorkerError, kInvalidArgument);
    Check("RegisterGraph/node without a name", reg({Node("", "NoOp")}), Want::kWorkerError, kInvalidArgument);
  }
  {
    NodeDef no_value = Node("c", "Const");
    SetType(&no_value, "dtype", DT_FLOAT);
    Check("RegisterGraph/Const without its value", reg({no_value}), Want::kWorkerError, kInvalidArgument);
    NodeDef mismatch = ConstNode("c", FloatTensor({2}, {1, 2}));
    SetType(&mismatch, "dtype", DT_INT32);
    Check("RegisterGraph/Const whose dtype differs from its value's", reg({mismatch}), Want::kWorkerError,
          kInvalidArgument);
    TensorProto short_content = FloatTensor({3}, {1, 2});  // 8 bytes for 3 floats
    Check("RegisterGraph/Const whose bytes do not fill its shape", reg({ConstNode("c", short_content)}),
          Want::kWorkerError, kInvalidArgument);
    TensorProto huge;
    huge.set_dtype(DT_FLOAT);
    huge.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 40);
    huge.add_float_val(1);
    Check("RegisterGraph/Const of 2^40 floats from one value", reg({ConstNode("c", huge)}), Want::kWorkerError,
          kInvalidArgument);
    NodeDef recv = Node("r", "_Recv");  // no attrs
    Check("RegisterGraph/_Recv without its attrs", reg({recv}), Want::kWorkerError, kInvalidArgument);
  }

  // The positive control, used below: x -> MatMul(x, x) -> y.
  NodeDef x = RecvNode("x", "x", DT_FLOAT);
  NodeDef mm = Node("mm", "MatMul", {"x", "x"});
  SetType(&mm, "T", DT_FLOAT);
  NodeDef y = SendNode("y", "mm", "y");
  Outcome o = reg({x, mm, y});
  Check("RegisterGraph/valid graph _Recv -> MatMul -> _Send (control)", o, Want::kOk);
  RegisterGraphResponse response;
  if (o.kind != Outcome::kOk || !response.ParseFromString(o.payload) || response.graph_handle().empty()) return "";
  return response.graph_handle();
}

NamedTensor* AddSend(RunGraphRequest* r, const TensorProto& t) {
  NamedTensor* s = r->add_send();
  s->set_key(LocalKey("x"));
  *s->mutable_tensor() = t;
  return s;
}

void RunGraphs(const std::string& handle) {
  auto run = [](const RunGraphRequest& r) { return g_client->Envelope("RunGraph", r.SerializeAsString()); };
  int64_t step = 0x5eed0000;
  auto cleanup = [](int64_t s) {
    CleanupGraphRequest c;
    c.set_step_id(s);
    return g_client->Envelope("CleanupGraph", c.SerializeAsString());
  };

  Check("RunGraph/unknown graph handle", run(RunRequest("graph_that_never_was", ++step)), Want::kWorkerError, kAborted);
  Check("RunGraph/empty graph handle", run(RunRequest("", ++step)), Want::kWorkerError, kAborted);
  if (handle.empty()) return;

  // Control: [[1,2],[3,4]]^2 = [[7,10],[15,22]].
  {
    RunGraphRequest r = RunRequest(handle, ++step);
    AddSend(&r, FloatTensor({2, 2}, {1, 2, 3, 4}));
    r.add_recv_key(LocalKey("y"));
    Outcome o = run(r);
    RunGraphResponse response;
    bool right = o.kind == Outcome::kOk && response.ParseFromString(o.payload) && response.recv_size() == 1 &&
                 response.recv(0).tensor().tensor_content().size() == 16;
    if (right) {
      float v[4];
      std::memcpy(v, response.recv(0).tensor().tensor_content().data(), 16);
      right = v[0] == 7 && v[1] == 10 && v[2] == 15 && v[3] == 22;
    }
    if (!right && o.kind == Outcome::kOk) {
      o.kind = Outcome::kBadFraming;
      o.message = "OK but not [[7,10],[15,22]]";
    }
    Check("RunGraph/x = [[1,2],[3,4]] gives y = x.x (control)", o, Want::kOk);
    cleanup(step);
  }
  auto bad_send = [&](const std::string& name, const TensorProto& t, int code, const std::string& contains = "") {
    RunGraphRequest r = RunRequest(handle, ++step);
    AddSend(&r, t);
    r.add_recv_key(LocalKey("y"));
    Check("RunGraph/" + name, run(r), Want::kWorkerError, code, contains);
    cleanup(step);
  };
  TensorProto t = FloatTensor({2, 2}, {1, 2, 3, 4});
  t.set_dtype(static_cast<DataType>(9999));
  bad_send("send tensor with dtype enum 9999", t, kInvalidArgument);
  // A ref type is the base type + 100: naming this one must not recurse
  // 21 million times.
  t.set_dtype(static_cast<DataType>(INT_MAX));
  bad_send("send tensor with dtype enum 2^31 - 1", t, kInvalidArgument);
  t.set_dtype(DT_INVALID);
  bad_send("send tensor with DT_INVALID", t, kInvalidArgument);
  t.set_dtype(DT_FLOAT_REF);
  bad_send("send tensor with a reference dtype", t, kInvalidArgument);
  t.set_dtype(static_cast<DataType>(-3));
  bad_send("send tensor with a negative dtype enum", t, kInvalidArgument);
  t.set_dtype(DT_INT32);  // 16 bytes: a valid [2,2] int32, of the wrong type for the graph
  bad_send("send an int32 where the graph receives float", t, kInvalidArgument, "expected float");
  bad_send("send [3] floats in 16 bytes", FloatTensor({3}, {1, 2, 3, 4}), kInvalidArgument);
  bad_send("send [2,2] floats in 8 bytes", FloatTensor({2, 2}, {1, 2}), kInvalidArgument);
  bad_send("send [2^31] floats in 16 bytes", FloatTensor({int64_t{1} << 31}, {1, 2, 3, 4}), kInvalidArgument);
  bad_send("send [2^40, 2^40] floats in 16 bytes", FloatTensor({int64_t{1} << 40, int64_t{1} << 40}, {1, 2, 3, 4}),
           kInvalidArgument);
  bad_send("send [2^62, 4] (the element count overflows)", FloatTensor({int64_t{1} << 62, 4}, {1, 2, 3, 4}),
           kInvalidArgument);
  bad_send("send a negative dim", FloatTensor({-1, 4}, {1, 2, 3, 4}), kInvalidArgument);
  {
    TensorProto many = FloatTensor({}, {});
    many.clear_tensor_content();
    for (int i = 0; i < 300; ++i) many.mutable_tensor_shape()->add_dim()->set_size(1);
    many.add_float_val(1);
    bad_send("send a tensor of 300 dims", many, kInvalidArgument);
    TensorProto fill;
    fill.set_dtype(DT_FLOAT);
    fill.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 30);
    fill.add_float_val(1);
    bad_send("send [2^30] floats from one float_val (4 GiB to fill)", fill, kInvalidArgument);
    TensorProto extra;
    extra.set_dtype(DT_FLOAT);
    extra.mutable_tensor_shape()->add_dim()->set_size(2);
    for (int i = 0; i < 5; ++i) extra.add_float_val(i);
    bad_send("send [2] with 5 float_val values", extra, kInvalidArgument);
    TensorProto unknown_rank = FloatTensor({2, 2}, {1, 2, 3, 4});
    unknown_rank.mutable_tensor_shape()->set_unknown_rank(true);
    bad_send("send a tensor of unknown rank", unknown_rank, kInvalidArgument);
    TensorProto str;
    str.set_dtype(DT_STRING);
    str.set_tensor_content("abcd");
    bad_send("send a string tensor in tensor_content", str, kInvalidArgument);
    TensorProto boolean;
    boolean.set_dtype(DT_BOOL);
    boolean.mutable_tensor_shape()->add_dim()->set_size(2);
    boolean.set_tensor_content(std::string("\x01\x07", 2));
    bad_send("send a bool stored as byte 7", boolean, kInvalidArgument);
  }
  // Well-formed tensors the graph cannot use: the kernel says so.
  bad_send("send a [2,3] matrix to MatMul(x, x)", FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6}), kInvalidArgument);
  bad_send("send a vector to MatMul(x, x)", FloatTensor({4}, {1, 2, 3, 4}), kInvalidArgument);
  {
    RunGraphRequest r = RunRequest(handle, ++step);
    AddSend(&r, FloatTensor({2, 2}, {1, 2, 3, 4}));
    r.add_recv_key("not a rendezvous key");
    Check("RunGraph/recv_key that is no key", run(r), Want::kWorkerError, kAnyCode);
    cleanup(step);
  }
  {
    RunGraphRequest r = RunRequest(handle, ++step);
    AddSend(&r, FloatTensor({2, 2}, {1, 2, 3, 4}));
    r.add_recv_key(LocalKey("nothing_sends_this"));
    Check("RunGraph/recv_key that nothing sends", run(r), Want::kWorkerError, kInvalidArgument, "no value");
    cleanup(step);
  }
  {
    RunGraphRequest bad = RunRequest(handle, ++step);
    AddSend(&bad, FloatTensor({2, 2}, {1, 2, 3, 4}))->set_key("garbage key");
    AddSend(&bad, FloatTensor({2, 2}, {1, 2, 3, 4}));
    bad.add_recv_key(LocalKey("y"));
    // A send under a key no node receives is harmless: the graph's own key
    // still arrives and the step completes.
    Check("RunGraph/an extra send under a garbage key (completes)", run(bad), Want::kOk);
    cleanup(step);
  }
  // A step that was cleaned up (here: aborted before it ever ran) is refused.
  {
    const int64_t s = ++step;
    CleanupGraphRequest c;
    c.set_step_id(s);
    c.mutable_abort()->set_code(kAborted);
    c.mutable_abort()->set_message("aborted by the test before it ran");
    Check("CleanupGraph/abort of a step that never ran (idempotent: OK)",
          g_client->Envelope("CleanupGraph", c.SerializeAsString()), Want::kOk);
    RunGraphRequest r = RunRequest(handle, s);
    AddSend(&r, FloatTensor({2, 2}, {1, 2, 3, 4}));
    Check("RunGraph/a step already cleaned up", run(r), Want::kWorkerError, kAborted, "already cleaned up");
    RecvTensorRequest rt;
    rt.set_step_id(s);
    rt.set_rendezvous_key(LocalKey("y"));
    Check("RecvTensor/a step already cleaned up", g_client->RecvTensor(rt.SerializeAsString()), Want::kWorkerError,
          kAborted, "already cleaned up");
  }
  // The step of a run that was never cleaned up can run again (RunGraph
  // creates it); CleanupGraph with impossible abort codes is still a cleanup.
  for (int code : {999, -5, INT_MAX}) {
    CleanupGraphRequest c;
    c.set_step_id(++step);
    c.mutable_abort()->set_code(code);
    Check(absl::StrCat("CleanupGraph/abort code ", code, " (OK: an unknown code is Unknown)"),
          g_client->Envelope("CleanupGraph", c.SerializeAsString()), Want::kOk);
    RunGraphRequest r = RunRequest(handle, step);
    Check(absl::StrCat("RunGraph/the step cleaned up with code ", code), run(r), Want::kWorkerError, kAborted);
  }
  // Deregister the control graph: it then runs no more.
  DeregisterGraphRequest d;
  d.set_session_handle("malformed_rpc_client");
  d.set_graph_handle(handle);
  Check("DeregisterGraph/the control graph (control)", g_client->Envelope("DeregisterGraph", d.SerializeAsString()),
        Want::kOk);
  Check("DeregisterGraph/it again", g_client->Envelope("DeregisterGraph", d.SerializeAsString()), Want::kWorkerError,
        kNotFound);
  RunGraphRequest r = RunRequest(handle, ++step);
  AddSend(&r, FloatTensor({2, 2}, {1, 2, 3, 4}));
  Check("RunGraph/a deregistered graph", run(r), Want::kWorkerError, kAborted);
}

void RecvTensors() {
  auto recv = [](const std::string& key, int64_t step, int timeout_ms = 10000) {
    RecvTensorRequest r;
    r.set_step_id(step);
    r.set_rendezvous_key(key);
    return g_client->RecvTensor(r.SerializeAsString(), timeout_ms);
  };
  const int64_t step = 0x7ec0000;
  Check("RecvTensor/empty key", recv("", step), Want::kWorkerError, kInvalidArgument);
  Check("RecvTensor/key without ';'", recv("garbage", step), Want::kWorkerError, kInvalidArgument);
  Check("RecvTensor/key of only ';'", recv(";;;;", step), Want::kWorkerError, kInvalidArgument);
  Check("RecvTensor/a key another task sends",
        recv("/job:worker/replica:0/task:0/device:CPU:0;0;" + g_device + ";x;0:0", step), Want::kWorkerError,
        kInvalidArgument, "does not send");
  Check("RecvTensor/device with a bad task number", recv("/job:ps/replica:0/task:zz/device:CPU:0;0;x;y;0:0", step),
        Want::kWorkerError, kInvalidArgument);
  Check("RecvTensor/device without a task", recv("/job:ps/device:CPU:0;0;x;y;0:0", step), Want::kWorkerError,
        kInvalidArgument);
  Check("RecvTensor/1 MiB key without ';'", recv(std::string(1 << 20, 'k'), step), Want::kWorkerError,
        kInvalidArgument);
  // A well-formed key of this task in a step that never runs: RecvTensor
  // waits for the value by design (the receiver may ask before the sender's
  // RunGraph arrives), so our deadline ends the call.
  Check("RecvTensor/a step that never runs (waits: our 1 s deadline ends it)", recv(LocalKey("x"), step + 1, 1000),
        Want::kTransportError, kDeadlineExceeded);
  // Then the step's cleanup answers the abandoned call inside the task.
  CleanupGraphRequest c;
  c.set_step_id(step + 1);
  Check("CleanupGraph/that step (OK)", g_client->Envelope("CleanupGraph", c.SerializeAsString()), Want::kOk);
  c.set_step_id(-1);
  Check("CleanupGraph/step -1, never seen (idempotent: OK)", g_client->Envelope("CleanupGraph", c.SerializeAsString()),
        Want::kOk);
}

void OtherCalls() {
  GetStatusRequest gs;
  gs.set_caller_task("a client that is no task of the cluster");
  gs.set_config_hash("not the config of this task");
  Check("GetStatus/another config", g_client->Envelope("GetStatus", gs.SerializeAsString()), Want::kWorkerError,
        kFailedPrecondition, "must run the same experiment");
  DeregisterGraphRequest d;
  d.set_graph_handle("graph_that_never_was");
  Check("DeregisterGraph/unknown handle", g_client->Envelope("DeregisterGraph", d.SerializeAsString()),
        Want::kWorkerError, kNotFound);
  for (const char* method : {"NoSuchMethod", "", "getstatus", "GetStatus/extra"}) {
    Check(absl::StrCat("unknown method '", method, "'"), g_client->Envelope(method, ""), Want::kTransportError,
          kUnimplemented);
  }
  std::string body;
  grpc::Status s = g_client->Raw("/other.Service/GetStatus", "", 10000, &body);
  Outcome o;
  o.kind = s.ok() ? Outcome::kOk : Outcome::kTransport;
  o.code = s.error_code();
  o.message = s.error_message();
  Check("unknown service /other.Service/GetStatus", o, Want::kTransportError, kUnimplemented);
  // Streams where a unary call belongs: no request at all, then two requests.
  for (const char* method : {"GetStatus", "RunGraph", "RecvTensor", "Shutdown"}) {
    s = g_client->Stream(method, {}, 10000);
    o.kind = s.ok() ? Outcome::kOk : Outcome::kTransport;
    o.code = s.error_code();
    o.message = s.error_message();
    Check(absl::StrCat(method, "/a call that sends no request"), o, Want::kTransportError, kCancelled);
  }
  GetStatusRequest ok_request;
  s = g_client->Stream("GetStatus", {ok_request.SerializeAsString(), ok_request.SerializeAsString()}, 10000);
  o.kind = s.ok() ? Outcome::kOk : Outcome::kTransport;
  o.code = s.error_code();
  o.message = s.error_message();
  Check("GetStatus/a call that sends two requests (the first is answered)", o, Want::kOk);
}

// ---- the TCP tensor transport ----

// A raw connection to host:port with a 10 s receive timeout; -1 when none.
int TcpConnect(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  struct addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), address.substr(colon + 1).c_str(), &hints, &found) != 0) return -1;
  int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd >= 0) {
    struct timeval t = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof(t));
  }
  return fd;
}

std::string TcpPrefix(uint8_t type, uint32_t length, uint64_t id) {
  std::string p(16, '\0');
  p[0] = static_cast<char>(type);
  for (int i = 0; i < 4; ++i) p[4 + i] = static_cast<char>((length >> (8 * i)) & 0xff);
  for (int i = 0; i < 8; ++i) p[8 + i] = static_cast<char>((id >> (8 * i)) & 0xff);
  return p;
}
constexpr uint8_t kTcpRecv = 1, kTcpCancel = 2, kTcpPing = 3, kTcpResponse = 4, kTcpPong = 5;

std::string TcpRecvFrame(uint64_t id, int64_t step, const std::string& key) {
  std::string f = TcpPrefix(kTcpRecv, static_cast<uint32_t>(8 + key.size()), id);
  for (int i = 0; i < 8; ++i) f.push_back(static_cast<char>((static_cast<uint64_t>(step) >> (8 * i)) & 0xff));
  return f + key;
}

bool TcpSend(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool TcpRead(int fd, char* out, size_t n) {
  while (n > 0) {
    const ssize_t got = recv(fd, out, n, 0);
    if (got <= 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// Sends `bytes` on a fresh connection: a transport error when the task closes
// it (the wanted answer to garbage), OK when it is still open after 2 s.
Outcome TcpGarbage(const std::string& address, const std::string& bytes) {
  Outcome o;
  const int fd = TcpConnect(address);
  if (fd < 0) {
    o.kind = Outcome::kBadFraming;
    o.message = "cannot connect to the tensor port";
    return o;
  }
  TcpSend(fd, bytes);
  struct timeval t = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof(t));
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) continue;
    if (n == 0 || errno == ECONNRESET) {
      o.kind = Outcome::kTransport;
      o.code = kUnavailable;
      o.message = "the task closed the connection";
    } else {
      o.kind = Outcome::kOk;
      o.message = "the connection is still open after 2 s";
    }
    break;
  }
  close(fd);
  return o;
}

// One well-formed request on `fd`, its answer decoded by hand.
Outcome TcpRecv(int fd, uint64_t id, int64_t step, const std::string& key) {
  Outcome o;
  char prefix[16];
  if (!TcpSend(fd, TcpRecvFrame(id, step, key)) || !TcpRead(fd, prefix, 16)) {
    o.kind = Outcome::kTransport;
    o.code = kUnavailable;
    o.message = "no answer (connection closed or 10 s passed)";
    return o;
  }
  uint32_t length = 0;
  for (int i = 3; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(prefix[4 + i]);
  uint64_t got_id = 0;
  for (int i = 7; i >= 0; --i) got_id = (got_id << 8) | static_cast<uint8_t>(prefix[8 + i]);
  if (prefix[0] != kTcpResponse || got_id != id || length > (1u << 24)) {
    o.message = absl::StrCat("frame type ", static_cast<int>(prefix[0]), " id ", got_id, " length ", length);
    return o;
  }
  std::string header_bytes(length, '\0');
  RecvTensorResponseHeader header;
  if (!TcpRead(fd, header_bytes.data(), length) || !header.ParseFromString(header_bytes)) {
    o.message = "the header does not parse";
    return o;
  }
  if (header.has_error()) {
    o.kind = Outcome::kWorkerError;
    o.code = header.error().code();
    o.message = header.error().message();
    return o;
  }
  o.kind = Outcome::kOk;
  o.payload = header_bytes;
  return o;
}

void TcpTensorTransport() {
  GetStatusRequest request;
  Outcome status = g_client->Envelope("GetStatus", request.SerializeAsString(), 5000);
  GetStatusResponse response;
  if (status.kind != Outcome::kOk || !response.ParseFromString(status.payload) || response.tensor_address().empty()) {
    ++g_cases;
    ++g_failures;
    std::printf("FAIL tcp/the task announces no tensor_address in GetStatus\n");
    return;
  }
  const std::string address = response.tensor_address();
  std::printf("tcp tensor transport at %s\n", address.c_str());
  const std::vector<std::pair<std::string, std::string>> garbage = {
      {"an HTTP request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"a frame of unknown type 0", TcpPrefix(0, 0, 1)},
      {"a frame of unknown type 200", TcpPrefix(200, 0, 1)},
      {"a response frame sent to the server", TcpPrefix(kTcpResponse, 0, 1)},
      {"nonzero padding", [] { std::string p = TcpPrefix(kTcpPing, 0, 1); p[3] = 9; return p; }()},
      {"a key of 4 GiB", TcpPrefix(kTcpRecv, 0xffffffffu, 1) + "abc"},
      {"a key just over 64 KiB", TcpPrefix(kTcpRecv, 8 + (64 << 10) + 1, 1) + std::string(100, 'k')},
      {"a request shorter than its step id", TcpPrefix(kTcpRecv, 4, 1) + "abcd"},
      {"a cancel with a body", TcpPrefix(kTcpCancel, 3, 1) + "abc"},
      {"a ping with a body", TcpPrefix(kTcpPing, 1, 1) + "p"},
  };
  for (const auto& [what, bytes] : garbage) {
    Check(absl::StrCat("tcp/", what, " (the task drops the connection)"), TcpGarbage(address, bytes),
          Want::kTransportError);
  }
  // Half a prefix could be a slow client: the task waits for the rest.
  Check("tcp/half a prefix (the task waits for the rest)", TcpGarbage(address, std::string("\x01\x00\x00", 3)),
        Want::kOk);
  const int fd = TcpConnect(address);
  if (fd < 0) {
    ++g_cases;
    ++g_failures;
    std::printf("FAIL tcp/cannot connect to %s\n", address.c_str());
    return;
  }
  const int64_t step = 0x7ec1000;
  Check("tcp/RecvTensor with an empty key", TcpRecv(fd, 1, step, ""), Want::kWorkerError, kInvalidArgument);
  Check("tcp/RecvTensor of a key another task sends",
        TcpRecv(fd, 2, step, "/job:worker/replica:0/task:0/device:CPU:0;0;" + g_device + ";x;0:0"),
        Want::kWorkerError, kInvalidArgument, "does not send");
  Check("tcp/RecvTensor of a 64 KiB key without ';'", TcpRecv(fd, 3, step, std::string(64 << 10, 'k')),
        Want::kWorkerError, kInvalidArgument);
  // A cancel for a call that never was, then a ping: the pong comes, the
  // connection stays.
  Outcome pong;
  char prefix[16];
  if (TcpSend(fd, TcpPrefix(kTcpCancel, 0, 424242) + TcpPrefix(kTcpPing, 0, 7)) && TcpRead(fd, prefix, 16) &&
      prefix[0] == kTcpPong) {
    pong.kind = Outcome::kOk;
  } else {
    pong.message = "no pong";
  }
  Check("tcp/a cancel of an unknown call, then a ping (pong)", pong, Want::kOk);
  // A call in a step that never runs waits by design; cancelling it and then
  // leaving with another one pending must both be harmless.
  TcpSend(fd, TcpRecvFrame(10, step + 1, LocalKey("x")) + TcpPrefix(kTcpCancel, 0, 10) +
                  TcpRecvFrame(11, step + 2, LocalKey("y")));
  close(fd);
  Outcome left;
  left.kind = Outcome::kOk;
  Check("tcp/a client that leaves with a call pending", left, Want::kOk);
  CleanupGraphRequest c;
  for (int64_t s : {step + 1, step + 2}) {
    c.set_step_id(s);
    Check("tcp/CleanupGraph of that step (OK)", g_client->Envelope("CleanupGraph", c.SerializeAsString()), Want::kOk);
  }
}

int Main(int argc, char** argv) {
  std::string address;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--address") address = argv[i + 1];
    if (flag == "--task") g_task = argv[i + 1];
  }
  if (address.empty() || g_task.empty()) {
    std::fprintf(stderr, "usage: malformed_rpc_client --address HOST:PORT --task /job:ps/replica:0/task:0\n");
    return 64;
  }
  g_device = g_task + "/device:CPU:0";
  Client client(address);
  g_client = &client;
  std::string why;
  if (!StillServing(&why)) {
    std::printf("FAIL the task does not answer GetStatus at the start: %s\n", why.c_str());
    return 2;
  }
  UnparsableRequests();
  RunGraphs(RegisterGraphs());
  RecvTensors();
  OtherCalls();
  TcpTensorTransport();
  std::printf("%d cases, %d failed; the task still answers GetStatus\n", g_cases, g_failures);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
