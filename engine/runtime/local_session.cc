// LocalSession: a Session running on this process's devices. With one device
// every step runs as one executor; with several, the graph is placed once per
// Create/Extend (engine/graph/placer.h; earlier nodes keep their devices, so
// every Run signature sees a variable on the same device), and each Run
// signature's pruned graph is cut into one partition per device joined by
// Send/Recv pairs (engine/graph/partition.h), run by a PartitionedExecutor.
#include <atomic>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "engine/framework/device.h"
#include "engine/framework/device_set.h"
#include "engine/framework/resource_mgr.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/optimizer_cse.h"
#include "engine/graph/partition.h"
#include "engine/graph/placer.h"
#include "engine/graph/subgraph.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/local_rendezvous.h"
#include "engine/runtime/partitioned_executor.h"
#include "engine/runtime/session.h"
#include "engine/runtime/step_graph.h"

namespace sluice {
namespace {

struct ExecutorAndKeys {
  // One device: `executor`; several: `partitioned`.
  std::unique_ptr<Executor> executor;
  std::unique_ptr<PartitionedExecutor> partitioned;
  std::vector<FeedInfo> feeds;
  std::vector<std::string> fetch_keys;
  int num_nodes = 0;
};

class LocalSession : public Session {
 public:
  explicit LocalSession(const SessionOptions& options)
      : options_(options),
        device_mgr_(options.device_mgr != nullptr ? options.device_mgr : DeviceMgr::Local()),
        device_(device_mgr_->HostCpu()),
        devices_(DeviceSetOf(*device_mgr_)) {
    if (options.ops_on_intra_op_pool) {
      shared_pool_ = device_->intra_op_pool();
    } else {
      pool_ = std::make_unique<Eigen::ThreadPool>(options.inter_op_threads > 0 ? options.inter_op_threads
                                                                               : NumSchedulableCpus());
    }
  }

  ~LocalSession() override {
    // Wait for steps still running (Run callers hold none of our locks): join
    // our own pool, or wait for what we queued on the device's.
    pool_.reset();
    absl::MutexLock lock(&queued_->mu);
    queued_->mu.Await(absl::Condition(
        +[](QueuedClosures* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu) { return q->count == 0; }, queued_.get()));
  }

  absl::Status Create(const GraphDef& graph) override {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("session is closed");
    if (has_graph_) return absl::FailedPreconditionError("Create called twice; use Extend to add nodes");
    absl::Status s = ValidateLocked(graph);
    if (!s.ok()) return s;
    graph_def_ = graph;
    has_graph_ = true;
    executors_.clear();
    return absl::OkStatus();
  }

  absl::Status Extend(const GraphDef& graph) override {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("session is closed");
    GraphDef combined = ExtendedGraph(graph_def_, graph);
    absl::Status s = ValidateLocked(combined);
    if (!s.ok()) return s;
    graph_def_ = std::move(combined);
    has_graph_ = true;
    executors_.clear();
    return absl::OkStatus();
  }

  absl::Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    if (fetches.empty() && targets.empty()) {
      return absl::InvalidArgumentError("Run needs at least one fetch or target");
    }
    std::vector<std::string> feed_names;
    for (const auto& f : feeds) feed_names.push_back(f.first);
    auto exec_or = GetOrCreateExecutor(feed_names, fetches, targets);
    if (!exec_or.ok()) return exec_or.status();
    std::shared_ptr<ExecutorAndKeys> exec = std::move(exec_or).value();

    LocalRendezvous rendezvous;
    for (size_t i = 0; i < feeds.size(); ++i) {
      const FeedInfo& info = exec->feeds[i];
      const Tensor& value = feeds[i].second;
      absl::Status s = CheckFeedValue(feeds[i].first, info, value);
      if (s.ok()) s = rendezvous.Send(info.key, value, false);
      if (!s.ok()) return s;
    }

