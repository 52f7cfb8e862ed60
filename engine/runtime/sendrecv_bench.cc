// The cost of one in-process Send/Recv transfer between two devices (issue 14;
// goal: under 2 us for a small tensor), measured at three levels:
//   BM_RendezvousSendRecv  LocalRendezvous::Send + RecvAsync with a ready key;
//   BM_SendRecvPair        the real _Send and _Recv kernels, built for CPU:0 and
//                          CPU:1 of one process, run through a fresh rendezvous
//                          and cancellation manager (one per step, as a
//                          session makes them);
//   BM_TwoDeviceStep       a whole session step of a tiny graph cut across two
//                          devices (one Send/Recv pair) against the same graph
//                          on one device: the per-step overhead of a partition.
// The first two run on one thread; `recv_first:1` registers the receiver
// before the value is sent (the sender's thread then completes the receive).
// BM_TwoDeviceStep's CPU column is the whole process's CPU time per step (the
// inter-op threads included, spinning or woken for a hop).
//   bazel build //engine/runtime:sendrecv_bench &&
//   bazel-bin/engine/runtime/sendrecv_bench --benchmark_min_time=1
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "engine/framework/local_devices.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/local_rendezvous.h"
#include "engine/runtime/session.h"

namespace sluice {
namespace {

const std::string& Cpu0() {
  static const std::string* name = new std::string(LocalCpuDeviceName(0));
  return *name;
}
const std::string& Cpu1() {
  static const std::string* name = new std::string(LocalCpuDeviceName(1));
  return *name;
}

Tensor SmallTensor(int64_t elements) {
  Tensor t(DT_FLOAT, TensorShape({elements}));
  float* p = t.data<float>();
  for (int64_t i = 0; i < elements; ++i) p[i] = static_cast<float>(i);
  return t;
}

// Args: {elements, recv_first}.
void BM_RendezvousSendRecv(benchmark::State& state) {
  const Tensor value = SmallTensor(state.range(0));
  const bool recv_first = state.range(1) != 0;
  const std::string key = Rendezvous::CreateKey(Cpu0(), 1, Cpu1(), "edge_0_to_1");
  Tensor received;
  for (auto _ : state) {
    LocalRendezvous rendezvous;
    bool got = false;
    auto on_value = [&](const absl::Status& s, const Tensor& v, bool is_dead) {
      got = s.ok() && !is_dead;
      received = v;
    };
    if (recv_first) {
      rendezvous.RecvAsync(key, on_value);
      benchmark::DoNotOptimize(rendezvous.Send(key, value, false));
    } else {
      benchmark::DoNotOptimize(rendezvous.Send(key, value, false));
      rendezvous.RecvAsync(key, on_value);
    }
    if (!got) {
      state.SkipWithError("the value did not arrive");
      return;
    }
    benchmark::DoNotOptimize(received.data<float>());
    received = Tensor();
  }
}

NodeDef SendRecvDef(const std::string& op) {
  NodeDef def;
  def.set_name(op == "_Send" ? "send" : "recv");
  def.set_op(op);
  if (op == "_Send") {
    def.add_input("x");
    (*def.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  } else {
    (*def.mutable_attr())["tensor_type"] = MakeAttr(DT_FLOAT);
  }
  (*def.mutable_attr())["tensor_name"] = MakeAttr("edge_0_to_1");
  (*def.mutable_attr())["send_device"] = MakeAttr(Cpu0());
  (*def.mutable_attr())["send_device_incarnation"] = MakeAttr(1);
  (*def.mutable_attr())["recv_device"] = MakeAttr(Cpu1());
  (*def.mutable_attr())["client_terminated"] = MakeAttr(false);
  return def;
}

std::unique_ptr<OpKernel> MakeKernel(Device* device, const NodeDef& def, benchmark::State& state) {
  const OpDef* op_def = OpRegistry::Global()->LookUp(def.op());
  if (op_def == nullptr) {
    state.SkipWithError("op not registered");
    return nullptr;
  }
  auto kernel = KernelRegistry::Global()->CreateKernel(device, def, *op_def);
  if (!kernel.ok()) {
    state.SkipWithError(std::string(kernel.status().message()).c_str());
    return nullptr;
  }
  return std::move(kernel).value();
}

// Args: {elements, recv_first}. One _Send on CPU:0 and one _Recv on CPU:1,
// run as the executor runs them (a context per execution).
void BM_SendRecvPair(benchmark::State& state) {
  const bool recv_first = state.range(1) != 0;
  auto mgr = NewCpuDeviceMgr(2, 1);
  Device* d0 = mgr->devices()[0].get();
  Device* d1 = mgr->devices()[1].get();
  std::unique_ptr<OpKernel> send = MakeKernel(d0, SendRecvDef("_Send"), state);
  std::unique_ptr<OpKernel> recv = MakeKernel(d1, SendRecvDef("_Recv"), state);
  if (send == nullptr || recv == nullptr) return;
  AsyncOpKernel* recv_async = recv->AsAsync();
  Tensor value = SmallTensor(state.range(0));
  TensorValue input;
  input.tensor = &value;
  for (auto _ : state) {
    LocalRendezvous rendezvous;
    CancellationManager cancellation;

    OpKernelContext::Params send_params;
    send_params.device = d0;
    send_params.op_kernel = send.get();
    send_params.inputs = absl::MakeConstSpan(&input, 1);
    send_params.rendezvous = &rendezvous;
    send_params.cancellation_manager = &cancellation;
    OpKernelContext::Params recv_params;
    recv_params.device = d1;
    recv_params.op_kernel = recv.get();
    recv_params.rendezvous = &rendezvous;
    recv_params.cancellation_manager = &cancellation;

    OpKernelContext send_ctx(&send_params);
    OpKernelContext recv_ctx(&recv_params);
    bool recv_done = false;
    if (recv_first) {
      recv_async->ComputeAsync(&recv_ctx, [&recv_done] { recv_done = true; });
      send->Compute(&send_ctx);
    } else {
      send->Compute(&send_ctx);
      recv_async->ComputeAsync(&recv_ctx, [&recv_done] { recv_done = true; });
    }
    if (!recv_done || !send_ctx.status().ok() || !recv_ctx.status().ok() || !recv_ctx.mutable_output(0)->is_set) {
      state.SkipWithError("the pair did not transfer the value");
      return;
    }
    benchmark::DoNotOptimize(recv_ctx.mutable_output(0)->value.data<float>());
  }
}

// Args: {devices, inter_op_threads, recv_waits}. x (a constant) and
// y = x * x, fetch y. With 1 device the graph runs unsplit. With 2, x and y
// sit on different devices and x crosses through one Send/Recv pair. The
// session starts CPU:0's partition first, so with one inter-op thread:
// recv_waits:0 puts x on CPU:0 (the value is in the rendezvous before y's
// Recv runs), recv_waits:1 puts x on CPU:1 (the Recv waits and the Send
// completes it from the other partition).
void BM_TwoDeviceStep(benchmark::State& state) {
  const int devices = static_cast<int>(state.range(0));
  const bool recv_waits = state.range(2) != 0;
  GraphDefBuilder b;
  std::string x = b.Const("x", SmallTensor(1));
  b.Binary("Mul", "y", x, x, DT_FLOAT);
  GraphDef graph = b.graph();
  if (devices == 2) {
    const std::string x_device = recv_waits ? "/device:CPU:1" : "/device:CPU:0";
    const std::string y_device = recv_waits ? "/device:CPU:0" : "/device:CPU:1";
    for (NodeDef& n : *graph.mutable_node()) n.set_device(n.name() == "x" ? x_device : y_device);
  }
  auto mgr = NewCpuDeviceMgr(devices, 1);
  SessionOptions options;
  options.device_mgr = mgr.get();
  options.inter_op_threads = static_cast<int>(state.range(1));
  // y reads only a Const: folding would compute it once and nothing would cross.
  options.enable_constant_folding = false;
  auto session = NewSession(options);
  if (!session.ok() || !(*session)->Create(graph).ok()) {
    state.SkipWithError("could not create the session");
    return;
  }
  std::vector<Tensor> out;
  RunOptions stats_options;
  stats_options.collect_step_stats = true;
  RunMetadata md;
  // The first step builds and caches the executors; count the Recv nodes.
  if (!(*session)->Run(stats_options, {}, {"y"}, {}, &out, &md).ok()) {
    state.SkipWithError("step failed");
    return;
  }
  // recv_nodes: _Recv nodes in the step; value_was_ready (first step only):
  // the cross-device Send had finished when the Recv started.
  int recvs = 0;
  int64_t recv_start = -1, send_end = -1;
  for (const DeviceStepStats& d : md.device_step_stats) {
    for (const NodeExecStats& n : d.nodes) {
      if (n.op == "_Recv") {
        ++recvs;
        recv_start = n.start_ns;
      }
      // The fetch's _Send sits with y; the cross-device one with x.
      if (n.op == "_Send" && d.device == LocalCpuDeviceName(recv_waits ? 1 : 0)) send_end = n.end_ns;
    }
  }
  for (auto _ : state) {
    absl::Status s = (*session)->Run({}, {"y"}, {}, &out);
    if (!s.ok() || out.size() != 1) {
      state.SkipWithError("step failed");
      return;
    }
    benchmark::DoNotOptimize(out[0].data<float>());
  }
  state.counters["recv_nodes"] = recvs;
  if (recvs > 0) state.counters["value_was_ready"] = recv_start >= send_end ? 1 : 0;
}

BENCHMARK(BM_RendezvousSendRecv)
    ->ArgsProduct({{1, 1024}, {0, 1}})
    ->ArgNames({"elements", "recv_first"})
    ->Unit(benchmark::kNanosecond);
BENCHMARK(BM_SendRecvPair)
    ->ArgsProduct({{1, 1024}, {0, 1}})
    ->ArgNames({"elements", "recv_first"})
    ->Unit(benchmark::kNanosecond);
BENCHMARK(BM_TwoDeviceStep)
    ->Args({1, 1, 0})
    ->Args({2, 1, 0})
    ->Args({2, 1, 1})
    ->Args({1, 2, 0})
    ->Args({2, 2, 0})
    ->Args({2, 2, 1})
    ->ArgNames({"devices", "inter_op_threads", "recv_waits"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
