// Worker (see worker.h).
#include "engine/distributed/worker.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "engine/framework/device_set.h"
#include "engine/graph/graph_constructor.h"
#include "engine/runtime/executor.h"

namespace sluice {
namespace distributed {

// The step manager's view of the worker cache, which the owner sets after
// constructing the Worker (the cache needs the Worker for this task).
class Worker::DeferredCache : public WorkerCache {
 public:
  explicit DeferredCache(std::atomic<WorkerCache*>* target) : target_(target) {}
  WorkerInterface* GetWorker(const std::string& task) override {
    WorkerCache* cache = target_->load();
    return cache != nullptr ? cache->GetWorker(task) : nullptr;
  }

 private:
  std::atomic<WorkerCache*>* target_;
};

void StepStatsToProto(const std::vector<DeviceStepStats>& stats, RunGraphResponse* response) {
  for (const DeviceStepStats& device : stats) {
    DeviceStepStatsProto* d = response->add_step_stats();
    d->set_device(device.device);
    for (const NodeExecStats& n : device.nodes) {
      NodeExecStatsProto* p = d->add_node();
      p->set_node_name(n.node_name);
      p->set_op(n.op);
      p->set_frame_id(n.frame_id);
      p->set_iter_id(n.iter_id);
      p->set_start_ns(n.start_ns);
      p->set_end_ns(n.end_ns);
      p->set_thread_id(n.thread_id);
    }
  }
}

void StepStatsFromProto(const RunGraphResponse& response, std::vector<DeviceStepStats>* stats) {
  for (const DeviceStepStatsProto& d : response.step_stats()) {
    DeviceStepStats device;
    device.device = d.device();
    for (const NodeExecStatsProto& p : d.node()) {
      NodeExecStats n;
      n.node_name = p.node_name();
      n.op = p.op();
      n.frame_id = p.frame_id();
      n.iter_id = p.iter_id();
      n.start_ns = p.start_ns();
      n.end_ns = p.end_ns();
      n.thread_id = p.thread_id();
      device.nodes.push_back(std::move(n));
    }
    stats->push_back(std::move(device));
  }
}

Worker::Worker(WorkerOptions options)
    : options_(std::move(options)),
      device_mgr_(options_.device_mgr != nullptr ? options_.device_mgr : DeviceMgr::Local()),
      pool_(std::make_unique<Eigen::ThreadPool>(std::max(1, options_.inter_op_threads))),
      deferred_cache_(std::make_unique<DeferredCache>(&workers_)),
      steps_(std::make_unique<StepRendezvousMgr>(options_.task, deferred_cache_.get())) {}

Worker::~Worker() {
  steps_->CleanupAll(absl::CancelledError(absl::StrCat("worker ", options_.task, " is shutting down")));
  // Steps still running end soon (aborted; their remote calls cancelled), some
  // on gRPC's threads: wait for them before the pool and the rest go.
  {
    absl::MutexLock lock(&running_mu_);
    running_mu_.AwaitWithTimeout(absl::Condition(
                                     +[](int* n) { return *n == 0; }, &running_steps_),
                                 absl::Seconds(30));
  }
  pool_.reset();
}

void Worker::set_worker_cache(WorkerCache* workers) { workers_.store(workers); }

void Worker::Log(const std::string& line) {
  if (options_.log == nullptr) return;
  absl::MutexLock lock(&log_mu_);
  *options_.log << line << "\n";
  options_.log->flush();
}

int Worker::num_registered_graphs() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(graphs_.size());
}

void Worker::GetStatusAsync(const GetStatusRequest* request, GetStatusResponse* response, StatusCallback done) {
  if (!request->config_hash().empty() && !options_.config_hash.empty() &&
      request->config_hash() != options_.config_hash) {
    const std::string caller = request->caller_task().empty() ? "the caller" : request->caller_task();
    const std::string message =
        absl::StrCat("task ", options_.task, " runs config ", options_.config_hash, " but ", caller, " runs config ",
                     request->config_hash(), ": every task of a cluster must run the same experiment");
    // `request` may be gone once `done` ran (the transport frees its call).
    const std::string caller_task = request->caller_task();
    done(absl::FailedPreconditionError(message));
    if (options_.on_config_mismatch) {
      options_.on_config_mismatch(caller_task, message);
    } else {
      Log(absl::StrCat("error: ", message));
    }
    return;
  }
  response->set_task(options_.task);
  response->set_config_hash(options_.config_hash);
  response->set_incarnation(ProcessIncarnation());
  response->set_peers_ready(peers_ready_.load());
  response->set_replica_ready(replica_ready_.load());
  response->set_stopping(stopping_.load());
  {
    absl::MutexLock lock(&mu_);
    response->set_tensor_address(tensor_address_);
  }
  for (const auto& device : device_mgr_->devices()) {
    DeviceAttributes* d = response->add_device();
    d->set_name(device->name());
    d->set_device_type(device->device_type());
    d->set_incarnation(ProcessIncarnation());
  }
  done(absl::OkStatus());
}

absl::StatusOr<std::shared_ptr<Worker::RegisteredGraph>> Worker::BuildGraph(const RegisterGraphRequest& request) {
  // Nodes by device, in the order given.
  std::map<std::string, GraphDef> by_device;
  for (const NodeDef& node : request.graph().node()) {
    if (node.device().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("RegisterGraph: node '", node.name(), "' has no device"));
    }
    GraphDef& part = by_device[node.device()];
    *part.add_node() = node;
  }
  if (by_device.empty()) return absl::InvalidArgumentError("RegisterGraph: the graph has no nodes");
  std::vector<DevicePartition> partitions;
  for (auto& [device_name, part] : by_device) {
    auto device = device_mgr_->LookupDevice(device_name);
    if (!device.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("RegisterGraph: task ", options_.task, " has no device '",
                                                     device_name, "' (node '", part.node(0).name(), "')"));
    }
    if (request.graph().has_versions()) *part.mutable_versions() = request.graph().versions();
    GraphConstructorOptions construct;
    construct.allow_internal_names = true;
    auto graph = GraphFromGraphDef(part, construct);
    if (!graph.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("RegisterGraph: the partition for ", device_name, " is invalid: ", graph.status().message()));
    }
    for (Node* n : (*graph)->nodes()) n->set_assigned_device(device_name);
    ExecutorParams params;
    params.device = *device;
    Eigen::ThreadPool* pool = pool_.get();
    params.runner = [pool](std::function<void()> fn) { pool->Schedule(std::move(fn)); };
    auto executor = NewLocalExecutor(params, std::move(graph).value());
    if (!executor.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("RegisterGraph: on ", device_name, ": ", executor.status().message()));
    }
    DevicePartition partition;
    partition.device = *device;
    partition.executor = std::move(executor).value();
    partitions.push_back(std::move(partition));
  }
  auto registered = std::make_shared<RegisteredGraph>();
  registered->session_handle = request.session_handle();
  registered->executor = std::make_unique<PartitionedExecutor>(std::move(partitions));
  return registered;
}

