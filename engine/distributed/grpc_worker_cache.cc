// The cluster's workers by task name (see grpc_worker_cache.h).
#include "engine/distributed/grpc_worker_cache.h"

#include "engine/distributed/grpc_remote_worker.h"
#include "engine/distributed/tcp_tensor_transport.h"

namespace sluice {
namespace distributed {

GrpcWorkerCache::GrpcWorkerCache(const ClusterSpec& cluster, std::string local_task, WorkerInterface* local_worker,
                                 GrpcChannelOptions options)
    : local_task_(std::move(local_task)), local_worker_(local_worker), options_(std::move(options)) {
  for (const ClusterJob& job : cluster.jobs()) {
    for (size_t i = 0; i < job.tasks.size(); ++i) addresses_[TaskName(job.name, static_cast<int>(i))] = job.tasks[i];
  }
}

WorkerInterface* GrpcWorkerCache::GetWorker(const std::string& task) {
  if (!local_task_.empty() && task == local_task_) return local_worker_;
  auto address = addresses_.find(task);
  if (address == addresses_.end()) return nullptr;
  absl::MutexLock lock(&mu_);
  std::unique_ptr<WorkerInterface>& worker = remote_[task];
  if (worker == nullptr) {
    worker = NewGrpcRemoteWorker(task, address->second, options_);
    if (options_.tcp_tensors) worker = NewTcpTensorRemoteWorker(task, std::move(worker));
  }
  return worker.get();
}

}  // namespace distributed
}  // namespace sluice
