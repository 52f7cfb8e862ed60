// The gRPC client of the worker service (see grpc_remote_worker.h).
#include "engine/distributed/grpc_remote_worker.h"

#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/distributed/grpc_tensor_coding.h"
#include "engine/platform/logging.h"
#include "engine/platform/tsan_annotations.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"

namespace sluice {
namespace distributed {
namespace {

// Decodes a response body: returns the decoding status and sets the worker's.
using Decoder = std::function<absl::Status(const grpc::ByteBuffer& body, absl::Status* worker_status)>;

// The full method names, alive for the whole process (gRPC is given a
// reference to one when a call starts).
const std::string& MethodPath(absl::string_view method) {
  static const auto* paths = [] {
    auto* m = new std::vector<std::pair<std::string, std::string>>;
    for (const char* name : {"GetStatus", "RegisterGraph", "DeregisterGraph", "RunGraph", "RecvTensor",
                             "CleanupGraph", "CleanupAll", "Shutdown"}) {
      m->emplace_back(name, absl::StrCat(kWorkerServicePrefix, name));
    }
    return m;
  }();
  for (const auto& [name, path] : *paths) {
    if (name == method) return path;
  }
  LOG(FATAL) << "no worker service method " << method;  // our own table: a bug
  return paths->front().second;
}

// What every call of one remote worker shares; calls in flight keep it alive.
struct Target {
  std::string task;
  std::string address;
  absl::Status init_error;  // bad TLS options: every call fails with it
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<grpc::GenericStub> stub;
};

// One call in flight: what gRPC borrows until the call completes.
struct CallState {
  std::shared_ptr<const Target> target;
  grpc::ClientContext context;
  grpc::ByteBuffer request;
  grpc::ByteBuffer response;
  CallCancellation* cancel = nullptr;
  int64_t cancel_token = -1;
};

class GrpcRemoteWorker final : public WorkerInterface {
 public:
  GrpcRemoteWorker(std::string task, std::string address, const GrpcChannelOptions& options)
      : options_(options) {
    auto target = std::make_shared<Target>();
    target->task = std::move(task);
    target->address = std::move(address);
    auto credentials = MakeChannelCredentials(options.tls);
    if (credentials.ok()) {
      target->channel = grpc::CreateCustomChannel(target->address, *credentials, ClientChannelArguments());
      target->stub = std::make_unique<grpc::GenericStub>(target->channel);
    } else {
      target->init_error = credentials.status();
    }
    target_ = std::move(target);
  }

  void GetStatusAsync(const GetStatusRequest* request, GetStatusResponse* response, StatusCallback done) override {
    Envelope("GetStatus", *request, response, options_.get_status_timeout, nullptr, std::move(done));
  }
  void RegisterGraphAsync(const RegisterGraphRequest* request, RegisterGraphResponse* response,
                          StatusCallback done) override {
    Envelope("RegisterGraph", *request, response, options_.call_timeout, nullptr, std::move(done));
  }
  void DeregisterGraphAsync(const DeregisterGraphRequest* request, DeregisterGraphResponse* response,
                            StatusCallback done) override {
    Envelope("DeregisterGraph", *request, response, options_.call_timeout, nullptr, std::move(done));
  }
  void RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response, StatusCallback done,
                     CallCancellation* cancel) override {
    Envelope("RunGraph", *request, response, absl::InfiniteDuration(), cancel, std::move(done));
  }
  void RecvTensorAsync(const RecvTensorRequest* request, RecvTensorResult* response, StatusCallback done,
                       CallCancellation* cancel) override {
    Start(
        "RecvTensor", *request, absl::InfiniteDuration(), cancel,
        [response](const grpc::ByteBuffer& body, absl::Status* worker_status) {
          return DecodeRecvTensorResponse(body, worker_status, response);
        },
        std::move(done));
  }
  void CleanupGraphAsync(const CleanupGraphRequest* request, CleanupGraphResponse* response,
                         StatusCallback done) override {
    Envelope("CleanupGraph", *request, response, options_.call_timeout, nullptr, std::move(done));
  }
  void CleanupAllAsync(const CleanupAllRequest* request, CleanupAllResponse* response,
                       StatusCallback done) override {
    Envelope("CleanupAll", *request, response, options_.call_timeout, nullptr, std::move(done));
  }
  void ShutdownAsync(const ShutdownRequest* request, ShutdownResponse* response, StatusCallback done) override {
    Envelope("Shutdown", *request, response, options_.call_timeout, nullptr, std::move(done));
  }

