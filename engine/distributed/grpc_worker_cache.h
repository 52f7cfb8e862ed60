// GrpcWorkerCache: the workers of a cluster as this task sees them. The local
// task is the in-process worker (no gRPC, no copies); every other task of the
// ClusterSpec is a gRPC remote worker (grpc_remote_worker.h), made on first
// use and kept for the life of the cache; a task the cluster does not have is
// null.
//
// Task names are TaskName(job, index): "/job:<job>/replica:0/task:<index>".
//
// Ownership: the cache does not own `local_worker`, which must outlive it; it
// owns the remote workers it hands out.
// Thread safety: GetWorker may be called concurrently.
#ifndef SLUICE_ENGINE_DISTRIBUTED_GRPC_WORKER_CACHE_H_
#define SLUICE_ENGINE_DISTRIBUTED_GRPC_WORKER_CACHE_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "engine/distributed/cluster_spec.h"
#include "engine/distributed/grpc_options.h"
#include "engine/distributed/worker_interface.h"

namespace sluice {
namespace distributed {

class GrpcWorkerCache final : public WorkerCache {
 public:
  // `local_task` may be empty (a client that is no task of the cluster), and
  // `local_worker` null then.
  GrpcWorkerCache(const ClusterSpec& cluster, std::string local_task, WorkerInterface* local_worker,
                  GrpcChannelOptions options);

  WorkerInterface* GetWorker(const std::string& task) override;

 private:
  const std::string local_task_;
  WorkerInterface* const local_worker_;
  const GrpcChannelOptions options_;
  // Task name -> "host:port", for every task of the cluster.
  absl::flat_hash_map<std::string, std::string> addresses_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<WorkerInterface>> remote_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_GRPC_WORKER_CACHE_H_
