// GrpcWorkerServer: serves a WorkerInterface (this task's worker) over gRPC,
// as the methods "/sluice.distributed.WorkerService/<Method>" with the bodies
// grpc_tensor_coding.h describes.
//
// It uses gRPC's callback API with a generic service (we control the bytes:
// RecvTensor's tensor goes out as a slice of its own buffer) and never blocks
// a gRPC thread: each call is one reactor that reads the request, calls the
// worker's async method and answers from the worker's `done`. A request that
// does not parse is answered with the worker-error framing (InvalidArgument);
// an unknown method is UNIMPLEMENTED. When the client cancels (or the server
// shuts down), the call's CallCancellation fires, so a pending RunGraph or
// RecvTensor in the worker can give up; a worker `done` that comes after that
// is harmless. No server-side deadlines: the client sets them.
//
// Ownership: the server does not own `worker`, which must outlive the server
// and every `done` of the calls the server made on it.
// Thread safety: port() and Shutdown() may be called from any thread, but not
// from inside a worker's `done` nor any other gRPC callback (Shutdown waits
// for the calls in flight).
#ifndef SLUICE_ENGINE_DISTRIBUTED_GRPC_WORKER_SERVICE_H_
#define SLUICE_ENGINE_DISTRIBUTED_GRPC_WORKER_SERVICE_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/distributed/grpc_options.h"
#include "engine/distributed/worker_interface.h"
#include "grpcpp/server.h"

namespace sluice {
namespace distributed {

struct GrpcServerOptions {
  // "host:port"; port 0 picks a free one (see port()).
  std::string address = "127.0.0.1:0";
  TlsOptions tls;
  // How long Shutdown lets calls in flight finish before cancelling them.
  absl::Duration shutdown_grace = absl::Seconds(1);
};

class GrpcWorkerServer {
 public:
  // Listens on options.address and serves `worker`. InvalidArgument for bad
  // TLS options; Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<GrpcWorkerServer>> Start(const GrpcServerOptions& options,
                                                                WorkerInterface* worker);
  // Shuts down (if not yet done).
  ~GrpcWorkerServer();

  GrpcWorkerServer(const GrpcWorkerServer&) = delete;
  GrpcWorkerServer& operator=(const GrpcWorkerServer&) = delete;

  // The port it listens on.
  int port() const { return port_; }

  // Stops accepting calls, lets calls in flight finish for shutdown_grace,
  // then cancels the rest and returns once every call is done. Idempotent.
  void Shutdown();

 private:
  class Service;

  // Defined in the .cc, where Service is complete.
  GrpcWorkerServer(std::unique_ptr<Service> service, absl::Duration shutdown_grace);

  std::unique_ptr<Service> service_;  // outlives server_
  std::unique_ptr<grpc::Server> server_;
  const absl::Duration shutdown_grace_;
  int port_ = 0;
  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_GRPC_WORKER_SERVICE_H_