    StepStatsCollector stats;
    std::vector<DeviceStepStats> device_stats;
    Executor::Args args;
    args.step_id = next_step_id_.fetch_add(1);
    args.rendezvous = &rendezvous;
    args.stats_include_device_time = options.collect_step_stats && options.step_stats_device_time;
    absl::Status s;
    if (exec->partitioned != nullptr) {
      s = exec->partitioned->Run(args, options.collect_step_stats ? &device_stats : nullptr);
    } else {
      args.stats_collector = options.collect_step_stats ? &stats : nullptr;
      s = exec->executor->Run(args);
      if (options.collect_step_stats) device_stats.push_back({device_->name(), stats.Take()});
    }
    if (!s.ok()) return s;

    outputs->clear();
    for (size_t i = 0; i < fetches.size(); ++i) {
      Tensor value;
      bool is_dead = false;
      s = rendezvous.Recv(exec->fetch_keys[i], &value, &is_dead, absl::ZeroDuration());
      if (!s.ok()) return absl::InternalError(absl::StrCat("fetch '", fetches[i], "' produced no value: ", s.message()));
      if (is_dead) {
        return absl::InvalidArgumentError(absl::StrCat("fetch '", fetches[i],
                                                       "' is dead (it lies on an untaken branch of a Switch)"));
      }
      outputs->push_back(std::move(value));
    }
    FillRunMetadata(std::move(device_stats), exec->num_nodes, metadata);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    executors_.clear();
    return absl::OkStatus();
  }

 private:
  bool MultiDevice() const { return devices_.num_devices() > 1; }

  // Validates `graph` (the whole graph after Create or Extend) and, with
  // several devices, places it: nodes placed before keep their device.
  absl::Status ValidateLocked(const GraphDef& graph) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!MultiDevice()) return GraphFromGraphDef(graph).status();
    auto placement = PlaceSessionGraph(graph, devices_, options_.allow_soft_placement, &placement_);
    if (!placement.ok()) return placement.status();
    placement_ = std::move(placement).value();
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<ExecutorAndKeys>> GetOrCreateExecutor(const std::vector<std::string>& feeds,
                                                                       const std::vector<std::string>& fetches,
                                                                       const std::vector<std::string>& targets) {
    std::string signature =
        absl::StrCat(absl::StrJoin(feeds, ","), "->", absl::StrJoin(fetches, ","), "/", absl::StrJoin(targets, ","));
    GraphDef graph_def;
    absl::flat_hash_map<std::string, int> placement;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::CancelledError("session is closed");
      if (!has_graph_) return absl::FailedPreconditionError("Run called before Create");
      auto it = executors_.find(signature);
      if (it != executors_.end()) return it->second;
      graph_def = graph_def_;
      if (MultiDevice()) placement = placement_;
    }
    StepGraphOptions step_options;
    step_options.devices = &devices_;
    step_options.placement = MultiDevice() ? &placement : nullptr;
    step_options.enable_cse = options_.enable_cse;
    step_options.enable_constant_folding = options_.enable_constant_folding;
    step_options.enable_identity_removal = options_.enable_identity_removal;
    step_options.fuse_bias_activation = options_.fuse_bias_activation;
    step_options.fuse_batch_norm = options_.fuse_batch_norm;
    step_options.onednn_kernels = options_.onednn_kernels;
    step_options.winograd_kernels = options_.winograd_kernels;
    auto step = BuildStepGraph(step_options, graph_def, feeds, fetches, targets);
    if (!step.ok()) return step.status();
    auto result = std::make_shared<ExecutorAndKeys>();
    result->feeds = std::move(step->feeds);
    result->fetch_keys = std::move(step->fetch_keys);
    result->num_nodes = step->num_nodes;
    std::unique_ptr<Graph> graph = std::move(step->graph);
    absl::Status s;
    if (MultiDevice()) {
      s = BuildPartitions(std::move(graph), result.get());
      if (!s.ok()) return s;
      absl::MutexLock lock(&mu_);
      auto [it, inserted] = executors_.emplace(signature, result);
      return it->second;
    }

    auto executor = NewLocalExecutor(Params(device_), std::move(graph));
    if (!executor.ok()) return executor.status();
    result->executor = std::move(executor).value();

