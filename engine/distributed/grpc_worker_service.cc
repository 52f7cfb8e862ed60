// The gRPC server of the worker service (see grpc_worker_service.h): a
// callback generic service whose reactors call the WorkerInterface.
#include "engine/distributed/grpc_worker_service.h"

#include <atomic>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "engine/distributed/grpc_tensor_coding.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/server_callback.h"

namespace sluice {
namespace distributed {
namespace {

// One method: its typed request and response, and how to call the worker.
// Owned by the call's reactor; used by one call.
class MethodCall {
 public:
  virtual ~MethodCall() = default;
  // False when the bytes are not a valid request.
  virtual bool Parse(absl::Span<const absl::string_view> request) = 0;
  // The answer to a request of `bytes` bytes that did not parse.
  virtual grpc::ByteBuffer ParseError(size_t bytes) const = 0;
  // Calls the worker; `reply` gets the encoded answer, exactly once, on any
  // thread, maybe before Start returns.
  virtual void Start(WorkerInterface* worker, CallCancellation* cancel,
                     std::function<void(grpc::ByteBuffer)> reply) = 0;
};

template <typename Request>
absl::Status UnparsableRequest(absl::string_view method, size_t bytes) {
  return absl::InvalidArgumentError(absl::StrCat(method, ": the request is not a valid ",
                                                 Request::descriptor()->name(), " (", bytes, " bytes)"));
}

// Every method but RecvTensor: the envelope framing.
template <typename Request, typename Response>
class EnvelopeCall final : public MethodCall {
 public:
  using Invoke = void (*)(WorkerInterface*, const Request*, Response*, WorkerInterface::StatusCallback,
                          CallCancellation*);

  EnvelopeCall(absl::string_view method, Invoke invoke) : method_(method), invoke_(invoke) {}

  bool Parse(absl::Span<const absl::string_view> request) override { return ParseFromChunks(request, &request_); }
  grpc::ByteBuffer ParseError(size_t bytes) const override {
    return EncodeErrorResponse(UnparsableRequest<Request>(method_, bytes));
  }
  void Start(WorkerInterface* worker, CallCancellation* cancel,
             std::function<void(grpc::ByteBuffer)> reply) override {
    invoke_(
        worker, &request_, &response_,
        [this, reply = std::move(reply)](const absl::Status& s) {
          reply(s.ok() ? EncodeOkResponse(response_) : EncodeErrorResponse(s));
        },
        cancel);
  }

 private:
  const absl::string_view method_;
  const Invoke invoke_;
  Request request_;
  Response response_;
};

class RecvTensorCall final : public MethodCall {
 public:
  bool Parse(absl::Span<const absl::string_view> request) override { return ParseFromChunks(request, &request_); }
  grpc::ByteBuffer ParseError(size_t bytes) const override {
    return EncodeRecvTensorResponse(UnparsableRequest<RecvTensorRequest>("RecvTensor", bytes), RecvTensorResult());
  }
  void Start(WorkerInterface* worker, CallCancellation* cancel,
             std::function<void(grpc::ByteBuffer)> reply) override {
    worker->RecvTensorAsync(
        &request_, &result_,
        [this, reply = std::move(reply)](const absl::Status& s) { reply(EncodeRecvTensorResponse(s, result_)); },
        cancel);
  }

