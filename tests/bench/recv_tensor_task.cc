// recv_tensor_task: the Sluice processes of tests/bench/recv_tensor_bench
// (issue 15), which starts them and drives them; not meant to be run by hand.
//
//   recv_tensor_task --serve=sluice
//     The serving task "/job:ps/replica:0/task:0": a real Worker (one CPU
//     device, its step rendezvous) behind a GrpcWorkerServer on 127.0.0.1 and
//     behind a TcpTensorServer (the TCP tensor transport, announced in
//     GetStatus as a `train` task does), and a raw TCP server on another
//     loopback port. Prints one line "ports grpc=<port> tcp=<port>
//     sluice_tcp=<port>" and serves until stdin closes.
//     RecvTensor: the key's tensor name is "t<bytes>"; the serving task acts
//     as the producer of that tensor: it Sends a preallocated DT_FLOAT tensor
//     of that many bytes into the step's rendezvous under the key, then
//     serves the call with Worker::RecvTensorAsync (the path a training step
//     takes: the step rendezvous, then the zero-copy response encoding), and
//     cleans the step up once answered. TCP: each request is 8 bytes (a
//     little-endian byte count n); the answer is n bytes of one preallocated
//     buffer (written straight from it).
//   recv_tensor_task --serve=floor_cb | --serve=floor_cq
//     The "gRPC floor": the same request and answer as TCP's, as one unary
//     gRPC call with the worker service's channel arguments (keepalive pings
//     off) and nothing else
//     (no protobuf, no worker; the answer is a slice of one buffer, and the
//     client does not copy it): floor_cb with the callback API (as the worker
//     service and its client use it), floor_cq with completion queues that one
//     server thread and the client's calling thread poll, handling each event
//     inline. Each alone in its process (gRPC 1.51's epoll poller is shared
//     by the whole process, so the callback API's threads would also serve a
//     completion queue's sockets). Prints "ports floor_cb=<port>" (or
//     floor_cq) and serves until stdin closes.
//
//   recv_tensor_task --client [--grpc_port=P] [--tcp_port=Q] [--sluice_tcp_port=T] [--floor_cb_port=R]
//                             [--floor_cq_port=S]
//     The receiving task "/job:worker/replica:0/task:0" (the sides whose
//     ports are given; the driver runs each floor client in its own process,
//     as their servers). Reads commands on
//     stdin, one a line, and answers each with one line on stdout:
//       sluice <bytes> <warmup> <iters>   RecvTensor through NewGrpcRemoteWorker
//                                         (each call a new step id; the tensor is
//                                         copied once into an aligned buffer)
//       sluice_tcp <bytes> <warmup> <iters>
//                                         RecvTensor through NewTcpTensorRemoteWorker
//                                         (the TCP tensor transport at the address
//                                         GetStatus announced; read straight into
//                                         the aligned tensor)
//       tcp <bytes> <warmup> <iters>      one 8-byte request, then <bytes> read
//                                         into one reused 64-byte-aligned buffer
//       floor_cb|floor_cq <bytes> <warmup> <iters>
//                                         the gRPC floor call (the response is
//                                         left in gRPC's buffers; its length is
//                                         checked)
//     -> "result side=<side> bytes=<b> iters=<n> seconds=<total> p50_us=<..> p99_us=<..> us=<t1>,<t2>,..."
//     (seconds: wall time of the <iters> timed calls after <warmup> untimed
//     ones; p50/p99: of the single calls; us: every timed call in
//     microseconds). Errors print "error <message>" and exit 1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "engine/distributed/grpc_options.h"
#include "engine/distributed/grpc_remote_worker.h"
#include "engine/distributed/grpc_worker_service.h"
#include "engine/distributed/tcp_tensor_transport.h"
#include "engine/distributed/worker.h"
#include "engine/distributed/worker_interface.h"
#include "engine/framework/allocator.h"
#include "engine/framework/local_devices.h"
#include "engine/framework/rendezvous.h"
#include "engine/framework/tensor.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/server_callback.h"

