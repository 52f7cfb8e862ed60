// TrainingMetrics over prometheus-cpp. prometheus-cpp and civetweb report failures by throwing;
// every call that can throw is wrapped here and turned into an absl::Status.
#include "monitoring/metrics.h"

#include <exception>
#include <memory>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gateway.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

// LeakSanitizer (--config=asan only): OpenSSL 3, which libcurl loads for a
// Pushgateway push, keeps 904 bytes of per-thread state (CRYPTO_zalloc) that
// it frees at thread exit only in some runs (metrics_hook_test reported it in
// 4 runs of 6, with no frame of ours). LSan asks the binary for its default
// suppressions through this function.
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __lsan_default_suppressions() { return "leak:libcrypto.so\n"; }
#endif

namespace sluice {
namespace {

bool ValidLabelValue(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

std::vector<double> StepDurationBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100};
}

absl::StatusOr<std::unique_ptr<TrainingMetrics>> TrainingMetrics::Create(const MetricsOptions& options) {
  if (!ValidLabelValue(options.role)) {
    return absl::InvalidArgumentError(absl::StrCat("metrics: bad role name '", options.role, "'"));
  }
  if (options.task < 0) return absl::InvalidArgumentError(absl::StrCat("metrics: bad task ", options.task));
  if (options.serve && (options.port < 0 || options.port > 65535)) {
    return absl::InvalidArgumentError(absl::StrCat("metrics: port must be 0-65535, got ", options.port));
  }
  std::unique_ptr<TrainingMetrics> m(new TrainingMetrics());
  m->role_ = options.role;
  m->task_ = absl::StrCat(options.task);
  const prometheus::Labels id = {{"role", m->role_}, {"task", m->task_}};
  try {
    m->registry_ = std::make_shared<prometheus::Registry>();
    prometheus::Registry& r = *m->registry_;
    auto counter = [&](const char* name, const char* help) {
      return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add(id);
    };
    auto gauge = [&](const char* name, const char* help) {
      return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add(id);
    };
    if (options.series.training) {
      m->steps_ = counter("sluice_train_steps_total", "Training steps completed.");
      m->examples_ = counter("sluice_train_examples_total", "Training examples processed.");
      m->step_duration_ = &prometheus::BuildHistogram()
                               .Name("sluice_step_duration_seconds")
                               .Help("Wall time of one training step.")
                               .Register(r)
                               .Add(id, StepDurationBuckets());
      auto lazy = [&](LazyGauge* g, const char* name, const char* help) {
        g->Init(&prometheus::BuildGauge().Name(name).Help(help).Register(r), id);
      };
      lazy(&m->loss_, "sluice_loss", "Training loss of the latest step.");
      lazy(&m->learning_rate_, "sluice_learning_rate", "Learning rate of the latest step.");
      lazy(&m->global_step_, "sluice_global_step", "The run's global step after the latest step.");
      lazy(&m->last_step_, "sluice_last_step", "The global step at which training ends (train.steps).");
      m->queue_size_ = gauge("sluice_input_queue_size", "Examples waiting in the input queue.");
      m->queue_capacity_ = gauge("sluice_input_queue_capacity", "Capacity of the input queue.");
    }
    m->recoveries_ = gauge("sluice_recoveries", "Times this task restarted itself to recover from a lost peer.");
    if (options.series.sync_aggregation) {
      m->stale_gradients_ = gauge("sluice_stale_gradients",
                                  "Gradients the sync accumulators dropped as stale, over all variables.");
      m->aggregated_gradients_ =
          gauge("sluice_aggregated_gradients", "Workers' gradients the last synchronous step averaged.");
    }
    if (options.series.health_checks) {
      m->peers_alive_ = gauge("sluice_peers_alive", "Other tasks of the cluster that answered the last health check.");
    }
    if (options.series.checkpoints) {
      m->checkpoint_duration_ =
          &prometheus::BuildHistogram()
               .Name("sluice_checkpoint_save_duration_seconds")
               .Help("Wall time to write and commit one checkpoint.")
               .Register(r)
               .Add(id, prometheus::Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300});
      // Its one series appears with the first checkpoint (OnCheckpointSaved):
      // a 0 before it would read as a checkpoint made in 1970.
      m->checkpoint_last_success_.Init(&prometheus::BuildGauge()
                                            .Name("sluice_checkpoint_last_success_timestamp_seconds")
                                            .Help("Unix time of the latest successful checkpoint.")
                                            .Register(r),
                                        id);
    }
    for (const auto& [name, help] : std::vector<std::pair<const char*, const char*>>{
             {"sluice_device_memory_in_use_bytes", "Bytes an accelerator's allocator has handed out."},
             {"sluice_device_memory_peak_bytes", "Most bytes an accelerator's allocator has had handed out at once."},
             {"sluice_device_memory_limit_bytes", "Bytes of the region an accelerator's allocator manages."},
             {"sluice_device_memory_largest_free_bytes", "Largest free block in an accelerator's allocator."},
             {"sluice_device_memory_fragmentation_ratio",
              "1 - largest free block / free bytes of an accelerator's allocator."}}) {
      m->device_memory_.push_back(&prometheus::BuildGauge().Name(name).Help(help).Register(r));
    }
    m->eval_value_ = &prometheus::BuildGauge()
                          .Name("sluice_eval_value")
                          .Help("The last evaluation's values (its loss and metrics), by name.")
                          .Register(r);
    m->eval_step_.Init(&prometheus::BuildGauge()
                            .Name("sluice_eval_step")
                            .Help("The global step of the last evaluation.")
                            .Register(r),
                       id);
    m->kernel_seconds_ = &prometheus::BuildCounter()
                              .Name("sluice_kernel_seconds_total")
                              .Help("Kernel execution time by op type (from step stats).")
                              .Register(r);
    prometheus::BuildGauge()
        .Name("sluice_build_info")
        .Help("Always 1; labels describe the build.")
        .Register(r)
        .Add({{"role", m->role_}, {"task", m->task_}, {"version", options.version}})
        .Set(1);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("metrics: registering metrics: ", e.what()));
  }
  if (options.serve) {
    m->asked_port_ = options.port;
    absl::Status served = m->Serve(options, options.port);
    if (!served.ok() && options.free_port_if_taken && options.port != 0) served = m->Serve(options, 0);
    if (!served.ok()) return served;
  }
  return m;
}

