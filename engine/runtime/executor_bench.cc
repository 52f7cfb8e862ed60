// Per-node executor overhead (whitepaper: "hundreds of ns"): a 10,000-node
// chain and a 10,000-node fan-out of trivial ops, each run as one whole
// session step. items_per_second is nodes/s; per_node is its inverse (seconds).
// BM_LockedChain10k is the chain behind a cond (a Switch and its Merge): with a
// Merge in the graph, pending counts are kept under the frame's lock, as in
// every graph with conds or loops.
// Trivial kernels run inline on the thread that made them ready, so these two
// measure the inline path only. The hand-off to the inter-op pool is measured
// with BenchSpin, an op of this file whose kernel spins for `ns` nanoseconds
// (25 us: above the executor's 20-us inline limit, so after the first step its
// nodes are handed to the pool whenever more than one is ready at once):
//   BM_PoolFanOut   a Const, 1,000 BenchSpin leaves, a NoOp sink: all but one
//                   leaf are queued on the pool at once (closure, queue, and
//                   taking it off the queue; no wake-up on 1 thread);
//   BM_PoolLadder   200 layers of 2 BenchSpin nodes, each reading both nodes
//                   of the layer before (one data, one control input): every
//                   layer, one node runs inline and the other is handed to the
//                   pool while the other thread is idle, so a wake-up is on
//                   the critical path.
// Their counter handoff (seconds, SI prefix) is the wall time per node beyond
// its spin: fan-out, threads x wall / node - spin; ladder, wall per layer minus
// the spin it must contain (1 spin on 2 threads, 2 on 1 thread) - i.e. the
// per-layer latency of the hand-off.
// BM_Loop1k is a while loop of 1,000 iterations of a few trivial nodes:
// its per_iteration counter is what frames and iterations cost.
// The pool cases run twice: shared_pool:0 on a session's own inter-op pool
// (Eigen's), shared_pool:1 on the CPU device's intra-op pool
// (SessionOptions::ops_on_intra_op_pool with a device of inter_op_threads
// intra-op threads: a SpinningThreadPool), which is what `train` runs its
// nodes on.
//   bazel run //engine/runtime:executor_bench
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "engine/framework/local_devices.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/control_flow_builders.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"

namespace sluice {

REGISTER_OP("BenchSpin")
    .Input("x: float")
    .Output("y: float")
    .Attr("ns: int")
    .SetShapeFn(shape_fns::Unchanged);

namespace {

// Forwards its input after spinning for `ns` nanoseconds (an expensive kernel).
class BenchSpinOp : public OpKernel {
 public:
  explicit BenchSpinOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, ctx->GetAttr("ns", &ns_)); }
  void Compute(OpKernelContext* ctx) override {
    const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns_);
    while (std::chrono::steady_clock::now() < end) {
    }
    ctx->set_output(0, ctx->input(0));
  }

 private:
  int64_t ns_ = 0;
};
REGISTER_KERNEL_BUILDER(Name("BenchSpin").Device(kDeviceCpu), BenchSpinOp);

constexpr int kNodes = 10000;
constexpr int64_t kSpinNs = 25000;
constexpr int kPoolLeaves = 1000;
constexpr int kLadderLayers = 200;

std::map<std::string, AttrValue> SpinAttrs() {
  AttrValue ns;
  ns.set_i(kSpinNs);
  return {{"ns", ns}};
}

GraphDef PoolFanOut() {
  GraphDefBuilder b;
  std::string root = b.Const("root", Tensor::Scalar<float>(1));
  std::vector<std::string> leaves;
  for (int i = 0; i < kPoolLeaves; ++i) {
    leaves.push_back(b.Node("spin" + std::to_string(i), "BenchSpin", {root}, SpinAttrs()));
  }
  b.NoOp("sink", leaves);
  return b.graph();
}

GraphDef PoolLadder() {
  GraphDefBuilder b;
  std::string a = b.Const("root", Tensor::Scalar<float>(1));
  std::string c = b.NoOp("start");
  for (int i = 0; i < kLadderLayers; ++i) {
    std::string na = b.Node("a" + std::to_string(i), "BenchSpin", {a, "^" + c}, SpinAttrs());
    std::string nb = b.Node("b" + std::to_string(i), "BenchSpin", {a, "^" + c}, SpinAttrs());
    a = na;
    c = nb;
  }
  b.NoOp("sink", {a, c});
  return b.graph();
}

GraphDef Chain() {
  GraphDefBuilder b;
  std::string cur = b.Const("n0", Tensor::Scalar<float>(1));
  for (int i = 1; i < kNodes; ++i) cur = b.Identity("n" + std::to_string(i), cur, DT_FLOAT);
  return b.graph();
}

GraphDef LockedChain() {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::Scalar<float>(1));
  std::string pred = b.Const("pred", Tensor::Scalar<bool>(true));
  std::string sw = b.Switch("switch", x, pred, DT_FLOAT);
  std::string cur = b.Merge("merge", {sw, sw + ":1"}, DT_FLOAT);
  for (int i = 5; i < kNodes; ++i) cur = b.Identity("n" + std::to_string(i), cur, DT_FLOAT);
  return b.graph();
}

// A while loop of kLoopIterations iterations (parallel_iterations 10) whose
// body forwards a float through a chain of kLoopBodyIdentities Identity nodes
// and adds 1 (the counter and the condition are the builder's own): what a
// recurrent model's loop pays per iteration in frames, besides its kernels.
constexpr int kLoopIterations = 1000;
constexpr int kLoopBodyIdentities = 4;

