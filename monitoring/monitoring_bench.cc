// Costs a trainer pays per step for monitoring, measured standalone (the end-to-end overhead
// benchmark against a bare training loop needs the `train` binary):
//   OnStep: TrainingMetrics::OnStep (2 counters, a histogram, 2 gauges).
//   WriteScalar: EventWriter::WriteScalar (serialize + queue; the disk write is on its thread).
//   Histogram/N/batched: HistogramSummary's core (N floats through Histogram::Add one by one,
//     or AddFloats, + EncodeToProto).
//   Trace/N: StepStatsToChromeTrace for N nodes.
// Run: bazel run -c opt //monitoring:monitoring_bench
#include <random>

#include "benchmark/benchmark.h"
#include "monitoring/event_writer.h"
#include "monitoring/histogram.h"
#include "monitoring/metrics.h"
#include "monitoring/trace.h"

namespace sluice {
namespace {

void BM_OnStep(benchmark::State& state) {
  MetricsOptions o;
  o.serve = false;
  auto m = TrainingMetrics::Create(o);
  if (!m.ok()) {
    state.SkipWithError("metrics");
    return;
  }
  for (auto _ : state) (*m)->OnStep(128, 0.01, 0.5, 0.1);
}
BENCHMARK(BM_OnStep);

void BM_WriteScalar(benchmark::State& state) {
  EventWriterOptions o;
  o.run_dir = "/tmp/sluice_monitoring_bench";
  auto w = EventWriter::Create(o);
  if (!w.ok()) {
    state.SkipWithError("event writer");
    return;
  }
  int64_t step = 0;
  for (auto _ : state) benchmark::DoNotOptimize((*w)->WriteScalar(step++, "loss", 0.5f));
  (*w)->Close().IgnoreError();
}
BENCHMARK(BM_WriteScalar);

// batched:0 adds value by value (Add, as for float64 tensors); batched:1 uses AddFloats, as
// the HistogramSummary kernel does for float32 tensors.
void BM_Histogram(benchmark::State& state) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0, 1);
  std::vector<float> values(state.range(0));
  for (float& v : values) v = dist(rng);
  const bool batched = state.range(1) != 0;
  for (auto _ : state) {
    Histogram h;
    if (batched) {
      h.AddFloats(values.data(), values.size());
    } else {
      for (float v : values) h.Add(v);
    }
    HistogramProto p;
    h.EncodeToProto(&p, false);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Histogram)->ArgNames({"n", "batched"})->ArgsProduct({{1 << 10, 1 << 20}, {0, 1}});

void BM_Trace(benchmark::State& state) {
  std::vector<NodeExecStats> nodes(state.range(0));
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i] = {"layer/dense_" + std::to_string(i), "MatMul", 0, 0, static_cast<int64_t>(i * 1000),
                static_cast<int64_t>(i * 1000 + 700), i % 4};
  }
  for (auto _ : state) benchmark::DoNotOptimize(StepStatsToChromeTrace(nodes));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Trace)->Arg(1000);

}  // namespace
}  // namespace sluice