void Worker::RegisterGraphAsync(const RegisterGraphRequest* request, RegisterGraphResponse* response,
                                StatusCallback done) {
  auto graph = BuildGraph(*request);
  if (!graph.ok()) {
    done(graph.status());
    return;
  }
  std::string handle;
  {
    absl::MutexLock lock(&mu_);
    // The process's incarnation in the handle: a handle of this task's
    // previous life (a session that registered there and deregisters late,
    // after the task restarted at the same address) never names a graph here.
    handle = absl::StrCat("graph_", absl::Hex(ProcessIncarnation()), "_", next_graph_++);
    graphs_.emplace(handle, std::move(graph).value());
  }
  response->set_graph_handle(handle);
  done(absl::OkStatus());
}

void Worker::DeregisterGraphAsync(const DeregisterGraphRequest* request, DeregisterGraphResponse*,
                                  StatusCallback done) {
  std::shared_ptr<RegisteredGraph> graph;  // destroyed outside the lock
  {
    absl::MutexLock lock(&mu_);
    auto it = graphs_.find(request->graph_handle());
    if (it != graphs_.end()) {
      graph = std::move(it->second);
      graphs_.erase(it);
    }
  }
  // `done` outside the lock: it may call back into this worker.
  if (graph == nullptr) {
    done(absl::NotFoundError(
        absl::StrCat("DeregisterGraph: task ", options_.task, " has no graph '", request->graph_handle(), "'")));
    return;
  }
  done(absl::OkStatus());
}