namespace sluice {
namespace distributed {
namespace {

constexpr char kServerTask[] = "/job:ps/replica:0/task:0";
constexpr char kClientTask[] = "/job:worker/replica:0/task:0";
// The largest transfer either side accepts (a bad request must not allocate
// the machine away).
constexpr int64_t kMaxBytes = int64_t{1} << 30;

[[noreturn]] void Die(const std::string& message) {
  std::cout << "error " << message << std::endl;
  std::exit(1);
}

// The tensor the serving task produces for `bytes` (DT_FLOAT, bytes / 4
// elements, element i = i), made once per size and shared by every call.
class TensorSource {
 public:
  absl::StatusOr<Tensor> Get(int64_t bytes) {
    if (bytes <= 0 || bytes % 4 != 0 || bytes > kMaxBytes) {
      return absl::InvalidArgumentError(absl::StrCat("bench: no tensor of ", bytes, " bytes"));
    }
    absl::MutexLock lock(&mu_);
    auto it = tensors_.find(bytes);
    if (it != tensors_.end()) return it->second;
    Tensor t(DT_FLOAT, TensorShape({bytes / 4}));
    float* p = t.data<float>();
    for (int64_t i = 0; i < bytes / 4; ++i) p[i] = static_cast<float>(i);
    tensors_.emplace(bytes, t);
    return t;
  }

 private:
  absl::Mutex mu_;
  std::map<int64_t, Tensor> tensors_ ABSL_GUARDED_BY(mu_);
};

// The serving task's WorkerInterface: the real Worker, with the producer's
// Send of the requested tensor in front of RecvTensor and the step's cleanup
// after it (a chief's CleanupGraph, without the RPC).
class ProducingWorker final : public WorkerInterface {
 public:
  explicit ProducingWorker(Worker* worker) : worker_(worker) {}

  void RecvTensorAsync(const RecvTensorRequest* request, RecvTensorResult* response, StatusCallback done,
                       CallCancellation* cancel) override {
    const std::string& key = request->rendezvous_key();
    std::vector<absl::string_view> parts = absl::StrSplit(key, ';');
    int64_t bytes = 0;
    if (parts.size() != 5 || !absl::ConsumePrefix(&parts[3], "t") || !absl::SimpleAtoi(parts[3], &bytes)) {
      done(absl::InvalidArgumentError(absl::StrCat("bench: bad key '", key, "'")));
      return;
    }
    auto tensor = source_.Get(bytes);
    if (!tensor.ok()) {
      done(tensor.status());
      return;
    }
    const int64_t step_id = request->step_id();
    auto rendezvous = worker_->steps()->FindOrCreate(step_id);
    if (!rendezvous.ok()) {
      done(rendezvous.status());
      return;
    }
    absl::Status sent = (*rendezvous)->Send(key, *tensor, /*is_dead=*/false);
    if (!sent.ok()) {
      done(sent);
      return;
    }
    worker_->RecvTensorAsync(
        request, response,
        [this, step_id, done = std::move(done)](const absl::Status& s) {
          done(s);
          worker_->steps()->Cleanup(step_id, absl::OkStatus());
        },
        cancel);
  }

  void GetStatusAsync(const GetStatusRequest* q, GetStatusResponse* r, StatusCallback d) override {
    worker_->GetStatusAsync(q, r, std::move(d));
  }
  void RegisterGraphAsync(const RegisterGraphRequest* q, RegisterGraphResponse* r, StatusCallback d) override {
    worker_->RegisterGraphAsync(q, r, std::move(d));
  }
  void DeregisterGraphAsync(const DeregisterGraphRequest* q, DeregisterGraphResponse* r, StatusCallback d) override {
    worker_->DeregisterGraphAsync(q, r, std::move(d));
  }
  void RunGraphAsync(const RunGraphRequest* q, RunGraphResponse* r, StatusCallback d, CallCancellation* c) override {
    worker_->RunGraphAsync(q, r, std::move(d), c);
  }
  void CleanupGraphAsync(const CleanupGraphRequest* q, CleanupGraphResponse* r, StatusCallback d) override {
    worker_->CleanupGraphAsync(q, r, std::move(d));
  }
  void CleanupAllAsync(const CleanupAllRequest* q, CleanupAllResponse* r, StatusCallback d) override {
    worker_->CleanupAllAsync(q, r, std::move(d));
  }
  void ShutdownAsync(const ShutdownRequest* q, ShutdownResponse* r, StatusCallback d) override {
    worker_->ShutdownAsync(q, r, std::move(d));
  }

