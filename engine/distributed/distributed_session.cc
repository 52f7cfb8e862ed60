// DistributedSession and ConnectToCluster (see distributed_session.h).
#include "engine/distributed/distributed_session.h"

#include <map>
#include <ostream>

#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/framework/device_set.h"
#include "engine/graph/graph_constructor.h"
#include "engine/runtime/step_graph.h"

namespace sluice {
namespace distributed {
namespace {

// One task's part of a Run signature.
struct TaskGraph {
  std::string task;
  WorkerInterface* worker = nullptr;
  std::string graph_handle;
};

struct RegisteredStep {
  std::vector<FeedInfo> feeds;
  std::vector<std::string> fetch_keys;
  std::vector<TaskGraph> tasks;
  int num_nodes = 0;
};

// A step's RunGraph calls in flight.
struct StepCalls {
  explicit StepCalls(size_t n) : requests(n), responses(n) {}
  std::vector<RunGraphRequest> requests;
  std::vector<RunGraphResponse> responses;
  absl::Mutex mu;
  size_t pending ABSL_GUARDED_BY(mu) = 0;
  absl::Status first_error ABSL_GUARDED_BY(mu);
  // The first error that is not Cancelled: the cause, when the first error
  // to arrive was only its echo (a partition cancelled by the abort).
  absl::Status first_cause ABSL_GUARDED_BY(mu);
};

class DistributedSession : public Session {
 public:
  explicit DistributedSession(DistributedSessionOptions options) : options_(std::move(options)) {}

  absl::Status Init() {
    if (options_.local_worker == nullptr || options_.workers == nullptr || options_.devices.empty()) {
      return absl::InvalidArgumentError("a distributed session needs the local worker, the workers and the devices");
    }
    std::vector<Device*> devices;
    DeviceMgr* local = options_.local_worker->device_mgr();
    for (const DeviceAttributes& d : options_.devices) {
      auto task = TaskOfDevice(d.name());
      if (!task.ok()) return task.status();
      if (*task == options_.local_worker->task()) {
        auto device = local->LookupDevice(d.name());
        if (!device.ok()) return device.status();
        devices.push_back(*device);
      } else {
        // Stands for a device of another task in placement; runs nothing.
        remote_devices_.push_back(std::make_unique<Device>(d.name(), d.device_type(), CpuAllocator(), 1));
        devices.push_back(remote_devices_.back().get());
      }
      incarnations_.push_back(d.incarnation());
    }
    if (TaskOfDevice(devices[0]->name()).value_or("") != options_.local_worker->task()) {
      return absl::InvalidArgumentError(absl::StrCat("the first device (", devices[0]->name(),
                                                     ") must be one of this task's (", options_.local_worker->task(),
                                                     ")"));
    }
    devices_ = std::make_unique<DeviceSet>(std::move(devices));
    absl::BitGen gen;
    next_step_id_ = absl::Uniform<int64_t>(gen, 1, int64_t{1} << 62);
    return absl::OkStatus();
  }

  ~DistributedSession() override { Close().IgnoreError(); }

  absl::Status Create(const GraphDef& graph) override {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("session is closed");
    if (has_graph_) return absl::FailedPreconditionError("Create called twice; use Extend to add nodes");
    absl::Status s = PlaceLocked(graph);
    if (!s.ok()) return s;
    graph_def_ = graph;
    has_graph_ = true;
    return absl::OkStatus();
  }

  absl::Status Extend(const GraphDef& graph) override {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("session is closed");
    GraphDef combined = ExtendedGraph(graph_def_, graph);
    absl::Status s = PlaceLocked(combined);
    if (!s.ok()) return s;
    graph_def_ = std::move(combined);
    has_graph_ = true;
    return absl::OkStatus();
  }

  absl::Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    if (fetches.empty() && targets.empty()) return absl::InvalidArgumentError("Run needs at least one fetch or target");
    std::vector<std::string> feed_names;
    for (const auto& f : feeds) feed_names.push_back(f.first);
    auto step_or = GetOrRegister(feed_names, fetches, targets);
    if (!step_or.ok()) return step_or.status();
    std::shared_ptr<RegisteredStep> step = std::move(step_or).value();
    for (size_t i = 0; i < feeds.size(); ++i) {
      absl::Status s = CheckFeedValue(feeds[i].first, step->feeds[i], feeds[i].second);
      if (!s.ok()) return s;
    }

