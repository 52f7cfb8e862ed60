// TrainingMetrics: the trainer's Prometheus metrics (prometheus-cpp), served at /metrics by an
// embedded HTTP server and optionally pushed to a Pushgateway at the end of a run.
//
// Names follow Prometheus conventions (sluice_ prefix, base units, _total counters). Every
// series carries the constant labels role and task; sluice_kernel_seconds_total adds op, and
// the info metric sluice_build_info adds version. The served page also has prometheus-cpp's own
// exposer_* families (scrapes, bytes, latencies), which it always adds.
// A task exports the series it sets (MetricsSeries): a ps has no loss.
//   sluice_train_steps_total                          counter    training
//   sluice_train_examples_total                       counter    training
//   sluice_step_duration_seconds                      histogram  training
//   sluice_loss, sluice_learning_rate                 gauge      training, from the first step
//   sluice_global_step, sluice_last_step              gauge      training, from the first step (the
//                                                     run's step and the one it ends at: they
//                                                     hold across restarts)
//   sluice_input_queue_size, sluice_input_queue_capacity  gauge  training
//   sluice_checkpoint_save_duration_seconds           histogram  checkpoints
//   sluice_checkpoint_last_success_timestamp_seconds  gauge      checkpoints, from the first
//   sluice_stale_gradients, sluice_aggregated_gradients  gauge   sync_aggregation
//   sluice_peers_alive                                gauge      health_checks
//   sluice_recoveries                                 gauge
//   sluice_kernel_seconds_total{op}                   counter, of the steps whose step stats were
//                                                     collected (--trace_steps): absent otherwise
//   sluice_device_memory_*{device}                    gauge
//   sluice_eval_value{name}, sluice_eval_step         gauge, from the first evaluation (the chief's:
//                                                     each value of the eval line by name, and its
//                                                     global step)
//   sluice_build_info{version}                        gauge, always 1
//   sluice_run_duration_seconds                       gauge, after OnRunSucceeded
//   sluice_run_last_success_timestamp_seconds         gauge, after OnRunSucceeded
//
// Shutdown: destroying a TrainingMetrics whose server has answered a request takes about 2 s
// (civetweb's worker threads stop on a timeout); it does not depend on our options.
// Ownership: TrainingMetrics owns its registry and server. Thread safety: every method may be
// called concurrently (the metric types are atomic; the kernel-op map has a mutex).
#ifndef SLUICE_MONITORING_METRICS_H_
#define SLUICE_MONITORING_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "monitoring/listener_wake.h"
#include "engine/framework/allocator.h"
#include "engine/runtime/step_stats.h"

namespace prometheus {
class Counter;
class Exposer;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace sluice {

// The series a task exports besides sluice_build_info, sluice_recoveries and
// the per-op and per-device families. A series a task never sets would read 0,
// and a dashboard would take that for a value (a loss of 0, a checkpoint at
// Unix time 0, no peer alive), so each task exports only the ones it sets.
struct MetricsSeries {
  // Steps, examples, step time, loss, learning rate, input queue: a task
  // that trains (a worker; not a ps).
  bool training = true;
  // Checkpoint save time and the latest success: the task that saves (the chief).
  bool checkpoints = true;
  // sluice_stale_gradients and sluice_aggregated_gradients: a sync run's chief.
  bool sync_aggregation = false;
  // sluice_peers_alive: a replicated run's workers, which run health checks.
  bool health_checks = false;
};

struct MetricsOptions {
  // Which task this is, as the labels role="worker" task="0" on every series
  // (not `job` or `instance`: a Prometheus server sets those on whatever it
  // scrapes, and would rename ours to exported_job). A single process is
  // worker 0. The Pushgateway groups pushes by job=role, task.
  std::string role = "worker";
  int64_t task = 0;
  // Serve /metrics on bind_address:port; port 0 picks a free port (see TrainingMetrics::port).
  // Loopback unless the caller names another address ("0.0.0.0": every interface).
  bool serve = true;
  std::string bind_address = "127.0.0.1";
  int port = 0;
  // When `port` (not 0) cannot be bound, serve on a free port instead: a task
  // that restarted itself asks for the port it served before, and if another
  // process took it meanwhile, a new port beats none (port() says which).
  bool free_port_if_taken = false;
  // Threads of the HTTP server.
  int server_threads = 2;
  // For sluice_build_info.
  std::string version = "dev";
  MetricsSeries series;
};

struct PushOptions {
  std::string host = "127.0.0.1";
  std::string port = "9091";
  // How long Push waits for the Pushgateway's answer (connection included).
  absl::Duration timeout = absl::Seconds(10);
  // The grouping key is {job=role, task} of this TrainingMetrics, matching the series' own labels
  // (the Pushgateway rejects pushes whose labels contradict the grouping key).
};

class TrainingMetrics {
 public:
  // InvalidArgument for a bad role name or port; Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<TrainingMetrics>> Create(const MetricsOptions& options);
  ~TrainingMetrics();
  TrainingMetrics(const TrainingMetrics&) = delete;
  TrainingMetrics& operator=(const TrainingMetrics&) = delete;

  // The port the server listens on; 0 when not serving.
  int port() const { return port_; }
  // "http://<host>:<port>/metrics", and " (port N is taken)" when the server
  // asked for port N (free_port_if_taken) and serves on another. `host` is the
  // bind address; every interface ("0.0.0.0" or "") prints as 127.0.0.1.
  std::string Url(const std::string& host) const;