 private:
  Worker* const worker_;
  TensorSource source_;
};

// ---- raw TCP ----

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// A 64-byte-aligned buffer that grows (contents not kept) and is touched
// once when it grows, so no transfer pays its page faults.
class AlignedBuffer {
 public:
  ~AlignedBuffer() { std::free(data_); }
  char* Reserve(size_t n) {
    if (n > size_) {
      std::free(data_);
      size_ = (n + 63) / 64 * 64;
      data_ = static_cast<char*>(std::aligned_alloc(64, size_));
      if (data_ == nullptr) Die("out of memory");
      for (size_t i = 0; i < size_; ++i) data_[i] = static_cast<char>(i * 131);
    }
    return data_;
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

void ServeTcpConnection(int fd) {
  SetNoDelay(fd);
  AlignedBuffer buffer;
  uint64_t n = 0;
  while (ReadAll(fd, reinterpret_cast<char*>(&n), sizeof(n))) {
    if (n == 0 || n > static_cast<uint64_t>(kMaxBytes)) break;
    if (!WriteAll(fd, buffer.Reserve(n), n)) break;
  }
  ::close(fd);
}

// Listens on 127.0.0.1 (a free port); returns the socket and sets *port.
int ListenLoopback(int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) Die("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 16) != 0) {
    Die("cannot listen on 127.0.0.1");
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int ConnectLoopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Die(absl::StrCat("cannot connect to 127.0.0.1:", port));
  }
  SetNoDelay(fd);
  return fd;
}

// ---- the gRPC floor: the same gRPC, channel arguments and message sizes, no
// worker service ----
//
// A unary call whose request is 8 bytes (a little-endian byte count n) and
// whose response is n bytes of one static buffer (sent as a slice of it, no
// copy), with nothing else: no method dispatch, no protobuf, no rendezvous,
// and no copy on receipt (the client only checks the length). Served twice:
// with the callback API, as the worker service is, and with a completion queue
// polled by one thread that handles each event inline (TensorFlow's style).

// The bytes of a floor response of n bytes: one buffer per size, made once
// and never freed (responses are static slices of it).
const char* FloorBytes(int64_t n) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* buffers = new std::map<int64_t, char*>;
  absl::MutexLock lock(&mu);
  char*& p = (*buffers)[n];
  if (p == nullptr) {
    p = static_cast<char*>(std::aligned_alloc(64, (static_cast<size_t>(n) + 63) / 64 * 64));
    if (p == nullptr) Die("out of memory");
    std::memset(p, 7, static_cast<size_t>(n));
  }
  return p;
}

// The response for a request body, or false when it is not 8 bytes of a valid n.
bool FloorResponse(const grpc::ByteBuffer& request, grpc::ByteBuffer* response) {
  std::vector<grpc::Slice> slices;
  if (!request.Valid() || request.Length() != 8 || !request.Dump(&slices).ok()) return false;
  char raw[8];
  size_t at = 0;
  for (const grpc::Slice& slice : slices) {
    std::memcpy(raw + at, slice.begin(), slice.size());
    at += slice.size();
  }
  int64_t n;
  std::memcpy(&n, raw, 8);
  if (n <= 0 || n > kMaxBytes) return false;
  grpc::Slice slice(FloorBytes(n), static_cast<size_t>(n), grpc::Slice::STATIC_SLICE);
  *response = grpc::ByteBuffer(&slice, 1);
  return true;
}

class FloorReactor final : public grpc::ServerGenericBidiReactor {
 public:
  FloorReactor() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok || !FloorResponse(request_, &response_)) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad floor request"));
      return;
    }
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer request_, response_;
};

class FloorCallbackService final : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    return new FloorReactor;
  }
};