    const int64_t step_id = next_step_id_.fetch_add(1);
    StepRendezvousMgr* local_steps = options_.local_worker->steps();
    auto rendezvous_or = local_steps->FindOrCreate(step_id);
    if (!rendezvous_or.ok()) return rendezvous_or.status();
    std::shared_ptr<WorkerRendezvous> rendezvous = std::move(rendezvous_or).value();
    for (size_t i = 0; i < feeds.size(); ++i) {
      absl::Status s = rendezvous->Send(step->feeds[i].key, feeds[i].second, false);
      if (!s.ok()) {
        local_steps->Cleanup(step_id, s);
        return s;
      }
    }

    std::vector<DeviceStepStats> stats;
    absl::Status s = RunOnEveryTask(*step, step_id, options.collect_step_stats ? &stats : nullptr);
    if (s.ok()) s = ReceiveFetches(*step, fetches, rendezvous.get(), outputs);
    CleanupStep(*step, step_id);
    if (!s.ok()) return s;
    FillRunMetadata(std::move(stats), step->num_nodes, metadata);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    std::vector<std::shared_ptr<RegisteredStep>> steps;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::OkStatus();
      closed_ = true;
      for (auto& [signature, step] : steps_) steps.push_back(std::move(step));
      steps_.clear();
    }
    // Best effort: a task that is gone has forgotten its graphs already.
    for (const auto& step : steps) {
      for (const TaskGraph& part : step->tasks) {
        DeregisterGraphRequest request;
        request.set_graph_handle(part.graph_handle);
        DeregisterGraphResponse response;
        part.worker->DeregisterGraph(request, &response).IgnoreError();
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status PlaceLocked(const GraphDef& graph) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto placement = PlaceSessionGraph(graph, *devices_, options_.session.allow_soft_placement, &placement_);
    if (!placement.ok()) return placement.status();
    placement_ = std::move(placement).value();
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<RegisteredStep>> GetOrRegister(const std::vector<std::string>& feeds,
                                                                const std::vector<std::string>& fetches,
                                                                const std::vector<std::string>& targets) {
    const std::string signature =
        absl::StrCat(absl::StrJoin(feeds, ","), "->", absl::StrJoin(fetches, ","), "/", absl::StrJoin(targets, ","));
    GraphDef graph_def;
    absl::flat_hash_map<std::string, int> placement;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::CancelledError("session is closed");
      if (!has_graph_) return absl::FailedPreconditionError("Run called before Create");
      auto it = steps_.find(signature);
      if (it != steps_.end()) return it->second;
      graph_def = graph_def_;
      placement = placement_;
    }
    StepGraphOptions step_options;
    step_options.devices = devices_.get();
    step_options.placement = &placement;
    step_options.enable_cse = options_.session.enable_cse;
    step_options.enable_constant_folding = options_.session.enable_constant_folding;
    step_options.enable_identity_removal = options_.session.enable_identity_removal;
    step_options.fuse_bias_activation = options_.session.fuse_bias_activation;
    step_options.fuse_batch_norm = options_.session.fuse_batch_norm;
    step_options.onednn_kernels = options_.session.onednn_kernels;
    step_options.winograd_kernels = options_.session.winograd_kernels;
    auto built = BuildStepGraph(step_options, graph_def, feeds, fetches, targets);
    if (!built.ok()) return built.status();
    auto step = std::make_shared<RegisteredStep>();
    step->feeds = std::move(built->feeds);
    step->fetch_keys = std::move(built->fetch_keys);
    step->num_nodes = built->num_nodes;

    std::function<bool(const Edge*)> should_cast;
    if (options_.lossy_transfer) {
      should_cast = [](const Edge* e) {
        return TaskOfDevice(e->src->assigned_device()).value_or("") !=
               TaskOfDevice(e->dst->assigned_device()).value_or("");
      };
    }
    std::vector<std::unique_ptr<Graph>> partitions;
    absl::Status s = PartitionStepGraph(*built->graph, *devices_, incarnations_, should_cast, &partitions);
    if (!s.ok()) return s;
    // One graph per task: its devices' partitions together.
    std::map<std::string, GraphDef> by_task;
    for (size_t i = 0; i < partitions.size(); ++i) {
      if (partitions[i] == nullptr) continue;
      const std::string task = TaskOfDevice(devices_->name(static_cast<int>(i))).value_or("");
      GraphDef part;
      partitions[i]->ToGraphDef(&part);
      GraphDef& merged = by_task[task];
      if (part.has_versions()) *merged.mutable_versions() = part.versions();
      for (NodeDef& n : *part.mutable_node()) *merged.add_node() = std::move(n);
    }
    for (auto& [task, graph] : by_task) {
      TaskGraph part;
      part.task = task;
      part.worker = options_.workers->GetWorker(task);
      if (part.worker == nullptr) return absl::InternalError(absl::StrCat("no worker for task ", task));
      RegisterGraphRequest request;
      request.set_session_handle(session_handle_);
      *request.mutable_graph() = std::move(graph);
      RegisterGraphResponse response;
      s = part.worker->RegisterGraph(request, &response);
      if (!s.ok()) return absl::Status(s.code(), absl::StrCat("registering the step's graph on task ", task, ": ", s.message()));
      part.graph_handle = response.graph_handle();
      step->tasks.push_back(std::move(part));
    }
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = steps_.emplace(signature, step);
    return it->second;
  }

  // Runs every task's graph for `step_id`; the first failure aborts the step
  // on every task.
  // `stats`: when not null, every device's records (from every task).
  absl::Status RunOnEveryTask(const RegisteredStep& step, int64_t step_id, std::vector<DeviceStepStats>* stats) {
    const size_t n = step.tasks.size();
    auto calls = std::make_shared<StepCalls>(n);
    absl::Notification all_done;
    {
      absl::MutexLock lock(&calls->mu);
      calls->pending = n;
    }
    if (n == 0) all_done.Notify();
    for (size_t i = 0; i < n; ++i) {
      const TaskGraph& part = step.tasks[i];
      calls->requests[i].set_session_handle(session_handle_);
      calls->requests[i].set_graph_handle(part.graph_handle);
      calls->requests[i].set_step_id(step_id);
      calls->requests[i].set_collect_step_stats(stats != nullptr);
      calls->requests[i].set_caller_task(options_.local_worker->task());
    }
    for (size_t i = 0; i < n; ++i) {
      const TaskGraph& part = step.tasks[i];
      part.worker->RunGraphAsync(
          &calls->requests[i], &calls->responses[i],
          [this, &step, &all_done, calls, step_id, i](const absl::Status& s) {
            absl::Status error;
            if (!s.ok()) {
              absl::MutexLock lock(&calls->mu);
              // Another task's failure names it; this task's own is told
              // as it is (its message names the peer it waited on, if any).
              const absl::Status named =
                  step.tasks[i].task == options_.local_worker->task()
                      ? s
                      : absl::Status(s.code(), absl::StrCat("task ", step.tasks[i].task, ": ", s.message()));
              if (calls->first_error.ok()) {
                calls->first_error = named;
                error = calls->first_error;
              }
              if (calls->first_cause.ok() && !absl::IsCancelled(s)) calls->first_cause = named;
            }
            // Before this call counts as done, so Run is still waiting.
            if (!error.ok()) AbortStep(step, step_id, error);
            bool last = false;
            {
              absl::MutexLock lock(&calls->mu);
              last = --calls->pending == 0;
            }
            if (last) all_done.Notify();
          },
          nullptr);
    }
    all_done.WaitForNotification();
    if (stats != nullptr) {
      for (const RunGraphResponse& response : calls->responses) StepStatsFromProto(response, stats);
    }
    absl::MutexLock lock(&calls->mu);
    return calls->first_cause.ok() ? calls->first_error : calls->first_cause;
  }

  // Fails the step's pending work on every task (asynchronously).
  void AbortStep(const RegisteredStep& step, int64_t step_id, const absl::Status& why) {
    const absl::Status abort(why.code(), absl::StrCat("step aborted because ", why.message()));
    options_.local_worker->steps()->Cleanup(step_id, abort);
    for (const TaskGraph& part : step.tasks) {
      if (part.task == options_.local_worker->task()) continue;
      SendCleanup(part.worker, step_id, abort);
    }
  }

  void CleanupStep(const RegisteredStep& step, int64_t step_id) {
    options_.local_worker->steps()->Cleanup(step_id, absl::OkStatus());
    for (const TaskGraph& part : step.tasks) {
      if (part.task == options_.local_worker->task()) continue;
      SendCleanup(part.worker, step_id, absl::OkStatus());
    }
  }

  static void SendCleanup(WorkerInterface* worker, int64_t step_id, const absl::Status& abort) {
    struct Call {
      CleanupGraphRequest request;
      CleanupGraphResponse response;
    };
    auto call = std::make_shared<Call>();
    call->request.set_step_id(step_id);
    if (!abort.ok()) StatusToProto(abort, call->request.mutable_abort());
    // Not waited for: a task that is gone has nothing left to clean.
    worker->CleanupGraphAsync(&call->request, &call->response, [call](const absl::Status&) {});
  }

  absl::Status ReceiveFetches(const RegisteredStep& step, const std::vector<std::string>& fetches,
                              WorkerRendezvous* rendezvous, std::vector<Tensor>* outputs) {
    outputs->clear();
    for (size_t i = 0; i < fetches.size(); ++i) {
      Tensor value;
      bool is_dead = false;
      // Every task finished the step, so a fetch is there (here or on the task
      // that produced it); the timeout only guards against a lost task.
      absl::Status s = rendezvous->Recv(step.fetch_keys[i], &value, &is_dead, absl::Seconds(60));
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("fetch '", fetches[i], "' produced no value: ", s.message()));
      }
      if (is_dead) {
        return absl::InvalidArgumentError(
            absl::StrCat("fetch '", fetches[i], "' is dead (it lies on an untaken branch of a Switch)"));
      }
      outputs->push_back(std::move(value));
    }
    return absl::OkStatus();
  }