    absl::MutexLock lock(&mu_);
    auto [it, inserted] = executors_.emplace(signature, result);
    return it->second;
  }

  ExecutorParams Params(Device* device) const {
    ExecutorParams params;
    params.device = device;
    if (pool_ != nullptr) {
      Eigen::ThreadPool* pool = pool_.get();
      params.runner = [pool](std::function<void()> fn) { pool->Schedule(std::move(fn)); };
    } else {
      // ScheduleWithHint: the device's pool runs a plain Schedule from its own
      // threads at once (engine/framework/device.cc); nodes are queued (or,
      // with the pool's queue full, run at once, as Eigen does for any pool).
      // `fn` and what it holds are released before the count drops, so
      // ~LocalSession never races their destruction.
      Eigen::ThreadPoolInterface* pool = shared_pool_;
      std::shared_ptr<QueuedClosures> queued = queued_;
      params.runner = [pool, queued](std::function<void()> fn) {
        {
          absl::MutexLock lock(&queued->mu);
          ++queued->count;
        }
        pool->ScheduleWithHint(
            [queued, fn = std::move(fn)]() mutable {
              fn();
              fn = nullptr;
              absl::MutexLock lock(&queued->mu);
              --queued->count;
            },
            0, pool->NumThreads());
      };
    }
    return params;
  }

  // Cuts the placed, rewritten `graph` into one partition per device and
  // makes their executors.
  absl::Status BuildPartitions(std::unique_ptr<Graph> graph, ExecutorAndKeys* result) const {
    std::vector<uint64_t> incarnations;
    for (int i = 0; i < devices_.num_devices(); ++i) incarnations.push_back(devices_.incarnation(i));
    std::vector<std::unique_ptr<Graph>> partitions;
    absl::Status s = PartitionStepGraph(*graph, devices_, incarnations, nullptr, &partitions);
    if (!s.ok()) return s;
    std::vector<DevicePartition> parts;
    for (int i = 0; i < static_cast<int>(partitions.size()); ++i) {
      if (partitions[i] == nullptr) continue;
      DevicePartition part;
      part.device = devices_.device(i);
      auto executor = NewLocalExecutor(Params(part.device), std::move(partitions[i]));
      if (!executor.ok()) return executor.status();
      part.executor = std::move(executor).value();
      parts.push_back(std::move(part));
    }
    result->partitioned = std::make_unique<PartitionedExecutor>(std::move(parts));
    return absl::OkStatus();
  }

  const SessionOptions options_;
  DeviceMgr* const device_mgr_;
  Device* const device_;
  const DeviceSet devices_;
  // Where the executors' nodes run: our own pool, or (ops_on_intra_op_pool)
  // the host CPU device's, with a count of the closures queued there.
  std::unique_ptr<Eigen::ThreadPool> pool_;
  Eigen::ThreadPoolInterface* shared_pool_ = nullptr;
  struct QueuedClosures {
    absl::Mutex mu;
    int64_t count ABSL_GUARDED_BY(mu) = 0;
  };
  std::shared_ptr<QueuedClosures> queued_ = std::make_shared<QueuedClosures>();
  std::atomic<int64_t> next_step_id_{1};

  absl::Mutex mu_;
  GraphDef graph_def_ ABSL_GUARDED_BY(mu_);
  bool has_graph_ ABSL_GUARDED_BY(mu_) = false;
  // Node name -> device index (several devices only).
  absl::flat_hash_map<std::string, int> placement_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<std::string, std::shared_ptr<ExecutorAndKeys>> executors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

void Session::Reset(const std::vector<std::string>& containers) {
  std::vector<std::string> names;
  for (const std::string& c : containers) names.push_back(c.empty() ? ResourceMgr::kDefaultContainer : c);
  DeviceMgr::Local()->ClearContainers(names);
}

absl::StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options) {
  if (options.inter_op_threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("inter_op_threads must be >= 0, got ", options.inter_op_threads));
  }
  return std::unique_ptr<Session>(new LocalSession(options));
}

}  // namespace sluice
