// TrainMonitor: everything `train` reports about a run besides its progress line (issue 7):
//   - TensorBoard event files in the run directory (monitoring/EVENTS.md, "What train writes"):
//     the graph, session_log START after a resume, and every `summaries.every_steps` steps the
//     scalars (loss, learning rate, examples/s, gradient norm, model metrics), histograms of
//     the variables and gradients matching `summaries.histograms`, images of the input batch;
//     eval results after each evaluation.
//   - Prometheus metrics (monitoring/metrics.h) served at /metrics when the experiment has a
//     `monitoring` section, and pushed to a Pushgateway at the end of a completed run. Labels:
//     job="worker", task="0" until task identity flags exist. Per step: steps, examples, step
//     wall time, loss, learning rate, and the batch queue's size (a QueueSize node fetched with
//     the step). Checkpoints: a periodic save is timed from the step that triggers it until its
//     ckpt-<step> directory appears (the saver writes in the background; seen at a later step
//     boundary); the final save is timed exactly. sluice_kernel_seconds_total counts only the
//     traced steps (step stats are collected only for --trace_steps).
//   - Chrome traces of the steps in `--trace_steps=A-B`, one JSON file per step in
//     <run_dir>/traces/ (monitoring/trace.h).
// Histograms and images come from summary ops (monitoring/summary_ops.cc) added to the session's
// graph and fetched with the training step on summary steps, so they describe that step's
// batch and gradients; scalars are host values the trainer already has.
//
// The trainer calls, in order: Create (pure: checks the config against the graph; a config
// problem is InvalidArgument naming the field), Start (after restoring or initializing), then
// per step BeforeStep / Session::Run / AfterStep, OnEval after evaluations,
// CheckpointStarting / CheckpointCommitted around the final save, and Finish.
// Monitoring never fails a run once it started: write, push and trace errors are printed once
// as warnings and that output is turned off.
//
// Ownership: borrows the Session and Saver given to Start (they must outlive the monitor).
// Thread safety: none; the training loop's thread owns it.
#ifndef SLUICE_CMD_TRAIN_MONITORING_HOOKS_H_
#define SLUICE_CMD_TRAIN_MONITORING_HOOKS_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "checkpoint/saver.h"
#include "configs/experiment.pb.h"
#include "engine/framework/graph.pb.h"
#include "engine/runtime/session.h"
#include "models/training_graph.h"
#include "monitoring/event_writer.h"
#include "monitoring/metrics.h"

namespace sluice {

// An inclusive range of step numbers; empty when last < first.
struct StepRange {
  int64_t first = 1;
  int64_t last = 0;
  bool empty() const { return last < first; }
  bool Contains(int64_t step) const { return step >= first && step <= last; }
};

// "A-B" (1 <= A <= B) or "A" (the step A alone). InvalidArgument with the expected form.
absl::StatusOr<StepRange> ParseStepRange(absl::string_view text);

// "http://host:port", "https://host", "host:port" -> (scheme://host, port); port default
// "9091". InvalidArgument for anything else (a path, a bad port, an empty host).
absl::StatusOr<std::pair<std::string, std::string>> ParsePushgatewayUrl(absl::string_view url);

struct TrainMonitorOptions {
  // Constant labels of every metric (the task's identity).
  std::string job = "worker";
  int64_t task = 0;
  // For sluice_build_info.
  std::string version = "dev";
  // Steps to trace (--trace_steps); empty: none.
  StepRange trace_steps;
  // How often the event file is handed to the OS while training.
  absl::Duration flush_interval = absl::Seconds(5);
};

class TrainMonitor {
 public:
  // Checks `e` against the training graph and builds the summary nodes; does no I/O.
  // InvalidArgument naming the config field (summaries.histograms, summaries.input_images)
  // when a pattern matches no trainable variable or the input has no image feature.
  static absl::StatusOr<std::unique_ptr<TrainMonitor>> Create(const TrainMonitorOptions& options,
                                                              const config::Experiment& e,
                                                              const models::TrainingGraph& tg);
  // Closes the event file (flushing it) if Finish did not.
  ~TrainMonitor();
  TrainMonitor(const TrainMonitor&) = delete;
  TrainMonitor& operator=(const TrainMonitor&) = delete;