  const DistributedSessionOptions options_;
  const std::string session_handle_ = absl::StrCat("session_", ProcessIncarnation());
  std::vector<std::unique_ptr<Device>> remote_devices_;
  std::unique_ptr<DeviceSet> devices_;
  std::vector<uint64_t> incarnations_;
  std::atomic<int64_t> next_step_id_{1};

  absl::Mutex mu_;
  GraphDef graph_def_ ABSL_GUARDED_BY(mu_);
  bool has_graph_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<std::string, int> placement_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<RegisteredStep>> steps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> NewDistributedSession(DistributedSessionOptions options) {
  auto session = std::make_unique<DistributedSession>(std::move(options));
  absl::Status s = session->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<Session>(std::move(session));
}

absl::StatusOr<std::vector<DeviceAttributes>> ConnectToCluster(WorkerCache* workers,
                                                               const std::vector<std::string>& tasks,
                                                               const std::string& local_task,
                                                               const std::string& config_hash, absl::Duration timeout,
                                                               std::ostream* progress, std::function<bool()> cancelled,
                                                               bool require_peers_ready) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Time next_report = absl::Now() + absl::Seconds(5);
  std::map<std::string, GetStatusResponse> answered;
  absl::Status last_error;
  std::string last_failed;
  while (answered.size() < tasks.size()) {
    for (const std::string& task : tasks) {
      if (answered.count(task) > 0) continue;
      WorkerInterface* worker = workers->GetWorker(task);
      if (worker == nullptr) return absl::InvalidArgumentError(absl::StrCat("no worker for task ", task));
      GetStatusRequest request;
      request.set_caller_task(local_task);
      request.set_config_hash(config_hash);
      GetStatusResponse response;
      absl::Status s = worker->GetStatus(request, &response);
      if (s.ok() && !config_hash.empty() && !response.config_hash().empty() && response.config_hash() != config_hash) {
        s = absl::FailedPreconditionError(absl::StrCat("task ", task, " runs config ", response.config_hash(),
                                                       " but this task (", local_task, ") runs config ", config_hash,
                                                       ": every task of a cluster must run the same experiment"));
      }
      if (absl::IsFailedPrecondition(s)) return s;
      if (s.ok() && require_peers_ready && task != local_task && !response.peers_ready()) {
        s = absl::UnavailableError(absl::StrCat("task ", task, " has not reached every other task yet"));
      }
      if (s.ok()) {
        answered[task] = std::move(response);
      } else {
        last_error = s;
        last_failed = task;
      }
    }
    if (answered.size() == tasks.size()) break;
    if (cancelled && cancelled()) return absl::CancelledError("stopped while waiting for the other tasks");
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::UnavailableError(absl::StrCat("task ", last_failed, " did not answer within ",
                                                 absl::FormatDuration(timeout), ": ", last_error.message()));
    }
    if (progress != nullptr && now >= next_report) {
      std::vector<std::string> waiting;
      for (const std::string& task : tasks) {
        if (answered.count(task) == 0) waiting.push_back(task);
      }
      *progress << "waiting for " << absl::StrJoin(waiting, ", ") << " to start ("
                << (last_failed.empty() ? "" : absl::StrCat(last_failed, ": ")) << last_error.message() << ")\n";
      progress->flush();
      next_report = now + absl::Seconds(10);
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  std::vector<DeviceAttributes> devices;
  auto append = [&devices](const GetStatusResponse& r) {
    for (const DeviceAttributes& d : r.device()) devices.push_back(d);
  };
  if (answered.count(local_task) > 0) append(answered[local_task]);
  for (const std::string& task : tasks) {
    if (task != local_task) append(answered[task]);
  }
  return devices;
}

}  // namespace distributed
}  // namespace sluice