absl::Status TrainingMetrics::Serve(const MetricsOptions& options, int port) {
  const std::string address = absl::StrCat(options.bind_address, ":", port);
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address, static_cast<size_t>(options.server_threads));
    exposer_->RegisterCollectable(registry_);
    std::vector<int> ports = exposer_->GetListeningPorts();
    if (ports.empty()) {
      exposer_.reset();
      return absl::UnavailableError(absl::StrCat("metrics: not listening on ", address));
    }
    port_ = ports[0];
    waker_ = ListenerWaker(options.bind_address, port_);
  } catch (const std::exception& e) {
    exposer_.reset();
    // civetweb says only "null context when constructing CivetServer. Possible
    // problem binding to port.": the usual cause is a port in use, which is
    // what the user can act on; its own words are kept when they say more.
    const std::string why = e.what();
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot serve on ", address,
                     port != 0 ? ": the port is in use, or cannot be bound here (metrics_port 0 picks a free one)" : "",
                     absl::StrContains(why, "null context") ? "" : absl::StrCat(": ", why)));
  }
  return absl::OkStatus();
}

std::string TrainingMetrics::Url(const std::string& host) const {
  const std::string shown = host.empty() || host == "0.0.0.0" ? std::string("127.0.0.1") : host;
  return absl::StrCat("http://", shown, ":", port_, "/metrics",
                      asked_port_ != 0 && port_ != asked_port_ ? absl::StrCat(" (port ", asked_port_, " is taken)") : "");
}

// The server stops at once, not after civetweb's 2-second accept wait
// (listener_wake.h).
TrainingMetrics::~TrainingMetrics() {
  if (exposer_ != nullptr) waker_.RunWhileConnecting([this] { exposer_.reset(); });
}

