// MetricsHook: the run's Prometheus metrics (monitoring/metrics.h), served at /metrics while
// it trains and pushed to a Pushgateway at the end of a completed run. Per step: steps,
// examples, step wall time, loss, learning rate, and the batch queue's size (a QueueSize
// tensor fetched with the step). sluice_kernel_seconds_total counts the steps whose step
// stats were collected (the trace hook asks for them). Checkpoints (a CheckpointListener):
// each save as the saver timed it, from its start to its commit, reported when it commits
// (AfterCommit). Begin prints "metrics: http://ADDR:PORT/metrics" when serving.
// Metrics never fail a run once it started: a failed push is a warning.
//
// Ownership: borrows the streams, which must outlive the hook.
// Thread safety: the loop's thread only (the /metrics server has its own), but for
// AfterCommit, which a saver's writer thread calls.
#ifndef SLUICE_MODELS_TRAINING_METRICS_HOOK_H_
#define SLUICE_MODELS_TRAINING_METRICS_HOOK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "models/training/checkpoint_hook.h"
#include "models/training/eval_hook.h"
#include "models/training/hook.h"
#include "monitoring/metrics.h"

namespace sluice {
namespace training {

// "http://host:port", "https://host", "host:port" -> (scheme://host, port); port default
// "9091". InvalidArgument for anything else (a path, a bad port, an empty host).
absl::StatusOr<std::pair<std::string, std::string>> ParsePushgatewayUrl(absl::string_view url);

struct MetricsHookOptions {
  // Labels, build info, and whether and where to serve /metrics.
  MetricsOptions metrics;
  std::string pushgateway_url;  // "": no push
  std::string queue_size;       // scalar int32 tensor of the batch queue's size; "": not fetched
  int64_t queue_capacity = 0;
  // A replicated run: this task's recoveries so far, and int64 scalar tensors
  // whose sum is the stale gradients (the sync chief's accumulators).
  int64_t recoveries = 0;
  std::vector<std::string> stale_gradients;
  std::string aggregated_gradients;  // int32 scalar tensor; "": not fetched
};

class MetricsHook : public TrainingHook, public CheckpointListener, public EvalListener {
 public:
  // InvalidArgument for a bad pushgateway_url ("pushgateway_url '...' has a path; ..."); no I/O.
  static absl::StatusOr<std::unique_ptr<MetricsHook>> Create(const MetricsHookOptions& options, std::ostream* out,
                                                             std::ostream* err);

  // Creates the metrics and starts the /metrics server (binds its port), once; a later call
  // does nothing. The trainer calls it before it writes to the run directory, so that a taken
  // port leaves nothing there. Errors: "starting monitoring: ..."; Unavailable when the port
  // cannot be bound.
  absl::Status Serve();
  // Serve() unless done, then prints "metrics: URL" when serving.
  absl::Status Begin(Session* session, const LoopStart& start) override;
  void BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) override;
  absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) override;
  // When the run succeeded: the run gauges, and the push (prints "metrics: pushed to URL").
  void Close(const LoopEnd& end) override;

  // A cluster task: how many peers answered the last health check, read
  // after every step (sluice_peers_alive).
  void set_peers_alive(std::function<int()> peers_alive) { peers_alive_ = std::move(peers_alive); }

  // Times each committed save (sluice_checkpoint_save_duration_seconds, the last success's
  // time). On the saver's writer thread for a periodic save.
  void AfterCommit(int64_t step, double seconds, absl::Time finished) override;

  // Each evaluation's values (sluice_eval_value{name}) and step (sluice_eval_step).
  void OnEval(int64_t step, const EvalValues& values) override;

  // After Serve or Begin (for tests): the metrics, and the port they are served on.
  const TrainingMetrics* metrics() const { return metrics_.get(); }
  int port() const { return metrics_ ? metrics_->port() : 0; }

 private:
  MetricsHook(const MetricsHookOptions& options, std::ostream* out, std::ostream* err)
      : options_(options), out_(out), err_(err) {}


  const MetricsHookOptions options_;
  std::ostream* const out_;
  std::ostream* const err_;
  std::unique_ptr<TrainingMetrics> metrics_;
  absl::Time started_;
  bool fetch_queue_size_ = false;  // this step fetches the queue size
  std::function<int()> peers_alive_;

};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_METRICS_HOOK_H_
