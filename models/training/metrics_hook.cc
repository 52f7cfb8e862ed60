// MetricsHook (see metrics_hook.h).
#include "models/training/metrics_hook.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/framework/device.h"
#include "engine/platform/env.h"
#include "monitoring/progress.h"

namespace sluice {
namespace training {
absl::StatusOr<std::pair<std::string, std::string>> ParsePushgatewayUrl(absl::string_view url) {
  std::string rest(url);
  std::string scheme = "http";
  const size_t sep = rest.find("://");
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("pushgateway_url '", url, "' ", why,
                                                   "; use \"http://HOST:PORT\", e.g. \"http://127.0.0.1:9091\""));
  };
  if (sep != std::string::npos) {
    scheme = rest.substr(0, sep);
    if (scheme != "http" && scheme != "https") return bad("has an unsupported scheme");
    rest = rest.substr(sep + 3);
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) return bad("has a path");
  std::string host = rest, port = "9091";
  const size_t colon = rest.rfind(':');
  if (colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    int p = 0;
    if (!absl::SimpleAtoi(port, &p) || p < 1 || p > 65535) return bad("has a bad port");
  }
  if (host.empty()) return bad("has no host");
  return std::make_pair(absl::StrCat(scheme, "://", host), port);
}

absl::StatusOr<std::unique_ptr<MetricsHook>> MetricsHook::Create(const MetricsHookOptions& options,
                                                                  std::ostream* out, std::ostream* err) {
  if (!options.pushgateway_url.empty()) {
    auto parsed = ParsePushgatewayUrl(options.pushgateway_url);
    if (!parsed.ok()) return parsed.status();
  }
  return std::unique_ptr<MetricsHook>(new MetricsHook(options, out, err));
}

absl::Status MetricsHook::Serve() {
  if (metrics_ != nullptr) return absl::OkStatus();
  auto m = TrainingMetrics::Create(options_.metrics);
  if (!m.ok()) return absl::Status(m.status().code(), absl::StrCat("starting monitoring: ", m.status().message()));
  metrics_ = std::move(m).value();
  return absl::OkStatus();
}

absl::Status MetricsHook::Begin(Session* session, const LoopStart& start) {
  started_ = absl::Now();
  if (absl::Status s = Serve(); !s.ok()) return s;
  metrics_->SetInputQueue(0, options_.queue_capacity);
  metrics_->SetRecoveries(options_.recoveries);
  if (options_.metrics.serve) {
    *out_ << "metrics: " << metrics_->Url(options_.metrics.bind_address) << "\n";
    out_->flush();
  }
  return absl::OkStatus();
}

void MetricsHook::BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) {
  fetch_queue_size_ = !options_.queue_size.empty();
  if (fetch_queue_size_) args->fetches.push_back(options_.queue_size);
  args->fetches.insert(args->fetches.end(), options_.stale_gradients.begin(), options_.stale_gradients.end());
  if (!options_.aggregated_gradients.empty()) args->fetches.push_back(options_.aggregated_gradients);
}

absl::Status MetricsHook::AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) {
  metrics_->OnStep(step.examples, result.seconds, result.loss, step.learning_rate);
  metrics_->SetGlobalStep(step.step, step.last_step);
  if (fetch_queue_size_ && !result.fetched.empty() && result.fetched[0].NumElements() == 1) {
    const Tensor& q = result.fetched[0];
    const int64_t size = q.dtype() == DT_INT32   ? q.scalar<int32_t>()
                         : q.dtype() == DT_INT64 ? q.scalar<int64_t>()
                                                 : 0;
    metrics_->SetInputQueue(size, options_.queue_capacity);
  }
  const size_t first_stale = fetch_queue_size_ ? 1 : 0;
  const size_t aggregated = options_.aggregated_gradients.empty() ? 0 : 1;
  if (result.fetched.size() == first_stale + options_.stale_gradients.size() + aggregated) {
    if (aggregated == 1) {
      const Tensor& t = result.fetched.back();
      if (t.dtype() == DT_INT32 && t.NumElements() == 1) metrics_->SetAggregatedGradients(t.scalar<int32_t>());
    }
  }
  if (!options_.stale_gradients.empty() &&
      result.fetched.size() == first_stale + options_.stale_gradients.size() + aggregated) {
    int64_t stale = 0;
    for (size_t i = first_stale; i < first_stale + options_.stale_gradients.size(); ++i) {
      const Tensor& t = result.fetched[i];
      if (t.dtype() == DT_INT64 && t.NumElements() == 1) stale += t.scalar<int64_t>();
    }
    metrics_->SetStaleGradients(stale);
  }
  if (peers_alive_) metrics_->SetPeersAlive(peers_alive_());
  if (result.step_stats_collected && result.metadata != nullptr) metrics_->AddStepStats(result.metadata->step_stats);
  // Accelerators' memory (the CPU allocator's figures are the process's, not a device's).
  for (const auto& d : DeviceMgr::Local()->devices()) {
    if (d->device_type() != kDeviceCpu) metrics_->SetDeviceMemory(d->name(), d->allocator()->GetStats());
  }
  return absl::OkStatus();
}

void MetricsHook::OnEval(int64_t step, const EvalValues& values) {
  if (metrics_ != nullptr) metrics_->SetEvaluation(step, values);
}

void MetricsHook::AfterCommit(int64_t step, double seconds, absl::Time finished) {
  // (metrics_ is set by Begin, before any save; TrainingMetrics is thread-safe.)
  if (metrics_) metrics_->OnCheckpointSaved(seconds, finished);
}

void MetricsHook::Close(const LoopEnd& end) {
  if (!metrics_ || !end.succeeded()) return;
  const absl::Time now = absl::Now();
  metrics_->OnRunSucceeded(absl::ToDoubleSeconds(now - started_), now);
  if (options_.pushgateway_url.empty()) return;
  auto url = ParsePushgatewayUrl(options_.pushgateway_url);
  absl::Status s = url.status();
  if (s.ok()) {
    PushOptions push;
    push.host = url->first;
    push.port = url->second;
    s = metrics_->Push(push);
  }
  if (s.ok()) {
    *out_ << "metrics: pushed to " << options_.pushgateway_url << "\n";
  } else {
    *err_ << EndProgressLine() << "warning: pushing metrics to " << options_.pushgateway_url << ": " << s.message() << "\n";
  }
  out_->flush();
}

}  // namespace training
}  // namespace sluice
