// NewGrpcRemoteWorker: the WorkerInterface of another task, over gRPC (the
// client side of grpc_worker_service.h), with gRPC's callback API: no thread
// waits on a call.
//
// Deadlines: GetStatus has options.get_status_timeout, RunGraph and RecvTensor
// none (they wait by design; cancel them with their CallCancellation), every
// other method options.call_timeout. Calls fail fast when the task is
// unreachable (no wait-for-ready): a caller that waits for a task to come up
// polls GetStatus.
//
// Errors: the worker's own errors arrive with their code and message
// unchanged. A transport failure keeps gRPC's code (the same numbers as
// absl's: UNAVAILABLE -> Unavailable, CANCELLED -> Cancelled...) and names the
// method, the task and the address: "RecvTensor from
// /job:ps/replica:0/task:0 (127.0.0.1:2222) failed: Socket closed". A
// malformed response body keeps the decoder's code (DataLoss or
// InvalidArgument) under the same prefix. Bad TLS options (a missing file)
// make every call fail with that InvalidArgument.
//
// `done` runs on a gRPC thread (or on the caller's, for an early failure): it
// should hand long work to another thread.
//
// Ownership: the caller owns the worker; calls in flight keep what they need
// alive, so the worker may be destroyed while calls are pending (their `done`
// still runs).
// Thread safety: safe for concurrent calls.
#ifndef SLUICE_ENGINE_DISTRIBUTED_GRPC_REMOTE_WORKER_H_
#define SLUICE_ENGINE_DISTRIBUTED_GRPC_REMOTE_WORKER_H_

#include <memory>
#include <string>

#include "engine/distributed/grpc_options.h"
#include "engine/distributed/worker_interface.h"

namespace sluice {
namespace distributed {

// `task_name` ("/job:ps/replica:0/task:0") is for messages; `address` is the
// "host:port" the task serves on.
std::unique_ptr<WorkerInterface> NewGrpcRemoteWorker(std::string task_name, std::string address,
                                                     const GrpcChannelOptions& options);

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_GRPC_REMOTE_WORKER_H_