 private:
  RecvTensorRequest request_;
  RecvTensorResult result_;
};

// The call object for a full method name, or null for an unknown method.
std::unique_ptr<MethodCall> NewMethodCall(absl::string_view full_method) {
  absl::string_view method = full_method;
  if (!absl::ConsumePrefix(&method, kWorkerServicePrefix)) return nullptr;
  using W = WorkerInterface;
  using Done = W::StatusCallback;
  using Cancel = CallCancellation;
  if (method == "GetStatus") {
    return std::make_unique<EnvelopeCall<GetStatusRequest, GetStatusResponse>>(
        "GetStatus", [](W* w, const GetStatusRequest* q, GetStatusResponse* r, Done d, Cancel*) {
          w->GetStatusAsync(q, r, std::move(d));
        });
  }
  if (method == "RegisterGraph") {
    return std::make_unique<EnvelopeCall<RegisterGraphRequest, RegisterGraphResponse>>(
        "RegisterGraph", [](W* w, const RegisterGraphRequest* q, RegisterGraphResponse* r, Done d, Cancel*) {
          w->RegisterGraphAsync(q, r, std::move(d));
        });
  }
  if (method == "DeregisterGraph") {
    return std::make_unique<EnvelopeCall<DeregisterGraphRequest, DeregisterGraphResponse>>(
        "DeregisterGraph", [](W* w, const DeregisterGraphRequest* q, DeregisterGraphResponse* r, Done d, Cancel*) {
          w->DeregisterGraphAsync(q, r, std::move(d));
        });
  }
  if (method == "RunGraph") {
    return std::make_unique<EnvelopeCall<RunGraphRequest, RunGraphResponse>>(
        "RunGraph", [](W* w, const RunGraphRequest* q, RunGraphResponse* r, Done d, Cancel* c) {
          w->RunGraphAsync(q, r, std::move(d), c);
        });
  }
  if (method == "RecvTensor") return std::make_unique<RecvTensorCall>();
  if (method == "CleanupGraph") {
    return std::make_unique<EnvelopeCall<CleanupGraphRequest, CleanupGraphResponse>>(
        "CleanupGraph", [](W* w, const CleanupGraphRequest* q, CleanupGraphResponse* r, Done d, Cancel*) {
          w->CleanupGraphAsync(q, r, std::move(d));
        });
  }
  if (method == "CleanupAll") {
    return std::make_unique<EnvelopeCall<CleanupAllRequest, CleanupAllResponse>>(
        "CleanupAll", [](W* w, const CleanupAllRequest* q, CleanupAllResponse* r, Done d, Cancel*) {
          w->CleanupAllAsync(q, r, std::move(d));
        });
  }
  if (method == "Shutdown") {
    return std::make_unique<EnvelopeCall<ShutdownRequest, ShutdownResponse>>(
        "Shutdown", [](W* w, const ShutdownRequest* q, ShutdownResponse* r, Done d, Cancel*) {
          w->ShutdownAsync(q, r, std::move(d));
        });
  }
  return nullptr;
}

// One call of a known method. It deletes itself once both gRPC is done with
// it (OnDone) and the worker's `done` has run (or the worker was never
// called): the worker may answer long after a cancelled call finished.
// Reactions are never blocked: the worker is called asynchronously.
class CallReactor final : public grpc::ServerGenericBidiReactor {
 public:
  CallReactor(WorkerInterface* worker, std::unique_ptr<MethodCall> call) : worker_(worker), call_(std::move(call)) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The client went away (or half-closed) before its request arrived.
      FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "the request did not arrive"));
      Unref();  // the worker is never called
      return;
    }
    std::vector<grpc::Slice> slices;
    std::vector<absl::string_view> chunks;
    const size_t bytes = request_.Length();
    if (!ByteBufferChunks(request_, &slices, &chunks).ok() || !call_->Parse(chunks)) {
      Reply(call_->ParseError(bytes));
      Unref();
      return;
    }
    slices.clear();
    request_.Clear();  // parsed: drop the bytes
    // After Start, `this` may be gone as soon as `reply` ran and OnDone came.
    call_->Start(worker_, &cancel_, [this](grpc::ByteBuffer response) {
      Reply(std::move(response));
      Unref();
    });
  }

  void OnCancel() override {
    // OnDone cannot run before OnCancel returns, so `this` is alive here. The
    // reference held meanwhile also orders this thread's writes (the
    // cancellation's hooks) before the delete through refs_ itself, not only
    // through gRPC's own sequencing of OnCancel and OnDone, which ThreadSanitizer
    // cannot see (it reported the hooks' destruction as a race).
    refs_.fetch_add(1, std::memory_order_relaxed);
    FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled"));
    // Lets a pending RunGraph or RecvTensor give up.
    cancel_.StartCancel();
    Unref();
  }

  void OnDone() override { Unref(); }

 private:
  // Answers with `response` unless the call already finished (cancelled).
  void Reply(grpc::ByteBuffer response) {
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return;
      finished_ = true;
    }
    response_ = std::move(response);
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }

  void FinishOnce(grpc::Status status) {
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return;
      finished_ = true;
    }
    Finish(std::move(status));
  }

  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  WorkerInterface* const worker_;
  const std::unique_ptr<MethodCall> call_;
  CallCancellation cancel_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;  // written once, by the Reply that wins
  absl::Mutex mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  // OnDone, and the worker's `done` (or the path that never calls it).
  std::atomic<int> refs_{2};
};

// Answers a call at once with `status` (an unknown method).
class RejectReactor final : public grpc::ServerGenericBidiReactor {
 public:
  explicit RejectReactor(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

class GrpcWorkerServer::Service final : public grpc::CallbackGenericService {
 public:
  explicit Service(WorkerInterface* worker) : worker_(worker) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    std::unique_ptr<MethodCall> call = NewMethodCall(context->method());
    if (call == nullptr) {
      return new RejectReactor(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                            absl::StrCat("the worker service has no method ", context->method())));
    }
    return new CallReactor(worker_, std::move(call));
  }

 private:
  WorkerInterface* const worker_;
};

absl::StatusOr<std::unique_ptr<GrpcWorkerServer>> GrpcWorkerServer::Start(const GrpcServerOptions& options,
                                                                         WorkerInterface* worker) {
  if (options.address.empty()) return absl::InvalidArgumentError("the worker service needs an address to listen on");
  auto credentials = MakeServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  std::unique_ptr<GrpcWorkerServer> server(
      new GrpcWorkerServer(std::make_unique<Service>(worker), options.shutdown_grace));
  grpc::ServerBuilder builder;
  ApplyServerArguments(&builder);
  int port = 0;
  builder.AddListeningPort(options.address, *credentials, &port);
  builder.RegisterCallbackGenericService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("the worker service cannot listen on '", options.address,
                                               "' (in use, or not an address of this host)"));
  }
  server->port_ = port;
  return server;
}

GrpcWorkerServer::GrpcWorkerServer(std::unique_ptr<Service> service, absl::Duration shutdown_grace)
    : service_(std::move(service)), shutdown_grace_(shutdown_grace) {}

GrpcWorkerServer::~GrpcWorkerServer() {
  Shutdown();
  server_.reset();
  service_.reset();
}

void GrpcWorkerServer::Shutdown() {
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now() + shutdown_grace_));
}

}  // namespace distributed
}  // namespace sluice