 private:
  void Envelope(const char* method, const google::protobuf::MessageLite& request,
                google::protobuf::MessageLite* response, absl::Duration timeout, CallCancellation* cancel,
                StatusCallback done) {
    Start(
        method, request, timeout, cancel,
        [response](const grpc::ByteBuffer& body, absl::Status* worker_status) {
          return DecodeResponse(body, worker_status, response);
        },
        std::move(done));
  }

  void Start(const char* method, const google::protobuf::MessageLite& request, absl::Duration timeout,
             CallCancellation* cancel, Decoder decode, StatusCallback done) {
    if (!target_->init_error.ok()) {
      done(absl::Status(target_->init_error.code(), absl::StrCat(method, " from ", target_->task, " (",
                                                                 target_->address, ") failed: ",
                                                                 target_->init_error.message())));
      return;
    }
    auto call = std::make_shared<CallState>();
    call->target = target_;
    call->request = SerializeToByteBuffer(request);
    if (timeout != absl::InfiniteDuration()) call->context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    // No call waits for a channel to become ready: a call to a task that is
    // gone fails at once (Unavailable), so a step never waits on a dead peer.
    // Channels are connected before the first step: every task has reached
    // every other with GetStatus (ConnectToCluster, GetStatusResponse.peers_ready).
    if (cancel != nullptr) {
      // TryCancel before the call starts cancels it as soon as it starts.
      call->cancel = cancel;
      call->cancel_token = cancel->Register([call] { call->context.TryCancel(); });
    }
    // gRPC (uninstrumented) orders this start before the completion below:
    // say so to ThreadSanitizer, and do not record the writes of its
    // header-only layer here, which its thread reads (no-ops outside tsan).
    TsanRelease(call.get());
    TsanIgnoreWritesInScope ignore_grpc_writes;
    target_->stub->UnaryCall(
        &call->context, MethodPath(method), grpc::StubOptions(), &call->request, &call->response,
        [call, method, decode = std::move(decode), done = std::move(done)](grpc::Status status) {
          TsanAcquire(call.get());
          // The hook holds `call`: drop it first.
          if (call->cancel != nullptr) call->cancel->Deregister(call->cancel_token);
          const Target& t = *call->target;
          if (status.error_code() == grpc::StatusCode::CANCELLED &&
              (call->cancel == nullptr || !call->cancel->cancelled())) {
            // Nobody here asked: the transport dropped the call (a connection
            // closed by keepalive, a peer gone). That is worth a retry.
            done(absl::UnavailableError(absl::StrCat(method, " from ", t.task, " (", t.address,
                                                     ") failed: the connection dropped the call (",
                                                     status.error_message(), ")")));
            return;
          }
          if (!status.ok()) {
            const std::string& why = status.error_message();
            done(absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                              absl::StrCat(method, " from ", t.task, " (", t.address, ") failed: ",
                                           why.empty() ? "(no message)" : why)));
            return;
          }
          absl::Status worker_status;
          absl::Status decoded = decode(call->response, &worker_status);
          if (!decoded.ok()) {
            done(absl::Status(decoded.code(), absl::StrCat(method, " from ", t.task, " (", t.address,
                                                           "): malformed response: ", decoded.message())));
            return;
          }
          done(worker_status);
        });
  }

  const GrpcChannelOptions options_;
  std::shared_ptr<const Target> target_;
};

}  // namespace

std::unique_ptr<WorkerInterface> NewGrpcRemoteWorker(std::string task_name, std::string address,
                                                     const GrpcChannelOptions& options) {
  return std::make_unique<GrpcRemoteWorker>(std::move(task_name), std::move(address), options);
}

}  // namespace distributed
}  // namespace sluice