// One call of the completion-queue server: request it, read, answer, forget.
struct FloorCqCall {
  grpc::GenericServerContext context;
  grpc::GenericServerAsyncReaderWriter stream{&context};
  grpc::ByteBuffer request, response;
  int state = 0;  // 0 requested, 1 reading, 2 answering
};

// Serves `callback`, or (when null) `async` through *cq.
std::unique_ptr<grpc::Server> StartFloorServer(grpc::AsyncGenericService* async,
                                               grpc::CallbackGenericService* callback,
                                               std::unique_ptr<grpc::ServerCompletionQueue>* cq, int* port) {
  grpc::ServerBuilder builder;
  ApplyServerArguments(&builder);
  // No keepalive pings (later arguments win): a completion-queue client polls
  // its connection only during its calls (and in gRPC's 5 s backup poller),
  // so it may acknowledge a ping later than the 2 s keepalive timeout; a full
  // bench run once lost the floor_cq connection mid-run ("Socket closed"),
  // most likely so. The floor measures calls, not liveness.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, INT_MAX);
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  if (callback != nullptr) {
    builder.RegisterCallbackGenericService(callback);
  } else {
    builder.RegisterAsyncGenericService(async);
    *cq = builder.AddCompletionQueue();
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || *port == 0) Die("the floor server cannot listen on 127.0.0.1");
  return server;
}

void RunFloorCq(grpc::AsyncGenericService* service, grpc::ServerCompletionQueue* cq) {
  auto request_next = [&] {
    auto* call = new FloorCqCall;
    service->RequestCall(&call->context, &call->stream, cq, cq, call);
  };
  request_next();
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) {
    auto* call = static_cast<FloorCqCall*>(tag);
    if (call->state == 0) {
      if (!ok) {  // shutting down
        delete call;
        continue;
      }
      request_next();
      call->state = 1;
      call->stream.Read(&call->request, call);
    } else if (call->state == 1) {
      call->state = 2;
      if (ok && FloorResponse(call->request, &call->response)) {
        call->stream.WriteAndFinish(call->response, grpc::WriteOptions(), grpc::Status::OK, call);
      } else {
        call->stream.Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad floor request"), call);
      }
    } else {
      delete call;
    }
  }
}

// Serves until the driver closes our stdin (or exits).
void WaitForStdinEof() {
  std::string line;
  while (std::getline(std::cin, line)) {
  }
}

// The serving task: the worker service and TCP (`kind` "sluice"), or one of
// the floor servers ("floor_cb", "floor_cq"), each alone in its process.
int Serve(const std::string& kind) {
  if (kind == "floor_cb") {
    FloorCallbackService service;
    std::unique_ptr<grpc::ServerCompletionQueue> unused;
    int port = 0;
    std::unique_ptr<grpc::Server> server = StartFloorServer(nullptr, &service, &unused, &port);
    std::cout << "ports floor_cb=" << port << std::endl;
    WaitForStdinEof();
    std::_Exit(0);
  }
  if (kind == "floor_cq") {
    grpc::AsyncGenericService service;
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    int port = 0;
    std::unique_ptr<grpc::Server> server = StartFloorServer(&service, nullptr, &cq, &port);
    std::thread(RunFloorCq, &service, cq.get()).detach();
    std::cout << "ports floor_cq=" << port << std::endl;
    WaitForStdinEof();
    std::_Exit(0);
  }
  if (kind != "sluice") Die(absl::StrCat("unknown server kind '", kind, "'"));
  int tcp_port = 0;
  const int listen_fd = ListenLoopback(&tcp_port);
  std::thread([listen_fd] {
    for (;;) {
      int fd = ::accept(listen_fd, nullptr, nullptr);
      if (fd < 0) {
        if (errno == EINTR) continue;
        return;
      }
      std::thread(ServeTcpConnection, fd).detach();
    }
  }).detach();

  std::unique_ptr<DeviceMgr> devices = NewCpuDeviceMgr(1, 1, kServerTask);
  WorkerOptions options;
  options.task = kServerTask;
  options.device_mgr = devices.get();
  options.inter_op_threads = 1;
  Worker worker(options);
  ProducingWorker producing(&worker);
  GrpcServerOptions server_options;
  server_options.address = "127.0.0.1:0";
  auto server = GrpcWorkerServer::Start(server_options, &producing);
  if (!server.ok()) Die(std::string(server.status().message()));
  auto tensor_server = TcpTensorServer::Start("127.0.0.1", 0, &producing);
  if (!tensor_server.ok()) Die(std::string(tensor_server.status().message()));
  worker.set_tensor_address((*tensor_server)->address());
  std::cout << "ports grpc=" << (*server)->port() << " tcp=" << tcp_port
            << " sluice_tcp=" << (*tensor_server)->port() << std::endl;
  WaitForStdinEof();
  (*server)->Shutdown();
  (*tensor_server)->Shutdown();
  std::_Exit(0);  // the TCP threads are detached; nothing to flush
}