void Worker::RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response, StatusCallback done,
                           CallCancellation* cancel) {
  if (shut_down_.load()) {
    done(absl::UnavailableError(absl::StrCat("task ", options_.task, " is shutting down")));
    return;
  }
  std::shared_ptr<RegisteredGraph> graph;
  {
    absl::MutexLock lock(&mu_);
    auto it = graphs_.find(request->graph_handle());
    if (it != graphs_.end()) graph = it->second;
  }
  if (graph == nullptr) {
    // Aborted, as a step a peer's loss cut short: the graph was registered
    // (the caller has its handle) and is gone because this task restarted or
    // a CleanupAll (a recovering chief's) removed it; the caller's recovery
    // registers it again.
    done(absl::AbortedError(absl::StrCat("RunGraph: task ", options_.task, " has no graph '", request->graph_handle(),
                                         "' (the task restarted, or a recovering chief cleaned it up)")));
    return;
  }
  auto rendezvous_or = steps_->FindOrCreate(request->step_id());
  if (!rendezvous_or.ok()) {
    done(rendezvous_or.status());
    return;
  }
  std::shared_ptr<WorkerRendezvous> rendezvous = std::move(rendezvous_or).value();
  for (const NamedTensor& send : request->send()) {
    auto value = Tensor::FromProto(send.tensor());
    if (!value.ok()) {
      done(absl::InvalidArgumentError(
          absl::StrCat("RunGraph: the tensor sent as '", send.key(), "' is invalid: ", value.status().message())));
      return;
    }
    absl::Status s = rendezvous->Send(send.key(), *value, false);
    if (!s.ok()) {
      done(s);
      return;
    }
  }
  // A caller that goes away (the chief died, or gave up on the step) aborts
  // the step here too, so nothing waits for it.
  int64_t cancel_token = -1;
  if (cancel != nullptr) {
    const int64_t step_id = request->step_id();
    const std::string caller = request->caller_task().empty() ? "its caller" : request->caller_task();
    cancel_token = cancel->Register([this, step_id, caller] {
      steps_->Cleanup(step_id, absl::CancelledError(absl::StrCat("RunGraph for step ", step_id, " on ", options_.task,
                                                                 " was cancelled: ", caller, " went away")));
    });
  }
  {
    absl::MutexLock lock(&running_mu_);
    ++running_steps_;
  }
  // The step aborted from outside (a peer's CleanupGraph with an error, its
  // caller gone, this worker shutting down) cancels what waits here too: a
  // Dequeue or an accumulator's take would otherwise hold the step forever.
  auto step_cancel = std::make_shared<CancellationManager>();
  const int64_t abort_hook = rendezvous->AddAbortHook([step_cancel] { step_cancel->StartCancel(); });
  Executor::Args args;
  args.step_id = request->step_id();
  args.rendezvous = rendezvous.get();
  args.cancellation_manager = step_cancel.get();
  auto stats = request->collect_step_stats() ? std::make_shared<std::vector<DeviceStepStats>>() : nullptr;
  graph->executor->RunAsync(
      args, stats.get(),
      [this, graph, rendezvous, stats, request, response, cancel, cancel_token, step_cancel, abort_hook,
       step_done = std::move(done)](const absl::Status& s) {
        // Counts this step as over once its caller has been answered.
        auto done = [this, &step_done](const absl::Status& status) {
          step_done(status);
          absl::MutexLock lock(&running_mu_);
          --running_steps_;
        };
        rendezvous->RemoveAbortHook(abort_hook);
        if (cancel != nullptr) cancel->Deregister(cancel_token);
        if (stats != nullptr) StepStatsToProto(*stats, response);
        if (!s.ok()) {
          // A step this task's own session ran is reported by that session.
          if (request->caller_task() != options_.task) {
            // The step id is the session's run id, not a training step: it
            // names the caller instead, which a reader can find.
            Log(absl::StrCat("a step of ", request->caller_task().empty() ? "a caller" : request->caller_task(),
                             " failed on ", options_.task, ": ", s.message()));
          }
          done(s);
          return;
        }
        for (const std::string& key : request->recv_key()) {
          Tensor value;
          bool is_dead = false;
          absl::Status r = rendezvous->Recv(key, &value, &is_dead, absl::ZeroDuration());
          if (!r.ok() && !absl::IsDeadlineExceeded(r)) {
            done(r);  // the step was aborted meanwhile: say so
            return;
          }
          if (!r.ok() || is_dead) {
            done(absl::InvalidArgumentError(absl::StrCat("RunGraph: no value for '", key, "' after the step",
                                                         r.ok() ? " (it is dead)" : "")));
            return;
          }
          NamedTensor* out = response->add_recv();
          out->set_key(key);
          value.AsProtoTensorContent(out->mutable_tensor());
        }
        done(absl::OkStatus());
      });
}