  // After the variables are restored (resumed, at `step`) or initialized: adds the summary
  // nodes to `session`, opens the event file (version, graph, and session_log START at `step`
  // when resumed), starts the /metrics server and prints "metrics: http://ADDR:PORT/metrics"
  // on `out`. Warnings go to `err` from then on. Errors: Session::Extend's, the event file's,
  // Unavailable when the metrics port cannot be bound.
  absl::Status Start(Session* session, const checkpoint::Saver* saver, int64_t step, bool resumed,
                     std::ostream& out, std::ostream& err);

  // Before running the step that will end at global step `step`: appends this step's extra
  // fetches to `fetches` (which must hold the trainer's own fetches) and asks for step stats
  // in `options` when the step is traced.
  void BeforeStep(int64_t step, std::vector<std::string>* fetches, RunOptions* options);
  // After that step succeeded, before the trainer's MaybeSave: `fetched` as Session::Run
  // returned it, `metadata` its RunMetadata, `seconds` its wall time.
  void AfterStep(int64_t step, const std::vector<Tensor>& fetched, const RunMetadata& metadata, double seconds,
                 double loss, double learning_rate, double examples_per_second);
  // Evaluation results at `step` ("loss" first), written as eval/<name> scalars.
  void OnEval(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  // Around a synchronous save (the final one): its duration and success time go to metrics.
  void CheckpointStarting(int64_t step);
  void CheckpointCommitted(int64_t step);
  // End of the run with the trainer's exit code: closes the event file; when the run
  // completed (exit 0), sets the run gauges and pushes to the Pushgateway if configured.
  void Finish(int exit_code, std::ostream& out, std::ostream& err);

  // For tests: the summary nodes Start adds, and the event file's path ("" before Start).
  const GraphDef& summary_graph() const { return summary_graph_; }
  std::string event_file() const { return events_ ? events_->path() : ""; }
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }
  // The address /metrics binds to: monitoring.metrics_address, or 127.0.0.1.
  const std::string& metrics_bind_address() const { return metrics_options_.bind_address; }

 private:
  TrainMonitor() = default;
  void WriteSummary(int64_t step, const Summary& summary);
  void WriteTrace(int64_t step, const RunMetadata& metadata);
  void PollCheckpoint(int64_t step);
  void Warn(const std::string& message);

  TrainMonitorOptions options_;
  std::string run_dir_;
  int64_t summary_every_ = 0;
  int64_t batch_size_ = 0;
  int64_t queue_capacity_ = 0;
  GraphDef training_graph_;  // what the graph dashboard shows (with the summary nodes)
  GraphDef summary_graph_;   // the nodes Start adds to the session
  std::string merged_summary_;  // "" when there are no histograms or images
  std::string queue_size_;      // scalar int32 tensor, "" when unknown or metrics are off
  std::string global_norm_;
  std::vector<std::pair<std::string, std::string>> train_metrics_;  // (name, scalar tensor)
  std::string device_;

  bool serve_metrics_ = false;
  bool want_metrics_ = false;
  MetricsOptions metrics_options_;
  std::string pushgateway_url_;

  std::unique_ptr<EventWriter> events_;
  std::unique_ptr<TrainingMetrics> metrics_;
  const checkpoint::Saver* saver_ = nullptr;
  std::ostream* err_ = nullptr;
  absl::Time started_;

  // What BeforeStep appended, for AfterStep: the index of each extra fetch, or -1.
  struct StepPlan {
    int64_t step = -1;
    int queue_size = -1;
    int global_norm = -1;
    int merged = -1;
    int first_metric = -1;
    bool summaries = false;
    bool traced = false;
  } plan_;

  // A periodic checkpoint in flight: its step and when it was triggered.
  int64_t pending_save_step_ = -1;
  absl::Time pending_save_start_;
  int64_t traces_written_ = 0;
  bool trace_warned_ = false;
};

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_MONITORING_HOOKS_H_