// ---- the client ----

using Clock = std::chrono::steady_clock;

struct Timing {
  double seconds = 0;
  double p50_us = 0;
  double p99_us = 0;
  std::vector<double> us;  // every timed call, in order
};

// Runs `call` warmup + iters times; times the last iters.
template <typename Call>
Timing Measure(int64_t warmup, int64_t iters, Call call) {
  for (int64_t i = 0; i < warmup; ++i) call();
  std::vector<double> us(static_cast<size_t>(iters));
  const Clock::time_point start = Clock::now();
  Clock::time_point last = start;
  for (int64_t i = 0; i < iters; ++i) {
    call();
    const Clock::time_point now = Clock::now();
    us[static_cast<size_t>(i)] = std::chrono::duration<double, std::micro>(now - last).count();
    last = now;
  }
  Timing t;
  t.seconds = std::chrono::duration<double>(last - start).count();
  t.us = us;
  std::sort(us.begin(), us.end());
  auto pct = [&](double q) { return us[std::min(us.size() - 1, static_cast<size_t>(q * us.size()))]; };
  t.p50_us = pct(0.5);
  t.p99_us = pct(0.99);
  return t;
}

// A floor client: one channel with the worker service's client arguments.
class FloorClient {
 public:
  explicit FloorClient(int port)
      : channel_(grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials(),
                                           Arguments())),
        stub_(channel_) {}

  // One call through the callback API (as GrpcRemoteWorker makes them), the
  // caller waiting for its callback.
  void CallbackCall(int64_t bytes) {
    grpc::ClientContext context;
    context.set_wait_for_ready(true);
    grpc::ByteBuffer request = Request(bytes), response;
    grpc::Status status;
    absl::Notification done;
    stub_.UnaryCall(&context, Method(), grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
      status = std::move(s);
      done.Notify();
    });
    done.WaitForNotification();
    Check(status, response, bytes);
  }

  // One call on a completion queue that the caller polls itself.
  void QueueCall(int64_t bytes) {
    grpc::ClientContext context;
    context.set_wait_for_ready(true);
    grpc::ByteBuffer request = Request(bytes), response;
    grpc::Status status;
    auto call = stub_.PrepareUnaryCall(&context, Method(), request, &cq_);
    call->StartCall();
    call->Finish(&response, &status, this);
    void* tag;
    bool ok;
    if (!cq_.Next(&tag, &ok) || tag != this || !ok) Die("the floor call did not complete");
    Check(status, response, bytes);
  }

 private:
  // The worker service's client arguments without keepalive pings (as the
  // floor servers; later arguments win).
  static grpc::ChannelArguments Arguments() {
    grpc::ChannelArguments args = ClientChannelArguments();
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, INT_MAX);
    return args;
  }

  // gRPC keeps a pointer to the method name while a call runs.
  static const std::string& Method() {
    static const auto* method = new std::string("/sluice.bench.Floor/Get");
    return *method;
  }

  static grpc::ByteBuffer Request(int64_t bytes) {
    grpc::Slice slice(&bytes, sizeof(bytes));
    return grpc::ByteBuffer(&slice, 1);
  }
  static void Check(const grpc::Status& status, const grpc::ByteBuffer& response, int64_t bytes) {
    if (!status.ok()) Die(absl::StrCat("floor call failed: ", status.error_message()));
    if (static_cast<int64_t>(response.Length()) != bytes) {
      Die(absl::StrCat("floor call returned ", response.Length(), " bytes, not ", bytes));
    }
  }

  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  grpc::CompletionQueue cq_;
};