void TrainingMetrics::OnStep(int64_t examples, double duration_seconds, double loss, double learning_rate) {
  if (steps_ == nullptr) return;  // not a training task's metrics
  steps_->Increment();
  if (examples > 0) examples_->Increment(static_cast<double>(examples));
  if (duration_seconds >= 0) step_duration_->Observe(duration_seconds);
  loss_.Set(loss);
  learning_rate_.Set(learning_rate);
}

void TrainingMetrics::SetGlobalStep(int64_t step, int64_t last_step) {
  if (!global_step_.enabled()) return;  // not a training task's metrics
  global_step_.Set(static_cast<double>(step));
  last_step_.Set(static_cast<double>(last_step));
}

void TrainingMetrics::SetRecoveries(int64_t recoveries) { recoveries_->Set(static_cast<double>(recoveries)); }

void TrainingMetrics::SetStaleGradients(int64_t stale) {
  if (stale_gradients_ != nullptr) stale_gradients_->Set(static_cast<double>(stale));
}

void TrainingMetrics::SetPeersAlive(int64_t peers) {
  if (peers_alive_ != nullptr) peers_alive_->Set(static_cast<double>(peers));
}

void TrainingMetrics::SetAggregatedGradients(int64_t gradients) {
  if (aggregated_gradients_ != nullptr) aggregated_gradients_->Set(static_cast<double>(gradients));
}

void TrainingMetrics::SetInputQueue(int64_t size, int64_t capacity) {
  if (queue_size_ == nullptr) return;
  queue_size_->Set(static_cast<double>(size));
  queue_capacity_->Set(static_cast<double>(capacity));
}

void TrainingMetrics::OnCheckpointSaved(double duration_seconds, absl::Time finished) {
  if (checkpoint_duration_ == nullptr) return;
  if (duration_seconds >= 0) checkpoint_duration_->Observe(duration_seconds);
  checkpoint_last_success_.Set(absl::ToDoubleSeconds(finished - absl::UnixEpoch()));
}

void TrainingMetrics::LazyGauge::Set(double value) {
  prometheus::Gauge* g = gauge_.load(std::memory_order_acquire);
  if (g == nullptr) {
    absl::MutexLock lock(&mu_);
    g = gauge_.load(std::memory_order_relaxed);
    if (g == nullptr) {
      g = &family_->Add(labels_);
      gauge_.store(g, std::memory_order_release);
    }
  }
  g->Set(value);
}

void TrainingMetrics::AddKernelTime(const std::string& op, double seconds) {
  if (!(seconds > 0)) return;  // counters only go up (and NaN is dropped)
  prometheus::Counter* c;
  {
    absl::MutexLock lock(&mu_);
    auto it = kernel_by_op_.find(op);
    if (it == kernel_by_op_.end()) {
      it = kernel_by_op_.emplace(op, &kernel_seconds_->Add({{"role", role_}, {"task", task_}, {"op", op}})).first;
    }
    c = it->second;
  }
  c->Increment(seconds);
}

void TrainingMetrics::SetDeviceMemory(const std::string& device, const AllocatorStats& stats) {
  std::vector<prometheus::Gauge*>* gauges;
  {
    absl::MutexLock lock(&mu_);
    auto it = device_memory_by_device_.find(device);
    if (it == device_memory_by_device_.end()) {
      std::vector<prometheus::Gauge*> added;
      for (auto* family : device_memory_) added.push_back(&family->Add({{"role", role_}, {"task", task_}, {"device", device}}));
      it = device_memory_by_device_.emplace(device, std::move(added)).first;
    }
    gauges = &it->second;  // stable: entries are never erased
  }
  const double values[] = {static_cast<double>(stats.bytes_in_use), static_cast<double>(stats.peak_bytes_in_use),
                           static_cast<double>(stats.bytes_limit), static_cast<double>(stats.largest_free_block),
                           stats.fragmentation};
  for (size_t i = 0; i < gauges->size() && i < sizeof(values) / sizeof(values[0]); ++i) (*gauges)[i]->Set(values[i]);
}