void Worker::RecvTensorAsync(const RecvTensorRequest* request, RecvTensorResult* response, StatusCallback done,
                             CallCancellation* cancel) {
  const std::string& key = request->rendezvous_key();
  const size_t end = key.find(';');
  auto task = TaskOfDevice(key.substr(0, end));
  if (end == std::string::npos || !task.ok() || *task != options_.task) {
    done(absl::InvalidArgumentError(absl::StrCat("RecvTensor: task ", options_.task,
                                                 " does not send the tensor of rendezvous key '", key, "'")));
    return;
  }
  auto rendezvous = steps_->FindOrCreate(request->step_id());
  if (!rendezvous.ok()) {
    done(rendezvous.status());
    return;
  }
  // A caller that gives up (its step aborted, or it went away) aborts the step
  // here too: nothing else would end this wait if the step's cleanup is lost.
  int64_t cancel_token = -1;
  if (cancel != nullptr) {
    const int64_t step_id = request->step_id();
    cancel_token = cancel->Register([this, step_id] {
      steps_->Cleanup(step_id, absl::CancelledError(absl::StrCat("a RecvTensor of step ", step_id, " on ",
                                                                 options_.task, " was cancelled by its caller")));
    });
  }
  (*rendezvous)->RecvLocalAsync(key, [response, cancel, cancel_token, done = std::move(done)](
                                         const absl::Status& s, const Tensor& value, bool is_dead) {
    if (cancel != nullptr) cancel->Deregister(cancel_token);
    if (s.ok()) {
      response->value = value;
      response->is_dead = is_dead;
    }
    done(s);
  });
}

void Worker::CleanupGraphAsync(const CleanupGraphRequest* request, CleanupGraphResponse*, StatusCallback done) {
  steps_->Cleanup(request->step_id(), StatusFromProto(request->abort()));
  done(absl::OkStatus());
}

void Worker::CleanupAllAsync(const CleanupAllRequest* request, CleanupAllResponse*, StatusCallback done) {
  steps_->CleanupAll(absl::CancelledError(absl::StrCat("CleanupAll on ", options_.task)));
  std::vector<std::shared_ptr<RegisteredGraph>> graphs;  // destroyed outside the lock
  {
    absl::MutexLock lock(&mu_);
    for (auto& [handle, graph] : graphs_) graphs.push_back(std::move(graph));
    graphs_.clear();
  }
  std::vector<std::string> containers(request->container().begin(), request->container().end());
  device_mgr_->ClearContainers(containers);
  done(absl::OkStatus());
}

void Worker::ShutdownAsync(const ShutdownRequest* request, ShutdownResponse*, StatusCallback done) {
  const bool first = !shut_down_.exchange(true);
  const std::string reason = request->reason();
  const int exit_code = request->exit_code();
  done(absl::OkStatus());
  if (first && options_.on_shutdown) options_.on_shutdown(reason, exit_code);
}

}  // namespace distributed
}  // namespace sluice