// The receiving task; a port <= 0 leaves that side out.
int Client(int grpc_port, int tcp_port, int sluice_tcp_port, int floor_cb_port, int floor_cq_port) {
  std::unique_ptr<WorkerInterface> remote, remote_tcp;
  std::string src_device, dst_device;
  uint64_t incarnation = 0;
  if (grpc_port > 0) {
    remote = NewGrpcRemoteWorker(kServerTask, absl::StrCat("127.0.0.1:", grpc_port), GrpcChannelOptions());
    // As a `train` task's worker cache makes it: gRPC, with RecvTensor over
    // the TCP transport that GetStatus announces.
    remote_tcp = NewTcpTensorRemoteWorker(
        kServerTask, NewGrpcRemoteWorker(kServerTask, absl::StrCat("127.0.0.1:", grpc_port), GrpcChannelOptions()));
    GetStatusRequest status_request;
    status_request.set_caller_task(kClientTask);
    GetStatusResponse status;
    absl::Status s = remote->GetStatus(status_request, &status);
    if (!s.ok()) Die(std::string(s.message()));
    s = remote_tcp->GetStatus(status_request, &status);
    if (!s.ok()) Die(std::string(s.message()));
    if (status.tensor_address().empty()) Die("the serving task announces no TCP tensor transport");
    if (sluice_tcp_port > 0 && status.tensor_address() != absl::StrCat("127.0.0.1:", sluice_tcp_port)) {
      Die(absl::StrCat("the serving task announces ", status.tensor_address(), ", not port ", sluice_tcp_port));
    }
    if (status.device_size() == 0) Die("the serving task has no devices");
    src_device = status.device(0).name();
    incarnation = status.device(0).incarnation();
    dst_device = absl::StrCat(kClientTask, "/device:CPU:0");
  }
  const int tcp_fd = tcp_port > 0 ? ConnectLoopback(tcp_port) : -1;
  AlignedBuffer tcp_buffer;
  std::unique_ptr<FloorClient> floor_cb, floor_cq;
  if (floor_cb_port > 0) floor_cb = std::make_unique<FloorClient>(floor_cb_port);
  if (floor_cq_port > 0) floor_cq = std::make_unique<FloorClient>(floor_cq_port);
  int64_t step_id = 1;

  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string side;
    int64_t bytes = 0, warmup = 0, iters = 0;
    if (!(in >> side >> bytes >> warmup >> iters) || bytes <= 0 || bytes % 4 != 0 || bytes > kMaxBytes ||
        warmup < 0 || iters <= 0) {
      Die(absl::StrCat("bad command '", line, "'"));
    }
    Timing t;
    if (((side == "sluice" || side == "sluice_tcp") && remote == nullptr) || (side == "tcp" && tcp_fd < 0) ||
        (side == "floor_cb" && floor_cb == nullptr) || (side == "floor_cq" && floor_cq == nullptr)) {
      Die(absl::StrCat("this client was started without a port for '", side, "'"));
    }
    if (side == "sluice" || side == "sluice_tcp") {
      WorkerInterface* worker = side == "sluice" ? remote.get() : remote_tcp.get();
      RecvTensorRequest request;
      request.set_rendezvous_key(
          Rendezvous::CreateKey(src_device, incarnation, dst_device, absl::StrCat("t", bytes), 0, 0));
      const int64_t n = bytes / 4;
      t = Measure(warmup, iters, [&] {
        request.set_step_id(step_id++);
        RecvTensorResult result;
        absl::Status s = worker->RecvTensor(request, &result);
        if (!s.ok()) Die(std::string(s.message()));
        // The tensor is the producer's (element i = i), all of it.
        if (result.value.dtype() != DT_FLOAT || result.value.NumElements() != n ||
            result.value.data<float>()[n - 1] != static_cast<float>(n - 1)) {
          Die(absl::StrCat("RecvTensor of ", bytes, " bytes delivered a wrong tensor ",
                           result.value.shape().DebugString()));
        }
      });
    } else if (side == "tcp") {
      char* dst = tcp_buffer.Reserve(static_cast<size_t>(bytes));
      const uint64_t request = static_cast<uint64_t>(bytes);
      t = Measure(warmup, iters, [&] {
        if (!WriteAll(tcp_fd, reinterpret_cast<const char*>(&request), sizeof(request)) ||
            !ReadAll(tcp_fd, dst, static_cast<size_t>(bytes))) {
          Die("the TCP transfer failed");
        }
      });
    } else if (side == "floor_cb") {
      t = Measure(warmup, iters, [&] { floor_cb->CallbackCall(bytes); });
    } else if (side == "floor_cq") {
      t = Measure(warmup, iters, [&] { floor_cq->QueueCall(bytes); });
    } else {
      Die(absl::StrCat("unknown side '", side, "'"));
    }
    std::string us;
    for (double u : t.us) absl::StrAppend(&us, us.empty() ? "" : ",", absl::SixDigits(u));
    std::printf("result side=%s bytes=%lld iters=%lld seconds=%.6f p50_us=%.1f p99_us=%.1f us=%s\n", side.c_str(),
                static_cast<long long>(bytes), static_cast<long long>(iters), t.seconds, t.p50_us, t.p99_us,
                us.c_str());
    std::fflush(stdout);
  }
  if (tcp_fd >= 0) ::close(tcp_fd);
  std::_Exit(0);
}

}  // namespace
}  // namespace distributed
}  // namespace sluice