  // One training step: `examples` processed in `duration_seconds`, with the step's loss and LR.
  void OnStep(int64_t examples, double duration_seconds, double loss, double learning_rate);
  // The global step after the latest step, and the step at which training ends (train.steps):
  // unlike the steps counter, they hold across restarts, for progress and stall alerts.
  void SetGlobalStep(int64_t step, int64_t last_step);
  void SetInputQueue(int64_t size, int64_t capacity);
  void OnCheckpointSaved(double duration_seconds, absl::Time finished);
  // Adds `seconds` of kernel time to op type `op`.
  void AddKernelTime(const std::string& op, double seconds);
  // Adds every node's (end - start) to its op type's kernel time.
  void AddStepStats(const std::vector<NodeExecStats>& stats);
  // The memory of an accelerator (`device` names it, e.g. ".../device:GPU:0"):
  // sluice_device_memory_{in_use,peak,limit,largest_free}_bytes and
  // sluice_device_memory_fragmentation_ratio, labelled with the device.
  void SetDeviceMemory(const std::string& device, const AllocatorStats& stats);
  // An evaluation at global step `step`: sluice_eval_value{name} for each of
  // `values` ("loss", "accuracy", ...) and sluice_eval_step. Absent before the
  // first one.
  void SetEvaluation(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  // The run completed: registers (first call) and sets sluice_run_duration_seconds and
  // sluice_run_last_success_timestamp_seconds, what a batch scheduler's alert watches in the
  // Pushgateway. They are absent before, so a push never reports a success that did not happen.
  void OnRunSucceeded(double duration_seconds, absl::Time finished);
  // A replicated run: sluice_recoveries, the times this task restarted itself
  // after losing a peer; sluice_stale_gradients, the gradients the sync
  // accumulators dropped as stale (from backup workers, or computed for an
  // older step), summed over the variables (it restarts from 0 with a ps).
  void SetRecoveries(int64_t recoveries);
  void SetStaleGradients(int64_t stale);
  // sluice_peers_alive: the other tasks of the cluster that answered the last
  // health check.
  void SetPeersAlive(int64_t peers);
  // sluice_aggregated_gradients: how many workers' gradients the last sync
  // step averaged (replicas_to_aggregate, or more when they came together).
  void SetAggregatedGradients(int64_t gradients);

  // The text exposition format, as /metrics serves it.
  std::string Scrape() const;
  // POSTs the metrics to the Pushgateway's group /metrics/job/<role>/task/<task> (replacing the
  // metrics of the same names there). Unavailable on connection errors, Internal on an HTTP
  // error status.
  absl::Status Push(const PushOptions& options) const;

 private:
  TrainingMetrics() = default;
  // Starts the HTTP server on options.bind_address:port; Unavailable when it cannot.
  absl::Status Serve(const MetricsOptions& options, int port);

  // A gauge whose sample appears with its first Set: before it, a 0 would
  // read as a value (a loss of 0, a run at step 0). Set is thread-safe.
  class LazyGauge {
   public:
    // `labels`: prometheus::Labels (role and task).
    void Init(prometheus::Family<prometheus::Gauge>* family, std::map<std::string, std::string> labels) {
      family_ = family;
      labels_ = std::move(labels);
    }
    bool enabled() const { return family_ != nullptr; }
    void Set(double value);

   private:
    prometheus::Family<prometheus::Gauge>* family_ = nullptr;
    std::map<std::string, std::string> labels_;
    std::atomic<prometheus::Gauge*> gauge_{nullptr};
    absl::Mutex mu_;
  };

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  int asked_port_ = 0;  // MetricsOptions.port
  ListenerWaker waker_;  // stops the exposer at once (listener_wake.h)
  std::string role_;
  std::string task_;

  prometheus::Counter* steps_ = nullptr;
  prometheus::Counter* examples_ = nullptr;
  prometheus::Histogram* step_duration_ = nullptr;
  LazyGauge loss_;
  LazyGauge global_step_;
  LazyGauge last_step_;
  LazyGauge learning_rate_;
  prometheus::Gauge* queue_size_ = nullptr;
  prometheus::Gauge* queue_capacity_ = nullptr;
  prometheus::Histogram* checkpoint_duration_ = nullptr;
  LazyGauge checkpoint_last_success_;  // from the first checkpoint
  prometheus::Gauge* recoveries_ = nullptr;
  prometheus::Gauge* stale_gradients_ = nullptr;
  prometheus::Gauge* peers_alive_ = nullptr;
  prometheus::Gauge* aggregated_gradients_ = nullptr;
  prometheus::Family<prometheus::Counter>* kernel_seconds_ = nullptr;
  prometheus::Gauge* run_duration_ ABSL_GUARDED_BY(mu_) = nullptr;
  prometheus::Gauge* run_last_success_ ABSL_GUARDED_BY(mu_) = nullptr;

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, prometheus::Counter*> kernel_by_op_ ABSL_GUARDED_BY(mu_);
  // sluice_device_memory_*: the families, and each device's gauges in the
  // families' order.
  std::vector<prometheus::Family<prometheus::Gauge>*> device_memory_;
  absl::flat_hash_map<std::string, std::vector<prometheus::Gauge*>> device_memory_by_device_ ABSL_GUARDED_BY(mu_);
  // sluice_eval_value: the family, and its gauge per value name.
  prometheus::Family<prometheus::Gauge>* eval_value_ = nullptr;
  absl::flat_hash_map<std::string, prometheus::Gauge*> eval_value_by_name_ ABSL_GUARDED_BY(mu_);
  LazyGauge eval_step_;
};

// Step-duration buckets in seconds: 1 ms to 100 s, 1-2.5-5 steps.
std::vector<double> StepDurationBuckets();

}  // namespace sluice

#endif  // SLUICE_MONITORING_METRICS_H_