GraphDef Loop() {
  Graph graph;
  GraphBuilder b(&graph);
  Output limit = b.Scalar<float>("limit", static_cast<float>(kLoopIterations));
  Output one = b.Scalar<float>("one", 1);
  auto loop = BuildWhileLoop(
      &b, {b.Scalar<float>("x0", 0)},
      [&](GraphBuilder& g, const std::vector<Output>& v) { return g.Op("less", "Less", {v[0], limit}); },
      [&](GraphBuilder& g, const std::vector<Output>& v) {
        Output x = v[0];
        for (int i = 0; i < kLoopBodyIdentities; ++i) x = g.Op("copy", "Identity", {x});
        return WhileBody{{g.Op("next", "AddV2", {x, one})}, {}};
      });
  CHECK(loop.ok()) << loop.status();
  b.Op("result", "Identity", {loop->outputs[0]});
  CHECK(b.ok()) << b.status();
  GraphDef def;
  graph.ToGraphDef(&def);
  return def;
}

GraphDef FanOut() {
  GraphDefBuilder b;
  std::string root = b.Const("root", Tensor::Scalar<float>(1));
  std::vector<std::string> leaves;
  for (int i = 0; i < kNodes - 2; ++i) leaves.push_back(b.Identity("leaf" + std::to_string(i), root, DT_FLOAT));
  b.NoOp("sink", leaves);
  return b.graph();
}

// Runs `target` once (executor built and cached, kernels timed), then steps in
// the benchmark loop; returns the wall seconds per step (0 after an error).
// With shared_pool, the nodes run on the intra-op pool of a CPU device of
// state.range(0) threads (see the file comment).
double RunSteps(benchmark::State& state, const GraphDef& graph, const std::string& target,
                bool shared_pool = false) {
  SessionOptions options;
  options.inter_op_threads = static_cast<int>(state.range(0));
  std::unique_ptr<DeviceMgr> devices;  // outlives the session (declared first)
  if (shared_pool) {
    devices = NewCpuDeviceMgr(1, options.inter_op_threads);
    options.device_mgr = devices.get();
    options.ops_on_intra_op_pool = true;
  }
  // The fan-out's leaves are identical: keep CSE from merging them.
  options.enable_cse = false;
  // Nor constant folding from computing them at build time (they read a
  // Const), nor Identity removal from dropping the chain and the leaves.
  options.enable_constant_folding = false;
  options.enable_identity_removal = false;
  auto session = NewSession(options);
  if (!session.ok() || !(*session)->Create(graph).ok()) {
    state.SkipWithError("could not create the session");
    return 0;
  }
  std::vector<Tensor> out;
  RunMetadata md;
  // The first step builds and caches the executor.
  if (!(*session)->Run(RunOptions(), {}, {}, {target}, &out, &md).ok()) {
    state.SkipWithError("step failed");
    return 0;
  }
  const int64_t nodes = md.executed_graph_nodes;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    absl::Status s = (*session)->Run({}, {}, {target}, &out);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return 0;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetItemsProcessed(state.iterations() * nodes);
  state.counters["nodes"] = static_cast<double>(nodes);
  // Seconds per node (printed with an SI prefix, e.g. 150n = 150 ns).
  state.counters["per_node"] = benchmark::Counter(static_cast<double>(state.iterations() * nodes),
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  return seconds / static_cast<double>(state.iterations());
}

void BM_Chain10k(benchmark::State& state) {
  static const GraphDef* graph = new GraphDef(Chain());
  RunSteps(state, *graph, "n" + std::to_string(kNodes - 1));
}

void BM_LockedChain10k(benchmark::State& state) {
  static const GraphDef* graph = new GraphDef(LockedChain());
  RunSteps(state, *graph, "n" + std::to_string(kNodes - 1));
}

void BM_FanOut10k(benchmark::State& state) {
  static const GraphDef* graph = new GraphDef(FanOut());
  RunSteps(state, *graph, "sink");
}

// Counter per_iteration: wall time per loop iteration (seconds, SI prefix).
void BM_Loop1k(benchmark::State& state) {
  static const GraphDef* graph = new GraphDef(Loop());
  const double step = RunSteps(state, *graph, "result");
  if (step > 0) state.counters["per_iteration"] = step / kLoopIterations;
}

void BM_PoolFanOut(benchmark::State& state) {
  static const GraphDef* graph = new GraphDef(PoolFanOut());
  const double step = RunSteps(state, *graph, "sink", state.range(1) != 0);
  if (step > 0) {
    state.counters["handoff"] = static_cast<double>(state.range(0)) * step / kPoolLeaves - kSpinNs * 1e-9;
  }
}

void BM_PoolLadder(benchmark::State& state) {
  static const GraphDef* graph = new GraphDef(PoolLadder());
  const double step = RunSteps(state, *graph, "sink", state.range(1) != 0);
  const int spins_per_layer = state.range(0) >= 2 ? 1 : 2;
  if (step > 0) state.counters["handoff"] = step / kLadderLayers - spins_per_layer * kSpinNs * 1e-9;
}

BENCHMARK(BM_Chain10k)->Arg(1)->Arg(2)->ArgName("inter_op_threads")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LockedChain10k)->Arg(1)->Arg(2)->ArgName("inter_op_threads")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_FanOut10k)->Arg(1)->Arg(2)->ArgName("inter_op_threads")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Loop1k)->Arg(1)->Arg(2)->ArgName("inter_op_threads")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_PoolFanOut)
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->ArgNames({"inter_op_threads", "shared_pool"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_PoolLadder)
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->ArgNames({"inter_op_threads", "shared_pool"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