int main(int argc, char** argv) {
  static const char kUsage[] =
      "--serve=sluice|floor_cb|floor_cq | --client [--grpc_port=P] [--tcp_port=Q] [--sluice_tcp_port=T] "
      "[--floor_cb_port=R] [--floor_cq_port=S]";
  using sluice::distributed::Client;
  using sluice::distributed::Die;
  using sluice::distributed::Serve;
  std::string serve;
  bool client = false;
  int grpc_port = 0, tcp_port = 0, sluice_tcp_port = 0, floor_cb_port = 0, floor_cq_port = 0;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    absl::string_view value = arg;
    if (absl::ConsumePrefix(&value, "--serve=")) {
      serve = std::string(value);
    } else if (arg == "--client") {
      client = true;
    } else if (absl::ConsumePrefix(&value, "--grpc_port=") && absl::SimpleAtoi(value, &grpc_port)) {
    } else if (absl::ConsumePrefix(&value, "--tcp_port=") && absl::SimpleAtoi(value, &tcp_port)) {
    } else if (absl::ConsumePrefix(&value, "--sluice_tcp_port=") && absl::SimpleAtoi(value, &sluice_tcp_port)) {
    } else if (absl::ConsumePrefix(&value, "--floor_cb_port=") && absl::SimpleAtoi(value, &floor_cb_port)) {
    } else if (absl::ConsumePrefix(&value, "--floor_cq_port=") && absl::SimpleAtoi(value, &floor_cq_port)) {
    } else {
      Die(absl::StrCat("unknown argument '", arg, "' (usage: ", kUsage, ")"));
    }
  }
  if (serve.empty() == !client) Die(absl::StrCat("usage: ", kUsage));
  // Every process starts with the CPU allocator's malloc settings, as any
  // Sluice task has them (they keep freed large blocks, gRPC's read buffers
  // among them, instead of trimming and faulting them in again).
  (void)sluice::CpuAllocator();
  if (!serve.empty()) return Serve(serve);
  return Client(grpc_port, tcp_port, sluice_tcp_port, floor_cb_port, floor_cq_port);
}