void TrainingMetrics::SetEvaluation(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  for (const auto& [name, value] : values) {
    prometheus::Gauge* g;
    {
      absl::MutexLock lock(&mu_);
      auto it = eval_value_by_name_.find(name);
      if (it == eval_value_by_name_.end()) {
        it = eval_value_by_name_.emplace(name, &eval_value_->Add({{"role", role_}, {"task", task_}, {"name", name}}))
                 .first;
      }
      g = it->second;
    }
    g->Set(value);
  }
  eval_step_.Set(static_cast<double>(step));
}

void TrainingMetrics::AddStepStats(const std::vector<NodeExecStats>& stats) {
  absl::flat_hash_map<std::string, int64_t> ns_by_op;
  for (const NodeExecStats& s : stats) {
    if (s.end_ns > s.start_ns) ns_by_op[s.op] += s.end_ns - s.start_ns;
  }
  for (const auto& [op, ns] : ns_by_op) AddKernelTime(op, static_cast<double>(ns) * 1e-9);
}

void TrainingMetrics::OnRunSucceeded(double duration_seconds, absl::Time finished) {
  absl::MutexLock lock(&mu_);
  try {
    if (run_duration_ == nullptr) {
      const prometheus::Labels id = {{"role", role_}, {"task", task_}};
      run_duration_ = &prometheus::BuildGauge()
                           .Name("sluice_run_duration_seconds")
                           .Help("Wall time of the latest completed run.")
                           .Register(*registry_)
                           .Add(id);
      run_last_success_ = &prometheus::BuildGauge()
                               .Name("sluice_run_last_success_timestamp_seconds")
                               .Help("Unix time at which the latest run completed.")
                               .Register(*registry_)
                               .Add(id);
    }
  } catch (const std::exception&) {
    return;  // only a duplicate registration can throw here, and mu_ rules that out
  }
  run_duration_->Set(duration_seconds);
  run_last_success_->Set(absl::ToDoubleSeconds(finished - absl::UnixEpoch()));
}

std::string TrainingMetrics::Scrape() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

namespace {

// One push, on the calling thread; it may block as long as the server lets it.
absl::Status PushNow(const std::shared_ptr<prometheus::Registry>& registry, const std::string& role,
                     const std::string& task, const PushOptions& options) {
  try {
    prometheus::Gateway gateway(options.host, options.port, role, {{"task", task}});
    gateway.RegisterCollectable(registry);
    const int code = gateway.Push();
    if (code < 0) {
      return absl::UnavailableError(
          absl::StrCat("metrics: cannot reach the Pushgateway at ", options.host, ":", options.port));
    }
    if (code < 200 || code >= 300) {
      return absl::InternalError(absl::StrCat("metrics: the Pushgateway at ", options.host, ":", options.port,
                                              " answered HTTP ", code));
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("metrics: push: ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status TrainingMetrics::Push(const PushOptions& options) const {
  // prometheus-cpp 1.0's Gateway sets no timeout, and libcurl waits for ever
  // on a server that accepts and never answers (a run hung there, past its
  // SIGTERM). So the push runs on a thread of its own, which owns what it
  // reads, and the caller waits at most options.timeout; a push still
  // blocked then is abandoned to the process's exit.
  struct Outcome {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::Status status ABSL_GUARDED_BY(mu);
  };
  auto outcome = std::make_shared<Outcome>();
  std::thread([outcome, registry = registry_, role = role_, task = task_, options] {
    absl::Status s = PushNow(registry, role, task, options);
    absl::MutexLock lock(&outcome->mu);
    outcome->status = std::move(s);
    outcome->done = true;
  }).detach();
  absl::MutexLock lock(&outcome->mu);
  if (!outcome->mu.AwaitWithTimeout(absl::Condition(&outcome->done), options.timeout)) {
    return absl::DeadlineExceededError(absl::StrCat("metrics: the Pushgateway at ", options.host, ":", options.port,
                                                    " did not answer within ", absl::FormatDuration(options.timeout)));
  }
  return outcome->status;
}

}  // namespace sluice
